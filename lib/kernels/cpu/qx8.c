/* qx8.c: q4_0 and q8_0 weights in groups of eight rows for decode, and the
 * scalar kernels that define what the SIMD ones (qgemv-avx2.c) compute.
 *
 * q4_0's layout (struct tfm_mat.dec): rows in groups of 8 (out % 8 == 0),
 * and for group g and block i (of 32 inputs) 144 bytes at (g nb + i) 144:
 *   d[8]       the eight rows' f16 scales (16 bytes)
 *   chunk c    (c = 0..3, 32 bytes each) row r's quant bytes qs[4c..4c+3]
 *              at 4 r, the same bytes as the file, regrouped:
 *              the low nibbles are weights 4c..4c+3, the high 16+4c..
 * so that one 32-byte load holds four weights of each of the eight rows
 * (and four more in its high nibbles) in the lanes of the row, and the
 * eight rows' integer sums come out in eight lanes with no horizontal add.
 * llama.cpp's AVX2 decode repacks q4_0 the same way (its "q4_0_8x8").
 *
 * The sums: y_r = sum over blocks i, in order, of fl(d_ri dx_i) S_ri in one
 * fused multiply-add each, where S_ri = sum_j (u_rij - 8) x_ij is exact in
 * int32.  That is not the one-row dot's order (lib/quant sums eight partial
 * lanes and adds them at the end), so y differs from it in the last bits
 * (test_kernels q4x8 bounds it), but each row's value does not depend on
 * the thread count or on which rows a task takes: groups are fixed by the
 * row index.
 *
 * q8_0's: the same with 272 bytes a block, d[8] then eight chunks of 32
 * bytes, chunk c holding row r's qs[4c..4c+3] at 4 r (the weights are
 * bytes, so eight chunks cover the block).  Its sums likewise: S exact in
 * int32 (each 16-bit pair sum is at most 2 x 128 x 127), one FMA a block.
 *
 * q5_0's: 176 bytes a block, d[8], then the eight rows' qh (32 bits each,
 * bit j the fifth bit of weight j), then q4_0's four chunks of 32 bytes;
 * weight j is u - 16, u its nibble plus 16 times its fifth bit.
 *
 * Each way group g starts at byte 8 g row_bytes, as in the file. */
#include "kernels/cpu/cpu-impl.h"
#include "tfm.h"
#include "quant/quant.h"

#include <math.h>
#include <string.h>


void tfm_cpu_q4x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8)
		for (int64_t i = 0; i < nb; i++) {
			uint8_t *g = dst + ((r / 8) * nb + i) * 144;
			for (int q = 0; q < 8; q++) {
				const struct tfm_block_q4_0 *b =
					(const void *)((const uint8_t *)w + (size_t)(r + q) * rb);
				memcpy(g + 2 * q, &b[i].d, 2);
				for (int c = 0; c < 4; c++)
					memcpy(g + 16 + 32 * c + 4 * q, b[i].qs + 4 * c, 4);
			}
		}
}

/* y[0..rows) (rows % 8 == 0) from packed groups g against one q8_0 row */
void tfm_cpu_qgemv_q4x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const uint8_t *g = g8;
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8) {
		float acc[8] = {0};
		for (int64_t i = 0; i < nb; i++, g += 144) {
			float dx = tfm_f16_to_f32(x[i].d);
			for (int q = 0; q < 8; q++) {
				int32_t s = 0;
				for (int c = 0; c < 4; c++)
					for (int e = 0; e < 4; e++) {
						uint8_t v = g[16 + 32 * c + 4 * q + e];
						s += ((v & 15) - 8) * x[i].qs[4 * c + e] +
						     ((v >> 4) - 8) * x[i].qs[16 + 4 * c + e];
					}
				uint16_t d;
				memcpy(&d, g + 2 * q, 2);
				float sc = tfm_f16_to_f32(d) * dx;
				acc[q] = fmaf(sc, (float)s, acc[q]);
			}
		}
		memcpy(y + r, acc, sizeof acc);
	}
}

void tfm_cpu_q8x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8)
		for (int64_t i = 0; i < nb; i++) {
			uint8_t *g = dst + ((r / 8) * nb + i) * 272;
			for (int q = 0; q < 8; q++) {
				const struct tfm_block_q8_0 *b =
					(const void *)((const uint8_t *)w + (size_t)(r + q) * rb);
				memcpy(g + 2 * q, &b[i].d, 2);
				for (int c = 0; c < 8; c++)
					memcpy(g + 16 + 32 * c + 4 * q, b[i].qs + 4 * c, 4);
			}
		}
}

void tfm_cpu_qgemv_q8x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const uint8_t *g = g8;
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8) {
		float acc[8] = {0};
		for (int64_t i = 0; i < nb; i++, g += 272) {
			float dx = tfm_f16_to_f32(x[i].d);
			for (int q = 0; q < 8; q++) {
				int32_t s = 0;
				for (int c = 0; c < 8; c++)
					for (int e = 0; e < 4; e++)
						s += (int8_t)g[16 + 32 * c + 4 * q + e] * x[i].qs[4 * c + e];
				uint16_t d;
				memcpy(&d, g + 2 * q, 2);
				float sc = tfm_f16_to_f32(d) * dx;
				acc[q] = fmaf(sc, (float)s, acc[q]);
			}
		}
		memcpy(y + r, acc, sizeof acc);
	}
}

void tfm_cpu_q5x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8)
		for (int64_t i = 0; i < nb; i++) {
			uint8_t *g = dst + ((r / 8) * nb + i) * 176;
			for (int q = 0; q < 8; q++) {
				const struct tfm_block_q5_0 *b =
					(const void *)((const uint8_t *)w + (size_t)(r + q) * rb);
				memcpy(g + 2 * q, &b[i].d, 2);
				memcpy(g + 16 + 4 * q, b[i].qh, 4);
				for (int c = 0; c < 4; c++)
					memcpy(g + 48 + 32 * c + 4 * q, b[i].qs + 4 * c, 4);
			}
		}
}

void tfm_cpu_qgemv_q5x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	const struct tfm_block_q8_0 *x = xq;
	const uint8_t *g = g8;
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8) {
		float acc[8] = {0};
		for (int64_t i = 0; i < nb; i++, g += 176) {
			float dx = tfm_f16_to_f32(x[i].d);
			for (int q = 0; q < 8; q++) {
				uint32_t h = (uint32_t)g[16 + 4 * q] | (uint32_t)g[17 + 4 * q] << 8 |
					     (uint32_t)g[18 + 4 * q] << 16 | (uint32_t)g[19 + 4 * q] << 24;
				int32_t s = 0;
				for (int c = 0; c < 4; c++)
					for (int e = 0; e < 4; e++) {
						uint8_t v = g[48 + 32 * c + 4 * q + e];
						int j = 4 * c + e;
						int lo = (v & 15) | (int)(h >> j & 1) << 4;
						int hi = (v >> 4) | (int)(h >> (j + 16) & 1) << 4;
						s += (lo - 16) * x[i].qs[j] + (hi - 16) * x[i].qs[j + 16];
					}
				uint16_t d;
				memcpy(&d, g + 2 * q, 2);
				float sc = tfm_f16_to_f32(d) * dx;
				acc[q] = fmaf(sc, (float)s, acc[q]);
			}
		}
		memcpy(y + r, acc, sizeof acc);
	}
}
