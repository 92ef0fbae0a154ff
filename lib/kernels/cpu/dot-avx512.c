/* dot-avx512.c: dot products of a weight row (f32, f16, bf16) with an f32
 * vector, AVX-512.  The summation order depends only on n, never on threads. */
#include "kernels/cpu/cpu-impl.h"

#include "kernels/cpu/exp-avx512.h"

#include <immintrin.h>
#include <math.h>

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

float tfm_cpu_max_avx512(const float *x, int64_t n)
{
	__m512 m = _mm512_set1_ps(-INFINITY);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16)
		m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, x + i));
	}
	return _mm512_reduce_max_ps(m);
}

float tfm_cpu_expsum_avx512(float *x, float mx, int64_t n)
{
	__m512 s = _mm512_setzero_ps(), vm = _mm512_set1_ps(mx);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
		_mm512_storeu_ps(x + i, e);
		s = _mm512_add_ps(s, e);
	}
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		__m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm));
		_mm512_mask_storeu_ps(x + i, k, e);
		s = _mm512_add_ps(s, _mm512_maskz_mov_ps(k, e));
	}
	return _mm512_reduce_add_ps(s);
}

/* GELU with erf: 0.5 x (x >= 0 ? 2 - q : q), q = erfc(|x| / sqrt 2) by
 * Numerical Recipes' erfcc (relative error below 1.2e-7), as
 * gelu_erf256 in dot-avx2.c. */
static inline __m512 gelu_erf512(__m512 x)
{
	static const float c[10] = { -1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f,
				     -0.18628806f, 0.27886807f, -1.13520398f, 1.48851587f,
				     -0.82215223f, 0.17087277f };
	const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
	__m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
	__m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(half, z, one));
	__m512 p = _mm512_set1_ps(c[9]);
	for (int k = 8; k >= 0; k--)
		p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c[k]));
	__m512 q = _mm512_mul_ps(t, exp512(_mm512_fnmadd_ps(z, z, p)));
	__mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
	__m512 s = _mm512_mask_mov_ps(_mm512_sub_ps(_mm512_set1_ps(2.0f), q), neg, q);
	return _mm512_mul_ps(_mm512_mul_ps(half, x), s);
}

/* g = act(g) * u (u NULL: g = act(g)) for SiLU, GELU (erf) and GELU-tanh,
 * with exp512: silu(x) = x / (1 + e^-x); gelu_tanh(x) = x / (1 + e^(-2y)),
 * y = sqrt(2/pi) (x + 0.044715 x^3), since 0.5 (1 + tanh y) = 1 / (1 + e^-2y). */
void tfm_cpu_act_mul_avx512(float *g, const float *u, int64_t n, int act)
{
	const __m512 one = _mm512_set1_ps(1.0f), c0 = _mm512_set1_ps(-2 * 0.79788456080286536f);
	const __m512 c1 = _mm512_set1_ps(0.044715f);
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 x = _mm512_maskz_loadu_ps(m, g + i), z, r;
		if (act == TFM_K_GELU) {
			r = gelu_erf512(x);
		} else {
			if (act == TFM_K_SILU)
				z = _mm512_sub_ps(_mm512_setzero_ps(), x);
			else /* TFM_K_GELU_TANH */
				z = _mm512_mul_ps(_mm512_mul_ps(c0, x),
						  _mm512_fmadd_ps(_mm512_mul_ps(c1, x), x, one));
			r = _mm512_div_ps(x, _mm512_add_ps(one, exp512(z)));
		}
		if (u)
			r = _mm512_mul_ps(r, _mm512_maskz_loadu_ps(m, u + i));
		_mm512_mask_storeu_ps(g + i, m, r);
	}
}

void tfm_cpu_add_avx512(float *y, const float *a, const float *b, int64_t n)
{
	int64_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
	for (; i < n; i++)
		y[i] = a[i] + b[i];
}
