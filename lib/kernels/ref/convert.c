/* convert.c: weight rows to f32 for the kernels (f32, f16, bf16, and the
 * ggml q8_0 / q4_0 block layouts, written out here as the specification;
 * q4_1, q5_0, q5_1 and the K-quants through lib/quant's reference).  Scalar; exact (every value of
 * these types is representable in f32). */
#include "tfm.h"
#include "kernels/backend.h"
#include "quant/quant.h"

#include <string.h>

int tfm_k_type_ok(int type)
{
	/* activation-only types (q8_1, q8_K) are not weights */
	return tfm_quant_supported(type) && type != TFM_TYPE_Q8_1 && type != TFM_TYPE_Q8_K;
}

int tfm_k_row_to_f32(int type, const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;
	switch (type) {
	case TFM_TYPE_F32:
		memcpy(dst, src, (size_t)n * sizeof(float));
		return TFM_OK;
	case TFM_TYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			dst[i] = tfm_f16_to_f32(h);
		}
		return TFM_OK;
	case TFM_TYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			dst[i] = tfm_bf16_to_f32(h);
		}
		return TFM_OK;
	case TFM_TYPE_Q8_0: /* blocks of 32: f16 scale d, int8 q[32]; x = d * q */
		if (n % 32)
			break;
		for (int64_t b = 0; b < n / 32; b++, p += 34) {
			uint16_t h;
			memcpy(&h, p, 2);
			float d = tfm_f16_to_f32(h);
			for (int j = 0; j < 32; j++)
				dst[b * 32 + j] = d * (float)(int8_t)p[2 + j];
		}
		return TFM_OK;
	case TFM_TYPE_Q4_0: /* blocks of 32: f16 d, 16 bytes; low nibbles are
			     * elements 0..15, high nibbles 16..31; x = d * (q - 8) */
		if (n % 32)
			break;
		for (int64_t b = 0; b < n / 32; b++, p += 18) {
			uint16_t h;
			memcpy(&h, p, 2);
			float d = tfm_f16_to_f32(h);
			for (int j = 0; j < 16; j++) {
				dst[b * 32 + j] = d * (float)((p[2 + j] & 15) - 8);
				dst[b * 32 + j + 16] = d * (float)((p[2 + j] >> 4) - 8);
			}
		}
		return TFM_OK;
	default: /* q4_1, q5_0, q5_1, the K-quants: lib/quant's reference dequantizer */
		if (tfm_k_type_ok(type) && tfm_quant_blck(type) > 0 && n % tfm_quant_blck(type) == 0)
			return tfm_dequantize_row_ref(type, src, dst, n);
		break;
	}
	return tfm_seterr(TFM_E_UNSUPPORTED, "weights of type %s (%lld per row) not supported",
			  tfm_type_name(type), (long long)n);
}

/* ---- KV cache rows (f32, f16, q8_0) ---- */

size_t tfm_k_kv_bytes(int type, int64_t n_slots, int64_t n_head_kv, int64_t dim)
{
	size_t row;
	switch (type) {
	case TFM_TYPE_F32: row = (size_t)dim * 4; break;
	case TFM_TYPE_F16: row = (size_t)dim * 2; break;
	case TFM_TYPE_Q8_0:
		if (dim % TFM_QK)
			return 0;
		row = (size_t)(dim / TFM_QK) * sizeof(struct tfm_block_q8_0);
		break;
	default: return 0;
	}
	return row * (size_t)n_slots * (size_t)n_head_kv;
}

float tfm_k_kv_elem(int type, const void *row, int64_t d)
{
	const uint8_t *p = row;
	uint16_t h;
	switch (type) {
	case TFM_TYPE_F16:
		memcpy(&h, p + 2 * d, 2);
		return tfm_f16_to_f32(h);
	case TFM_TYPE_Q8_0: { /* block d / 32: f16 scale, 32 int8 */
		const uint8_t *b = p + (d / TFM_QK) * sizeof(struct tfm_block_q8_0);
		memcpy(&h, b, 2);
		return tfm_f16_to_f32(h) * (float)(int8_t)b[2 + d % TFM_QK];
	}
	}
	float f;
	memcpy(&f, p + 4 * d, 4);
	return f;
}

void tfm_k_kv_put(int type, void *row, const float *x, int64_t dim)
{
	uint8_t *p = row;
	switch (type) {
	case TFM_TYPE_F16:
		for (int64_t i = 0; i < dim; i++) {
			uint16_t h = tfm_f32_to_f16(x[i]);
			memcpy(p + 2 * i, &h, 2);
		}
		return;
	case TFM_TYPE_Q8_0:
		tfm_quantize_row(TFM_TYPE_Q8_0, x, row, dim);
		return;
	}
	memcpy(row, x, (size_t)dim * sizeof(float));
}
