/* qgemv-neon.h: the body of the aarch64 decode matrix-vector products of
 * q4_0, q4_1, q5_0, q5_1 and q8_0 weight rows against one q8_0 / q8_1
 * activation row, four rows at a time (qgemv-k-neon.h: the K-quants),
 * included by qgemv-neon.c (widening multiplies, every ARMv8-A processor)
 * and qgemv-dotprod.c (SDOT).  As lib/quant/dot-neon.h, the including file
 * defines ISA (the name suffix) and
 *	static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b);
 * which adds the 16 products a[l] * b[l] into acc's lanes.
 *
 * Each activation block (and its scales) is loaded once for the four rows,
 * and the four rows are four independent chains.  Each row's integer sum
 * per block is the same integer as lib/quant's one-row
 * tfm_vec_dot_*_<ISA> forms (integer sums are exact in any order: where
 * one is formed otherwise, the comment says why it is the same integer),
 * and its f32 work is that dot's, term by term in its order, one lane per
 * row (vector f32 multiplies and adds round as scalar ones; C11 mode: GCC
 * fuses none), so each row's result is bit-identical to the one-row dot of
 * the same ISA whatever rows it is grouped with (a short group repeats a
 * row).  f16 scales are widened by FCVTL, four at a time: exact, the same
 * f32 as tfm_f16_to_f32.  No prefetch by hand (qgemv-avx2.c has one, for
 * x86's stride prefetcher): whether arm64 cores need it is unmeasured. */
#ifndef TFM_CPU_QGEMV_NEON_H
#define TFM_CPU_QGEMV_NEON_H

#include "kernels/cpu/cpu-impl.h"
#include "quant/quant-impl.h"
#include "quant/simd-neon-inl.h"

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define QFN3(t, i) tfm_cpu_qgemv_##t##_##i
#define QFN2(t, i) QFN3(t, i)
#define QFN(t) QFN2(t, ISA)

static inline float fh(uint16_t v) { return tfm_f16_to_f32(v); }

/* row r + q of W, or row r where r + q is past the last (a short group
 * computes row r again and stores it once) */
static inline const uint8_t *row_of(const void *w, size_t rb, int64_t r, int q, int64_t rows)
{
	return (const uint8_t *)w + (size_t)(r + q < rows ? r + q : r) * rb;
}

/* [sum of a[0]'s lanes, .. sum of a[3]'s]: exact */
static inline int32x4_t hsum4x4(const int32x4_t a[4])
{
	return vpaddq_s32(vpaddq_s32(a[0], a[1]), vpaddq_s32(a[2], a[3]));
}

/* four f16 values as f32 (exact) */
static inline float32x4_t f16x4(const uint16_t h[4])
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* y[r + q] = lane q of v for the rows of the group that exist */
static inline void store_rows(float *y, int64_t r, int64_t rows, float32x4_t v)
{
	float t[4];
	vst1q_f32(t, v);
	for (int q = 0; q < 4 && r + q < rows; q++)
		y[r + q] = t[q];
}

/* the sum of the 32 activations of a block: exact (|.| <= 32 * 127) */
static inline int sum32(int8x16_t b0, int8x16_t b1)
{
	return vaddlvq_s8(b0) + vaddlvq_s8(b1);
}

/* The four row sums of one block, sum over l < 32 of u[l] x[l] for the
 * weight codes u of each row (lo: elements 0-15, hi: 16-31), as int32 */
static inline int32x4_t block_sums(const int8x16_t lo[4], const int8x16_t hi[4], int8x16_t b0,
				   int8x16_t b1)
{
	int32x4_t acc[4];
#pragma GCC unroll 4
	for (int q = 0; q < 4; q++)
		acc[q] = dot16(dot16(vdupq_n_s32(0), lo[q], b0), hi[q], b1);
	return hsum4x4(acc);
}

/* q4_0 (q5 = 0) and q5_0 (q5 = 1) against q8_0.  The one-row dots take
 * the codes minus their offset o (8, or 16) into the products; here the
 * codes u (0..15, or 0..31 with the fifth bit) as they are, and o times
 * the block's activation sum off each row's sum once: sum (u - o) x =
 * sum u x - o sum x, the same integer (no intermediate overflows: |u x|
 * <= 31 * 127 fits SMULL's 16 bits).  Inlined by force: q5 is then a
 * constant. */
