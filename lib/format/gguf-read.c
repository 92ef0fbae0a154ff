/* gguf-read.c: parse GGUF v2/v3 from bytes in memory.  Every count, length
 * and offset is checked against the bytes left before anything is
 * allocated or read, so a corrupt or hostile file gives TFM_E_FORMAT with a
 * message naming the file and the problem, never a crash.
 *
 * Layout (all little-endian):
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv x { string key, u32 type, value }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
 *   zero padding to general.alignment (default 32)
 *   data section: tensor data at the given offsets (each aligned)
 * string = u64 len + bytes (no NUL); array = u32 elem type + u64 n + elems. */
#include "gguf-impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rd {
	const uint8_t *p;   /* [size] */
	size_t size, pos;
	const char *name;   /* the file, for messages */
	const char *what;   /* what is being read, for messages */
};

/* Smallest encoding of a key/value and of a tensor info: bounds the
 * counts before any allocation. */
#define MIN_KV_BYTES 13      /* u64 len (empty key) + u32 type + 1-byte value */
#define MIN_TINFO_BYTES 32   /* u64 len + u32 n_dims + u64 ne + u32 type + u64 offset */

static size_t left(const struct rd *r) { return r->size - r->pos; }

static int need(struct rd *r, uint64_t n)
{
	if (n > left(r))
		return tfm_seterr(TFM_E_FORMAT, "%s: truncated: %s at byte %zu needs %llu bytes, "
				  "%zu left", r->name, r->what, r->pos, (unsigned long long)n, left(r));
	return TFM_OK;
}

static int rd_raw(struct rd *r, void *dst, size_t n)
{
	int st = need(r, n);
	if (st)
		return st;
	memcpy(dst, r->p + r->pos, n);
	r->pos += n;
	return TFM_OK;
}

static int rd_u32(struct rd *r, uint32_t *v) { return rd_raw(r, v, 4); }
static int rd_u64(struct rd *r, uint64_t *v) { return rd_raw(r, v, 8); }

/* A GGUF string: points into the buffer (not NUL-terminated). */
static int rd_str(struct rd *r, const char **s, size_t *len)
{
	uint64_t n;
	int st = rd_u64(r, &n);
	if (st || (st = need(r, n)))
		return st;
	*s = (const char *)r->p + r->pos;
	*len = (size_t)n;
	r->pos += (size_t)n;
	return TFM_OK;
}

__attribute__((format(printf, 2, 3)))
static int bad(struct rd *r, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tfm_seterr(TFM_E_FORMAT, "%s: %s", r->name, msg);
}

static int rd_arr(struct rd *r, struct tfm_gguf_val *v, int depth, const char *key);

/* A string array: a first pass checks the lengths and sizes the pool. */
static int rd_str_arr(struct rd *r, struct tfm_gguf_val *v)
{
	size_t start = r->pos, pool = 0;
	const char *s;
	size_t len;
	int st;
	for (int64_t j = 0; j < v->n; j++) {
		if ((st = rd_str(r, &s, &len)))
			return st;
		pool += len + 1; /* cannot overflow: len + 8 bytes are in the buffer */
	}
	r->pos = start;
	v->off = tfm_malloc(((size_t)v->n + 1) * sizeof *v->off);
	v->pool = tfm_malloc(pool + 1);
	if (!v->off || !v->pool)
		return TFM_E_NOMEM;
	size_t o = 0;
	for (int64_t j = 0; j < v->n; j++) {
		rd_str(r, &s, &len); /* checked above */
		v->off[j] = o;
		memcpy(v->pool + o, s, len);
		v->pool[o + len] = 0;
		o += len + 1;
	}
	v->off[v->n] = o;
	return TFM_OK;
}

/* A value of the given type into v (v zeroed by the caller). */
static int rd_val(struct rd *r, int type, struct tfm_gguf_val *v, int depth, const char *key)
{
	size_t w = gguf_type_width(type);
	v->type = type;
	if (w)
		return rd_raw(r, &v->raw, w);
	if (type == TFM_GGUF_STRING) {
		const char *s;
		int st = rd_str(r, &s, &v->len);
		if (st)
			return st;
		if (!(v->str = tfm_malloc(v->len + 1)))
			return TFM_E_NOMEM;
		memcpy(v->str, s, v->len);
		v->str[v->len] = 0;
		return TFM_OK;
	}
	if (type == TFM_GGUF_ARRAY)
		return rd_arr(r, v, depth, key);
	return bad(r, "key %s: invalid value type %d", key, type);
}

