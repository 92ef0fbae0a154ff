/* gguf-kv.c: GGUF metadata in memory: values (scalars, strings, arrays,
 * nested arrays), lookup, typed getters that convert widths, setters that
 * keep insertion order (replacing a key keeps its place), deep copies. */
#include "gguf-impl.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[TFM_GGUF_TYPE_COUNT] = {
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64",
};

size_t gguf_type_width(int type)
{
	switch (type) {
	case TFM_GGUF_UINT8: case TFM_GGUF_INT8: case TFM_GGUF_BOOL: return 1;
	case TFM_GGUF_UINT16: case TFM_GGUF_INT16: return 2;
	case TFM_GGUF_UINT32: case TFM_GGUF_INT32: case TFM_GGUF_FLOAT32: return 4;
	case TFM_GGUF_UINT64: case TFM_GGUF_INT64: case TFM_GGUF_FLOAT64: return 8;
	default: return 0;
	}
}

const char *gguf_type_name(int type)
{
	return type >= 0 && type < TFM_GGUF_TYPE_COUNT ? type_names[type] : "invalid";
}

const char *gguf_sane(const char *s, size_t len, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o > 80) {
			memcpy(buf + o, "...", 4);
			return buf;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			buf[o++] = (char)c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	buf[o] = 0;
	return buf;
}

void gguf_val_free(struct tfm_gguf_val *v)
{
	if (v->sub)
		for (int64_t j = 0; j < v->n; j++)
			gguf_val_free(&v->sub[j]);
	free(v->sub);
	free(v->str);
	free(v->data);
	free(v->off);
	free(v->pool);
	memset(v, 0, sizeof *v);
}

int gguf_val_copy(struct tfm_gguf_val *dst, const struct tfm_gguf_val *src)
{
	struct tfm_gguf_val v = *src;
	v.str = NULL; v.data = NULL; v.off = NULL; v.pool = NULL; v.sub = NULL;
	v.n = 0;
	if (src->type == TFM_GGUF_STRING) {
		if (!(v.str = tfm_malloc(src->len + 1)))
			goto nomem;
		memcpy(v.str, src->str, src->len + 1);
	} else if (src->type == TFM_GGUF_ARRAY) {
		size_t w = gguf_type_width(src->elem_type);
		if (w) {
			if (!(v.data = tfm_malloc((size_t)src->n * w + 1)))
				goto nomem;
			if (src->n)
				memcpy(v.data, src->data, (size_t)src->n * w);
		} else if (src->elem_type == TFM_GGUF_STRING) {
			size_t pool = src->off[src->n];
			v.off = tfm_malloc(((size_t)src->n + 1) * sizeof *v.off);
			v.pool = tfm_malloc(pool + 1);
			if (!v.off || !v.pool)
				goto nomem;
			memcpy(v.off, src->off, ((size_t)src->n + 1) * sizeof *v.off);
			memcpy(v.pool, src->pool, pool);
		} else {
			if (!(v.sub = tfm_calloc((size_t)src->n + 1, sizeof *v.sub)))
				goto nomem;
			for (int64_t j = 0; j < src->n; j++) {
				v.n = j;
				if (gguf_val_copy(&v.sub[j], &src->sub[j]))
					goto nomem;
			}
		}
		v.n = src->n;
	}
	*dst = v;
	return TFM_OK;
nomem:
	gguf_val_free(&v);
	return TFM_E_NOMEM;
}

/* ---- the struct ---- */

int tfm_gguf_new(struct tfm_gguf **out)
{
	struct tfm_gguf *g = tfm_calloc(1, sizeof *g);
	if (!g)
		return TFM_E_NOMEM;
	g->version = 3;
	if (!(g->name = tfm_strdup("<new gguf>"))) {
		free(g);
		return TFM_E_NOMEM;
	}
	*out = g;
	return TFM_OK;
}

void tfm_gguf_free(struct tfm_gguf *g)
{
	if (!g)
		return;
	for (int64_t i = 0; i < g->n_kv; i++) {
		free(g->kv[i].key);
		gguf_val_free(&g->kv[i].v);
	}
	for (int64_t i = 0; i < g->n_t; i++)
		free((char *)g->t[i].pub.name);
	free(g->kv);
	free(g->t);
	free(g->name);
	free(g);
}

