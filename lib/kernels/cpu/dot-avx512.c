/* dot-avx512.c: dot products of a weight row (f32, f16, bf16) with an f32
 * vector, AVX-512.  The summation order depends only on n, never on threads. */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>

float tfm_cpu_dot_f32_avx512(const void *wv, const float *x, int64_t n)
{
	const float *w = wv;
	__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
	__m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 64 <= n; i += 64) {
		a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
		a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
		a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
		a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
	}
	for (; i + 16 <= n; i += 16)
		a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_maskz_loadu_ps(m, x + i), a1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

float tfm_cpu_dot_f16_avx512(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + i)));
		__m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + i + 16)));
		a0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + i), a0);
		a1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i + 16), a1);
	}
	for (; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 w0 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + i));
		a0 = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x + i), a0);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

float tfm_cpu_dot_bf16_avx512(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	__m512 a0 = _mm512_setzero_ps();
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, w + i));
		__m512 w0 = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
		a0 = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x + i), a0);
	}
	return _mm512_reduce_add_ps(a0);
}
