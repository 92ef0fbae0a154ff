/* cpu.c: the CPU backend's matmul and attention.  Decode (one token) of
 * f32/f16/bf16 weights is a matrix-vector product with AVX2/AVX-512 dot
 * products; decode and batches up to 16 tokens of quantized weights use
 * integer dots against the activations quantized once per matmul to q8_0 /
 * q8_1 / q8_K (llama.cpp's numerics): on AVX2 and AVX-512 alike, the
 * 8-row kernels of a copy regrouped by eight rows for q4_0, q5_0, q8_0
 * (qx8.c, qgemv-avx2.c) and q4_K, q5_K, q6_K (qx8k.c, qx8k-avx2.c;
 * qx8_for); where a matrix has no such copy, the 4-row AVX-512 VNNI
 * kernels of qgemv-avx512.c for q4_0, q5_0, q4_1 and qgemv-k-avx512.c for
 * q4_K, q5_K, q6_K (AVX2: qgemv-avx2.c for q4_0, q4_1, q5_0, q5_1,
 * qgemv-k-avx2.c for q4_K, q5_K; qgemv_for), lib/quant's one-row dots for
 * the others.  Prefill (more tokens) of every
 * quantized type is an 8-bit GEMM (x quantized to q8_0 once, as
 * llama.cpp): igemm-avx512.c with VNNI, igemm-avx2.c on any other AVX2
 * processor and for q5_1 and q6_K everywhere; f32/f16/bf16, and the scalar
 * path, run OpenBLAS sgemm on tiles of weight rows converted to f32 in
 * per-task scratch (lib/quant's dequantizers, its reference ones on the
 * scalar path), so no f32 copy of the weights is ever kept.  Attention: see
 * below.
 *
 * aarch64: the float kernels (dots, f16 rows, softmax, activations,
 * attention tiles, the recurrent scans) are NEON (*-neon.c), the same on
 * "neon" and "dotprod"; the two differ in the integer kernels of quantized
 * weights (SDOT where the processor has it).  Decode and small batches:
 * four rows at a time for q4_0, q4_1, q5_0, q5_1, q4_K, q5_K (qgemv-neon.h,
 * qgemv-k-neon.h, built as qgemv-neon.c and qgemv-dotprod.c), lib/quant's
 * one-row dots for the others (qgemv_for).  Prefill: the 8-bit GEMM of all
 * eight quantized types (x to q8_0 or q8_K as on x86): igemm-neon.c (SMULL)
 * on "neon", igemm-dotprod.c (SDOT) on "dotprod", one packing for both.
 * Their speed is unmeasured: written and checked under qemu-user only.
 *
 * Threads: our pool does all the parallel work and OpenBLAS is pinned to one
 * thread (openblas_set_num_threads(1) when the backend is first used).  Each
 * pool task calls sgemm on its own tiles.  One thread system means no
 * oversubscription and no hand-over between two pools on every layer, and
 * the split is by output rows in tiles of a fixed size, so every output is
 * computed by the same instructions in the same order whatever the thread
 * count: results are bit-identical for any n_threads. */
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#define TOK_TILE 128   /* tokens per sgemm call when tiling by tokens (cpu_matmul) */
#define TOK_MIN 1024   /* ... from this many tokens */
#define TOK_MAX_W (16.0 * 1024 * 1024) /* ... through f32 matrices of at most this many bytes */
#define GEMM_TILE 128  /* at most this many weight rows per sgemm call */
#define VDOT_MAX_BATCH 16 /* quantized x [16][in] fits the per-task scratch (64 in floats) */

static float dot_f32_scalar(const void *wv, const float *x, int64_t n)
{
	const float *w = wv;
	float s = 0;
	for (int64_t i = 0; i < n; i++)
		s += w[i] * x[i];
	return s;
}

static float dot_f16_scalar(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	float s = 0;
	for (int64_t i = 0; i < n; i++)
		s += tfm_f16_to_f32(w[i]) * x[i];
	return s;
}

static float dot_bf16_scalar(const void *wv, const float *x, int64_t n)
{
	const uint16_t *w = wv;
	float s = 0;
	for (int64_t i = 0; i < n; i++)
		s += tfm_bf16_to_f32(w[i]) * x[i];
	return s;
}

/* an 8-bit prefill GEMM: igemm-avx512.c (VNNI) or igemm-avx2.c; aarch64:
 * igemm-neon.c, with SDOT igemm-dotprod.c */
struct igemm_fns {
	size_t (*x_bytes)(int64_t n, int64_t in);
	size_t (*w_bytes)(int64_t rows, int64_t in);
	void (*pack_x)(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t group, void *q8,
		       int k256);
	int64_t group; /* tokens per group of pack_x */
	void (*prep_w)(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows, int64_t in);
	void (*gemm)(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
		     int64_t rows, int64_t in, int type);
	int more;      /* takes q5_1 and q6_K too (else the AVX2 GEMM does) */
};

#if defined(__x86_64__)
static void igemm_vnni(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
		       int64_t rows, int64_t in, int type)
{
	tfm_cpu_igemm(y, ldy, xp, n, wp, rows, in,
		      type == TFM_TYPE_Q4_1 || type == TFM_TYPE_Q4_K || type == TFM_TYPE_Q5_K);
}

static const struct igemm_fns igemm_avx512 = {
	tfm_cpu_igemm_x_bytes, tfm_cpu_igemm_w_bytes, tfm_cpu_igemm_pack_x, 16,
	tfm_cpu_igemm_prep_w, igemm_vnni, 0};
static const struct igemm_fns igemm_avx2 = {
	tfm_cpu_igemm_x_bytes_avx2, tfm_cpu_igemm_w_bytes_avx2, tfm_cpu_igemm_pack_x_avx2, 8,
	tfm_cpu_igemm_prep_w_avx2, tfm_cpu_igemm_avx2, 1};
#elif defined(__aarch64__)
static const struct igemm_fns igemm_neon = {
	tfm_cpu_igemm_x_bytes_neon, tfm_cpu_igemm_w_bytes_neon, tfm_cpu_igemm_pack_x_neon, 8,
	tfm_cpu_igemm_prep_w_neon, tfm_cpu_igemm_neon, 1};
static const struct igemm_fns igemm_dotprod = {
	tfm_cpu_igemm_x_bytes_neon, tfm_cpu_igemm_w_bytes_neon, tfm_cpu_igemm_pack_x_neon, 8,
	tfm_cpu_igemm_prep_w_neon, tfm_cpu_igemm_dotprod, 1};
#endif

static struct {
	const char *isa;
	tfm_cpu_dot_fn f32, f16, bf16;
	tfm_cpu_max_fn max;
	tfm_cpu_expsum_fn expsum;
	void (*f16row)(float *y, const uint16_t *x, int64_t n); /* NULL: scalar */
	void (*attn_qk)(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			int64_t ldk, int64_t hd, int64_t nk);
	void (*attn_pv)(float *const *o, const float *corr, const float *p, int64_t ldp,
			int64_t nq, const float *v, int64_t nk, int64_t vd);
	void (*act_mul)(float *g, const float *u, int64_t n, int act); /* SiLU, GELU-tanh; may be NULL */
	void (*add)(float *y, const float *a, const float *b, int64_t n); /* y = a + b */
	int qgemv_ok;             /* the AVX-512 VNNI decode kernels (lib/quant says "avx512":
				   * each row bit-identical to its one-row dot) */
	const struct igemm_fns *igemm; /* the 8-bit prefill GEMM, or NULL (sgemm) */
	int qgemv_avx2;           /* the AVX2 four-row kernels (lib/quant says "avx2") */
	struct tfm_backend scan;  /* the recurrent steps, mamba_scan .. mlstm_step */
} g_isa;

