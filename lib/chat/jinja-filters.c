/* jinja-filters.c: jinja2's builtin filters as chat templates use them,
 * with transformers' tojson (json.dumps with ensure_ascii=False and its
 * indent, separators and sort_keys options).  Filters that give
 * generators in jinja2 (map, select, items, unique...) give lists marked as
 * generators, so that len() and tojson of them fail there as in jinja2. */
#include "jinja-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jm_splitlines(struct jrt *r, struct jv s, int keepends, struct jlist **out);
int jm_replace(struct jrt *r, struct jv s, struct jv old, struct jv new, int64_t count, struct jv *out);

typedef int (*filter_fn)(struct jrt *r, struct jv v, struct jargs *a, struct jv *out);

static struct jv gen(struct jlist *l)
{
	struct jv v = jv_list(l);
	v.gen = JG_GENERATOR;
	return v;
}

static int arg_int(struct jrt *r, const struct jargs *a, int pos, const char *kw, int64_t def,
		   int64_t *out)
{
	struct jv v;
	if (!ja_arg(a, pos, kw, &v)) {
		*out = def;
		return TFM_OK;
	}
	if (v.t == JT_INT || v.t == JT_BOOL) {
		*out = v.i;
		return TFM_OK;
	}
	if (v.t == JT_FLOAT) {
		*out = (int64_t)v.f;
		return TFM_OK;
	}
	return jr_err(r, "'%s' argument must be an integer, not %s", kw ? kw : "the", jv_typename(v));
}

static int arg_bool(const struct jargs *a, int pos, const char *kw, int def)
{
	struct jv v;
	return ja_arg(a, pos, kw, &v) ? jv_truthy(v) : def;
}

static int soft_str(struct jrt *r, struct jv v, struct jv *out)
{
	return jv_tostr(&r->a, v, out);
}

/* jinja2's attribute getter: "a.b.0" looks up each part as an item
 * (integers for digit parts), falling back to attributes. */
static int attr_path(struct jrt *r, struct jv item, struct jv path, struct jv *out)
{
	if (path.t == JT_INT) {
		if (item.t == JT_UNDEF)
			return jr_undef_err(r, item);
		return jm_getitem(r, item, path, out);
	}
	if (path.t != JT_STR)
		return jr_err(r, "attribute must be a string");
	const char *p = path.s.p, *e = p + path.s.n;
	while (1) {
		const char *dot = memchr(p, '.', (size_t)(e - p));
		const char *pe = dot ? dot : e;
		struct jv key = jv_str(p, (size_t)(pe - p));
		int digits = pe > p;
		for (const char *q = p; q < pe; q++)
			digits &= *q >= '0' && *q <= '9';
		if (digits)
			key = jv_int(atoll(p));
		if (item.t == JT_UNDEF)
			return jr_undef_err(r, item);
		int st = jm_getitem(r, item, key, &item);
		if (st)
			return st;
		if (!dot)
			break;
		p = dot + 1;
	}
	*out = item;
	return TFM_OK;
}

/* Lowercased for the case-insensitive sorts and comparisons of jinja2. */
static int fold(struct jrt *r, struct jv v, int case_sensitive, struct jv *out)
{
	if (case_sensitive || v.t != JT_STR) {
		*out = v;
		return TFM_OK;
	}
	struct jbuf b = { .a = &r->a };
	for (size_t i = 0; i < v.s.n;) {
		char enc[4];
		uint32_t c = ju_lower(ju_decode(v.s.p, v.s.n, &i));
		if (jb_put(&b, enc, ju_encode(c, enc)))
			return TFM_E_FORMAT;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

/* Stable merge sort of items by keys (parallel arrays). */
static int merge_sort(struct jrt *r, struct jv *keys, struct jv *items, size_t n, int reverse)
{
	struct jv *tk = ja_alloc(&r->a, n * sizeof *tk), *ti = ja_alloc(&r->a, n * sizeof *ti);
	int st = TFM_OK;
	if (!tk || !ti)
		return TFM_E_FORMAT;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi) {
				int c = jv_cmp(keys[j], keys[i], &st);
				if (st)
					return st;
				/* take the right one only when strictly before the left one */
				int take_right = reverse ? c > 0 : c < 0;
				if (take_right) {
					tk[k] = keys[j];
					ti[k++] = items[j++];
				} else {
					tk[k] = keys[i];
					ti[k++] = items[i++];
				}
			}
			while (i < mid) {
				tk[k] = keys[i];
				ti[k++] = items[i++];
			}
			while (j < hi) {
				tk[k] = keys[j];
				ti[k++] = items[j++];
			}
		}
		memcpy(keys, tk, n * sizeof *keys);
		memcpy(items, ti, n * sizeof *items);
	}
	return TFM_OK;
}

