/* jinja-methods.c: what a template reaches through values: attributes and
 * items with jinja2's sandbox rules (x.y tries the attribute, then the item;
 * x[y] the item, then the attribute; a missing one is undefined), the
 * methods of str, dict and list that the immutable sandbox allows (those
 * that would modify a list or dict are refused, as transformers refuses
 * them), the loop object, the global functions, and Python's % and
 * str.format formatting. */
#include "jinja-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int in_list(const char *const *names, const char *name)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

static const char *const STR_METHODS[] = {
	"capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find",
	"format", "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
	"isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper",
	"join", "ljust", "lower", "lstrip", "partition", "removeprefix", "removesuffix", "replace",
	"rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines",
	"startswith", "strip", "swapcase", "title", "translate", "upper", "zfill", NULL,
};
static const char *const DICT_METHODS[] = {
	"clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault",
	"update", "values", NULL,
};
static const char *const DICT_UNSAFE[] = { "clear", "pop", "popitem", "setdefault", "update", NULL };
static const char *const LIST_METHODS[] = {
	"append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove",
	"reverse", "sort", NULL,
};
static const char *const LIST_UNSAFE[] = {
	"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort", NULL,
};

static int undef_hint(struct jrt *r, struct jv *out, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
	char *h = ja_alloc(&r->a, n);
	if (!h)
		return TFM_E_FORMAT;
	snprintf(h, n, fmt, a, b);
	*out = jv_undef(h);
	return TFM_OK;
}

/* How jinja2 names an object in its messages: 'None', 'dict object'. */
static const char *obj_repr(struct jrt *r, struct jv v)
{
	if (v.t == JT_NONE)
		return "None";
	const char *t = jv_typename(v);
	char *s = ja_alloc(&r->a, strlen(t) + 8);
	if (!s)
		return t;
	sprintf(s, "%s object", t);
	return s;
}

static int method(struct jrt *r, struct jv self, const char *name, struct jv *out)
{
	struct jmethod *m = ja_alloc(&r->a, sizeof *m);
	if (!m)
		return TFM_E_FORMAT;
	m->self = self;
	m->name = name;
	out->t = JT_METHOD;
	out->tuple = 0;
	out->bm = m;
	return TFM_OK;
}

static int loop_attr(struct jrt *r, struct jloop *L, const char *name, struct jv *out)
{
	int64_t i = (int64_t)L->i, n = (int64_t)L->items->n;
	if (!strcmp(name, "index")) *out = jv_int(i + 1);
	else if (!strcmp(name, "index0")) *out = jv_int(i);
	else if (!strcmp(name, "revindex")) *out = jv_int(n - i);
	else if (!strcmp(name, "revindex0")) *out = jv_int(n - i - 1);
	else if (!strcmp(name, "first")) *out = jv_bool(i == 0);
	else if (!strcmp(name, "last")) *out = jv_bool(i == n - 1);
	else if (!strcmp(name, "length")) *out = jv_int(n);
	else if (!strcmp(name, "depth")) *out = jv_int(L->depth);
	else if (!strcmp(name, "depth0")) *out = jv_int(L->depth - 1);
	else if (!strcmp(name, "previtem"))
		*out = i > 0 ? L->items->v[i - 1] : jv_undef("there is no previous item");
	else if (!strcmp(name, "nextitem"))
		*out = i + 1 < n ? L->items->v[i + 1] : jv_undef("there is no next item");
	else if (!strcmp(name, "cycle") || !strcmp(name, "changed")) {
		struct jv self = { .t = JT_LOOP };
		self.loop = L;
		return method(r, self, !strcmp(name, "cycle") ? "cycle" : "changed", out);
	} else
		return undef_hint(r, out, "'LoopContext object' has no attribute '%s'%s", name, "");
	return TFM_OK;
}

