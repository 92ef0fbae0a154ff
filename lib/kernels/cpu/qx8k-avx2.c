/* qx8k-avx2.c: decode of q4_K, q5_K and q6_K weights regrouped by eight
 * rows (the layouts and the scalar definitions: qx8k.c) with AVX2, the
 * scalar kernels' bits.  Each 32-byte chunk gives eight weights of each
 * row in the row's 32-bit lane (four in the low nibbles, four in the high
 * ones) against two broadcast groups of four activations; maddubs' 16-bit
 * pair sums of a sub-block are added in 16 bits while they fit (q4_K: a
 * unit's 8 products, each pair at most 2 x 15 x 128, 30720; q5_K and q6_K:
 * 4 and 2, at most 31744 and 32256), then one madd by the rows' scales,
 * spread from eight bytes by a byte shuffle, widens them to 32 bits.  The
 * eight rows' sums end in eight lanes: no horizontal add, and one scale
 * conversion and one FMA a super-block serve all eight rows. */
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* four bytes of p, broadcast */
static inline __m256i bcast4(const int8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/* the eight bytes at p (one per row) as int16 pairs (v, v) in the rows'
 * lanes: unsigned, or (sgn) signed */
static inline __m256i row_pairs(const uint8_t *p, int sgn)
{
	int64_t v;
	memcpy(&v, p, 8);
	const __m256i b = _mm256_set1_epi64x(v);
	if (!sgn)
		return _mm256_shuffle_epi8(b, _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1,
							       3, -1, 3, -1, 4, -1, 4, -1, 5, -1, 5, -1,
							       6, -1, 6, -1, 7, -1, 7, -1));
	/* the byte in the high half of each int16, then an arithmetic shift */
	return _mm256_srai_epi16(_mm256_shuffle_epi8(b, _mm256_setr_epi8(-1, 0, -1, 0, -1, 1, -1, 1,
									 -1, 2, -1, 2, -1, 3, -1, 3,
									 -1, 4, -1, 4, -1, 5, -1, 5,
									 -1, 6, -1, 6, -1, 7, -1, 7)), 8);
}

/* M_r = sum_u m[r][u] bs[u] for the eight rows, m[r][u] at mn + 8 r and bs
 * the eight int16 unit sums in both halves */
static inline __m256i mins8(const uint8_t *mn, __m256i bs)
{
	__m256i m01 = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)mn)), bs);
	__m256i m23 = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mn + 16))), bs);
	__m256i m45 = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mn + 32))), bs);
	__m256i m67 = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(mn + 48))), bs);
	/* rows 0, 2, 4, 6 in the low half, 1, 3, 5, 7 in the high one */
	__m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(m01, m23), _mm256_hadd_epi32(m45, m67));
	return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* q4_K (q5 = 0) and q5_K (q5 = 1): inlined by force, q5 a constant */
__attribute__((always_inline))
static inline void k45x8(float *y, const void *g8, const void *xq, int64_t n, int64_t rows, int q5)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const size_t gb = q5 ? 1440 : 1184, ub = q5 ? 160 : 128;
	const __m256i m4 = _mm256_set1_epi8(15), m10 = _mm256_set1_epi8(0x10);
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		__m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
		for (int64_t i = 0; i < nb; i++, g += gb) {
			for (size_t o = 0; o < gb; o += 64)
				_mm_prefetch((const char *)g + 2 * gb + o, _MM_HINT_T0);
			const int8_t *xs = x[i].qs;
			__m256i S = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int u = 0; u < 8; u++) {
				const uint8_t *q = g + 160 + ub * u;
				const __m256i scp = row_pairs(g + 32 + 8 * u, 0);
				__m256i h = q5 ? _mm256_loadu_si256((const __m256i *)(q + 128)) : _mm256_setzero_si256();
				__m256i s16 = _mm256_setzero_si256();
#pragma GCC unroll 4
				for (int c = 0; c < 4; c++) {
					__m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
					__m256i lo = _mm256_and_si256(v, m4);
					__m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
					if (q5) { /* bit c to 4, bit 4 + c to 4 */
						lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(h, 4 - c), m10));
						hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(h, c), m10));
					}
					s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo, bcast4(xs + 32 * u + 4 * c)));
					s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi, bcast4(xs + 32 * u + 16 + 4 * c)));
					if (q5 && c == 1) { /* 4 products: at most 31744 */
						S = _mm256_add_epi32(S, _mm256_madd_epi16(s16, scp));
						s16 = _mm256_setzero_si256();
					}
				}
				S = _mm256_add_epi32(S, _mm256_madd_epi16(s16, scp));
			}
			const __m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)x[i].bsums),
							  _mm_loadu_si128((const __m128i *)(x[i].bsums + 8)));
			const __m256i M = mins8(g + 96, _mm256_broadcastsi128_si256(bs));
			const __m256 dx = _mm256_set1_ps(x[i].d);
			acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g)), dx),
					      _mm256_cvtepi32_ps(S), acc);
			accm = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + 16))), dx),
					       _mm256_cvtepi32_ps(M), accm);
		}
		_mm256_storeu_ps(y + r, _mm256_sub_ps(acc, accm));
	}
}