static float max_scalar(const float *x, int64_t n)
{
	float m = -INFINITY;
	for (int64_t i = 0; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

static float expsum_scalar(float *x, float mx, int64_t n)
{
	float s = 0;
	for (int64_t i = 0; i < n; i++) {
		x[i] = expf(x[i] - mx);
		s += x[i];
	}
	return s;
}
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static int have_avx512(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl");
}

/* every AVX2 + FMA processor has F16C */
static int have_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#elif defined(__aarch64__)
/* NEON (Advanced SIMD) is part of every ARMv8-A processor; the dot
 * product instructions (SDOT, ARMv8.2-A) are optional before ARMv8.4 */
static int have_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
#endif

/* this processor has instruction set isa (one of TFM_CPU_ISAS) */
static int have_isa(const char *isa)
{
	if (!strcmp(isa, "scalar"))
		return 1;
#if defined(__x86_64__)
	if (!strcmp(isa, "avx2"))
		return have_avx2();
	if (!strcmp(isa, "avx512"))
		return have_avx512();
#elif defined(__aarch64__)
	if (!strcmp(isa, "neon"))
		return 1;
	if (!strcmp(isa, "dotprod"))
		return have_dotprod();
#endif
	return 0;
}

static int known_isa(const char *isa)
{
	static const char *const isas[] = TFM_CPU_ISAS;
	for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
		if (!strcmp(isa, isas[i]))
			return 1;
	return 0;
}

/* attention tiles, generic (see cpu-impl.h) */
static void attn_qk_generic(float *s, int64_t lds, const float *q, int64_t nq, const float *kt,
			    int64_t ldk, int64_t hd, int64_t nk)
{
	for (int64_t i = 0; i < nq; i++)
		for (int64_t j = 0; j < nk; j++) {
			float a = 0;
			for (int64_t d = 0; d < hd; d++)
				a += q[i * hd + d] * kt[d * ldk + j];
			s[i * lds + j] = a;
		}
}

static void attn_pv_generic(float *const *o, const float *corr, const float *p, int64_t ldp,
			    int64_t nq, const float *v, int64_t nk, int64_t vd)
{
	for (int64_t i = 0; i < nq; i++)
		for (int64_t d = 0; d < vd; d++) {
			float a = 0;
			for (int64_t j = 0; j < nk; j++)
				a += p[i * ldp + j] * v[j * vd + d];
			o[i][d] = o[i][d] * corr[i] + a;
		}
}

static void isa_fill(const char *isa)
{
	memset(&g_isa, 0, sizeof g_isa); /* NULL entries fall back to generic code */
	g_isa.attn_qk = attn_qk_generic;
	g_isa.attn_pv = attn_pv_generic;
	g_isa.add = tfm_cpu_add_scalar;
	/* the recurrent steps, scalar: the references themselves */
	g_isa.scan.mamba_scan = tfm_ref_mamba_scan;
	g_isa.scan.mamba2_scan = tfm_ref_mamba2_scan;
	g_isa.scan.gdn_step = tfm_ref_gdn_step;
	g_isa.scan.rwkv4_wkv = tfm_ref_rwkv4_wkv;
	g_isa.scan.rwkv5_wkv = tfm_ref_rwkv5_wkv;
	g_isa.scan.rwkv7_wkv = tfm_ref_rwkv7_wkv;
	g_isa.scan.mlstm_step = tfm_ref_mlstm_step;
#if defined(__x86_64__)
	if (!strcmp(isa, "avx512")) {
		g_isa.isa = "avx512";
		g_isa.f32 = tfm_cpu_dot_f32_avx512;
		g_isa.f16 = tfm_cpu_dot_f16_avx512;
		g_isa.bf16 = tfm_cpu_dot_bf16_avx512;
		g_isa.max = tfm_cpu_max_avx512;
		g_isa.expsum = tfm_cpu_expsum_avx512;
		g_isa.f16row = tfm_cpu_f16_row_avx2;
		g_isa.act_mul = tfm_cpu_act_mul_avx512;
		g_isa.add = tfm_cpu_add_avx512;
		g_isa.qgemv_ok = !strcmp(tfm_quant_isa(), "avx512");
		/* the GEMM needs VNNI, not the BF16 that lib/quant's AVX-512
		 * path also wants (Cascade Lake has one and not the other) */
		/* without VNNI (Skylake-X) the AVX2 GEMM */
		g_isa.igemm = __builtin_cpu_supports("avx512vnni") &&
				      __builtin_cpu_supports("avx512dq")
			      ? &igemm_avx512 : &igemm_avx2;
		g_isa.attn_qk = tfm_cpu_attn_qk_avx512;
		g_isa.attn_pv = tfm_cpu_attn_pv_avx512;
		g_isa.scan.mamba_scan = tfm_cpu_mamba_scan_avx512;
		g_isa.scan.mamba2_scan = tfm_cpu_mamba2_scan_avx512;
		g_isa.scan.gdn_step = tfm_cpu_gdn_step_avx512;
		g_isa.scan.rwkv4_wkv = tfm_cpu_rwkv4_wkv_avx512;
		g_isa.scan.rwkv5_wkv = tfm_cpu_rwkv5_wkv_avx512;
		g_isa.scan.rwkv7_wkv = tfm_cpu_rwkv7_wkv_avx512;
		g_isa.scan.mlstm_step = tfm_cpu_mlstm_step_avx512;
	} else if (!strcmp(isa, "avx2")) {
		g_isa.isa = "avx2";
		g_isa.f32 = tfm_cpu_dot_f32_avx2;
		g_isa.f16 = tfm_cpu_dot_f16_avx2;
		g_isa.bf16 = tfm_cpu_dot_bf16_avx2;
		g_isa.max = tfm_cpu_max_avx2;
		g_isa.expsum = tfm_cpu_expsum_avx2;
		g_isa.f16row = tfm_cpu_f16_row_avx2;
		g_isa.act_mul = tfm_cpu_act_mul_avx2;
		g_isa.add = tfm_cpu_add_avx2;
		g_isa.attn_qk = tfm_cpu_attn_qk_avx2;
		g_isa.attn_pv = tfm_cpu_attn_pv_avx2;
		g_isa.qgemv_avx2 = !strcmp(tfm_quant_isa(), "avx2");
		g_isa.igemm = &igemm_avx2;
		g_isa.scan.mamba_scan = tfm_cpu_mamba_scan_avx2;
		g_isa.scan.mamba2_scan = tfm_cpu_mamba2_scan_avx2;
		g_isa.scan.gdn_step = tfm_cpu_gdn_step_avx2;
		g_isa.scan.rwkv4_wkv = tfm_cpu_rwkv4_wkv_avx2;
		g_isa.scan.rwkv5_wkv = tfm_cpu_rwkv5_wkv_avx2;
		g_isa.scan.rwkv7_wkv = tfm_cpu_rwkv7_wkv_avx2;
		g_isa.scan.mlstm_step = tfm_cpu_mlstm_step_avx2;
	} else
#elif defined(__aarch64__)
	if (!strcmp(isa, "neon") || !strcmp(isa, "dotprod")) {
		/* the same float kernels: the two differ in lib/quant's integer
		 * dots only (quant.c, which reads TFM_ISA too) */
		g_isa.isa = !strcmp(isa, "neon") ? "neon" : "dotprod";
		g_isa.f32 = tfm_cpu_dot_f32_neon;
		g_isa.f16 = tfm_cpu_dot_f16_neon;
		g_isa.bf16 = tfm_cpu_dot_bf16_neon;
		g_isa.max = tfm_cpu_max_neon;
		g_isa.expsum = tfm_cpu_expsum_neon;
		g_isa.f16row = tfm_cpu_f16_row_neon;
		g_isa.act_mul = tfm_cpu_act_mul_neon;
		g_isa.add = tfm_cpu_add_neon;
		g_isa.attn_qk = tfm_cpu_attn_qk_neon;
		g_isa.attn_pv = tfm_cpu_attn_pv_neon;
		g_isa.scan.mamba_scan = tfm_cpu_mamba_scan_neon;
		g_isa.scan.mamba2_scan = tfm_cpu_mamba2_scan_neon;
		g_isa.scan.gdn_step = tfm_cpu_gdn_step_neon;
		g_isa.scan.rwkv4_wkv = tfm_cpu_rwkv4_wkv_neon;
		g_isa.scan.rwkv5_wkv = tfm_cpu_rwkv5_wkv_neon;
		g_isa.scan.rwkv7_wkv = tfm_cpu_rwkv7_wkv_neon;
		g_isa.scan.mlstm_step = tfm_cpu_mlstm_step_neon;
		g_isa.igemm = !strcmp(isa, "dotprod") ? &igemm_dotprod : &igemm_neon;
	} else
#endif
	{
		g_isa.isa = "scalar";
		g_isa.f32 = dot_f32_scalar;
		g_isa.f16 = dot_f16_scalar;
		g_isa.bf16 = dot_bf16_scalar;
		g_isa.max = max_scalar;
		g_isa.expsum = expsum_scalar;
	}
}

/* OpenBLAS's pthread build starts its workers when it is loaded and lets
 * them spin for a while (~0.1 s, a whole core); we never use them (see the
 * top of this file), so stop them where the build exports the call.  Weak:
 * other BLAS builds simply lack it.  Like openblas_set_num_threads(1), this
 * is process-wide. */
extern void blas_thread_shutdown_(void) __attribute__((weak));

/* TFM_ISA=scalar|avx2|avx512 (aarch64: scalar|neon|dotprod) forces a path
 * (one the processor has), so that an AVX-512 machine runs and tests the
 * AVX2 kernels too.  lib/quant reads it as well (quant.c: its dots and
 * quantizers go no higher), silently: the warning is said here. */
static void cpu_init(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
#endif
	static const char *const isas[] = TFM_CPU_ISAS; /* best first */
	const char *want = getenv("TFM_ISA"), *best = "scalar";
	for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
		if (have_isa(isas[i])) {
			best = isas[i];
			break;
		}
	if (want && *want && known_isa(want) && have_isa(want)) {
		isa_fill(want);
	} else {
		if (want && *want)
			tfm_log(TFM_LOG_WARN, "tfm: warning: TFM_ISA=%s: not %s on this processor; "
				"using %s", want, TFM_CPU_ISA_NAMES, best);
		isa_fill(best);
	}
	openblas_set_num_threads(1);
	if (blas_thread_shutdown_)
		blas_thread_shutdown_();
}

int tfm_cpu_set_isa(const char *isa)
{
	pthread_once(&g_once, cpu_init);
	if (!known_isa(isa))
		return tfm_seterr(TFM_E_INVAL, "%s: unknown instruction set", isa);
	if (!have_isa(isa))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: not on this processor", isa);
	tfm_quant_set_isa(isa); /* lib/quant's dots and quantizers: the same path */
	isa_fill(isa);
	return TFM_OK;
}

/* Softmax with the SIMD exp (the backend's softmax kernel and attention). */
void tfm_cpu_softmax(float *x, int64_t n)
{
	pthread_once(&g_once, cpu_init);
	float inv = 1.0f / g_isa.expsum(x, g_isa.max(x, n), n);
	for (int64_t i = 0; i < n; i++)
		x[i] *= inv;
}

void tfm_cpu_act(float *x, int64_t n, int act)
{
	pthread_once(&g_once, cpu_init);
	if (g_isa.act_mul && (act == TFM_K_SILU || act == TFM_K_GELU || act == TFM_K_GELU_TANH))
		g_isa.act_mul(x, NULL, n, act);
	else
		tfm_cpu_act_scalar(x, NULL, n, act);
}

void tfm_cpu_add(float *y, const float *a, const float *b, int64_t n)
{
	pthread_once(&g_once, cpu_init);
	g_isa.add(y, a, b, n);
}

void tfm_cpu_act_mul(float *g, const float *u, int64_t n, int act)
{
	pthread_once(&g_once, cpu_init);
	if (g_isa.act_mul && (act == TFM_K_SILU || act == TFM_K_GELU || act == TFM_K_GELU_TANH))
		g_isa.act_mul(g, u, n, act);
	else
		tfm_cpu_act_scalar(g, u, n, act);
}

tfm_cpu_dot_fn tfm_cpu_dot(int type)
{
	pthread_once(&g_once, cpu_init);
	switch (type) {
	case TFM_TYPE_F32: return g_isa.f32;
	case TFM_TYPE_F16: return g_isa.f16;
	case TFM_TYPE_BF16: return g_isa.bf16;
	}
	return NULL;
}

const char *tfm_cpu_isa(void)
{
	pthread_once(&g_once, cpu_init);
	return g_isa.isa;
}

/* ---- matmul ---- */

struct mm_job {
	struct tfm_kexec *k;
	float *y;                 /* [n][out] */
	const float *x;           /* [n][in] */
	const struct tfm_mat *w;
	int64_t n, rows, n_chunks, last; /* chunk c: rows [c rows, (c+1) rows), the last to `last` */
	tfm_cpu_dot_fn dot;       /* f32/f16/bf16 rows; NULL: vdot, or convert rows to f32 first */
	tfm_cpu_dot_fn dot_f32;
	tfm_vec_dot_fn vdot;      /* lib/quant's integer dot against x quantized to vdot_type */
	int vdot_type;
	tfm_cpu_qgemv_fn qgemv;   /* several rows of vdot at once, or NULL */
	tfm_cpu_qx8_fn qx8;       /* rows by eight from w->dec (qx8.c, qx8k.c), or NULL */
	size_t dec_rb;            /* bytes a row takes in w->dec */
	const struct igemm_fns *igemm; /* prefill by the 8-bit GEMM (xq: x packed for it) */
	const uint8_t *xq;        /* [n][xq_bytes]: x quantized to vdot_type, shared by the tasks */
	size_t xq_bytes;
	int64_t tok_tile;         /* > 0: chunk c is tokens [c tok_tile, ...) times every row */
	const float *bias;        /* [out], added to each tile while it is in cache, or NULL */
	atomic_llong next;
};

/* y[t][o0, o1) = bias[o0, o1) for tokens [t0, t1) (y's rows out apart): a
 * tile's C before sgemm adds to it (beta 1), in place of the pass that
 * zeroes it (beta 0) and the pass that adds the bias afterwards */
static void bias_fill(float *y, int64_t out, const float *bias, int64_t t0, int64_t t1,
		      int64_t o0, int64_t o1)
{
	for (int64_t t = t0; t < t1; t++)
		memcpy(y + t * out + o0, bias + o0, (size_t)(o1 - o0) * sizeof(float));
}

/* y[t][o0, o1) += bias[o0, o1): the same sums as adding it after the matmul */
static void bias_add(float *y, int64_t out, const float *bias, int64_t t0, int64_t t1,
		     int64_t o0, int64_t o1)
{
	for (int64_t t = t0; t < t1; t++)
		tfm_cpu_add(y + t * out + o0, y + t * out + o0, bias + o0, o1 - o0);
}

static void mm_chunk(struct mm_job *j, float *scr, int64_t c)
{
	const struct tfm_mat *w = j->w;
	if (j->tok_tile) {
		int64_t t0 = c * j->tok_tile, nt = j->n - t0 < j->tok_tile ? j->n - t0 : j->tok_tile;
		if (j->bias)
			bias_fill(j->y, w->out, j->bias, t0, t0 + nt, 0, w->out);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nt, (int)w->out, (int)w->in,
			    1.0f, j->x + t0 * w->in, (int)w->in, (const float *)w->data, (int)w->in,
			    j->bias ? 1.0f : 0.0f, j->y + t0 * w->out, (int)w->out);
		return;
	}
	int64_t o0 = c * j->rows, o1 = c == j->n_chunks - 1 ? j->last : o0 + j->rows;
	const uint8_t *wd = (const uint8_t *)w->data + (size_t)o0 * w->row_bytes;
	if (j->igemm) {
		j->igemm->prep_w((uint8_t *)scr, w->type, wd, w->row_bytes, o1 - o0, w->in);
		j->igemm->gemm(j->y + o0, w->out, j->xq, j->n, (const uint8_t *)scr, o1 - o0, w->in,
			       w->type);
		if (j->bias)
			bias_add(j->y, w->out, j->bias, 0, j->n, o0, o1);
		return;
	}
	if (j->vdot) {
		/* x was quantized once (cpu_matmul); each weight row against
		 * each token while it is in cache */
		if (j->qx8) { /* chunks are whole groups of eight rows (cpu_repack) */
			const uint8_t *g = (const uint8_t *)w->dec + (size_t)o0 * j->dec_rb;
			for (int64_t t = 0; t < j->n; t++)
				j->qx8(j->y + t * w->out + o0, g, j->xq + t * j->xq_bytes, w->in, o1 - o0);
		} else if (j->qgemv) {
			for (int64_t t = 0; t < j->n; t++)
				j->qgemv(j->y + t * w->out + o0, wd, w->row_bytes,
					 j->xq + t * j->xq_bytes, w->in, o1 - o0);
		} else {
			for (int64_t o = o0; o < o1; o++, wd += w->row_bytes)
				for (int64_t t = 0; t < j->n; t++)
					j->y[t * w->out + o] = j->vdot(w->in, wd, j->xq + t * j->xq_bytes);
		}
		if (j->bias)
			bias_add(j->y, w->out, j->bias, 0, j->n, o0, o1);
		return;
	}
	if (j->n == 1) {
		if (j->dot) { /* one row at a time: streams from memory faster than
			       * 16 interleaved rows (f16 576 x 49152: 28 against
			       * 12 GB/s, f32 23-28 against 19, one thread) */
			for (int64_t o = o0; o < o1; o++, wd += w->row_bytes)
				j->y[o] = j->dot(wd, j->x, w->in);
		} else {
			for (int64_t o = o0; o < o1; o++, wd += w->row_bytes) {
				tfm_k_row_to_f32(w->type, wd, scr, w->in);
				j->y[o] = j->dot_f32(scr, j->x, w->in);
			}
		}
		if (j->bias)
			bias_add(j->y, w->out, j->bias, 0, 1, o0, o1);
		return;
	}
	const float *a = (const float *)wd;
	if (w->type != TFM_TYPE_F32) {
		int mine = w->type == TFM_TYPE_F16 || w->type == TFM_TYPE_BF16;
		for (int64_t o = o0; o < o1; o++) {
			const uint8_t *src = wd + (size_t)(o - o0) * w->row_bytes;
			if (mine)
				tfm_k_row_to_f32(w->type, src, scr + (o - o0) * w->in, w->in);
			else /* lib/quant's fast dequantizer */
				tfm_dequantize_row(w->type, src, scr + (o - o0) * w->in, w->in);
		}
		a = scr;
	}
	if (j->bias)
		bias_fill(j->y, w->out, j->bias, 0, j->n, o0, o1);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->n, (int)(o1 - o0),
		    (int)w->in, 1.0f, j->x, (int)w->in, a, (int)w->in, j->bias ? 1.0f : 0.0f,
		    j->y + o0, (int)w->out);
}

