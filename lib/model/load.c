/* load.c: a model from a spec and named weights.  Refuses every knob the
 * block executor does not run (TFM_E_UNSUPPORTED naming the architecture and
 * the knob: never a wrong answer), binds tensors by llama.cpp's GGUF names,
 * checks their shapes against the spec, and keeps f32 copies of the small
 * vectors (norms, biases).  Matrices stay where they are (mmapped file). */
#include "model/model-impl.h"
#include "model/mamba.h"
#include "model/deberta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNSUP(what) tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s not supported yet", arch, what)

int tfm_model_check_spec(const struct tfm_spec *s)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	if (s->family == TFM_FAMILY_ENCDEC) {
		/* T5's and BART's stacks (exec.c): plain attention layers, pre- or
		 * post-norm, T5's relative bias or learned positions */
		if (s->pos_attn != TFM_POS_T5 &&
		    !(s->pos_attn == TFM_POS_NONE && (s->pos_embd == TFM_POS_EMBD_LEARNED ||
						      s->pos_embd == TFM_POS_EMBD_SINUSOIDAL)))
			return UNSUP("an encoder-decoder model without T5's relative bias or "
				     "learned positions");
		if (s->n_layer_dec < 1 || s->n_layer_dec > TFM_MAX_LAYERS - s->n_layer)
			return tfm_seterr(TFM_E_FORMAT, "%s: %lld decoder layers", arch,
					  (long long)s->n_layer_dec);
		if (!s->cross_attn)
			return UNSUP("an encoder-decoder model without cross-attention");
		if ((s->n_head_kv && s->n_head_kv != s->n_head) || s->n_expert || s->kv_lora_rank ||
		    s->diff_attn || s->qk_norm != TFM_QK_NORM_NONE || s->parallel_residual ||
		    (s->norm_place != TFM_NORM_PRE && s->norm_place != TFM_NORM_POST) ||
		    s->mask != TFM_MASK_CAUSAL || s->residual_from_norm || s->attn_bias_qv ||
		    (s->residual_scale != 0 && s->residual_scale != 1) ||
		    s->window > 0 || s->chunk > 0 || s->n_layer_groups || s->embd_proj ||
		    s->n_embd_io > 0)
			return UNSUP("this knob in an encoder-decoder model (KV heads, experts, MLA, "
				     "QK-norm, parallel residual, norm placement, windows, shared or "
				     "projected embeddings)");
		for (int64_t l = 0; l < s->n_layer + s->n_layer_dec; l++)
			if (s->layer_kind[l] != TFM_LAYER_ATTN || s->layer_moe[l])
				return UNSUP("non-attention layers in an encoder-decoder model");
	}
	if (s->family != TFM_FAMILY_DECODER && s->family != TFM_FAMILY_ENCODER &&
	    s->family != TFM_FAMILY_ENCDEC)
		return UNSUP("this model family");
	int st = tfm_encoder_check_spec(s);
	if (st || (st = tfm_deberta_check_spec(s)))
		return st;
	int n_attn = 0;
	for (int64_t l = 0; l < s->n_layer && l < TFM_MAX_LAYERS; l++)
		n_attn += s->layer_kind[l] == TFM_LAYER_ATTN;
	if (!n_attn && s->n_layer >= 1 && s->n_layer <= TFM_MAX_LAYERS)
		return tfm_mamba_check_spec(s); /* no attention layer: mamba.c's knobs alone */
	if (s->n_layer < 1 || s->n_layer > TFM_MAX_LAYERS || s->n_embd < 1 || s->n_vocab < 1 ||
	    s->n_head < 1 || s->n_head_kv < 0 || s->head_dim < 0 || s->n_ff < 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: bad sizes (layers %lld, embd %lld, vocab %lld, "
				  "heads %lld/%lld)", arch, (long long)s->n_layer,
				  (long long)s->n_embd, (long long)s->n_vocab,
				  (long long)s->n_head, (long long)s->n_head_kv);
	int64_t nkv = s->n_head_kv ? s->n_head_kv : s->n_head;
	if (s->n_head % nkv)
		return tfm_seterr(TFM_E_FORMAT, "%s: %lld heads not a multiple of %lld KV heads",
				  arch, (long long)s->n_head, (long long)nkv);
	int64_t hd = s->head_dim ? s->head_dim : s->n_embd / s->n_head;
	if (hd < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: head_dim 0", arch);
	int hybrid = 0;
	for (int64_t l = 0; l < s->n_layer; l++) {
		static const char *const kinds[] = {"attention", "mamba layers", "mamba2 layers",
						    "rwkv layers beside attention layers",
						    "gdn layers", "mlstm layers beside attention layers"};
		/* a hybrid (jamba): mamba layers beside attention layers, each
		 * with its FFN; mamba.c checks the mixer's knobs */
		int k = s->layer_kind[l];
		if ((k == TFM_LAYER_MAMBA || k == TFM_LAYER_MAMBA2 || k == TFM_LAYER_GDN) &&
		    s->family == TFM_FAMILY_DECODER) {
			hybrid |= k == TFM_LAYER_MAMBA ? 1 : k == TFM_LAYER_MAMBA2 ? 2 : 4;
		} else if (s->layer_kind[l] != TFM_LAYER_ATTN) {
			return UNSUP(s->layer_kind[l] <= TFM_LAYER_MLSTM ? kinds[s->layer_kind[l]] :
				     "layer kind");
		}
		if (s->layer_moe[l] && s->n_expert < 1)
			return tfm_seterr(TFM_E_FORMAT, "%s: layer %lld is MoE without experts", arch,
					  (long long)l);
	}
	if (s->n_expert > 0) {
		if (s->n_expert_used < 1 || s->n_expert_used > s->n_expert || s->n_ff_expert < 1)
			return tfm_seterr(TFM_E_FORMAT, "%s: %lld of %lld experts per token, expert "
					  "n_ff %lld", arch, (long long)s->n_expert_used,
					  (long long)s->n_expert, (long long)s->n_ff_expert);
		if (s->moe_n_group > 1 && (s->n_expert % s->moe_n_group || s->moe_topk_group < 1 ||
					   s->moe_topk_group > s->moe_n_group))
			return tfm_seterr(TFM_E_FORMAT, "%s: %lld experts in %lld groups, top %lld "
					  "groups", arch, (long long)s->n_expert,
					  (long long)s->moe_n_group, (long long)s->moe_topk_group);
		if (s->n_expert > 4096)
			return UNSUP("more than 4096 experts");
		if (s->moe_gate != TFM_MOE_GATE_SOFTMAX && s->moe_gate != TFM_MOE_GATE_SIGMOID)
			return UNSUP("this expert gate");
		if (!s->gated)
			return UNSUP("experts without a gate projection");
	}
	if (s->q_lora_rank && !s->kv_lora_rank)
		return UNSUP("a low-rank query without MLA");
	if (s->kv_lora_rank) {
		if (s->qk_nope_dim < 0 || s->qk_rope_dim < 2 || s->qk_rope_dim % 2 ||
		    hd != s->qk_nope_dim + s->qk_rope_dim || s->v_head_dim < 1)
			return tfm_seterr(TFM_E_FORMAT, "%s: MLA head sizes (nope %lld + rope %lld = "
					  "%lld, v %lld)", arch, (long long)s->qk_nope_dim,
					  (long long)s->qk_rope_dim, (long long)hd,
					  (long long)s->v_head_dim);
		if (nkv != s->n_head)
			return UNSUP("MLA with fewer KV heads than heads");
		if (s->pos_attn != TFM_POS_ROPE || (s->rope_dims && s->rope_dims != s->qk_rope_dim))
			return UNSUP("MLA without RoPE on its rope dims");
		if (s->qk_norm != TFM_QK_NORM_NONE || s->attn_bias_qkv)
			return UNSUP("MLA with QK-norm or QKV biases");
	} else if (s->v_head_dim && s->v_head_dim != hd) {
		return UNSUP("a value head size different from the key head size");
	}
	if (s->diff_attn) {
		/* head h's values are those of heads h mod H/2 and h mod H/2 + H/2
		 * (transformers' diffllama): with GQA both must sit in whole KV
		 * groups, so the pair of KV heads is known from h's own group */
		int64_t grp = s->n_head / nkv;
		if (s->n_head % 2 || (nkv > 1 && (nkv % 2 || (s->n_head / 2) % grp)))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: differential attention with %lld "
					  "heads and %lld KV heads not supported (even heads, and "
					  "one or an even number of KV heads)", arch,
					  (long long)s->n_head, (long long)nkv);
		if (s->kv_lora_rank || (s->v_head_dim && s->v_head_dim != hd))
			return UNSUP("differential attention with MLA or a value head size of its own");
	}
	if (s->linear_attn)
		return UNSUP("linear attention");
	if (s->cross_attn && s->family != TFM_FAMILY_ENCDEC)
		return UNSUP("cross-attention");
	if ((s->mask == TFM_MASK_BIDIR) != (s->family == TFM_FAMILY_ENCODER))
		return UNSUP(s->family == TFM_FAMILY_ENCODER ? "encoders without attn.mask=bidir"
							     : "attn.mask=bidir in a decoder");
	if (s->mask != TFM_MASK_CAUSAL && s->mask != TFM_MASK_WINDOW && s->mask != TFM_MASK_BIDIR &&
	    s->mask != TFM_MASK_CHUNKED)
		return UNSUP("this attention mask");
	if (s->mask == TFM_MASK_WINDOW && s->window < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: sliding-window mask without a window size", arch);
	if (s->pos_attn == TFM_POS_T5 && s->family == TFM_FAMILY_DECODER)
		return UNSUP("T5 relative position buckets in a decoder-only model");
	if (s->pos_attn != TFM_POS_NONE && s->pos_attn != TFM_POS_ROPE &&
	    s->pos_attn != TFM_POS_ALIBI && s->pos_attn != TFM_POS_DEBERTA &&
	    s->pos_attn != TFM_POS_T5)
		return UNSUP("this attention position scheme");
	if (s->pos_attn == TFM_POS_ROPE) {
		if (s->rope_scaling != TFM_ROPE_SCALE_NONE && s->rope_scaling != TFM_ROPE_SCALE_LINEAR &&
		    s->rope_scaling != TFM_ROPE_SCALE_LLAMA3 && s->rope_scaling != TFM_ROPE_SCALE_YARN &&
		    s->rope_scaling != TFM_ROPE_SCALE_LONGROPE && s->rope_scaling != TFM_ROPE_SCALE_DYNAMIC)
			return UNSUP("this rope.scaling");
		if (s->rope_scaling == TFM_ROPE_SCALE_DYNAMIC && s->rope_orig_ctx < 1 && s->n_ctx_train < 1)
			return tfm_seterr(TFM_E_FORMAT, "%s: dynamic NTK needs the original context", arch);
		if (s->rope_scaling == TFM_ROPE_SCALE_LONGROPE &&
		    (s->n_rope_factors != (s->rope_dims ? s->rope_dims : hd) / 2 ||
		     (s->rope_orig_ctx < 1 && s->n_ctx_train < 1)))
			return tfm_seterr(TFM_E_FORMAT, "%s: LongRoPE needs %lld factors per list (has "
					  "%lld) and the original context", arch,
					  (long long)((s->rope_dims ? s->rope_dims : hd) / 2),
					  (long long)s->n_rope_factors);
		if (s->rope_scaling == TFM_ROPE_SCALE_YARN && s->rope_orig_ctx < 1 && s->n_ctx_train < 1)
			return tfm_seterr(TFM_E_FORMAT, "%s: YaRN needs the original context length", arch);
		if (s->rope_scaling != TFM_ROPE_SCALE_NONE && !(s->rope_factor > 0))
			return tfm_seterr(TFM_E_FORMAT, "%s: RoPE scaling without a factor", arch);
		if (s->rope_scaling == TFM_ROPE_SCALE_LLAMA3 &&
		    (s->rope_orig_ctx < 1 || !(s->llama3_low_freq_factor > 0) ||
		     !(s->llama3_high_freq_factor >= s->llama3_low_freq_factor)))
			return tfm_seterr(TFM_E_FORMAT, "%s: llama3 RoPE scaling needs the original "
					  "context and high >= low > 0 frequency factors", arch);
		int64_t rot = s->rope_dims ? s->rope_dims : hd;
		if (rot < 2 || rot > hd || rot % 2)
			return tfm_seterr(TFM_E_FORMAT, "%s: %lld rotary dims for head_dim %lld", arch,
					  (long long)rot, (long long)hd);
	}
	if (s->pos_attn == TFM_POS_ALIBI && !(s->alibi_max_bias > 0))
		return tfm_seterr(TFM_E_FORMAT, "%s: ALiBi without a max bias", arch);
	if (s->pos_embd == TFM_POS_EMBD_SINUSOIDAL && s->family != TFM_FAMILY_ENCDEC)
		return UNSUP("sinusoidal position embeddings outside an encoder-decoder model");
	if (s->pos_embd == TFM_POS_EMBD_SINUSOIDAL && (s->n_ctx_train < 1 || s->n_ctx_train > 1 << 20))
		return tfm_seterr(TFM_E_FORMAT, "%s: sinusoidal positions for %lld tokens", arch,
				  (long long)s->n_ctx_train);
	if (s->pos_embd != TFM_POS_EMBD_NONE && s->pos_embd != TFM_POS_EMBD_LEARNED &&
	    s->pos_embd != TFM_POS_EMBD_SINUSOIDAL)
		return UNSUP("this position embedding");
	if (s->n_token_types > 0 && s->family != TFM_FAMILY_ENCODER)
		return UNSUP("token type embeddings in a decoder");
	if (s->norm != TFM_NORM_RMS && s->norm != TFM_NORM_LAYER)
		return UNSUP("models without norms");
	if (s->norm_place != TFM_NORM_PRE && s->norm_place != TFM_NORM_SANDWICH &&
	    s->norm_place != TFM_NORM_POST_IN && s->norm_place != TFM_NORM_POST)
		return UNSUP("this norm placement");
	if (s->residual_scale != 0 && s->residual_scale != 1 && s->norm_place == TFM_NORM_POST)
		return UNSUP("a residual multiplier with post-norm blocks");
	if (s->residual_from_norm && (s->norm_place != TFM_NORM_PRE || s->parallel_residual))
		return UNSUP("a residual from the normed input outside a sequential pre-norm block");
	if (s->norm_place != TFM_NORM_PRE && s->parallel_residual)
		return UNSUP("sandwich or post_in norms with a parallel residual");
	if (s->qk_norm != TFM_QK_NORM_NONE && s->qk_norm != TFM_QK_NORM_HEAD &&
	    s->qk_norm != TFM_QK_NORM_FULL && s->qk_norm != TFM_QK_NORM_ROPE_RMS)
		return UNSUP("this QK-norm");
	if (s->attn_out_gate && (s->diff_attn || s->kv_lora_rank || s->family != TFM_FAMILY_DECODER ||
				 s->pos_attn == TFM_POS_DEBERTA || s->attn_bias_qkv || s->attn_bias_qv ||
				 (s->v_head_dim && s->v_head_dim != hd)))
		return UNSUP("an attention output gate with differential attention, MLA, DeBERTa, "
			     "QKV biases, an encoder or a value head size of its own");
	if ((s->attn_temp_scale > 0 || s->qk_norm == TFM_QK_NORM_ROPE_RMS) && s->diff_attn)
		return UNSUP("temperature tuning or llama4's QK-norm with differential attention");
	if (s->act < TFM_ACT_SILU || s->act > TFM_ACT_GELU_QUICK)
		return UNSUP("this activation");
	if (s->family == TFM_FAMILY_DECODER &&
	    (s->head != TFM_HEAD_LM || s->pooling != TFM_POOL_NONE || s->pooler))
		return UNSUP("classifier and embedding heads on a decoder");
	if (s->n_ff < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: feed-forward size 0", arch);
	if (s->no_first_attn_norm && (s->norm_place != TFM_NORM_PRE || s->parallel_residual))
		return UNSUP("norm.no_first_attn outside a sequential pre-norm block");
	if (s->head_transform && s->family != TFM_FAMILY_ENCODER)
		return UNSUP("head.transform outside an encoder");
	if (hybrid && hybrid != 1 && hybrid != 2 && hybrid != 4) /* they share the ssm.* sizes */
		return UNSUP("two kinds of recurrent layers (mamba, mamba2, gdn) in one model");
	if (hybrid)
		return tfm_mamba_check_hybrid(s, hybrid != 1);
	return TFM_OK;
}

/* ---- binding ---- */

struct binder {
	struct tfm_model *m;
	const struct tfm_model_tensor **sorted; /* by name */
	int64_t n;
	const char *arch;
};

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const struct tfm_model_tensor *const *)a)->name,
		      (*(const struct tfm_model_tensor *const *)b)->name);
}

