/* config-norm.c: one layout for config.json before the presets read it.
 * transformers 5 writes RoPE settings into a `rope_parameters` object (one
 * object, or one per layer type), renames some keys (attribute_map aliases
 * such as qwen3_moe's num_local_experts) and moved GPT-NeoX's rotary_pct /
 * rotary_emb_base into that object.  The presets read the 4.x layout; this
 * file rewrites a copy of a 5.x config into it, following the priorities of
 * transformers' RotaryEmbeddingConfigMixin, and refuses what it cannot map
 * (a RoPE setting per layer type that the model has no knob for, a key
 * inside rope_parameters that tfm does not implement). */
#include "spec-impl.h"
#include "presets-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Keys of a rope_parameters object that the presets' rope_scaling() honours.
 * Anything else inside it changes the math in a way tfm does not implement. */
static const char *const rope_keys[] = {
	"rope_type", "type", "rope_theta", "partial_rotary_factor", "factor",
	"original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
	"short_factor", "long_factor", "low_freq_factor", "high_freq_factor", "mscale",
	"mscale_all_dim", "truncate", NULL,
};

/* attribute_map aliases of transformers' configuration classes: the name the
 * preset reads, and the other name a config.json may carry (5.x saves the
 * right-hand name for qwen3_moe; hand-written configs use either). */
static const struct alias {
	const char *type, *canon, *other;
} aliases[] = {
	{ "qwen3_moe", "num_experts", "num_local_experts" },
	{ "mixtral", "num_local_experts", "num_experts" },
	{ "deepseek_v2", "n_routed_experts", "num_experts" },
	{ "deepseek_v3", "n_routed_experts", "num_local_experts" },
	{ "deepseek_v3", "num_nextn_predict_layers", "num_mtp_layers" },
	{ "gpt2", "n_embd", "hidden_size" },
	{ "gpt2", "n_positions", "max_position_embeddings" },
	{ "gpt2", "n_head", "num_attention_heads" },
	{ "gpt2", "n_layer", "num_hidden_layers" },
	{ "bloom", "n_layer", "num_hidden_layers" },
	{ "bloom", "n_head", "num_attention_heads" },
	{ "mpt", "n_heads", "num_attention_heads" },
	{ "mpt", "d_model", "hidden_size" },
	{ "mpt", "n_layers", "num_hidden_layers" },
	{ "falcon", "num_hidden_layers", "n_layer" },
	{ "falcon", "num_attention_heads", "n_head" },
	{ "falcon", "num_kv_heads", "num_key_value_heads" },
	{ "falcon", "num_kv_heads", "n_head_kv" },
	{ "falcon", "hidden_size", "n_embed" },
};

/* The original Falcon configs (tiiuae's configuration_RW.py, before
 * transformers had a Falcon class): RefinedWebModel is Falcon-7B's layout,
 * RefinedWeb Falcon-40B's (transformers' new_decoder_architecture).  Their
 * RWConfig defaults differ from FalconConfig's: multi_query and
 * parallel_attn default to false there. */
static int refined_web(json_t *c, const char **type)
{
	int big = !strcmp(*type, "RefinedWeb");
	if (!big && strcmp(*type, "RefinedWebModel"))
		return TFM_OK;
	*type = "falcon";
	json_object_set_new(c, "model_type", json_string("falcon"));
	if (!has(c, "vocab_size"))
		json_object_set_new(c, "vocab_size", json_integer(250880));
	if (big) {
		json_object_set_new(c, "new_decoder_architecture", json_true());
	} else {
		if (!has(c, "multi_query"))
			json_object_set_new(c, "multi_query", json_false());
		if (!has(c, "parallel_attn"))
			json_object_set_new(c, "parallel_attn", json_false());
	}
	return TFM_OK;
}

static int same_json(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal((json_t *)a, (json_t *)b);
}

static int apply_aliases(json_t *c, const char *type)
{
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		const struct alias *a = &aliases[i];
		if (strcmp(a->type, type))
			continue;
		json_t *o = json_object_get(c, a->other), *k = json_object_get(c, a->canon);
		if (!o || json_is_null(o))
			continue;
		if (k && !json_is_null(k) && !same_json(k, o))
			return tfm_seterr(TFM_E_FORMAT, "%s and %s (the same setting) disagree",
					  a->canon, a->other);
		json_object_set(c, a->canon, o);
		json_object_del(c, a->other); /* one name from here on */
	}
	return TFM_OK;
}

/* Check one rope_parameters object's keys. */
static int rope_obj_keys(const json_t *r, const char *where)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)r, k, v) {
		int ok = 0;
		for (const char *const *p = rope_keys; *p && !ok; p++)
			ok = !strcmp(*p, k);
		if (!ok)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s.%s is not supported", where, k);
	}
	json_t *t = json_object_get(r, "truncate");
	if (t && !json_is_null(t) && !json_is_true(t))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s.truncate=false is not supported", where);
	return TFM_OK;
}

