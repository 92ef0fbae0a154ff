/* count.c: parameter counts, KV-cache bytes and FLOPs per token, from the
 * spec alone (no weights).  The layouts counted are those of the Hugging Face
 * modeling code for each knob; see spec.h for the definition of each part. */
#include "spec-impl.h"

#include <string.h>

static int64_t norm_size(const struct tfm_spec *s, int64_t n)
{
	if (s->norm == TFM_NORM_NONE)
		return 0;
	return n * (s->norm_bias ? 2 : 1);
}

/* One attention block (self or cross) without the norm around it. */
static int64_t attn_params(const struct tfm_spec *s)
{
	int64_t e = s->n_embd, nh = s->n_head, nkv = s->n_head_kv, hd = s->head_dim, p = 0;
	if (s->kv_lora_rank) {   /* MLA */
		int64_t qk = s->qk_nope_dim + s->qk_rope_dim;
		if (s->q_lora_rank)
			p += e * s->q_lora_rank + norm_size(s, s->q_lora_rank) +
			     s->q_lora_rank * nh * qk;
		else
			p += e * nh * qk;
		p += e * (s->kv_lora_rank + s->qk_rope_dim) + norm_size(s, s->kv_lora_rank);
		p += s->kv_lora_rank * nh * (s->qk_nope_dim + s->v_head_dim);
		p += nh * s->v_head_dim * e;
		if (s->attn_bias_out)
			p += e;
		return p;
	}
	p = e * (nh + 2 * nkv) * hd + nh * hd * e;
	if (s->attn_out_gate) /* the gate half of the query projection */
		p += e * nh * hd;
	if (s->attn_bias_qkv)
		p += (nh + 2 * nkv) * hd;
	if (s->attn_bias_out)
		p += e;
	if (s->qk_norm == TFM_QK_NORM_HEAD)
		p += 2 * norm_size(s, hd);
	else if (s->qk_norm == TFM_QK_NORM_FULL)
		p += norm_size(s, nh * hd) + norm_size(s, nkv * hd);
	if (s->diff_attn) /* the lambda vectors q1, k1, q2, k2 */
		p += 4 * hd;
	if (s->attn_bias_qv) /* DeBERTa v1's q_bias, v_bias */
		p += (nh + nkv) * hd;
	if (s->pos_attn == TFM_POS_DEBERTA && !s->rel_share_key) /* attn_pos_k / _q, biases */
		p += (s->rel_c2p + s->rel_p2c) * e * nh * hd +
		     (s->rel_c2p * s->rel_pos_k_bias + s->rel_p2c) * nh * hd;
	return p;
}

static int64_t mlp_params(const struct tfm_spec *s, int64_t ff)
{
	int64_t mats = s->gated ? 3 : 2;
	int64_t p = mats * s->n_embd * ff;
	if (s->ffn_bias)
		p += (s->gated ? 2 : 1) * ff + s->n_embd;
	return p;
}

