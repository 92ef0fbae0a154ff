/* presets-other.c: config.json -> spec for the families the decoder
 * presets do not cover: encoders (bert, roberta, distilbert), encoder-
 * decoders (t5, bart), state-space models (mamba, mamba2, jamba) and RWKV.
 * Same rules as presets.c: transformers' field names and defaults. */
#include "presets-impl.h"

#include <math.h>

/* The head from the class in `architectures`: *ForSequenceClassification
 * is a classifier (labels from id2label, softmax; sigmoid for
 * problem_type multi_label_classification or a single label, as
 * transformers' pipeline); *ForTokenClassification a classifier per token
 * (no pooler); the base model and *ForMaskedLM /
 * *ForPreTraining (whose LM heads are not converted) are embedding models;
 * other task heads are refused naming the class. */
static int encoder_head(struct tfm_spec *s, const json_t *c)
{
	json_t *a = gj(c, "architectures");
	const char *cls = json_is_array(a) ? json_string_value(json_array_get(a, 0)) : NULL;
	const char *sfx = cls ? strstr(cls, "For") : NULL;
	s->head = TFM_HEAD_EMBED;
	if (!sfx || !strcmp(sfx, "ForMaskedLM") || !strcmp(sfx, "ForPreTraining"))
		return TFM_OK;
	json_t *lab = gj(c, "id2label");
	if (!strcmp(sfx, "ForTokenClassification")) { /* no pooler: a classifier per token */
		s->head = TFM_HEAD_TOKEN;
		s->pooler = 0;
		s->n_labels = json_is_object(lab) ? (int64_t)json_object_size(lab)
						  : gi(c, "num_labels", 2);
		return TFM_OK;
	}
	if (strcmp(sfx, "ForSequenceClassification"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: architecture %s is not supported yet "
				  "(sequence and token classification, masked LM and embeddings "
				  "are)", s->arch, cls);
	const char *pt = gs(c, "problem_type", "single_label_classification");
	s->head = TFM_HEAD_CLASSIFIER;
	s->n_labels = json_is_object(lab) ? (int64_t)json_object_size(lab) : gi(c, "num_labels", 2);
	if (!strcmp(pt, "regression"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: problem_type 'regression' is not supported "
				  "yet", s->arch);
	if (strcmp(pt, "single_label_classification") && strcmp(pt, "multi_label_classification"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: problem_type '%s' is not supported",
				  s->arch, pt);
	s->multi_label = !strcmp(pt, "multi_label_classification") || s->n_labels == 1;
	return TFM_OK;
}

static int bert_core(struct tfm_spec *s, const json_t *c, double eps, int64_t types)
{
	tfm_preset_layernorm_biased(s);
	s->family = TFM_FAMILY_ENCODER;
	s->mask = TFM_MASK_BIDIR;
	s->norm_place = TFM_NORM_POST;
	s->final_norm = 0;
	s->embd_norm = 1;
	s->pos_embd = TFM_POS_EMBD_LEARNED;
	s->pos_attn = TFM_POS_NONE;
	s->tied_output = 1;
	s->pooling = TFM_POOL_CLS;
	int st = encoder_head(s, c);
	if (st)
		return st;
	s->n_embd = gi(c, "hidden_size", 768);
	s->n_layer = gi(c, "num_hidden_layers", 12);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", 12);
	s->head_dim = s->n_embd / s->n_head;
	s->n_ff = gi(c, "intermediate_size", 3072);
	s->n_ctx_train = gi(c, "max_position_embeddings", 512);
	s->n_token_types = gi(c, "type_vocab_size", types);
	s->norm_eps = gf(c, "layer_norm_eps", eps);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 0);
	if (gb(c, "is_decoder", 0)) /* BertModel as a decoder: causal self-attention */
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: is_decoder=true is not supported", s->arch);
	if (strcmp(gs(c, "position_embedding_type", "absolute"), "absolute"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: position_embedding_type '%s' is not "
				  "supported", s->arch, gs(c, "position_embedding_type", ""));
	return tfm_preset_act(gs(c, "hidden_act", "gelu"), &s->act);
}

int tfm_preset_bert(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "bert", "bert");
	s->n_vocab = gi(c, "vocab_size", 30522);
	s->pooler = 1;
	return bert_core(s, c, 1e-12, 2);
}

int tfm_preset_roberta(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "roberta", "bert");
	s->n_vocab = gi(c, "vocab_size", 50265);
	s->pooler = 1;
	int st = bert_core(s, c, 1e-12, 2);
	/* positions are counted from padding_idx + 1 */
	s->pad_id = (int32_t)gi(c, "pad_token_id", 1);
	s->pos_offset = s->pad_id + 1;
	s->n_ctx_train -= s->pos_offset;
	s->bos_id = (int32_t)gi(c, "bos_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	return st;
}

/* XLM-RoBERTa: RoBERTa's model (XLMRobertaModel is RobertaModel) with
 * XLMRobertaConfig's defaults (vocab_size 30522, as BertConfig's); its
 * tokenizer is a SentencePiece unigram (lib/text/unigram.c). */
int tfm_preset_xlm_roberta(struct tfm_spec *s, const json_t *c)
{
	int st = tfm_preset_roberta(s, c);
	s->n_vocab = gi(c, "vocab_size", 30522);
	set_arch(s, "xlm-roberta", "bert");
	return st;
}

/* ELECTRA: BERT's encoder; its embeddings are embedding_size wide with
 * their LayerNorm, then embeddings_project (when embedding_size differs
 * from hidden_size); no pooler in ElectraModel; ElectraClassificationHead
 * is dense + GELU (erf) + out_proj on the first token. */
int tfm_preset_electra(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "electra", "bert");
	s->n_vocab = gi(c, "vocab_size", 30522);
	int st = bert_core(s, c, 1e-12, 2);
	if (st)
		return st;
	/* ElectraConfig's defaults are electra-small's, not BERT's */
	s->n_embd = gi(c, "hidden_size", 256);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", 4);
	s->n_ff = gi(c, "intermediate_size", 1024);
	s->head_dim = s->n_head > 0 ? s->n_embd / s->n_head : 0;
	int64_t e = gi(c, "embedding_size", 128);
	if (e != s->n_embd) {
		s->n_embd_io = e;
		s->embd_proj = 1;
	}
	s->pooler = s->head == TFM_HEAD_CLASSIFIER;
	s->pooler_act = TFM_POOLER_GELU;
	return TFM_OK;
}

/* ALBERT: ELECTRA's factorised embeddings (embedding_hidden_mapping_in is
 * there even when embedding_size equals hidden_size), BERT's post-LN
 * layers whose weights num_hidden_groups blocks share (inner_group_num
 * other than 1 is refused: not read), BERT's pooler (dense + tanh). */
int tfm_preset_albert(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "albert", "bert");
	s->n_vocab = gi(c, "vocab_size", 30000);
	int st = bert_core(s, c, 1e-12, 2);
	if (st)
		return st;
	s->n_embd = gi(c, "hidden_size", 4096);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", 64);
	s->n_ff = gi(c, "intermediate_size", 16384);
	s->head_dim = s->n_head > 0 ? s->n_embd / s->n_head : 0;
	s->n_embd_io = gi(c, "embedding_size", 128);
	s->embd_proj = 1;
	s->n_layer_groups = gi(c, "num_hidden_groups", 1);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 0);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 2);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 3);
	if (s->n_layer_groups < 1 || s->n_layer_groups > s->n_layer)
		return tfm_seterr(TFM_E_FORMAT, "%s: num_hidden_groups %lld for %lld layers",
				  s->arch, (long long)s->n_layer_groups, (long long)s->n_layer);
	s->pooler = s->head != TFM_HEAD_TOKEN;
	return tfm_preset_act(gs(c, "hidden_act", "gelu_new"), &s->act);
}