int jm_getattr(struct jrt *r, struct jv obj, const char *name, struct jv *out)
{
	const char *const *methods = NULL, *const *unsafe = NULL;
	switch (obj.t) {
	case JT_STR: methods = STR_METHODS; break;
	case JT_DICT: methods = DICT_METHODS; unsafe = DICT_UNSAFE; break;
	case JT_LIST: methods = obj.tuple || obj.gen ? NULL : LIST_METHODS; unsafe = LIST_UNSAFE; break;
	case JT_LOOP: return loop_attr(r, obj.loop, name, out);
	case JT_MACRO:
		if (!strcmp(name, "name")) {
			*out = jv_str(obj.m->name, strlen(obj.m->name));
			return TFM_OK;
		}
		break;
	default: break;
	}
	if (obj.t == JT_LIST && obj.tuple && !obj.gen && (!strcmp(name, "count") || !strcmp(name, "index")))
		return method(r, obj, name, out);
	if (methods && in_list(methods, name)) {
		if (unsafe && in_list(unsafe, name))
			return undef_hint(r, out, "access to attribute '%s' of '%s' object is unsafe.",
					  name, jv_typename(obj));
		return method(r, obj, name, out);
	}
	if (obj.t == JT_DICT || obj.t == JT_NS) {
		struct jv *v = jd_gets(obj.d, name);
		if (v) {
			*out = *v;
			return TFM_OK;
		}
	}
	return undef_hint(r, out, "'%s' has no attribute '%s'", obj_repr(r, obj), name);
}

int jm_getitem(struct jrt *r, struct jv obj, struct jv key, struct jv *out)
{
	switch (obj.t) {
	case JT_DICT:
	case JT_NS: {
		struct jv *v = jd_get(obj.d, key);
		if (v) {
			*out = *v;
			return TFM_OK;
		}
		break;
	}
	case JT_LIST:
		if (!obj.gen && (key.t == JT_INT || key.t == JT_BOOL)) {
			int64_t i = key.i < 0 ? key.i + (int64_t)obj.l->n : key.i;
			if (i >= 0 && i < (int64_t)obj.l->n) {
				*out = obj.l->v[i];
				return TFM_OK;
			}
		}
		break;
	case JT_STR:
		if (key.t == JT_INT || key.t == JT_BOOL) {
			int64_t n = (int64_t)ju_len(obj.s.p, obj.s.n);
			int64_t i = key.i < 0 ? key.i + n : key.i;
			if (i >= 0 && i < n) {
				size_t b = ju_offset(obj.s.p, obj.s.n, (size_t)i), e = b;
				ju_decode(obj.s.p, obj.s.n, &e);
				*out = jv_str(obj.s.p + b, e - b);
				return TFM_OK;
			}
		}
		break;
	default:
		break;
	}
	if (key.t == JT_STR) {
		char *name = ja_strndup(&r->a, key.s.p, key.s.n);
		if (!name)
			return TFM_E_FORMAT;
		if (obj.t == JT_DICT || obj.t == JT_NS)
			return undef_hint(r, out, "'%s' has no attribute '%s'", obj_repr(r, obj), name);
		return jm_getattr(r, obj, name, out);
	}
	struct jbuf b = { .a = &r->a };
	if (jv_repr(&b, key, 0))
		return TFM_E_FORMAT;
	return undef_hint(r, out, "'%s' has no element %s", obj_repr(r, obj), b.p ? b.p : "");
}

/* ---- str methods ---- */

static int need_str(struct jrt *r, const struct jargs *a, int pos, const char *kw, const char *what,
		    struct jv *out, int optional)
{
	if (!ja_arg(a, pos, kw, out) || (optional && out->t == JT_NONE)) {
		if (optional) {
			out->t = JT_NONE;
			return TFM_OK;
		}
		return jr_err(r, "%s: missing argument", what);
	}
	if (out->t != JT_STR)
		return jr_err(r, "%s: expected a string argument, got '%s'", what, jv_typename(*out));
	return TFM_OK;
}

static int in_chars(struct jv chars, uint32_t c)
{
	if (chars.t != JT_STR)
		return ju_isspace(c);
	for (size_t i = 0; i < chars.s.n;)
		if (ju_decode(chars.s.p, chars.s.n, &i) == c)
			return 1;
	return 0;
}

/* Python str.strip / lstrip / rstrip: chars NONE strips whitespace. */
static struct jv strip(struct jv s, struct jv chars, int left, int right)
{
	size_t b = 0, e = s.s.n;
	while (left && b < e) {
		size_t j = b;
		if (!in_chars(chars, ju_decode(s.s.p, e, &j)))
			break;
		b = j;
	}
	while (right && e > b) {
		size_t k = e - 1;
		while (k > b && ((unsigned char)s.s.p[k] & 0xc0) == 0x80)
			k--;
		size_t j = k;
		if (!in_chars(chars, ju_decode(s.s.p, e, &j)))
			break;
		e = k;
	}
	return jv_str(s.s.p + b, e - b);
}

