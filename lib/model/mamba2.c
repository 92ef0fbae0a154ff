/* mamba2.c: the Mamba-2 mixer (Dao & Gu 2024, as transformers' Mamba2Mixer
 * and llama.cpp's build_mamba2_layer): in_proj -> [z | xBC | dt] -> causal
 * depthwise conv1d over xBC -> SiLU -> x (n_head heads of head_dim), B and
 * C (n_group groups of d_state, head h reads group h / (n_head / n_group));
 * dt = softplus(dt + dt_bias) clamped to [dt_min, dt_max]; per head a scalar
 * A = -exp(A_log) (stored so):
 *   S[h][p][k] = exp(dt A) S[h][p][k] + dt B[k] x[h][p]
 *   y[h][p]    = sum_k S[h][p][k] C[k] + D[h] x[h][p]
 * then the gated RMSNorm, y * silu(z) normalised over groups of
 * d_inner / n_group (mamba_ssm's and transformers 5's grouping), times its
 * weight, and out_proj.  Decode (and prefill on the ref backend, the
 * reference) runs the scan token by token; prefill of c->ssm_chunk_min or
 * more tokens on other backends runs the SSD chunked form (ssd_prefill), the
 * same sums in another order as small matrix products through be->matmul.
 * Either way the heads share the backend's pool (be->parallel), each head
 * on one thread.  State per layer: the last d_conv - 1 xBC inputs and S. */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

#define SSD_CHUNK 64 /* tokens per chunk of the chunked form */

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); } /* torch's threshold 20 */

int64_t tfm_mamba2_conv_dim(const struct tfm_spec *s)
{
	return s->ssm_d_inner + 2 * s->ssm_n_group * s->ssm_d_state;
}

/* the chunked form's work space of one head (ssd_head) */
static int64_t ssd_head_floats(const struct tfm_spec *s)
{
	int64_t N = s->ssm_d_state, P = s->ssm_d_inner / s->ssm_n_head, Q = SSD_CHUNK;
	return Q * Q + 4 * P * Q + P * N;
}

/* the chunked form's work space (ssd_prefill): a group's, then one head's
 * per task */
static int64_t ssd_floats(const struct tfm_spec *s, int64_t n_batch, int n_tasks)
{
	if (s->ssm_n_head < 1)
		return 0;
	int64_t N = s->ssm_d_state, Q = SSD_CHUNK, nq = (n_batch + Q - 1) / Q * Q;
	return 3 * nq * N + nq * Q + n_tasks * ssd_head_floats(s);
}

int64_t tfm_mamba2_scratch_floats(const struct tfm_spec *s, int64_t n_batch, int n_tasks)
{
	int64_t di = s->ssm_d_inner, cd = tfm_mamba2_conv_dim(s);
	return n_batch * ((di + cd + s->ssm_n_head) + cd + di) + ssd_floats(s, n_batch, n_tasks);
}

/* dt of head h from its in_proj output: softplus(dt + dt_bias) clamped */
static float head_dt(const struct tfm_spec *s, const struct tfm_layer *L, float raw, int64_t h)
{
	float hi = s->ssm_dt_max > 0 ? (float)s->ssm_dt_max : INFINITY, lo = (float)s->ssm_dt_min;
	float dt = softplus(raw + L->ssm_dt_b[h]);
	return dt < lo ? lo : dt > hi ? hi : dt;
}

static struct tfm_mat f32_mat(const float *w, int64_t in, int64_t out)
{
	return (struct tfm_mat){.data = w, .type = TFM_TYPE_F32, .in = in, .out = out,
				.row_bytes = (size_t)in * sizeof(float)};
}

/* The SSD chunked form (Dao & Gu 2024, mamba_ssm's ssd_minimal) of the scan
 * of n tokens: y [n][di] the scan's output with the D skip (what the step
 * form writes), S [nh][P][N] carried in and out.  Per chunk of q <=
 * SSD_CHUNK tokens and head, with a_t = dt_t A (<= 0) and cum_t = a_0 + ..
 * + a_t (summed in double, so that cum_t - cum_s, s <= t, is exact enough
 * and never positive):
 *   y_t = sum_{s<=t} exp(cum_t - cum_s) dt_s (C_t . B_s) x_s
 *         + exp(cum_t) S_in C_t + D x_t
 *   S_out = exp(cum_{q-1}) S_in + sum_s exp(cum_{q-1} - cum_s) dt_s x_s B_s^T
 * C B^T is computed once per group and chunk; the rest are three products
 * per head and chunk: M X, C S_in^T, (X w) B.  A group's heads share the
 * pool (ssd_heads), each head on one thread with its own work space. */
struct ssd_job {
	struct tfm_ctx *c;
	const struct tfm_layer *L;
	int64_t n, h0;                 /* tokens; the group's first head */
	const float *zx, *xc;          /* [n][pw] (dt at di + cd), [n][cd] (x at 0) */
	const float *Cc, *Bt, *G;      /* the group's, see ssd_prefill */
	float *S, *y, *wk;             /* [nh][P][N], [n][di], [n_tasks][ssd_head_floats] */
};

