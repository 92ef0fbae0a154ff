/* dot-avx2.c: AVX2 dot products of quantized weight rows with q8_0, q8_1
 * and q8_K activation rows.  Integer sums are exact (as in dot-ref.c); only
 * the order of the f32 accumulation differs from the reference. */
#include "quant/quant-impl.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <string.h>

#include "tfm.h"

float tfm_vec_dot_q8_0_q8_0_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q8_0 *x = vx, *y = vy;
	__m256 acc = _mm256_setzero_ps();
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		__m256i a = _mm256_loadu_si256((const __m256i *)x[i].qs);
		__m256i b = _mm256_loadu_si256((const __m256i *)y[i].qs);
		acc = _mm256_fmadd_ps(_mm256_set1_ps(fh(x[i].d) * fh(y[i].d)),
				      _mm256_cvtepi32_ps(dot_i8(a, b)), acc);
	}
	return hsum_ps(acc);
}

float tfm_vec_dot_q4_0_q8_0_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	__m256 acc = _mm256_setzero_ps();
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		__m256i a = _mm256_sub_epi8(nibbles32(x[i].qs), _mm256_set1_epi8(8));
		__m256i b = _mm256_loadu_si256((const __m256i *)y[i].qs);
		acc = _mm256_fmadd_ps(_mm256_set1_ps(fh(x[i].d) * fh(y[i].d)),
				      _mm256_cvtepi32_ps(dot_i8(a, b)), acc);
	}
	return hsum_ps(acc);
}

float tfm_vec_dot_q4_1_q8_1_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_1 *x = vx;
	const struct tfm_block_q8_1 *y = vy;
	__m256 acc = _mm256_setzero_ps();
	float summ = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		__m256i a = nibbles32(x[i].qs);
		__m256i b = _mm256_loadu_si256((const __m256i *)y[i].qs);
		acc = _mm256_fmadd_ps(_mm256_set1_ps(fh(x[i].d) * fh(y[i].d)),
				      _mm256_cvtepi32_ps(dot_u8(a, b)), acc);
		summ += fh(x[i].m) * fh(y[i].s);
	}
	return hsum_ps(acc) + summ;
}

float tfm_vec_dot_q5_0_q8_0_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	__m256 acc = _mm256_setzero_ps();
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		/* q - 16 as int8: the nibble where the fifth bit is set, the
		 * nibble | 0xF0 (= nibble - 16) where it is not */
		__m256i hi = _mm256_andnot_si256(bits32(x[i].qh), _mm256_set1_epi8((char)0xF0));
		__m256i a = _mm256_or_si256(nibbles32(x[i].qs), hi);
		__m256i b = _mm256_loadu_si256((const __m256i *)y[i].qs);
		acc = _mm256_fmadd_ps(_mm256_set1_ps(fh(x[i].d) * fh(y[i].d)),
				      _mm256_cvtepi32_ps(dot_i8(a, b)), acc);
	}
	return hsum_ps(acc);
}

float tfm_vec_dot_q5_1_q8_1_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_1 *x = vx;
	const struct tfm_block_q8_1 *y = vy;
	__m256 acc = _mm256_setzero_ps();
	float summ = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		__m256i hi = _mm256_and_si256(bits32(x[i].qh), _mm256_set1_epi8(0x10));
		__m256i a = _mm256_or_si256(nibbles32(x[i].qs), hi);
		__m256i b = _mm256_loadu_si256((const __m256i *)y[i].qs);
		acc = _mm256_fmadd_ps(_mm256_set1_ps(fh(x[i].d) * fh(y[i].d)),
				      _mm256_cvtepi32_ps(dot_u8(a, b)), acc);
		summ += fh(x[i].m) * fh(y[i].s);
	}
	return hsum_ps(acc) + summ;
}

/* The min term of q4_K / q5_K: sum over sub-blocks of m_j times the
 * activation sum of that sub-block (two bsums each). */
static inline int k4_mins(const uint8_t *scales, const int16_t *bsums, int16_t *sc16)
{
	int summ = 0;
	for (int j = 0; j < 8; j++) {
		uint8_t sc, m;
		tfm_k4_scale_min(j, scales, &sc, &m);
		sc16[j] = sc;
		summ += m * (bsums[2 * j] + bsums[2 * j + 1]);
	}
	return summ;
}

float tfm_vec_dot_q4_K_q8_K_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	__m256 acc = _mm256_setzero_ps();
	float summf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		int16_t sc[8];
		int summ = k4_mins(x[i].scales, y[i].bsums, sc);
		const uint8_t *q4 = x[i].qs;
		const int8_t *q8 = y[i].qs;
		__m256i sumi = _mm256_setzero_si256();
		for (int j = 0; j < 4; j++, q4 += 32, q8 += 64) {
			__m256i q = _mm256_loadu_si256((const __m256i *)q4);
			__m256i lo = _mm256_and_si256(q, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
			__m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8));
			__m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32)));
			sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * j])));
			sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * j + 1])));
		}
		const float d = fh(x[i].d) * y[i].d;
		acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
		summf += fh(x[i].dmin) * y[i].d * summ;
	}
	return hsum_ps(acc) - summf;
}

float tfm_vec_dot_q5_K_q8_K_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
	__m256 acc = _mm256_setzero_ps();
	float summf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		int16_t sc[8];
		int summ = k4_mins(x[i].scales, y[i].bsums, sc);
		const uint8_t *ql = x[i].qs;
		const int8_t *q8 = y[i].qs;
		const __m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh);
		__m256i sumi = _mm256_setzero_si256();
		for (int j = 0; j < 4; j++, ql += 32, q8 += 64) {
			__m256i q = _mm256_loadu_si256((const __m256i *)ql);
			/* bit 2j of qh[l] is the fifth bit of value 64j+l, bit
			 * 2j+1 that of value 64j+32+l (16-bit shifts keep each
			 * byte's own bits in bit 0 after the mask) */
			__m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one);
			__m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one);
			__m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), _mm256_slli_epi16(h0, 4));
			__m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
						     _mm256_slli_epi16(h1, 4));
			__m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8));
			__m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32)));
			sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * j])));
			sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * j + 1])));
		}
		const float d = fh(x[i].d) * y[i].d;
		acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
		summf += fh(x[i].dmin) * y[i].d * summ;
	}
	return hsum_ps(acc) - summf;
}

float tfm_vec_dot_q6_K_q8_K_avx2(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q6_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
	const __m256i m32 = _mm256_set1_epi8(32);
	__m256 acc = _mm256_setzero_ps();
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *sc = x[i].scales, *q8 = y[i].qs;
		__m256i sumi = _mm256_setzero_si256();
		for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, q8 += 128) {
			__m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
			__m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
			__m256i hb = _mm256_loadu_si256((const __m256i *)qh);
			__m256i q[4];
			q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
					       _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
			q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
					       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
			q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
					       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
			q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
					       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
			for (int k = 0; k < 4; k++) {
				__m256i a = _mm256_loadu_si256((const __m256i *)(q8 + 32 * k));
				/* (q - 32)*a as q*a - 32*a, both in int16 range */
				__m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], a),
							     _mm256_maddubs_epi16(m32, a));
				/* elements 0-15 use scale 2k, 16-31 scale 2k+1 */
				__m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
				sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
			}
		}
		acc = _mm256_fmadd_ps(_mm256_set1_ps(fh(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
	}
	return hsum_ps(acc);
}