/* x packed for the 8-bit GEMM, groups of 8 or 16 tokens split over the tasks
 * (q8 row scratch at the start of each task's slice, which the GEMM's
 * weight tiles reuse afterwards) */
static void pack_task(void *ctx, int task, int n_tasks)
{
	struct mm_job *j = ctx;
	void *q8 = j->k->scratch + (size_t)task * j->k->scratch_per_task;
	int64_t gt = j->igemm->group;
	int k256 = tfm_quant_blck(j->w->type) == TFM_QK_K; /* x as q8_K for the K-quants */
	for (int64_t G = task; G < (j->n + gt - 1) / gt; G += n_tasks)
		j->igemm->pack_x((uint8_t *)j->xq, j->x, j->n, j->w->in, G, q8, k256);
}

static void mm_task(void *ctx, int task, int n_tasks)
{
	struct mm_job *j = ctx;
	float *scr = j->k->scratch + (size_t)task * j->k->scratch_per_task;
	for (;;) {
		int64_t c = atomic_fetch_add(&j->next, 1);
		if (c >= j->n_chunks)
			break;
		mm_chunk(j, scr, c);
	}
}

/* whether a prefill of weights of type runs the 8-bit GEMM here (when x
 * packed fits the scratch) */
static const struct igemm_fns *igemm_for(int type)
{
	if (!g_isa.igemm)
		return NULL;
	switch (type) {
	case TFM_TYPE_Q4_0: case TFM_TYPE_Q5_0: case TFM_TYPE_Q8_0:
	case TFM_TYPE_Q4_1: case TFM_TYPE_Q4_K: case TFM_TYPE_Q5_K:
		return g_isa.igemm;
	case TFM_TYPE_Q5_1: case TFM_TYPE_Q6_K: /* the AVX-512 GEMM has neither */
#if defined(__x86_64__)
		return g_isa.igemm->more ? g_isa.igemm : &igemm_avx2;
#else
		return g_isa.igemm;
#endif
	}
	return NULL;
}

int tfm_cpu_igemm_takes(int type)
{
	pthread_once(&g_once, cpu_init);
	return igemm_for(type) != NULL;
}

