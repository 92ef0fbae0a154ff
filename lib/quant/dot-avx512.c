/* dot-avx512.c: AVX-512 VNNI dot products for the most used weight types
 * (q8_0, q4_0 against q8_0 activations; q4_K, q5_K, q6_K against q8_K).
 * vpdpbusd multiplies unsigned by signed bytes and adds groups of four into
 * int32, so signed weights are offset to unsigned and the offset times the
 * activation sum is taken off.  Integer sums are exact; only the f32
 * accumulation order differs from dot-ref.c.  Called only when the CPU has
 * AVX-512 F/BW/VL/DQ/VNNI/BF16 (quant.c checks). */
#include "quant/quant-impl.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <string.h>

/* low 8 lanes a, high 8 lanes b */
static inline __m512 two_scales(float a, float b)
{
	return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

float tfm_vec_dot_q8_0_q8_0_avx512(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q8_0 *x = vx, *y = vy;
	const int64_t nb = n / TFM_QK;
	const __m512i off = _mm512_set1_epi8((char)0x80);
	__m512 acc = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 1 < nb; i += 2) {
		__m512i a = cat256(_mm256_loadu_si256((const __m256i *)x[i].qs),
				   _mm256_loadu_si256((const __m256i *)x[i + 1].qs));
		__m512i b = cat256(_mm256_loadu_si256((const __m256i *)y[i].qs),
				   _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
		/* (a+128)*b - 128*b */
		__m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(a, off), b);
		p = _mm512_sub_epi32(p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, b));
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p),
				      two_scales(fh(x[i].d) * fh(y[i].d), fh(x[i + 1].d) * fh(y[i + 1].d)), acc);
	}
	float s = _mm512_reduce_add_ps(acc);
	if (i < nb)
		s += tfm_vec_dot_q8_0_q8_0_ref(TFM_QK, &x[i], &y[i]);
	return s;
}

float tfm_vec_dot_q4_0_q8_0_avx512(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	const int64_t nb = n / TFM_QK;
	const __m512i eight = _mm512_set1_epi8(8);
	__m512 acc = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 1 < nb; i += 2) {
		__m512i a = cat256(nibbles32(x[i].qs), nibbles32(x[i + 1].qs));
		__m512i b = cat256(_mm256_loadu_si256((const __m256i *)y[i].qs),
				   _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
		/* (q-8)*b = q*b - 8*b */
		__m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, b);
		p = _mm512_sub_epi32(p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, b));
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p),
				      two_scales(fh(x[i].d) * fh(y[i].d), fh(x[i + 1].d) * fh(y[i + 1].d)), acc);
	}
	float s = _mm512_reduce_add_ps(acc);
	if (i < nb)
		s += tfm_vec_dot_q4_0_q8_0_ref(TFM_QK, &x[i], &y[i]);
	return s;
}

/* scales of sub-blocks 2j (lanes 0-7) and 2j+1 (lanes 8-15) */
static inline __m512i k4_scales(const int32_t *sc, int j)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(sc[2 * j])),
				  _mm256_set1_epi32(sc[2 * j + 1]), 1);
}

static inline int k4_mins(const uint8_t *scales, const int16_t *bsums, int32_t *sc)
{
	int summ = 0;
	for (int j = 0; j < 8; j++) {
		uint8_t s, m;
		tfm_k4_scale_min(j, scales, &s, &m);
		sc[j] = s;
		summ += m * (bsums[2 * j] + bsums[2 * j + 1]);
	}
	return summ;
}

float tfm_vec_dot_q4_K_q8_K_avx512(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	__m512 acc = _mm512_setzero_ps();
	float summf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		int32_t sc[8];
		int summ = k4_mins(x[i].scales, y[i].bsums, sc);
		__m512i sumi = _mm512_setzero_si512();
		for (int j = 0; j < 4; j++) {
			/* 64 values: low nibbles then high nibbles of 32 bytes,
			 * against 64 contiguous activations */
			__m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * j));
			__m512i a = cat256(_mm256_and_si256(q, m4), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
			__m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a,
							_mm512_loadu_si512(y[i].qs + 64 * j));
			sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(p, k4_scales(sc, j)));
		}
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(fh(x[i].d) * y[i].d), acc);
		summf += fh(x[i].dmin) * y[i].d * summ;
	}
	return _mm512_reduce_add_ps(acc) - summf;
}

float tfm_vec_dot_q5_K_q8_K_avx512(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
	__m512 acc = _mm512_setzero_ps();
	float summf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		int32_t sc[8];
		int summ = k4_mins(x[i].scales, y[i].bsums, sc);
		const __m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh);
		__m512i sumi = _mm512_setzero_si512();
		for (int j = 0; j < 4; j++) {
			__m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * j));
			/* fifth bits: bit 2j (low half), 2j+1 (high half) of qh[l] */
			__m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
			__m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
			__m512i a = cat256(_mm256_or_si256(_mm256_and_si256(q, m4), h0),
					   _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h1));
			__m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a,
							_mm512_loadu_si512(y[i].qs + 64 * j));
			sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(p, k4_scales(sc, j)));
		}
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(fh(x[i].d) * y[i].d), acc);
		summf += fh(x[i].dmin) * y[i].d * summ;
	}
	return _mm512_reduce_add_ps(acc) - summf;
}

float tfm_vec_dot_q6_K_q8_K_avx512(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q6_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
	const __m512i m32 = _mm512_set1_epi8(32);
	/* lane l of a dpbusd covers bytes 4l..4l+3: lanes 0-3 use scale 0,
	 * 4-7 scale 1, 8-11 scale 2, 12-15 scale 3 (of 4 consecutive) */
	const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
	__m512 acc = _mm512_setzero_ps();
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		__m512i sumi = _mm512_setzero_si512();
		for (int half = 0; half < 2; half++) {
			const uint8_t *ql = x[i].ql + 64 * half, *qh = x[i].qh + 32 * half;
			const int8_t *sc = x[i].scales + 8 * half, *q8 = y[i].qs + 128 * half;
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
			for (int k = 0; k < 2; k++) {
				__m512i a = k ? cat256(q2, q3) : cat256(q0, q1);
				__m512i b = _mm512_loadu_si512(q8 + 64 * k);
				/* (q-32)*b = q*b - 32*b */
				__m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), a, b),
							     _mm512_dpbusd_epi32(_mm512_setzero_si512(), m32, b));
				int32_t s4;
				memcpy(&s4, sc + 4 * k, 4);
				__m512i s = _mm512_cvtepi8_epi32(_mm_shuffle_epi8(_mm_cvtsi32_si128(s4), spread));
				sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(p, s));
			}
		}
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(fh(x[i].d) * y[i].d), acc);
	}
	return _mm512_reduce_add_ps(acc);
}
