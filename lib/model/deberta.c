/* deberta.c: disentangled self-attention (DeBERTa, He et al. 2021; as
 * transformers' DisentangledSelfAttention of deberta-v2 / v3 and of v1,
 * whose fused in_proj the loader splits), the attention mixer of layers
 * whose spec says pos_attn deberta, and DeBERTa-v2's ConvLayer.  The
 * scale is the spec's (1 / sqrt(head_dim (1 + c2p + p2c)); v1 counts
 * every pos_att_type entry).  Bidirectional, one
 * whole sequence per call, no KV cache.  For query q and key k, with the
 * relative position r = rp(q - k) (log-bucketed when rel.buckets > 0) and
 * the row index i(r) = clamp(r + span, 0, 2 span - 1) of the relative
 * embeddings P (rel_embd, normed when rel.norm):
 *   s[q][k] = (Q_q . K_k + [c2p] Q_q . PK[i(rp(q - k))]
 *              + [p2c] K_k . PQ[i(-rp(k - q))]) * scale
 * PK = P Wk' + bk', PQ = P Wq' + bq' (the content projections with
 * rel.share_key, else attn_pos_k / attn_pos_q), per head; softmax over k;
 * out = sum_k p V_k.  PK and PQ are computed once per layer and call, for
 * the rows the sequence reaches only; the scores of a head are three
 * matmuls (Q K^T, Q PK^T, K PQ^T) and gathers, not a dot product per pair
 * and position. */
#include "model/model-impl.h"
#include "model/deberta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t tfm_deberta_rel_pos(const struct tfm_spec *s, int64_t r)
{
	int64_t mid = s->rel_buckets / 2, a = r < 0 ? -r : r;
	if (s->rel_buckets <= 0 || a <= mid)
		return r;
	/* make_log_bucket_position in float32, as torch computes it: the
	 * ratio's log over log((max - 1) / mid) (a double made float), times
	 * mid - 1, rounded up, plus mid */
	float den = logf((float)((double)(s->rel_max_pos - 1) / (double)mid));
	float lp = ceilf(logf((float)a / (float)mid) / den * (float)(mid - 1)) + (float)mid;
	return r < 0 ? -(int64_t)lp : (int64_t)lp;
}

/* idx[d + n - 1] for d = q - k in (-n, n): the c2p row of (q, k); p2c
 * likewise for d = k - q (the row of -rp(k - q)) */
static void rel_index(const struct tfm_spec *s, int64_t n, int32_t *c2p, int32_t *p2c)
{
	int64_t span = s->rel_span;
	for (int64_t d = -(n - 1); d < n; d++) {
		int64_t r = tfm_deberta_rel_pos(s, d), i = r + span, j = -r + span;
		c2p[d + n - 1] = (int32_t)(i < 0 ? 0 : i > 2 * span - 1 ? 2 * span - 1 : i);
		p2c[d + n - 1] = (int32_t)(j < 0 ? 0 : j > 2 * span - 1 ? 2 * span - 1 : j);
	}
}

void tfm_deberta_attn_ref(float *out, const float *q, const float *k, const float *v,
			  const float *pk, const float *pq, const int32_t *c2p,
			  const int32_t *p2c, int64_t n, int64_t nh, int64_t hd, float scale)
{
	int64_t w = nh * hd;
	float *p = malloc((size_t)n * sizeof *p);
	if (!p)
		return;
	for (int64_t h = 0; h < nh; h++)
		for (int64_t i = 0; i < n; i++) {
			const float *qi = q + i * w + h * hd;
			for (int64_t j = 0; j < n; j++) {
				const float *kj = k + j * w + h * hd;
				double a = 0;
				for (int64_t e = 0; e < hd; e++)
					a += (double)qi[e] * kj[e];
				if (pk) {
					const float *r = pk + (int64_t)c2p[i - j + n - 1] * w + h * hd;
					for (int64_t e = 0; e < hd; e++)
						a += (double)qi[e] * r[e];
				}
				if (pq) {
					const float *r = pq + (int64_t)p2c[j - i + n - 1] * w + h * hd;
					for (int64_t e = 0; e < hd; e++)
						a += (double)kj[e] * r[e];
				}
				p[j] = (float)(a * scale);
			}
			float mx = -INFINITY;
			for (int64_t j = 0; j < n; j++)
				mx = p[j] > mx ? p[j] : mx;
			double sum = 0;
			for (int64_t j = 0; j < n; j++)
				sum += p[j] = expf(p[j] - mx);
			float *o = out + i * w + h * hd;
			for (int64_t e = 0; e < hd; e++) {
				double a = 0;
				for (int64_t j = 0; j < n; j++)
					a += (double)p[j] * v[j * w + h * hd + e];
				o[e] = (float)(a / sum);
			}
		}
	free(p);
}