static int64_t find_n(const struct tfm_gguf *g, const char *key, size_t len)
{
	for (int64_t i = 0; i < g->n_kv; i++)
		if (g->kv[i].key_len == len && !memcmp(g->kv[i].key, key, len))
			return i;
	return -1;
}

int64_t tfm_gguf_find(const struct tfm_gguf *g, const char *key)
{
	return key ? find_n(g, key, strlen(key)) : -1;
}

int gguf_kv_put(struct tfm_gguf *g, const char *key, size_t key_len, struct tfm_gguf_val *v)
{
	int64_t i = find_n(g, key, key_len);
	if (i >= 0) { /* replace in place: the key keeps its position */
		gguf_val_free(&g->kv[i].v);
		g->kv[i].v = *v;
		return TFM_OK;
	}
	return gguf_kv_append(g, key, key_len, v);
}

int gguf_kv_append(struct tfm_gguf *g, const char *key, size_t key_len, struct tfm_gguf_val *v)
{
	if (g->n_kv == g->cap_kv) {
		int64_t cap = g->cap_kv ? 2 * g->cap_kv : 16;
		struct gguf_kv *kv = tfm_realloc(g->kv, (size_t)cap * sizeof *kv);
		if (!kv)
			goto nomem;
		g->kv = kv;
		g->cap_kv = cap;
	}
	char *k = tfm_malloc(key_len + 1);
	if (!k)
		goto nomem;
	memcpy(k, key, key_len);
	k[key_len] = 0;
	g->kv[g->n_kv++] = (struct gguf_kv){ .key = k, .key_len = key_len, .v = *v };
	return TFM_OK;
nomem:
	gguf_val_free(v);
	return TFM_E_NOMEM;
}

int64_t tfm_gguf_n_kv(const struct tfm_gguf *g) { return g->n_kv; }

const char *tfm_gguf_key(const struct tfm_gguf *g, int64_t i)
{
	return i >= 0 && i < g->n_kv ? g->kv[i].key : NULL;
}

const struct tfm_gguf_val *tfm_gguf_get_val(const struct tfm_gguf *g, int64_t i)
{
	return i >= 0 && i < g->n_kv ? &g->kv[i].v : NULL;
}

int tfm_gguf_kv_type(const struct tfm_gguf *g, int64_t i)
{
	return i >= 0 && i < g->n_kv ? g->kv[i].v.type : -1;
}

int tfm_gguf_arr_type(const struct tfm_gguf *g, int64_t i)
{
	if (i < 0 || i >= g->n_kv || g->kv[i].v.type != TFM_GGUF_ARRAY)
		return -1;
	return g->kv[i].v.elem_type;
}

int64_t tfm_gguf_arr_n(const struct tfm_gguf *g, int64_t i)
{
	if (i < 0 || i >= g->n_kv || g->kv[i].v.type != TFM_GGUF_ARRAY)
		return -1;
	return g->kv[i].v.n;
}

uint32_t tfm_gguf_version(const struct tfm_gguf *g) { return g->version; }
size_t tfm_gguf_data_offset(const struct tfm_gguf *g) { return g->data_offset; }

/* ---- getters ---- */

/* Element of raw little-endian numeric data as int64 or double.  *ok is
 * cleared for a uint64 that does not fit int64. */
static int64_t raw_int(int type, const void *p, int *ok)
{
	uint8_t u8; int8_t i8; uint16_t u16; int16_t i16;
	uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
	switch (type) {
	case TFM_GGUF_UINT8: case TFM_GGUF_BOOL: memcpy(&u8, p, 1); return u8;
	case TFM_GGUF_INT8: memcpy(&i8, p, 1); return i8;
	case TFM_GGUF_UINT16: memcpy(&u16, p, 2); return u16;
	case TFM_GGUF_INT16: memcpy(&i16, p, 2); return i16;
	case TFM_GGUF_UINT32: memcpy(&u32, p, 4); return u32;
	case TFM_GGUF_INT32: memcpy(&i32, p, 4); return i32;
	case TFM_GGUF_INT64: memcpy(&i64, p, 8); return i64;
	case TFM_GGUF_UINT64:
		memcpy(&u64, p, 8);
		if (u64 > INT64_MAX)
			*ok = 0;
		return (int64_t)u64;
	}
	*ok = 0;
	return 0;
}