/* heads h0 + u0 .. h0 + u1 - 1 of the group, chunk after chunk */
static void ssd_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct ssd_job *j = ctx;
	const struct tfm_spec *s = &j->c->m->spec;
	const struct tfm_backend *be = j->c->m->be;
	const struct tfm_layer *L = j->L;
	int64_t di = s->ssm_d_inner, N = s->ssm_d_state, nh = s->ssm_n_head, n = j->n;
	int64_t P = di / nh, cd = tfm_mamba2_conv_dim(s), pw = di + cd + nh, Q = SSD_CHUNK;
	const float *zx = j->zx, *xc = j->xc;
	float *M = j->wk + task * ssd_head_floats(s); /* [q][q] G times decay and dt, causal */
	float *Xt = M + Q * Q;              /* [P][q] one head's x^T */
	float *Xw = Xt + P * Q;             /* [P][q] x^T times the decay to the chunk's end, dt */
	float *Y1 = Xw + P * Q;             /* [q][P] M X */
	float *Y2 = Y1 + Q * P;             /* [q][P] C S_in^T */
	float *dS = Y2 + Q * P;             /* [P][N] */
	double cum[SSD_CHUNK];
	float dt[SSD_CHUNK];
	for (int64_t h = j->h0 + u0; h < j->h0 + u1; h++) {
		float *Sh = j->S + h * P * N, A = L->ssm_a[h], D = L->ssm_d[h];
		for (int64_t ci = 0, c0 = 0; c0 < n; ci++, c0 += Q) {
			int64_t q = n - c0 < Q ? n - c0 : Q;
			const float *Gc = j->G + ci * Q * Q;
			for (int64_t t = 0; t < q; t++) {
				dt[t] = head_dt(s, L, zx[(c0 + t) * pw + di + cd + h], h);
				cum[t] = (t ? cum[t - 1] : 0.0) + (double)(dt[t] * A);
			}
			for (int64_t t = 0; t < q; t++)
				for (int64_t i = 0; i < q; i++)
					M[t * q + i] = i <= t ? Gc[t * q + i] * dt[i] *
						       expf((float)(cum[t] - cum[i])) : 0.0f;
			for (int64_t t = 0; t < q; t++) {
				const float *x = xc + (c0 + t) * cd + h * P;
				float w = dt[t] * expf((float)(cum[q - 1] - cum[t]));
				for (int64_t p = 0; p < P; p++) {
					Xt[p * q + t] = x[p];
					Xw[p * q + t] = x[p] * w;
				}
			}
			struct tfm_mat xm = f32_mat(Xt, q, P), sm = f32_mat(Sh, N, P);
			struct tfm_mat bm = f32_mat(j->Bt + ci * Q * N, q, N);
			be->matmul(kt, Y1, M, &xm, q);
			be->matmul(kt, Y2, j->Cc + c0 * N, &sm, q);
			be->matmul(kt, dS, Xw, &bm, P);
			for (int64_t t = 0; t < q; t++) {
				const float *x = xc + (c0 + t) * cd + h * P;
				float *yt = j->y + (c0 + t) * di + h * P, e = expf((float)cum[t]);
				for (int64_t p = 0; p < P; p++)
					yt[p] = Y1[t * P + p] + e * Y2[t * P + p] + D * x[p];
			}
			float e = expf((float)cum[q - 1]);
			for (int64_t i = 0; i < P * N; i++)
				Sh[i] = e * Sh[i] + dS[i];
		}
	}
}

static void ssd_prefill(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n,
			const float *zx, const float *xc, float *S, float *y, float *wk)
{
	const struct tfm_spec *s = &c->m->spec;
	const struct tfm_backend *be = c->m->be;
	int64_t di = s->ssm_d_inner, N = s->ssm_d_state, nh = s->ssm_n_head, ng = s->ssm_n_group;
	int64_t P = di / nh, cd = tfm_mamba2_conv_dim(s), Q = SSD_CHUNK;
	int64_t nq = (n + Q - 1) / Q, hpg = nh / ng;
	float *Cc = wk;                     /* [n][N] one group's C rows */
	float *Bc = Cc + nq * Q * N;        /* [n][N] its B rows */
	float *Bt = Bc + nq * Q * N;        /* [nq][N][q] each chunk's B^T */
	float *G = Bt + nq * Q * N;         /* [nq][q][q] each chunk's C B^T */
	struct ssd_job j = {.c = c, .L = L, .n = n, .zx = zx, .xc = xc, .Cc = Cc, .Bt = Bt, .G = G,
			    .S = S, .y = y, .wk = G + nq * Q * Q};
	for (int64_t g = 0; g < ng; g++) {
		for (int64_t t = 0; t < n; t++) {
			const float *Bm = xc + t * cd + di + g * N;
			memcpy(Bc + t * N, Bm, (size_t)N * sizeof(float));
			memcpy(Cc + t * N, Bm + ng * N, (size_t)N * sizeof(float));
		}
		for (int64_t ci = 0, c0 = 0; c0 < n; ci++, c0 += Q) {
			int64_t q = n - c0 < Q ? n - c0 : Q;
			float *bt = Bt + ci * Q * N;
			for (int64_t k = 0; k < N; k++)
				for (int64_t i = 0; i < q; i++)
					bt[k * q + i] = Bc[(c0 + i) * N + k];
			struct tfm_mat bm = f32_mat(Bc + c0 * N, N, q);
			be->matmul(&c->kx, G + ci * Q * Q, Cc + c0 * N, &bm, q);
		}
		/* per head and token: the three products, 2 (Q + 2 N) P operations */
		j.h0 = g * hpg;
		be->parallel(&c->kx, ssd_heads, &j, hpg, 2.0 * (double)hpg * n * (Q + 2 * N) * P);
	}
}

