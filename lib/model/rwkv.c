/* rwkv.c: RWKV v4, v5, v6 and v7 blocks.  v4 (Peng et al. 2023, as
 * transformers' RwkvBlock and its CPU path rwkv_linear_attention_cpu):
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
 * State per layer: the two shifted inputs [n_embd], S [n_head][hs][hs].
 *
 * RWKV v6 ("Finch", as rwkv.cpp's rwkv_att_v6 / rwkv_ffn_v6 and
 * llama.cpp's rwkv6): with sx = x_{t-1} - x, a data-dependent token shift
 * xxx = x + sx mix_x, m = tanh(xxx mx1) split in five of the rank, then
 * for each of w, k, v, r, g: x_* = x + sx (mix_* + mx2_* m_*); decay
 * w = exp(-exp(time_decay + w2 tanh(w1 x_w))) per token and channel; r, k,
 * v, g = silu(gate(x_g)) as v5.2, the same WKV recurrence with that w and
 * bonus u = time_faaaa, group norm (eps 64e-5), times g, output(.).
 * Channel mixing as v5 but its lerps x + sx mix.  State as v5.
 *
 * RWKV v7 ("Goose", as rwkv.cpp's rwkv_att_v7 / rwkv_ffn_v7): six lerps
 * x + (x_{t-1} - x) mix of r, w, k, v, a, g; r = receptance(xr); decay
 * w = exp(-e^-1/2 sigmoid(w0 + w2 tanh(w1 xw))); k = key(xk); v = value(xv),
 * after the first layer mixed toward the first layer's v by sigmoid(v0 +
 * v2 v1 xv); a = sigmoid(a0 + a2 a1 xa); g = g2 sigmoid(g1 xg); kk = the
 * per-head L2-normalized k k_k; k = k (1 + (a - 1) k_a).  Per head a state
 * S [hs value][hs key], per value channel i:
 *   sa = sum_j -kk_j S_ij;  S_ij = S_ij w_j + v_i k_j + sa kk_j a_j;
 *   out_i = sum_j S_ij r_j
 * then the group norm (eps 64e-5), plus v times the per-head sum of
 * k r r_k, times g, output(.).  Channel mixing: value(relu(key(xk))^2),
 * no receptance.  State per layer as v5.
 *
 * The WKV recurrences run on the backend's pool (be->parallel): v5-v7 a
 * head per thread, v4 blocks of channels.
 *
 * Prefill runs v7's step token by token, not its chunked form.  Over a
 * chunk of L tokens (decays cumulated within it, u_t = S_{t-1} a_t) the
 * chunked form is four L x L score matrices (r and a against k and b),
 * the triangular solve of (I - A_ab) U = A_ak V + Â S^T, and the state's
 * products: about 4 L N^2 + 7.5 L^2 N multiply-adds per head and chunk,
 * against the step's 5 L N^2 (N = hs = 64).  Its matrix products alone
 * (12 heads, 512 tokens, OpenBLAS sgemm on one thread of a 2-core Zen 3
 * EPYC, five runs) took 0.79-1.49x the step kernel's time at L = 16,
 * 0.76-0.95x at L = 32 and 0.98-1.16x at L = 64, before the solve's
 * sequential part and the decay scalings; and the step kernel is 7% of
 * RWKV-7 0.1B-shaped pp512 (perf).  At most about 1% of prefill to win:
 * the chunked form pays where matrix units make products cheap, not here. */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <string.h>

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* v7's widest low-rank projection; v6's five token-shift rows and the
 * widest one beside them */
static int64_t lora_max(const struct tfm_spec *s)
{
	if (s->rwkv_version == 6)
		return 5 * s->rwkv_lora_mix +
		       (s->rwkv_lora_w > s->rwkv_lora_mix ? s->rwkv_lora_w : s->rwkv_lora_mix);
	int64_t r = s->rwkv_lora_w;
	r = s->rwkv_lora_a > r ? s->rwkv_lora_a : r;
	r = s->rwkv_lora_v > r ? s->rwkv_lora_v : r;
	return s->rwkv_lora_g > r ? s->rwkv_lora_g : r;
}

int64_t tfm_rwkv_state_floats(const struct tfm_spec *s)
{
	if (s->rwkv_version >= 5)
		return 2 * s->n_embd + s->n_embd * s->rwkv_head_size;
	return 5 * s->n_embd;
}

