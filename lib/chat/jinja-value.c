/* jinja-value.c: the arena, byte buffers, lists and dicts, and the Python
 * semantics of values a template observes: truth, str(), repr(), ==,
 * ordering, and json.dumps as transformers' tojson calls it. */
#include "jinja-impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer-impl.h"

/* ---- arena ---- */

struct jchunk {
	struct jchunk *next;
	size_t size;
	_Alignas(16) char data[];
};

void *ja_alloc(struct jarena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	if (n > a->left) {
		size_t sz = n > 65536 - sizeof(struct jchunk) ? n : 65536 - sizeof(struct jchunk);
		if (a->limit && a->total + sz + sizeof(struct jchunk) > a->limit) {
			tfm_seterr(TFM_E_FORMAT, "template used more than %zu MiB of memory",
				   a->limit >> 20);
			return NULL;
		}
		struct jchunk *c = tfm_malloc(sizeof *c + sz);
		if (!c)
			return NULL;
		a->total += sizeof *c + sz;
		c->size = sz;
		if (n > 4096 && a->chunks && a->left > 4096) {
			/* a big block gets a chunk of its own behind the current one, so
			 * that the current chunk's free space is not thrown away */
			c->next = a->chunks->next;
			a->chunks->next = c;
			memset(c->data, 0, n);
			return c->data;
		}
		c->next = a->chunks;
		a->chunks = c;
		a->cur = c->data;
		a->left = sz;
	}
	char *p = a->cur;
	a->cur += n;
	a->left -= n;
	memset(p, 0, n);
	return p;
}

char *ja_strndup(struct jarena *a, const char *s, size_t n)
{
	char *p = ja_alloc(a, n + 1);
	if (p && n)
		memcpy(p, s, n);
	return p;
}

void ja_free(struct jarena *a)
{
	struct jchunk *c = a->chunks;
	while (c) {
		struct jchunk *nx = c->next;
		free(c);
		c = nx;
	}
	a->chunks = NULL;
	a->cur = NULL;
	a->left = a->total = 0;
}

/* ---- buffers ---- */

static int jb_reserve(struct jbuf *b, size_t extra)
{
	if (b->max && (extra > b->max || b->n > b->max - extra))
		return tfm_seterr(TFM_E_FORMAT, "template output passed %zu bytes", b->max);
	if (b->n + extra + 1 <= b->cap)
		return TFM_OK;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + extra + 1)
		cap *= 2;
	char *p = ja_alloc(b->a, cap);
	if (!p)
		return TFM_E_FORMAT;
	if (b->n)
		memcpy(p, b->p, b->n);
	b->p = p;
	b->cap = cap;
	return TFM_OK;
}

int jb_put(struct jbuf *b, const char *s, size_t n)
{
	if (n == 0)
		return TFM_OK;
	int st = jb_reserve(b, n);
	if (st)
		return st;
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return TFM_OK;
}

int jb_putc(struct jbuf *b, char c)
{
	return jb_put(b, &c, 1);
}

int jb_printf(struct jbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return tfm_seterr(TFM_E_INTERNAL, "format failed");
	if ((size_t)n < sizeof tmp)
		return jb_put(b, tmp, (size_t)n);
	int st = jb_reserve(b, (size_t)n);
	if (st)
		return st;
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)n;
	return TFM_OK;
}

/* ---- lists and dicts ---- */

struct jlist *jl_new(struct jarena *a, size_t cap)
{
	struct jlist *l = ja_alloc(a, sizeof *l);
	if (!l)
		return NULL;
	if (cap == 0)
		cap = 1; /* never a NULL array, even empty (memcpy of 0 from it) */
	if (!(l->v = ja_alloc(a, cap * sizeof *l->v)))
		return NULL;
	l->cap = cap;
	return l;
}

int jl_push(struct jarena *a, struct jlist *l, struct jv v)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct jv *nv = ja_alloc(a, cap * sizeof *nv);
		if (!nv)
			return TFM_E_FORMAT;
		if (l->n)
			memcpy(nv, l->v, l->n * sizeof *nv);
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = v;
	return TFM_OK;
}

