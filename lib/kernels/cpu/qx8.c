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

/* Each layout: a block of one file row is bs bytes, d (f16) first, then
 * (q5_0: qh) 4 bytes of fifth bits at 2 and the quants at qoff; in a
 * group, the fifth bits go to 16 + 4 r and the quants to chunks of 32
 * bytes from cs on, four bytes a row */
struct x8_layout {
	size_t bs, qoff, cs;
	int chunks, qh;
};
static const struct x8_layout Q4 = {18, 2, 16, 4, 0}, Q5 = {22, 6, 48, 4, 1},
			      Q8 = {34, 2, 16, 8, 0};

static void pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows,
		 const struct x8_layout *lt)
{
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8)
		for (int64_t i = 0; i < nb; i++) {
			uint8_t *g = dst + ((r / 8) * nb + i) * 8 * lt->bs;
			for (int q = 0; q < 8; q++) {
				const uint8_t *b = (const uint8_t *)w + (size_t)(r + q) * rb + i * lt->bs;
				memcpy(g + 2 * q, b, 2);
				if (lt->qh)
					memcpy(g + 16 + 4 * q, b + 2, 4);
				for (int c = 0; c < lt->chunks; c++)
					memcpy(g + lt->cs + 32 * c + 4 * q, b + lt->qoff + 4 * c, 4);
			}
		}
}

void tfm_cpu_q4x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	pack(dst, w, rb, n, rows, &Q4);
}
void tfm_cpu_q5x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	pack(dst, w, rb, n, rows, &Q5);
}
void tfm_cpu_q8x8_pack(uint8_t *dst, const void *w, size_t rb, int64_t n, int64_t rows)
{
	pack(dst, w, rb, n, rows, &Q8);
}

/* S of row q of a group's block g against the block's activations x */
static int32_t sum_q4(const uint8_t *g, int q, const int8_t *x)
{
	int32_t s = 0;
	for (int c = 0; c < 4; c++)
		for (int e = 0; e < 4; e++) {
			uint8_t v = g[16 + 32 * c + 4 * q + e];
			s += ((v & 15) - 8) * x[4 * c + e] + ((v >> 4) - 8) * x[16 + 4 * c + e];
		}
	return s;
}

static int32_t sum_q5(const uint8_t *g, int q, const int8_t *x)
{
	const uint8_t *hb = g + 16 + 4 * q;
	uint32_t h = (uint32_t)hb[0] | (uint32_t)hb[1] << 8 | (uint32_t)hb[2] << 16 |
		     (uint32_t)hb[3] << 24;
	int32_t s = 0;
	for (int c = 0; c < 4; c++)
		for (int e = 0; e < 4; e++) {
			uint8_t v = g[48 + 32 * c + 4 * q + e];
			int j = 4 * c + e;
			int lo = (v & 15) | (int)(h >> j & 1) << 4, hi = (v >> 4) | (int)(h >> (j + 16) & 1) << 4;
			s += (lo - 16) * x[j] + (hi - 16) * x[j + 16];
		}
	return s;
}

static int32_t sum_q8(const uint8_t *g, int q, const int8_t *x)
{
	int32_t s = 0;
	for (int c = 0; c < 8; c++)
		for (int e = 0; e < 4; e++)
			s += (int8_t)g[16 + 32 * c + 4 * q + e] * x[4 * c + e];
	return s;
}

/* y[0..rows) (rows % 8 == 0) from the groups at g8 against one q8_0 row:
 * each row sum over blocks, in order, of fl(d dx) S in one fused
 * multiply-add */
static void qx8(float *y, const void *g8, const void *xq, int64_t n, int64_t rows, size_t bs,
		int32_t (*sum)(const uint8_t *, int, const int8_t *))
{
	const struct tfm_block_q8_0 *x = xq;
	const uint8_t *g = g8;
	int64_t nb = n / TFM_QK;
	for (int64_t r = 0; r < rows; r += 8) {
		float acc[8] = {0};
		for (int64_t i = 0; i < nb; i++, g += 8 * bs) {
			float dx = tfm_f16_to_f32(x[i].d);
			for (int q = 0; q < 8; q++) {
				uint16_t d;
				memcpy(&d, g + 2 * q, 2);
				float sc = tfm_f16_to_f32(d) * dx;
				acc[q] = fmaf(sc, (float)sum(g, q, x[i].qs), acc[q]);
			}
		}
		memcpy(y + r, acc, sizeof acc);
	}
}

void tfm_cpu_qgemv_q4x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	qx8(y, g8, xq, n, rows, Q4.bs, sum_q4);
}
void tfm_cpu_qgemv_q5x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	qx8(y, g8, xq, n, rows, Q5.bs, sum_q5);
}
void tfm_cpu_qgemv_q8x8_scalar(float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	qx8(y, g8, xq, n, rows, Q8.bs, sum_q8);
}
