/* set.c: --set KEY=VALUE overrides of spec knobs.  Keys are the knob table's
 * (spec.c), the tfm.* GGUF keys without "tfm."; enums by name, numbers range
 * checked, layer arrays as one value for every layer or a comma list. */
#include "spec-impl.h"

#include <stdlib.h>
#include <string.h>

static int set_u8arr(struct tfm_spec *s, const struct tfm_spec_knob *k, const char *v)
{
	uint8_t *a = (uint8_t *)s + k->off;
	int64_t n = tfm_spec_n_layers(s), cnt = 1;
	for (const char *p = v; *p; p++)
		cnt += *p == ',';
	if (cnt != 1 && cnt != n)
		return tfm_seterr(TFM_E_INVAL, "%s: %lld values for %lld layers", k->key,
				  (long long)cnt, (long long)n);
	uint8_t vals[TFM_MAX_LAYERS];
	const char *p = v;
	for (int64_t i = 0; i < cnt; i++) {
		size_t len = strcspn(p, ",");
		char tok[32];
		if (len == 0 || len >= sizeof(tok))
			return tfm_seterr(TFM_E_INVAL, "%s: bad value in '%s'", k->key, v);
		memcpy(tok, p, len);
		tok[len] = 0;
		int64_t x = -1;
		if (k->names)
			x = tfm_spec_enum_value(k->key, tok);
		if (x < 0 && tfm_parse_i64(tok, (int64_t)k->lo, (int64_t)k->hi, &x))
			return tfm_adderr(TFM_E_INVAL, "%s", k->key);
		vals[i] = (uint8_t)x;
		p += len + (p[len] == ',');
	}
	for (int64_t i = 0; i < n; i++)
		a[i] = vals[cnt == 1 ? 0 : i];
	return TFM_OK;
}

int tfm_spec_set(struct tfm_spec *s, const char *key_value)
{
	const char *eq = strchr(key_value, '=');
	if (!eq || eq == key_value)
		return tfm_seterr(TFM_E_INVAL, "--set '%s': expected KEY=VALUE", key_value);
	char key[64];
	size_t kl = (size_t)(eq - key_value);
	if (kl >= sizeof(key))
		return tfm_seterr(TFM_E_INVAL, "--set: unknown key '%.*s'", (int)kl, key_value);
	memcpy(key, key_value, kl);
	key[kl] = 0;
	if (!strncmp(key, "tfm.", 4))
		memmove(key, key + 4, kl - 3);
	const char *v = eq + 1;
	const struct tfm_spec_knob *k = tfm_spec_knob_find_(key);
	if (!k)
		return tfm_seterr(TFM_E_INVAL, "--set: unknown key '%s'", key);
	struct tfm_spec old = *s;   /* restored when the result does not validate */
	char *p = (char *)s + k->off;
	int64_t i;
	double d;
	int st = TFM_OK;
	switch (k->type) {
	case KT_I64:
		if (!(st = tfm_parse_i64(v, (int64_t)k->lo, (int64_t)k->hi, &i)))
			*(int64_t *)p = i;
		break;
	case KT_INT:
	case KT_I32:
		if (!(st = tfm_parse_i64(v, (int64_t)k->lo, (int64_t)k->hi, &i))) {
			if (k->type == KT_INT)
				*(int *)p = (int)i;
			else
				*(int32_t *)p = (int32_t)i;
		}
		break;
	case KT_BOOL:
		if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
			*(int *)p = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
			*(int *)p = 0;
		else
			st = tfm_seterr(TFM_E_INVAL, "'%s': not a boolean (0, 1, true, false)", v);
		break;
	case KT_ENUM: {
		int x = tfm_spec_enum_value(k->key, v);
		if (x < 0) {
			char list[256] = "";
			for (int j = 0; k->names[j]; j++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 j ? ", " : "", k->names[j]);
			st = tfm_seterr(TFM_E_INVAL, "'%s': not one of %s", v, list);
		} else {
			*(int *)p = x;
		}
		break;
	}
	case KT_F32:
	case KT_F64:
		if (!(st = tfm_parse_f64(v, k->lo, k->hi, &d))) {
			if (k->type == KT_F32)
				*(float *)p = (float)d;
			else
				*(double *)p = d;
		}
		break;
	case KT_STR:
		if (strlen(v) >= sizeof(s->arch))
			st = tfm_seterr(TFM_E_INVAL, "'%s': too long", v);
		else
			snprintf(p, sizeof(s->arch), "%s", v);
		break;
	case KT_U8ARR:
		st = set_u8arr(s, k, v);
		break;
	default:
		st = tfm_seterr(TFM_E_INVAL, "--set: '%s' cannot be set", key);
	}
	if (st) {
		*s = old;
		return tfm_adderr(TFM_E_INVAL, "--set %s", key);
	}

	/* knobs that imply others, so a one-line experiment does what it says */
	int64_t nl = tfm_spec_n_layers(s);
	if (!strcmp(key, "attn.window")) {
		int any = 0;
		for (int64_t j = 0; j < nl; j++)
			any |= s->layer_window[j];
		if (s->window > 0 && !any)
			for (int64_t j = 0; j < nl; j++)
				s->layer_window[j] = s->layer_kind[j] == TFM_LAYER_ATTN;
		if (s->window == 0) {
			memset(s->layer_window, 0, sizeof(s->layer_window));
			if (s->mask == TFM_MASK_WINDOW)
				s->mask = TFM_MASK_CAUSAL;
		}
	} else if (!strcmp(key, "attn.mask") && s->mask == TFM_MASK_WINDOW) {
		for (int64_t j = 0; j < nl; j++)
			s->layer_window[j] = s->layer_kind[j] == TFM_LAYER_ATTN;
	} else if (!strcmp(key, "rope.scaling") && s->rope_scaling != TFM_ROPE_SCALE_NONE &&
		   s->rope_orig_ctx == 0) {
		s->rope_orig_ctx = s->n_ctx_train;
	}
	if (tfm_spec_validate(s)) {
		*s = old;
		return tfm_adderr(TFM_E_INVAL, "--set %s", key);
	}
	return TFM_OK;
}