/* The scratch of one layer call, n tokens, R position rows (deberta.h). */
static int64_t scratch_floats(const struct tfm_spec *s, int64_t n)
{
	int64_t hd = s->head_dim, qd = s->n_head * hd, R = 2 * s->rel_span;
	if (R > 2 * n)
		R = 2 * n; /* rows reached: at most 2n - 1 distinct indices */
	return 2 * R * qd     /* pk pq */
	       + 2 * (2 * n)  /* c2p p2c indices */
	       + 4 * n * hd   /* qh kh vt oh */
	       + 2 * R * hd   /* pkh pqh */
	       + n * n        /* scores */
	       + 2 * n * R;   /* c2p, p2c scores */
}

int tfm_deberta_ctx_new(struct tfm_ctx *c)
{
	const struct tfm_spec *s = &c->m->spec;
	if (s->conv_kernel > 0) { /* the embeddings' output, the conv's out, two slices */
		int64_t cf = 4 * c->n_batch * s->n_embd;
		int st = tfm_mem_check((double)cf * sizeof(float), "DeBERTa ConvLayer scratch");
		if (st)
			return st;
		if (!(c->conv = tfm_amalloc((size_t)cf * sizeof(float))))
			return tfm_seterr(TFM_E_NOMEM, "DeBERTa ConvLayer scratch");
	}
	if (s->pos_attn != TFM_POS_DEBERTA)
		return TFM_OK;
	int64_t total = scratch_floats(s, c->n_batch);
	int st = tfm_mem_check((double)total * sizeof(float), "DeBERTa attention scratch of %lld "
			       "tokens", (long long)c->n_batch);
	if (st)
		return st;
	c->rel = tfm_amalloc((size_t)total * sizeof(float));
	if (!c->rel)
		return tfm_seterr(TFM_E_NOMEM, "DeBERTa attention scratch of %lld tokens",
				  (long long)c->n_batch);
	return TFM_OK;
}

void tfm_deberta_ctx_free(struct tfm_ctx *c)
{
	tfm_afree(c->rel);
	tfm_afree(c->conv);
	c->rel = c->conv = NULL;
}

/* y[rows][in] as a weight matrix {in, rows} (f32, not owned) */
static struct tfm_mat f32_mat(const float *y, int64_t in, int64_t rows)
{
	return (struct tfm_mat){.data = y, .type = TFM_TYPE_F32, .in = in, .out = rows,
				.row_bytes = (size_t)in * sizeof(float)};
}

/* rows [r0, r0 + nr) of the position projections: dst[nr][qd] = P W^T + b */
static void pos_proj(struct tfm_ctx *c, float *dst, const struct tfm_mat *w, const float *b,
		     int64_t r0, int64_t nr)
{
	struct tfm_model *m = c->m;
	int64_t d = m->spec.n_embd;
	m->be->matmul(&c->kx, dst, m->rel_emb + r0 * d, w, nr);
	if (b)
		for (int64_t t = 0; t < nr; t++)
			m->be->add(dst + t * w->out, dst + t * w->out, b, w->out);
}

/* The scores of one head, rows i = task, task + n_tasks, ...: content
 * scores plus the gathered c2p and p2c terms, scaled, then softmax. */
struct rows_job {
	const struct tfm_backend *be;
	float *sc;                   /* [n][n] content scores, made probabilities */
	const float *cs, *ps;        /* [n][nr] c2p and p2c products, or NULL */
	const int32_t *c2p, *p2c;    /* [2n - 1] rows of each relative position */
	int64_t n, nr, lo;
	float scale;
};

static void rows_task(void *ctx, int task, int n_tasks)
{
	const struct rows_job *j = ctx;
	int64_t n = j->n, nr = j->nr, lo = j->lo;
	for (int64_t i = task; i < n; i += n_tasks) {
		float *row = j->sc + i * n;
		for (int64_t k = 0; k < n; k++) {
			float a = row[k];
			if (j->cs)
				a += j->cs[i * nr + j->c2p[i - k + n - 1] - lo];
			if (j->ps)
				a += j->ps[k * nr + j->p2c[k - i + n - 1] - lo];
			row[k] = a * j->scale;
		}
		j->be->softmax(row, n);
	}
}

