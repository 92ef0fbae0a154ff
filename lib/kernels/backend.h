/* backend.h: the kernel table.  The block executor calls kernels only
 * through a struct tfm_backend; ref/ holds the scalar specification, cpu/ the
 * OpenBLAS + AVX2/AVX-512 + threads version; dispatch.c is the only file that
 * knows which backends exist.  All activations are f32, row-major. */
#ifndef TFM_KERNELS_BACKEND_H
#define TFM_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct tfm_pool;

/* A weight matrix as stored in the file: ggml ne = {in, out}, i.e. row-major
 * [out][in] of `type` (any type tfm_k_type_ok accepts).  Not owned. */
struct tfm_mat {
	const void *data;   /* [out][in] of type */
	int type;           /* enum tfm_type */
	int64_t in, out;
	size_t row_bytes;   /* bytes of one row of in elements */
	const void *dec;    /* the same weights in the backend's decode layout
	                       (backend.repack), or NULL */
};

/* Execution state a backend needs for threaded kernels: the pool, and
 * scratch per task (n_tasks slices of scratch_per_task floats).  The
 * evaluation context owns it; one kexec is used by one thread at a time. */
struct tfm_kexec {
	struct tfm_pool *pool;
	int n_tasks;               /* = pool threads */
	float *scratch;            /* [n_tasks][scratch_per_task] */
	size_t scratch_per_task;   /* floats */
	int64_t par_min;           /* run inline below this many multiply-adds */
	uint8_t *xbuf;             /* x packed for a matmul, shared by the tasks */
	size_t xbuf_bytes;         /* (the backend's xbuf_need; NULL, 0: none) */
};

/* Attention of n_tok queries over a KV cache.  q: [n_tok][n_head*head_dim],
 * out: [n_tok][n_head*v_dim].  The cache of one layer is kc: n_slots *
 * n_head_kv rows of head_dim elements of k_type (tfm_k_kv_bytes bytes) and
 * vc: the same with v_dim and v_type, laid out as the backend likes (ref:
 * [n_slots][n_head_kv] rows; cpu: values [n_head_kv][n_slots] rows, keys
 * [n_head_kv][head_dim][n_slots] for f32 / f16 and rows for the others, so
 * a tile of one head's keys is contiguous); position p lives in slot p % n_slots and
 * is written with kv_store.  Query t sits at position pos0 + t and sees keys j
 * with j <= p and, when window > 0, p - j < window, or when chunk > 0, j in
 * p's chunk (j >= p - p % chunk).  The caller has already
 * stored the keys and values of the n_tok queries. */
struct tfm_attn_args {
	int64_t n_tok, pos0;
	int64_t n_head, n_head_kv, head_dim;
	int64_t v_dim;         /* value head size; 0: head_dim (MLA: they differ) */
	int v_from_k;          /* the values are the first v_dim elements of each key row
	                          (MLA's latent cache): vc is unused, kv_store stores no v */
	int64_t n_slots;
	int64_t window;        /* 0: plain causal */
	int64_t chunk;         /* 0: none; else chunked local attention (llama4) */
	int bidir;             /* every query sees every key [0, pos0 + n_tok) (encoders); with
	                          window > 0 only those j with |j - p| <= window / 2 */
	int64_t n_kv;          /* bidir and > 0: the keys are [0, n_kv) whatever pos0 and n_tok
	                          (cross-attention over an encoded source) */
	float scale;           /* multiplies q.k */
	float softcap;         /* 0: none; else cap * tanh(s / cap) */
	const float *alibi;    /* [n_head] slopes (bias slope * (j - p)), or NULL */
	const float *rel_bias; /* T5: [n_head][2 rel_span + 1], the bias of key j for the query at
	                          q: rel_bias[h][clamp(j - q, -rel_span, rel_span) + rel_span];
	                          NULL: none */
	int64_t rel_span;
	int k_type, v_type;    /* enum tfm_type of the K and V caches (tfm_k_kv_type_ok) */
};

