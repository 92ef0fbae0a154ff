/* presets.c: Hugging Face config.json -> spec, one preset per model_type.
 * Field names and defaults follow transformers' configuration_<type>.py;
 * a field absent from config.json takes the class default, as in
 * transformers.  Presets only fill knobs; they never compute anything. */
#include "spec-impl.h"
#include "presets-impl.h"

#include <math.h>
#include <string.h>

/* Activation names of transformers' ACT2FN. */
int tfm_preset_act(const char *name, int *act)
{
	static const struct { const char *n; int a; } t[] = {
		{ "silu", TFM_ACT_SILU }, { "swish", TFM_ACT_SILU },
		{ "gelu", TFM_ACT_GELU }, { "gelu_new", TFM_ACT_GELU_TANH },
		{ "gelu_pytorch_tanh", TFM_ACT_GELU_TANH }, { "gelu_fast", TFM_ACT_GELU_TANH },
		{ "gelu_accurate", TFM_ACT_GELU_TANH }, { "relu", TFM_ACT_RELU },
		{ "relu2", TFM_ACT_RELU2 }, { "quick_gelu", TFM_ACT_GELU_QUICK },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].n, name)) {
			*act = t[i].a;
			return TFM_OK;
		}
	return tfm_seterr(TFM_E_UNSUPPORTED, "activation '%s' is not supported", name);
}

/* rope_scaling (or rope_parameters) dict; also partial rotary. */
static int rope_scaling(struct tfm_spec *s, const json_t *c)
{
	json_t *r = gj(c, "rope_scaling");
	if (!json_is_object(r))
		return TFM_OK;
	const char *t = gs(r, "rope_type", gs(r, "type", "default"));
	s->rope_factor = gf(r, "factor", 1.0);
	s->rope_orig_ctx = gi(r, "original_max_position_embeddings",
			      gi(c, "original_max_position_embeddings", 0));
	if (!strcmp(t, "default")) {
		s->rope_scaling = TFM_ROPE_SCALE_NONE;
	} else if (!strcmp(t, "linear")) {
		s->rope_scaling = TFM_ROPE_SCALE_LINEAR;
	} else if (!strcmp(t, "dynamic")) {
		s->rope_scaling = TFM_ROPE_SCALE_DYNAMIC;
	} else if (!strcmp(t, "ntk")) {
		s->rope_scaling = TFM_ROPE_SCALE_NTK;
	} else if (!strcmp(t, "yarn")) {
		s->rope_scaling = TFM_ROPE_SCALE_YARN;
		s->yarn_beta_fast = gf(r, "beta_fast", 32);
		s->yarn_beta_slow = gf(r, "beta_slow", 1);
		s->yarn_attn_factor = gf(r, "attention_factor", 0);
		s->yarn_mscale = gf(r, "mscale", 0);
		s->yarn_mscale_all_dim = gf(r, "mscale_all_dim", 0);
	} else if (!strcmp(t, "llama3")) {
		s->rope_scaling = TFM_ROPE_SCALE_LLAMA3;
		s->llama3_low_freq_factor = gf(r, "low_freq_factor", 1);
		s->llama3_high_freq_factor = gf(r, "high_freq_factor", 4);
	} else if (!strcmp(t, "longrope") || !strcmp(t, "su")) {
		s->rope_scaling = TFM_ROPE_SCALE_LONGROPE;
		json_t *lf = json_object_get(r, "long_factor"), *sf = json_object_get(r, "short_factor");
		if (!json_is_array(lf) || !json_is_array(sf) || json_array_size(lf) != json_array_size(sf))
			return tfm_seterr(TFM_E_FORMAT, "rope_scaling %s: long_factor and short_factor "
					  "lists of equal length are required", t);
		if (json_array_size(lf) > TFM_MAX_ROPE_FACTORS)
			return tfm_seterr(TFM_E_UNSUPPORTED, "rope_scaling: %zu factors (at most %d)",
					  json_array_size(lf), TFM_MAX_ROPE_FACTORS);
		s->n_rope_factors = (int64_t)json_array_size(lf);
		for (int64_t i = 0; i < s->n_rope_factors; i++) {
			s->rope_long_factors[i] = (float)json_number_value(json_array_get(lf, i));
			s->rope_short_factors[i] = (float)json_number_value(json_array_get(sf, i));
		}
		if (!s->rope_orig_ctx)
			s->rope_orig_ctx = gi(c, "original_max_position_embeddings", 0);
		s->yarn_attn_factor = gf(r, "attention_factor", 0);
		s->rope_factor = s->rope_orig_ctx ? (double)s->n_ctx_train / s->rope_orig_ctx : 1.0;
	} else {
		return tfm_seterr(TFM_E_UNSUPPORTED, "rope_scaling type '%s' is not supported", t);
	}
	return TFM_OK;
}


/* Window on every layer (mistral-style). */
static void window_all(struct tfm_spec *s, int64_t w)
{
	if (w <= 0)
		return;
	s->window = w;
	s->mask = TFM_MASK_WINDOW;
	all_layers(s->layer_window, s->n_layer, 1);
}

