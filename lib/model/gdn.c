/* gdn.c: the Gated DeltaNet mixer (Yang, Kautz & Hatamizadeh 2024) as
 * Qwen3-Next's linear-attention layers run it (transformers'
 * Qwen3NextGatedDeltaNet, its torch recurrent path):
 *   ssm_in {n_embd, 2 nk dk + 2 nv dv}: per key head g, [q dk | k dk |
 *     v r dv | z r dv] with r = nv / nk (the checkpoint's interleaved order,
 *     kept as it is); ssm_ba {n_embd, 2 nv}: per key head [b r | a r]
 *   [q | k | v] of all heads -> causal depthwise conv (no bias) -> SiLU
 *   per value head h (key head h / r): q, k L2-normalised (eps 1e-6), q
 *   times dk^-0.5, beta = sigmoid(b), g = A softplus(a + dt_bias) with
 *   A = -exp(A_log) (stored so), and the delta rule on S [dk][dv]:
 *     S = exp(g) S;  d = beta (v - S^T k);  S += k d^T;  o = S^T q
 *   o = rmsnorm(o) w * silu(z) per head (dv wide, the norm's weight as it
 *   is), then ssm_out {nv dv, n_embd}.
 * Decode (and prefill on the ref backend, the reference) runs the step
 * token by token; prefill of c->ssm_chunk_min or more tokens on other
 * backends runs the chunked gated delta rule (gdn_prefill), the same sums
 * in another order as small products through be->matmul.  State per layer: the last d_conv - 1 conv
 * inputs [2 nk dk + nv dv] and S of every value head.
 * Spec: ssm_n_group = nk, ssm_n_head = nv, ssm_d_state = dk, ssm_d_inner =
 * nv dv, ssm_d_conv = the conv's taps (llama.cpp's qwen3next keys).
 * Either form shares the value heads out over the backend's pool
 * (be->parallel), each head on one thread. */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

#define GDN_CHUNK 64 /* tokens per chunk of the chunked form (transformers' 64) */

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }
static float silu(float x) { return x / (1.0f + expf(-x)); }
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); } /* torch's threshold 20 */

int64_t tfm_gdn_conv_dim(const struct tfm_spec *s)
{
	return 2 * s->ssm_n_group * s->ssm_d_state + s->ssm_d_inner;
}

/* the chunked form's work space of one value head (gdn_heads) */
static int64_t chunk_head_floats(const struct tfm_spec *s)
{
	int64_t dk = s->ssm_d_state, dv = s->ssm_d_inner / s->ssm_n_head, Q = GDN_CHUNK;
	return 2 * dv * dk + 2 * Q * Q + 2 * (dv + dk) * Q + 2 * Q * dk + 2 * Q * dv + dv * Q +
	       dk * Q + Q * dv;
}

/* the chunked form's work space (gdn_prefill): every key head's q, k, q K^T
 * and K K^T, then one value head's per task */
static int64_t chunk_floats(const struct tfm_spec *s, int64_t n_batch, int n_tasks)
{
	if (s->ssm_n_head < 1)
		return 0;
	int64_t dk = s->ssm_d_state, Q = GDN_CHUNK, nq = (n_batch + Q - 1) / Q * Q;
	return s->ssm_n_group * (nq * 2 * dk + nq * 2 * Q) + n_tasks * chunk_head_floats(s);
}

/* in_proj's output, the conv's input and output, the heads' output, one
 * head's q and k per task, the chunked form's */
int64_t tfm_gdn_scratch_floats(const struct tfm_spec *s, int64_t n_batch, int n_tasks)
{
	int64_t cd = tfm_gdn_conv_dim(s), pw = cd + s->ssm_d_inner + 2 * s->ssm_n_head;
	return n_batch * (pw + 2 * cd + s->ssm_d_inner) + n_tasks * 2 * s->ssm_d_state +
	       chunk_floats(s, n_batch, n_tasks);
}