/* ModernBERT: a pre-norm encoder (LayerNorm, bias per norm_bias) whose
 * layer 0 reads the normed embeddings without an attention norm; no
 * position embeddings but RoPE (global_rope_theta on global layers,
 * local_rope_theta on local ones); layer i is global when i %
 * global_attn_every_n_layers == 0 (or per layer_types), a local layer sees
 * the keys within local_attention / 2 either side; fused Wqkv; GeGLU MLP
 * from one Wi (act(first half) * second half); final_norm.  The heads
 * (ModernBertPredictionHead: dense, classifier_activation, LayerNorm) read
 * the pooled ("cls" or "mean") state, every token, or feed the tied
 * decoder. */
int tfm_preset_modernbert(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "modernbert", "modern-bert");
	s->family = TFM_FAMILY_ENCODER;
	s->mask = TFM_MASK_BIDIR;
	s->norm = TFM_NORM_LAYER;
	s->norm_place = TFM_NORM_PRE;
	s->final_norm = 1;
	s->embd_norm = 1;
	s->no_first_attn_norm = 1;
	s->pos_embd = TFM_POS_EMBD_NONE;
	s->pos_attn = TFM_POS_ROPE;
	s->gated = 1;
	s->tied_output = 1;
	s->pooling = TFM_POOL_CLS;
	int st = encoder_head(s, c);
	if (st)
		return st;
	s->n_vocab = gi(c, "vocab_size", 50368);
	s->n_embd = gi(c, "hidden_size", 768);
	s->n_ff = gi(c, "intermediate_size", 1152);
	s->n_layer = gi(c, "num_hidden_layers", 22);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", 12);
	s->n_ctx_train = gi(c, "max_position_embeddings", 8192);
	s->norm_eps = gf(c, "norm_eps", 1e-5);
	s->norm_bias = gb(c, "norm_bias", 0);
	s->attn_bias_qkv = s->attn_bias_out = gb(c, "attention_bias", 0);
	s->ffn_bias = gb(c, "mlp_bias", 0);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 50283);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 50281);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 50282);
	gi(c, "cls_token_id", 50281); /* the tokenizer's */
	if (s->n_head < 1 || s->n_embd % s->n_head)
		return tfm_seterr(TFM_E_FORMAT, "%s: hidden_size %lld is not a multiple of "
				  "num_attention_heads %lld", s->arch, (long long)s->n_embd,
				  (long long)s->n_head);
	s->head_dim = s->n_embd / s->n_head;
	s->rope_dims = s->head_dim;
	/* transformers 5 writes rope_parameters per layer type; config-norm.c
	 * maps them to rope_theta (global) and local_rope_theta */
	s->rope_theta = has(c, "global_rope_theta") ? gf(c, "global_rope_theta", 160000)
						    : gf(c, "rope_theta", 160000);
	s->rope_theta_local = has(c, "local_rope_theta") ? gf(c, "local_rope_theta", 10000)
		: gnull(c, "local_rope_theta") ? s->rope_theta : 10000;
	if (has(c, "rope_scaling"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: rope_scaling is not supported", s->arch);
	if (gf(c, "partial_rotary_factor", 1.0) != 1.0) /* from a 5.x rope_parameters */
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: partial_rotary_factor %g is not supported",
				  s->arch, gf(c, "partial_rotary_factor", 1.0));
	/* the window: layer_types (5.x), else every n-th layer global */
	s->window = gi(c, "local_attention", 128);
	int64_t every = gi(c, "global_attn_every_n_layers", 3);
	if (every < 1 || s->window < 0 || s->window > 2147483647)
		return tfm_seterr(TFM_E_FORMAT, "%s: global_attn_every_n_layers %lld, "
				  "local_attention %lld", s->arch, (long long)every,
				  (long long)s->window);
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_window[i] = i % every != 0;
	if ((st = tfm_preset_act(gs(c, "hidden_activation", "gelu"), &s->act)))
		return tfm_adderr(st, "%s: hidden_activation", s->arch);
	/* the prediction head */
	const char *ca = gs(c, "classifier_activation", "gelu");
	static const struct { const char *n; int a; } acts[] = {
		{ "gelu", TFM_POOLER_GELU }, { "relu", TFM_POOLER_RELU },
		{ "tanh", TFM_POOLER_TANH }, { "silu", TFM_POOLER_SILU }, { "swish", TFM_POOLER_SILU },
	};
	s->pooler_act = -1;
	for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
		if (!strcmp(acts[i].n, ca))
			s->pooler_act = acts[i].a;
	if (s->pooler_act < 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: classifier_activation '%s' is not "
				  "supported (gelu, relu, tanh, silu are)", s->arch, ca);
	s->head_transform = 1;
	s->head_dense_bias = gb(c, "classifier_bias", 0);
	s->pooler = s->head == TFM_HEAD_CLASSIFIER || s->head == TFM_HEAD_TOKEN;
	const char *cp = gs(c, "classifier_pooling", "cls");
	if (strcmp(cp, "cls") && strcmp(cp, "mean"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: classifier_pooling '%s' is not supported "
				  "(cls, mean; transformers refuses it too)", s->arch, cp);
	if (s->head == TFM_HEAD_CLASSIFIER)
		s->pooling = !strcmp(cp, "mean") ? TFM_POOL_MEAN : TFM_POOL_CLS;
	/* the masked-LM decoder: tied to the token embeddings (or its own
	 * weight), with decoder_bias */
	json_t *a = gj(c, "architectures");
	const char *cls = json_is_array(a) ? json_string_value(json_array_get(a, 0)) : NULL;
	int mlm = cls && strstr(cls, "ForMaskedLM");
	s->tied_output = gb(c, "tie_word_embeddings", 1) || !mlm;
	/* tfm-convert sets head.mlm and head.bias again from the tensors
	 * present (head.dense, decoder.bias) */
	int db = gb(c, "decoder_bias", 1); /* no decoder outside ForMaskedLM */
	s->mlm_head = mlm;
	s->head_bias = mlm && db;
	/* inference leaves these unchanged: flash-attention determinism, the
	 * compiled path (same math), the loss's sparse prediction (logits of
	 * every token are computed without labels), gradients, initialisation */
	static const char *const inert[] = { "deterministic_flash_attn", "reference_compile",
		"sparse_prediction", "sparse_pred_ignore_index", "repad_logits_with_grad",
		"initializer_cutoff_factor" };
	for (size_t i = 0; i < sizeof inert / sizeof inert[0]; i++)
		tfm_cfg_mark(c, inert[i]);
	return TFM_OK;
}

/* DeBERTa (v1, model_type deberta) and DeBERTa-v2 / v3: BERT's post-LN
 * encoder with disentangled attention (pos_attn deberta,
 * lib/model/deberta.c).  Keys the configs keep in kwargs and the modules
 * read with getattr (v2: position_buckets, share_att_key, norm_rel_ebd,
 * conv_kernel_size, attention_head_size; both: embedding_size,
 * pooler_hidden_size; v1: talking_head) are read here too: honoured or
 * refused.  v1 differs in its attention only: a fused in_proj (per head q,
 * k, v rows; hfmap.c reorders them) with q_bias and v_bias and no k bias,
 * pos_proj without a bias, no buckets, no norm of the relative
 * embeddings, and the scale counts every pos_att_type entry. */
static int deberta(struct tfm_spec *s, const json_t *c, int v1)
{
	if (v1)
		set_arch(s, "deberta", "deberta");
	else
		set_arch(s, "deberta-v2", "deberta-v2");
	s->n_vocab = gi(c, "vocab_size", v1 ? 50265 : 128100);
	int st = bert_core(s, c, 1e-7, 0);
	if (st)
		return st;
	const char *a = s->arch;
	s->n_embd = gi(c, "hidden_size", v1 ? 768 : 1536);
	s->n_layer = gi(c, "num_hidden_layers", v1 ? 12 : 24);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", v1 ? 12 : 24);
	s->n_ff = gi(c, "intermediate_size", v1 ? 3072 : 6144);
	if (s->n_head < 1 || s->n_embd % s->n_head)
		return tfm_seterr(TFM_E_FORMAT, "%s: hidden_size %lld not a multiple of %lld heads",
				  a, (long long)s->n_embd, (long long)s->n_head);
	s->head_dim = s->n_embd / s->n_head;
	if (v1) {
		if (gb(c, "talking_head", 0))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: talking_head (head_logits_proj, "
					  "head_weights_proj) is not supported", a);
		s->attn_bias_qkv = 0;
		s->attn_bias_qv = 1; /* q_bias, v_bias */
	}
	s->rel_pos_k_bias = !v1; /* v1's pos_proj has no bias */
	if (!v1 && has(c, "attention_head_size") && gi(c, "attention_head_size", 0) != s->head_dim)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: attention_head_size %lld other than "
				  "hidden_size / num_attention_heads is not supported", a,
				  (long long)gi(c, "attention_head_size", 0));
	/* ConvLayer (DeBERTa-v2 xlarge / xxlarge): its keys read only with it */
	int64_t ck = v1 ? 0 : gi(c, "conv_kernel_size", 0), cg = v1 ? 1 : gi(c, "conv_groups", 1);
	const char *ca = v1 ? "tanh" : gs(c, "conv_act", "tanh");
	if (ck > 0) {
		static const struct { const char *n; int a; } acts[] = {
			{ "tanh", TFM_CONV_ACT_TANH }, { "gelu", TFM_CONV_ACT_GELU },
			{ "gelu_new", TFM_CONV_ACT_GELU_TANH },
			{ "gelu_pytorch_tanh", TFM_CONV_ACT_GELU_TANH },
			{ "relu", TFM_CONV_ACT_RELU }, { "silu", TFM_CONV_ACT_SILU },
			{ "swish", TFM_CONV_ACT_SILU },
		};
		size_t i = 0;
		while (i < sizeof acts / sizeof acts[0] && strcmp(acts[i].n, ca))
			i++;
		if (i == sizeof acts / sizeof acts[0])
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: conv_act '%s' is not supported "
					  "(tanh, gelu, gelu_new, gelu_pytorch_tanh, relu, silu)", a, ca);
		/* an even kernel makes the conv one shorter than the sequence
		 * (padding (k - 1) / 2): transformers fails on it */
		if (ck % 2 == 0 || ck > 1001 || cg < 1 || s->n_embd % cg)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: conv_kernel_size %lld with conv_groups "
					  "%lld (odd kernels, groups dividing hidden_size) is not "
					  "supported", a, (long long)ck, (long long)cg);
		s->conv_kernel = ck;
		s->conv_groups = cg;
		s->conv_act = acts[i].a;
	}
	int64_t e = gi(c, "embedding_size", s->n_embd);
	if (e < 1)
		return tfm_seterr(TFM_E_FORMAT, "%s: embedding_size %lld", a, (long long)e);
	if (e != s->n_embd) { /* embed_proj (no bias) before the LayerNorm */
		s->n_embd_io = e;
		s->embd_proj = 1;
		s->embd_proj_first = 1;
	}
	if (!gb(c, "position_biased_input", 1))
		s->pos_embd = TFM_POS_EMBD_NONE;
	if (s->n_token_types < 0)
		s->n_token_types = 0;
	/* pos_att_type: None, a list, or the "c2p|p2c" string of old configs */
	json_t *pt = gj(c, "pos_att_type");
	int c2p = 0, p2c = 0, entries = 0;
	for (size_t i = 0; json_is_array(pt) || json_is_string(pt); i++) {
		char one[16];
		const char *v;
		if (json_is_array(pt)) {
			if (i >= json_array_size(pt))
				break;
			v = json_string_value(json_array_get(pt, i));
			if (!v)
				return tfm_seterr(TFM_E_FORMAT, "%s: pos_att_type entry %zu is not a "
						  "string", a, i);
			snprintf(one, sizeof one, "%s", v);
		} else { /* field i of the string split at '|', stripped, lower case */
			const char *p = json_string_value(pt);
			for (size_t k = 0; k < i && p; k++)
				p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
			if (!p)
				break;
			size_t n = 0;
			while (*p == ' ')
				p++;
			while (p[n] && p[n] != '|' && n + 1 < sizeof one) {
				one[n] = (char)(p[n] >= 'A' && p[n] <= 'Z' ? p[n] + 32 : p[n]);
				n++;
			}
			while (n > 0 && one[n - 1] == ' ')
				n--;
			one[n] = 0;
		}
		entries++;
		if (!strcmp(one, "c2p"))
			c2p = 1;
		else if (!strcmp(one, "p2c"))
			p2c = 1;
		else if (one[0] || json_is_array(pt))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pos_att_type '%s' is not supported "
					  "(c2p, p2c)", a, one);
	}
	/* the scores are divided by sqrt(head_dim * (1 + the terms named)),
	 * with or without relative_attention (v1: 1 + the entries, repeated
	 * ones too) */
	s->attn_scale = (float)(1.0 / sqrt((double)s->head_dim * (1 + (v1 ? entries : c2p + p2c))));
	const char *nr = v1 ? "none" : gs(c, "norm_rel_ebd", "none");
	int rel_ln = 0;
	for (const char *p = nr; *p;) { /* '|'-separated, stripped, case-insensitive */
		const char *q = strchr(p, '|');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		char one[32] = {0};
		size_t k = 0;
		for (size_t j = 0; j < n && k + 1 < sizeof one; j++)
			if (p[j] != ' ')
				one[k++] = (char)(p[j] >= 'A' && p[j] <= 'Z' ? p[j] + 32 : p[j]);
		if (!strcmp(one, "layer_norm"))
			rel_ln = 1;
		else if (strcmp(one, "none") && one[0])
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: norm_rel_ebd '%s' is not supported "
					  "(layer_norm, none)", a, nr);
		p += n + (q != NULL);
	}
	s->rel_norm = rel_ln; /* its LayerNorm exists even without relative_attention */
	s->rel_share_key = v1 ? 0 : gb(c, "share_att_key", 0);
	if (gb(c, "relative_attention", 0)) {
		/* v1 reads rel_embeddings[max - span, max + span) with span =
		 * min(n, max): the same rows as clamp(r + max, 0, 2 max - 1) */
		int64_t mrp = gi(c, "max_relative_positions", -1);
		int64_t pb = v1 ? -1 : gi(c, "position_buckets", -1);
		if (mrp < 1)
			mrp = s->n_ctx_train;
		s->pos_attn = TFM_POS_DEBERTA;
		s->rel_max_pos = mrp;
		s->rel_buckets = pb > 0 ? pb : 0;
		s->rel_span = pb > 0 ? pb : mrp;
		s->rel_c2p = c2p, s->rel_p2c = p2c;
		/* make_log_bucket_position divides by log((max - 1) / mid) */
		if (pb > 0 && (pb < 2 || mrp - 1 <= pb / 2))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: position_buckets %lld with "
					  "max_relative_positions %lld (transformers divides by zero)",
					  a, (long long)pb, (long long)mrp);
		if (s->rel_span < 1)
			return tfm_seterr(TFM_E_FORMAT, "%s: a relative span of %lld", a,
					  (long long)s->rel_span);
	} else {
		/* no relative terms: read, but they change nothing */
		(void)gi(c, "max_relative_positions", -1);
		if (!v1)
			(void)gi(c, "position_buckets", -1);
	}
	if (gi(c, "pooler_hidden_size", s->n_embd) != s->n_embd)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pooler_hidden_size other than hidden_size "
				  "is not supported", a);
	const char *pa = gs(c, "pooler_hidden_act", "gelu");
	if (!strcmp(pa, "gelu"))
		s->pooler_act = TFM_POOLER_GELU;
	else if (!strcmp(pa, "tanh"))
		s->pooler_act = TFM_POOLER_TANH;
	else if (!strcmp(pa, "relu"))
		s->pooler_act = TFM_POOLER_RELU;
	else
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pooler_hidden_act '%s' is not supported "
				  "(gelu, tanh, relu)", a, pa);
	/* the masked-LM head: legacy (cls.predictions, its decoder tied to the
	 * word embeddings, or with tie_word_embeddings false a decoder of its
	 * own: output.weight) or lm_predictions.lm_head, whose product with the
	 * word embeddings does not depend on tie_word_embeddings (transformers
	 * 5.23.0 gives the same logits either way; 4.57.1 ties the head's dense
	 * to the word embeddings when it is true, a shape error unless
	 * hidden_size equals vocab_size) */
	json_t *arch = gj(c, "architectures");
	const char *cls = json_is_array(arch) ? json_string_value(json_array_get(arch, 0)) : NULL;
	int legacy = gb(c, "legacy", 1), tie = gb(c, "tie_word_embeddings", 1);
	if (cls && strstr(cls, "ForMaskedLM") && legacy && !tie)
		s->tied_output = 0;
	s->pooler = s->head == TFM_HEAD_CLASSIFIER;
	return TFM_OK;
}

