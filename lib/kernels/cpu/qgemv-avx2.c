/* qgemv-avx2.c: decode matrix-vector products of q4_0, q4_1, q5_0, q5_1 and
 * q8_0 weight rows against one q8_0 / q8_1 activation row with AVX2, four
 * rows at a time: each activation block (and its scale) is loaded once for
 * the four, and the four accumulators are four independent chains where one
 * row alone waits on one.  Each row's f32 work is exactly that of lib/quant's
 * one-row tfm_vec_dot_*_avx2, in its order, and each int32 lane it converts
 * is the same integer (where a kernel gets it with fewer instructions, the
 * comment says why it is exact), so results are bit-identical to the one-row
 * dot whatever rows it is grouped with.  Four interleaved rows defeat the
 * hardware's stride prefetch, so the same bytes four rows on are prefetched
 * by hand (as qgemv-avx512.c).  The loops over the four rows are unrolled
 * by pragma: at -O2 GCC left them loops, with the accumulators and row
 * pointers in arrays on the stack, and q4_0 ran at 10.8 GMAC/s, below the
 * one-row dot; unrolled it runs 16.6-20.7 (576 x 1536 and 1536 x 1536, one
 * thread of a 2-core AVX2 EPYC).  The four rows' f16 block scales are
 * converted together (scales4: one vcvtph2ps and one multiply where four
 * scalar conversions, multiplies and broadcasts were) and nibbles32 takes
 * three instructions where it took four: 576 x 1536 in cache, one thread,
 * best of 7 in two alternated rounds, GMAC/s before -> after: q4_0
 * 18.7-19.6 -> 21.5-22.1, q4_1 15.9-16.5 -> 19.6-20.7, q5_0 10.6-13.5 ->
 * 15.1-15.3, q5_1 9.5-11.7 -> 14.2-14.5 (same products, same bits).
 * Decode tokens/s did not move beyond the machine's noise (+-10%): decode
 * streams the weights from memory.  cpu.c's qgemv_for says which are used. */
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

/* sc[q]: row q's block scale times the activation block's, in all lanes
 * (the same float product as fh(d_q) * fh(dx)), for the four rows' blocks
 * at d0..d3 (f16 at the start of each) */
static inline void scales4(__m256 sc[4], const void *d0, const void *d1, const void *d2,
			   const void *d3, uint16_t dx)
{
	__m128 s = _mm_mul_ps(fh4(d0, d1, d2, d3), _mm_set1_ps(fh(dx)));
	__m256 s8 = _mm256_set_m128(s, s);
	sc[0] = _mm256_permute_ps(s8, 0x00), sc[1] = _mm256_permute_ps(s8, 0x55);
	sc[2] = _mm256_permute_ps(s8, 0xAA), sc[3] = _mm256_permute_ps(s8, 0xFF);
}

/* q4_0: the weights' nibbles u (0..15) are maddubs' unsigned operand as
 * they are, and 8 x is taken off each pair sum in 16 bits: (u - 8) x
 * summed in pairs is maddubs(u, x) - maddubs(8, x), the second once per
 * activation block for the four rows.  Each int32 lane is the same integer
 * as dot_i8(u - 8, x) gives (exact, no saturation: |pair| <= 2 * 15 * 127
 * + 2 * 8 * 127), so rows stay bit-identical to the one-row dot, with three
 * fewer instructions per row and block (sub, two signs) and one more
 * (sub_epi16). */
void tfm_cpu_qgemv_q4_0_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const __m256i eight = _mm256_set1_epi8(8), ones = _mm256_set1_epi16(1);
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q4_0 *w[4];
		__m256 acc[4];
#pragma GCC unroll 4
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			__m256i b8 = _mm256_maddubs_epi16(eight, b); /* 8 (x_2k + x_2k+1) */
			__m256 sc[4];
			scales4(sc, &w[0][i].d, &w[1][i].d, &w[2][i].d, &w[3][i].d, x[i].d);
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(nibbles32(w[q][i].qs), b), b8);
				acc[q] = _mm256_fmadd_ps(sc[q], _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones)),
							 acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]);
	}
}

void tfm_cpu_qgemv_q8_0_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q8_0 *w[4];
		__m256 acc[4];
