/* tokenizer.h: tokenizers behind one handle: SentencePiece-style BPE with
 * scores and byte fallback ("llama"), byte-level BPE with merges and a
 * pre-tokenizer chosen by name ("gpt2" + tokenizer.ggml.pre), WordPiece
 * ("bert"), SentencePiece unigram ("t5"), RWKV world (greedy longest match
 * over a byte trie, "rwkv").  Built from a GGUF's tokenizer.ggml.* keys or a llama2.c
 * tokenizer.bin; the same module writes those keys from Hugging Face files
 * for tfm-convert. */
#ifndef TFM_TOKENIZER_H
#define TFM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

struct tfm_gguf;
struct tfm_ckpt;
struct tfm_tokenizer;

int tfm_tokenizer_from_gguf(struct tfm_tokenizer **out, const struct tfm_gguf *g);
/* llama2.c tokenizer.bin: max_token_length, then per token: f32 score,
 * i32 length, bytes.  BOS 1, EOS 2. */
int tfm_tokenizer_from_llama2c(struct tfm_tokenizer **out, const uint8_t *data,
			       size_t size, int64_t n_vocab);
/* RWKV world vocabulary (rwkv_vocab_v20230424.txt), through the keys
 * tfm_tokenizer_to_gguf writes for it; tfm_rwkv_world_probe: 1 when the
 * bytes start as that file does. */
int tfm_tokenizer_from_rwkv_world(struct tfm_tokenizer **out, const uint8_t *data, size_t size);
int tfm_rwkv_world_probe(const uint8_t *data, size_t size);
void tfm_tokenizer_free(struct tfm_tokenizer *t);

int64_t tfm_tokenizer_n_vocab(const struct tfm_tokenizer *t);
int32_t tfm_tokenizer_bos(const struct tfm_tokenizer *t); /* -1 if none */
int32_t tfm_tokenizer_eos(const struct tfm_tokenizer *t);
/* 1 when id ends generation: the EOS id, tfm.tok.eos_ids (config.json and
 * generation_config.json's eos_token_id, an int or a list) and llama.cpp's
 * end-of-turn / end-of-message ids.  BOS is not one (transformers stops only
 * at eos_token_id). */
int tfm_tokenizer_is_eos(const struct tfm_tokenizer *t, int32_t id);
int tfm_tokenizer_add_bos(const struct tfm_tokenizer *t); /* model wants BOS by default */

/* Encode len bytes of UTF-8 text.  *ids is malloc'd (caller frees). */
int tfm_tokenize(const struct tfm_tokenizer *t, const char *text, size_t len,
		 int add_bos, int32_t **ids, size_t *n);
/* As tfm_tokenize; with parse_special, control tokens written in the text
 * ("<|im_start|>", "</s>") become their ids.  Either way user-defined
 * tokens in the text are matched whole, as llama.cpp does. */
int tfm_tokenize_special(const struct tfm_tokenizer *t, const char *text, size_t len,
			 int add_bos, int parse_special, int32_t **ids, size_t *n);
/* One text for an encoder, [CLS] text [SEP] (BertProcessing / BERT's
 * TemplateProcessing); TFM_E_UNSUPPORTED for other tokenizers. */
int tfm_tokenize_seq(const struct tfm_tokenizer *t, const char *text, size_t len,
		     int parse_special, int32_t **ids, size_t *n);
/* mBART: frame sources with language code src (tokenizer_config.json's
 * src_lang in transformers) and targets with tgt, either NULL to keep the
 * tokenizer's.  TFM_E_UNSUPPORTED where the frame has no language code or
 * the code is not a control token. */
int tfm_tokenizer_set_lang(struct tfm_tokenizer *t, const char *src, const char *tgt);
/* mBART: how generate starts a target in the target language, as the
 * models' cards do it: where the language code ends the frame (cc25's
 * A </s> ro_RO) *start is it (decoder_start_token_id: shift_tokens_right
 * moves the labels' last token to the front); where it opens the frame
 * (mBART-50's ro_RO A </s>) *forced is it (forced_bos_token_id).  -1 for
 * the other.  Returns 0 (and -1s) where the tokenizer frames no target
 * language. */
int tfm_tokenizer_target_start(const struct tfm_tokenizer *t, int32_t *start, int32_t *forced);
/* A target text as the tokenizer frames labels (tokenizer(text_target=...)
 * in transformers).  Marian (tfm.tok.target_scores): the text cut by the
 * target model (target.spm's pieces, scores and normalizer, mapped through
 * the one vocabulary, <unk> for pieces it lacks; a >>xx<< language code at
 * the start is one token, as for a source text), then </s>.  Control
 * tokens written in the text are not parsed: transformers' labels with
 * split_special_tokens=True.  A frame with a target language (mBART): the
 * source's frame with that code, special tokens in the text parsed (as
 * MBartTokenizerFast does).  Any other tokenizer: exactly
 * tfm_tokenize_seq(t, text, len, 0, ids, n).  *ids is malloc'd. */
int tfm_tokenize_target(const struct tfm_tokenizer *t, const char *text, size_t len,
			int32_t **ids, size_t *n);
/* As tfm_tokenize_seq, and spans[2 n]: for each token the byte span
 * [start, end) of the word (BERT's pre-tokenizer: split on whitespace,
 * punctuation, CJK) it comes from, -1 -1 for [CLS] and [SEP].  Control
 * tokens written in the text are not parsed.  All malloc'd. */
int tfm_tokenize_words(const struct tfm_tokenizer *t, const char *text, size_t len,
		       int32_t **ids, int32_t **spans, size_t *n);
/* A text pair for a cross-encoder: ids[n] and token types[n] (malloc'd) as
 * BERT's post-processor builds them, [CLS] A [SEP] B [SEP] with types 0
 * then 1.  TFM_E_UNSUPPORTED for tokenizers other than WordPiece. */
int tfm_tokenize_pair(const struct tfm_tokenizer *t, const char *a, size_t alen, const char *b,
		      size_t blen, int32_t **ids, int32_t **types, size_t *n);
/* The tokenizer of an encoder-decoder's output: Marian's target
 * vocabulary where it has one of its own (tfm.tok.target_tokens;
 * MarianTokenizer's decode uses it), else t itself.  Decode generated ids
 * with it; owned by t. */
const struct tfm_tokenizer *tfm_tokenizer_target(const struct tfm_tokenizer *t);
/* The raw piece of a token as stored in the vocabulary ("▁the", "<0x0A>"). */
const char *tfm_token_piece(const struct tfm_tokenizer *t, int32_t id, size_t *len);
/* Bytes that token id contributes to decoded text, given the previous token
 * (for the leading-space rule after BOS).  Written into buf (at least 256
 * bytes); returns the byte count, or a negative status. */
int tfm_token_decode(const struct tfm_tokenizer *t, int32_t prev, int32_t id, char *buf, size_t cap);
/* Whole-sequence decode; *text is malloc'd and NUL-terminated. */
int tfm_detokenize(const struct tfm_tokenizer *t, const int32_t *ids, size_t n,
		   char **text, size_t *len);

/* For tfm-convert: write tokenizer.ggml.* keys from the tokenizer files of a
 * checkpoint (tokenizer.json, tokenizer.model, vocab.txt + merges.txt,
 * rwkv_vocab_v20230424.txt, or a llama2.c tokenizer.bin).  Returns TFM_OK
 * without writing anything when the checkpoint has no tokenizer files. */
int tfm_tokenizer_to_gguf(const struct tfm_ckpt *c, struct tfm_gguf *g);

#endif
