/* exec.c: the block executor and its evaluation contexts.  One forward pass
 * for every spec tfm_model_check_spec accepts: embeddings (scale, learned
 * positions, norm), then per layer norm -> attention (fused or separate QKV,
 * biases, QK-norm, RoPE, KV cache, causal / sliding-window mask, ALiBi,
 * soft-cap) -> FFN (gated or not), pre-norm, sandwich or post_in norms,
 * sequential or parallel residual; final norm, LM head, final soft-cap.
 * Prefill runs a batch of tokens through sgemm; decode is the same code with
 * one token.  All scratch lives in the context: no allocation per token. */
#include "model/model-impl.h"
#include "model/mamba.h"
#include "model/deberta.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BATCH 256

static size_t al(size_t n) { return (n + 15) & ~(size_t)15; } /* floats, 64-byte multiples */

int tfm_ctx_new(struct tfm_ctx **out, struct tfm_model *m, int64_t n_ctx)
{
	return tfm_ctx_new_batch(out, m, n_ctx, 0);
}

int tfm_ctx_new_batch(struct tfm_ctx **out, struct tfm_model *m, int64_t n_ctx, int64_t rows)
{
	const struct tfm_spec *s = &m->spec;
	*out = NULL;
	if (n_ctx <= 0) /* the training context can be 128K: a KV cache of many GB */
		n_ctx = s->n_ctx_train > 0 && s->n_ctx_train < 4096 ? s->n_ctx_train : 4096;
	struct tfm_ctx *c = tfm_calloc(1, sizeof *c);
	if (!c)
		return TFM_E_NOMEM;
	c->m = m;
	c->n_ctx = n_ctx;
	/* The KV cache.  A global layer keeps n_ctx slots; a window layer keeps
	 * a ring of min(n_ctx, window + n_batch - 1) slots, position p in slot
	 * p % slots: a batch stores its n_batch keys before attention reads, and
	 * its first token (pos0) still reads back to pos0 - window + 1, so
	 * window + n_batch - 1 positions must be resident.  n_batch is
	 * min(n_ctx, MAX_BATCH), and when every layer is windowed (the cache is
	 * a ring and generation can run past n_ctx) at most n_ctx - window + 1,
	 * so that ring fits in n_ctx; tfm_eval splits longer inputs into
	 * batches, so prefill of any length works. */
	c->ring = m->all_window && m->max_window <= n_ctx && s->family != TFM_FAMILY_ENCODER;
	c->n_batch = n_ctx < MAX_BATCH ? n_ctx : MAX_BATCH;
	if (s->family == TFM_FAMILY_ENCODER)
		/* bidirectional: a sequence is one batch (encode.c), or several
		 * side by side (tfm_embed_batch) */
		c->n_batch = rows > n_ctx ? rows : n_ctx;
	int encdec = s->family == TFM_FAMILY_ENCDEC;
	int64_t n_all = s->n_layer + (encdec ? s->n_layer_dec : 0);
	if (encdec) /* the source is one batch through the encoder */
		c->n_batch = n_ctx;
	if (c->ring && c->n_batch > n_ctx - m->max_window + 1)
		c->n_batch = n_ctx - m->max_window + 1; /* a batch must not overwrite keys it reads */
	c->slots = tfm_calloc((size_t)(n_all > 0 ? n_all : 1), 5 * sizeof(int64_t));
	if (!c->slots) {
		free(c);
		return TFM_E_NOMEM;
	}
	c->k_off = (size_t *)(c->slots + n_all);
	c->v_off = c->k_off + n_all;
	c->ck_off = c->v_off + n_all;
	c->cv_off = c->ck_off + n_all;
	c->n_slots = 0;
	size_t kbytes = 0, vbytes = 0;
	for (int64_t l = 0; l < n_all; l++) {
		/* a chunk needs what a window of its size needs: p reads back to
		 * at most p - chunk + 1 */
		int64_t w = m->layers[l].window ? m->layers[l].window : m->layers[l].chunk, ns = n_ctx;
		if (w > 0 && w + c->n_batch - 1 < n_ctx)
			ns = w + c->n_batch - 1;
		if (s->layer_kind[l] != TFM_LAYER_ATTN) { /* recurrent state: mamba.c */
			c->slots[l] = n_ctx;
			c->k_off[l] = kbytes, c->v_off[l] = vbytes;
			continue;
		}
		size_t kb = tfm_k_kv_bytes(m->k_type, ns, m->kv_dim / m->head_dim, m->head_dim);
		size_t vb = tfm_k_kv_bytes(m->v_type, ns, m->vv_dim / m->v_dim, m->v_dim);
		if (m->mla) { /* one latent row per token, values inside it */
			kb = tfm_k_kv_bytes(m->k_type, ns, 1, s->kv_lora_rank + s->qk_rope_dim);
			vb = kb ? 1 : 0; /* no V cache (checked below as non-zero) */
		}
		if (!kb || !vb) {
			free(c->slots);
			free(c);
			return tfm_seterr(TFM_E_UNSUPPORTED, "KV cache of %s/%s: head sizes %lld, %lld "
					  "are not whole blocks", tfm_type_name(m->k_type),
					  tfm_type_name(m->v_type),
					  (long long)m->head_dim, (long long)m->v_dim);
		}
		c->slots[l] = ns;
		if (m->mla)
			vb = 0;
		if (encdec && l > 0 && l < s->n_layer) { /* the encoder's layers share one */
			c->k_off[l] = c->k_off[0], c->v_off[l] = c->v_off[0];
			continue;
		}
		c->k_off[l] = kbytes, c->v_off[l] = vbytes;
		kbytes += (kb + 63) & ~(size_t)63; /* each layer's cache 64-byte aligned */
		vbytes += (vb + 63) & ~(size_t)63;
		if (encdec && l >= s->n_layer) { /* and the decoder's cross-attention K, V */
			c->ck_off[l] = kbytes, c->cv_off[l] = vbytes;
			kbytes += (kb + 63) & ~(size_t)63;
			vbytes += (vb + 63) & ~(size_t)63;
		}
		if (encdec && l < s->n_layer)
			c->cross_bytes += (int64_t)(kb + vb);
		else if (encdec)
			c->cross_bytes += (int64_t)(kb + vb), c->kv_bytes += (int64_t)(kb + vb);
		else
			c->kv_bytes += (int64_t)(kb + vb);
		if (ns > c->n_slots)
			c->n_slots = ns;
	}
	if (c->n_slots == 0)
		c->n_slots = n_ctx;
	int64_t B = c->n_batch, d = s->n_embd, ff = s->n_ff;
	int64_t E = s->n_expert > 0 ? s->n_expert : 0, K = E ? s->n_expert_used : 0;
	for (int64_t l = 0; l < s->n_layer; l++) { /* widest FFN of any kind */
		const struct tfm_layer *L = &m->layers[l];
		if (L->moe && L->gate.out > ff)
			ff = L->gate.out;
		if (L->sh_gate.data && L->sh_gate.out > ff)
			ff = L->sh_gate.out;
	}
	int64_t qkv = m->q_dim + 2 * m->kv_dim, rot2 = m->n_rot / 2 > 0 ? m->n_rot / 2 : 1;
	if (s->attn_out_gate && 2 * m->q_dim > qkv) /* [q | gate] of every head */
		qkv = 2 * m->q_dim;
	int64_t ql = m->mla ? s->q_lora_rank : 0, kl = m->mla ? s->kv_lora_rank : 0;
	int64_t mw = m->mla ? kl + s->qk_rope_dim : 0;        /* a latent key row */
	int64_t mt = m->mla ? (kl > s->qk_nope_dim ? kl : s->qk_nope_dim) : 0;
	if (mt < m->v_dim && m->mla)
		mt = m->v_dim;
	int64_t vd = m->vv_dim > m->kv_dim ? m->vv_dim : m->kv_dim;     /* v rows */
	int64_t ad = s->n_head * m->v_dim > m->q_dim ? s->n_head * m->v_dim : m->q_dim; /* att rows */
	int64_t max_in = d > ad ? d : ad;
	if (kl > max_in)
		max_in = kl;
	if (s->n_head * mw > max_in) /* the attention kernel's query rows of one KV head */
		max_in = s->n_head * mw;
	if (ql > max_in)
		max_in = ql;
	if (ff > max_in)
		max_in = ff;
	int n_tasks = m->n_threads;
	size_t per_task = al(m->be->scratch_need(max_in, c->n_slots));
	size_t xbuf = m->be->xbuf_need ? m->be->xbuf_need(max_in, B) : 0; /* bytes */
	size_t kv = (kbytes + 3) / 4, vv = (vbytes + 3) / 4; /* the caches in floats */
	size_t sizes[] = {
		kv, vv,                                   /* kc, vc */
		(size_t)(B * d), (size_t)(B * d), (size_t)(B * d), (size_t)(B * d), /* x xn h h2 */
		(size_t)(B * m->q_dim), (size_t)(B * m->kv_dim), (size_t)(B * vd),
		(size_t)(B * ad),                         /* q k v att */
		(size_t)(B * qkv),                        /* qkv */
		(size_t)(B * ff), (size_t)(B * ff),       /* g u */
		(size_t)(B * rot2), (size_t)(B * rot2),   /* cs sn */
		(size_t)(m->inv_freq_local ? B * rot2 : 0), (size_t)(m->inv_freq_local ? B * rot2 : 0),
		(size_t)rot2,                             /* inv_dyn */
		per_task * (size_t)n_tasks,               /* kernel scratch */
		(xbuf + 3) / 4,                           /* x packed for matmuls */
		(size_t)(B * E), (size_t)(B * K), (size_t)(B * K), /* rl selw sel */
		(size_t)(E ? B : 0), (size_t)(E ? B : 0),             /* list wl */
		(size_t)(E ? B * d : 0), (size_t)(E ? B * d : 0),     /* xe ye */
		(size_t)(B * ql), (size_t)(m->mla ? B * (kl + m->n_rot) : 0), (size_t)(B * kl),
		(size_t)(B * mw), (size_t)(B * s->n_head * mw), (size_t)(m->mla ? B * s->n_head * kl : 0),
		(size_t)(B * mt), (size_t)(B * mt),       /* mqa mkva mckv mkey mq mout mt1 mt2 */
	};
	float *sel, *list;
	float *kc, *vc, *xb;
	float **dst[] = {&kc, &vc, &c->x, &c->xn, &c->h, &c->h2, &c->q, &c->k, &c->v,
			 &c->att, &c->qkv, &c->g, &c->u, &c->cs, &c->sn, &c->cs2, &c->sn2, &c->inv_dyn, &c->kx.scratch, &xb,
			 &c->rl, &c->selw, &sel, &list, &c->wl, &c->xe, &c->ye,
			 &c->mqa, &c->mkva, &c->mckv, &c->mkey, &c->mq, &c->mout, &c->mt1, &c->mt2};
	size_t total = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		total += al(sizes[i]);
	int st = tfm_mem_check((double)total * sizeof(float),
			       "a context of %lld tokens (KV cache and scratch)", (long long)n_ctx);
	if (st) {
		free(c->slots);
		free(c);
		return st;
	}
	c->mem = tfm_amalloc(total * sizeof(float));
	if (!c->mem) {
		free(c->slots);
		free(c);
		return tfm_adderr(TFM_E_NOMEM, "context of %lld tokens (%.1f MiB)", (long long)n_ctx,
				  total * 4.0 / 1048576);
	}
	float *p = c->mem;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		*dst[i] = p;
		p += al(sizes[i]);
	}
	if (m->inv_freq)
		memcpy(c->inv_dyn, m->inv_freq, (size_t)(m->n_rot / 2) * sizeof(float));
	c->dyn_max = m->rope_orig;
	c->kc = kc, c->vc = vc;
	c->kbytes = al(kv) * sizeof(float), c->vbytes = al(vv) * sizeof(float);
	c->sel = (int32_t *)sel;   /* int32 and float have the same size */
	c->list = (int32_t *)list;
	memset(kc, 0, (al(kv) + al(vv)) * sizeof(float));
	st = tfm_pool_new(&c->kx.pool, n_tasks);
	if (st) {
		tfm_afree(c->mem);
		free(c->slots);
		free(c);
		return st;
	}
	if ((st = tfm_mamba_ctx_new(c)) || (st = tfm_deberta_ctx_new(c))) {
		tfm_ctx_free(c);
		return st;
	}
	c->kx.n_tasks = tfm_pool_size(c->kx.pool);
	c->kx.scratch_per_task = per_task;
	c->kx.xbuf = xbuf ? (uint8_t *)xb : NULL;
	c->kx.xbuf_bytes = xbuf;
	/* tfm_pool_run costs ~0.1 us a call while its workers spin (a few us
	 * once they sleep), but on a loaded machine a worker that joined a run
	 * can be descheduled mid-task: kernels under ~256K multiply-adds (a few
	 * microseconds) run on the calling thread alone */
	c->kx.par_min = 1 << 18;
	*out = c;
	return TFM_OK;
}