/* The llama family core: sizes, GQA, head_dim, rope, RMSNorm, gated SiLU. */
int tfm_preset_llama_core(struct tfm_spec *s, const json_t *c, double eps_dflt, double theta_dflt,
		      int64_t ctx_dflt)
{
	s->n_vocab = gi(c, "vocab_size", 32000);
	s->n_embd = gi(c, "hidden_size", 4096);
	s->n_ff = gi(c, "intermediate_size", 11008);
	s->n_layer = gi(c, "num_hidden_layers", 32);
	s->n_head = gi(c, "num_attention_heads", 32);
	s->n_head_kv = gi(c, "num_key_value_heads", s->n_head);
	s->head_dim = gi(c, "head_dim", s->n_head ? s->n_embd / s->n_head : 0);
	s->n_ctx_train = gi(c, "max_position_embeddings", ctx_dflt);
	s->norm_eps = gf(c, "rms_norm_eps", eps_dflt);
	s->rope_theta = gf(c, "rope_theta", theta_dflt);
	s->rope_dims = (int64_t)(s->head_dim * gf(c, "partial_rotary_factor", 1.0));
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->attn_bias_qkv = s->attn_bias_out = gb(c, "attention_bias", 0);
	s->ffn_bias = gb(c, "mlp_bias", 0);
	s->rope_interleaved = gb(c, "rope_interleaved", 0);
	s->bos_id = (int32_t)gi(c, "bos_token_id", -1);
	s->eos_id = (int32_t)gi(c, "eos_token_id", -1);
	s->pad_id = (int32_t)gi(c, "pad_token_id", -1);
	int st = tfm_preset_act(gs(c, "hidden_act", "silu"), &s->act);
	if (st)
		return st;
	return rope_scaling(s, c);
}

/* qwen2/qwen3: sliding window from layer max_window_layers on, when enabled. */
static void qwen_window(struct tfm_spec *s, const json_t *c)
{
	/* sliding_window and max_window_layers count only with use_sliding_window */
	tfm_cfg_mark(c, "sliding_window");
	tfm_cfg_mark(c, "max_window_layers");
	if (!gb(c, "use_sliding_window", 0) || !has(c, "sliding_window"))
		return;
	s->window = gi(c, "sliding_window", 4096);
	for (int64_t i = gi(c, "max_window_layers", 28); i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_window[i] = 1;
}

/* qwen2_moe / qwen3_moe layer pattern. */
static void qwen_moe(struct tfm_spec *s, const json_t *c, int64_t n_exp, int64_t used,
		     int64_t ff_exp)
{
	s->n_expert = gi(c, "num_experts", n_exp);
	s->n_expert_used = gi(c, "num_experts_per_tok", used);
	s->n_ff_expert = gi(c, "moe_intermediate_size", ff_exp);
	s->moe_norm_topk = gb(c, "norm_topk_prob", 0);
	int64_t step = gi(c, "decoder_sparse_step", 1);
	s->moe_every = step;
	json_t *mlp_only = gj(c, "mlp_only_layers");
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_moe[i] = !layer_listed(mlp_only, i) && s->n_expert > 0 &&
				  every_kth(i, step);
}

static int p_llama(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "llama", "llama");
	return tfm_preset_llama_core(s, c, 1e-6, 10000, 2048);
}

/* diffllama: llama with differential attention (DiffLlamaConfig: rms eps
 * 1e-5); lambda_std_dev only initialises the lambda vectors. */
static int p_diffllama(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "diffllama", "diffllama");
	s->diff_attn = 1;
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 2048);
	/* DiffLlamaConfig's own defaults for the sizes */
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 8192);
	s->n_layer = gi(c, "num_hidden_layers", 16);
	s->head_dim = gi(c, "head_dim", s->n_head ? s->n_embd / s->n_head : 0);
	s->rope_dims = (int64_t)(s->head_dim * gf(c, "partial_rotary_factor", 1.0));
	return st;
}

static int p_mistral(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "mistral", "llama");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 4096 * 32);
	s->n_ff = gi(c, "intermediate_size", 14336);
	s->n_head_kv = gi(c, "num_key_value_heads", 8);
	s->head_dim = gi(c, "head_dim", s->n_embd / s->n_head);
	s->rope_dims = s->head_dim;
	window_all(s, gi(c, "sliding_window", 4096));
	return st;
}

static int p_mixtral(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "mixtral", "llama");
	int st = tfm_preset_llama_core(s, c, 1e-5, 1e6, 4096 * 32);
	s->n_ff = gi(c, "intermediate_size", 14336);
	s->n_head_kv = gi(c, "num_key_value_heads", 8);
	s->n_expert = gi(c, "num_local_experts", 8);
	s->n_expert_used = gi(c, "num_experts_per_tok", 2);
	s->n_ff_expert = s->n_ff;
	s->moe_norm_topk = 1;
	all_layers(s->layer_moe, s->n_layer, 1);
	window_all(s, gi(c, "sliding_window", 0));
	return st;
}

static int p_qwen2(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "qwen2", "qwen2");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 32768);
	s->n_vocab = gi(c, "vocab_size", 151936);
	s->n_ff = gi(c, "intermediate_size", 22016);
	s->attn_bias_qkv = 1;
	s->attn_bias_out = 0;
	qwen_window(s, c);
	return st;
}

static int p_qwen2_moe(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "qwen2_moe", "qwen2moe");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 32768);
	s->n_vocab = gi(c, "vocab_size", 151936);
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 5632);
	s->n_layer = gi(c, "num_hidden_layers", 24);
	s->n_head = gi(c, "num_attention_heads", 16);
	s->n_head_kv = gi(c, "num_key_value_heads", 16);
	/* transformers: getattr(config, "head_dim", hidden_size // heads) */
	s->head_dim = s->rope_dims = gi(c, "head_dim", s->n_embd / s->n_head);
	s->attn_bias_qkv = gb(c, "qkv_bias", 1);
	s->attn_bias_out = 0;
	qwen_moe(s, c, 60, 4, 1408);
	s->n_ff_shared = gi(c, "shared_expert_intermediate_size", 5632);
	s->n_expert_shared = s->n_ff_shared > 0;
	s->moe_shared_gate = 1;
	qwen_window(s, c);
	return st;
}

static int p_qwen3(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "qwen3", "qwen3");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 32768);
	s->n_vocab = gi(c, "vocab_size", 151936);
	s->n_ff = gi(c, "intermediate_size", 22016);
	s->head_dim = s->rope_dims = gi(c, "head_dim", 128);
	s->qk_norm = TFM_QK_NORM_HEAD;
	qwen_window(s, c);
	return st;
}

