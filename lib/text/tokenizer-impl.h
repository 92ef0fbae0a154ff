/* tokenizer-impl.h: the body of struct tfm_tokenizer and the helpers the
 * tokenizer files share (string hash map, UTF-8, growable id vector).
 * Private to lib/text. */
#ifndef TFM_TOKENIZER_IMPL_H
#define TFM_TOKENIZER_IMPL_H

#include "tfm.h"

enum tfm_tok_kind { TFM_TOK_SPM = 1, TFM_TOK_BPE = 2, TFM_TOK_WPM = 3, TFM_TOK_UGM = 4,
		   TFM_TOK_RWKV = 5 };

/* llama.cpp's token types (tokenizer.ggml.token_type). */
enum tfm_tok_type {
	TFM_TOKT_UNDEFINED = 0, TFM_TOKT_NORMAL = 1, TFM_TOKT_UNKNOWN = 2,
	TFM_TOKT_CONTROL = 3, TFM_TOKT_USER_DEFINED = 4, TFM_TOKT_UNUSED = 5,
	TFM_TOKT_BYTE = 6
};

/* Open-addressing map from byte strings to int32 values.  Keys point into
 * storage the owner keeps alive (the vocabulary arena). */
struct tfm_strmap {
	size_t cap;            /* power of two */
	const char **key;      /* [cap], NULL = empty */
	uint32_t *klen;        /* [cap] */
	int32_t *val;          /* [cap] */
};
int tfm_strmap_init(struct tfm_strmap *m, size_t n_expected);
void tfm_strmap_free(struct tfm_strmap *m);
/* Insert (first insertion of a key wins, as llama.cpp's token_to_id). */
void tfm_strmap_put(struct tfm_strmap *m, const char *k, size_t len, int32_t v);
int32_t tfm_strmap_get(const struct tfm_strmap *m, const char *k, size_t len); /* -1 if absent */

/* A candidate merge of the adjacent symbols left and right (size bytes
 * together).  The queue gives the smallest key first, ties leftmost: BPE
 * uses the merge rank, SentencePiece the negated score. */
struct tfm_bigram {
	int left, right;
	double key;
	size_t size;
};
struct tfm_bigram_heap { struct tfm_bigram *v; size_t n, cap; };
/* A symbol of the word being merged: a linked list over the text. */
struct tfm_sym {
	int prev, next;     /* live neighbours; -1 at the ends */
	size_t off, n;      /* bytes of the text; n == 0 once merged away */
};
/* Merge the popped pair b into its left symbol.  Returns 0 when the pair is
 * stale (a side was merged since it was queued; sizes only grow, so an
 * unchanged total means an unchanged pair), 1 when merged: the caller then
 * queues the pairs (prev, left) and (left, next). */
int tfm_bigram_apply(struct tfm_sym *sy, const struct tfm_bigram *b);
int tfm_bigram_push(struct tfm_bigram_heap *h, struct tfm_bigram b);
struct tfm_bigram tfm_bigram_pop(struct tfm_bigram_heap *h); /* h->n > 0 */

/* Growable id vector. */
struct tfm_ids { int32_t *v; size_t n, cap; };
int tfm_ids_push(struct tfm_ids *a, int32_t id);

/* UTF-8: length of the sequence led by byte c (1 for invalid lead bytes, as
 * llama.cpp's unicode_len_utf8). */
