/* test_kernels.c: every kernel of every backend against the scalar reference
 * (lib/kernels/ref), on odd sizes, with |got - want| <= atol + rtol * |want|.
 * Prints the worst error per kernel and backend.  The reference itself is
 * checked on a few hand-computed values.
 *
 * TFM_TEST_QUICK=1 (make check-arm64 sets it: there this runs under qemu, some
 * 30 times slower) thins the costliest part, attention on 17 tokens past
 * several key tiles: a quarter of its heads x head size x
 * mask x score variant cases on f32 and f16 caches, a sixteenth (pairwise)
 * on the others (quick_attn).  1 and 3 tokens keep the whole grid, and
 * every kernel, cache and weight type, instruction set, size and thread
 * count still runs; make check runs the whole grid. */
#include "t.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu-impl.h"
#include "quant/quant.h"
#include "quant/quant-impl.h"

#include <stdint.h>

static const int64_t sizes[] = {1, 3, 17, 33, 257};
#define NS ((int)(sizeof sizes / sizeof sizes[0]))

static uint64_t rng = 88172645463325252ull;
static float frand(void) /* uniform in [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}
static void fill(float *x, int64_t n, float scale)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = frand() * scale;
}

/* The backends under test: every one but the reference, the cpu backend
 * once per instruction set this processor has (isa; NULL for the others). */
enum { MAXV = 8 };
struct variant { const struct tfm_backend *be; const char *isa; char label[32]; };
static struct variant V[MAXV];
static int nV;

/* Worst error of a kernel on a variant: the largest |got - want| and whether
 * every element passed the tolerance.  cmp records into the current one. */
struct worst { const char *kernel; double abs; int bad; };
static struct worst W[MAXV][64];
static int nW[MAXV], cur;

static struct worst *worst_of(const char *kernel)
{
	struct worst *w = W[cur];
	for (int i = 0; i < nW[cur]; i++)
		if (!strcmp(w[i].kernel, kernel))
			return &w[i];
	w[nW[cur]] = (struct worst){.kernel = kernel}; /* not the last backend's numbers */
	return &w[nW[cur]++];
}

/* variant v becomes the current one: its backend, on its instruction set */
static const struct tfm_backend *use(int v)
{
	cur = v;
	if (V[v].isa && tfm_cpu_set_isa(V[v].isa) != TFM_OK)
		abort(); /* listed only if the processor has it */
	return V[v].be;
}

/* print and check the current variant's worst errors, and start afresh */
static void report(const char *label)
{
	for (int i = 0; i < nW[cur]; i++) {
		struct worst *w = &W[cur][i];
		fprintf(stderr, "  %-10s %-15s worst |got-want| %.3g%s\n", label, w->kernel, w->abs,
			w->bad ? "  FAILED" : "");
		CHECK_MSG(!w->bad, "%s %s: %d values out of tolerance", label, w->kernel, w->bad);
	}
	nW[cur] = 0;
}

static void cmp(const char *kernel, const float *got, const float *want, int64_t n, double atol,
		double rtol)
{
	struct worst *w = worst_of(kernel);
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - want[i]);
		if (!(d <= atol + rtol * fabs(want[i]))) {
			if (w->bad++ < 5)
				fprintf(stderr, "%s: [%lld] got %.9g want %.9g\n", kernel,
					(long long)i, got[i], want[i]);
		}
		if (d > w->abs || d != d)
			w->abs = d;
	}
}

static struct tfm_pool *pool;
static float *scratch;
static int quick; /* TFM_TEST_QUICK: the reduced grid (above) */
static struct tfm_kexec kx(int threaded)
{
	struct tfm_kexec k = {.pool = pool, .n_tasks = threaded ? 2 : 1, .scratch = scratch,
			      .scratch_per_task = 1 << 20, .par_min = 0};
	return k;
}

/* weights of a type from f32 values; the f32 values are replaced by what the
 * type can hold, so ref and backend see the same numbers */
static size_t make_w(int type, float *v, int64_t in, int64_t out, uint8_t *dst)
{
	size_t rb = 0;
	for (int64_t o = 0; o < out; o++) {
		float *r = v + o * in;
		if (type == TFM_TYPE_F32) {
			rb = (size_t)in * 4;
			memcpy(dst + o * rb, r, rb);
		} else if (type == TFM_TYPE_F16 || type == TFM_TYPE_BF16) {
			rb = (size_t)in * 2;
			for (int64_t i = 0; i < in; i++) {
				uint16_t h = type == TFM_TYPE_F16 ? tfm_f32_to_f16(r[i]) : tfm_f32_to_bf16(r[i]);
				memcpy(dst + o * rb + 2 * i, &h, 2);
			}
		} else if (tfm_quant_blck(type) == 256) { /* K-quants: lib/quant's quantizer */
			rb = tfm_quant_row_bytes(type, in);
			tfm_quantize_row_ref(type, r, dst + o * rb, in);
		} else { /* blocks of 32: random valid f16 scales (and mins), random quants */
			const struct tfm_type_info *ti = tfm_type_info(type);
			int has_min = type == TFM_TYPE_Q4_1 || type == TFM_TYPE_Q5_1;
			rb = (size_t)(in / 32) * ti->size;
			uint8_t *p = dst + o * rb;
			for (int64_t b = 0; b < in / 32; b++, p += ti->size) {
				uint16_t d = tfm_f32_to_f16(0.01f + 0.02f * fabsf(frand()));
				memcpy(p, &d, 2);
				if (has_min) {
					uint16_t mn = tfm_f32_to_f16(0.1f * frand());
					memcpy(p + 2, &mn, 2);
				}
				for (size_t j = has_min ? 4 : 2; j < ti->size; j++)
					p[j] = (uint8_t)((frand() + 1) * 127.9f);
			}
		}
	}
	return rb;
}

static void t_reference(void)
{
	const struct tfm_backend *r = tfm_backend_ref();
	float x[4] = {1, 2, 3, 4}, y[4];
	r->rmsnorm(y, x, NULL, 4, 0, 0); /* rms = sqrt(30/4) */
	CHECK_CLOSE(y[3], 4 / sqrt(7.5), 1e-6, 0);
	float w[4] = {1, 1, 1, 2}, b[4] = {0, 0, 0, 1};
	r->layernorm(y, x, w, b, 4, 0, 0); /* mean 2.5, var 1.25 */
	CHECK_CLOSE(y[3], 1.5 / sqrt(1.25) * 2 + 1, 1e-6, 0);
	float s[3] = {0, 0, log(2.0)};
	r->softmax(s, 3);
	CHECK_CLOSE(s[2], 0.5, 1e-7, 0);
	CHECK_CLOSE(tfm_ref_act1(1.0f, TFM_K_SILU), 1 / (1 + exp(-1.0)), 1e-7, 0);
	CHECK_CLOSE(tfm_ref_act1(1.0f, TFM_K_GELU), 0.8413447460685429, 1e-7, 0);
	CHECK_CLOSE(tfm_ref_act1(1.0f, TFM_K_GELU_TANH), 0.8411919906082768, 1e-7, 0);
	/* rope by 90 degrees: (1, 0) -> (0, 1) in both layouts */
	float v[4] = {1, 0, 5, 7}, cs[2] = {0, 1}, sn[2] = {1, 0};
	r->rope(v, 1, 4, 4, 1, cs, sn);
	CHECK(v[0] == 0 && v[1] == 1 && v[2] == 5 && v[3] == 7);
	float u[4] = {1, 5, 0, 7};
	r->rope(u, 1, 4, 4, 0, cs, sn);
	CHECK(u[0] == 0 && u[2] == 1 && u[1] == 5 && u[3] == 7);
	/* q8_0 row: d = 0.5, q = 0..31 -> 0, 0.5, ... */
	uint8_t blk[34];
	uint16_t d = tfm_f32_to_f16(0.5f);
	memcpy(blk, &d, 2);
	for (int j = 0; j < 32; j++)
		blk[2 + j] = (uint8_t)(j - 16);
	float row[32];
	CHECK_OK(tfm_k_row_to_f32(TFM_TYPE_Q8_0, blk, row, 32));
	CHECK(row[0] == -8 && row[31] == 7.5f);
	/* q4_0: byte 0 = 0x3f -> element 0 = (15-8)*d, element 16 = (3-8)*d */
	uint8_t b4[18] = {0};
	memcpy(b4, &d, 2);
	b4[2] = 0x3f;
	CHECK_OK(tfm_k_row_to_f32(TFM_TYPE_Q4_0, b4, row, 32));
	CHECK(row[0] == 3.5f && row[16] == -2.5f && row[1] == -4);
	/* attention with two keys, equal scores: the mean of the values */
	float q[2] = {1, 0}, kc[4] = {1, 0, 1, 0}, vc[4] = {2, 4, 6, 8}, o[2];
	struct tfm_attn_args a = {.n_tok = 1, .pos0 = 1, .n_head = 1, .n_head_kv = 1,
				  .head_dim = 2, .n_slots = 2, .scale = 1};
	/* ref layout: [slot][kv_dim] */
	float k1[2] = {1, 0}, v1[2] = {6, 8}, kc2[4] = {0}, vc2[4] = {0};
	r->kv_store(kc2, vc2, k1, v1, 1, &a);
	CHECK(kc2[2] == 1 && kc2[3] == 0 && vc2[2] == 6 && vc2[3] == 8);
	struct tfm_kexec k = kx(0);
	r->attn(&k, o, q, kc, vc, &a);
	CHECK_CLOSE(o[0], 4, 1e-6, 0);
	CHECK_CLOSE(o[1], 6, 1e-6, 0);
	a.window = 1; /* only the key at position 1 */
	r->attn(&k, o, q, kc, vc, &a);
	CHECK_CLOSE(o[0], 6, 1e-6, 0);
}

/* GELU (erf) across [-12, 12] in steps of 1/1024 against erf in double:
 * the vector paths approximate erfc, the scalar path calls erff. */
static void gelu_sweep(const struct tfm_backend *be)
{
	enum { N = 24 * 1024 + 1 };
	float *g = malloc(N * sizeof *g), *e = malloc(N * sizeof *e);
	for (int i = 0; i < N; i++) {
		double x = -12 + i / 1024.0;
		g[i] = (float)x;
		e[i] = (float)(0.5 * x * erfc(-x / sqrt(2.0)));
	}
	be->act(g, N, TFM_K_GELU);
	cmp("gelu vs erf (double)", g, e, N, 1e-7, 1e-6);
	free(g);
	free(e);
}