static int64_t mamba_params(const struct tfm_spec *s, int kind)
{
	int64_t e = s->n_embd, di = s->ssm_d_inner, ds = s->ssm_d_state, dc = s->ssm_d_conv;
	int64_t p = 0;
	if (kind == TFM_LAYER_GDN) { /* qwen3_next's Gated DeltaNet */
		int64_t nv = s->ssm_n_head, qk = 2 * s->ssm_n_group * ds;
		p += e * (qk + 2 * di) + e * 2 * nv;     /* in_proj_qkvz, in_proj_ba */
		p += (qk + di) * dc;                     /* conv, no bias */
		p += 2 * nv + (nv > 0 ? di / nv : 0);    /* dt_bias, A_log, the gated norm */
		return p + di * e;                       /* out_proj */
	}
	if (kind == TFM_LAYER_MLSTM) { /* q, k, v, ogate, igate and fgate (biased), out_proj */
		int64_t qk = s->xlstm_qk_dim, vd = s->xlstm_v_dim, nh = s->ssm_n_head;
		return e * (2 * qk + 2 * vd) + 2 * (e * nh + nh) + vd * e;
	}
	if (kind == TFM_LAYER_MAMBA) {
		int64_t r = s->ssm_dt_rank;
		p += e * 2 * di + (s->ssm_bias ? 2 * di : 0);
		p += di * dc + (s->ssm_conv_bias ? di : 0);
		p += di * (r + 2 * ds);              /* x_proj */
		p += r * di + di;                    /* dt_proj with bias */
		p += di * ds + di;                   /* A_log, D */
		if (s->ssm_dt_norm && s->ssm_norm_w)
			p += r + 2 * ds;             /* jamba's norms have weights, falcon_mamba's none */
	} else {   /* mamba2 */
		int64_t ng = s->ssm_n_group, nh = s->ssm_n_head, conv = di + 2 * ng * ds;
		int64_t proj = 2 * di + 2 * ng * ds + nh;
		p += e * proj + (s->ssm_bias ? proj : 0);
		p += conv * dc + (s->ssm_conv_bias ? conv : 0);
		p += 3 * nh;                         /* dt_bias, A_log, D */
		p += di;                             /* gated RMSNorm */
	}
	p += di * e + (s->ssm_bias ? e : 0);         /* out_proj */
	return p;
}

/* RWKV v4, v5 and v7 time mixing (the "ssm" part) and channel mixing
 * ("ffn"): v4 three lerps, decay, bonus, key, value, receptance, output;
 * v5 adds the group norm's weight and bias, v5.1 has its decay and bonus
 * per head, v5.2 a fourth lerp and the gate.  v7 (layer l): six lerps,
 * w0, a0, k_k, k_a, r_k, the four matrices, the group norm, the low-rank
 * pairs of the decay, a and the gate, and after the first layer v0 and
 * the value residual's pair; its channel mixing has one lerp, key and
 * value.  v6: six lerps (x and the fused five), their low-rank pair
 * (e by 5 rank, then 5 of rank by e), decay and its pair, bonus, the five
 * matrices and the group norm; channel mixing as v5. */
static int64_t rwkv_time_params(const struct tfm_spec *s, int64_t l)
{
	int64_t e = s->n_embd;
	if (s->rwkv_version == 7)
		return 6 * e + 5 * e + 4 * e * e + 2 * e +
		       2 * e * (s->rwkv_lora_w + s->rwkv_lora_a + s->rwkv_lora_g) +
		       (l > 0 ? e + 2 * e * s->rwkv_lora_v : 0);
	if (s->rwkv_version == 6)
		return 6 * e + 2 * 5 * e * s->rwkv_lora_mix + e + 2 * e * s->rwkv_lora_w + e +
		       5 * e * e + 2 * e;
	if (s->rwkv_version == 5 && s->rwkv_minor == 2)
		return 4 * e + 2 * e + 2 * e + 5 * e * e;
	if (s->rwkv_version == 5)
		return 3 * e + 2 * (s->rwkv_head_size > 0 ? e / s->rwkv_head_size : 0) + 2 * e +
		       4 * e * e;
	return 5 * e + 4 * e * e;
}
static int64_t rwkv_channel_params(const struct tfm_spec *s)
{
	int64_t e = s->n_embd;
	if (s->rwkv_version == 7)
		return e + 2 * e * s->n_ff;
	return 2 * e + e * s->n_ff + e * e + s->n_ff * e;
}

static int64_t expert_params(const struct tfm_spec *s)
{
	return (s->gated ? 3 : 2) * s->n_embd * s->n_ff_expert;
}

