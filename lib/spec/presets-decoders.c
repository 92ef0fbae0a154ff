/* presets-decoders.c: decoder types added after the first set (starcoder2,
 * phi, gptj, granite, olmoe).  As in presets.c: field names and defaults
 * from transformers' configuration_<type>.py; every key that changes the
 * math is read here or refused by config-check.c. */
#include "spec-impl.h"
#include "presets-impl.h"

#include <math.h>
#include <string.h>

/* StarCoder2: GQA, RoPE, LayerNorm with bias, ungated MLP c_fc/c_proj,
 * biases per use_bias, optional sliding window. */
int tfm_preset_starcoder2(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "starcoder2", "starcoder2");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 4096);
	s->n_vocab = gi(c, "vocab_size", 49152);
	s->n_embd = gi(c, "hidden_size", 3072);
	s->n_ff = gi(c, "intermediate_size", 12288);
	s->n_layer = gi(c, "num_hidden_layers", 30);
	s->n_head = gi(c, "num_attention_heads", 24);
	s->n_head_kv = gi(c, "num_key_value_heads", 2);
	s->head_dim = s->rope_dims = s->n_head ? s->n_embd / s->n_head : 0;
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 1;
	s->norm_eps = gf(c, "norm_epsilon", 1e-5);
	s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = gb(c, "use_bias", 1);
	s->gated = 0;
	s->tied_output = gb(c, "tie_word_embeddings", 1);
	int64_t w = gi(c, "sliding_window", 0);
	if (w > 0) {
		s->window = w;
		s->mask = TFM_MASK_WINDOW;
		for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
			s->layer_window[i] = 1;
	}
	if (!st)
		st = tfm_preset_act(gs(c, "hidden_act", "gelu_pytorch_tanh"), &s->act);
	return st;
}

/* Phi-1/1.5/2: parallel attention and MLP from one LayerNorm, partial
 * rotary (half-split), biases everywhere, an LM head with a bias. */
int tfm_preset_phi(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "phi", "phi2");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 2048);
	s->n_vocab = gi(c, "vocab_size", 51200);
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 8192);
	s->n_layer = gi(c, "num_hidden_layers", 24);
	s->n_head = gi(c, "num_attention_heads", 32);
	s->n_head_kv = gi(c, "num_key_value_heads", s->n_head);
	s->head_dim = s->n_head ? s->n_embd / s->n_head : 0;
	s->rope_dims = (int64_t)(s->head_dim * gf(c, "partial_rotary_factor", 0.5));
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 1;
	s->norm_eps = gf(c, "layer_norm_eps", 1e-5);
	s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = 1;
	s->gated = 0;
	s->parallel_residual = s->shared_attn_ffn_norm = 1;
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->head_bias = 1;
	if (gb(c, "qk_layernorm", 0))
		return tfm_seterr(TFM_E_UNSUPPORTED, "phi: qk_layernorm=true is not supported");
	if (!st)
		st = tfm_preset_act(gs(c, "hidden_act", "gelu_new"), &s->act);
	return st;
}

/* GPT-J: parallel attention and MLP from one LayerNorm, rotary on the
 * first rotary_dim dims of each head with pairs (2i, 2i+1), no attention
 * biases, MLP and LM head with biases. */
int tfm_preset_gptj(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "gptj", "gptj");
	tfm_preset_layernorm_biased(s);
	s->n_vocab = gi(c, "vocab_size", 50400);
	s->n_embd = gi(c, "n_embd", 4096);
	s->n_layer = gi(c, "n_layer", 28);
	s->n_head = s->n_head_kv = gi(c, "n_head", 16);
	s->head_dim = s->n_head ? s->n_embd / s->n_head : 0;
	s->n_ff = gi(c, "n_inner", 4 * s->n_embd);
	s->n_ctx_train = gi(c, "n_positions", 2048);
	s->norm_eps = gf(c, "layer_norm_epsilon", 1e-5);
	s->attn_bias_qkv = s->attn_bias_out = 0;
	s->pos_attn = TFM_POS_ROPE;
	s->rope_theta = 10000;
	s->rope_dims = gi(c, "rotary_dim", 64);
	if (gnull(c, "rotary_dim"))
		s->rope_dims = s->head_dim; /* GPT-J: rotary_dim None rotates the whole head */
	s->rope_interleaved = 1;
	s->parallel_residual = s->shared_attn_ffn_norm = 1;
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	s->head_bias = 1;
	return tfm_preset_act(gs(c, "activation_function", "gelu_new"), &s->act);
}

