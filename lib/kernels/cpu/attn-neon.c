/* attn-neon.c: the attention micro-kernels, NEON: scores of up to 4
 * queries against a tile of keys, and the probability-weighted sum of a
 * tile of values (attn-avx2.c with 8 lanes in two registers).  Every output
 * lane sums in a fixed order with fused multiply-adds, so a lane computes
 * exactly what the AVX2 and AVX-512 kernels' lane does, and never depends
 * on which queries or keys were computed beside it. */
#include "kernels/cpu/cpu-impl.h"

#include <arm_neon.h>
#include <string.h>

/* 8 floats from p, of which only the first n (< 8) are read on a tail */
static inline void ld8(float32x4_t *lo, float32x4_t *hi, const float *p, int64_t n)
{
	if (n >= 8) {
		*lo = vld1q_f32(p), *hi = vld1q_f32(p + 4);
		return;
	}
	float t[8] = {0};
	memcpy(t, p, (size_t)n * sizeof *p);
	*lo = vld1q_f32(t), *hi = vld1q_f32(t + 4);
}

static inline void st8(float *p, int64_t n, float32x4_t lo, float32x4_t hi)
{
	if (n >= 8) {
		vst1q_f32(p, lo), vst1q_f32(p + 4, hi);
		return;
	}
	float t[8];
	vst1q_f32(t, lo), vst1q_f32(t + 4, hi);
	memcpy(p, t, (size_t)n * sizeof *p);
}

/* s[i * lds + j] = sum_d q[i * hd + d] kt[d * ldk + j], j < nk, i < nq <= 4;
 * each lane (key) sums over d in order with fused multiply-adds. */
void tfm_cpu_attn_qk_neon(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			  int64_t ldk, int64_t hd, int64_t nk)
{
	const float *qr[4];
	for (int i = 0; i < 4; i++)
		qr[i] = q + (i < nq ? i : 0) * hd;
	for (int64_t j = 0; j < nk; j += 8) {
		int64_t m = nk - j;
		float32x4_t a[4][2];
		for (int i = 0; i < 4; i++)
			a[i][0] = a[i][1] = vdupq_n_f32(0);
		for (int64_t d = 0; d < hd; d++) {
			float32x4_t k0, k1;
			ld8(&k0, &k1, kt + d * ldk + j, m);
			for (int i = 0; i < 4; i++) {
				a[i][0] = vfmaq_n_f32(a[i][0], k0, qr[i][d]);
				a[i][1] = vfmaq_n_f32(a[i][1], k1, qr[i][d]);
			}
		}
		for (int i = 0; i < nq; i++)
			st8(s + i * lds + j, m, a[i][0], a[i][1]);
	}
}

/* o[i][d] = o[i][d] * corr[i] + sum_j p[i * ldp + j] v[j * vd + d], d < vd,
 * for up to 4 queries; each output lane sums over j in order, then one
 * multiply and one add (the online softmax's rescaling). */
void tfm_cpu_attn_pv_neon(float *const *o, const float *corr, const float *p, int64_t ldp,
			  int64_t nq, const float *v, int64_t nk, int64_t vd)
{
	const float *pr[4];
	for (int i = 0; i < 4; i++)
		pr[i] = p + (i < nq ? i : 0) * ldp;
	for (int64_t d = 0; d < vd; d += 8) {
		int64_t m = vd - d;
		float32x4_t a[4][2];
		for (int i = 0; i < 4; i++)
			a[i][0] = a[i][1] = vdupq_n_f32(0);
		for (int64_t j = 0; j < nk; j++) {
			float32x4_t x0, x1;
			ld8(&x0, &x1, v + j * vd + d, m);
			for (int i = 0; i < 4; i++) {
				a[i][0] = vfmaq_n_f32(a[i][0], x0, pr[i][j]);
				a[i][1] = vfmaq_n_f32(a[i][1], x1, pr[i][j]);
			}
		}
		for (int i = 0; i < nq; i++) {
			float32x4_t o0, o1, c = vdupq_n_f32(corr[i]);
			ld8(&o0, &o1, o[i] + d, m);
			o0 = vaddq_f32(vmulq_f32(o0, c), a[i][0]);
			o1 = vaddq_f32(vmulq_f32(o1, c), a[i][1]);
			st8(o[i] + d, m, o0, o1);
		}
	}
}