#define TFM_K_MULTI_MAX 4 /* matrices in one matmul_multi */

/* Activations (same values as enum tfm_act in spec.h). */
enum { TFM_K_SILU = 0, TFM_K_GELU, TFM_K_GELU_TANH, TFM_K_RELU, TFM_K_RELU2, TFM_K_GELU_QUICK };

struct tfm_backend {
	const char *name;
	const char *(*variant)(void); /* e.g. the instruction set in use, or NULL */
	/* y[n][w->out] = x[n][w->in] . W^T.  y must not alias x. */
	void (*matmul)(struct tfm_kexec *k, float *y, const float *x, const struct tfm_mat *w,
		       int64_t n);
	/* The same plus b [w->out] on every row, added while each tile is in
	 * cache (NULL: the caller runs matmul, then add).  A row's sums may
	 * round otherwise than matmul then add (an f32 tile can start as the
	 * bias), never by the thread count. */
	void (*matmul_bias)(struct tfm_kexec *k, float *y, const float *x, const struct tfm_mat *w,
			    const float *b, int64_t n);
	/* y[q] = x . W[q]^T (+ b[q]: NULL or [w[q]->out]) for q < nm <=
	 * TFM_K_MULTI_MAX matrices of the same in (q, k and v; gate and up),
	 * in one call where the backend can share x's preparation and the
	 * threads' meeting among them (NULL: the caller runs matmul_bias on
	 * each).  Each y[q] has the bits matmul_bias gives it. */
	void (*matmul_multi)(struct tfm_kexec *k, int nm, float *const *y, const float *x,
			     const struct tfm_mat *const *w, const float *const *b, int64_t n);
	/* The bytes of a copy of w's weights in a layout the backend's decode
	 * kernels read faster, 0 where it has none for w (NULL op: never);
	 * with dst (that many bytes), the copy is written there.  The caller
	 * owns dst and sets w->dec to it. */
	size_t (*repack)(const struct tfm_mat *w, void *dst);
	/* One row of n: y = x / rms(x) * w  (w NULL: 1; plus_one: 1 + w).  y may be x. */
	void (*rmsnorm)(float *y, const float *x, const float *w, int64_t n, float eps,
			int plus_one);
	/* One row: y = (x - mean) / sqrt(var + eps) * w + b  (w, b may be NULL). */
	void (*layernorm)(float *y, const float *x, const float *w, const float *b, int64_t n,
			  float eps, int plus_one);
	/* Rotate the first n_rot dims of each of n_head heads of x [n_head][head_dim]:
	 * pair i (i < n_rot/2) is (2i, 2i+1) when interleaved, else (i, i + n_rot/2),
	 * by the angle whose cos/sin are cs[i]/sn[i]. */
	void (*rope)(float *x, int64_t n_head, int64_t head_dim, int64_t n_rot, int interleaved,
		     const float *cs, const float *sn);
	void (*softmax)(float *x, int64_t n);             /* in place */
	void (*act)(float *x, int64_t n, int act);        /* in place */
	void (*act_mul)(float *g, const float *u, int64_t n, int act); /* g = act(g) * u */
	void (*add)(float *y, const float *a, const float *b, int64_t n); /* may alias */
	void (*mul)(float *y, const float *a, const float *b, int64_t n);
	void (*attn)(struct tfm_kexec *k, float *out, const float *q, const void *kc,
		     const void *vc, const struct tfm_attn_args *a);
	/* Store one position's k [n_head_kv*head_dim], v [n_head_kv*v_dim] into
	 * slot of the cache, converted to k_type and v_type (tfm_k_kv_put per
	 * head row, so every backend stores the same bytes). */
	void (*kv_store)(void *kc, void *vc, const float *k, const float *v, int64_t slot,
			 const struct tfm_attn_args *a);
	/* Floats of scratch per task matmul/attn need for these sizes. */
	size_t (*scratch_need)(int64_t max_in, int64_t n_slots);
	/* Bytes of kexec.xbuf that let a matmul of up to max_tok tokens of
	 * max_in inputs pack x once for all its tasks (NULL or 0: no use). */
	size_t (*xbuf_need)(int64_t max_in, int64_t max_tok);
	/* Run fn over [0, n_units) of independent units (the recurrent mixers'
	 * heads or channel blocks): calls on ranges [u0, u1) that cover it once,
	 * spread over the pool.  task < k->n_tasks names the thread: calls with
	 * one task never overlap, so per-task work space is safe; kt is that
	 * task's kexec (one task, its scratch slice, no pool: a kernel called
	 * with it runs inline).  Below k->par_min of work (in the matmul's
	 * multiply-adds: the caller's estimate of the cost), or on a backend
	 * without threads (ref), one call fn(ctx, k, 0, 0, n_units).  Each
	 * unit's arithmetic must not depend on the range it is in; then the
	 * results do not depend on the thread count. */
	void (*parallel)(struct tfm_kexec *k,
			 void (*fn)(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1),
			 void *ctx, int64_t n_units, double work);