static const struct tfm_model_tensor *find(struct binder *b, const char *name)
{
	struct tfm_model_tensor key = {.name = name};
	const struct tfm_model_tensor *kp = &key;
	const struct tfm_model_tensor **r = bsearch(&kp, b->sorted, (size_t)b->n,
						    sizeof *b->sorted, by_name);
	return r ? *r : NULL;
}

static int repack(struct tfm_model *m, int64_t n);

static int own(struct tfm_model *m, void *p)
{
	if (m->n_owned == m->cap_owned) {
		int64_t cap = m->cap_owned ? 2 * m->cap_owned : 64;
		void **o = tfm_realloc(m->owned, (size_t)cap * sizeof *o);
		if (!o) {
			tfm_afree(p);
			return TFM_E_NOMEM;
		}
		m->owned = o;
		m->cap_owned = cap;
	}
	m->owned[m->n_owned++] = p;
	return TFM_OK;
}

static int shape_ok(const struct tfm_model_tensor *t, int64_t ne0, int64_t ne1)
{
	int64_t n = 1;
	for (int i = 2; i < t->n_dims && i < 4; i++)
		n *= t->ne[i];
	return t->ne[0] == ne0 && (t->n_dims < 2 ? 1 : t->ne[1]) == ne1 && n == 1;
}

static int shape_err(const struct tfm_model_tensor *t, int64_t ne0, int64_t ne1)
{
	return tfm_seterr(TFM_E_FORMAT, "%s: shape {%lld, %lld}, want {%lld, %lld}", t->name,
			  (long long)t->ne[0], (long long)(t->n_dims > 1 ? t->ne[1] : 1),
			  (long long)ne0, (long long)ne1);
}

/* A matrix {ne0, ne1}; ne1 < 0 accepts any row count. */
static int bind_mat(struct binder *b, struct tfm_mat *w, const char *name, int64_t ne0,
		    int64_t ne1, int required)
{
	const struct tfm_model_tensor *t = find(b, name);
	memset(w, 0, sizeof *w);
	if (!t)
		return required ? tfm_seterr(TFM_E_FORMAT, "%s: missing tensor %s", b->arch, name)
				: TFM_OK;
	if (!shape_ok(t, ne0, ne1 < 0 ? (t->n_dims > 1 ? t->ne[1] : 1) : ne1))
		return shape_err(t, ne0, ne1);
	if (!tfm_k_type_ok(t->type))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: weights of type %s not supported yet",
				  name, tfm_type_name(t->type));
	if (ne0 % tfm_type_info(t->type)->blck)
		return tfm_seterr(TFM_E_FORMAT, "%s: rows of %lld not a multiple of the %s block",
				  name, (long long)ne0, tfm_type_name(t->type));
	if (!t->data)
		return tfm_seterr(TFM_E_INTERNAL, "%s: no data", name);
	w->data = t->data;
	w->type = t->type;
	w->in = ne0;
	w->out = t->n_dims > 1 ? t->ne[1] : 1;
	w->row_bytes = tfm_type_nbytes(t->type, ne0);
	return TFM_OK;
}

static int bind_vec(struct binder *b, float **v, const char *name, int64_t n, int required);

/* diffllama's lambda vectors (attn_lambda_q1, k1, q2, k2 [head_dim]): the
 * layer's lambda = exp(q1.k1) - exp(q2.k2) + lambda_init, lambda_init =
 * 0.8 - 0.6 exp(-0.3 l) for layer l from 0 (transformers' lambda_init_fn),
 * computed once here. */
static int bind_diff(struct binder *b, int64_t l)
{
	struct tfm_layer *L = &b->m->layers[l];
	static const char *const nm[] = {"attn_lambda_q1", "attn_lambda_k1", "attn_lambda_q2",
					 "attn_lambda_k2"};
	float *v[4];
	char name[96];
	int64_t hd = b->m->head_dim;
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "blk.%lld.%s", (long long)l, nm[i]);
		int st = bind_vec(b, &v[i], name, hd, 1);
		if (st)
			return st;
	}
	double d1 = 0, d2 = 0;
	for (int64_t i = 0; i < hd; i++)
		d1 += (double)v[0][i] * v[1][i], d2 += (double)v[2][i] * v[3][i];
	double init = 0.8 - 0.6 * exp(-0.3 * (double)l);
	L->diff_lambda = (float)(exp(d1) - exp(d2) + init);
	L->diff_scale = (float)(1.0 - init);
	return TFM_OK;
}

/* A vector of n, copied to f32. */
static int bind_vec(struct binder *b, float **v, const char *name, int64_t n, int required)
{
	struct tfm_mat w;
	*v = NULL;
	int st = bind_mat(b, &w, name, n, 1, required);
	if (st || !w.data)
		return st;
	float *f = tfm_amalloc((size_t)n * sizeof *f);
	if (!f)
		return TFM_E_NOMEM;
	if ((st = own(b->m, f)))
		return st;
	if ((st = tfm_k_row_to_f32(w.type, w.data, f, n)))
		return tfm_adderr(st, "%s", name);
	*v = f;
	return TFM_OK;
}

static int bind_norm(struct binder *b, struct tfm_norm_w *nw, const char *prefix, int64_t n,
		     int required)
{
	char name[96];
	nw->eps = 0; /* the spec's norm.eps unless the caller says otherwise */
	if (b->m->spec.norm_no_affine)
		required = 0; /* olmo: norms without weights (x - mean) / std */
	snprintf(name, sizeof name, "%s.weight", prefix);
	int st = bind_vec(b, &nw->w, name, n, required);
	if (st)
		return st;
	snprintf(name, sizeof name, "%s.bias", prefix);
	return bind_vec(b, &nw->b, name, n, nw->w && b->m->spec.norm_bias);
}