__attribute__((always_inline))
static inline void qgemv_x0(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			    int64_t rows, int q5)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const size_t bs = q5 ? sizeof(struct tfm_block_q5_0) : sizeof(struct tfm_block_q4_0);
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	const int off = q5 ? 16 : 8;
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		for (int q = 0; q < 4; q++)
			w[q] = row_of(wv, rb, r, q, rows);
		float32x4_t sumf = vdupq_n_f32(0);
		for (int64_t i = 0; i < nb; i++) {
			const int8x16_t b0 = vld1q_s8(x[i].qs), b1 = vld1q_s8(x[i].qs + 16);
			int8x16_t lo[4], hi[4];
			uint16_t d[4];
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs;
				uint8x16_t v, l, h;
				if (q5) {
					const struct tfm_block_q5_0 *k = (const void *)blk;
					memcpy(&d[q], &k->d, 2);
					v = vld1q_u8(k->qs);
					l = vorrq_u8(vandq_u8(v, m4), fifth16(k->qh, 0));
					h = vorrq_u8(vshrq_n_u8(v, 4), fifth16(k->qh, 1));
				} else {
					const struct tfm_block_q4_0 *k = (const void *)blk;
					memcpy(&d[q], &k->d, 2);
					v = vld1q_u8(k->qs);
					l = vandq_u8(v, m4);
					h = vshrq_n_u8(v, 4);
				}
				lo[q] = vreinterpretq_s8_u8(l);
				hi[q] = vreinterpretq_s8_u8(h);
			}
			int32x4_t s = vsubq_s32(block_sums(lo, hi, b0, b1), vdupq_n_s32(off * sum32(b0, b1)));
			/* sumf += sumi * (dw * dx), as the one-row dot */
			float32x4_t dd = vmulq_n_f32(f16x4(d), fh(x[i].d));
			sumf = vaddq_f32(sumf, vmulq_f32(vcvtq_f32_s32(s), dd));
		}
		store_rows(y, r, rows, sumf);
	}
}

void QFN(q4_0)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	qgemv_x0(y, wv, rb, xq, n, rows, 0);
}

void QFN(q5_0)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	qgemv_x0(y, wv, rb, xq, n, rows, 1);
}

void QFN(q8_0)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q8_0 *w[4];
		for (int q = 0; q < 4; q++)
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
		float32x4_t sumf = vdupq_n_f32(0);
		for (int64_t i = 0; i < nb; i++) {
			const int8x16_t b0 = vld1q_s8(x[i].qs), b1 = vld1q_s8(x[i].qs + 16);
			int8x16_t lo[4], hi[4];
			uint16_t d[4];
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				memcpy(&d[q], &w[q][i].d, 2);
				lo[q] = vld1q_s8(w[q][i].qs);
				hi[q] = vld1q_s8(w[q][i].qs + 16);
			}
			float32x4_t dd = vmulq_n_f32(f16x4(d), fh(x[i].d));
			sumf = vaddq_f32(sumf, vmulq_f32(vcvtq_f32_s32(block_sums(lo, hi, b0, b1)), dd));
		}
		store_rows(y, r, rows, sumf);
	}
}

/* q4_1 (q5 = 0) and q5_1 (q5 = 1) against q8_1: codes u (0..15, 0..31)
 * times x as the one-row dots, and per block sumf += sumi * (dw * dx) +
 * m * s in their order. */
__attribute__((always_inline))
static inline void qgemv_x1(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			    int64_t rows, int q5)
{
	const struct tfm_block_q8_1 *x = xq;
	const int64_t nb = n / TFM_QK;
	const size_t bs = q5 ? sizeof(struct tfm_block_q5_1) : sizeof(struct tfm_block_q4_1);
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		for (int q = 0; q < 4; q++)
			w[q] = row_of(wv, rb, r, q, rows);
		float32x4_t sumf = vdupq_n_f32(0);
		for (int64_t i = 0; i < nb; i++) {
			const int8x16_t b0 = vld1q_s8(x[i].qs), b1 = vld1q_s8(x[i].qs + 16);
			int8x16_t lo[4], hi[4];
			uint16_t d[4], m[4];
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs;
				uint8x16_t v, l, h;
				if (q5) {
					const struct tfm_block_q5_1 *k = (const void *)blk;
					memcpy(&d[q], &k->d, 2), memcpy(&m[q], &k->m, 2);
					v = vld1q_u8(k->qs);
					l = vorrq_u8(vandq_u8(v, m4), fifth16(k->qh, 0));
					h = vorrq_u8(vshrq_n_u8(v, 4), fifth16(k->qh, 1));
				} else {
					const struct tfm_block_q4_1 *k = (const void *)blk;
					memcpy(&d[q], &k->d, 2), memcpy(&m[q], &k->m, 2);
					v = vld1q_u8(k->qs);
					l = vandq_u8(v, m4);
					h = vshrq_n_u8(v, 4);
				}
				lo[q] = vreinterpretq_s8_u8(l);
				hi[q] = vreinterpretq_s8_u8(h);
			}
			float32x4_t dd = vmulq_n_f32(f16x4(d), fh(x[i].d));
			float32x4_t t = vaddq_f32(vmulq_f32(vcvtq_f32_s32(block_sums(lo, hi, b0, b1)), dd),
						  vmulq_n_f32(f16x4(m), fh(x[i].s)));
			sumf = vaddq_f32(sumf, t);
		}
		store_rows(y, r, rows, sumf);
	}
}

void QFN(q4_1)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	qgemv_x1(y, wv, rb, xq, n, rows, 0);
}

void QFN(q5_1)(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)
{
	qgemv_x1(y, wv, rb, xq, n, rows, 1);
}

#endif
