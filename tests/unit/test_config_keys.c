/* test_config_keys.c: honour or refuse, walked over the tables.  For every
 * model type with a key table (lib/spec/config-keys.c, generated from
 * transformers' configuration classes) and every key of it: a config that
 * sets the key to a value other than the class default is either refused,
 * or accepted only when the preset read the key (it implements it), or the
 * key is listed as leaving the forward pass unchanged.  The fixtures
 * (test_model_real) check that what is implemented matches transformers. */
#include "t.h"
#include "spec/spec-impl.h"
#include "spec/config-keys.h"

#include <jansson.h>

/* A value other than the default d (JSON), or NULL for structured keys. */
static json_t *other_value(const char *d)
{
	json_t *j = json_loads(d, JSON_DECODE_ANY, NULL), *o = NULL;
	if (!j)
		return NULL;
	if (json_is_boolean(j))
		o = json_boolean(!json_is_true(j));
	else if (json_is_integer(j))
		o = json_integer(json_integer_value(j) == 2 ? 3 : 2);
	else if (json_is_real(j))
		o = json_real(json_real_value(j) * 0.5 + 0.125);
	else if (json_is_string(j))
		o = json_string("tfm-test-value");
	else if (json_is_null(j))
		o = json_integer(2);
	json_decref(j);
	return o;
}

static void walk(const char *type, const struct tfm_cfg_key *tab, int *n_read, int *n_refused,
		 int *n_inert, int *n_struct, char *names, size_t cap)
{
	for (const struct tfm_cfg_key *k = tab; k->key; k++) {
		const char *why;
		if (!strcmp(k->key, "model_type"))
			continue;
		if (tfm_cfg_inert(k->key, &why)) {
			(*n_inert)++;
			continue;
		}
		json_t *v = other_value(k->dflt);
		if (!v) {
			(*n_struct)++; /* lists and objects: rope_scaling & co. have their own tests */
			continue;
		}
		json_t *c = json_pack("{ss}", "model_type", type);
		json_object_set_new(c, k->key, v);
		struct tfm_spec s;
		int st = tfm_spec_from_config(&s, c);
		if (st) {
			(*n_refused)++;
			/* names: the keys refused for being unimplemented (a key the
			 * preset read was refused for this value only) */
			if (names && !tfm_cfg_was_read(k->key) &&
			    strlen(names) + strlen(k->key) + 2 < cap)
				strcat(strcat(names, " "), k->key);
			CHECK_MSG(st == TFM_E_UNSUPPORTED || st == TFM_E_FORMAT, "%s.%s: %s", type,
				  k->key, tfm_strstatus(st));
		} else {
			(*n_read)++;
			CHECK_MSG(tfm_cfg_was_read(k->key), "%s: %s=%s accepted but never read", type,
				  k->key, json_dumps(v, JSON_ENCODE_ANY));
		}
		json_decref(c);
	}
}

static void t_tables(void)
{
	int types = 0;
	for (const struct tfm_cfg_keys *t = tfm_cfg_keys; t->type; t++, types++) {
		int r = 0, x = 0, i = 0, st = 0;
		char names[1024] = "";
		json_t *c = json_pack("{ss}", "model_type", t->type);
		struct tfm_spec s;
		CHECK_MSG(tfm_spec_from_config(&s, c) == TFM_OK, "%s: defaults: %s", t->type,
			  tfm_errmsg());
		json_decref(c);
		walk(t->type, t->keys, &r, &x, &i, &st, names, sizeof names);
		walk(t->type, tfm_cfg_common, &r, &x, &i, &st, NULL, 0);
		fprintf(stderr, "  %-12s implemented %2d, refused %2d, inert %2d, structured %d;"
			" unimplemented, refused:%s\n", t->type, r, x, i, st, names);
		CHECK(r > 3);
	}
	CHECK(types >= 20);
}

/* A missing key takes transformers' class default: for every type, the
 * spec of {model_type} alone, and of the config with every key of the class
 * at its default but one, equal the spec of the config with all of them. */
static json_t *all_defaults(const char *type, const struct tfm_cfg_key *tab)
{
	json_t *c = json_pack("{ss}", "model_type", type);
	const struct tfm_cfg_key *tabs[] = {tfm_cfg_common, tab};
	for (int i = 0; i < 2; i++)
		for (const struct tfm_cfg_key *k = tabs[i]; k->key; k++)
			/* rope_parameters (5.x only) repeats rope_theta: cohere's
			 * default theta is 10000 in 4.57.1 and 500000 in 5.23.0, and
			 * tfm keeps the 4.x one for a config that names neither */
			if (strcmp(k->key, "model_type") && strcmp(k->key, "transformers_version") &&
			    strcmp(k->key, "rope_parameters"))
				json_object_set_new(c, k->key, json_loads(k->dflt, JSON_DECODE_ANY, NULL));
	return c;
}