/* per token: the time mixing's 6 (v7: 8) rows of n_embd, its output, the
 * channel mixing's key (v7: also the low-rank rows), v7's first value */
int64_t tfm_rwkv_scratch_floats(const struct tfm_spec *s, int64_t n_batch)
{
	int64_t d = s->n_embd, ff = s->n_ff > d ? s->n_ff : d;
	if (s->rwkv_version >= 6)
		return n_batch * (10 * d + (lora_max(s) > ff ? lora_max(s) : ff));
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

/* The WKV recurrences over the batch on the pool: v5 / v6 and v7 by heads
 * (each task its heads' rows of S, token after token, then their group
 * norm), v4 by blocks of WKV_BLOCK channels.  Rows [n][d] unless said. */
#define WKV_BLOCK 16

struct wkv_job {
	const struct tfm_backend *be;
	const struct tfm_layer *L;
	int64_t n, d, hs;
	float eps;                     /* the group norm's */
	float *S;                      /* v5-v7: [nh][hs][hs]; v4: num, den, max [3][d] */
	float *e, *out;                /* the WKV's output; normed (v5-v7) */
	const float *r, *k, *v, *w;    /* v5's w: [d] (w_ld 0) */
	const float *a, *b, *g;        /* v7 */
	int64_t w_ld;
};

static void wkv5_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct wkv_job *j = ctx;
	int64_t d = j->d, hs = j->hs, o = u0 * hs;
	(void)kt, (void)task;
	for (int64_t t = 0; t < j->n; t++) {
		j->be->rwkv5_wkv(j->e + t * d + o, j->S + o * hs, j->r + t * d + o, j->k + t * d + o,
				 j->v + t * d + o, j->w + t * j->w_ld + o, j->L->rw_first + o, u1 - u0,
				 hs);
		for (int64_t h = u0; h < u1; h++)
			j->be->layernorm(j->out + t * d + h * hs, j->e + t * d + h * hs,
					 j->L->rw_lnx.w + h * hs, j->L->rw_lnx.b + h * hs, hs, j->eps, 0);
	}
}

/* v7: the group norm into out, plus v times the head's sum of k r r_k,
 * times g */
static void wkv7_heads(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct wkv_job *j = ctx;
	const struct tfm_layer *L = j->L;
	int64_t d = j->d, hs = j->hs, o = u0 * hs;
	(void)kt, (void)task;
	for (int64_t t = 0; t < j->n; t++) {
		j->be->rwkv7_wkv(j->e + t * d + o, j->S + o * hs, j->r + t * d + o, j->w + t * d + o,
				 j->k + t * d + o, j->v + t * d + o, j->a + t * d + o, j->b + t * d + o,
				 u1 - u0, hs);
		for (int64_t h = u0; h < u1; h++) {
			int64_t o0 = t * d + h * hs;
			j->be->layernorm(j->out + o0, j->e + o0, L->rw_lnx.w + h * hs,
					 L->rw_lnx.b + h * hs, hs, j->eps, 0);
			double sum = 0;
			for (int64_t i = 0; i < hs; i++)
				sum += j->k[o0 + i] * j->r[o0 + i] * L->r_k[h * hs + i];
			for (int64_t i = 0; i < hs; i++)
				j->out[o0 + i] = (j->out[o0 + i] + j->v[o0 + i] * (float)sum) * j->g[o0 + i];
		}
	}
}

/* v4: channels [WKV_BLOCK u0, WKV_BLOCK u1), times sigmoid(r) */
static void wkv4_blocks(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct wkv_job *j = ctx;
	int64_t d = j->d, i0 = u0 * WKV_BLOCK, i1 = u1 * WKV_BLOCK < d ? u1 * WKV_BLOCK : d;
	float *num = j->S, *den = num + d, *mx = den + d;
	(void)kt, (void)task;
	for (int64_t t = 0; t < j->n; t++) {
		j->be->rwkv4_wkv(j->e + t * d + i0, num + i0, den + i0, mx + i0, j->k + t * d + i0,
				 j->v + t * d + i0, j->L->rw_decay + i0, j->L->rw_first + i0, i1 - i0);
		for (int64_t i = t * d + i0; i < t * d + i1; i++)
			j->e[i] *= sigm(j->r[i]);
	}
}