static int bind_mla(struct binder *b, int64_t l)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, ql = s->q_lora_rank, kl = s->kv_lora_rank, nh = s->n_head;
	char n[96];
	int st;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	if (ql > 0) {
		TRY(bind_mat(b, &L->q_a, NM("attn_q_a.weight"), d, ql, 1));
		TRY(bind_norm(b, &L->q_a_norm, NM("attn_q_a_norm"), ql, 1));
		L->q_a_norm.eps = (float)s->mla_norm_eps;
		TRY(bind_mat(b, &L->q_b, NM("attn_q_b.weight"), ql, m->q_dim, 1));
	} else {
		TRY(bind_mat(b, &L->wq, NM("attn_q.weight"), d, m->q_dim, 1));
	}
	TRY(bind_mat(b, &L->kv_a, NM("attn_kv_a_mqa.weight"), d, kl + s->qk_rope_dim, 1));
	TRY(bind_norm(b, &L->kv_a_norm, NM("attn_kv_a_norm"), kl, 1));
	L->kv_a_norm.eps = (float)s->mla_norm_eps;
	int64_t nope = s->qk_nope_dim, vd = m->v_dim;
	/* W_UK^T [nh][kl][nope] in f32 for the absorbed queries (as many
	 * floats as kv_b's nope rows); W_UV is read in place */
	float *ukt = tfm_amalloc((size_t)(nh * kl * nope + kl) * sizeof *ukt), *row = NULL;
	if (!ukt)
		return TFM_E_NOMEM;
	TRY(own(m, ukt));
	const struct tfm_model_tensor *kb = find(b, NM("attn_k_b.weight"));
	if (kb && !find(b, NM("attn_kv_b.weight"))) {
		/* llama.cpp's split form: attn_k_b {nope, kl, nh} is W_UK^T row
		 * for row, attn_v_b {kl, vd, nh} W_UV */
		const struct tfm_model_tensor *vb = find(b, NM("attn_v_b.weight"));
		if (kb->n_dims != 3 || kb->ne[0] != nope || kb->ne[1] != kl || kb->ne[2] != nh)
			return tfm_seterr(TFM_E_FORMAT, "%s: shape {%lld, %lld, %lld}, want {%lld, "
					  "%lld, %lld}", kb->name, (long long)kb->ne[0],
					  (long long)kb->ne[1], (long long)kb->ne[2], (long long)nope,
					  (long long)kl, (long long)nh);
		if (!vb || vb->n_dims != 3 || vb->ne[0] != kl || vb->ne[1] != vd || vb->ne[2] != nh)
			return tfm_seterr(TFM_E_FORMAT, "%s: attn_v_b missing or not {%lld, %lld, "
					  "%lld}", NM("attn_v_b.weight"), (long long)kl, (long long)vd,
					  (long long)nh);
		if (!tfm_k_type_ok(kb->type) || !tfm_k_type_ok(vb->type) ||
		    nope % tfm_type_info(kb->type)->blck || kl % tfm_type_info(vb->type)->blck)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: MLA weights of types %s / %s with "
					  "rows of %lld / %lld", NM("attn_k_b.weight"),
					  tfm_type_name(kb->type), tfm_type_name(vb->type),
					  (long long)nope, (long long)kl);
		size_t rb = tfm_type_nbytes(kb->type, nope);
		for (int64_t r = 0; r < nh * kl; r++)
			TRY(tfm_k_row_to_f32(kb->type, (const uint8_t *)kb->data + (size_t)r * rb,
					     ukt + r * nope, nope));
		L->mla_uv = (struct tfm_mat){.data = vb->data, .type = vb->type, .in = kl, .out = vd,
					     .row_bytes = tfm_type_nbytes(vb->type, kl)};
		L->mla_uv_stride = (size_t)vd * L->mla_uv.row_bytes;
		L->mla_ukt = ukt;
		return TFM_OK;
	}
	TRY(bind_mat(b, &L->kv_b, NM("attn_kv_b.weight"), kl, nh * (s->qk_nope_dim + m->v_dim), 1));
	L->mla_uv = L->kv_b;
	L->mla_uv.data = (const uint8_t *)L->kv_b.data + (size_t)nope * L->kv_b.row_bytes;
	L->mla_uv.out = vd;
	L->mla_uv_stride = (size_t)(nope + vd) * L->kv_b.row_bytes;
	row = ukt + nh * kl * nope; /* one kv_b row */
	for (int64_t h = 0; h < nh; h++)
		for (int64_t i = 0; i < nope; i++) {
			const uint8_t *r = (const uint8_t *)L->kv_b.data +
					   (size_t)(h * (nope + vd) + i) * L->kv_b.row_bytes;
			TRY(tfm_k_row_to_f32(L->kv_b.type, r, row, kl));
			for (int64_t j = 0; j < kl; j++)
				ukt[(h * kl + j) * nope + i] = row[j];
		}
	L->mla_ukt = ukt;
#undef NM
#undef TRY
	return TFM_OK;
}

/* Expert e of a stacked {ne0, ne1, n_expert} tensor is w->data + e * stride. */
static int bind_experts(struct binder *b, struct tfm_mat *w, size_t *stride, const char *name,
			int64_t ne0, int64_t ne1, int64_t n_expert)
{
	const struct tfm_model_tensor *t = find(b, name);
	if (!t)
		return tfm_seterr(TFM_E_FORMAT, "%s: missing tensor %s", b->arch, name);
	if (t->n_dims != 3 || t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != n_expert)
		return tfm_seterr(TFM_E_FORMAT, "%s: shape {%lld, %lld, %lld}, want {%lld, %lld, %lld}",
				  name, (long long)t->ne[0], (long long)t->ne[1],
				  (long long)t->ne[2], (long long)ne0, (long long)ne1,
				  (long long)n_expert);
	struct tfm_model_tensor one = *t;
	one.n_dims = 2;
	one.ne[2] = 1;
	struct binder b1 = *b;
	const struct tfm_model_tensor *p1 = &one;
	b1.sorted = &p1;
	b1.n = 1;
	int st = bind_mat(&b1, w, name, ne0, ne1, 1);
	*stride = (size_t)ne1 * w->row_bytes;
	return st;
}

/* A mixture-of-experts FFN: router ffn_gate_inp {n_embd, n_expert}, experts
 * ffn_{gate,up,down}_exps, optional shared experts ffn_{gate,up,down}_shexp
 * with an optional sigmoid gate ffn_gate_inp_shexp {n_embd}. */
static int bind_moe(struct binder *b, int64_t l)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, fe = s->n_ff_expert, E = s->n_expert;
	char n[96];
	int st;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	L->moe = 1;
	TRY(bind_mat(b, &L->router, NM("ffn_gate_inp.weight"), d, E, 1));
	TRY(bind_vec(b, &L->router_b, NM("ffn_gate_inp.bias"), E, 0));
	TRY(bind_vec(b, &L->exp_probs_b, NM("exp_probs_b.bias"), E, s->moe_gate_bias));
	TRY(bind_experts(b, &L->gate, &L->exp_stride[0], NM("ffn_gate_exps.weight"), d, fe, E));
	TRY(bind_experts(b, &L->up, &L->exp_stride[1], NM("ffn_up_exps.weight"), d, fe, E));
	TRY(bind_experts(b, &L->down, &L->exp_stride[2], NM("ffn_down_exps.weight"), fe, d, E));
	int shared = s->n_expert_shared > 0 || s->n_ff_shared > 0;
	int64_t fs = s->n_ff_shared > 0 ? s->n_ff_shared : s->n_expert_shared * fe;
	TRY(bind_mat(b, &L->sh_gate, NM("ffn_gate_shexp.weight"), d, shared ? fs : -1, shared));
	if (L->sh_gate.data) {
		int64_t f = L->sh_gate.out;
		TRY(bind_mat(b, &L->sh_up, NM("ffn_up_shexp.weight"), d, f, 1));
		TRY(bind_mat(b, &L->sh_down, NM("ffn_down_shexp.weight"), f, d, 1));
		TRY(bind_vec(b, &L->sh_gate_inp, NM("ffn_gate_inp_shexp.weight"), d,
			     s->moe_shared_gate));
	}
#undef NM
#undef TRY
	return TFM_OK;
}

/* ModernBERT's prediction head, by llama.cpp's names: cls (dense, its bias
 * with head.dense_bias), cls.norm; before the classifier cls.output (cl:
 * sequence and token heads), or the masked-LM transform before the tied
 * (or own output.weight) decoder with output.bias when head.bias. */
static int bind_transform(struct binder *b, int cl)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, need = (cl && s->pooler) || s->mlm_head;
	struct tfm_mat w;
	struct tfm_norm_w nw;
	float *bias = NULL;
	int st;
	if ((st = bind_mat(b, &w, "cls.weight", d, d, need)) ||
	    (w.data && ((st = bind_vec(b, &bias, "cls.bias", d, s->head_dense_bias)) ||
			(st = bind_norm(b, &nw, "cls.norm", d, 1)))) ||
	    (st = bind_mat(b, &m->cls, "cls.output.weight", d, s->n_labels, cl)) ||
	    (m->cls.data && (st = bind_vec(b, &m->cls_b, "cls.output.bias", s->n_labels, 1))))
		return st;
	if (cl && s->pooler) {
		m->pooler = w, m->pooler_b = bias, m->pooler_norm = nw;
	} else if (s->mlm_head) {
		m->mlm = w, m->mlm_b = bias, m->mlm_norm = nw;
		if (!m->out_b && s->head_bias)
			return tfm_seterr(TFM_E_FORMAT, "%s: missing tensor output.bias", b->arch);
	}
	return TFM_OK;
}

/* DeBERTa's relative embeddings rel_embd {n_embd, 2 rel_span}, passed once
 * through their LayerNorm rel_embd_norm (rel.norm) into an f32 table: the
 * same for every layer and call (transformers' get_rel_embedding). */
static int mat_f32(struct binder *b, float **v, const struct tfm_mat *w);

/* Marian's sinusoidal positions (MarianSinusoidalPositionalEmbedding, not
 * stored in its checkpoints): row p is sin(p w_i) for i < d/2, then cos(p
 * w_i), w_i = 10000^(-2i/d) (computed in double, as numpy, then rounded),
 * one table for both stacks, n_ctx_train rows. */
static int sinusoid(struct binder *b)
{
	struct tfm_model *m = b->m;
	int64_t d = m->spec.n_embd, np = m->spec.n_ctx_train, half = (d + 1) / 2;
	float *t = tfm_amalloc((size_t)(np * d) * sizeof *t);
	int st;
	if (!t)
		return TFM_E_NOMEM;
	if ((st = own(m, t)))
		return st;
	for (int64_t p = 0; p < np; p++)
		for (int64_t j = 0; j < d; j++) {
			/* column j: numpy's position_enc[p][k] = p / 10000^(2 (k / 2) / d)
			 * for k = 2j (sin half) or 2 (j - half) + 1 (cos half) */
			int64_t k = j < half ? 2 * j : 2 * (j - half) + 1;
			double a = (double)p / pow(10000.0, 2.0 * (double)(k / 2) / (double)d);
			t[p * d + j] = (float)(j < half ? sin(a) : cos(a));
		}
	struct tfm_mat w = {.data = t, .type = TFM_TYPE_F32, .in = d, .out = np,
			    .row_bytes = (size_t)d * sizeof(float)};
	m->pos_embd = m->enc_pos_embd = w;
	return TFM_OK;
}

/* T5's relative position bucket (transformers' _relative_position_bucket)
 * of the distance rel = key - query: half the buckets for each direction
 * when bidirectional; below max_exact one bucket per distance, then
 * logarithmic up to max_distance, computed in float32 as torch does. */
static int64_t t5_bucket(int64_t rel, int bidir, int64_t nb, int64_t maxd)
{
	int64_t b = 0;
	if (bidir) {
		nb /= 2;
		b = rel > 0 ? nb : 0;
		rel = rel < 0 ? -rel : rel;
	} else {
		rel = rel < 0 ? -rel : 0;
	}
	int64_t exact = nb / 2;
	if (rel < exact)
		return b + rel;
	float v = logf((float)rel / (float)exact) / (float)log((double)maxd / (double)exact) *
		  (float)(nb - exact);
	int64_t large = exact + (int64_t)v;
	return b + (large < nb - 1 ? large : nb - 1);
}

/* T5's relative attention bias: block 0's attn_rel_b {n_head, buckets}
 * of a stack (shared by its layers) as a table by distance, [n_head][2 D +
 * 1] for key - query in [-D, D], D = max_distance (every farther key is in
 * the last bucket of its side).  The encoder's buckets are bidirectional,
 * the decoder's causal. */
