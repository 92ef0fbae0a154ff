/* igemm-neon.c: prefill matmul of q4_0 / q4_1 / q5_0 / q5_1 / q8_0 / q4_K /
 * q5_K / q6_K weights as an 8-bit integer GEMM on aarch64 (cpu.c's igemm
 * for "neon" and "dotprod"): x quantized once (to q8_0, or for K-quant
 * weights to q8_K, as lib/quant's one-row dots and ggml do), a tile of
 * weight rows unpacked to signed bytes with its block scales (layout:
 * igemm-neon.h), then igemm-neon.h's kernel, here without SDOT: each step
 * of 4 rows x 4 elements against one token's 4 elements broadcast is two
 * SMULL into int16, a pairwise add (ADDP) of neighbouring products, and
 * SADALP into the rows' int32 lanes.  Exact: a pair of products is at most
 * 2 * 128 * 127 (q8_0 weights may be -128, x is within -127..127: lib/quant
 * quantizes q8_0 and q8_K by 127 / max|x|), the other types' weights at
 * most 32 in magnitude. */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/igemm-neon.h"
#include "quant/quant-impl.h"
#include "quant/quant.h"
#include "quant/simd-neon-inl.h"

#include <arm_neon.h>
#include <string.h>

/* bytes of one group of GROUP tokens */
static size_t group_bytes(int64_t in) { return (size_t)(in / TFM_QK) * XBLK; }

size_t tfm_cpu_igemm_x_bytes_neon(int64_t n, int64_t in)
{
	return (size_t)((n + GROUP - 1) / GROUP) * group_bytes(in);
}

size_t tfm_cpu_igemm_w_bytes_neon(int64_t rows, int64_t in)
{
	return (size_t)((rows + RG - 1) / RG) * (size_t)(in / TFM_QK) * WBLK;
}

/* Group G (tokens GROUP G ..) of x [n][in] into xp
 * (tfm_cpu_igemm_x_bytes_neon(n, in) bytes for all groups), quantized to
 * q8_K (k256: for K-quant weights) or q8_0; q8: scratch for one q8_K row
 * of in.  Groups are independent: threads may pack different groups at
 * once. */
void tfm_cpu_igemm_pack_x_neon(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t G,
			       void *q8, int k256)
{
	int64_t nb = in / TFM_QK;
	uint8_t *g = xp + G * group_bytes(in);
	int64_t nt = n - G * GROUP < GROUP ? n - G * GROUP : GROUP;
	if (nt < GROUP) /* padding tokens: x = 0, scales and sums 0 */
		memset(g, 0, group_bytes(in));
	for (int64_t t = 0; t < nt; t++) {
		tfm_quantize_row(k256 ? TFM_TYPE_Q8_K : TFM_TYPE_Q8_0, x + (G * GROUP + t) * in, q8,
				 in);
		for (int64_t b = 0; b < nb; b++) {
			uint8_t *blk = g + b * XBLK;
			float *dx = (float *)(blk + GROUP * 32), d;
			const int8_t *qs;
			if (k256) {
				const struct tfm_block_q8_K *s = (const struct tfm_block_q8_K *)q8 + b / 8;
				d = s->d, qs = s->qs + 32 * (b % 8);
			} else {
				const struct tfm_block_q8_0 *s = (const struct tfm_block_q8_0 *)q8 + b;
				d = tfm_f16_to_f32(s->d), qs = s->qs;
			}
			int8x16_t q0 = vld1q_s8(qs), q1 = vld1q_s8(qs + 16);
			int sum = vaddlvq_s8(q0) + vaddlvq_s8(q1);
			dx[t] = d;
			dx[GROUP + t] = d * (float)sum;
			for (int s = 0; s < 8; s++)
				memcpy(blk + s * 32 + t * 4, qs + 4 * s, 4);
		}
	}
}

/* Block b (32 elements) of a row of type as signed bytes v[32] with
 * value = *dw * v + *mw (q6_K: *mw is the second 16's scale) */