static const char *rope_type(const json_t *r)
{
	return gs(r, "rope_type", gs(r, "type", "default"));
}

/* Copy one flat rope_parameters object into the 4.x keys: rope_theta,
 * partial_rotary_factor at the top level, and rope_scaling when the type
 * scales. */
static int apply_flat(json_t *c, const json_t *r, const char *type, const char *where)
{
	int st = rope_obj_keys(r, where);
	if (st)
		return st;
	json_t *theta = json_object_get(r, "rope_theta");
	if (json_is_number(theta)) {
		json_object_set(c, "rope_theta", theta);
		if (!strcmp(type, "gpt_neox"))
			json_object_set(c, "rotary_emb_base", theta);
	}
	json_t *prf = json_object_get(r, "partial_rotary_factor");
	if (json_is_number(prf)) {
		json_object_set(c, "partial_rotary_factor", prf);
		if (!strcmp(type, "gpt_neox"))
			json_object_set(c, "rotary_pct", prf);
	}
	json_t *old = json_object_get(c, "rope_scaling");
	if (strcmp(rope_type(r), "default")) {
		/* transformers: rope_scaling, when also given, replaces the object */
		if (json_is_object(old) && strcmp(rope_type(old), rope_type(r)))
			return tfm_seterr(TFM_E_FORMAT, "rope_scaling (%s) and %s (%s) disagree",
					  rope_type(old), where, rope_type(r));
		if (!json_is_object(old))
			json_object_set_new(c, "rope_scaling", json_deep_copy(r));
	} else if (json_is_object(old) && strcmp(rope_type(old), "default")) {
		return tfm_seterr(TFM_E_FORMAT, "rope_scaling (%s) and %s (default) disagree",
				  rope_type(old), where);
	}
	return TFM_OK;
}

/* The per-layer-type form: {"full_attention": {...}, "sliding_attention":
 * {...}}.  The global layers' object is the model's RoPE; a sliding layers'
 * object may differ only in rope_theta, and only for a model whose preset
 * reads a local base (gemma3: rope_local_base_freq; modernbert: local_rope_theta). */