void tfm_ctx_free(struct tfm_ctx *c)
{
	if (!c)
		return;
	tfm_pool_free(c->kx.pool);
	tfm_mamba_ctx_free(c);
	tfm_deberta_ctx_free(c);
	tfm_afree(c->mem);
	free(c->slots);
	free(c);
}

void tfm_ctx_reset(struct tfm_ctx *c) { c->pos = 0; }

struct tfm_pool *tfm_ctx_pool(struct tfm_ctx *c) { return c->kx.pool; }

int tfm_ctx_rewind(struct tfm_ctx *c, int64_t pos)
{
	if (pos < 0 || pos > c->pos)
		return tfm_seterr(TFM_E_INVAL, "rewind to %lld of %lld tokens", (long long)pos,
				  (long long)c->pos);
	if (pos < c->pos && c->ssm)
		return tfm_seterr(TFM_E_UNSUPPORTED, "rewind of a recurrent state (%s layers keep "
				  "no per-token history): recompute from the start instead",
				  c->m->spec.arch[0] ? c->m->spec.arch : "mamba");
	/* a layer whose cache is a ring has overwritten older positions */
	for (int64_t l = 0; l < c->m->spec.n_layer; l++)
		if (c->slots[l] < c->n_ctx)
			return tfm_seterr(TFM_E_UNSUPPORTED, "rewind of a sliding-window cache");
	c->pos = pos;
	return TFM_OK;
}
int64_t tfm_ctx_kv_bytes(const struct tfm_ctx *c)
{
	return c->kv_bytes;
}
int64_t tfm_ctx_cross_bytes(const struct tfm_ctx *c) { return c->cross_bytes; }

int tfm_ctx_copy(struct tfm_ctx *dst, const struct tfm_ctx *src)
{
	const struct tfm_model *m = src->m;
	const struct tfm_spec *s = &m->spec;
	if (dst == src)
		return TFM_OK;
	if (dst->m != src->m || dst->n_ctx != src->n_ctx)
		return tfm_seterr(TFM_E_INVAL, "context copy between other models or sizes");
	if (src->ssm || src->conv || src->rel)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: copying a context with a recurrent state "
				  "or an encoder's scratch is not supported", s->arch);
	if (s->family == TFM_FAMILY_ENCDEC && src->src_serial && dst->src_serial == src->src_serial) {
		/* the same encoded source: the decoder's self-attention caches alone */
		for (int64_t l = s->n_layer; l < s->n_layer + s->n_layer_dec; l++) {
			size_t kb = tfm_k_kv_bytes(m->k_type, src->slots[l], m->kv_dim / m->head_dim,
						   m->head_dim);
			size_t vb = tfm_k_kv_bytes(m->v_type, src->slots[l], m->vv_dim / m->v_dim, m->v_dim);
			memcpy((uint8_t *)dst->kc + src->k_off[l], (const uint8_t *)src->kc + src->k_off[l], kb);
			memcpy((uint8_t *)dst->vc + src->v_off[l], (const uint8_t *)src->vc + src->v_off[l], vb);
		}
	} else {
		memcpy(dst->kc, src->kc, src->kbytes);
		memcpy(dst->vc, src->vc, src->vbytes);
	}
	dst->pos = src->pos;
	dst->n_src = src->n_src;
	dst->src_serial = src->src_serial;
	dst->rope_long = src->rope_long;
	dst->dyn_max = src->dyn_max;
	if (m->inv_freq && s->rope_scaling == TFM_ROPE_SCALE_DYNAMIC)
		memcpy(dst->inv_dyn, src->inv_dyn, (size_t)(m->n_rot / 2) * sizeof(float));
	return TFM_OK;
}
int64_t tfm_ctx_state_bytes(const struct tfm_ctx *c)
{
	return c->ssm ? tfm_mamba_state_bytes(c->m) : 0;
}
int64_t tfm_ctx_pos(const struct tfm_ctx *c) { return c->pos; }
int64_t tfm_ctx_size(const struct tfm_ctx *c) { return c->n_ctx; }
void tfm_ctx_set_par_min(struct tfm_ctx *c, int64_t par_min) { c->kx.par_min = par_min; }