struct jv jv_list(struct jlist *l)
{
	struct jv v = { .t = JT_LIST };
	v.l = l;
	return v;
}

struct jdict *jd_new(struct jarena *a, size_t cap)
{
	struct jdict *d = ja_alloc(a, sizeof *d);
	if (!d)
		return NULL;
	if (cap == 0)
		cap = 1;
	if (!(d->k = ja_alloc(a, cap * sizeof *d->k)) || !(d->v = ja_alloc(a, cap * sizeof *d->v)))
		return NULL;
	d->cap = cap;
	return d;
}

struct jv *jd_get(const struct jdict *d, struct jv k)
{
	for (size_t i = 0; i < d->n; i++)
		if (jv_eq(d->k[i], k))
			return &d->v[i];
	return NULL;
}

struct jv *jd_gets(const struct jdict *d, const char *k)
{
	size_t n = strlen(k);
	for (size_t i = 0; i < d->n; i++)
		if (d->k[i].t == JT_STR && d->k[i].s.n == n && !memcmp(d->k[i].s.p, k, n))
			return &d->v[i];
	return NULL;
}

int jd_set(struct jarena *a, struct jdict *d, struct jv k, struct jv v)
{
	struct jv *old = jd_get(d, k);
	if (old) {
		*old = v;
		return TFM_OK;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct jv *nk = ja_alloc(a, cap * sizeof *nk), *nv = ja_alloc(a, cap * sizeof *nv);
		if (!nk || !nv)
			return TFM_E_FORMAT;
		if (d->n) {
			memcpy(nk, d->k, d->n * sizeof *nk);
			memcpy(nv, d->v, d->n * sizeof *nv);
		}
		d->k = nk;
		d->v = nv;
		d->cap = cap;
	}
	d->k[d->n] = k;
	d->v[d->n] = v;
	d->n++;
	return TFM_OK;
}

/* ---- Python semantics ---- */

int jv_truthy(struct jv v)
{
	switch (v.t) {
	case JT_UNDEF: case JT_NONE: return 0;
	case JT_BOOL: case JT_INT: return v.i != 0;
	case JT_FLOAT: return v.f != 0;
	case JT_STR: return v.s.n != 0;
	case JT_LIST: return v.gen == JG_GENERATOR || v.gen == JG_REVERSED || v.l->n != 0;
	case JT_DICT: return v.d->n != 0;
	default: return 1;
	}
}

int jv_isnum(struct jv v)
{
	return v.t == JT_BOOL || v.t == JT_INT || v.t == JT_FLOAT;
}

double jv_num(struct jv v)
{
	return v.t == JT_FLOAT ? v.f : (double)v.i;
}

const char *jv_typename(struct jv v)
{
	switch (v.t) {
	case JT_UNDEF: return "Undefined";
	case JT_NONE: return "NoneType";
	case JT_BOOL: return "bool";
	case JT_INT: return "int";
	case JT_FLOAT: return "float";
	case JT_STR: return "str";
	case JT_LIST:
		switch (v.gen) {
		case JG_GENERATOR: return "generator";
		case JG_REVERSED: return "list_reverseiterator";
		case JG_ITEMS: return "dict_items";
		case JG_KEYS: return "dict_keys";
		case JG_VALUES: return "dict_values";
		}
		return v.tuple ? "tuple" : "list";
	case JT_DICT: return "dict";
	case JT_NS: return "Namespace";
	case JT_MACRO: return "Macro";
	case JT_FUNC: return "builtin_function_or_method";
	case JT_METHOD: return "builtin_function_or_method";
	case JT_LOOP: return "LoopContext";
	}
	return "object";
}

/* Python's repr(float): the shortest digits that read back, laid out in
 * fixed notation for exponents in [-4, 16) and scientific otherwise. */
