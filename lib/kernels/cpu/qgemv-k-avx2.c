/* qgemv-k-avx2.c: decode matrix-vector products of K-quant weight rows
 * (q4_K, q5_K, q6_K) against one q8_K activation row with AVX2, four rows
 * at a time: each 32-byte activation chunk is loaded once for the four rows,
 * as are the pair sums of the block sums (the mins of q4_K / q5_K) and
 * q6_K's offset term 32 * x.  Each row's f32 work is exactly that of
 * lib/quant's one-row tfm_vec_dot_*_q8_K_avx2, in its order, and every
 * int32 lane it converts is the same integer: the integer sums are exact
 * (no maddubs saturation: |pair| <= 2 * 63 * 128), so they may be formed in
 * another order and with fewer instructions (sub-block scales broadcast by
 * a byte shuffle instead of scalar code, the mins' sum with one madd), and
 * results are bit-identical to the one-row dot whatever rows share a call
 * (a short group repeats a row).  Four interleaved rows defeat the
 * hardware's stride prefetch, so the same bytes four rows on are
 * prefetched by hand (as qgemv-k-avx512.c).  cpu.c's qgemv_for says which
 * are used. */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/qgemv-k-simd.h"
#include "quant/quant.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* byte-shuffle pattern that fills each 128-bit lane with its word k */
static inline __m256i word_bcast(int k)
{
	return _mm256_set1_epi16((short)(0x0100 + 0x0202 * k));
}

/* Prefetch the cache lines that start within [p, p + bytes): called on
 * consecutive blocks, it asks for each line once.  A prefetch at every 64
 * bytes of each block (some lines twice) streamed 64 MB of q6_K rows 10-20%
 * slower from memory (one thread, this EPYC); for the small blocks of
 * qgemv-avx2.c the test costs more than it saves. */
static inline void prefetch_lines(const uint8_t *p, size_t bytes)
{
	for (uintptr_t a = ((uintptr_t)p + 63) & ~(uintptr_t)63; a < (uintptr_t)p + bytes; a += 64)
		_mm_prefetch((const char *)a, _MM_HINT_T0);
}

/* bit b (0..7) of each byte of v moved to bit 4, other bits cleared (16-bit
 * shifts: bit 4 of a byte comes from the same byte for these distances) */
static inline __m256i bit_to_4(__m256i v, int b)
{
	__m256i s = b <= 4 ? _mm256_slli_epi16(v, 4 - b) : _mm256_srli_epi16(v, b - 4);
	return _mm256_and_si256(s, _mm256_set1_epi8(0x10));
}

/* q4_K (q5 = 0) and q5_K (q5 = 1).  Per block and row, the one-row dot
 * adds madd(maddubs(lo_j, x), sc_2j) + madd(maddubs(hi_j, x), sc_2j+1) over
 * j into sumi, then acc += d sumi and summf += dmin xd summ in f32; here
 * the same sumi lanes, with j outer and the rows inner.  Inlined by force:
 * q5 is then a constant, not a test per block (GCC kept one shared copy). */
