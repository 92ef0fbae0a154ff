/* quant-ref.c: scalar reference quantizers and dequantizers of ggml's block
 * formats.  The quantizers reproduce ggml's quantize_row_*_ref step for step
 * (same rounding functions, same float expression order, same searches for
 * the K-quant scales), so that on the same f32 input they give the bytes
 * llama-quantize writes without an importance matrix.  Written from the
 * layouts and algorithms of ggml-quants.c (MIT). */
#include "quant/quant-impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "tfm.h"

#define GROUP_MAX_EPS 1e-15f
#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define MINI(a, b) ((a) < (b) ? (a) : (b))

/* Round to nearest, ties to even, by adding 1.5*2^23 (|f| < 2^22): the
 * rounding ggml's K-quant code uses (roundf, used by q8_0, rounds ties away
 * from zero: the two must not be mixed up). */
static inline int nearest_int(float f)
{
	float v = f + 12582912.f;
	int32_t i;
	memcpy(&i, &v, sizeof i);
	return (i & 0x007fffff) - 0x00400000;
}

static inline uint16_t h(float f) { return tfm_f32_to_f16(f); }
static inline float fh(uint16_t v) { return tfm_f16_to_f32(v); }

/* ---- 32-element blocks ---- */

/* q4_0: d = max/-8 where max is the value of largest magnitude (so that
 * value maps to -8 exactly); q = trunc(x/d + 8.5) clamped to 15. */
void tfm_quantize_q4_0_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q4_0 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		float amax = 0.0f, max = 0.0f;
		for (int j = 0; j < TFM_QK; j++)
			if (amax < fabsf(x[j])) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		const float d = max / -8;
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = h(d);
		for (int j = 0; j < TFM_QK / 2; j++) {
			const float x0 = x[j] * id, x1 = x[TFM_QK / 2 + j] * id;
			const uint8_t q0 = MINI(15, (int8_t)(x0 + 8.5f));
			const uint8_t q1 = MINI(15, (int8_t)(x1 + 8.5f));
			y[i].qs[j] = q0 | (q1 << 4);
		}
	}
}

void tfm_quantize_q4_1_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q4_1 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		float min = FLT_MAX, max = -FLT_MAX;
		for (int j = 0; j < TFM_QK; j++) {
			if (x[j] < min)
				min = x[j];
			if (x[j] > max)
				max = x[j];
		}
		const float d = (max - min) / ((1 << 4) - 1);
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = h(d);
		y[i].m = h(min);
		for (int j = 0; j < TFM_QK / 2; j++) {
			const float x0 = (x[j] - min) * id, x1 = (x[TFM_QK / 2 + j] - min) * id;
			const uint8_t q0 = MINI(15, (int8_t)(x0 + 0.5f));
			const uint8_t q1 = MINI(15, (int8_t)(x1 + 0.5f));
			y[i].qs[j] = q0 | (q1 << 4);
		}
	}
}

void tfm_quantize_q5_0_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q5_0 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		float amax = 0.0f, max = 0.0f;
		for (int j = 0; j < TFM_QK; j++)
			if (amax < fabsf(x[j])) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		const float d = max / -16;
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = h(d);
		uint32_t qh = 0;
		for (int j = 0; j < TFM_QK / 2; j++) {
			const float x0 = x[j] * id, x1 = x[TFM_QK / 2 + j] * id;
			const uint8_t q0 = MINI(31, (int8_t)(x0 + 16.5f));
			const uint8_t q1 = MINI(31, (int8_t)(x1 + 16.5f));
			y[i].qs[j] = (q0 & 0x0F) | ((q1 & 0x0F) << 4);
			qh |= ((q0 & 0x10u) >> 4) << j;
			qh |= ((q1 & 0x10u) >> 4) << (j + TFM_QK / 2);
		}
		for (int k = 0; k < 4; k++)
			y[i].qh[k] = (uint8_t)(qh >> (8 * k)); /* little-endian u32 */
	}
}

