/* convert.c: weight rows to f32 for the kernels (every weight type lib/quant
 * knows, through tfm_type_to_f32 and lib/quant's reference dequantizers),
 * and KV-cache rows (f32, f16, bf16, q8_0, q5_1, q5_0, q4_1, q4_0).  Scalar;
 * exact (every value of these types is representable in f32). */
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

/* ---- KV cache rows ---- */

int tfm_k_kv_type_ok(int type)
{
	switch (type) {
	case TFM_TYPE_F32: case TFM_TYPE_F16: case TFM_TYPE_BF16: case TFM_TYPE_Q8_0:
	case TFM_TYPE_Q5_1: case TFM_TYPE_Q5_0: case TFM_TYPE_Q4_1: case TFM_TYPE_Q4_0:
		return 1;
	}
	return 0;
}

size_t tfm_k_kv_bytes(int type, int64_t n_slots, int64_t n_head_kv, int64_t dim)
{
	if (!tfm_k_kv_type_ok(type) || dim < 1)
		return 0;
	const struct tfm_type_info *ti = tfm_type_info(type);
	if (dim % ti->blck)
		return 0;
	size_t row = (size_t)(dim / ti->blck) * ti->size;
	return row * (size_t)n_slots * (size_t)n_head_kv;
}

void tfm_k_kv_put(int type, void *row, const float *x, int64_t dim)
{
	uint8_t *p = row;
	switch (type) {
	case TFM_TYPE_F32:
		memcpy(row, x, (size_t)dim * sizeof(float));
		return;
	case TFM_TYPE_F16:
		for (int64_t i = 0; i < dim; i++) {
			uint16_t h = tfm_f32_to_f16(x[i]);
			memcpy(p + 2 * i, &h, 2);
		}
		return;
	}
	/* bf16 (round to nearest even) and the block types: lib/quant's
	 * quantizer, so every backend stores the same bytes */
	tfm_quantize_row(type, x, row, dim);
}