void tfm_cpu_qgemv_q4kx8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	k45x8(y, g8, xq, n, rows, 0);
}

void tfm_cpu_qgemv_q5kx8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	k45x8(y, g8, xq, n, rows, 1);
}

/* q6_K: the high two bits from A (B) by a shift that brings bits 2c, 2c+1
 * of each byte to 4, 5; sc[s][r] signed; the -32 offset as
 * 16 sum_s madd((sc, sc), (bsums[s], bsums[s])) = 32 sum_s sc bsums[s] */
void tfm_cpu_qgemv_q6kx8_avx2(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		__m256 acc = _mm256_setzero_ps();
		for (int64_t i = 0; i < nb; i++, g += 1680) {
			for (size_t o = 0; o < 1680; o += 64)
				_mm_prefetch((const char *)g + 2 * 1680 + o, _MM_HINT_T0);
			const int8_t *xs = x[i].qs;
			__m256i S = _mm256_setzero_si256(), T = _mm256_setzero_si256();
#pragma GCC unroll 8
			for (int u = 0; u < 8; u++) {
				const uint8_t *q = g + 144 + 192 * u;
				const __m256i A = _mm256_loadu_si256((const __m256i *)(q + 128));
				const __m256i B = _mm256_loadu_si256((const __m256i *)(q + 160));
				const __m256i sl = row_pairs(g + 16 + 16 * u, 1), sh = row_pairs(g + 24 + 16 * u, 1);
				T = _mm256_add_epi32(T, _mm256_madd_epi16(sl, _mm256_set1_epi16(x[i].bsums[2 * u])));
				T = _mm256_add_epi32(T, _mm256_madd_epi16(sh, _mm256_set1_epi16(x[i].bsums[2 * u + 1])));
#pragma GCC unroll 2
				for (int c2 = 0; c2 < 4; c2 += 2) {
					__m256i plo = _mm256_setzero_si256(), phi = _mm256_setzero_si256();
#pragma GCC unroll 2
					for (int c = c2; c < c2 + 2; c++) {
						__m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * c));
						__m256i ha = c == 3 ? _mm256_srli_epi16(A, 2) : _mm256_slli_epi16(A, 4 - 2 * c);
						__m256i hb = c == 3 ? _mm256_srli_epi16(B, 2) : _mm256_slli_epi16(B, 4 - 2 * c);
						__m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_and_si256(ha, m30));
						__m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
									     _mm256_and_si256(hb, m30));
						plo = _mm256_add_epi16(plo, _mm256_maddubs_epi16(lo, bcast4(xs + 32 * u + 4 * c)));
						phi = _mm256_add_epi16(phi, _mm256_maddubs_epi16(hi, bcast4(xs + 32 * u + 16 + 4 * c)));
					}
					S = _mm256_add_epi32(S, _mm256_madd_epi16(plo, sl));
					S = _mm256_add_epi32(S, _mm256_madd_epi16(phi, sh));
				}
			}
			S = _mm256_sub_epi32(S, _mm256_slli_epi32(T, 4));
			acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g)),
							    _mm256_set1_ps(x[i].d)),
					      _mm256_cvtepi32_ps(S), acc);
		}
		_mm256_storeu_ps(y + r, acc);
	}
}