static int to_list(struct jrt *r, struct jv v, struct jlist **out)
{
	struct jlist *l;
	int st = jr_iter(r, v, &l);
	if (st)
		return st;
	struct jlist *c = jl_new(&r->a, l->n);
	if (!c)
		return TFM_E_FORMAT;
	if (l->n)
		memcpy(c->v, l->v, l->n * sizeof *c->v);
	c->n = l->n;
	*out = c;
	return TFM_OK;
}

/* ---- filters ---- */

static int f_abs(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	if (v.t == JT_FLOAT)
		*out = jv_float(fabs(v.f));
	else if (v.t == JT_INT || v.t == JT_BOOL)
		*out = v.i == INT64_MIN ? jv_float(-(double)v.i) : jv_int(v.i < 0 ? -v.i : v.i);
	else
		return jr_err(r, "bad operand type for abs(): '%s'", jv_typename(v));
	return TFM_OK;
}

static int f_attr(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv name;
	if (!ja_arg(a, 0, "name", &name) || name.t != JT_STR)
		return jr_err(r, "attr: expected an attribute name");
	if (v.t == JT_UNDEF)
		return jr_undef_err(r, v);
	char *s = ja_strndup(&r->a, name.s.p, name.s.n);
	if (!s)
		return TFM_E_FORMAT;
	if (v.t == JT_DICT) {
		/* dict keys are items, not attributes */
		struct jdict empty = { 0 };
		struct jv m = v;
		m.d = &empty;
		int st = jm_getattr(r, m, s, out);
		if (!st && out->t == JT_METHOD)
			out->bm->self = v;
		return st;
	}
	return jm_getattr(r, v, s, out);
}

static int f_batch(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	int64_t n;
	struct jv fill;
	struct jlist *items, *res = jl_new(&r->a, 0), *cur = NULL;
	int st, has_fill = ja_arg(a, 1, "fill_with", &fill) && fill.t != JT_NONE;
	if ((st = arg_int(r, a, 0, "linecount", 0, &n)) || (st = jr_iter(r, v, &items)))
		return st;
	if (n <= 0)
		return jr_err(r, "batch: linecount must be positive");
	if (!res)
		return TFM_E_FORMAT;
	for (size_t i = 0; i < items->n; i++) {
		if (!cur && !(cur = jl_new(&r->a, 0)))
			return TFM_E_FORMAT;
		if ((st = jl_push(&r->a, cur, items->v[i])))
			return st;
		if ((int64_t)cur->n == n) {
			if ((st = jl_push(&r->a, res, jv_list(cur))))
				return st;
			cur = NULL;
		}
	}
	if (cur) {
		while (has_fill && (int64_t)cur->n < n)
			if ((st = jl_push(&r->a, cur, fill)))
				return st;
		if ((st = jl_push(&r->a, res, jv_list(cur))))
			return st;
	}
	*out = gen(res);
	return TFM_OK;
}

static int f_case(struct jrt *r, struct jv v, const char *method, struct jv *out)
{
	struct jv s;
	struct jargs none = { 0 };
	int st = soft_str(r, v, &s);
	if (st)
		return st;
	struct jmethod m = { s, method };
	return jm_call_method(r, &m, &none, out);
}

static int f_lower(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return f_case(r, v, "lower", out); }
static int f_upper(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return f_case(r, v, "upper", out); }
static int f_capitalize(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return f_case(r, v, "capitalize", out); }