/* ---- the forward pass ---- */

/* Elementwise work over the rows of a batch (norms, biases, residual
 * adds, activations) runs on the pool through be->parallel, by rows.  Each
 * element's arithmetic is what one loop over the batch does for it (the
 * cpu kernels take a row's or array's tail through the same lanes as its
 * body), so no value depends on the split or the thread count.  On the
 * calling thread alone they were 12% of its samples while the pool waited
 * (all-MiniLM-L6-v2, 32 sequences of 128 tokens, two threads, perf). */
enum { ROW_NORM, ROW_BIAS, ROW_ADD, ROW_ACT_MUL, ROW_ACT };

struct rows_job {
	const struct tfm_model *m;
	int op, act;
	float *y;                    /* [n][w] */
	const float *a, *b;          /* ROW_NORM: a = x; ROW_BIAS: b [w]; ROW_ADD: a, b [n][w];
				      * ROW_ACT_MUL: a = u [n][w] (y = act(y) * u) */
	const struct tfm_norm_w *nw;
	int64_t w;
};

static void rows_task(void *ctx, struct tfm_kexec *kt, int task, int64_t t0, int64_t t1)
{
	const struct rows_job *j = ctx;
	const struct tfm_model *m = j->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	int64_t w = j->w, nw_ = (t1 - t0) * w;
	float *y = j->y + t0 * w;
	(void)kt, (void)task;
	switch (j->op) {
	case ROW_NORM: {
		const struct tfm_norm_w *nw = j->nw;
		float eps = nw->eps > 0 ? nw->eps : (float)s->norm_eps;
		for (int64_t t = t0; t < t1; t++) {
			float *yt = j->y + t * w;
			if (s->norm == TFM_NORM_RMS)
				be->rmsnorm(yt, j->a + t * w, nw->w, w, eps, s->norm_plus_one);
			else
				be->layernorm(yt, j->a + t * w, nw->w, nw->b, w, eps, s->norm_plus_one);
			if (s->norm == TFM_NORM_RMS && nw->b)
				be->add(yt, yt, nw->b, w);
		}
		break;
	}
	case ROW_BIAS:
		for (int64_t t = t0; t < t1; t++)
			be->add(j->y + t * w, j->y + t * w, j->b, w);
		break;
	case ROW_ADD:
		be->add(y, j->a + t0 * w, j->b + t0 * w, nw_);
		break;
	case ROW_ACT_MUL:
		be->act_mul(y, j->a + t0 * w, nw_, j->act);
		break;
	case ROW_ACT:
		be->act(y, nw_, j->act);
		break;
	}
}

/* j over rows [0, n); per: its cost per element in the matmul's
 * multiply-adds (the pool's threshold) */
static void rows_par(struct tfm_ctx *c, struct rows_job *j, int64_t n, double per)
{
	j->m = c->m;
	c->m->be->parallel(&c->kx, rows_task, j, n, per * (double)n * (double)j->w);
}

/* y[t] = norm(x[t]) for n rows of width w */
static void norm_rows(struct tfm_ctx *c, float *y, const float *x, int64_t n, int64_t w,
		      const struct tfm_norm_w *nw)
{
	struct rows_job j = {.op = ROW_NORM, .y = y, .a = x, .nw = nw, .w = w};
	rows_par(c, &j, n, 4.0);
}

/* y[t] += b for n rows of width w (b NULL: nothing) */
static void add_bias(struct tfm_ctx *c, float *y, const float *b, int64_t n, int64_t w)
{
	struct rows_job j = {.op = ROW_BIAS, .y = y, .b = b, .w = w};
	if (b)
		rows_par(c, &j, n, 1.0);
}

/* y = x . W^T + b for n rows (b NULL: none): the backend adds b to each
 * tile while it is in cache where it can (be->matmul_bias), else a pass
 * over y after the matmul */
static void matmul_b(struct tfm_ctx *c, float *y, const float *x, const struct tfm_mat *w,
		     const float *b, int64_t n)
{
	const struct tfm_backend *be = c->m->be;
	if (b && be->matmul_bias) {
		be->matmul_bias(&c->kx, y, x, w, b, n);
	} else {
		be->matmul(&c->kx, y, x, w, n);
		add_bias(c, y, b, n, w->out);
	}
}

/* y[q] = x . W[q]^T (+ b[q]) for q < nm, in one backend call where the
 * backend has one (the same bits as matmul_b on each) */
static void matmul_n(struct tfm_ctx *c, int nm, float *const *y, const float *x,
		     const struct tfm_mat *const *w, const float *const *b, int64_t n)
{
	const struct tfm_backend *be = c->m->be;
	if (be->matmul_multi && be->matmul_bias && nm <= TFM_K_MULTI_MAX) {
		be->matmul_multi(&c->kx, nm, y, x, w, b, n);
		return;
	}
	for (int q = 0; q < nm; q++)
		matmul_b(c, y[q], x, w[q], b[q], n);
}

/* y = a + b, n rows of width w (y may be a or b) */
static void add_rows(struct tfm_ctx *c, float *y, const float *a, const float *b, int64_t n,
		     int64_t w)
{
	struct rows_job j = {.op = ROW_ADD, .y = y, .a = a, .b = b, .w = w};
	rows_par(c, &j, n, 1.0);
}

/* g = act(g) * u (u NULL: g = act(g)), n rows of width w */
static void act_rows(struct tfm_ctx *c, float *g, const float *u, int64_t n, int64_t w, int act)
{
	struct rows_job j = {.op = u ? ROW_ACT_MUL : ROW_ACT, .y = g, .a = u, .w = w, .act = act};
	rows_par(c, &j, n, 10.0);
}

/* The K and V rows of a->n_tok tokens at positions pos0.. into their cache
 * slots, on the pool by tokens when no two share a slot (each slot's bytes
 * are what be->kv_store writes for it, whoever stores it) */
struct kvs_job {
	const struct tfm_backend *be;
	void *kc, *vc;
	const float *k, *v;          /* [n_tok][kvd], [n_tok][vvd] */
	int64_t kvd, vvd, pos0;
	const struct tfm_attn_args *a;
};

static void kvs_task(void *ctx, struct tfm_kexec *kt, int task, int64_t t0, int64_t t1)
{
	const struct kvs_job *j = ctx;
	(void)kt, (void)task;
	for (int64_t t = t0; t < t1; t++)
		j->be->kv_store(j->kc, j->vc, j->k + t * j->kvd, j->v + t * j->vvd,
				(j->pos0 + t) % j->a->n_slots, j->a);
}

static void kv_store_rows(struct tfm_ctx *c, void *kc, void *vc, const float *k, const float *v,
			  int64_t kvd, int64_t vvd, int64_t pos0, const struct tfm_attn_args *a)
{
	struct kvs_job j = {c->m->be, kc, vc, k, v, kvd, vvd, pos0, a};
	int64_t n = a->n_tok;
	if (n > a->n_slots) /* a ring smaller than the batch: in order, the last one wins */
		kvs_task(&j, &c->kx, 0, 0, n);
	else
		c->m->be->parallel(&c->kx, kvs_task, &j, n, 2.0 * (double)n * (double)(kvd + vvd));
}

/* MLA with the latent cache, in the absorbed form (DeepSeek-V2, and
 * llama.cpp's MLA path).  Per token the cache holds one row [c_kv | k_pe]
 * (kv_lora + rope): the normed latent and the shared rope key, one KV head
 * for every head.  Head h attends with the query [W_UK[h]^T q_nope[h] |
 * q_pe[h]], its values are the c_kv part of the rows (v_from_k), and its
 * output is W_UV[h] o_lat: q_nope . (W_UK c) = (W_UK^T q_nope) . c and
 * W_UV (sum p c) = sum p (W_UV c), so the scores and outputs are the
 * decompressed form's.  Prefill takes the same path (one path; it costs
 * kv_lora + rope instead of nope + rope + v_dim per key and head).  att
 * [n][n_head * v_dim] from xn. */
