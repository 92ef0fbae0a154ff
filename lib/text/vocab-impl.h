/* vocab-impl.h: the vocabulary tfm_tokenizer_to_gguf builds before writing
 * the tokenizer.ggml.* keys (vocab-import.c), shared with the importers of
 * layouts that combine several files (marian-import.c).  Private to
 * lib/text. */
#ifndef TFM_VOCAB_IMPL_H
#define TFM_VOCAB_IMPL_H

#include "unigram.h"

#define TFM_TOK_FRAME_MAX 8 /* special tokens a frame puts on one side */

struct tfm_vb {
	int64_t n, cap;
	char **tok;         /* [n] malloc'd, NUL-terminated; NULL for a gap */
	size_t *len;        /* [n] */
	float *score;       /* [n] */
	int32_t *type;      /* [n] */
	int64_t n_merges, merges_cap;
	char **merges;      /* [n_merges] "left right" */
	const char *model, *pre;
	int64_t bos, eos, unk, sep, pad, cls, mask;
	int add_bos, add_eos, add_space_prefix; /* -1: do not write */
	int has_scores;
	int64_t id_limit;   /* ids must be below: the model's rows, or about the entries */
	int limit_is_model; /* id_limit is the model's vocab_size */
	int is_ugm;         /* unigram: the keys below too */
	const char *pair;   /* BPE: a post-processor's pair template (tfm.tok.pair), or NULL */
	int32_t *strip[2];  /* added tokens with lstrip, rstrip (tfm.tok.lstrip, .rstrip) */
	int64_t n_strip[2];
	int denormalizer;   /* tokenizer.model: its denormalizer_spec has rules */
	/* tokenizer.json's TemplateProcessing "single": the special tokens
	 * before [0] and after [1] the text (mBART: A </s> ro_RO), written as
	 * tfm.tok.frame_prefix / _suffix where bos / eos cannot say it;
	 * has_frame 0 when the template is not "specials A specials" or names
	 * a token it does not resolve.  src_lang, tgt_lang:
	 * tokenizer_config.json's language codes (mBART), ids or -1. */
	int64_t frame[2][TFM_TOK_FRAME_MAX];
	int n_frame[2], has_frame;
	int64_t src_lang, tgt_lang;
	struct tfm_ugm_keys ugm;
};

void tfm_vb_init(struct tfm_vb *v);
void tfm_vb_free(struct tfm_vb *v);
/* The first id whose token is s, or -1. */
int64_t tfm_vb_find(const struct tfm_vb *v, const char *s);
/* Set token id to s (growing the vocabulary; gaps stay NULL). */
int tfm_vb_set(struct tfm_vb *v, int64_t id, const char *s, size_t n, float score, int type);
/* A SentencePiece ModelProto (tokenizer.model): pieces in id order, the
 * normalizer spec, the trainer's special ids; unigram ("t5") or BPE
 * ("llama"), others refused. */
int tfm_vb_from_spm(struct tfm_vb *v, const struct tfm_ckpt_file *f);
/* Marian's layout (marian-import.c): source.spm, target.spm, vocab.json,
 * tokenizer_config.json, special_tokens_map.json.  The vocabulary is
 * vocab.json's, scored and normalized as source.spm encodes. */
int tfm_vb_marian(struct tfm_vb *v, const struct tfm_ckpt *c);
/* RWKV's world vocabulary file (rwkv-import.c). */
int tfm_vb_from_rwkv_world(struct tfm_vb *v, const uint8_t *data, size_t size);

#endif
