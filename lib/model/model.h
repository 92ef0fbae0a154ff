/* model.h: a loaded model (spec + bound weights + tokenizer + backend) and
 * evaluation contexts (KV cache and recurrent state for one sequence).
 * tfm_model_open takes any GGUF, or anything tfm-convert reads (converted in
 * memory).  One block executor runs every spec. */
#ifndef TFM_MODEL_H
#define TFM_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct tfm_spec;
struct tfm_tokenizer;
struct tfm_gguf;
struct tfm_model;
struct tfm_ctx;

struct tfm_model_opts {
	int n_threads;           /* 0: online cores */
	const char *vocab;       /* llama2.c tokenizer.bin for llama2.c checkpoints */
	const char *device;      /* "auto" (NULL), "cpu", "cuda" */
	const char *const *set;  /* --set KEY=VALUE overrides, applied in order */
	int n_set;
	int k_type, v_type;      /* enum tfm_type of the K and V caches: F32 (0, default),
				  * F16, BF16, Q8_0, Q5_1, Q5_0, Q4_1, Q4_0 (llama.cpp's set;
				  * the block types need head sizes multiple of 32) */
	int kv_no_rotate;        /* 1: no Walsh-Hadamard rotation of block-quantized caches
				  * (see kvrot.c; for experiments: on by default, as llama.cpp) */
	const char *src_lang, *tgt_lang; /* mBART: the language codes framing sources and
				  * targets (tfm_tokenizer_set_lang); NULL: the tokenizer's */
};

int tfm_model_open(struct tfm_model **m, const char *path, const struct tfm_model_opts *o);
void tfm_model_close(struct tfm_model *m);
const struct tfm_spec *tfm_model_spec(const struct tfm_model *m);
const struct tfm_tokenizer *tfm_model_tokenizer(const struct tfm_model *m); /* may be NULL */
const struct tfm_gguf *tfm_model_gguf(const struct tfm_model *m);

/* A model with random weights for a spec alone (benchmarks, tfm-bench):
 * every tensor the executor binds, 2-D weights of `type` (f32, f16, bf16 or
 * a type lib/quant quantizes; rows must fit its blocks), uniform in
 * +-1/sqrt(fan-in),
 * norm weights 1, biases small; the same seed gives the same weights.  The
 * spec goes through the executor's checks (TFM_E_UNSUPPORTED as usual). */
int tfm_model_random(struct tfm_model **m, const struct tfm_spec *s, int type, uint64_t seed,
		     const struct tfm_model_opts *o);
/* The same random weights added to g, whose keys hold the spec (a GGUF
 * without tensors: tfm-convert --random), as its tensors; the GGUF points
 * at them until tfm_random_free(*bufs, n_bufs) after it is written. */
struct tfm_gguf;
int tfm_random_gguf(struct tfm_gguf *g, int type, uint64_t seed, void ***bufs, int64_t *n_bufs);
void tfm_random_free(void **bufs, int64_t n_bufs);
/* Which kernels run: "cpu" (with "avx512", "avx2" or "scalar"), "ref".
 * For messages and benchmarks. */
const char *tfm_model_device(const struct tfm_model *m);

/* A context holds the KV cache for up to n_ctx positions (n_ctx <= 0: the
 * training context, at most 4096).  When every layer has a sliding window
 * the cache is a ring and tfm_eval runs past n_ctx; otherwise a full
 * context is TFM_E_INVAL "context full (N tokens)".  One context is used by
 * one thread at a time; contexts of one model may run in parallel. */
int tfm_ctx_new(struct tfm_ctx **c, struct tfm_model *m, int64_t n_ctx);
/* As tfm_ctx_new; an encoder's context also takes up to rows tokens in one
 * call (several sequences of at most n_ctx each: tfm_embed_batch); rows
 * is ignored for other models. */
int tfm_ctx_new_batch(struct tfm_ctx **c, struct tfm_model *m, int64_t n_ctx, int64_t rows);
void tfm_ctx_free(struct tfm_ctx *c);
void tfm_ctx_reset(struct tfm_ctx *c);       /* back to position 0 */
/* Back to position pos <= tfm_ctx_pos (the tokens before it stay cached):
 * TFM_E_UNSUPPORTED when a layer's cache is a ring (sliding window), which
 * has overwritten what lies before, or a recurrent state (mamba) with pos
 * before the end, which keeps no history; reset and feed the tokens again
 * then. */
int tfm_ctx_rewind(struct tfm_ctx *c, int64_t pos);
int64_t tfm_ctx_pos(const struct tfm_ctx *c); /* tokens in the cache */
/* The context's thread pool (its kernels' threads; idle between calls), for
 * work on the results of tfm_eval such as scoring logits. */
struct tfm_pool *tfm_ctx_pool(struct tfm_ctx *c);
int64_t tfm_ctx_size(const struct tfm_ctx *c);
/* Bytes allocated for the KV cache (K and V of every layer, in their types:
 * 4, 2, 34/32, ... bytes per element). */
int64_t tfm_ctx_kv_bytes(const struct tfm_ctx *c);
/* Encoder-decoder models: bytes of the encoded source's keys and values
 * (every decoder layer's cross-attention, and the encoder's one working
 * cache) for a source of up to n_ctx tokens; 0 for other models.  The
 * decoder's self-attention cache is in tfm_ctx_kv_bytes. */
int64_t tfm_ctx_cross_bytes(const struct tfm_ctx *c);
/* Bytes of recurrent state (mamba layers' conv and scan state, f32):
 * constant in the context length; tfm_spec_kv_bytes counts both. */
int64_t tfm_ctx_state_bytes(const struct tfm_ctx *c);

/* Feed n tokens at the current position (prefill when n > 1, decode when
 * n == 1) and advance.  logits: n_vocab floats for the last token, or, with
 * all set, n * n_vocab floats (row i for token i).  NULL: no logits. */
int tfm_eval(struct tfm_ctx *c, const int32_t *tokens, int64_t n, float *logits, int all);

/* dst takes src's state (position, KV cache, an encoder-decoder's encoded
 * source): both contexts of one model and size.  Copies the whole cache,
 * or only the decoder's self-attention caches when dst holds the same
 * encoding (beam search).  TFM_E_UNSUPPORTED for recurrent states. */
int tfm_ctx_copy(struct tfm_ctx *dst, const struct tfm_ctx *src);

/* Encoder-decoder models (T5): run the encoder over the source src[n] (n
 * <= tfm_ctx_size), keep each decoder layer's cross-attention keys and
 * values, and set the decoder back to position 0; hidden (NULL: none)
 * [n][n_embd] the encoder's output.  tfm_eval then feeds decoder tokens
 * (the first one the model's decoder start token) and returns their
 * logits.  TFM_E_UNSUPPORTED for other models. */
int tfm_seq2seq_encode(struct tfm_ctx *c, const int32_t *src, int64_t n, float *hidden);

#endif