int tfm_preset_deberta(struct tfm_spec *s, const json_t *c) { return deberta(s, c, 1); }
int tfm_preset_deberta_v2(struct tfm_spec *s, const json_t *c) { return deberta(s, c, 0); }

int tfm_preset_distilbert(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "distilbert", "bert");
	s->n_vocab = gi(c, "vocab_size", 30522);
	int st = bert_core(s, c, 1e-12, 0);
	s->n_embd = gi(c, "dim", 768);
	s->n_layer = gi(c, "n_layers", 6);
	s->n_head = s->n_head_kv = gi(c, "n_heads", 12);
	s->head_dim = s->n_embd / s->n_head;
	s->n_ff = gi(c, "hidden_dim", 3072);
	s->n_token_types = 0;
	if (gb(c, "sinusoidal_pos_embds", 0))
		s->pos_embd = TFM_POS_EMBD_SINUSOIDAL;
	/* DistilBertForSequenceClassification: pre_classifier + ReLU */
	s->pooler = s->head == TFM_HEAD_CLASSIFIER;
	s->pooler_act = TFM_POOLER_RELU;
	if (!st)
		st = tfm_preset_act(gs(c, "activation", "gelu"), &s->act);
	return st;
}

/* T5 and mT5 (the same model; MT5Config's defaults are mt5-small's) */
static int t5_like(struct tfm_spec *s, const json_t *c, int mt5)
{
	set_arch(s, "t5", "t5");
	s->family = TFM_FAMILY_ENCDEC;
	tfm_cfg_mark(c, "is_encoder_decoder");
	s->n_vocab = gi(c, "vocab_size", mt5 ? 250112 : 32128);
	s->n_embd = gi(c, "d_model", 512);
	s->n_layer = gi(c, "num_layers", mt5 ? 8 : 6);
	s->n_layer_dec = gi(c, "num_decoder_layers", s->n_layer);
	s->n_head = s->n_head_kv = gi(c, "num_heads", mt5 ? 6 : 8);
	s->head_dim = gi(c, "d_kv", 64);
	s->n_ff = gi(c, "d_ff", mt5 ? 1024 : 2048);
	s->n_ctx_train = gi(c, "n_positions", 512);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-6);
	s->pos_attn = TFM_POS_T5;
	s->rope_dims = 0;
	s->t5_buckets = gi(c, "relative_attention_num_buckets", 32);
	s->t5_max_distance = gi(c, "relative_attention_max_distance", 128);
	s->attn_scale = 1.0f;  /* T5 folds the scale into its weights */
	s->cross_attn = 1;
	/* v1.0 (tied) scales the decoder's output by d_model^-0.5 before the
	 * head, v1.1 (untied) does not; transformers 5 keeps that choice in
	 * scale_decoder_outputs and saves tie_word_embeddings true for both
	 * (an untied lm_head.weight in the checkpoint is then used all the
	 * same: output.weight binds when present) */
	s->tied_output = gb(c, "tie_word_embeddings", !mt5);
	int scale = json_is_boolean(gj(c, "scale_decoder_outputs")) ? gb(c, "scale_decoder_outputs", 1)
								      : s->tied_output;
	if (scale)
		s->head_scale = (float)(1.0 / sqrt((double)s->n_embd));
	s->pad_id = (int32_t)gi(c, "pad_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 1);
	s->dec_start_id = (int32_t)gi(c, "decoder_start_token_id", s->pad_id);
	/* feed_forward_proj: "relu", "gelu", "gated-gelu" (v1.1: transformers
	 * makes it the tanh GELU), "gated-silu", ... (T5Config: the part after
	 * the dash is the activation, "gated" before it a gated FFN) */
	const char *ff = gs(c, "feed_forward_proj", mt5 ? "gated-gelu" : "relu");
	s->gated = strstr(ff, "gated-") == ff;
	const char *a = s->gated ? ff + 6 : ff;
	if (!strcmp(ff, "gated-gelu"))
		a = "gelu_new";
	tfm_cfg_mark(c, "dense_act_fn"); /* T5Config derives these two from it */
	tfm_cfg_mark(c, "is_gated_act");
	int st = tfm_preset_act(a, &s->act);
	/* T5EncoderModel: the encoder stack alone, an embedding model (mean of
	 * the last hidden states, as sentence-t5's pooling) */
	json_t *ar = gj(c, "architectures");
	const char *cls = json_is_array(ar) ? json_string_value(json_array_get(ar, 0)) : NULL;
	if (!st && cls && !strcmp(cls, "T5EncoderModel")) {
		s->family = TFM_FAMILY_ENCODER;
		s->mask = TFM_MASK_BIDIR;
		s->n_layer_dec = 0;
		s->cross_attn = 0;
		s->dec_start_id = -1;
		s->head = TFM_HEAD_EMBED;
		s->pooling = TFM_POOL_MEAN;
		s->head_scale = 0;
		s->tied_output = 1; /* no LM head: tie_word_embeddings is the decoder's */
	}
	return st;
}