static int is_int_type(int t)
{
	return gguf_type_width(t) && t != TFM_GGUF_FLOAT32 && t != TFM_GGUF_FLOAT64;
}

static double raw_float(int type, const void *p)
{
	float f;
	double d;
	int ok = 1;
	if (type == TFM_GGUF_FLOAT32) {
		memcpy(&f, p, 4);
		return f;
	}
	if (type == TFM_GGUF_FLOAT64) {
		memcpy(&d, p, 8);
		return d;
	}
	if (type == TFM_GGUF_UINT64) {
		uint64_t u;
		memcpy(&u, p, 8);
		return (double)u;
	}
	return (double)raw_int(type, p, &ok);
}

/* The value of key, or an error naming what is wrong. */
static int lookup(const struct tfm_gguf *g, const char *key, const struct tfm_gguf_val **v)
{
	char b[512];
	int64_t i = tfm_gguf_find(g, key);
	if (i < 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: missing key %s", g->name,
				  key ? gguf_sane(key, strlen(key), b) : "(null)");
	*v = &g->kv[i].v;
	return TFM_OK;
}

static int wrong_type(const struct tfm_gguf *g, const char *key, const char *want, int got)
{
	char b[512];
	return tfm_seterr(TFM_E_FORMAT, "%s: key %s: expected %s, found %s", g->name,
			  gguf_sane(key, strlen(key), b), want, gguf_type_name(got));
}

int tfm_gguf_get_int(const struct tfm_gguf *g, const char *key, int64_t *out)
{
	const struct tfm_gguf_val *v = NULL;
	int st = lookup(g, key, &v), ok = 1;
	if (st)
		return st;
	if (!is_int_type(v->type))
		return wrong_type(g, key, "an integer", v->type);
	int64_t x = raw_int(v->type, &v->raw, &ok);
	if (!ok) {
		char b[512];
		return tfm_seterr(TFM_E_FORMAT, "%s: key %s: value too large",
				  g->name, gguf_sane(key, strlen(key), b));
	}
	*out = x;
	return TFM_OK;
}

int tfm_gguf_get_float(const struct tfm_gguf *g, const char *key, double *out)
{
	const struct tfm_gguf_val *v = NULL;
	int st = lookup(g, key, &v);
	if (st)
		return st;
	if (!gguf_type_width(v->type) || v->type == TFM_GGUF_BOOL)
		return wrong_type(g, key, "a number", v->type);
	*out = raw_float(v->type, &v->raw);
	return TFM_OK;
}

int tfm_gguf_get_str(const struct tfm_gguf *g, const char *key, const char **s, size_t *len)
{
	const struct tfm_gguf_val *v = NULL;
	int st = lookup(g, key, &v);
	if (st)
		return st;
	if (v->type != TFM_GGUF_STRING)
		return wrong_type(g, key, "a string", v->type);
	*s = v->str;
	if (len)
		*len = v->len;
	return TFM_OK;
}

int64_t tfm_gguf_get_int_or(const struct tfm_gguf *g, const char *key, int64_t dflt)
{
	int64_t v;
	if (tfm_gguf_find(g, key) < 0)
		return dflt;
	if (tfm_gguf_get_int(g, key, &v)) {
		tfm_log(TFM_LOG_WARN, "%s (using %lld)", tfm_errmsg(), (long long)dflt);
		return dflt;
	}
	return v;
}

double tfm_gguf_get_float_or(const struct tfm_gguf *g, const char *key, double dflt)
{
	double v;
	if (tfm_gguf_find(g, key) < 0)
		return dflt;
	if (tfm_gguf_get_float(g, key, &v)) {
		tfm_log(TFM_LOG_WARN, "%s (using %g)", tfm_errmsg(), dflt);
		return dflt;
	}
	return v;
}

