/* qgemv-avx512.c: decode matrix-vector products of quantized weight rows
 * (q4_0, q5_0 against q8_0 activations; q4_1 against q8_1) with
 * AVX-512 VNNI, four rows at a time so each activation block is loaded and
 * its offset correction computed once for the four.  Integer sums are exact;
 * every row is computed by the same instructions in the same order whatever
 * rows it is grouped with (a short group repeats a row), so results do not
 * depend on the tiling.  Four interleaved rows defeat the hardware's stride
 * prefetch (rows ran at a third of the bandwidth from memory), so the same
 * bytes four rows on are prefetched by hand.  Called only when lib/quant reports "avx512" (VNNI). */
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant.h"

#include <immintrin.h>

static inline float fh(uint16_t v) { return _cvtsh_ss(v); }

static inline __m512i cat256(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

static inline __m512 two(float a, float b) /* lanes 0-7 a, 8-15 b */
{
	return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

/* 16 bytes of nibbles -> 32 bytes: elements 0-15 (low nibbles), 16-31 */
static inline __m256i nib32(const uint8_t *q)
{
	__m128i v = _mm_loadu_si128((const __m128i *)q);
	return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
}

/* q5_0 element i as unsigned 0..31: nibble | fifth bit (bit i of qh) << 4 */
static inline __m256i q5u(const struct tfm_block_q5_0 *b)
{
	uint32_t qh;
	__builtin_memcpy(&qh, b->qh, 4);
	return _mm256_or_si256(nib32(b->qs), _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10)));
}

/* The shared skeleton: for block pairs (i, i+1) of the activation, corr is
 * -off * sum(b) per group of four bytes (the weights' unsigned offset), dy
 * the activation scales; W(r, i) gives row r's unsigned 32 bytes of block i
 * and D(r, i) its scale.  An odd last block uses the lower half only. */
#define QGEMV(NAME, WT, OFF, UBYTES, SCALE)                                              \
void NAME(float *y, const void *wv, size_t rb, const void *xq, int64_t n, int64_t rows)   \
{                                                                                         \
	const struct tfm_block_q8_0 *x = xq;                                              \
	const int64_t nb = n / TFM_QK;                                                    \
	const __m512i off = _mm512_set1_epi8(OFF);                                        \
	for (int64_t r = 0; r < rows; r += 4) {                                           \
		const WT *w[4];                                                           \
		__m512 acc[4];                                                            \
		for (int q = 0; q < 4; q++) {                                             \
			w[q] = (const WT *)((const uint8_t *)wv + (size_t)(r + q < rows ? r + q : r) * rb); \
			acc[q] = _mm512_setzero_ps();                                     \
		}                                                                         \
		int64_t i = 0;                                                            \
		for (; i + 1 < nb; i += 2) {                                              \
			__m512i b = cat256(_mm256_loadu_si256((const __m256i *)x[i].qs),  \
					   _mm256_loadu_si256((const __m256i *)x[i + 1].qs)); \
			__m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),          \
					_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, b)); \
			__m512 dy = two(fh(x[i].d), fh(x[i + 1].d));                     \
			for (int q = 0; q < 4; q++) {                                     \
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0); \
				__m512i a = cat256(UBYTES(&w[q][i]), UBYTES(&w[q][i + 1])); \
				__m512i p = _mm512_dpbusd_epi32(corr, a, b);              \
				__m512 s = _mm512_mul_ps(two(SCALE(&w[q][i]), SCALE(&w[q][i + 1])), dy); \
				acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc[q]); \
			}                                                                 \
		}                                                                         \
		if (i < nb) {                                                             \
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);         \
			__m256i corr = _mm256_sub_epi32(_mm256_setzero_si256(),          \
					_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm512_castsi512_si256(off), b)); \
			for (int q = 0; q < 4; q++) {                                     \
				__m256i p = _mm256_dpbusd_epi32(corr, UBYTES(&w[q][i]), b); \
				__m512 s = _mm512_set1_ps(SCALE(&w[q][i]) * fh(x[i].d));   \
				__m512 pv = _mm512_castps256_ps512(_mm256_cvtepi32_ps(p)); \
				acc[q] = _mm512_mask3_fmadd_ps(pv, s, acc[q], 0x00FF);     \
			}                                                                 \
		}                                                                         \
		for (int q = 0; q < 4 && r + q < rows; q++)                               \
			y[r + q] = _mm512_reduce_add_ps(acc[q]);                          \
	}                                                                                 \
}

static inline __m256i u_q4_0(const struct tfm_block_q4_0 *b) { return nib32(b->qs); }
static inline float d_q4_0(const struct tfm_block_q4_0 *b) { return fh(b->d); }
static inline float d_q5_0(const struct tfm_block_q5_0 *b) { return fh(b->d); }

QGEMV(tfm_cpu_qgemv_q4_0_avx512, struct tfm_block_q4_0, 8, u_q4_0, d_q4_0)
QGEMV(tfm_cpu_qgemv_q5_0_avx512, struct tfm_block_q5_0, 16, q5u, d_q5_0)

/* q4_1 against q8_1: d_w d_x sum(q b) + m_w s_x per block (s_x = d_x sum(b)
 * stored as f16, as ggml). */
void tfm_cpu_qgemv_q4_1_avx512(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			       int64_t rows)
{
	const struct tfm_block_q8_1 *x = xq;
	const int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q4_1 *w[4];
		__m512 acc[4];
		float summ[4] = {0, 0, 0, 0};
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)((const uint8_t *)wv + (size_t)(r + q < rows ? r + q : r) * rb);
			acc[q] = _mm512_setzero_ps();
		}
		int64_t i = 0;
		for (; i + 1 < nb; i += 2) {
			__m512i b = cat256(_mm256_loadu_si256((const __m256i *)x[i].qs),
					   _mm256_loadu_si256((const __m256i *)x[i + 1].qs));
			__m512 dy = two(fh(x[i].d), fh(x[i + 1].d));
			float s0 = fh(x[i].s), s1 = fh(x[i + 1].s);
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m512i a = cat256(nib32(w[q][i].qs), nib32(w[q][i + 1].qs));
				__m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, b);
				__m512 s = _mm512_mul_ps(two(fh(w[q][i].d), fh(w[q][i + 1].d)), dy);
				acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc[q]);
				summ[q] += fh(w[q][i].m) * s0 + fh(w[q][i + 1].m) * s1;
			}
		}
		if (i < nb) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			for (int q = 0; q < 4; q++) {
				__m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), nib32(w[q][i].qs), b);
				__m512 s = _mm512_set1_ps(fh(w[q][i].d) * fh(x[i].d));
				__m512 pv = _mm512_castps256_ps512(_mm256_cvtepi32_ps(p));
				acc[q] = _mm512_mask3_fmadd_ps(pv, s, acc[q], 0x00FF);
				summ[q] += fh(w[q][i].m) * fh(x[i].s);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = _mm512_reduce_add_ps(acc[q]) + summ[q];
	}
}
