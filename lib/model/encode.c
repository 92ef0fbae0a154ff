/* encode.c: encoder-only models on the one block executor.  A sequence is
 * one tfm_eval batch from position 0 (the context makes its batch as long as
 * its size for encoders, and the attention sees every key of the batch);
 * the heads here read the hidden states it leaves in the context:
 * sentence-transformers' pooling and Normalize, and the sequence
 * classifier (pooler + classifier, softmax or sigmoid). */
#include "model/model-impl.h"

#include <math.h>
#include <string.h>

/* The knobs of an encoder the executor does not run; decoders pass. */
int tfm_encoder_check_spec(const struct tfm_spec *s)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	if (s->family != TFM_FAMILY_ENCODER)
		return TFM_OK;
	/* a window is bidirectional here: window / 2 keys either side */
	if (s->chunk > 0 || s->mask != TFM_MASK_BIDIR)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: encoder with a %s mask not supported yet",
				  arch, s->chunk ? "chunked" : "causal");
	if (s->pos_attn == TFM_POS_ALIBI)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: encoder with ALiBi positions not supported "
				  "yet", arch);
	if (s->head != TFM_HEAD_EMBED && s->head != TFM_HEAD_CLASSIFIER && s->head != TFM_HEAD_TOKEN)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: encoder with an LM head (masked LM) not "
				  "supported yet", arch);
	if ((s->head == TFM_HEAD_CLASSIFIER || s->head == TFM_HEAD_TOKEN) && s->n_labels < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: classifier without labels", arch);
	if (s->pooling < TFM_POOL_NONE || s->pooling > TFM_POOL_MEAN_SQRT)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: this head.pooling", arch);
	if (s->pooler_act != TFM_POOLER_TANH && s->pooler_act != TFM_POOLER_RELU &&
	    s->pooler_act != TFM_POOLER_GELU && s->pooler_act != TFM_POOLER_SILU)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: this head.pooler_act", arch);
	if (s->head == TFM_HEAD_CLASSIFIER && s->pooling != TFM_POOL_NONE &&
	    s->pooling != TFM_POOL_CLS && s->pooling != TFM_POOL_MEAN)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: a sequence classifier pools the first token "
				  "or the mean (head.pooling %s not supported)", arch,
				  tfm_spec_enum_name("head.pooling", s->pooling));
	if (s->n_embd_io > 0 && !s->embd_proj)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: factorised embeddings (embd.n_io) "
				  "without embd.proj in an encoder not supported yet", arch);
	return TFM_OK;
}

/* Layers a batch of several sequences runs through (exec.c splits the
 * attention at the sequences): plain attention blocks.  Other mixers
 * (DeBERTa's disentangled attention, deberta.c) and DeBERTa's ConvLayer
 * (it mixes neighbouring tokens) run each sequence alone. */
static int can_batch(const struct tfm_model *m)
{
	const struct tfm_spec *s = &m->spec;
	for (int64_t l = 0; l < s->n_layer; l++)
		if (s->layer_kind[l] != TFM_LAYER_ATTN)
			return 0;
	return !m->mla && !s->diff_attn && s->pos_attn != TFM_POS_DEBERTA && s->conv_kernel <= 0;
}

/* The hidden states of n_seg sequences of len[] tokens back to back in tok
 * (n_seg 1: one) left in c->x [n][n_embd], n the sum. */
