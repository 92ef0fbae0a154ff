/* spec.c: the variant spec's defaults, checks, knob table and JSON form.
 * The knob table below is the single list of spec fields by name: --set,
 * the tfm.* GGUF keys (gguf-keys.c) and tfm_spec_to_json all walk it. */
#include "spec-impl.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const char *const n_family[] = { "decoder", "encoder", "encdec", NULL };
static const char *const n_kind[] = { "attn", "mamba", "mamba2", "rwkv", "gdn", "mlstm", NULL };
static const char *const n_norm[] = { "rms", "layer", "none", NULL };
static const char *const n_place[] = { "pre", "post", "sandwich", "post_in", NULL };
static const char *const n_act[] = { "silu", "gelu", "gelu_tanh", "relu", "relu2",
				     "gelu_quick", NULL };
static const char *const n_pos_embd[] = { "none", "learned", "sinusoidal", NULL };
static const char *const n_pos_attn[] = { "none", "rope", "alibi", "t5", "deberta", NULL };
static const char *const n_scaling[] = { "none", "linear", "ntk", "dynamic", "yarn",
					 "llama3", "longrope", NULL };
static const char *const n_mask[] = { "causal", "bidir", "window", "chunked", NULL };
static const char *const n_qk_norm[] = { "none", "head", "full", "rope_rms", NULL };
static const char *const n_gate[] = { "softmax", "sigmoid", NULL };
static const char *const n_head[] = { "lm", "classifier", "embed", "token", NULL };
static const char *const n_pool[] = { "none", "cls", "mean", "last", "max", "mean_sqrt_len",
				      NULL };
static const char *const n_conv_act[] = { "tanh", "silu", "gelu", "gelu_tanh", "relu", NULL };
static const char *const n_pooler_act[] = { "tanh", "relu", "gelu", "silu", NULL };

#define O(f) offsetof(struct tfm_spec, f)
#define BIG 1e15
#define I(k, f, lo, hi) { k, KT_I64, O(f), NULL, lo, hi }
#define N(k, f, lo, hi) { k, KT_INT, O(f), NULL, lo, hi }
#define B(k, f) { k, KT_BOOL, O(f), NULL, 0, 1 }
#define E(k, f, names) { k, KT_ENUM, O(f), names, 0, 0 }
#define F(k, f, lo, hi) { k, KT_F32, O(f), NULL, lo, hi }
#define D(k, f, lo, hi) { k, KT_F64, O(f), NULL, lo, hi }