/* qwen3_next: Gated DeltaNet layers (gdn.c) and gated full-attention
 * layers (each head's query projection also gives a sigmoid gate of its
 * output; QK-norm; RoPE on partial_rotary_factor of each head), as
 * layer_types says (else every full_attention_interval-th layer attends);
 * every layer's FFN the qwen2_moe MoE with a gated shared expert (dense on
 * mlp_only_layers); RMSNorms zero-centred (1 + w) except the DeltaNet's
 * gated norm. */
static int p_qwen3_next(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "qwen3_next", "qwen3next");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 32768);
	if (st)
		return st;
	s->n_vocab = gi(c, "vocab_size", 151936);
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 5632);
	s->n_layer = gi(c, "num_hidden_layers", 48);
	s->n_head = gi(c, "num_attention_heads", 16);
	s->n_head_kv = gi(c, "num_key_value_heads", 2);
	s->head_dim = gi(c, "head_dim", 256);
	s->rope_dims = (int64_t)((double)s->head_dim * gf(c, "partial_rotary_factor", 0.25));
	s->qk_norm = TFM_QK_NORM_HEAD;
	s->norm_plus_one = 1;
	s->attn_out_gate = 1;
	if (s->attn_bias_qkv) /* q_proj's bias would hold the gates' too */
		return tfm_seterr(TFM_E_UNSUPPORTED, "qwen3_next: attention_bias not supported yet");
	qwen_moe(s, c, 512, 10, 512);
	s->moe_norm_topk = gb(c, "norm_topk_prob", 1);
	s->n_ff_shared = gi(c, "shared_expert_intermediate_size", 512);
	s->n_expert_shared = s->n_ff_shared > 0;
	s->moe_shared_gate = 1;
	/* the Gated DeltaNet's sizes in the ssm.* knobs (llama.cpp's keys) */
	s->ssm_n_group = gi(c, "linear_num_key_heads", 16);
	s->ssm_n_head = gi(c, "linear_num_value_heads", 32);
	s->ssm_d_state = gi(c, "linear_key_head_dim", 128);
	s->ssm_d_inner = gi(c, "linear_value_head_dim", 128) * s->ssm_n_head;
	s->ssm_d_conv = gi(c, "linear_conv_kernel_dim", 4);
	if (s->ssm_n_group < 1 || s->ssm_n_head < 1 || s->ssm_n_head % s->ssm_n_group ||
	    s->ssm_d_state < 1 || s->ssm_d_inner < 1 || s->ssm_d_conv < 1)
		return tfm_seterr(TFM_E_FORMAT, "qwen3_next: %lld value heads over %lld key heads, "
				  "key head %lld, conv %lld", (long long)s->ssm_n_head,
				  (long long)s->ssm_n_group, (long long)s->ssm_d_state,
				  (long long)s->ssm_d_conv);
	json_t *lt = gj(c, "layer_types");
	int64_t every = gi(c, "full_attention_interval", 4);
	if (lt && !json_is_null(lt) &&
	    (!json_is_array(lt) || (int64_t)json_array_size(lt) != s->n_layer))
		return tfm_seterr(TFM_E_FORMAT, "qwen3_next: layer_types must list %lld layers",
				  (long long)s->n_layer);
	if (every < 1)
		return tfm_seterr(TFM_E_FORMAT, "qwen3_next: full_attention_interval %lld",
				  (long long)every);
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++) {
		const char *t = json_is_array(lt) ? json_string_value(json_array_get(lt, (size_t)i))
						  : (i + 1) % every ? "linear_attention" : "full_attention";
		if (!t || (strcmp(t, "linear_attention") && strcmp(t, "full_attention")))
			return tfm_seterr(TFM_E_UNSUPPORTED, "qwen3_next: layer_types[%lld] \"%.30s\" "
					  "not supported (linear_attention, full_attention)",
					  (long long)i, t ? t : "");
		int full = !strcmp(t, "full_attention");
		s->layer_kind[i] = full ? TFM_LAYER_ATTN : TFM_LAYER_GDN;
		s->layer_rope[i] = full;
	}
	return TFM_OK;
}

static int p_qwen3_moe(struct tfm_spec *s, const json_t *c)
{
	int st = p_qwen3(s, c);
	set_arch(s, "qwen3_moe", "qwen3moe");
	/* Qwen3MoeConfig's own defaults; it has no head_dim attribute, so
	 * transformers' getattr falls back to hidden_size / heads */
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 6144);
	s->n_layer = gi(c, "num_hidden_layers", 24);
	s->n_head = gi(c, "num_attention_heads", 32);
	s->n_head_kv = gi(c, "num_key_value_heads", 4);
	s->head_dim = s->rope_dims = gi(c, "head_dim", s->n_head ? s->n_embd / s->n_head : 0);
	qwen_moe(s, c, 128, 8, 768);
	/* transformers' Qwen3-MoE slides on every layer when use_sliding_window
	 * is set (max_window_layers is not read) */
	all_layers(s->layer_window, s->n_layer, 0);
	s->window = 0;
	if (gb(c, "use_sliding_window", 0) && !gnull(c, "sliding_window"))
		window_all(s, gi(c, "sliding_window", 4096));
	return st;
}

static int p_gemma(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "gemma", "gemma");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 8192);
	if (st)
		return st;
	s->n_vocab = gi(c, "vocab_size", 256000);
	s->n_embd = gi(c, "hidden_size", 3072);
	s->n_ff = gi(c, "intermediate_size", 24576);
	s->n_layer = gi(c, "num_hidden_layers", 28);
	s->n_head = gi(c, "num_attention_heads", 16);
	s->n_head_kv = gi(c, "num_key_value_heads", 16);
	s->head_dim = s->rope_dims = gi(c, "head_dim", 256);
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->embd_scale = (float)sqrt((double)s->n_embd);
	s->norm_plus_one = 1;
	/* hidden_activation wins over hidden_act (gemma's tanh GELU) */
	s->act = TFM_ACT_GELU_TANH;
	if (has(c, "hidden_activation"))
		st = tfm_preset_act(gs(c, "hidden_activation", "gelu_pytorch_tanh"), &s->act);
	return st;
}