static int encode_rows(struct tfm_ctx *c, const int32_t *tok, const int32_t *types,
		       const int64_t *len, int64_t n_seg, int64_t n)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, nt = s->n_token_types > 0 ? s->n_token_types : 1;
	if (s->family != TFM_FAMILY_ENCODER)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: not an encoder-only model", s->arch);
	if (n < 1 || n > c->n_batch)
		return tfm_seterr(TFM_E_INVAL, "%s of %lld tokens (the context holds %lld)",
				  n_seg > 1 ? "sequences" : "a sequence", (long long)n,
				  (long long)c->n_batch);
	for (int64_t i = 0; i < n_seg; i++)
		if (len[i] > c->n_ctx)
			return tfm_seterr(TFM_E_INVAL, "a sequence of %lld tokens (the context holds "
					  "%lld)", (long long)len[i], (long long)c->n_ctx);
	if (s->n_token_types <= 0)
		types = NULL; /* no token-type embeddings (ModernBERT, DeBERTa-v3): transformers
			       * ignores the tokenizer's types too */
	for (int64_t i = 0; types && i < n; i++)
		if (types[i] < 0 || types[i] >= nt)
			return tfm_seterr(TFM_E_INVAL, "token type %d at %lld (the model has %lld)",
					  (int)types[i], (long long)i, (long long)nt);
	/* RoBERTa numbers positions past the padding token, which keeps
	 * position padding_idx wherever it stands: not the simple offset */
	for (int64_t i = 0; s->pos_offset > 0 && i < n; i++)
		if (tok[i] == s->pad_id)
			return tfm_seterr(TFM_E_INVAL, "%s: the padding token %d inside the input (at "
					  "%lld)", s->arch, (int)s->pad_id, (long long)i);
	int32_t *tpos = NULL;
	if (n_seg > 1) {
		if (!(tpos = malloc((size_t)n * sizeof *tpos)))
			return tfm_seterr(TFM_E_NOMEM, "out of memory");
		c->seg_max = 0;
		for (int64_t i = 0, t = 0; i < n_seg; i++) {
			for (int64_t j = 0; j < len[i]; j++)
				tpos[t++] = (int32_t)j;
			c->seg_max = len[i] > c->seg_max ? len[i] : c->seg_max;
		}
		c->seg = len;
		c->n_seg = n_seg;
		c->tpos = tpos;
	}
	c->pos = 0;
	c->types = types;
	int st = tfm_eval(c, tok, n, NULL, 0);
	c->types = NULL;
	c->pos = 0;
	c->seg = NULL;
	c->n_seg = 0;
	c->tpos = NULL;
	free(tpos);
	if (st)
		return st;
	if (s->final_norm) { /* pre-LN encoders end with a norm */
		float eps = m->out_norm.eps > 0 ? m->out_norm.eps : (float)s->norm_eps;
		for (int64_t t = 0; t < n; t++)
			if (s->norm == TFM_NORM_RMS)
				m->be->rmsnorm(c->x + t * d, c->x + t * d, m->out_norm.w, d, eps,
					       s->norm_plus_one);
			else
				m->be->layernorm(c->x + t * d, c->x + t * d, m->out_norm.w,
						 m->out_norm.b, d, eps, s->norm_plus_one);
	}
	return TFM_OK;
}

int tfm_encode(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
	       float *hidden)
{
	int st = encode_rows(c, tok, types, &n, 1, n);
	if (!st && hidden)
		memcpy(hidden, c->x, (size_t)(n * c->m->spec.n_embd) * sizeof *hidden);
	return st;
}

/* out[d]: the pooled (and maybe normalised) rows x[n][d] */
static int pool(const float *x, int64_t n, int64_t d, int pooling, int normalize, float *out)
{
	for (int64_t i = 0; i < d; i++) {
		double a = pooling == TFM_POOL_MAX ? -INFINITY : 0;
		switch (pooling) {
		case TFM_POOL_CLS:
			a = x[i];
			break;
		case TFM_POOL_LAST:
			a = x[(n - 1) * d + i];
			break;
		case TFM_POOL_MAX:
			for (int64_t t = 0; t < n; t++)
				a = x[t * d + i] > a ? x[t * d + i] : a;
			break;
		case TFM_POOL_MEAN:
		case TFM_POOL_MEAN_SQRT:
			for (int64_t t = 0; t < n; t++)
				a += x[t * d + i];
			a /= pooling == TFM_POOL_MEAN ? (double)n : sqrt((double)n);
			break;
		default:
			return tfm_seterr(TFM_E_INVAL, "pooling %d", pooling);
		}
		out[i] = (float)a;
	}
	if (normalize > 0) { /* torch.nn.functional.normalize: x / max(|x|, 1e-12) */
		double ss = 0;
		for (int64_t i = 0; i < d; i++)
			ss += (double)out[i] * out[i];
		double nrm = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
		for (int64_t i = 0; i < d; i++)
			out[i] = (float)(out[i] / nrm);
	}
	return TFM_OK;
}