static int bind_t5_bias(struct binder *b, float **table, const char *name, int bidir)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	int64_t nb = s->t5_buckets, D = s->t5_max_distance, nh = s->n_head;
	struct tfm_mat w;
	float *f, *t;
	if (nb < 2 || D < 1 || D > (1 << 20))
		return tfm_seterr(TFM_E_FORMAT, "%s: %lld relative buckets, max distance %lld", b->arch,
				  (long long)nb, (long long)D);
	int st = bind_mat(b, &w, name, nh, nb, 1);
	if (st || (st = mat_f32(b, &f, &w)))
		return st;
	if (!(t = tfm_amalloc((size_t)(nh * (2 * D + 1)) * sizeof(float))) || (st = own(m, t)))
		return st ? st : TFM_E_NOMEM; /* own frees t when it fails */
	for (int64_t r = -D; r <= D; r++) {
		int64_t k = t5_bucket(r, bidir, nb, D);
		for (int64_t h = 0; h < nh; h++)
			t[h * (2 * D + 1) + r + D] = f[k * nh + h];
	}
	*table = t;
	m->t5_span = D;
	return TFM_OK;
}

static int bind_rel(struct binder *b)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, rows = 2 * s->rel_span;
	struct tfm_mat w;
	struct tfm_norm_w nw = {0};
	int st = bind_mat(b, &w, "rel_embd.weight", d, rows, 1);
	if (st || (s->rel_norm && (st = bind_norm(b, &nw, "rel_embd_norm", d, 1))))
		return st;
	if ((st = mat_f32(b, &m->rel_emb, &w)))
		return st;
	float eps = (float)s->norm_eps;
	for (int64_t r = 0; s->rel_norm && r < rows; r++)
		m->be->layernorm(m->rel_emb + r * d, m->rel_emb + r * d, nw.w, nw.b, d, eps, 0);
	return TFM_OK;
}

/* DeBERTa-v2's ConvLayer: enc_conv.weight {k, d * d/g} (Conv1d's [d][d/g][k],
 * squeezed) kept as f32 taps [k][g][d/g][d/g] for one matmul per tap and
 * group, enc_conv.bias, enc_conv_norm. */
static int bind_conv(struct binder *b)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, k = s->conv_kernel, g = s->conv_groups, dg = d / g;
	struct tfm_mat w;
	float *f;
	int st = bind_mat(b, &w, "enc_conv.weight", k, d * dg, 1);
	if (st || (st = mat_f32(b, &f, &w)))
		return st;
	if (!(m->conv_w = tfm_amalloc((size_t)(k * d * dg) * sizeof(float))) ||
	    (st = own(m, m->conv_w)))
		return st ? st : TFM_E_NOMEM;
	for (int64_t o = 0; o < d; o++) /* f: [o][i][j], o in group o / dg */
		for (int64_t i = 0; i < dg; i++)
			for (int64_t j = 0; j < k; j++)
				m->conv_w[((j * g + o / dg) * dg + o % dg) * dg + i] = f[(o * dg + i) * k + j];
	if ((st = bind_vec(b, &m->conv_b, "enc_conv.bias", d, 1)) ||
	    (st = bind_norm(b, &m->conv_norm, "enc_conv_norm", d, 1)))
		return st;
	return TFM_OK;
}

/* An encoder's token types, pooler and classifier, by llama.cpp's names
 * (token_types; its ranking head: cls, the pooler dense, and cls.output),
 * and the masked-LM transform (mlm.dense, mlm.norm: tfm's names). */
static int bind_encoder(struct binder *b)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	int64_t d = s->n_embd, seq = s->head == TFM_HEAD_CLASSIFIER;
	int64_t cl = seq || s->head == TFM_HEAD_TOKEN;
	int64_t ew = s->embd_proj ? s->n_embd_io : d; /* token types as wide as the embeddings */
	int st;
	if (s->n_token_types > 0 &&
	    (st = bind_mat(b, &m->type_embd, "token_types.weight", ew, s->n_token_types, 1)))
		return st;
	if (s->head_transform) /* ModernBERT: one prediction head for every task */
		return bind_transform(b, cl);
	if ((st = bind_mat(b, &m->pooler, "cls.weight", d, d, seq && s->pooler)) ||
	    (m->pooler.data && (st = bind_vec(b, &m->pooler_b, "cls.bias", d, 1))) ||
	    (st = bind_mat(b, &m->cls, "cls.output.weight", d, s->n_labels, cl)) ||
	    (m->cls.data && (st = bind_vec(b, &m->cls_b, "cls.output.bias", s->n_labels, 1))) ||
	    (st = bind_mat(b, &m->mlm, "mlm.dense.weight", d, ew, s->mlm_head)) ||
	    (m->mlm.data && ((st = bind_vec(b, &m->mlm_b, "mlm.dense.bias", ew, 1)) ||
			     (st = bind_norm(b, &m->mlm_norm, "mlm.norm", ew, 1)) ||
			     (st = bind_vec(b, &m->out_b, "output.bias", s->n_vocab, 1)))))
		return st;
	return TFM_OK;
}

/* An f32 copy of a whole bound matrix (small ones: conv taps, A). */
static int mat_f32(struct binder *b, float **v, const struct tfm_mat *w)
{
	float *f = tfm_amalloc((size_t)(w->in * w->out) * sizeof *f);
	int st;
	if (!f)
		return TFM_E_NOMEM;
	if ((st = own(b->m, f)))
		return st;
	for (int64_t r = 0; r < w->out; r++)
		if ((st = tfm_k_row_to_f32(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes,
					   f + r * w->in, w->in)))
			return st;
	*v = f;
	return TFM_OK;
}

/* rwkv v5.1's decay or bonus, one value per head [n_head], spread over the
 * head's channels [n_embd] */
static int bind_per_head(struct binder *b, float **v, const char *name, int64_t n_head,
			 int64_t hs)
{
	float *h, *f;
	int st = bind_vec(b, &h, name, n_head, 1);
	if (st)
		return st;
	if (!(f = tfm_amalloc((size_t)(n_head * hs) * sizeof *f)))
		return TFM_E_NOMEM;
	if ((st = own(b->m, f)))
		return st;
	for (int64_t i = 0; i < n_head * hs; i++)
		f[i] = h[i / hs];
	*v = f;
	return TFM_OK;
}

/* A vector of n floats stored in any shape of n elements (llama.cpp's
 * rwkv6 lerp_fused {n_embd, 1, 1, 5}, time_mix_first {head_size, n_head}) */
static int bind_flat(struct binder *b, float **v, const char *name, int64_t n)
{
	const struct tfm_model_tensor *t = find(b, name);
	*v = NULL;
	if (!t)
		return tfm_seterr(TFM_E_FORMAT, "%s: missing tensor %s", b->arch, name);
	int64_t cnt = 1;
	for (int i = 0; i < t->n_dims && i < 4; i++)
		cnt *= t->ne[i];
	if (cnt != n || t->ne[0] % tfm_type_info(t->type)->blck || !t->data)
		return tfm_seterr(TFM_E_FORMAT, "%s: %lld elements, want %lld", name,
				  (long long)cnt, (long long)n);
	float *f = tfm_amalloc((size_t)n * sizeof *f);
	int st;
	if (!f)
		return TFM_E_NOMEM;
	if ((st = own(b->m, f)))
		return st;
	size_t rb = tfm_type_nbytes(t->type, t->ne[0]);
	for (int64_t r = 0; r < n / t->ne[0]; r++)
		if ((st = tfm_k_row_to_f32(t->type, (const uint8_t *)t->data + (size_t)r * rb,
					   f + r * t->ne[0], t->ne[0])))
			return tfm_adderr(st, "%s", name);
	*v = f;
	return TFM_OK;
}

/* RWKV v6's time mixing (rwkv.c): the five token-shift lerps fused
 * (llama.cpp's converter) or one by one (rwkv.cpp's files, llama.cpp's
 * older ones) into mix6; time_mix_w2 {rank, n_embd, 5} as {rank, 5 n_embd} */
static int bind_rwkv6(struct binder *b, int64_t l)
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	int64_t d = s->n_embd, rm = s->rwkv_lora_mix, rw = s->rwkv_lora_w;
	char n[96];
	int st;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	TRY(bind_vec(b, &L->mix_x, NM("time_mix_lerp_x.weight"), d, 1));
	if (find(b, NM("time_mix_lerp_fused.weight"))) {
		TRY(bind_flat(b, &L->mix6, n, 5 * d));
	} else {
		static const char *const lw[5] = {"time_mix_lerp_w.weight", "time_mix_lerp_k.weight",
						  "time_mix_lerp_v.weight", "time_mix_lerp_r.weight",
						  "time_mix_lerp_g.weight"};
		float *f = tfm_amalloc((size_t)(5 * d) * sizeof *f), *one;
		if (!f)
			return TFM_E_NOMEM;
		TRY(own(b->m, f));
		for (int i = 0; i < 5; i++) {
			TRY(bind_vec(b, &one, NM(lw[i]), d, 1));
			memcpy(f + i * d, one, (size_t)d * sizeof *f);
		}
		L->mix6 = f;
	}
	TRY(bind_mat(b, &L->mx1, NM("time_mix_w1.weight"), d, 5 * rm, 1));
	const struct tfm_model_tensor *t = find(b, NM("time_mix_w2.weight"));
	if (!t || t->ne[0] != rm || t->ne[1] * (t->n_dims > 2 ? t->ne[2] : 1) != 5 * d ||
	    (t->n_dims > 2 && t->ne[1] != d) || t->n_dims > 3)
		return tfm_seterr(TFM_E_FORMAT, "%s: %s missing or not {%lld, %lld, 5}", b->arch, n,
				  (long long)rm, (long long)d);
	if (!tfm_k_type_ok(t->type) || rm % tfm_type_info(t->type)->blck || !t->data)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: type %s not supported here", n,
				  tfm_type_name(t->type));
	L->mx2 = (struct tfm_mat){.data = t->data, .type = t->type, .in = rm, .out = 5 * d,
				  .row_bytes = tfm_type_nbytes(t->type, rm)};
	TRY(bind_vec(b, &L->w0, NM("time_mix_decay.weight"), d, 1));
	TRY(bind_mat(b, &L->w1, NM("time_mix_decay_w1.weight"), d, rw, 1));
	TRY(bind_mat(b, &L->w2, NM("time_mix_decay_w2.weight"), rw, d, 1));
	TRY(bind_flat(b, &L->rw_first, NM("time_mix_first.weight"), d));
	TRY(bind_mat(b, &L->rw_g, NM("time_mix_gate.weight"), d, d, 1));
	TRY(bind_vec(b, &L->cmix_r, NM("channel_mix_lerp_r.weight"), d, 1));
	TRY(bind_mat(b, &L->cm_r, NM("channel_mix_receptance.weight"), d, d, 1));
#undef NM
#undef TRY
	return TFM_OK;
}

/* An RWKV v4, v5, v6 or v7 block (rwkv.c; tfm's names, llama.cpp's where
 * it has them) */