static int p_gemma2(struct tfm_spec *s, const json_t *c)
{
	int st = p_gemma(s, c);
	set_arch(s, "gemma2", "gemma2");
	s->n_embd = gi(c, "hidden_size", 2304);
	s->embd_scale = (float)sqrt((double)s->n_embd);
	s->n_ff = gi(c, "intermediate_size", 9216);
	s->n_layer = gi(c, "num_hidden_layers", 26);
	s->n_head = gi(c, "num_attention_heads", 8);
	s->n_head_kv = gi(c, "num_key_value_heads", 4);
	s->n_ctx_train = gi(c, "max_position_embeddings", 8192);
	s->attn_scale = (float)(1.0 / sqrt(gf(c, "query_pre_attn_scalar", 256)));
	s->attn_softcap = (float)gf(c, "attn_logit_softcapping", 50.0);
	s->final_softcap = (float)gf(c, "final_logit_softcapping", 30.0);
	s->norm_place = TFM_NORM_SANDWICH;
	s->window = gi(c, "sliding_window", 4096);
	/* layer_types: even layers slide, odd layers are global */
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_window[i] = (i + 1) % 2 != 0;
	return st;
}

static int p_gemma3(struct tfm_spec *s, const json_t *c)
{
	int st = p_gemma2(s, c);
	set_arch(s, "gemma3", "gemma3");
	s->n_vocab = gi(c, "vocab_size", 262208);
	s->n_ctx_train = gi(c, "max_position_embeddings", 131072);
	s->rope_theta = gf(c, "rope_theta", 1e6);
	s->rope_theta_local = gf(c, "rope_local_base_freq", 10000);
	s->attn_softcap = (float)gf(c, "attn_logit_softcapping", 0);
	s->final_softcap = (float)gf(c, "final_logit_softcapping", 0);
	s->qk_norm = TFM_QK_NORM_HEAD;
	int64_t pat = gi(c, "sliding_window_pattern", 6);
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_window[i] = pat > 0 && (i + 1) % pat != 0;
	return st;
}

static int p_olmo2(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "olmo2", "olmo2");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 2048);
	s->n_vocab = gi(c, "vocab_size", 50304);
	s->norm_place = TFM_NORM_POST_IN;
	s->qk_norm = TFM_QK_NORM_FULL;
	return st;
}

static int p_deepseek(struct tfm_spec *s, const json_t *c, int v3)
{
	set_arch(s, v3 ? "deepseek_v3" : "deepseek_v2", "deepseek2");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, v3 ? 4096 : 2048);
	/* the configuration classes' defaults (V2's are not DeepSeek-V2's sizes) */
	s->n_vocab = gi(c, "vocab_size", v3 ? 129280 : 32000);
	s->n_embd = gi(c, "hidden_size", v3 ? 7168 : 4096);
	s->n_ff = gi(c, "intermediate_size", v3 ? 18432 : 11008);
	s->n_layer = gi(c, "num_hidden_layers", v3 ? 61 : 32);
	s->n_head = gi(c, "num_attention_heads", v3 ? 128 : 32);
	s->n_head_kv = gi(c, "num_key_value_heads", v3 ? 128 : 32);
	/* null (DeepSeek-V2-Lite): q_proj from the input, no low-rank query */
	s->q_lora_rank = gnull(c, "q_lora_rank") ? 0 : gi(c, "q_lora_rank", 1536);
	s->kv_lora_rank = gi(c, "kv_lora_rank", 512);
	s->qk_rope_dim = gi(c, "qk_rope_head_dim", 64);
	s->qk_nope_dim = gi(c, "qk_nope_head_dim", 128);
	s->v_head_dim = gi(c, "v_head_dim", 128);
	s->head_dim = s->qk_nope_dim + s->qk_rope_dim;
	/* transformers 5 saves the derived qk_head_dim */
	if (has(c, "qk_head_dim") && gi(c, "qk_head_dim", 0) != s->head_dim)
		return tfm_seterr(TFM_E_FORMAT, "qk_head_dim=%lld is not qk_nope_head_dim + "
				  "qk_rope_head_dim (%lld)", (long long)gi(c, "qk_head_dim", 0),
				  (long long)s->head_dim);
	s->rope_dims = s->qk_rope_dim;
	/* deepseek's own modeling code rotates interleaved pairs */
	s->rope_interleaved = gb(c, "rope_interleave", 1);
	s->n_expert = gi(c, "n_routed_experts", v3 ? 256 : 64);
	s->n_expert_used = gi(c, "num_experts_per_tok", v3 ? 8 : 6);
	s->n_ff_expert = gi(c, "moe_intermediate_size", v3 ? 2048 : 1407);
	s->n_expert_shared = gi(c, "n_shared_experts", v3 ? 1 : 2);
	s->n_ff_shared = s->n_expert_shared * s->n_ff_expert;
	s->moe_routed_scale = gf(c, "routed_scaling_factor", v3 ? 2.5 : 1.0);
	/* transformers' DeepSeek-V2 router never renormalises (norm_topk_prob
	 * is stored, not used) and groups experts only with
	 * group_limited_greedy; V3 always routes by groups (noaux_tc) */
	int norm = gb(c, "norm_topk_prob", v3);
	s->moe_norm_topk = v3 ? norm : 0;
	s->moe_n_group = gi(c, "n_group", v3 ? 8 : 1);
	s->moe_topk_group = gi(c, "topk_group", v3 ? 4 : 1);
	if (!v3) {
		const char *tm = gs(c, "topk_method", "greedy");
		if (!strcmp(tm, "greedy"))
			s->moe_n_group = s->moe_topk_group = 1;
		else if (strcmp(tm, "group_limited_greedy"))
			return tfm_seterr(TFM_E_UNSUPPORTED, "topk_method=%s is not supported (transformers' "
					  "DeepSeek-V2 runs greedy and group_limited_greedy)", tm);
	}
	s->moe_first_dense = gi(c, "first_k_dense_replace", v3 ? 3 : 0);
	s->moe_every = gi(c, "moe_layer_freq", 1);
	/* the multi-token-prediction layers are not part of transformers'
	 * forward pass (their weights are skipped on import) */
	tfm_cfg_mark(c, "num_nextn_predict_layers");
	const char *scoring = gs(c, "scoring_func", v3 ? "sigmoid" : "softmax");
	s->moe_gate = !strcmp(scoring, "sigmoid") ? TFM_MOE_GATE_SIGMOID : TFM_MOE_GATE_SOFTMAX;
	s->moe_gate_bias = v3;
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_moe[i] = s->n_expert > 0 && i >= s->moe_first_dense &&
				  s->moe_every > 0 && i % s->moe_every == 0;
	return st;
}
static int p_deepseek_v2(struct tfm_spec *s, const json_t *c) { return p_deepseek(s, c, 0); }
static int p_deepseek_v3(struct tfm_spec *s, const json_t *c) { return p_deepseek(s, c, 1); }

