/* cpu-ops.c: the CPU backend's row kernels (norms, RoPE, softmax,
 * activations, element-wise).  Single-threaded float code; the norms in
 * four-float vectors of the compiler's vector extension (v4f), the rest
 * left to its auto-vectoriser; reductions use 8 partial sums (a fixed
 * order, so results do not depend on anything but n). */
#include "kernels/cpu/cpu-impl.h"

#include <math.h>
#include <string.h>

/* four floats as one vector of GCC's and clang's vector extension: the
 * lanes' arithmetic is the scalar code's, element by element, and the
 * compiler gives it SSE on x86-64 and NEON on aarch64 whatever its
 * auto-vectoriser decides (GCC 12 at -O2 left these loops scalar: layer
 * norms were 3.6% of an encoder batch's samples) */
typedef float v4f __attribute__((vector_size(16)));
static inline v4f ld4(const float *p) { v4f v; memcpy(&v, p, sizeof v); return v; }
static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

/* the sum of x - mean (or its square) in 8 partial sums, lane l taking
 * elements 8k + l, combined in a fixed order, then the tail */
static float sum8(const float *x, int64_t n, float mean, int sq)
{
	v4f p0 = {0, 0, 0, 0}, p1 = p0, mv = {mean, mean, mean, mean};
	int64_t i = 0;
	if (sq)
		for (; i + 8 <= n; i += 8) {
			v4f a = ld4(x + i) - mv, b = ld4(x + i + 4) - mv;
			p0 += a * a, p1 += b * b;
		}
	else
		for (; i + 8 <= n; i += 8)
			p0 += ld4(x + i) - mv, p1 += ld4(x + i + 4) - mv;
	float s = ((p0[0] + p0[1]) + (p0[2] + p0[3])) + ((p1[0] + p1[1]) + (p1[2] + p1[3]));
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
	v4f rv = {r, r, r, r}, av = {add, add, add, add};
	int64_t i = 0;
	if (w) {
		for (; i + 4 <= n; i += 4)
			st4(y + i, ld4(x + i) * rv * (ld4(w + i) + av));
		for (; i < n; i++)
			y[i] = x[i] * r * (w[i] + add);
	} else {
		for (; i + 4 <= n; i += 4)
			st4(y + i, ld4(x + i) * rv);
		for (; i < n; i++)
			y[i] = x[i] * r;
	}
}

void tfm_cpu_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n,
		       float eps, int plus_one)
{
	float m = sum8(x, n, 0, 0) / (float)n;
	float r = 1.0f / sqrtf(sum8(x, n, m, 1) / (float)n + eps);
	float add = plus_one ? 1.0f : 0.0f;
	v4f mv = {m, m, m, m}, rv = {r, r, r, r}, av = {add, add, add, add};
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f v = (ld4(x + i) - mv) * rv;
		if (w)
			v *= ld4(w + i) + av;
		if (b)
			v += ld4(b + i);
		st4(y + i, v);
	}
	for (; i < n; i++) {
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
