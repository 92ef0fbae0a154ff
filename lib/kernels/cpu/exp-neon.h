/* exp-neon.h: the vector exp of the NEON kernels (softmax, activations),
 * for files compiled for aarch64. */
#ifndef TFM_CPU_EXP_NEON_H
#define TFM_CPU_EXP_NEON_H

#include <arm_neon.h>

/* exp(x) for x <= 88: Cephes' expf, as exp-avx2.h's (the same operations
 * lane by lane, multiply-adds fused as there) */
static inline float32x4_t exp4(float32x4_t x)
{
	x = vmaxq_f32(x, vdupq_n_f32(-87.3f));
	x = vminq_f32(x, vdupq_n_f32(88.3f));
	float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
	float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
	r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
	float32x4_t p = vdupq_n_f32(1.9875691500E-4f);
	p = vfmaq_f32(vdupq_n_f32(1.3981999507E-3f), p, r);
	p = vfmaq_f32(vdupq_n_f32(8.3334519073E-3f), p, r);
	p = vfmaq_f32(vdupq_n_f32(4.1665795894E-2f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.6666665459E-1f), p, r);
	p = vfmaq_f32(vdupq_n_f32(5.0000001201E-1f), p, r);
	p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
	/* 2^n: n in [-126, 127] after the clamps */
	int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
	return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

#endif
