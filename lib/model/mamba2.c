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
 * weight, and out_proj.  The scan runs token by token: prefill and decode
 * are the same code (the chunked SSD form of prefill sums the same terms in
 * another order).  State per layer: the last d_conv - 1 xBC inputs and S. */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); } /* torch's threshold 20 */

int64_t tfm_mamba2_conv_dim(const struct tfm_spec *s)
{
	return s->ssm_d_inner + 2 * s->ssm_n_group * s->ssm_d_state;
}

int64_t tfm_mamba2_scratch_floats(const struct tfm_spec *s, int64_t n_batch)
{
	int64_t di = s->ssm_d_inner, cd = tfm_mamba2_conv_dim(s);
	return n_batch * ((di + cd + s->ssm_n_head) + cd + di);
}

void tfm_mamba2_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *conv, float *S, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t di = s->ssm_d_inner, K = s->ssm_d_conv, N = s->ssm_d_state, nh = s->ssm_n_head;
	int64_t ng = s->ssm_n_group, hd = di / nh, cd = tfm_mamba2_conv_dim(s);
	int64_t pw = di + cd + nh, B = c->n_batch, gs = di / ng;
	float *zx = scr;                  /* [n][pw]: z, xBC, dt */
	float *xc = zx + B * pw;          /* [n][cd]: conv output, SiLU'd: x, B, C */
	float *y = xc + B * cd;           /* [n][di] */
	be->matmul(&c->kx, zx, c->xn, &L->ssm_in, n);
	if (L->ssm_in_b)
		for (int64_t t = 0; t < n; t++)
			be->add(zx + t * pw, zx + t * pw, L->ssm_in_b, pw);
	tfm_ssm_conv(xc, zx + di, pw, conv, L->ssm_conv_w, L->ssm_conv_b, n, cd, K); /* xBC */
	float hi = s->ssm_dt_max > 0 ? (float)s->ssm_dt_max : INFINITY, lo = (float)s->ssm_dt_min;
	for (int64_t t = 0; t < n; t++) {
		const float *x = xc + t * cd, *Bm = x + di, *Cm = Bm + ng * N;
		for (int64_t h = 0; h < nh; h++) {
			float dt = softplus(zx[t * pw + di + cd + h] + L->ssm_dt_b[h]);
			dt = dt < lo ? lo : dt > hi ? hi : dt;
			int64_t g = h / (nh / ng);
			be->mamba2_scan(y + t * di + h * hd, S + h * hd * N, x + h * hd, dt,
					L->ssm_a[h], L->ssm_d[h], Bm + g * N, Cm + g * N, hd, N);
		}
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