int tfm_preset_t5(struct tfm_spec *s, const json_t *c) { return t5_like(s, c, 0); }
int tfm_preset_mt5(struct tfm_spec *s, const json_t *c) { return t5_like(s, c, 1); }

/* BART, mBART and Marian (transformers' BartForConditionalGeneration and
 * its two copies): learned positions from offset 2 (BART, mBART) or
 * Marian's sinusoidal table (not in the checkpoint: the loader makes it),
 * each stack its own; LayerNorms with biases, post-norm (BART, Marian) or
 * pre-norm with a final norm per stack (mBART); layernorm_embedding (not
 * Marian); scale_embedding multiplies the token embedding by sqrt(d);
 * final_logits_bias is the head's bias.  kind: 0 bart, 1 mbart, 2 marian */
/* Marian with share_encoder_decoder_embeddings false (MarianMTModel):
 * encoder and decoder each copy one nn.Embedding(vocab_size) (so both
 * tables have vocab_size rows), lm_head and final_logits_bias have
 * decoder_vocab_size rows: the decoder's vocabulary.  Shared, the head has
 * vocab_size rows and decoder_vocab_size only shapes the loss; tied, the
 * head is the decoder's table, which cannot give decoder_vocab_size
 * logits: both refused when the sizes differ, as transformers cannot run
 * them. */