static int rd_arr(struct rd *r, struct tfm_gguf_val *v, int depth, const char *key)
{
	uint32_t et;
	uint64_t n;
	int st;
	if (depth >= GGUF_MAX_DEPTH)
		return bad(r, "key %s: arrays nested deeper than %d", key, GGUF_MAX_DEPTH);
	if ((st = rd_u32(r, &et)) || (st = rd_u64(r, &n)))
		return st;
	if (et >= TFM_GGUF_TYPE_COUNT)
		return bad(r, "key %s: invalid array element type %u", key, et);
	/* every element takes at least this many bytes of the file */
	size_t min = gguf_type_width((int)et);
	if (!min)
		min = et == TFM_GGUF_STRING ? 8 : 12;
	if (n > left(r) / min)
		return bad(r, "key %s: array of %llu elements does not fit in the file", key,
			   (unsigned long long)n);
	v->elem_type = (int)et;
	v->n = (int64_t)n;
	if (gguf_type_width((int)et)) {
		if (!(v->data = tfm_malloc((size_t)n * min + 1)))
			return TFM_E_NOMEM;
		return rd_raw(r, v->data, (size_t)n * min);
	}
	if (et == TFM_GGUF_STRING)
		return rd_str_arr(r, v);
	if (!(v->sub = tfm_calloc((size_t)n + 1, sizeof *v->sub)))
		return TFM_E_NOMEM;
	for (uint64_t j = 0; j < n; j++) {
		v->sub[j].type = TFM_GGUF_ARRAY;
		if ((st = rd_arr(r, &v->sub[j], depth + 1, key)))
			return st;
	}
	return TFM_OK;
}

static int rd_header(struct rd *r, struct tfm_gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
	uint8_t magic[4];
	uint32_t ver;
	int st;
	r->what = "the header";
	if (r->size < 4 || memcmp(r->p, "GGUF", 4))
		return tfm_seterr(TFM_E_FORMAT, "%s: not a GGUF file (bad magic)", r->name);
	if ((st = rd_raw(r, magic, 4)) || (st = rd_u32(r, &ver)))
		return st;
	if (ver == 0x02000000 || ver == 0x03000000)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: big-endian GGUF is not supported", r->name);
	if (ver != 2 && ver != 3)
		return tfm_seterr(TFM_E_FORMAT, "%s: unsupported GGUF version %u (tfm reads 2 and 3)",
				  r->name, ver);
	g->version = ver;
	if ((st = rd_u64(r, n_tensors)) || (st = rd_u64(r, n_kv)))
		return st;
	/* bound the counts by the bytes that are there */
	if (*n_kv > left(r) / MIN_KV_BYTES)
		return bad(r, "%llu key/value pairs cannot fit in the file", (unsigned long long)*n_kv);
	if (*n_tensors > left(r) / MIN_TINFO_BYTES ||
	    *n_kv * MIN_KV_BYTES + *n_tensors * MIN_TINFO_BYTES > left(r))
		return bad(r, "%llu tensor infos cannot fit in the file", (unsigned long long)*n_tensors);
	return TFM_OK;
}

static int has_nul(const char *s, size_t len) { return memchr(s, 0, len) != NULL; }