/* Sequence positions a layer's cache holds at context ctx. */
static int64_t layer_span(const struct tfm_spec *s, int64_t i, int64_t ctx)
{
	if (s->window > 0 && s->layer_window[i] && s->mask == TFM_MASK_BIDIR) /* either side */
		return ctx > s->window / 2 * 2 + 1 ? s->window / 2 * 2 + 1 : ctx;
	if (s->window > 0 && s->layer_window[i] && ctx > s->window)
		return s->window;
	if (s->chunk > 0 && (s->layer_window[i] || s->mask == TFM_MASK_CHUNKED) && ctx > s->chunk)
		return s->chunk; /* a chunked layer needs the last chunk - 1 keys at most */
	return ctx;
}

static double attn_kv_elems(const struct tfm_spec *s)
{
	if (s->kv_lora_rank)   /* MLA caches the latent and the shared rope key */
		return (double)(s->kv_lora_rank + s->qk_rope_dim);
	return 2.0 * s->n_head_kv * s->head_dim;
}

/* Constant recurrent state of one SSM / RWKV layer, in f32 elements. */
static double state_elems(const struct tfm_spec *s, int kind)
{
	double di = (double)s->ssm_d_inner, ds = (double)s->ssm_d_state;
	switch (kind) {
	case TFM_LAYER_MAMBA:
		return (s->ssm_d_conv - 1) * di + di * ds;
	case TFM_LAYER_MAMBA2:
		return (s->ssm_d_conv - 1) * (di + 2.0 * s->ssm_n_group * ds) + di * ds;
	case TFM_LAYER_GDN: /* conv inputs q, k, v; a dk x dv matrix per value head */
		return (s->ssm_d_conv - 1) * (di + 2.0 * s->ssm_n_group * ds) + di * ds;
	case TFM_LAYER_RWKV:
		if (s->rwkv_version <= 4)
			return 5.0 * s->n_embd;
		return 2.0 * s->n_embd + (double)s->n_embd * s->rwkv_head_size;
	case TFM_LAYER_MLSTM: { /* per head C [dqk][dv], n [dqk], m */
		double nh = (double)s->ssm_n_head;
		if (nh < 1)
			return 0;
		double dqk = (double)(s->xlstm_qk_dim / s->ssm_n_head);
		double dv = (double)(s->xlstm_v_dim / s->ssm_n_head);
		return nh * (dqk * dv + dqk + 1);
	}
	}
	return 0;
}

double tfm_spec_kv_bytes(const struct tfm_spec *s, double kv_elem_bytes, int64_t ctx)
{
	double b = 0;
	int64_t nl = tfm_spec_n_layers(s);
	for (int64_t i = 0; i < nl; i++) {
		int kind = s->layer_kind[i];
		if (kind != TFM_LAYER_ATTN) {
			b += 4.0 * state_elems(s, kind);
			continue;
		}
		if (s->family == TFM_FAMILY_ENCODER ||
		    (s->family == TFM_FAMILY_ENCDEC && i < s->n_layer))
			continue;   /* encoders keep no cache */
		double per = attn_kv_elems(s) * kv_elem_bytes;
		b += per * (double)layer_span(s, i, ctx);
	}
	return b;
}

double tfm_spec_cross_kv_bytes(const struct tfm_spec *s, double kv_elem_bytes, int64_t n_src)
{
	if (s->family != TFM_FAMILY_ENCDEC || !s->cross_attn)
		return 0;
	/* every decoder layer: K and V of each source token, as many heads as
	 * the self-attention's */
	return (double)s->n_layer_dec * attn_kv_elems(s) * kv_elem_bytes * (double)n_src;
}

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* A generous upper bound of the count, in double: every product the counting
 * below forms, with each factor rounded up.  When it passes 2^62 the int64
 * sums could wrap (a config with a 2e9-wide model printed a negative count
 * with exit 0), so the counting refuses instead. */
