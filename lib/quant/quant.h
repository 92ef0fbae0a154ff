/* quant.h: ggml's quantized block formats (q8_0, q4_0, q4_1, q5_0, q5_1,
 * q8_1, q4_K, q5_K, q6_K, q8_K) with ggml's exact byte layouts, their
 * quantizers (scalar reference reproducing ggml's *_ref quantizers, and fast
 * versions where they exist), dequantizers, and the integer dot products of a
 * weight row with an activation row quantized to q8_0, q8_1 or q8_K.
 * Types are enum tfm_type ids (quant/dtype.h).  Rows hold n elements, n a
 * multiple of the block size; f32, f16 and bf16 are accepted as well. */
#ifndef TFM_QUANT_H
#define TFM_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "quant/dtype.h"

#define TFM_QK 32   /* elements per block of the *_0, *_1 and q8_0 types */
#define TFM_QK_K 256 /* elements per super-block of the K-quants */

/* The blocks, field for field as ggml-common.h lays them out (halves are
 * IEEE binary16 bit patterns, little-endian like everything in GGUF).  The
 * weight blocks are packed (alignment 1): a GGUF may align its tensor data
 * to 1 byte, so a block's uint16_t scale can sit at an odd address, and
 * packed members are read with loads that allow that (no UB).  The
 * activation blocks q8_1 and q8_K live in tfm's own aligned buffers. */
#define TFM_BLOCK __attribute__((packed))
struct TFM_BLOCK tfm_block_q4_0 { uint16_t d; uint8_t qs[TFM_QK / 2]; };           /* 18 bytes */
struct TFM_BLOCK tfm_block_q4_1 { uint16_t d, m; uint8_t qs[TFM_QK / 2]; };        /* 20 */
struct TFM_BLOCK tfm_block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[TFM_QK / 2]; };  /* 22 */
struct TFM_BLOCK tfm_block_q5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[TFM_QK / 2]; }; /* 24 */
struct TFM_BLOCK tfm_block_q8_0 { uint16_t d; int8_t qs[TFM_QK]; };                /* 34 */
struct tfm_block_q8_1 { uint16_t d, s; int8_t qs[TFM_QK]; };             /* 36; s = d*sum(qs) */
struct TFM_BLOCK tfm_block_q4_K {                                                  /* 144 */
	uint16_t d, dmin;          /* super-block scales of the 6-bit scales and mins */
	uint8_t scales[12];        /* 8 scales and 8 mins, 6 bits each, packed */
	uint8_t qs[TFM_QK_K / 2];  /* 4-bit quants */
};
struct TFM_BLOCK tfm_block_q5_K {                                                  /* 176 */
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qh[TFM_QK_K / 8];  /* fifth bits */
	uint8_t qs[TFM_QK_K / 2];  /* low 4 bits */
};
struct TFM_BLOCK tfm_block_q6_K {                                                  /* 210 */
	uint8_t ql[TFM_QK_K / 2];  /* low 4 bits */
	uint8_t qh[TFM_QK_K / 4];  /* high 2 bits */
	int8_t scales[TFM_QK_K / 16];
	uint16_t d;
};
struct tfm_block_q8_K {                                                  /* 292 */
	float d;
	int8_t qs[TFM_QK_K];
	int16_t bsums[TFM_QK_K / 16]; /* sums of qs in groups of 16 */
};

/* Does this library quantize and dequantize the type (the list above, plus
 * f32, f16 and bf16)? */
int tfm_quant_supported(int type);
/* Elements per block and bytes per block (0 for unsupported types). */
int64_t tfm_quant_blck(int type);
size_t tfm_quant_block_bytes(int type);
/* Bytes of a row of n elements, or 0 when n is not a multiple of the block. */
size_t tfm_quant_row_bytes(int type, int64_t n);

/* Quantize / dequantize a row of n elements.  The _ref versions are the
 * scalar specification; for types without a fast version the two are the
 * same.  The reference quantizers follow ggml's quantize_row_*_ref (what
 * llama-quantize runs without an importance matrix).  TFM_E_UNSUPPORTED
 * for other types, TFM_E_INVAL when n is not a multiple of the block. */
int tfm_quantize_row_ref(int type, const float *x, void *y, int64_t n);
int tfm_quantize_row(int type, const float *x, void *y, int64_t n);
int tfm_dequantize_row_ref(int type, const void *x, float *y, int64_t n);
int tfm_dequantize_row(int type, const void *x, float *y, int64_t n);

/* Dot products, as ggml computes them: the weight row x (type) against the
 * activation row y quantized to tfm_vec_dot_type(type) (q8_0 for q8_0, q4_0
 * and q5_0; q8_1 for q4_1 and q5_1; q8_K for the K-quants).  Returns the
 * activation type, or -1 for a type without a dot product. */
int tfm_vec_dot_type(int type);
typedef float (*tfm_vec_dot_fn)(int64_t n, const void *x, const void *y);
/* NULL for a type without one.  tfm_vec_dot picks the fastest version the
 * CPU runs (AVX-512 VNNI or AVX2 when present), tfm_vec_dot_ref the scalar
 * one. */
tfm_vec_dot_fn tfm_vec_dot_ref(int type);
tfm_vec_dot_fn tfm_vec_dot(int type);

/* Which fast versions this CPU uses ("avx512", "avx2" or "scalar"; aarch64:
 * "dotprod", "neon" or "scalar"): the best it has, or the lower one that
 * TFM_ISA names, as the CPU backend's kernels. */
const char *tfm_quant_isa(void);
/* Use the path isa names, or the best this processor has when that is
 * lower or isa is not a name above (tfm_cpu_set_isa calls it, so that a
 * forced path lowers lib/quant's dots and quantizers too).  Not while
 * kernels run. */
void tfm_quant_set_isa(const char *isa);

#endif