/* Granite: llama with four multipliers. */
int tfm_preset_granite(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "granite", "granite");
	int st = tfm_preset_llama_core(s, c, 1e-6, 10000, 2048);
	s->embd_scale = (float)gf(c, "embedding_multiplier", 1.0);
	s->residual_scale = (float)gf(c, "residual_multiplier", 1.0);
	s->attn_scale = (float)gf(c, "attention_multiplier", 1.0);
	double ls = gf(c, "logits_scaling", 1.0);
	if (!(ls > 0))
		return tfm_seterr(TFM_E_FORMAT, "granite: logits_scaling=%g", ls);
	s->head_scale = (float)(1.0 / ls);
	return st;
}

/* OLMo (v1): llama blocks with non-parametric LayerNorms (no weight, no
 * bias, eps 1e-5), clip_qkv refused. */
int tfm_preset_olmo(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "olmo", "olmo");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 2048);
	s->n_vocab = gi(c, "vocab_size", 50304);
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 0;
	s->norm_no_affine = 1;
	s->norm_eps = 1e-5; /* OlmoLayerNorm's fixed eps */
	if (!gnull(c, "clip_qkv") && has(c, "clip_qkv"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "olmo: clip_qkv is not supported");
	return st;
}

/* OLMoE: llama-like blocks, q/k RMSNorm over all heads, MoE without shared
 * experts; clip_qkv refused. */
int tfm_preset_olmoe(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "olmoe", "olmoe");
	int st = tfm_preset_llama_core(s, c, 1e-5, 10000, 4096);
	s->n_vocab = gi(c, "vocab_size", 50304);
	s->n_embd = gi(c, "hidden_size", 2048);
	s->n_ff = gi(c, "intermediate_size", 2048);
	s->n_layer = gi(c, "num_hidden_layers", 16);
	s->n_head = gi(c, "num_attention_heads", 16);
	s->n_head_kv = gi(c, "num_key_value_heads", s->n_head);
	s->head_dim = s->rope_dims = s->n_head ? s->n_embd / s->n_head : 0;
	s->qk_norm = TFM_QK_NORM_FULL;
	s->n_expert = gi(c, "num_experts", 64);
	s->n_expert_used = gi(c, "num_experts_per_tok", 8);
	s->n_ff_expert = s->n_ff;
	s->moe_norm_topk = gb(c, "norm_topk_prob", 0);
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
		s->layer_moe[i] = 1;
	if (!gnull(c, "clip_qkv") && has(c, "clip_qkv"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "olmoe: clip_qkv is not supported");
	return st;
}

/* Llama 4's text model (Llama4TextConfig; a Llama4Config's text_config):
 * RoPE on the layers no_rope_layers marks 1 (default: all but every
 * no_rope_layer_interval-th), applied to interleaved pairs as its complex
 * form does; on them chunked attention (layer_types, default: the RoPE
 * layers) and, with use_qk_norm, an RMS norm without weight on each head
 * of q and k; on NoPE layers, with attn_temperature_tuning, the queries'
 * temperature tuning.  MoE layers (moe_layers, default every
 * interleave_moe_layer_step-th) route each token to the top num_experts_per_tok
 * experts by a sigmoid of the router logits, which scales the expert's
 * input, and add a shared expert; the other layers are dense with
 * intermediate_size_mlp.  attention_bias is forced off by the class. */
