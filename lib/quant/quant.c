/* quant.c: the type table of the block formats this library computes, and
 * the dispatch between the scalar reference kernels and the AVX2
 * and AVX-512 ones, or on aarch64 the NEON ones with and without the dot
 * product instructions (chosen once, at run time, from what the CPU
 * reports and TFM_ISA allows). */
#include "quant/quant-impl.h"

#include "tfm.h"

#include <stdlib.h>
#include <string.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

typedef void (*quant_fn)(const float *x, void *y, int64_t n);
typedef void (*dequant_fn)(const void *x, float *y, int64_t n);

struct qtype {
	int type;
	int64_t blck;
	size_t bytes;
	int dot_type;
	quant_fn quant_ref;
	dequant_fn dequant_ref;
	tfm_vec_dot_fn dot_ref;
};

static const struct qtype qtypes[] = {
	{TFM_TYPE_Q4_0, TFM_QK, sizeof(struct tfm_block_q4_0), TFM_TYPE_Q8_0,
	 tfm_quantize_q4_0_ref, tfm_dequantize_q4_0_ref, tfm_vec_dot_q4_0_q8_0_ref},
	{TFM_TYPE_Q4_1, TFM_QK, sizeof(struct tfm_block_q4_1), TFM_TYPE_Q8_1,
	 tfm_quantize_q4_1_ref, tfm_dequantize_q4_1_ref, tfm_vec_dot_q4_1_q8_1_ref},
	{TFM_TYPE_Q5_0, TFM_QK, sizeof(struct tfm_block_q5_0), TFM_TYPE_Q8_0,
	 tfm_quantize_q5_0_ref, tfm_dequantize_q5_0_ref, tfm_vec_dot_q5_0_q8_0_ref},
	{TFM_TYPE_Q5_1, TFM_QK, sizeof(struct tfm_block_q5_1), TFM_TYPE_Q8_1,
	 tfm_quantize_q5_1_ref, tfm_dequantize_q5_1_ref, tfm_vec_dot_q5_1_q8_1_ref},
	{TFM_TYPE_Q8_0, TFM_QK, sizeof(struct tfm_block_q8_0), TFM_TYPE_Q8_0,
	 tfm_quantize_q8_0_ref, tfm_dequantize_q8_0_ref, tfm_vec_dot_q8_0_q8_0_ref},
	{TFM_TYPE_Q8_1, TFM_QK, sizeof(struct tfm_block_q8_1), -1,
	 tfm_quantize_q8_1_ref, tfm_dequantize_q8_1_ref, NULL},
	{TFM_TYPE_Q4_K, TFM_QK_K, sizeof(struct tfm_block_q4_K), TFM_TYPE_Q8_K,
	 tfm_quantize_q4_K_ref, tfm_dequantize_q4_K_ref, tfm_vec_dot_q4_K_q8_K_ref},
	{TFM_TYPE_Q5_K, TFM_QK_K, sizeof(struct tfm_block_q5_K), TFM_TYPE_Q8_K,
	 tfm_quantize_q5_K_ref, tfm_dequantize_q5_K_ref, tfm_vec_dot_q5_K_q8_K_ref},
	{TFM_TYPE_Q6_K, TFM_QK_K, sizeof(struct tfm_block_q6_K), TFM_TYPE_Q8_K,
	 tfm_quantize_q6_K_ref, tfm_dequantize_q6_K_ref, tfm_vec_dot_q6_K_q8_K_ref},
	{TFM_TYPE_Q8_K, TFM_QK_K, sizeof(struct tfm_block_q8_K), -1,
	 tfm_quantize_q8_K_ref, tfm_dequantize_q8_K_ref, NULL},
	{TFM_TYPE_F32, 1, 4, -1, NULL, NULL, NULL},
	{TFM_TYPE_F16, 1, 2, -1, NULL, NULL, NULL},
	{TFM_TYPE_BF16, 1, 2, -1, NULL, NULL, NULL},
};

static const struct qtype *find(int type)
{
	for (size_t i = 0; i < sizeof qtypes / sizeof qtypes[0]; i++)
		if (qtypes[i].type == type)
			return &qtypes[i];
	return NULL;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does
 * not know "f16c", so the tree did not build with clang. */
static int have_f16c(void)
{
	unsigned a, b, c, d;
	return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

/* The paths, lowest first: the reference kernels, then on x86 AVX2 (with
 * FMA and F16C) and AVX-512 (F, BW, VL, DQ, VNNI and BF16: the -m flags the
 * Makefile gives *-avx512.c), on aarch64 NEON (every ARMv8-A processor) and
 * NEON with SDOT (HWCAP_ASIMDDP). */
#if defined(__x86_64__) || defined(__i386__)
enum { X86 = 1, ARM64 = 0 };
static const char *const level_name[] = {"scalar", "avx2", "avx512"};
#elif defined(__aarch64__)
enum { X86 = 0, ARM64 = 1 };
static const char *const level_name[] = {"scalar", "neon", "dotprod"};
#else
enum { X86 = 0, ARM64 = 0 };
static const char *const level_name[] = {"scalar"};
#endif

static int have_level(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && have_f16c()))
		return 0;
	int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
		     __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
	return avx512 ? 2 : 1;
#elif defined(__aarch64__)
	return getauxval(AT_HWCAP) & HWCAP_ASIMDDP ? 2 : 1;
#else
	return 0;
#endif
}