static void unpack_block(int8_t *v, float *dw, float *mw, int type, const uint8_t *row, int64_t b)
{
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	uint8x16_t lo, hi; /* elements 0-15, 16-31 */
	uint8_t off = 0;   /* the codes' offset */
	*mw = 0;
	switch (type) {
	case TFM_TYPE_Q8_0: {
		const struct tfm_block_q8_0 *q = (const struct tfm_block_q8_0 *)row + b;
		memcpy(v, q->qs, 32);
		*dw = tfm_f16_to_f32(q->d);
		return;
	}
	case TFM_TYPE_Q4_0: case TFM_TYPE_Q4_1: {
		const uint8_t *qs;
		if (type == TFM_TYPE_Q4_0) {
			const struct tfm_block_q4_0 *q = (const struct tfm_block_q4_0 *)row + b;
			qs = q->qs, *dw = tfm_f16_to_f32(q->d), off = 8;
		} else {
			const struct tfm_block_q4_1 *q = (const struct tfm_block_q4_1 *)row + b;
			qs = q->qs, *dw = tfm_f16_to_f32(q->d), *mw = tfm_f16_to_f32(q->m);
		}
		uint8x16_t u = vld1q_u8(qs);
		lo = vandq_u8(u, m4), hi = vshrq_n_u8(u, 4);
		break;
	}
	case TFM_TYPE_Q5_0: case TFM_TYPE_Q5_1: {
		const uint8_t *qs, *qh;
		if (type == TFM_TYPE_Q5_0) {
			const struct tfm_block_q5_0 *q = (const struct tfm_block_q5_0 *)row + b;
			qs = q->qs, qh = q->qh, *dw = tfm_f16_to_f32(q->d), off = 16;
		} else {
			const struct tfm_block_q5_1 *q = (const struct tfm_block_q5_1 *)row + b;
			qs = q->qs, qh = q->qh, *dw = tfm_f16_to_f32(q->d), *mw = tfm_f16_to_f32(q->m);
		}
		uint8x16_t u = vld1q_u8(qs);
		lo = vorrq_u8(vandq_u8(u, m4), fifth16(qh, 0));
		hi = vorrq_u8(vshrq_n_u8(u, 4), fifth16(qh, 1));
		break;
	}
	case TFM_TYPE_Q4_K: case TFM_TYPE_Q5_K: {
		/* ggml's layout: sub-blocks 2j and 2j + 1 are the low and high
		 * nibbles of qs[32 j .. 32 j + 31], their fifth bits bits 2j and
		 * 2j + 1 of qh[0..31]; 6-bit scale and minimum (tfm_k4_scale_min) */
		int64_t i = b / 8;
		int s = (int)(b % 8);
		const uint8_t *qs, *scales, *qh = NULL;
		float d, dmin;
		if (type == TFM_TYPE_Q5_K) {
			const struct tfm_block_q5_K *x = (const struct tfm_block_q5_K *)row + i;
			qs = x->qs, scales = x->scales, qh = x->qh;
			d = tfm_f16_to_f32(x->d), dmin = tfm_f16_to_f32(x->dmin);
		} else {
			const struct tfm_block_q4_K *x = (const struct tfm_block_q4_K *)row + i;
			qs = x->qs, scales = x->scales;
			d = tfm_f16_to_f32(x->d), dmin = tfm_f16_to_f32(x->dmin);
		}
		uint8x16_t u0 = vld1q_u8(qs + 32 * (s / 2)), u1 = vld1q_u8(qs + 32 * (s / 2) + 16);
		lo = s % 2 ? vshrq_n_u8(u0, 4) : vandq_u8(u0, m4);
		hi = s % 2 ? vshrq_n_u8(u1, 4) : vandq_u8(u1, m4);
		if (qh) {
			uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << s));
			lo = vorrq_u8(lo, vandq_u8(vtstq_u8(vld1q_u8(qh), bit), vdupq_n_u8(0x10)));
			hi = vorrq_u8(hi, vandq_u8(vtstq_u8(vld1q_u8(qh + 16), bit), vdupq_n_u8(0x10)));
		}
		uint8_t sc, m;
		tfm_k4_scale_min(s, scales, &sc, &m);
		*dw = d * sc, *mw = -dmin * m;
		break;
	}
	case TFM_TYPE_Q6_K: {
		/* ggml's layout: in each 128 elements (h), blocks 0 and 2 take the
		 * low and high nibbles of ql[0..31], blocks 1 and 3 those of
		 * ql[32..63], and bits 2k, 2k + 1 of qh[0..31] (k the block);
		 * each half of 16 its own int8 scale */
		const struct tfm_block_q6_K *x = (const struct tfm_block_q6_K *)row + b / 8;
		int h = (int)(b % 8) / 4, k = (int)(b % 4);
		const uint8_t *ql = x->ql + 64 * h + 32 * (k & 1), *qh = x->qh + 32 * h;
		uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16);
		uint8x16_t h0 = vld1q_u8(qh), h1 = vld1q_u8(qh + 16);
		const int8x16_t sh = vdupq_n_s8((int8_t)-(2 * k)); /* right shift by 2k */
		h0 = vandq_u8(vshlq_u8(h0, sh), vdupq_n_u8(3));
		h1 = vandq_u8(vshlq_u8(h1, sh), vdupq_n_u8(3));
		lo = vorrq_u8(k >> 1 ? vshrq_n_u8(l0, 4) : vandq_u8(l0, m4), vshlq_n_u8(h0, 4));
		hi = vorrq_u8(k >> 1 ? vshrq_n_u8(l1, 4) : vandq_u8(l1, m4), vshlq_n_u8(h1, 4));
		float d = tfm_f16_to_f32(x->d);
		*dw = d * x->scales[8 * h + 2 * k];
		*mw = d * x->scales[8 * h + 2 * k + 1];
		off = 32;
		break;
	}
	default:
		return;
	}
	vst1q_s8(v, vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8((int8_t)off)));
	vst1q_s8(v + 16, vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8((int8_t)off)));
}