const struct tfm_spec_knob tfm_spec_knobs_[] = {
	{ "model.arch", KT_STR, O(arch), NULL, 0, 0 },
	{ "model.gguf_arch", KT_STR, O(gguf_arch), NULL, 0, 0 },
	E("model.family", family, n_family),
	I("model.n_vocab", n_vocab, 0, BIG),
	I("model.n_embd", n_embd, 1, 1e7),
	I("model.n_layer", n_layer, 0, TFM_MAX_LAYERS),
	I("model.n_layer_dec", n_layer_dec, 0, TFM_MAX_LAYERS),
	I("model.n_vocab_src", n_vocab_src, 0, BIG),
	I("model.n_layer_groups", n_layer_groups, 0, TFM_MAX_LAYERS),
	I("model.n_ctx_train", n_ctx_train, 0, BIG),

	F("embd.scale", embd_scale, 0, 1e6),
	E("embd.pos", pos_embd, n_pos_embd),
	I("embd.pos_offset", pos_offset, 0, 1e6),
	I("embd.n_token_types", n_token_types, 0, 1e6),
	B("embd.norm", embd_norm),
	B("embd.tied_output", tied_output),
	B("embd.enc_own", enc_embd),
	I("embd.n_io", n_embd_io, 0, 1e7),
	B("embd.proj", embd_proj),
	B("embd.proj_first", embd_proj_first),

	I("attn.n_head", n_head, 0, 1e6),
	I("attn.n_head_kv", n_head_kv, 0, 1e6),
	I("attn.head_dim", head_dim, 0, 1e6),
	I("attn.q_lora_rank", q_lora_rank, 0, 1e7),
	I("attn.kv_lora_rank", kv_lora_rank, 0, 1e7),
	I("attn.qk_rope_dim", qk_rope_dim, 0, 1e6),
	I("attn.qk_nope_dim", qk_nope_dim, 0, 1e6),
	I("attn.v_head_dim", v_head_dim, 0, 1e6),
	D("attn.mla_norm_eps", mla_norm_eps, 0, 1),
	B("attn.bias_qkv", attn_bias_qkv),
	B("attn.bias_out", attn_bias_out),
	B("attn.bias_qv", attn_bias_qv),
	F("attn.scale", attn_scale, 0, 1e6),
	B("attn.scale_inv_layer", attn_scale_inv_layer),
	F("attn.softcap", attn_softcap, 0, 1e6),
	E("attn.qk_norm", qk_norm, n_qk_norm),
	E("attn.mask", mask, n_mask),
	I("attn.window", window, 0, BIG),
	I("attn.chunk", chunk, 0, BIG),
	F("attn.temp_scale", attn_temp_scale, 0, 1e6),
	I("attn.temp_floor", attn_temp_floor, 0, BIG),
	B("attn.diff", diff_attn),
	B("attn.out_gate", attn_out_gate),
	B("attn.linear", linear_attn),
	B("attn.cross", cross_attn),
	E("attn.pos", pos_attn, n_pos_attn),

	D("rope.theta", rope_theta, 1e-3, 1e15),
	D("rope.theta_local", rope_theta_local, 0, 1e15),
	I("rope.dims", rope_dims, 0, 1e6),
	B("rope.interleaved", rope_interleaved),
	E("rope.scaling", rope_scaling, n_scaling),
	D("rope.factor", rope_factor, 1e-6, 1e6),
	I("rope.orig_ctx", rope_orig_ctx, 0, BIG),
	D("rope.yarn_beta_fast", yarn_beta_fast, 0, 1e6),
	D("rope.yarn_beta_slow", yarn_beta_slow, 0, 1e6),
	D("rope.yarn_attn_factor", yarn_attn_factor, 0, 1e6),
	D("rope.yarn_mscale", yarn_mscale, 0, 1e6),
	D("rope.yarn_mscale_all_dim", yarn_mscale_all_dim, 0, 1e6),
	D("rope.llama3_low_freq_factor", llama3_low_freq_factor, 0, 1e6),
	D("rope.llama3_high_freq_factor", llama3_high_freq_factor, 0, 1e6),
	I("rope.n_factors", n_rope_factors, 0, TFM_MAX_ROPE_FACTORS),
	{ "rope.long_factors", KT_F32ARR, O(rope_long_factors), NULL, 0, 1e9 },
	{ "rope.short_factors", KT_F32ARR, O(rope_short_factors), NULL, 0, 1e9 },
	D("alibi.max_bias", alibi_max_bias, 0, 1e6),
	F("alibi.scale", alibi_scale, 0, 1e6),
	I("t5.buckets", t5_buckets, 0, 1e6),
	I("t5.max_distance", t5_max_distance, 0, 1e9),
	I("rel.span", rel_span, 0, 1e6),
	I("rel.buckets", rel_buckets, 0, 1e6),
	I("rel.max_pos", rel_max_pos, 0, 1e9),
	B("rel.c2p", rel_c2p),
	B("rel.p2c", rel_p2c),
	B("rel.share_key", rel_share_key),
	B("rel.norm", rel_norm),
	B("rel.pos_k_bias", rel_pos_k_bias),
	I("conv.kernel", conv_kernel, 0, 1e4),
	I("conv.groups", conv_groups, 0, 1e7),
	E("conv.act", conv_act, n_conv_act),

	E("norm.type", norm, n_norm),
	D("norm.eps", norm_eps, 0, 1),
	B("norm.bias", norm_bias),
	B("norm.plus_one", norm_plus_one),
	B("norm.no_affine", norm_no_affine),
	E("norm.place", norm_place, n_place),
	B("norm.parallel_residual", parallel_residual),
	B("norm.residual_from_norm", residual_from_norm),
	F("norm.residual_scale", residual_scale, 0, 1e6),
	B("norm.shared_attn_ffn", shared_attn_ffn_norm),
	B("norm.final", final_norm),
	B("norm.no_first_attn", no_first_attn_norm),

	E("ffn.act", act, n_act),
	B("ffn.gated", gated),
	I("ffn.n_ff", n_ff, 0, 1e8),
	B("ffn.bias", ffn_bias),

	I("moe.n_expert", n_expert, 0, 1e6),
	I("moe.n_expert_used", n_expert_used, 0, 1e6),
	I("moe.n_expert_shared", n_expert_shared, 0, 1e6),
	I("moe.n_ff_expert", n_ff_expert, 0, 1e8),
	I("moe.n_ff_shared", n_ff_shared, 0, 1e8),
	E("moe.gate", moe_gate, n_gate),
	B("moe.norm_topk", moe_norm_topk),
	I("moe.n_group", moe_n_group, 0, 1e6),
	I("moe.topk_group", moe_topk_group, 0, 1e6),
	D("moe.routed_scale", moe_routed_scale, 0, 1e6),
	I("moe.first_dense", moe_first_dense, 0, TFM_MAX_LAYERS),
	I("moe.every", moe_every, 0, TFM_MAX_LAYERS),
	B("moe.shared_gate", moe_shared_gate),
	B("moe.gate_bias", moe_gate_bias),
	B("moe.weight_in", moe_weight_in),

	I("ssm.d_state", ssm_d_state, 0, 1e6),
	I("ssm.d_conv", ssm_d_conv, 0, 1e3),
	I("ssm.d_inner", ssm_d_inner, 0, 1e8),
	I("ssm.dt_rank", ssm_dt_rank, 0, 1e6),
	I("ssm.n_head", ssm_n_head, 0, 1e6),
	I("ssm.n_group", ssm_n_group, 0, 1e6),
	B("ssm.conv_bias", ssm_conv_bias),
	B("ssm.bias", ssm_bias),
	B("ssm.dt_norm", ssm_dt_norm),
	B("ssm.dt_norm_w", ssm_norm_w),
	D("ssm.norm_eps", ssm_norm_eps, 0, 1),
	D("ssm.dt_min", ssm_dt_min, 0, 1e9),
	D("ssm.dt_max", ssm_dt_max, 0, 1e9),
	N("rwkv.version", rwkv_version, 0, 7),
	N("rwkv.version_minor", rwkv_minor, 0, 9),
	I("rwkv.head_size", rwkv_head_size, 0, 1e6),
	I("rwkv.lora_decay", rwkv_lora_w, 0, 1e6),
	I("rwkv.lora_iclr", rwkv_lora_a, 0, 1e6),
	I("rwkv.lora_value", rwkv_lora_v, 0, 1e6),
	I("rwkv.lora_gate", rwkv_lora_g, 0, 1e6),
	I("rwkv.lora_mix", rwkv_lora_mix, 0, 1e6),
	I("rwkv.rescale_every", rwkv_rescale, 0, 1e6),
	I("xlstm.qk_dim", xlstm_qk_dim, 0, 1e8),
	I("xlstm.v_dim", xlstm_v_dim, 0, 1e8),
	F("xlstm.gate_cap", xlstm_gate_cap, 0, 1e6),
	D("xlstm.eps", xlstm_eps, 0, 1),

	F("head.final_softcap", final_softcap, 0, 1e6),
	E("head.type", head, n_head),
	E("head.pooling", pooling, n_pool),
	I("head.n_labels", n_labels, 0, 1e9),
	B("head.pooler", pooler),
	E("head.pooler_act", pooler_act, n_pooler_act),
	B("head.mlm", mlm_head),
	B("head.transform", head_transform),
	B("head.dense_bias", head_dense_bias),
	B("head.normalize", normalize),
	B("head.multi_label", multi_label),
	I("head.max_tokens", max_tokens, 0, BIG),
	F("head.scale", head_scale, 0, 1e6),
	B("head.bias", head_bias),

	{ "layer.kind", KT_U8ARR, O(layer_kind), n_kind, 0, 4 },
	{ "layer.moe", KT_U8ARR, O(layer_moe), NULL, 0, 1 },
	{ "layer.window", KT_U8ARR, O(layer_window), NULL, 0, 1 },
	{ "layer.rope", KT_U8ARR, O(layer_rope), NULL, 0, 1 },

	{ "tok.bos_id", KT_I32, O(bos_id), NULL, -1, 2147483647.0 },
	{ "tok.eos_id", KT_I32, O(eos_id), NULL, -1, 2147483647.0 },
	{ "tok.pad_id", KT_I32, O(pad_id), NULL, -1, 2147483647.0 },
	{ "tok.dec_start_id", KT_I32, O(dec_start_id), NULL, -1, 2147483647.0 },
};
const int tfm_spec_n_knobs_ = sizeof(tfm_spec_knobs_) / sizeof(tfm_spec_knobs_[0]);