void tfm_deberta_attention(struct tfm_ctx *c, int64_t l, int64_t n)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	struct tfm_layer *L = &m->layers[l];
	int64_t nh = s->n_head, hd = m->head_dim, qd = m->q_dim;
	int64_t R = 2 * s->rel_span < 2 * n ? 2 * s->rel_span : 2 * n;
	float scale = m->attn_scale; /* 1 / sqrt(head_dim (1 + c2p + p2c)) */
	be->matmul(&c->kx, c->q, c->xn, &L->wq, n);
	be->matmul(&c->kx, c->k, c->xn, &L->wk, n);
	be->matmul(&c->kx, c->v, c->xn, &L->wv, n);
	for (int64_t t = 0; t < n; t++) {
		if (L->bq)
			be->add(c->q + t * qd, c->q + t * qd, L->bq, qd);
		if (L->bk)
			be->add(c->k + t * qd, c->k + t * qd, L->bk, qd);
		if (L->bv)
			be->add(c->v + t * qd, c->v + t * qd, L->bv, qd);
	}
	float *pk = c->rel, *pq = pk + R * qd;
	int32_t *c2p = (int32_t *)(pq + R * qd), *p2c = c2p + 2 * n;
	float *qh = (float *)(p2c + 2 * n), *kh = qh + n * hd, *vt = kh + n * hd, *oh = vt + n * hd;
	float *pkh = oh + n * hd, *pqh = pkh + R * hd, *sc = pqh + R * hd, *cs = sc + n * n;
	float *ps = cs + n * R;
	rel_index(s, n, c2p, p2c);
	/* the rows the sequence reaches, [lo, hi] (at most 2n - 1 of them) */
	int64_t lo = 2 * s->rel_span, hi = 0;
	for (int64_t i = 0; i < 2 * n - 1; i++) {
		int64_t a = c2p[i], b = p2c[i];
		lo = a < lo ? a : lo, lo = b < lo ? b : lo;
		hi = a > hi ? a : hi, hi = b > hi ? b : hi;
	}
	int64_t nr = hi - lo + 1; /* <= R: at most 2n - 1 distinct rows */
	if (s->rel_c2p)
		pos_proj(c, pk, s->rel_share_key ? &L->wk : &L->pos_k,
			 s->rel_share_key ? L->bk : L->pos_k_b, lo, nr);
	if (s->rel_p2c)
		pos_proj(c, pq, s->rel_share_key ? &L->wq : &L->pos_q,
			 s->rel_share_key ? L->bq : L->pos_q_b, lo, nr);
	for (int64_t h = 0; h < nh; h++) {
		for (int64_t t = 0; t < n; t++) {
			memcpy(qh + t * hd, c->q + t * qd + h * hd, (size_t)hd * sizeof(float));
			memcpy(kh + t * hd, c->k + t * qd + h * hd, (size_t)hd * sizeof(float));
			for (int64_t e = 0; e < hd; e++)
				vt[e * n + t] = c->v[t * qd + h * hd + e];
		}
		struct tfm_mat km = f32_mat(kh, hd, n), vm = f32_mat(vt, n, hd);
		be->matmul(&c->kx, sc, qh, &km, n); /* sc[q][k] = Q_q . K_k */
		if (s->rel_c2p) { /* cs[q][r] = Q_q . PK_r */
			for (int64_t r = 0; r < nr; r++)
				memcpy(pkh + r * hd, pk + r * qd + h * hd, (size_t)hd * sizeof(float));
			struct tfm_mat pm = f32_mat(pkh, hd, nr);
			be->matmul(&c->kx, cs, qh, &pm, n);
		}
		if (s->rel_p2c) { /* ps[k][r] = K_k . PQ_r */
			for (int64_t r = 0; r < nr; r++)
				memcpy(pqh + r * hd, pq + r * qd + h * hd, (size_t)hd * sizeof(float));
			struct tfm_mat pm = f32_mat(pqh, hd, nr);
			be->matmul(&c->kx, ps, kh, &pm, n);
		}
		struct rows_job rj = {.be = be, .sc = sc, .cs = s->rel_c2p ? cs : NULL,
				      .ps = s->rel_p2c ? ps : NULL, .c2p = c2p, .p2c = p2c, .n = n,
				      .nr = nr, .lo = lo, .scale = scale};
		if (c->kx.n_tasks > 1 && 16 * n * n >= c->kx.par_min) /* ~16 operations a score */
			tfm_pool_run(c->kx.pool, rows_task, &rj, c->kx.n_tasks);
		else
			rows_task(&rj, 0, 1);
		be->matmul(&c->kx, oh, sc, &vm, n); /* oh[q] = sum_k p V_k */
		for (int64_t t = 0; t < n; t++)
			memcpy(c->att + t * qd + h * hd, oh + t * hd, (size_t)hd * sizeof(float));
	}
}

/* Conv1d over the embeddings' output e (zero padding (k - 1) / 2 each
 * side), one matmul per tap and group over the rows the tap reaches:
 * out[t][g] += W[j][g] e[t + j - pad][g]; then the activation, the residual
 * and the LayerNorm (the input mask is all ones: one whole sequence). */