static int case_map(struct jrt *r, struct jv s, int mode, struct jv *out)
{
	/* mode: 0 lower, 1 upper, 2 capitalize, 3 title (str.title), 4 swapcase */
	struct jbuf b = { .a = &r->a };
	int prev_cased = 0, first = 1;
	for (size_t i = 0; i < s.s.n;) {
		uint32_t c = ju_decode(s.s.p, s.s.n, &i), m = c;
		switch (mode) {
		case 0: m = ju_lower(c); break;
		case 1: m = ju_upper(c); break;
		case 2: m = first ? ju_upper(c) : ju_lower(c); break;
		case 3:
			m = prev_cased ? ju_lower(c) : ju_upper(c);
			prev_cased = ju_isalpha(c);
			break;
		case 4: m = ju_upper(c) != c ? ju_upper(c) : ju_lower(c); break;
		}
		first = 0;
		char enc[4];
		if (jb_put(&b, enc, ju_encode(m, enc)))
			return TFM_E_FORMAT;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int str_split(struct jrt *r, struct jv s, struct jv sep, int64_t maxsplit, int from_right,
		     struct jv *out)
{
	struct jlist *l = jl_new(&r->a, 0);
	if (!l)
		return TFM_E_FORMAT;
	int st;
	if (sep.t == JT_STR && sep.s.n == 0)
		return jr_err(r, "empty separator");
	if (sep.t != JT_STR) {
		/* runs of whitespace; no empty strings */
		const char *p = s.s.p;
		size_t n = s.s.n;
		struct jlist *parts = l;
		if (!from_right) {
			size_t i = 0;
			while (i < n) {
				size_t k;
				while ((k = ju_space_at(p, n, i)))
					i += k;
				if (i >= n)
					break;
				if (maxsplit >= 0 && (int64_t)parts->n == maxsplit) {
					struct jv rest = strip(jv_str(p + i, n - i), jv_none(), 0, 1);
					if ((st = jl_push(&r->a, parts, rest)))
						return st;
					break;
				}
				size_t j = i;
				while (j < n && !ju_space_at(p, n, j)) {
					size_t t = j;
					ju_decode(p, n, &t);
					j = t;
				}
				if ((st = jl_push(&r->a, parts, jv_str(p + i, j - i))))
					return st;
				i = j;
			}
		} else {
			size_t e = n;
			while (e > 0) {
				size_t k;
				while ((k = ju_space_before(p, e)))
					e -= k;
				if (e == 0)
					break;
				if (maxsplit >= 0 && (int64_t)parts->n == maxsplit) {
					struct jv rest = strip(jv_str(p, e), jv_none(), 1, 0);
					if ((st = jl_push(&r->a, parts, rest)))
						return st;
					break;
				}
				size_t b = e;
				while (b > 0 && !ju_space_before(p, b)) {
					b--;
					while (b > 0 && ((unsigned char)p[b] & 0xc0) == 0x80)
						b--;
				}
				if ((st = jl_push(&r->a, parts, jv_str(p + b, e - b))))
					return st;
				e = b;
			}
			for (size_t i = 0; i < parts->n / 2; i++) {
				struct jv t = parts->v[i];
				parts->v[i] = parts->v[parts->n - 1 - i];
				parts->v[parts->n - 1 - i] = t;
			}
		}
		*out = jv_list(l);
		return TFM_OK;
	}
	if (!from_right) {
		size_t i = 0;
		for (;;) {
			const char *hit = NULL;
			if (maxsplit < 0 || (int64_t)l->n < maxsplit)
				hit = memmem(s.s.p + i, s.s.n - i, sep.s.p, sep.s.n);
			size_t e = hit ? (size_t)(hit - s.s.p) : s.s.n;
			if ((st = jl_push(&r->a, l, jv_str(s.s.p + i, e - i))))
				return st;
			if (!hit)
				break;
			i = e + sep.s.n;
		}
	} else {
		size_t e = s.s.n;
		for (;;) {
			size_t hit = (size_t)-1;
			if ((maxsplit < 0 || (int64_t)l->n < maxsplit) && e >= sep.s.n)
				for (size_t k = e - sep.s.n + 1; k-- > 0;)
					if (!memcmp(s.s.p + k, sep.s.p, sep.s.n)) {
						hit = k;
						break;
					}
			size_t b = hit == (size_t)-1 ? 0 : hit + sep.s.n;
			if ((st = jl_push(&r->a, l, jv_str(s.s.p + b, e - b))))
				return st;
			if (hit == (size_t)-1)
				break;
			e = hit;
		}
		for (size_t i = 0; i < l->n / 2; i++) {
			struct jv t = l->v[i];
			l->v[i] = l->v[l->n - 1 - i];
			l->v[l->n - 1 - i] = t;
		}
	}
	*out = jv_list(l);
	return TFM_OK;
}

static int line_break_at(const char *p, size_t n, size_t i, size_t *len)
{
	unsigned char c = (unsigned char)p[i];
	if (c == '\r') {
		*len = i + 1 < n && p[i + 1] == '\n' ? 2 : 1;
		return 1;
	}
	if (c == '\n' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e)) {
		*len = 1;
		return 1;
	}
	if (c >= 0x80) {
		size_t j = i;
		uint32_t cp = ju_decode(p, n, &j);
		if (cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
			*len = j - i;
			return 1;
		}
	}
	return 0;
}

int jm_splitlines(struct jrt *r, struct jv s, int keepends, struct jlist **out);
int jm_splitlines(struct jrt *r, struct jv s, int keepends, struct jlist **out)
{
	struct jlist *l = jl_new(&r->a, 0);
	if (!l)
		return TFM_E_FORMAT;
	size_t b = 0, i = 0, len;
	while (i < s.s.n) {
		if (line_break_at(s.s.p, s.s.n, i, &len)) {
			if (jl_push(&r->a, l, jv_str(s.s.p + b, i - b + (keepends ? len : 0))))
				return TFM_E_FORMAT;
			i += len;
			b = i;
		} else {
			i++;
		}
	}
	if (b < s.s.n && jl_push(&r->a, l, jv_str(s.s.p + b, s.s.n - b)))
		return TFM_E_FORMAT;
	*out = l;
	return TFM_OK;
}

int jm_replace(struct jrt *r, struct jv s, struct jv old, struct jv new, int64_t count, struct jv *out);
int jm_replace(struct jrt *r, struct jv s, struct jv old, struct jv new, int64_t count, struct jv *out)
{
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	int64_t done = 0;
	if (old.s.n == 0) {
		/* between every character, and at both ends */
		for (size_t i = 0; i <= s.s.n;) {
			if ((count < 0 || done < count) && jb_put(&b, new.s.p, new.s.n))
				return TFM_E_FORMAT;
			done++;
			if (i == s.s.n)
				break;
			size_t j = i;
			ju_decode(s.s.p, s.s.n, &j);
			if (jb_put(&b, s.s.p + i, j - i))
				return TFM_E_FORMAT;
			i = j;
		}
	} else {
		size_t i = 0;
		while (i <= s.s.n) {
			const char *hit = count >= 0 && done >= count ? NULL
					  : memmem(s.s.p + i, s.s.n - i, old.s.p, old.s.n);
			size_t e = hit ? (size_t)(hit - s.s.p) : s.s.n;
			if (jb_put(&b, s.s.p + i, e - i))
				return TFM_E_FORMAT;
			if (!hit)
				break;
			if (jb_put(&b, new.s.p, new.s.n))
				return TFM_E_FORMAT;
			done++;
			i = e + old.s.n;
		}
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

static int prefix_test(struct jrt *r, struct jv s, struct jv arg, int suffix, int *res)
{
	*res = 0;
	if (arg.t == JT_LIST && arg.tuple) {
		for (size_t i = 0; i < arg.l->n && !*res; i++) {
			int st = prefix_test(r, s, arg.l->v[i], suffix, res);
			if (st)
				return st;
		}
		return TFM_OK;
	}
	if (arg.t != JT_STR)
		return jr_err(r, "%s first arg must be str or a tuple of str, not %s",
			      suffix ? "endswith" : "startswith", jv_typename(arg));
	if (arg.s.n <= s.s.n)
		*res = !memcmp(suffix ? s.s.p + s.s.n - arg.s.n : s.s.p, arg.s.p, arg.s.n);
	return TFM_OK;
}

static int pad(struct jrt *r, struct jv s, int64_t width, struct jv fill, int align, struct jv *out)
{
	/* align: '<' left, '>' right, '^' center (Python's str.center bias) */
	int64_t len = (int64_t)ju_len(s.s.p, s.s.n);
	if (width <= len || width > (int64_t)r->max_output) {
		*out = s;
		return TFM_OK;
	}
	const char *f = fill.t == JT_STR ? fill.s.p : " ";
	size_t fn = fill.t == JT_STR ? fill.s.n : 1;
	int64_t total = width - len, left = align == '>' ? total : align == '<' ? 0
					   : total / 2 + (total & width & 1);
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	for (int64_t i = 0; i < left; i++)
		if (jb_put(&b, f, fn))
			return TFM_E_FORMAT;
	if (jb_put(&b, s.s.p, s.s.n))
		return TFM_E_FORMAT;
	for (int64_t i = left; i < total; i++)
		if (jb_put(&b, f, fn))
			return TFM_E_FORMAT;
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

int jm_str_format(struct jrt *r, struct jv fmt, struct jargs *a, struct jv *out);

static int all_chars(struct jv s, int (*pred)(uint32_t))
{
	if (s.s.n == 0)
		return 0;
	for (size_t i = 0; i < s.s.n;)
		if (!pred(ju_decode(s.s.p, s.s.n, &i)))
			return 0;
	return 1;
}

static int is_lower_cp(uint32_t c) { return ju_upper(c) != c || !ju_isalpha(c); }
static int is_upper_cp(uint32_t c) { return ju_lower(c) != c || !ju_isalpha(c); }

static int str_method(struct jrt *r, struct jv s, const char *name, struct jargs *a, struct jv *out)
{
	struct jv x, y;
	int st, res;
	if (!strcmp(name, "upper")) return case_map(r, s, 1, out);
	if (!strcmp(name, "lower") || !strcmp(name, "casefold")) return case_map(r, s, 0, out);
	if (!strcmp(name, "capitalize")) return case_map(r, s, 2, out);
	if (!strcmp(name, "title")) return case_map(r, s, 3, out);
	if (!strcmp(name, "swapcase")) return case_map(r, s, 4, out);
	if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
		if ((st = need_str(r, a, 0, "chars", name, &x, 1)))
			return st;
		*out = strip(s, x, name[0] != 'r', name[0] != 'l');
		return TFM_OK;
	}
	if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
		int64_t maxsplit = -1;
		if ((st = need_str(r, a, 0, "sep", name, &x, 1)))
			return st;
		if (ja_arg(a, 1, "maxsplit", &y)) {
			if (y.t != JT_INT)
				return jr_err(r, "%s: maxsplit must be an integer", name);
			maxsplit = y.i;
		}
		return str_split(r, s, x, maxsplit, name[0] == 'r', out);
	}
	if (!strcmp(name, "splitlines")) {
		struct jlist *l;
		int keep = ja_arg(a, 0, "keepends", &x) && jv_truthy(x);
		if ((st = jm_splitlines(r, s, keep, &l)))
			return st;
		*out = jv_list(l);
		return TFM_OK;
	}
	if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
		if (!ja_arg(a, 0, NULL, &x))
			return jr_err(r, "%s: missing argument", name);
		if ((st = prefix_test(r, s, x, name[0] == 'e', &res)))
			return st;
		*out = jv_bool(res);
		return TFM_OK;
	}
	if (!strcmp(name, "replace")) {
		struct jv c;
		int64_t count = -1;
		if ((st = need_str(r, a, 0, "old", name, &x, 0)) || (st = need_str(r, a, 1, "new", name, &y, 0)))
			return st;
		if (ja_arg(a, 2, "count", &c) && c.t == JT_INT)
			count = c.i;
		return jm_replace(r, s, x, y, count, out);
	}
	if (!strcmp(name, "removeprefix") || !strcmp(name, "removesuffix")) {
		if ((st = need_str(r, a, 0, NULL, name, &x, 0)) ||
		    (st = prefix_test(r, s, x, name[6] == 's', &res)))
			return st;
		*out = !res ? s : name[6] == 's' ? jv_str(s.s.p, s.s.n - x.s.n)
		       : jv_str(s.s.p + x.s.n, s.s.n - x.s.n);
		return TFM_OK;
	}
	if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") ||
	    !strcmp(name, "rindex") || !strcmp(name, "count")) {
		if ((st = need_str(r, a, 0, NULL, name, &x, 0)))
			return st;
		if (!strcmp(name, "count")) {
			int64_t k = 0;
			if (x.s.n == 0) {
				k = (int64_t)ju_len(s.s.p, s.s.n) + 1;
			} else {
				for (const char *p = s.s.p, *e = s.s.p + s.s.n; (p = memmem(p, (size_t)(e - p), x.s.p, x.s.n));
				     p += x.s.n)
					k++;
			}
			*out = jv_int(k);
			return TFM_OK;
		}
		int64_t pos = -1;
		if (name[0] != 'r') {
			const char *hit = x.s.n ? memmem(s.s.p, s.s.n, x.s.p, x.s.n) : s.s.p;
			if (hit)
				pos = (int64_t)ju_len(s.s.p, (size_t)(hit - s.s.p));
		} else if (x.s.n <= s.s.n) {
			for (size_t k = s.s.n - x.s.n + 1; k-- > 0;)
				if (!memcmp(s.s.p + k, x.s.p, x.s.n)) {
					pos = (int64_t)ju_len(s.s.p, k);
					break;
				}
		}
		if (pos < 0 && strstr(name, "index"))
			return jr_err(r, "substring not found");
		*out = jv_int(pos);
		return TFM_OK;
	}
	if (!strcmp(name, "join")) {
		struct jlist *l;
		if (!ja_arg(a, 0, NULL, &x))
			return jr_err(r, "join: missing argument");
		if ((st = jr_iter(r, x, &l)))
			return st;
		struct jbuf b = { .a = &r->a, .max = r->max_output };
		for (size_t i = 0; i < l->n; i++) {
			if (l->v[i].t != JT_STR)
				return jr_err(r, "sequence item %zu: expected str instance, %s found", i,
					      jv_typename(l->v[i]));
			if ((i && jb_put(&b, s.s.p, s.s.n)) || jb_put(&b, l->v[i].s.p, l->v[i].s.n))
				return TFM_E_FORMAT;
		}
		*out = jv_str(b.p ? b.p : "", b.n);
		return TFM_OK;
	}
	if (!strcmp(name, "format"))
		return jm_str_format(r, s, a, out);
	if (!strcmp(name, "isdigit") || !strcmp(name, "isdecimal") || !strcmp(name, "isnumeric")) {
		*out = jv_bool(all_chars(s, ju_isdigit));
		return TFM_OK;
	}
	if (!strcmp(name, "isalpha")) { *out = jv_bool(all_chars(s, ju_isalpha)); return TFM_OK; }
	if (!strcmp(name, "isalnum")) { *out = jv_bool(all_chars(s, ju_isalnum)); return TFM_OK; }
	if (!strcmp(name, "isspace")) { *out = jv_bool(all_chars(s, ju_isspace)); return TFM_OK; }
	if (!strcmp(name, "islower") || !strcmp(name, "isupper")) {
		int cased = 0;
		for (size_t i = 0; i < s.s.n;) {
			uint32_t c = ju_decode(s.s.p, s.s.n, &i);
			cased |= ju_isalpha(c) && (ju_upper(c) != c || ju_lower(c) != c);
		}
		*out = jv_bool(cased && all_chars(s, name[2] == 'l' ? is_lower_cp : is_upper_cp));
		return TFM_OK;
	}
	if (!strcmp(name, "center") || !strcmp(name, "ljust") || !strcmp(name, "rjust") ||
	    !strcmp(name, "zfill")) {
		if (!ja_arg(a, 0, NULL, &x) || x.t != JT_INT)
			return jr_err(r, "%s: expected an integer width", name);
		if (!ja_arg(a, 1, NULL, &y))
			y = JV_LIT(" ");
		if (!strcmp(name, "zfill")) {
			int neg = s.s.n && (s.s.p[0] == '-' || s.s.p[0] == '+');
			struct jv body = jv_str(s.s.p + neg, s.s.n - (size_t)neg), padded;
			if ((st = pad(r, body, x.i - neg, JV_LIT("0"), '>', &padded)))
				return st;
			if (!neg) {
				*out = padded;
				return TFM_OK;
			}
			struct jbuf b = { .a = &r->a };
			if (jb_put(&b, s.s.p, 1) || jb_put(&b, padded.s.p, padded.s.n))
				return TFM_E_FORMAT;
			*out = jv_str(b.p, b.n);
			return TFM_OK;
		}
		return pad(r, s, x.i, y, name[0] == 'c' ? '^' : name[0] == 'l' ? '<' : '>', out);
	}
	return jr_err(r, "str.%s() is not supported", name);
}

