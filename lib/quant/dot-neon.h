/* dot-neon.h: the body of the NEON dot products of quantized weight rows
 * with q8_0, q8_1 and q8_K activation rows, included by dot-neon.c (16
 * byte products by widening multiplies, every ARMv8-A processor) and by
 * dot-dotprod.c (by SDOT, ARMv8.2-A's optional dot product instructions).
 * The including file defines ISA (the name suffix) and
 *	static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b);
 * which adds the 16 products a[l] * b[l] into acc's lanes (in any lanes:
 * only the sum of the four is used).  The integer sums are exact, and the
 * f32 arithmetic around them is dot-ref.c's, term by term in the same
 * order: the result equals the reference's bits where the compiler
 * contracts neither (C11 mode: GCC does not). */
#include "quant/quant-impl.h"
#include "quant/simd-neon-inl.h"

#include <arm_neon.h>
#include <string.h>

#include "tfm.h"

#define FN3(t, i) tfm_vec_dot_##t##_##i
#define FN2(t, i) FN3(t, i)
#define FN(t) FN2(t, ISA)

static inline float fh(uint16_t v) { return tfm_f16_to_f32(v); }

/* sum a[l] * b[l] over 32 bytes */
static inline int dot32(int8x16_t a0, int8x16_t a1, const int8_t *b)
{
	int32x4_t acc = dot16(vdupq_n_s32(0), a0, vld1q_s8(b));
	return vaddvq_s32(dot16(acc, a1, vld1q_s8(b + 16)));
}

static inline int dot16i(int8x16_t a, const int8_t *b)
{
	return vaddvq_s32(dot16(vdupq_n_s32(0), a, vld1q_s8(b)));
}

float FN(q8_0_q8_0)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q8_0 *x = vx, *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		int sumi = dot32(vld1q_s8(x[i].qs), vld1q_s8(x[i].qs + 16), y[i].qs);
		sumf += sumi * (fh(x[i].d) * fh(y[i].d));
	}
	return sumf;
}

float FN(q4_0_q8_0)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	const int8x16_t eight = vdupq_n_s8(8);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		uint8x16_t q = vld1q_u8(x[i].qs);
		/* low nibbles: elements 0-15, high: 16-31 */
		int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), eight);
		int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
		int sumi = dot32(lo, hi, y[i].qs);
		sumf += sumi * (fh(x[i].d) * fh(y[i].d));
	}
	return sumf;
}

/* x = d*q + m, so sum x*y = d*dy*sum(q*qy) + m*s (dot-ref.c) */
float FN(q4_1_q8_1)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_1 *x = vx;
	const struct tfm_block_q8_1 *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		uint8x16_t q = vld1q_u8(x[i].qs);
		int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(q, m4));
		int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
		int sumi = dot32(lo, hi, y[i].qs);
		sumf += sumi * (fh(x[i].d) * fh(y[i].d)) + fh(x[i].m) * fh(y[i].s);
	}
	return sumf;
}

float FN(q5_0_q8_0)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	const int8x16_t sixteen = vdupq_n_s8(16);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		uint8x16_t q = vld1q_u8(x[i].qs);
		uint8x16_t lo = vorrq_u8(vandq_u8(q, m4), fifth16(x[i].qh, 0));
		uint8x16_t hi = vorrq_u8(vshrq_n_u8(q, 4), fifth16(x[i].qh, 1));
		int sumi = dot32(vsubq_s8(vreinterpretq_s8_u8(lo), sixteen),
				 vsubq_s8(vreinterpretq_s8_u8(hi), sixteen), y[i].qs);
		sumf += sumi * (fh(x[i].d) * fh(y[i].d));
	}
	return sumf;
}

float FN(q5_1_q8_1)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_1 *x = vx;
	const struct tfm_block_q8_1 *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		uint8x16_t q = vld1q_u8(x[i].qs);
		uint8x16_t lo = vorrq_u8(vandq_u8(q, m4), fifth16(x[i].qh, 0));
		uint8x16_t hi = vorrq_u8(vshrq_n_u8(q, 4), fifth16(x[i].qh, 1));
		int sumi = dot32(vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi), y[i].qs);
		sumf += sumi * (fh(x[i].d) * fh(y[i].d)) + fh(x[i].m) * fh(y[i].s);
	}
	return sumf;
}

/* q4_K / q5_K: x = d*sc_j*q - dmin*m_j on sub-block j of 32; the min term
 * uses the activation's per-16 sums. */