void tfm_quantize_q5_1_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q5_1 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		float min = FLT_MAX, max = -FLT_MAX;
		for (int j = 0; j < TFM_QK; j++) {
			if (x[j] < min)
				min = x[j];
			if (x[j] > max)
				max = x[j];
		}
		const float d = (max - min) / ((1 << 5) - 1);
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = h(d);
		y[i].m = h(min);
		uint32_t qh = 0;
		for (int j = 0; j < TFM_QK / 2; j++) {
			const float x0 = (x[j] - min) * id, x1 = (x[TFM_QK / 2 + j] - min) * id;
			const uint8_t q0 = (uint8_t)(x0 + 0.5f);
			const uint8_t q1 = (uint8_t)(x1 + 0.5f);
			y[i].qs[j] = (q0 & 0x0F) | ((q1 & 0x0F) << 4);
			qh |= ((q0 & 0x10u) >> 4) << j;
			qh |= ((q1 & 0x10u) >> 4) << (j + TFM_QK / 2);
		}
		for (int k = 0; k < 4; k++)
			y[i].qh[k] = (uint8_t)(qh >> (8 * k));
	}
}

void tfm_quantize_q8_0_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_0 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		float amax = 0.0f;
		for (int j = 0; j < TFM_QK; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		const float d = amax / ((1 << 7) - 1);
		const float id = d ? 1.0f / d : 0.0f;
		y[i].d = h(d);
		for (int j = 0; j < TFM_QK; j++)
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
}

void tfm_quantize_q8_1_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_1 *y = vy;
	for (int64_t i = 0; i < n / TFM_QK; i++, x += TFM_QK) {
		float amax = 0.0f;
		for (int j = 0; j < TFM_QK; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		const float d = amax / ((1 << 7) - 1);
		const float id = d ? 1.0f / d : 0.0f;
		int sum = 0;
		for (int j = 0; j < TFM_QK; j++) {
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
			sum += y[i].qs[j];
		}
		y[i].d = h(d);
		y[i].s = h(sum * d);
	}
}

void tfm_dequantize_q4_0_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q4_0 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const float d = fh(x[i].d);
		for (int j = 0; j < TFM_QK / 2; j++) {
			y[j] = ((x[i].qs[j] & 0x0F) - 8) * d;
			y[j + TFM_QK / 2] = ((x[i].qs[j] >> 4) - 8) * d;
		}
	}
}

void tfm_dequantize_q4_1_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q4_1 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const float d = fh(x[i].d), m = fh(x[i].m);
		for (int j = 0; j < TFM_QK / 2; j++) {
			y[j] = (x[i].qs[j] & 0x0F) * d + m;
			y[j + TFM_QK / 2] = (x[i].qs[j] >> 4) * d + m;
		}
	}
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void tfm_dequantize_q5_0_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q5_0 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const float d = fh(x[i].d);
		const uint32_t qh = le32(x[i].qh);
		for (int j = 0; j < TFM_QK / 2; j++) {
			const int h0 = (qh >> j) & 1, h1 = (qh >> (j + 16)) & 1;
			y[j] = (((x[i].qs[j] & 0x0F) | h0 << 4) - 16) * d;
			y[j + TFM_QK / 2] = (((x[i].qs[j] >> 4) | h1 << 4) - 16) * d;
		}
	}
}

void tfm_dequantize_q5_1_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q5_1 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const float d = fh(x[i].d), m = fh(x[i].m);
		const uint32_t qh = le32(x[i].qh);
		for (int j = 0; j < TFM_QK / 2; j++) {
			const int h0 = (qh >> j) & 1, h1 = (qh >> (j + 16)) & 1;
			y[j] = ((x[i].qs[j] & 0x0F) | h0 << 4) * d + m;
			y[j + TFM_QK / 2] = ((x[i].qs[j] >> 4) | h1 << 4) * d + m;
		}
	}
}

void tfm_dequantize_q8_0_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q8_0 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const float d = fh(x[i].d);
		for (int j = 0; j < TFM_QK; j++)
			y[j] = x[i].qs[j] * d;
	}
}

void tfm_dequantize_q8_1_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q8_1 *x = vx;
	for (int64_t i = 0; i < n / TFM_QK; i++, y += TFM_QK) {
		const float d = fh(x[i].d);
		for (int j = 0; j < TFM_QK; j++)
			y[j] = x[i].qs[j] * d;
	}
}

/* ---- K-quant scale searches ---- */