/* The multi-row integer kernel for a weight type on this CPU, or NULL (then
 * lib/quant's one-row dot products).  On AVX2 and AVX-512, matrices of
 * q4_0, q5_0, q8_0, q4_K, q5_K and q6_K in whole groups of eight rows
 * decode from their regrouped copy instead (qx8_for, cpu_repack); what
 * follows is for the others (and was measured before that copy).
 * AVX-512: not q8_0, its rows stream
 * from memory at 24 GB/s one at a time but ~20 four at a time (measured, one
 * thread, 576 x 49152), and decode of q8_0 weights is bound by that stream.
 * AVX2: not q8_0 either: on a 2-core Zen 3 EPYC, SmolLM2-135M's q8_0 file
 * decodes 1.12-1.21x faster one row at a time (tg128, one thread, three
 * alternated pairs), and a 576 x 49152 matrix streams at 10-11 GB/s one
 * row at a time but 8-9 four at a time, whatever the prefetch distance
 * (4 or 8 rows on, 2 KB on; none: 6); in cache the four rows are 1.28x.
 * (An earlier measurement, TFM_ISA=avx2 on a Xeon, had them save 20% of
 * the CPU time of decode.)  q4_0: SmolLM2-135M's q4_0 file decodes at
 * 79-82 tokens/s on one thread, 118-127 on two, where the four rows
 * before they were unrolled (qgemv-avx2.c) gave 66-79
 * and 100-105 (same EPYC, tg128, two alternated pairs).
 * q4_K and q5_K: 1.7x decode tokens/s (a 125M llama of random weights all
 * of the type, tg128, one thread on a 2-core AVX2 EPYC, medians of three
 * alternated before/after pairs; its scale and min unpacking is SIMD where
 * the one-row dot's is scalar).  q4_1, q5_0 and q5_1 (qgemv-avx2.c) gained
 * nothing while GCC kept their four accumulators on the stack; unrolled,
 * they run 1.1-1.3x the one-row dot (576 x 1536, in cache), and q5_0, most
 * of the weights of SmolLM2-135M's q4_K_M file (576 is not a multiple of
 * 256), decodes 1.10-1.18x faster on one thread, 1.03-1.08x on two (same
 * EPYC, three alternated pairs).  qgemv-k-avx2.c's q6_K is not used: it
 * measured 0.98x before and 0.97-1.03x after (decode streams its weights
 * from memory about as fast one row at a time; its four rows' compute
 * saving, 1.7x in cache, does not show).
 * aarch64 (qgemv-neon.h, qgemv-k-neon.h): the kernels of the ISA lib/quant
 * runs, so that each row has the bits of tfm_vec_dot's one-row dot.  Their
 * speed is unmeasured: they were written and checked under qemu-user only.
 * Wired for the types whose four-row kernels paid off on AVX2; q8_0 and
 * q6_K are not, as on AVX2 (their decode streams the most bytes per
 * product, so sharing the activation loads saves least, and four
 * interleaved row streams were slower than one on that machine), until
 * an arm64 processor measures them: both are built and tested
 * (test_kernels qgemv_neon) like the others. */
static tfm_cpu_qgemv_fn qgemv_for(int type)
{
#if defined(__aarch64__)
	if (!strcmp(tfm_quant_isa(), "dotprod"))
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_cpu_qgemv_q4_0_dotprod;
		case TFM_TYPE_Q4_1: return tfm_cpu_qgemv_q4_1_dotprod;
		case TFM_TYPE_Q5_0: return tfm_cpu_qgemv_q5_0_dotprod;
		case TFM_TYPE_Q5_1: return tfm_cpu_qgemv_q5_1_dotprod;
		case TFM_TYPE_Q4_K: return tfm_cpu_qgemv_q4_K_dotprod;
		case TFM_TYPE_Q5_K: return tfm_cpu_qgemv_q5_K_dotprod;
		default: return NULL;
		}
	if (!strcmp(tfm_quant_isa(), "neon"))
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_cpu_qgemv_q4_0_neon;
		case TFM_TYPE_Q4_1: return tfm_cpu_qgemv_q4_1_neon;
		case TFM_TYPE_Q5_0: return tfm_cpu_qgemv_q5_0_neon;
		case TFM_TYPE_Q5_1: return tfm_cpu_qgemv_q5_1_neon;
		case TFM_TYPE_Q4_K: return tfm_cpu_qgemv_q4_K_neon;
		case TFM_TYPE_Q5_K: return tfm_cpu_qgemv_q5_K_neon;
		default: return NULL;
		}
#endif
#if defined(__x86_64__)
	if (g_isa.qgemv_avx2)
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_cpu_qgemv_q4_0_avx2;
		case TFM_TYPE_Q4_K: return tfm_cpu_qgemv_q4_K_avx2;
		case TFM_TYPE_Q5_K: return tfm_cpu_qgemv_q5_K_avx2;
		case TFM_TYPE_Q4_1: return tfm_cpu_qgemv_q4_1_avx2;
		case TFM_TYPE_Q5_0: return tfm_cpu_qgemv_q5_0_avx2;
		case TFM_TYPE_Q5_1: return tfm_cpu_qgemv_q5_1_avx2;
		default: return NULL;
		}
	if (!g_isa.qgemv_ok)
		return NULL;
	switch (type) {
	case TFM_TYPE_Q4_0: return tfm_cpu_qgemv_q4_0_avx512;
	case TFM_TYPE_Q5_0: return tfm_cpu_qgemv_q5_0_avx512;
	case TFM_TYPE_Q4_1: return tfm_cpu_qgemv_q4_1_avx512;
	case TFM_TYPE_Q4_K: return tfm_cpu_qgemv_q4_K_avx512;
	case TFM_TYPE_Q5_K: return tfm_cpu_qgemv_q5_K_avx512;
	case TFM_TYPE_Q6_K: return tfm_cpu_qgemv_q6_K_avx512;
	}
#endif
	return NULL;
}

/* The kernel for weights of type regrouped by eight (w->dec) on the
 * instruction set in use, or NULL (then w's rows as the file has them).
 * AVX2, AVX-512 (the same AVX2 kernels) and arm64 with SDOT (unmeasured
 * there: qx8-neon.h, qx8k-neon.h); arm64 without SDOT keeps its four-row
 * kernels; a model loaded on one path and run on another (TFM_ISA,
 * tfm_cpu_set_isa) reads the file's rows.  AVX-512: on a 2-core Zen 4
 * EPYC (AVX-512 VNNI, 32 MiB L3), SmolLM2-135M's files decode with the
 * regrouped AVX2 kernels at q4_0 160-182 tokens/s on one thread (the
 * AVX-512 four-row kernels: 110-115), q4_K_M 137-138 (95-98), q8_0
 * 122-123 (99-102, the one-row dot), and on two threads q4_0 228-252
 * (158-194), q4_K_M 149-190 (128-134), q8_0 160-167 (147-151) (tg128,
 * two rounds, each file and thread count with and without in turn). */
static tfm_cpu_qx8_fn qx8_for(int type)
{
#if defined(__aarch64__)
	if (!strcmp(tfm_quant_isa(), "dotprod"))
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_cpu_qgemv_q4x8_dotprod;
		case TFM_TYPE_Q5_0: return tfm_cpu_qgemv_q5x8_dotprod;
		case TFM_TYPE_Q8_0: return tfm_cpu_qgemv_q8x8_dotprod;
		case TFM_TYPE_Q4_K: return tfm_cpu_qgemv_q4kx8_dotprod;
		case TFM_TYPE_Q5_K: return tfm_cpu_qgemv_q5kx8_dotprod;
		case TFM_TYPE_Q6_K: return tfm_cpu_qgemv_q6kx8_dotprod;
		}
#endif
#if defined(__x86_64__)
	if (g_isa.qgemv_avx2 || g_isa.qgemv_ok)
		switch (type) {
		case TFM_TYPE_Q4_0: return tfm_cpu_qgemv_q4x8_avx2;
		case TFM_TYPE_Q5_0: return tfm_cpu_qgemv_q5x8_avx2;
		case TFM_TYPE_Q8_0: return tfm_cpu_qgemv_q8x8_avx2;
		case TFM_TYPE_Q4_K: return tfm_cpu_qgemv_q4kx8_avx2;
		case TFM_TYPE_Q5_K: return tfm_cpu_qgemv_q5kx8_avx2;
		case TFM_TYPE_Q6_K: return tfm_cpu_qgemv_q6kx8_avx2;
		}
#endif
	(void)type;
	return NULL;
}

/* bytes a row of w takes in its regrouped copy: the file's, but q4_K's and
 * q5_K's unpacked scales (qx8k.c) */
static size_t dec_row_bytes(const struct tfm_mat *w)
{
	size_t kb = tfm_cpu_qx8k_block_bytes(w->type);
	return kb ? (size_t)(w->in / TFM_QK_K) * kb : w->row_bytes;
}

/* q4_0, q5_0 and q8_0 (qx8.c) and q4_K, q5_K and q6_K (qx8k.c)
 * matrices of whole groups of eight rows, regrouped for decode where
 * qx8_for has a kernel (AVX2, AVX-512; arm64 with SDOT).  The caller (load.c) skips
 * stacked experts.  The file's rows stay for prefill's 8-bit GEMM and for
 * embedding lookups, so these weights are in memory twice, as llama.cpp's
 * CPU_REPACK buffer keeps them. */