static int p_phi3(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "phi3", "phi3");
	s->n_ctx_train = gi(c, "max_position_embeddings", 4096);
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 4096);
	s->n_vocab = gi(c, "vocab_size", 32064);
	s->n_embd = gi(c, "hidden_size", 3072);
	s->n_ff = gi(c, "intermediate_size", 8192);
	/* transformers: getattr(config, "head_dim", hidden_size // heads) */
	s->head_dim = gi(c, "head_dim", s->n_embd / s->n_head);
	s->rope_dims = (int64_t)(s->head_dim * gf(c, "partial_rotary_factor", 1.0));
	window_all(s, gi(c, "sliding_window", 0));
	/* read by rope_scaling() for longrope; without scaling transformers
	 * does not use it either */
	tfm_cfg_mark(c, "original_max_position_embeddings");
	return st;
}

/* GPT-2 style: LayerNorm with bias, biases everywhere, ungated FFN. */
void tfm_preset_layernorm_biased(struct tfm_spec *s)
{
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 1;
	s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = 1;
	s->gated = 0;
}

static int p_gpt2(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "gpt2", "gpt2");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 50257);
	s->n_embd = gi(c, "n_embd", 768);
	s->n_layer = gi(c, "n_layer", 12);
	s->n_head = s->n_head_kv = gi(c, "n_head", 12);
	s->head_dim = s->n_embd / s->n_head;
	s->n_ff = gi(c, "n_inner", 4 * s->n_embd);
	s->n_ctx_train = gi(c, "n_positions", 1024);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->pos_embd = TFM_POS_EMBD_LEARNED;
	s->pos_attn = TFM_POS_NONE;
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 50256);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 50256);
	/* scores / sqrt(head_dim) unless scale_attn_weights is false, and
	 * / (layer + 1) with scale_attn_by_inverse_layer_idx */
	if (!gb(c, "scale_attn_weights", 1))
		s->attn_scale = 1.0f;
	s->attn_scale_inv_layer = gb(c, "scale_attn_by_inverse_layer_idx", 0);
	return tfm_preset_act(gs(c, "activation_function", "gelu_new"), &s->act);
}

static int p_gpt_neox(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "gpt_neox", "gptneox");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 50432);
	s->n_embd = gi(c, "hidden_size", 6144);
	s->n_layer = gi(c, "num_hidden_layers", 44);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", 64);
	s->head_dim = s->n_embd / s->n_head;
	s->n_ff = gi(c, "intermediate_size", 24576);
	s->n_ctx_train = gi(c, "max_position_embeddings", 2048);
	s->norm_eps = gf(c, "layer_norm_eps", 1e-5);
	s->rope_theta = gf(c, "rope_theta", gf(c, "rotary_emb_base", 10000));
	s->rope_dims = (int64_t)(s->head_dim * gf(c, "partial_rotary_factor",
						 gf(c, "rotary_pct", 0.25)));
	s->attn_bias_qkv = s->attn_bias_out = gb(c, "attention_bias", 1);
	s->parallel_residual = gb(c, "use_parallel_residual", 1);
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	int st = tfm_preset_act(gs(c, "hidden_act", "gelu"), &s->act);
	return st ? st : rope_scaling(s, c);
}

static void alibi(struct tfm_spec *s, double max_bias)
{
	s->pos_attn = TFM_POS_ALIBI;
	s->alibi_max_bias = max_bias;
	s->rope_dims = 0;
	s->rope_theta = 10000;
}

static int p_bloom(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "bloom", "bloom");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 250880);
	s->n_embd = gi(c, "hidden_size", gi(c, "n_embed", 64));
	s->n_layer = gi(c, "n_layer", 2);
	s->n_head = s->n_head_kv = gi(c, "n_head", 8);
	s->head_dim = s->n_embd / s->n_head;
	s->n_ff = 4 * s->n_embd;
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->embd_norm = 1;
	s->act = TFM_ACT_GELU_TANH;
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 1);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 3);
	s->residual_from_norm = gb(c, "apply_residual_connection_post_layernorm", 0);
	alibi(s, 8);
	return TFM_OK;
}