static void mla_attention(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	struct tfm_layer *L = &m->layers[l];
	int64_t nh = s->n_head, hd = m->head_dim, nope = s->qk_nope_dim, rope = s->qk_rope_dim;
	int64_t kl = s->kv_lora_rank, vd = m->v_dim, r2 = m->n_rot / 2, w = kl + rope;
	if (L->q_a.data) {
		be->matmul(&c->kx, c->mqa, c->xn, &L->q_a, n);
		norm_rows(c, c->mqa, c->mqa, n, s->q_lora_rank, &L->q_a_norm);
		be->matmul(&c->kx, c->q, c->mqa, &L->q_b, n);
	} else {
		be->matmul(&c->kx, c->q, c->xn, &L->wq, n);
	}
	/* the latent keys: [normed c_kv | rotated k_pe] */
	be->matmul(&c->kx, c->mkva, c->xn, &L->kv_a, n);
	for (int64_t t = 0; t < n; t++)
		memcpy(c->mckv + t * kl, c->mkva + t * w, (size_t)kl * sizeof(float));
	norm_rows(c, c->mckv, c->mckv, n, kl, &L->kv_a_norm);
	for (int64_t t = 0; t < n; t++) {
		float *key = c->mkey + t * w;
		memcpy(key, c->mckv + t * kl, (size_t)kl * sizeof(float));
		memcpy(key + kl, c->mkva + t * w + kl, (size_t)rope * sizeof(float));
		be->rope(key + kl, 1, rope, rope, s->rope_interleaved, c->cs + t * r2, c->sn + t * r2);
		be->rope(c->q + t * nh * hd + nope, nh, hd, rope, s->rope_interleaved,
			 c->cs + t * r2, c->sn + t * r2);
	}
	/* the absorbed queries [n][nh][w]: W_UK[h]^T q_nope, then q_pe */
	for (int64_t h = 0; h < nh; h++) {
		struct tfm_mat ukt = {.data = L->mla_ukt + h * kl * nope, .type = TFM_TYPE_F32,
				      .in = nope, .out = kl, .row_bytes = (size_t)nope * sizeof(float)};
		for (int64_t t = 0; t < n; t++)
			memcpy(c->mt1 + t * nope, c->q + (t * nh + h) * hd, (size_t)nope * sizeof(float));
		be->matmul(&c->kx, c->mt2, c->mt1, &ukt, n);
		for (int64_t t = 0; t < n; t++) {
			float *qa = c->mq + (t * nh + h) * w;
			memcpy(qa, c->mt2 + t * kl, (size_t)kl * sizeof(float));
			memcpy(qa + kl, c->q + (t * nh + h) * hd + nope, (size_t)rope * sizeof(float));
		}
	}
	struct tfm_attn_args a = {
		.n_tok = n, .pos0 = pos0, .n_head = nh, .n_head_kv = 1, .head_dim = w, .v_dim = kl,
		.v_from_k = 1, .n_slots = c->slots[l], .window = L->window, .chunk = L->chunk,
		.scale = m->attn_scale,
		.softcap = s->attn_softcap, .k_type = m->k_type, .v_type = m->k_type,
	};
	void *kc = (uint8_t *)c->kc + c->k_off[l];
	for (int64_t t = 0; t < n; t++)
		be->kv_store(kc, NULL, c->mkey + t * w, NULL, (pos0 + t) % a.n_slots, &a);
	be->attn(&c->kx, c->mout, c->mq, kc, NULL, &a);
	/* out_h = W_UV[h] o_lat */
	for (int64_t h = 0; h < nh; h++) {
		struct tfm_mat uv = L->mla_uv;
		uv.dec = NULL;
		uv.data = (const uint8_t *)L->mla_uv.data + (size_t)h * L->mla_uv_stride;
		for (int64_t t = 0; t < n; t++)
			memcpy(c->mt1 + t * kl, c->mout + (t * nh + h) * kl, (size_t)kl * sizeof(float));
		be->matmul(&c->kx, c->mt2, c->mt1, &uv, n);
		for (int64_t t = 0; t < n; t++)
			memcpy(c->att + (t * nh + h) * vd, c->mt2 + t * vd, (size_t)vd * sizeof(float));
	}
}

/* Differential attention (transformers' diffllama), in two steps around
 * the ordinary kernel.  Head h attends with its own q and k but to the
 * values of heads h mod H/2 and h mod H/2 + H/2 side by side; in KV-head
 * terms (nkv KV heads, nkv = 1 or even, groups inside each half) KV head g
 * carries [V(g mod nkv/2), V(g mod nkv/2 + nkv/2)], so the kernel runs with
 * value rows of 2 head_dim.  v: [n][nkv][hd] -> [n][nkv][2 hd] (tmp: as
 * large). */
static void diff_values(float *v, float *tmp, int64_t n, int64_t nkv, int64_t hd)
{
	int64_t half = nkv > 1 ? nkv / 2 : 1;
	for (int64_t t = 0; t < n; t++)
		for (int64_t g = 0; g < nkv; g++) {
			int64_t a = g % half, b = nkv > 1 ? a + half : 0;
			float *o = tmp + (t * nkv + g) * 2 * hd;
			memcpy(o, v + (t * nkv + a) * hd, (size_t)hd * sizeof(float));
			memcpy(o + hd, v + (t * nkv + b) * hd, (size_t)hd * sizeof(float));
		}
	memcpy(v, tmp, (size_t)(n * nkv * 2 * hd) * sizeof(float));
}

/* ...then out[n][H/2][2 hd] = (1 - lambda_init) RMSNorm(att_i - lambda
 * att_{i + H/2}) (no weight) from att [n][H][2 hd]: the input of o_proj
 * ([n][H hd]). */
static void diff_combine(struct tfm_ctx *c, const struct tfm_layer *L, int64_t n, float *out)
{
	const struct tfm_model *m = c->m;
	int64_t nh = m->spec.n_head, w = 2 * m->head_dim;
	for (int64_t t = 0; t < n; t++)
		for (int64_t i = 0; i < nh / 2; i++) {
			const float *a = c->att + (t * nh + i) * w, *b = a + nh / 2 * w;
			float *o = out + (t * nh / 2 + i) * w;
			for (int64_t d = 0; d < w; d++)
				o[d] = a[d] - L->diff_lambda * b[d];
			m->be->rmsnorm(o, o, NULL, w, (float)m->spec.norm_eps, 0);
			for (int64_t d = 0; d < w; d++)
				o[d] *= L->diff_scale;
		}
}