static double count_bound(const struct tfm_spec *s)
{
	double e = (double)s->n_embd + 1, nl = (double)tfm_spec_n_layers(s) + 1;
	double io = dmax((double)s->n_embd_io, e) + 1;
	double heads = (double)s->n_head + 2.0 * s->n_head_kv + 1;
	double hd = dmax((double)s->head_dim, (double)(s->qk_nope_dim + s->qk_rope_dim +
						       s->v_head_dim)) + 1;
	double lora = (double)s->q_lora_rank + s->kv_lora_rank + 1;
	double ff = dmax(dmax((double)s->n_ff, (double)s->n_ff_expert), (double)s->n_ff_shared) + 1;
	double ssm = dmax((double)s->ssm_d_inner, e) *
		     ((double)s->ssm_d_state + s->ssm_dt_rank + s->ssm_d_conv + s->ssm_n_head +
		      s->ssm_n_group + 8);
	double layer = 4 * e * heads * hd + 4 * lora * (e + heads * hd) +
		       4 * ((double)s->n_expert + 2) * e * ff + 8 * ssm + 16 * e * e +
		       8 * e * ((double)s->xlstm_qk_dim + s->xlstm_v_dim + s->ssm_n_head + 1);
	return 2 * nl * layer + 4 * ((double)s->n_vocab + 2 * s->n_vocab_src + s->n_ctx_train +
				     s->pos_offset + s->n_token_types + s->n_labels + 8) * io +
	       4 * nl * ((double)s->t5_buckets + 1) * ((double)s->n_head + 1) +
	       8 * ((double)s->rel_span + s->conv_kernel * e + 1) * e;
}

int tfm_spec_count(const struct tfm_spec *s, double kv_elem_bytes, int64_t ctx,
		   struct tfm_counts *c)
{
	memset(c, 0, sizeof(*c));
	if (ctx < 0 || kv_elem_bytes < 0)
		return tfm_seterr(TFM_E_INVAL, "count: negative context or element size");
	/* sizes the bound below sums: a negative one would shrink it */
	const int64_t sz[] = {s->n_vocab, s->n_vocab_src, s->n_embd, s->n_ctx_train,
			      s->pos_offset, s->n_token_types, s->n_labels, s->n_embd_io, s->n_ff,
			      s->n_ff_expert, s->n_ff_shared, s->n_expert, s->n_head, s->n_head_kv, s->head_dim,
			      s->ssm_d_inner, s->ssm_d_state, s->ssm_dt_rank, s->ssm_d_conv,
			      s->ssm_n_head, s->ssm_n_group, s->xlstm_qk_dim, s->xlstm_v_dim,
			      s->t5_buckets, s->rel_span,
			      s->conv_kernel, s->conv_groups};
	for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
		if (sz[i] < 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: a negative size (%lld) in the spec",
					  s->arch[0] ? s->arch : "spec", (long long)sz[i]);
	double bound = count_bound(s);
	if (!(bound < 4611686018427387904.0)) /* 2^62 */
		return tfm_seterr(TFM_E_FORMAT, "%s: the parameter count does not fit in 64 bits "
				  "(sizes of the order of %.3g parameters)",
				  s->arch[0] ? s->arch : "spec", bound);
	int64_t e = s->n_embd, nl = tfm_spec_n_layers(s), unused = 0;
	int encdec = s->family == TFM_FAMILY_ENCDEC;
	double attn_flops = 0;