static size_t cpu_repack(const struct tfm_mat *w, void *dst)
{
	pthread_once(&g_once, cpu_init);
	if (w->out % 8 || !w->data || !qx8_for(w->type))
		return 0;
	size_t kb = tfm_cpu_qx8k_block_bytes(w->type);
	if (dst && kb)
		tfm_cpu_qx8k_pack(w->type, dst, w->data, w->row_bytes, w->in, w->out);
	else if (dst)
		(w->type == TFM_TYPE_Q4_0 ? tfm_cpu_q4x8_pack : w->type == TFM_TYPE_Q5_0
		 ? tfm_cpu_q5x8_pack : tfm_cpu_q8x8_pack)(dst, w->data, w->row_bytes, w->in, w->out);
	return (size_t)w->out * dec_row_bytes(w);
}

/* whether a matmul of n tokens by weights of type runs lib/quant's integer
 * dots against x quantized to *vdot_type: decode and small batches (as
 * llama.cpp does below its BLAS threshold); larger batches dequantize
 * tiles for sgemm */
static tfm_vec_dot_fn mm_vdot(int type, int64_t n, int *vdot_type)
{
	tfm_vec_dot_fn vd = NULL;
	if (!tfm_cpu_dot(type) && n <= VDOT_MAX_BATCH && (vd = tfm_vec_dot(type)))
		*vdot_type = tfm_vec_dot_type(type);
	return vd;
}

/* *j set up for y = x . W^T (+ bias: NULL or [w->out], added to each tile
 * while it is in cache, by the task that computed it; an f32 tile starts
 * as the bias and sgemm adds to it), in chunks for the pool (par) or in
 * one; x_done: x is in the last task's scratch already, quantized as this
 * matmul takes it (cpu_matmul_multi) */
static void mm_setup(struct mm_job *j, struct tfm_kexec *k, float *y, const float *x,
		     const struct tfm_mat *w, const float *bias, int64_t n, int par, int x_done)
{
	*j = (struct mm_job){.k = k, .y = y, .x = x, .w = w, .n = n, .bias = bias};
	j->dot_f32 = tfm_cpu_dot(TFM_TYPE_F32);
	j->dot = tfm_cpu_dot(w->type);
	if ((j->vdot = mm_vdot(w->type, n, &j->vdot_type))) {
		j->qgemv = qgemv_for(w->type);
		j->qx8 = w->dec ? qx8_for(w->type) : NULL;
		j->dec_rb = dec_row_bytes(w);
	}
	if (j->vdot) {
		/* once per matmul, not per tile: into the scratch of the last
		 * task, which the integer path never uses otherwise */
		uint8_t *xq = (uint8_t *)(k->scratch + (size_t)(k->n_tasks - 1) * k->scratch_per_task);
		j->xq_bytes = tfm_quant_row_bytes(j->vdot_type, w->in);
		for (int64_t t = 0; t < n && !x_done; t++)
			tfm_quantize_row(j->vdot_type, x + t * w->in, xq + t * j->xq_bytes, w->in);
		j->xq = xq;
	}
	if (n == 1) {
		/* Any split gives the same values (rows are independent); aim at
		 * cpt chunks per task, whole multiples of 16 rows (the 4-row and
		 * 8-row kernels), and fold a short tail into the last chunk.  Each
		 * chunk costs a claim on the shared counter (its cache line moves
		 * between cores) and a fresh stream for the prefetchers, which
		 * quantized rows, four to eight times shorter than f32 ones, feel
		 * most: two a task against eight, SmolLM2-135M tg128 on two
		 * threads of a 2-core Zen 3 EPYC gains 9% (q4_0), 4% (q8_0,
		 * q4_K_M), medians of ten and six alternated pairs; one a task was
		 * no faster than two and leaves nothing to even out a thread that
		 * starts late.  f32 rows lost 3% with two (twelve pairs). */
		int64_t cpt = j->vdot ? 2 : 8;
		j->rows = !par ? w->out : (w->out / (cpt * k->n_tasks) + 15) & ~(int64_t)15;
		if (j->rows < 16)
			j->rows = 16;
		j->n_chunks = w->out / j->rows > 0 ? w->out / j->rows : 1;
		j->last = w->out;
	} else {
		/* an even number of tiles of at most GEMM_TILE rows, multiples
		 * of 16: two threads share them evenly (576 rows: 6 of 96), and
		 * the tiling depends on the matrix alone, not the thread count.
		 * Each sgemm call packs all of x, so fewer, larger tiles pack it
		 * less often. */
		int64_t tile = GEMM_TILE;
		if (w->type == TFM_TYPE_F32 && n >= 4 * GEMM_TILE)
			tile = 4 * GEMM_TILE; /* long inputs: x packed less often (f32 tiles need no scratch) */
		int64_t nt2 = 2 * ((w->out + 2 * tile - 1) / (2 * tile));
		j->rows = (w->out / nt2 + 15) & ~(int64_t)15;
		if (j->rows > tile)
			j->rows = tile;
		if (j->rows < 16)
			j->rows = 16;
		j->n_chunks = (w->out + j->rows - 1) / j->rows;
		j->last = w->out;
	}
	const struct igemm_fns *ig = n > VDOT_MAX_BATCH && w->in % 32 == 0 ? igemm_for(w->type) : NULL;
	if (ig) {
		/* x packed once into kexec.xbuf (cpu_xbuf_need), or without one
		 * into the end of the last task's scratch, after the room its
		 * weight tiles take (sgemm when it does not fit) */
		size_t wb = (ig->w_bytes(j->rows, w->in) + 63) & ~(size_t)63;
		size_t xb = ig->x_bytes(n, w->in);
		if (k->xbuf && xb <= k->xbuf_bytes)
			j->xq = k->xbuf;
		else if (wb + xb <= k->scratch_per_task * sizeof(float))
			j->xq = (uint8_t *)(k->scratch + (size_t)(k->n_tasks - 1) * k->scratch_per_task) + wb;
		if (j->xq) {
			j->igemm = ig;
			if (!par)
				pack_task(j, 0, 1);
			else
				tfm_pool_run(k->pool, pack_task, j, k->n_tasks);
		}
	}
	/* Many tokens through a small f32 matrix (an encoder's batch of
	 * sequences): blocks of TOK_TILE tokens times every row, so that the
	 * x OpenBLAS packs for one call (TOK_TILE x in) stays in L2 while the
	 * kernel runs over the rows; by weight rows it packs all n tokens for
	 * each tile.  all-MiniLM-L6-v2, 32 sequences of 128 tokens, two
	 * threads of a Zen 3 EPYC: 1.13-1.23x the sequences/s (three
	 * alternated pairs).  The blocks depend on n alone, so the thread
	 * count changes no bit; a row's last bits may differ from what a
	 * batch under TOK_MIN gives it (OpenBLAS's kernels for a block's
	 * edges sum in another order: 1000 tokens of 384 x 1536 differ), as
	 * they already could between batches tiled by rows. */
	if (!j->igemm && !j->vdot && w->type == TFM_TYPE_F32 && n >= TOK_MIN &&
	    (double)w->out * (double)w->in * sizeof(float) <= TOK_MAX_W) {
		j->tok_tile = TOK_TILE;
		j->n_chunks = (n + TOK_TILE - 1) / TOK_TILE;
	}
	atomic_init(&j->next, 0);
}

static void cpu_matmul_bias(struct tfm_kexec *k, float *y, const float *x,
			    const struct tfm_mat *w, const float *bias, int64_t n)
{
	struct mm_job j;
	int par = k->n_tasks > 1 && (double)n * w->in * w->out >= k->par_min;
	mm_setup(&j, k, y, x, w, bias, n, par, 0);
	if (!par || j.n_chunks == 1)
		mm_task(&j, 0, 1);
	else
		tfm_pool_run(k->pool, mm_task, &j, k->n_tasks);
}

static void cpu_matmul(struct tfm_kexec *k, float *y, const float *x, const struct tfm_mat *w,
		       int64_t n)
{
	cpu_matmul_bias(k, y, x, w, NULL, n);
}

/* Several matrices against one x, their chunks in one pool run: chunk c of
 * the whole is chunk c - first[q] of matrix q */
struct mm_multi {
	struct mm_job *j;
	int64_t first[TFM_K_MULTI_MAX + 1];
	atomic_llong next;
};

static void multi_task(void *ctx, int task, int n_tasks)
{
	struct mm_multi *mj = ctx;
	struct tfm_kexec *k = mj->j[0].k;
	float *scr = k->scratch + (size_t)task * k->scratch_per_task;
	int q = 0;
	(void)n_tasks;
	for (;;) {
		int64_t c = atomic_fetch_add(&mj->next, 1);
		if (c >= mj->first[TFM_K_MULTI_MAX])
			break;
		while (c >= mj->first[q + 1]) /* a task's chunks only go up */
			q++;
		mm_chunk(&mj->j[q], scr, c - mj->first[q]);
	}
}

/* y[q] = x . W[q]^T (+ b[q]) for q < nm (q, k and v; gate and up).  Where
 * all of them take lib/quant's integer dots against x quantized the same
 * way (decode), x is quantized once and one pool run does all their chunks,
 * where one matmul after another quantized it each time and met the
 * threads after each (and k and v, each under par_min, ran on the calling
 * thread alone).  Else one after another.  Each y[q] gets the bits
 * cpu_matmul_bias gives it: its rows come from the same kernels. */