/* h[n][d] = attention of layer l over xn[n][d] for tokens at pos0.. */
static void attention(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	struct tfm_layer *L = &m->layers[l];
	int64_t qd = m->q_dim, kvd = m->kv_dim, hd = m->head_dim, vvd = m->vv_dim;
	if (s->pos_attn == TFM_POS_DEBERTA) { /* disentangled attention: deberta.c */
		tfm_deberta_attention(c, l, n);
		matmul_b(c, c->h, c->att, &L->wo, L->bo, n);
		return;
	}
	if (m->mla) {
		mla_attention(c, l, n, pos0);
		matmul_b(c, c->h, c->att, &L->wo, L->bo, n);
		return;
	}
	if (L->wqkv.data) {
		int64_t w = qd + 2 * kvd;
		matmul_b(c, c->qkv, c->xn, &L->wqkv, L->bqkv, n);
		for (int64_t t = 0; t < n; t++) {
			memcpy(c->q + t * qd, c->qkv + t * w, (size_t)qd * sizeof(float));
			memcpy(c->k + t * kvd, c->qkv + t * w + qd, (size_t)kvd * sizeof(float));
			memcpy(c->v + t * kvd, c->qkv + t * w + qd + kvd, (size_t)kvd * sizeof(float));
		}
	} else if (s->attn_out_gate) {
		/* each head's [q | gate]: q into c->q, the gates stay in c->qkv */
		be->matmul(&c->kx, c->qkv, c->xn, &L->wq, n);
		for (int64_t t = 0; t < n; t++)
			for (int64_t h = 0; h < s->n_head; h++)
				memcpy(c->q + t * qd + h * hd, c->qkv + t * 2 * qd + h * 2 * hd,
				       (size_t)hd * sizeof(float));
		matmul_b(c, c->k, c->xn, &L->wk, L->bk, n);
		matmul_b(c, c->v, c->xn, &L->wv, L->bv, n);
	} else {
		float *y[] = {c->q, c->k, c->v};
		const struct tfm_mat *w[] = {&L->wq, &L->wk, &L->wv};
		const float *b[] = {L->bq, L->bk, L->bv};
		matmul_n(c, 3, y, c->xn, w, b, n);
	}
	if (s->qk_norm == TFM_QK_NORM_HEAD) {
		norm_rows(c, c->q, c->q, n * s->n_head, hd, &L->q_norm);
		norm_rows(c, c->k, c->k, n * s->n_head_kv, hd, &L->k_norm);
	} else if (s->qk_norm == TFM_QK_NORM_FULL) {
		norm_rows(c, c->q, c->q, n, qd, &L->q_norm);
		norm_rows(c, c->k, c->k, n, kvd, &L->k_norm);
	}
	int64_t r2 = m->n_rot / 2;
	struct tfm_attn_args a = {
		.n_tok = n, .pos0 = pos0, .n_head = s->n_head, .n_head_kv = s->n_head_kv,
		.head_dim = hd, .v_dim = m->v_dim, .n_slots = c->slots[l], .window = L->window,
		.chunk = L->chunk,
		.scale = s->attn_scale_inv_layer ? m->attn_scale / (float)(l + 1) : m->attn_scale,
		.softcap = s->attn_softcap, .alibi = m->alibi,
		.bidir = s->mask == TFM_MASK_BIDIR || c->enc_pass,
		.rel_bias = l < s->n_layer ? m->t5_bias : m->t5_bias_dec, .rel_span = m->t5_span,
		.k_type = m->k_type, .v_type = m->v_type,
	};
	void *kc = (uint8_t *)c->kc + c->k_off[l];
	void *vc = (uint8_t *)c->vc + c->v_off[l];
	for (int64_t t = 0; t < n && L->rope && !m->mla; t++) {
		const float *cs = (L->rope_local ? c->cs2 : c->cs) + t * r2;
		const float *sn = (L->rope_local ? c->sn2 : c->sn) + t * r2;
		be->rope(c->q + t * qd, s->n_head, hd, m->n_rot, s->rope_interleaved, cs, sn);
		be->rope(c->k + t * kvd, s->n_head_kv, hd, m->n_rot, s->rope_interleaved, cs, sn);
	}
	/* llama4: on RoPE layers each head of q and k divided by its RMS, no
	 * weight (after the rotation, which keeps the RMS) */
	if (s->qk_norm == TFM_QK_NORM_ROPE_RMS && L->rope) {
		for (int64_t i = 0; i < n * s->n_head; i++)
			be->rmsnorm(c->q + i * hd, c->q + i * hd, NULL, hd, (float)s->norm_eps, 0);
		for (int64_t i = 0; i < n * s->n_head_kv; i++)
			be->rmsnorm(c->k + i * hd, c->k + i * hd, NULL, hd, (float)s->norm_eps, 0);
	}
	/* llama4's temperature tuning: the queries of NoPE layers grow with
	 * the log of the position, 1 + scale log1p(floor((p + 1) / floor)) */
	if (s->attn_temp_scale > 0 && !L->rope)
		for (int64_t t = 0; t < n; t++) {
			double f = floor((double)(pos0 + t + 1) / (double)s->attn_temp_floor);
			float ts = (float)(log1p(f) * s->attn_temp_scale + 1.0);
			for (int64_t i = 0; i < qd; i++)
				c->q[t * qd + i] *= ts;
		}
	if (s->diff_attn)
		diff_values(c->v, c->qkv, n, s->n_head_kv, hd);
	/* block-quantized caches: rotated heads (kvrot.c), q.k unchanged */
	if (m->k_rot) {
		tfm_kvrot(c->q, n * s->n_head, hd, m->k_rot);
		tfm_kvrot(c->k, n * s->n_head_kv, hd, m->k_rot);
	}
	if (m->v_rot)
		tfm_kvrot(c->v, n * s->n_head_kv, m->v_dim, m->v_rot);
	if (c->n_seg > 1) {
		/* several sequences: each in turn stored from slot 0 and attended
		 * alone, as a call of its own from position 0 would */
		int64_t t0 = 0, ad = s->n_head * m->v_dim;
		for (int64_t i = 0; i < c->n_seg; t0 += c->seg[i++]) {
			struct tfm_attn_args b = a;
			b.n_tok = c->seg[i];
			b.pos0 = 0;
			kv_store_rows(c, kc, vc, c->k + t0 * kvd, c->v + t0 * vvd, kvd, vvd, 0, &b);
			be->attn(&c->kx, c->att + t0 * ad, c->q + t0 * qd, kc, vc, &b);
		}
	} else {
		kv_store_rows(c, kc, vc, c->k, c->v, kvd, vvd, pos0, &a);
		be->attn(&c->kx, c->att, c->q, kc, vc, &a);
	}
	if (m->v_rot) /* the output of rotated values, rotated back */
		tfm_kvrot(c->att, n * s->n_head, m->v_dim, m->v_rot);
	if (s->attn_out_gate) /* qwen3_next: attn * sigmoid(gate), per head */
		for (int64_t t = 0; t < n; t++)
			for (int64_t h = 0; h < s->n_head; h++) {
				float *o = c->att + t * s->n_head * hd + h * hd;
				const float *g = c->qkv + t * 2 * qd + h * 2 * hd + hd;
				for (int64_t i = 0; i < hd; i++)
					o[i] *= 1.0f / (1.0f + expf(-g[i]));
			}
	if (s->diff_attn) {
		diff_combine(c, L, n, c->qkv);
		matmul_b(c, c->h, c->qkv, &L->wo, L->bo, n);
	} else {
		matmul_b(c, c->h, c->att, &L->wo, L->bo, n);
	}
}

/* The arguments of decoder layer l's cross-attention: n queries, every
 * one seeing the n_src keys of the encoded source, no position bias. */
static struct tfm_attn_args cross_args(const struct tfm_ctx *c, int64_t n)
{
	const struct tfm_model *m = c->m;
	return (struct tfm_attn_args){
		.n_tok = n, .n_head = m->spec.n_head, .n_head_kv = m->spec.n_head,
		.head_dim = m->head_dim, .v_dim = m->v_dim, .n_slots = c->n_ctx, .bidir = 1,
		.n_kv = c->n_src, .scale = m->attn_scale, .k_type = m->k_type, .v_type = m->v_type,
	};
}

/* h[n][d] = cross-attention of decoder layer l from xn[n][d] over the
 * encoded source (keys and values stored by tfm_seq2seq_encode) */
static void cross_attention(struct tfm_ctx *c, int64_t l, int64_t n)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	struct tfm_layer *L = &m->layers[l];
	struct tfm_attn_args a = cross_args(c, n);
	matmul_b(c, c->q, c->xn, &L->cq, L->cbq, n);
	if (m->k_rot)
		tfm_kvrot(c->q, n * s->n_head, m->head_dim, m->k_rot);
	be->attn(&c->kx, c->att, c->q, (uint8_t *)c->kc + c->ck_off[l],
		 (uint8_t *)c->vc + c->cv_off[l], &a);
	if (m->v_rot)
		tfm_kvrot(c->att, n * s->n_head, m->v_dim, m->v_rot);
	matmul_b(c, c->h, c->att, &L->co, L->cbo, n);
}

/* out[n][d] = down(act(gate(in)) * up(in)) for n rows of in */
static void glu(struct tfm_ctx *c, int64_t n, float *out, const float *in,
		const struct tfm_mat *gate, const struct tfm_mat *up, const struct tfm_mat *down)
{
	const struct tfm_backend *be = c->m->be;
	be->matmul(&c->kx, c->g, in, gate, n);
	be->matmul(&c->kx, c->u, in, up, n);
	act_rows(c, c->g, c->u, n, gate->out, c->m->spec.act);
	be->matmul(&c->kx, out, c->g, down, n);
}