/* dst[t] = x[t] + (prev(t) - x[t]) * mix (v7's form of the lerp) */
static void lerp7(float *dst, const float *x, const float *shift, const float *mix, int64_t n,
		  int64_t d)
{
	for (int64_t t = 0; t < n; t++) {
		const float *p = t ? x + (t - 1) * d : shift;
		for (int64_t i = 0; i < d; i++)
			dst[t * d + i] = x[t * d + i] + (p[i] - x[t * d + i]) * mix[i];
	}
}

/* Elementwise work over tokens on the pool: a stage is a function of
 * tokens [t0, t1) that reads and writes only those tokens' rows (and the
 * previous token's input, which nothing writes meanwhile), doing for each
 * token what it does for it alone, so the split changes no value.  Before,
 * these loops ran on the calling thread while the others waited: RWKV-7
 * 0.1B-shaped, pp512 on two threads, perf gave them a third of its time. */
struct ew {
	const struct tfm_layer *L;
	const struct tfm_backend *be;
	const float *xn, *shift, *mix; /* lerps: into xx from xn and the shift state */
	float *x, *xx, *r, *w, *k, *v, *a, *g, *kk, *lr, *vf, *o;
	const float *nw, *nb;          /* a norm's weight and bias */
	float eps, sc;
	int64_t d, hs, rank;
};

typedef void (*ew_fn)(const struct ew *e, int64_t t0, int64_t t1);

struct ew_run {
	ew_fn f;
	const struct ew *e;
};

static void ew_task(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	const struct ew_run *r = ctx;
	(void)kt, (void)task;
	r->f(r->e, u0, u1);
}

/* f over tokens [0, n) on the pool; per_tok: its cost per token in the
 * matmul's multiply-adds (the pool's threshold) */
static void ew_par(struct tfm_ctx *c, ew_fn f, const struct ew *e, int64_t n, double per_tok)
{
	struct ew_run r = {f, e};
	c->m->be->parallel(&c->kx, ew_task, &r, n, per_tok * (double)n);
}

/* xx = lerp7 of xn with e->mix */
static void ew_lerp7(const struct ew *e, int64_t t0, int64_t t1)
{
	int64_t d = e->d;
	lerp7(e->xx + t0 * d, e->xn + t0 * d, t0 ? e->xn + (t0 - 1) * d : e->shift, e->mix,
	      t1 - t0, d);
}

/* xx = lerp (v4, v5) of xn with e->mix */
static void ew_lerp(const struct ew *e, int64_t t0, int64_t t1)
{
	int64_t d = e->d;
	lerp(e->xx + t0 * d, e->xn + t0 * d, t0 ? e->xn + (t0 - 1) * d : e->shift, e->mix,
	     t1 - t0, d);
}

/* xn = norm(x), e->nw, e->nb */
static void ew_norm(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t t = t0; t < t1; t++)
		e->be->layernorm(e->xx + t * e->d, e->x + t * e->d, e->nw, e->nb, e->d, e->eps, 0);
}

/* x += sc o, then xx = norm(x) */
static void ew_res_norm(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->x[i] += e->sc * e->o[i];
	ew_norm(e, t0, t1);
}

/* lr = tanh(lr) [rank] */
static void ew_tanh(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->rank; i < t1 * e->rank; i++)
		e->lr[i] = tanhf(e->lr[i]);
}

/* lr = sigmoid(lr) [rank] */
static void ew_sigm(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->rank; i < t1 * e->rank; i++)
		e->lr[i] = sigm(e->lr[i]);
}

/* lr = relu(lr)^2 [rank] (the channel mixing's key) */
static void ew_relu2(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->rank; i < t1 * e->rank; i++) {
		float x = e->lr[i] > 0 ? e->lr[i] : 0;
		e->lr[i] = x * x;
	}
}

/* v7: w = exp(-e^-1/2 sigmoid(w + w0)) */
static void ew7_decay(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->w[i] = expf(-0.606531f * sigm(e->w[i] + e->L->w0[i % e->d]));
}

/* v7: v toward the first layer's values by sigmoid(xx + v0) */
static void ew7_vmix(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->v[i] += (e->vf[i] - e->v[i]) * sigm(e->xx[i] + e->L->v0[i % e->d]);
}

/* v7: a = sigmoid(a + a0) */
static void ew7_a(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->a[i] = sigm(e->a[i] + e->L->a0[i % e->d]);
}