static int apply_nested(json_t *c, json_t *rp, const char *type)
{
	const char *k;
	json_t *v;
	json_object_foreach(rp, k, v) {
		if (strcmp(k, "full_attention") && strcmp(k, "sliding_attention"))
			return tfm_seterr(TFM_E_UNSUPPORTED, "rope_parameters.%s: RoPE for layer type "
					  "'%s' is not supported", k, k);
		if (!json_is_object(v))
			return tfm_seterr(TFM_E_UNSUPPORTED, "rope_parameters.%s: a layer type "
					  "without RoPE is not supported here", k);
	}
	json_t *full = json_object_get(rp, "full_attention");
	json_t *slide = json_object_get(rp, "sliding_attention");
	json_t *main = full ? full : slide;
	int st = apply_flat(c, main, type, full ? "rope_parameters.full_attention"
						: "rope_parameters.sliding_attention");
	if (st || !full || !slide)
		return st;
	st = rope_obj_keys(slide, "rope_parameters.sliding_attention");
	if (st)
		return st;
	if (strcmp(rope_type(slide), "default"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "rope_parameters.sliding_attention.rope_type=%s "
				  "is not supported", rope_type(slide));
	double pf = gf(full, "partial_rotary_factor", 1), ps = gf(slide, "partial_rotary_factor", 1);
	if (pf != ps)
		return tfm_seterr(TFM_E_UNSUPPORTED, "rope_parameters: partial_rotary_factor differs "
				  "between layer types (%g, %g)", pf, ps);
	double tf = gf(full, "rope_theta", gf(c, "rope_theta", 10000));
	double ts = gf(slide, "rope_theta", tf);
	if (!strcmp(type, "gemma3_text")) {
		json_object_set_new(c, "rope_local_base_freq", json_real(ts));
		return TFM_OK;
	}
	if (!strcmp(type, "modernbert")) { /* 4.x: global_rope_theta, local_rope_theta */
		json_object_set_new(c, "global_rope_theta", json_real(tf));
		json_object_set_new(c, "local_rope_theta", json_real(ts));
		return TFM_OK;
	}
	if (tf != ts)
		return tfm_seterr(TFM_E_UNSUPPORTED, "rope_parameters: a separate rope_theta for "
				  "sliding layers (%g, global %g) is not supported for %s", ts, tf, type);
	return TFM_OK;
}

/* Sizes every preset divides by or allocates from: a number given for one
 * of them must be a whole number in [1, 2^31) before any arithmetic (a
 * config with num_attention_heads 0 crashed with SIGFPE). */
static const char *const sizes[] = {
	"num_attention_heads", "n_head", "n_heads", "num_key_value_heads", "num_kv_heads",
	"n_head_kv", "hidden_size", "n_embd", "n_embed", "d_model", "num_hidden_layers", "n_layer",
	"n_layers", "num_layers", "vocab_size", "head_dim", "intermediate_size", "ffn_dim", "n_inner",
	"d_ff", "ffn_hidden_size", "max_position_embeddings", "n_positions", "max_seq_len",
	"num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok",
	"moe_intermediate_size", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
	"v_head_dim", "word_embed_proj_dim", "rotary_dim", "n_group", "topk_group", "num_heads",
	"d_kv", "num_decoder_layers", "encoder_layers", "decoder_layers", "encoder_attention_heads",
	"decoder_attention_heads", "state_size", "conv_kernel", "expand", "intermediate_size_mlp",
	"attention_chunk_size", "floor_scale", "interleave_moe_layer_step", "no_rope_layer_interval",
	/* jamba, bamba (mamba_dt_rank and mamba_d_head may be "auto") */
	"mamba_expand", "mamba_d_state", "mamba_d_conv", "mamba_n_heads", "mamba_n_groups",
	"mamba_chunk_size", "attn_layer_period", "expert_layer_period",
	/* qwen3_next's Gated DeltaNet */
	"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
	"linear_value_head_dim", "linear_conv_kernel_dim", "full_attention_interval",
	/* xlstm */
	"ffn_round_up_to_multiple_of", "num_blocks", "embedding_dim",
	NULL,
};

static const char *const counts[] = {
	"n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace",
	"moe_layer_freq", "decoder_sparse_step", "sliding_window", "max_window_layers",
	"num_experts_per_tok", "attn_layer_offset", "expert_layer_offset", NULL,
};

static int check_sizes(const json_t *c)
{
	for (const char *const *k = sizes; *k; k++) {
		json_t *v = json_object_get(c, *k);
		if (!v || json_is_null(v))
			continue;
		double x = json_is_number(v) ? json_number_value(v) : -1;
		if (!json_is_number(v) || !(x >= 1 && x < 2147483648.0) || x != floor(x)) {
			char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			int st = tfm_seterr(TFM_E_FORMAT, "%s=%.40s is out of range (a whole number "
					    "from 1 to 2^31-1)", *k, txt ? txt : "?");
			free(txt);
			return st;
		}
	}
	/* counts that may be 0 (no shared experts, no dense layers first) */
	for (const char *const *k = counts; *k; k++) {
		json_t *v = json_object_get(c, *k);
		if (!v || json_is_null(v))
			continue;
		double x = json_is_number(v) ? json_number_value(v) : -1;
		if (!json_is_number(v) || !(x >= 0 && x < 2147483648.0) || x != floor(x))
			return tfm_seterr(TFM_E_FORMAT, "%s is out of range (a whole number from 0 "
					  "to 2^31-1)", *k);
	}
	/* and no integer anywhere at the top level that arithmetic in int64
	 * could overflow with: every count, id and size fits in 31 bits
	 * (RoPE bases are real numbers, whatever way they are written) */
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)c, k, v)
		if (json_is_integer(v) && !strstr(k, "theta") && !strstr(k, "base") &&
		    (json_integer_value(v) >= ((json_int_t)1 << 31) ||
		     json_integer_value(v) <= -((json_int_t)1 << 31)))
			return tfm_seterr(TFM_E_FORMAT, "%s=%" JSON_INTEGER_FORMAT " is out of range "
					  "(beyond 2^31)", k, json_integer_value(v));
	return TFM_OK;
}

int tfm_config_normalize(const json_t *in, const char **typep, json_t **out)
{
	*out = NULL;
	json_t *c = json_deep_copy((json_t *)in);
	if (!c)
		return TFM_E_NOMEM;
	int st = check_sizes(c);
	if (!st)
		st = refined_web(c, typep);
	const char *type = *typep;
	if (!st)
		st = apply_aliases(c, type);
	json_t *rp = json_object_get(c, "rope_parameters");
	if (!st && rp && !json_is_null(rp)) {
		if (!json_is_object(rp)) {
			st = tfm_seterr(TFM_E_FORMAT, "rope_parameters: not an object");
		} else {
			int nested = 0;
			const char *k;
			json_t *v;
			json_object_foreach(rp, k, v)
				nested |= json_is_object(v) || json_is_null(v);
			st = nested ? apply_nested(c, rp, type)
				    : apply_flat(c, rp, type, "rope_parameters");
		}
	}
	/* transformers 5 lets gemma-family decoders attend both ways */
	if (!st && gb(c, "use_bidirectional_attention", 0))
		st = tfm_seterr(TFM_E_UNSUPPORTED, "use_bidirectional_attention=true is not supported");
	if (st) {
		json_decref(c);
		return st;
	}
	*out = c;
	return TFM_OK;
}