const struct tfm_spec_knob *tfm_spec_knob_find_(const char *key)
{
	for (int i = 0; i < tfm_spec_n_knobs_; i++)
		if (!strcmp(tfm_spec_knobs_[i].key, key))
			return &tfm_spec_knobs_[i];
	return NULL;
}

const char *const *tfm_spec_keys(void)
{
	static const char *keys[sizeof(tfm_spec_knobs_) / sizeof(tfm_spec_knobs_[0]) + 1];
	if (!keys[0])
		for (int i = 0; i < tfm_spec_n_knobs_; i++)
			keys[i] = tfm_spec_knobs_[i].key;
	return keys;
}

const char *tfm_spec_enum_name(const char *key, int value)
{
	const struct tfm_spec_knob *k = tfm_spec_knob_find_(key);
	if (!k || !k->names || value < 0)
		return NULL;
	for (int i = 0; k->names[i]; i++)
		if (i == value)
			return k->names[i];
	return NULL;
}

int tfm_spec_enum_value(const char *key, const char *name)
{
	const struct tfm_spec_knob *k = tfm_spec_knob_find_(key);
	if (!k || !k->names)
		return -1;
	for (int i = 0; k->names[i]; i++)
		if (!strcasecmp(k->names[i], name))
			return i;
	return -1;
}