static int bind_rwkv(struct binder *b, int64_t l)
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	int64_t d = s->n_embd, ff = s->n_ff;
	char n[96];
	int st;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	TRY(bind_norm(b, &L->attn_norm, NM("attn_norm"), d, 1));
	TRY(bind_norm(b, &L->ffn_norm, NM("attn_norm_2"), d, 1));
	TRY(bind_mat(b, &L->rw_k, NM("time_mix_key.weight"), d, d, 1));
	TRY(bind_mat(b, &L->rw_v, NM("time_mix_value.weight"), d, d, 1));
	TRY(bind_mat(b, &L->rw_r, NM("time_mix_receptance.weight"), d, d, 1));
	TRY(bind_mat(b, &L->rw_o, NM("time_mix_output.weight"), d, d, 1));
	TRY(bind_vec(b, &L->cmix_k, NM("channel_mix_lerp_k.weight"), d, 1));
	TRY(bind_mat(b, &L->cm_k, NM("channel_mix_key.weight"), d, ff, 1));
	TRY(bind_mat(b, &L->cm_v, NM("channel_mix_value.weight"), ff, d, 1));
	if (s->rwkv_version >= 5)
		TRY(bind_norm(b, &L->rw_lnx, NM("time_mix_ln"), d, 1));
	if (s->rwkv_version == 6)
		return bind_rwkv6(b, l);
	if (s->rwkv_version == 7) {
		const int64_t rk[4] = {s->rwkv_lora_w, s->rwkv_lora_a, s->rwkv_lora_v,
				       s->rwkv_lora_g};
		static const char *const lo[4][2] = {{"time_mix_w1.weight", "time_mix_w2.weight"},
						     {"time_mix_a1.weight", "time_mix_a2.weight"},
						     {"time_mix_v1.weight", "time_mix_v2.weight"},
						     {"time_mix_g1.weight", "time_mix_g2.weight"}};
		struct tfm_mat *m[4][2] = {{&L->w1, &L->w2}, {&L->a1, &L->a2}, {&L->v1, &L->v2},
					   {&L->g1, &L->g2}};
		for (int i = 0; i < 4; i++) {
			if (i == 2 && l == 0)
				continue; /* the first layer's value is the residual */
			TRY(bind_mat(b, m[i][0], NM(lo[i][0]), d, rk[i], 1));
			TRY(bind_mat(b, m[i][1], NM(lo[i][1]), rk[i], d, 1));
		}
		TRY(bind_flat(b, &L->mix7, NM("time_mix_lerp_fused.weight"), 6 * d));
		TRY(bind_vec(b, &L->w0, NM("time_mix_w0.weight"), d, 1));
		TRY(bind_vec(b, &L->a0, NM("time_mix_a0.weight"), d, 1));
		TRY(bind_vec(b, &L->v0, NM("time_mix_v0.weight"), d, l > 0));
		TRY(bind_vec(b, &L->k_k, NM("time_mix_k_k.weight"), d, 1));
		TRY(bind_vec(b, &L->k_a, NM("time_mix_k_a.weight"), d, 1));
		TRY(bind_vec(b, &L->r_k, NM("time_mix_r_k.weight"), d, 1));
		return TFM_OK;
	}
	TRY(bind_vec(b, &L->mix_k, NM("time_mix_lerp_k.weight"), d, 1));
	TRY(bind_vec(b, &L->mix_v, NM("time_mix_lerp_v.weight"), d, 1));
	TRY(bind_vec(b, &L->mix_r, NM("time_mix_lerp_r.weight"), d, 1));
	if (s->rwkv_version == 5 && s->rwkv_minor == 1) {
		int64_t hs = s->rwkv_head_size;
		TRY(bind_per_head(b, &L->rw_decay, NM("time_mix_decay.weight"), d / hs, hs));
		TRY(bind_per_head(b, &L->rw_first, NM("time_mix_first.weight"), d / hs, hs));
	} else {
		TRY(bind_vec(b, &L->rw_decay, NM("time_mix_decay.weight"), d, 1));
		TRY(bind_flat(b, &L->rw_first, NM("time_mix_first.weight"), d));
	}
	if (s->rwkv_version == 5 && s->rwkv_minor == 2) {
		TRY(bind_vec(b, &L->mix_g, NM("time_mix_lerp_g.weight"), d, 1));
		TRY(bind_mat(b, &L->rw_g, NM("time_mix_gate.weight"), d, d, 1));
	}
	TRY(bind_vec(b, &L->cmix_r, NM("channel_mix_lerp_r.weight"), d, 1));
	TRY(bind_mat(b, &L->cm_r, NM("channel_mix_receptance.weight"), d, d, 1));
#undef NM
#undef TRY
	return TFM_OK;
}

static int bind_ffn(struct binder *b, int64_t l);

/* A Gated DeltaNet layer's norm and mixer (gdn.c; qwen3_next; its FFN:
 * bind_recurrent).  ssm_in keeps the checkpoint's grouped [q k v z]
 * order, ssm_ba its [b a]; the conv has no bias. */
static int bind_gdn(struct binder *b, int64_t l)
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	int64_t d = s->n_embd, nv = s->ssm_n_head, vd = s->ssm_d_inner, cd = tfm_gdn_conv_dim(s);
	char n[96];
	int st;
	struct tfm_mat cw;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	TRY(bind_norm(b, &L->attn_norm, NM("attn_norm"), d, 1));
	TRY(bind_mat(b, &L->ssm_in, NM("ssm_in.weight"), d, cd + vd, 1));
	TRY(bind_mat(b, &L->ssm_ba, NM("ssm_ba.weight"), d, 2 * nv, 1));
	TRY(bind_mat(b, &cw, NM("ssm_conv1d.weight"), s->ssm_d_conv, cd, 1));
	TRY(mat_f32(b, &L->ssm_conv_w, &cw));
	TRY(bind_vec(b, &L->ssm_conv_b, NM("ssm_conv1d.bias"), cd, 0));
	if (L->ssm_conv_b)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s: a conv bias in a gdn layer is not "
				  "supported", b->arch, n);
	TRY(bind_vec(b, &L->ssm_dt_b, NM("ssm_dt.bias"), nv, 1));
	TRY(bind_vec(b, &L->ssm_a, NM("ssm_a"), nv, 1));
	TRY(bind_vec(b, &L->ssm_norm_w, NM("ssm_norm.weight"), vd / nv, 1));
	TRY(bind_mat(b, &L->ssm_out, NM("ssm_out.weight"), vd, d, 1));
#undef NM
#undef TRY
	return TFM_OK;
}

/* A mamba2 layer's norm and mixer (a hybrid's FFN, bamba's: bind_recurrent;
 * llama.cpp's names; in_proj
 * as wide as z, xBC and dt: no extra MLP columns). */
static int bind_mamba2(struct binder *b, int64_t l)
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	int64_t d = s->n_embd, di = s->ssm_d_inner, nh = s->ssm_n_head;
	int64_t cd = di + 2 * s->ssm_n_group * s->ssm_d_state, proj = di + cd + nh;
	char n[96];
	int st;
	struct tfm_mat cw;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	TRY(bind_norm(b, &L->attn_norm, NM("attn_norm"), d, 1));
	TRY(bind_mat(b, &L->ssm_in, NM("ssm_in.weight"), d, proj, 1));
	TRY(bind_vec(b, &L->ssm_in_b, NM("ssm_in.bias"), proj, s->ssm_bias));
	TRY(bind_mat(b, &cw, NM("ssm_conv1d.weight"), s->ssm_d_conv, cd, 1));
	TRY(mat_f32(b, &L->ssm_conv_w, &cw));
	TRY(bind_vec(b, &L->ssm_conv_b, NM("ssm_conv1d.bias"), cd, s->ssm_conv_bias));
	TRY(bind_vec(b, &L->ssm_dt_b, NM("ssm_dt.bias"), nh, 1));
	/* A, D {1, n_head} and the norm {d_inner / n_group, n_group} in
	 * llama.cpp's files, flat in older ones */
	TRY(bind_flat(b, &L->ssm_a, NM("ssm_a"), nh));
	TRY(bind_flat(b, &L->ssm_d, NM("ssm_d"), nh));
	TRY(bind_flat(b, &L->ssm_norm_w, NM("ssm_norm.weight"), di));
	TRY(bind_mat(b, &L->ssm_out, NM("ssm_out.weight"), di, d, 1));
	TRY(bind_vec(b, &L->ssm_out_b, NM("ssm_out.bias"), d, s->ssm_bias));
#undef NM
#undef TRY
	return TFM_OK;
}

/* A mamba layer's norm and mixer (llama.cpp's names; a hybrid's FFN,
 * jamba's: bind_recurrent). */
static int bind_mamba(struct binder *b, int64_t l)
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	int64_t d = s->n_embd, di = s->ssm_d_inner, N = s->ssm_d_state, R = s->ssm_dt_rank;
	char n[96];
	int st;
	struct tfm_mat cw, a;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	TRY(bind_norm(b, &L->attn_norm, NM("attn_norm"), d, 1));
	TRY(bind_mat(b, &L->ssm_in, NM("ssm_in.weight"), d, 2 * di, 1));
	TRY(bind_vec(b, &L->ssm_in_b, NM("ssm_in.bias"), 2 * di, s->ssm_bias));
	/* the conv taps and A as f32 copies of whole matrices */
	TRY(bind_mat(b, &cw, NM("ssm_conv1d.weight"), s->ssm_d_conv, di, 1));
	TRY(mat_f32(b, &L->ssm_conv_w, &cw));
	TRY(bind_vec(b, &L->ssm_conv_b, NM("ssm_conv1d.bias"), di, s->ssm_conv_bias));
	TRY(bind_mat(b, &L->ssm_x, NM("ssm_x.weight"), di, R + 2 * N, 1));
	TRY(bind_mat(b, &L->ssm_dt, NM("ssm_dt.weight"), R, di, 1));
	TRY(bind_vec(b, &L->ssm_dt_b, NM("ssm_dt.bias"), di, 1));
	TRY(bind_mat(b, &a, NM("ssm_a"), N, di, 1));
	TRY(mat_f32(b, &L->ssm_a, &a));
	TRY(bind_vec(b, &L->ssm_d, NM("ssm_d"), di, 1));
	TRY(bind_mat(b, &L->ssm_out, NM("ssm_out.weight"), di, d, 1));
	TRY(bind_vec(b, &L->ssm_out_b, NM("ssm_out.bias"), d, s->ssm_bias));
	int w = s->ssm_dt_norm && s->ssm_norm_w;
	TRY(bind_vec(b, &L->ssm_dt_nw, NM("ssm_dt_norm.weight"), R, w));
	TRY(bind_vec(b, &L->ssm_b_nw, NM("ssm_b_norm.weight"), N, w));
	TRY(bind_vec(b, &L->ssm_c_nw, NM("ssm_c_norm.weight"), N, w));
	if (!w && (L->ssm_dt_nw || L->ssm_b_nw || L->ssm_c_nw))
		return tfm_seterr(TFM_E_FORMAT, "%s: blk.%lld has dt/B/C norm weights but the spec "
				  "says %s (ssm.dt_norm_w)", b->arch, (long long)l,
				  s->ssm_dt_norm ? "weightless norms" : "no norms");
#undef NM
#undef TRY
	return TFM_OK;
}

/* A layer's tensor name: blk.N.suffix; T5's (llama.cpp's t5 and
 * t5encoder names) enc.blk.N / dec.blk.N with N counted within its stack,
 * attn_output as attn_o. */
const char *tfm_layer_name(const struct tfm_spec *s, char *n, size_t size, int64_t l,
			   const char *suffix)
{
	if (s->pos_attn != TFM_POS_T5 && s->family != TFM_FAMILY_ENCDEC) {
		snprintf(n, size, "blk.%lld.%s", (long long)l, suffix);
		return n;
	}
	int dec = s->family == TFM_FAMILY_ENCDEC && l >= s->n_layer;
	const char *rest = "";
	if (!strncmp(suffix, "attn_output", 11))
		rest = suffix + 11, suffix = "attn_o";
	snprintf(n, size, "%s.blk.%lld.%s%s", dec ? "dec" : "enc",
		 (long long)(dec ? l - s->n_layer : l), suffix, rest);
	return n;
}

/* An xLSTM mLSTM block's norm and mixer (names in llama.cpp's style,
 * formats/tensor-names.md; its gated FFN: bind_recurrent). */
static int bind_mlstm(struct binder *b, int64_t l)
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	int64_t d = s->n_embd, qk = s->xlstm_qk_dim, vd = s->xlstm_v_dim, nh = s->ssm_n_head;
	char n[96];
	int st;
