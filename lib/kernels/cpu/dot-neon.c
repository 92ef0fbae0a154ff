/* dot-neon.c: dot products of a weight row (f32, f16, bf16) with an f32
 * vector, max and exp-sum of a row, and the gated activations, NEON
 * (aarch64, where every processor has it).  The summation order depends
 * only on n; the activations compute lane by lane what dot-avx2.c's do. */
#include "kernels/cpu/cpu-impl.h"

#include "kernels/cpu/exp-neon.h"

#include <arm_neon.h>
#include <math.h>
#include <string.h>

/* 4 f16 (bits) as f32, exact */
static inline float32x4_t ld_f16(const uint16_t *p)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* 4 bf16 (bits) as f32: the high half of each f32 */
static inline float32x4_t ld_bf16(const uint16_t *p)
{
	return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

float tfm_cpu_dot_f32_neon(const void *wv, const float *x, int64_t n)
{
	const float *w = wv;
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = vfmaq_f32(a0, vld1q_f32(w + i), vld1q_f32(x + i));
		a1 = vfmaq_f32(a1, vld1q_f32(w + i + 4), vld1q_f32(x + i + 4));
		a2 = vfmaq_f32(a2, vld1q_f32(w + i + 8), vld1q_f32(x + i + 8));
		a3 = vfmaq_f32(a3, vld1q_f32(w + i + 12), vld1q_f32(x + i + 12));
	}
	for (; i + 4 <= n; i += 4)
		a0 = vfmaq_f32(a0, vld1q_f32(w + i), vld1q_f32(x + i));
	float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
	for (; i < n; i++)
		s += w[i] * x[i];
	return s;
}

float tfm_cpu_dot_f16_neon(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = vfmaq_f32(a0, ld_f16(w + i), vld1q_f32(x + i));
		a1 = vfmaq_f32(a1, ld_f16(w + i + 4), vld1q_f32(x + i + 4));
		a2 = vfmaq_f32(a2, ld_f16(w + i + 8), vld1q_f32(x + i + 8));
		a3 = vfmaq_f32(a3, ld_f16(w + i + 12), vld1q_f32(x + i + 12));
	}
	for (; i + 4 <= n; i += 4)
		a0 = vfmaq_f32(a0, ld_f16(w + i), vld1q_f32(x + i));
	float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
	for (; i < n; i++)
		s += tfm_f16_to_f32(w[i]) * x[i];
	return s;
}

float tfm_cpu_dot_bf16_neon(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0;
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		a0 = vfmaq_f32(a0, ld_bf16(w + i), vld1q_f32(x + i));
		a1 = vfmaq_f32(a1, ld_bf16(w + i + 4), vld1q_f32(x + i + 4));
	}
	for (; i + 4 <= n; i += 4)
		a0 = vfmaq_f32(a0, ld_bf16(w + i), vld1q_f32(x + i));
	float s = vaddvq_f32(vaddq_f32(a0, a1));
	for (; i < n; i++)
		s += tfm_bf16_to_f32(w[i]) * x[i];
	return s;
}

float tfm_cpu_max_neon(const float *x, int64_t n)
{
	float32x4_t m = vdupq_n_f32(-INFINITY);
	int64_t i = 0;
	for (; i + 4 <= n; i += 4)
		m = vmaxq_f32(m, vld1q_f32(x + i));
	float r = vmaxvq_f32(m);
	for (; i < n; i++)
		r = x[i] > r ? x[i] : r;
	return r;
}

float tfm_cpu_expsum_neon(float *x, float mx, int64_t n)
{
	float32x4_t s = vdupq_n_f32(0), vm = vdupq_n_f32(mx);
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vm));
		vst1q_f32(x + i, e);
		s = vaddq_f32(s, e);
	}
	float r = vaddvq_f32(s);
	if (i < n) {
		float t[4] = {0};
		for (int64_t l = i; l < n; l++)
			t[l - i] = x[l] - mx;
		vst1q_f32(t, exp4(vld1q_f32(t)));
		for (int64_t l = i; l < n; l++) {
			x[l] = t[l - i];
			r += t[l - i];
		}
	}
	return r;
}

/* GELU with erf by Numerical Recipes' erfcc, as gelu_erf256 in dot-avx2.c
 * (see there) */
static inline float32x4_t gelu_erf4(float32x4_t x)
{
	static const float c[10] = { -1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f,
				     -0.18628806f, 0.27886807f, -1.13520398f, 1.48851587f,
				     -0.82215223f, 0.17087277f };
	const float32x4_t one = vdupq_n_f32(1.0f), half = vdupq_n_f32(0.5f);
	float32x4_t z = vmulq_f32(vabsq_f32(x), vdupq_n_f32(0.70710678118654752f));
	float32x4_t t = vdivq_f32(one, vfmaq_f32(one, half, z));
	float32x4_t p = vdupq_n_f32(c[9]);
	for (int k = 8; k >= 0; k--)
		p = vfmaq_f32(vdupq_n_f32(c[k]), p, t);
	float32x4_t q = vmulq_f32(t, exp4(vfmsq_f32(p, z, z)));
	uint32x4_t neg = vcltq_f32(x, vdupq_n_f32(0));
	float32x4_t s = vbslq_f32(neg, q, vsubq_f32(vdupq_n_f32(2.0f), q));
	return vmulq_f32(vmulq_f32(half, x), s);
}

/* g[i] = act(g[i]) * u[i] (u NULL: act(g[i])) for SiLU, GELU (erf) and
 * GELU-tanh, as tfm_cpu_act_mul_avx2 computes them: SiLU and GELU-tanh
 * as x / (1 + exp(z)), z = -x or -2 sqrt(2/pi) (x + 0.044715 x^3). */
void tfm_cpu_act_mul_neon(float *g, const float *u, int64_t n, int act)
{
	const float32x4_t one = vdupq_n_f32(1.0f), c0 = vdupq_n_f32(-2 * 0.79788456080286536f);
	const float32x4_t c1 = vdupq_n_f32(0.044715f);
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		float32x4_t x = vld1q_f32(g + i), z, r;
		if (act == TFM_K_GELU) {
			r = gelu_erf4(x);
		} else {
			if (act == TFM_K_SILU)
				z = vnegq_f32(x);
			else
				z = vmulq_f32(vmulq_f32(c0, x), vfmaq_f32(one, vmulq_f32(c1, x), x));
			r = vdivq_f32(x, vaddq_f32(one, exp4(z)));
		}
		if (u)
			r = vmulq_f32(r, vld1q_f32(u + i));
		vst1q_f32(g + i, r);
	}
	if (i < n) { /* the tail through a buffer: the same lanes' arithmetic */
		float tg[4] = { 0 }, tu[4] = { 0 };
		memcpy(tg, g + i, (size_t)(n - i) * sizeof *g);
		if (u)
			memcpy(tu, u + i, (size_t)(n - i) * sizeof *u);
		tfm_cpu_act_mul_neon(tg, u ? tu : NULL, 4, act);
		memcpy(g + i, tg, (size_t)(n - i) * sizeof *g);
	}
}

void tfm_cpu_add_neon(float *y, const float *a, const float *b, int64_t n)
{
	int64_t i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(y + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
	for (; i < n; i++)
		y[i] = a[i] + b[i];
}