/* Symmetric quants in [-nmax, nmax-1] (stored with +nmax in L) for n values,
 * weighted least squares over 19 candidate scales around nmax/max; the
 * weights are x^2 (rmse_type 1, the only one q6_K uses). Returns the scale. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L)
{
	float max = 0, amax = 0;
	for (int i = 0; i < n; i++) {
		float ax = fabsf(x[i]);
		if (ax > amax) {
			amax = ax;
			max = x[i];
		}
	}
	if (amax < GROUP_MAX_EPS) {
		for (int i = 0; i < n; i++)
			L[i] = 0;
		return 0.f;
	}
	float iscale = -nmax / max;
	float sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; i++) {
		int l = nearest_int(iscale * x[i]);
		l = MAXI(-nmax, MINI(nmax - 1, l));
		L[i] = l + nmax;
		float w = x[i] * x[i];
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	float scale = suml2 ? sumlx / suml2 : 0.0f;
	float best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		if (is == 0)
			continue;
		iscale = -(nmax + 0.1f * is) / max;
		sumlx = suml2 = 0;
		for (int i = 0; i < n; i++) {
			int l = nearest_int(iscale * x[i]);
			l = MAXI(-nmax, MINI(nmax - 1, l));
			float w = x[i] * x[i];
			sumlx += w * x[i] * l;
			suml2 += w * l * l;
		}
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (int i = 0; i < n; i++) {
				int l = nearest_int(iscale * x[i]);
				L[i] = nmax + MAXI(-nmax, MINI(nmax - 1, l));
			}
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* Asymmetric quants x ~ scale*L - min, L in [0, nmax]: start from the
 * min/max grid, then try nstep+1 grids (nmax + rmin + rdelta*is over the
 * range) and for each solve the weighted least-squares scale and min; keep
 * the one of lowest weighted squared error.  *the_min gets -min (>= 0). */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights,
			      uint8_t *L, float *the_min, uint8_t *Laux,
			      float rmin, float rdelta, int nstep)
{
	float min = x[0], max = x[0];
	float sum_w = weights[0];
	float sum_x = sum_w * x[0];
	for (int i = 1; i < n; i++) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		float w = weights[i];
		sum_w += w;
		sum_x += w * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		for (int i = 0; i < n; i++)
			L[i] = 0;
		*the_min = -min;
		return 0.f;
	}
	float iscale = nmax / (max - min);
	float scale = 1 / iscale;
	float best_error = 0;
	for (int i = 0; i < n; i++) {
		int l = nearest_int(iscale * (x[i] - min));
		L[i] = MAXI(0, MINI(nmax, l));
		float diff = scale * L[i] + min - x[i];
		diff = diff * diff;
		best_error += weights[i] * diff;
	}
	for (int is = 0; is <= nstep; is++) {
		iscale = (rmin + rdelta * is + nmax) / (max - min);
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;
		for (int i = 0; i < n; i++) {
			int l = nearest_int(iscale * (x[i] - min));
			l = MAXI(0, MINI(nmax, l));
			Laux[i] = l;
			float w = weights[i];
			sum_l += w * l;
			sum_l2 += w * l * l;
			sum_xl += w * l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		if (D > 0) {
			float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
			float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
			if (this_min > 0) {
				this_min = 0;
				this_scale = sum_xl / sum_l2;
			}
			float cur_error = 0;
			for (int i = 0; i < n; i++) {
				float diff = this_scale * Laux[i] + this_min - x[i];
				diff = diff * diff;
				cur_error += weights[i] * diff;
			}
			if (cur_error < best_error) {
				for (int i = 0; i < n; i++)
					L[i] = Laux[i];
				best_error = cur_error;
				scale = this_scale;
				min = this_min;
			}
		}
	}
	*the_min = -min;
	return scale;
}

/* q4_K and q5_K share everything but the number of levels (nmax 15 or 31)
 * and the search grid; L gets the final quants of the 256 values. */
