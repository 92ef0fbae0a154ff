/* qgemv-k-simd.h: the helpers that qgemv-k-avx2.c and qgemv-k-avx512.c
 * share (the K-quant decode products, four rows at a time).  SSE4.1 on
 * 128-bit vectors only, the same code in a file compiled with -mavx2 and in
 * one compiled with -mavx512*; integer work, exact. */
#ifndef TFM_CPU_QGEMV_K_SIMD_H
#define TFM_CPU_QGEMV_K_SIMD_H

#include "quant/quant-impl.h"
#include "quant/quant.h"

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* sum of the 4 int32 lanes of v */
static inline int hsum4(__m128i v)
{
	v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
	v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
	return _mm_cvtsi128_si32(v);
}

/* The 8 scales (bytes 0-7) and 8 mins (8-15) of a q4_K / q5_K block's
 * 12 packed bytes: ggml's mask trick (ggml_vec_dot_q4_K_q8_K), the same
 * 6-bit values as lib/quant's tfm_k4_scale_min. */
static inline __m128i k4_unpack(const uint8_t *scales)
{
	uint32_t u[4];
	tfm_k4_unpack(u, scales);
	return _mm_loadu_si128((const __m128i *)u);
}

/* the sums of the activations of each sub-block of 32 of a q8_K block: 8
 * int16 (|.| <= 32 * 128), bsums[2j] + bsums[2j+1] in lane j */
static inline __m128i k_bsum_pairs(const struct tfm_block_q8_K *x)
{
	return _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)x->bsums),
			      _mm_loadu_si128((const __m128i *)(x->bsums + 8)));
}

/* sum over j of m_j (bsums[2j] + bsums[2j+1]), the block's mins term (as
 * lib/quant's k4_mins): sm from k4_unpack, bsum from k_bsum_pairs */
static inline int k4_summ(__m128i sm, __m128i bsum)
{
	return hsum4(_mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), bsum));
}


#endif
