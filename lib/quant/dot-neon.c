/* dot-neon.c: the NEON dot products of quantized rows (dot-neon.h) with
 * 8-bit products widened to 16 bits (SMULL) and added pairwise into 32
 * (SADALP): exact for any int8 operands. */
#include <arm_neon.h>

#define ISA neon

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
	return vpadalq_s16(acc, vmull_high_s8(a, b));
}

#include "quant/dot-neon.h"
