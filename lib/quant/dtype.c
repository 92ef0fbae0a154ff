/* dtype.c: the ggml tensor type table (ids, names, block sizes, bytes per
 * block, all as ggml defines them) and row conversions to and from f32 for
 * the plain types; block types are dequantized by lib/quant's reference
 * code.  Types without a conversion report TFM_E_UNSUPPORTED naming the
 * type. */
#include "tfm.h"
#include "quant/quant.h"

#include <string.h>
#include <strings.h>

/* Bytes per block, from ggml's block structs (ggml-common.h) and checked
 * against ggml.c's type_traits.  QK_K = 256.  Note: q8_1 is 36 bytes (two
 * f16 then 32 int8) in ggml; the Python gguf package still lists an older
 * 40-byte layout (two f32). */
static const struct tfm_type_info types[TFM_TYPE_COUNT] = {
	[TFM_TYPE_F32]     = { "f32",      1,   4 },
	[TFM_TYPE_F16]     = { "f16",      1,   2 },
	[TFM_TYPE_Q4_0]    = { "q4_0",    32,  18 },  /* d:f16, qs[16] */
	[TFM_TYPE_Q4_1]    = { "q4_1",    32,  20 },  /* d:f16, m:f16, qs[16] */
	[TFM_TYPE_Q5_0]    = { "q5_0",    32,  22 },  /* d:f16, qh[4], qs[16] */
	[TFM_TYPE_Q5_1]    = { "q5_1",    32,  24 },  /* d:f16, m:f16, qh[4], qs[16] */
	[TFM_TYPE_Q8_0]    = { "q8_0",    32,  34 },  /* d:f16, qs[32] */
	[TFM_TYPE_Q8_1]    = { "q8_1",    32,  36 },  /* d:f16, s:f16, qs[32] */
	[TFM_TYPE_Q2_K]    = { "q2_K",   256,  84 },
	[TFM_TYPE_Q3_K]    = { "q3_K",   256, 110 },
	[TFM_TYPE_Q4_K]    = { "q4_K",   256, 144 },
	[TFM_TYPE_Q5_K]    = { "q5_K",   256, 176 },
	[TFM_TYPE_Q6_K]    = { "q6_K",   256, 210 },
	[TFM_TYPE_Q8_K]    = { "q8_K",   256, 292 },  /* d:f32, qs[256], bsums:i16[16] */
	[TFM_TYPE_IQ2_XXS] = { "iq2_xxs", 256,  66 },
	[TFM_TYPE_IQ2_XS]  = { "iq2_xs",  256,  74 },
	[TFM_TYPE_IQ3_XXS] = { "iq3_xxs", 256,  98 },
	[TFM_TYPE_IQ1_S]   = { "iq1_s",   256,  50 },
	[TFM_TYPE_IQ4_NL]  = { "iq4_nl",   32,  18 },
	[TFM_TYPE_IQ3_S]   = { "iq3_s",   256, 110 },
	[TFM_TYPE_IQ2_S]   = { "iq2_s",   256,  82 },
	[TFM_TYPE_IQ4_XS]  = { "iq4_xs",  256, 136 },
	[TFM_TYPE_I8]      = { "i8",       1,   1 },
	[TFM_TYPE_I16]     = { "i16",      1,   2 },
	[TFM_TYPE_I32]     = { "i32",      1,   4 },
	[TFM_TYPE_I64]     = { "i64",      1,   8 },
	[TFM_TYPE_F64]     = { "f64",      1,   8 },
	[TFM_TYPE_IQ1_M]   = { "iq1_m",   256,  56 },
	[TFM_TYPE_BF16]    = { "bf16",     1,   2 },
	[TFM_TYPE_TQ1_0]   = { "tq1_0",   256,  54 },
	[TFM_TYPE_TQ2_0]   = { "tq2_0",   256,  66 },
	[TFM_TYPE_MXFP4]   = { "mxfp4",    32,  17 },
};

const struct tfm_type_info *tfm_type_info(int type)
{
	if (type < 0 || type >= TFM_TYPE_COUNT || !types[type].name)
		return NULL;
	return &types[type];
}

