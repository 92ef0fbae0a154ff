/* dot-avx2.c: dot products of a weight row (f32, f16, bf16) with an f32
 * vector, AVX2 + FMA + F16C.  The summation order depends only on n. */
#include "kernels/cpu/cpu-impl.h"

#include "kernels/cpu/exp-avx2.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

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

float tfm_cpu_max_avx2(const float *x, int64_t n)
{
	__m256 m = _mm256_set1_ps(-INFINITY);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
	float t[8], r = -INFINITY;
	_mm256_storeu_ps(t, m);
	for (int l = 0; l < 8; l++)
		r = t[l] > r ? t[l] : r;
	for (; i < n; i++)
		r = x[i] > r ? x[i] : r;
	return r;
}

float tfm_cpu_expsum_avx2(float *x, float mx, int64_t n)
{
	__m256 s = _mm256_setzero_ps(), vm = _mm256_set1_ps(mx);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
		_mm256_storeu_ps(x + i, e);
		s = _mm256_add_ps(s, e);
	}
	float r = hsum(s);
	if (i < n) {
		float t[8] = {0};
		for (int64_t l = i; l < n; l++)
			t[l - i] = x[l] - mx;
		__m256 e = exp256(_mm256_loadu_ps(t));
		_mm256_storeu_ps(t, e);
		for (int64_t l = i; l < n; l++) {
			x[l] = t[l - i];
			r += t[l - i];
		}
	}
	return r;
}

/* GELU with erf, 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x (x >= 0 ? 2 - q : q),
 * q = erfc(|x| / sqrt 2) by Numerical Recipes' erfcc (Chebyshev fit,
 * relative error below 1.2e-7 for every argument): with z = |x| / sqrt 2
 * and t = 1 / (1 + z / 2), erfc(z) = t exp(-z^2 + P(t)), P of degree 9.
 * tfm_cpu_gelu_avx512 evaluates the same expression. */
static inline __m256 gelu_erf256(__m256 x)
{
	static const float c[10] = { -1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f,
				     -0.18628806f, 0.27886807f, -1.13520398f, 1.48851587f,
				     -0.82215223f, 0.17087277f };
	const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
	__m256 z = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),
				 _mm256_set1_ps(0.70710678118654752f));
	__m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(half, z, one));
	__m256 p = _mm256_set1_ps(c[9]);
	for (int k = 8; k >= 0; k--)
		p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(c[k]));
	__m256 q = _mm256_mul_ps(t, exp256(_mm256_fnmadd_ps(z, z, p)));
	__m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
	__m256 s = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), q), q, neg);
	return _mm256_mul_ps(_mm256_mul_ps(half, x), s);
}

/* g[i] = act(g[i]) * u[i] (u NULL: act(g[i])) for SiLU, GELU (erf) and
 * GELU-tanh, as tfm_cpu_act_mul_avx512 computes them: SiLU and GELU-tanh
 * as x / (1 + exp(z)), z = -x or -2 sqrt(2/pi) (x + 0.044715 x^3). */
void tfm_cpu_act_mul_avx2(float *g, const float *u, int64_t n, int act)
{
	const __m256 one = _mm256_set1_ps(1.0f), c0 = _mm256_set1_ps(-2 * 0.79788456080286536f);
	const __m256 c1 = _mm256_set1_ps(0.044715f);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(g + i), z, r;
		if (act == TFM_K_GELU) {
			r = gelu_erf256(x);
		} else {
			if (act == TFM_K_SILU)
				z = _mm256_sub_ps(_mm256_setzero_ps(), x);
			else
				z = _mm256_mul_ps(_mm256_mul_ps(c0, x),
						  _mm256_fmadd_ps(_mm256_mul_ps(c1, x), x, one));
			r = _mm256_div_ps(x, _mm256_add_ps(one, exp256(z)));
		}
		if (u)
			r = _mm256_mul_ps(r, _mm256_loadu_ps(u + i));
		_mm256_storeu_ps(g + i, r);
	}
	if (i < n) { /* the tail through a buffer: the same lanes' arithmetic */
		float tg[8] = { 0 }, tu[8] = { 0 };
		memcpy(tg, g + i, (size_t)(n - i) * sizeof *g);
		if (u)
			memcpy(tu, u + i, (size_t)(n - i) * sizeof *u);
		tfm_cpu_act_mul_avx2(tg, u ? tu : NULL, 8, act);
		memcpy(g + i, tg, (size_t)(n - i) * sizeof *g);
	}
}

void tfm_cpu_add_avx2(float *y, const float *a, const float *b, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
	for (; i < n; i++)
		y[i] = a[i] + b[i];
}