static void cpu_matmul_multi(struct tfm_kexec *k, int nm, float *const *y, const float *x,
			     const struct tfm_mat *const *w, const float *const *b, int64_t n)
{
	int vt0 = -1, same = nm <= TFM_K_MULTI_MAX;
	double work = 0;
	for (int q = 0; q < nm && same; q++) {
		int vt = -1;
		same = mm_vdot(w[q]->type, n, &vt) && (q == 0 || (vt == vt0 && w[q]->in == w[0]->in));
		vt0 = vt;
		work += (double)n * w[q]->in * w[q]->out;
	}
	if (!same) {
		for (int q = 0; q < nm; q++)
			cpu_matmul_bias(k, y[q], x, w[q], b[q], n);
		return;
	}
	struct mm_job j[TFM_K_MULTI_MAX];
	struct mm_multi mj = {.j = j};
	int par = k->n_tasks > 1 && work >= k->par_min;
	for (int q = 0; q < nm; q++) {
		mm_setup(&j[q], k, y[q], x, w[q], b[q], n, par, q > 0);
		mj.first[q + 1] = mj.first[q] + j[q].n_chunks;
	}
	for (int q = nm; q < TFM_K_MULTI_MAX; q++)
		mj.first[q + 1] = mj.first[q];
	atomic_init(&mj.next, 0);
	if (par)
		tfm_pool_run(k->pool, multi_task, &mj, k->n_tasks);
	else
		multi_task(&mj, 0, 1);
}

/* ---- attention ----
 *
 * Tiled, online-softmax ("flash") attention: keys are taken in tiles of
 * ATT_KT positions, and each query keeps a running maximum m, a running sum
 * l and an unnormalised output o, rescaled by exp(m_old - m_new) when a tile
 * raises the maximum; no score row longer than a tile and no T x T matrix
 * exists.  A work item is (a block of up to ATT_QB query tokens, one KV
 * head): the K and V rows of a tile are gathered once into f32 (converting
 * f16 / q8_0 caches) and used by every query head of the GQA group and
 * every token of the block.  Tiles sit at fixed positions (multiples of
 * ATT_KT, clipped to what a query sees), so a query's value does not depend
 * on the block it was computed in: prefill equals decode, bit for bit, and
 * the thread count changes nothing. */

#define ATT_KT 64 /* keys per tile */
#define ATT_QB 8  /* query tokens per work item */

struct attn_job {
	struct tfm_kexec *k;
	float *out;
	const float *q;
	const uint8_t *kc, *vc;   /* [n_head_kv][n_slots] rows of k_type, v_type */
	size_t krow, vrow;        /* bytes of a K row, a V row */
	const struct tfm_attn_args *a;
	int64_t n_blk, n_items;   /* n_items = n_blk * n_head_kv */
	atomic_llong next;
};

/* one cache row as f32 */
static inline void row_f32(float *d, const uint8_t *src, int type, int64_t dim)
{
	if (type == TFM_TYPE_F32)
		memcpy(d, src, (size_t)dim * sizeof(float));
	else if (type == TFM_TYPE_F16 && g_isa.f16row)
		g_isa.f16row(d, (const uint16_t *)src, dim);
	else if (type == TFM_TYPE_F16 || type == TFM_TYPE_BF16)
		tfm_k_row_to_f32(type, src, d, dim);
	else /* the block types: lib/quant's fast dequantizer */
		tfm_dequantize_row(type, src, d, dim);
}

/* rows [r0, r0 + n) of the values of one head (ring slots) as f32 [n][dim] */
static void gather(float *dst, const uint8_t *base, size_t rowb, int type, int64_t r0, int64_t n,
		   int64_t ns, int64_t dim)
{
	for (int64_t i = 0; i < n; i++)
		row_f32(dst + i * dim, base + (size_t)((r0 + i) % ns) * rowb, type, dim);
}

/* the same for keys, transposed: dst[d * ATT_KT + i] (tmp: dim floats), so
 * that the scores of a query run along the keys in vector lanes (head sizes
 * are short: a dot product per key would spend more on its horizontal sum).
 * f32 and f16 keys are cached transposed, [dim][n_slots] per head, so this
 * is a copy of (at most two) runs per dimension; keys of the other types
 * are rows (bf16, and blocks that run along dim). */
static void gather_t(float *dst, float *tmp, const uint8_t *base, size_t rowb, int type,
		     int64_t r0, int64_t n, int64_t ns, int64_t dim)
{
	if (type == TFM_TYPE_F32 || type == TFM_TYPE_F16) {
		int64_t s0 = r0 % ns, n1 = n < ns - s0 ? n : ns - s0;
		size_t es = type == TFM_TYPE_F32 ? 4 : 2;
		for (int64_t d = 0; d < dim; d++) {
			const uint8_t *col = base + (size_t)(d * ns) * es;
			float *o = dst + d * ATT_KT;
			if (type == TFM_TYPE_F32) {
				memcpy(o, col + s0 * es, (size_t)n1 * 4);
				memcpy(o + n1, col, (size_t)(n - n1) * 4);
			} else if (g_isa.f16row) {
				g_isa.f16row(o, (const uint16_t *)col + s0, n1);
				g_isa.f16row(o + n1, (const uint16_t *)col, n - n1);
			} else {
				tfm_k_row_to_f32(type, col + s0 * es, o, n1);
				tfm_k_row_to_f32(type, col, o + n1, n - n1);
			}
		}
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *src = base + (size_t)((r0 + i) % ns) * rowb;
		const float *r = (const float *)src;
		if (type != TFM_TYPE_F32)
			row_f32(tmp, src, type, dim), r = tmp;
		for (int64_t d = 0; d < dim; d++)
			dst[d * ATT_KT + i] = r[d];
	}
}

/* The first and the last key query position p sees; neither decreases
 * with p.  Encoders (bidir) see the whole batch, or with a window the keys
 * within window / 2 either side. */
static inline int64_t first_key(const struct tfm_attn_args *a, int64_t p)
{
	if (a->chunk > 0)
		return p - p % a->chunk;
	if (a->bidir)
		return a->window > 0 && p - a->window / 2 > 0 ? p - a->window / 2 : 0;
	return a->window > 0 && p - a->window + 1 > 0 ? p - a->window + 1 : 0;
}

static inline int64_t last_key(const struct tfm_attn_args *a, int64_t p)
{
	int64_t end = (a->n_kv > 0 ? a->n_kv : a->pos0 + a->n_tok) - 1;
	if (!a->bidir)
		return p;
	return a->window > 0 && p + a->window / 2 < end ? p + a->window / 2 : end;
}

/* An item's scratch: K tile [hd][KT] (transposed), V tile [KT][vd], scores
 * of 4 queries [4][KT], then the scaled queries [nq][hd] (attn_qs) and a
 * row [hd], which attn_keys uses; its callers' own floats come after
 * (attn_after). */
static float *attn_qs(const struct tfm_attn_args *a, float *scr)
{
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd;
	return scr + ATT_KT * hd + ATT_KT * vd + 4 * ATT_KT;
}

static float *attn_after(const struct tfm_attn_args *a, float *scr, int64_t nq)
{
	return attn_qs(a, scr) + nq * a->head_dim + a->head_dim;
}

/* Keys [klo, khi] (positions, within [plo, phi] of the block) of one
 * item's queries through the online softmax, from mx = -inf, ls = 0, o = 0:
 * query i (token t0 + i / grp, head kh grp + i % grp) keeps its running
 * maximum and sum in mx[i], ls[i] and its unnormalised output in
 * ob[(t n_head + h) vd] (j->out, or a segment's partial rows). */
static void attn_keys(struct attn_job *j, float *scr, int64_t kh, int64_t t0, int64_t t1,
		      int64_t klo, int64_t khi, float *ob, float *mx, float *ls)
{
	const struct tfm_attn_args *a = j->a;
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd, ns = a->n_slots;
	int64_t grp = a->n_head / a->n_head_kv, nq = (t1 - t0) * grp;
	float *kt = scr, *vt = kt + ATT_KT * hd, *sc = vt + ATT_KT * vd; /* attn_qs says */
	float *qs = attn_qs(a, scr), *tmp = qs + nq * hd;
	for (int64_t i = 0; i < nq; i++) {
		mx[i] = -INFINITY, ls[i] = 0;
		int64_t t = t0 + i / grp, h = kh * grp + i % grp;
		memset(ob + (t * a->n_head + h) * vd, 0, (size_t)vd * sizeof(float));
	}
	const uint8_t *kb = j->kc + (size_t)kh * (size_t)ns * j->krow;
	const uint8_t *vb = a->v_from_k ? NULL : j->vc + (size_t)kh * (size_t)ns * j->vrow;
	for (int64_t a0 = klo / ATT_KT * ATT_KT; a0 <= khi; a0 += ATT_KT) {
		int64_t g0 = a0 > klo ? a0 : klo, g1 = a0 + ATT_KT - 1 < khi ? a0 + ATT_KT - 1 : khi;
		int64_t ng = g1 - g0 + 1;
		gather_t(kt, tmp, kb, j->krow, a->k_type, g0, ng, ns, hd);
		if (a->v_from_k) /* MLA: the values are the keys' first vd elements */
			for (int64_t i = 0; i < ng; i++)
				for (int64_t d = 0; d < vd; d++)
					vt[i * vd + d] = kt[d * ATT_KT + i];
		else
			gather(vt, vb, j->vrow, a->v_type, g0, ng, ns, vd);
		/* four queries at a time: scores of every gathered key, then
		 * each query's own keys [k0, k1] through the online softmax;
		 * the other keys get probability 0, which adds exact zeros */
		for (int64_t i0 = 0; i0 < nq; i0 += 4) {
			int64_t n4 = nq - i0 < 4 ? nq - i0 : 4;
			float corr[4], *op[4];
			g_isa.attn_qk(sc, ATT_KT, qs + i0 * hd, n4, kt, ATT_KT, hd, ng);
			for (int64_t q = 0; q < n4; q++) {
				int64_t i = i0 + q, t = t0 + i / grp, h = kh * grp + i % grp;
				int64_t p = last_key(a, a->pos0 + t), lo = first_key(a, a->pos0 + t);
				int64_t k0 = g0 > lo ? g0 : lo, k1 = g1 < p ? g1 : p;
				float *row = sc + q * ATT_KT;
				op[q] = ob + (t * a->n_head + h) * vd;
				if (k0 > k1) { /* no key here: o * 1 + 0 */
					memset(row, 0, (size_t)ng * sizeof(float));
					corr[q] = 1;
					continue;
				}
				float *r = row + (k0 - g0);
				int64_t nk = k1 - k0 + 1;
				if (a->softcap > 0)
					for (int64_t c = 0; c < nk; c++)
						r[c] = a->softcap * tanhf(r[c] / a->softcap);
				if (a->alibi)
					for (int64_t c = 0; c < nk; c++)
						r[c] += a->alibi[h] * (float)(k0 + c - p);
				if (a->rel_bias) { /* T5: by the distance to the query */
					int64_t w = a->rel_span, qp = a->pos0 + t;
					const float *rb = a->rel_bias + h * (2 * w + 1) + w;
					for (int64_t c = 0; c < nk; c++) {
						int64_t d = k0 + c - qp;
						r[c] += rb[d < -w ? -w : d > w ? w : d];
					}
				}
				float m1 = g_isa.max(r, nk);
				float mn = m1 > mx[i] ? m1 : mx[i];
				corr[q] = expf(mx[i] - mn); /* 0 on the first tile */
				ls[i] = ls[i] * corr[q] + g_isa.expsum(r, mn, nk);
				mx[i] = mn;
				memset(row, 0, (size_t)(k0 - g0) * sizeof(float));
				memset(r + nk, 0, (size_t)(ng - (k0 - g0) - nk) * sizeof(float));
			}
			g_isa.attn_pv(op, corr, sc, ATT_KT, n4, vt, ng, vd);
		}
	}
}