/* y = x / sqrt(sum x^2 + 1e-6) (fla's l2norm), times scale */
static void l2norm(float *y, const float *x, int64_t n, float scale)
{
	double ss = 0;
	for (int64_t i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	float r = scale / sqrtf((float)ss + 1e-6f);
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] * r;
}

static struct tfm_mat f32_mat(const float *w, int64_t in, int64_t out)
{
	return (struct tfm_mat){.data = w, .type = TFM_TYPE_F32, .in = in, .out = out,
				.row_bytes = (size_t)in * sizeof(float)};
}

/* The chunked gated delta rule (Yang, Kautz & Hatamizadeh; transformers'
 * torch_chunk_gated_delta_rule) over n tokens: o into y [n][vd] (what the
 * step writes), S [nv][dk][dv] carried in and out.  Per chunk of q <=
 * GDN_CHUNK tokens and value head, with G_t = g_0 + .. + g_t (in double:
 * every exponent G_t - G_s, s <= t, is a difference <= 0):
 *   A[t][s] = beta_t (k_t . k_s) exp(G_t - G_s), s < t;  T = (I + A)^-1
 *   (the UT / WY form, by forward substitution), U = T (beta v),
 *   W = T (beta exp(G) k), and the deltas d = U - W S_in;
 *   o_t = exp(G_t) S_in^T q_t + sum_{s<=t} (q_t . k_s) exp(G_t - G_s) d_s
 *   S_out = exp(G_{q-1}) S_in + sum_s exp(G_{q-1} - G_s) k_s d_s^T
 * q K^T and K K^T are computed once per key head and chunk (gdn_keys),
 * then the value heads share the pool (gdn_heads), each on one thread with
 * its own work space; the state is held transposed, S^T [dv][dk], while
 * the chunks run, so that every product is x W^T of contiguous rows. */
struct chunk_job {
	struct tfm_ctx *c;
	const struct tfm_layer *L;
	int64_t n;
	const float *ba, *xc;          /* [n][2 nv], [n][cd] */
	float *QK;                     /* [nk][nq][2q][dk]: each chunk's q (normalised,
	                                  scaled) rows, then its k rows */
	float *SK;                     /* [nk][nq][2q][q]: q K^T, then K K^T */
	float *S, *y, *wk;             /* [nv][dk][dv], [n][vd], [n_tasks][chunk_head_floats] */
};

/* key heads u0 .. u1 - 1: their q, k rows and products */
static void gdn_keys(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct chunk_job *j = ctx;
	const struct tfm_spec *s = &j->c->m->spec;
	const struct tfm_backend *be = j->c->m->be;
	int64_t dk = s->ssm_d_state, qk = s->ssm_n_group * dk, cd = tfm_gdn_conv_dim(s);
	int64_t Q = GDN_CHUNK, n = j->n, nq = (n + Q - 1) / Q;
	float qs = 1.0f / sqrtf((float)dk);
	(void)task;
	for (int64_t g = u0; g < u1; g++)
		for (int64_t ci = 0, c0 = 0; c0 < n; ci++, c0 += Q) {
			int64_t q = n - c0 < Q ? n - c0 : Q;
			float *qkc = j->QK + (g * nq + ci) * Q * 2 * dk;
			for (int64_t t = 0; t < q; t++) {
				const float *x = j->xc + (c0 + t) * cd;
				l2norm(qkc + t * dk, x + g * dk, dk, qs);
				l2norm(qkc + (q + t) * dk, x + qk + g * dk, dk, 1.0f);
			}
			struct tfm_mat km = f32_mat(qkc + q * dk, dk, q);
			be->matmul(kt, j->SK + (g * nq + ci) * 2 * Q * Q, qkc, &km, 2 * q);
		}
}

