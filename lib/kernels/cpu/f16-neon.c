/* f16-neon.c: NEON helpers of the CPU backend: f16 rows to f32 (KV cache
 * tiles). */
#include "kernels/cpu/cpu-impl.h"

#include <arm_neon.h>

/* y[i] = x[i] (f16 bits) as f32, exact (FCVTL) */
void tfm_cpu_f16_row_neon(float *y, const uint16_t *x, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(x + i));
		vst1q_f32(y + i, vcvt_f32_f16(vget_low_f16(h)));
		vst1q_f32(y + i + 4, vcvt_high_f32_f16(h));
	}
	for (; i < n; i++)
		y[i] = tfm_f16_to_f32(x[i]);
}
