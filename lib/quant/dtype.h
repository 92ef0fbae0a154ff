/* dtype.h: the ggml tensor types, by their GGUF ids.  Every id ggml defines
 * is known by name with its block size and bytes per block, so files with
 * types tfm cannot compute still parse; conversion to and from f32 reports
 * TFM_E_UNSUPPORTED for the types it does not handle. */
#ifndef TFM_DTYPE_H
#define TFM_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum tfm_type {
	TFM_TYPE_F32 = 0, TFM_TYPE_F16 = 1, TFM_TYPE_Q4_0 = 2, TFM_TYPE_Q4_1 = 3,
	/* 4, 5: removed in ggml (Q4_2, Q4_3) */
	TFM_TYPE_Q5_0 = 6, TFM_TYPE_Q5_1 = 7, TFM_TYPE_Q8_0 = 8, TFM_TYPE_Q8_1 = 9,
	TFM_TYPE_Q2_K = 10, TFM_TYPE_Q3_K = 11, TFM_TYPE_Q4_K = 12, TFM_TYPE_Q5_K = 13,
	TFM_TYPE_Q6_K = 14, TFM_TYPE_Q8_K = 15, TFM_TYPE_IQ2_XXS = 16, TFM_TYPE_IQ2_XS = 17,
	TFM_TYPE_IQ3_XXS = 18, TFM_TYPE_IQ1_S = 19, TFM_TYPE_IQ4_NL = 20, TFM_TYPE_IQ3_S = 21,
	TFM_TYPE_IQ2_S = 22, TFM_TYPE_IQ4_XS = 23, TFM_TYPE_I8 = 24, TFM_TYPE_I16 = 25,
	TFM_TYPE_I32 = 26, TFM_TYPE_I64 = 27, TFM_TYPE_F64 = 28, TFM_TYPE_IQ1_M = 29,
	TFM_TYPE_BF16 = 30,
	/* 31-33: removed (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) */
	TFM_TYPE_TQ1_0 = 34, TFM_TYPE_TQ2_0 = 35,
	/* 36-38: removed (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) */
	TFM_TYPE_MXFP4 = 39,
	TFM_TYPE_COUNT = 40
};

struct tfm_type_info {
	const char *name;  /* "f32", "q4_K", ... (ggml's spelling) */
	int64_t blck;      /* elements per block (1 for plain types) */
	size_t size;       /* bytes per block */
};

/* NULL for an id that is out of range or removed. */
const struct tfm_type_info *tfm_type_info(int type);
const char *tfm_type_name(int type); /* "type#N" style text for unknown ids */
int tfm_type_from_name(const char *name); /* case-insensitive; -1 if unknown */
/* Bytes of n elements (n a multiple of the block size), or 0 if not. */
size_t tfm_type_nbytes(int type, int64_t n);
/* Rows of n elements: dst/src in f32.  TFM_E_UNSUPPORTED for types without
 * a conversion (with a message naming the type). */
int tfm_type_to_f32(int type, const void *src, float *dst, int64_t n);
int tfm_type_from_f32(int type, const float *src, void *dst, int64_t n);

#endif
