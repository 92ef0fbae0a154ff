/* st-import.c: sentence-transformers' modules and a classifier's labels at
 * conversion.  sentence-transformers runs modules.json's modules in order:
 * Transformer (the checkpoint itself), Pooling (one mode from its
 * config.json), Normalize (L2).  Those are the spec's head.pooling,
 * head.normalize and head.max_tokens; any other module (Dense, a second
 * pooling mode, weighted mean, ...) would change the embedding and is
 * refused. */
#include "format/st-import.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static json_t *load(const struct tfm_ckpt *ck, const char *name, int *st)
{
	const struct tfm_ckpt_file *f = tfm_ckpt_file(ck, name);
	json_error_t e;
	*st = TFM_OK;
	if (!f)
		return NULL;
	json_t *j = json_loadb((const char *)f->data, f->size, 0, &e);
	if (!j)
		*st = tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", name, e.line, e.text);
	return j;
}

/* 1_Pooling/config.json: exactly one of the modes tfm runs */
static int pooling(const struct tfm_ckpt *ck, const char *path, struct tfm_spec *s)
{
	static const struct { const char *key; int mode; } modes[] = {
		{ "pooling_mode_cls_token", TFM_POOL_CLS },
		{ "pooling_mode_mean_tokens", TFM_POOL_MEAN },
		{ "pooling_mode_max_tokens", TFM_POOL_MAX },
		{ "pooling_mode_mean_sqrt_len_tokens", TFM_POOL_MEAN_SQRT },
		{ "pooling_mode_lasttoken", TFM_POOL_LAST },
		{ "pooling_mode_weightedmean_tokens", -1 },
	};
	char name[256];
	int st, n = 0;
	snprintf(name, sizeof name, "%s/config.json", path);
	json_t *j = load(ck, name, &st);
	if (!j)
		return st ? st : tfm_seterr(TFM_E_FORMAT, "sentence-transformers: %s missing", name);
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		if (!json_is_true(json_object_get(j, modes[i].key)))
			continue;
		if (modes[i].mode < 0 || n++) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s is not supported", name,
					modes[i].mode < 0 ? modes[i].key : "more than one pooling mode");
			break;
		}
		s->pooling = modes[i].mode;
	}
	if (!st && !n)
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: no pooling mode", name);
	if (!st && json_is_false(json_object_get(j, "include_prompt")))
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: include_prompt=false is not supported", name);
	json_decref(j);
	return st;
}

static int modules(const struct tfm_ckpt *ck, struct tfm_spec *s)
{
	int st;
	json_t *j = load(ck, "modules.json", &st), *m;
	size_t i;
	if (!j)
		return st;
	if (!json_is_array(j)) {
		json_decref(j);
		return tfm_seterr(TFM_E_FORMAT, "modules.json: not an array");
	}
	s->head = TFM_HEAD_EMBED;
	json_array_foreach(j, i, m) {
		const char *type = json_string_value(json_object_get(m, "type"));
		const char *path = json_string_value(json_object_get(m, "path"));
		const char *t = type && strrchr(type, '.') ? strrchr(type, '.') + 1 : type ? type : "?";
		if (!strcmp(t, "Transformer") && i == 0 && (!path || !*path))
			continue;
		if (!strcmp(t, "Pooling") && path && !strcmp(path, "1_Pooling")) {
			if ((st = pooling(ck, path, s)))
				break;
		} else if (!strcmp(t, "Normalize")) {
			s->normalize = 1;
		} else {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "modules.json: module %zu (%s, path '%s') is "
					"not supported", i, type ? type : "?", path ? path : "");
			break;
		}
	}
	json_decref(j);
	if (st)
		return st;
	json_t *sb = load(ck, "sentence_bert_config.json", &st);
	if (st)
		return st;
	json_t *ml = json_object_get(sb, "max_seq_length");
	if (json_is_integer(ml) && json_integer_value(ml) > 0)
		s->max_tokens = json_integer_value(ml);
	if (json_is_true(json_object_get(sb, "do_lower_case")))
		st = tfm_seterr(TFM_E_UNSUPPORTED, "sentence_bert_config.json: do_lower_case=true "
				"is not supported");
	json_decref(sb);
	return st;
}

/* id2label in id order as <arch>.classifier.output_labels */
static int labels(const struct tfm_ckpt *ck, const struct tfm_spec *s, struct tfm_gguf *g)
{
	json_t *lab = json_object_get(ck->config, "id2label");
	const char **v = tfm_calloc((size_t)s->n_labels + 1, sizeof *v);
	char key[96], id[24];
	if (!v)
		return TFM_E_NOMEM;
	int st = TFM_OK;
	for (int64_t i = 0; i < s->n_labels && !st; i++) {
		snprintf(id, sizeof id, "%lld", (long long)i);
		v[i] = json_string_value(json_object_get(lab, id));
		if (!v[i])
			st = tfm_seterr(TFM_E_FORMAT, "config.json: id2label has no label %lld",
					(long long)i);
	}
	snprintf(key, sizeof key, "%s.classifier.output_labels", s->gguf_arch);
	if (!st)
		st = tfm_gguf_set_arr_str(g, key, v, NULL, s->n_labels);
	free(v);
	return st;
}

int tfm_st_import(const struct tfm_ckpt *ck, struct tfm_spec *s, struct tfm_gguf *g)
{
	if (s->family != TFM_FAMILY_ENCODER)
		return TFM_OK;
	/* the heads the checkpoint holds (BertModel has a pooler, BertForMaskedLM
	 * has none but the masked-LM head), so that the counts are the file's */
	int cl = s->head == TFM_HEAD_CLASSIFIER || s->head == TFM_HEAD_TOKEN;
	s->pooler = tfm_gguf_find_tensor(g, "cls.weight") != NULL;
	s->mlm_head = tfm_gguf_find_tensor(g, "mlm.dense.weight") != NULL;
	if (s->head_transform) { /* ModernBERT: one prediction head (cls) for every task */
		s->mlm_head = !cl && s->pooler;
		s->pooler = cl && s->pooler;
		s->head_bias = s->mlm_head && tfm_gguf_find_tensor(g, "output.bias") != NULL;
	}
	if (cl && !tfm_gguf_find_tensor(g, "cls.output.weight"))
		return tfm_seterr(TFM_E_FORMAT, "%s: a classifier without its weights "
				  "(classifier)", s->arch);
	if (cl) {
		if (tfm_ckpt_file(ck, "modules.json"))
			return tfm_seterr(TFM_E_UNSUPPORTED, "a sentence-transformers directory "
					  "around a sequence classifier is not supported");
		return json_is_object(json_object_get(ck->config, "id2label")) ? labels(ck, s, g)
									       : TFM_OK;
	}
	return modules(ck, s);
}
