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
/* State and scratch of every mamba layer of c's model (none: no allocation). */
int tfm_mamba_ctx_new(struct tfm_ctx *c);
void tfm_mamba_ctx_free(struct tfm_ctx *c);
/* Bytes of recurrent state per sequence (constant in the context length). */
int64_t tfm_mamba_state_bytes(const struct tfm_model *m);
/* c->h[n][n_embd] = mixer of layer l over c->xn[n][n_embd], tokens at pos0..
 * (pos0 == 0 starts from a zero state). */
void tfm_mamba_mix(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0);
/* One channel's selective scan, the scalar reference: for t < n
 *   h[s] = exp(dt[t] A[s]) h[s] + dt[t] B[t][s] x[t],  y[t] = C[t] . h + D x[t]
 * with B, C rows of stride bc_stride; h[d_state] carries the state. */
void tfm_mamba_scan_ref(float *y, float *h, const float *x, const float *dt, const float *A,
			float D, const float *B, const float *C, int64_t bc_stride, int64_t n,
			int64_t d_state, int64_t stride);

#endif
