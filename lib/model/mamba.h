/* mamba.h: the Mamba (selective state-space) mixer of lib/model/mamba.c and
 * its per-sequence state.  Internal to lib/model. */
#ifndef TFM_MODEL_MAMBA_H
#define TFM_MODEL_MAMBA_H

#include <stdint.h>

struct tfm_ctx;
struct tfm_model;
struct tfm_spec;

/* The knobs check of a model whose layers are all mamba (load.c). */
int tfm_mamba_check_spec(const struct tfm_spec *s);
/* The mamba layers of a hybrid (mamba beside attention, each with an FFN). */
int tfm_mamba_check_hybrid(const struct tfm_spec *s, int v2);
/* State and scratch of every mamba layer of c's model (none: no allocation). */
int tfm_mamba_ctx_new(struct tfm_ctx *c);
void tfm_mamba_ctx_free(struct tfm_ctx *c);
/* Bytes of recurrent state per sequence (constant in the context length). */
int64_t tfm_mamba_state_bytes(const struct tfm_model *m);
/* c->h[n][n_embd] = mixer of layer l over c->xn[n][n_embd], tokens at pos0..
 * (pos0 == 0 starts from a zero state). */
void tfm_mamba_mix(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0);
/* The causal depthwise conv of both mixers, then SiLU: out[t][i] for t < n,
 * i < width, from input rows in[t * stride ..] and, before the batch, the
 * state [K - 1][width] of earlier inputs, which then keeps the last K - 1;
 * taps w [width][K], bias b [width] or NULL. */
void tfm_ssm_conv(float *out, const float *in, int64_t stride, float *state, const float *w,
		  const float *b, int64_t n, int64_t width, int64_t K);

/* Mamba-2's and Gated DeltaNet's prefill of at least this many tokens runs
 * the chunked form (c->ssm_chunk_min's default).  Measured with tfm-bench
 * --config, random f32 weights, 1 thread, AVX2 (EPYC): a Mamba-2-130m shape
 * prefills 2 and 4 tokens at the same speed either way (step 20-22 and
 * 35-40 t/s, chunked 17.5 and 34-37), 8 tokens faster chunked (66 against
 * 54-59), 32 tokens 1.5x; a Qwen3-Next shape (dk = dv = 128, 16 / 32
 * heads) 8 tokens 29-35 against 22-23 t/s. */
#define TFM_SSM_CHUNK_MIN 8

/* mamba2.c: the Mamba-2 mixer of layer l over c->xn into c->h, with its
 * conv inputs conv [d_conv - 1][conv_dim] and scan state S [n_head][head_dim]
 * [d_state] (zero at the start of a sequence), scratch scr of
 * tfm_mamba2_scratch_floats floats (n_tasks: c->kx's, the heads' work
 * spaces of the chunked form). */
void tfm_mamba2_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr);
int64_t tfm_mamba2_conv_dim(const struct tfm_spec *s);       /* d_inner + 2 n_group d_state */
int64_t tfm_mamba2_scratch_floats(const struct tfm_spec *s, int64_t n_batch, int n_tasks);

/* gdn.c: the Gated DeltaNet mixer of layer l over c->xn into c->h, with its
 * conv inputs conv [d_conv - 1][conv_dim] and delta-rule state S
 * [n_head][d_state][head_v_dim] (zero at the start of a sequence), scratch
 * scr of tfm_gdn_scratch_floats floats (n_tasks: c->kx's). */
void tfm_gdn_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr);
int64_t tfm_gdn_conv_dim(const struct tfm_spec *s);          /* 2 nk dk + nv dv */
int64_t tfm_gdn_scratch_floats(const struct tfm_spec *s, int64_t n_batch, int n_tasks);

/* rwkv.c: layer l's whole RWKV v4, v5 or v7 block on c->x (x += time_mix(ln1
 * x); x += channel_mix(ln2 x)), state st of tfm_rwkv_state_floats floats
 * (reset at pos0 == 0), scratch scr of tfm_rwkv_scratch_floats floats. */
void tfm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0, float *st, float *scr);
int64_t tfm_rwkv_state_floats(const struct tfm_spec *s); /* v4 5 n_embd; v5, v7 (2 + hs) n_embd */
int64_t tfm_rwkv_scratch_floats(const struct tfm_spec *s, int64_t n_batch);
int tfm_rwkv_check_spec(const struct tfm_spec *s);
/* xlstm.c: the mLSTM mixer of layer l over c->xn into c->h, state st
 * [n_head][dqk][dv] C, [n_head][dqk] n, [n_head] m (zero at the start of a
 * sequence), scratch scr of tfm_mlstm_scratch_floats floats. */
void tfm_mlstm_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *st, float *scr);
int64_t tfm_mlstm_state_floats(const struct tfm_spec *s);
int64_t tfm_mlstm_scratch_floats(const struct tfm_spec *s, int64_t n_batch);
int tfm_xlstm_check_spec(const struct tfm_spec *s);
/* mamba.c: tfm_rwkv_block with layer l's state and the shared scratch */
void tfm_ssm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0);

#endif