__attribute__((always_inline))
static inline void qgemv_k45(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows, int q5)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const size_t bs_ = q5 ? sizeof(struct tfm_block_q5_K) : sizeof(struct tfm_block_q4_K);
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		__m256 acc[4];
		float summf[4] = {0, 0, 0, 0};
		for (int q = 0; q < 4; q++) {
			w[q] = row_of(wv, rb, r, q, rows);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			const __m128i bsum = k_bsum_pairs(&x[i]);
			const float xd = x[i].d;
			const uint8_t *qs[4], *qh[4];
			__m256i sc[4], sumi[4]; /* sc: the 8 scales as int16, in both lanes */
			int summ[4];
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs_;
				prefetch_lines(blk + 4 * rb, bs_);
				const uint8_t *scales;
				if (q5) {
					const struct tfm_block_q5_K *k = (const void *)blk;
					scales = k->scales, qs[q] = k->qs, qh[q] = k->qh;
				} else {
					const struct tfm_block_q4_K *k = (const void *)blk;
					scales = k->scales, qs[q] = k->qs, qh[q] = NULL;
				}
				__m128i sm = k4_unpack(scales);
				summ[q] = k4_summ(sm, bsum);
				sc[q] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
				sumi[q] = _mm256_setzero_si256();
			}
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++) {
				const __m256i b0 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 64 * j));
				const __m256i b1 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 64 * j + 32));
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					__m256i v = _mm256_loadu_si256((const __m256i *)(qs[q] + 32 * j));
					__m256i lo = _mm256_and_si256(v, m4);
					__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
					if (q5) { /* fifth bits: bit 2j (lo), 2j+1 (hi) of qh[l] */
						__m256i h = _mm256_loadu_si256((const __m256i *)qh[q]);
						lo = _mm256_or_si256(lo, bit_to_4(h, 2 * j));
						hi = _mm256_or_si256(hi, bit_to_4(h, 2 * j + 1));
					}
					__m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, b0),
									_mm256_shuffle_epi8(sc[q], word_bcast(2 * j)));
					__m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, b1),
									_mm256_shuffle_epi8(sc[q], word_bcast(2 * j + 1)));
					sumi[q] = _mm256_add_epi32(sumi[q], _mm256_add_epi32(plo, phi));
				}
			}
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs_;
				uint16_t d, dmin;
				memcpy(&d, blk, 2), memcpy(&dmin, blk + 2, 2); /* both types start d, dmin */
				const float dd = fh(d) * xd;
				acc[q] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(sumi[q]), acc[q]);
				summf[q] += fh(dmin) * xd * summ[q];
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]) - summf[q];
	}
}

void tfm_cpu_qgemv_q4_K_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	qgemv_k45(y, wv, rb, xq, n, rows, 0);
}

void tfm_cpu_qgemv_q5_K_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	qgemv_k45(y, wv, rb, xq, n, rows, 1);
}

/* q6_K: value 128h + 32k + l (h half, k quarter) has its low 4 bits in
 * ql[64h + 32(k & 1) + l] (low nibble for k < 2, high for k >= 2) and its
 * high 2 in bits 2k, 2k+1 of qh[32h + l]; elements 0-15 of each 32 use scale
 * 8h + 2k, 16-31 scale 8h + 2k + 1.  The one-row dot takes (q - 32) x as
 * maddubs(q, x) - maddubs(32, x); the second is the same for the four rows
 * and made once per block. */
void tfm_cpu_qgemv_q6_K_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
	const __m256i m32 = _mm256_set1_epi8(32);
	/* even scales to bytes 0-7, odd to 8-15: widened, the low lane holds
	 * the scales of elements 0-15 of each 32, the high lane those of 16-31 */
	const __m128i eo = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q6_K *w[4];
		__m256 acc[4];
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i sc[4], sumi[4];
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const struct tfm_block_q6_K *k = &w[q][i];
				prefetch_lines((const uint8_t *)k + 4 * rb, sizeof *k);
				sc[q] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(
					_mm_loadu_si128((const __m128i *)k->scales), eo));
				sumi[q] = _mm256_setzero_si256();
			}
#pragma GCC unroll 8
			for (int hk = 0; hk < 8; hk++) {
				const int h = hk / 4, kq = hk % 4;
				const __m256i a = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * hk));
				const __m256i c = _mm256_maddubs_epi16(m32, a);
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					const struct tfm_block_q6_K *k = &w[q][i];
					__m256i l = _mm256_loadu_si256((const __m256i *)(k->ql + 64 * h + 32 * (kq & 1)));
					__m256i hb = _mm256_loadu_si256((const __m256i *)(k->qh + 32 * h));
					__m256i lo = _mm256_and_si256(kq < 2 ? l : _mm256_srli_epi16(l, 4), m4);
					/* bits 2k, 2k+1 to 4, 5 (each from its own byte) */
					__m256i hi = _mm256_and_si256(kq == 3 ? _mm256_srli_epi16(hb, 2)
									      : _mm256_slli_epi16(hb, 4 - 2 * kq), m30);
					__m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(_mm256_or_si256(lo, hi), a), c);
					sumi[q] = _mm256_add_epi32(sumi[q], _mm256_madd_epi16(p,
						_mm256_shuffle_epi8(sc[q], word_bcast(hk))));
				}
			}
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				uint16_t d;
				memcpy(&d, &w[q][i].d, 2);
				acc[q] = _mm256_fmadd_ps(_mm256_set1_ps(fh(d) * x[i].d), _mm256_cvtepi32_ps(sumi[q]),
							 acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]);
	}
}
