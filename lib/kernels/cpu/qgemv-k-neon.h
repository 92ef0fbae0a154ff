/* qgemv-k-neon.h: the body of the aarch64 decode matrix-vector products of
 * K-quant weight rows (q4_K, q5_K, q6_K) against one q8_K activation row,
 * four rows at a time, included after qgemv-neon.h (its helpers, ISA and
 * dot16) by qgemv-neon.c and qgemv-dotprod.c.  Each chunk of activations
 * is loaded once for the four rows, as are q4_K / q5_K's block-sum pairs.
 * Per block, each row's sumi (and q4_K / q5_K's summ) is the same integer
 * as lib/quant's one-row tfm_vec_dot_*_q8_K_<ISA> forms: the integer sums
 * are exact (|sumi| <= 8 * 63 * 32 * 63 * 128 for q5_K, well inside
 * int32), so they may be formed in another order (the sub-block scale
 * multiplied into the lanes before they are added; the 6-bit scales and
 * mins unpacked all at once by ggml's mask trick, as qgemv-k-simd.h, not
 * one by one as tfm_k4_scale_min); the f32 work is the one-row dot's, term
 * by term in its order, one lane per row.  So each row's result is
 * bit-identical to that dot whatever rows share the call. */
#ifndef TFM_CPU_QGEMV_K_NEON_H
#define TFM_CPU_QGEMV_K_NEON_H

#include "kernels/cpu/qgemv-neon.h"

/* The 8 scales (bytes 0-7) and 8 mins (8-15) of a q4_K / q5_K block's 12
 * packed bytes: the same 6-bit values as tfm_k4_scale_min (qgemv-k-simd.h's
 * k4_unpack) */
static inline uint8x16_t k4_unpack(const uint8_t *scales)
{
	uint32_t u[4];
	tfm_k4_unpack(u, scales);
	return vld1q_u8((const uint8_t *)u);
}

/* q4_K (q5 = 0) and q5_K (q5 = 1).  Per block and row, the one-row dot
 * adds sc_2j * s0 + sc_2j+1 * s1 (the lo and hi 32 of each 64) into sumi
 * and m_j times the block-sum pairs into summ, then sumf += d xd sumi -
 * dmin xd summ in f32; here the same integers, with j outer and the rows
 * inner.  Inlined by force: q5 is then a constant. */
__attribute__((always_inline))
static inline void qgemv_k45(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows, int q5)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const size_t bs = q5 ? sizeof(struct tfm_block_q5_K) : sizeof(struct tfm_block_q4_K);
	const uint8x16_t m4 = vdupq_n_u8(0x0F), b16 = vdupq_n_u8(0x10);
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		for (int q = 0; q < 4; q++)
			w[q] = row_of(wv, rb, r, q, rows);
		float32x4_t sumf = vdupq_n_f32(0);
		for (int64_t i = 0; i < nb; i++) {
			/* bsums[2j] + bsums[2j+1] in lane j (|.| <= 32 * 128) */
			const int16x8_t bp = vpaddq_s16(vld1q_s16(x[i].bsums), vld1q_s16(x[i].bsums + 8));
			const uint8_t *qs[4], *qh[4];
			uint8_t sc[4][16]; /* each row's 8 scales, 8 mins */
			int32x4_t sumi[4], summ[4];
			uint16_t d[4], dmin[4];
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs, *scales;
				if (q5) {
					const struct tfm_block_q5_K *k = (const void *)blk;
					scales = k->scales, qs[q] = k->qs, qh[q] = k->qh;
					memcpy(&d[q], &k->d, 2), memcpy(&dmin[q], &k->dmin, 2);
				} else {
					const struct tfm_block_q4_K *k = (const void *)blk;
					scales = k->scales, qs[q] = k->qs, qh[q] = NULL;
					memcpy(&d[q], &k->d, 2), memcpy(&dmin[q], &k->dmin, 2);
				}
				uint8x16_t sm = k4_unpack(scales);
				vst1q_u8(sc[q], sm);
				int16x8_t m16 = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(sm)));
				/* m_j (bsums[2j] + bsums[2j+1]) in the lanes: summ */
				summ[q] = vmlal_high_s16(vmull_s16(vget_low_s16(m16), vget_low_s16(bp)), m16, bp);
				sumi[q] = vdupq_n_s32(0);
			}
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++) {
				const int8_t *q8 = x[i].qs + 64 * j;
				const int8x16_t b0 = vld1q_s8(q8), b1 = vld1q_s8(q8 + 16);
				const int8x16_t b2 = vld1q_s8(q8 + 32), b3 = vld1q_s8(q8 + 48);
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					uint8x16_t a = vld1q_u8(qs[q] + 32 * j), b = vld1q_u8(qs[q] + 32 * j + 16);
					uint8x16_t lo0 = vandq_u8(a, m4), lo1 = vandq_u8(b, m4);
					uint8x16_t hi0 = vshrq_n_u8(a, 4), hi1 = vshrq_n_u8(b, 4);
					if (q5) { /* fifth bits: bit 2j (lo), 2j+1 (hi) of qh[l] */
						const uint8x16_t h0 = vld1q_u8(qh[q]), h1 = vld1q_u8(qh[q] + 16);
						const uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << (2 * j)));
						const uint8x16_t bh = vdupq_n_u8((uint8_t)(2u << (2 * j)));
						lo0 = vorrq_u8(lo0, vandq_u8(vtstq_u8(h0, bl), b16));
						lo1 = vorrq_u8(lo1, vandq_u8(vtstq_u8(h1, bl), b16));
						hi0 = vorrq_u8(hi0, vandq_u8(vtstq_u8(h0, bh), b16));
						hi1 = vorrq_u8(hi1, vandq_u8(vtstq_u8(h1, bh), b16));
					}
					int32x4_t s0 = dot16(dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(lo0), b0),
							     vreinterpretq_s8_u8(lo1), b1);
					int32x4_t s1 = dot16(dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(hi0), b2),
							     vreinterpretq_s8_u8(hi1), b3);
					sumi[q] = vmlaq_n_s32(sumi[q], s0, sc[q][2 * j]);
					sumi[q] = vmlaq_n_s32(sumi[q], s1, sc[q][2 * j + 1]);
				}
			}
			/* sumf += d xd sumi - dmin xd summ, as the one-row dot */
			const float xd = x[i].d;
			float32x4_t t = vsubq_f32(
				vmulq_f32(vmulq_n_f32(f16x4(d), xd), vcvtq_f32_s32(hsum4x4(sumi))),
				vmulq_f32(vmulq_n_f32(f16x4(dmin), xd), vcvtq_f32_s32(hsum4x4(summ))));
			sumf = vaddq_f32(sumf, t);
		}
		store_rows(y, r, rows, sumf);
	}
}