	/* embeddings: token table, positions, token types; bart and t5 share
	 * the token table between the stacks but each stack has its own
	 * position table and embedding norm */
	int stacks = encdec ? 2 : 1;
	int64_t io = s->n_embd_io > 0 ? s->n_embd_io : e; /* word-embedding width */
	/* the width of the position and token-type embeddings and their
	 * norm: io when project_in follows the norm (ELECTRA) */
	int64_t ew = s->embd_proj && s->n_embd_io > 0 ? io : e;
	/* Marian unshared: the encoder's table too, both of n_vocab_src rows */
	int64_t rows = s->n_vocab_src > 0 ? s->n_vocab_src : s->n_vocab;
	c->embd = (encdec && s->enc_embd ? 2 : 1) * rows * io + s->n_token_types * ew;
	if (s->n_embd_io > 0 && s->embd_proj) /* project_in, with its bias after the norm */
		c->head += io * e + (s->embd_proj_first ? 0 : e);
	else if (s->n_embd_io > 0) /* project_in, project_out: matmuls, counted as head */
		c->head += 2 * io * e;
	/* Marian's sinusoidal tables: not in its checkpoints, but parameters
	 * (frozen) that transformers counts */
	if (s->pos_embd == TFM_POS_EMBD_LEARNED || (encdec && s->pos_embd == TFM_POS_EMBD_SINUSOIDAL))
		c->embd += stacks * (s->n_ctx_train + s->pos_offset) * ew;
	if (s->embd_norm) /* DeBERTa's norm follows project_in: n_embd wide */
		c->norms += stacks * norm_size(s, s->embd_proj_first ? e : ew);
	/* DeBERTa: the relative embeddings (a table the layers project) and
	 * their LayerNorm, which transformers builds even without
	 * relative_attention */
	if (s->pos_attn == TFM_POS_DEBERTA)
		c->embd += 2 * s->rel_span * e;
	if (s->rel_norm)
		c->norms += norm_size(s, e);
	if (s->conv_kernel > 0 && s->conv_groups > 0) { /* DeBERTa's ConvLayer: taps, bias, norm */
		c->attn += s->conv_kernel * e * (e / s->conv_groups) + e;
		c->norms += norm_size(s, e);
	}
	if (s->final_norm)
		c->norms += stacks * norm_size(s, e);
	if (s->pos_attn == TFM_POS_T5)
		c->attn += stacks * s->t5_buckets * s->n_head;

	/* the layers' own parameters, to share out among groups below */
	int64_t a0 = c->attn, f0 = c->ffn, n0 = c->norms, s0 = c->ssm;
	for (int64_t i = 0; i < nl; i++) {
		int kind = s->layer_kind[i];
		int sandwich = s->norm_place == TFM_NORM_SANDWICH ? 2 : 1;
		int has_ffn = s->layer_moe[i] || s->n_ff > 0;
		int cross = encdec && s->cross_attn && i >= s->n_layer;
		int64_t ln = norm_size(s, e);
		if (kind == TFM_LAYER_ATTN) {
			int64_t n_norms = (s->parallel_residual && s->shared_attn_ffn_norm) ? 1 :
					  1 + has_ffn;
			c->norms += n_norms * sandwich * ln;
			if (i == 0 && s->no_first_attn_norm) /* ModernBERT's layer 0 */
				c->norms -= ln;
			c->attn += attn_params(s);
			if (cross) {
				c->attn += attn_params(s);
				c->norms += sandwich * ln;
			}
			{
				double span = (double)layer_span(s, i, ctx);
				double qk = s->kv_lora_rank ? s->qk_nope_dim + s->qk_rope_dim : s->head_dim;
				double v = s->kv_lora_rank ? s->v_head_dim : s->head_dim;
				attn_flops += 2.0 * s->n_head * (qk + v) * span * (cross ? 2 : 1);
				if (s->pos_attn == TFM_POS_DEBERTA && ctx > 0) {
					/* c2p / p2c: a product with each position row the
					 * sequence reaches (at most 2 ctx - 1), and those
					 * rows' projections shared by the ctx tokens */
					double rows = dmin(2.0 * s->rel_span, 2.0 * (double)ctx - 1);
					double terms = s->rel_c2p + s->rel_p2c;
					attn_flops += terms * (2.0 * s->n_head * qk * rows +
							       2.0 * rows * e * s->n_head * qk / (double)ctx);
				}
			}
		} else if (kind == TFM_LAYER_RWKV) {
			c->norms += 2 * ln;
			c->ssm += rwkv_time_params(s, i);
			c->ffn += rwkv_channel_params(s);
			continue;
		} else {
			c->norms += (1 + has_ffn) * sandwich * ln;
			c->ssm += mamba_params(s, kind);
			if (kind == TFM_LAYER_MLSTM) /* the per-head norm's weight */
				c->norms += s->xlstm_v_dim;
		}
		if (s->layer_moe[i]) {
			c->ffn += e * s->n_expert + (s->moe_gate_bias ? s->n_expert : 0);
			c->ffn += s->n_expert * expert_params(s);
			if (s->n_ff_shared > 0)
				c->ffn += mlp_params(s, s->n_ff_shared) + (s->moe_shared_gate ? e : 0);
			unused += (s->n_expert - s->n_expert_used) * expert_params(s);
		} else if (s->n_ff > 0) {
			c->ffn += mlp_params(s, s->n_ff);
		}
	}