int64_t tfm_spec_layer_block(const struct tfm_spec *s, int64_t l)
{
	if (s->n_layer_groups <= 0 || s->n_layer <= 0)
		return l;
	return (int64_t)((double)l / ((double)s->n_layer / (double)s->n_layer_groups));
}

int64_t tfm_spec_n_layers(const struct tfm_spec *s)
{
	int64_t n = s->n_layer + (s->family == TFM_FAMILY_ENCDEC ? s->n_layer_dec : 0);
	return n < 0 ? 0 : n > TFM_MAX_LAYERS ? TFM_MAX_LAYERS : n;
}

void tfm_spec_init(struct tfm_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->family = TFM_FAMILY_DECODER;
	s->pos_embd = TFM_POS_EMBD_NONE;
	s->pos_attn = TFM_POS_ROPE;
	s->rope_theta = 10000.0;
	s->rope_factor = 1.0;
	s->mla_norm_eps = 1e-6;
	s->yarn_beta_fast = 32.0;
	s->yarn_beta_slow = 1.0;
	s->llama3_low_freq_factor = 1.0;
	s->llama3_high_freq_factor = 4.0;
	s->norm = TFM_NORM_RMS;
	s->norm_eps = 1e-5;
	s->norm_place = TFM_NORM_PRE;
	s->final_norm = 1;
	s->act = TFM_ACT_SILU;
	s->gated = 1;
	s->mask = TFM_MASK_CAUSAL;
	s->moe_gate = TFM_MOE_GATE_SOFTMAX;
	s->moe_routed_scale = 1.0;
	s->moe_every = 1;
	s->head = TFM_HEAD_LM;
	s->head_dense_bias = 1;
	s->bos_id = s->eos_id = s->pad_id = s->dec_start_id = -1;
	for (int i = 0; i < TFM_MAX_LAYERS; i++)
		s->layer_rope[i] = 1;
}