/* ---- dict, list, loop methods ---- */

static int dict_method(struct jrt *r, struct jv d, const char *name, struct jargs *a, struct jv *out)
{
	struct jv x;
	if (!strcmp(name, "get")) {
		if (!ja_arg(a, 0, NULL, &x))
			return jr_err(r, "get expected at least 1 argument, got 0");
		struct jv *v = jd_get(d.d, x);
		if (v)
			*out = *v;
		else if (!ja_arg(a, 1, NULL, out))
			*out = jv_none();
		return TFM_OK;
	}
	if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
		struct jlist *l = jl_new(&r->a, d.d->n);
		if (!l)
			return TFM_E_FORMAT;
		for (size_t i = 0; i < d.d->n; i++) {
			if (name[0] == 'k') {
				l->v[i] = d.d->k[i];
			} else if (name[0] == 'v') {
				l->v[i] = d.d->v[i];
			} else {
				struct jlist *pair = jl_new(&r->a, 2);
				if (!pair)
					return TFM_E_FORMAT;
				pair->v[0] = d.d->k[i];
				pair->v[1] = d.d->v[i];
				pair->n = 2;
				l->v[i] = jv_list(pair);
				l->v[i].tuple = 1;
			}
		}
		l->n = d.d->n;
		*out = jv_list(l);
		out->gen = name[0] == 'k' ? JG_KEYS : name[0] == 'v' ? JG_VALUES : JG_ITEMS;
		return TFM_OK;
	}
	if (!strcmp(name, "copy")) {
		struct jdict *c = jd_new(&r->a, d.d->n);
		if (!c)
			return TFM_E_FORMAT;
		memcpy(c->k, d.d->k, d.d->n * sizeof *c->k);
		memcpy(c->v, d.d->v, d.d->n * sizeof *c->v);
		c->n = d.d->n;
		*out = d;
		out->d = c;
		return TFM_OK;
	}
	return jr_err(r, "dict.%s() is not supported", name);
}

