/* gemv-avx512.c: matrix-vector kernels, AVX-512.  Rows go sixteen at a time
 * to share the loads of x and the horizontal sums, but each row has its own
 * accumulator, the same masked tail and the same summation pattern, so a
 * row's value never depends on which rows it was grouped with (nor,
 * therefore, on the thread count). */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>
#include <string.h>

#define LD_F32(p, m) _mm512_maskz_loadu_ps(m, (const float *)(p))
#define LD_F16(p, m) _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)(p)))
#define LD_BF16(p, m) _mm512_castsi512_ps(_mm512_slli_epi32( \
	_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)(p))), 16))

/* The 16 horizontal sums of a[0..15], returned as one vector in row order.
 * Every row's 16 lanes are added in the same pattern (lane j with j+8, then
 * j+4, j+2, j+1), whichever position the row has in the group. */
static inline __m512 hsum16(const __m512 *a)
{
	__m512 b[8], c[4], d[2];
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44),
				     _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xee));
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++)
		c[k] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], 0x88),
				     _mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], 0xdd));
	for (int k = 0; k < 2; k++)
		d[k] = _mm512_add_ps(_mm512_unpacklo_ps(c[2 * k], c[2 * k + 1]),
				     _mm512_unpackhi_ps(c[2 * k], c[2 * k + 1]));
	__m512 e = _mm512_add_ps(_mm512_unpacklo_ps(d[0], d[1]), _mm512_unpackhi_ps(d[0], d[1]));
	/* e holds, in 128-bit lane L, rows L, 8+L, 4+L, 12+L */
	const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15);
	return _mm512_permutexvar_ps(idx, e);
}

/* y[r] = sum_i W[r][i] x[i] for rows r < rows; W rows are rb bytes apart.
 * Rows go 16 at a time; the last group overlaps the one before (its rows
 * come out the same).  Fewer than 16 rows in all (a shape the callers never
 * split further) go four by four.
 * Four base pointers and the offsets 0, rb, 2 rb, 3 rb address the 16 rows
 * so that they stay in registers. */
#define GEMV(NAME, T, LD)                                                              \
void NAME(float *y, const void *wv, size_t rb, const float *x, int64_t n, int64_t rows) \
{                                                                                      \
	const uint8_t *w = wv;                                                         \
	if (rows < 16) { /* always this path for this shape: its own order is fine */ \
		for (int64_t r = 0; r < rows; r += 4) {                                \
			const T *p[4];                                                 \
			__m512 a[4];                                                   \
			_Pragma("GCC unroll 4")                                        \
			for (int q = 0; q < 4; q++) {                                  \
				p[q] = (const T *)(w + (r + q < rows ? r + q : r) * rb); \
				a[q] = _mm512_setzero_ps();                            \
			}                                                              \
			for (int64_t i = 0; i < n; i += 16) {                          \
				__mmask16 m = n - i >= 16 ? (__mmask16)0xffff          \
					: (__mmask16)((1u << (n - i)) - 1);            \
				__m512 xv = _mm512_maskz_loadu_ps(m, x + i);           \
				_Pragma("GCC unroll 4")                                \
				for (int q = 0; q < 4; q++)                            \
					a[q] = _mm512_fmadd_ps(LD(p[q] + i, m), xv, a[q]); \
			}                                                              \
			for (int q = 0; q < 4 && r + q < rows; q++)                    \
				y[r + q] = _mm512_reduce_add_ps(a[q]);                 \
		}                                                                      \
		return;                                                                \
	}                                                                              \
	size_t r1 = rb, r2 = 2 * rb, r3 = 3 * rb;                                      \
	for (int64_t r0 = 0; r0 < rows; r0 += 16) {                                    \
		int64_t r = r0 + 16 <= rows ? r0 : rows - 16;                          \
		const uint8_t *b0 = w + r * rb, *b1 = b0 + 4 * rb;                     \
		const uint8_t *b2 = b0 + 8 * rb, *b3 = b0 + 12 * rb;                   \
		__m512 acc[16];                                                        \
		_Pragma("GCC unroll 16")                                               \
		for (int q = 0; q < 16; q++)                                           \
			acc[q] = _mm512_setzero_ps();                                  \
		for (int64_t i = 0; i < n; i += 16) {                                  \
			__mmask16 m = n - i >= 16 ? (__mmask16)0xffff                  \
						  : (__mmask16)((1u << (n - i)) - 1); \
			__m512 xv = _mm512_maskz_loadu_ps(m, x + i);                   \
			size_t o = (size_t)i * sizeof(T);                              \
			const uint8_t *bb[4] = {b0 + o, b1 + o, b2 + o, b3 + o};       \
			const size_t off[4] = {0, r1, r2, r3};                         \
			_Pragma("GCC unroll 16")                                       \
			for (int q = 0; q < 16; q++)                                   \
				acc[q] = _mm512_fmadd_ps(LD(bb[q / 4] + off[q % 4], m), xv, acc[q]); \
		}                                                                      \
		_mm512_storeu_ps(y + r, hsum16(acc));                                  \
	}                                                                              \
}

GEMV(tfm_cpu_gemv_f32_avx512, float, LD_F32)
GEMV(tfm_cpu_gemv_f16_avx512, uint16_t, LD_F16)
GEMV(tfm_cpu_gemv_bf16_avx512, uint16_t, LD_BF16)

/* y[j] = sum_d x[d] A[d][j] for j < n (A rows lda floats apart): attention
 * scores against a transposed key cache.  Each y[j] sums over d in order. */
void tfm_cpu_gemv_t_avx512(float *y, const float *a, int64_t lda, const float *x, int64_t k,
			   int64_t n)
{
	int64_t j = 0;
	for (; j + 64 <= n; j += 64) {
		__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
		for (int64_t d = 0; d < k; d++) {
			const float *r = a + d * lda + j;
			__m512 xv = _mm512_set1_ps(x[d]);
			s0 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r), s0);
			s1 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r + 16), s1);
			s2 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r + 32), s2);
			s3 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r + 48), s3);
		}
		_mm512_storeu_ps(y + j, s0);
		_mm512_storeu_ps(y + j + 16, s1);
		_mm512_storeu_ps(y + j + 32, s2);
		_mm512_storeu_ps(y + j + 48, s3);
	}
	for (; j < n; j += 16) {
		__mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
		__m512 s0 = _mm512_setzero_ps();
		for (int64_t d = 0; d < k; d++)
			s0 = _mm512_fmadd_ps(_mm512_set1_ps(x[d]),
					     _mm512_maskz_loadu_ps(m, a + d * lda + j), s0);
		_mm512_mask_storeu_ps(y + j, m, s0);
	}
}

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
