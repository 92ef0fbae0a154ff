/* safetensors.c: the safetensors format: u64 LE header length, a JSON header
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"},
 * then the data.  Every number is bounds-checked; tensors point into the
 * caller's bytes (which must outlive the checkpoint). */
#include "format/ckpt-impl.h"

#include <string.h>

static int st_dtype(const char *s)
{
	if (!strcmp(s, "F32"))
		return TFM_TYPE_F32;
	if (!strcmp(s, "F16"))
		return TFM_TYPE_F16;
	if (!strcmp(s, "BF16"))
		return TFM_TYPE_BF16;
	return -1;
}

/* Element sizes of the dtypes we reject, so a rejected tensor's extent is
 * still checked and the message is exact. */
static int other_dtype_size(const char *s)
{
	static const struct { const char *name; int size; } t[] = {
		{ "F64", 8 }, { "I64", 8 }, { "U64", 8 }, { "I32", 4 }, { "U32", 4 },
		{ "I16", 2 }, { "U16", 2 }, { "I8", 1 }, { "U8", 1 }, { "BOOL", 1 },
		{ "F8_E4M3", 1 }, { "F8_E5M2", 1 }, { "F8_E8M0", 1 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(s, t[i].name))
			return t[i].size;
	return 0;
}

static int get_u64(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int one_tensor(struct tfm_ckpt *c, const char *name, const char *key, json_t *v,
		      const uint8_t *base, uint64_t dsize)
{
	json_t *jd = json_object_get(v, "dtype"), *js = json_object_get(v, "shape"),
	       *jo = json_object_get(v, "data_offsets");
	if (!json_is_object(v) || !json_is_string(jd) || !json_is_array(js) ||
	    !json_is_array(jo) || json_array_size(jo) != 2)
		return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: tensor %s: needs dtype, shape "
				  "and data_offsets [begin, end]", name, key);
	const char *dt = json_string_value(jd);
	size_t nd = json_array_size(js);
	int64_t shape[TFM_PK_MAXDIMS];
	if (nd > TFM_PK_MAXDIMS)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s has %zu dimensions", name,
				  key, nd);
	uint64_t n = 1, b, e;
	for (size_t i = 0; i < nd; i++) {
		uint64_t d;
		if (get_u64(json_array_get(js, i), &d) || d > INT64_MAX ||
		    __builtin_mul_overflow(n, d, &n))
			return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: tensor %s: bad shape",
					  name, key);
		shape[i] = (int64_t)d;
	}
	if (get_u64(json_array_get(jo, 0), &b) || get_u64(json_array_get(jo, 1), &e) ||
	    b > e || e > dsize)
		return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: tensor %s: data_offsets "
				  "outside the data section (%llu bytes)", name, key,
				  (unsigned long long)dsize);
	int type = st_dtype(dt);
	int es = type >= 0 ? (type == TFM_TYPE_F32 ? 4 : 2) : other_dtype_size(dt);
	uint64_t want;
	if (!es)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s: unknown dtype %s", name,
				  key, dt);
	if (__builtin_mul_overflow(n, (uint64_t)es, &want) || want != e - b)
		return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: tensor %s: %llu bytes, "
				  "shape and dtype %s need %llu", name, key,
				  (unsigned long long)(e - b), dt, (unsigned long long)want);
	if (type < 0) {
		if (tfm_ckpt_is_buffer(key)) {
			/* a buffer, not a weight (rotary inv_freq, position ids, gpt2's
			 * causal mask): every model rebuilds it, so it is not carried */
			tfm_log(TFM_LOG_DEBUG, "%s: skipping buffer %s (%s)", name, key, dt);
			return TFM_OK;
		}
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s has dtype %s (tfm reads F32, "
				  "F16 and BF16)", name, key, dt);
	}
	if (nd > 4)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s has %zu dimensions (at most 4)",
				  name, key, nd);
	return tfm_ckpt_add_tensor(c, key, type, (int)nd, shape, base + b, (size_t)(e - b));
}

int tfm_safetensors_parse(struct tfm_ckpt *c, const uint8_t *data, size_t size, const char *name)
{
	uint64_t hn;
	if (!name)
		name = c->source;
	if (size < 8)
		return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: truncated (%zu bytes)", name, size);
	memcpy(&hn, data, 8);
	if (hn > size - 8)
		return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: header of %llu bytes in a file "
				  "of %zu: truncated or not safetensors", name,
				  (unsigned long long)hn, size);
	if (hn < 2 || data[8] != '{')
		return tfm_seterr(TFM_E_FORMAT, "%s: safetensors: the header is not a JSON object",
				  name);
	json_error_t je;
	json_t *h = json_loadb((const char *)data + 8, (size_t)hn, JSON_REJECT_DUPLICATES, &je);
	if (!h || !json_is_object(h)) {
		int st = tfm_seterr(TFM_E_FORMAT, "%s: safetensors: bad JSON header: %s", name,
				    h ? "not an object" : je.text);
		json_decref(h);
		return st;
	}
	const uint8_t *base = data + 8 + hn;
	uint64_t dsize = size - 8 - hn;
	const char *key;
	json_t *v;
	int st = TFM_OK;
	json_object_foreach(h, key, v) {
		if (!strcmp(key, "__metadata__")) {
			if (!json_is_object(v) && !json_is_null(v)) {
				st = tfm_seterr(TFM_E_FORMAT, "%s: safetensors: __metadata__ is not "
						"an object", name);
				break;
			}
			continue;
		}
		if ((st = one_tensor(c, name, key, v, base, dsize)))
			break;
	}
	json_decref(h);
	return st;
}
