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
 * Prefill runs the same step token by token (the chunked form sums the
 * same terms in another order).  State per layer: the last d_conv - 1 conv
 * inputs [2 nk dk + nv dv] and S of every value head.
 * Spec: ssm_n_group = nk, ssm_n_head = nv, ssm_d_state = dk, ssm_d_inner =
 * nv dv, ssm_d_conv = the conv's taps (llama.cpp's qwen3next keys). */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }
static float silu(float x) { return x / (1.0f + expf(-x)); }
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); } /* torch's threshold 20 */

int64_t tfm_gdn_conv_dim(const struct tfm_spec *s)
{
	return 2 * s->ssm_n_group * s->ssm_d_state + s->ssm_d_inner;
}

/* in_proj's output, the conv's input and output, the heads' output */
int64_t tfm_gdn_scratch_floats(const struct tfm_spec *s, int64_t n_batch)
{
	int64_t cd = tfm_gdn_conv_dim(s), pw = cd + s->ssm_d_inner + 2 * s->ssm_n_head;
	return n_batch * (pw + 2 * cd + s->ssm_d_inner) + 2 * s->ssm_d_state;
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
	float *qn = y + B * vd, *kn = qn + dk; /* one head's normalised q, k */
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
	float qs = 1.0f / sqrtf((float)dk);
	for (int64_t t = 0; t < n; t++) {
		const float *x = xc + t * cd;
		for (int64_t h = 0; h < nv; h++) {
			int64_t g = h / r, j = h % r;
			const float *bat = ba + t * 2 * nv + g * 2 * r;
			float beta = sigm(bat[j]);
			float gt = L->ssm_a[h] * softplus(bat[r + j] + L->ssm_dt_b[h]);
			l2norm(qn, x + g * dk, dk, qs);
			l2norm(kn, x + qk + g * dk, dk, 1.0f);
			float *o = y + t * vd + h * dv;
			be->gdn_step(o, S + h * dk * dv, qn, kn, x + 2 * qk + h * dv, gt, beta, dk, dv);
			/* gated RMSNorm: the norm before the gate, its weight plain */
			const float *z = zx + t * pw + g * gw + 2 * dk + r * dv + j * dv;
			be->rmsnorm(o, o, L->ssm_norm_w, dv, (float)s->norm_eps, 0);
			for (int64_t i = 0; i < dv; i++)
				o[i] *= silu(z[i]);
		}
	}
	be->matmul(&c->kx, c->h, y, &L->ssm_out, n);
}
