/* qgemv-neon.c: the four-row decode products of quantized weight rows
 * (qgemv-neon.h, qgemv-k-neon.h) with 8-bit products widened to 16 bits
 * (SMULL) and added pairwise into 32 (SADALP), as lib/quant's dot-neon.c:
 * each row bit-identical to its tfm_vec_dot_*_neon. */
#include <arm_neon.h>

#define ISA neon

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
	return vpadalq_s16(acc, vmull_high_s8(a, b));
}

#include "kernels/cpu/qgemv-neon.h"
#include "kernels/cpu/qgemv-k-neon.h"
