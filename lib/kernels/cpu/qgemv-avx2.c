/* qgemv-avx2.c: decode matrix-vector products of q4_0 and q8_0 weight rows
 * against q8_0 activations with AVX2, four rows at a time: each activation
 * block is loaded once for the four, and the four accumulators are four
 * independent chains where one row alone waits on one.  Each row is
 * computed by exactly the instructions, in the order, of lib/quant's
 * one-row tfm_vec_dot_*_q8_0_avx2, so results are bit-identical to it
 * whatever rows it is grouped with.  Four interleaved rows defeat the
 * hardware's stride prefetch, so the same bytes four rows on are
 * prefetched by hand (as qgemv-avx512.c). */
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant.h"

#include <immintrin.h>
#include <stddef.h>



static inline float fh(uint16_t v) { return _cvtsh_ss(v); }

static inline float hsum_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* 8 int32 sums of x*y over 32 signed bytes (as lib/quant/dot-avx2.c) */
static inline __m256i dot_i8(__m256i x, __m256i y)
{
	__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static inline __m256i nibbles32(const uint8_t *q)
{
	__m128i v = _mm_loadu_si128((const __m128i *)q);
	__m256i t = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
	return _mm256_and_si256(t, _mm256_set1_epi8(0x0F));
}

/* q4_0: the weights' nibbles u (0..15) are maddubs' unsigned operand as
 * they are, and 8 x is taken off each pair sum in 16 bits: (u - 8) x
 * summed in pairs is maddubs(u, x) - maddubs(8, x), the second once per
 * activation block for the four rows.  Each int32 lane is the same integer
 * as dot_i8(u - 8, x) gives (exact, no saturation: |pair| <= 2 * 15 * 127
 * + 2 * 8 * 127), so rows stay bit-identical to the one-row dot, with three
 * fewer instructions per row and block (sub, two signs) and one more
 * (sub_epi16). */
void tfm_cpu_qgemv_q4_0_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const __m256i eight = _mm256_set1_epi8(8), ones = _mm256_set1_epi16(1);
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q4_0 *w[4];
		__m256 acc[4];
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)((const uint8_t *)wv + (size_t)(r + q < rows ? r + q : r) * rb);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			__m256i b8 = _mm256_maddubs_epi16(eight, b); /* 8 (x_2k + x_2k+1) */
			float dx = fh(x[i].d);
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(nibbles32(w[q][i].qs), b), b8);
				acc[q] = _mm256_fmadd_ps(_mm256_set1_ps(fh(w[q][i].d) * dx),
							 _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones)), acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]);
	}
}

void tfm_cpu_qgemv_q8_0_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q8_0 *w[4];
		__m256 acc[4];
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)((const uint8_t *)wv + (size_t)(r + q < rows ? r + q : r) * rb);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			float dx = fh(x[i].d);
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m256i a = _mm256_loadu_si256((const __m256i *)w[q][i].qs);
				acc[q] = _mm256_fmadd_ps(_mm256_set1_ps(fh(w[q][i].d) * dx),
							 _mm256_cvtepi32_ps(dot_i8(a, b)), acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]);
	}
}