/* The path in use (an index into level_name), chosen once: the best this
 * processor has, lowered by TFM_ISA to the path it names as the CPU
 * backend's kernels are (cpu.c), so that each path runs on one machine.  A
 * name this target does not know or the processor lacks leaves the best
 * (cpu.c warns of it: not again here).  tfm_quant_set_isa changes it. */
static int cached_level = -1;

static int level_of(const char *want)
{
	int l = have_level();
	for (int k = 0; want && k < l; k++)
		if (!strcmp(want, level_name[k]))
			l = k;
	return l;
}

static int level(void)
{
	if (cached_level < 0)
		cached_level = level_of(getenv("TFM_ISA"));
	return cached_level;
}

void tfm_quant_set_isa(const char *isa) { cached_level = level_of(isa); }

int tfm_quant_cpu_avx2(void) { return X86 && level() >= 1; }
int tfm_quant_cpu_avx512(void) { return X86 && level() >= 2; }
int tfm_quant_cpu_neon(void) { return ARM64 && level() >= 1; }
int tfm_quant_cpu_dotprod(void) { return ARM64 && level() >= 2; }

const char *tfm_quant_isa(void) { return level_name[level()]; }

int tfm_quant_supported(int type) { return find(type) != NULL; }

int64_t tfm_quant_blck(int type)
{
	const struct qtype *q = find(type);
	return q ? q->blck : 0;
}

size_t tfm_quant_block_bytes(int type)
{
	const struct qtype *q = find(type);
	return q ? q->bytes : 0;
}

size_t tfm_quant_row_bytes(int type, int64_t n)
{
	const struct qtype *q = find(type);
	if (!q || n < 0 || n % q->blck)
		return 0;
	return (size_t)(n / q->blck) * q->bytes;
}

static int check(const struct qtype *q, int type, int64_t n)
{
	if (!q)
		return tfm_seterr(TFM_E_UNSUPPORTED, "type %d: no quantizer for this type", type);
	if (n < 0 || n % q->blck)
		return tfm_seterr(TFM_E_INVAL, "row of %lld elements is not a multiple of %lld",
				  (long long)n, (long long)q->blck);
	return TFM_OK;
}

/* The plain types, element by element. */
/* The plain types go through memcpy: a GGUF with alignment 1 is valid, so
 * tensor data need not be aligned for float or uint16_t loads. */
static void from_f32(int type, const float *x, void *vy, int64_t n)
{
	uint8_t *y = vy;
	if (type == TFM_TYPE_F32) {
		memcpy(y, x, (size_t)n * sizeof(float));
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		uint16_t h = type == TFM_TYPE_F16 ? tfm_f32_to_f16(x[i]) : tfm_f32_to_bf16(x[i]);
		memcpy(y + 2 * i, &h, 2);
	}
}

static void to_f32(int type, const void *vx, float *y, int64_t n)
{
	const uint8_t *x = vx;
	if (type == TFM_TYPE_F32) {
		memcpy(y, x, (size_t)n * sizeof(float));
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, x + 2 * i, 2);
		y[i] = type == TFM_TYPE_F16 ? tfm_f16_to_f32(h) : tfm_bf16_to_f32(h);
	}
}

int tfm_quantize_row_ref(int type, const float *x, void *y, int64_t n)
{
	const struct qtype *q = find(type);
	int st = check(q, type, n);
	if (st)
		return st;
	if (q->quant_ref)
		q->quant_ref(x, y, n);
	else
		from_f32(type, x, y, n);
	return TFM_OK;
}

int tfm_quantize_row(int type, const float *x, void *y, int64_t n)
{
	const struct qtype *q = find(type);
	int st = check(q, type, n);
	if (st)
		return st;
#if defined(__x86_64__) || defined(__i386__)
	if (tfm_quant_cpu_avx2()) {
		switch (type) {
		case TFM_TYPE_Q8_1: tfm_quantize_q8_1_avx2(x, y, n); return TFM_OK;
		case TFM_TYPE_Q8_K: tfm_quantize_q8_K_avx2(x, y, n); return TFM_OK;
		/* rounds ties to even where the reference (roundf) rounds them
		 * away from zero, as ggml's own fast version does: for
		 * activations; weights for files go through the reference */
		case TFM_TYPE_Q8_0: tfm_quantize_q8_0_avx2(x, y, n); return TFM_OK;
		}
	}
#elif defined(__aarch64__)
	if (tfm_quant_cpu_neon()) {
		switch (type) {
		case TFM_TYPE_Q8_1: tfm_quantize_q8_1_neon(x, y, n); return TFM_OK;
		case TFM_TYPE_Q8_K: tfm_quantize_q8_K_neon(x, y, n); return TFM_OK;
		/* ties to even, as the AVX2 version (above) */
		case TFM_TYPE_Q8_0: tfm_quantize_q8_0_neon(x, y, n); return TFM_OK;
		}
	}
#endif
	return tfm_quantize_row_ref(type, x, y, n);
}