#define NM(suffix) (snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix), n)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	TRY(bind_norm(b, &L->attn_norm, NM("attn_norm"), d, 1));
	TRY(bind_mat(b, &L->ml_q, NM("mlstm_q.weight"), d, qk, 1));
	TRY(bind_mat(b, &L->ml_k, NM("mlstm_k.weight"), d, qk, 1));
	TRY(bind_mat(b, &L->ml_v, NM("mlstm_v.weight"), d, vd, 1));
	TRY(bind_mat(b, &L->ml_o, NM("mlstm_ogate.weight"), d, vd, 1));
	TRY(bind_mat(b, &L->ml_ig, NM("mlstm_igate.weight"), d, nh, 1));
	TRY(bind_vec(b, &L->ml_ig_b, NM("mlstm_igate.bias"), nh, 1));
	TRY(bind_mat(b, &L->ml_fg, NM("mlstm_fgate.weight"), d, nh, 1));
	TRY(bind_vec(b, &L->ml_fg_b, NM("mlstm_fgate.bias"), nh, 1));
	TRY(bind_vec(b, &L->ml_norm_w, NM("mlstm_norm.weight"), vd, 1));
	TRY(bind_mat(b, &L->ml_out, NM("mlstm_out.weight"), vd, d, 1));
#undef NM
#undef TRY
	return TFM_OK;
}

/* A recurrent layer: its norm and mixer (the binder given), then, when the
 * layer has an FFN (n_ff > 0 or an MoE layer: the hybrids' layers, xlstm's
 * blocks; not a pure mamba's), the FFN's norm and the FFN, as block() runs
 * them (exec.c) and count.c counts them. */
static int bind_recurrent(struct binder *b, int64_t l, int (*mixer)(struct binder *, int64_t))
{
	const struct tfm_spec *s = &b->m->spec;
	struct tfm_layer *L = &b->m->layers[l];
	char n[96];
	int st = mixer(b, l);
	if (st || !(s->n_ff > 0 || s->layer_moe[l]))
		return st;
	snprintf(n, sizeof n, "blk.%lld.ffn_norm", (long long)l);
	if ((st = bind_norm(b, &L->ffn_norm, n, s->n_embd, 1)))
		return st;
	return bind_ffn(b, l);
}

static int bind_layer(struct binder *b, int64_t l)
{
	if (b->m->spec.layer_kind[l] == TFM_LAYER_MLSTM)
		return bind_recurrent(b, l, bind_mlstm);
	if (b->m->spec.layer_kind[l] == TFM_LAYER_MAMBA)
		return bind_recurrent(b, l, bind_mamba);
	if (b->m->spec.layer_kind[l] == TFM_LAYER_MAMBA2)
		return bind_recurrent(b, l, bind_mamba2);
	if (b->m->spec.layer_kind[l] == TFM_LAYER_RWKV)
		return bind_rwkv(b, l);
	if (b->m->spec.layer_kind[l] == TFM_LAYER_GDN)
		return bind_recurrent(b, l, bind_gdn);
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, qd = m->q_dim, kvd = m->kv_dim;
	char n[96];
	int st;
#define NM(suffix) tfm_layer_name(s, n, sizeof n, l, suffix)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	int post_in = s->norm_place == TFM_NORM_POST_IN, sandwich = s->norm_place == TFM_NORM_SANDWICH;
	/* llama.cpp's BERT names its post norms; ModernBERT's pre norms keep
	 * the decoders' names, and its layer 0 has none before attention */
	int enc = s->family == TFM_FAMILY_ENCODER && s->norm_place == TFM_NORM_POST;
	int skip = l == 0 && s->no_first_attn_norm;
	TRY(bind_norm(b, &L->attn_norm, NM(enc ? "attn_output_norm" : "attn_norm"), d,
		      !post_in && !skip));
	if (skip && L->attn_norm.w)
		return tfm_seterr(TFM_E_FORMAT, "%s: %s present but the spec says layer 0 has no "
				  "attention norm (norm.no_first_attn)", b->arch, n);
	if (post_in && L->attn_norm.w)
		return tfm_seterr(TFM_E_FORMAT, "%s: %s present but norms sit inside the residual "
				  "(post_in)", b->arch, n);
	if (s->parallel_residual) {
		/* falcon's new architecture: attn_norm_2 feeds attention and
		 * attn_norm the FFN (llama.cpp's names for ln_attn / ln_mlp) */
		struct tfm_norm_w n2;
		TRY(bind_norm(b, &n2, NM("attn_norm_2"), d, 0));
		if (n2.w) {
			L->ffn_norm = L->attn_norm;
			L->attn_norm = n2;
		}
	}
	if (m->mla) {
		TRY(bind_mla(b, l));
	} else {
	TRY(bind_mat(b, &L->wqkv, NM("attn_qkv.weight"), d, qd + 2 * kvd, 0));
	if (L->wqkv.data && s->attn_out_gate)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s: a fused QKV projection with the "
				  "attention output gate is not supported", b->arch, n);
	if (L->wqkv.data && (s->attn_bias_qv || s->pos_attn == TFM_POS_DEBERTA)) {
		/* DeBERTa v1's in_proj (rows [q; k; v] after hfmap.c's reorder):
		 * three views, run as separate projections with v1's own biases */
		L->wq = L->wk = L->wv = L->wqkv;
		L->wq.out = qd, L->wk.out = L->wv.out = kvd;
		L->wk.data = (const uint8_t *)L->wqkv.data + (size_t)qd * L->wqkv.row_bytes;
		L->wv.data = (const uint8_t *)L->wk.data + (size_t)kvd * L->wqkv.row_bytes;
		L->wqkv.data = NULL;
	} else if (L->wqkv.data) {
		TRY(bind_vec(b, &L->bqkv, NM("attn_qkv.bias"), qd + 2 * kvd, s->attn_bias_qkv));
	} else {
		/* attn.out_gate: each head's [q | gate], 2 qd rows */
		TRY(bind_mat(b, &L->wq, NM("attn_q.weight"), d, s->attn_out_gate ? 2 * qd : qd, 1));
		TRY(bind_mat(b, &L->wk, NM("attn_k.weight"), d, kvd, 1));
		TRY(bind_mat(b, &L->wv, NM("attn_v.weight"), d, kvd, 1));
	}
	if (!L->wqkv.data) {
		TRY(bind_vec(b, &L->bq, NM("attn_q.bias"), qd, s->attn_bias_qkv || s->attn_bias_qv));
		TRY(bind_vec(b, &L->bk, NM("attn_k.bias"), kvd, s->attn_bias_qkv));
		TRY(bind_vec(b, &L->bv, NM("attn_v.bias"), kvd, s->attn_bias_qkv || s->attn_bias_qv));
	}
	if (s->pos_attn == TFM_POS_DEBERTA && !s->rel_share_key) {
		/* DeBERTa's own projections of the relative embeddings */
		TRY(bind_mat(b, &L->pos_k, NM("attn_pos_k.weight"), d, qd, s->rel_c2p));
		TRY(bind_vec(b, &L->pos_k_b, NM("attn_pos_k.bias"), qd,
			     s->rel_c2p && s->rel_pos_k_bias));
		TRY(bind_mat(b, &L->pos_q, NM("attn_pos_q.weight"), d, qd, s->rel_p2c));
		TRY(bind_vec(b, &L->pos_q_b, NM("attn_pos_q.bias"), qd, s->rel_p2c));
	}
	}
	TRY(bind_mat(b, &L->wo, NM("attn_output.weight"),
		     s->diff_attn ? m->q_dim : s->n_head * m->v_dim, d, 1));
	if (s->diff_attn)
		TRY(bind_diff(b, l));
	TRY(bind_vec(b, &L->bo, NM("attn_output.bias"), d, s->attn_bias_out));
	if (s->qk_norm == TFM_QK_NORM_HEAD || s->qk_norm == TFM_QK_NORM_FULL) {
		int full = s->qk_norm == TFM_QK_NORM_FULL;
		TRY(bind_norm(b, &L->q_norm, NM("attn_q_norm"), full ? qd : m->head_dim, 1));
		TRY(bind_norm(b, &L->k_norm, NM("attn_k_norm"), full ? kvd : m->head_dim, 1));
	}
	/* llama.cpp's names for the post norms (gemma2, olmo2), then the brief's */
	TRY(bind_norm(b, &L->attn_post_norm, NM("post_attention_norm"), d, 0));
	if (!L->attn_post_norm.w)
		TRY(bind_norm(b, &L->attn_post_norm, NM("attn_post_norm"), d, sandwich || post_in));
	TRY(bind_norm(b, &L->ffn_post_norm, NM("post_ffw_norm"), d, 0));
	if (!L->ffn_post_norm.w)
		TRY(bind_norm(b, &L->ffn_post_norm, NM("ffn_post_norm"), d, sandwich || post_in));
	if (!sandwich && !post_in && (L->attn_post_norm.w || L->ffn_post_norm.w))
		return tfm_seterr(TFM_E_FORMAT, "%s: layer %lld has post norms but the spec's norm "
				  "placement is pre", b->arch, (long long)l);
	if (!L->ffn_norm.w)
		TRY(bind_norm(b, &L->ffn_norm, NM(enc ? "layer_output_norm" : "ffn_norm"), d,
			      !post_in && !(s->parallel_residual && s->shared_attn_ffn_norm)));
	if (post_in && L->ffn_norm.w)
		return tfm_seterr(TFM_E_FORMAT, "%s: %s present but norms sit inside the residual "
				  "(post_in)", b->arch, n);
	if (s->family == TFM_FAMILY_ENCDEC && l >= s->n_layer) { /* the decoder's cross-attention */
		TRY(bind_norm(b, &L->cross_norm, NM("cross_attn_norm"), d, 1));
		TRY(bind_mat(b, &L->cq, NM("cross_attn_q.weight"), d, qd, 1));
		TRY(bind_mat(b, &L->ck, NM("cross_attn_k.weight"), d, qd, 1));
		TRY(bind_mat(b, &L->cv, NM("cross_attn_v.weight"), d, qd, 1));
		TRY(bind_mat(b, &L->co, NM("cross_attn_o.weight"), qd, d, 1));
		TRY(bind_vec(b, &L->cbq, NM("cross_attn_q.bias"), qd, s->attn_bias_qkv));
		TRY(bind_vec(b, &L->cbk, NM("cross_attn_k.bias"), qd, s->attn_bias_qkv));
		TRY(bind_vec(b, &L->cbv, NM("cross_attn_v.bias"), qd, s->attn_bias_qkv));
		TRY(bind_vec(b, &L->cbo, NM("cross_attn_o.bias"), d, s->attn_bias_out));
		/* T5's cross-attention has no position bias: refuse one rather
		 * than ignore it */
		if (b->sorted && find(b, NM("cross_attn_rel_b.weight")))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s: a relative position bias in "
					  "cross-attention is not supported", b->arch, n);
	}
	if (s->pos_attn == TFM_POS_T5 && l != 0 && (s->family != TFM_FAMILY_ENCDEC || l != s->n_layer) &&
	    b->sorted && find(b, NM("attn_rel_b.weight")))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s: only the first layer of a stack may "
				  "carry T5's relative bias (shared by the others)", b->arch, n);
	return bind_ffn(b, l);
#undef NM
#undef TRY
}

