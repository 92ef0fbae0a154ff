/* qx8k-neon.h: decode of q4_K, q5_K and q6_K weights regrouped by eight
 * rows (qx8k.c has the layouts and the scalar definitions) with SDOT,
 * included after qx8-neon.h (x4, and dot16 = vdotq_s32) by
 * qgemv-dotprod.c; the scalar kernels' bits.  As qx8-neon.h, each 16-byte
 * half of a 32-byte chunk is four rows' four bytes, so dot16 against the
 * four activations they meet sums row 4h + l's products in lane l of half
 * h, and the eight rows' sums stay in two int32x4: no horizontal add.  A
 * sub-block's products are summed in 32 bits (SDOT has no 16-bit limit to
 * watch, unlike qx8k-avx2.c's maddubs), then multiplied by the rows'
 * scales lane by lane: S_r and M_r exact, the same integers as the scalar
 * kernels (|S_r| <= 8 x 63 x 32 x 31 x 128 for q5_K, q6_K's at most
 * 16 x 128 x 16 x 32 x 128; far inside int32), then one FMA a super-block
 * per row of fl(d dx) S, as the scalar kernels.  Written and checked under
 * qemu-user only: the speed on an arm64 processor is unmeasured. */
#ifndef TFM_CPU_QX8K_NEON_H
#define TFM_CPU_QX8K_NEON_H

/* acc[h] (rows 4h..4h+3) += fl(d_row dx) S[h], d the eight f16 at d8 */
static inline void kx8_fma(float32x4_t acc[2], const uint8_t *d8, float dx, const int32x4_t s[2])
{
	float32x4_t d0 = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(d8)));
	float32x4_t d1 = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(d8 + 8)));
	acc[0] = vfmaq_f32(acc[0], vmulq_n_f32(d0, dx), vcvtq_f32_s32(s[0]));
	acc[1] = vfmaq_f32(acc[1], vmulq_n_f32(d1, dx), vcvtq_f32_s32(s[1]));
}

/* the eight bytes at p (one per row) as int32 in the rows' lanes: half h
 * in v[h]; unsigned, or (sgn) signed */
static inline void row_scales(int32x4_t v[2], const uint8_t *p, int sgn)
{
	int16x8_t s = sgn ? vmovl_s8(vld1_s8((const int8_t *)p))
			  : vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p)));
	v[0] = vmovl_s16(vget_low_s16(s));
	v[1] = vmovl_high_s16(s);
}

/* M_r = sum_u m[r][u] (bsums[2u] + bsums[2u+1]), m[r][u] at mn + 8 r (the
 * pair sums fit int16: |bsums| <= 16 x 128) */
static inline void mins8(int32x4_t M[2], const uint8_t *mn, const int16_t bsums[16])
{
	const int16x8_t bs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
	for (int h = 0; h < 2; h++) {
		int32x4_t t[4];
		for (int l = 0; l < 4; l++) {
			int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn + 8 * (4 * h + l))));
			t[l] = vmlal_high_s16(vmull_s16(vget_low_s16(m), vget_low_s16(bs)), m, bs);
		}
		M[h] = hsum4x4(t);
	}
}

/* q4_K (q5 = 0) and q5_K (q5 = 1): a unit's low and high nibbles share
 * its scale, so both go into one sum per lane.  q5_K's fifth bits for
 * chunk c are bits c and 4 + c of the unit's bit bytes (at the same
 * offsets in their 32 as the chunk's bytes): shifted right by one a
 * chunk, bit 0 goes to 4 for the low nibbles, bit 4 is the high ones'.
 * Inlined by force: q5 is then a constant. */
