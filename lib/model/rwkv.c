/* rwkv.c: an RWKV v4 block (Peng et al. 2023, as transformers' RwkvBlock
 * and its CPU path rwkv_linear_attention_cpu):
 *   x += time_mix(ln1(x)); x += channel_mix(ln2(x))
 * time mixing: each of k, v, r reads x_t * mix + x_{t-1} * (1 - mix) (token
 * shift), k = key(.), v = value(.), r = sigmoid(receptance(.)), and per
 * channel the WKV recurrence with decay w = -exp(time_decay) and bonus
 * u = time_first, kept as (num, den, max) for range:
 *   q = max(p, u + k); wkv = (e^(p-q) num + e^(u+k-q) v) / (e^(p-q) den + e^(u+k-q))
 *   q' = max(p + w, k); num = e^(p+w-q') num + e^(k-q') v; den likewise; p = q'
 * out = output(r * wkv).  Channel mixing: k = relu(key(.))^2, out =
 * sigmoid(receptance(.)) * value(k).  With rescale_every R, transformers
 * at inference divides layer l's output and value weights by 2^(l / R) and
 * the hidden state by 2 after every R-th layer; the same here on the
 * outputs (powers of two: the same numbers).  State per layer: the two
 * shifted inputs, num, den and max [n_embd] each. */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

void tfm_rwkv4_wkv_ref(float *out, float *num, float *den, float *mx, const float *k,
		       const float *v, const float *w, const float *u, int64_t d)
{
	for (int64_t i = 0; i < d; i++) {
		float q = fmaxf(mx[i], u[i] + k[i]);
		float e1 = expf(mx[i] - q), e2 = expf(u[i] + k[i] - q);
		out[i] = (e1 * num[i] + e2 * v[i]) / (e1 * den[i] + e2);
		float q2 = fmaxf(mx[i] + w[i], k[i]);
		e1 = expf(mx[i] + w[i] - q2), e2 = expf(k[i] - q2);
		num[i] = e1 * num[i] + e2 * v[i];
		den[i] = e1 * den[i] + e2;
		mx[i] = q2;
	}
}

int64_t tfm_rwkv_scratch_floats(const struct tfm_spec *s, int64_t n_batch)
{
	int64_t d = s->n_embd, ff = s->n_ff > d ? s->n_ff : d;
	return n_batch * (7 * d + ff);
}

/* dst[t] = x[t] * mix + prev(t) * (1 - mix), prev(0) the shift state */
static void lerp(float *dst, const float *x, const float *shift, const float *mix, int64_t n,
		 int64_t d)
{
	for (int64_t t = 0; t < n; t++) {
		const float *p = t ? x + (t - 1) * d : shift;
		for (int64_t i = 0; i < d; i++)
			dst[t * d + i] = x[t * d + i] * mix[i] + p[i] * (1 - mix[i]);
	}
}

void tfm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0, float *st, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, ff = s->n_ff, B = c->n_batch;
	float *ashift = st, *fshift = st + d, *num = st + 2 * d, *den = st + 3 * d, *mx = st + 4 * d;
	float *a = scr, *b = a + B * d, *e = b + B * d, *k = e + B * d, *v = k + B * d;
	float *r = v + B * d, *o = r + B * d, *kf = o + B * d; /* kf: [n][ff] */
	float sc = s->rwkv_rescale > 0 ? ldexpf(1.0f, -(int)(l / s->rwkv_rescale)) : 1.0f;
	if (pos0 == 0) {
		memset(st, 0, (size_t)(4 * d) * sizeof(float));
		for (int64_t i = 0; i < d; i++)
			mx[i] = -1e38f;
	}
	/* time mixing over xn = ln1(x) */
	for (int64_t t = 0; t < n; t++)
		be->layernorm(c->xn + t * d, c->x + t * d, L->attn_norm.w, L->attn_norm.b, d,
			      (float)s->norm_eps, 0);
	lerp(a, c->xn, ashift, L->mix_k, n, d);
	be->matmul(&c->kx, k, a, &L->rw_k, n);
	lerp(a, c->xn, ashift, L->mix_v, n, d);
	be->matmul(&c->kx, v, a, &L->rw_v, n);
	lerp(a, c->xn, ashift, L->mix_r, n, d);
	be->matmul(&c->kx, r, a, &L->rw_r, n);
	memcpy(ashift, c->xn + (n - 1) * d, (size_t)d * sizeof(float));
	for (int64_t t = 0; t < n; t++) {
		tfm_rwkv4_wkv_ref(e + t * d, num, den, mx, k + t * d, v + t * d, L->rw_decay,
				  L->rw_first, d);
		for (int64_t i = 0; i < d; i++)
			e[t * d + i] *= sigm(r[t * d + i]);
	}
	be->matmul(&c->kx, o, e, &L->rw_o, n);
	for (int64_t i = 0; i < n * d; i++)
		c->x[i] += sc * o[i];
	/* channel mixing over ln2(x) */
	for (int64_t t = 0; t < n; t++)
		be->layernorm(c->xn + t * d, c->x + t * d, L->ffn_norm.w, L->ffn_norm.b, d,
			      (float)s->norm_eps, 0);
	lerp(a, c->xn, fshift, L->cmix_k, n, d);
	lerp(b, c->xn, fshift, L->cmix_r, n, d);
	memcpy(fshift, c->xn + (n - 1) * d, (size_t)d * sizeof(float));
	be->matmul(&c->kx, kf, a, &L->cm_k, n);
	for (int64_t i = 0; i < n * ff; i++) {
		float x = kf[i] > 0 ? kf[i] : 0;
		kf[i] = x * x;
	}
	be->matmul(&c->kx, o, kf, &L->cm_v, n);
	be->matmul(&c->kx, r, b, &L->cm_r, n);
	for (int64_t i = 0; i < n * d; i++)
		c->x[i] += sc * sigm(r[i]) * o[i];
	if (s->rwkv_rescale > 0 && (l + 1) % s->rwkv_rescale == 0)
		for (int64_t i = 0; i < n * d; i++)
			c->x[i] *= 0.5f;
}

int tfm_rwkv_check_spec(const struct tfm_spec *s)
{
	const char *arch = s->arch[0] ? s->arch : "rwkv";
	for (int64_t l = 0; l < s->n_layer; l++)
		if (s->layer_kind[l] != TFM_LAYER_RWKV)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: layer %lld: rwkv mixed with other "
					  "layers not supported yet", arch, (long long)l);
	if (s->rwkv_version != 4)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: RWKV v%d not supported yet (v4)", arch,
				  s->rwkv_version);
	if (s->n_embd < 1 || s->n_vocab < 1 || s->n_ff < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: bad rwkv sizes (embd %lld, vocab %lld, ffn %lld)",
				  arch, (long long)s->n_embd, (long long)s->n_vocab, (long long)s->n_ff);
	if (s->family != TFM_FAMILY_DECODER || s->head != TFM_HEAD_LM || s->norm != TFM_NORM_LAYER ||
	    !s->norm_bias || !s->embd_norm || !s->final_norm || s->pos_embd != TFM_POS_EMBD_NONE ||
	    s->n_embd_io || s->n_expert > 0 || s->final_softcap > 0 ||
	    (s->embd_scale != 0 && s->embd_scale != 1) || (s->head_scale != 0 && s->head_scale != 1))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: rwkv blocks run LayerNorm (with bias) after "
				  "a LayerNorm of the embeddings and before the head; other norms, "
				  "positions, scales or experts not supported", arch);
	return TFM_OK;
}