#pragma GCC unroll 4
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			__m256 sc[4];
			scales4(sc, &w[0][i].d, &w[1][i].d, &w[2][i].d, &w[3][i].d, x[i].d);
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m256i a = _mm256_loadu_si256((const __m256i *)w[q][i].qs);
				acc[q] = _mm256_fmadd_ps(sc[q], _mm256_cvtepi32_ps(dot_i8(a, b)), acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]);
	}
}

/* q4_1 (q5 = 0) and q5_1 (q5 = 1) against q8_1: the weights (0..15, or
 * 0..31 with the fifth bit) are maddubs' unsigned operand, and the min
 * term m * s is summed in f32 block by block, as in the one-row dots.
 * Inlined by force: q5 is then a constant, not a test per block. */
__attribute__((always_inline))
static inline void qgemv_x1(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			    int64_t rows, int q5)
{
	const struct tfm_block_q8_1 *x = xq;
	const int64_t nb = n / TFM_QK;
	const size_t bs = q5 ? sizeof(struct tfm_block_q5_1) : sizeof(struct tfm_block_q4_1);
	const __m256i ones = _mm256_set1_epi16(1), b4 = _mm256_set1_epi8(0x10);
	for (int64_t r = 0; r < rows; r += 4) {
		const uint8_t *w[4];
		__m256 acc[4];
		__m128 summ = _mm_setzero_ps();
#pragma GCC unroll 4
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			/* d at offset 0 and m at 2 in both block types */
			const uint8_t *b0 = w[0] + (size_t)i * bs, *b1 = w[1] + (size_t)i * bs,
				      *b2 = w[2] + (size_t)i * bs, *b3 = w[3] + (size_t)i * bs;
			__m256 sc[4];
			scales4(sc, b0, b1, b2, b3, x[i].d);
			/* summ[q] += m_q * sx, lane by lane */
			summ = _mm_add_ps(summ, _mm_mul_ps(fh4(b0 + 2, b1 + 2, b2 + 2, b3 + 2),
							   _mm_set1_ps(fh(x[i].s))));
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				const uint8_t *blk = w[q] + (size_t)i * bs;
				_mm_prefetch((const char *)blk + 4 * rb, _MM_HINT_T0);
				__m256i a;
				if (q5) {
					const struct tfm_block_q5_1 *k = (const void *)blk;
					a = _mm256_or_si256(nibbles32(k->qs), _mm256_and_si256(bits32(k->qh), b4));
				} else {
					const struct tfm_block_q4_1 *k = (const void *)blk;
					a = nibbles32(k->qs);
				}
				__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones);
				acc[q] = _mm256_fmadd_ps(sc[q], _mm256_cvtepi32_ps(p), acc[q]);
			}
		}
		float sm[4];
		_mm_storeu_ps(sm, summ);
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]) + sm[q];
	}
}

void tfm_cpu_qgemv_q4_1_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	qgemv_x1(y, wv, rb, xq, n, rows, 0);
}

void tfm_cpu_qgemv_q5_1_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	qgemv_x1(y, wv, rb, xq, n, rows, 1);
}

/* q5_0: as q4_0, the weights u = nibble + 16 * fifth bit (0..31) are
 * maddubs' unsigned operand and 16 x is taken off each pair sum in 16 bits,
 * maddubs(16, x) once per activation block for the four rows.  The one-row
 * dot multiplies u - 16 by x with dot_i8; each pair sum is the same integer
 * both ways (|(u - 16) x pair| <= 2 * 16 * 127, |u x pair| <= 2 * 31 * 127:
 * no saturation; q8_0 activations are within +-127, so dot_i8's sign trick
 * is exact too), hence the same int32 lanes. */