int tfm_embed_batch(struct tfm_ctx *c, const int32_t *tok, const int32_t *types,
		    const int64_t *len, int64_t n_seq, int pooling, int normalize, float *out)
{
	const struct tfm_spec *s = &c->m->spec;
	int64_t d = s->n_embd, n = 0;
	if (pooling == TFM_POOL_NONE)
		pooling = s->pooling != TFM_POOL_NONE ? s->pooling : TFM_POOL_CLS;
	if (normalize < 0)
		normalize = s->normalize;
	for (int64_t i = 0; i < n_seq; i++) {
		if (len[i] < 1)
			return tfm_seterr(TFM_E_INVAL, "sequence %lld has no tokens", (long long)i);
		n += len[i];
	}
	int st = TFM_OK;
	if (n_seq > 1 && !can_batch(c->m)) { /* one at a time */
		for (int64_t i = 0, t = 0; !st && i < n_seq; t += len[i++])
			st = tfm_embed_batch(c, tok + t, types ? types + t : NULL, len + i, 1, pooling,
					     normalize, out + i * d);
		return st;
	}
	if ((st = encode_rows(c, tok, types, len, n_seq, n)))
		return st;
	for (int64_t i = 0, t = 0; !st && i < n_seq; t += len[i++])
		st = pool(c->x + t * d, len[i], d, pooling, normalize, out + i * d);
	return st;
}

int tfm_embed(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
	      int pooling, int normalize, float *out)
{
	return tfm_embed_batch(c, tok, types, &n, 1, pooling, normalize, out);
}

/* The pooler's activation, one value (gelu: the exact, erf GELU) */
static float pooler_act(int act, float x)
{
	switch (act) {
	case TFM_POOLER_RELU:
		return x > 0 ? x : 0;
	case TFM_POOLER_GELU:
		return (float)(0.5 * x * (1 + erf(x / sqrt(2.0))));
	case TFM_POOLER_SILU:
		return x / (1.0f + expf(-x));
	default:
		return tanhf(x);
	}
}

/* y[n][d] = act(x W^T + b), then with head.transform (ModernBERT's
 * prediction head) the LayerNorm nw of each row; b may be NULL */
static void dense_act(struct tfm_ctx *c, float *y, const float *x, int64_t n,
		      const struct tfm_mat *w, const float *b, const struct tfm_norm_w *nw, int act)
{
	const struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd;
	m->be->matmul(&c->kx, y, x, w, n);
	for (int64_t t = 0; t < n; t++) {
		float *r = y + t * d;
		if (b)
			m->be->add(r, r, b, d);
		for (int64_t i = 0; i < d; i++)
			r[i] = pooler_act(act, r[i]);
		if (s->head_transform)
			m->be->layernorm(r, r, nw->w, nw->b, d,
					 nw->eps > 0 ? nw->eps : (float)s->norm_eps, 0);
	}
}

/* The classifier on the hidden states x[n][d] of one sequence: pooled
 * (the first token, or ModernBERT's mean), the pooler, the classifier */
static void classify_rows(struct tfm_ctx *c, const float *x, int64_t n, float *logits,
			  float *probs)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, nl = s->n_labels;
	if (s->pooling == TFM_POOL_MEAN) { /* ModernBERT's classifier_pooling "mean" */
		for (int64_t i = 0; i < d; i++) {
			double a = 0;
			for (int64_t t = 0; t < n; t++)
				a += x[t * d + i];
			c->h2[i] = (float)(a / (double)n);
		}
		x = c->h2;
	}
	if (m->pooler.data) { /* gelu: ELECTRA's and ModernBERT's exact (erf) GELU */
		dense_act(c, c->h, x, 1, &m->pooler, m->pooler_b, &m->pooler_norm, s->pooler_act);
		x = c->h;
	}
	m->be->matmul(&c->kx, logits, x, &m->cls, 1);
	m->be->add(logits, logits, m->cls_b, nl);
	if (!probs)
		return;
	if (s->multi_label) {
		for (int64_t i = 0; i < nl; i++)
			probs[i] = 1.0f / (1.0f + expf(-logits[i]));
	} else {
		memcpy(probs, logits, (size_t)nl * sizeof *probs);
		m->be->softmax(probs, nl);
	}
}