/* rows [rows] of type (q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K),
 * rb bytes apart, -> wp (tfm_cpu_igemm_w_bytes_neon(rows, in) bytes) */
void tfm_cpu_igemm_prep_w_neon(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows,
			       int64_t in)
{
	int64_t nb = in / TFM_QK;
	for (int64_t R = 0; R < (rows + RG - 1) / RG; R++)
		for (int64_t b = 0; b < nb; b++) {
			uint8_t *blk = wp + (size_t)(R * nb + b) * WBLK;
			float *dw = (float *)(blk + RG * 32), *mw = dw + RG;
			int8_t v[RG][32];
			for (int q = 0; q < RG; q++) {
				int64_t r = R * RG + q;
				if (r < rows) {
					unpack_block(v[q], dw + q, mw + q, type,
						     (const uint8_t *)w + (size_t)r * rb, b);
				} else { /* padding rows: zeros */
					memset(v[q], 0, 32);
					dw[q] = mw[q] = 0;
				}
			}
			/* [4 rows][8 steps of 4 bytes] -> [8 steps][4 rows][4] */
			for (int h = 0; h < 2; h++) {
				uint32x4x4_t t;
				t.val[0] = vreinterpretq_u32_s8(vld1q_s8(v[0] + 16 * h));
				t.val[1] = vreinterpretq_u32_s8(vld1q_s8(v[1] + 16 * h));
				t.val[2] = vreinterpretq_u32_s8(vld1q_s8(v[2] + 16 * h));
				t.val[3] = vreinterpretq_u32_s8(vld1q_s8(v[3] + 16 * h));
				vst4q_u32((uint32_t *)(blk + 64 * h), t);
			}
		}
}

/* one step without SDOT: acc[r] += the 4 products of row r's w[4 r ..]
 * with xb[4 r ..] (xb: one token's 4 elements, four times, by LD1R) */
static inline int32x4_t dot4(int32x4_t acc, int8x16_t w, int8x16_t xb)
{
	int16x8_t p = vpaddq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(xb)), vmull_high_s8(w, xb));
	return vpadalq_s16(acc, p);
}

#define ISA neon
#define DOT4(acc, w, x, t) \
	((acc) = dot4((acc), (w), vreinterpretq_s8_s32(vld1q_dup_s32((const int32_t *)(x) + (t)))))

#include "kernels/cpu/igemm-neon.h"