void QFN(q4_K)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	qgemv_k45(y, wv, rb, xq, n, rows, 0);
}

void QFN(q5_K)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	qgemv_k45(y, wv, rb, xq, n, rows, 1);
}

/* q6_K: value 128h + 32k + l (h half, k quarter) has its low 4 bits in
 * ql[64h + 32(k & 1) + l] (low nibble for k < 2, high for k >= 2) and its
 * high 2 in bits 2k, 2k+1 of qh[32h + l]; elements 16g .. 16g + 15 of each
 * half use scale 8h + 2k + g (g = l / 16).  The codes minus 32 times x, as
 * the one-row dot, with each sub-block of 16's scale multiplied into the
 * lanes (sumi: the same integer); per block sumf += d xd sumi. */
void QFN(q6_K)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(3);
	const int8x16_t m32 = vdupq_n_s8(32);
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q6_K *w[4];
		for (int q = 0; q < 4; q++)
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
		float32x4_t sumf = vdupq_n_f32(0);
		for (int64_t i = 0; i < nb; i++) {
			int32x4_t sumi[4];
			uint16_t d[4];
			for (int q = 0; q < 4; q++) {
				sumi[q] = vdupq_n_s32(0);
				memcpy(&d[q], &w[q][i].d, 2);
			}
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
			for (int g = 0; g < 2; g++) {
				/* the activations of sub-blocks 8h + 2k + g, k = 0..3 */
				const int8_t *q8 = x[i].qs + 128 * h + 16 * g;
				const int8x16_t a0 = vld1q_s8(q8), a1 = vld1q_s8(q8 + 32);
				const int8x16_t a2 = vld1q_s8(q8 + 64), a3 = vld1q_s8(q8 + 96);
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					const struct tfm_block_q6_K *k = &w[q][i];
					const uint8_t *ql = k->ql + 64 * h + 16 * g;
					const int8_t *sc = k->scales + 8 * h + g;
					uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 32);
					uint8x16_t hb = vld1q_u8(k->qh + 32 * h + 16 * g);
					uint8x16_t u0 = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hb, m2), 4));
					uint8x16_t u1 = vorrq_u8(vandq_u8(l1, m4),
								 vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4));
					uint8x16_t u2 = vorrq_u8(vshrq_n_u8(l0, 4),
								 vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4));
					uint8x16_t u3 = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4));
					const int32x4_t z = vdupq_n_s32(0);
					int32x4_t s = sumi[q];
					s = vmlaq_n_s32(s, dot16(z, vsubq_s8(vreinterpretq_s8_u8(u0), m32), a0), sc[0]);
					s = vmlaq_n_s32(s, dot16(z, vsubq_s8(vreinterpretq_s8_u8(u1), m32), a1), sc[2]);
					s = vmlaq_n_s32(s, dot16(z, vsubq_s8(vreinterpretq_s8_u8(u2), m32), a2), sc[4]);
					s = vmlaq_n_s32(s, dot16(z, vsubq_s8(vreinterpretq_s8_u8(u3), m32), a3), sc[6]);
					sumi[q] = s;
				}
			}
			float32x4_t dd = vmulq_n_f32(f16x4(d), x[i].d);
			sumf = vaddq_f32(sumf, vmulq_f32(dd, vcvtq_f32_s32(hsum4x4(sumi))));
		}
		store_rows(y, r, rows, sumf);
	}
}

#endif
