/* bench.h (model): what a loaded model weighs, for tfm-bench.  Bytes of the
 * weights in total and read per decoded token, and the bytes of a context's
 * KV cache as the executor allocated it. */
#ifndef TFM_MODEL_BENCH_H
#define TFM_MODEL_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct tfm_model;
struct tfm_ctx;

struct tfm_model_bytes {
	double total;      /* every weight: matrices as stored, vectors as f32 */
	double per_token;  /* read by one decode step: every matrix of the layers
	                      and the head, the routed experts a token uses
	                      (n_expert_used of n_expert), one embedding row,
	                      the vectors */
	int64_t params;    /* elements of all weights */
	int type;          /* the type of most matrix bytes (enum tfm_type) */
};
int tfm_model_bytes(const struct tfm_model *m, struct tfm_model_bytes *b);

/* Bytes of the context's K and V arrays (all layers, all slots, in the
 * context's cache types). */
size_t tfm_ctx_kv_alloc(const struct tfm_ctx *c);

#endif