static void quantize_k4_block(const float *x, uint16_t *dd, uint16_t *dmin, uint8_t *sc12,
			      uint8_t *L, int nmax, float rmin, float rdelta, int nstep)
{
	uint8_t Laux[32];
	float weights[32], mins[TFM_QK_K / 32], scales[TFM_QK_K / 32];
	float max_scale = 0, max_min = 0; /* scales and mins are >= 0 */
	for (int j = 0; j < TFM_QK_K / 32; j++) {
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += x[32 * j + l] * x[32 * j + l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			weights[l] = av_x + fabsf(x[32 * j + l]);
		scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j],
					     Laux, rmin, rdelta, nstep);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
	float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
	memset(sc12, 0, 12);
	for (int j = 0; j < TFM_QK_K / 32; j++) {
		uint8_t ls = nearest_int(inv_scale * scales[j]);
		uint8_t lm = nearest_int(inv_min * mins[j]);
		ls = MINI(63, ls);
		lm = MINI(63, lm);
		/* 8 scales and 8 mins of 6 bits in 12 bytes: bytes 0-3 scales 0-3
		 * (+ high 2 bits of scales 4-7 in bits 6-7), bytes 4-7 mins 0-3
		 * (+ high bits of mins 4-7), bytes 8-11 low nibbles of scale and
		 * min 4-7. */
		if (j < 4) {
			sc12[j] = ls;
			sc12[j + 4] = lm;
		} else {
			sc12[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
			sc12[j - 4] |= ((ls >> 4) << 6);
			sc12[j] |= ((lm >> 4) << 6);
		}
	}
	*dd = h(max_scale / 63.f);
	*dmin = h(max_min / 63.f);
	/* requantize against the scales as they will be decoded */
	for (int j = 0; j < TFM_QK_K / 32; j++) {
		uint8_t sc, m;
		tfm_k4_scale_min(j, sc12, &sc, &m);
		const float d = fh(*dd) * sc;
		if (!d)
			continue;
		const float dm = fh(*dmin) * m;
		for (int ii = 0; ii < 32; ii++) {
			int l = nearest_int((x[32 * j + ii] + dm) / d);
			L[32 * j + ii] = MAXI(0, MINI(nmax, l));
		}
	}
}

void tfm_quantize_q4_K_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q4_K *y = vy;
	uint8_t L[TFM_QK_K];
	for (int64_t i = 0; i < n / TFM_QK_K; i++, x += TFM_QK_K) {
		uint16_t d, dmin; /* the block's fields may be unaligned */
		quantize_k4_block(x, &d, &dmin, y[i].scales, L, 15, -1.f, 0.1f, 20);
		y[i].d = d;
		y[i].dmin = dmin;
		/* 64 values per 32 bytes: low nibbles j..j+31, high j+32..j+63 */
		uint8_t *q = y[i].qs;
		for (int j = 0; j < TFM_QK_K; j += 64, q += 32)
			for (int l = 0; l < 32; l++)
				q[l] = L[j + l] | (L[j + l + 32] << 4);
	}
}

void tfm_quantize_q5_K_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q5_K *y = vy;
	uint8_t L[TFM_QK_K];
	for (int64_t i = 0; i < n / TFM_QK_K; i++, x += TFM_QK_K) {
		uint16_t d, dmin; /* the block's fields may be unaligned */
		quantize_k4_block(x, &d, &dmin, y[i].scales, L, 31, -0.5f, 0.1f, 15);
		y[i].d = d;
		y[i].dmin = dmin;
		uint8_t *qh = y[i].qh, *ql = y[i].qs;
		memset(qh, 0, TFM_QK_K / 8);
		/* fifth bit of value n+j in bit 2*(n/64) of qh[j], of value
		 * n+j+32 in the bit above */
		uint8_t m1 = 1, m2 = 2;
		for (int nn = 0; nn < TFM_QK_K; nn += 64, m1 <<= 2, m2 <<= 2, ql += 32) {
			for (int j = 0; j < 32; j++) {
				int l1 = L[nn + j], l2 = L[nn + j + 32];
				if (l1 > 15) {
					l1 -= 16;
					qh[j] |= m1;
				}
				if (l2 > 15) {
					l2 -= 16;
					qh[j] |= m2;
				}
				ql[j] = l1 | (l2 << 4);
			}
		}
	}
}