static int marian_vocab(struct tfm_spec *s, const json_t *c)
{
	int64_t dv = gi(c, "decoder_vocab_size", s->n_vocab);
	if (gb(c, "share_encoder_decoder_embeddings", 1)) {
		if (dv != s->n_vocab)
			return tfm_seterr(TFM_E_UNSUPPORTED, "marian: decoder_vocab_size %lld with "
					  "share_encoder_decoder_embeddings true (vocab_size %lld) "
					  "is not supported: transformers' head has vocab_size "
					  "rows", (long long)dv, (long long)s->n_vocab);
		return TFM_OK;
	}
	if (dv < 1 || dv > s->n_vocab)
		return tfm_seterr(dv < 1 ? TFM_E_FORMAT : TFM_E_UNSUPPORTED, "marian: "
				  "decoder_vocab_size %lld (vocab_size %lld) is not supported: "
				  "the decoder's table has vocab_size rows", (long long)dv,
				  (long long)s->n_vocab);
	if (dv != s->n_vocab && s->tied_output)
		return tfm_seterr(TFM_E_UNSUPPORTED, "marian: decoder_vocab_size %lld with "
				  "tie_word_embeddings true is not supported: the head would be the "
				  "decoder's table of vocab_size %lld rows (transformers' forward "
				  "fails)", (long long)dv, (long long)s->n_vocab);
	s->enc_embd = 1;
	if (dv != s->n_vocab) {
		s->n_vocab_src = s->n_vocab;
		s->n_vocab = dv;
	}
	return TFM_OK;
}