/* v7: kk = l2norm(k k_k) per head (eps 1e-12); k = k + (a k k_a - k k_a);
 * the WKV's a = -kk (into xx) and b = kk a (into a) */
static void ew7_kk(const struct ew *e, int64_t t0, int64_t t1)
{
	const struct tfm_layer *L = e->L;
	int64_t d = e->d, hs = e->hs;
	float *kk = e->kk, *k = e->k, *a = e->a;
	for (int64_t t = t0; t < t1; t++)
		for (int64_t h = 0; h < d / hs; h++) {
			int64_t o0 = t * d + h * hs;
			float sq = 0;
			for (int64_t j = 0; j < hs; j++) {
				kk[o0 + j] = k[o0 + j] * L->k_k[h * hs + j];
				sq += kk[o0 + j] * kk[o0 + j];
			}
			float sc = 1.0f / fmaxf(sqrtf(sq), 1e-12f);
			for (int64_t j = 0; j < hs; j++)
				kk[o0 + j] *= sc;
		}
	for (int64_t i = t0 * d; i < t1 * d; i++) {
		float ka = k[i] * L->k_a[i % d];
		k[i] += a[i] * ka - ka;
		e->xx[i] = -kk[i];
		a[i] *= kk[i];
	}
}

/* v6: xx = xn + (prev - xn) (mix + a), a the data-dependent part [n][d] */
static void ew6_mix(const struct ew *e, int64_t t0, int64_t t1)
{
	int64_t d = e->d;
	for (int64_t t = t0; t < t1; t++) {
		const float *p = t ? e->xn + (t - 1) * d : e->shift, *x = e->xn + t * d;
		for (int64_t i = 0; i < d; i++)
			e->xx[t * d + i] = x[i] + (p[i] - x[i]) * (e->mix[i] + e->a[t * d + i]);
	}
}

/* v6: w = exp(-exp(w + w0)) */
static void ew6_decay(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->w[i] = expf(-expf(e->w[i] + e->L->w0[i % e->d]));
}

/* g = silu(g) */
static void ew_silu_g(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->g[i] *= sigm(e->g[i]);
}

/* xx *= g */
static void ew_gate(const struct ew *e, int64_t t0, int64_t t1)
{
	for (int64_t i = t0 * e->d; i < t1 * e->d; i++)
		e->xx[i] *= e->g[i];
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
	struct ew E = {.be = be, .xn = c->xn, .shift = shift, .xx = a, .g = g, .d = d};
	const float *mix[4] = {L->mix_k, L->mix_v, L->mix_r, L->mix_g};
	float *dst[4] = {k, v, r, g};
	const struct tfm_mat *proj[4] = {&L->rw_k, &L->rw_v, &L->rw_r, &L->rw_g};
	for (int j = 0; j < (s->rwkv_minor == 2 ? 4 : 3); j++) {
		E.mix = mix[j];
		ew_par(c, ew_lerp, &E, n, d);
		be->matmul(&c->kx, dst[j], a, proj[j], n);
	}
	if (s->rwkv_minor == 2)
		ew_par(c, ew_silu_g, &E, n, 10.0 * d);
	/* ~0.3 ns per state element and token (mamba.c says the units) */
	struct wkv_job j = {.be = be, .L = L, .n = n, .d = d, .hs = hs, .eps = 1e-5f, .S = S,
			    .e = e, .out = a, .r = r, .k = k, .v = v, .w = L->rw_decay, .w_ld = 0};
	be->parallel(&c->kx, wkv5_heads, &j, nh, 16.0 * (double)n * d * hs);
	if (s->rwkv_minor == 2)
		ew_par(c, ew_gate, &E, n, d);
	be->matmul(&c->kx, o, a, &L->rw_o, n);
}

/* v4's time mixing of xn = ln1(x) [n][d] into o [n][d]; st the layer's
 * num, den, max [3][d]; scr [6][B][d] */
