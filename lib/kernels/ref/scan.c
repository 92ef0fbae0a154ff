/* scan.c: the recurrent mixers' steps (Mamba, Mamba-2, Gated DeltaNet, RWKV
 * v4 / v5-v6 / v7 WKV, mLSTM), the scalar references every other backend's
 * version is tested against.  Float arithmetic in the order the mixers have
 * always used (lib/model ran these loops before they became kernels): the
 * ref backend's recurrent models give the same bits as before. */
#include "kernels/backend.h"

#include <math.h>

/* One channel of tfm_ref_mamba_scan: x, dt, y of stride `stride`. */
static void mamba_scan1(float *y, float *h, const float *x, const float *dt, const float *A,
			float D, const float *B, const float *C, int64_t bc_stride, int64_t n,
			int64_t d_state, int64_t stride)
{
	for (int64_t t = 0; t < n; t++) {
		float d = dt[t * stride], xv = x[t * stride], acc = 0;
		const float *b = B + t * bc_stride, *cc = C + t * bc_stride;
		for (int64_t k = 0; k < d_state; k++) {
			h[k] = expf(d * A[k]) * h[k] + d * b[k] * xv;
			acc += h[k] * cc[k];
		}
		y[t * stride] = acc + D * xv;
	}
}

void tfm_ref_mamba_scan(float *y, float *h, const float *x, const float *dt, const float *A,
			const float *D, const float *B, const float *C, int64_t bc_stride,
			int64_t ld, int64_t n, int64_t d, int64_t d_state)
{
	for (int64_t i = 0; i < d; i++)
		mamba_scan1(y + i, h + i * d_state, x + i, dt + i, A + i * d_state, D[i], B, C,
			    bc_stride, n, d_state, ld);
}

void tfm_ref_mamba2_scan(float *y, float *S, const float *x, float dt, float A, float D,
			 const float *B, const float *C, int64_t head_dim, int64_t d_state)
{
	float da = expf(dt * A);
	for (int64_t p = 0; p < head_dim; p++) {
		float *s = S + p * d_state, xv = x[p], acc = 0;
		for (int64_t k = 0; k < d_state; k++) {
			s[k] = da * s[k] + dt * B[k] * xv;
			acc += s[k] * C[k];
		}
		y[p] = acc + D * xv;
	}
}

void tfm_ref_gdn_step(float *o, float *S, const float *q, const float *k, const float *v,
		      float g, float beta, int64_t dk, int64_t dv)
{
	float decay = expf(g);
	for (int64_t i = 0; i < dk * dv; i++)
		S[i] *= decay;
	for (int64_t j = 0; j < dv; j++) {
		float mem = 0;
		for (int64_t i = 0; i < dk; i++)
			mem += S[i * dv + j] * k[i];
		float d = (v[j] - mem) * beta;
		for (int64_t i = 0; i < dk; i++)
			S[i * dv + j] += k[i] * d;
	}
	for (int64_t j = 0; j < dv; j++) {
		float acc = 0;
		for (int64_t i = 0; i < dk; i++)
			acc += S[i * dv + j] * q[i];
		o[j] = acc;
	}
}

void tfm_ref_rwkv4_wkv(float *out, float *num, float *den, float *mx, const float *k,
		       const float *v, const float *w, const float *u, int64_t d)
{
	for (int64_t i = 0; i < d; i++) {
		float q = fmaxf(mx[i], u[i] + k[i]);
		float e1 = expf(mx[i] - q), e2 = expf(u[i] + k[i] - q);
		out[i] = (e1 * num[i] + e2 * v[i]) / (e1 * den[i] + e2);
		float q2 = fmaxf(mx[i] + w[i], k[i]);
		e1 = expf(mx[i] + w[i] - q2), e2 = expf(k[i] - q2);
		num[i] = e1 * num[i] + e2 * v[i];
		den[i] = e1 * den[i] + e2;
		mx[i] = q2;
	}
}

void tfm_ref_rwkv5_wkv(float *out, float *S, const float *r, const float *k, const float *v,
		       const float *w, const float *u, int64_t n_head, int64_t hs)
{
	for (int64_t h = 0; h < n_head; h++) {
		const float *rh = r + h * hs, *kh = k + h * hs, *vh = v + h * hs;
		float *oh = out + h * hs, *Sh = S + h * hs * hs;
		for (int64_t j = 0; j < hs; j++)
			oh[j] = 0;
		for (int64_t i = 0; i < hs; i++) {
			float ki = kh[i], ri = rh[i], ui = u[h * hs + i], wi = w[h * hs + i];
			float *Si = Sh + i * hs;
			for (int64_t j = 0; j < hs; j++) {
				float kv = ki * vh[j];
				oh[j] += ri * (ui * kv + Si[j]);
				Si[j] = Si[j] * wi + kv;
			}
		}
	}
}

void tfm_ref_rwkv7_wkv(float *out, float *S, const float *r, const float *w, const float *k,
		       const float *v, const float *a, const float *b, int64_t n_head, int64_t hs)
{
	for (int64_t h = 0; h < n_head; h++) {
		int64_t o = h * hs;
		for (int64_t i = 0; i < hs; i++) {
			float *Si = S + h * hs * hs + i * hs, sa = 0, y = 0, vi = v[o + i];
			for (int64_t j = 0; j < hs; j++)
				sa += a[o + j] * Si[j];
			for (int64_t j = 0; j < hs; j++) {
				Si[j] = Si[j] * w[o + j] + vi * k[o + j] + sa * b[o + j];
				y += Si[j] * r[o + j];
			}
			out[o + i] = y;
		}
	}
}

/* torch's logsigmoid: min(x, 0) - log1p(exp(-|x|)) */
static float logsigmoid(float x)
{
	return (x < 0 ? x : 0.0f) - log1pf(expf(-fabsf(x)));
}

/* The stabiliser and the scale of tfm_ref_mlstm_step, shared with the fast
 * versions so that every backend scales by the same numbers. */
void tfm_k_mlstm_gates(float *fa, float *ia, float *m1, float *scale, float m0, float ig, float fg,
		     int64_t dqk)
{
	float fl = logsigmoid(fg);
	*m1 = fl + m0 > ig ? fl + m0 : ig;
	*fa = expf(fl + m0 - *m1), *ia = expf(ig - *m1);
	*scale = (float)pow((double)dqk, -0.5);
}

void tfm_ref_mlstm_step(float *h, float *C, float *nv, float *m, const float *q, const float *k,
			const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps)
{
	float fa, ia, m1, scale;
	tfm_k_mlstm_gates(&fa, &ia, &m1, &scale, *m, ig, fg, dqk);
	for (int64_t j = 0; j < dv; j++)
		h[j] = 0;
	float qn = 0;
	for (int64_t i = 0; i < dqk; i++) {
		float *Ci = C + i * dv, ik = ia * k[i], qs = q[i] * scale;
		for (int64_t j = 0; j < dv; j++) {
			Ci[j] = fa * Ci[j] + ik * v[j];
			h[j] += qs * Ci[j];
		}
		nv[i] = fa * nv[i] + ik;
		qn += qs * nv[i];
	}
	float lo = expf(-m1), den = (fabsf(qn) > lo ? fabsf(qn) : lo) + eps;
	for (int64_t j = 0; j < dv; j++)
		h[j] /= den;
	*m = m1;
}
