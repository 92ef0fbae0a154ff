/* attn-avx2.c: the attention micro-kernels, AVX2 + FMA: scores of up to 4
 * queries against a tile of keys, and the probability-weighted sum of a
 * tile of values (attn-avx512.c with 8 lanes).  Every output lane sums in a
 * fixed order, so a value never depends on which queries or keys were
 * computed beside it (nor on the thread count or prefill against decode),
 * and a lane computes exactly what the AVX-512 kernel's lane does. */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>
#include <string.h>

/* Lanes 0..n-1 of 8 on (n < 8), for the tails. */
static inline __m256i tail_mask(int64_t n)
{
	static const int32_t m[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
	return _mm256_loadu_si256((const __m256i *)(m + 8 - n));
}

/* s[i * lds + j] = sum_d q[i * hd + d] kt[d * ldk + j], j < nk, i < nq <= 4;
 * each lane (key) sums over d in order with fused multiply-adds. */
void tfm_cpu_attn_qk_avx2(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			  int64_t ldk, int64_t hd, int64_t nk)
{
	const float *qr[4];
	for (int i = 0; i < 4; i++)
		qr[i] = q + (i < nq ? i : 0) * hd;
	int64_t j = 0;
	/* 16 keys at a time while they last: eight independent chains, each
	 * broadcast used twice (four chains of 4-cycle FMAs left the two FMA
	 * units half idle); every lane's sum is the one the 8-key loop makes */
	for (; j + 16 <= nk; j += 16) {
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		__m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
		for (int64_t d = 0; d < hd; d++) {
			const float *kp = kt + d * ldk + j;
			__m256 k = _mm256_loadu_ps(kp), l = _mm256_loadu_ps(kp + 8);
			__m256 x0 = _mm256_set1_ps(qr[0][d]), x1 = _mm256_set1_ps(qr[1][d]);
			__m256 x2 = _mm256_set1_ps(qr[2][d]), x3 = _mm256_set1_ps(qr[3][d]);
			a0 = _mm256_fmadd_ps(x0, k, a0), b0 = _mm256_fmadd_ps(x0, l, b0);
			a1 = _mm256_fmadd_ps(x1, k, a1), b1 = _mm256_fmadd_ps(x1, l, b1);
			a2 = _mm256_fmadd_ps(x2, k, a2), b2 = _mm256_fmadd_ps(x2, l, b2);
			a3 = _mm256_fmadd_ps(x3, k, a3), b3 = _mm256_fmadd_ps(x3, l, b3);
		}
		__m256 acc[8] = {a0, b0, a1, b1, a2, b2, a3, b3};
		for (int i = 0; i < nq; i++) {
			_mm256_storeu_ps(s + i * lds + j, acc[2 * i]);
			_mm256_storeu_ps(s + i * lds + j + 8, acc[2 * i + 1]);
		}
	}
	for (; j < nk; j += 8) {
		int full = nk - j >= 8;
		__m256i m = full ? _mm256_set1_epi32(-1) : tail_mask(nk - j);
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (int64_t d = 0; d < hd; d++) {
			const float *kp = kt + d * ldk + j;
			__m256 k = full ? _mm256_loadu_ps(kp) : _mm256_maskload_ps(kp, m);
			a0 = _mm256_fmadd_ps(_mm256_set1_ps(qr[0][d]), k, a0);
			a1 = _mm256_fmadd_ps(_mm256_set1_ps(qr[1][d]), k, a1);
			a2 = _mm256_fmadd_ps(_mm256_set1_ps(qr[2][d]), k, a2);
			a3 = _mm256_fmadd_ps(_mm256_set1_ps(qr[3][d]), k, a3);
		}
		__m256 acc[4] = {a0, a1, a2, a3};
		for (int i = 0; i < nq; i++) {
			if (full)
				_mm256_storeu_ps(s + i * lds + j, acc[i]);
			else
				_mm256_maskstore_ps(s + i * lds + j, m, acc[i]);
		}
	}
}

/* o[i][d] = o[i][d] * corr[i] + sum_j p[i * ldp + j] v[j * vd + d], d < vd,
 * for up to 4 queries; each output lane sums over j in order, then one
 * multiply and one add (the online softmax's rescaling). */
void tfm_cpu_attn_pv_avx2(float *const *o, const float *corr, const float *p, int64_t ldp,
			  int64_t nq, const float *v, int64_t nk, int64_t vd)
{
	const float *pr[4];
	for (int i = 0; i < 4; i++)
		pr[i] = p + (i < nq ? i : 0) * ldp;
	int64_t d = 0;
	for (; d + 16 <= vd; d += 16) { /* as the scores: 16 lanes, eight chains */
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		__m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
		for (int64_t j = 0; j < nk; j++) {
			const float *vp = v + j * vd + d;
			__m256 x = _mm256_loadu_ps(vp), y = _mm256_loadu_ps(vp + 8);
			__m256 p0 = _mm256_set1_ps(pr[0][j]), p1 = _mm256_set1_ps(pr[1][j]);
			__m256 p2 = _mm256_set1_ps(pr[2][j]), p3 = _mm256_set1_ps(pr[3][j]);
			a0 = _mm256_fmadd_ps(p0, x, a0), b0 = _mm256_fmadd_ps(p0, y, b0);
			a1 = _mm256_fmadd_ps(p1, x, a1), b1 = _mm256_fmadd_ps(p1, y, b1);
			a2 = _mm256_fmadd_ps(p2, x, a2), b2 = _mm256_fmadd_ps(p2, y, b2);
			a3 = _mm256_fmadd_ps(p3, x, a3), b3 = _mm256_fmadd_ps(p3, y, b3);
		}
		__m256 acc[8] = {a0, b0, a1, b1, a2, b2, a3, b3};
		for (int i = 0; i < nq; i++) {
			__m256 c = _mm256_set1_ps(corr[i]);
			__m256 o0 = _mm256_loadu_ps(o[i] + d), o1 = _mm256_loadu_ps(o[i] + d + 8);
			_mm256_storeu_ps(o[i] + d, _mm256_add_ps(_mm256_mul_ps(o0, c), acc[2 * i]));
			_mm256_storeu_ps(o[i] + d + 8, _mm256_add_ps(_mm256_mul_ps(o1, c), acc[2 * i + 1]));
		}
	}
	for (; d < vd; d += 8) {
		int full = vd - d >= 8;
		__m256i m = full ? _mm256_set1_epi32(-1) : tail_mask(vd - d);
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (int64_t j = 0; j < nk; j++) {
			const float *vp = v + j * vd + d;
			__m256 x = full ? _mm256_loadu_ps(vp) : _mm256_maskload_ps(vp, m);
			a0 = _mm256_fmadd_ps(_mm256_set1_ps(pr[0][j]), x, a0);
			a1 = _mm256_fmadd_ps(_mm256_set1_ps(pr[1][j]), x, a1);
			a2 = _mm256_fmadd_ps(_mm256_set1_ps(pr[2][j]), x, a2);
			a3 = _mm256_fmadd_ps(_mm256_set1_ps(pr[3][j]), x, a3);
		}
		__m256 acc[4] = {a0, a1, a2, a3};
		for (int i = 0; i < nq; i++) {
			__m256 ov = full ? _mm256_loadu_ps(o[i] + d) : _mm256_maskload_ps(o[i] + d, m);
			ov = _mm256_add_ps(_mm256_mul_ps(ov, _mm256_set1_ps(corr[i])), acc[i]);
			if (full)
				_mm256_storeu_ps(o[i] + d, ov);
			else
				_mm256_maskstore_ps(o[i] + d, m, ov);
		}
	}
}
