/* qgemv-k-avx512.c: decode matrix-vector products of K-quant weight rows
 * (q4_K, q5_K, q6_K) against one q8_K activation row, AVX-512 VNNI, four
 * rows at a time: each 64-byte activation chunk is loaded (and q6_K's
 * offset correction 32 * sum(b), the pair sums of the block sums for the
 * mins) once for the four rows.  vpdpbusd's sums of four products fit in 16
 * bits (|q| <= 31, |b| <= 128), so two of them are packed to int16 and
 * multiplied by their sub-block scales with one vpdpwssd, instead of a
 * 32-bit multiply each (lib/quant's one-row dot-avx512.c); q4_K / q5_K
 * scales and mins are unpacked with ggml's mask trick.  Integer sums are
 * exact; every row is computed by the same instructions in the same order
 * whatever rows it is grouped with (a short group repeats a row), so results
 * do not depend on the tiling or the thread count.  Called only when
 * lib/quant reports "avx512" (VNNI). */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/qgemv-k-simd.h"
#include "quant/quant.h"
#include "quant/quant-impl.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <string.h>

/* q4_K (q5 = 0) and q5_K (q5 = 1) */
static inline void qgemv_k45(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows, int q5)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const size_t bs_ = q5 ? sizeof(struct tfm_block_q5_K) : sizeof(struct tfm_block_q4_K);
	const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
	/* packs_epi32(p[j], p[j+1]) holds, in 128-bit lane L, 4 words of p[j]
	 * then 4 of p[j+1], of sub-blocks 2j + (L >= 2) and 2j + 2 + (L >= 2) */
	const __m512i sidx0 = _mm512_set_epi16(3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3, 1, 1, 1, 1,
					       2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0);
	const __m512i sidx1 = _mm512_add_epi16(sidx0, _mm512_set1_epi16(4));
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		__m512 acc[4];
		float summf[4] = {0, 0, 0, 0};
		for (int q = 0; q < 4; q++) {
			w[q] = row_of(wv, rb, r, q, rows);
			acc[q] = _mm512_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m512i b[4];
			for (int j = 0; j < 4; j++)
				b[j] = _mm512_loadu_si512(x[i].qs + 64 * j);
			const __m128i bs = k_bsum_pairs(&x[i]);
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs_;
				_mm_prefetch((const char *)blk + 4 * rb, _MM_HINT_T0);
				_mm_prefetch((const char *)blk + 4 * rb + 64, _MM_HINT_T0);
				_mm_prefetch((const char *)blk + 4 * rb + 128, _MM_HINT_T0);
				uint16_t d, dmin;
				const uint8_t *scales, *qs, *qhp = NULL;
				if (q5) {
					const struct tfm_block_q5_K *k = (const void *)blk;
					memcpy(&d, &k->d, 2), memcpy(&dmin, &k->dmin, 2);
					scales = k->scales, qs = k->qs, qhp = k->qh;
				} else {
					const struct tfm_block_q4_K *k = (const void *)blk;
					memcpy(&d, &k->d, 2), memcpy(&dmin, &k->dmin, 2);
					scales = k->scales, qs = k->qs;
				}
				__m128i sm = k4_unpack(scales);
				int summ = k4_summ(sm, bs);
				__m512i s16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm)); /* 8 scales, int16 */
				__m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)qhp) : _mm256_setzero_si256();
				__m512i p[4];
				for (int j = 0; j < 4; j++) {
					__m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
					__m256i lo = _mm256_and_si256(v, m4);
					__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
					if (q5) { /* fifth bits: bit 2j (low half), 2j+1 (high half) of qh[l] */
						lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(
							_mm256_srli_epi16(qh, 2 * j), one), 4));
						hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(
							_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
					}
					/* lanes 0-7: sub-block 2j, 8-15: 2j+1 */
					p[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), cat256(lo, hi), b[j]);
				}
				__m512i sumi = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_packs_epi32(p[0], p[1]),
								   _mm512_permutexvar_epi16(sidx0, s16));
				sumi = _mm512_dpwssd_epi32(sumi, _mm512_packs_epi32(p[2], p[3]),
							   _mm512_permutexvar_epi16(sidx1, s16));
				acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi),
							 _mm512_set1_ps(fh(d) * x[i].d), acc[q]);
				summf[q] += fh(dmin) * x[i].d * summ;
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = _mm512_reduce_add_ps(acc[q]) - summf[q];
	}
}

void tfm_cpu_qgemv_q4_K_avx512(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			       int64_t rows)
{
	qgemv_k45(y, wv, rb, xq, n, rows, 0);
}

void tfm_cpu_qgemv_q5_K_avx512(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			       int64_t rows)
{
	qgemv_k45(y, wv, rb, xq, n, rows, 1);
}

void tfm_cpu_qgemv_q6_K_avx512(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			       int64_t rows)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
	const __m512i m32 = _mm512_set1_epi8(32);
	/* packs_epi32(p[h][0], p[h][1]) holds, in 128-bit lane L, 4 words of
	 * each: 16-element groups 8h + L and 8h + 4 + L (of the 16 scales) */
	const __m512i sidx0 = _mm512_set_epi16(7, 7, 7, 7, 3, 3, 3, 3, 6, 6, 6, 6, 2, 2, 2, 2,
					       5, 5, 5, 5, 1, 1, 1, 1, 4, 4, 4, 4, 0, 0, 0, 0);
	const __m512i sidx1 = _mm512_add_epi16(sidx0, _mm512_set1_epi16(8));
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q6_K *w[4];
		__m512 acc[4];
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
			acc[q] = _mm512_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m512i b[4], c[4]; /* activations [half][k], and 32 * their sums */
			for (int j = 0; j < 4; j++) {
				b[j] = _mm512_loadu_si512(x[i].qs + 64 * j);
				c[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), m32, b[j]);
			}
			for (int q = 0; q < 4; q++) {
				const struct tfm_block_q6_K *k = &w[q][i];
				_mm_prefetch((const char *)k + 4 * rb, _MM_HINT_T0);
				_mm_prefetch((const char *)k + 4 * rb + 64, _MM_HINT_T0);
				_mm_prefetch((const char *)k + 4 * rb + 128, _MM_HINT_T0);
				_mm_prefetch((const char *)k + 4 * rb + 192, _MM_HINT_T0);
				__m512i s16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(
					_mm_loadu_si128((const __m128i *)k->scales)));
				__m512i sumi = _mm512_setzero_si512();
				for (int half = 0; half < 2; half++) {
					const uint8_t *ql = k->ql + 64 * half, *qh = k->qh + 32 * half;
					__m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
					__m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
					__m256i hb = _mm256_loadu_si256((const __m256i *)qh);
					__m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, m4),
								     _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
					__m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
						_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
					__m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
						_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
					__m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
						_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
					/* (q-32)*b = q*b - 32*b: |sum of 4| <= 16384 */
					__m512i p0 = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(),
							cat256(q0, q1), b[2 * half]), c[2 * half]);
					__m512i p1 = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(),
							cat256(q2, q3), b[2 * half + 1]), c[2 * half + 1]);
					sumi = _mm512_dpwssd_epi32(sumi, _mm512_packs_epi32(p0, p1),
						_mm512_permutexvar_epi16(half ? sidx1 : sidx0, s16));
				}
				uint16_t d;
				memcpy(&d, &k->d, 2);
				acc[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi),
							 _mm512_set1_ps(fh(d) * x[i].d), acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = _mm512_reduce_add_ps(acc[q]);
	}
}