const char *tfm_gguf_get_str_or(const struct tfm_gguf *g, const char *key, const char *dflt)
{
	const char *s;
	if (tfm_gguf_find(g, key) < 0)
		return dflt;
	if (tfm_gguf_get_str(g, key, &s, NULL)) {
		tfm_log(TFM_LOG_WARN, "%s (using the default)", tfm_errmsg());
		return dflt;
	}
	return s;
}

int tfm_gguf_val_type(const struct tfm_gguf_val *v) { return v ? v->type : -1; }

int tfm_gguf_val_arr(const struct tfm_gguf_val *v, int *elem_type, int64_t *n, const void **data)
{
	if (!v || v->type != TFM_GGUF_ARRAY)
		return tfm_seterr(TFM_E_FORMAT, "value is %s, not an array",
				  v ? gguf_type_name(v->type) : "missing");
	if (elem_type)
		*elem_type = v->elem_type;
	if (n)
		*n = v->n;
	if (data)
		*data = v->data;
	return TFM_OK;
}

int tfm_gguf_val_arr_str(const struct tfm_gguf_val *v, int64_t j, const char **s, size_t *len)
{
	if (!v || v->type != TFM_GGUF_ARRAY || v->elem_type != TFM_GGUF_STRING)
		return tfm_seterr(TFM_E_FORMAT, "value is not an array of strings");
	if (j < 0 || j >= v->n)
		return tfm_seterr(TFM_E_INVAL, "string index %lld out of range [0, %lld)",
				  (long long)j, (long long)v->n);
	*s = v->pool + v->off[j];
	if (len)
		*len = v->off[j + 1] - v->off[j] - 1;
	return TFM_OK;
}

const struct tfm_gguf_val *tfm_gguf_arr_sub(const struct tfm_gguf_val *v, int64_t j)
{
	if (!v || v->type != TFM_GGUF_ARRAY || v->elem_type != TFM_GGUF_ARRAY || j < 0 || j >= v->n)
		return NULL;
	return &v->sub[j];
}

static int lookup_arr(const struct tfm_gguf *g, const char *key, const struct tfm_gguf_val **v)
{
	int st = lookup(g, key, v);
	if (st)
		return st;
	if ((*v)->type != TFM_GGUF_ARRAY)
		return wrong_type(g, key, "an array", (*v)->type);
	return TFM_OK;
}

int tfm_gguf_get_arr(const struct tfm_gguf *g, const char *key, int *elem_type,
		     int64_t *n, const void **data)
{
	const struct tfm_gguf_val *v = NULL;
	int st = lookup_arr(g, key, &v);
	return st ? st : tfm_gguf_val_arr(v, elem_type, n, data);
}

int tfm_gguf_get_arr_str(const struct tfm_gguf *g, const char *key, int64_t i,
			 const char **s, size_t *len)
{
	const struct tfm_gguf_val *v = NULL;
	int st = lookup_arr(g, key, &v);
	if (st)
		return st;
	if (v->elem_type != TFM_GGUF_STRING)
		return wrong_type(g, key, "an array of strings", v->elem_type);
	return tfm_gguf_val_arr_str(v, i, s, len);
}

/* A numeric array of exactly n elements. */
static int numeric_arr(const struct tfm_gguf *g, const char *key, int64_t n,
		       const struct tfm_gguf_val **v)
{
	char b[512];
	int st = lookup_arr(g, key, v);
	if (st)
		return st;
	if (!gguf_type_width((*v)->elem_type))
		return wrong_type(g, key, "an array of numbers", (*v)->elem_type);
	if ((*v)->n != n)
		return tfm_seterr(TFM_E_FORMAT, "%s: key %s: %lld elements, expected %lld", g->name,
				  gguf_sane(key, strlen(key), b), (long long)(*v)->n, (long long)n);
	return TFM_OK;
}

int tfm_gguf_get_arr_f32(const struct tfm_gguf *g, const char *key, float *dst, int64_t n)
{
	const struct tfm_gguf_val *v = NULL;
	int st = numeric_arr(g, key, n, &v);
	if (st)
		return st;
	size_t w = gguf_type_width(v->elem_type);
	for (int64_t j = 0; j < n; j++)
		dst[j] = (float)raw_float(v->elem_type, (const char *)v->data + (size_t)j * w);
	return TFM_OK;
}