/* o, m, l (a query's result so far) += a segment's o2, m2, l2 */
static void attn_merge(float *o, float *m, float *l, const float *o2, float m2, float l2,
		       int64_t vd)
{
	if (m2 == -INFINITY) /* no key in the segment */
		return;
	if (*m == -INFINITY) {
		memcpy(o, o2, (size_t)vd * sizeof(float));
		*m = m2, *l = l2;
		return;
	}
	float mn = m2 > *m ? m2 : *m, c1 = expf(*m - mn), c2 = expf(m2 - mn);
	for (int64_t d = 0; d < vd; d++)
		o[d] = o[d] * c1 + o2[d] * c2;
	*l = *l * c1 + l2 * c2;
	*m = mn;
}

/* The scaled queries of an item into its scratch (attn_keys' qs) */
static void attn_queries(struct attn_job *j, float *scr, int64_t kh, int64_t t0, int64_t t1)
{
	const struct tfm_attn_args *a = j->a;
	int64_t hd = a->head_dim, grp = a->n_head / a->n_head_kv;
	float *qs = attn_qs(a, scr);
	const float sc = a->scale; /* a local: the stores to qs could alias a->scale */
	for (int64_t t = t0; t < t1; t++)
		for (int64_t g = 0; g < grp; g++) {
			int64_t i = (t - t0) * grp + g, h = kh * grp + g;
			const float *qv = j->q + (t * a->n_head + h) * hd;
			float *d = qs + i * hd;
			for (int64_t e = 0; e < hd; e++)
				d[e] = qv[e] * sc;
		}
}

/* Keys are taken in segments of ATT_SEG positions (multiples of ATT_SEG),
 * each through the online softmax from scratch, and the segments' results
 * merged in order (attn_merge).  A short item runs its segments one after
 * another; a decode step over a long context gives each (KV head, segment)
 * to a task of its own and merges after (attn_split), which is the same
 * arithmetic in the same order: the split changes no bit, and prefill still
 * equals decode.  Below ATT_SEG keys nothing of this happens. */
#define ATT_SEG 1024

static void attn_item(struct attn_job *j, float *scr, int64_t it)
{
	const struct tfm_attn_args *a = j->a;
	int64_t kh = it % a->n_head_kv, blk = it / a->n_head_kv;
	int64_t t0 = blk * ATT_QB, t1 = t0 + ATT_QB < a->n_tok ? t0 + ATT_QB : a->n_tok;
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd;
	int64_t grp = a->n_head / a->n_head_kv, nq = (t1 - t0) * grp;
	/* after attn_keys' scratch: m, l [nq], and a segment's m, l [nq], o [nq][vd] */
	float *mx = attn_after(a, scr, nq);
	float *ls = mx + nq, *m2 = ls + nq, *l2 = m2 + nq, *o2 = l2 + nq;
	attn_queries(j, scr, kh, t0, t1);
	/* keys of the block; an encoder's queries all see the whole batch
	 * (or their window) */
	int64_t plo = first_key(a, a->pos0 + t0), phi = last_key(a, a->pos0 + t1 - 1);
	for (int64_t s0 = plo / ATT_SEG * ATT_SEG; s0 <= phi; s0 += ATT_SEG) {
		int64_t klo = s0 > plo ? s0 : plo, khi = s0 + ATT_SEG - 1 < phi ? s0 + ATT_SEG - 1 : phi;
		if (klo == plo) { /* the first segment straight into the output */
			attn_keys(j, scr, kh, t0, t1, klo, khi, j->out, mx, ls);
			continue;
		}
		/* o2 holds query i's row at its (t, h) offset minus the block's */
		float *ob = o2 - (t0 * a->n_head + kh * grp) * vd;
		attn_keys(j, scr, kh, t0, t1, klo, khi, ob, m2, l2);
		for (int64_t i = 0; i < nq; i++) {
			int64_t off = ((t0 + i / grp) * a->n_head + kh * grp + i % grp) * vd;
			attn_merge(j->out + off, mx + i, ls + i, ob + off, m2[i], l2[i], vd);
		}
	}
	for (int64_t i = 0; i < nq; i++) {
		int64_t t = t0 + i / grp, h = kh * grp + i % grp;
		float inv = 1.0f / ls[i], *o = j->out + (t * a->n_head + h) * vd;
		for (int64_t d = 0; d < vd; d++)
			o[d] *= inv;
	}
}

static void attn_task(void *ctx, int task, int n_tasks)
{
	struct attn_job *j = ctx;
	float *scr = j->k->scratch + (size_t)task * j->k->scratch_per_task;
	for (;;) {
		int64_t it = atomic_fetch_add(&j->next, 1);
		if (it >= j->n_items)
			break;
		attn_item(j, scr, it);
	}
}

/* A decode step (one query block) over more than one segment, split by
 * (KV head, segment): each item writes its segment's o, m, l into part,
 * [n_seg][n_tok][n_head] rows of vd + 2 floats */
struct attn_split {
	struct attn_job *j;
	float *part;
	int64_t s_first, n_seg;
	atomic_llong next;
};

static void split_task(void *ctx, int task, int n_tasks)
{
	struct attn_split *sp = ctx;
	struct attn_job *j = sp->j;
	const struct tfm_attn_args *a = j->a;
	float *scr = j->k->scratch + (size_t)task * j->k->scratch_per_task;
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd, grp = a->n_head / a->n_head_kv;
	int64_t nq = a->n_tok * grp, rows = a->n_tok * a->n_head;
	float *mx = attn_after(a, scr, nq), *ls = mx + nq;
	int64_t plo = first_key(a, a->pos0), phi = last_key(a, a->pos0 + a->n_tok - 1);
	(void)n_tasks;
	for (;;) {
		int64_t it = atomic_fetch_add(&sp->next, 1);
		if (it >= sp->n_seg * a->n_head_kv)
			break;
		int64_t kh = it % a->n_head_kv, s = it / a->n_head_kv;
		int64_t s0 = (sp->s_first + s) * ATT_SEG;
		int64_t klo = s0 > plo ? s0 : plo, khi = s0 + ATT_SEG - 1 < phi ? s0 + ATT_SEG - 1 : phi;
		float *ob = sp->part + s * rows * (vd + 2); /* o rows, then m and l per row */
		attn_queries(j, scr, kh, 0, a->n_tok);
		attn_keys(j, scr, kh, 0, a->n_tok, klo, khi, ob, mx, ls);
		for (int64_t i = 0; i < nq; i++) {
			int64_t r = (i / grp) * a->n_head + kh * grp + i % grp;
			ob[rows * vd + 2 * r] = mx[i], ob[rows * vd + 2 * r + 1] = ls[i];
		}
	}
}

static int attn_split(struct attn_job *j)
{
	const struct tfm_attn_args *a = j->a;
	int64_t vd = a->v_dim ? a->v_dim : a->head_dim, rows = a->n_tok * a->n_head;
	int64_t plo = first_key(a, a->pos0), phi = last_key(a, a->pos0 + a->n_tok - 1);
	struct attn_split sp = {.j = j, .s_first = plo / ATT_SEG};
	sp.n_seg = phi / ATT_SEG - sp.s_first + 1;
	sp.part = malloc((size_t)(sp.n_seg * rows * (vd + 2)) * sizeof(float));
	if (!sp.part)
		return 0;
	atomic_init(&sp.next, 0);
	tfm_pool_run(j->k->pool, split_task, &sp, j->k->n_tasks);
	for (int64_t r = 0; r < rows; r++) {
		float *o = j->out + r * vd, m = -INFINITY, l = 0;
		for (int64_t s = 0; s < sp.n_seg; s++) {
			const float *ob = sp.part + s * rows * (vd + 2);
			attn_merge(o, &m, &l, ob + r * vd, ob[rows * vd + 2 * r], ob[rows * vd + 2 * r + 1],
				   vd);
		}
		float inv = 1.0f / l;
		for (int64_t d = 0; d < vd; d++)
			o[d] *= inv;
	}
	free(sp.part);
	return 1;
}

