/* igemm-neon.h: the aarch64 8-bit prefill GEMM's layout and kernel body,
 * included by igemm-neon.c (plain NEON: SMULL and pairwise adds, every
 * ARMv8-A processor; it also packs x and unpacks weights for both) and by
 * igemm-dotprod.c (SDOT by lane, ARMv8.2-A's dot product instructions).
 * The including file defines ISA (the name suffix) and
 *	DOT4(acc, w, x, t): acc[r] += sum_k w[4 r + k] * x[4 t + k], r = 0..3,
 *	t a constant 0..3
 * (int32x4_t acc, int8x16_t w, const int8_t *x: 4 tokens' 4 elements),
 * exact.  Both give every output the same
 * bits, whatever the tile or thread that computes it: each 32-element block
 * of (token, row) is an exact int32 sum, scaled by d_w * d_x and added in
 * f32 (fused), blocks in order.
 *
 * x, per group of GROUP tokens (a short last group padded with zeros) and
 * block b of 32: XBLK bytes, int8 [8 steps][8 tokens][4 elements] (step s:
 * elements 4 s .. 4 s + 3), then f32 d_x [8], f32 d_x * sum(x) [8].
 * Weights, per group of RG rows (a short last group padded with zero rows)
 * and block b: WBLK bytes, int8 [8 steps][4 rows][4 elements], the signed
 * values (codes less their offset: q4_0 u - 8, q5_0 u - 16, q6_K u - 32;
 * q4_1, q5_1, q4_K, q5_K their unsigned codes u <= 31; q8_0 as stored),
 * then f32 scales d_w [4], f32 minimums [4] (value = d_w w + m; q6_K: the
 * second half's scale, its 16-element halves scaled apart).  One step of
 * 4 rows against 4 tokens is one SDOT by lane per token. */
#ifndef TFM_CPU_IGEMM_NEON_H
#define TFM_CPU_IGEMM_NEON_H

#include "quant/quant.h"

#include <arm_neon.h>
#include <stdint.h>

#define GROUP 8                          /* tokens per group */
#define RG 4                             /* weight rows per group */
#define XBLK (GROUP * 32 + 2 * GROUP * 4) /* bytes of a group's block of x */
#define WBLK (RG * 32 + 2 * RG * 4)       /* bytes of a row group's block */

#endif

#ifdef ISA
#define FN3(i) tfm_cpu_igemm_##i
#define FN2(i) FN3(i)

#define T8(f) f(0) f(1) f(2) f(3) f(4) f(5) f(6) f(7)

/* RG rows x GROUP tokens at a time; y[t * ldy + r].  half: q6_K (steps 0-3
 * scaled by d_w, 4-7 by the minimum slot); minimum: add m d_x sum(x).
 * Accumulators are written out one by one (T8), not as arrays, so that
 * GCC keeps them in registers. */
static inline __attribute__((always_inline)) void igemm_kind(float *y, int64_t ldy,
							     const uint8_t *xp, int64_t n,
							     const uint8_t *wp, int64_t rows,
							     int64_t in, int half, int minimum)
{
	int64_t nb = in / TFM_QK, ng = (n + GROUP - 1) / GROUP, nr = (rows + RG - 1) / RG;
	for (int64_t G = 0; G < ng; G++) {
		int64_t nt = n - G * GROUP < GROUP ? n - G * GROUP : GROUP;
		for (int64_t R = 0; R < nr; R++) {
			const uint8_t *xb = xp + (size_t)G * nb * XBLK;
			const uint8_t *wb = wp + (size_t)R * nb * WBLK;
#define Z(t) float32x4_t a##t = vdupq_n_f32(0);
			T8(Z)
#undef Z
			for (int64_t b = 0; b < nb; b++, xb += XBLK, wb += WBLK) {
				const float *dx = (const float *)(xb + GROUP * 32);
				float32x4_t dx0 = vld1q_f32(dx), dx1 = vld1q_f32(dx + 4);
				float32x4_t dw = vld1q_f32((const float *)(wb + RG * 32));
				float32x4_t mw = vld1q_f32((const float *)(wb + RG * 32) + 4);
#define Z(t) int32x4_t i##t = vdupq_n_s32(0);
				T8(Z)
#undef Z
/* a##t += i##t * (scale * d_x[t]) */
#define ACC(t) a##t = vfmaq_f32(a##t, vcvtq_f32_s32(i##t), \
				vmulq_laneq_f32(SC, (t) < 4 ? dx0 : dx1, (t) % 4));
#pragma GCC unroll 8
				for (int s = 0; s < 8; s++) {
					int8x16_t w = vld1q_s8((const int8_t *)wb + 16 * s);
					const int8_t *x0 = (const int8_t *)xb + 32 * s, *x1 = x0 + 16;
#define D0(t) DOT4(i##t, w, x0, t);
#define D1(t) DOT4(i##t, w, x1, (t) - 4);
					D0(0) D0(1) D0(2) D0(3) D1(4) D1(5) D1(6) D1(7)
#undef D0
#undef D1
					if (half && s == 3) { /* q6_K's first 16 */
#define SC dw
						T8(ACC)
#undef SC
#define Z(t) i##t = vdupq_n_s32(0);
						T8(Z)
#undef Z
					}
				}
				if (half) {
#define SC mw
					T8(ACC)
#undef SC
				} else {
#define SC dw
					T8(ACC)
#undef SC
				}
#undef ACC
				if (minimum) {
					const float *sx = dx + GROUP;
					float32x4_t s0 = vld1q_f32(sx), s1 = vld1q_f32(sx + 4);
#define M(t) a##t = vfmaq_laneq_f32(a##t, mw, (t) < 4 ? s0 : s1, (t) % 4);
					T8(M)
#undef M
				}
			}
			int64_t nrr = rows - R * RG < RG ? rows - R * RG : RG;
			float *yo = y + G * GROUP * ldy + R * RG;
#define ST(t)                                                                                      \
	if ((t) < nt) {                                                                            \
		if (nrr == RG) {                                                                   \
			vst1q_f32(yo + (t) * ldy, a##t);                                           \
		} else {                                                                           \
			float tmp[RG];                                                             \
			vst1q_f32(tmp, a##t);                                                      \
			for (int64_t q = 0; q < nrr; q++)                                          \
				yo[(t) * ldy + q] = tmp[q];                                        \
		}                                                                                  \
	}
			T8(ST)
#undef ST
		}
	}
}

/* y[t * ldy + r] = the matmul of x packed by tfm_cpu_igemm_pack_x_neon and
 * weights of type unpacked by tfm_cpu_igemm_prep_w_neon, t < n, r < rows */
void FN2(ISA)(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
	      int64_t rows, int64_t in, int type)
{
	switch (type) {
	case TFM_TYPE_Q8_0: case TFM_TYPE_Q4_0: case TFM_TYPE_Q5_0:
		igemm_kind(y, ldy, xp, n, wp, rows, in, 0, 0);
		break;
	case TFM_TYPE_Q4_1: case TFM_TYPE_Q5_1: case TFM_TYPE_Q4_K: case TFM_TYPE_Q5_K:
		igemm_kind(y, ldy, xp, n, wp, rows, in, 0, 1);
		break;
	case TFM_TYPE_Q6_K:
		igemm_kind(y, ldy, xp, n, wp, rows, in, 1, 0);
		break;
	}
}
#endif