static void time_mix4(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n, const float *shift,
		      float *st, float *scr, float *o)
{
	const struct tfm_backend *be = c->m->be;
	int64_t d = c->m->spec.n_embd, B = c->n_batch;
	float *a = scr, *e = a + B * d, *k = e + B * d, *v = k + B * d, *r = v + B * d;
	struct ew E = {.be = be, .xn = c->xn, .shift = shift, .xx = a, .d = d};
	const float *mix[3] = {L->mix_k, L->mix_v, L->mix_r};
	float *dst[3] = {k, v, r};
	const struct tfm_mat *proj[3] = {&L->rw_k, &L->rw_v, &L->rw_r};
	for (int j = 0; j < 3; j++) {
		E.mix = mix[j];
		ew_par(c, ew_lerp, &E, n, d);
		be->matmul(&c->kx, dst[j], a, proj[j], n);
	}
	/* ~2 ns per channel and token, four exps (mamba.c says the units) */
	struct wkv_job j = {.be = be, .L = L, .n = n, .d = d, .S = st, .e = e, .r = r, .k = k,
			    .v = v};
	be->parallel(&c->kx, wkv4_blocks, &j, (d + WKV_BLOCK - 1) / WKV_BLOCK, 100.0 * (double)n * d);
	be->matmul(&c->kx, o, e, &L->rw_o, n);
}

/* v6's time mixing of xn = ln1(x) [n][d] into o [n][d]: scr [8][B][d], lr
 * [B][lora_max] */
static void time_mix6(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n, const float *shift,
		      float *S, float *scr, float *lr, float *o)
{
	const struct tfm_spec *s = &c->m->spec;
	const struct tfm_backend *be = c->m->be;
	int64_t d = s->n_embd, B = c->n_batch, hs = s->rwkv_head_size, nh = d / hs;
	int64_t rm = s->rwkv_lora_mix;
	float *xx = scr, *m = xx + B * d, *r = m + B * d, *w = r + B * d, *k = w + B * d;
	float *v = k + B * d, *g = v + B * d, *e = g + B * d, *lg = lr + B * 5 * rm;
	float *dst[5] = {w, k, v, r, g};
	const struct tfm_mat *proj[5] = {NULL, &L->rw_k, &L->rw_v, &L->rw_r, &L->rw_g};
	struct ew E = {.L = L, .be = be, .xn = c->xn, .shift = shift, .mix = L->mix_x, .xx = xx,
		       .a = m, .w = w, .g = g, .lr = lr, .d = d, .rank = 5 * rm};
	ew_par(c, ew_lerp7, &E, n, d);
	be->matmul(&c->kx, lr, xx, &L->mx1, n);
	ew_par(c, ew_tanh, &E, n, 10.0 * E.rank);
	for (int j = 0; j < 5; j++) {
		/* m = mx2's j-th {rank, n_embd} times the j-th rank-slice */
		struct tfm_mat w2 = L->mx2;
		w2.dec = NULL;
		w2.data = (const uint8_t *)w2.data + (size_t)(j * d) * w2.row_bytes;
		w2.out = d;
		for (int64_t t = 0; t < n; t++)
			memcpy(lg + t * rm, lr + t * 5 * rm + j * rm, (size_t)rm * sizeof(float));
		be->matmul(&c->kx, m, lg, &w2, n);
		E.mix = L->mix6 + j * d;
		ew_par(c, ew6_mix, &E, n, 2.0 * d);
		if (j) {
			be->matmul(&c->kx, dst[j], xx, proj[j], n);
			continue;
		}
		be->matmul(&c->kx, lg, xx, &L->w1, n);
		struct ew T = E;
		T.lr = lg, T.rank = s->rwkv_lora_w;
		ew_par(c, ew_tanh, &T, n, 10.0 * T.rank);
		be->matmul(&c->kx, w, lg, &L->w2, n);
		ew_par(c, ew6_decay, &E, n, 20.0 * d);
	}
	ew_par(c, ew_silu_g, &E, n, 10.0 * d);
	struct wkv_job j = {.be = be, .L = L, .n = n, .d = d, .hs = hs, .eps = 64e-5f, .S = S,
			    .e = e, .out = xx, .r = r, .k = k, .v = v, .w = w, .w_ld = d};
	be->parallel(&c->kx, wkv5_heads, &j, nh, 16.0 * (double)n * d * hs);
	ew_par(c, ew_gate, &E, n, d);
	be->matmul(&c->kx, o, xx, &L->rw_o, n);
}

/* v7's time mixing of xn = ln1(x) [n][d] into o [n][d]: scr [8][B][d], lr
 * [B][lora_max], vf [B][d] layer 0's values (written by layer 0) */