/* value heads u0 .. u1 - 1, chunk after chunk */
static void gdn_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct chunk_job *j = ctx;
	const struct tfm_spec *s = &j->c->m->spec;
	const struct tfm_backend *be = j->c->m->be;
	const struct tfm_layer *L = j->L;
	int64_t nk = s->ssm_n_group, nv = s->ssm_n_head, dk = s->ssm_d_state;
	int64_t vd = s->ssm_d_inner, dv = vd / nv, r = nv / nk, cd = tfm_gdn_conv_dim(s);
	int64_t qk = nk * dk, Q = GDN_CHUNK, n = j->n, nq = (n + Q - 1) / Q, vk = dv + dk;
	float *St = j->wk + task * chunk_head_floats(s); /* [dv][dk] S^T */
	float *dSt = St + dv * dk;          /* [dv][dk] */
	float *T = dSt + dv * dk;           /* [q][q] (I + A)^-1, lower triangular */
	float *Pm = T + Q * Q;              /* [q][q] q K^T times the decay, causal */
	float *Rt = Pm + Q * Q;             /* [dv + dk][q] (beta v)^T, then (beta exp(G) k)^T */
	float *UW = Rt + vk * Q;            /* [q][dv + dk] T R: U, W */
	float *XA = UW + Q * vk;            /* [2q][dk] W, then exp(G) q */
	float *VO = XA + 2 * Q * dk;        /* [2q][dv] W S_in, exp(G) S_in^T q */
	float *Dt = VO + 2 * Q * dv;        /* [dv][q] the deltas, transposed */
	float *Kd = Dt + dv * Q;            /* [dk][q] k^T times the decay to the chunk's end */
	float *OI = Kd + dk * Q;            /* [q][dv] the intra-chunk output */
	float beta[GDN_CHUNK];
	double G[GDN_CHUNK];
	for (int64_t h = u0; h < u1; h++) {
		int64_t g = h / r, jv = h % r;
		float *Sh = j->S + h * dk * dv;
		for (int64_t i = 0; i < dk; i++)
			for (int64_t v = 0; v < dv; v++)
				St[v * dk + i] = Sh[i * dv + v];
		for (int64_t ci = 0, c0 = 0; c0 < n; ci++, c0 += Q) {
			int64_t q = n - c0 < Q ? n - c0 : Q;
			const float *qkc = j->QK + (g * nq + ci) * Q * 2 * dk, *kc = qkc + q * dk;
			const float *QKt = j->SK + (g * nq + ci) * 2 * Q * Q, *KK = QKt + q * q;
			for (int64_t t = 0; t < q; t++) {
				const float *bat = j->ba + (c0 + t) * 2 * nv + g * 2 * r;
				beta[t] = sigm(bat[jv]);
				float gt = L->ssm_a[h] * softplus(bat[r + jv] + L->ssm_dt_b[h]);
				G[t] = (t ? G[t - 1] : 0.0) + (double)gt;
			}
			/* T = (I + A)^-1: row t = e_t - sum_{m<t} A[t][m] T[m] */
			for (int64_t t = 0; t < q; t++) {
				float *Tt = T + t * q;
				memset(Tt, 0, (size_t)q * sizeof(float));
				Tt[t] = 1.0f;
				for (int64_t m = 0; m < t; m++) {
					float a = beta[t] * KK[t * q + m] * expf((float)(G[t] - G[m]));
					const float *Tm = T + m * q;
					for (int64_t i = 0; i <= m; i++)
						Tt[i] -= a * Tm[i];
				}
			}
			for (int64_t t = 0; t < q; t++) {
				const float *v = j->xc + (c0 + t) * cd + 2 * qk + h * dv, *k = kc + t * dk;
				float bk = beta[t] * expf((float)G[t]);
				for (int64_t i = 0; i < dv; i++)
					Rt[i * q + t] = beta[t] * v[i];
				for (int64_t i = 0; i < dk; i++)
					Rt[(dv + i) * q + t] = bk * k[i];
			}
			struct tfm_mat rm = f32_mat(Rt, q, vk), sm = f32_mat(St, dk, dv);
			be->matmul(kt, UW, T, &rm, q);
			for (int64_t t = 0; t < q; t++) {
				float e = expf((float)G[t]);
				memcpy(XA + t * dk, UW + t * vk + dv, (size_t)dk * sizeof(float));
				for (int64_t i = 0; i < dk; i++)
					XA[(q + t) * dk + i] = e * qkc[t * dk + i];
			}
			be->matmul(kt, VO, XA, &sm, 2 * q);
			for (int64_t t = 0; t < q; t++)
				for (int64_t i = 0; i < dv; i++)
					Dt[i * q + t] = UW[t * vk + i] - VO[t * dv + i];
			for (int64_t t = 0; t < q; t++)
				for (int64_t m = 0; m < q; m++)
					Pm[t * q + m] = m <= t ? QKt[t * q + m] *
							expf((float)(G[t] - G[m])) : 0.0f;
			struct tfm_mat dm = f32_mat(Dt, q, dv);
			be->matmul(kt, OI, Pm, &dm, q);
			for (int64_t t = 0; t < q; t++) {
				float *o = j->y + (c0 + t) * vd + h * dv;
				for (int64_t i = 0; i < dv; i++)
					o[i] = VO[(q + t) * dv + i] + OI[t * dv + i];
			}
			for (int64_t t = 0; t < q; t++) {
				float e = expf((float)(G[q - 1] - G[t]));
				for (int64_t i = 0; i < dk; i++)
					Kd[i * q + t] = e * kc[t * dk + i];
			}
			struct tfm_mat kdm = f32_mat(Kd, q, dk);
			be->matmul(kt, dSt, Dt, &kdm, dv);
			float e = expf((float)G[q - 1]);
			for (int64_t i = 0; i < dv * dk; i++)
				St[i] = e * St[i] + dSt[i];
		}
		for (int64_t i = 0; i < dk; i++)
			for (int64_t v = 0; v < dv; v++)
				Sh[i * dv + v] = St[v * dk + i];
	}
}