void tfm_cpu_qgemv_q5_0_avx2(float *y, const void *wv, size_t rb, const void *xq, int64_t n,
			     int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const __m256i b4 = _mm256_set1_epi8(0x10), ones = _mm256_set1_epi16(1);
	for (int64_t r = 0; r < rows; r += 4) {
		const struct tfm_block_q5_0 *w[4];
		__m256 acc[4];
#pragma GCC unroll 4
		for (int q = 0; q < 4; q++) {
			w[q] = (const void *)row_of(wv, rb, r, q, rows);
			acc[q] = _mm256_setzero_ps();
		}
		for (int64_t i = 0; i < nb; i++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			__m256i b16 = _mm256_maddubs_epi16(b4, b); /* 16 (x_2k + x_2k+1) */
			__m256 sc[4];
			scales4(sc, &w[0][i].d, &w[1][i].d, &w[2][i].d, &w[3][i].d, x[i].d);
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++) {
				_mm_prefetch((const char *)&w[q][i] + 4 * rb, _MM_HINT_T0);
				__m256i u = _mm256_or_si256(nibbles32(w[q][i].qs),
							    _mm256_and_si256(bits32(w[q][i].qh), b4));
				__m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, b), b16);
				acc[q] = _mm256_fmadd_ps(sc[q], _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones)),
							 acc[q]);
			}
		}
		for (int q = 0; q < 4 && r + q < rows; q++)
			y[r + q] = hsum_ps(acc[q]);
	}
}

/* q4_0 in groups of eight rows (q4x8.c has the layout and the sums): four
 * weights of each row per 32-bit lane, multiplied by the four activations
 * they meet broadcast to every lane; the eight 16-bit partial sums of a
 * block stay under 2^15 (8 x 2 x 15 x 127), then one madd gives each
 * row's sum of u x in its lane, less 8 sum(x) once for all eight rows.
 * Against the four-row kernel: 576 x 1536 in cache 44-46 GMAC/s where it
 * runs 22-24, and 576 x 49152 from memory 12-16 GB/s where it streams 9-10
 * (one thread, 2-core Zen 3 EPYC; the machine's speed moves by 10%). */
void tfm_cpu_qgemv_q4x8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
	const __m256i eight = _mm256_set1_epi8(8);
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		__m256 acc = _mm256_setzero_ps();
		for (int64_t i = 0; i < nb; i++, g += 144) {
			_mm_prefetch((const char *)g + 1024, _MM_HINT_T0);
			_mm_prefetch((const char *)g + 1088, _MM_HINT_T0);
			const __m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			/* 8 sum(x) in every lane */
			__m256i sx = _mm256_madd_epi16(_mm256_maddubs_epi16(eight, b), ones);
			sx = _mm256_add_epi32(sx, _mm256_permute2x128_si256(sx, sx, 1));
			sx = _mm256_add_epi32(sx, _mm256_shuffle_epi32(sx, 0x4E));
			sx = _mm256_add_epi32(sx, _mm256_shuffle_epi32(sx, 0xB1));
			int32_t xs[8];
			memcpy(xs, x[i].qs, 32);
			__m256i s16 = _mm256_setzero_si256();
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++) {
				__m256i v = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c));
				__m256i lo = _mm256_and_si256(v, m4);
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
				s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo, _mm256_set1_epi32(xs[c])));
				s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi, _mm256_set1_epi32(xs[c + 4])));
			}
			__m256i s = _mm256_sub_epi32(_mm256_madd_epi16(s16, ones), sx);
			__m256 sc = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g)),
						  _mm256_set1_ps(fh(x[i].d)));
			acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s), acc);
		}
		_mm256_storeu_ps(y + r, acc);
	}
}

/* q8_0 in groups of eight rows (qx8.c): four signed weights of each row
 * per 32-bit lane against four activations broadcast, maddubs on |w| and
 * x with w's sign, each chunk's 16-bit pair sums widened to 32 bits (two
 * would not fit 16), one FMA a block for the eight rows. */
void tfm_cpu_qgemv_q8x8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const __m256i ones = _mm256_set1_epi16(1);
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		__m256 acc = _mm256_setzero_ps();
		for (int64_t i = 0; i < nb; i++, g += 272) {
			_mm_prefetch((const char *)g + 1024, _MM_HINT_T0);
			_mm_prefetch((const char *)g + 1088, _MM_HINT_T0);
			_mm_prefetch((const char *)g + 1152, _MM_HINT_T0);
			_mm_prefetch((const char *)g + 1216, _MM_HINT_T0);
			int32_t xs[8];
			memcpy(xs, x[i].qs, 32);
			__m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int c = 0; c < 8; c++) {
				__m256i v = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c));
				__m256i xb = _mm256_set1_epi32(xs[c]);
				__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(xb, v));
				s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
			}
			__m256 sc = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g)),
						  _mm256_set1_ps(fh(x[i].d)));
			acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s), acc);
		}
		_mm256_storeu_ps(y + r, acc);
	}
}

