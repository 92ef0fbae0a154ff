/* bench.c (model): weight bytes and KV-cache bytes of loaded models and
 * contexts, for tfm-bench's "% of limit" (see model/bench.h).  Walks the
 * bound matrices, so it counts what the executor reads, whatever the file. */
#include "model/model-impl.h"
#include "model/bench.h"

#include <string.h>

struct acc {
	double total, tok, elems;
	double by_type[TFM_TYPE_COUNT]; /* stored bytes per matrix type */
};

/* A matrix stored `copies` times (experts), of which `read` are read per
 * token. */
static void mat(struct acc *a, const struct tfm_mat *w, double copies, double read)
{
	if (!w->data)
		return;
	double b = (double)w->row_bytes * (double)w->out;
	a->total += b * copies;
	a->tok += b * read;
	a->elems += (double)w->in * (double)w->out * copies;
	if (w->type >= 0 && w->type < TFM_TYPE_COUNT)
		a->by_type[w->type] += b * copies;
}

int tfm_model_bytes(const struct tfm_model *m, struct tfm_model_bytes *b)
{
	const struct tfm_spec *s = &m->spec;
	struct acc a;
	struct tfm_counts c;
	int st;
	memset(b, 0, sizeof *b);
	memset(&a, 0, sizeof a);
	if ((st = tfm_spec_count(s, 4, 1, &c)))
		return st;
	/* embeddings: one row read per token; a tied head reads all of it */
	mat(&a, &m->tok_embd, 1, 0);
	a.tok += (double)m->tok_embd.row_bytes;
	if (m->pos_embd.data) {
		mat(&a, &m->pos_embd, 1, 0);
		a.tok += (double)m->pos_embd.row_bytes;
	}
	if (m->output.data != m->tok_embd.data)
		mat(&a, &m->output, 1, 1);
	else
		a.tok += (double)m->output.row_bytes * (double)m->output.out;
	/* encoder-decoder: a decoded token reads the decoder's layers and its
	 * cross-attention's q and o (k and v were applied once to the source) */
	int encdec = s->family == TFM_FAMILY_ENCDEC;
	for (int64_t l = 0; l < s->n_layer + (encdec ? s->n_layer_dec : 0); l++) {
		const struct tfm_layer *L = &m->layers[l];
		double rd = encdec && l < s->n_layer ? 0 : 1;
		mat(&a, &L->cq, 1, 1);
		mat(&a, &L->co, 1, 1);
		mat(&a, &L->ck, 1, 0);
		mat(&a, &L->cv, 1, 0);
		/* shared blocks (ALBERT): stored once, read by every layer */
		double own = l == 0 || encdec ||
			     tfm_spec_layer_block(s, l) != tfm_spec_layer_block(s, l - 1);
		const struct tfm_mat *dense[] = {&L->wq, &L->wk, &L->wv, &L->wqkv, &L->wo,
						 &L->q_a, &L->q_b, &L->kv_a, &L->kv_b, &L->router,
						 &L->sh_gate, &L->sh_up, &L->sh_down};
		for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++)
			mat(&a, dense[i], own, rd);
		/* MoE: gate/up/down are one expert of n_expert stored */
		double copies = (L->moe ? (double)s->n_expert : 1) * own;
		double read = (L->moe ? (double)s->n_expert_used : 1) * rd;
		mat(&a, &L->gate, copies, read);
		mat(&a, &L->up, copies, read);
		mat(&a, &L->down, copies, read);
	}
	/* norms, biases and other vectors: f32, all read every token */
	double vec = (double)c.total - a.elems;
	if (vec < 0)
		vec = 0;
	b->total = a.total + 4 * vec;
	b->per_token = a.tok + 4 * vec;
	b->params = (int64_t)(a.elems + vec);
	b->type = TFM_TYPE_F32;
	for (int t = 0; t < TFM_TYPE_COUNT; t++)
		if (a.by_type[t] > a.by_type[b->type])
			b->type = t;
	return TFM_OK;
}

size_t tfm_ctx_kv_alloc(const struct tfm_ctx *c)
{
	/* what tfm_ctx_new sized the arrays by, in the cache types (MLA: the
	 * latent rows alone) */
	return (size_t)c->kv_bytes;
}