	/* The recurrent mixers' steps (ref/scan.c has the specification of each).
	 * A state is read and written in place; none of these may alias.
	 *
	 * Mamba's selective scan of d channels over n tokens, per channel i:
	 *   h[i][s] = exp(dt[t][i] A[i][s]) h[i][s] + dt[t][i] B[t][s] x[t][i]
	 *   y[t][i] = C[t] . h[i] + D[i] x[t][i]
	 * y, x, dt [n] rows of d floats, ld apart (ld >= d: a block of a wider
	 * layer's channels); h, A [d][d_state]; D [d]; B, C [n] rows of d_state
	 * floats, bc_stride apart. */
	void (*mamba_scan)(float *y, float *h, const float *x, const float *dt, const float *A,
			   const float *D, const float *B, const float *C, int64_t bc_stride,
			   int64_t ld, int64_t n, int64_t d, int64_t d_state);
	/* One Mamba-2 head, one token: S [head_dim][d_state] = exp(dt A) S +
	 * dt x B^T; y [head_dim] = S C + D x; x [head_dim], B, C [d_state]. */
	void (*mamba2_scan)(float *y, float *S, const float *x, float dt, float A, float D,
			    const float *B, const float *C, int64_t head_dim, int64_t d_state);
	/* One Gated DeltaNet value head, one token: S [dk][dv] = exp(g) S;
	 * d [dv] = beta (v - S^T k); S += k d^T; o [dv] = S^T q; q, k [dk]. */
	void (*gdn_step)(float *o, float *S, const float *q, const float *k, const float *v,
			 float g, float beta, int64_t dk, int64_t dv);
	/* RWKV v4's WKV of d channels, one token, the state num, den, mx [d]
	 * (see lib/model/rwkv.c); out, k, v, w, u [d]. */
	void (*rwkv4_wkv)(float *out, float *num, float *den, float *mx, const float *k,
			  const float *v, const float *w, const float *u, int64_t d);
	/* RWKV v5 / v6's WKV of n_head heads of hs channels, one token: S
	 * [n_head][hs key i][hs value j], out_j = sum_i r_i (u_i k_i v_j + S_ij),
	 * S_ij = w_i S_ij + k_i v_j; out, r, k, v, w, u [n_head * hs]. */
	void (*rwkv5_wkv)(float *out, float *S, const float *r, const float *k, const float *v,
			  const float *w, const float *u, int64_t n_head, int64_t hs);
	/* RWKV v7's, S [n_head][hs value i][hs key j]: sa = a . S_i;
	 * S_ij = S_ij w_j + v_i k_j + sa b_j; out_i = S_i . r; all vectors
	 * [n_head * hs]. */
	void (*rwkv7_wkv)(float *out, float *S, const float *r, const float *w, const float *k,
			  const float *v, const float *a, const float *b, int64_t n_head,
			  int64_t hs);
	/* One mLSTM head, one token (lib/model/xlstm.c): updates C [dqk][dv],
	 * n [dqk] and the stabiliser m; h [dv] the cell's output before its
	 * norm; q, k [dqk], v [dv]; ig, fg the gates' pre-activations. */
	void (*mlstm_step)(float *h, float *C, float *n, float *m, const float *q, const float *k,
			   const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps);
};