/* Token ids live in the tokenizer import (tokenizer.ggml.*); the spec's
 * copies are not compared here. */
static int same_spec(struct tfm_spec *a, struct tfm_spec *b)
{
	a->bos_id = b->bos_id = a->eos_id = b->eos_id = a->pad_id = b->pad_id = 0;
	return !memcmp(a, b, sizeof *a);
}

static void t_defaults(void)
{
	for (const struct tfm_cfg_keys *t = tfm_cfg_keys; t->type; t++) {
		json_t *full = all_defaults(t->type, t->keys), *bare = json_pack("{ss}", "model_type",
									      t->type);
		struct tfm_spec want, got;
		int st = tfm_spec_from_config(&want, full);
		CHECK_MSG(st == TFM_OK, "%s: all defaults: %s", t->type, tfm_errmsg());
		if (st) {
			json_decref(full), json_decref(bare);
			continue;
		}
		CHECK_OK(tfm_spec_from_config(&got, bare));
		CHECK_MSG(same_spec(&want, &got), "%s: {model_type} alone differs from "
			  "the class defaults written out", t->type);
		for (const struct tfm_cfg_key *k = t->keys; k->key; k++) {
			if (!strcmp(k->key, "model_type"))
				continue;
			json_t *c = json_deep_copy(full);
			json_object_del(c, k->key);
			st = tfm_spec_from_config(&got, c);
			CHECK_MSG(st == TFM_OK && same_spec(&want, &got),
				  "%s: without %s the spec is not the class default's (%s)", t->type,
				  k->key, st ? tfm_errmsg() : "differs");
			json_decref(c);
		}
		json_decref(full), json_decref(bare);
	}
}

/* Hostile numbers: every key of every type at 0, -1, INT64_MIN, INT64_MAX
 * and 1e300 gives a spec or an error, never a crash (num_attention_heads 0
 * was a SIGFPE); sizes out of [1, 2^31) are refused by name. */
static void t_hostile(void)
{
	static const char *const vals[] = {"0", "-1", "-9223372036854775808",
					   "9223372036854775807", "1e300"};
	int runs = 0;
	for (const struct tfm_cfg_keys *t = tfm_cfg_keys; t->type; t++)
		for (const struct tfm_cfg_key *k = t->keys; k->key; k++)
			for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
				json_t *c = json_pack("{ss}", "model_type", t->type);
				json_object_set_new(c, k->key, json_loads(vals[v], JSON_DECODE_ANY, NULL));
				struct tfm_spec s;
				struct tfm_counts n;
				if (tfm_spec_from_config(&s, c) == TFM_OK)
					tfm_spec_count(&s, 2.0, 4096, &n); /* must not trap either */
				json_decref(c);
				runs++;
			}
	CHECK(runs > 1000);
	json_t *c = json_loads("{\"model_type\": \"llama\", \"num_attention_heads\": 0}", 0, NULL);
	struct tfm_spec s;
	CHECK_ST(tfm_spec_from_config(&s, c), TFM_E_FORMAT);
	CHECK_MSG(strstr(tfm_errmsg(), "num_attention_heads=0 is out of range") != NULL, "%s",
		  tfm_errmsg());
	json_decref(c);
}

/* The defects named in the config issue, refused by name until implemented. */
static void t_named(void)
{
	static const char *const cases[][2] = {
		{"{\"model_type\": \"gpt2\", \"add_cross_attention\": true}", "add_cross_attention"},
		{"{\"model_type\": \"llama\", \"pruned_heads\": {\"0\": [1]}}", "pruned_heads"},
		{"{\"model_type\": \"opt\", \"layer_norm_elementwise_affine\": false}",
		 "layer_norm_elementwise_affine"},
		{"{\"model_type\": \"llama\", \"quantization_config\": {\"quant_method\": \"gptq\"}}",
		 "quantization_config"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *c = json_loads(cases[i][0], 0, NULL);
		struct tfm_spec s;
		int st = tfm_spec_from_config(&s, c);
		CHECK_MSG(st == TFM_E_UNSUPPORTED && strstr(tfm_errmsg(), cases[i][1]), "%s: %s",
			  cases[i][0], tfm_errmsg());
		json_decref(c);
	}
	/* keys transformers' class does not define are ignored, as transformers does */
	json_t *c = json_loads("{\"model_type\": \"llama\", \"my_own_note\": 7}", 0, NULL);
	struct tfm_spec s;
	CHECK_OK(tfm_spec_from_config(&s, c));
	json_decref(c);
}

static const struct t_case t_cases[] = {
	{"tables", t_tables},
	{"named", t_named},
	{"defaults", t_defaults},
	{"hostile", t_hostile},
};
T_MAIN(t_cases)
