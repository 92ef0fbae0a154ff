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
 * shifted inputs, num, den and max [n_embd] each.
 *
 * RWKV v5 ("Eagle", as rwkv.cpp's rwkv_att_v5 and ggml's rwkv_wkv6) keeps
 * the channel mixing and changes the time mixing: r, k, v (v5.2 also g)
 * from their token-shift lerps, r without a sigmoid; per head of hs
 * channels a matrix state S [hs][hs], with decay w = exp(-exp(time_decay))
 * and bonus u as rwkv.cpp stores them, per key channel i and value channel j:
 *   out_j = sum_i r_i (u_i k_i v_j + S_ij);  S_ij = w_i S_ij + k_i v_j
 * then a group norm per head (ln_x: eps 1e-5 as rwkv.cpp's v5; its v6 and
 * RWKV-LM's v5.2 use 64e-5), v5.2 times silu(gate(xg)), and output(.).
 * State per layer: the two shifted inputs [n_embd], S [n_head][hs][hs]. */
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

/* The WKV step of n_head heads of hs channels: out [n_head * hs], S
 * [n_head][hs key][hs value], r, k, v, w, u [n_head * hs]. */
void tfm_rwkv5_wkv_ref(float *out, float *S, const float *r, const float *k, const float *v,
		       const float *w, const float *u, int64_t n_head, int64_t hs)
{
	for (int64_t h = 0; h < n_head; h++) {
		const float *rh = r + h * hs, *kh = k + h * hs, *vh = v + h * hs;
		float *oh = out + h * hs, *Sh = S + h * hs * hs;
		for (int64_t j = 0; j < hs; j++)
			oh[j] = 0;
		for (int64_t i = 0; i < hs; i++) {
			float ki = kh[i], ri = rh[i], ui = u[h * hs + i], wi = w[h * hs + i];
			float *Si = Sh + i * hs;
			for (int64_t j = 0; j < hs; j++) {
				float kv = ki * vh[j];
				oh[j] += ri * (ui * kv + Si[j]);
				Si[j] = Si[j] * wi + kv;
			}
		}
	}
}

int64_t tfm_rwkv_state_floats(const struct tfm_spec *s)
{
	if (s->rwkv_version == 5)
		return 2 * s->n_embd + s->n_embd * s->rwkv_head_size;
	return 5 * s->n_embd;
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

/* v5's time mixing of xn = ln1(x) [n][d] into o [n][d]; scr [6][B][d] */
static void time_mix5(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n, const float *shift,
		      float *S, float *scr, float *o)
{
	const struct tfm_spec *s = &c->m->spec;
	const struct tfm_backend *be = c->m->be;
	int64_t d = s->n_embd, B = c->n_batch, hs = s->rwkv_head_size, nh = d / hs;
	float *a = scr, *g = a + B * d, *e = g + B * d, *k = e + B * d, *v = k + B * d;
	float *r = v + B * d;
	lerp(a, c->xn, shift, L->mix_k, n, d);
	be->matmul(&c->kx, k, a, &L->rw_k, n);
	lerp(a, c->xn, shift, L->mix_v, n, d);
	be->matmul(&c->kx, v, a, &L->rw_v, n);
	lerp(a, c->xn, shift, L->mix_r, n, d);
	be->matmul(&c->kx, r, a, &L->rw_r, n);
	if (s->rwkv_minor == 2) {
		lerp(a, c->xn, shift, L->mix_g, n, d);
		be->matmul(&c->kx, g, a, &L->rw_g, n);
		for (int64_t i = 0; i < n * d; i++)
			g[i] *= sigm(g[i]);
	}
	for (int64_t t = 0; t < n; t++) {
		tfm_rwkv5_wkv_ref(e + t * d, S, r + t * d, k + t * d, v + t * d, L->rw_decay,
				  L->rw_first, nh, hs);
		for (int64_t h = 0; h < nh; h++)
			be->layernorm(a + t * d + h * hs, e + t * d + h * hs, L->rw_lnx.w + h * hs,
				      L->rw_lnx.b + h * hs, hs, 1e-5f, 0);
	}
	if (s->rwkv_minor == 2)
		for (int64_t i = 0; i < n * d; i++)
			a[i] *= g[i];
	be->matmul(&c->kx, o, a, &L->rw_o, n);
}

/* v4's time mixing of xn = ln1(x) [n][d] into o [n][d]; st the layer's
 * num, den, max [3][d]; scr [6][B][d] */
static void time_mix4(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n, const float *shift,
		      float *st, float *scr, float *o)
{
	const struct tfm_backend *be = c->m->be;
	int64_t d = c->m->spec.n_embd, B = c->n_batch;
	float *num = st, *den = st + d, *mx = st + 2 * d;
	float *a = scr, *e = a + B * d, *k = e + B * d, *v = k + B * d, *r = v + B * d;
	lerp(a, c->xn, shift, L->mix_k, n, d);
	be->matmul(&c->kx, k, a, &L->rw_k, n);
	lerp(a, c->xn, shift, L->mix_v, n, d);
	be->matmul(&c->kx, v, a, &L->rw_v, n);
	lerp(a, c->xn, shift, L->mix_r, n, d);
	be->matmul(&c->kx, r, a, &L->rw_r, n);
	for (int64_t t = 0; t < n; t++) {
		tfm_rwkv4_wkv_ref(e + t * d, num, den, mx, k + t * d, v + t * d, L->rw_decay,
				  L->rw_first, d);
		for (int64_t i = 0; i < d; i++)
			e[t * d + i] *= sigm(r[t * d + i]);
	}
	be->matmul(&c->kx, o, e, &L->rw_o, n);
}

void tfm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0, float *st, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, ff = s->n_ff, B = c->n_batch;
	/* state: the two token shifts, then v4's num, den, max or v5's S */
	float *ashift = st, *fshift = st + d;
	float *a = scr, *b = a + B * d, *r = b + B * d, *o = scr + 6 * B * d;
	float *kf = o + B * d; /* [n][ff] */
	float sc = s->rwkv_rescale > 0 ? ldexpf(1.0f, -(int)(l / s->rwkv_rescale)) : 1.0f;
	int v5 = s->rwkv_version == 5;
	if (pos0 == 0) {
		memset(st, 0, (size_t)tfm_rwkv_state_floats(s) * sizeof(float));
		for (int64_t i = 0; i < d && !v5; i++)
			st[4 * d + i] = -1e38f; /* v4's max */
	}
	/* time mixing over xn = ln1(x) */
	for (int64_t t = 0; t < n; t++)
		be->layernorm(c->xn + t * d, c->x + t * d, L->attn_norm.w, L->attn_norm.b, d,
			      (float)s->norm_eps, 0);
	if (v5)
		time_mix5(c, L, n, ashift, st + 2 * d, scr, o);
	else
		time_mix4(c, L, n, ashift, st + 2 * d, scr, o);
	memcpy(ashift, c->xn + (n - 1) * d, (size_t)d * sizeof(float));
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
	if (s->rwkv_version != 4 && !(s->rwkv_version == 5 && (s->rwkv_minor == 1 ||
								 s->rwkv_minor == 2)))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: RWKV v%d.%d not supported yet (v4, v5.1 "
				  "and v5.2 are)", arch, s->rwkv_version, s->rwkv_minor);
	if (s->rwkv_version == 5 && (s->rwkv_head_size < 1 || s->n_embd % s->rwkv_head_size))
		return tfm_seterr(TFM_E_FORMAT, "%s: RWKV v5 head size %lld does not divide %lld "
				  "channels", arch, (long long)s->rwkv_head_size, (long long)s->n_embd);
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
