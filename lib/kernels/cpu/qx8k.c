/* qx8k.c: the K-quants (q4_K, q5_K, q6_K) in groups of eight rows for
 * decode, as qx8.c does q4_0, q5_0 and q8_0, and the scalar kernels that
 * define what the SIMD ones (qx8k-avx2.c, qx8k-neon.h) compute.
 *
 * Each super-block of 256 weights is cut into eight units of 32, and unit
 * u of a group (8 rows) is held in chunks of 32 bytes, row r's four bytes
 * at 4 r: byte e of chunk c (c = 0..3) holds the low 4 bits of weight
 * 32u + 4c + e in its low nibble and those of weight 32u + 16 + 4c + e in
 * its high one.  So one 32-byte load gives eight weights of each of the
 * eight rows in the row's 32-bit lane, against two broadcast groups of
 * four activations, and every weight of a lane's low (high) nibbles lies in
 * one sub-block (the 32 of q4_K / q5_K; the 16 of q6_K: 2u and 2u + 1).
 * The file's bits are regrouped, not changed.
 *
 * Group g, super-block i starts at byte (g nb + i) 8 B, B the bytes a row
 * takes per super-block here (tfm_cpu_qx8k_block_bytes):
 *   q4_K, B = 148 (the file's 144, plus 4: unpacked scales):
 *     d[8], dmin[8] (f16, 16 bytes each), sc[u][r] (64 bytes, the 6-bit
 *     scales unpacked), m[r][u] (64 bytes, the mins), then the eight units
 *     of 128 bytes (four chunks).
 *   q5_K, B = 180: as q4_K, each unit 160 bytes: its four chunks, then 32
 *     bytes of fifth bits, row r's at 4 r: bit c of byte e the fifth bit of
 *     weight 32u + 4c + e, bit 4 + c that of weight 32u + 16 + 4c + e.
 *   q6_K, B = 210 (the file's): d[8] (f16), sc[s][r] (128 bytes, the int8
 *     scales of the sixteen sub-blocks of 16), then the eight units of 192
 *     bytes: four chunks, then 32 bytes A and 32 bytes B of high bits, row
 *     r's at 4 r: bits 2c, 2c + 1 of byte e of A (B) are the high two bits
 *     of weight 32u + 4c + e (32u + 16 + 4c + e).
 *
 * The sums, against one q8_K row x (scale dx, block sums bsums):
 *   q4_K, q5_K: S_r = sum_u sc[u][r] sum_{e in u} q_e x_e and
 *     M_r = sum_u m[r][u] (bsums[2u] + bsums[2u+1]), both exact in int32;
 *     y_r = sum_i fl(d_r dx) S_r - sum_i fl(dmin_r dx) M_r, each sum over
 *     the blocks i in order with one fused multiply-add a block, and one
 *     subtraction at the end.
 *   q6_K: S_r = sum_s sc[s][r] (sum_{e in s} q_e x_e - 32 bsums[s]), exact;
 *     y_r = sum_i fl(d_r dx) S_r, one FMA a block.
 * lib/quant's one-row dots add in another order, so y differs from them in
 * the last bits (test_kernels qx8k bounds it); each row's value does not
 * depend on the thread count or on which rows a task takes. */
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant-impl.h"
#include "quant/quant.h"
#include "tfm.h"

#include <math.h>
#include <string.h>

size_t tfm_cpu_qx8k_block_bytes(int type)
{
	switch (type) {
	case TFM_TYPE_Q4_K: return 148;
	case TFM_TYPE_Q5_K: return 180;
	case TFM_TYPE_Q6_K: return 210;
	}
	return 0;
}

/* The 256 quants of a file block, as unsigned integers (q4_K 0..15, q5_K
 * 0..31, q6_K 0..63), and its sub-block scales (and q4_K / q5_K mins). */
static void unpack_k45(const uint8_t *b, int q5, uint8_t q[256], uint8_t sc[8], uint8_t mn[8])
{
	const uint8_t *scales = b + 4, *qh = q5 ? b + 16 : NULL, *qs = b + (q5 ? 48 : 16);
	uint32_t u[4];
	tfm_k4_unpack(u, scales);
	memcpy(sc, u, 8), memcpy(mn, u + 2, 8);
	for (int j = 0; j < 4; j++)
		for (int l = 0; l < 32; l++) {
			int lo = qs[32 * j + l] & 15, hi = qs[32 * j + l] >> 4;
			if (q5)
				lo |= (qh[l] >> (2 * j) & 1) << 4, hi |= (qh[l] >> (2 * j + 1) & 1) << 4;
			q[64 * j + l] = (uint8_t)lo, q[64 * j + 32 + l] = (uint8_t)hi;
		}
}

static void unpack_q6(const struct tfm_block_q6_K *b, uint8_t q[256])
{
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < 4; k++)
			for (int l = 0; l < 32; l++) {
				uint8_t ql = b->ql[64 * h + 32 * (k & 1) + l];
				int lo4 = k < 2 ? ql & 15 : ql >> 4;
				q[128 * h + 32 * k + l] = (uint8_t)(lo4 | (b->qh[32 * h + l] >> (2 * k) & 3) << 4);
			}
}

/* unit u's chunks of row r: the low 4 bits of q */
static void put_nibbles(uint8_t *unit, int r, const uint8_t *q)
{
	for (int c = 0; c < 4; c++)
		for (int e = 0; e < 4; e++)
			unit[32 * c + 4 * r + e] = (uint8_t)((q[4 * c + e] & 15) | (q[16 + 4 * c + e] & 15) << 4);
}