int tfm_spec_validate(const struct tfm_spec *s)
{
	const char *a = s->arch[0] ? s->arch : "spec";
	int64_t nl = s->n_layer + (s->family == TFM_FAMILY_ENCDEC ? s->n_layer_dec : 0);
	if (s->n_embd <= 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: n_embd must be positive", a);
	if (s->n_layer <= 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: n_layer must be positive", a);
	if (nl > TFM_MAX_LAYERS)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: %lld layers (at most %d)", a,
				  (long long)nl, TFM_MAX_LAYERS);
	if (s->n_vocab <= 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: n_vocab must be positive", a);
	if (s->family < 0 || s->family > TFM_FAMILY_ENCDEC)
		return tfm_seterr(TFM_E_FORMAT, "%s: bad family %d", a, s->family);
	if (s->family == TFM_FAMILY_ENCDEC && s->n_layer_dec <= 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: encoder-decoder without decoder layers", a);
	if ((s->n_vocab_src > 0 || s->enc_embd) && s->family != TFM_FAMILY_ENCDEC)
		return tfm_seterr(TFM_E_FORMAT, "%s: model.n_vocab_src and embd.enc_own are for "
				  "encoder-decoder models", a);
	/* the head is the decoder's table, n_vocab_src rows: it cannot give
	 * n_vocab logits (transformers' Marian fails the same way) */
	if (s->n_vocab_src > 0 && s->n_vocab_src != s->n_vocab && s->tied_output)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: a tied head with model.n_vocab_src %lld "
				  "rows and n_vocab %lld logits", a, (long long)s->n_vocab_src,
				  (long long)s->n_vocab);
	int has_attn = 0;
	for (int64_t i = 0; i < nl; i++) {
		if (s->layer_kind[i] > TFM_LAYER_MLSTM)
			return tfm_seterr(TFM_E_FORMAT, "%s: layer %lld: bad kind %d", a,
					  (long long)i, s->layer_kind[i]);
		has_attn |= s->layer_kind[i] == TFM_LAYER_ATTN;
		if (s->layer_moe[i] && s->n_expert <= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: layer %lld is MoE but n_expert is 0",
					  a, (long long)i);
	}
	if (has_attn) {
		if (s->n_head <= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: n_head must be positive", a);
		if (s->n_head_kv <= 0 || s->n_head % s->n_head_kv)
			return tfm_seterr(TFM_E_FORMAT, "%s: n_head_kv %lld must divide n_head %lld",
					  a, (long long)s->n_head_kv, (long long)s->n_head);
		if (s->head_dim <= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: head_dim must be positive", a);
		if (s->pos_attn == TFM_POS_ROPE) {
			int64_t hd = s->kv_lora_rank ? s->qk_rope_dim : s->head_dim;
			if (s->rope_dims <= 0 || s->rope_dims > hd || s->rope_dims % 2)
				return tfm_seterr(TFM_E_FORMAT,
						  "%s: rope dims %lld must be even and in (0, %lld]",
						  a, (long long)s->rope_dims, (long long)hd);
		}
		if (s->kv_lora_rank && (s->qk_rope_dim <= 0 || s->qk_nope_dim < 0 ||
					s->v_head_dim <= 0))
			return tfm_seterr(TFM_E_FORMAT, "%s: MLA needs qk_rope_dim and v_head_dim", a);
		if (s->mask == TFM_MASK_WINDOW && s->window <= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: window mask without a window size", a);
		if (s->mask == TFM_MASK_CHUNKED && s->chunk <= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: chunked mask without a chunk size", a);
		if (s->window > 0 && s->chunk > 0)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: a sliding window and chunked "
					  "attention in one model not supported", a);
		if (s->attn_temp_scale > 0 && s->attn_temp_floor <= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: attention temperature tuning needs "
					  "attn.temp_floor > 0", a);
		if (s->rope_scaling == TFM_ROPE_SCALE_LONGROPE &&
		    s->n_rope_factors * 2 != s->rope_dims)
			return tfm_seterr(TFM_E_FORMAT, "%s: LongRoPE needs rope_dims/2 = %lld factors, "
					  "got %lld", a, (long long)(s->rope_dims / 2),
					  (long long)s->n_rope_factors);
	}
	if (s->n_expert > 0 && (s->n_expert_used <= 0 || s->n_expert_used > s->n_expert))
		return tfm_seterr(TFM_E_FORMAT, "%s: n_expert_used %lld not in [1, %lld]", a,
				  (long long)s->n_expert_used, (long long)s->n_expert);
	if (s->moe_n_group > 0 && s->n_expert % s->moe_n_group)
		return tfm_seterr(TFM_E_FORMAT, "%s: moe groups %lld do not divide %lld experts", a,
				  (long long)s->moe_n_group, (long long)s->n_expert);
	if (s->norm_eps < 0 || !isfinite(s->norm_eps))
		return tfm_seterr(TFM_E_FORMAT, "%s: bad norm eps", a);
	if (s->n_rope_factors < 0 || s->n_rope_factors > TFM_MAX_ROPE_FACTORS)
		return tfm_seterr(TFM_E_FORMAT, "%s: bad rope factor count", a);
	return TFM_OK;
}

/* One knob's value as JSON. */
static json_t *knob_json(const struct tfm_spec *s, const struct tfm_spec_knob *k)
{
	const char *p = (const char *)s + k->off;
	switch (k->type) {
	case KT_I64: return json_integer(*(const int64_t *)p);
	case KT_INT: return json_integer(*(const int *)p);
	case KT_I32: return json_integer(*(const int32_t *)p);
	case KT_BOOL: return json_boolean(*(const int *)p);
	case KT_ENUM: {
		const char *n = tfm_spec_enum_name(k->key, *(const int *)p);
		return n ? json_string(n) : json_integer(*(const int *)p);
	}
	case KT_F32: return json_real(*(const float *)p);
	case KT_F64: return json_real(*(const double *)p);
	case KT_STR: return json_string(p);
	case KT_F32ARR: {
		json_t *a = json_array();
		for (int64_t i = 0; i < s->n_rope_factors; i++)
			json_array_append_new(a, json_real(((const float *)p)[i]));
		return a;
	}
	case KT_U8ARR: {
		/* a string of digits (or kind letters) reads better than a list */
		int64_t n = tfm_spec_n_layers(s);
		char buf[TFM_MAX_LAYERS + 1];
		for (int64_t i = 0; i < n; i++)
			buf[i] = k->names ? (p[i] <= TFM_LAYER_MLSTM ? "amMrgx"[(unsigned char)p[i]] : '?') :
					    (char)('0' + (p[i] != 0));
		buf[n] = 0;
		return json_string(buf);
	}
	}
	return json_null();
}

json_t *tfm_spec_to_json(const struct tfm_spec *s)
{
	json_t *o = json_object();
	if (!o) {
		tfm_seterr(TFM_E_NOMEM, "out of memory");
		return NULL;
	}
	for (int i = 0; i < tfm_spec_n_knobs_; i++) {
		const struct tfm_spec_knob *k = &tfm_spec_knobs_[i];
		if (k->type == KT_F32ARR && !s->n_rope_factors)
			continue;
		json_object_set_new(o, k->key, knob_json(s, k));
	}
	return o;
}
