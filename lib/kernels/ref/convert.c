/* convert.c: weight rows to f32 for the kernels (every weight type lib/quant
 * knows, through tfm_type_to_f32 and lib/quant's reference dequantizers),
 * and KV-cache rows in f32, f16 or q8_0.  Scalar; exact (every value of
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
	/* the specification of every weight type is its dequantizer: plain
	 * types in lib/quant/dtype.c, blocks in lib/quant/quant-ref.c */
	if (!tfm_k_type_ok(type) || tfm_type_to_f32(type, src, dst, n) != TFM_OK)
		return tfm_seterr(TFM_E_UNSUPPORTED, "weights of type %s (%lld per row) not supported",
				  tfm_type_name(type), (long long)n);
	return TFM_OK;
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