__attribute__((always_inline))
static inline void k45x8(float *y, const void *g8, const void *xq, int64_t n, int64_t rows, int q5)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const size_t gb = q5 ? 1440 : 1184, ub = q5 ? 160 : 128;
	const uint8x16_t m4 = vdupq_n_u8(15), b16 = vdupq_n_u8(0x10);
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		float32x4_t acc[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
		float32x4_t accm[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
		for (int64_t i = 0; i < nb; i++, g += gb) {
			const int8_t *xs = x[i].qs;
			int32x4_t S[2] = {vdupq_n_s32(0), vdupq_n_s32(0)}, M[2], sc[2];
			for (int u = 0; u < 8; u++) {
				const uint8_t *q = g + 160 + ub * u; /* 4 chunks of 32, q5_K: + 32 bit bytes */
				int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
				uint8x16_t hb[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
				if (q5)
					hb[0] = vld1q_u8(q + 128), hb[1] = vld1q_u8(q + 144);
				for (int c = 0; c < 4; c++) {
					const int8x16_t xl = x4(xs + 32 * u + 4 * c), xh = x4(xs + 32 * u + 16 + 4 * c);
					for (int h = 0; h < 2; h++) {
						uint8x16_t v = vld1q_u8(q + 32 * c + 16 * h);
						uint8x16_t lo = vandq_u8(v, m4), hi = vshrq_n_u8(v, 4);
						if (q5) {
							lo = vorrq_u8(lo, vandq_u8(vshlq_n_u8(hb[h], 4), b16));
							hi = vorrq_u8(hi, vandq_u8(hb[h], b16));
							hb[h] = vshrq_n_u8(hb[h], 1);
						}
						s[h] = dot16(s[h], vreinterpretq_s8_u8(lo), xl);
						s[h] = dot16(s[h], vreinterpretq_s8_u8(hi), xh);
					}
				}
				row_scales(sc, g + 32 + 8 * u, 0);
				S[0] = vmlaq_s32(S[0], s[0], sc[0]);
				S[1] = vmlaq_s32(S[1], s[1], sc[1]);
			}
			mins8(M, g + 96, x[i].bsums);
			kx8_fma(acc, g, x[i].d, S);
			kx8_fma(accm, g + 16, x[i].d, M);
		}
		vst1q_f32(y + r, vsubq_f32(acc[0], accm[0]));
		vst1q_f32(y + r + 4, vsubq_f32(acc[1], accm[1]));
	}
}

void QFN(q4kx8)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	k45x8(y, g8, xq, n, rows, 0);
}

void QFN(q5kx8)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	k45x8(y, g8, xq, n, rows, 1);
}

/* q6_K: a unit's low nibbles are sub-block 2u, its high ones 2u + 1, each
 * with its own sum and signed scale.  The high two bits of chunk c are
 * bits 2c, 2c + 1 of A (low nibbles) and B (high), at the chunk bytes'
 * offsets: shifted right by two a chunk, bits 0, 1 go to 4, 5.  The -32
 * offset as the scalar kernel has it, sc (p - 32 bsums[s]), exact. */
void QFN(q6kx8)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const uint8x16_t m4 = vdupq_n_u8(15), m30 = vdupq_n_u8(0x30);
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		float32x4_t acc[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
		for (int64_t i = 0; i < nb; i++, g += 1680) {
			const int8_t *xs = x[i].qs;
			int32x4_t S[2] = {vdupq_n_s32(0), vdupq_n_s32(0)}, sl[2], sh[2];
			for (int u = 0; u < 8; u++) {
				const uint8_t *q = g + 144 + 192 * u; /* 4 chunks of 32, A (32), B (32) */
				int32x4_t plo[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
				int32x4_t phi[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
				uint8x16_t A[2] = {vld1q_u8(q + 128), vld1q_u8(q + 144)};
				uint8x16_t B[2] = {vld1q_u8(q + 160), vld1q_u8(q + 176)};
				for (int c = 0; c < 4; c++) {
					const int8x16_t xl = x4(xs + 32 * u + 4 * c), xh = x4(xs + 32 * u + 16 + 4 * c);
					for (int h = 0; h < 2; h++) {
						uint8x16_t v = vld1q_u8(q + 32 * c + 16 * h);
						uint8x16_t lo = vorrq_u8(vandq_u8(v, m4), vandq_u8(vshlq_n_u8(A[h], 4), m30));
						uint8x16_t hi = vorrq_u8(vshrq_n_u8(v, 4), vandq_u8(vshlq_n_u8(B[h], 4), m30));
						A[h] = vshrq_n_u8(A[h], 2), B[h] = vshrq_n_u8(B[h], 2);
						plo[h] = dot16(plo[h], vreinterpretq_s8_u8(lo), xl);
						phi[h] = dot16(phi[h], vreinterpretq_s8_u8(hi), xh);
					}
				}
				row_scales(sl, g + 16 + 16 * u, 1), row_scales(sh, g + 24 + 16 * u, 1);
				const int32x4_t ol = vdupq_n_s32(32 * x[i].bsums[2 * u]);
				const int32x4_t oh = vdupq_n_s32(32 * x[i].bsums[2 * u + 1]);
				for (int h = 0; h < 2; h++) {
					S[h] = vmlaq_s32(S[h], vsubq_s32(plo[h], ol), sl[h]);
					S[h] = vmlaq_s32(S[h], vsubq_s32(phi[h], oh), sh[h]);
				}
			}
			kx8_fma(acc, g, x[i].d, S);
		}
		vst1q_f32(y + r, acc[0]);
		vst1q_f32(y + r + 4, acc[1]);
	}
}

#endif