static int p_falcon(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "falcon", "falcon");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 65024);
	s->n_embd = gi(c, "hidden_size", 4544);
	s->n_layer = gi(c, "num_hidden_layers", 32);
	s->n_head = gi(c, "num_attention_heads", 71);
	s->head_dim = gi(c, "head_dim", s->n_embd / s->n_head);
	int new_arch = gb(c, "new_decoder_architecture", 0);
	/* num_kv_heads counts only in the new architecture; transformers'
	 * old-architecture attention without multi_query splits the fused QKV
	 * into n_head heads and cannot run another value */
	int64_t kvh = gi(c, "num_kv_heads", s->n_head);
	if (new_arch)
		s->n_head_kv = kvh;
	else if (gb(c, "multi_query", 1))
		s->n_head_kv = 1;
	else if (kvh != s->n_head)
		return tfm_seterr(TFM_E_UNSUPPORTED, "num_kv_heads=%lld without "
				  "new_decoder_architecture or multi_query is not supported",
				  (long long)kvh);
	else
		s->n_head_kv = s->n_head;
	s->n_ff = gi(c, "ffn_hidden_size", 4 * s->n_embd);
	s->n_ctx_train = gi(c, "max_position_embeddings", 2048);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = gb(c, "bias", 0);
	s->parallel_residual = new_arch || gb(c, "parallel_attn", 1);
	s->shared_attn_ffn_norm = !new_arch && s->parallel_residual;
	/* num_ln_in_parallel_attn counts only in the new architecture */
	if (gi(c, "num_ln_in_parallel_attn", 2) == 1 && new_arch)
		s->shared_attn_ffn_norm = 1;
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->rope_theta = gf(c, "rope_theta", 10000);
	s->rope_dims = s->head_dim;
	s->bos_id = (int32_t)gi(c, "bos_token_id", 11);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 11);
	if (gb(c, "alibi", 0)) {
		/* Falcon adds the bias before the 1/sqrt(head_dim) scaling (its
		 * sdpa path: alibi / sqrt(head_dim) in the mask; the eager path
		 * adds it twice, which is not copied) */
		alibi(s, 8);
		s->alibi_scale = (float)(1.0 / sqrt((double)s->head_dim));
	}
	int st = tfm_preset_act(gs(c, "activation", "gelu"), &s->act);
	return st ? st : rope_scaling(s, c);
}

static int p_mpt(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "mpt", "mpt");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 50368);
	s->n_embd = gi(c, "d_model", 2048);
	s->n_layer = gi(c, "n_layers", 24);
	s->n_head = s->n_head_kv = gi(c, "n_heads", 16);
	s->head_dim = s->n_embd / s->n_head;
	/* transformers' MptMLP is 4 * d_model wide whatever expansion_ratio says */
	s->n_ff = 4 * s->n_embd;
	s->n_ctx_train = gi(c, "max_seq_len", 2048);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	/* transformers' MPT creates no bias at all, whatever no_bias says; its
	 * MLP is 4 * d_model wide whatever expansion_ratio says; it has no
	 * position table (learned_pos_emb), always a LayerNorm (norm_type) and
	 * no logit scale: those keys leave its forward pass unchanged. */
	static const char *const inert_mpt[] = {"no_bias", "expansion_ratio", "learned_pos_emb",
						"norm_type", "logit_scale"};
	for (size_t i = 0; i < sizeof inert_mpt / sizeof inert_mpt[0]; i++)
		tfm_cfg_mark(c, inert_mpt[i]);
	s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = s->norm_bias = 0;
	s->act = TFM_ACT_GELU;
	s->tied_output = 1;
	json_t *ac = gj(c, "attn_config");
	if (!json_is_object(ac))
		ac = NULL;
	/* transformers' MPT always runs ALiBi (it has no position table) */
	if (ac && has(ac, "alibi") && !gb(ac, "alibi", 1))
		return tfm_seterr(TFM_E_UNSUPPORTED, "mpt: attn_config.alibi false is not supported");
	alibi(s, gf(ac, "alibi_bias_max", 8));
	if (ac && gb(ac, "qk_ln", 0))
		s->qk_norm = TFM_QK_NORM_FULL;
	if (ac && has(ac, "softmax_scale"))
		s->attn_scale = (float)gf(ac, "softmax_scale", 0);
	if (ac && has(ac, "clip_qkv"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "mpt: attn_config.clip_qkv is not supported");
	return TFM_OK;
}

static int p_opt(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "opt", "opt");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 50272);
	s->n_embd = gi(c, "hidden_size", 768);
	s->n_layer = gi(c, "num_hidden_layers", 12);
	s->n_head = s->n_head_kv = gi(c, "num_attention_heads", 12);
	s->head_dim = s->n_embd / s->n_head;
	s->n_ff = gi(c, "ffn_dim", 3072);
	s->n_ctx_train = gi(c, "max_position_embeddings", 2048);
	s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = gb(c, "enable_bias", 1);
	s->pos_embd = TFM_POS_EMBD_LEARNED;
	s->pos_offset = 2;
	s->pos_attn = TFM_POS_NONE;
	int pre = gb(c, "do_layer_norm_before", 1);
	s->norm_place = pre ? TFM_NORM_PRE : TFM_NORM_POST;
	s->final_norm = pre && !gb(c, "_remove_final_layer_norm", 0);
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 2);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 1);
	/* word embeddings of another width: project_in after the lookup,
	 * project_out before the (tied) head */
	int64_t io = gi(c, "word_embed_proj_dim", s->n_embd);
	s->n_embd_io = io != s->n_embd ? io : 0;
	return tfm_preset_act(gs(c, "activation_function", "relu"), &s->act);
}