static int rd_kvs(struct rd *r, struct tfm_gguf *g, uint64_t n_kv)
{
	char kb[512], what[560];
	int st;
	for (uint64_t i = 0; i < n_kv; i++) {
		const char *key;
		size_t klen;
		uint32_t type;
		r->what = "a key";
		if ((st = rd_str(r, &key, &klen)))
			return st;
		gguf_sane(key, klen, kb);
		if (has_nul(key, klen))
			return bad(r, "key %s: contains a NUL byte", kb);
		snprintf(what, sizeof what, "the value of key %s", kb);
		r->what = what;
		if ((st = rd_u32(r, &type)))
			return st;
		if (type >= TFM_GGUF_TYPE_COUNT)
			return bad(r, "key %s: invalid value type %u", kb, type);
		struct tfm_gguf_val v = { 0 };
		if ((st = rd_val(r, (int)type, &v, 0, kb))) {
			gguf_val_free(&v);
			return st;
		}
		/* duplicates are found afterwards, in n log n */
		if ((st = gguf_kv_append(g, key, klen, &v)))
			return st;
	}
	r->what = "the tensor infos"; /* what[] goes out of scope */
	return TFM_OK;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Duplicate strings among n (keys or tensor names), or TFM_OK. */
static int check_dups(struct rd *r, const char **s, int64_t n, const char *what)
{
	char b[512];
	qsort(s, (size_t)n, sizeof *s, cmp_str);
	for (int64_t i = 1; i < n; i++)
		if (!strcmp(s[i - 1], s[i]))
			return tfm_seterr(TFM_E_FORMAT, "%s: duplicate %s %s", r->name, what,
					  gguf_sane(s[i], strlen(s[i]), b));
	return TFM_OK;
}

static int rd_tinfo(struct rd *r, struct gguf_tensor *t)
{
	const char *name;
	size_t len;
	uint32_t n_dims, type;
	char nb[512], what[560];
	int st;
	r->what = "a tensor name";
	if ((st = rd_str(r, &name, &len)))
		return st;
	gguf_sane(name, len, nb);
	if (has_nul(name, len))
		return bad(r, "tensor %s: name contains a NUL byte", nb);
	char *copy = tfm_malloc(len + 1);
	if (!copy)
		return TFM_E_NOMEM;
	memcpy(copy, name, len);
	copy[len] = 0;
	t->pub.name = copy;
	snprintf(what, sizeof what, "the info of tensor %s", nb);
	r->what = what;
	if ((st = rd_u32(r, &n_dims)))
		return st;
	if (n_dims < 1 || n_dims > TFM_GGUF_MAX_DIMS)
		return bad(r, "tensor %s: %u dimensions (1 to 4 allowed)", nb, n_dims);
	t->pub.n_dims = (int)n_dims;
	uint64_t nel = 1;
	for (int d = 0; d < TFM_GGUF_MAX_DIMS; d++) {
		uint64_t ne = 1;
		if (d < (int)n_dims && (st = rd_u64(r, &ne)))
			return st;
		if (ne > INT64_MAX || (ne && nel > INT64_MAX / ne))
			return bad(r, "tensor %s: shape too large (dimension of %llu)", nb,
				   (unsigned long long)ne);
		nel *= ne;
		t->pub.ne[d] = (int64_t)ne;
	}
	if ((st = rd_u32(r, &type)) || (st = rd_u64(r, &t->pub.offset)))
		return st;
	const struct tfm_type_info *ti = tfm_type_info((int)type);
	if (!ti)
		return bad(r, "tensor %s: invalid tensor type id %u", nb, type);
	t->pub.type = (int)type;
	if (t->pub.ne[0] % ti->blck)
		return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: row of %lld elements is not a "
				  "multiple of the %s block size %lld", r->name, nb,
				  (long long)t->pub.ne[0], ti->name, (long long)ti->blck);
	t->pub.nbytes = tfm_type_nbytes((int)type, (int64_t)nel);
	if (!t->pub.nbytes && nel)
		return bad(r, "tensor %s: %llu elements do not fit in memory", nb,
			   (unsigned long long)nel);
	r->what = "the tensor infos"; /* what[] goes out of scope */
	return TFM_OK;
}

