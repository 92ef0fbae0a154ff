/* qx8-neon.h: the decode products of q4_0, q5_0 and q8_0 rows regrouped by
 * eight (qx8.c has the layouts and the scalar definitions), included after
 * qgemv-neon.h by qgemv-dotprod.c: SDOT's lane l sums the products of bytes
 * 4l..4l+3 (qgemv-neon.c's SMULL form of dot16 keeps only the total).
 * Each 16-byte half of a 32-byte chunk is four rows' four weights, which
 * dot16 against the four activations they meet (one 32-bit value copied to
 * every lane) sums into the rows' four lanes: the block's integer sums S
 * exact, then fl(d dx) S in one fused multiply-add per row and block, the
 * scalar definition's bits.  Written and checked under qemu-user only: the
 * speed on an arm64 processor is unmeasured. */
#ifndef TFM_CPU_QX8_NEON_H
#define TFM_CPU_QX8_NEON_H

/* acc[h] (rows 4h..4h+3) += fl(d_row dx) S[h] */
static inline void x8_fma(float32x4_t acc[2], const uint8_t *d8, uint16_t dx, const int32x4_t s[2])
{
	float32x4_t f = vdupq_n_f32(fh(dx));
	float32x4_t d0 = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(d8)));
	float32x4_t d1 = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(d8 + 8)));
	acc[0] = vfmaq_f32(acc[0], vmulq_f32(d0, f), vcvtq_f32_s32(s[0]));
	acc[1] = vfmaq_f32(acc[1], vmulq_f32(d1, f), vcvtq_f32_s32(s[1]));
}

static inline int8x16_t x4(const int8_t *x) /* four activations in every lane */
{
	int32_t v;
	memcpy(&v, x, 4);
	return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

void QFN(q4x8)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		float32x4_t acc[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
		for (int64_t i = 0; i < nb; i++, g += 144) {
			int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
			for (int c = 0; c < 4; c++)
				for (int h = 0; h < 2; h++) {
					uint8x16_t v = vld1q_u8(g + 16 + 32 * c + 16 * h);
					int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15))),
								vdupq_n_s8(8));
					int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), vdupq_n_s8(8));
					s[h] = dot16(s[h], lo, x4(x[i].qs + 4 * c));
					s[h] = dot16(s[h], hi, x4(x[i].qs + 16 + 4 * c));
				}
			x8_fma(acc, g, x[i].d, s);
		}
		vst1q_f32(y + r, acc[0]);
		vst1q_f32(y + r + 4, acc[1]);
	}
}

/* q5_0: the fifth bit of weight j is bit j of its row's qh; chunk c's
 * bits are bits 4c.. (low nibbles) and 16 + 4c.. (high), copied into the
 * four bytes of each row's lane by a table lookup, then tested one per
 * byte */
void QFN(q5x8)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		float32x4_t acc[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
		for (int64_t i = 0; i < nb; i++, g += 176) {
			int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
			for (int h = 0; h < 2; h++) {
				uint8x16_t qh = vld1q_u8(g + 16 + 16 * h); /* rows 4h..4h+3 */
				for (int c = 0; c < 4; c++) {
					uint8_t il[16], ih[16], bm[16];
					for (int l = 0; l < 16; l++) {
						il[l] = (uint8_t)(4 * (l / 4) + c / 2);
						ih[l] = (uint8_t)(4 * (l / 4) + 2 + c / 2);
						bm[l] = (uint8_t)(1u << (4 * (c % 2) + l % 4));
					}
					uint8x16_t m = vld1q_u8(bm), sixteen = vdupq_n_u8(16);
					uint8x16_t bl = vandq_u8(vtstq_u8(vqtbl1q_u8(qh, vld1q_u8(il)), m), sixteen);
					uint8x16_t bh = vandq_u8(vtstq_u8(vqtbl1q_u8(qh, vld1q_u8(ih)), m), sixteen);
					uint8x16_t v = vld1q_u8(g + 48 + 32 * c + 16 * h);
					int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, vdupq_n_u8(15)), bl)),
								vdupq_n_s8(16));
					int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), bh)),
								vdupq_n_s8(16));
					s[h] = dot16(s[h], lo, x4(x[i].qs + 4 * c));
					s[h] = dot16(s[h], hi, x4(x[i].qs + 16 + 4 * c));
				}
			}
			x8_fma(acc, g, x[i].d, s);
		}
		vst1q_f32(y + r, acc[0]);
		vst1q_f32(y + r + 4, acc[1]);
	}
}

void QFN(q8x8)(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const int64_t nb = n / TFM_QK;
	const uint8_t *g = g8;
	for (int64_t r = 0; r < rows; r += 8) {
		float32x4_t acc[2] = {vdupq_n_f32(0), vdupq_n_f32(0)};
		for (int64_t i = 0; i < nb; i++, g += 272) {
			int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
			for (int c = 0; c < 8; c++)
				for (int h = 0; h < 2; h++)
					s[h] = dot16(s[h], vld1q_s8((const int8_t *)g + 16 + 32 * c + 16 * h),
						     x4(x[i].qs + 4 * c));
			x8_fma(acc, g, x[i].d, s);
		}
		vst1q_f32(y + r, acc[0]);
		vst1q_f32(y + r + 4, acc[1]);
	}
}

#endif
