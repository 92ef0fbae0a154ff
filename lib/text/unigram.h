/* unigram.h: the SentencePiece unigram tokenizer (GGUF tokenizer.ggml.model
 * "t5", llama.cpp's UGM): its state, the normalizer steps of tokenizer.json
 * (normalize.c) and the Viterbi encoder (unigram.c).  Private to lib/text. */
#ifndef TFM_UNIGRAM_H
#define TFM_UNIGRAM_H

#include "tokenizer-impl.h"

enum tfm_norm_op {
	TFM_NORM_PRECOMPILED = 1, /* the charsmap, per grapheme as tokenizers applies it */
	TFM_NORM_STRIP,           /* Strip: Unicode whitespace at the left/right end */
	TFM_NORM_REPLACE,         /* Replace of a literal string */
	TFM_NORM_REPEAT,          /* Replace of the regex "c{n,}" (or "c+"): runs of c */
	TFM_NORM_PREPEND,         /* Prepend to non-empty text */
	TFM_NORM_NFC,             /* the Unicode normalization forms (utf8proc) */
	TFM_NORM_NFD,
	TFM_NORM_NFKC,
	TFM_NORM_NFKD,
	TFM_NORM_LOWER,           /* Lowercase: each code point's lower case */
	TFM_NORM_STRIP_ACCENTS    /* StripAccents: marks (general category M) removed */
};

struct tfm_norm_step {
	int op;
	int left, right;          /* STRIP */
	char pat[8];              /* REPLACE/REPEAT: the pattern (REPEAT: one character) */
	size_t patn;
	char *with;               /* replacement (REPLACE/REPEAT/PREPEND), malloc'd */
	size_t withn;
	unsigned min_rep;         /* REPEAT: n of {n,} */
};

struct tfm_ugm {
	/* piece trie: edges (node << 8 | byte) -> child in an open-addressing
	 * table; id[node] the piece ending there (-1 none) */
	uint64_t *ekey;           /* [ecap], 0 = empty (keys are stored + 1) */
	int32_t *eval;            /* [ecap] */
	size_t ecap;
	int32_t *id;              /* [n_nodes] */
	size_t n_nodes;
	double unk_score;         /* lowest score - 10, as tokenizers and SentencePiece */
	int byte_fallback;
	struct tfm_charsmap cmap;
	int has_cmap;
	int hf;                   /* tokenizer.json's pipeline, else SentencePiece's own */
	/* hf: the normalizer steps and the pre-tokenizer */
	struct tfm_norm_step *step;
	int n_step;
	int ws_split;             /* WhitespaceSplit before Metaspace */
	int prepend;              /* Metaspace prepend_scheme: 0 never, 1 always, 2 first */
	int split;                /* Metaspace split at U+2581 */
	/* SentencePiece: normalizer_spec */
	int remove_ws, add_prefix;
	/* An encoder model whose pieces are not the vocabulary's (Marian's
	 * source.spm beside vocab.json): pieces it lacks are never matched,
	 * pieces the vocabulary lacks are matched with their scores and
	 * become the unknown token; an unknown run is the vocabulary's piece
	 * of the same text when there is one; ">>xx<<" opening the text is
	 * one token (tfm.tok.unmatched, extra_pieces, extra_scores,
	 * unk_lookup, lang_code). */
	uint8_t *unmatched;       /* [n_vocab] 1: Viterbi never takes the id, or NULL */
	char **extra;             /* [n_extra] in extra_arena; trie ids n_vocab + k */
	uint32_t *extra_len;      /* [n_extra] */
	float *extra_score;       /* [n_extra] */
	char *extra_arena;
	int64_t n_extra;
	int unk_lookup, lang_code;
	/* A model scored apart from the vocabulary (Marian's target.spm,
	 * tfm.tok.target_scores): its log probability per id, -inf where it
	 * lacks the piece (never matched); NULL: the vocabulary's scores. */
	float *score;             /* [n_vocab], malloc'd */
};

/* Parse tokenizer.json's normalizer (the JSON text, Precompiled's charsmap
 * left out) and pre_tokenizer into u; what tfm does not implement is
 * TFM_E_UNSUPPORTED naming it.  The importer calls them to refuse early. */