static int cmp_off(const void *a, const void *b)
{
	const struct tfm_gguf_tensor *x = *(const struct tfm_gguf_tensor *const *)a;
	const struct tfm_gguf_tensor *y = *(const struct tfm_gguf_tensor *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The alignment: general.alignment if present (a u32 power of two). */
static int rd_alignment(struct rd *r, const struct tfm_gguf *g, size_t *align)
{
	int64_t i = tfm_gguf_find(g, "general.alignment");
	*align = TFM_GGUF_DEFAULT_ALIGNMENT;
	if (i < 0)
		return TFM_OK;
	const struct tfm_gguf_val *v = &g->kv[i].v;
	if (v->type != TFM_GGUF_UINT32)
		return bad(r, "general.alignment is %s, not uint32", gguf_type_name(v->type));
	uint32_t a = (uint32_t)v->raw;
	if (!a || (a & (a - 1)))
		return bad(r, "general.alignment %u is not a power of two", a);
	*align = a;
	return TFM_OK;
}

/* Place the data section and each tensor in it; tensors must be aligned,
 * inside the file and must not overlap. */
static int place_tensors(struct rd *r, struct tfm_gguf *g)
{
	const struct tfm_gguf_tensor **by_off = NULL; /* [n_t], sorted by offset */
	size_t align;
	char nb[512], nb2[512];
	int st = rd_alignment(r, g, &align);
	if (st)
		return st;
	size_t pad = (align - r->pos % align) % align;
	g->data_offset = r->pos + pad;
	if (g->n_t == 0) {
		if (g->data_offset > r->size) /* vocab-only files may end unpadded */
			g->data_offset = r->size;
		return TFM_OK;
	}
	if (pad > left(r))
		return bad(r, "data section starts past the end of the file (%zu bytes)", r->size);
	size_t data_size = r->size - g->data_offset;
	for (int64_t i = 0; i < g->n_t; i++) {
		struct tfm_gguf_tensor *t = &g->t[i].pub;
		gguf_sane(t->name, strlen(t->name), nb);
		if (t->offset % align)
			return bad(r, "tensor %s: offset %llu is not a multiple of the alignment %zu", nb,
				   (unsigned long long)t->offset, align);
		if (t->offset > data_size || t->nbytes > data_size - t->offset)
			return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: data [%llu, +%zu) runs past the "
					  "end of the data section (%zu bytes)", r->name, nb,
					  (unsigned long long)t->offset, t->nbytes, data_size);
		t->data = r->p + g->data_offset + t->offset;
	}
	if (!(by_off = tfm_malloc((size_t)g->n_t * sizeof *by_off)))
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < g->n_t; i++)
		by_off[i] = &g->t[i].pub;
	qsort(by_off, (size_t)g->n_t, sizeof *by_off, cmp_off);
	for (int64_t i = 1; i < g->n_t; i++) {
		const struct tfm_gguf_tensor *a = by_off[i - 1], *b = by_off[i];
		if (a->offset + a->nbytes > b->offset) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: tensor %s overlaps tensor %s", r->name,
					gguf_sane(b->name, strlen(b->name), nb),
					gguf_sane(a->name, strlen(a->name), nb2));
			break;
		}
	}
	free(by_off);
	return st;
}

static int rd_tensors(struct rd *r, struct tfm_gguf *g, uint64_t n_tensors)
{
	int st;
	/* n_tensors is bounded by the file size; the array is allocated once */
	if (n_tensors && !(g->t = tfm_calloc((size_t)n_tensors, sizeof *g->t)))
		return TFM_E_NOMEM;
	g->cap_t = (int64_t)n_tensors;
	for (uint64_t i = 0; i < n_tensors; i++) {
		g->n_t = (int64_t)i + 1;
		if ((st = rd_tinfo(r, &g->t[i])))
			return st;
	}
	return TFM_OK;
}

/* Check for duplicate keys and tensor names, and place the tensors. */
static int rd_check(struct rd *r, struct tfm_gguf *g)
{
	int64_t n = g->n_kv > g->n_t ? g->n_kv : g->n_t;
	const char **s = tfm_malloc(((size_t)n + 1) * sizeof *s);
	int st;
	if (!s)
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < g->n_kv; i++)
		s[i] = g->kv[i].key;
	if ((st = check_dups(r, s, g->n_kv, "key")))
		goto out;
	for (int64_t i = 0; i < g->n_t; i++)
		s[i] = g->t[i].pub.name;
	if ((st = check_dups(r, s, g->n_t, "tensor")))
		goto out;
	st = place_tensors(r, g);
out:
	free(s);
	return st;
}

int tfm_gguf_parse(struct tfm_gguf **out, const void *data, size_t size, const char *name)
{
	struct rd r = { .p = data, .size = size, .name = name ? name : "<gguf>" };
	struct tfm_gguf *g = NULL;
	uint64_t n_tensors, n_kv;
	int st;
	*out = NULL;
	if ((st = tfm_gguf_new(&g)))
		return st;
	free(g->name);
	if (!(g->name = tfm_strdup(r.name))) {
		st = TFM_E_NOMEM;
		goto fail;
	}
	if ((st = rd_header(&r, g, &n_tensors, &n_kv)) || (st = rd_kvs(&r, g, n_kv)) ||
	    (st = rd_tensors(&r, g, n_tensors)) || (st = rd_check(&r, g)))
		goto fail;
	*out = g;
	return TFM_OK;
fail:
	tfm_gguf_free(g);
	return st;
}

int tfm_gguf_is_gguf(const void *data, size_t size)
{
	return size >= 4 && !memcmp(data, "GGUF", 4);
}

int tfm_gguf_probe(const char *path)
{
	uint8_t head[4];
	size_t got;
	int st = tfm_input_peek(path, head, sizeof head, &got);
	if (st == TFM_E_INVAL) /* stdin or a pipe */
		return 1;
	return st ? st : tfm_gguf_is_gguf(head, got);
}