static int bart_like(struct tfm_spec *s, const json_t *c, int kind)
{
	static const char *const names[] = { "bart", "mbart", "marian" };
	int st;
	set_arch(s, names[kind], names[kind]);
	tfm_preset_layernorm_biased(s);
	s->family = TFM_FAMILY_ENCDEC;
	tfm_cfg_mark(c, "is_encoder_decoder");
	s->cross_attn = 1;
	s->n_vocab = gi(c, "vocab_size", kind == 2 ? 58101 : kind == 1 ? 50265 : 50265);
	s->n_embd = gi(c, "d_model", 1024);
	s->n_layer = gi(c, "encoder_layers", 12);
	s->n_layer_dec = gi(c, "decoder_layers", 12);
	s->n_head = s->n_head_kv = gi(c, "encoder_attention_heads", 16);
	s->head_dim = s->n_head > 0 ? s->n_embd / s->n_head : 0;
	s->n_ff = gi(c, "encoder_ffn_dim", 4096);
	s->n_ctx_train = gi(c, "max_position_embeddings", 1024);
	s->norm_eps = 1e-5; /* nn.LayerNorm's */
	s->pos_attn = TFM_POS_NONE;
	if (kind == 2) { /* MarianSinusoidalPositionalEmbedding, positions from 0 */
		s->pos_embd = TFM_POS_EMBD_SINUSOIDAL;
		s->pos_offset = 0;
	} else {
		s->pos_embd = TFM_POS_EMBD_LEARNED;
		s->pos_offset = 2;
	}
	s->norm_place = kind == 1 ? TFM_NORM_PRE : TFM_NORM_POST;
	s->final_norm = kind == 1;
	s->embd_norm = kind != 2;
	s->head_bias = 1; /* final_logits_bias */
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	if (gb(c, "scale_embedding", 0))
		s->embd_scale = (float)sqrt((double)s->n_embd);
	s->bos_id = (int32_t)gi(c, "bos_token_id", kind == 2 ? -1 : 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", kind == 2 ? 0 : 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", kind == 2 ? 58100 : 1);
	/* generate's start: decoder_start_token_id, else bos */
	s->dec_start_id = (int32_t)gi(c, "decoder_start_token_id", kind == 0 ? 2 : kind == 2 ? 58100
									       : s->bos_id);
	if (gi(c, "decoder_attention_heads", s->n_head) != s->n_head ||
	    gi(c, "decoder_ffn_dim", s->n_ff) != s->n_ff)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: different encoder and decoder widths "
				  "(decoder_attention_heads, decoder_ffn_dim) are not supported",
				  names[kind]);
	if (kind == 2 && (st = marian_vocab(s, c)))
		return st;
	if (gi(c, "num_hidden_layers", s->n_layer) != s->n_layer)
		return tfm_seterr(TFM_E_FORMAT, "%s: num_hidden_layers %lld is not encoder_layers "
				  "%lld", names[kind], (long long)gi(c, "num_hidden_layers", 0),
				  (long long)s->n_layer);
	return tfm_preset_act(gs(c, "activation_function", "gelu"), &s->act);
}

int tfm_preset_bart(struct tfm_spec *s, const json_t *c) { return bart_like(s, c, 0); }
int tfm_preset_mbart(struct tfm_spec *s, const json_t *c) { return bart_like(s, c, 1); }
int tfm_preset_marian(struct tfm_spec *s, const json_t *c) { return bart_like(s, c, 2); }

/* Mamba mixer sizes; dt_rank "auto" is ceil(d_model / 16). */
static void ssm_sizes(struct tfm_spec *s, const json_t *c, const char *pfx, int64_t d_state)
{
	char k[64];
	snprintf(k, sizeof(k), "%sexpand", pfx);
	s->ssm_d_inner = gi(c, k, 2) * s->n_embd;
	snprintf(k, sizeof(k), "%s%s", pfx, *pfx ? "d_state" : "state_size");
	s->ssm_d_state = gi(c, k, d_state);
	snprintf(k, sizeof(k), "%s%s", pfx, *pfx ? "d_conv" : "conv_kernel");
	s->ssm_d_conv = gi(c, k, 4);
	snprintf(k, sizeof(k), "%s%s", pfx, *pfx ? "dt_rank" : "time_step_rank");
	s->ssm_dt_rank = gi(c, k, 0);
	if (s->ssm_dt_rank <= 0)   /* "auto" */
		s->ssm_dt_rank = (s->n_embd + 15) / 16;
	snprintf(k, sizeof(k), "%s%s", pfx, *pfx ? "conv_bias" : "use_conv_bias");
	s->ssm_conv_bias = gb(c, k, 1);
	snprintf(k, sizeof(k), "%s%s", pfx, *pfx ? "proj_bias" : "use_bias");
	s->ssm_bias = gb(c, k, 0);
}

static void no_attention(struct tfm_spec *s)
{
	s->pos_attn = TFM_POS_NONE;
	s->rope_dims = 0;
	s->gated = 0;
}

int tfm_preset_mamba(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "mamba", "mamba");
	no_attention(s);
	s->n_vocab = gi(c, "vocab_size", 50280);
	s->n_embd = gi(c, "hidden_size", 768);
	s->n_layer = gi(c, "num_hidden_layers", 32);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 0);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 0);
	ssm_sizes(s, c, "", 16);
	const char *tsr = gs(c, "time_step_rank", NULL);
	if (tsr && strcmp(tsr, "auto"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "time_step_rank=\"%.40s\" is not supported "
				  "(a number or \"auto\")", tsr);
	/* transformers takes intermediate_size as given when the config has it */
	s->ssm_d_inner = gi(c, "intermediate_size", s->ssm_d_inner);
	all_layers(s->layer_kind, s->n_layer, TFM_LAYER_MAMBA);
	all_layers(s->layer_rope, s->n_layer, 0);
	return TFM_OK;
}

/* falcon_mamba: mamba with weightless RMS norms on dt, B and C */
int tfm_preset_falcon_mamba(struct tfm_spec *s, const json_t *c)
{
	int st = tfm_preset_mamba(s, c);
	set_arch(s, "falcon_mamba", "mamba");
	s->ssm_dt_norm = 1;
	s->ssm_norm_eps = gf(c, "mixer_rms_eps", 1e-6);
	return st;
}