void jv_float_repr(double f, char *out, size_t n)
{
	if (isnan(f)) {
		snprintf(out, n, "nan");
		return;
	}
	if (isinf(f)) {
		snprintf(out, n, f < 0 ? "-inf" : "inf");
		return;
	}
	char buf[40];
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof buf, "%.*e", p - 1, f);
		if (strtod(buf, NULL) == f)
			break;
	}
	/* buf: [-]d[.ddd]e[+-]xx */
	char digits[24];
	int nd = 0, neg = 0;
	const char *s = buf;
	if (*s == '-') {
		neg = 1;
		s++;
	}
	for (; *s && *s != 'e'; s++)
		if (*s != '.')
			digits[nd++] = *s;
	int x = atoi(s + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	char *o = out;
	size_t left = n;
#define EMIT(...) do { int k_ = snprintf(o, left, __VA_ARGS__); if (k_ < 0 || (size_t)k_ >= left) return; o += k_; left -= (size_t)k_; } while (0)
	if (neg)
		EMIT("-");
	if (x < -4 || x >= 16) {
		EMIT("%c", digits[0]);
		if (nd > 1)
			EMIT(".%s", digits + 1);
		EMIT("e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
	} else if (x < 0) {
		EMIT("0.");
		for (int i = 0; i < -x - 1; i++)
			EMIT("0");
		EMIT("%s", digits);
	} else if (x + 1 >= nd) {
		EMIT("%s", digits);
		for (int i = 0; i < x + 1 - nd; i++)
			EMIT("0");
		EMIT(".0");
	} else {
		EMIT("%.*s.%s", x + 1, digits, digits + x + 1);
	}
#undef EMIT
}

static int is_printable(uint32_t c)
{
	if (c == ' ')
		return 1;
	if (c < 0x20 || c == 0x7f)
		return 0;
	if (c < 0x7f)
		return 1;
	return !(tfm_uc_flags(c) & (TFM_UC_CONTROL | TFM_UC_SEPARATOR));
}

static int repr_str(struct jbuf *b, const char *p, size_t n)
{
	char q = '\'';
	if (memchr(p, '\'', n) && !memchr(p, '"', n))
		q = '"';
	int st = jb_putc(b, q);
	for (size_t i = 0; i < n && !st;) {
		size_t j = i;
		uint32_t c = ju_decode(p, n, &j);
		if (c == (uint32_t)q || c == '\\') {
			char e[2] = { '\\', (char)c };
			st = jb_put(b, e, 2);
		} else if (c == '\n') {
			st = jb_put(b, "\\n", 2);
		} else if (c == '\r') {
			st = jb_put(b, "\\r", 2);
		} else if (c == '\t') {
			st = jb_put(b, "\\t", 2);
		} else if (!is_printable(c)) {
			st = c < 0x100 ? jb_printf(b, "\\x%02x", c) : c < 0x10000 ? jb_printf(b, "\\u%04x", c)
			     : jb_printf(b, "\\U%08x", c);
		} else {
			st = jb_put(b, p + i, j - i);
		}
		i = j;
	}
	return st ? st : jb_putc(b, q);
}

int jv_repr(struct jbuf *b, struct jv v, int depth)
{
	if (depth > 200)
		return tfm_seterr(TFM_E_FORMAT, "value nested too deeply to print");
	int st = TFM_OK;
	switch (v.t) {
	case JT_STR:
		return repr_str(b, v.s.p, v.s.n);
	case JT_LIST:
		if (v.gen == JG_GENERATOR || v.gen == JG_REVERSED)
			return jb_printf(b, "<%s object>", jv_typename(v));
		if (v.gen) {
			struct jv plain = v;
			plain.gen = JG_LIST;
			if ((st = jb_printf(b, "%s(", jv_typename(v))) || (st = jv_repr(b, plain, depth + 1)))
				return st;
			return jb_putc(b, ')');
		}
		st = jb_putc(b, v.tuple ? '(' : '[');
		for (size_t i = 0; i < v.l->n && !st; i++) {
			if (i)
				st = jb_put(b, ", ", 2);
			if (!st)
				st = jv_repr(b, v.l->v[i], depth + 1);
		}
		if (!st && v.tuple && v.l->n == 1)
			st = jb_putc(b, ',');
		return st ? st : jb_putc(b, v.tuple ? ')' : ']');
	case JT_DICT:
	case JT_NS:
		if (v.t == JT_NS)
			st = jb_put(b, "<Namespace ", 11);
		if (!st)
			st = jb_putc(b, '{');
		for (size_t i = 0; i < v.d->n && !st; i++) {
			if (i)
				st = jb_put(b, ", ", 2);
			if (!st)
				st = jv_repr(b, v.d->k[i], depth + 1);
			if (!st)
				st = jb_put(b, ": ", 2);
			if (!st)
				st = jv_repr(b, v.d->v[i], depth + 1);
		}
		if (!st)
			st = jb_putc(b, '}');
		return st || v.t != JT_NS ? st : jb_putc(b, '>');
	case JT_UNDEF:
		return jb_put(b, "Undefined", 9);
	default:
		return jv_write(b, v);
	}
}

int jv_write(struct jbuf *b, struct jv v)
{
	char num[48];
	switch (v.t) {
	case JT_UNDEF: return TFM_OK;
	case JT_NONE: return jb_put(b, "None", 4);
	case JT_BOOL: return v.i ? jb_put(b, "True", 4) : jb_put(b, "False", 5);
	case JT_INT: return jb_printf(b, "%lld", (long long)v.i);
	case JT_FLOAT:
		jv_float_repr(v.f, num, sizeof num);
		return jb_put(b, num, strlen(num));
	case JT_STR: return jb_put(b, v.s.p, v.s.n);
	case JT_LIST:
		return jv_repr(b, v, 0);
	case JT_DICT: case JT_NS: return jv_repr(b, v, 0);
	case JT_MACRO: return jb_printf(b, "<Macro '%s'>", v.m->name);
	case JT_FUNC: return jb_printf(b, "<built-in function %s>", v.fn->name);
	case JT_METHOD: return jb_printf(b, "<built-in method %s of %s object>", v.bm->name,
					 jv_typename(v.bm->self));
	case JT_LOOP: return jb_printf(b, "<LoopContext %zu/%zu>", v.loop->i + 1, v.loop->items->n);
	}
	return TFM_OK;
}

int jv_tostr(struct jarena *a, struct jv v, struct jv *out)
{
	if (v.t == JT_STR) {
		*out = v;
		return TFM_OK;
	}
	if (v.t == JT_UNDEF) {
		*out = jv_str("", 0);
		return TFM_OK;
	}
	struct jbuf b = { .a = a };
	int st = jv_write(&b, v);
	if (st)
		return st;
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

/* Values nested deeper than this compare unequal (jinja2 would end in a
 * RecursionError): a bound on the C stack. */
#define CMP_DEPTH 500

static int eq_d(struct jv a, struct jv b, int depth)
{
	if (depth > CMP_DEPTH)
		return 0;
	if (jv_isnum(a) && jv_isnum(b)) {
		if (a.t != JT_FLOAT && b.t != JT_FLOAT)
			return a.i == b.i;
		return jv_num(a) == jv_num(b);
	}
	if (a.t != b.t)
		return 0;
	switch (a.t) {
	case JT_UNDEF: case JT_NONE: return 1;
	case JT_STR: return a.s.n == b.s.n && !memcmp(a.s.p, b.s.p, a.s.n);
	case JT_LIST:
		if (a.gen || b.gen)
			return a.gen == b.gen && a.l == b.l;
		if (a.tuple != b.tuple || a.l->n != b.l->n)
			return 0;
		if (a.l == b.l)
			return 1;
		for (size_t i = 0; i < a.l->n; i++)
			if (!eq_d(a.l->v[i], b.l->v[i], depth + 1))
				return 0;
		return 1;
	case JT_DICT:
		if (a.d->n != b.d->n)
			return 0;
		if (a.d == b.d)
			return 1;
		for (size_t i = 0; i < a.d->n; i++) {
			struct jv *o = jd_get(b.d, a.d->k[i]);
			if (!o || !eq_d(a.d->v[i], *o, depth + 1))
				return 0;
		}
		return 1;
	case JT_NS: return a.d == b.d;
	case JT_MACRO: return a.m == b.m;
	case JT_FUNC: return a.fn == b.fn;
	case JT_METHOD: return a.bm == b.bm;
	case JT_LOOP: return a.loop == b.loop;
	}
	return 0;
}

int jv_eq(struct jv a, struct jv b)
{
	return eq_d(a, b, 0);
}

static int cmp_d(struct jv a, struct jv b, int *st, int depth)
{
	if (depth > CMP_DEPTH) {
		*st = tfm_seterr(TFM_E_FORMAT, "values nested too deeply to compare");
		return 0;
	}
	if (jv_isnum(a) && jv_isnum(b)) {
		if (a.t != JT_FLOAT && b.t != JT_FLOAT)
			return (a.i > b.i) - (a.i < b.i);
		double x = jv_num(a), y = jv_num(b);
		return (x > y) - (x < y);
	}
	if (a.t == JT_STR && b.t == JT_STR) {
		size_t n = a.s.n < b.s.n ? a.s.n : b.s.n;
		int c = n ? memcmp(a.s.p, b.s.p, n) : 0;
		if (c)
			return c;
		return (a.s.n > b.s.n) - (a.s.n < b.s.n);
	}
	if (a.t == JT_LIST && b.t == JT_LIST && a.tuple == b.tuple) {
		for (size_t i = 0; i < a.l->n && i < b.l->n; i++) {
			if (eq_d(a.l->v[i], b.l->v[i], depth + 1))
				continue;
			return cmp_d(a.l->v[i], b.l->v[i], st, depth + 1);
		}
		return (a.l->n > b.l->n) - (a.l->n < b.l->n);
	}
	*st = tfm_seterr(TFM_E_FORMAT, "'<' not supported between instances of '%s' and '%s'",
			 jv_typename(a), jv_typename(b));
	return 0;
}

int jv_cmp(struct jv a, struct jv b, int *st)
{
	return cmp_d(a, b, st, 0);
}

/* ---- json.dumps ---- */

static int json_str(struct jbuf *b, const char *p, size_t n, int ensure_ascii)
{
	int st = jb_putc(b, '"');
	size_t run = 0; /* bytes copied as they are, pending */
	for (size_t i = 0; i < n && !st;) {
		unsigned char c = (unsigned char)p[i];
		const char *esc = NULL;
		char tmp[16];
		size_t j = i + 1;
		if (c == '"') esc = "\\\"";
		else if (c == '\\') esc = "\\\\";
		else if (c == '\n') esc = "\\n";
		else if (c == '\r') esc = "\\r";
		else if (c == '\t') esc = "\\t";
		else if (c == '\b') esc = "\\b";
		else if (c == '\f') esc = "\\f";
		else if (c < 0x20) {
			snprintf(tmp, sizeof tmp, "\\u%04x", c);
			esc = tmp;
		} else if (c >= 0x80 && ensure_ascii) {
			j = i;
			uint32_t cp = ju_decode(p, n, &j);
			if (cp >= 0x10000) {
				cp -= 0x10000;
				snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
			} else {
				snprintf(tmp, sizeof tmp, "\\u%04x", cp);
			}
			esc = tmp;
		}
		if (esc) {
			if (run)
				st = jb_put(b, p + i - run, run);
			run = 0;
			if (!st)
				st = jb_put(b, esc, strlen(esc));
		} else {
			run++;
		}
		i = j;
	}
	if (!st && run)
		st = jb_put(b, p + n - run, run);
	return st ? st : jb_putc(b, '"');
}

static int json_nl(struct jbuf *b, const struct jjson_opts *o, int level)
{
	int st = jb_putc(b, '\n');
	for (int i = 0; i < level && !st; i++)
		st = jb_put(b, o->indent, strlen(o->indent));
	return st;
}

/* json.dumps turns keys that are not strings into strings. */
static int json_key(struct jarena *a, struct jv k, struct jv *out)
{
	switch (k.t) {
	case JT_STR: *out = k; return TFM_OK;
	case JT_NONE: *out = JV_LIT("null"); return TFM_OK;
	case JT_BOOL: *out = k.i ? JV_LIT("true") : JV_LIT("false"); return TFM_OK;
	case JT_INT: case JT_FLOAT: return jv_tostr(a, k, out);
	default:
		return tfm_seterr(TFM_E_FORMAT, "keys must be str, int, float, bool or None, not %s",
				  jv_typename(k));
	}
}

static int key_cmp(const void *x, const void *y)
{
	const struct jv *a = x, *b = y;
	int st = 0;
	return jv_cmp(a[0], b[0], &st);
}

int jv_json(struct jbuf *b, struct jv v, const struct jjson_opts *o, int depth)
{
	char num[48];
	int st = TFM_OK;
	if (depth > 200)
		return tfm_seterr(TFM_E_FORMAT, "value nested too deeply for tojson");
	switch (v.t) {
	case JT_NONE: return jb_put(b, "null", 4);
	case JT_BOOL: return v.i ? jb_put(b, "true", 4) : jb_put(b, "false", 5);
	case JT_INT: return jb_printf(b, "%lld", (long long)v.i);
	case JT_FLOAT:
		if (isnan(v.f))
			return jb_put(b, "NaN", 3);
		if (isinf(v.f))
			return v.f < 0 ? jb_put(b, "-Infinity", 9) : jb_put(b, "Infinity", 8);
		jv_float_repr(v.f, num, sizeof num);
		return jb_put(b, num, strlen(num));
	case JT_STR: return json_str(b, v.s.p, v.s.n, o->ensure_ascii);
	case JT_LIST:
		if (v.gen)
			break;
		if (v.l->n == 0)
			return jb_put(b, "[]", 2);
		st = jb_putc(b, '[');
		for (size_t i = 0; i < v.l->n && !st; i++) {
			if (i)
				st = jb_put(b, o->item_sep, strlen(o->item_sep));
			if (!st && o->indent)
				st = json_nl(b, o, depth + 1);
			if (!st)
				st = jv_json(b, v.l->v[i], o, depth + 1);
		}
		if (!st && o->indent)
			st = json_nl(b, o, depth);
		return st ? st : jb_putc(b, ']');
	case JT_DICT: {
		if (v.d->n == 0)
			return jb_put(b, "{}", 2);
		/* pairs (key as a string, value) in order, sorted if asked */
		struct jv *kv = ja_alloc(b->a, 2 * v.d->n * sizeof *kv);
		if (!kv)
			return TFM_E_FORMAT;
		for (size_t i = 0; i < v.d->n; i++) {
			if ((st = json_key(b->a, v.d->k[i], &kv[2 * i])))
				return st;
			kv[2 * i + 1] = v.d->v[i];
		}
		if (o->sort_keys)
			qsort(kv, v.d->n, 2 * sizeof *kv, key_cmp);
		st = jb_putc(b, '{');
		for (size_t i = 0; i < v.d->n && !st; i++) {
			if (i)
				st = jb_put(b, o->item_sep, strlen(o->item_sep));
			if (!st && o->indent)
				st = json_nl(b, o, depth + 1);
			if (!st)
				st = json_str(b, kv[2 * i].s.p, kv[2 * i].s.n, o->ensure_ascii);
			if (!st)
				st = jb_put(b, o->key_sep, strlen(o->key_sep));
			if (!st)
				st = jv_json(b, kv[2 * i + 1], o, depth + 1);
		}
		if (!st && o->indent)
			st = json_nl(b, o, depth);
		return st ? st : jb_putc(b, '}');
	}
	default:
		break;
	}
	return tfm_seterr(TFM_E_FORMAT, "Object of type %s is not JSON serializable", jv_typename(v));
}
