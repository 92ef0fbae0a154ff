/* qgemv-dotprod.c: the four-row decode products of quantized weight rows
 * (qgemv-neon.h, qgemv-k-neon.h) with SDOT (ARMv8.2-A's dot product
 * instructions), as lib/quant's dot-dotprod.c: each row bit-identical to
 * its tfm_vec_dot_*_dotprod; and those of rows regrouped by eight
 * (qx8-neon.h, qx8k-neon.h), the scalar definitions' bits.  Called only
 * where lib/quant runs "dotprod" (cpu.c's qgemv_for, qx8_for). */
#include <arm_neon.h>

#define ISA dotprod

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
	return vdotq_s32(acc, a, b);
}

#include "kernels/cpu/qgemv-neon.h"
#include "kernels/cpu/qgemv-k-neon.h"
#include "kernels/cpu/qx8-neon.h"
#include "kernels/cpu/qx8k-neon.h"