/* The scores experts are chosen by, sc[E], from the router's p[E]: plus the
 * selection-only bias (DeepSeek-V3's e_score_correction_bias; the weights
 * stay p), and with grouped routing only the experts of the topk_group best
 * groups (a group scores its best expert, or with the bias the sum of its
 * best two, as DeepSeek-V2's group_limited_greedy and V3's noaux_tc do);
 * the others score 0, as transformers' masked_fill(0.0) leaves them. */
static void moe_choice(const struct tfm_spec *s, const struct tfm_layer *L, const float *p, float *sc)
{
	int64_t E = s->n_expert, G = s->moe_n_group, TG = s->moe_topk_group;
	for (int64_t e = 0; e < E; e++)
		sc[e] = p[e] + (L->exp_probs_b ? L->exp_probs_b[e] : 0.0f);
	if (G <= 1 || TG >= G)
		return;
	int64_t per = E / G;
	float gs[G];
	uint8_t keep[G];
	for (int64_t g = 0; g < G; g++) {
		float a = -INFINITY, b = -INFINITY; /* best two of the group */
		for (int64_t e = g * per; e < (g + 1) * per; e++) {
			if (sc[e] > a)
				b = a, a = sc[e];
			else if (sc[e] > b)
				b = sc[e];
		}
		gs[g] = L->exp_probs_b ? a + (per > 1 ? b : 0) : a;
		keep[g] = 0;
	}
	for (int64_t k = 0; k < TG; k++) {
		int64_t best = -1;
		for (int64_t g = 0; g < G; g++)
			if (!keep[g] && (best < 0 || gs[g] > gs[best]))
				best = g;
		keep[best] = 1;
	}
	for (int64_t e = 0; e < E; e++)
		if (!keep[e / per])
			sc[e] = 0.0f;
}

/* Mixture of experts: per token the router's softmax (or sigmoid) over the
 * experts, the top n_expert_used (ties to the lower id), optionally
 * renormalised and scaled; each expert runs once on the batch of tokens
 * routed to it and its outputs, times the weights (or, moe.weight_in, of
 * the inputs times the weights), are added in expert order.  Shared experts
 * run on every token, scaled by sigmoid(gate_inp_shexp . x) if present. */
static void moe(struct tfm_ctx *c, int64_t l, int64_t n, float *out, const float *in)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, E = s->n_expert, K = s->n_expert_used;
	matmul_b(c, c->rl, in, &L->router, L->router_b, n);
	for (int64_t t = 0; t < n; t++) {
		float *p = c->rl + t * E, sum = 0;
		if (s->moe_gate == TFM_MOE_GATE_SIGMOID)
			for (int64_t e = 0; e < E; e++)
				p[e] = 1.0f / (1.0f + expf(-p[e]));
		else
			be->softmax(p, E);
		int32_t *sel = c->sel + t * K;
		float *w = c->selw + t * K, sc[E];
		moe_choice(s, L, p, sc);
		for (int64_t k = 0; k < K; k++) {
			int32_t best = -1;
			for (int64_t e = 0; e < E; e++) {
				int taken = 0;
				for (int64_t j = 0; j < k; j++)
					taken |= sel[j] == e;
				if (!taken && (best < 0 || sc[e] > sc[best]))
					best = (int32_t)e;
			}
			sel[k] = best;
			w[k] = p[best];
			sum += w[k];
		}
		float scale = s->moe_routed_scale > 0 ? (float)s->moe_routed_scale : 1.0f;
		if (s->moe_norm_topk && sum > 0)
			scale /= sum;
		for (int64_t k = 0; k < K; k++)
			w[k] *= scale;
	}
	memset(out, 0, (size_t)(n * d) * sizeof *out);
	for (int64_t e = 0; e < E; e++) {
		int64_t cnt = 0;
		for (int64_t t = 0; t < n; t++)
			for (int64_t k = 0; k < K; k++)
				if (c->sel[t * K + k] == e) {
					c->list[cnt] = (int32_t)t;
					c->wl[cnt++] = c->selw[t * K + k];
				}
		if (!cnt)
			continue;
		for (int64_t i = 0; i < cnt; i++)
			memcpy(c->xe + i * d, in + (int64_t)c->list[i] * d, (size_t)d * sizeof(float));
		if (s->moe_weight_in) /* llama4: the expert sees w x, its output adds as is */
			for (int64_t i = 0; i < cnt; i++) {
				for (int64_t j = 0; j < d; j++)
					c->xe[i * d + j] *= c->wl[i];
				c->wl[i] = 1.0f;
			}
		struct tfm_mat g = L->gate, u = L->up, dn = L->down;
		g.dec = u.dec = dn.dec = NULL; /* (never set on experts: load.c's repack) */
		g.data = (const uint8_t *)g.data + (size_t)e * L->exp_stride[0];
		u.data = (const uint8_t *)u.data + (size_t)e * L->exp_stride[1];
		dn.data = (const uint8_t *)dn.data + (size_t)e * L->exp_stride[2];
		glu(c, cnt, c->ye, c->xe, &g, &u, &dn);
		for (int64_t i = 0; i < cnt; i++) {
			float *o = out + (int64_t)c->list[i] * d;
			const float *y = c->ye + i * d;
			for (int64_t j = 0; j < d; j++)
				o[j] += c->wl[i] * y[j];
		}
	}
	if (L->sh_gate.data) {
		glu(c, n, c->ye, in, &L->sh_gate, &L->sh_up, &L->sh_down);
		for (int64_t t = 0; t < n; t++) {
			float gs = 1;
			if (L->sh_gate_inp) {
				float a = 0;
				for (int64_t j = 0; j < d; j++)
					a += L->sh_gate_inp[j] * in[t * d + j];
				gs = 1.0f / (1.0f + expf(-a));
			}
			for (int64_t j = 0; j < d; j++)
				out[t * d + j] += gs * c->ye[t * d + j];
		}
	}
}

/* out[n][d] = ffn(in[n][d]) */
static void ffn(struct tfm_ctx *c, int64_t l, int64_t n, float *out, const float *in)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	struct tfm_layer *L = &m->layers[l];
	int64_t ff = s->n_ff;
	if (L->moe) {
		moe(c, l, n, out, in);
		return;
	}
	float *a = c->u;
	if (L->gate.data) {
		float *y[] = {c->u, c->g};
		const struct tfm_mat *w[] = {&L->up, &L->gate};
		const float *b[] = {L->up_b, L->gate_b};
		matmul_n(c, 2, y, in, w, b, n);
		act_rows(c, c->g, c->u, n, ff, s->act);
		a = c->g;
	} else {
		matmul_b(c, c->u, in, &L->up, L->up_b, n);
		act_rows(c, c->u, NULL, n, ff, s->act);
	}
	matmul_b(c, out, a, &L->down, L->down_b, n);
}

/* the position of token t of this call: its own sequence's in a batch of
 * several (tfm_embed_batch), else pos0 + t */
#define TPOS(c, pos0, t) ((c)->tpos ? (int64_t)(c)->tpos[t] : (pos0) + (t))

/* x[w] += row `row` of the table e (positions, token types); tmp: [w] */
static void add_row(const struct tfm_model *m, float *x, const struct tfm_mat *e, int64_t row,
		    int64_t w, float *tmp)
{
	tfm_k_row_to_f32(e->type, (const uint8_t *)e->data + (size_t)row * e->row_bytes, tmp, w);
	m->be->add(x, x, tmp, w);
}

