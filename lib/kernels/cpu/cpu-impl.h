/* cpu-impl.h: internals of the CPU backend shared by its files: the SIMD dot
 * products (one per instruction set, picked once at run time). */
#ifndef TFM_CPU_IMPL_H
#define TFM_CPU_IMPL_H

#include "tfm.h"
#include "kernels/backend.h"

/* dot(w row of n elements of some type, x[n]) */
typedef float (*tfm_cpu_dot_fn)(const void *w, const float *x, int64_t n);

float tfm_cpu_dot_f32_avx2(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_f16_avx2(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_bf16_avx2(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_f32_avx512(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_f16_avx512(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_bf16_avx512(const void *w, const float *x, int64_t n);

/* max of x[n]; x[i] = exp(x[i] - mx) returning the sum */
typedef float (*tfm_cpu_max_fn)(const float *x, int64_t n);
typedef float (*tfm_cpu_expsum_fn)(float *x, float mx, int64_t n);
float tfm_cpu_max_avx2(const float *x, int64_t n);
float tfm_cpu_max_avx512(const float *x, int64_t n);
float tfm_cpu_expsum_avx2(float *x, float mx, int64_t n);
float tfm_cpu_expsum_avx512(float *x, float mx, int64_t n);

/* y[r] = W[r] . x for rows r < rows, W quantized (rows rb bytes apart), x
 * one row of n quantized to tfm_vec_dot_type of W's type (qgemv-avx512.c) */
typedef void (*tfm_cpu_qgemv_fn)(float *y, const void *w, size_t rb, const void *xq, int64_t n,
				 int64_t rows);
void tfm_cpu_qgemv_q4_0_avx512(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5_0_avx512(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q4_1_avx512(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
/* qgemv-avx2.c: q4_0, q5_0, q8_0 against q8_0 and q4_1, q5_1 against q8_1,
 * four rows at a time, each row bit-identical to lib/quant's
 * tfm_vec_dot_*_avx2 */
void tfm_cpu_qgemv_q4_0_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
/* qx8.c: q4_0, q5_0 and q8_0 rows regrouped by eight for decode (the layouts of
 * struct tfm_mat.dec: rows % 8 == 0), and y[0..rows) = those rows . x (one
 * q8_0 row of n), scalar (the definitions) and AVX2 (qgemv-avx2.c, the
 * same bits) */
typedef void (*tfm_cpu_qx8_fn)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_q4x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows);
void tfm_cpu_q8x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows);
void tfm_cpu_q5x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q4x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q8x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q4x8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q8x8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5x8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
/* qx8k.c: q4_K, q5_K and q6_K regrouped by eight rows (B bytes a row per
 * super-block: tfm_cpu_qx8k_block_bytes), y = those rows . x (one q8_K row
 * of n); scalar (the definitions, type a parameter), AVX2 (qx8k-avx2.c)
 * and SDOT (qx8k-neon.h, below), the same bits */
size_t tfm_cpu_qx8k_block_bytes(int type);
void tfm_cpu_qx8k_pack(int type, uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows);
void tfm_cpu_qgemv_qx8k_scalar(int type, float *y, const void *g8, const void *xq, int64_t n,
			       int64_t rows);
void tfm_cpu_qgemv_q4kx8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5kx8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q6kx8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q4_1_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5_0_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5_1_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q8_0_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
/* qgemv-k-avx2.c: q4_K, q5_K, q6_K against q8_K, each row bit-identical to
 * lib/quant's tfm_vec_dot_*_q8_K_avx2 */
void tfm_cpu_qgemv_q4_K_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5_K_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q6_K_avx2(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
/* qgemv-k-avx512.c: q4_K, q5_K, q6_K against q8_K, each row bit-identical
 * to lib/quant's tfm_vec_dot_*_q8_K_avx512 */
void tfm_cpu_qgemv_q4_K_avx512(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5_K_avx512(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q6_K_avx512(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);

/* igemm-avx512.c: prefill of q4_0 / q5_0 / q8_0 / q4_1 / q4_K / q5_K weights
 * as an 8-bit GEMM:
 * pack x [n][in] (q8: scratch for one q8_K row; k256: x quantized as q8_K,
 * for K-quant weights, else as q8_0), unpack a tile of weight
 * rows, then y[t * ldy + r] for t < n, r < rows.  in: a multiple of 32. */
size_t tfm_cpu_igemm_x_bytes(int64_t n, int64_t in);
size_t tfm_cpu_igemm_w_bytes(int64_t rows, int64_t in);
void tfm_cpu_igemm_pack_x(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t group,
			  void *q8, int k256); /* tokens 16 group .. */
void tfm_cpu_igemm_prep_w(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows,
			  int64_t in);
void tfm_cpu_igemm(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
		   int64_t rows, int64_t in, int minimum); /* minimum: q4_1, q4_K, q5_K */

/* igemm-avx2.c: the same GEMM with AVX2 (vpmaddubsw, no VNNI), groups of 8
 * tokens, its own packing (signed activations, unsigned weight codes):
 * same arguments as above but the weight type in place of `minimum` */
size_t tfm_cpu_igemm_x_bytes_avx2(int64_t n, int64_t in);
size_t tfm_cpu_igemm_w_bytes_avx2(int64_t rows, int64_t in);
void tfm_cpu_igemm_pack_x_avx2(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t group,
			       void *q8, int k256); /* tokens 8 group .. */
void tfm_cpu_igemm_prep_w_avx2(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows,
			       int64_t in);
void tfm_cpu_igemm_avx2(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
			int64_t rows, int64_t in, int type);

/* igemm-neon.c, igemm-dotprod.c (aarch64): the same GEMM with NEON, groups
 * of 8 tokens and of 4 weight rows (layout: igemm-neon.h), one packing for
 * both kernels; same arguments as the AVX2 one.  tfm_cpu_igemm_neon
 * multiplies with SMULL, tfm_cpu_igemm_dotprod with SDOT (only where the
 * processor has it). */
size_t tfm_cpu_igemm_x_bytes_neon(int64_t n, int64_t in);
size_t tfm_cpu_igemm_w_bytes_neon(int64_t rows, int64_t in);
void tfm_cpu_igemm_pack_x_neon(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t group,
			       void *q8, int k256); /* tokens 8 group .. */
void tfm_cpu_igemm_prep_w_neon(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows,
			       int64_t in);
void tfm_cpu_igemm_neon(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
			int64_t rows, int64_t in, int type);
void tfm_cpu_igemm_dotprod(float *y, int64_t ldy, const uint8_t *xp, int64_t n,
			   const uint8_t *wp, int64_t rows, int64_t in, int type);

/* whether a prefill (more than 16 tokens) of weights of type runs one of
 * the 8-bit GEMMs on the instruction set in use (cpu.c) */
int tfm_cpu_igemm_takes(int type);

/* attention tiles for up to 4 queries (attn-avx512.c; cpu.c has the
 * generic versions): scores against a transposed key tile, and the
 * probability-weighted sum of a value tile added to the rescaled outputs */
void tfm_cpu_attn_qk_avx2(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			  int64_t ldk, int64_t hd, int64_t nk);
void tfm_cpu_attn_pv_avx2(float *const *o, const float *corr, const float *p, int64_t ldp,
			  int64_t nq, const float *v, int64_t nk, int64_t vd);
void tfm_cpu_attn_qk_avx512(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			    int64_t ldk, int64_t hd, int64_t nk);
void tfm_cpu_attn_pv_avx512(float *const *o, const float *corr, const float *p, int64_t ldp,
			    int64_t nq, const float *v, int64_t nk, int64_t vd);

/* y[i] = x[i] (f16) as f32 */
void tfm_cpu_f16_row_avx2(float *y, const uint16_t *x, int64_t n);

/* aarch64 (dot-neon.c, f16-neon.c, attn-neon.c): the same kernels with NEON */
float tfm_cpu_dot_f32_neon(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_f16_neon(const void *w, const float *x, int64_t n);
float tfm_cpu_dot_bf16_neon(const void *w, const float *x, int64_t n);
float tfm_cpu_max_neon(const float *x, int64_t n);
float tfm_cpu_expsum_neon(float *x, float mx, int64_t n);
void tfm_cpu_f16_row_neon(float *y, const uint16_t *x, int64_t n);
void tfm_cpu_act_mul_neon(float *g, const float *u, int64_t n, int act);
void tfm_cpu_attn_qk_neon(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			  int64_t ldk, int64_t hd, int64_t nk);
void tfm_cpu_attn_pv_neon(float *const *o, const float *corr, const float *p, int64_t ldp,
			  int64_t nq, const float *v, int64_t nk, int64_t vd);
/* qgemv-neon.c, qgemv-dotprod.c (qgemv-neon.h, qgemv-k-neon.h): the
 * four-row decode kernels, each row bit-identical to lib/quant's
 * tfm_vec_dot_*_neon / _dotprod (dotprod: only where the processor has it) */
#define TFM_CPU_QGEMV_NEON(isa) \
	void tfm_cpu_qgemv_q4_0_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q4_1_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q5_0_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q5_1_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q8_0_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q4_K_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q5_K_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows); \
	void tfm_cpu_qgemv_q6_K_##isa(float *y, const void *w, size_t rb, const void *xq, int64_t n, int64_t rows);
TFM_CPU_QGEMV_NEON(neon)
TFM_CPU_QGEMV_NEON(dotprod)
#undef TFM_CPU_QGEMV_NEON
/* qx8-neon.h in qgemv-dotprod.c: the rows regrouped by eight (qx8.c), with
 * SDOT, whose lanes sum four bytes each (the SMULL form of qgemv-neon.c
 * does not keep them apart) */
void tfm_cpu_qgemv_q4x8_dotprod(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5x8_dotprod(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q8x8_dotprod(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
/* qx8k-neon.h in qgemv-dotprod.c: q4_K, q5_K and q6_K regrouped by eight
 * (qx8k.c), with SDOT: the scalar definitions' bits */
void tfm_cpu_qgemv_q4kx8_dotprod(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q5kx8_dotprod(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);
void tfm_cpu_qgemv_q6kx8_dotprod(float *y, const void *g8, const void *xq, int64_t n, int64_t rows);

/* g = act(g) * u (u may be NULL) for act SILU or GELU_TANH */
void tfm_cpu_act_mul_avx512(float *g, const float *u, int64_t n, int act);
void tfm_cpu_act_mul_avx2(float *g, const float *u, int64_t n, int act);

/* scan-avx2.c, scan-avx512.c, scan-neon.c: the recurrent mixers' steps (struct
 * tfm_backend's mamba_scan .. mlstm_step, same arguments; scan-simd.h) */
void tfm_cpu_mamba_scan_avx2(float *y, float *h, const float *x, const float *dt, const float *A,
			   const float *D, const float *B, const float *C, int64_t bc_stride,
			   int64_t ld, int64_t n, int64_t d, int64_t d_state);
void tfm_cpu_mamba2_scan_avx2(float *y, float *S, const float *x, float dt, float A, float D,
			    const float *B, const float *C, int64_t head_dim, int64_t d_state);
void tfm_cpu_gdn_step_avx2(float *o, float *S, const float *q, const float *k, const float *v,
			 float g, float beta, int64_t dk, int64_t dv);
void tfm_cpu_rwkv4_wkv_avx2(float *out, float *num, float *den, float *mx, const float *k,
			  const float *v, const float *w, const float *u, int64_t d);
void tfm_cpu_rwkv5_wkv_avx2(float *out, float *S, const float *r, const float *k, const float *v,
			  const float *w, const float *u, int64_t n_head, int64_t hs);
void tfm_cpu_rwkv7_wkv_avx2(float *out, float *S, const float *r, const float *w, const float *k,
			  const float *v, const float *a, const float *b, int64_t n_head, int64_t hs);
void tfm_cpu_mlstm_step_avx2(float *h, float *C, float *n, float *m, const float *q, const float *k,
			   const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps);
void tfm_cpu_mamba_scan_avx512(float *y, float *h, const float *x, const float *dt, const float *A,
			   const float *D, const float *B, const float *C, int64_t bc_stride,
			   int64_t ld, int64_t n, int64_t d, int64_t d_state);
void tfm_cpu_mamba2_scan_avx512(float *y, float *S, const float *x, float dt, float A, float D,
			    const float *B, const float *C, int64_t head_dim, int64_t d_state);
void tfm_cpu_gdn_step_avx512(float *o, float *S, const float *q, const float *k, const float *v,
			 float g, float beta, int64_t dk, int64_t dv);
void tfm_cpu_rwkv4_wkv_avx512(float *out, float *num, float *den, float *mx, const float *k,
			  const float *v, const float *w, const float *u, int64_t d);
void tfm_cpu_rwkv5_wkv_avx512(float *out, float *S, const float *r, const float *k, const float *v,
			  const float *w, const float *u, int64_t n_head, int64_t hs);
void tfm_cpu_rwkv7_wkv_avx512(float *out, float *S, const float *r, const float *w, const float *k,
			  const float *v, const float *a, const float *b, int64_t n_head, int64_t hs);
void tfm_cpu_mlstm_step_avx512(float *h, float *C, float *n, float *m, const float *q, const float *k,
			   const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps);
void tfm_cpu_mamba_scan_neon(float *y, float *h, const float *x, const float *dt, const float *A,
			   const float *D, const float *B, const float *C, int64_t bc_stride,
			   int64_t ld, int64_t n, int64_t d, int64_t d_state);
void tfm_cpu_mamba2_scan_neon(float *y, float *S, const float *x, float dt, float A, float D,
			    const float *B, const float *C, int64_t head_dim, int64_t d_state);
void tfm_cpu_gdn_step_neon(float *o, float *S, const float *q, const float *k, const float *v,
			 float g, float beta, int64_t dk, int64_t dv);
void tfm_cpu_rwkv4_wkv_neon(float *out, float *num, float *den, float *mx, const float *k,
			  const float *v, const float *w, const float *u, int64_t d);
void tfm_cpu_rwkv5_wkv_neon(float *out, float *S, const float *r, const float *k, const float *v,
			  const float *w, const float *u, int64_t n_head, int64_t hs);
void tfm_cpu_rwkv7_wkv_neon(float *out, float *S, const float *r, const float *w, const float *k,
			  const float *v, const float *a, const float *b, int64_t n_head, int64_t hs);
void tfm_cpu_mlstm_step_neon(float *h, float *C, float *n, float *m, const float *q, const float *k,
			   const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps);

/* The instruction sets of the target, best first: those TFM_ISA and
 * tfm_cpu_set_isa accept (each only where the processor has it). */
#if defined(__x86_64__)
#define TFM_CPU_ISAS {"avx512", "avx2", "scalar"}
#define TFM_CPU_ISA_NAMES "scalar, avx2 or avx512"
#elif defined(__aarch64__)
#define TFM_CPU_ISAS {"dotprod", "neon", "scalar"}
#define TFM_CPU_ISA_NAMES "scalar, neon or dotprod"
#else
#define TFM_CPU_ISAS {"scalar"}
#define TFM_CPU_ISA_NAMES "scalar"
#endif

/* The dot product for a weight type on this machine (f32, f16, bf16), or NULL. */
tfm_cpu_dot_fn tfm_cpu_dot(int type);
const char *tfm_cpu_isa(void); /* one of TFM_CPU_ISAS */
/* Switch the instruction set (tests: run every variant this processor has).
 * Not thread-safe: only while no kernel runs. */
int tfm_cpu_set_isa(const char *isa);

/* cpu-ops.c: the element-wise and row kernels */
void tfm_cpu_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps, int plus_one);
void tfm_cpu_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n,
		       float eps, int plus_one);
void tfm_cpu_rope(float *x, int64_t n_head, int64_t head_dim, int64_t n_rot, int interleaved,
		  const float *cs, const float *sn);
void tfm_cpu_softmax(float *x, int64_t n);
void tfm_cpu_act(float *x, int64_t n, int act);
void tfm_cpu_act_scalar(float *g, const float *u, int64_t n, int act); /* u may be NULL */
void tfm_cpu_act_mul(float *g, const float *u, int64_t n, int act);
void tfm_cpu_add(float *y, const float *a, const float *b, int64_t n);
/* y = a + b, n floats (y may be a or b): scalar (cpu-ops.c), AVX2
 * (dot-avx2.c), AVX-512 (dot-avx512.c), NEON (dot-neon.c); every one the
 * same IEEE sums, so tfm_cpu_add's choice changes no bit */
void tfm_cpu_add_scalar(float *y, const float *a, const float *b, int64_t n);
void tfm_cpu_add_avx2(float *y, const float *a, const float *b, int64_t n);
void tfm_cpu_add_avx512(float *y, const float *a, const float *b, int64_t n);
void tfm_cpu_add_neon(float *y, const float *a, const float *b, int64_t n);
void tfm_cpu_mul(float *y, const float *a, const float *b, int64_t n);

#endif