void tfm_deberta_conv(struct tfm_ctx *c, int64_t n)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	int64_t d = s->n_embd, k = s->conv_kernel, g = s->conv_groups, dg = d / g, pad = (k - 1) / 2;
	float *e = c->conv, *out = e + c->n_batch * d, *tin = out + c->n_batch * d;
	float *tout = tin + c->n_batch * d;
	for (int64_t t = 0; t < n; t++)
		memcpy(out + t * d, m->conv_b, (size_t)d * sizeof(float));
	for (int64_t j = 0; j < k; j++) {
		int64_t t0 = pad - j > 0 ? pad - j : 0, t1 = n + pad - j < n ? n + pad - j : n;
		if (t1 <= t0)
			continue;
		for (int64_t gi = 0; gi < g; gi++) {
			struct tfm_mat w = {.data = m->conv_w + (j * g + gi) * dg * dg,
					    .type = TFM_TYPE_F32, .in = dg, .out = dg,
					    .row_bytes = (size_t)dg * sizeof(float)};
			const float *in = e + (t0 + j - pad) * d;
			if (g > 1) { /* the group's channels, contiguous */
				for (int64_t t = t0; t < t1; t++)
					memcpy(tin + (t - t0) * dg, e + (t + j - pad) * d + gi * dg,
					       (size_t)dg * sizeof(float));
				in = tin;
			}
			be->matmul(&c->kx, tout, in, &w, t1 - t0);
			for (int64_t t = t0; t < t1; t++)
				be->add(out + t * d + gi * dg, out + t * d + gi * dg, tout + (t - t0) * dg,
					dg);
		}
	}
	if (s->conv_act == TFM_CONV_ACT_TANH) {
		for (int64_t i = 0; i < n * d; i++)
			out[i] = tanhf(out[i]);
	} else {
		static const int k_act[] = {[TFM_CONV_ACT_SILU] = TFM_K_SILU,
					    [TFM_CONV_ACT_GELU] = TFM_K_GELU,
					    [TFM_CONV_ACT_GELU_TANH] = TFM_K_GELU_TANH,
					    [TFM_CONV_ACT_RELU] = TFM_K_RELU};
		be->act(out, n * d, k_act[s->conv_act]);
	}
	be->add(c->x, c->x, out, n * d);
	float eps = m->conv_norm.eps > 0 ? m->conv_norm.eps : (float)s->norm_eps;
	for (int64_t t = 0; t < n; t++)
		be->layernorm(c->x + t * d, c->x + t * d, m->conv_norm.w, m->conv_norm.b, d, eps, 0);
}

int tfm_deberta_check_spec(const struct tfm_spec *s)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	if (s->conv_kernel > 0 &&
	    (s->family != TFM_FAMILY_ENCODER || s->conv_kernel % 2 == 0 || s->conv_groups < 1 ||
	     s->n_embd % s->conv_groups || s->conv_act < TFM_CONV_ACT_TANH ||
	     s->conv_act > TFM_CONV_ACT_RELU || s->norm != TFM_NORM_LAYER ||
	     s->norm_place != TFM_NORM_POST))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: a ConvLayer (conv.kernel %lld, %lld groups) "
				  "outside a post-LN encoder, with an even kernel or groups not "
				  "dividing n_embd is not supported", arch, (long long)s->conv_kernel,
				  (long long)s->conv_groups);
	if (s->pos_attn != TFM_POS_DEBERTA)
		return TFM_OK;
	if (s->family != TFM_FAMILY_ENCODER || s->mask != TFM_MASK_BIDIR)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: disentangled attention outside a "
				  "bidirectional encoder is not supported", arch);
	if (s->rel_span < 1 || s->rel_span > (1 << 20) || s->rel_buckets < 0 ||
	    (s->rel_buckets > 0 && (s->rel_buckets < 2 || s->rel_max_pos - 1 <= s->rel_buckets / 2)))
		return tfm_seterr(TFM_E_FORMAT, "%s: relative span %lld, %lld buckets, max position "
				  "%lld", arch, (long long)s->rel_span, (long long)s->rel_buckets,
				  (long long)s->rel_max_pos);
	if ((s->head_dim && s->head_dim * s->n_head != s->n_embd) || s->n_head_kv != s->n_head ||
	    s->kv_lora_rank || s->diff_attn || s->qk_norm != TFM_QK_NORM_NONE ||
	    s->attn_softcap > 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: disentangled attention with GQA, MLA, "
				  "QK-norm, soft-capping or a head size of its own is not "
				  "supported", arch);
	return TFM_OK;
}