/* Layer l's FFN: the experts (bind_moe), or a dense FFN, gated or not. */
static int bind_ffn(struct binder *b, int64_t l)
{
	struct tfm_model *m = b->m;
	const struct tfm_spec *s = &m->spec;
	struct tfm_layer *L = &m->layers[l];
	int64_t d = s->n_embd, ff = s->n_ff;
	char n[96];
	int st;
#define NM(suffix) tfm_layer_name(s, n, sizeof n, l, suffix)
#define TRY(x) do { if ((st = (x))) return st; } while (0)
	if (s->layer_moe[l])
		return bind_moe(b, l);
	if (s->gated)
		TRY(bind_mat(b, &L->gate, NM("ffn_gate.weight"), d, ff, 0));
	if (s->gated && !L->gate.data) {
		/* phi3: gate and up fused in ffn_up {n_embd, 2 n_ff}, gate rows first */
		TRY(bind_mat(b, &L->up, NM("ffn_up.weight"), d, -1, 1));
		if (L->up.out != 2 * ff)
			return tfm_seterr(TFM_E_FORMAT, "%s: missing tensor blk.%lld.ffn_gate.weight",
					  b->arch, (long long)l);
		L->gate = L->up;
		L->gate.out = L->up.out = ff;
		L->up.data = (const uint8_t *)L->up.data + (size_t)ff * L->up.row_bytes;
		/* ModernBERT's Wi bias: [2 n_ff], the gate's half first */
		TRY(bind_vec(b, &L->gate_b, NM("ffn_up.bias"), 2 * ff, s->ffn_bias));
		L->up_b = L->gate_b ? L->gate_b + ff : NULL;
	} else {
		TRY(bind_mat(b, &L->up, NM("ffn_up.weight"), d, ff, 1));
		TRY(bind_vec(b, &L->gate_b, NM("ffn_gate.bias"), ff, 0));
		TRY(bind_vec(b, &L->up_b, NM("ffn_up.bias"), ff, s->ffn_bias));
	}
	TRY(bind_mat(b, &L->down, NM("ffn_down.weight"), ff, d, 1));
	TRY(bind_vec(b, &L->down_b, NM("ffn_down.bias"), d, s->ffn_bias));
	if (!s->gated && b->sorted && find(b, NM("ffn_gate.weight")))
		return tfm_seterr(TFM_E_FORMAT, "%s: %s present but the spec says the FFN is not gated",
				  b->arch, n);
#undef NM
#undef TRY
	return TFM_OK;
}

/* Which layers are local (a sliding window, or chunked) / use RoPE.  A spec
 * marks them in layer_window / layer_rope; when none is marked the default
 * applies to every layer (mask=window or chunked: all local; pos=rope: RoPE
 * everywhere). */
static void layer_pattern(struct tfm_model *m)
{
	const struct tfm_spec *s = &m->spec;
	int any_w = 0, any_r = 0;
	for (int64_t l = 0; l < s->n_layer; l++) {
		any_w |= s->layer_window[l];
		any_r |= s->layer_rope[l];
	}
	int64_t span = s->window > 0 ? s->window : s->chunk > 0 ? s->chunk : 0;
	m->all_window = span > 0;
	m->max_window = 0;
	for (int64_t l = 0; l < s->n_layer; l++) {
		struct tfm_layer *L = &m->layers[l];
		int win = span > 0 && (any_w ? s->layer_window[l] : s->mask == TFM_MASK_WINDOW ||
							       s->mask == TFM_MASK_CHUNKED);
		L->window = win && s->window > 0 ? s->window : 0;
		L->chunk = win && s->window <= 0 ? s->chunk : 0;
		if (!win)
			m->all_window = 0;
		else if (span > m->max_window)
			m->max_window = span;
		L->rope = s->pos_attn == TFM_POS_ROPE && (any_r ? s->layer_rope[l] : 1);
		m->any_rope |= L->rope;
	}
}

/* YaRN as transformers' _compute_yarn_parameters (truncate on): dims that
 * turn fewer than beta_slow times over the original context are
 * interpolated (divided by the factor), those turning more than beta_fast
 * times kept, a linear ramp between; cos and sin are then multiplied by the
 * attention factor (0.1 ln(factor) + 1 unless given). */
static double yarn_mscale(double scale, double mscale)
{
	return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

static void yarn(struct tfm_model *m, double theta)
{
	const struct tfm_spec *s = &m->spec;
	double dim = (double)m->n_rot, f = s->rope_factor;
	double orig = (double)(s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->n_ctx_train);
	double bf = s->yarn_beta_fast > 0 ? s->yarn_beta_fast : 32;
	double bs = s->yarn_beta_slow > 0 ? s->yarn_beta_slow : 1;
#define CORR_DIM(rot) (dim * log(orig / ((rot) * 2 * M_PI)) / (2 * log(theta)))
	double lo = floor(CORR_DIM(bf)), hi = ceil(CORR_DIM(bs));
#undef CORR_DIM
	lo = lo > 0 ? lo : 0;
	hi = hi < dim - 1 ? hi : dim - 1;
	if (lo == hi)
		hi += 0.001;
	for (int64_t i = 0; i < m->n_rot / 2; i++) {
		double extrap = pow(theta, -2.0 * (double)i / dim), interp = extrap / f;
		double ramp = ((double)i - lo) / (hi - lo);
		ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
		m->inv_freq[i] = (float)(interp * ramp + extrap * (1 - ramp));
	}
	if (s->yarn_attn_factor > 0)
		m->rope_mscale = s->yarn_attn_factor;
	else if (s->yarn_mscale > 0 && s->yarn_mscale_all_dim > 0)
		m->rope_mscale = yarn_mscale(f, s->yarn_mscale) / yarn_mscale(f, s->yarn_mscale_all_dim);
	else
		m->rope_mscale = yarn_mscale(f, 1);
}

/* LongRoPE (phi3) as transformers: frequencies divided per dim by the short
 * factors, or by the long ones once a call reaches past the original
 * context (chosen per tfm_eval call, like transformers per forward call);
 * cos and sin times sqrt(1 + ln(factor) / ln(original context)). */
static int longrope(struct tfm_model *m, double theta)
{
	const struct tfm_spec *s = &m->spec;
	int64_t h = m->n_rot / 2;
	m->rope_orig = s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->n_ctx_train;
	m->inv_freq_long = tfm_malloc((size_t)h * sizeof(float));
	if (!m->inv_freq_long)
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < h; i++) {
		double base = pow(theta, 2.0 * (double)i / (double)m->n_rot);
		m->inv_freq[i] = (float)(1.0 / (s->rope_short_factors[i] * base));
		m->inv_freq_long[i] = (float)(1.0 / (s->rope_long_factors[i] * base));
	}
	double f = s->rope_factor;
	m->rope_mscale = f <= 1 ? 1.0 : sqrt(1 + log(f) / log((double)m->rope_orig));
	return TFM_OK;
}

static int positions(struct tfm_model *m)
{
	const struct tfm_spec *s = &m->spec;
	m->attn_scale = s->attn_scale > 0 ? s->attn_scale : (float)(1.0 / sqrt((double)m->head_dim));
	if (m->mla && s->rope_scaling == TFM_ROPE_SCALE_YARN && s->yarn_mscale_all_dim > 0) {
		/* deepseek: the softmax scale takes the YaRN mscale squared */
		double ms = yarn_mscale(s->rope_factor, s->yarn_mscale_all_dim);
		m->attn_scale *= (float)(ms * ms);
	}
	m->pos_scale = 1.0;
	m->rope_mscale = 1.0;
	if (s->pos_attn == TFM_POS_ROPE) {
		m->n_rot = s->rope_dims ? s->rope_dims : m->head_dim;
		double theta = s->rope_theta > 0 ? s->rope_theta : 10000.0;
		m->inv_freq = tfm_malloc((size_t)(m->n_rot / 2) * sizeof(float));
		if (!m->inv_freq)
			return TFM_E_NOMEM;
		for (int64_t i = 0; i < m->n_rot / 2; i++)
			m->inv_freq[i] = (float)pow(theta, -2.0 * (double)i / (double)m->n_rot);
		if (s->rope_scaling == TFM_ROPE_SCALE_LINEAR)
			m->pos_scale = 1.0 / s->rope_factor;
		if (s->rope_theta_local > 0 && s->window > 0) {
			/* gemma3: window layers rotate with their own theta, unscaled */
			m->inv_freq_local = tfm_malloc((size_t)(m->n_rot / 2) * sizeof(float));
			if (!m->inv_freq_local)
				return TFM_E_NOMEM;
			for (int64_t i = 0; i < m->n_rot / 2; i++)
				m->inv_freq_local[i] = (float)pow(s->rope_theta_local,
								  -2.0 * (double)i / (double)m->n_rot);
			for (int64_t l = 0; l < s->n_layer; l++)
				m->layers[l].rope_local = m->layers[l].rope && m->layers[l].window > 0;
		}
		if (s->rope_scaling == TFM_ROPE_SCALE_YARN)
			yarn(m, theta);
		if (s->rope_scaling == TFM_ROPE_SCALE_LONGROPE && longrope(m, theta))
			return TFM_E_NOMEM;
		if (s->rope_scaling == TFM_ROPE_SCALE_DYNAMIC)
			m->rope_orig = s->rope_orig_ctx > 0 ? s->rope_orig_ctx : s->n_ctx_train;
		if (s->rope_scaling == TFM_ROPE_SCALE_LLAMA3) {
			/* as transformers' _compute_llama3_parameters: long wavelengths
			 * are divided by the factor, short ones kept, the band between
			 * interpolated */
			double lo_wl = (double)s->rope_orig_ctx / s->llama3_low_freq_factor;
			double hi_wl = (double)s->rope_orig_ctx / s->llama3_high_freq_factor;
			for (int64_t i = 0; i < m->n_rot / 2; i++) {
				double f = pow(theta, -2.0 * (double)i / (double)m->n_rot);
				double wl = 2 * M_PI / f;
				if (wl > lo_wl) {
					f /= s->rope_factor;
				} else if (wl >= hi_wl && hi_wl < lo_wl) { /* none when equal (llama4) */
					double sm = ((double)s->rope_orig_ctx / wl - s->llama3_low_freq_factor) /
						    (s->llama3_high_freq_factor - s->llama3_low_freq_factor);
					f = (1 - sm) * f / s->rope_factor + sm * f;
				}
				m->inv_freq[i] = (float)f;
			}
		}
	}
	if (s->pos_attn == TFM_POS_ALIBI) {
		/* slopes as in BLOOM / llama.cpp: for the largest power of two
		 * n2 <= n_head, m0^(h+1); the rest interleave m1^(2k+1) */
		int64_t nh = s->n_head, n2 = 1;
		while (n2 * 2 <= nh)
			n2 *= 2;
		double m0 = pow(2.0, -s->alibi_max_bias / (double)n2);
		double m1 = pow(2.0, -s->alibi_max_bias / 2.0 / (double)n2);
		m->alibi = tfm_malloc((size_t)nh * sizeof(float));
		if (!m->alibi)
			return TFM_E_NOMEM;
		for (int64_t h = 0; h < nh; h++)
			m->alibi[h] = (s->alibi_scale > 0 ? s->alibi_scale : 1.0f) *
				      (float)(h < n2 ? pow(m0, (double)(h + 1))
						     : pow(m1, (double)(2 * (h - n2) + 1)));
	}
	return TFM_OK;
}