/* The step form of heads u0 .. u1 - 1 over the batch, token after token. */
struct step_job {
	struct tfm_ctx *c;
	const struct tfm_layer *L;
	int64_t n;
	const float *zx, *xc;          /* [n][pw], [n][cd] */
	float *S, *y;                  /* [nh][hd][N], [n][di] */
};

static void step_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct step_job *j = ctx;
	const struct tfm_spec *s = &j->c->m->spec;
	const struct tfm_backend *be = j->c->m->be;
	const struct tfm_layer *L = j->L;
	int64_t di = s->ssm_d_inner, N = s->ssm_d_state, nh = s->ssm_n_head, ng = s->ssm_n_group;
	int64_t hd = di / nh, cd = tfm_mamba2_conv_dim(s), pw = di + cd + nh;
	(void)kt, (void)task;
	for (int64_t t = 0; t < j->n; t++) {
		const float *x = j->xc + t * cd, *Bm = x + di, *Cm = Bm + ng * N;
		for (int64_t h = u0; h < u1; h++) {
			float dt = head_dt(s, L, j->zx[t * pw + di + cd + h], h);
			int64_t g = h / (nh / ng);
			be->mamba2_scan(j->y + t * di + h * hd, j->S + h * hd * N, x + h * hd, dt,
					L->ssm_a[h], L->ssm_d[h], Bm + g * N, Cm + g * N, hd, N);
		}
	}
}

void tfm_mamba2_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t di = s->ssm_d_inner, K = s->ssm_d_conv, N = s->ssm_d_state, nh = s->ssm_n_head;
	int64_t ng = s->ssm_n_group, cd = tfm_mamba2_conv_dim(s);
	int64_t pw = di + cd + nh, B = c->n_batch, gs = di / ng;
	float *zx = scr;                  /* [n][pw]: z, xBC, dt */
	float *xc = zx + B * pw;          /* [n][cd]: conv output, SiLU'd: x, B, C */
	float *y = xc + B * cd;           /* [n][di] */
	float *wk = y + B * di;           /* ssd_floats: the chunked form's */
	be->matmul(&c->kx, zx, c->xn, &L->ssm_in, n);
	if (L->ssm_in_b)
		for (int64_t t = 0; t < n; t++)
			be->add(zx + t * pw, zx + t * pw, L->ssm_in_b, pw);
	tfm_ssm_conv(xc, zx + di, pw, conv, L->ssm_conv_w, L->ssm_conv_b, n, cd, K); /* xBC */
	/* the reference backend keeps the step form, whose sums run in one
	 * order for any batch; short batches too (measured faster below
	 * ssm_chunk_min tokens) */
	int chunked = n >= c->ssm_chunk_min && be != tfm_backend_ref();
	if (chunked) {
		ssd_prefill(c, L, n, zx, xc, S, y, wk);
	} else { /* ~0.25 ns per state element and token (mamba.c says the units) */
		struct step_job j = {.c = c, .L = L, .n = n, .zx = zx, .xc = xc, .S = S, .y = y};
		be->parallel(&c->kx, step_heads, &j, nh, 12.0 * (double)n * di * N);
	}
	for (int64_t t = 0; t < n; t++) {
		/* gated RMSNorm: y silu(z), normalised per group of gs, times w */
		float *yt = y + t * di;
		const float *z = zx + t * pw;
		for (int64_t i = 0; i < di; i++)
			yt[i] *= silu(z[i]);
		for (int64_t g = 0; g < ng; g++)
			be->rmsnorm(yt + g * gs, yt + g * gs, L->ssm_norm_w + g * gs, gs,
				    (float)s->norm_eps, 0);
	}
	be->matmul(&c->kx, c->h, y, &L->ssm_out, n);
	if (L->ssm_out_b)
		for (int64_t t = 0; t < n; t++)
			be->add(c->h + t * s->n_embd, c->h + t * s->n_embd, L->ssm_out_b, s->n_embd);
}