int tfm_gguf_get_arr_i64(const struct tfm_gguf *g, const char *key, int64_t *dst, int64_t n)
{
	const struct tfm_gguf_val *v = NULL;
	int st = numeric_arr(g, key, n, &v);
	if (st)
		return st;
	if (!is_int_type(v->elem_type))
		return wrong_type(g, key, "an array of integers", v->elem_type);
	size_t w = gguf_type_width(v->elem_type);
	for (int64_t j = 0; j < n; j++) {
		int ok = 1;
		dst[j] = raw_int(v->elem_type, (const char *)v->data + (size_t)j * w, &ok);
		if (!ok) {
			char b[512];
			return tfm_seterr(TFM_E_FORMAT, "%s: key %s: element %lld too large", g->name,
					  gguf_sane(key, strlen(key), b), (long long)j);
		}
	}
	return TFM_OK;
}

/* ---- setters ---- */

static int put(struct tfm_gguf *g, const char *key, struct tfm_gguf_val *v)
{
	if (!key) {
		gguf_val_free(v);
		return tfm_seterr(TFM_E_INVAL, "gguf: NULL key");
	}
	return gguf_kv_put(g, key, strlen(key), v);
}

static int set_scalar(struct tfm_gguf *g, const char *key, int type, const void *p)
{
	struct tfm_gguf_val v = { .type = type };
	memcpy(&v.raw, p, gguf_type_width(type));
	return put(g, key, &v);
}

int tfm_gguf_set_u8(struct tfm_gguf *g, const char *k, uint8_t v) { return set_scalar(g, k, TFM_GGUF_UINT8, &v); }
int tfm_gguf_set_i8(struct tfm_gguf *g, const char *k, int8_t v) { return set_scalar(g, k, TFM_GGUF_INT8, &v); }
int tfm_gguf_set_u16(struct tfm_gguf *g, const char *k, uint16_t v) { return set_scalar(g, k, TFM_GGUF_UINT16, &v); }
int tfm_gguf_set_i16(struct tfm_gguf *g, const char *k, int16_t v) { return set_scalar(g, k, TFM_GGUF_INT16, &v); }
int tfm_gguf_set_u32(struct tfm_gguf *g, const char *k, uint32_t v) { return set_scalar(g, k, TFM_GGUF_UINT32, &v); }
int tfm_gguf_set_i32(struct tfm_gguf *g, const char *k, int32_t v) { return set_scalar(g, k, TFM_GGUF_INT32, &v); }
int tfm_gguf_set_u64(struct tfm_gguf *g, const char *k, uint64_t v) { return set_scalar(g, k, TFM_GGUF_UINT64, &v); }
int tfm_gguf_set_i64(struct tfm_gguf *g, const char *k, int64_t v) { return set_scalar(g, k, TFM_GGUF_INT64, &v); }
int tfm_gguf_set_f32(struct tfm_gguf *g, const char *k, float v) { return set_scalar(g, k, TFM_GGUF_FLOAT32, &v); }
int tfm_gguf_set_f64(struct tfm_gguf *g, const char *k, double v) { return set_scalar(g, k, TFM_GGUF_FLOAT64, &v); }

int tfm_gguf_set_bool(struct tfm_gguf *g, const char *key, int v)
{
	uint8_t b = v != 0;
	return set_scalar(g, key, TFM_GGUF_BOOL, &b);
}

int tfm_gguf_set_strn(struct tfm_gguf *g, const char *key, const char *s, size_t len)
{
	struct tfm_gguf_val v = { .type = TFM_GGUF_STRING, .len = len };
	if (!(v.str = tfm_malloc(len + 1)))
		return TFM_E_NOMEM;
	if (len)
		memcpy(v.str, s, len);
	v.str[len] = 0;
	return put(g, key, &v);
}

int tfm_gguf_set_str(struct tfm_gguf *g, const char *key, const char *s)
{
	return tfm_gguf_set_strn(g, key, s, strlen(s));
}

