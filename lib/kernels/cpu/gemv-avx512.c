/* gemv-avx512.c: matrix-vector kernels, AVX-512.  Rows go four at a time to
 * share the loads of x, but each row has its own single accumulator and the
 * same masked tail, so a row's value never depends on which rows it was
 * grouped with (nor, therefore, on the thread count). */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>
#include <string.h>

#define LD_F32(p, m) _mm512_maskz_loadu_ps(m, (const float *)(p))
#define LD_F16(p, m) _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)(p)))
#define LD_BF16(p, m) _mm512_castsi512_ps(_mm512_slli_epi32( \
	_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)(p))), 16))

/* y[r] = sum_i W[r][i] x[i] for rows r < rows; W rows are rb bytes apart */
#define GEMV(NAME, T, LD)                                                              \
void NAME(float *y, const void *wv, size_t rb, const float *x, int64_t n, int64_t rows) \
{                                                                                      \
	const uint8_t *w = wv;                                                         \
	int64_t r = 0;                                                                 \
	for (; r + 4 <= rows; r += 4) {                                                \
		const T *w0 = (const T *)(w + r * rb), *w1 = (const T *)(w + (r + 1) * rb); \
		const T *w2 = (const T *)(w + (r + 2) * rb), *w3 = (const T *)(w + (r + 3) * rb); \
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;            \
		for (int64_t i = 0; i < n; i += 16) {                                  \
			__mmask16 m = n - i >= 16 ? (__mmask16)0xffff                  \
						  : (__mmask16)((1u << (n - i)) - 1); \
			__m512 xv = _mm512_maskz_loadu_ps(m, x + i);                   \
			a0 = _mm512_fmadd_ps(LD(w0 + i, m), xv, a0);                   \
			a1 = _mm512_fmadd_ps(LD(w1 + i, m), xv, a1);                   \
			a2 = _mm512_fmadd_ps(LD(w2 + i, m), xv, a2);                   \
			a3 = _mm512_fmadd_ps(LD(w3 + i, m), xv, a3);                   \
		}                                                                      \
		y[r] = _mm512_reduce_add_ps(a0);                                       \
		y[r + 1] = _mm512_reduce_add_ps(a1);                                   \
		y[r + 2] = _mm512_reduce_add_ps(a2);                                   \
		y[r + 3] = _mm512_reduce_add_ps(a3);                                   \
	}                                                                              \
	for (; r < rows; r++) {                                                        \
		const T *w0 = (const T *)(w + r * rb);                                 \
		__m512 a0 = _mm512_setzero_ps();                                       \
		for (int64_t i = 0; i < n; i += 16) {                                  \
			__mmask16 m = n - i >= 16 ? (__mmask16)0xffff                  \
						  : (__mmask16)((1u << (n - i)) - 1); \
			a0 = _mm512_fmadd_ps(LD(w0 + i, m), _mm512_maskz_loadu_ps(m, x + i), a0); \
		}                                                                      \
		y[r] = _mm512_reduce_add_ps(a0);                                       \
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

/* q8_0 rows (blocks of 32: f16 d, int8 q[32]): per block the 32 products
 * q * x are summed in a vector, scaled by d and added to the row's
 * accumulator.  n is a multiple of 32. */
void tfm_cpu_gemv_q8_0_avx512(float *y, const void *wv, size_t rb, const float *x, int64_t n,
			      int64_t rows)
{
	const uint8_t *w = wv;
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *b = w + r * rb;
		__m512 acc = _mm512_setzero_ps();
		for (int64_t i = 0; i < n; i += 32, b += 34) {
			uint16_t dh;
			memcpy(&dh, b, 2);
			__m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 2))));
			__m512 q1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 18))));
			__m512 s = _mm512_mul_ps(q0, _mm512_loadu_ps(x + i));
			s = _mm512_fmadd_ps(q1, _mm512_loadu_ps(x + i + 16), s);
			acc = _mm512_fmadd_ps(_mm512_set1_ps(_cvtsh_ss(dh)), s, acc);
		}
		y[r] = _mm512_reduce_add_ps(acc);
	}
}

/* q4_0 rows (f16 d, 16 bytes: low nibbles elements 0..15, high 16..31, value
 * d * (q - 8)). */
void tfm_cpu_gemv_q4_0_avx512(float *y, const void *wv, size_t rb, const float *x, int64_t n,
			      int64_t rows)
{
	const uint8_t *w = wv;
	const __m512i mask = _mm512_set1_epi32(15), eight = _mm512_set1_epi32(8);
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *b = w + r * rb;
		__m512 acc = _mm512_setzero_ps();
		for (int64_t i = 0; i < n; i += 32, b += 18) {
			uint16_t dh;
			memcpy(&dh, b, 2);
			__m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)));
			__m512 q0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(v, mask), eight));
			__m512 q1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(v, 4), eight));
			__m512 s = _mm512_mul_ps(q0, _mm512_loadu_ps(x + i));
			s = _mm512_fmadd_ps(q1, _mm512_loadu_ps(x + i + 16), s);
			acc = _mm512_fmadd_ps(_mm512_set1_ps(_cvtsh_ss(dh)), s, acc);
		}
		y[r] = _mm512_reduce_add_ps(acc);
	}
}