int tfm_dequantize_row_ref(int type, const void *x, float *y, int64_t n)
{
	const struct qtype *q = find(type);
	int st = check(q, type, n);
	if (st)
		return st;
	if (q->dequant_ref)
		q->dequant_ref(x, y, n);
	else
		to_f32(type, x, y, n);
	return TFM_OK;
}

int tfm_dequantize_row(int type, const void *x, float *y, int64_t n)
{
	const struct qtype *q = find(type);
	int st = check(q, type, n);
	if (st)
		return st;
#if defined(__x86_64__) || defined(__i386__)
	if (tfm_quant_cpu_avx2()) {
		switch (type) {
		case TFM_TYPE_Q4_0: tfm_dequantize_q4_0_avx2(x, y, n); return TFM_OK;
		case TFM_TYPE_Q8_0: tfm_dequantize_q8_0_avx2(x, y, n); return TFM_OK;
		}
	}
#endif
	return tfm_dequantize_row_ref(type, x, y, n);
}

int tfm_vec_dot_type(int type)
{
	const struct qtype *q = find(type);
	return q && q->dot_ref ? q->dot_type : -1;
}

tfm_vec_dot_fn tfm_vec_dot_ref(int type)
{
	const struct qtype *q = find(type);
	return q ? q->dot_ref : NULL;
}

tfm_vec_dot_fn tfm_vec_dot(int type)
{
#if defined(__aarch64__)
	if (tfm_quant_cpu_dotprod()) {
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_vec_dot_q4_0_q8_0_dotprod;
		case TFM_TYPE_Q4_1: return tfm_vec_dot_q4_1_q8_1_dotprod;
		case TFM_TYPE_Q5_0: return tfm_vec_dot_q5_0_q8_0_dotprod;
		case TFM_TYPE_Q5_1: return tfm_vec_dot_q5_1_q8_1_dotprod;
		case TFM_TYPE_Q8_0: return tfm_vec_dot_q8_0_q8_0_dotprod;
		case TFM_TYPE_Q4_K: return tfm_vec_dot_q4_K_q8_K_dotprod;
		case TFM_TYPE_Q5_K: return tfm_vec_dot_q5_K_q8_K_dotprod;
		case TFM_TYPE_Q6_K: return tfm_vec_dot_q6_K_q8_K_dotprod;
		}
	}
	if (tfm_quant_cpu_neon()) {
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_vec_dot_q4_0_q8_0_neon;
		case TFM_TYPE_Q4_1: return tfm_vec_dot_q4_1_q8_1_neon;
		case TFM_TYPE_Q5_0: return tfm_vec_dot_q5_0_q8_0_neon;
		case TFM_TYPE_Q5_1: return tfm_vec_dot_q5_1_q8_1_neon;
		case TFM_TYPE_Q8_0: return tfm_vec_dot_q8_0_q8_0_neon;
		case TFM_TYPE_Q4_K: return tfm_vec_dot_q4_K_q8_K_neon;
		case TFM_TYPE_Q5_K: return tfm_vec_dot_q5_K_q8_K_neon;
		case TFM_TYPE_Q6_K: return tfm_vec_dot_q6_K_q8_K_neon;
		}
	}
#endif
#if defined(__x86_64__) || defined(__i386__)
	if (tfm_quant_cpu_avx512()) {
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_vec_dot_q4_0_q8_0_avx512;
		case TFM_TYPE_Q8_0: return tfm_vec_dot_q8_0_q8_0_avx512;
		case TFM_TYPE_Q4_K: return tfm_vec_dot_q4_K_q8_K_avx512;
		case TFM_TYPE_Q5_K: return tfm_vec_dot_q5_K_q8_K_avx512;
		case TFM_TYPE_Q6_K: return tfm_vec_dot_q6_K_q8_K_avx512;
		}
	}
	if (tfm_quant_cpu_avx2()) {
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_vec_dot_q4_0_q8_0_avx2;
		case TFM_TYPE_Q4_1: return tfm_vec_dot_q4_1_q8_1_avx2;
		case TFM_TYPE_Q5_0: return tfm_vec_dot_q5_0_q8_0_avx2;
		case TFM_TYPE_Q5_1: return tfm_vec_dot_q5_1_q8_1_avx2;
		case TFM_TYPE_Q8_0: return tfm_vec_dot_q8_0_q8_0_avx2;
		case TFM_TYPE_Q4_K: return tfm_vec_dot_q4_K_q8_K_avx2;
		case TFM_TYPE_Q5_K: return tfm_vec_dot_q5_K_q8_K_avx2;
		case TFM_TYPE_Q6_K: return tfm_vec_dot_q6_K_q8_K_avx2;
		}
	}
#endif
	return tfm_vec_dot_ref(type);
}