static void time_mix7(struct tfm_ctx *c, const struct tfm_layer *L, int64_t l, int64_t n,
		      const float *shift, float *S, float *scr, float *lr, float *vf, float *o)
{
	const struct tfm_spec *s = &c->m->spec;
	const struct tfm_backend *be = c->m->be;
	int64_t d = s->n_embd, B = c->n_batch, hs = s->rwkv_head_size, nh = d / hs;
	float *xx = scr, *r = xx + B * d, *w = r + B * d, *k = w + B * d, *v = k + B * d;
	float *a = v + B * d, *g = a + B * d, *kk = g + B * d;
	const float *m = L->mix7; /* r, w, k, v, a, g */
	struct ew e = {.L = L, .be = be, .xn = c->xn, .shift = shift, .mix = m, .xx = xx, .r = r,
		       .w = w, .k = k, .v = v, .a = a, .g = g, .kk = kk, .lr = lr, .vf = vf,
		       .d = d, .hs = hs};
	/* costs per token in multiply-adds: ~1 per lerp element, ~10 per exp */
	ew_par(c, ew_lerp7, &e, n, d);
	be->matmul(&c->kx, r, xx, &L->rw_r, n);
	e.mix = m + d;
	ew_par(c, ew_lerp7, &e, n, d);
	be->matmul(&c->kx, lr, xx, &L->w1, n);
	e.rank = s->rwkv_lora_w;
	ew_par(c, ew_tanh, &e, n, 10.0 * e.rank);
	be->matmul(&c->kx, w, lr, &L->w2, n);
	ew_par(c, ew7_decay, &e, n, 20.0 * d);
	e.mix = m + 2 * d;
	ew_par(c, ew_lerp7, &e, n, d);
	be->matmul(&c->kx, k, xx, &L->rw_k, n);
	e.mix = m + 3 * d;
	ew_par(c, ew_lerp7, &e, n, d);
	be->matmul(&c->kx, v, xx, &L->rw_v, n);
	if (l == 0) {
		memcpy(vf, v, (size_t)(n * d) * sizeof(float));
	} else {
		be->matmul(&c->kx, lr, xx, &L->v1, n);
		be->matmul(&c->kx, xx, lr, &L->v2, n);
		ew_par(c, ew7_vmix, &e, n, 10.0 * d);
	}
	e.mix = m + 4 * d;
	ew_par(c, ew_lerp7, &e, n, d);
	be->matmul(&c->kx, lr, xx, &L->a1, n);
	be->matmul(&c->kx, a, lr, &L->a2, n);
	ew_par(c, ew7_a, &e, n, 10.0 * d);
	e.mix = m + 5 * d;
	ew_par(c, ew_lerp7, &e, n, d);
	be->matmul(&c->kx, lr, xx, &L->g1, n);
	e.rank = s->rwkv_lora_g;
	ew_par(c, ew_sigm, &e, n, 10.0 * e.rank);
	be->matmul(&c->kx, g, lr, &L->g2, n);
	ew_par(c, ew7_kk, &e, n, 5.0 * d);
	/* the WKV into kk, then the group norm etc. into w (each task reads
	 * its heads' part of a token's w before it writes it); ~0.4 ns per
	 * state element and token (mamba.c says the units) */
	struct wkv_job j = {.be = be, .L = L, .n = n, .d = d, .hs = hs, .eps = 64e-5f, .S = S,
			    .e = kk, .out = w, .r = r, .k = k, .v = v, .w = w, .a = xx, .b = a,
			    .g = g};
	be->parallel(&c->kx, wkv7_heads, &j, nh, 20.0 * (double)n * d * hs);
	be->matmul(&c->kx, o, w, &L->rw_o, n);
}

