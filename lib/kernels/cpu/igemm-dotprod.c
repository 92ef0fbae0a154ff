/* igemm-dotprod.c: igemm-neon.h's 8-bit GEMM kernel with SDOT by lane
 * (ARMv8.2-A's dot product instructions, -march=armv8.2-a+dotprod): one
 * instruction adds, for each of 4 rows, the 4 products of its 4 elements
 * with one token's.  x and the weights are packed by igemm-neon.c; cpu.c
 * calls this only where its instruction set is "dotprod" (HWCAP_ASIMDDP). */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/igemm-neon.h"
#include "quant/quant.h"

#include <arm_neon.h>

#define ISA dotprod
#define DOT4(acc, w, x, t) ((acc) = vdotq_laneq_s32((acc), (w), vld1q_s8(x), (t)))

#include "kernels/cpu/igemm-neon.h"
