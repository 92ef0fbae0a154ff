/* dot-dotprod.c: the NEON dot products of quantized rows (dot-neon.h) with
 * SDOT (ARMv8.2-A's dot product instructions, -march=armv8.2-a+dotprod):
 * four 8-bit products summed into each 32-bit lane.  Called only where
 * HWCAP_ASIMDDP says the processor has them (quant.c). */
#include <arm_neon.h>

#define ISA dotprod

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
	return vdotq_s32(acc, a, b);
}

#include "quant/dot-neon.h"
