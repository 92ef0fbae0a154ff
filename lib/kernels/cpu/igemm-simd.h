/* igemm-simd.h: the helpers that igemm-avx2.c and igemm-avx512.c share
 * (packing activations, unpacking weights to bytes).  AVX2 and F16C on
 * 256-bit vectors of 32 bytes, the same code in a file compiled with -mavx2
 * and in one compiled with -mavx512*: each file's results are those of its
 * own copy before the move. */
#ifndef TFM_CPU_IGEMM_SIMD_H
#define TFM_CPU_IGEMM_SIMD_H

#include "quant/quant.h"
#include "quant/quant-impl.h"

#include <immintrin.h>
#include <stdint.h>

/* Row x[in] quantized to 8 bits as the GEMM takes it, into q8: q8_0 blocks
 * of 32 (an f16 scale each), or for K-quant weights (k256) q8_K super-blocks
 * of 256 with one f32 scale, as lib/quant's one-row dots and ggml quantize
 * x for those types, so that a K-quant model's numbers do not change where
 * a batch crosses from the dots to the GEMM.  x_block gives block b's 32
 * quants and its scale. */
static inline void x_quantize(void *q8, const float *x, int64_t in, int k256)
{
	tfm_quantize_row(k256 ? TFM_TYPE_Q8_K : TFM_TYPE_Q8_0, x, q8, in);
}

static inline const int8_t *x_block(const void *q8, int k256, int64_t b, float *d)
{
	if (k256) {
		const struct tfm_block_q8_K *s = (const struct tfm_block_q8_K *)q8 + b / 8;
		*d = s->d;
		return s->qs + 32 * (b % 8);
	}
	const struct tfm_block_q8_0 *s = (const struct tfm_block_q8_0 *)q8 + b;
	*d = _cvtsh_ss(s->d);
	return s->qs;
}

/* sum of the 32 unsigned bytes of u (vpsadbw: four partial sums); a q8_0
 * block's sum(x) is that of x + 128, less 32 * 128 */
static inline int64_t sum_u8x32(__m256i u)
{
	__m256i s = _mm256_sad_epu8(u, _mm256_setzero_si256());
	return _mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) + _mm256_extract_epi64(s, 2) +
	       _mm256_extract_epi64(s, 3);
}

/* bit k of each of 32 bytes, as 0x10 (q5_K's fifth bits) */
static inline __m256i bit4(__m256i qh, int k)
{
	__m256i b = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(k)), _mm256_set1_epi8(1));
	return _mm256_slli_epi16(b, 4);
}

/* Block i of a q4_K (q5 = 0) or q5_K row unpacked to its 8 sub-blocks of
 * 32, each a q4_1-like block, value = dw[s] * u + mw[s]: ws[32 s ..] the
 * unsigned codes u of sub-block s (0..15, or 0..31 with q5_K's fifth bit),
 * dw[s] = d * sc_s, mw[s] = -dmin * m_s (ggml's 6-bit sc, m:
 * tfm_k4_scale_min).  ggml's layout: sub-blocks 2j and 2j + 1 are the low
 * and high nibbles of qs[32j .. 32j + 31], their fifth bits bits 2j and
 * 2j + 1 of qh[0..31]. */
static inline void k45_unpack(uint8_t *ws, float *dw, float *mw, int q5, const uint8_t *row,
			      int64_t i)
{
	const uint8_t *qs, *scales, *qh = NULL;
	float d, dmin;
	if (q5) {
		const struct tfm_block_q5_K *x = (const struct tfm_block_q5_K *)row + i;
		qs = x->qs, scales = x->scales, qh = x->qh, d = _cvtsh_ss(x->d), dmin = _cvtsh_ss(x->dmin);
	} else {
		const struct tfm_block_q4_K *x = (const struct tfm_block_q4_K *)row + i;
		qs = x->qs, scales = x->scales, d = _cvtsh_ss(x->d), dmin = _cvtsh_ss(x->dmin);
	}
	__m256i h = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
#pragma GCC unroll 8
	for (int s = 0; s < 8; s++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (s / 2)));
		__m256i u = _mm256_and_si256(s % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0F));
		if (qh)
			u = _mm256_or_si256(u, bit4(h, s));
		_mm256_storeu_si256((__m256i *)(ws + 32 * s), u);
		uint8_t sc, m;
		tfm_k4_scale_min(s, scales, &sc, &m);
		dw[s] = d * sc;
		mw[s] = -dmin * m;
	}
}

#endif