float FN(q4_K_q8_K)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const int8_t *q8 = y[i].qs;
		int32_t sumi = 0, summ = 0;
		for (int j = 0; j < TFM_QK_K / 64; j++, q4 += 32, q8 += 64) {
			uint8_t sc0, m0, sc1, m1;
			tfm_k4_scale_min(2 * j, x[i].scales, &sc0, &m0);
			tfm_k4_scale_min(2 * j + 1, x[i].scales, &sc1, &m1);
			uint8x16_t a = vld1q_u8(q4), b = vld1q_u8(q4 + 16);
			int s0 = dot32(vreinterpretq_s8_u8(vandq_u8(a, m4)),
				       vreinterpretq_s8_u8(vandq_u8(b, m4)), q8);
			int s1 = dot32(vreinterpretq_s8_u8(vshrq_n_u8(a, 4)),
				       vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), q8 + 32);
			sumi += sc0 * s0 + sc1 * s1;
			summ += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
				m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
		}
		sumf += fh(x[i].d) * y[i].d * sumi - fh(x[i].dmin) * y[i].d * summ;
	}
	return sumf;
}

float FN(q5_K_q8_K)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F), b16 = vdupq_n_u8(0x10);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *ql = x[i].qs;
		const int8_t *q8 = y[i].qs;
		const uint8x16_t h0 = vld1q_u8(x[i].qh), h1 = vld1q_u8(x[i].qh + 16);
		int32_t sumi = 0, summ = 0;
		for (int j = 0; j < TFM_QK_K / 64; j++, ql += 32, q8 += 64) {
			uint8_t sc0, m0, sc1, m1;
			tfm_k4_scale_min(2 * j, x[i].scales, &sc0, &m0);
			tfm_k4_scale_min(2 * j + 1, x[i].scales, &sc1, &m1);
			/* bit 2j of qh[l] is the fifth bit of value 64j+l, bit
			 * 2j+1 that of value 64j+32+l */
			const uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << (2 * j)));
			const uint8x16_t bh = vdupq_n_u8((uint8_t)(2u << (2 * j)));
			uint8x16_t a = vld1q_u8(ql), b = vld1q_u8(ql + 16);
			uint8x16_t lo0 = vorrq_u8(vandq_u8(a, m4), vandq_u8(vtstq_u8(h0, bl), b16));
			uint8x16_t lo1 = vorrq_u8(vandq_u8(b, m4), vandq_u8(vtstq_u8(h1, bl), b16));
			uint8x16_t hi0 = vorrq_u8(vshrq_n_u8(a, 4), vandq_u8(vtstq_u8(h0, bh), b16));
			uint8x16_t hi1 = vorrq_u8(vshrq_n_u8(b, 4), vandq_u8(vtstq_u8(h1, bh), b16));
			int s0 = dot32(vreinterpretq_s8_u8(lo0), vreinterpretq_s8_u8(lo1), q8);
			int s1 = dot32(vreinterpretq_s8_u8(hi0), vreinterpretq_s8_u8(hi1), q8 + 32);
			sumi += sc0 * s0 + sc1 * s1;
			summ += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
				m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
		}
		sumf += fh(x[i].d) * y[i].d * sumi - fh(x[i].dmin) * y[i].d * summ;
	}
	return sumf;
}

/* q6_K: x = d*sc_j*(q-32) on sub-block j of 16. */
float FN(q6_K_q8_K)(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q6_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(3);
	const int8x16_t m32 = vdupq_n_s8(32);
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *sc = x[i].scales, *q8 = y[i].qs;
		int32_t sumi = 0;
		for (int nn = 0; nn < TFM_QK_K; nn += 128, ql += 64, qh += 32, sc += 8, q8 += 128) {
			/* q[k][h]: elements 16h .. 16h+15 of the k-th 32 (dot-ref.c's
			 * q1 .. q4), for s[2k+h] against q8[32k+16h ..] */
			int8x16_t q[4][2];
			for (int h = 0; h < 2; h++) {
				uint8x16_t l0 = vld1q_u8(ql + 16 * h), l1 = vld1q_u8(ql + 32 + 16 * h);
				uint8x16_t hb = vld1q_u8(qh + 16 * h);
				uint8x16_t u[4];
				u[0] = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hb, m2), 4));
				u[1] = vorrq_u8(vandq_u8(l1, m4),
						vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4));
				u[2] = vorrq_u8(vshrq_n_u8(l0, 4),
						vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4));
				u[3] = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4));
				for (int k = 0; k < 4; k++)
					q[k][h] = vsubq_s8(vreinterpretq_s8_u8(u[k]), m32);
			}
			for (int k = 0; k < 8; k++)
				sumi += sc[k] * dot16i(q[k / 2][k % 2], q8 + 16 * k);
		}
		sumf += fh(x[i].d) * y[i].d * sumi;
	}
	return sumf;
}
