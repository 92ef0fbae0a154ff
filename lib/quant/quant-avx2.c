/* quant-avx2.c: AVX2 quantizers of the activation formats (q8_0, q8_1,
 * q8_K) and dequantizers of q4_0 and q8_0.  Compiled with -mavx2 -mfma
 * -mf16c; called only when the CPU has them (quant.c checks).  q8_K and the
 * dequantizers give the reference's bytes exactly; q8_0 and q8_1 round ties
 * to even where the reference rounds them away from zero. */
#include "quant/quant-impl.h"

#include <immintrin.h>
#include <string.h>

#include "tfm.h"

static inline float hmax8(__m256 v)
{
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_movehdup_ps(m));
	return _mm_cvtss_f32(m);
}

/* 32 floats times id, rounded to nearest even, packed to 32 int8 in order
 * (saturating at +-127..128). */
static inline __m256i round_pack32(const float *x, __m256 id)
{
	__m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), id),
							 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	__m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id),
							 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	__m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id),
							 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	__m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id),
							 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	/* packs work within 128-bit lanes: groups of 4 come out as
	 * 0 2 4 6 1 3 5 7 of the dwords we want in order */
	__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
	return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline float absmax32(const float *x)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
	for (int k = 8; k < 32; k += 8)
		m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
	return hmax8(m);
}

void tfm_quantize_q8_0_avx2(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_0 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		const float d = absmax32(x) / 127.f;
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = tfm_f32_to_f16(d);
		_mm256_storeu_si256((__m256i *)y[i].qs, round_pack32(x, _mm256_set1_ps(id)));
	}
}

static inline int hsum_i8_32(__m256i v)
{
	__m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), v); /* u8 1 * s8 */
	__m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

void tfm_quantize_q8_1_avx2(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_1 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		const float d = absmax32(x) / 127.f;
		const float id = d ? 1.0f / d : 0.0f;
		__m256i q = round_pack32(x, _mm256_set1_ps(id));
		_mm256_storeu_si256((__m256i *)y[i].qs, q);
		y[i].d = tfm_f32_to_f16(d);
		y[i].s = tfm_f32_to_f16(hsum_i8_32(q) * d);
	}
}

void tfm_quantize_q8_K_avx2(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_K *y = vy;
	for (int64_t i = 0; i < n / TFM_QK_K; i++, x += TFM_QK_K) {
		/* the signed value of largest magnitude (the first one, on ties) */
		float amax = 0;
		for (int k = 0; k < TFM_QK_K; k += 32) {
			float m = absmax32(x + k);
			if (m > amax)
				amax = m;
		}
		if (!amax) {
			memset(&y[i], 0, sizeof y[i]);
			continue;
		}
		float max = 0;
		for (int j = 0; j < TFM_QK_K; j++)
			if (x[j] == amax || x[j] == -amax) {
				max = x[j];
				break;
			}
		const float iscale = -127.f / max;
		const __m256 is = _mm256_set1_ps(iscale);
		for (int k = 0; k < TFM_QK_K; k += 32) {
			__m256i q = round_pack32(x + k, is);
			_mm256_storeu_si256((__m256i *)(y[i].qs + k), q);
			/* sums of 16: widen each half to i16 and add pairwise */
			__m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
			__m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1)); /* 8 sums of 4 */
			int32_t t[8];
			_mm256_storeu_si256((__m256i *)t, s32);
			y[i].bsums[k / 16] = (int16_t)(t[0] + t[1] + t[2] + t[3]);
			y[i].bsums[k / 16 + 1] = (int16_t)(t[4] + t[5] + t[6] + t[7]);
		}
		y[i].d = 1 / iscale;
	}
}

void tfm_dequantize_q4_0_avx2(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q4_0 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const __m256 d = _mm256_set1_ps(_cvtsh_ss(x[i].d));
		const __m128i q = _mm_loadu_si128((const __m128i *)x[i].qs);
		const __m128i m = _mm_set1_epi8(0x0F);
		const __m128i lo = _mm_and_si128(q, m), hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
		const __m256i eight = _mm256_set1_epi32(8);
		for (int k = 0; k < 2; k++) {
			__m128i v = k ? hi : lo;
			__m256i a = _mm256_sub_epi32(_mm256_cvtepu8_epi32(v), eight);
			__m256i b = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), eight);
			_mm256_storeu_ps(y + 16 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(a), d));
			_mm256_storeu_ps(y + 16 * k + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(b), d));
		}
	}
}

void tfm_dequantize_q8_0_avx2(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q8_0 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const __m256 d = _mm256_set1_ps(_cvtsh_ss(x[i].d));
		for (int k = 0; k < TFM_QK; k += 8) {
			__m128i v = _mm_loadl_epi64((const __m128i *)(x[i].qs + k));
			_mm256_storeu_ps(y + k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), d));
		}
	}
}