static void embed(struct tfm_ctx *c, const int32_t *tok, int64_t n, int64_t pos0)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, io = s->n_embd_io > 0 ? s->n_embd_io : d;
	if (s->embd_proj) { /* ELECTRA: the sums and their norm io wide, then project_in;
			     * DeBERTa (embd_proj_first): project_in, then the norm */
		for (int64_t t = 0; t < n; t++) {
			float *x = c->xn + t * io;
			tfm_k_row_to_f32(m->tok_embd.type, (const uint8_t *)m->tok_embd.data +
					 (size_t)tok[t] * m->tok_embd.row_bytes, x, io);
			if (m->pos_embd.data)
				add_row(m, x, &m->pos_embd, TPOS(c, pos0, t) + s->pos_offset, io, c->h);
			if (m->type_embd.data)
				add_row(m, x, &m->type_embd, c->types ? c->types[t] : 0, io, c->h);
		}
		if (s->embd_norm && !s->embd_proj_first)
			norm_rows(c, c->xn, c->xn, n, io, &m->embd_norm);
		matmul_b(c, c->x, c->xn, &m->proj_in, m->proj_in_b, n);
		if (s->embd_norm && s->embd_proj_first)
			norm_rows(c, c->x, c->x, n, d, &m->embd_norm);
		goto rope;
	}
	if (m->proj_in.data) { /* narrower word embeddings, then project_in */
		for (int64_t t = 0; t < n; t++)
			tfm_k_row_to_f32(m->tok_embd.type, (const uint8_t *)m->tok_embd.data +
					 (size_t)tok[t] * m->tok_embd.row_bytes, c->xn + t * io, io);
		m->be->matmul(&c->kx, c->x, c->xn, &m->proj_in, n);
	}
	/* an encoder-decoder model's encoder has positions and a norm of its own */
	const struct tfm_mat *pe = c->enc_pass && m->enc_pos_embd.data ? &m->enc_pos_embd
									 : &m->pos_embd;
	const struct tfm_norm_w *en = c->enc_pass && m->enc_embd_norm.w ? &m->enc_embd_norm
									 : &m->embd_norm;
	/* and Marian unshared a token table of its own */
	const struct tfm_mat *te = c->enc_pass && m->enc_tok_embd.data ? &m->enc_tok_embd
								       : &m->tok_embd;
	for (int64_t t = 0; t < n; t++) {
		float *x = c->x + t * d;
		if (!m->proj_in.data)
			tfm_k_row_to_f32(te->type, (const uint8_t *)te->data +
					 (size_t)tok[t] * te->row_bytes, x, d);
		if (s->embd_scale != 0 && s->embd_scale != 1)
			for (int64_t i = 0; i < d; i++)
				x[i] *= s->embd_scale;
		if (pe->data)
			add_row(m, x, pe, TPOS(c, pos0, t) + s->pos_offset, d, c->h);
		if (m->type_embd.data) /* encoders: token types (tfm_encode checks them) */
			add_row(m, x, &m->type_embd, c->types ? c->types[t] : 0, d, c->h);
	}
	if (s->embd_norm)
		norm_rows(c, c->x, c->x, n, d, en);
rope:
	if (m->any_rope)
		for (int64_t t = 0; t < n; t++)
			for (int64_t i = 0; i < m->n_rot / 2; i++) {
				const float *f = c->rope_long ? m->inv_freq_long
					: m->spec.rope_scaling == TFM_ROPE_SCALE_DYNAMIC ? c->inv_dyn : m->inv_freq;
				double ang = (double)TPOS(c, pos0, t) * m->pos_scale * f[i];
				c->cs[t * (m->n_rot / 2) + i] = (float)(cos(ang) * m->rope_mscale);
				c->sn[t * (m->n_rot / 2) + i] = (float)(sin(ang) * m->rope_mscale);
				if (m->inv_freq_local) {
					double a2 = (double)TPOS(c, pos0, t) * m->inv_freq_local[i];
					c->cs2[t * (m->n_rot / 2) + i] = (float)cos(a2);
					c->sn2[t * (m->n_rot / 2) + i] = (float)sin(a2);
				}
			}
}

/* granite's residual_multiplier: x + m * f(x) */
static void residual_scale(const struct tfm_spec *s, float *h, int64_t n)
{
	if (s->residual_scale != 0 && s->residual_scale != 1)
		for (int64_t i = 0; i < n; i++)
			h[i] *= s->residual_scale;
}

/* Layer l on the n rows of c->x, tokens at pos0.. */
static void block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd;
	if (s->layer_kind[l] == TFM_LAYER_RWKV) { /* the whole block: rwkv.c */
		tfm_ssm_rwkv_block(c, l, n, pos0);
		return;
	}
	if (s->layer_kind[l] == TFM_LAYER_MAMBA || s->layer_kind[l] == TFM_LAYER_MAMBA2 ||
	    s->layer_kind[l] == TFM_LAYER_GDN || s->layer_kind[l] == TFM_LAYER_MLSTM) {
		/* x + mixer(norm(x)); a hybrid's (jamba, bamba, qwen3_next) or
		 * xlstm's then x + ffn(norm(x)) */
		norm_rows(c, c->xn, c->x, n, d, &L->attn_norm);
		tfm_mamba_mix(c, l, n, pos0);
		add_rows(c, c->x, c->x, c->h, n, d);
		if (L->ffn_norm.w) {
			norm_rows(c, c->xn, c->x, n, d, &L->ffn_norm);
			ffn(c, l, n, c->h, c->xn);
			add_rows(c, c->x, c->x, c->h, n, d);
		}
		return;
	}
	if (s->norm_place == TFM_NORM_POST) {
		/* post-LN (BERT, OPT with do_layer_norm_before=false):
		 * x = ln1(x + attn(x)); x = ln2(x + ffn(x)) */
		memcpy(c->xn, c->x, (size_t)(n * d) * sizeof(float));
		attention(c, l, n, pos0);
		add_rows(c, c->x, c->x, c->h, n, d);
		norm_rows(c, c->x, c->x, n, d, &L->attn_norm);
		if (L->cq.data) { /* BART's decoder: x = ln(x + cross(x)) */
			memcpy(c->xn, c->x, (size_t)(n * d) * sizeof(float));
			cross_attention(c, l, n);
			add_rows(c, c->x, c->x, c->h, n, d);
			norm_rows(c, c->x, c->x, n, d, &L->cross_norm);
		}
		memcpy(c->xn, c->x, (size_t)(n * d) * sizeof(float));
		ffn(c, l, n, c->h, c->xn);
		add_rows(c, c->x, c->x, c->h, n, d);
		norm_rows(c, c->x, c->x, n, d, &L->ffn_norm);
		return;
	}
	int post = s->norm_place == TFM_NORM_SANDWICH || s->norm_place == TFM_NORM_POST_IN;
	/* post_in, and ModernBERT's layer 0 (its input is the normed
	 * embeddings): no norm before attention */
	if (s->norm_place == TFM_NORM_POST_IN || (l == 0 && s->no_first_attn_norm))
		memcpy(c->xn, c->x, (size_t)(n * d) * sizeof(float));
	else
		norm_rows(c, c->xn, c->x, n, d, &L->attn_norm);
	attention(c, l, n, pos0);
	if (post)
		norm_rows(c, c->h, c->h, n, d, &L->attn_post_norm);
	if (s->parallel_residual) {
		/* x + attn(ln1(x)) + ffn(ln2(x)), or one shared norm */
		if (L->ffn_norm.w && !s->shared_attn_ffn_norm)
			norm_rows(c, c->xn, c->x, n, d, &L->ffn_norm);
		ffn(c, l, n, c->h2, c->xn);
		residual_scale(s, c->h, n * d);
		residual_scale(s, c->h2, n * d);
		add_rows(c, c->x, c->x, c->h, n, d);
		add_rows(c, c->x, c->x, c->h2, n, d);
	} else {
		/* bloom's apply_residual_connection_post_layernorm: the
		 * residual is the normed input */
		residual_scale(s, c->h, n * d);
		add_rows(c, c->x, s->residual_from_norm ? c->xn : c->x, c->h, n, d);
		if (L->cq.data) { /* a decoder's cross-attention (encoder-decoder) */
			norm_rows(c, c->xn, c->x, n, d, &L->cross_norm);
			cross_attention(c, l, n);
			add_rows(c, c->x, c->x, c->h, n, d);
		}
		if (s->norm_place == TFM_NORM_POST_IN)
			memcpy(c->xn, c->x, (size_t)(n * d) * sizeof(float));
		else
			norm_rows(c, c->xn, c->x, n, d, &L->ffn_norm);
		ffn(c, l, n, c->h, c->xn);
		if (post)
			norm_rows(c, c->h, c->h, n, d, &L->ffn_post_norm);
		residual_scale(s, c->h, n * d);
		add_rows(c, c->x, s->residual_from_norm ? c->xn : c->x, c->h, n, d);
	}
}