/* mamba2's time_step_limit [min, max]: dt clamped after the softplus */
static int dt_limit(struct tfm_spec *s, const json_t *c)
{
	json_t *lim = gj(c, "time_step_limit");
	s->ssm_dt_min = 0, s->ssm_dt_max = 0;
	if (json_is_array(lim) && json_array_size(lim) == 2) {
		double lo, hi; /* numbers, Infinity as 4.x or 5.x writes it */
		if (!jnum(json_array_get(lim, 0), &lo) || !jnum(json_array_get(lim, 1), &hi) ||
		    isnan(lo) || isnan(hi) || isinf(lo) || lo < 0 || hi < lo)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: time_step_limit must be [min, max] "
					  "with 0 <= min <= max", s->arch);
		s->ssm_dt_min = lo;
		s->ssm_dt_max = isinf(hi) ? 0 : hi;
	} else if (lim && !json_is_null(lim)) {
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: time_step_limit must be [min, max]", s->arch);
	}
	return TFM_OK;
}

int tfm_preset_mamba2(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "mamba2", "mamba2");
	no_attention(s);
	s->n_vocab = gi(c, "vocab_size", 32768);
	s->n_embd = gi(c, "hidden_size", 4096);
	s->n_layer = gi(c, "num_hidden_layers", 64);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 1);
	ssm_sizes(s, c, "", 128);
	s->ssm_n_head = gi(c, "num_heads", 128);
	s->ssm_n_group = gi(c, "n_groups", 8);
	int64_t hd = gi(c, "head_dim", 64);
	/* transformers: intermediate_size = int(expand * hidden_size) */
	s->ssm_d_inner = (int64_t)(gf(c, "expand", 2) * (double)s->n_embd);
	s->ssm_dt_rank = 0; /* dt is one value per head, from in_proj */
	gi(c, "chunk_size", 256); /* the SSD chunk length: the same sums as the scan tfm runs */
	int st = dt_limit(s, c);
	if (st)
		return st;
	if (strcmp(gs(c, "hidden_act", "silu"), "silu"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: hidden_act \"%.20s\" in the mixer is not "
				  "supported (silu)", s->arch, gs(c, "hidden_act", ""));
	if (s->ssm_n_head < 1 || s->ssm_n_group < 1 || hd < 1 || s->ssm_n_head * hd != s->ssm_d_inner ||
	    s->ssm_n_head % s->ssm_n_group)
		return tfm_seterr(TFM_E_FORMAT, "%s: %lld heads of %lld for an inner size of %lld in "
				  "%lld groups", s->arch, (long long)s->ssm_n_head, (long long)hd,
				  (long long)s->ssm_d_inner, (long long)s->ssm_n_group);
	all_layers(s->layer_kind, s->n_layer, TFM_LAYER_MAMBA2);
	all_layers(s->layer_rope, s->n_layer, 0);
	return TFM_OK;
}

/* jamba: Mamba layers (dt, B and C RMS norms with weights) and attention
 * layers without positions (every attn_layer_period from attn_layer_offset),
 * each followed by a gated SiLU FFN, MoE every expert_layer_period from
 * expert_layer_offset (softmax top-k, weights not renormalised); only the
 * keys JambaConfig defines (transformers ignores head_dim, rope_theta). */
int tfm_preset_jamba(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "jamba", "jamba");
	s->n_vocab = gi(c, "vocab_size", 65536);
	s->n_embd = gi(c, "hidden_size", 4096);
	s->n_ff = gi(c, "intermediate_size", 14336);
	s->n_layer = gi(c, "num_hidden_layers", 32);
	s->n_head = gi(c, "num_attention_heads", 32);
	s->n_head_kv = gi(c, "num_key_value_heads", 8);
	if (has(c, "num_key_value_heads") && json_is_null(gj(c, "num_key_value_heads")))
		s->n_head_kv = s->n_head; /* None: as many as heads */
	s->head_dim = s->n_head > 0 ? s->n_embd / s->n_head : 0;
	s->n_ctx_train = gi(c, "max_position_embeddings", 262144);
	s->norm_eps = gf(c, "rms_norm_eps", 1e-6);
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 1);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 0);
	int st = tfm_preset_act(gs(c, "hidden_act", "silu"), &s->act);
	if (st)
		return st;
	/* the mamba mixer's conv and gate take hidden_act too */
	if (s->act != TFM_ACT_SILU)
		return tfm_seterr(TFM_E_UNSUPPORTED, "jamba: hidden_act \"%.20s\" not supported "
				  "(the mamba mixer runs silu)", gs(c, "hidden_act", ""));
	s->pos_attn = TFM_POS_NONE;   /* Jamba's attention layers use no positions */
	s->rope_dims = 0;
	/* transformers 4.x passes sliding_window to flash attention only (eager
	 * and sdpa ignore it); 5.x has no such key: refuse a window rather
	 * than pick one of the two answers */
	json_t *sw = gj(c, "sliding_window");
	if (sw && !json_is_null(sw))
		return tfm_seterr(TFM_E_UNSUPPORTED, "jamba: sliding_window not supported yet "
				  "(transformers applies it in flash attention only)");
	s->n_expert = gi(c, "num_experts", 16);
	s->n_expert_used = gi(c, "num_experts_per_tok", 2);
	s->n_ff_expert = s->n_ff;
	s->moe_norm_topk = 0;
	ssm_sizes(s, c, "mamba_", 16);
	s->ssm_dt_norm = 1, s->ssm_norm_w = 1; /* eps: rms_norm_eps */
	int64_t ap = gi(c, "attn_layer_period", 8), ao = gi(c, "attn_layer_offset", 4);
	int64_t ep = gi(c, "expert_layer_period", 2), eo = gi(c, "expert_layer_offset", 1);
	if (ap < 1 || ao < 0 || ao >= ap || ep < 1 || eo < 0 || eo >= ep)
		return tfm_seterr(TFM_E_FORMAT, "jamba: layer offsets must be below their periods "
				  "(attention %lld of %lld, experts %lld of %lld)", (long long)ao,
				  (long long)ap, (long long)eo, (long long)ep);
	s->moe_every = ep;
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++) {
		s->layer_kind[i] = i % ap == ao ? TFM_LAYER_ATTN : TFM_LAYER_MAMBA;
		s->layer_moe[i] = s->n_expert > 1 && i % ep == eo;
		s->layer_rope[i] = 0;
	}
	if (s->n_expert <= 1)
		s->n_expert = s->n_expert_used = s->n_ff_expert = 0;
	return TFM_OK;
}

/* bamba (IBM's Mamba-2 hybrid): Mamba-2 layers and llama attention layers
 * (at attn_layer_indices; RoPE on half of each head), each followed by a
 * gated FFN, as jamba's blocks.  Chosen over falcon_h1 as the Mamba-2 hybrid
 * because its layers are those tfm has (mamba2's mixer, llama's attention)
 * in jamba's block; falcon_h1 runs attention and Mamba-2 side by side in
 * every layer with a dozen muP multipliers.  The gated norm is grouped by
 * mamba_n_groups as transformers 5 groups it (4.57.1 normalises all of
 * d_inner: the same with one group, as Bamba-9B has). */
