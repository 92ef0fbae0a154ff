/* attn-avx512.c: the attention micro-kernels, AVX-512: scores of up to 4
 * queries against a tile of keys, and the probability-weighted sum of a
 * tile of values.  Every output lane sums in a fixed order, so a value never
 * depends on which queries or keys were computed beside it (nor, therefore,
 * on the thread count or on prefill against decode). */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>
#include <string.h>

/* Attention scores of up to 4 queries against a transposed key tile:
 * s[i * lds + j] = sum_d q[i * hd + d] kt[d * ldk + j], j < nk.  Each lane
 * (key) sums over d in order, so a key's score does not depend on the keys
 * or queries beside it. */
void tfm_cpu_attn_qk_avx512(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			    int64_t ldk, int64_t hd, int64_t nk)
{
	const float *qr[4];
	for (int i = 0; i < 4; i++)
		qr[i] = q + (i < nq ? i : 0) * hd;
	for (int64_t j = 0; j < nk; j += 16) {
		__mmask16 m = nk - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nk - j)) - 1);
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (int64_t d = 0; d < hd; d++) {
			__m512 k = _mm512_maskz_loadu_ps(m, kt + d * ldk + j);
			a0 = _mm512_fmadd_ps(_mm512_set1_ps(qr[0][d]), k, a0);
			a1 = _mm512_fmadd_ps(_mm512_set1_ps(qr[1][d]), k, a1);
			a2 = _mm512_fmadd_ps(_mm512_set1_ps(qr[2][d]), k, a2);
			a3 = _mm512_fmadd_ps(_mm512_set1_ps(qr[3][d]), k, a3);
		}
		__m512 acc[4] = {a0, a1, a2, a3};
		for (int i = 0; i < nq; i++)
			_mm512_mask_storeu_ps(s + i * lds + j, m, acc[i]);
	}
}

/* o[i][d] = o[i][d] * corr[i] + sum_j p[i * ldp + j] v[j * vd + d], d < vd,
 * for up to 4 queries; each output lane sums over j in order, then one
 * multiply and one add (the online softmax's rescaling). */
void tfm_cpu_attn_pv_avx512(float *const *o, const float *corr, const float *p, int64_t ldp,
			    int64_t nq, const float *v, int64_t nk, int64_t vd)
{
	const float *pr[4];
	for (int i = 0; i < 4; i++)
		pr[i] = p + (i < nq ? i : 0) * ldp;
	for (int64_t d = 0; d < vd; d += 16) {
		__mmask16 m = vd - d >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (vd - d)) - 1);
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		for (int64_t j = 0; j < nk; j++) {
			__m512 x = _mm512_maskz_loadu_ps(m, v + j * vd + d);
			a0 = _mm512_fmadd_ps(_mm512_set1_ps(pr[0][j]), x, a0);
			a1 = _mm512_fmadd_ps(_mm512_set1_ps(pr[1][j]), x, a1);
			a2 = _mm512_fmadd_ps(_mm512_set1_ps(pr[2][j]), x, a2);
			a3 = _mm512_fmadd_ps(_mm512_set1_ps(pr[3][j]), x, a3);
		}
		__m512 acc[4] = {a0, a1, a2, a3};
		for (int i = 0; i < nq; i++) {
			__m512 ov = _mm512_maskz_loadu_ps(m, o[i] + d);
			ov = _mm512_add_ps(_mm512_mul_ps(ov, _mm512_set1_ps(corr[i])), acc[i]);
			_mm512_mask_storeu_ps(o[i] + d, m, ov);
		}
	}
}