int tfm_model_new(struct tfm_model **out, const struct tfm_spec *s,
		  const struct tfm_model_tensor *t, int64_t n_tensors,
		  const struct tfm_model_opts *o)
{
	struct tfm_model_opts dflt = {0};
	struct binder b = {0};
	int st = tfm_model_check_spec(s);
	*out = NULL;
	if (st)
		return st;
	if (!o)
		o = &dflt;
	for (int i = 0; i < 2; i++) {
		int t = i ? o->v_type : o->k_type;
		if (!tfm_k_kv_type_ok(t))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s cache of type %s (f32, f16, bf16, "
					  "q8_0, q5_1, q5_0, q4_1 or q4_0)", i ? "V" : "K",
					  tfm_type_name(t));
	}
	struct tfm_model *m = tfm_calloc(1, sizeof *m);
	if (!m)
		return TFM_E_NOMEM;
	m->spec = *s;
	s = &m->spec;
	if (!m->spec.n_head_kv)
		m->spec.n_head_kv = m->spec.n_head;
	m->head_dim = s->head_dim ? s->head_dim : s->n_head ? s->n_embd / s->n_head : 64;
	m->spec.head_dim = m->head_dim;
	m->q_dim = s->n_head * m->head_dim;
	m->kv_dim = s->n_head_kv * m->head_dim;
	m->mla = s->kv_lora_rank > 0;
	m->v_dim = m->mla ? s->v_head_dim : m->head_dim;
	if (s->diff_attn) /* the cache holds each head's two value heads side by side */
		m->v_dim = 2 * m->head_dim;
	m->vv_dim = s->n_head_kv * m->v_dim;
	m->n_threads = o->n_threads > 0 ? o->n_threads : tfm_ncpu();
	m->k_type = o->k_type, m->v_type = o->v_type;
	if (m->mla) {
		/* one latent cache (mla_attention): its rows are the keys and
		 * hold the values, so one type, and no rotation (the values
		 * are read from the rows as stored) */
		int64_t w = s->kv_lora_rank + s->qk_rope_dim;
		if (m->v_type != m->k_type) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: MLA keeps one latent cache whose "
					"rows are keys and values: a V type (%s) other than the K "
					"type (%s) is not supported", s->arch, tfm_type_name(m->v_type),
					tfm_type_name(m->k_type));
			goto fail;
		}
		if (!tfm_k_kv_bytes(m->k_type, 1, 1, w)) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "KV cache of %s: the MLA latent row of %lld "
					"(kv_lora_rank + qk_rope_head_dim) is not whole blocks",
					tfm_type_name(m->k_type), (long long)w);
			goto fail;
		}
	} else if (!o->kv_no_rotate) {
		m->k_rot = tfm_kvrot_block(m->k_type, m->head_dim, 1);
		m->v_rot = tfm_kvrot_block(m->v_type, m->v_dim, 0);
	}
	if (!m->mla &&
	    (!tfm_k_kv_bytes(m->k_type, 1, 1, m->head_dim) || !tfm_k_kv_bytes(m->v_type, 1, 1, m->v_dim))) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "KV cache of %s/%s: head sizes %lld, %lld are not "
				"whole blocks", tfm_type_name(m->k_type), tfm_type_name(m->v_type),
				(long long)m->head_dim, (long long)m->v_dim);
		goto fail;
	}
	if ((st = tfm_backend_find(&m->be, o->device)))
		goto fail;
	b.m = m;
	b.arch = s->arch[0] ? s->arch : "model";
	b.n = n_tensors;
	b.sorted = tfm_malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof *b.sorted);
	int encdec = s->family == TFM_FAMILY_ENCDEC;
	int64_t n_all = s->n_layer + (encdec ? s->n_layer_dec : 0);
	m->layers = tfm_calloc((size_t)n_all, sizeof *m->layers);
	if (!b.sorted || !m->layers) {
		st = TFM_E_NOMEM;
		goto fail;
	}
	for (int64_t i = 0; i < n_tensors; i++)
		b.sorted[i] = &t[i];
	qsort(b.sorted, (size_t)n_tensors, sizeof *b.sorted, by_name);
	int64_t io = s->n_embd_io > 0 ? s->n_embd_io : s->n_embd;
	if (s->n_embd_io > s->n_embd) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: token embeddings wider than the model "
				"(%lld > %lld) are not supported", b.arch, (long long)s->n_embd_io,
				(long long)s->n_embd);
		goto fail;
	}
	/* Marian unshared: the decoder's table, and the encoder's own, have
	 * n_vocab_src rows; the head has n_vocab */
	int64_t rows = s->n_vocab_src > 0 ? s->n_vocab_src : s->n_vocab;
	if ((st = bind_mat(&b, &m->tok_embd, "token_embd.weight", io, rows, 1)) ||
	    (encdec && s->enc_embd &&
	     (st = bind_mat(&b, &m->enc_tok_embd, "enc.token_embd.weight", io, rows, 1))))
		goto fail;
	if (s->embd_proj && s->n_embd_io <= 0) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: embd.proj without embd.n_io", b.arch);
		goto fail;
	}
	if (s->embd_proj && s->family != TFM_FAMILY_ENCODER) { /* no project_out to the LM head */
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: embd.proj outside an encoder is not "
				"supported", b.arch);
		goto fail;
	}
	/* the width of the embedding sums and their norm: io when they are
	 * projected after the norm (ELECTRA), else the model's */
	int64_t ew = s->embd_proj ? io : s->n_embd;
	if (s->embd_proj_first && !s->embd_proj) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: embd.proj_first without embd.proj", b.arch);
		goto fail;
	}
	if (s->n_embd_io > 0 &&
	    ((st = bind_mat(&b, &m->proj_in, "project_in.weight", io, s->n_embd, 1)) ||
	     (st = bind_vec(&b, &m->proj_in_b, "project_in.bias", s->n_embd,
			    s->embd_proj && !s->embd_proj_first)) ||
	     (st = bind_mat(&b, &m->proj_out, "project_out.weight", s->n_embd, io,
			    !s->embd_proj))))
		goto fail;
	/* an encoder-decoder model's stacks have their own positions and
	 * embedding norm: enc.* for the encoder, dec.* (pos_embd, embd_norm)
	 * for the decoder */
	if (encdec && s->pos_embd == TFM_POS_EMBD_LEARNED &&
	    ((st = bind_mat(&b, &m->enc_pos_embd, "enc.position_embd.weight", ew, -1, 1)) ||
	     (st = bind_mat(&b, &m->pos_embd, "dec.position_embd.weight", ew, -1, 1))))
		goto fail;
	if (encdec && s->embd_norm &&
	    ((st = bind_norm(&b, &m->enc_embd_norm, "enc.token_embd_norm", ew, 1)) ||
	     (st = bind_norm(&b, &m->embd_norm, "dec.token_embd_norm", ew, 1))))
		goto fail;
	if (encdec && s->pos_embd == TFM_POS_EMBD_SINUSOIDAL && (st = sinusoid(&b)))
		goto fail;
	if (!encdec && s->pos_embd == TFM_POS_EMBD_LEARNED &&
	    (st = bind_mat(&b, &m->pos_embd, "position_embd.weight", ew, -1, 1)))
		goto fail;
	if (!encdec && s->embd_norm && (st = bind_norm(&b, &m->embd_norm, "token_embd_norm",
						       s->embd_proj_first ? s->n_embd : ew, 1)))
		goto fail;
	if (s->pos_attn == TFM_POS_T5 &&
	    ((st = bind_t5_bias(&b, &m->t5_bias, "enc.blk.0.attn_rel_b.weight", 1)) ||
	     (encdec && (st = bind_t5_bias(&b, &m->t5_bias_dec, "dec.blk.0.attn_rel_b.weight", 0)))))
		goto fail;
	if (s->pos_attn == TFM_POS_DEBERTA && (st = bind_rel(&b)))
		goto fail;
	if (s->conv_kernel > 0 && (st = bind_conv(&b)))
		goto fail;
	/* T5: llama.cpp's t5 and t5encoder names, enc.output_norm and (the
	 * decoder's) dec.output_norm */
	if (encdec && s->final_norm &&
	    (st = bind_norm(&b, &m->enc_norm, "enc.output_norm", s->n_embd, 1)))
		goto fail;
	if (s->final_norm &&
	    (st = bind_norm(&b, &m->out_norm, encdec ? "dec.output_norm" : s->pos_attn == TFM_POS_T5
			    ? "enc.output_norm" : "output_norm", s->n_embd, 1)))
		goto fail;
	if ((st = bind_mat(&b, &m->output, "output.weight", io, s->n_vocab, !s->tied_output)))
		goto fail;
	if (!m->output.data)
		m->output = m->tok_embd;  /* tied */
	if ((st = bind_vec(&b, &m->out_b, "output.bias", s->n_vocab, s->head_bias)))
		goto fail;
	if (s->family == TFM_FAMILY_ENCODER && (st = bind_encoder(&b)))
		goto fail;
	if (s->n_layer_groups > 0 &&
	    (s->n_layer_groups > s->n_layer || s->family != TFM_FAMILY_ENCODER)) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: %lld weight-sharing groups for %lld "
				"layers%s", b.arch, (long long)s->n_layer_groups,
				(long long)s->n_layer, s->family != TFM_FAMILY_ENCODER
				? " outside an encoder are not supported" : "");
		goto fail;
	}
	/* shared blocks (ALBERT): blocks blk.0 .. G-1 bound into layers 0 ..
	 * G-1, then every layer takes its block's weights, from the last (a
	 * layer's block is never after it, so no source is overwritten first) */
	int64_t n_bound = s->n_layer_groups > 0 ? s->n_layer_groups : n_all;
	for (int64_t l = 0; l < n_bound; l++)
		if ((st = bind_layer(&b, l)))
			goto fail;
	if ((st = repack(m, n_bound)))
		goto fail;
	for (int64_t l = s->n_layer - 1; s->n_layer_groups > 0 && l >= 0; l--)
		m->layers[l] = m->layers[tfm_spec_layer_block(s, l)];
	layer_pattern(m);
	if ((st = positions(m)))
		goto fail;
	free(b.sorted);
	*out = m;
	return TFM_OK;
fail:
	free(b.sorted);
	tfm_model_close(m);
	return st;
}

/* The backend's decode layout (backend.repack) of the attention and FFN
 * matrices of layers [0, n) and of the output head, once each layer's
 * fused tensors are split (each part is a matrix of its own rows).  The
 * copies count against the memory limit (tfm_mem_check): where they would
 * pass it, none is made and decode reads the file's rows. */
static int repack(struct tfm_model *m, int64_t n)
{
	if (!m->be->repack)
		return TFM_OK;
	for (int pass = 0; pass < 2; pass++) {
		double bytes = 0;
		for (int64_t l = -1; l < n; l++) {
			struct tfm_layer *L = l >= 0 ? &m->layers[l] : NULL;
			/* an MoE layer's gate, up and down are its experts stacked
			 * (exec.c's moe() takes each expert's rows): not one matrix */
			int ffn = L && !L->moe;
			struct tfm_mat *ws[] = {L ? &L->wq : &m->output, L ? &L->wk : NULL,
						L ? &L->wv : NULL, L ? &L->wqkv : NULL, L ? &L->wo : NULL,
						ffn ? &L->gate : NULL, ffn ? &L->up : NULL,
						ffn ? &L->down : NULL};
			for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
				if (!ws[i] || !ws[i]->data)
					continue;
				size_t need = m->be->repack(ws[i], NULL);
				if (pass == 0 || !need) {
					bytes += (double)need;
					continue;
				}
				void *p = tfm_amalloc(need);
				int st;
				if (!p) /* no room: this one reads the file's rows */
					continue;
				if ((st = own(m, p)))
					return st;
				m->be->repack(ws[i], p);
				ws[i]->dec = p;
			}
		}
		if (pass == 0 && bytes > 0 && tfm_mem_check(bytes, "decode's copy of the weights")) {
			tfm_log(TFM_LOG_INFO, "%s; decode reads the file's rows", tfm_errmsg());
			return TFM_OK;
		}
	}
	return TFM_OK;
}

void tfm_model_close(struct tfm_model *m)
{
	if (!m)
		return;
	if (m->release)
		m->release(m);
	tfm_model_free_bound(m);
	free(m);
}

void tfm_model_free_bound(struct tfm_model *m)
{
	for (int64_t i = 0; i < m->n_owned; i++)
		tfm_afree(m->owned[i]);
	free(m->owned);
	free(m->layers);
	free(m->inv_freq);
	free(m->inv_freq_long);
	free(m->inv_freq_local);
	free(m->alibi);
}

const struct tfm_spec *tfm_model_spec(const struct tfm_model *m) { return &m->spec; }

const char *tfm_model_device(const struct tfm_model *m)
{
	const char *v = m->be->variant ? m->be->variant() : NULL;
	snprintf((char *)m->device, sizeof m->device, "%s%s%s", m->be->name, v ? "/" : "", v ? v : "");
	return m->device;
}
const struct tfm_tokenizer *tfm_model_tokenizer(const struct tfm_model *m) { return m->tok; }
const struct tfm_gguf *tfm_model_gguf(const struct tfm_model *m) { return m->gguf; }
