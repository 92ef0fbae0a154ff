/* gemv-avx2.c: matrix-vector kernels, AVX2 + FMA + F16C.  As in
 * gemv-avx512.c, every row has one accumulator and the same tail, so its
 * value does not depend on how rows are grouped. */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

static inline float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

/* 8 weights at p as f32; a partial tail is copied through a zeroed buffer */
static inline __m256 ld_f32(const float *p) { return _mm256_loadu_ps(p); }
static inline __m256 ld_f16(const uint16_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline __m256 ld_bf16(const uint16_t *p)
{
	__m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}

#define GEMV(NAME, T, LD)                                                              \
void NAME(float *y, const void *wv, size_t rb, const float *x, int64_t n, int64_t rows) \
{                                                                                      \
	const uint8_t *w = wv;                                                         \
	int64_t n8 = n & ~(int64_t)7, tail = n - n8;                                   \
	float xt[8] = {0};                                                             \
	memcpy(xt, x + n8, (size_t)tail * sizeof(float));                              \
	__m256 xtv = _mm256_loadu_ps(xt);                                              \
	for (int64_t r = 0; r < rows; r += 4) {                                        \
		int nr = rows - r < 4 ? (int)(rows - r) : 4;                           \
		const T *wr[4];                                                        \
		__m256 acc[4];                                                         \
		for (int q = 0; q < 4; q++) {                                          \
			wr[q] = (const T *)(w + (r + (q < nr ? q : 0)) * rb);          \
			acc[q] = _mm256_setzero_ps();                                  \
		}                                                                      \
		for (int64_t i = 0; i < n8; i += 8) {                                  \
			__m256 xv = _mm256_loadu_ps(x + i);                            \
			acc[0] = _mm256_fmadd_ps(LD(wr[0] + i), xv, acc[0]);           \
			acc[1] = _mm256_fmadd_ps(LD(wr[1] + i), xv, acc[1]);           \
			acc[2] = _mm256_fmadd_ps(LD(wr[2] + i), xv, acc[2]);           \
			acc[3] = _mm256_fmadd_ps(LD(wr[3] + i), xv, acc[3]);           \
		}                                                                      \
		for (int q = 0; q < nr; q++) {                                         \
			if (tail) {                                                    \
				T tb[8] = {0};                                         \
				memcpy(tb, wr[q] + n8, (size_t)tail * sizeof(T));      \
				acc[q] = _mm256_fmadd_ps(LD(tb), xtv, acc[q]);         \
			}                                                              \
			y[r + q] = hsum8(acc[q]);                                      \
		}                                                                      \
	}                                                                              \
}

GEMV(tfm_cpu_gemv_f32_avx2, float, ld_f32)
GEMV(tfm_cpu_gemv_f16_avx2, uint16_t, ld_f16)
GEMV(tfm_cpu_gemv_bf16_avx2, uint16_t, ld_bf16)

void tfm_cpu_gemv_t_avx2(float *y, const float *a, int64_t lda, const float *x, int64_t k,
			 int64_t n)
{
	int64_t j = 0;
	for (; j + 32 <= n; j += 32) {
		__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
		for (int64_t d = 0; d < k; d++) {
			const float *r = a + d * lda + j;
			__m256 xv = _mm256_set1_ps(x[d]);
			s0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r), s0);
			s1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r + 8), s1);
			s2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r + 16), s2);
			s3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r + 24), s3);
		}
		_mm256_storeu_ps(y + j, s0);
		_mm256_storeu_ps(y + j + 8, s1);
		_mm256_storeu_ps(y + j + 16, s2);
		_mm256_storeu_ps(y + j + 24, s3);
	}
	for (; j < n; j++) {
		float s = 0;
		for (int64_t d = 0; d < k; d++)
			s = fmaf(x[d], a[d * lda + j], s);
		y[j] = s;
	}
}

/* y[i] = x[i] (f16 bits) as f32, exact (F16C); KV cache tiles */
void tfm_cpu_f16_row_avx2(float *y, const uint16_t *x, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
	for (; i < n; i++)
		y[i] = _cvtsh_ss(x[i]);
}