/* q5_0 in groups of eight rows (qx8.c): as q4_0, with each weight's fifth
 * bit spread from its row's qh (one 32-bit lane a row) into bit 4 of its
 * byte: a byte shuffle copies the qh byte that holds the chunk's four bits
 * into the lane's four bytes, and a compare against each byte's own bit
 * makes 0x10 or 0.  The 16-bit partial sums of two chunks (4 x 2 x 31 x
 * 127) stay under 2^15, so two madds a block. */
void tfm_cpu_qgemv_q5x8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
	const __m256i sixteen = _mm256_set1_epi8(16);
	/* chunk c's bits: qh byte c / 2 (weights 4c..4c+3) and 2 + c / 2 (16 on),
	 * bits 4c % 8 + e for byte e */
	const int32_t m1 = 0x01010101;
	__m256i shlo[4], shhi[4], bit[4];
	for (int c = 0; c < 4; c++) {
		int32_t a = c / 2 * m1, b = (2 + c / 2) * m1;
		shlo[c] = _mm256_setr_epi32(a, a + 4 * m1, a + 8 * m1, a + 12 * m1, a, a + 4 * m1, a + 8 * m1,
					    a + 12 * m1);
		shhi[c] = _mm256_setr_epi32(b, b + 4 * m1, b + 8 * m1, b + 12 * m1, b, b + 4 * m1, b + 8 * m1,
					    b + 12 * m1);
		bit[c] = _mm256_set1_epi32(c % 2 ? (int32_t)0x80402010u : 0x08040201);
	}
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		__m256 acc = _mm256_setzero_ps();
		for (int64_t i = 0; i < nb; i++, g += 176) {
			_mm_prefetch((const char *)g + 1024, _MM_HINT_T0);
			_mm_prefetch((const char *)g + 1088, _MM_HINT_T0);
			_mm_prefetch((const char *)g + 1152, _MM_HINT_T0);
			const __m256i b = _mm256_loadu_si256((const __m256i *)x[i].qs);
			/* 16 sum(x) in every lane */
			__m256i sx = _mm256_madd_epi16(_mm256_maddubs_epi16(sixteen, b), ones);
			sx = _mm256_add_epi32(sx, _mm256_permute2x128_si256(sx, sx, 1));
			sx = _mm256_add_epi32(sx, _mm256_shuffle_epi32(sx, 0x4E));
			sx = _mm256_add_epi32(sx, _mm256_shuffle_epi32(sx, 0xB1));
			const __m256i qh = _mm256_loadu_si256((const __m256i *)(g + 16));
			int32_t xs[8];
			memcpy(xs, x[i].qs, 32);
			__m256i s16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++) {
				__m256i v = _mm256_loadu_si256((const __m256i *)(g + 48 + 32 * c));
				__m256i hl = _mm256_and_si256(_mm256_shuffle_epi8(qh, shlo[c]), bit[c]);
				__m256i hh = _mm256_and_si256(_mm256_shuffle_epi8(qh, shhi[c]), bit[c]);
				hl = _mm256_and_si256(_mm256_cmpeq_epi8(hl, bit[c]), sixteen);
				hh = _mm256_and_si256(_mm256_cmpeq_epi8(hh, bit[c]), sixteen);
				__m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4), hl);
				__m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), hh);
				s16[c / 2] = _mm256_add_epi16(s16[c / 2],
							      _mm256_maddubs_epi16(lo, _mm256_set1_epi32(xs[c])));
				s16[c / 2] = _mm256_add_epi16(s16[c / 2],
							      _mm256_maddubs_epi16(hi, _mm256_set1_epi32(xs[c + 4])));
			}
			__m256i s = _mm256_add_epi32(_mm256_madd_epi16(s16[0], ones), _mm256_madd_epi16(s16[1], ones));
			s = _mm256_sub_epi32(s, sx);
			__m256 sc = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g)),
						  _mm256_set1_ps(fh(x[i].d)));
			acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s), acc);
		}
		_mm256_storeu_ps(y + r, acc);
	}
}
