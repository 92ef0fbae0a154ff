/* quant-impl.h: the per-type kernels behind quant.h, for the dispatch in
 * quant.c and for the tests that compare fast versions with the reference.
 * All take rows of n elements, n a multiple of the type's block size. */
#ifndef TFM_QUANT_IMPL_H
#define TFM_QUANT_IMPL_H

#include "quant/quant.h"

#include <string.h>

#define TFM_QUANT_TYPES(X) X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(q8_1) \
	X(q4_K) X(q5_K) X(q6_K) X(q8_K)

#define TFM_QDECL(t) \
	void tfm_quantize_##t##_ref(const float *x, void *y, int64_t n); \
	void tfm_dequantize_##t##_ref(const void *x, float *y, int64_t n);
TFM_QUANT_TYPES(TFM_QDECL)
#undef TFM_QDECL

/* Reference dot products (dot-ref.c): weight row x, activation row y. */
float tfm_vec_dot_q4_0_q8_0_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q4_1_q8_1_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_0_q8_0_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_1_q8_1_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q8_0_q8_0_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q4_K_q8_K_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_K_q8_K_ref(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q6_K_q8_K_ref(int64_t n, const void *x, const void *y);

/* AVX2 versions (quant-avx2.c, dot-avx2.c); call only when the CPU has
 * AVX2, FMA and F16C. */
void tfm_quantize_q8_0_avx2(const float *x, void *y, int64_t n);
void tfm_quantize_q8_1_avx2(const float *x, void *y, int64_t n);
void tfm_quantize_q8_K_avx2(const float *x, void *y, int64_t n);
void tfm_dequantize_q4_0_avx2(const void *x, float *y, int64_t n);
void tfm_dequantize_q8_0_avx2(const void *x, float *y, int64_t n);
float tfm_vec_dot_q4_0_q8_0_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q4_1_q8_1_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_0_q8_0_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_1_q8_1_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q8_0_q8_0_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q4_K_q8_K_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_K_q8_K_avx2(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q6_K_q8_K_avx2(int64_t n, const void *x, const void *y);

/* AVX-512 versions (dot-avx512.c) of the most used types; call only when
 * tfm_quant_cpu_avx512() says so. */
float tfm_vec_dot_q4_0_q8_0_avx512(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q8_0_q8_0_avx512(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q4_K_q8_K_avx512(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q5_K_q8_K_avx512(int64_t n, const void *x, const void *y);
float tfm_vec_dot_q6_K_q8_K_avx512(int64_t n, const void *x, const void *y);

/* NEON versions (aarch64: quant-neon.c; dot-neon.c with widening
 * multiplies, dot-dotprod.c, the same source, with SDOT): call only when
 * tfm_quant_cpu_neon() or tfm_quant_cpu_dotprod() says so. */
void tfm_quantize_q8_0_neon(const float *x, void *y, int64_t n);
void tfm_quantize_q8_1_neon(const float *x, void *y, int64_t n);
void tfm_quantize_q8_K_neon(const float *x, void *y, int64_t n);
#define TFM_QDOT_NEON(isa) \
	float tfm_vec_dot_q4_0_q8_0_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q4_1_q8_1_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q5_0_q8_0_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q5_1_q8_1_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q8_0_q8_0_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q4_K_q8_K_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q5_K_q8_K_##isa(int64_t n, const void *x, const void *y); \
	float tfm_vec_dot_q6_K_q8_K_##isa(int64_t n, const void *x, const void *y);
TFM_QDOT_NEON(neon)
TFM_QDOT_NEON(dotprod)
#undef TFM_QDOT_NEON

/* The path lib/quant runs (tfm_quant_isa names it), which TFM_ISA lowers
 * as it lowers the CPU backend's (quant.c). */
int tfm_quant_cpu_avx2(void);   /* AVX2 + FMA + F16C present (and TFM_ISA is not
				 * scalar) */
int tfm_quant_cpu_avx512(void); /* and AVX-512 F, BW, VL, DQ, VNNI, BF16 (the -m flags
				 * the Makefile gives *-avx512.c; and TFM_ISA is not
				 * avx2) */
int tfm_quant_cpu_neon(void);    /* aarch64 (and TFM_ISA is not scalar) */
int tfm_quant_cpu_dotprod(void); /* and the dot product instructions (and TFM_ISA is
				  * not neon) */

/* The 6-bit scale and min j (0..7) of a q4_K / q5_K block. */
static inline void tfm_k4_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
	if (j < 4) {
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
	}
}

/* All 8 scales (bytes 0-7) and 8 minimums (bytes 8-15) of a q4_K / q5_K
 * block's 12 packed bytes at once, into u as 16 bytes: ggml's mask trick
 * (ggml_vec_dot_q4_K_q8_K), the same 6-bit values as tfm_k4_scale_min.
 * The four-row decode kernels load u as one vector. */
static inline void tfm_k4_unpack(uint32_t u[4], const uint8_t *scales)
{
	memcpy(u, scales, 12);
	const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
	u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
	uint32_t a = u[1] & k1;
	u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
	u[2] = a;
	u[0] &= k1;
}

#endif