/* The recurrent steps against the reference.  GDN, RWKV v5 / v6 and mLSTM
 * run the reference's float operations in its order in every lane, so
 * they must give the same bits (cpu/scan-simd.h).  Mamba, Mamba-2, RWKV v4
 * and v7 fuse multiply-adds, use Cephes' exp (about 1 ulp) where the
 * reference calls expf on each element, and Mamba-2 and v7 sum two dot
 * products across lanes at the end: their outputs and states are held to
 * 1e-5 of the largest |want| of the vector plus 1e-5 of the element's own
 * |want| (float rounding of a sum of at most 65 terms is about sqrt(65)
 * 6e-8 of the terms' scale, 5e-7, so 1e-5 leaves room for the error the
 * state carries and still fails on a wrong index or a lost term).  Odd
 * sizes cover every tail of 8 and 16 lanes; six steps carry the state. */
static int g16; /* checking the 16-lane C version: no bits promised */
static void cmp_scaled(const char *kernel, const float *got, const float *want, int64_t n)
{
	double mx = 0;
	if (!g16 && (strstr(kernel, "gdn") || strstr(kernel, "rwkv5") || strstr(kernel, "mlstm"))) {
		cmp(kernel, got, want, n, 0, 0);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		mx = fmax(mx, fabs(want[i]));
	cmp(kernel, got, want, n, 1e-5 * mx, 1e-5);
}

static float urand(float lo, float hi) { return lo + (frand() + 1) * 0.5f * (hi - lo); }

/* x [n] scaled to unit length (the k of the delta rule, rwkv7's kk) */
static void unit(float *x, int64_t n)
{
	double ss = 0;
	for (int64_t i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(x[i] / sqrt(ss + 1e-12));
}

static void scan_checks(const struct tfm_backend *be)
{
	const struct tfm_backend *r = tfm_backend_ref();
	static const int64_t szs[] = {1, 5, 7, 16, 33, 64, 65};
	enum { NSZ = 7, T = 6, MX = 65 * 65 * 2 };
	float *S0 = malloc(MX * 4), *S1 = malloc(MX * 4), *o0 = malloc(MX * 4), *o1 = malloc(MX * 4);
	float *in = malloc(16 * MX * 4);
	/* Mamba: d channels x d_state, tokens in calls of 1 and 4 */
	static const int64_t mdims[][2] = {{1, 1}, {7, 16}, {9, 7}, {17, 33}, {33, 16}, {16, 1}};
	for (int di = 0; di < 6; di++) {
		int64_t d = mdims[di][0], N = mdims[di][1], n = 5, bs = 2 * N + 3;
		float *x = in, *dt = x + n * d, *A = dt + n * d, *D = A + d * N, *bc = D + d;
		fill(x, n * d, 2);
		for (int64_t i = 0; i < n * d; i++)
			dt[i] = urand(0.001f, 0.5f);
		for (int64_t i = 0; i < d * N; i++)
			A[i] = -urand(0.5f, 16);
		fill(D, d, 1);
		fill(bc, n * bs, 1.5f);
		fill(S0, d * N, 1);
		memcpy(S1, S0, d * N * 4);
		for (int64_t t0 = 0; t0 < n; t0 = t0 ? n : 1) { /* tokens [0, 1), [1, 5) */
			int64_t nt = t0 ? n - t0 : 1;
			r->mamba_scan(o0 + t0 * d, S0, x + t0 * d, dt + t0 * d, A, D, bc + t0 * bs,
				      bc + t0 * bs + N, bs, d, nt, d, N);
			/* the backend's in two blocks of channels, rows d apart (a
			 * thread's share of the layer's channels) */
			int64_t d1 = d > 16 ? 16 : d, o = t0 * d;
			be->mamba_scan(o1 + o, S1, x + o, dt + o, A, D, bc + t0 * bs, bc + t0 * bs + N,
				       bs, d, nt, d1, N);
			if (d > d1)
				be->mamba_scan(o1 + o + d1, S1 + d1 * N, x + o + d1, dt + o + d1, A + d1 * N,
					       D + d1, bc + t0 * bs, bc + t0 * bs + N, bs, d, nt, d - d1, N);
		}
		cmp_scaled("mamba_scan", o1, o0, n * d);
		cmp_scaled("mamba_scan h", S1, S0, d * N);
	}
	for (int hi = 0; hi < NSZ; hi++)
		for (int ni = 0; ni < NSZ; ni++) {
			int64_t hd = szs[hi], N = szs[ni];
			/* Mamba-2: one head, T steps */
			fill(S0, hd * N, 1);
			memcpy(S1, S0, hd * N * 4);
			for (int t = 0; t < T; t++) {
				float *x = in, *B = x + hd, *C = B + N;
				fill(x, hd, 2);
				fill(B, 2 * N, 1);
				float dt = urand(0.001f, 0.5f), A = -urand(0.5f, 8), D = frand();
				r->mamba2_scan(o0, S0, x, dt, A, D, B, C, hd, N);
				be->mamba2_scan(o1, S1, x, dt, A, D, B, C, hd, N);
				/* y_i = S_i . C + D x_i: its rounding scales with
				 * the terms, not with y, which they may cancel to
				 * near zero (a 16-lane sum gave 1.2e-6 on a y of
				 * -0.0088 whose largest term was 10x that) */
				double ts = 0;
				for (int64_t i = 0; i < hd; i++) {
					double ti = fabs((double)D * x[i]);
					for (int64_t j = 0; j < N; j++)
						ti += fabs((double)S0[i * N + j] * C[j]);
					ts = fmax(ts, ti);
				}
				cmp("mamba2_scan", o1, o0, hd, 1e-5 * ts, 1e-5);
			}
			cmp_scaled("mamba2_scan S", S1, S0, hd * N);
			/* Gated DeltaNet: dk = szs[hi], dv = szs[ni] */
			int64_t dk = hd, dv = N;
			memset(S0, 0, dk * dv * 4);
			memset(S1, 0, dk * dv * 4);
			for (int t = 0; t < T; t++) {
				float *q = in, *k = q + dk, *v = k + dk;
				fill(q, 2 * dk + dv, 1);
				unit(q, dk);
				unit(k, dk);
				float g = -urand(0, 2), beta = urand(0, 1);
				r->gdn_step(o0, S0, q, k, v, g, beta, dk, dv);
				be->gdn_step(o1, S1, q, k, v, g, beta, dk, dv);
				cmp_scaled("gdn_step", o1, o0, dv);
			}
			cmp_scaled("gdn_step S", S1, S0, dk * dv);
			/* mLSTM: dqk = szs[hi], dv = szs[ni]; C, n, m after the steps */
			int64_t dq = hd;
			memset(S0, 0, (dq * dv + dq + 1) * 4);
			memset(S1, 0, (dq * dv + dq + 1) * 4);
			for (int t = 0; t < T; t++) {
				float *q = in, *k = q + dq, *v = k + dq;
				fill(q, 2 * dq + dv, 1);
				float ig = urand(-6, 6), fg = urand(-1, 3);
				r->mlstm_step(o0, S0, S0 + dq * dv, S0 + dq * dv + dq, q, k, v, ig, fg, dq,
					      dv, 1e-6f);
				be->mlstm_step(o1, S1, S1 + dq * dv, S1 + dq * dv + dq, q, k, v, ig, fg,
					       dq, dv, 1e-6f);
				cmp_scaled("mlstm_step", o1, o0, dv);
			}
			cmp_scaled("mlstm_step C", S1, S0, dq * dv);
			cmp_scaled("mlstm_step n", S1 + dq * dv, S0 + dq * dv, dq + 1);
		}
	/* RWKV: v5/v6 and v7 on 2 heads of hs; v4 on d = 2 hs channels */
	for (int hi = 0; hi < NSZ; hi++) {
		int64_t hs = szs[hi], nh = 2, d = nh * hs;
		float *rr = in, *k = rr + d, *v = k + d, *w = v + d, *u = w + d, *a = u + d, *b = a + d;
		memset(S0, 0, nh * hs * hs * 4);
		memset(S1, 0, nh * hs * hs * 4);
		for (int t = 0; t < T; t++) {
			fill(rr, 5 * d, 1);
			for (int64_t i = 0; i < d; i++)
				w[i] = expf(-expf(urand(-3, 1.5f)));
			r->rwkv5_wkv(o0, S0, rr, k, v, w, u, nh, hs);
			be->rwkv5_wkv(o1, S1, rr, k, v, w, u, nh, hs);
			cmp_scaled("rwkv5_wkv", o1, o0, d);
		}
		cmp_scaled("rwkv5_wkv S", S1, S0, nh * hs * hs);
		memset(S0, 0, nh * hs * hs * 4);
		memset(S1, 0, nh * hs * hs * 4);
		for (int t = 0; t < T; t++) {
			fill(rr, 7 * d, 1);
			for (int64_t i = 0; i < d; i++)
				w[i] = expf(-0.606531f / (1 + expf(-3 * frand())));
			for (int64_t h = 0; h < nh; h++)
				unit(a + h * hs, hs); /* kk */
			for (int64_t i = 0; i < d; i++) {
				b[i] = a[i] * urand(0, 1); /* kk iclr */
				a[i] = -a[i];
			}
			r->rwkv7_wkv(o0, S0, rr, w, k, v, a, b, nh, hs);
			be->rwkv7_wkv(o1, S1, rr, w, k, v, a, b, nh, hs);
			cmp_scaled("rwkv7_wkv", o1, o0, d);
		}
		cmp_scaled("rwkv7_wkv S", S1, S0, nh * hs * hs);
		/* v4: num, den, max start as the model's (0, 0, -1e38) */
		for (int64_t i = 0; i < d; i++) {
			S0[i] = S0[d + i] = 0, S0[2 * d + i] = -1e38f;
			S1[i] = S1[d + i] = 0, S1[2 * d + i] = -1e38f;
		}
		for (int t = 0; t < T; t++) {
			fill(k, 3 * d, 3);
			for (int64_t i = 0; i < d; i++)
				w[i] = -expf(urand(-4, 1));
			r->rwkv4_wkv(o0, S0, S0 + d, S0 + 2 * d, k, v, w, u, d);
			be->rwkv4_wkv(o1, S1, S1 + d, S1 + 2 * d, k, v, w, u, d);
			cmp_scaled("rwkv4_wkv", o1, o0, d);
		}
		cmp_scaled("rwkv4_wkv num", S1, S0, d);
		cmp_scaled("rwkv4_wkv den", S1 + d, S0 + d, d);
		cmp_scaled("rwkv4_wkv max", S1 + 2 * d, S0 + 2 * d, d);
	}
	free(S0), free(S1), free(o0), free(o1), free(in);
}

/* norms, softmax, activations, add, mul, rope on one backend: sizes of up to
 * 257, the reference in no time */
static void check_elementwise(const struct tfm_backend *be)
{
	const struct tfm_backend *r = tfm_backend_ref();
	float *x = malloc(257 * 4), *w = malloc(257 * 4), *b = malloc(257 * 4); /* [n] */
	/* [n], rope's [3][n rounded up to even]: the backend's, the reference's */
	float *g = malloc(3 * 258 * 4), *e = malloc(3 * 258 * 4);
	gelu_sweep(be);
	for (int si = 0; si < NS; si++) {
		int64_t n = sizes[si];
		fill(x, n, 3);
		fill(w, n, 1);
		fill(b, n, 1);
		for (int po = 0; po < 2; po++) {
			r->rmsnorm(e, x, w, n, 1e-5f, po);
			be->rmsnorm(g, x, w, n, 1e-5f, po);
			cmp("rmsnorm", g, e, n, 1e-5, 1e-5);
			r->layernorm(e, x, po ? NULL : w, po ? NULL : b, n, 1e-5f, po);
			be->layernorm(g, x, po ? NULL : w, po ? NULL : b, n, 1e-5f, po);
			cmp("layernorm", g, e, n, 1e-4, 1e-4);
		}
		memcpy(e, x, n * 4);
		memcpy(g, x, n * 4);
		r->softmax(e, n);
		be->softmax(g, n);
		cmp("softmax", g, e, n, 1e-7, 1e-5);
		for (int act = 0; act <= 2 * TFM_K_GELU_QUICK + 1; act++) {
			static const char *names[] = {"act silu", "act gelu", "act gelu_tanh",
						      "act relu", "act relu2", "act gelu_quick"};
			int big = act > TFM_K_GELU_QUICK; /* second round: |x| up to 40 */
			int a = big ? act - TFM_K_GELU_QUICK - 1 : act;
			for (int64_t i = 0; i < n; i++)
				e[i] = g[i] = x[i] * (big ? 13 : 1);
			r->act(e, n, a);
			be->act(g, n, a);
			cmp(names[a], g, e, n, 1e-6, 1e-5);
			for (int64_t i = 0; i < n; i++)
				e[i] = g[i] = x[i] * (big ? 13 : 1);
			r->act_mul(e, w, n, a);
			be->act_mul(g, w, n, a);
			cmp("act_mul", g, e, n, 1e-6, 1e-5);
		}
		r->add(e, x, w, n);
		be->add(g, x, w, n);
		cmp("add", g, e, n, 0, 0);
		r->mul(e, x, w, n);
		be->mul(g, x, w, n);
		cmp("mul", g, e, n, 0, 0);
		/* rope: 3 heads of head_dim n (rounded up to even), all or half rotated */
		int64_t hd = n + (n & 1);
		for (int il = 0; il < 2; il++)
			for (int64_t rot = hd; rot >= 2; rot = rot / 2 & ~(int64_t)1) {
				float cs[200], sn[200];
				for (int64_t i = 0; i < rot / 2; i++) {
					double ang = 7.0 * pow(10000.0, -2.0 * i / rot);
					cs[i] = (float)cos(ang);
					sn[i] = (float)sin(ang);
				}
				fill(e, 3 * hd, 2);
				memcpy(g, e, 3 * hd * 4);
				r->rope(e, 3, hd, rot, il, cs, sn);
				be->rope(g, 3, hd, rot, il, cs, sn);
				cmp("rope", g, e, 3 * hd, 1e-6, 1e-5);
				if (rot == 2)
					break;
			}
	}
	free(x), free(w), free(b), free(g), free(e);
}

/* matmul: every weight type, decode and prefill, inline and threaded, on
 * every variant; the weights are made once per shape and the reference run
 * once for all the variants that give it the same x */
static void check_matmul(void)
{
	const struct tfm_backend *r = tfm_backend_ref();
	int64_t big = 512 * 420; /* the largest w: in 512 x out 337 */
	float *x = malloc(big * 4), *y = malloc(big * 4), *g = malloc(big * 4), *e = malloc(big * 4);
	float *w = malloc(big * 4), *b = malloc(big * 4);
	uint8_t *wq = malloc(big * 4);
	static const int types[] = {TFM_TYPE_F32, TFM_TYPE_F16, TFM_TYPE_BF16, TFM_TYPE_Q8_0,
				    TFM_TYPE_Q4_0, TFM_TYPE_Q4_1, TFM_TYPE_Q5_0, TFM_TYPE_Q5_1,
				    TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	static const char *tn[] = {"matmul f32", "matmul f16", "matmul bf16", "matmul q8_0",
				   "matmul q4_0", "matmul q4_1", "matmul q5_0", "matmul q5_1",
				   "matmul q4_K", "matmul q5_K", "matmul q6_K"};
	static const int64_t ntok[] = {1, 3, 17};
	for (int ti = 0; ti < 11; ti++)
		for (int si = 0; si < NS; si++)
			for (int oi = 0; oi < NS; oi++) {
				int64_t in = sizes[si], out = sizes[oi] + 80 * (si == 4);
				if (ti >= 3)
					in = ti >= 8 ? 256 * (1 + si % 2) : 32 * (si + 1);
				fill(w, in * out, 1);
				struct tfm_mat m = {.data = wq, .type = types[ti], .in = in, .out = out};
				m.row_bytes = make_w(types[ti], w, in, out, wq);
				for (int ni = 0; ni < 3; ni++) {
					int64_t nt = ntok[ni];
					/* the x in e's reference: its type, and the quantizer
					 * that made it (tfm_quant_isa) */
					int have = -1;
					const char *have_isa = NULL;
					fill(x, in * nt, 1);
					for (int v = 0; v < nV; v++) {
						const struct tfm_backend *be = use(v);
						/* the 8-bit GEMMs: tfm_cpu_igemm_takes */
						int ig = be == tfm_backend_cpu() && tfm_cpu_igemm_takes(types[ti]);
						/* decode and small batches of q4_1, q5_*, K-quants: integer dots
						 * against x quantized to 8 bits (llama.cpp's way): the
						 * reference then takes x through the same 8-bit round trip */
						/* larger batches of q8_0, q4_0, q5_0, q4_1, q4_K, q5_K (and q6_K
						 * on AVX2): the 8-bit GEMM, also against 8-bit x (as llama.cpp) */
						int qx = ti >= 3 && (nt <= 16 || ig); /* up to 16 tokens */
						/* q8_1 (for q4_1, q5_1 below 17 tokens) keeps d * sum(q) as f16:
						 * m times that rounding, up to ~1e-3 here, is ggml's too */
						int q81 = qx && !(ig && nt > 16) &&
							  (types[ti] == TFM_TYPE_Q4_1 || types[ti] == TFM_TYPE_Q5_1);
						/* the 8-bit GEMM quantizes x to q8_0, or to q8_K for
						 * the K-quants as their dots do */
						int k256 = tfm_quant_blck(types[ti]) == 256;
						int xt = !qx ? TFM_TYPE_F32
							 : ig && nt > 16 && !k256 ? TFM_TYPE_Q8_0
							 : tfm_vec_dot_type(types[ti]);
						struct tfm_kexec k0 = kx(0);
						int again = xt != have || (qx && strcmp(have_isa, tfm_quant_isa()));
						if (again && qx) {
							uint8_t xq8[2048];
							for (int64_t t = 0; t < nt; t++) {
								/* the quantizer the backend uses (its fast
								 * one may round ties differently from _ref) */
								tfm_quantize_row(xt, x + t * in, xq8, in);
								tfm_dequantize_row_ref(xt, xq8, b + t * in, in);
							}
							r->matmul(&k0, e, b, &m, nt);
						} else if (again) {
							r->matmul(&k0, e, x, &m, nt);
						}
						have = xt, have_isa = tfm_quant_isa();
						for (int th = 0; th < 2; th++) {
							struct tfm_kexec k = kx(th);
							be->matmul(&k, th ? g : y, x, &m, nt);
							cmp(tn[ti], th ? g : y, e, nt * out, q81 ? 2e-3 : 1e-5, 1e-4);
						}
						/* the thread count never changes a bit */
						if (memcmp(g, y, nt * out * sizeof *g))
							worst_of(tn[ti])->bad++;
					}
				}
			}
	/* an encoder's batch: 1030 tokens (past cpu.c's TOK_MIN, blocks of
	 * TOK_TILE tokens and a tail of 6) through a small f32 matrix, over
	 * more inputs than OpenBLAS sums in one block */
	{
		int64_t in = 800, out = 24, nt = 1030;
		float *bx = malloc(nt * in * 4), *by = malloc(nt * out * 4), *bg = malloc(nt * out * 4);
		float *be_ = malloc(nt * out * 4), *bw = malloc(in * out * 4);
		fill(bw, in * out, 1);
		fill(bx, in * nt, 1);
		struct tfm_mat m = {.data = bw, .type = TFM_TYPE_F32, .in = in, .out = out,
				    .row_bytes = (size_t)in * sizeof(float)};
		struct tfm_kexec k0 = kx(0);
		r->matmul(&k0, be_, bx, &m, nt);
		for (int v = 0; v < nV; v++) {
			const struct tfm_backend *be = use(v);
			for (int th = 0; th < 2; th++) {
				struct tfm_kexec k = kx(th);
				be->matmul(&k, th ? bg : by, bx, &m, nt);
				cmp("matmul f32 1030 tokens", th ? bg : by, be_, nt * out, 1e-5, 1e-4);
			}
			if (memcmp(bg, by, nt * out * sizeof *bg))
				worst_of("matmul f32 1030 tokens")->bad++;
		}
		free(bx), free(by), free(bg), free(be_), free(bw);
	}
	free(x), free(y), free(g), free(e), free(w), free(b), free(wq);
}

/* matmul_multi: each y[q] has the bits matmul_bias gives it alone, where
 * the matrices share x's quantization and one pool run (q, k and v of one
 * x type; up and gate), where they do not (x types or widths apart, f32,
 * more than 16 tokens), with and without biases, on one and two threads
 * and on the calling thread alone (over par_min) */
static void check_multi(const struct tfm_backend *be)
{
	if (!be->matmul_multi)
		return;
	static const int sets[][3] = {
		{TFM_TYPE_Q4_0, TFM_TYPE_Q4_0, TFM_TYPE_Q4_0}, {TFM_TYPE_Q4_0, TFM_TYPE_Q8_0, TFM_TYPE_Q5_0},
		{TFM_TYPE_Q4_K, TFM_TYPE_Q6_K, TFM_TYPE_Q5_K}, {TFM_TYPE_Q4_1, TFM_TYPE_Q5_1, -1},
		{TFM_TYPE_Q4_0, TFM_TYPE_Q4_K, -1}, {TFM_TYPE_F32, TFM_TYPE_F16, TFM_TYPE_Q8_0}};
	static const int64_t outs[3] = {67, 16, 130}, ntok[] = {1, 3, 17};
	const int64_t in = 256;
	float *w = malloc(in * 130 * 4), *x = malloc(in * 17 * 4), *bias = malloc(130 * 4);
	float *want = malloc(3 * 17 * 130 * 4), *got = malloc(3 * 17 * 130 * 4);
	uint8_t *wq[3];
	int bad = 0;
	for (int q = 0; q < 3; q++)
		wq[q] = malloc(in * 130 * 4);
	fill(bias, 130, 1);
	for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
		int nm = sets[si][2] < 0 ? 2 : 3;
		struct tfm_mat m[3];
		const struct tfm_mat *mp[3];
		for (int q = 0; q < nm; q++) {
			fill(w, in * outs[q], 1);
			m[q] = (struct tfm_mat){.data = wq[q], .type = sets[si][q], .in = in, .out = outs[q]};
			m[q].row_bytes = make_w(sets[si][q], w, in, outs[q], wq[q]);
			mp[q] = &m[q];
		}
		for (int ni = 0; ni < 3; ni++)
			for (int mode = 0; mode < 3; mode++) { /* one, two threads; inline */
				int64_t nt = ntok[ni];
				fill(x, in * nt, 1);
				struct tfm_kexec k = kx(mode == 1);
				if (mode == 2)
					k.n_tasks = 2, k.par_min = 1e12;
				float *y[3], *yw[3];
				const float *b[3];
				for (int q = 0; q < nm; q++) {
					y[q] = got + q * 17 * 130, yw[q] = want + q * 17 * 130;
					b[q] = (q + ni) % 2 ? bias : NULL;
					be->matmul_bias(&k, yw[q], x, mp[q], b[q], nt);
				}
				memset(got, 0, 3 * 17 * 130 * 4);
				be->matmul_multi(&k, nm, y, x, mp, b, nt);
				for (int q = 0; q < nm; q++)
					bad += memcmp(y[q], yw[q], (size_t)(nt * outs[q]) * 4) != 0;
			}
	}
	CHECK_MSG(!bad, "%s matmul_multi: %d outputs differ from matmul_bias's", V[cur].label, bad);
	for (int q = 0; q < 3; q++)
		free(wq[q]);
	free(w), free(x), free(bias), free(want), free(got);
}

/* TFM_TEST_QUICK's attention cases of 17 tokens, of cache types ki, heads
 * hi, head sizes di, masks wi and score variants xi.  The masks, scores and
 * head grouping act on f32 tiles whatever the cache: on the f32 and f16
 * caches (ki 0, 1) every heads x mask x score case runs, with the head
 * sizes in turn.  The other caches differ only in how keys and values are
 * gathered into those tiles: an orthogonal array of strength 2, columns
 * u, v, u + v, u + a v over GF(4) (a generator a, a^2 = a + 1), in which any
 * two of heads, size, mask and score meet in every pair of their values,
 * 24 of their 288 cases (masks 4 and 5 repeat the rows of 0 and 1). */
static int quick_attn(int ki, int hi, int di, int wi, int xi)
{
	if (ki < 2)
		return di == (hi + wi + xi) % 4;
	static const int times_a[4] = {0, 2, 3, 1}; /* 0, 1, a, a + 1 times a */
	int v = wi % 4;
	return di == (hi ^ v) && xi == (hi ^ times_a[v]) % 3;
}

/* attention: MHA, GQA, MQA; causal, windowed and chunked (llama4);
 * ring-buffer slots; soft-cap, ALiBi and T5's relative bias;
 * bidirectional (encoders; cross-attention's own key count),
 * whole or within window / 2 either side (ModernBERT's local layers:
 * an even and an odd window, and one over more than a key tile) */
static void check_attn(void)
{
	const struct tfm_backend *r = tfm_backend_ref();
	/* heads, KV heads; the last with a value head size of its own (MLA) */
	static const int64_t heads[][3] = {{4, 4, 0}, {4, 2, 0}, {3, 1, 0}, {2, 2, 5}};
	size_t kvn = 300 * 4 * 257;
	float *x = malloc(17 * 4 * 257 * 4); /* queries [n_tok][n_head][head_dim] */
	/* outputs [n_tok][n_head][v_dim]: the reference's, inline, threaded */
	float *e = malloc(kvn * 4), *y = malloc(kvn * 4), *g = malloc(kvn * 4);
	float *kc = malloc(kvn * 4), *vc = malloc(kvn * 4), *kb = malloc(kvn * 4);
	float *vb = malloc(kvn * 4), *kn = malloc(kvn * 4), *vn = malloc(kvn * 4);
	/* every cache type, and K and V of different types: the reference
	 * reads the same stored bytes (f16 / bf16 rounding, blocks of 32:
	 * head sizes of whole blocks) */
	static const int kvt[][2] = {{TFM_TYPE_F32, TFM_TYPE_F32}, {TFM_TYPE_F16, TFM_TYPE_F16},
				     {TFM_TYPE_Q8_0, TFM_TYPE_Q8_0}, {TFM_TYPE_BF16, TFM_TYPE_BF16},
				     {TFM_TYPE_Q5_1, TFM_TYPE_Q5_1}, {TFM_TYPE_Q5_0, TFM_TYPE_Q5_0},
				     {TFM_TYPE_Q4_1, TFM_TYPE_Q4_1}, {TFM_TYPE_Q4_0, TFM_TYPE_Q4_0},
				     {TFM_TYPE_F16, TFM_TYPE_Q4_0}, {TFM_TYPE_Q8_0, TFM_TYPE_F16}};
	static const char *kvn_[] = {"attn", "attn kv f16", "attn kv q8_0", "attn kv bf16",
				     "attn kv q5_1", "attn kv q5_0", "attn kv q4_1", "attn kv q4_0",
				     "attn kv f16,q4_0", "attn kv q8_0,f16"};
	static const int64_t ntok[] = {1, 3, 17};
	for (int ki = 0; ki < 10; ki++)
	for (int hi = 0; hi < 4; hi++)
		for (int di = 0; di < 4; di++)
			for (int ni = 0; ni < 3; ni++)
				for (int wi = 0; wi < 6; wi++)
					for (int xi = 0; xi < 4; xi++) {
						/* xi 3: T5's bias by distance, f32 and f16 caches */
						if (xi == 3 && ki > 1)
							continue;
						if (quick && ni == 2 && !quick_attn(ki, hi, di, wi, xi))
							continue;
						int64_t nh = heads[hi][0], nkv = heads[hi][1], hd = sizes[di + 1];
						int64_t vd = heads[hi][2] ? heads[hi][2] : hd;
						int blk = tfm_type_info(kvt[ki][0])->blck > 1 ||
							  tfm_type_info(kvt[ki][1])->blck > 1;
						if (blk) /* 32, 64, 96, 256 */
							hd = di == 3 ? 256 : 32 * (di + 1), vd = heads[hi][2] ? 32 : hd;
						/* 17 tokens: past several key tiles (64) and
						 * query blocks (8), a window of more than a tile */
						int64_t nt = ntok[ni], pos0 = 5 + 40 * (wi >= 2) + 150 * (ni == 2);
						int64_t win = wi == 1 || wi == 2 ? (ni == 2 ? 70 : 4) : 0;
						if (wi == 5)
							win = ni == 2 ? 70 : ni == 1 ? 5 : 4;
						/* chunks: 5 (queries cross a chunk border), or 70 (a
						 * chunk over more than one key tile), in a ring */
						int64_t chunk = wi == 3 ? (ni == 2 ? 70 : 5) : 0;
						int64_t slots = wi == 2 ? win + nt - 1 : wi == 3 ? chunk + nt - 1 : pos0 + nt;
						int bidir = wi >= 4;
						float al[4] = {0.5f, 0.25f, 0.125f, 0.0625f}, rb[4 * 13];
						for (int i = 0; i < 4 * 13; i++) /* span 6: -6..6 */
							rb[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
						struct tfm_attn_args a = {.n_tok = nt, .pos0 = pos0, .n_head = nh,
							.n_head_kv = nkv, .head_dim = hd, .v_dim = heads[hi][2], .n_slots = slots,
							.window = win, .chunk = chunk, .scale = 1.0f / sqrtf((float)hd),
							.softcap = xi == 1 ? 2.0f : 0, .alibi = xi == 2 ? al : NULL,
							.bidir = bidir, .k_type = kvt[ki][0], .v_type = kvt[ki][1],
							.rel_bias = xi == 3 ? rb : NULL, .rel_span = 6};
						a.v_dim = heads[hi][2] ? vd : 0;
						/* cross-attention: keys [0, n_kv), fewer than
						 * the queries, or some of the slots */
						if (wi == 4 && xi >= 1)
							a.n_kv = xi == 1 ? 3 : slots - 2;
						fill(x, nt * nh * hd, 2);
						fill(kn, slots * nkv * hd, 2);
						fill(vn, slots * nkv * vd, 2);
						/* the reference again for each quantizer lib/quant
						 * runs (tfm_quant_isa): the caches of the block types
						 * are quantized by tfm_quantize_row, whose fast
						 * versions may round a value the other way */
						const char *e_isa = NULL;
						for (int v = 0; v < nV; v++) {
							const struct tfm_backend *be = use(v);
							if (!e_isa || strcmp(e_isa, tfm_quant_isa())) {
								for (int64_t sl = 0; sl < slots; sl++)
									r->kv_store(kc, vc, kn + sl * nkv * hd,
										    vn + sl * nkv * vd, sl, &a);
								struct tfm_kexec k0 = kx(0);
								r->attn(&k0, e, x, kc, vc, &a);
								e_isa = tfm_quant_isa();
							}
							for (int64_t sl = 0; sl < slots; sl++)
								be->kv_store(kb, vb, kn + sl * nkv * hd,
									     vn + sl * nkv * vd, sl, &a);
							for (int th = 0; th < 2; th++) {
								struct tfm_kexec k = kx(th);
								be->attn(&k, th ? g : y, x, kb, vb, &a);
								cmp(kvn_[ki], th ? g : y, e, nt * nh * vd, 1e-5, 1e-4);
							}
							if (memcmp(g, y, nt * nh * vd * sizeof *g))
								worst_of(kvn_[ki])->bad++;
						}
					}
	free(x), free(y), free(g), free(e), free(kc), free(vc), free(kb), free(vb), free(kn), free(vn);
}

/* attention over more keys than cpu.c's segments (ATT_SEG, 1024): causal,
 * a window across a segment border, in a ring, and bidirectional; a decode
 * step there is split by (KV head, segment) over the threads and merged.
 * Against the reference; two threads give the bits of one, and the last
 * token of a 17-token block the bits of a decode step at its position. */
static void check_attn_long(void)
{
	const struct tfm_backend *r = tfm_backend_ref();
	int64_t nh = 4, nkv = 2, hd = 64, p0 = 2100, maxs = p0 + 17;
	float *x = malloc(17 * nh * hd * 4), *e = malloc(17 * nh * hd * 4);
	float *y = malloc(17 * nh * hd * 4), *g = malloc(17 * nh * hd * 4), *d1 = malloc(nh * hd * 4);
	float *kn = malloc(maxs * nkv * hd * 4), *vn = malloc(maxs * nkv * hd * 4);
	float *kc = malloc(maxs * nkv * hd * 4), *vc = malloc(maxs * nkv * hd * 4);
	float *kb = malloc(maxs * nkv * hd * 4), *vb = malloc(maxs * nkv * hd * 4);
	static const int kvt[] = {TFM_TYPE_F32, TFM_TYPE_F16, TFM_TYPE_Q8_0};
	for (int ki = 0; ki < 3; ki++)
		for (int wi = 0; wi < 4; wi++)
			for (int ni = 0; ni < 2; ni++) {
				/* wi: 0 causal, 1 window 1500, 2 the same in a ring, 3 bidir */
				int64_t nt = ni ? 17 : 1, win = wi == 1 || wi == 2 ? 1500 : 0;
				int64_t slots = wi == 2 ? win + 16 : maxs;
				struct tfm_attn_args a = {.n_tok = nt, .pos0 = p0, .n_head = nh, .n_head_kv = nkv,
					.head_dim = hd, .n_slots = slots, .window = win,
					.scale = 1.0f / sqrtf((float)hd), .bidir = wi == 3,
					.k_type = kvt[ki], .v_type = kvt[ki]};
				if (wi == 3)
					a.n_kv = p0 + nt;
				fill(x, nt * nh * hd, 2);
				fill(kn, maxs * nkv * hd, 2);
				fill(vn, maxs * nkv * hd, 2);
				const char *e_isa = NULL;
				for (int v = 0; v < nV; v++) {
					const struct tfm_backend *be = use(v);
					if (!e_isa || strcmp(e_isa, tfm_quant_isa())) {
						for (int64_t p = 0; p < p0 + nt; p++)
							r->kv_store(kc, vc, kn + p * nkv * hd, vn + p * nkv * hd,
								    p % slots, &a);
						struct tfm_kexec k0 = kx(0);
						r->attn(&k0, e, x, kc, vc, &a);
						e_isa = tfm_quant_isa();
					}
					for (int64_t p = 0; p < p0 + nt; p++)
						be->kv_store(kb, vb, kn + p * nkv * hd, vn + p * nkv * hd, p % slots,
							     &a);
					for (int th = 0; th < 2; th++) {
						struct tfm_kexec k = kx(th);
						be->attn(&k, th ? g : y, x, kb, vb, &a);
						cmp("attn long", th ? g : y, e, nt * nh * hd, 1e-5, 1e-4);
					}
					if (memcmp(g, y, nt * nh * hd * sizeof *g))
						worst_of("attn long")->bad++;
					if (nt == 17 && wi != 3) { /* the last token as a decode step */
						struct tfm_attn_args a1 = a;
						a1.n_tok = 1, a1.pos0 = p0 + 16;
						struct tfm_kexec k = kx(1);
						be->attn(&k, d1, x + 16 * nh * hd, kb, vb, &a1);
						if (memcmp(d1, y + 16 * nh * hd, nh * hd * sizeof *d1))
							worst_of("attn long decode")->bad++;
					}
				}
			}
	free(x), free(e), free(y), free(g), free(d1), free(kn), free(vn), free(kc), free(vc);
	free(kb), free(vb);
}

/* every kernel on every variant: the elementwise ones variant by variant,
 * matmul and attention case by case with the reference run once for all */
static void t_backends(void)
{
	CHECK(tfm_backend_count() >= 2);
	nV = 0;
	int ncpu = 0;
	const char *dflt = tfm_cpu_isa(); /* before the loop below tries each */
	for (int i = 0; i < tfm_backend_count(); i++) {
		const struct tfm_backend *be = tfm_backend_at(i);
		if (be == tfm_backend_ref())
			continue;
		if (be != tfm_backend_cpu()) {
			V[nV] = (struct variant){.be = be};
			snprintf(V[nV++].label, sizeof V[0].label, "%s", be->name);
			continue;
		}
		/* the CPU backend once per instruction set this processor has */
		static const char *const isas[] = TFM_CPU_ISAS;
		for (size_t k = 0; k < sizeof isas / sizeof isas[0] && nV < MAXV; k++) {
			if (tfm_cpu_set_isa(isas[k]) != TFM_OK)
				continue;
			V[nV] = (struct variant){.be = be, .isa = isas[k]};
			snprintf(V[nV++].label, sizeof V[0].label, "cpu/%s", isas[k]);
			ncpu++;
		}
	}
	CHECK(ncpu >= 1);
	for (int v = 0; v < nV; v++) {
		nW[v] = 0;
		check_elementwise(use(v));
	}
	check_matmul();
	for (int v = 0; v < nV; v++)
		check_multi(use(v));
	check_attn();
	check_attn_long();
	for (int v = 0; v < nV; v++) {
		cur = v;
		report(V[v].label);
	}
	CHECK_OK(tfm_cpu_set_isa(dflt));
}

/* cpu/scan-simd.h once more with 16 lanes of plain C (GCC vector
 * extensions, per-lane loops for masks, max, exp and the lane sum): the
 * AVX-512 kernels' indexing and tails, run on a processor without AVX-512.
 * Its multiply-adds round twice, so it is held to the tolerances of the
 * fused versions, not to the bits. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi" /* static functions: no ABI to keep */
#endif
typedef float v16f __attribute__((vector_size(64)));
static inline v16f g16_ld(const float *p) { v16f v; memcpy(&v, p, 64); return v; }
static inline v16f g16_ldm(const float *p, unsigned m)
{
	v16f v = {0};
	for (int l = 0; l < 16; l++)
		if (m >> l & 1)
			v[l] = p[l];
	return v;
}
static inline void g16_stm(float *p, unsigned m, v16f v)
{
	for (int l = 0; l < 16; l++)
		if (m >> l & 1)
			p[l] = v[l];
}
static inline v16f g16_set1(float x) { v16f v; for (int l = 0; l < 16; l++) v[l] = x; return v; }
static inline v16f g16_max(v16f a, v16f b)
{
	for (int l = 0; l < 16; l++)
		a[l] = a[l] > b[l] ? a[l] : b[l];
	return a;
}
static inline v16f g16_exp(v16f a) { for (int l = 0; l < 16; l++) a[l] = expf(a[l]); return a; }
static inline float g16_hsum(v16f a) { float s = 0; for (int l = 0; l < 16; l++) s += a[l]; return s; }
#define VW 16
#define vf v16f
#define vm unsigned
#define SCAN(name) g16_##name
#define MASK(n) ((1u << (n)) - 1)
#define LD(p) g16_ld(p)
#define LDM(p, m) g16_ldm(p, m)
#define ST(p, v) do { v16f v_ = (v); memcpy((p), &v_, 64); } while (0)
#define STM(p, m, v) g16_stm(p, m, v)
#define SET1(x) g16_set1(x)
#define ZERO() g16_set1(0)
#define ADD(a, b) ((a) + (b))
#define SUB(a, b) ((a) - (b))
#define MUL(a, b) ((a) * (b))
#define DIV(a, b) ((a) / (b))
#define FMA(a, b, c) ((a) * (b) + (c))
#define MAX g16_max
#define VEXP g16_exp
#define HSUM g16_hsum
#include "kernels/cpu/scan-simd.h"

static const struct tfm_backend g16_backend = {
	.name = "16 lanes (C)",
	.mamba_scan = g16_mamba_scan, .mamba2_scan = g16_mamba2_scan, .gdn_step = g16_gdn_step,
	.rwkv4_wkv = g16_rwkv4_wkv, .rwkv5_wkv = g16_rwkv5_wkv, .rwkv7_wkv = g16_rwkv7_wkv,
	.mlstm_step = g16_mlstm_step,
};

/* The recurrent steps on every backend and every instruction set of the
 * cpu backend, apart from t_backends so that they run alone in a second
 * (test_kernels scans). */
static void t_scans(void)
{
	const char *dflt = tfm_cpu_isa();
	for (int i = 0; i < tfm_backend_count(); i++) {
		const struct tfm_backend *be = tfm_backend_at(i);
		static const char *const isas[] = TFM_CPU_ISAS;
		for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
			char label[32];
			if (be == tfm_backend_ref() || (be != tfm_backend_cpu() && k > 0))
				break;
			if (be == tfm_backend_cpu()) {
				if (tfm_cpu_set_isa(isas[k]) != TFM_OK) {
					fprintf(stderr, "  cpu/%s: not on this processor, not run\n", isas[k]);
					continue;
				}
				snprintf(label, sizeof label, "cpu/%s", isas[k]);
			} else {
				snprintf(label, sizeof label, "%s", be->name);
			}
			cur = 0, nW[0] = 0;
			scan_checks(be);
			report(label);
		}
	}
	CHECK_OK(tfm_cpu_set_isa(dflt));
	g16 = 1;
	cur = 0, nW[0] = 0;
	scan_checks(&g16_backend);
	report("16 lanes C");
	g16 = 0;
}

static void t_dispatch(void)
{
	const struct tfm_backend *be;
	CHECK_OK(tfm_backend_find(&be, NULL));
	CHECK(be == tfm_backend_cpu());
	CHECK_OK(tfm_backend_find(&be, "ref"));
	CHECK(be == tfm_backend_ref());
	CHECK_ST(tfm_backend_find(&be, "tpu"), TFM_E_INVAL);
#ifndef TFM_CUDA
	CHECK_ST(tfm_backend_find(&be, "cuda"), TFM_E_DEVICE);
#endif
	CHECK_ST(tfm_k_row_to_f32(TFM_TYPE_IQ2_XXS, scratch, scratch, 256), TFM_E_UNSUPPORTED);
	CHECK(!tfm_k_type_ok(TFM_TYPE_Q8_K) && tfm_k_type_ok(TFM_TYPE_Q6_K));
	/* a forced instruction set lowers lib/quant's dots and quantizers too
	 * (the cpu/scalar variants below run its references), and the default
	 * brings back its own */
	const char *dflt = tfm_cpu_isa(), *q = tfm_quant_isa();
	CHECK_OK(tfm_cpu_set_isa("scalar"));
	CHECK(!strcmp(tfm_quant_isa(), "scalar"));
	CHECK(tfm_vec_dot(TFM_TYPE_Q4_0) == tfm_vec_dot_ref(TFM_TYPE_Q4_0));
	CHECK_OK(tfm_cpu_set_isa(dflt));
	CHECK(!strcmp(tfm_quant_isa(), q));
}

/* The 4-row K-quant decode kernels (qgemv-k-avx512.c) on 1 and 3
 * super-blocks and odd row counts: each row within 1e-5 relative of
 * lib/quant's scalar dot (the f32 sums run in another order) and the same
 * whatever rows share a call.  The last case has the largest 16-bit partial
 * sums the kernels pack (weights all -1 or alternating +-1, activations all
 * -1: quants at their extremes against -128). */
static void t_qgemv_k(void)
{
#if !defined(__x86_64__)
	fprintf(stderr, "  qgemv K: AVX-512 kernels, x86-64 only, not run\n");
#else
	if (strcmp(tfm_quant_isa(), "avx512")) {
		fprintf(stderr, "  qgemv K: lib/quant runs %s here (AVX-512 needs VNNI and BF16, and "
			"TFM_ISA not lower), not run\n", tfm_quant_isa());
		return;
	}
	static const int types[] = {TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	static const tfm_cpu_qgemv_fn fns[] = {tfm_cpu_qgemv_q4_K_avx512, tfm_cpu_qgemv_q5_K_avx512,
					       tfm_cpu_qgemv_q6_K_avx512};
	static const int64_t rowsv[] = {1, 3, 5, 7, 13};
	enum { MAXN = 768, MAXR = 13 };
	float *w = malloc(MAXN * MAXR * sizeof *w), *x = malloc(MAXN * sizeof *x);
	uint8_t *wq = malloc(MAXN * MAXR), *xq = malloc(4 * MAXN);
	float y[MAXR], y1[MAXR];
	for (int ti = 0; ti < 3; ti++) {
		double worst = 0;
		int same = 1;
		for (int64_t n = 256; n <= MAXN; n += 512)
			for (int ri = 0; ri < 5; ri++) {
				int64_t rows = rowsv[ri];
				size_t rb = tfm_quant_row_bytes(types[ti], n);
				fill(w, n * rows, 1);
				fill(x, n, 2);
				if (ri == 4) /* extremes */
					for (int64_t e = 0; e < n * rows; e++) {
						w[e] = e < n || e % 2 ? -1.0f : 1.0f;
						x[e % n] = -1.0f;
					}
				for (int64_t r = 0; r < rows; r++)
					CHECK_OK(tfm_quantize_row(types[ti], w + r * n, wq + r * rb, n));
				CHECK_OK(tfm_quantize_row(TFM_TYPE_Q8_K, x, xq, n));
				fns[ti](y, wq, rb, xq, n, rows);
				for (int64_t r = 0; r < rows; r++) {
					float want = tfm_vec_dot_ref(types[ti])(n, wq + r * rb, xq);
					fns[ti](y1 + r, wq + r * rb, rb, xq, n, 1);
					CHECK_CLOSE(y[r], want, 1e-5, 1e-5);
					same &= !memcmp(&y[r], &y1[r], 4);
					worst = fmax(worst, fabs((double)y[r] - want));
				}
			}
		fprintf(stderr, "  qgemv %s: worst |4-row - ref| %.2g (extremes: %g, ref %g)\n",
			tfm_type_name(types[ti]), worst, y[0], tfm_vec_dot_ref(types[ti])(MAXN, wq, xq));
		CHECK_MSG(same, "qgemv %s: a row alone differs from the row in a group",
			  tfm_type_name(types[ti]));
	}
	free(w), free(x), free(wq), free(xq);
#endif
}

#if defined(__x86_64__) || defined(__aarch64__)
struct qgemv_case {
	int type;
	tfm_cpu_qgemv_fn fn;
	tfm_vec_dot_fn one;   /* lib/quant's one-row dot of the same instruction set */
	int64_t n0, n1;       /* row lengths */
};

/* Four-row decode kernels k[nk] of instruction set isa: every row
 * bit-identical to the one-row dot, alone or grouped, on odd row counts and
 * two row lengths; within 1e-5 (of the largest |y| of the rows, as the
 * regrouped kernels' tests: the two sum their terms in another order, and
 * a row near 0 among rows of 100 is as far off in absolute terms; a q4_1
 * row of 0.616 was 1.7e-5 from the reference on a Zen 4) of the scalar
 * reference.  The last row count
 * has the weights and activations at their extremes (all -1, or
 * alternating +-1, against all -1), the largest partial sums. */
static void qgemv_rows(const struct qgemv_case *k, size_t nk, const char *isa)
{
	static const int64_t rowsv[] = {1, 3, 4, 5, 7, 9};
	enum { MAXN = 768, MAXR = 9, NR = 6 };
	float *w = malloc(MAXN * MAXR * sizeof *w), *x = malloc(MAXN * sizeof *x);
	uint8_t *wq = malloc(2 * MAXN * MAXR), *xq = malloc(2 * MAXN);
	float y[MAXR], y1[MAXR];
	for (size_t ti = 0; ti < nk; ti++) {
		const int xt = tfm_vec_dot_type(k[ti].type);
		int same = 1;
		for (int ni = 0; ni < 2; ni++)
			for (int ri = 0; ri < NR; ri++) {
				int64_t n = ni ? k[ti].n1 : k[ti].n0, rows = rowsv[ri];
				size_t rb = tfm_quant_row_bytes(k[ti].type, n);
				fill(w, n * rows, 3);
				fill(x, n, 4);
				if (ri == NR - 1) /* extremes */
					for (int64_t e = 0; e < n * rows; e++) {
						w[e] = e < n || e % 2 ? -1.0f : 1.0f;
						x[e % n] = -1.0f;
					}
				for (int64_t r = 0; r < rows; r++)
					CHECK_OK(tfm_quantize_row(k[ti].type, w + r * n, wq + r * rb, n));
				CHECK_OK(tfm_quantize_row(xt, x, xq, n));
				k[ti].fn(y, wq, rb, xq, n, rows);
				float ref[MAXR], big = 1;
				for (int64_t r = 0; r < rows; r++)
					ref[r] = tfm_vec_dot_ref(k[ti].type)(n, wq + r * rb, xq),
					big = fmaxf(big, fabsf(ref[r]));
				for (int64_t r = 0; r < rows; r++) {
					k[ti].fn(y1 + r, wq + r * rb, rb, xq, n, 1);
					float o = k[ti].one(n, wq + r * rb, xq);
					same &= !memcmp(&y[r], &y1[r], 4) && !memcmp(&y[r], &o, 4);
					CHECK_CLOSE(y[r], ref[r], 1e-5 * big, 0);
				}
			}
		CHECK_MSG(same, "qgemv %s %s: a row differs from the one-row dot or alone",
			  tfm_type_name(k[ti].type), isa);
	}
	free(w), free(x), free(wq), free(xq);
}
#endif

/* The AVX2 4-row decode kernels (qgemv-avx2.c, qgemv-k-avx2.c) against
 * lib/quant's one-row AVX2 dots (qgemv_rows) */
static void t_qgemv_avx2(void)
{
#if !defined(__x86_64__)
	fprintf(stderr, "  qgemv avx2: x86-64 only, not run\n");
#else
	if (strcmp(tfm_quant_isa(), "avx2") && strcmp(tfm_quant_isa(), "avx512")) {
		fprintf(stderr, "  qgemv avx2: lib/quant runs scalar here (no AVX2, or TFM_ISA=scalar), "
			"not run\n");
		return;
	}
	static const struct qgemv_case k[] = {
		{TFM_TYPE_Q4_0, tfm_cpu_qgemv_q4_0_avx2, tfm_vec_dot_q4_0_q8_0_avx2, 32, 352},
		{TFM_TYPE_Q4_1, tfm_cpu_qgemv_q4_1_avx2, tfm_vec_dot_q4_1_q8_1_avx2, 32, 352},
		{TFM_TYPE_Q5_0, tfm_cpu_qgemv_q5_0_avx2, tfm_vec_dot_q5_0_q8_0_avx2, 32, 352},
		{TFM_TYPE_Q5_1, tfm_cpu_qgemv_q5_1_avx2, tfm_vec_dot_q5_1_q8_1_avx2, 32, 352},
		{TFM_TYPE_Q8_0, tfm_cpu_qgemv_q8_0_avx2, tfm_vec_dot_q8_0_q8_0_avx2, 32, 352},
		{TFM_TYPE_Q4_K, tfm_cpu_qgemv_q4_K_avx2, tfm_vec_dot_q4_K_q8_K_avx2, 256, 768},
		{TFM_TYPE_Q5_K, tfm_cpu_qgemv_q5_K_avx2, tfm_vec_dot_q5_K_q8_K_avx2, 256, 768},
		{TFM_TYPE_Q6_K, tfm_cpu_qgemv_q6_K_avx2, tfm_vec_dot_q6_K_q8_K_avx2, 256, 768},
	};
	qgemv_rows(k, sizeof k / sizeof k[0], "avx2");
#endif
}

/* The aarch64 4-row decode kernels (qgemv-neon.h, qgemv-k-neon.h) against
 * lib/quant's one-row dots of the same instruction set (qgemv_rows): the
 * SMULL ones ("neon") on every processor, the SDOT ones where lib/quant
 * runs "dotprod".  check-arm64 runs this on QEMU_CPU=max and cortex-a57. */
static void t_qgemv_neon(void)
{
#if !defined(__aarch64__)
	fprintf(stderr, "  qgemv neon: aarch64 only, not run\n");
#else
	const char *isa = tfm_quant_isa();
	if (strcmp(isa, "neon") && strcmp(isa, "dotprod")) {
		fprintf(stderr, "  qgemv neon: lib/quant runs %s here (TFM_ISA=scalar), not run\n", isa);
		return;
	}
#define QGEMV_NEON(isa) { \
		{TFM_TYPE_Q4_0, tfm_cpu_qgemv_q4_0_##isa, tfm_vec_dot_q4_0_q8_0_##isa, 32, 352}, \
		{TFM_TYPE_Q4_1, tfm_cpu_qgemv_q4_1_##isa, tfm_vec_dot_q4_1_q8_1_##isa, 32, 352}, \
		{TFM_TYPE_Q5_0, tfm_cpu_qgemv_q5_0_##isa, tfm_vec_dot_q5_0_q8_0_##isa, 32, 352}, \
		{TFM_TYPE_Q5_1, tfm_cpu_qgemv_q5_1_##isa, tfm_vec_dot_q5_1_q8_1_##isa, 32, 352}, \
		{TFM_TYPE_Q8_0, tfm_cpu_qgemv_q8_0_##isa, tfm_vec_dot_q8_0_q8_0_##isa, 32, 352}, \
		{TFM_TYPE_Q4_K, tfm_cpu_qgemv_q4_K_##isa, tfm_vec_dot_q4_K_q8_K_##isa, 256, 768}, \
		{TFM_TYPE_Q5_K, tfm_cpu_qgemv_q5_K_##isa, tfm_vec_dot_q5_K_q8_K_##isa, 256, 768}, \
		{TFM_TYPE_Q6_K, tfm_cpu_qgemv_q6_K_##isa, tfm_vec_dot_q6_K_q8_K_##isa, 256, 768}, \
	}
	static const struct qgemv_case neon[] = QGEMV_NEON(neon), dotprod[] = QGEMV_NEON(dotprod);
#undef QGEMV_NEON
	qgemv_rows(neon, sizeof neon / sizeof neon[0], "neon");
	if (!strcmp(isa, "dotprod"))
		qgemv_rows(dotprod, sizeof dotprod / sizeof dotprod[0], "dotprod");
	else
		fprintf(stderr, "  qgemv neon: no dot product instructions here (or TFM_ISA=neon): "
			"the SDOT kernels not run\n");
#endif
}

/* x packed into kexec.xbuf (the executor's, sized by xbuf_need) gives the
 * same bits as x packed into the last task's scratch; and a prefill whose
 * packed x outgrows the scratch still takes the 8-bit GEMM through xbuf
 * (it fell back to sgemm: an FFN's down projection beyond ~340 tokens) */
static void t_xbuf(void)
{
	const struct tfm_backend *be = tfm_backend_cpu();
	static const int types[] = {TFM_TYPE_Q8_0, TFM_TYPE_Q4_0, TFM_TYPE_Q4_1, TFM_TYPE_Q5_0,
				    TFM_TYPE_Q5_1, TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	const int64_t in = 512, out = 67, nt = 300;
	float *w = malloc(in * out * 4), *x = malloc(in * nt * 4);
	float *y0 = malloc(out * nt * 4), *y1 = malloc(out * nt * 4), *y2 = malloc(out * nt * 4);
	uint8_t *wq = malloc(in * out * 2);
	size_t xb = be->xbuf_need ? be->xbuf_need(in, nt) : 0;
	uint8_t *xbuf = xb ? malloc(xb) : NULL;
	int ran = 0;
	for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
		if (!tfm_cpu_igemm_takes(types[ti]))
			continue;
		ran++;
		CHECK(xb >= 300 * 512); /* room for 300 tokens of 512 inputs, 8-bit */
		fill(w, in * out, 1);
		fill(x, in * nt, 1);
		struct tfm_mat m = {.data = wq, .type = types[ti], .in = in, .out = out};
		m.row_bytes = make_w(types[ti], w, in, out, wq);
		for (int th = 0; th < 2; th++) {
			struct tfm_kexec k = kx(th); /* 4 MB a task: x fits the scratch */
			be->matmul(&k, y0, x, &m, nt);
			k.xbuf = xbuf, k.xbuf_bytes = xb;
			be->matmul(&k, y1, x, &m, nt);
			k.scratch_per_task = 16 * 1024; /* 64 KB: x does not fit */
			be->matmul(&k, y2, x, &m, nt);
			CHECK_MSG(!memcmp(y0, y1, out * nt * 4) && !memcmp(y0, y2, out * nt * 4),
				  "%s, %d threads: x packed in xbuf gives other bits",
				  tfm_type_name(types[ti]), th + 1);
		}
	}
	if (!ran)
		fprintf(stderr, "  xbuf: no 8-bit GEMM on this processor, not run\n");
	free(w), free(x), free(y0), free(y1), free(y2), free(wq), free(xbuf);
}

/* Whether the regrouped decode kernels of this processor run (as cpu.c's
 * qx8_for chooses them), their name, and what to say when they do not */
static int regroup_fast(const char **fast_name, const char **no_fast)
{
#if defined(__x86_64__)
	/* (clang's __builtin_cpu_supports has no "f16c"; every AVX2 + FMA
	 * processor has it, as cpu.c's dispatch assumes) */
	*fast_name = "AVX2", *no_fast = "no AVX2 here";
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(__aarch64__)
	*fast_name = "SDOT", *no_fast = "lib/quant does not run dotprod here";
	return !strcmp(tfm_quant_isa(), "dotprod");
#else
	*fast_name = "", *no_fast = "no regrouped kernel for this processor";
	return 0;
#endif
}

/* the scalar definition of the rows regrouped by eight of any type */
typedef void (*regroup_scalar_fn)(int type, float *y, const void *g8, const void *xq, int64_t n,
				  int64_t rows);

/* The cpu backend's matmul of m (the file's rows) on its regrouped copy,
 * at 1 and 3 tokens of x (quantized in xq, xb bytes a row), on one
 * thread and two, against the scalar definition on g (the same copy,
 * packed by the test): how many token rows differ in a bit, or -1 when
 * the backend makes no copy here.  want: the size the copy must have
 * (0: not checked). */
static int regroup_backend(struct tfm_mat *m, const float *x, const uint8_t *xq, size_t xb,
			   const uint8_t *g, regroup_scalar_fn sc, size_t want, float *ys, float *ya,
			   float *y1)
{
	const struct tfm_backend *be = tfm_backend_cpu();
	size_t need = be->repack ? be->repack(m, NULL) : 0;
	void *dec = need ? malloc(need) : NULL;
	int bad = 0;
	if (!dec)
		return -1;
	CHECK(!want || need == want);
	be->repack(m, dec);
	m->dec = dec;
	for (int64_t nt = 1; nt <= 3; nt += 2)
		for (int th = 0; th < 2; th++) {
			struct tfm_kexec k = kx(th);
			be->matmul(&k, th ? y1 : ya, x, m, nt);
			for (int64_t t = 0; t < nt; t++) {
				sc(m->type, ys, g, xq + t * xb, m->in, m->out);
				bad += memcmp(ys, (th ? y1 : ya) + t * m->out, m->out * 4) != 0;
			}
		}
	m->dec = NULL;
	free(dec);
	return bad;
}

static void qx8_scalar(int type, float *y, const void *g8, const void *xq, int64_t n, int64_t rows)
{
	(type == TFM_TYPE_Q8_0 ? tfm_cpu_qgemv_q8x8_scalar : type == TFM_TYPE_Q5_0
	 ? tfm_cpu_qgemv_q5x8_scalar : tfm_cpu_qgemv_q4x8_scalar)(y, g8, xq, n, rows);
}

/* q4_0, q5_0 and q8_0 regrouped by eight rows (qx8.c): the AVX2 kernels give the
 * scalar definitions' bits; both are within 1e-5 (of the largest |y|) of
 * lib/quant's one-row dots, whose sums they take in another order; the
 * largest partial sums (q4_0: every weight 15 or 0, q5_0: 31 or 0, q8_0: 127 or -128,
 * against +-127) stay exact; and the cpu backend's matmul reads the
 * layouts (backend.repack) on decode and small batches with the same bits
 * on one thread and two. */
static void t_qx8(void)
{
	static const int64_t rowsv[] = {8, 16, 40}, nv[] = {32, 576, 1536};
	static const int types[] = {TFM_TYPE_Q4_0, TFM_TYPE_Q8_0, TFM_TYPE_Q5_0};
	enum { MAXN = 1536, MAXR = 40 };
	float *w = malloc(MAXN * MAXR * 4), *x = malloc(MAXN * 4 * 3);
	float *ys = malloc(MAXR * 3 * 4), *ya = malloc(MAXR * 3 * 4), *y1 = malloc(MAXR * 3 * 4);
	uint8_t *wq = malloc(2 * MAXN * MAXR), *g = malloc(2 * MAXN * MAXR), *xq = malloc(2 * MAXN * 3);
	int bad_bits = 0, bad_dot = 0, bad_mm = 0, mm_ran = 0;
	const char *fast_name, *no_fast;
	int fast = regroup_fast(&fast_name, &no_fast);
	for (int ti = 0; ti < 3; ti++)
	for (int ri = 0; ri < 3; ri++)
		for (int ni = 0; ni < 3; ni++)
			for (int ext = 0; ext < 3; ext++) {
				int type = types[ti], q8 = type == TFM_TYPE_Q8_0, q5 = type == TFM_TYPE_Q5_0;
				int64_t rows = rowsv[ri], n = nv[ni];
				size_t rb = tfm_quant_row_bytes(type, n), xb, bs = q8 ? 34 : q5 ? 22 : 18;
				tfm_vec_dot_fn one = tfm_vec_dot(type);
				fill(w, n * rows, 1);
				make_w(type, w, n, rows, wq);
				fill(x, n * 3, 1);
				if (ext) /* every quant at one extreme (q5_0: 31 or 0 with
					  * its fifth bits), x all 1 or -1 */
					for (int64_t r = 0; r < rows; r++)
						for (int64_t i = 0; i < n / 32; i++)
							memset(wq + r * rb + i * bs + 2,
							       ext == 1 ? (q8 ? 0x7f : 0xff) : (q8 ? 0x80 : 0), bs - 2);
				for (int64_t i = 0; ext && i < 3 * n; i++)
					x[i] = ext == 1 ? 1.0f : -1.0f;
				xb = tfm_quant_row_bytes(TFM_TYPE_Q8_0, n);
				for (int t = 0; t < 3; t++)
					tfm_quantize_row(TFM_TYPE_Q8_0, x + t * n, xq + t * xb, n);
				(q8 ? tfm_cpu_q8x8_pack : q5 ? tfm_cpu_q5x8_pack : tfm_cpu_q4x8_pack)(g, wq, rb, n, rows);
				qx8_scalar(type, ys, g, xq, n, rows);
				float big = 0;
				for (int64_t r = 0; r < rows; r++)
					big = fmaxf(big, fabsf(ys[r]));
				for (int64_t r = 0; r < rows; r++)
					bad_dot += fabsf(ys[r] - one(n, wq + r * rb, xq)) > 1e-5f * fmaxf(big, 1);
#if defined(__x86_64__)
				if (fast) {
					(q8 ? tfm_cpu_qgemv_q8x8_avx2 : q5 ? tfm_cpu_qgemv_q5x8_avx2
					    : tfm_cpu_qgemv_q4x8_avx2)(ya, g, xq, n, rows);
					bad_bits += memcmp(ya, ys, rows * 4) != 0;
				}
#elif defined(__aarch64__)
				if (fast) {
					(q8 ? tfm_cpu_qgemv_q8x8_dotprod : q5 ? tfm_cpu_qgemv_q5x8_dotprod
					    : tfm_cpu_qgemv_q4x8_dotprod)(ya, g, xq, n, rows);
					bad_bits += memcmp(ya, ys, rows * 4) != 0;
				}
#endif
				/* the backend, 1 and 3 tokens, 1 and 2 threads */
				struct tfm_mat m = {.data = wq, .type = type, .in = n, .out = rows,
						    .row_bytes = rb};
				int bad = regroup_backend(&m, x, xq, xb, g, qx8_scalar, 0, ys, ya, y1);
				if (bad >= 0)
					mm_ran++, bad_mm += bad;
			}
	CHECK_MSG(!bad_bits, "qx8: the %s kernels differ from the scalar ones in %d cases", fast_name,
		  bad_bits);
	CHECK_MSG(!bad_dot, "qx8: %d rows farther than 1e-5 from the one-row dot", bad_dot);
	CHECK_MSG(!bad_mm, "qx8: the backend's matmul on w->dec gave other bits %d times", bad_mm);
	if (!fast)
		fprintf(stderr, "  qx8: %s, the scalar kernels only\n", no_fast);
	if (!mm_ran)
		fprintf(stderr, "  qx8: the backend keeps the file's rows here (no regrouped kernel for this instruction set)\n");
	free(w), free(x), free(ys), free(ya), free(y1), free(wq), free(g), free(xq);
}

/* q4_K, q5_K and q6_K regrouped by eight rows (qx8k.c): as t_qx8.  The AVX2
 * kernels (x86) and the SDOT ones (aarch64, where lib/quant runs "dotprod":
 * QEMU_CPU=max, not cortex-a57), called here directly, give the scalar
 * definitions' bits; both are within 1e-5 (of the
 * largest |y|) of lib/quant's one-row dots; the largest 16-bit partial
 * sums stay exact (every quant at its top, 15 / 31 / 63, or at 0, every
 * scale and min at 63, q6_K's at 127 or -128, x all +-1: +-127); and the
 * cpu backend's matmul on w->dec (rows a super-block of bytes apart that
 * differ from the file's for q4_K and q5_K) has the same bits on one
 * thread and two, at 1 and 3 tokens. */
static void t_qx8k(void)
{
	static const int64_t rowsv[] = {8, 16, 40}, nv[] = {256, 1536};
	static const int types[] = {TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	enum { MAXN = 1536, MAXR = 40 };
	float *w = malloc(MAXN * MAXR * 4), *x = malloc(MAXN * 4 * 3);
	float *ys = malloc(MAXR * 3 * 4), *ya = malloc(MAXR * 3 * 4), *y1 = malloc(MAXR * 3 * 4);
	uint8_t *wq = malloc(2 * MAXN * MAXR), *g = malloc(2 * MAXN * MAXR), *xq = malloc(2 * MAXN * 3);
	int bad_bits = 0, bad_dot = 0, bad_mm = 0, mm_ran = 0, cases = 0;
	const char *fast_name, *no_fast;
	int fast = regroup_fast(&fast_name, &no_fast);
	for (int ti = 0; ti < 3; ti++)
	for (int ri = 0; ri < 3; ri++)
		for (int ni = 0; ni < 2; ni++)
			for (int ext = 0; ext < 3; ext++) {
				int type = types[ti];
				int64_t rows = rowsv[ri], n = nv[ni], nb = n / 256;
				size_t rb = tfm_quant_row_bytes(type, n), xb;
				tfm_vec_dot_fn one = tfm_vec_dot(type);
				fill(w, n * rows, 1);
				make_w(type, w, n, rows, wq);
				fill(x, n * 3, 1);
				for (int64_t r = 0; ext && r < rows; r++)
					for (int64_t i = 0; i < nb; i++) {
						uint8_t *b = wq + r * rb + i * (rb / nb);
						int top = ext == 1;
						if (type == TFM_TYPE_Q6_K) { /* ql, qh, then int8 scales */
							memset(b, top ? 0xff : 0, 192);
							memset(b + 192, top ? 0x7f : 0x80, 16);
						} else { /* scales and mins all 63, quants at top or 0 */
							memset(b + 4, 0xff, 12);
							memset(b + 16, top ? 0xff : 0, rb / nb - 16);
						}
					}
				for (int64_t i = 0; ext && i < 3 * n; i++)
					x[i] = ext == 1 ? 1.0f : -1.0f;
				xb = tfm_quant_row_bytes(TFM_TYPE_Q8_K, n);
				for (int t = 0; t < 3; t++)
					tfm_quantize_row(TFM_TYPE_Q8_K, x + t * n, xq + t * xb, n);
				tfm_cpu_qx8k_pack(type, g, wq, rb, n, rows);
				tfm_cpu_qgemv_qx8k_scalar(type, ys, g, xq, n, rows);
				cases++;
				float big = 0;
				for (int64_t r = 0; r < rows; r++)
					big = fmaxf(big, fabsf(ys[r]));
				for (int64_t r = 0; r < rows; r++)
					bad_dot += fabsf(ys[r] - one(n, wq + r * rb, xq)) > 1e-5f * fmaxf(big, 1);
#if defined(__x86_64__)
				if (fast) {
					(type == TFM_TYPE_Q4_K ? tfm_cpu_qgemv_q4kx8_avx2
					 : type == TFM_TYPE_Q5_K ? tfm_cpu_qgemv_q5kx8_avx2
								 : tfm_cpu_qgemv_q6kx8_avx2)(ya, g, xq, n, rows);
					bad_bits += memcmp(ya, ys, rows * 4) != 0;
				}
#elif defined(__aarch64__)
				if (fast) {
					(type == TFM_TYPE_Q4_K ? tfm_cpu_qgemv_q4kx8_dotprod
					 : type == TFM_TYPE_Q5_K ? tfm_cpu_qgemv_q5kx8_dotprod
								 : tfm_cpu_qgemv_q6kx8_dotprod)(ya, g, xq, n, rows);
					bad_bits += memcmp(ya, ys, rows * 4) != 0;
				}
#endif
				struct tfm_mat m = {.data = wq, .type = type, .in = n, .out = rows,
						    .row_bytes = rb};
				int bad = regroup_backend(&m, x, xq, xb, g, tfm_cpu_qgemv_qx8k_scalar,
							  (size_t)rows * nb * tfm_cpu_qx8k_block_bytes(type),
							  ys, ya, y1);
				if (bad >= 0)
					mm_ran++, bad_mm += bad;
			}
	CHECK(cases == 54);
	CHECK_MSG(!bad_bits, "qx8k: the %s kernels differ from the scalar ones in %d cases", fast_name,
		  bad_bits);
	CHECK_MSG(!bad_dot, "qx8k: %d rows farther than 1e-5 from the one-row dot", bad_dot);
	CHECK_MSG(!bad_mm, "qx8k: the backend's matmul on w->dec gave other bits %d times", bad_mm);
	if (!fast)
		fprintf(stderr, "  qx8k: %s, the scalar kernels only\n", no_fast);
	if (!mm_ran)
		fprintf(stderr, "  qx8k: the backend keeps the file's rows here (no regrouped kernel for this instruction set)\n");
	free(w), free(x), free(ys), free(ya), free(y1), free(wq), free(g), free(xq);
}

static void setup(void)
{
	tfm_pool_new(&pool, 2);
	scratch = malloc(2 * (1 << 20) * sizeof(float));
	const char *q = getenv("TFM_TEST_QUICK");
	quick = q && *q && strcmp(q, "0");
}

/* tfm_cpu_add's kernels for each instruction set this processor has,
 * against the scalar loop, bit for bit (every one is the same IEEE sums),
 * on sizes around their vector widths, with y apart, y = a and y = b */
static void t_add(void)
{
	struct { const char *isa; void (*f)(float *, const float *, const float *, int64_t); } k[4];
	int nk = 0;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		k[nk].isa = "avx2", k[nk++].f = tfm_cpu_add_avx2;
	if (__builtin_cpu_supports("avx512f"))
		k[nk].isa = "avx512", k[nk++].f = tfm_cpu_add_avx512;
#elif defined(__aarch64__)
	k[nk].isa = "neon", k[nk++].f = tfm_cpu_add_neon;
#endif
	enum { N = 301 };
	float a[N], b[N], want[N], got[N];
	for (int i = 0; i < nk; i++) {
		int bad = 0;
		for (int64_t n = 0; n <= N; n += n < 40 ? 1 : 87) {
			int64_t m = n < N ? n : N;
			for (int alias = 0; alias < 3; alias++) {
				fill(a, N, 3.0f), fill(b, N, 1e-3f);
				tfm_cpu_add_scalar(want, a, b, m);
				float *y = got;
				if (alias == 1)
					y = a; /* y = a + b into a */
				else if (alias == 2)
					y = b;
				memset(got, 0, sizeof got);
				k[i].f(y, a, b, m);
				bad += memcmp(y, want, (size_t)m * sizeof(float)) != 0;
			}
		}
		CHECK_MSG(!bad, "add %s: %d cases differ from the scalar sums", k[i].isa, bad);
	}
	if (!nk)
		fprintf(stderr, "  add: no SIMD kernel for this processor, not run\n");
}

static void t_setup(void) { setup(); CHECK(pool && scratch); }
static void t_teardown(void) { tfm_pool_free(pool); free(scratch); }

static const struct t_case t_cases[] = {
	{"setup", t_setup},
	{"reference", t_reference},
	{"dispatch", t_dispatch},
	{"backends", t_backends},
	{"scans", t_scans},
	{"qgemv_k", t_qgemv_k},
	{"qgemv_avx2", t_qgemv_avx2},
	{"add", t_add},
	{"qgemv_neon", t_qgemv_neon},
	{"xbuf", t_xbuf},
	{"qx8", t_qx8},
	{"qx8k", t_qx8k},
	{"teardown", t_teardown},
};
T_MAIN(t_cases)