void tfm_cpu_qx8k_pack(int type, uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	const int64_t nb = n / TFM_QK_K;
	const size_t gb = 8 * tfm_cpu_qx8k_block_bytes(type);
	uint8_t q[256], sc[8], mn[8];
	for (int64_t r0 = 0; r0 < rows; r0 += 8)
		for (int64_t i = 0; i < nb; i++) {
			uint8_t *g = dst + ((r0 / 8) * nb + i) * gb;
			for (int r = 0; r < 8; r++) {
				const uint8_t *b = (const uint8_t *)w + (size_t)(r0 + r) * rb;
				if (type == TFM_TYPE_Q6_K) {
					const struct tfm_block_q6_K *k = (const struct tfm_block_q6_K *)b + i;
					unpack_q6(k, q);
					memcpy(g + 2 * r, &k->d, 2);
					for (int s = 0; s < 16; s++)
						g[16 + 8 * s + r] = (uint8_t)k->scales[s];
					for (int u = 0; u < 8; u++) {
						uint8_t *unit = g + 144 + 192 * u;
						put_nibbles(unit, r, q + 32 * u);
						for (int e = 0; e < 4; e++) {
							uint8_t a = 0, bb = 0;
							for (int c = 0; c < 4; c++) {
								a |= (uint8_t)((q[32 * u + 4 * c + e] >> 4) << (2 * c));
								bb |= (uint8_t)((q[32 * u + 16 + 4 * c + e] >> 4) << (2 * c));
							}
							unit[128 + 4 * r + e] = a, unit[160 + 4 * r + e] = bb;
						}
					}
					continue;
				}
				int q5 = type == TFM_TYPE_Q5_K;
				const uint8_t *k = b + (size_t)i * (q5 ? 176 : 144);
				unpack_k45(k, q5, q, sc, mn);
				memcpy(g + 2 * r, k, 2), memcpy(g + 16 + 2 * r, k + 2, 2);
				for (int u = 0; u < 8; u++)
					g[32 + 8 * u + r] = sc[u], g[96 + 8 * r + u] = mn[u];
				for (int u = 0; u < 8; u++) {
					uint8_t *unit = g + 160 + (q5 ? 160 : 128) * u;
					put_nibbles(unit, r, q + 32 * u);
					for (int e = 0; q5 && e < 4; e++) {
						uint8_t h = 0;
						for (int c = 0; c < 4; c++)
							h |= (uint8_t)((q[32 * u + 4 * c + e] >> 4) << c |
								       (q[32 * u + 16 + 4 * c + e] >> 4) << (4 + c));
						unit[128 + 4 * r + e] = h;
					}
				}
			}
		}
}

/* weight 32u + 4c + e (hi: + 16) of row r of a group's unit, from the layout */
static int quant_at(const uint8_t *unit, int type, int r, int c, int e, int hi)
{
	uint8_t v = unit[32 * c + 4 * r + e];
	int q = hi ? v >> 4 : v & 15;
	if (type == TFM_TYPE_Q5_K)
		q |= (unit[128 + 4 * r + e] >> (c + 4 * hi) & 1) << 4;
	else if (type == TFM_TYPE_Q6_K)
		q |= (unit[128 + 32 * hi + 4 * r + e] >> (2 * c) & 3) << 4;
	return q;
}

void tfm_cpu_qgemv_qx8k_scalar(int type, float *y, const void *g8, const void *xq, int64_t n,
			       int64_t rows)
{
	const struct tfm_block_q8_K *x = xq;
	const int64_t nb = n / TFM_QK_K;
	const size_t gb = 8 * tfm_cpu_qx8k_block_bytes(type);
	const int q6 = type == TFM_TYPE_Q6_K;
	const size_t ub = q6 ? 192 : type == TFM_TYPE_Q5_K ? 160 : 128, u0 = q6 ? 144 : 160;
	const uint8_t *g = g8;
	for (int64_t r0 = 0; r0 < rows; r0 += 8) {
		float acc[8] = {0}, accm[8] = {0};
		for (int64_t i = 0; i < nb; i++, g += gb) {
			const float dx = x[i].d;
			for (int r = 0; r < 8; r++) {
				int32_t S = 0, M = 0;
				for (int u = 0; u < 8; u++) {
					int32_t p[2] = {0, 0}; /* the unit's low and high halves */
					for (int hi = 0; hi < 2; hi++)
						for (int c = 0; c < 4; c++)
							for (int e = 0; e < 4; e++)
								p[hi] += quant_at(g + u0 + ub * u, type, r, c, e, hi) *
									 x[i].qs[32 * u + 16 * hi + 4 * c + e];
					if (q6) {
						for (int hi = 0; hi < 2; hi++) {
							int s = 2 * u + hi;
							S += (int8_t)g[16 + 8 * s + r] * (p[hi] - 32 * x[i].bsums[s]);
						}
					} else {
						S += g[32 + 8 * u + r] * (p[0] + p[1]);
						M += g[96 + 8 * r + u] * (x[i].bsums[2 * u] + x[i].bsums[2 * u + 1]);
					}
				}
				uint16_t d, dmin;
				memcpy(&d, g + 2 * r, 2);
				acc[r] = fmaf(tfm_f16_to_f32(d) * dx, (float)S, acc[r]);
				if (!q6) {
					memcpy(&dmin, g + 16 + 2 * r, 2);
					accm[r] = fmaf(tfm_f16_to_f32(dmin) * dx, (float)M, accm[r]);
				}
			}
		}
		for (int r = 0; r < 8; r++)
			y[r0 + r] = acc[r] - accm[r];
	}
}