static void cpu_attn(struct tfm_kexec *k, float *out, const float *q, const void *kc,
		     const void *vc, const struct tfm_attn_args *a)
{
	pthread_once(&g_once, cpu_init);
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd;
	struct attn_job j = {.k = k, .out = out, .q = q, .kc = kc, .vc = vc, .a = a};
	j.krow = tfm_k_kv_bytes(a->k_type, 1, 1, hd);
	j.vrow = tfm_k_kv_bytes(a->v_type, 1, 1, vd);
	j.n_blk = (a->n_tok + ATT_QB - 1) / ATT_QB;
	j.n_items = j.n_blk * a->n_head_kv;
	atomic_init(&j.next, 0);
	int64_t keys = a->bidir && a->n_kv > 0 ? a->n_kv : a->pos0 + a->n_tok;
	if (a->window > 0 && keys > a->window)
		keys = a->window;
	if (a->chunk > 0 && keys > a->chunk)
		keys = a->chunk;
	double work = 2.0 * (double)a->n_tok * a->n_head * keys * hd;
	if (k->n_tasks <= 1 || work < k->par_min)
		attn_task(&j, 0, 1);
	else if (j.n_blk == 1 &&
		 last_key(a, a->pos0 + a->n_tok - 1) / ATT_SEG > first_key(a, a->pos0) / ATT_SEG &&
		 attn_split(&j))
		;
	else if (j.n_items == 1)
		attn_task(&j, 0, 1);
	else
		tfm_pool_run(k->pool, attn_task, &j, k->n_tasks);
}

/* K: [n_head_kv][head_dim][n_slots] for f32 / f16 (see gather_t), rows
 * [n_head_kv][n_slots] for the other types; V: rows [n_head_kv][n_slots] */
static void cpu_kv_store(void *kc, void *vc, const float *k, const float *v, int64_t slot,
			 const struct tfm_attn_args *a)
{
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd, ns = a->n_slots;
	size_t krow = tfm_k_kv_bytes(a->k_type, 1, 1, hd), vrow = tfm_k_kv_bytes(a->v_type, 1, 1, vd);
	for (int64_t h = 0; h < a->n_head_kv; h++) {
		if (a->k_type == TFM_TYPE_F32) { /* a column of K^T, element by element */
			float *col = (float *)kc + h * hd * ns + slot;
			for (int64_t d = 0; d < hd; d++)
				col[d * ns] = k[h * hd + d];
		} else if (a->k_type == TFM_TYPE_F16) {
			size_t es = 2;
			uint8_t *col = (uint8_t *)kc + (size_t)(h * hd * ns + slot) * es;
			for (int64_t d = 0; d < hd; d++)
				tfm_k_kv_put(a->k_type, col + (size_t)(d * ns) * es, k + h * hd + d, 1);
		} else {
			tfm_k_kv_put(a->k_type, (uint8_t *)kc + (size_t)(h * ns + slot) * krow,
				     k + h * hd, hd);
		}
		if (!a->v_from_k)
			tfm_k_kv_put(a->v_type, (uint8_t *)vc + (size_t)(h * ns + slot) * vrow,
				     v + h * vd, vd);
	}
}

/* x packed for the 8-bit GEMM, whichever runs (the AVX2 one takes q5_1 and
 * q6_K on AVX-512 machines too).  The per-task scratch holds it only up to
 * ~340 tokens of 1536 inputs, so without this buffer a longer prefill ran
 * such matmuls (an FFN's down projection) by sgemm. */
static size_t cpu_xbuf_need(int64_t max_in, int64_t max_tok)
{
	size_t b = 0;
	pthread_once(&g_once, cpu_init);
	if (g_isa.igemm && max_tok > VDOT_MAX_BATCH) {
		b = g_isa.igemm->x_bytes(max_tok, max_in);
#if defined(__x86_64__)
		size_t a = igemm_avx2.x_bytes(max_tok, max_in);
		if (a > b)
			b = a;
#endif
	}
	return b;
}

static size_t cpu_scratch_need(int64_t max_in, int64_t n_slots)
{
	/* attention: head and value sizes, and grp * head_dim, are <= max_in
	 * (they are rows of the attention output projection's input) */
	size_t a = (size_t)GEMM_TILE * (size_t)max_in;
	size_t b = (size_t)(2 * ATT_KT + 4 * ATT_QB + 6) * (size_t)max_in + 4 * ATT_KT + 64;
	return a > b ? a : b;
}

/* ---- the recurrent mixers' units on the pool ----
 *
 * Runs of consecutive units, about PAR_RUNS per task, handed out through
 * an atomic counter as the matmul's chunks are: on a loaded machine a
 * worker that joined and was then descheduled holds up one run, not a
 * whole share.  A pool task is one thread at a time, so the work space
 * the chunked forms keep per task (and kt's scratch slice) is its own. */
#define PAR_RUNS 4

struct par_job {
	struct tfm_kexec *k;
	void (*fn)(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1);
	void *ctx;
	int64_t n_units, run;
	atomic_int_fast64_t next;
};

static void par_task(void *ctx, int task, int n_tasks)
{
	struct par_job *j = ctx;
	struct tfm_kexec kt = *j->k;
	(void)n_tasks;
	kt.pool = NULL;
	kt.n_tasks = 1;
	kt.xbuf = NULL; /* shared: tasks running at once would overwrite it */
	kt.xbuf_bytes = 0;
	kt.scratch = j->k->scratch + (size_t)task * j->k->scratch_per_task;
	for (;;) {
		int64_t u0 = atomic_fetch_add(&j->next, j->run);
		if (u0 >= j->n_units)
			break;
		j->fn(j->ctx, &kt, task, u0, u0 + j->run < j->n_units ? u0 + j->run : j->n_units);
	}
}

static void cpu_parallel(struct tfm_kexec *k,
			 void (*fn)(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1),
			 void *ctx, int64_t n_units, double work)
{
	if (k->n_tasks <= 1 || n_units < 2 || work < (double)k->par_min) {
		fn(ctx, k, 0, 0, n_units);
		return;
	}
	struct par_job j = {.k = k, .fn = fn, .ctx = ctx, .n_units = n_units};
	j.run = (n_units + PAR_RUNS * k->n_tasks - 1) / (PAR_RUNS * k->n_tasks);
	atomic_init(&j.next, 0);
	int nt = n_units < k->n_tasks ? (int)n_units : k->n_tasks;
	tfm_pool_run(k->pool, par_task, &j, nt);
}

/* ---- the recurrent steps: the instruction set's version ---- */

static void cpu_mamba_scan(float *y, float *h, const float *x, const float *dt, const float *A,
			   const float *D, const float *B, const float *C, int64_t bc_stride,
			   int64_t ld, int64_t n, int64_t d, int64_t d_state)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.mamba_scan(y, h, x, dt, A, D, B, C, bc_stride, ld, n, d, d_state);
}

static void cpu_mamba2_scan(float *y, float *S, const float *x, float dt, float A, float D,
			    const float *B, const float *C, int64_t head_dim, int64_t d_state)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.mamba2_scan(y, S, x, dt, A, D, B, C, head_dim, d_state);
}

static void cpu_gdn_step(float *o, float *S, const float *q, const float *k, const float *v,
			 float g, float beta, int64_t dk, int64_t dv)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.gdn_step(o, S, q, k, v, g, beta, dk, dv);
}

static void cpu_rwkv4_wkv(float *out, float *num, float *den, float *mx, const float *k,
			  const float *v, const float *w, const float *u, int64_t d)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.rwkv4_wkv(out, num, den, mx, k, v, w, u, d);
}

static void cpu_rwkv5_wkv(float *out, float *S, const float *r, const float *k, const float *v,
			  const float *w, const float *u, int64_t n_head, int64_t hs)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.rwkv5_wkv(out, S, r, k, v, w, u, n_head, hs);
}

static void cpu_rwkv7_wkv(float *out, float *S, const float *r, const float *w, const float *k,
			  const float *v, const float *a, const float *b, int64_t n_head, int64_t hs)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.rwkv7_wkv(out, S, r, w, k, v, a, b, n_head, hs);
}

static void cpu_mlstm_step(float *h, float *C, float *n, float *m, const float *q, const float *k,
			   const float *v, float ig, float fg, int64_t dqk, int64_t dv, float eps)
{
	pthread_once(&g_once, cpu_init);
	g_isa.scan.mlstm_step(h, C, n, m, q, k, v, ig, fg, dqk, dv, eps);
}

const struct tfm_backend tfm_cpu_backend = {
	.name = "cpu",
	.variant = tfm_cpu_isa,
	.matmul = cpu_matmul,
	.matmul_bias = cpu_matmul_bias,
	.matmul_multi = cpu_matmul_multi,
	.repack = cpu_repack,
	.rmsnorm = tfm_cpu_rmsnorm,
	.layernorm = tfm_cpu_layernorm,
	.rope = tfm_cpu_rope,
	.softmax = tfm_cpu_softmax,
	.act = tfm_cpu_act,
	.act_mul = tfm_cpu_act_mul,
	.add = tfm_cpu_add,
	.mul = tfm_cpu_mul,
	.attn = cpu_attn,
	.kv_store = cpu_kv_store,
	.scratch_need = cpu_scratch_need,
	.xbuf_need = cpu_xbuf_need,
	.parallel = cpu_parallel,
	.mamba_scan = cpu_mamba_scan,
	.mamba2_scan = cpu_mamba2_scan,
	.gdn_step = cpu_gdn_step,
	.rwkv4_wkv = cpu_rwkv4_wkv,
	.rwkv5_wkv = cpu_rwkv5_wkv,
	.rwkv7_wkv = cpu_rwkv7_wkv,
	.mlstm_step = cpu_mlstm_step,
};
