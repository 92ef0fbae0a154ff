/* simd-neon-inl.h: small NEON helpers shared by lib/quant's dots
 * (dot-neon.h) and the cpu backend's aarch64 kernels (qgemv-neon.h,
 * igemm-neon.c), the twin of simd-x86-inl.h. */
#ifndef TFM_QUANT_SIMD_NEON_INL_H
#define TFM_QUANT_SIMD_NEON_INL_H

#include <arm_neon.h>
#include <stdint.h>

/* 16 lanes of 0x10 where bit l of the little-endian qh[4] (l = 16 hi ..
 * 16 hi + 15) is set, 0 elsewhere: q5_0's, q5_1's fifth bits */
static inline uint8x16_t fifth16(const uint8_t *qh, int hi)
{
	static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
	uint8x16_t v = vcombine_u8(vdup_n_u8(qh[2 * hi]), vdup_n_u8(qh[2 * hi + 1]));
	return vandq_u8(vtstq_u8(v, vld1q_u8(bit)), vdupq_n_u8(0x10));
}

#endif
