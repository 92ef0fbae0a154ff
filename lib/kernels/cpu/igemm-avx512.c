/* igemm-avx512.c: prefill matmul of q4_0 / q5_0 / q8_0 / q4_1 / q4_K / q5_K
 * weights as an 8-bit
 * integer GEMM (AVX-512 VNNI), as llama.cpp computes it: the activations
 * are quantized to q8_0, or for K-quant weights to q8_K (igemm-simd.h's
 * x_quantize), the weights of a tile are
 * unpacked to signed bytes with their block scales, and each 32-element
 * block of (16 tokens x 1 row) is one exact int32 sum, scaled by d_w * d_x
 * and added in f32, blocks in order.  Every output is computed by the same
 * operations whatever tile or thread computes it.
 *
 * vpdpbusd multiplies unsigned by signed bytes: the activations are stored
 * offset by 128 (x + 128, unsigned) and 128 * sum(w) per block is taken off.
 * q4_1's minimum m adds m * d_x * sum(x) per block (q4_K and q5_K: per
 * sub-block of 32, with their own scales; their activations are q8_K as
 * llama.cpp's, each 32-element block carrying its super-block's scale).
 *
 * Packed activations, per group of 16 tokens (a short last group is padded
 * with zeros, which add nothing): bytes [nb][8][16][4] (block, group of four
 * elements, token, element), f32 scales d_x [nb][16], then f32 d_x * sum(x)
 * [nb][16].  Unpacked weights: int8 [rows][in], f32 scales [rows][nb], int32
 * 128 * block sums [rows][nb], f32 minimums [rows][nb] (0 for q4_0, q5_0,
 * q8_0). */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/igemm-simd.h"
#include "quant/quant.h"
#include "quant/quant-impl.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <string.h>

size_t tfm_cpu_igemm_x_bytes(int64_t n, int64_t in)
{
	int64_t g = (n + 15) / 16, nb = in / TFM_QK;
	return (size_t)g * (size_t)(16 * in + 16 * nb * 8);
}

size_t tfm_cpu_igemm_w_bytes(int64_t rows, int64_t in)
{
	int64_t nb = in / TFM_QK;
	return (size_t)rows * (size_t)(in + nb * 12);
}

/* Group G (tokens 16 G ..) of x into xp (tfm_cpu_igemm_x_bytes(n, in)
 * bytes for all groups), quantized as x_quantize says (k256: for K-quant
 * weights); q8: scratch for one q8_K row of in.  Groups are independent:
 * threads may pack different groups at once. */
void tfm_cpu_igemm_pack_x(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t G,
			  void *q8, int k256)
{
	int64_t nb = in / TFM_QK;
	size_t gs = (size_t)(16 * in + 16 * nb * 8);
	uint8_t *g = xp + G * gs;
	float *dx = (float *)(g + 16 * in), *sx = dx + 16 * nb;
	int64_t nt = n - G * 16 < 16 ? n - G * 16 : 16;
	if (nt < 16) { /* padding tokens: x = 0 (stored + 128), scales 0 */
		memset(g, 0x80, (size_t)(16 * in));
		memset(dx, 0, (size_t)(16 * nb * 8));
	}
	for (int64_t tt = 0; tt < nt; tt++) {
		x_quantize(q8, x + (G * 16 + tt) * in, in, k256);
		for (int64_t b = 0; b < nb; b++) {
			uint8_t *dst = g + b * 512 + tt * 4;
			float d;
			const int8_t *qs = x_block(q8, k256, b, &d);
			__m256i q = _mm256_loadu_si256((const __m256i *)qs);
			/* sum of the 32 signed bytes: of the unsigned (q + 128), less 32 * 128 */
			__m256i u = _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80));
			int sum = (int)sum_u8x32(u) - 32 * 128;
			sx[b * 16 + tt] = d * (float)sum;
			dx[b * 16 + tt] = d;
			uint32_t w[8];
			_mm256_storeu_si256((__m256i *)w, u);
			for (int e = 0; e < 8; e++)
				memcpy(dst + e * 64, &w[e], 4);
		}
	}
}

/* one unpacked block: value = d * (u - off) + m */
static inline void put_block(int8_t *ws, float *dw, int32_t *cw, float *mw, __m256i u, int off,
			     float d, float m)
{
	int64_t su = sum_u8x32(u);
	_mm256_storeu_si256((__m256i *)ws, _mm256_sub_epi8(u, _mm256_set1_epi8((char)off)));
	*dw = d;
	*cw = 128 * (int32_t)(su - 32 * off);
	*mw = m;
}

/* q4_K / q5_K: the sub-blocks of 32 are q4_1-like blocks (k45_unpack's
 * unsigned codes are the signed bytes stored, off = 0) */
static void prep_k(int8_t *ws, float *dw, int32_t *cw, float *mw, int type, const uint8_t *row,
		   int64_t in)
{
	for (int64_t i = 0; i < in / TFM_QK_K; i++) {
		k45_unpack((uint8_t *)ws + i * TFM_QK_K, dw + i * 8, mw + i * 8, type == TFM_TYPE_Q5_K,
			   row, i);
		for (int64_t b = i * 8; b < i * 8 + 8; b++)
			cw[b] = 128 * (int32_t)sum_u8x32(_mm256_loadu_si256((const __m256i *)(ws + b * 32)));
	}
}