static void gdn_prefill(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n,
			const float *ba, const float *xc, float *S, float *y, float *wk)
{
	const struct tfm_spec *s = &c->m->spec;
	const struct tfm_backend *be = c->m->be;
	int64_t nk = s->ssm_n_group, nv = s->ssm_n_head, dk = s->ssm_d_state, dv = s->ssm_d_inner / nv;
	int64_t Q = GDN_CHUNK, nq = (n + Q - 1) / Q;
	struct chunk_job j = {.c = c, .L = L, .n = n, .ba = ba, .xc = xc, .S = S, .y = y};
	j.QK = wk;
	j.SK = j.QK + nk * nq * Q * 2 * dk;
	j.wk = j.SK + nk * nq * 2 * Q * Q;
	/* per token: 2 Q dk per key head; 2 Q (3 dv + 2 dk) + 2 dv dk + Q^2 / 3 per value head */
	be->parallel(&c->kx, gdn_keys, &j, nk, 4.0 * (double)nk * n * Q * dk);
	be->parallel(&c->kx, gdn_heads, &j, nv,
		     2.0 * (double)nv * n * (Q * (3 * dv + 2 * dk) + 2 * dv * dk + Q * Q / 6));
}

/* The step form (when the batch is not chunked) and the gated RMSNorm of
 * value heads u0 .. u1 - 1, token after token. */
struct step_job {
	struct tfm_ctx *c;
	const struct tfm_layer *L;
	int64_t n;
	int chunked;                   /* y holds the chunked form's output already */
	const float *zx, *ba, *xc;     /* [n][pw], [n][2 nv], [n][cd] */
	float *S, *y, *qk;             /* [nv][dk][dv], [n][vd], [n_tasks][2][dk] */
};

