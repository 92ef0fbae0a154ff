/* dot-ref.c: scalar reference dot products of a quantized weight row with a
 * quantized activation row, computed as ggml does: exact integer sums per
 * block (or sub-block), scaled by the product of the block scales in f32.
 * The AVX2 versions (dot-avx2.c) are checked against these. */
#include "quant/quant-impl.h"

#include "tfm.h"

static inline float fh(uint16_t v) { return tfm_f16_to_f32(v); }

float tfm_vec_dot_q8_0_q8_0_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q8_0 *x = vx, *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		int sumi = 0;
		for (int j = 0; j < TFM_QK; j++)
			sumi += x[i].qs[j] * y[i].qs[j];
		sumf += sumi * (fh(x[i].d) * fh(y[i].d));
	}
	return sumf;
}

float tfm_vec_dot_q4_0_q8_0_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		int sumi = 0;
		for (int j = 0; j < TFM_QK / 2; j++) {
			sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
			sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + TFM_QK / 2];
		}
		sumf += sumi * (fh(x[i].d) * fh(y[i].d));
	}
	return sumf;
}

/* x = d*q + m, so sum x*y = d*dy*sum(q*qy) + m*(dy*sum(qy)) = ... + m*s */
float tfm_vec_dot_q4_1_q8_1_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_1 *x = vx;
	const struct tfm_block_q8_1 *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		int sumi = 0;
		for (int j = 0; j < TFM_QK / 2; j++) {
			sumi += (x[i].qs[j] & 0x0F) * y[i].qs[j];
			sumi += (x[i].qs[j] >> 4) * y[i].qs[j + TFM_QK / 2];
		}
		sumf += sumi * (fh(x[i].d) * fh(y[i].d)) + fh(x[i].m) * fh(y[i].s);
	}
	return sumf;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

float tfm_vec_dot_q5_0_q8_0_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_0 *x = vx;
	const struct tfm_block_q8_0 *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		const uint32_t qh = le32(x[i].qh);
		int sumi = 0;
		for (int j = 0; j < TFM_QK / 2; j++) {
			int q0 = ((x[i].qs[j] & 0x0F) | ((qh >> j) & 1) << 4) - 16;
			int q1 = ((x[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16;
			sumi += q0 * y[i].qs[j] + q1 * y[i].qs[j + TFM_QK / 2];
		}
		sumf += sumi * (fh(x[i].d) * fh(y[i].d));
	}
	return sumf;
}

float tfm_vec_dot_q5_1_q8_1_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_1 *x = vx;
	const struct tfm_block_q8_1 *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK; i++) {
		const uint32_t qh = le32(x[i].qh);
		int sumi = 0;
		for (int j = 0; j < TFM_QK / 2; j++) {
			int q0 = (x[i].qs[j] & 0x0F) | ((qh >> j) & 1) << 4;
			int q1 = (x[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
			sumi += q0 * y[i].qs[j] + q1 * y[i].qs[j + TFM_QK / 2];
		}
		sumf += sumi * (fh(x[i].d) * fh(y[i].d)) + fh(x[i].m) * fh(y[i].s);
	}
	return sumf;
}

/* q4_K / q5_K: x = d*sc_j*q - dmin*m_j on sub-block j of 32; the min term
 * uses the activation's per-16 sums. */
float tfm_vec_dot_q4_K_q8_K_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q4_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *q4 = x[i].qs;
		const int8_t *q8 = y[i].qs;
		int32_t sumi = 0, summ = 0;
		for (int j = 0; j < TFM_QK_K / 64; j++, q4 += 32, q8 += 64) {
			uint8_t sc0, m0, sc1, m1;
			tfm_k4_scale_min(2 * j, x[i].scales, &sc0, &m0);
			tfm_k4_scale_min(2 * j + 1, x[i].scales, &sc1, &m1);
			int s0 = 0, s1 = 0;
			for (int l = 0; l < 32; l++) {
				s0 += (q4[l] & 0xF) * q8[l];
				s1 += (q4[l] >> 4) * q8[l + 32];
			}
			sumi += sc0 * s0 + sc1 * s1;
			summ += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
				m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
		}
		sumf += fh(x[i].d) * y[i].d * sumi - fh(x[i].dmin) * y[i].d * summ;
	}
	return sumf;
}

float tfm_vec_dot_q5_K_q8_K_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q5_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *ql = x[i].qs, *qh = x[i].qh;
		const int8_t *q8 = y[i].qs;
		int32_t sumi = 0, summ = 0;
		for (int j = 0; j < TFM_QK_K / 64; j++, ql += 32, q8 += 64) {
			uint8_t sc0, m0, sc1, m1;
			tfm_k4_scale_min(2 * j, x[i].scales, &sc0, &m0);
			tfm_k4_scale_min(2 * j + 1, x[i].scales, &sc1, &m1);
			int s0 = 0, s1 = 0;
			for (int l = 0; l < 32; l++) {
				s0 += ((ql[l] & 0xF) | ((qh[l] >> (2 * j)) & 1) << 4) * q8[l];
				s1 += ((ql[l] >> 4) | ((qh[l] >> (2 * j + 1)) & 1) << 4) * q8[l + 32];
			}
			sumi += sc0 * s0 + sc1 * s1;
			summ += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
				m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
		}
		sumf += fh(x[i].d) * y[i].d * sumi - fh(x[i].dmin) * y[i].d * summ;
	}
	return sumf;
}

/* q6_K: x = d*sc_j*(q-32) on sub-block j of 16. */
float tfm_vec_dot_q6_K_q8_K_ref(int64_t n, const void *vx, const void *vy)
{
	const struct tfm_block_q6_K *x = vx;
	const struct tfm_block_q8_K *y = vy;
	float sumf = 0;
	for (int64_t i = 0; i < n / TFM_QK_K; i++) {
		const uint8_t *ql = x[i].ql, *qh = x[i].qh;
		const int8_t *sc = x[i].scales, *q8 = y[i].qs;
		int32_t sumi = 0;
		for (int nn = 0; nn < TFM_QK_K; nn += 128, ql += 64, qh += 32, sc += 8, q8 += 128) {
			int s[8] = {0};
			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
				int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
				int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
				int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
				s[is + 0] += q1 * q8[l];
				s[is + 2] += q2 * q8[l + 32];
				s[is + 4] += q3 * q8[l + 64];
				s[is + 6] += q4 * q8[l + 96];
			}
			for (int k = 0; k < 8; k++)
				sumi += sc[k] * s[k];
		}
		sumf += fh(x[i].d) * y[i].d * sumi;
	}
	return sumf;
}
