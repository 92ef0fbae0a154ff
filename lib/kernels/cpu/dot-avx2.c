/* dot-avx2.c: dot products of a weight row (f32, f16, bf16) with an f32
 * vector, AVX2 + FMA + F16C.  The summation order depends only on n. */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>

static float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

float tfm_cpu_dot_f32_avx2(const void *wv, const float *x, int64_t n)
{
	const float *w = wv;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	__m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
		a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
		a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
	}
	for (; i + 8 <= n; i += 8)
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
	float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; i < n; i++)
		s += w[i] * x[i];
	return s;
}

float tfm_cpu_dot_f16_avx2(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i)));
		__m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i + 8)));
		a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), a0);
		a1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), a1);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + i)));
		a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), a0);
	}
	float s = hsum(_mm256_add_ps(a0, a1));
	for (; i < n; i++)
		s += _cvtsh_ss(w[i]) * x[i];
	return s;
}

float tfm_cpu_dot_bf16_avx2(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	__m256 a0 = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + i)));
		a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)),
				     _mm256_loadu_ps(x + i), a0);
	}
	float s = hsum(a0);
	for (; i < n; i++)
		s += tfm_bf16_to_f32(w[i]) * x[i];
	return s;
}
