/* xlstm.c: the mLSTM layer of xLSTM (Beck et al. 2024, as transformers'
 * xLSTMLayer with weight_mode "single"): from the normed input x
 *   q, k [qk_dim], v, o [v_dim] (linear), i, f [n_head] (linear with bias,
 *   each soft-capped: cap tanh(. / cap))
 * then per head, with the state C [dqk][dv], n [dqk], m (zero at the start):
 *   m' = max(logsigmoid(f) + m, i)
 *   C' = exp(logsigmoid(f) + m - m') C + exp(i - m') k v^T   (n' likewise, k)
 *   h  = (q / sqrt(dqk)) C' / (max(|(q / sqrt(dqk)) . n'|, exp(-m')) + eps)
 * the per-head LayerNorm of h (no bias) times its weight, times sigmoid(o),
 * and out_proj.  transformers' chunkwise kernel sums the same terms in
 * another order (its m is the same running maximum); tfm runs the step
 * token by token in prefill and decode, the heads shared out over the
 * backend's pool (be->parallel). */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

int64_t tfm_mlstm_state_floats(const struct tfm_spec *s)
{
	int64_t nh = s->ssm_n_head;
	if (nh < 1)
		return 0;
	int64_t dqk = s->xlstm_qk_dim / nh, dv = s->xlstm_v_dim / nh;
	return nh * (dqk * dv + dqk + 1);
}

int64_t tfm_mlstm_scratch_floats(const struct tfm_spec *s, int64_t n_batch)
{
	/* q, k [qk], v, o, h [v], i, f [n_head] per token */
	return n_batch * (2 * s->xlstm_qk_dim + 3 * s->xlstm_v_dim + 2 * s->ssm_n_head);
}

static float softcap(float x, float cap) { return cap > 0 ? cap * tanhf(x / cap) : x; }
static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The cells of heads u0 .. u1 - 1 over the batch, token after token, each
 * step followed by the head's LayerNorm (biased variance) times its weight. */
struct cell_job {
	const struct tfm_backend *be;
	const struct tfm_layer *L;
	const struct tfm_spec *s;
	int64_t n;
	const float *q, *k, *v;        /* [n][qk], [n][qk], [n][v_dim] */
	const float *ig, *fg;          /* [n][n_head] */
	float *C, *nv, *mx, *hb;       /* the state (see tfm_mlstm_mix); [n][v_dim] */
};

static void cell_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct cell_job *j = ctx;
	const struct tfm_spec *s = j->s;
	const struct tfm_layer *L = j->L;
	int64_t nh = s->ssm_n_head, qk = s->xlstm_qk_dim, vd = s->xlstm_v_dim;
	int64_t dqk = qk / nh, dv = vd / nh;
	float cap = s->xlstm_gate_cap, eps = (float)s->xlstm_eps, neps = (float)s->norm_eps;
	(void)kt, (void)task;
	for (int64_t t = 0; t < j->n; t++)
		for (int64_t h = u0; h < u1; h++) {
			float i_ = softcap(j->ig[t * nh + h] + L->ml_ig_b[h], cap);
			float f_ = softcap(j->fg[t * nh + h] + L->ml_fg_b[h], cap);
			float *y = j->hb + t * vd + h * dv;
			j->be->mlstm_step(y, j->C + h * dqk * dv, j->nv + h * dqk, j->mx + h,
					  j->q + t * qk + h * dqk, j->k + t * qk + h * dqk,
					  j->v + t * vd + h * dv, i_, f_, dqk, dv, eps);
			double mean = 0, var = 0;
			for (int64_t i = 0; i < dv; i++)
				mean += y[i];
			mean /= (double)dv;
			for (int64_t i = 0; i < dv; i++)
				var += ((double)y[i] - mean) * ((double)y[i] - mean);
			float r = 1.0f / sqrtf((float)(var / (double)dv) + neps);
			for (int64_t i = 0; i < dv; i++)
				y[i] = ((y[i] - (float)mean) * r) * L->ml_norm_w[h * dv + i];
		}
}