/* SmolLM3: llama with NoPE on every no_rope_layer_interval-th layer. */
static int p_smollm3(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "smollm3", "smollm3");
	int st = tfm_preset_llama_core(s, c, 1e-6, 2000000, 32768);
	s->n_vocab = gi(c, "vocab_size", 128256);
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 11008);
	s->n_layer = gi(c, "num_hidden_layers", 36);
	s->n_head = gi(c, "num_attention_heads", 16);
	s->n_head_kv = gi(c, "num_key_value_heads", 4);
	/* transformers: getattr(config, "head_dim", hidden_size // heads) */
	s->head_dim = s->rope_dims = gi(c, "head_dim", s->n_embd / s->n_head);
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	json_t *nr = gj(c, "no_rope_layers");
	int64_t every = gi(c, "no_rope_layer_interval", 4);
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_rope[i] = rope_layer(nr, i, every);
	/* SmolLM3Config: with use_sliding_window and a sliding_window, the NoPE
	 * layers slide (layer_types, when given, overrides this later) */
	int64_t w = gi(c, "sliding_window", 0);
	if (gb(c, "use_sliding_window", 0) && w > 0) {
		s->window = w;
		for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
			s->layer_window[i] = !s->layer_rope[i];
	}
	return st;
}

static int p_stablelm(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "stablelm", "stablelm");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 4096);
	s->n_vocab = gi(c, "vocab_size", 50304);
	s->n_embd = gi(c, "hidden_size", 2560);
	s->n_ff = gi(c, "intermediate_size", 6912);
	s->n_head_kv = gi(c, "num_key_value_heads", 32); /* StableLmConfig's default, not n_head */
	s->head_dim = s->n_embd / s->n_head;
	s->rope_dims = (int64_t)(s->head_dim * gf(c, "partial_rotary_factor", 0.25));
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 1;
	s->norm_eps = gf(c, "layer_norm_eps", 1e-5);
	s->attn_bias_qkv = gb(c, "use_qkv_bias", 0);
	s->attn_bias_out = 0;
	s->parallel_residual = gb(c, "use_parallel_residual", 0);
	s->shared_attn_ffn_norm = s->parallel_residual;
	if (gb(c, "qk_layernorm", 0))
		return tfm_seterr(TFM_E_UNSUPPORTED, "stablelm: per-head qk_layernorm is not supported");
	return st;
}

/* Cohere (Command-R): one LayerNorm without bias feeding attention and FFN
 * in parallel, interleaved rope, logits scaled by logit_scale. */
static int p_cohere(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "cohere", "command-r");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 8192);
	s->n_vocab = gi(c, "vocab_size", 256000);
	s->n_embd = gi(c, "hidden_size", 8192);
	s->n_ff = gi(c, "intermediate_size", 22528);
	s->n_layer = gi(c, "num_hidden_layers", 40);
	s->n_head = gi(c, "num_attention_heads", 64);
	s->n_head_kv = gi(c, "num_key_value_heads", s->n_head);
	/* transformers: getattr(config, "head_dim", hidden_size // heads) */
	s->head_dim = s->rope_dims = gi(c, "head_dim", s->n_embd / s->n_head);
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 0;
	s->norm_eps = gf(c, "layer_norm_eps", 1e-5);
	s->parallel_residual = s->shared_attn_ffn_norm = 1;
	s->rope_interleaved = 1;
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	s->head_scale = (float)gf(c, "logit_scale", 0.0625);
	if (gb(c, "use_qk_norm", 0))
		return tfm_seterr(TFM_E_UNSUPPORTED, "cohere: use_qk_norm is not supported");
	return st;
}

/* Newer configs spell the attention pattern out: layer_types, one of
 * "full_attention" / "sliding_attention" per layer; it wins over the
 * pattern the preset derived. */
static int layer_types(struct tfm_spec *s, const json_t *c)
{
	json_t *lt = gj(c, "layer_types");
	if (!json_is_array(lt))
		return TFM_OK;
	if ((int64_t)json_array_size(lt) != s->n_layer)
		return tfm_seterr(TFM_E_FORMAT, "layer_types has %zu entries for %lld layers",
				  json_array_size(lt), (long long)s->n_layer);
	int all = 1;
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++) {
		const char *t = json_string_value(json_array_get(lt, i));
		if (!t)
			return tfm_seterr(TFM_E_FORMAT, "layer_types[%lld]: not a string", (long long)i);
		if (!strcmp(t, "sliding_attention") && s->chunk <= 0)
			s->layer_window[i] = 1;
		else if (!strcmp(t, "chunked_attention") && s->chunk > 0)
			s->layer_window[i] = 1;
		else if (!strcmp(t, "chunked_attention") && !strcmp(s->arch, "llama4"))
			/* transformers raises for chunked layers without a chunk size */
			return tfm_seterr(TFM_E_FORMAT, "layer_types[%lld]: chunked_attention "
					  "with attention_chunk_size=null", (long long)i);
		else if (!strcmp(t, "full_attention"))
			s->layer_window[i] = 0;
		else if (!strcmp(t, "linear_attention") && s->layer_kind[i] != TFM_LAYER_ATTN)
			s->layer_window[i] = 0; /* a recurrent layer the preset placed (qwen3_next) */
		else
			return tfm_seterr(TFM_E_UNSUPPORTED, "layer_types: '%s' is not supported", t);
		all &= s->layer_window[i];
	}
	if (s->window <= 0)
		s->window = gi(c, "sliding_window", 0);
	if (s->mask == TFM_MASK_WINDOW && !all)
		s->mask = TFM_MASK_CAUSAL;
	return TFM_OK;
}