void tfm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0, float *st, float *scr)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, ff = s->n_ff, B = c->n_batch;
	/* state: the two token shifts, then v4's num, den, max or v5's and
	 * v7's S; scratch (tfm_rwkv_scratch_floats): the time mixing's rows,
	 * o, kf (v7: also its low-rank rows), v7's first values vf */
	int v = s->rwkv_version;
	float *ashift = st, *fshift = st + d;
	float *a = scr, *b = a + B * d, *r = b + B * d, *o = scr + (v >= 6 ? 8 : 6) * B * d;
	float *kf = o + B * d; /* [n][ff] */
	float *vf = v == 7 ? kf + B * (lora_max(s) > ff ? lora_max(s) : ff) : NULL;
	float sc = s->rwkv_rescale > 0 ? ldexpf(1.0f, -(int)(l / s->rwkv_rescale)) : 1.0f;
	if (pos0 == 0) {
		memset(st, 0, (size_t)tfm_rwkv_state_floats(s) * sizeof(float));
		for (int64_t i = 0; i < d && v == 4; i++)
			st[4 * d + i] = -1e38f; /* v4's max */
	}
	/* time mixing over xn = ln1(x) */
	struct ew e = {.L = L, .be = be, .x = c->x, .xx = c->xn, .xn = c->xn, .nw = L->attn_norm.w,
		       .nb = L->attn_norm.b, .eps = (float)s->norm_eps, .sc = sc, .o = o, .d = d,
		       .rank = ff};
	ew_par(c, ew_norm, &e, n, 4.0 * d);
	if (v == 7)
		time_mix7(c, L, l, n, ashift, st + 2 * d, scr, kf, vf, o);
	else if (v == 6)
		time_mix6(c, L, n, ashift, st + 2 * d, scr, kf, o);
	else if (v == 5)
		time_mix5(c, L, n, ashift, st + 2 * d, scr, o);
	else
		time_mix4(c, L, n, ashift, st + 2 * d, scr, o);
	memcpy(ashift, c->xn + (n - 1) * d, (size_t)d * sizeof(float));
	/* x += sc o; channel mixing over xn = ln2(x) */
	e.nw = L->ffn_norm.w, e.nb = L->ffn_norm.b;
	ew_par(c, ew_res_norm, &e, n, 5.0 * d);
	e.shift = fshift, e.xx = a, e.mix = L->cmix_k;
	ew_par(c, v >= 6 ? ew_lerp7 : ew_lerp, &e, n, d);
	if (v < 7) {
		e.xx = b, e.mix = L->cmix_r;
		ew_par(c, v == 6 ? ew_lerp7 : ew_lerp, &e, n, d);
	}
	memcpy(fshift, c->xn + (n - 1) * d, (size_t)d * sizeof(float));
	be->matmul(&c->kx, kf, a, &L->cm_k, n);
	e.lr = kf;
	ew_par(c, ew_relu2, &e, n, (double)ff);
	be->matmul(&c->kx, o, kf, &L->cm_v, n);
	if (v == 7) {
		for (int64_t i = 0; i < n * d; i++)
			c->x[i] += sc * o[i];
	} else {
		be->matmul(&c->kx, r, b, &L->cm_r, n);
		for (int64_t i = 0; i < n * d; i++)
			c->x[i] += sc * sigm(r[i]) * o[i];
	}
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
	int v = s->rwkv_version;
	if (v != 4 && !(v == 5 && (s->rwkv_minor == 1 || s->rwkv_minor == 2)) &&
	    !((v == 6 || v == 7) && s->rwkv_minor == 0))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: RWKV v%d.%d not supported yet (v4, v5.1, "
				  "v5.2, v6 and v7 are)", arch, v, s->rwkv_minor);
	if (v >= 5 && (s->rwkv_head_size < 1 || s->n_embd % s->rwkv_head_size))
		return tfm_seterr(TFM_E_FORMAT, "%s: RWKV v%d head size %lld does not divide %lld "
				  "channels", arch, v, (long long)s->rwkv_head_size, (long long)s->n_embd);
	if (v == 7 && (s->rwkv_lora_w < 1 || s->rwkv_lora_a < 1 || s->rwkv_lora_g < 1 ||
		       (s->n_layer > 1 && s->rwkv_lora_v < 1)))
		return tfm_seterr(TFM_E_FORMAT, "%s: RWKV v7 low-rank sizes %lld, %lld, %lld, %lld",
				  arch, (long long)s->rwkv_lora_w, (long long)s->rwkv_lora_a,
				  (long long)s->rwkv_lora_v, (long long)s->rwkv_lora_g);
	if (v == 6 && (s->rwkv_lora_w < 1 || s->rwkv_lora_mix < 1))
		return tfm_seterr(TFM_E_FORMAT, "%s: RWKV v6 low-rank sizes %lld (decay), %lld "
				  "(token shift)", arch, (long long)s->rwkv_lora_w,
				  (long long)s->rwkv_lora_mix);
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