int tfm_preset_bamba(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "bamba", "bamba");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 262144);
	if (st)
		return st;
	s->n_vocab = gi(c, "vocab_size", 128000);
	s->n_ff = gi(c, "intermediate_size", 14336);
	s->n_head_kv = gi(c, "num_key_value_heads", 8);
	if (has(c, "num_key_value_heads") && json_is_null(gj(c, "num_key_value_heads")))
		s->n_head_kv = s->n_head;
	s->bos_id = (int32_t)gi(c, "bos_token_id", 1);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 0);
	/* transformers 5 sets 0.5 whatever the config says; 4.x reads it */
	double prf = gf(c, "partial_rotary_factor", 0.5);
	if (prf != 0.5)
		return tfm_seterr(TFM_E_UNSUPPORTED, "bamba: partial_rotary_factor %g not supported "
				  "(transformers 5 runs 0.5 whatever the config says)", prf);
	s->rope_dims = s->head_dim / 2;
	if (s->act != TFM_ACT_SILU) /* the mixer's conv and gate take hidden_act too */
		return tfm_seterr(TFM_E_UNSUPPORTED, "bamba: hidden_act \"%.20s\" not supported "
				  "(the mamba mixer runs silu)", gs(c, "hidden_act", ""));
	ssm_sizes(s, c, "mamba_", 256);
	s->ssm_dt_rank = 0; /* dt is one value per head, from in_proj */
	s->ssm_d_inner = gi(c, "mamba_expand", 2) * s->n_embd;
	s->ssm_n_head = gi(c, "mamba_n_heads", 128);
	s->ssm_n_group = gi(c, "mamba_n_groups", 1);
	int64_t hd = s->ssm_n_head > 0 ? s->ssm_d_inner / s->ssm_n_head : 0;
	json_t *dh = gj(c, "mamba_d_head");
	if (json_is_integer(dh))
		hd = json_integer_value(dh);
	else if (dh && !json_is_null(dh) && !(json_is_string(dh) && !strcmp(json_string_value(dh), "auto")))
		return tfm_seterr(TFM_E_FORMAT, "bamba: mamba_d_head must be a number or \"auto\"");
	gi(c, "mamba_chunk_size", 256); /* the SSD chunk length: the same sums as the scan tfm runs */
	if ((st = dt_limit(s, c)))
		return st;
	if (s->ssm_n_head < 1 || s->ssm_n_group < 1 || hd < 1 || s->ssm_n_head * hd != s->ssm_d_inner ||
	    s->ssm_n_head % s->ssm_n_group)
		return tfm_seterr(TFM_E_FORMAT, "bamba: %lld heads of %lld for an inner size of %lld in "
				  "%lld groups", (long long)s->ssm_n_head, (long long)hd,
				  (long long)s->ssm_d_inner, (long long)s->ssm_n_group);
	all_layers(s->layer_kind, s->n_layer, TFM_LAYER_MAMBA2);
	all_layers(s->layer_rope, s->n_layer, 0);
	json_t *al = gj(c, "attn_layer_indices");
	size_t i;
	json_t *v;
	if (al && !json_is_null(al) && !json_is_array(al))
		return tfm_seterr(TFM_E_FORMAT, "bamba: attn_layer_indices must be a list");
	json_array_foreach(al, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= s->n_layer || json_integer_value(v) >= TFM_MAX_LAYERS)
			return tfm_seterr(TFM_E_FORMAT, "bamba: attn_layer_indices[%zu] is not a layer", i);
		s->layer_kind[json_integer_value(v)] = TFM_LAYER_ATTN;
		s->layer_rope[json_integer_value(v)] = 1;
	}
	return TFM_OK;
}

int tfm_preset_rwkv(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "rwkv", "rwkv");
	no_attention(s);
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 1;
	s->embd_norm = 1;   /* blocks.0.pre_ln */
	s->n_vocab = gi(c, "vocab_size", 50277);
	s->n_embd = gi(c, "hidden_size", 4096);
	s->n_layer = gi(c, "num_hidden_layers", 32);
	s->n_ctx_train = gi(c, "context_length", 1024);
	s->n_ff = gi(c, "intermediate_size", 4 * s->n_embd);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->act = TFM_ACT_RELU2;
	/* transformers' RwkvConfig is v4; rwkv.cpp's v5 files (rwkvcpp.c) add
	 * the version and the head size */
	s->rwkv_version = (int)gi(c, "rwkv_version", 4);
	s->rwkv_minor = (int)gi(c, "rwkv_version_minor", 0);
	s->rwkv_head_size = s->rwkv_version > 4 ? gi(c, "head_size", 64) : 0;
	if (s->rwkv_version == 6) { /* transformers-style Rwkv6Config's names */
		s->rwkv_lora_w = gi(c, "time_decay_extra_dim", 64);
		s->rwkv_lora_mix = gi(c, "time_mix_extra_dim", 32);
	}
	if (s->rwkv_version == 7) { /* fla's RWKV7Config's names */
		s->rwkv_lora_w = gi(c, "decay_low_rank_dim", 64);
		s->rwkv_lora_a = gi(c, "a_low_rank_dim", 64);
		s->rwkv_lora_v = gi(c, "v_low_rank_dim", 32);
		s->rwkv_lora_g = gi(c, "gate_low_rank_dim", 128);
	}
	s->bos_id = (int32_t)gi(c, "bos_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 0);
	s->rwkv_rescale = gi(c, "rescale_every", 6);
	if (s->rwkv_rescale < 0)
		s->rwkv_rescale = 0;
	/* llama.cpp's architectures for v6 and v7 (it has none for v4, v5);
	 * its rescale_every_n_layers expects weights divided by its converter,
	 * so a model rescaled at inference stays tfm's "rwkv" */
	if ((s->rwkv_version == 6 || s->rwkv_version == 7) && !s->rwkv_rescale)
		snprintf(s->gguf_arch, sizeof(s->gguf_arch), "rwkv%d", s->rwkv_version);
	if (gi(c, "attention_hidden_size", s->n_embd) != s->n_embd)
		return tfm_seterr(TFM_E_UNSUPPORTED, "rwkv: attention_hidden_size != hidden_size "
				  "is not supported");
	all_layers(s->layer_kind, s->n_layer, TFM_LAYER_RWKV);
	all_layers(s->layer_rope, s->n_layer, 0);
	return TFM_OK;
}