	/* shared blocks (ALBERT, identical layers): the weights of G blocks,
	 * the matmuls of every layer */
	double shared_mm = 0;
	if (s->n_layer_groups > 0 && s->n_layer_groups < nl) {
		int64_t G = s->n_layer_groups, la = c->attn - a0, lf = c->ffn - f0;
		shared_mm = (double)(la + lf) * (double)(nl - G) / (double)nl;
		c->attn = a0 + la / nl * G;
		c->ffn = f0 + lf / nl * G;
		c->norms = n0 + (c->norms - n0) / nl * G;
		c->ssm = s0 + (c->ssm - s0) / nl * G;
	}
	if (s->mlm_head && !s->tied_output && s->head != TFM_HEAD_LM) /* an MLM decoder of its own */
		c->head += s->n_vocab * io;
	if (s->head == TFM_HEAD_LM && !s->tied_output)
		c->head += s->n_vocab * io;
	/* BART's final_logits_bias is a buffer: transformers does not count it */
	if (s->head == TFM_HEAD_LM && s->head_bias && !encdec)
		c->head += s->n_vocab;
	/* the pooler (dense, its bias; ModernBERT's head.transform: and a norm) */
	int64_t dense = e * e + (s->head_dense_bias ? e : 0);
	if (s->pooler)
		c->head += dense + (s->head_transform ? norm_size(s, e) : 0);
	if (s->mlm_head && s->head_transform) /* the prediction head, the decoder's bias */
		c->head += dense + norm_size(s, e) + (s->head_bias ? s->n_vocab : 0) +
			   (s->tied_output ? 0 : s->n_vocab * e);
	else if (s->mlm_head) /* transform dense to the embeddings' width (ELECTRA, ALBERT: io),
			       * its LayerNorm, the decoder's bias (weight tied) */
		c->head += e * ew + ew + 2 * ew + s->n_vocab;
	if ((s->head == TFM_HEAD_CLASSIFIER || s->head == TFM_HEAD_TOKEN) && s->n_labels > 0)
		c->head += s->n_labels * e + s->n_labels;

	if (s->norm_no_affine)
		c->norms = 0; /* olmo: the norms have no parameters */
	c->total = c->attn + c->ffn + c->norms + c->embd + c->head + c->ssm;
	c->active = c->total - unused;
	c->embedding = c->embd;
	c->non_embedding = c->total - c->embedding;
	c->kv_bytes_per_token = tfm_spec_kv_bytes(s, kv_elem_bytes, 1) -
				tfm_spec_kv_bytes(s, kv_elem_bytes, 0);
	/* matmuls: every active weight except lookups and norms, plus the LM
	 * head when it reuses the embedding table */
	double mm = (double)(c->active - c->embd - c->norms);
	if (s->head == TFM_HEAD_LM && s->tied_output)
		mm += (double)s->n_vocab * (s->n_embd_io > 0 ? s->n_embd_io : e);
	c->flops_per_token = 2.0 * (mm + shared_mm) + attn_flops;
	double st = 0;
	for (int64_t i = 0; i < nl; i++)
		st += 4.0 * state_elems(s, s->layer_kind[i]);
	c->state_bytes = st;
	return TFM_OK;
}
