/* cpu-ops.c: the CPU backend's row kernels (norms, RoPE, softmax,
 * activations, element-wise).  Single-threaded float code written so the
 * compiler vectorises the element-wise loops; reductions use 8 partial sums
 * (a fixed order, so results do not depend on anything but n). */
#include "kernels/cpu/cpu-impl.h"

#include <math.h>

static float sum8(const float *x, int64_t n, float mean, int sq)
{
	float p[8] = {0};
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int l = 0; l < 8; l++) {
			float v = x[i + l] - mean;
			p[l] += sq ? v * v : v;
		}
	float s = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
	for (; i < n; i++) {
		float v = x[i] - mean;
		s += sq ? v * v : v;
	}
	return s;
}

void tfm_cpu_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps, int plus_one)
{
	float r = 1.0f / sqrtf(sum8(x, n, 0, 1) / (float)n + eps);
	float add = plus_one ? 1.0f : 0.0f;
	if (w)
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] * r * (w[i] + add);
	else
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] * r;
}

void tfm_cpu_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n,
		       float eps, int plus_one)
{
	float m = sum8(x, n, 0, 0) / (float)n;
	float r = 1.0f / sqrtf(sum8(x, n, m, 1) / (float)n + eps);
	float add = plus_one ? 1.0f : 0.0f;
	for (int64_t i = 0; i < n; i++) {
		float v = (x[i] - m) * r;
		if (w)
			v *= w[i] + add;
		if (b)
			v += b[i];
		y[i] = v;
	}
}

void tfm_cpu_rope(float *x, int64_t n_head, int64_t head_dim, int64_t n_rot, int interleaved,
		  const float *cs, const float *sn)
{
	int64_t half = n_rot / 2;
	for (int64_t h = 0; h < n_head; h++) {
		float *v = x + h * head_dim;
		if (interleaved) {
			for (int64_t i = 0; i < half; i++) {
				float x0 = v[2 * i], x1 = v[2 * i + 1];
				v[2 * i] = x0 * cs[i] - x1 * sn[i];
				v[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
			}
		} else {
			for (int64_t i = 0; i < half; i++) {
				float x0 = v[i], x1 = v[i + half];
				v[i] = x0 * cs[i] - x1 * sn[i];
				v[i + half] = x0 * sn[i] + x1 * cs[i];
			}
		}
	}
}

static inline float act1(float x, int act)
{
	switch (act) {
	case TFM_K_SILU: return x / (1.0f + expf(-x));
	case TFM_K_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
	case TFM_K_GELU_TANH:
		return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
	case TFM_K_RELU: return x > 0 ? x : 0;
	case TFM_K_RELU2: return x > 0 ? x * x : 0;
	case TFM_K_GELU_QUICK: return x / (1.0f + expf(-1.702f * x));
	}
	return NAN;
}

void tfm_cpu_act_scalar(float *g, const float *u, int64_t n, int act)
{
	if (u)
		for (int64_t i = 0; i < n; i++)
			g[i] = act1(g[i], act) * u[i];
	else
		for (int64_t i = 0; i < n; i++)
			g[i] = act1(g[i], act);
}

void tfm_cpu_add_scalar(float *y, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] + b[i];
}

void tfm_cpu_mul(float *y, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] * b[i];
}