void tfm_quantize_q6_K_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q6_K *y = vy;
	int8_t L[TFM_QK_K];
	float scales[TFM_QK_K / 16];
	for (int64_t i = 0; i < n / TFM_QK_K; i++, x += TFM_QK_K) {
		float max_scale = 0, max_abs_scale = 0;
		for (int ib = 0; ib < TFM_QK_K / 16; ib++) {
			const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
			scales[ib] = scale;
			if (fabsf(scale) > max_abs_scale) {
				max_abs_scale = fabsf(scale);
				max_scale = scale;
			}
		}
		if (max_abs_scale < GROUP_MAX_EPS) {
			memset(&y[i], 0, sizeof y[i]);
			continue;
		}
		float iscale = -128.f / max_scale;
		y[i].d = h(1 / iscale);
		for (int ib = 0; ib < TFM_QK_K / 16; ib++)
			y[i].scales[ib] = (int8_t)MINI(127, nearest_int(iscale * scales[ib]));
		for (int j = 0; j < TFM_QK_K / 16; j++) {
			float d = fh(y[i].d) * y[i].scales[j];
			if (!d)
				continue;
			for (int ii = 0; ii < 16; ii++) {
				int l = nearest_int(x[16 * j + ii] / d);
				L[16 * j + ii] = MAXI(-32, MINI(31, l)) + 32;
			}
		}
		/* per 128 values: ql[l] = low nibbles of l and l+64, ql[l+32] of
		 * l+32 and l+96; qh[l] = high 2 bits of l, l+32, l+64, l+96 */
		uint8_t *ql = y[i].ql, *qh = y[i].qh;
		for (int j = 0; j < TFM_QK_K; j += 128, ql += 64, qh += 32) {
			for (int l = 0; l < 32; l++) {
				const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
				const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
				ql[l] = q1 | (q3 << 4);
				ql[l + 32] = q2 | (q4 << 4);
				qh[l] = (L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
					((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6);
			}
		}
	}
}

/* q8_K: the activation format of the K-quant dot products; d = max/-127
 * in f32, with per-16 sums for the min terms. */
void tfm_quantize_q8_K_ref(const float *x, void *vy, int64_t n)
{
	struct tfm_block_q8_K *y = vy;
	for (int64_t i = 0; i < n / TFM_QK_K; i++, x += TFM_QK_K) {
		float max = 0, amax = 0;
		for (int j = 0; j < TFM_QK_K; j++)
			if (fabsf(x[j]) > amax) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		if (!amax) {
			memset(&y[i], 0, sizeof y[i]);
			continue;
		}
		const float iscale = -127.f / max;
		for (int j = 0; j < TFM_QK_K; j++)
			y[i].qs[j] = (int8_t)MINI(127, nearest_int(iscale * x[j]));
		for (int j = 0; j < TFM_QK_K / 16; j++) {
			int sum = 0;
			for (int ii = 0; ii < 16; ii++)
				sum += y[i].qs[j * 16 + ii];
			y[i].bsums[j] = (int16_t)sum;
		}
		y[i].d = 1 / iscale;
	}
}

void tfm_dequantize_q4_K_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q4_K *x = vx;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *q = x[i].qs;
		const float d = fh(x[i].d), min = fh(x[i].dmin);
		for (int j = 0, is = 0; j < TFM_QK_K; j += 64, q += 32, is += 2) {
			uint8_t sc, m;
			tfm_k4_scale_min(is, x[i].scales, &sc, &m);
			const float d1 = d * sc, m1 = min * m;
			tfm_k4_scale_min(is + 1, x[i].scales, &sc, &m);
			const float d2 = d * sc, m2 = min * m;
			for (int l = 0; l < 32; l++)
				*y++ = d1 * (q[l] & 0xF) - m1;
			for (int l = 0; l < 32; l++)
				*y++ = d2 * (q[l] >> 4) - m2;
		}
	}
}

void tfm_dequantize_q5_K_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q5_K *x = vx;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *ql = x[i].qs, *qh = x[i].qh;
		const float d = fh(x[i].d), min = fh(x[i].dmin);
		uint8_t u1 = 1, u2 = 2;
		for (int j = 0, is = 0; j < TFM_QK_K; j += 64, ql += 32, is += 2, u1 <<= 2, u2 <<= 2) {
			uint8_t sc, m;
			tfm_k4_scale_min(is, x[i].scales, &sc, &m);
			const float d1 = d * sc, m1 = min * m;
			tfm_k4_scale_min(is + 1, x[i].scales, &sc, &m);
			const float d2 = d * sc, m2 = min * m;
			for (int l = 0; l < 32; l++)
				*y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
			for (int l = 0; l < 32; l++)
				*y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
		}
	}
}

void tfm_dequantize_q6_K_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q6_K *x = vx;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const float d = fh(x[i].d);
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *sc = x[i].scales;
		for (int nn = 0; nn < TFM_QK_K; nn += 128, y += 128, ql += 64, qh += 32, sc += 8) {
			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
				const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
				const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
				const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
				y[l] = d * sc[is + 0] * q1;
				y[l + 32] = d * sc[is + 2] * q2;
				y[l + 64] = d * sc[is + 4] * q3;
				y[l + 96] = d * sc[is + 6] * q4;
			}
		}
	}
}

void tfm_dequantize_q8_K_ref(const void *vx, float *y, int64_t n)
{
	const struct tfm_block_q8_K *x = vx;
	for (int64_t i = 0; i < n / TFM_QK_K; i++)
		for (int j = 0; j < TFM_QK_K; j++)
			*y++ = x[i].d * x[i].qs[j];
}