int tfm_classify_batch(struct tfm_ctx *c, const int32_t *tok, const int32_t *types,
		       const int64_t *len, int64_t n_seq, float *logits, float *probs)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, nl = s->n_labels, n = 0;
	if (s->head != TFM_HEAD_CLASSIFIER || !m->cls.data)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: the model has no sequence-classification "
				  "head", s->arch);
	for (int64_t i = 0; i < n_seq; i++) {
		if (len[i] < 1)
			return tfm_seterr(TFM_E_INVAL, "sequence %lld has no tokens", (long long)i);
		n += len[i];
	}
	int st = TFM_OK;
	if (n_seq > 1 && !can_batch(m)) { /* one at a time */
		for (int64_t i = 0, t = 0; !st && i < n_seq; t += len[i++])
			st = tfm_classify_batch(c, tok + t, types ? types + t : NULL, len + i, 1,
						logits + i * nl, probs ? probs + i * nl : NULL);
		return st;
	}
	if ((st = encode_rows(c, tok, types, len, n_seq, n)))
		return st;
	for (int64_t i = 0, t = 0; i < n_seq; t += len[i++])
		classify_rows(c, c->x + t * d, len[i], logits + i * nl, probs ? probs + i * nl : NULL);
	return TFM_OK;
}

int tfm_classify(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
		 float *logits, float *probs)
{
	return tfm_classify_batch(c, tok, types, &n, 1, logits, probs);
}

int tfm_fill_mask(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
		  int64_t pos, float *logits)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd;
	if (!m->mlm.data)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: the model has no masked-LM head", s->arch);
	if (pos < 0 || pos >= n)
		return tfm_seterr(TFM_E_INVAL, "mask position %lld of %lld tokens", (long long)pos,
				  (long long)n);
	int st = tfm_encode(c, tok, types, n, NULL);
	if (st)
		return st;
	if (s->head_transform) { /* ModernBERT: the prediction head, classifier_activation */
		dense_act(c, c->h, c->x + pos * d, 1, &m->mlm, m->mlm_b, &m->mlm_norm, s->pooler_act);
	} else {
		/* BERT's, DistilBERT's and ALBERT's transform use the model's
		 * activation, RoBERTa's lm_head and ELECTRA's generator gelu
		 * whatever hidden_act says; ELECTRA and ALBERT map to the
		 * embeddings' width (io), where the tied decoder reads */
		int act = !strcmp(s->arch, "roberta") || !strcmp(s->arch, "xlm-roberta") ||
			  !strcmp(s->arch, "electra") ? TFM_ACT_GELU : s->act;
		int64_t w = m->mlm.out;
		float eps = m->mlm_norm.eps > 0 ? m->mlm_norm.eps : (float)s->norm_eps;
		m->be->matmul(&c->kx, c->h, c->x + pos * d, &m->mlm, 1);
		m->be->add(c->h, c->h, m->mlm_b, w);
		m->be->act(c->h, w, act);
		m->be->layernorm(c->h, c->h, m->mlm_norm.w, m->mlm_norm.b, w, eps, 0);
	}
	m->be->matmul(&c->kx, logits, c->h, &m->output, 1);
	if (m->out_b)
		m->be->add(logits, logits, m->out_b, s->n_vocab);
	return TFM_OK;
}

int tfm_tag(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n, float *logits)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	if (s->head != TFM_HEAD_TOKEN || !m->cls.data)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: the model has no token-classification head",
				  s->arch);
	int st = tfm_encode(c, tok, types, n, NULL);
	if (st)
		return st;
	const float *x = c->x;
	if (s->head_transform && m->pooler.data) { /* ModernBERT: the prediction head per token */
		dense_act(c, c->h, c->x, n, &m->pooler, m->pooler_b, &m->pooler_norm, s->pooler_act);
		x = c->h;
	}
	m->be->matmul(&c->kx, logits, x, &m->cls, n);
	for (int64_t t = 0; t < n; t++)
		m->be->add(logits + t * s->n_labels, logits + t * s->n_labels, m->cls_b, s->n_labels);
	return TFM_OK;
}