static void step_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct step_job *j = ctx;
	const struct tfm_spec *s = &j->c->m->spec;
	const struct tfm_backend *be = j->c->m->be;
	const struct tfm_layer *L = j->L;
	int64_t nk = s->ssm_n_group, nv = s->ssm_n_head, dk = s->ssm_d_state;
	int64_t vd = s->ssm_d_inner, dv = vd / nv, r = nv / nk, cd = tfm_gdn_conv_dim(s);
	int64_t qk = nk * dk, pw = 2 * qk + 2 * vd, gw = 2 * dk + 2 * r * dv;
	float *qn = j->qk + task * 2 * dk, *kn = qn + dk, qs = 1.0f / sqrtf((float)dk);
	(void)kt;
	for (int64_t t = 0; t < j->n; t++) {
		const float *x = j->xc + t * cd;
		for (int64_t h = u0; h < u1; h++) {
			int64_t g = h / r, jv = h % r;
			float *o = j->y + t * vd + h * dv;
			if (!j->chunked) {
				const float *bat = j->ba + t * 2 * nv + g * 2 * r;
				float beta = sigm(bat[jv]);
				float gt = L->ssm_a[h] * softplus(bat[r + jv] + L->ssm_dt_b[h]);
				l2norm(qn, x + g * dk, dk, qs);
				l2norm(kn, x + qk + g * dk, dk, 1.0f);
				be->gdn_step(o, j->S + h * dk * dv, qn, kn, x + 2 * qk + h * dv, gt, beta,
					     dk, dv);
			}
			/* gated RMSNorm: the norm before the gate, its weight plain */
			const float *z = j->zx + t * pw + g * gw + 2 * dk + r * dv + jv * dv;
			be->rmsnorm(o, o, L->ssm_norm_w, dv, (float)s->norm_eps, 0);
			for (int64_t i = 0; i < dv; i++)
				o[i] *= silu(z[i]);
		}
	}
}

void tfm_gdn_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t nk = s->ssm_n_group, nv = s->ssm_n_head, dk = s->ssm_d_state;
	int64_t vd = s->ssm_d_inner, dv = vd / nv, r = nv / nk, K = s->ssm_d_conv;
	int64_t cd = tfm_gdn_conv_dim(s), qk = nk * dk, B = c->n_batch;
	int64_t pw = 2 * qk + 2 * vd, gw = 2 * dk + 2 * r * dv; /* in_proj row, one key head's part */
	float *zx = scr;                  /* [n][pw]: in_proj, grouped per key head */
	float *ba = zx + B * pw;          /* [n][2 nv]: b, a grouped per key head */
	float *mix = ba + B * 2 * nv;     /* [n][cd]: q, k, v of all heads in head order */
	float *xc = mix + B * cd;         /* [n][cd]: the conv's output */
	float *y = xc + B * cd;           /* [n][vd] */
	float *qkn = y + B * vd;          /* [n_tasks][2][dk]: one head's normalised q, k */
	float *wk = qkn + c->kx.n_tasks * 2 * dk; /* chunk_floats: the chunked form's */
	be->matmul(&c->kx, zx, c->xn, &L->ssm_in, n);
	be->matmul(&c->kx, ba, c->xn, &L->ssm_ba, n);
	for (int64_t t = 0; t < n; t++)
		for (int64_t g = 0; g < nk; g++) {
			const float *src = zx + t * pw + g * gw;
			float *dst = mix + t * cd;
			memcpy(dst + g * dk, src, (size_t)dk * sizeof(float));
			memcpy(dst + qk + g * dk, src + dk, (size_t)dk * sizeof(float));
			memcpy(dst + 2 * qk + g * r * dv, src + 2 * dk, (size_t)(r * dv) * sizeof(float));
		}
	tfm_ssm_conv(xc, mix, cd, conv, L->ssm_conv_w, NULL, n, cd, K);
	/* the reference backend keeps the step form, whose sums run in one
	 * order for any batch; short batches too (see TFM_SSM_CHUNK_MIN) */
	int chunked = n >= c->ssm_chunk_min && be != tfm_backend_ref();
	if (chunked)
		gdn_prefill(c, L, n, ba, xc, S, y, wk);
	/* the step: ~0.5 ns per state element and token (mamba.c says the units) */
	struct step_job j = {.c = c, .L = L, .n = n, .chunked = chunked, .zx = zx, .ba = ba,
			     .xc = xc, .S = S, .y = y, .qk = qkn};
	be->parallel(&c->kx, step_heads, &j, nv,
		     chunked ? 4.0 * (double)n * vd : 24.0 * (double)n * nv * dk * dv);
	be->matmul(&c->kx, c->h, y, &L->ssm_out, n);
}