int tfm_ugm_parse_normalizer(struct tfm_ugm *u, const char *json, size_t n);
int tfm_ugm_parse_pre_tokenizer(struct tfm_ugm *u, const char *json, size_t n);
void tfm_ugm_free(struct tfm_ugm *u);

/* Normalize text: tokenizer.json's steps (hf), or SentencePiece's
 * normalizer (charsmap longest match, extra whitespace removed, dummy
 * prefix, spaces as U+2581).  *out is malloc'd. */
int tfm_ugm_normalize(const struct tfm_ugm *u, const char *s, size_t n, char **out, size_t *outn);

int tfm_ugm_build(struct tfm_tokenizer *t, struct tfm_ugm *u);

/* Pieces of a SentencePiece model that the vocabulary lacks, with their
 * scores (Marian: they are matched, then become the unknown token). */
struct tfm_ugm_extra {
	char **piece;             /* [n] each malloc'd */
	size_t *len;              /* [n] */
	float *score;             /* [n] */
	int64_t n;
};
void tfm_ugm_extra_free(struct tfm_ugm_extra *x);
/* Marian's target model (tfm.tok.target_*) into *out, built over t's
 * vocabulary (the one vocabulary, or the target's own: t is then the
 * target tokenizer), its normalizer src's but for the keys given. */
int tfm_ugm_target_from_gguf(struct tfm_tokenizer *t, const struct tfm_ugm *src,
			     const struct tfm_gguf *g, struct tfm_ugm **out);

/* For tfm-convert (ugm-import.c): the keys beside the vocabulary that a
 * unigram tokenizer.json or tokenizer.model needs. */
struct tfm_ugm_keys {
	uint8_t *cmap;            /* tokenizer.ggml.precompiled_charsmap, malloc'd */
	size_t cmap_n;
	char *norm, *pretok;      /* tfm.tok.normalizer / pre_tokenizer (JSON), malloc'd */
	int byte_fallback;
	int spm;                  /* SentencePiece's normalizer: the flags below */
	int add_prefix, remove_ws; /* (from tokenizer.json: for llama.cpp only) */
	const char *pair;         /* tfm.tok.pair: "roberta", "bert", "t5" or NULL */
	/* Marian (marian-import.c); see struct tfm_ugm */
	int32_t *unmatched;       /* tfm.tok.unmatched: ids, malloc'd */
	int64_t n_unmatched;
	struct tfm_ugm_extra extra; /* tfm.tok.extra_pieces, extra_scores */
	int unk_lookup, lang_code;
	int decode_strip;         /* tfm.tok.decode_strip: no whitespace at the ends */
	int clean_up;             /* tfm.tok.clean_up_spaces: transformers' clean_up_tokenization */
	/* Marian's target model (target.spm) for tfm_tokenize_target */
	float *target_score;      /* tfm.tok.target_scores: [n_target] by id, -inf where
				   * target.spm lacks the piece (and past n_target); or NULL */
	int64_t n_target;
	struct tfm_ugm_extra target_extra; /* tfm.tok.target_extra_pieces, _scores */
	uint8_t *target_cmap;     /* tfm.tok.target_charsmap when target_own_cmap (may be empty) */
	size_t target_cmap_n;
	int target_own_cmap;
	int target_add_prefix;    /* tfm.tok.target_add_space_prefix; -1: as the source's */
	int target_remove_ws;     /* tfm.tok.target_remove_extra_whitespaces; -1: likewise */
	/* separate_vocabs: the target vocabulary (target_vocab.json), its
	 * pieces and types by target id (tfm.tok.target_tokens, _token_type);
	 * target_score is then by target id, n_target its length */
	char **target_tok;        /* [n_target] malloc'd, or NULL: one vocabulary */
	size_t *target_len;
	int32_t *target_type;
	int64_t target_unk, target_pad;
};
struct json_t;
int tfm_ugm_keys_from_json(struct tfm_ugm_keys *k, struct json_t *root);
/* n_vocab: the length of the written vocabulary (tfm.tok.target_scores). */
int tfm_ugm_keys_write(const struct tfm_ugm_keys *k, int64_t n_vocab, struct tfm_gguf *g);
void tfm_ugm_keys_free(struct tfm_ugm_keys *k);

#endif
