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
/* One channel's selective scan, the scalar reference: for t < n
 *   h[s] = exp(dt[t] A[s]) h[s] + dt[t] B[t][s] x[t],  y[t] = C[t] . h + D x[t]
 * with B, C rows of stride bc_stride; h[d_state] carries the state. */
void tfm_mamba_scan_ref(float *y, float *h, const float *x, const float *dt, const float *A,
			float D, const float *B, const float *C, int64_t bc_stride, int64_t n,
			int64_t d_state, int64_t stride);

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
 * tfm_mamba2_scratch_floats floats. */
void tfm_mamba2_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr);
int64_t tfm_mamba2_conv_dim(const struct tfm_spec *s);       /* d_inner + 2 n_group d_state */
int64_t tfm_mamba2_scratch_floats(const struct tfm_spec *s, int64_t n_batch);
/* One head's step, the scalar reference: S[head_dim][d_state] = exp(dt A) S +
 * dt x B^T, y = S C + D x. */
void tfm_mamba2_scan_ref(float *y, float *S, const float *x, float dt, float A, float D,
			 const float *B, const float *C, int64_t head_dim, int64_t d_state);

/* gdn.c: the Gated DeltaNet mixer of layer l over c->xn into c->h, with its
 * conv inputs conv [d_conv - 1][conv_dim] and delta-rule state S
 * [n_head][d_state][head_v_dim] (zero at the start of a sequence), scratch
 * scr of tfm_gdn_scratch_floats floats. */
void tfm_gdn_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr);
int64_t tfm_gdn_conv_dim(const struct tfm_spec *s);          /* 2 nk dk + nv dv */
int64_t tfm_gdn_scratch_floats(const struct tfm_spec *s, int64_t n_batch);
/* One value head's step, the scalar reference: S[dk][dv] = exp(g) S;
 * d = beta (v - S^T k); S += k d^T; o = S^T q. */
void tfm_gdn_step_ref(float *o, float *S, const float *q, const float *k, const float *v,
		      float g, float beta, int64_t dk, int64_t dv);

/* rwkv.c: layer l's whole RWKV v4, v5 or v7 block on c->x (x += time_mix(ln1
 * x); x += channel_mix(ln2 x)), state st of tfm_rwkv_state_floats floats
 * (reset at pos0 == 0), scratch scr of tfm_rwkv_scratch_floats floats. */
void tfm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0, float *st, float *scr);
int64_t tfm_rwkv_state_floats(const struct tfm_spec *s); /* v4 5 n_embd; v5, v7 (2 + hs) n_embd */
int64_t tfm_rwkv_scratch_floats(const struct tfm_spec *s, int64_t n_batch);
int tfm_rwkv_check_spec(const struct tfm_spec *s);
/* The WKV step of d channels, the scalar reference (see rwkv.c). */
void tfm_rwkv4_wkv_ref(float *out, float *num, float *den, float *mx, const float *k,
		       const float *v, const float *w, const float *u, int64_t d);
/* xlstm.c: the mLSTM mixer of layer l over c->xn into c->h, state st
 * [n_head][dqk][dv] C, [n_head][dqk] n, [n_head] m (zero at the start of a
 * sequence), scratch scr of tfm_mlstm_scratch_floats floats. */
void tfm_mlstm_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *st, float *scr);
int64_t tfm_mlstm_state_floats(const struct tfm_spec *s);
int64_t tfm_mlstm_scratch_floats(const struct tfm_spec *s, int64_t n_batch);
int tfm_xlstm_check_spec(const struct tfm_spec *s);
/* One head's mLSTM step, the scalar reference (see xlstm.c): updates C
 * [dqk][dv], n [dqk], m; h [dv] the cell's output before its norm. */
void tfm_mlstm_step_ref(float *h, float *C, float *n, float *m, const float *q, const float *k,
			const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps);
/* v5's WKV step of n_head heads of hs channels, S [n_head][hs][hs] (rwkv.c). */
void tfm_rwkv5_wkv_ref(float *out, float *S, const float *r, const float *k, const float *v,
		       const float *w, const float *u, int64_t n_head, int64_t hs);
/* v7's, S [n_head][hs][hs]; a = -kk, b = kk * iclr (rwkv.c). */
void tfm_rwkv7_wkv_ref(float *out, float *S, const float *r, const float *w, const float *k,
		       const float *v, const float *a, const float *b, int64_t n_head, int64_t hs);
/* mamba.c: tfm_rwkv_block with layer l's state and the shared scratch */
void tfm_ssm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0);

#endif