int tfm_preset_llama4(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "llama4", "llama4");
	int st = tfm_preset_llama_core(s, c, 1e-5, 500000, 131072);
	if (st)
		return st;
	s->n_vocab = gi(c, "vocab_size", 202048);
	s->n_embd = gi(c, "hidden_size", 5120);
	s->n_layer = gi(c, "num_hidden_layers", 48);
	s->n_head = gi(c, "num_attention_heads", 40);
	s->n_head_kv = gnull(c, "num_key_value_heads") ? s->n_head : gi(c, "num_key_value_heads", 8);
	/* head_dim: None means hidden_size / heads */
	s->head_dim = s->rope_dims = gnull(c, "head_dim") ? s->n_embd / s->n_head
							  : gi(c, "head_dim", 128);
	s->n_ff = gi(c, "intermediate_size_mlp", 16384);
	s->n_ff_expert = s->n_ff_shared = gi(c, "intermediate_size", 8192);
	s->attn_bias_qkv = s->attn_bias_out = 0;
	tfm_cfg_mark(c, "attention_bias");
	s->rope_interleaved = 1;
	/* Llama4TextRotaryEmbedding: llama3 whenever rope_scaling is given */
	json_t *rs = gj(c, "rope_scaling");
	if (json_is_object(rs) && s->rope_scaling != TFM_ROPE_SCALE_LLAMA3)
		return tfm_seterr(TFM_E_UNSUPPORTED, "llama4: rope_scaling type '%s' (transformers "
				  "runs llama3 scaling for any rope_scaling)",
				  gs(rs, "rope_type", gs(rs, "type", "?")));
	s->n_expert = gi(c, "num_local_experts", 16);
	s->n_expert_used = gi(c, "num_experts_per_tok", 1);
	s->n_expert_shared = 1;
	s->moe_gate = TFM_MOE_GATE_SIGMOID;
	s->moe_weight_in = 1;
	int64_t step = gi(c, "interleave_moe_layer_step", 1);
	s->moe_every = step;
	json_t *ml = gj(c, "moe_layers"), *nr = gj(c, "no_rope_layers");
	if (json_is_array(nr) && json_array_size(nr) == 0)
		nr = NULL; /* transformers: [] means the default */
	int64_t every = gi(c, "no_rope_layer_interval", 4);
	if (json_is_array(nr) && (int64_t)json_array_size(nr) != s->n_layer)
		return tfm_seterr(TFM_E_FORMAT, "llama4: no_rope_layers has %zu entries for %lld "
				  "layers", json_array_size(nr), (long long)s->n_layer);
	int chunked = 0;
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++) {
		s->layer_moe[i] = json_is_array(ml) ? layer_listed(ml, i) : every_kth(i, step);
		s->layer_rope[i] = every > 0 || json_is_array(nr) ? rope_layer(nr, i, every) : 0;
		/* layer_types, when given, overrides this (presets.c, which also
		 * refuses its chunked layers without a chunk size) */
		s->layer_window[i] = s->layer_rope[i];
		chunked |= s->layer_window[i];
	}
	/* transformers raises for chunked layers without a chunk size */
	if (gnull(c, "attention_chunk_size") && chunked && !json_is_array(gj(c, "layer_types")))
		return tfm_seterr(TFM_E_FORMAT, "llama4: chunked attention layers with "
				  "attention_chunk_size=null");
	s->chunk = gnull(c, "attention_chunk_size") ? 0 : gi(c, "attention_chunk_size", 8192);
	s->qk_norm = gb(c, "use_qk_norm", 1) ? TFM_QK_NORM_ROPE_RMS : TFM_QK_NORM_NONE;
	if (gb(c, "attn_temperature_tuning", 1)) {
		s->attn_temp_scale = (float)gf(c, "attn_scale", 0.1);
		s->attn_temp_floor = gi(c, "floor_scale", 8192);
	}
	tfm_cfg_mark(c, "attn_scale");
	tfm_cfg_mark(c, "floor_scale");
	return TFM_OK;
}