/* rows of type (q4_0, q5_0, q8_0, q4_1, q4_K, q5_K) -> wp (tfm_cpu_igemm_w_bytes) */
void tfm_cpu_igemm_prep_w(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows,
			  int64_t in)
{
	int64_t nb = in / TFM_QK;
	int8_t *ws = (int8_t *)wp;
	float *dw = (float *)(wp + rows * in);
	int32_t *cw = (int32_t *)(dw + rows * nb);
	float *mw = (float *)(cw + rows * nb);
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *row = (const uint8_t *)w + (size_t)r * rb;
		if (type == TFM_TYPE_Q4_K || type == TFM_TYPE_Q5_K) {
			prep_k(ws + r * in, dw + r * nb, cw + r * nb, mw + r * nb, type, row, in);
			continue;
		}
		for (int64_t b = 0; b < nb; b++) {
			__m256i u; /* unsigned weights, value = d * (u - off) + m */
			int off;
			uint16_t d, m = 0;
			if (type == TFM_TYPE_Q4_1) {
				const struct tfm_block_q4_1 *q = (const struct tfm_block_q4_1 *)row + b;
				u = nibbles32(q->qs), off = 0, d = q->d, m = q->m;
			} else if (type == TFM_TYPE_Q4_0) {
				const struct tfm_block_q4_0 *q = (const struct tfm_block_q4_0 *)row + b;
				u = nibbles32(q->qs), off = 8, d = q->d;
			} else if (type == TFM_TYPE_Q5_0) {
				const struct tfm_block_q5_0 *q = (const struct tfm_block_q5_0 *)row + b;
				uint32_t qh;
				memcpy(&qh, q->qh, 4);
				u = _mm256_or_si256(nibbles32(q->qs), _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10)));
				off = 16, d = q->d;
			} else {
				const struct tfm_block_q8_0 *q = (const struct tfm_block_q8_0 *)row + b;
				u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)q->qs),
						     _mm256_set1_epi8((char)0x80));
				off = 128, d = q->d;
			}
			put_block(ws + r * in + b * 32, dw + r * nb + b, cw + r * nb + b, mw + r * nb + b,
				  u, off, fh(d), fh(m));
		}
	}
}

/* y[t * ldy + r] = sum over blocks of d_w d_x (int dot) for t < n, r < rows */
void tfm_cpu_igemm(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
		   int64_t rows, int64_t in, int minimum)
{
	int64_t nb = in / TFM_QK, ng = (n + 15) / 16;
	size_t gs = (size_t)(16 * in + 16 * nb * 8);
	const int8_t *ws = (const int8_t *)wp;
	const float *dw = (const float *)(wp + rows * in);
	const int32_t *cw = (const int32_t *)(dw + rows * nb);
	const float *mw = (const float *)(cw + rows * nb);
	for (int64_t G = 0; G < ng; G++) {
		const uint8_t *xg = xp + G * gs;
		const float *dxg = (const float *)(xg + 16 * in), *sxg = dxg + 16 * nb;
		int64_t nt = n - G * 16 < 16 ? n - G * 16 : 16;
		for (int64_t r0 = 0; r0 < rows; r0 += 4) {
			int64_t rr[4];
			__m512 acc[4];
			for (int q = 0; q < 4; q++) {
				rr[q] = r0 + q < rows ? r0 + q : r0;
				acc[q] = _mm512_setzero_ps();
			}
			for (int64_t b = 0; b < nb; b++) {
				const uint8_t *xb = xg + b * 512;
				__m512i p0[4], p1[4];
				for (int q = 0; q < 4; q++) {
					p0[q] = _mm512_setzero_si512();
					p1[q] = _mm512_setzero_si512();
				}
#pragma GCC unroll 4
				for (int e = 0; e < 8; e += 2) {
					__m512i xa = _mm512_loadu_si512(xb + e * 64);
					__m512i xc = _mm512_loadu_si512(xb + e * 64 + 64);
#pragma GCC unroll 4
					for (int q = 0; q < 4; q++) {
						const int8_t *wr = ws + rr[q] * in + b * 32 + e * 4;
						int32_t w0, w1;
						memcpy(&w0, wr, 4);
						memcpy(&w1, wr + 4, 4);
						p0[q] = _mm512_dpbusd_epi32(p0[q], xa, _mm512_set1_epi32(w0));
						p1[q] = _mm512_dpbusd_epi32(p1[q], xc, _mm512_set1_epi32(w1));
					}
				}
				__m512 dx = _mm512_loadu_ps(dxg + b * 16), sx;
				if (minimum)
					sx = _mm512_loadu_ps(sxg + b * 16);
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					__m512i p = _mm512_sub_epi32(_mm512_add_epi32(p0[q], p1[q]),
								     _mm512_set1_epi32(cw[rr[q] * nb + b]));
					__m512 s = _mm512_mul_ps(dx, _mm512_set1_ps(dw[rr[q] * nb + b]));
					acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc[q]);
					if (minimum)
						acc[q] = _mm512_fmadd_ps(sx, _mm512_set1_ps(mw[rr[q] * nb + b]), acc[q]);
				}
			}
			for (int q = 0; q < 4 && r0 + q < rows; q++) {
				float tmp[16];
				_mm512_storeu_ps(tmp, acc[q]);
				for (int64_t t = 0; t < nt; t++)
					y[(G * 16 + t) * ldy + r0 + q] = tmp[t];
			}
		}
	}
}