/* One batch of n <= n_batch tokens; logits for rows [first, n) into logits.
 * An encoder-decoder model runs its decoder's layers (the source is
 * encoded: tfm_seq2seq_encode). */
static void forward(struct tfm_ctx *c, const int32_t *tok, int64_t n, float *logits,
		    int64_t first)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	int64_t d = s->n_embd, pos0 = c->pos;
	int64_t l0 = s->family == TFM_FAMILY_ENCDEC ? s->n_layer : 0;
	int64_t l1 = l0 + (l0 ? s->n_layer_dec : s->n_layer);
	embed(c, tok, n, pos0);
	if (c->conv) /* DeBERTa's ConvLayer reads the embeddings' output */
		memcpy(c->conv, c->x, (size_t)(n * d) * sizeof(float));
	for (int64_t l = l0; l < l1; l++) {
		if (l == 1 && c->conv)
			tfm_deberta_conv(c, n);
		block(c, l, n, pos0);
	}
	if (s->n_layer == 1 && c->conv)
		tfm_deberta_conv(c, n);
	c->pos += n;
	if (!logits || first >= n)
		return;
	float *xr = c->x + first * d;
	int64_t nr = n - first;
	if (s->final_norm) {
		norm_rows(c, c->xn, xr, nr, d, &m->out_norm);
		xr = c->xn;
	}
	if (m->proj_out.data) { /* back to the word-embedding width */
		be->matmul(&c->kx, c->h, xr, &m->proj_out, nr);
		xr = c->h;
	}
	be->matmul(&c->kx, logits, xr, &m->output, nr);
	if (s->head_scale != 0 && s->head_scale != 1) /* on the hidden state, so before the bias */
		for (int64_t i = 0; i < nr * s->n_vocab; i++)
			logits[i] *= s->head_scale;
	add_bias(c, logits, m->out_b, nr, s->n_vocab);
	if (s->final_softcap > 0) {
		float cap = s->final_softcap;
		for (int64_t i = 0; i < nr * s->n_vocab; i++)
			logits[i] = cap * tanhf(logits[i] / cap);
	}
}

/* Dynamic NTK as transformers runs it: when a call reaches a length L past
 * the longest so far, theta becomes theta ((f L / orig) - (f - 1))^(d/(d-2))
 * for this and later calls; a call back within the original context
 * restores the original frequencies.  Keys already cached keep the rotation
 * they were stored with (transformers never re-rotates them). */
static void dynamic_ntk(struct tfm_ctx *c, int64_t len)
{
	const struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t h = m->n_rot / 2, orig = m->rope_orig;
	if (len > c->dyn_max) {
		double d = (double)m->n_rot, f = s->rope_factor;
		double theta = (s->rope_theta > 0 ? s->rope_theta : 10000.0) *
			       pow(f * (double)len / (double)orig - (f - 1), d / (d - 2));
		for (int64_t i = 0; i < h; i++)
			c->inv_dyn[i] = (float)(1.0 / pow(theta, 2.0 * (double)i / d));
		c->dyn_max = len;
	}
	if (len < orig && c->dyn_max > orig) {
		memcpy(c->inv_dyn, m->inv_freq, (size_t)h * sizeof(float));
		c->dyn_max = orig;
	}
}

int tfm_eval(struct tfm_ctx *c, const int32_t *tokens, int64_t n, float *logits, int all)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	if (n < 0 || (n > 0 && !tokens))
		return tfm_seterr(TFM_E_INVAL, "eval: bad token count %lld", (long long)n);
	if (s->family == TFM_FAMILY_ENCODER && (logits || c->pos || n > c->n_batch))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: an encoder-only model has no LM head and "
				  "reads one whole sequence at a time (tfm_encode)", s->arch);
	if (s->family == TFM_FAMILY_ENCDEC && c->n_src < 1)
		return tfm_seterr(TFM_E_INVAL, "%s: an encoder-decoder model's decoder runs after "
				  "its source is encoded (tfm_seq2seq_encode)", s->arch);
	for (int64_t i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= s->n_vocab)
			return tfm_seterr(TFM_E_INVAL, "token id %d out of range (vocabulary of %lld)",
					  (int)tokens[i], (long long)s->n_vocab);
	int64_t span = c->n_seg > 1 ? c->seg_max : c->pos + n; /* positions this call reaches */
	if (!c->ring && span > c->n_ctx)
		return tfm_seterr(TFM_E_INVAL, "context full (%lld tokens)", (long long)c->n_ctx);
	if (m->pos_embd.data && span + s->pos_offset > m->pos_embd.out)
		return tfm_seterr(TFM_E_INVAL, "context full (%lld learned positions)",
				  (long long)(m->pos_embd.out - s->pos_offset));
	c->rope_long = m->inv_freq_long && span > m->rope_orig;
	if (s->rope_scaling == TFM_ROPE_SCALE_DYNAMIC)
		dynamic_ntk(c, span);
	for (int64_t done = 0; done < n;) {
		int64_t b = n - done < c->n_batch ? n - done : c->n_batch;
		int last = done + b == n;
		float *lg = NULL;
		int64_t first = b;
		if (logits && all) {
			lg = logits + done * s->n_vocab;
			first = 0;
		} else if (logits && last) {
			lg = logits;
			first = b - 1;
		}
		forward(c, tokens + done, b, lg, first);
		done += b;
	}
	return TFM_OK;
}

/* The encoder stack of an encoder-decoder model over src[n]: the same
 * blocks with bidirectional attention (and the encoder's own T5 bias), its
 * final norm, then every decoder layer's cross-attention keys and values
 * of the result, stored for the decoding steps that follow. */
int tfm_seq2seq_encode(struct tfm_ctx *c, const int32_t *src, int64_t n, float *hidden)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	int64_t d = s->n_embd, qd = m->q_dim;
	if (s->family != TFM_FAMILY_ENCDEC)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: not an encoder-decoder model", s->arch);
	if (n < 1 || !src || n > c->n_ctx)
		return tfm_seterr(TFM_E_INVAL, "source of %lld tokens (the context holds 1 to %lld)",
				  (long long)n, (long long)c->n_ctx);
	if (m->enc_pos_embd.data && n + s->pos_offset > m->enc_pos_embd.out)
		return tfm_seterr(TFM_E_INVAL, "source of %lld tokens (%lld learned positions)",
				  (long long)n, (long long)(m->enc_pos_embd.out - s->pos_offset));
	/* the source vocabulary: the token tables' rows (Marian unshared) */
	int64_t nv = s->n_vocab_src > 0 ? s->n_vocab_src : s->n_vocab;
	for (int64_t i = 0; i < n; i++)
		if (src[i] < 0 || src[i] >= nv)
			return tfm_seterr(TFM_E_INVAL, "token id %d out of range (vocabulary of %lld)",
					  (int)src[i], (long long)nv);
	c->enc_pass = 1;
	embed(c, src, n, 0);
	for (int64_t l = 0; l < s->n_layer; l++)
		block(c, l, n, 0);
	c->enc_pass = 0;
	if (m->enc_norm.w)
		norm_rows(c, c->x, c->x, n, d, &m->enc_norm);
	if (hidden)
		memcpy(hidden, c->x, (size_t)(n * d) * sizeof(float));
	c->n_src = n;
	static _Atomic uint64_t serial; /* tells contexts holding the same encoding apart */
	c->src_serial = atomic_fetch_add(&serial, 1) + 1;
	struct tfm_attn_args a = cross_args(c, n);
	for (int64_t l = s->n_layer; l < s->n_layer + s->n_layer_dec; l++) {
		struct tfm_layer *L = &m->layers[l];
		matmul_b(c, c->k, c->x, &L->ck, L->cbk, n);
		matmul_b(c, c->v, c->x, &L->cv, L->cbv, n);
		if (m->k_rot)
			tfm_kvrot(c->k, n * s->n_head, m->head_dim, m->k_rot);
		if (m->v_rot)
			tfm_kvrot(c->v, n * s->n_head, m->v_dim, m->v_rot);
		for (int64_t t = 0; t < n; t++)
			be->kv_store((uint8_t *)c->kc + c->ck_off[l], (uint8_t *)c->vc + c->cv_off[l],
				     c->k + t * qd, c->v + t * qd, t, &a);
	}
	c->pos = 0;
	return TFM_OK;
}