/* jinja2's title: a word starts after spaces, '-', '(', '{', '[' or '<'. */
static int f_title(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s;
	int st = soft_str(r, v, &s), start = 1;
	if (st)
		return st;
	struct jbuf b = { .a = &r->a };
	for (size_t i = 0; i < s.s.n;) {
		uint32_t c = ju_decode(s.s.p, s.s.n, &i);
		int sep = ju_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
		uint32_t m = sep ? c : start ? ju_upper(c) : ju_lower(c);
		start = sep;
		char enc[4];
		if (jb_put(&b, enc, ju_encode(m, enc)))
			return TFM_E_FORMAT;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int f_center(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s, w;
	struct jv args[1];
	const char *kw[1] = { NULL };
	int st = soft_str(r, v, &s);
	if (st)
		return st;
	if (!ja_arg(a, 0, "width", &w))
		w = jv_int(80);
	args[0] = w;
	struct jargs ca = { 1, args, kw };
	struct jmethod m = { s, "center" };
	return jm_call_method(r, &m, &ca, out);
}

static int f_default(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv d;
	if (!ja_arg(a, 0, "default_value", &d))
		d = JV_LIT("");
	int boolean = arg_bool(a, 1, "boolean", 0);
	*out = v.t == JT_UNDEF || (boolean && !jv_truthy(v)) ? d : v;
	return TFM_OK;
}

static int f_dictsort(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv by = JV_LIT("key");
	int cs = arg_bool(a, 0, "case_sensitive", 0), st;
	ja_arg(a, 1, "by", &by);
	int reverse = arg_bool(a, 2, "reverse", 0);
	if (v.t != JT_DICT)
		return jr_err(r, "dictsort: expected a mapping, got '%s'", jv_typename(v));
	int pos = by.t == JT_STR && by.s.n == 5 && !memcmp(by.s.p, "value", 5);
	if (!pos && !(by.t == JT_STR && by.s.n == 3 && !memcmp(by.s.p, "key", 3)))
		return jr_err(r, "You can only sort by either \"key\" or \"value\"");
	size_t n = v.d->n;
	struct jlist *l = jl_new(&r->a, n);
	struct jv *keys = ja_alloc(&r->a, (n ? n : 1) * sizeof *keys);
	if (!l || !keys)
		return TFM_E_FORMAT;
	for (size_t i = 0; i < n; i++) {
		struct jlist *pair = jl_new(&r->a, 2);
		if (!pair)
			return TFM_E_FORMAT;
		pair->v[0] = v.d->k[i];
		pair->v[1] = v.d->v[i];
		pair->n = 2;
		l->v[i] = jv_list(pair);
		l->v[i].tuple = 1;
		if ((st = fold(r, pos ? v.d->v[i] : v.d->k[i], cs, &keys[i])))
			return st;
	}
	l->n = n;
	if ((st = merge_sort(r, keys, l->v, n, reverse)))
		return st;
	*out = jv_list(l);
	return TFM_OK;
}

static int f_escape(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s;
	int st = soft_str(r, v, &s);
	if (st)
		return st;
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	for (size_t i = 0; i < s.s.n; i++) {
		const char *e = NULL;
		switch (s.s.p[i]) {
		case '&': e = "&amp;"; break;
		case '<': e = "&lt;"; break;
		case '>': e = "&gt;"; break;
		case '"': e = "&#34;"; break;
		case '\'': e = "&#39;"; break;
		}
		if (e ? jb_put(&b, e, strlen(e)) : jb_putc(&b, s.s.p[i]))
			return TFM_E_FORMAT;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int f_first(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *l;
	int st = jr_iter(r, v, &l);
	if (st)
		return st;
	*out = l->n ? l->v[0] : jv_undef("No first item, sequence was empty.");
	return TFM_OK;
}

static int f_last(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *l;
	if (v.t == JT_LIST && (v.gen == JG_GENERATOR || v.gen == JG_REVERSED))
		return jr_err(r, "'%s' object is not reversible", jv_typename(v));
	int st = jr_iter(r, v, &l);
	if (st)
		return st;
	*out = l->n ? l->v[l->n - 1] : jv_undef("No last item, sequence was empty.");
	return TFM_OK;
}

/* Python's float() of a string: spaces around, underscores between
 * digits, inf and nan. */
static int parse_float(struct jv s, double *out)
{
	char buf[128];
	size_t n = 0;
	struct jv t = s;
	size_t b = 0, e = t.s.n, k;
	while ((k = ju_space_at(t.s.p, e, b)))
		b += k;
	while (e > b && (k = ju_space_before(t.s.p, e)))
		e -= k;
	if (e == b || e - b >= sizeof buf)
		return -1;
	for (size_t i = b; i < e; i++) {
		char c = t.s.p[i];
		if (c == '_') {
			if (i == b || i + 1 == e || !(t.s.p[i - 1] >= '0' && t.s.p[i - 1] <= '9') ||
			    !(t.s.p[i + 1] >= '0' && t.s.p[i + 1] <= '9'))
				return -1;
			continue;
		}
		if (!strchr("0123456789+-.eEinfatyINFATY", c) || !c)
			return -1;
		buf[n++] = c;
	}
	buf[n] = 0;
	char *end;
	*out = strtod(buf, &end);
	return *end ? -1 : 0;
}

static int parse_int(struct jv s, int64_t base, int64_t *out)
{
	size_t b = 0, e = s.s.n, k;
	while ((k = ju_space_at(s.s.p, e, b)))
		b += k;
	while (e > b && (k = ju_space_before(s.s.p, e)))
		e -= k;
	int neg = 0;
	if (b < e && (s.s.p[b] == '+' || s.s.p[b] == '-'))
		neg = s.s.p[b++] == '-';
	if (b + 1 < e && s.s.p[b] == '0' && strchr("xXoObB", s.s.p[b + 1]) && s.s.p[b + 1]) {
		char p = (char)(s.s.p[b + 1] | 32);
		int64_t pb = p == 'x' ? 16 : p == 'o' ? 8 : 2;
		if (base == 0 || base == pb) {
			base = pb;
			b += 2;
			if (b < e && s.s.p[b] == '_')
				b++;
		}
	}
	if (base == 0)
		base = 10;
	if (b == e || base < 2 || base > 36)
		return -1;
	uint64_t v = 0;
	for (size_t i = b; i < e; i++) {
		char c = s.s.p[i];
		if (c == '_' && i > b && i + 1 < e && s.s.p[i + 1] != '_')
			continue;
		int d = c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'z' ? (c | 32) - 'a' + 10 : 99;
		if (d >= base)
			return -1;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

static int f_float(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv d;
	double f;
	if (!ja_arg(a, 0, "default", &d))
		d = jv_float(0);
	if (jv_isnum(v))
		*out = jv_float(jv_num(v));
	else if (v.t == JT_STR && !parse_float(v, &f))
		*out = jv_float(f);
	else
		*out = d;
	return TFM_OK;
}

static int f_int(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv d;
	int64_t base, i;
	double f;
	int st;
	if (!ja_arg(a, 0, "default", &d))
		d = jv_int(0);
	if ((st = arg_int(r, a, 1, "base", 10, &base)))
		return st;
	if (v.t == JT_INT || v.t == JT_BOOL) {
		*out = jv_int(v.i);
	} else if (v.t == JT_FLOAT) {
		if (isnan(v.f) || isinf(v.f))
			return jr_err(r, "cannot convert float %s to integer", isnan(v.f) ? "NaN" : "infinity");
		if (fabs(v.f) >= 9.2e18)
			return jr_err(r, "integer too large");
		*out = jv_int((int64_t)v.f);
	} else if (v.t == JT_STR && !parse_int(v, base, &i)) {
		*out = jv_int(i);
	} else if (v.t == JT_STR && !parse_float(v, &f)) {
		/* jinja2: "42.23"|int is 42 */
		if (isnan(f) || isinf(f))
			return jr_err(r, "cannot convert float %s to integer", isnan(f) ? "NaN" : "infinity");
		*out = fabs(f) < 9.2e18 ? jv_int((int64_t)f) : d;
	} else {
		*out = d;
	}
	return TFM_OK;
}

static int f_format(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s;
	int st = soft_str(r, v, &s), nkw = 0, npos = 0;
	if (st)
		return st;
	for (int i = 0; i < a->n; i++)
		a->kw[i] ? nkw++ : npos++;
	if (nkw && npos)
		return jr_err(r, "can't handle positional and keyword arguments at the same time");
	struct jv args;
	if (nkw) {
		struct jdict *d = jd_new(&r->a, (size_t)nkw);
		if (!d)
			return TFM_E_FORMAT;
		for (int i = 0; i < a->n; i++)
			if ((st = jd_set(&r->a, d, jv_str(a->kw[i], strlen(a->kw[i])), a->v[i])))
				return st;
		args.t = JT_DICT;
		args.tuple = args.gen = 0;
		args.d = d;
	} else {
		struct jlist *l = jl_new(&r->a, (size_t)npos);
		if (!l)
			return TFM_E_FORMAT;
		for (int i = 0; i < a->n; i++)
			l->v[l->n++] = a->v[i];
		args = jv_list(l);
		args.tuple = 1;
	}
	return jm_percent(r, s, args, out);
}

static int f_indent(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv w, ind;
	int first = arg_bool(a, 1, "first", 0), blank = arg_bool(a, 2, "blank", 0), st;
	if (v.t == JT_UNDEF)
		return jr_undef_err(r, v);
	if (v.t != JT_STR)
		return jr_err(r, "unsupported operand type(s) for +=: '%s' and 'str'", jv_typename(v));
	if (!ja_arg(a, 0, "width", &w))
		w = jv_int(4);
	if (w.t == JT_STR) {
		ind = w;
	} else if (w.t == JT_INT || w.t == JT_BOOL) {
		if (w.i > 1000)
			return jr_err(r, "indent: width too large");
		char *sp = ja_alloc(&r->a, (size_t)(w.i > 0 ? w.i : 0) + 1);
		if (!sp)
			return TFM_E_FORMAT;
		memset(sp, ' ', (size_t)(w.i > 0 ? w.i : 0));
		ind = jv_str(sp, (size_t)(w.i > 0 ? w.i : 0));
	} else {
		return jr_err(r, "indent: width must be an integer or a string");
	}
	/* s + "\n", split into lines; every line but the first indented, blank
	 * lines too only with blank=True */
	struct jbuf t = { .a = &r->a };
	struct jlist *lines;
	if (jb_put(&t, v.s.p, v.s.n) || jb_putc(&t, '\n'))
		return TFM_E_FORMAT;
	if ((st = jm_splitlines(r, jv_str(t.p, t.n), 0, &lines)))
		return st;
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	if (first && jb_put(&b, ind.s.p, ind.s.n))
		return TFM_E_FORMAT;
	for (size_t i = 0; i < lines->n; i++) {
		struct jv ln = lines->v[i];
		if (i && jb_putc(&b, '\n'))
			return TFM_E_FORMAT;
		if (i && (blank || ln.s.n) && jb_put(&b, ind.s.p, ind.s.n))
			return TFM_E_FORMAT;
		if (jb_put(&b, ln.s.p, ln.s.n))
			return TFM_E_FORMAT;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int f_items(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	if (v.t == JT_UNDEF) {
		struct jlist *l = jl_new(&r->a, 0);
		if (!l)
			return TFM_E_FORMAT;
		*out = gen(l);
		return TFM_OK;
	}
	if (v.t != JT_DICT)
		return jr_err(r, "Can only get item pairs from a mapping.");
	struct jmethod m = { v, "items" };
	struct jargs none = { 0 };
	int st = jm_call_method(r, &m, &none, out);
	out->gen = JG_GENERATOR;
	return st;
}

static int f_join(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv d = JV_LIT(""), attr, s;
	struct jlist *l;
	int st, has_attr = ja_arg(a, 1, "attribute", &attr);
	ja_arg(a, 0, "d", &d);
	if ((st = soft_str(r, d, &d)) || (st = jr_iter(r, v, &l)))
		return st;
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	for (size_t i = 0; i < l->n; i++) {
		struct jv x = l->v[i];
		if (has_attr && (st = attr_path(r, x, attr, &x)))
			return st;
		if ((st = soft_str(r, x, &s)))
			return st;
		if ((i && jb_put(&b, d.s.p, d.s.n)) || jb_put(&b, s.s.p, s.s.n))
			return TFM_E_FORMAT;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int f_length(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	switch (v.t) {
	case JT_UNDEF: *out = jv_int(0); return TFM_OK;
	case JT_STR: *out = jv_int((int64_t)ju_len(v.s.p, v.s.n)); return TFM_OK;
	case JT_LIST:
		if (v.gen == JG_GENERATOR || v.gen == JG_REVERSED)
			break;
		*out = jv_int((int64_t)v.l->n);
		return TFM_OK;
	case JT_DICT: *out = jv_int((int64_t)v.d->n); return TFM_OK;
	case JT_LOOP: *out = jv_int((int64_t)v.loop->items->n); return TFM_OK;
	default: break;
	}
	return jr_err(r, "object of type '%s' has no len()", jv_typename(v));
}

static int f_list(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *l;
	int st = to_list(r, v, &l);
	if (st)
		return st;
	*out = jv_list(l);
	return TFM_OK;
}

static int f_map(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *items, *res;
	struct jv attr, def = jv_none(), name;
	int st, by_attr = a->n && a->kw[0] && ja_arg(a, -1, "attribute", &attr);
	if ((st = jr_iter(r, v, &items)) || !(res = jl_new(&r->a, items->n)))
		return st ? st : TFM_E_FORMAT;
	if (by_attr) {
		int has_def = ja_arg(a, -1, "default", &def);
		for (size_t i = 0; i < items->n; i++) {
			struct jv x;
			if ((st = attr_path(r, items->v[i], attr, &x)))
				return st;
			res->v[res->n++] = x.t == JT_UNDEF && has_def ? def : x;
		}
		*out = gen(res);
		return TFM_OK;
	}
	if (!ja_arg(a, 0, NULL, &name) || name.t != JT_STR)
		return jr_err(r, "map requires a filter argument");
	char *fname = ja_strndup(&r->a, name.s.p, name.s.n);
	if (!fname)
		return TFM_E_FORMAT;
	struct jargs rest = { a->n - 1, a->v + 1, a->kw + 1 };
	for (size_t i = 0; i < items->n; i++)
		if ((st = jf_filter(r, fname, items->v[i], &rest, &res->v[res->n++])))
			return st;
	*out = gen(res);
	return TFM_OK;
}

static int minmax(struct jrt *r, struct jv v, struct jargs *a, int want_max, struct jv *out)
{
	struct jlist *l;
	struct jv attr;
	int cs = arg_bool(a, 0, "case_sensitive", 0), st;
	int has_attr = ja_arg(a, 1, "attribute", &attr);
	if ((st = jr_iter(r, v, &l)))
		return st;
	if (l->n == 0) {
		*out = jv_undef("No aggregated item, sequence was empty.");
		return TFM_OK;
	}
	struct jv best = l->v[0], bk;
	if ((has_attr && (st = attr_path(r, best, attr, &bk))) || (!has_attr && (bk = best, 0)) ||
	    (st = fold(r, bk, cs, &bk)))
		return st;
	for (size_t i = 1; i < l->n; i++) {
		struct jv k = l->v[i];
		if ((has_attr && (st = attr_path(r, k, attr, &k))) || (st = fold(r, k, cs, &k)))
			return st;
		int c = jv_cmp(k, bk, &st);
		if (st)
			return st;
		if (want_max ? c > 0 : c < 0) {
			best = l->v[i];
			bk = k;
		}
	}
	*out = best;
	return TFM_OK;
}

static int f_max(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return minmax(r, v, a, 1, out); }
static int f_min(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return minmax(r, v, a, 0, out); }

static int f_pprint(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	int st = jv_repr(&b, v, 0);
	if (st)
		return st;
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int f_replace(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s, old, new, cnt;
	int64_t count = -1;
	int st;
	if (!ja_arg(a, 0, "old", &old) || !ja_arg(a, 1, "new", &new))
		return jr_err(r, "replace: expected old and new");
	if ((st = soft_str(r, v, &s)) || (st = soft_str(r, old, &old)) || (st = soft_str(r, new, &new)))
		return st;
	if (ja_arg(a, 2, "count", &cnt) && cnt.t == JT_INT)
		count = cnt.i;
	return jm_replace(r, s, old, new, count, out);
}

static int f_reverse(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	if (v.t == JT_STR) {
		struct jbuf b = { .a = &r->a };
		size_t e = v.s.n;
		while (e > 0) {
			size_t k = e - 1;
			while (k > 0 && ((unsigned char)v.s.p[k] & 0xc0) == 0x80)
				k--;
			if (jb_put(&b, v.s.p + k, e - k))
				return TFM_E_FORMAT;
			e = k;
		}
		*out = jv_str(b.p ? b.p : "", b.n);
		return TFM_OK;
	}
	struct jlist *l;
	int st = to_list(r, v, &l);
	if (st)
		return st;
	for (size_t i = 0; i < l->n / 2; i++) {
		struct jv t = l->v[i];
		l->v[i] = l->v[l->n - 1 - i];
		l->v[l->n - 1 - i] = t;
	}
	*out = jv_list(l);
	out->gen = JG_REVERSED;
	return TFM_OK;
}

static int f_round(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	int64_t prec;
	struct jv method = JV_LIT("common");
	int st = arg_int(r, a, 0, "precision", 0, &prec);
	if (st)
		return st;
	ja_arg(a, 1, "method", &method);
	int m = method.t != JT_STR ? -1 : method.s.n == 6 && !memcmp(method.s.p, "common", 6) ? 0
		: method.s.n == 4 && !memcmp(method.s.p, "ceil", 4) ? 1
		: method.s.n == 5 && !memcmp(method.s.p, "floor", 5) ? 2 : -1;
	if (m < 0)
		return jr_err(r, "method must be common, ceil or floor");
	if (!jv_isnum(v))
		return jr_err(r, "type %s doesn't define __round__ method", jv_typename(v));
	if (prec < -300 || prec > 300)
		return jr_err(r, "round: precision out of range");
	if (m == 0 && v.t != JT_FLOAT && prec >= 0) {
		*out = jv_int(v.i);
		return TFM_OK;
	}
	double x = jv_num(v), p10 = pow(10, (double)prec);
	if (m == 1) {
		*out = jv_float(ceil(x * p10) / p10);
	} else if (m == 2) {
		*out = jv_float(floor(x * p10) / p10);
	} else if (prec == 0) {
		*out = jv_float(nearbyint(x));
	} else if (prec > 0) {
		char buf[400];
		snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
		*out = jv_float(strtod(buf, NULL));
	} else {
		*out = jv_float(nearbyint(x * p10) / p10);
	}
	if (v.t != JT_FLOAT && m == 0)
		*out = jv_int((int64_t)out->f);
	return TFM_OK;
}

static int f_safe(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	return soft_str(r, v, out);
}

/* select, reject, selectattr, rejectattr */
static int select_items(struct jrt *r, struct jv v, struct jargs *a, int by_attr, int keep, struct jv *out)
{
	struct jlist *items, *res;
	struct jv attr, tname;
	int st, off = 0;
	if ((st = jr_iter(r, v, &items)) || !(res = jl_new(&r->a, 0)))
		return st ? st : TFM_E_FORMAT;
	if (by_attr) {
		if (!ja_arg(a, 0, NULL, &attr))
			return jr_err(r, "Missing parameter for attribute name");
		off = 1;
	}
	char *test = NULL;
	if (ja_arg(a, off, NULL, &tname)) {
		if (tname.t != JT_STR)
			return jr_err(r, "the test name must be a string");
		if (!(test = ja_strndup(&r->a, tname.s.p, tname.s.n)))
			return TFM_E_FORMAT;
		off++;
	}
	struct jargs rest = { a->n - off, a->v + off, a->kw + off };
	for (size_t i = 0; i < items->n; i++) {
		struct jv x = items->v[i];
		int res_t;
		if (by_attr && (st = attr_path(r, x, attr, &x)))
			return st;
		if (test) {
			if ((st = jf_test(r, test, x, &rest, &res_t)))
				return st;
		} else {
			res_t = jv_truthy(x);
		}
		if (!res_t == !keep && (st = jl_push(&r->a, res, items->v[i])))
			return st;
	}
	*out = gen(res);
	return TFM_OK;
}

static int f_select(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return select_items(r, v, a, 0, 1, out); }
static int f_reject(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return select_items(r, v, a, 0, 0, out); }
static int f_selectattr(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return select_items(r, v, a, 1, 1, out); }
static int f_rejectattr(struct jrt *r, struct jv v, struct jargs *a, struct jv *out) { return select_items(r, v, a, 1, 0, out); }

static int f_sort(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *l;
	struct jv attr;
	int reverse = arg_bool(a, 0, "reverse", 0), cs = arg_bool(a, 1, "case_sensitive", 0), st;
	int has_attr = ja_arg(a, 2, "attribute", &attr);
	if ((st = to_list(r, v, &l)))
		return st;
	struct jv *keys = ja_alloc(&r->a, (l->n ? l->n : 1) * sizeof *keys);
	if (!keys)
		return TFM_E_FORMAT;
	for (size_t i = 0; i < l->n; i++) {
		struct jv k = l->v[i];
		if ((has_attr && (st = attr_path(r, k, attr, &k))) || (st = fold(r, k, cs, &keys[i])))
			return st;
	}
	if ((st = merge_sort(r, keys, l->v, l->n, reverse)))
		return st;
	*out = jv_list(l);
	return TFM_OK;
}

static int f_string(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	return soft_str(r, v, out);
}

static int f_sum(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *l;
	struct jv attr, acc;
	int st, has_attr = ja_arg(a, 0, "attribute", &attr);
	if (!ja_arg(a, 1, "start", &acc))
		acc = jv_int(0);
	if ((st = jr_iter(r, v, &l)))
		return st;
	for (size_t i = 0; i < l->n; i++) {
		struct jv x = l->v[i];
		if (has_attr && (st = attr_path(r, x, attr, &x)))
			return st;
		if (!jv_isnum(x) || !jv_isnum(acc))
			return jr_err(r, "unsupported operand type(s) for +: '%s' and '%s'",
				      jv_typename(acc), jv_typename(x));
		if (acc.t == JT_FLOAT || x.t == JT_FLOAT)
			acc = jv_float(jv_num(acc) + jv_num(x));
		else if (__builtin_add_overflow(acc.i, x.i, &acc.i))
			return jr_err(r, "integer overflow");
		else
			acc.t = JT_INT;
	}
	*out = acc;
	return TFM_OK;
}

static int f_tojson(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jjson_opts o = { .ensure_ascii = arg_bool(a, 0, "ensure_ascii", 0),
				.sort_keys = arg_bool(a, 3, "sort_keys", 0) };
	struct jv ind, sep;
	if (ja_arg(a, 1, "indent", &ind) && ind.t != JT_NONE) {
		if (ind.t == JT_STR) {
			o.indent = ja_strndup(&r->a, ind.s.p, ind.s.n);
		} else if (ind.t == JT_INT && ind.i >= 0 && ind.i <= 1000) {
			char *sp = ja_alloc(&r->a, (size_t)ind.i + 1);
			if (sp)
				memset(sp, ' ', (size_t)ind.i);
			o.indent = sp;
		} else if (ind.t == JT_INT && ind.i < 0) {
			o.indent = "";
		} else {
			return jr_err(r, "tojson: indent must be an integer or a string");
		}
		if (!o.indent)
			return TFM_E_FORMAT;
	}
	o.item_sep = o.indent ? "," : ", ";
	o.key_sep = ": ";
	if (ja_arg(a, 2, "separators", &sep) && sep.t != JT_NONE) {
		if (sep.t != JT_LIST || sep.l->n != 2 || sep.l->v[0].t != JT_STR || sep.l->v[1].t != JT_STR)
			return jr_err(r, "tojson: separators must be a pair of strings");
		if (!(o.item_sep = ja_strndup(&r->a, sep.l->v[0].s.p, sep.l->v[0].s.n)) ||
		    !(o.key_sep = ja_strndup(&r->a, sep.l->v[1].s.p, sep.l->v[1].s.n)))
			return TFM_E_FORMAT;
	}
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	int st = jv_json(&b, v, &o, 0);
	if (st)
		return st;
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int f_trim(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s, chars;
	int st = soft_str(r, v, &s);
	if (st)
		return st;
	struct jmethod m = { s, "strip" };
	struct jargs ca = { 0 };
	const char *kw[1] = { NULL };
	if (ja_arg(a, 0, "chars", &chars)) {
		ca.n = 1;
		ca.v = &chars;
		ca.kw = kw;
	}
	return jm_call_method(r, &m, &ca, out);
}

static int f_truncate(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s, end = JV_LIT("...");
	int64_t length, leeway;
	int st, killwords = arg_bool(a, 1, "killwords", 0);
	if ((st = soft_str(r, v, &s)) || (st = arg_int(r, a, 0, "length", 255, &length)) ||
	    (st = arg_int(r, a, 3, "leeway", 5, &leeway)))
		return st;
	ja_arg(a, 2, "end", &end);
	if ((st = soft_str(r, end, &end)))
		return st;
	int64_t n = (int64_t)ju_len(s.s.p, s.s.n), en = (int64_t)ju_len(end.s.p, end.s.n);
	if (length < en || leeway < 0)
		return jr_err(r, "truncate: bad length or leeway");
	if (n <= length + leeway) {
		*out = s;
		return TFM_OK;
	}
	size_t cut = ju_offset(s.s.p, s.s.n, (size_t)(length - en));
	if (!killwords) {
		size_t k = cut;
		while (k > 0 && s.s.p[k - 1] != ' ')
			k--;
		if (k > 0)
			cut = k - 1;
	}
	struct jbuf b = { .a = &r->a };
	if (jb_put(&b, s.s.p, cut) || jb_put(&b, end.s.p, end.s.n))
		return TFM_E_FORMAT;
	*out = jv_str(b.p, b.n);
	return TFM_OK;
}

static int f_unique(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jlist *l, *res, *seen;
	struct jv attr;
	int cs = arg_bool(a, 0, "case_sensitive", 0), st;
	int has_attr = ja_arg(a, 1, "attribute", &attr);
	if ((st = jr_iter(r, v, &l)) || !(res = jl_new(&r->a, 0)) || !(seen = jl_new(&r->a, 0)))
		return st ? st : TFM_E_FORMAT;
	for (size_t i = 0; i < l->n; i++) {
		struct jv k = l->v[i];
		if ((has_attr && (st = attr_path(r, k, attr, &k))) || (st = fold(r, k, cs, &k)))
			return st;
		int dup = 0;
		for (size_t j = 0; j < seen->n && !dup; j++)
			dup = jv_eq(seen->v[j], k);
		if (!dup && ((st = jl_push(&r->a, seen, k)) || (st = jl_push(&r->a, res, l->v[i]))))
			return st;
	}
	*out = gen(res);
	return TFM_OK;
}

static int f_wordcount(struct jrt *r, struct jv v, struct jargs *a, struct jv *out)
{
	struct jv s;
	int st = soft_str(r, v, &s), in_word = 0;
	int64_t n = 0;
	if (st)
		return st;
	for (size_t i = 0; i < s.s.n;) {
		uint32_t c = ju_decode(s.s.p, s.s.n, &i);
		int w = ju_isalnum(c) || c == '_';
		n += w && !in_word;
		in_word = w;
	}
	*out = jv_int(n);
	return TFM_OK;
}

static const struct { const char *name; filter_fn fn; } filters[] = {
	{ "abs", f_abs }, { "attr", f_attr }, { "batch", f_batch }, { "capitalize", f_capitalize },
	{ "center", f_center }, { "count", f_length }, { "d", f_default }, { "default", f_default },
	{ "dictsort", f_dictsort }, { "e", f_escape }, { "escape", f_escape },
	{ "first", f_first }, { "float", f_float }, { "forceescape", f_escape },
	{ "format", f_format }, { "indent", f_indent }, { "int", f_int }, { "items", f_items },
	{ "join", f_join }, { "last", f_last }, { "length", f_length }, { "list", f_list },
	{ "lower", f_lower }, { "map", f_map }, { "max", f_max }, { "min", f_min },
	{ "pprint", f_pprint }, { "reject", f_reject }, { "rejectattr", f_rejectattr },
	{ "replace", f_replace }, { "reverse", f_reverse }, { "round", f_round }, { "safe", f_safe },
	{ "select", f_select }, { "selectattr", f_selectattr }, { "sort", f_sort },
	{ "string", f_string }, { "sum", f_sum }, { "title", f_title }, { "tojson", f_tojson },
	{ "trim", f_trim }, { "truncate", f_truncate }, { "unique", f_unique }, { "upper", f_upper },
	{ "wordcount", f_wordcount },
};

int jf_filter(struct jrt *r, const char *name, struct jv v, struct jargs *args, struct jv *out)
{
	for (size_t i = 0; i < sizeof filters / sizeof *filters; i++) {
		if (!strcmp(filters[i].name, name)) {
			int st = jr_enter(r);
			if (st)
				return st;
			st = filters[i].fn(r, v, args, out);
			jr_leave(r);
			return st;
		}
	}
	return jr_err(r, "No filter named '%s'.", name);
}

int jf_has_filter(const char *name)
{
	for (size_t i = 0; i < sizeof filters / sizeof *filters; i++)
		if (!strcmp(filters[i].name, name))
			return 1;
	return 0;
}