const char *tfm_type_name(int type)
{
	/* One buffer per thread is enough for a message. */
	static _Thread_local char buf[24];
	const struct tfm_type_info *ti = tfm_type_info(type);
	if (ti)
		return ti->name;
	snprintf(buf, sizeof buf, "type#%d", type);
	return buf;
}

int tfm_type_from_name(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < TFM_TYPE_COUNT; i++)
		if (types[i].name && !strcasecmp(types[i].name, name))
			return i;
	return -1;
}

size_t tfm_type_nbytes(int type, int64_t n)
{
	const struct tfm_type_info *ti = tfm_type_info(type);
	if (!ti || n < 0 || n % ti->blck)
		return 0;
	uint64_t blocks = (uint64_t)(n / ti->blck);
	if (blocks && ti->size > SIZE_MAX / blocks)
		return 0;
	return (size_t)blocks * ti->size;
}

/* Little-endian loads: blocks are byte arrays, not aligned structs. */
static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int check_n(int type, int64_t n, const char *fn)
{
	const struct tfm_type_info *ti = tfm_type_info(type);
	if (!ti)
		return tfm_seterr(TFM_E_INVAL, "%s: unknown tensor type %s", fn, tfm_type_name(type));
	if (n < 0 || n % ti->blck)
		return tfm_seterr(TFM_E_INVAL, "%s: %lld elements is not a multiple of the %s block (%lld)",
				  fn, (long long)n, ti->name, (long long)ti->blck);
	return TFM_OK;
}

int tfm_type_to_f32(int type, const void *src, float *dst, int64_t n)
{
	int st = check_n(type, n, "to_f32");
	if (st)
		return st;
	const uint8_t *s = src;
	switch (type) {
	case TFM_TYPE_F32:
		memcpy(dst, s, (size_t)n * 4);
		return TFM_OK;
	case TFM_TYPE_F16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = tfm_f16_to_f32(ld16(s + 2 * i));
		return TFM_OK;
	case TFM_TYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = tfm_bf16_to_f32(ld16(s + 2 * i));
		return TFM_OK;
	case TFM_TYPE_F64:
		for (int64_t i = 0; i < n; i++) {
			double d;
			memcpy(&d, s + 8 * i, 8);
			dst[i] = (float)d;
		}
		return TFM_OK;
	case TFM_TYPE_I8:
		for (int64_t i = 0; i < n; i++)
			dst[i] = (float)(int8_t)s[i];
		return TFM_OK;
	case TFM_TYPE_I16:
		for (int64_t i = 0; i < n; i++)
			dst[i] = (float)(int16_t)ld16(s + 2 * i);
		return TFM_OK;
	case TFM_TYPE_I32:
		for (int64_t i = 0; i < n; i++)
			dst[i] = (float)(int32_t)ld32(s + 4 * i);
		return TFM_OK;
	}
	/* block types: lib/quant's reference dequantizers (ggml's layouts) */
	if (tfm_dequantize_row_ref(type, src, dst, n) != TFM_OK)
		return tfm_seterr(TFM_E_UNSUPPORTED, "no conversion from %s to f32", tfm_type_name(type));
	return TFM_OK;
}

int tfm_type_from_f32(int type, const float *src, void *dst, int64_t n)
{
	int st = check_n(type, n, "from_f32");
	if (st)
		return st;
	uint8_t *d = dst;
	switch (type) {
	case TFM_TYPE_F32:
		memcpy(d, src, (size_t)n * 4);
		return TFM_OK;
	case TFM_TYPE_F16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = tfm_f32_to_f16(src[i]);
			memcpy(d + 2 * i, &h, 2);
		}
		return TFM_OK;
	case TFM_TYPE_BF16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = tfm_f32_to_bf16(src[i]);
			memcpy(d + 2 * i, &h, 2);
		}
		return TFM_OK;
	case TFM_TYPE_F64:
		for (int64_t i = 0; i < n; i++) {
			double v = src[i];
			memcpy(d + 8 * i, &v, 8);
		}
		return TFM_OK;
	}
	return tfm_seterr(TFM_E_UNSUPPORTED, "no conversion from f32 to %s", tfm_type_name(type));
}