static int list_method(struct jrt *r, struct jv l, const char *name, struct jargs *a, struct jv *out)
{
	struct jv x;
	if (!strcmp(name, "index") || !strcmp(name, "count")) {
		if (!ja_arg(a, 0, NULL, &x))
			return jr_err(r, "%s: missing argument", name);
		int64_t k = 0;
		for (size_t i = 0; i < l.l->n; i++) {
			if (!jv_eq(l.l->v[i], x))
				continue;
			if (name[0] == 'i') {
				*out = jv_int((int64_t)i);
				return TFM_OK;
			}
			k++;
		}
		if (name[0] == 'i')
			return jr_err(r, "value is not in list");
		*out = jv_int(k);
		return TFM_OK;
	}
	if (!strcmp(name, "copy")) {
		struct jlist *c = jl_new(&r->a, l.l->n);
		if (!c)
			return TFM_E_FORMAT;
		if (l.l->n)
			memcpy(c->v, l.l->v, l.l->n * sizeof *c->v);
		c->n = l.l->n;
		*out = jv_list(c);
		return TFM_OK;
	}
	return jr_err(r, "list.%s() is not supported", name);
}

static int loop_method(struct jrt *r, struct jloop *L, const char *name, struct jargs *a, struct jv *out)
{
	if (!strcmp(name, "cycle")) {
		if (a->n == 0)
			return jr_err(r, "no items for cycling given");
		*out = a->v[L->i % (size_t)a->n];
		return TFM_OK;
	}
	/* changed(*values): true when the values differ from the last call's */
	struct jlist *l = jl_new(&r->a, (size_t)a->n);
	if (!l)
		return TFM_E_FORMAT;
	for (int i = 0; i < a->n; i++)
		l->v[l->n++] = a->v[i];
	struct jv now = jv_list(l);
	int changed = !L->has_changed || !jv_eq(L->last_changed, now);
	L->last_changed = now;
	L->has_changed = 1;
	*out = jv_bool(changed);
	return TFM_OK;
}

