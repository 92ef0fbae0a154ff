/* presets-impl.h: what the preset files share: config.json getters (a
 * missing key or a JSON null gives the default) and the helpers and presets
 * that presets.c's table names.  Private to lib/spec. */
#ifndef TFM_PRESETS_IMPL_H
#define TFM_PRESETS_IMPL_H

#include "spec-impl.h"
#include "config-keys.h"

#include <math.h>
#include <string.h>

/* Getters: a missing key or a JSON null gives the default.  Each records
 * that the preset read the key (config-check.c refuses unread math keys). */
static inline json_t *gj(const json_t *c, const char *k)
{
	tfm_cfg_mark(c, k);
	return json_object_get(c, k);
}
/* Infinity, -Infinity, NaN: the strings config.json's bare tokens became
 * (config-json.c, as transformers 4 writes them), or transformers 5's
 * {"__float__": "Infinity"}; 1 and *x set when v is one */
static inline int nonfinite(const json_t *v, double *x)
{
	if (json_is_object(v) && json_object_size(v) == 1)
		v = json_object_get(v, "__float__");
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	if (!s)
		return 0;
	*x = !strcmp(s, "Infinity") ? INFINITY : !strcmp(s, "-Infinity") ? -INFINITY
	     : !strcmp(s, "NaN") ? NAN : 0;
	return *x != 0 || isnan(*x);
}
/* A JSON number or a non-finite one as above: 1 and *x set */
static inline int jnum(const json_t *v, double *x)
{
	if (nonfinite(v, x))
		return 1;
	*x = json_number_value(v);
	return json_is_number(v);
}
static inline int64_t gi(const json_t *c, const char *k, int64_t d)
{
	json_t *v = gj(c, k);
	double x;
	if (nonfinite(v, &x)) /* no integer: out of every range check */
		return isnan(x) || x > 0 ? INT64_MAX : INT64_MIN;
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v)) { /* out of int64's range: no integer (the cast would be UB) */
		double r = json_real_value(v);
		return r >= 9.2e18 ? INT64_MAX : r <= -9.2e18 ? INT64_MIN : (int64_t)r;
	}
	if (json_is_boolean(v))
		return json_is_true(v);
	return d;
}
static inline double gf(const json_t *c, const char *k, double d)
{
	json_t *v = gj(c, k);
	double x;
	if (nonfinite(v, &x))
		return x;
	return json_is_number(v) ? json_number_value(v) : d;
}
static inline int gb(const json_t *c, const char *k, int d)
{
	json_t *v = gj(c, k);
	if (json_is_boolean(v))
		return json_is_true(v);
	if (json_is_integer(v))
		return json_integer_value(v) != 0;
	return d;
}
static const char *gs(const json_t *c, const char *k, const char *d)
{
	json_t *v = gj(c, k);
	return json_is_string(v) ? json_string_value(v) : d;
}
/* The key is present with a JSON null (None in transformers: for some keys
 * that means "off", not the class default). */
static inline int gnull(const json_t *c, const char *k)
{
	json_t *v = gj(c, k);
	return v && json_is_null(v);
}
static inline int has(const json_t *c, const char *k)
{
	json_t *v = gj(c, k);
	return v && !json_is_null(v);
}

static inline void set_arch(struct tfm_spec *s, const char *arch, const char *gguf)
{
	snprintf(s->arch, sizeof(s->arch), "%s", arch);
	snprintf(s->gguf_arch, sizeof(s->gguf_arch), "%s", gguf);
}

static inline void all_layers(uint8_t *a, int64_t n, int v)
{
	for (int64_t i = 0; i < n && i < TFM_MAX_LAYERS; i++)
		a[i] = (uint8_t)v;
}

/* Per-layer patterns as configs give them.  layer_listed: layer i is in an
 * index list (moe_layers, mlp_only_layers); every_kth: i is the k-th, 2k-th,
 * ... layer (decoder_sparse_step, interleave_moe_layer_step; k <= 0: none). */