static inline size_t tfm_utf8_len(unsigned char c)
{
	static const unsigned char lookup[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
	return lookup[c >> 4];
}
/* Decode one code point at s[*i] (bounded by n); invalid bytes give U+FFFD
 * and advance by one. */
uint32_t tfm_utf8_decode(const char *s, size_t n, size_t *i);
size_t tfm_utf8_encode(uint32_t cp, char *out); /* out has room for 4 */

struct tfm_tokenizer {
	int kind;                 /* enum tfm_tok_kind */
	int64_t n_vocab;
	char **piece;             /* [n_vocab] NUL-terminated, in arena */
	uint32_t *plen;           /* [n_vocab] */
	float *score;             /* [n_vocab] (SPM) or NULL */
	int32_t *type;            /* [n_vocab] enum tfm_tok_type */
	char *arena;              /* all pieces */
	struct tfm_strmap map;    /* piece -> id */
	int32_t bos, eos, unk, pad, sep, cls; /* -1 when absent */
	int32_t eos_ids[8];       /* every id that ends generation (eos first) */
	int n_eos_ids;
	int add_bos, add_eos;
	int add_space_prefix;     /* SPM: prefix a space to the text */
	int escape_ws;            /* SPM: spaces are U+2581 in pieces (GGUF), not ' ' (llama2.c) */
	int32_t byte_tok[256];    /* SPM: <0xNN> tokens (-1 absent); BPE: token of the byte's char */
	size_t max_len;           /* longest piece in bytes */
	/* BPE */
	struct tfm_strmap merges; /* "left right" -> rank */
	char *merge_arena;
	char *pre;                /* pre-tokenizer name */
	void *pretok;             /* struct tfm_pretok * (pretok.c) */
	/* Tokens matched in raw text before encoding (llama.cpp's
	 * tokenizer_st_partition): every non-normal token, longest first. */
	int32_t *special;         /* [n_special] */
	uint8_t *strip;           /* [n_vocab] or NULL: 1 lstrip, 2 rstrip (tfm.tok.lstrip/rstrip) */
	int64_t n_special;
	struct tfm_ugm *ugm;      /* unigram (unigram.h) */
	struct tfm_ugm *ugm_target; /* Marian's target model (tfm.tok.target_*), or NULL */
	/* Marian with separate vocabularies (tfm.tok.target_tokens): the
	 * target side, a tokenizer of its own (its ugm the target model,
	 * special ids the source's), owned; NULL: targets use this one */
	struct tfm_tokenizer *target;
	struct tfm_rwkv *rwkv;    /* the byte trie of an rwkv vocabulary (rwkv.c), or NULL */
	int pair_style;           /* unigram's tfm.tok.pair: 0 none, 1 bert, 2 roberta, 3 t5 */
	/* A frame of special tokens before [0] and after [1] a framed text,
	 * in bos / eos's place (tfm.tok.frame_prefix / _suffix: mBART's
	 * A </s> ro_RO); src_lang its language code, replaced by tgt_lang in
	 * a target's frame (tfm.tok.src_lang_id / tgt_lang_id; -1 none). */
	int32_t frame[2][8];
	int n_frame[2], has_frame;
	int32_t src_lang, tgt_lang;
	/* tfm_detokenize: whitespace off both ends (tfm.tok.decode_strip,
	 * MarianTokenizer's str.strip()), transformers' clean_up_tokenization
	 * (tfm.tok.clean_up_spaces) */
	int decode_strip, clean_up;
};

/* Build the common part: pieces copied into the arena, map filled, max_len. */
int tfm_tok_set_vocab(struct tfm_tokenizer *t, int64_t n, const char *const *s, const size_t *lens);

/* Per-model encoders: append the ids of text (no BOS/EOS) to out. */
/* prefix: add SentencePiece's leading space (text starts the sequence or
 * follows a special token, and the model asks for it). */
int tfm_spm_encode(const struct tfm_tokenizer *t, const char *text, size_t len, int prefix,
		   struct tfm_ids *out);
int tfm_bpe_encode(const struct tfm_tokenizer *t, const char *text, size_t len, struct tfm_ids *out);
int tfm_wpm_encode(const struct tfm_tokenizer *t, const char *text, size_t len, struct tfm_ids *out);
/* The same, and for each token the byte span [start, end) of the
 * pre-tokenized word it belongs to, as pairs in spans (NULL: none). */
int tfm_wpm_encode_spans(const struct tfm_tokenizer *t, const char *text, size_t len,
			 struct tfm_ids *out, struct tfm_ids *spans);
/* Unigram with model u (t->ugm, or t->ugm_target): first: the text starts
 * the input (Metaspace's "first"). */
int tfm_ugm_encode(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *text,
		   size_t len, int first, struct tfm_ids *out);
/* tfm_tokenize_special with the unigram model u in t->ugm's place. */
int tfm_tokenize_model(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *text,
		       size_t len, int add_bos, int parse_special, int32_t **ids, size_t *n);
/* The same for a framed text (add_bos set) whose frame has lang in
 * src_lang's place (a target's: tgt_lang). */
int tfm_tokenize_lang(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *text,
		      size_t len, int32_t lang, int parse_special, int32_t **ids, size_t *n);
/* RWKV world (rwkv.c): pieces are raw bytes (GGUF's escaped text decoded
 * by tfm_rwkv_unescape, out[] at least n bytes); tfm_rwkv_init builds the
 * trie from them. */
struct tfm_rwkv;
int tfm_rwkv_unescape(const char *s, size_t n, char *out, size_t *out_n);
int tfm_rwkv_init(struct tfm_tokenizer *t);
void tfm_rwkv_free(struct tfm_rwkv *r);
int tfm_rwkv_encode(const struct tfm_tokenizer *t, const char *text, size_t len,
		    struct tfm_ids *out);
/* From the GGUF keys (the vocabulary and types already read). */
int tfm_ugm_from_gguf(struct tfm_tokenizer *t, const struct tfm_gguf *g);
/* The ids of the int array key (absent: nothing) as flags: (*flags)[id] |=
 * bit, *flags [n_vocab] allocated when NULL; TFM_E_FORMAT for a key that is
 * not an array of ids of the vocabulary. */
int tfm_tok_id_flags(const struct tfm_tokenizer *t, const struct tfm_gguf *g, const char *key,
		     uint8_t **flags, uint8_t bit);
void tfm_ugm_destroy(struct tfm_ugm *u);
int tfm_bpe_init(struct tfm_tokenizer *t, int64_t n_merges, const char *const *m, const size_t *lens);
/* The merge table alone ("left right" -> rank in t->merges), for
 * SentencePiece vocabularies that come with merges. */
int tfm_merges_init(struct tfm_tokenizer *t, int64_t n_merges, const char *const *m,
		    const size_t *lens);

/* Pre-tokenizer (pretok.c): split text into words by the regex list that
 * llama.cpp uses for the named pre-tokenizer.  Unknown name:
 * TFM_E_UNSUPPORTED. */
struct tfm_pretok;
int tfm_pretok_new(struct tfm_pretok **out, const char *name);
void tfm_pretok_free(struct tfm_pretok *p);
/* Calls fn for each word (byte ranges of text, in order). */
int tfm_pretok_split(const struct tfm_pretok *p, const char *text, size_t len,
		     int (*fn)(void *ctx, const char *w, size_t n), void *ctx);

/* Unicode data (unicode-data.c): general-category flags, lowercase, and
 * NFD reduced to its first code point (as llama.cpp's WordPiece uses it). */
enum {
	TFM_UC_LETTER = 1, TFM_UC_NUMBER = 2, TFM_UC_PUNCT = 4, TFM_UC_SYMBOL = 8,
	TFM_UC_MARK = 16, TFM_UC_CONTROL = 32, TFM_UC_SEPARATOR = 64, TFM_UC_SPACE = 128
};
int tfm_uc_flags(uint32_t cp);
uint32_t tfm_uc_lower(uint32_t cp);
uint32_t tfm_uc_upper(uint32_t cp); /* inverse of tfm_uc_lower (a scan) */
uint32_t tfm_uc_nfd_first(uint32_t cp);

/* SentencePiece's precompiled_charsmap (charsmap.c). */
struct tfm_charsmap {
	uint32_t *unit;           /* [n_units] double-array trie */
	size_t n_units;
	char *norm;               /* [n_norm + 1] replacement strings */
	size_t n_norm;
};
int tfm_charsmap_init(struct tfm_charsmap *m, const uint8_t *blob, size_t n);
void tfm_charsmap_free(struct tfm_charsmap *m);
/* The key that is a prefix of s[0, n): the shortest (tokenizers) or the
 * longest (SentencePiece); *key_len 0 when none, else its replacement. */
int tfm_charsmap_match(const struct tfm_charsmap *m, const char *s, size_t n, int longest,
		       size_t *key_len, const char **out, size_t *out_len);

/* GPT-2 byte <-> unicode mapping. */
uint32_t tfm_bpe_byte_to_cp(uint8_t b);
int tfm_bpe_cp_to_byte(uint32_t cp); /* -1 if not a mapped code point */

#endif