/* dispatch.c */
const struct tfm_backend *tfm_backend_ref(void);
const struct tfm_backend *tfm_backend_cpu(void);
/* Backend by name: NULL or "auto" picks the best available; "cpu", "ref".
 * TFM_E_DEVICE for "cuda" when it is not built. */
int tfm_backend_find(const struct tfm_backend **be, const char *name);
/* Every backend, for tests: i in [0, tfm_backend_count()). */
int tfm_backend_count(void);
const struct tfm_backend *tfm_backend_at(int i);

/* ref/convert.c: one row of n elements of a weight type to f32 (f32, f16,
 * bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K); TFM_E_UNSUPPORTED
 * for other types. */
int tfm_k_row_to_f32(int type, const void *src, float *dst, int64_t n);
int tfm_k_type_ok(int type);
/* The types a K or V cache can have: llama.cpp's set, f32, f16, bf16, q8_0,
 * q5_1, q5_0, q4_1, q4_0 (the same block layouts). */
int tfm_k_kv_type_ok(int type);
/* Bytes of one layer's K (or V) cache: n_slots * n_head_kv rows of dim
 * elements of type (q8_0: 34 bytes per 32, ...), or 0 when the type cannot
 * hold such rows (another type; a block type with dim not a multiple of 32). */
size_t tfm_k_kv_bytes(int type, int64_t n_slots, int64_t n_head_kv, int64_t dim);
/* Store x[dim] as one cache row of type (f16: round to nearest even; bf16
 * and block types: tfm_quantize_row). */
void tfm_k_kv_put(int type, void *row, const float *x, int64_t dim);

/* The ref backend's entry points (reused as fallbacks by other backends). */
void tfm_ref_matmul(struct tfm_kexec *k, float *y, const float *x, const struct tfm_mat *w,
		    int64_t n);
void tfm_ref_attn(struct tfm_kexec *k, float *out, const float *q, const void *kc,
		  const void *vc, const struct tfm_attn_args *a);
float tfm_ref_act1(float x, int act);
/* ref/scan.c: the recurrent steps (struct tfm_backend has their contracts) */
void tfm_ref_mamba_scan(float *y, float *h, const float *x, const float *dt, const float *A,
			const float *D, const float *B, const float *C, int64_t bc_stride,
			int64_t ld, int64_t n, int64_t d, int64_t d_state);
void tfm_ref_mamba2_scan(float *y, float *S, const float *x, float dt, float A, float D,
			 const float *B, const float *C, int64_t head_dim, int64_t d_state);
void tfm_ref_gdn_step(float *o, float *S, const float *q, const float *k, const float *v,
		      float g, float beta, int64_t dk, int64_t dv);
void tfm_ref_rwkv4_wkv(float *out, float *num, float *den, float *mx, const float *k,
		       const float *v, const float *w, const float *u, int64_t d);
void tfm_ref_rwkv5_wkv(float *out, float *S, const float *r, const float *k, const float *v,
		       const float *w, const float *u, int64_t n_head, int64_t hs);
void tfm_ref_rwkv7_wkv(float *out, float *S, const float *r, const float *w, const float *k,
		       const float *v, const float *a, const float *b, int64_t n_head, int64_t hs);
void tfm_ref_mlstm_step(float *h, float *C, float *n, float *m, const float *q, const float *k,
			const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps);
/* The mLSTM step's scalars, which every backend takes from here: m1 the
 * new stabiliser, fa = exp(logsigmoid(fg) + m0 - m1), ia = exp(ig - m1),
 * scale = dqk^-1/2. */
void tfm_k_mlstm_gates(float *fa, float *ia, float *m1, float *scale, float m0, float ig, float fg,
		     int64_t dqk);

#endif