static inline int layer_listed(const json_t *list, int64_t i)
{
	size_t j;
	json_t *v;
	json_array_foreach(list, j, v)
		if (json_integer_value(v) == i)
			return 1;
	return 0;
}

static inline int every_kth(int64_t i, int64_t k)
{
	return k > 0 && (i + 1) % k == 0;
}

/* RoPE on layer i: entry i of a no_rope_layers flag list (1 or true: RoPE)
 * where it has one, else all but every k-th layer (k <= 0: all). */
static inline int rope_layer(const json_t *flags, int64_t i, int64_t k)
{
	if (json_is_array(flags) && (size_t)i < json_array_size(flags)) {
		json_t *v = json_array_get(flags, (size_t)i);
		return json_is_true(v) || json_integer_value(v) != 0;
	}
	return !every_kth(i, k);
}

/* Activation names of transformers' ACT2FN. */
int tfm_preset_act(const char *name, int *act);
/* config-norm.c: a copy of config.json in the 4.x layout (*type may change:
 * RefinedWeb -> falcon). */
int tfm_config_normalize(const json_t *in, const char **type, json_t **out);
/* GPT-2 style: LayerNorm with bias, biases everywhere, ungated FFN. */
void tfm_preset_layernorm_biased(struct tfm_spec *s);
/* The llama family core: sizes, GQA, head_dim, rope, RMSNorm, gated SiLU. */
int tfm_preset_llama_core(struct tfm_spec *s, const json_t *c, double eps_dflt, double theta_dflt,
		      int64_t ctx_dflt);

/* presets-other.c: encoders, encoder-decoders, state-space and RWKV. */
int tfm_preset_bert(struct tfm_spec *s, const json_t *c);
int tfm_preset_starcoder2(struct tfm_spec *s, const json_t *c);
int tfm_preset_phi(struct tfm_spec *s, const json_t *c);
int tfm_preset_gptj(struct tfm_spec *s, const json_t *c);
int tfm_preset_granite(struct tfm_spec *s, const json_t *c);
int tfm_preset_olmoe(struct tfm_spec *s, const json_t *c);
int tfm_preset_llama4(struct tfm_spec *s, const json_t *c);
int tfm_preset_olmo(struct tfm_spec *s, const json_t *c);
int tfm_preset_roberta(struct tfm_spec *s, const json_t *c);
int tfm_preset_xlm_roberta(struct tfm_spec *s, const json_t *c);
int tfm_preset_distilbert(struct tfm_spec *s, const json_t *c);
int tfm_preset_electra(struct tfm_spec *s, const json_t *c);
int tfm_preset_deberta_v2(struct tfm_spec *s, const json_t *c);
int tfm_preset_deberta(struct tfm_spec *s, const json_t *c);
int tfm_preset_albert(struct tfm_spec *s, const json_t *c);
int tfm_preset_modernbert(struct tfm_spec *s, const json_t *c);
int tfm_preset_t5(struct tfm_spec *s, const json_t *c);
int tfm_preset_mt5(struct tfm_spec *s, const json_t *c);
int tfm_preset_mbart(struct tfm_spec *s, const json_t *c);
int tfm_preset_marian(struct tfm_spec *s, const json_t *c);
int tfm_preset_bart(struct tfm_spec *s, const json_t *c);
int tfm_preset_mamba(struct tfm_spec *s, const json_t *c);
int tfm_preset_falcon_mamba(struct tfm_spec *s, const json_t *c);
int tfm_preset_mamba2(struct tfm_spec *s, const json_t *c);
int tfm_preset_jamba(struct tfm_spec *s, const json_t *c);
int tfm_preset_bamba(struct tfm_spec *s, const json_t *c);
int tfm_preset_rwkv(struct tfm_spec *s, const json_t *c);
int tfm_preset_xlstm(struct tfm_spec *s, const json_t *c); /* presets-xlstm.c */

#endif