int tfm_gguf_set_arr(struct tfm_gguf *g, const char *key, int elem_type, const void *data, int64_t n)
{
	size_t w = gguf_type_width(elem_type);
	if (!w)
		return tfm_seterr(TFM_E_INVAL, "gguf: set_arr: element type %s is not numeric",
				  gguf_type_name(elem_type));
	if (n < 0 || (uint64_t)n > SIZE_MAX / w - 1)
		return tfm_seterr(TFM_E_INVAL, "gguf: set_arr: bad element count %lld", (long long)n);
	struct tfm_gguf_val v = { .type = TFM_GGUF_ARRAY, .elem_type = elem_type, .n = n };
	if (!(v.data = tfm_malloc((size_t)n * w + 1)))
		return TFM_E_NOMEM;
	if (n)
		memcpy(v.data, data, (size_t)n * w);
	return put(g, key, &v);
}

int tfm_gguf_set_arr_str(struct tfm_gguf *g, const char *key, const char *const *s,
			 const size_t *lens, int64_t n)
{
	if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(size_t) - 1)
		return tfm_seterr(TFM_E_INVAL, "gguf: set_arr_str: bad element count %lld", (long long)n);
	struct tfm_gguf_val v = { .type = TFM_GGUF_ARRAY, .elem_type = TFM_GGUF_STRING, .n = n };
	size_t total = 0;
	for (int64_t j = 0; j < n; j++)
		total += (lens ? lens[j] : strlen(s[j])) + 1;
	v.off = tfm_malloc(((size_t)n + 1) * sizeof *v.off);
	v.pool = tfm_malloc(total + 1);
	if (!v.off || !v.pool) {
		gguf_val_free(&v);
		return TFM_E_NOMEM;
	}
	size_t o = 0;
	for (int64_t j = 0; j < n; j++) {
		size_t l = lens ? lens[j] : strlen(s[j]);
		v.off[j] = o;
		if (l)
			memcpy(v.pool + o, s[j], l);
		v.pool[o + l] = 0;
		o += l + 1;
	}
	v.off[n] = o;
	return put(g, key, &v);
}

int tfm_gguf_set_arr_arr(struct tfm_gguf *g, const char *key,
			 const struct tfm_gguf_val *const *subs, int64_t n)
{
	if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(struct tfm_gguf_val) - 1)
		return tfm_seterr(TFM_E_INVAL, "gguf: set_arr_arr: bad element count %lld", (long long)n);
	for (int64_t j = 0; j < n; j++)
		if (!subs[j] || subs[j]->type != TFM_GGUF_ARRAY)
			return tfm_seterr(TFM_E_INVAL, "gguf: set_arr_arr: element %lld is not an array",
					  (long long)j);
	struct tfm_gguf_val v = { .type = TFM_GGUF_ARRAY, .elem_type = TFM_GGUF_ARRAY };
	if (!(v.sub = tfm_calloc((size_t)n + 1, sizeof *v.sub)))
		return TFM_E_NOMEM;
	for (int64_t j = 0; j < n; j++) {
		if (gguf_val_copy(&v.sub[j], subs[j])) {
			gguf_val_free(&v);
			return TFM_E_NOMEM;
		}
		v.n = j + 1;
	}
	return put(g, key, &v);
}

int tfm_gguf_copy_kv(struct tfm_gguf *dst, const struct tfm_gguf *src, int64_t i)
{
	if (i < 0 || i >= src->n_kv)
		return tfm_seterr(TFM_E_INVAL, "gguf: copy_kv: no key %lld in %s", (long long)i, src->name);
	struct tfm_gguf_val v;
	if (gguf_val_copy(&v, &src->kv[i].v))
		return TFM_E_NOMEM;
	return gguf_kv_put(dst, src->kv[i].key, src->kv[i].key_len, &v);
}

int tfm_gguf_remove(struct tfm_gguf *g, const char *key)
{
	int64_t i = tfm_gguf_find(g, key);
	if (i < 0)
		return TFM_OK;
	free(g->kv[i].key);
	gguf_val_free(&g->kv[i].v);
	memmove(&g->kv[i], &g->kv[i + 1], (size_t)(g->n_kv - i - 1) * sizeof *g->kv);
	g->n_kv--;
	return TFM_OK;
}