static const struct preset {
	const char *type;
	int (*fn)(struct tfm_spec *s, const json_t *c);
} presets[] = {
	{ "llama", p_llama }, { "mistral", p_mistral }, { "mixtral", p_mixtral },
	{ "diffllama", p_diffllama },
	{ "qwen2", p_qwen2 }, { "qwen2_moe", p_qwen2_moe }, { "qwen3", p_qwen3 },
	{ "qwen3_moe", p_qwen3_moe }, { "qwen3_next", p_qwen3_next }, { "gemma", p_gemma }, { "gemma2", p_gemma2 },
	{ "gemma3_text", p_gemma3 }, { "olmo2", p_olmo2 }, { "deepseek_v2", p_deepseek_v2 },
	{ "deepseek_v3", p_deepseek_v3 }, { "phi3", p_phi3 }, { "gpt2", p_gpt2 },
	{ "gpt_neox", p_gpt_neox }, { "bloom", p_bloom }, { "falcon", p_falcon },
	{ "mpt", p_mpt }, { "opt", p_opt }, { "bert", tfm_preset_bert }, { "roberta", tfm_preset_roberta },
	{ "xlm-roberta", tfm_preset_xlm_roberta },
	{ "distilbert", tfm_preset_distilbert }, { "electra", tfm_preset_electra },
	{ "deberta-v2", tfm_preset_deberta_v2 }, { "deberta", tfm_preset_deberta },
	{ "albert", tfm_preset_albert },
	{ "modernbert", tfm_preset_modernbert }, { "t5", tfm_preset_t5 }, { "mt5", tfm_preset_mt5 },
	{ "bart", tfm_preset_bart }, { "mbart", tfm_preset_mbart }, { "marian", tfm_preset_marian },
	{ "mamba", tfm_preset_mamba }, { "falcon_mamba", tfm_preset_falcon_mamba }, { "mamba2", tfm_preset_mamba2 }, { "jamba", tfm_preset_jamba }, { "bamba", tfm_preset_bamba }, { "rwkv", tfm_preset_rwkv },
	{ "xlstm", tfm_preset_xlstm },
	{ "smollm3", p_smollm3 }, { "stablelm", p_stablelm }, { "cohere", p_cohere },
	{ "starcoder2", tfm_preset_starcoder2 }, { "phi", tfm_preset_phi }, { "gptj", tfm_preset_gptj },
	{ "granite", tfm_preset_granite }, { "olmoe", tfm_preset_olmoe }, { "olmo", tfm_preset_olmo },
	{ "llama4_text", tfm_preset_llama4 },
};

static int spec_from_norm(struct tfm_spec *s, const json_t *config, const char *t);

int tfm_spec_from_config(struct tfm_spec *s, const json_t *config)
{
	tfm_spec_init(s);
	if (!json_is_object(config))
		return tfm_seterr(TFM_E_FORMAT, "config.json: not a JSON object");
	const char *t = gs(config, "model_type", NULL);
	if (!t)
		return tfm_seterr(TFM_E_FORMAT, "config.json: no model_type");
	/* gemma3 multimodal configs nest the language model */
	json_t *tc = json_object_get(config, "text_config");
	if (!strcmp(t, "gemma3") && json_is_object(tc)) {
		config = tc;
		t = "gemma3_text";
	}
	/* and Llama 4's (Llama4ForConditionalGeneration): its text model */
	if (!strcmp(t, "llama4") && json_is_object(tc)) {
		config = tc;
		t = "llama4_text";
	}
	json_t *norm = NULL;
	int st = tfm_config_normalize(config, &t, &norm);
	if (st)
		return tfm_adderr(st, "config.json: %s", t);
	st = spec_from_norm(s, norm, t);
	json_decref(norm);
	return st;
}

/* The presets and the generic keys, on a config in the 4.x layout. */
static int spec_from_norm(struct tfm_spec *s, const json_t *config, const char *t)
{
	const struct preset *p = NULL;
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i].type, t))
			p = &presets[i];
	/* speech models: their encoders read audio features tfm does not make */
	static const char *const speech[] = {"whisper", "speech_to_text", "speech-encoder-decoder",
					     "speech_encoder_decoder", "wav2vec2", "wav2vec2-bert",
					     "wav2vec2-conformer", "hubert", "wavlm", "sew", "sew-d",
					     "unispeech", "unispeech-sat", "data2vec-audio",
					     "seamless_m4t", "seamless_m4t_v2", "moonshine",
					     "qwen2_audio", "speecht5", "pop2piano", "musicgen"};
	for (size_t i = 0; !p && i < sizeof speech / sizeof speech[0]; i++)
		if (!strcmp(t, speech[i]))
			return tfm_seterr(TFM_E_UNSUPPORTED, "model_type '%s' is a speech or audio model: "
					  "tfm has no audio front end (log-mel features, a "
					  "convolutional feature encoder)", t);
	if (!p)
		return tfm_seterr(TFM_E_UNSUPPORTED, "model_type '%s' is not supported", t);
	tfm_cfg_track(config);
	/* read by tfm_config_normalize or by this function */
	static const char *const generic[] = {"model_type", "rope_parameters", "rope_interleaved",
					       "max_position_embeddings", "text_config"};
	for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++)
		tfm_cfg_mark(config, generic[i]);
	int st = p->fn(s, config);
	if (st) {
		tfm_cfg_track(NULL);
		return tfm_adderr(st, "%s", t);
	}
	if (s->n_ctx_train <= 0)
		s->n_ctx_train = gi(config, "max_position_embeddings", 0);
	if (gb(config, "rope_interleaved", 0))
		s->rope_interleaved = 1;
	st = layer_types(s, config);
	if (!st)
		st = tfm_cfg_check(config, t);
	tfm_cfg_track(NULL);
	if (st)
		return tfm_adderr(st, "config.json: %s", t);
	/* a rope preset whose dims were never set rotates the whole head */
	if (s->pos_attn == TFM_POS_ROPE && s->rope_dims <= 0)
		s->rope_dims = s->head_dim;
	if (s->pos_attn != TFM_POS_ROPE) {
		for (int64_t i = 0; i < tfm_spec_n_layers(s); i++)
			s->layer_rope[i] = 0;
	}
	st = tfm_spec_validate(s);
	if (st)
		return tfm_adderr(st, "config.json");
	return TFM_OK;
}