void tfm_mlstm_mix(struct tfm_ctx *c, int64_t l, int64_t n, float *st, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t nh = s->ssm_n_head, qk = s->xlstm_qk_dim, vd = s->xlstm_v_dim, B = c->n_batch;
	int64_t dqk = qk / nh, dv = vd / nh;
	float *q = scr, *k = q + B * qk;       /* [n][qk] each */
	float *v = k + B * qk, *o = v + B * vd; /* [n][v_dim]: values, output gate */
	float *hb = o + B * vd;                 /* [n][v_dim]: heads' outputs */
	float *ig = hb + B * vd, *fg = ig + B * nh; /* [n][n_head] gate pre-activations */
	float *C = st, *nv = C + nh * dqk * dv; /* [nh][dqk][dv], [nh][dqk] */
	float *mx = nv + nh * dqk;              /* [nh] */
	be->matmul(&c->kx, q, c->xn, &L->ml_q, n);
	be->matmul(&c->kx, k, c->xn, &L->ml_k, n);
	be->matmul(&c->kx, v, c->xn, &L->ml_v, n);
	be->matmul(&c->kx, o, c->xn, &L->ml_o, n);
	be->matmul(&c->kx, ig, c->xn, &L->ml_ig, n);
	be->matmul(&c->kx, fg, c->xn, &L->ml_fg, n);
	/* ~0.3 ns per state element and token (mamba.c says the units) */
	struct cell_job j = {.be = be, .L = L, .s = s, .n = n, .q = q, .k = k, .v = v, .ig = ig,
			     .fg = fg, .C = C, .nv = nv, .mx = mx, .hb = hb};
	be->parallel(&c->kx, cell_heads, &j, nh, 16.0 * (double)n * nh * dqk * dv);
	for (int64_t i = 0; i < n * vd; i++)
		hb[i] *= sigmoid(o[i]);
	be->matmul(&c->kx, c->h, hb, &L->ml_out, n);
}

/* A model of mLSTM blocks: x += mlstm(rms(x)); x += ffn(rms(x)) (gated
 * SiLU), an RMS out_norm, the head, a final soft cap. */
int tfm_xlstm_check_spec(const struct tfm_spec *s)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	for (int64_t l = 0; l < s->n_layer; l++)
		if (s->layer_kind[l] != TFM_LAYER_MLSTM)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: layer %lld: mLSTM layers beside other "
					  "kinds not supported", arch, (long long)l);
	int64_t nh = s->ssm_n_head;
	if (s->n_embd < 1 || s->n_vocab < 1 || nh < 1 || s->xlstm_qk_dim < 1 ||
	    s->xlstm_v_dim < 1 || s->xlstm_qk_dim % nh || s->xlstm_v_dim % nh || s->n_ff < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: bad mLSTM sizes (embd %lld, vocab %lld, %lld "
				  "heads, qk %lld, v %lld, ffn %lld)", arch, (long long)s->n_embd,
				  (long long)s->n_vocab, (long long)nh, (long long)s->xlstm_qk_dim,
				  (long long)s->xlstm_v_dim, (long long)s->n_ff);
	if (s->family != TFM_FAMILY_DECODER || s->head != TFM_HEAD_LM || s->pooling != TFM_POOL_NONE)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: mLSTM only as a decoder with an LM head",
				  arch);
	if (s->norm != TFM_NORM_RMS || s->norm_place != TFM_NORM_PRE || s->norm_plus_one ||
	    s->norm_bias || s->norm_no_affine || s->parallel_residual || s->embd_norm ||
	    s->pos_embd != TFM_POS_EMBD_NONE || s->n_embd_io || !s->gated ||
	    s->act != TFM_ACT_SILU || s->ffn_bias || s->head_bias ||
	    (s->embd_scale != 0 && s->embd_scale != 1) ||
	    (s->residual_scale != 0 && s->residual_scale != 1) ||
	    (s->head_scale != 0 && s->head_scale != 1) || s->n_expert > 0 || s->ssm_bias)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: mLSTM blocks run pre-RMSNorm, a plain "
				  "residual and a gated SiLU FFN without biases; other norms, "
				  "scales, biases or experts not supported", arch);
	return TFM_OK;
}
