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
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

static inline __m512 two(float a, float b) /* lanes 0-7 a, 8-15 b */
{
	return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

/* q5_0 element i as unsigned 0..31: nibble | fifth bit (bit i of qh) << 4 */
static inline __m256i q5u(const struct tfm_block_q5_0 *b)
{
	uint32_t qh;
	__builtin_memcpy(&qh, b->qh, 4);
	return _mm256_or_si256(nibbles32(b->qs), _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10)));
}

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
#pragma GCC unroll 4
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
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m512i a = cat256(nibbles32(w[q][i].qs), nibbles32(w[q][i + 1].qs));
				__m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, b);
				__m512 s = _mm512_mul_ps(two(fh(w[q][i].d), fh(w[q][i + 1].d)), dy);
				acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc[q]);
				summ[q] += fh(w[q][i].m) * s0 + fh(w[q][i + 1].m) * s1;
			}
		}
		if (i < nb) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				__m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles32(w[q][i].qs), b);
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

/* q4_0 and q5_0 with their nibbles unpacked two blocks at a time: the 32
 * bytes of blocks i and i+1 give [lo_i lo_i+1 hi_i hi_i+1] (16 each) in
 * three operations (q5_0's fifth bits by one mask in the same order), and
 * the activation blocks are permuted to match once for the four rows;
 * lanes 0-3 and 8-11 then belong to block i, 4-7 and 12-15 to block i+1,
 * and the scales are laid out so. */
static inline __m512 scales2(uint16_t a, uint16_t b, __m512i sidx)
{
	__m128i h = _mm_insert_epi16(_mm_cvtsi32_si128(a), b, 1);
	return _mm512_permutexvar_ps(sidx, _mm512_castps128_ps512(_mm_cvtph_ps(h)));
}

/* fifth bits of q5_0 blocks a, b in the [lo_a lo_b hi_a hi_b] order, as 0x10 */
static inline __m512i hi2(const struct tfm_block_q5_0 *a, const struct tfm_block_q5_0 *b)
{
	uint32_t ha, hb;
	memcpy(&ha, a->qh, 4);
	memcpy(&hb, b->qh, 4);
	uint64_t m = (uint64_t)(ha & 0xFFFF) | (uint64_t)(hb & 0xFFFF) << 16 |
		     (uint64_t)(ha >> 16) << 32 | (uint64_t)(hb >> 16) << 48;
	return _mm512_maskz_mov_epi8(m, _mm512_set1_epi8(0x10));
}

static inline void qgemv2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			  int64_t rows, int q5)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const size_t bs = q5 ? sizeof(struct tfm_block_q5_0) : sizeof(struct tfm_block_q4_0);
	const size_t qo = q5 ? offsetof(struct tfm_block_q5_0, qs) : offsetof(struct tfm_block_q4_0, qs);
	const __m512i perm = _mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7);
	const __m512i sidx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
	const __m512i off = _mm512_set1_epi8(q5 ? 16 : 8), low = _mm512_set1_epi8(0x0F);
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		__m512 acc[4];
#pragma GCC unroll 4
		for (int q = 0; q < 4; q++) {
			w[q] = (const uint8_t *)wv + (size_t)(r + q < rows ? r + q : r) * rb;
			acc[q] = _mm512_setzero_ps();
		}
		int64_t i = 0;
		for (; i + 1 < nb; i += 2) {
			__m512i b = _mm512_permutexvar_epi64(perm, cat256(
				_mm256_loadu_si256((const __m256i *)x[i].qs),
				_mm256_loadu_si256((const __m256i *)x[i + 1].qs)));
			__m512i corr = _mm512_sub_epi32(_mm512_setzero_si512(),
							_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, b));
			__m512 dy = scales2(x[i].d, x[i + 1].d, sidx);
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *b0 = w[q] + (size_t)i * bs, *b1 = b0 + bs;
				uint16_t d0, d1;
				memcpy(&d0, b0, 2);
				memcpy(&d1, b1, 2);
				_mm_prefetch((const char *)b0 + 4 * rb, _MM_HINT_T0);
				__m256i v = _mm256_loadu2_m128i((const __m128i *)(b1 + qo),
								(const __m128i *)(b0 + qo));
				__m512i u = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v),
						_mm256_srli_epi16(v, 4), 1), low);
				if (q5)
					u = _mm512_or_si512(u, hi2((const void *)b0, (const void *)b1));
				__m512i p = _mm512_dpbusd_epi32(corr, u, b);
				__m512 s = _mm512_mul_ps(scales2(d0, d1, sidx), dy);
				acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc[q]);
			}
		}
		if (i < nb) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			__m256i corr = _mm256_sub_epi32(_mm256_setzero_si256(),
					_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm512_castsi512_si256(off), b));
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *b0 = w[q] + (size_t)i * bs;
				uint16_t d0;
				memcpy(&d0, b0, 2);
				__m256i u = q5 ? q5u((const void *)b0) : nibbles32(b0 + qo);
				__m256i p = _mm256_dpbusd_epi32(corr, u, b);
				__m512 sc = _mm512_set1_ps(fh(d0) * fh(x[i].d));
				__m512 pv = _mm512_castps256_ps512(_mm256_cvtepi32_ps(p));
				acc[q] = _mm512_mask3_fmadd_ps(pv, sc, acc[q], 0x00FF);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = _mm512_reduce_add_ps(acc[q]);
	}
}

void tfm_cpu_qgemv_q4_0_avx512(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			       int64_t rows)
{
	qgemv2(y, wv, rb, xq, n, rows, 0);
}

void tfm_cpu_qgemv_q5_0_avx512(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			       int64_t rows)
{
	qgemv2(y, wv, rb, xq, n, rows, 1);
}