int jm_call_method(struct jrt *r, struct jmethod *m, struct jargs *a, struct jv *out)
{
	switch (m->self.t) {
	case JT_STR: return str_method(r, m->self, m->name, a, out);
	case JT_DICT: return dict_method(r, m->self, m->name, a, out);
	case JT_LIST: return list_method(r, m->self, m->name, a, out);
	case JT_LOOP: return loop_method(r, m->self.loop, m->name, a, out);
	default: return jr_err(r, "'%s' object is not callable", jv_typename(m->self));
	}
}

/* ---- globals ---- */

static int g_range(struct jrt *r, struct jargs *a, struct jv *out)
{
	int64_t v[3] = { 0, 0, 1 };
	int n = 0;
	for (int i = 0; i < a->n; i++) {
		if (a->kw[i] || (a->v[i].t != JT_INT && a->v[i].t != JT_BOOL) || n == 3)
			return jr_err(r, "range() takes one to three integer arguments");
		v[n++] = a->v[i].i;
	}
	if (n == 0)
		return jr_err(r, "range expected at least 1 argument, got 0");
	if (n == 1) {
		v[1] = v[0];
		v[0] = 0;
	}
	if (v[2] == 0)
		return jr_err(r, "range() arg 3 must not be zero");
	double count = v[2] > 0 ? ceil(((double)v[1] - (double)v[0]) / (double)v[2])
				: ceil(((double)v[0] - (double)v[1]) / (double)-v[2]);
	if (count < 0)
		count = 0;
	/* jinja2's sandbox refuses ranges past MAX_RANGE */
	if (count > 100000)
		return jr_err(r, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
	struct jlist *l = jl_new(&r->a, (size_t)count);
	if (!l)
		return TFM_E_FORMAT;
	for (int64_t x = v[0]; v[2] > 0 ? x < v[1] : x > v[1]; x += v[2])
		l->v[l->n++] = jv_int(x);
	*out = jv_list(l);
	return TFM_OK;
}

static int g_dict_like(struct jrt *r, struct jargs *a, struct jv *out, int type)
{
	struct jdict *d = jd_new(&r->a, 0);
	int st;
	if (!d)
		return TFM_E_FORMAT;
	for (int i = 0; i < a->n; i++) {
		if (!a->kw[i]) {
			struct jv x = a->v[i];
			if (i > 0 || x.t != JT_DICT)
				return jr_err(r, "%s() takes keyword arguments or a dict",
					      type == JT_NS ? "namespace" : "dict");
			for (size_t k = 0; k < x.d->n; k++)
				if ((st = jd_set(&r->a, d, x.d->k[k], x.d->v[k])))
					return st;
			continue;
		}
		if ((st = jd_set(&r->a, d, jv_str(a->kw[i], strlen(a->kw[i])), a->v[i])))
			return st;
	}
	out->t = (uint8_t)type;
	out->tuple = 0;
	out->d = d;
	return TFM_OK;
}

static int g_namespace(struct jrt *r, struct jargs *a, struct jv *out) { return g_dict_like(r, a, out, JT_NS); }
static int g_dict(struct jrt *r, struct jargs *a, struct jv *out) { return g_dict_like(r, a, out, JT_DICT); }

static int g_raise(struct jrt *r, struct jargs *a, struct jv *out)
{
	struct jv msg = JV_LIT("");
	ja_arg(a, 0, "message", &msg);
	if (jv_tostr(&r->a, msg, &msg))
		return TFM_E_FORMAT;
	r->raised = 1;
	return tfm_seterr(TFM_E_FORMAT, "raise_exception: %.*s", (int)(msg.s.n > 900 ? 900 : msg.s.n),
			  msg.s.p);
}

static int g_strftime_now(struct jrt *r, struct jargs *a, struct jv *out)
{
	struct jv fmt;
	if (!ja_arg(a, 0, "format", &fmt) || fmt.t != JT_STR)
		return jr_err(r, "strftime_now() takes a format string");
	char *f = ja_strndup(&r->a, fmt.s.p, fmt.s.n);
	if (!f)
		return TFM_E_FORMAT;
	for (size_t cap = 256; cap <= 65536; cap *= 4) {
		char *buf = ja_alloc(&r->a, cap);
		if (!buf)
			return TFM_E_FORMAT;
		size_t n = strftime(buf, cap, f, &r->now);
		if (n > 0 || fmt.s.n == 0) {
			*out = jv_str(buf, n);
			return TFM_OK;
		}
	}
	*out = JV_LIT("");
	return TFM_OK;
}

static const struct jfunc globals[] = {
	{ "dict", g_dict },
	{ "namespace", g_namespace },
	{ "raise_exception", g_raise },
	{ "range", g_range },
	{ "strftime_now", g_strftime_now },
};

const struct jfunc *jm_global(const char *name)
{
	for (size_t i = 0; i < sizeof globals / sizeof *globals; i++)
		if (!strcmp(globals[i].name, name))
			return &globals[i];
	return NULL;
}
