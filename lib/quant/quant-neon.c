/* quant-neon.c: NEON quantizers of the activation formats (q8_0, q8_1,
 * q8_K), as quant-avx2.c's: q8_K gives the reference's bytes exactly; q8_0
 * and q8_1 round ties to even where the reference rounds them away from
 * zero, and give the AVX2 versions' bytes. */
#include "quant/quant-impl.h"

#include <arm_neon.h>
#include <string.h>

#include "tfm.h"

static inline float absmax32(const float *x)
{
	float32x4_t m = vabsq_f32(vld1q_f32(x));
	for (int k = 4; k < 32; k += 4)
		m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + k)));
	return vmaxvq_f32(m);
}

/* 16 floats times id, rounded to nearest even, narrowed to 16 int8 in
 * order (saturating at -128..127, as AVX2's packs) */
static inline int8x16_t round_pack16(const float *x, float32x4_t id)
{
	int32x4_t i0 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x), id));
	int32x4_t i1 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 4), id));
	int32x4_t i2 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 8), id));
	int32x4_t i3 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 12), id));
	int16x8_t a = vcombine_s16(vqmovn_s32(i0), vqmovn_s32(i1));
	int16x8_t b = vcombine_s16(vqmovn_s32(i2), vqmovn_s32(i3));
	return vcombine_s8(vqmovn_s16(a), vqmovn_s16(b));
}

void tfm_quantize_q8_0_neon(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_0 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		const float d = absmax32(x) / 127.f;
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = tfm_f32_to_f16(d);
		vst1q_s8(y[i].qs, round_pack16(x, vdupq_n_f32(id)));
		vst1q_s8(y[i].qs + 16, round_pack16(x + 16, vdupq_n_f32(id)));
	}
}

void tfm_quantize_q8_1_neon(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_1 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		const float d = absmax32(x) / 127.f;
		const float id = d ? 1.0f / d : 0.0f;
		int8x16_t a = round_pack16(x, vdupq_n_f32(id)), b = round_pack16(x + 16, vdupq_n_f32(id));
		vst1q_s8(y[i].qs, a);
		vst1q_s8(y[i].qs + 16, b);
		y[i].d = tfm_f32_to_f16(d);
		y[i].s = tfm_f32_to_f16((vaddlvq_s8(a) + vaddlvq_s8(b)) * d);
	}
}

void tfm_quantize_q8_K_neon(const float *x, void *vy, int64_t n)
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
		const float32x4_t is = vdupq_n_f32(iscale);
		for (int k = 0; k < TFM_QK_K; k += 16) {
			int8x16_t q = round_pack16(x + k, is);
			vst1q_s8(y[i].qs + k, q);
			y[i].bsums[k / 16] = vaddlvq_s8(q);
		}
		y[i].d = 1 / iscale;
	}
}
