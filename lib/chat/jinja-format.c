/* jinja-format.c: Python's string formatting as templates use it: the %
 * operator (and jinja2's format filter, which is the same), and
 * str.format with positional, automatic and named fields and the common
 * format specs (fill, alignment, sign, width, precision, type). */
#include "jinja-impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int need_num(struct jrt *r, struct jv v, char conv, int want_int, struct jv *out)
{
	if (v.t == JT_BOOL || v.t == JT_INT) {
		*out = want_int ? jv_int(v.i) : jv_float((double)v.i);
		return TFM_OK;
	}
	if (v.t == JT_FLOAT) {
		if (want_int && (isnan(v.f) || isinf(v.f)))
			return jr_err(r, "cannot convert float %s to integer", isnan(v.f) ? "NaN" : "infinity");
		*out = want_int ? jv_int((int64_t)v.f) : v;
		return TFM_OK;
	}
	return jr_err(r, "%%%c format: a real number is required, not %s", conv, jv_typename(v));
}

/* Pad body to width: align '<', '>', '^', or '=' (after a sign). */
static int pad_to(struct jbuf *b, const char *body, size_t n, int64_t width, char align,
		  const char *fill, size_t filln)
{
	int64_t len = (int64_t)ju_len(body, n);
	int64_t total = width > len ? width - len : 0, left = 0;
	if (align == '>' || align == '=')
		left = total;
	else if (align == '^')
		left = total / 2;
	size_t sign = 0;
	if (align == '=' && n && strchr("+- ", body[0]))
		sign = 1;
	if (sign && jb_put(b, body, 1))
		return TFM_E_FORMAT;
	for (int64_t i = 0; i < left; i++)
		if (jb_put(b, fill, filln))
			return TFM_E_FORMAT;
	if (jb_put(b, body + sign, n - sign))
		return TFM_E_FORMAT;
	for (int64_t i = left; i < total; i++)
		if (jb_put(b, fill, filln))
			return TFM_E_FORMAT;
	return TFM_OK;
}

int jm_percent(struct jrt *r, struct jv fmt, struct jv args, struct jv *out)
{
	struct jlist one = { 1, 1, &args };
	struct jlist *items = args.t == JT_LIST && args.tuple ? args.l : &one;
	size_t next = 0;
	int used_map = 0, st;
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	const char *p = fmt.s.p, *e = p + fmt.s.n;
	while (p < e) {
		const char *pct = memchr(p, '%', (size_t)(e - p));
		if (!pct) {
			if (jb_put(&b, p, (size_t)(e - p)))
				return TFM_E_FORMAT;
			break;
		}
		if (jb_put(&b, p, (size_t)(pct - p)))
			return TFM_E_FORMAT;
		p = pct + 1;
		struct jv v = jv_none();
		int have = 0;
		if (p < e && *p == '(') {
			const char *close = memchr(p, ')', (size_t)(e - p));
			if (!close || args.t != JT_DICT)
				return jr_err(r, "format requires a mapping");
			struct jv *mv = jd_get(args.d, jv_str(p + 1, (size_t)(close - p - 1)));
			if (!mv)
				return jr_err(r, "format: key '%.*s' missing", (int)(close - p - 1), p + 1);
			v = *mv;
			have = used_map = 1;
			p = close + 1;
		}
		char flags[8] = "";
		int nf = 0;
		while (p < e && strchr("-+ #0", *p) && *p && nf < 6)
			flags[nf++] = *p++;
		flags[nf] = 0;
		int64_t width = -1, prec = -1;
		for (int k = 0; k < 2; k++) {
			int64_t *x = k ? &prec : &width;
			if (k) {
				if (p < e && *p == '.') {
					p++;
					prec = 0;
				} else {
					break;
				}
			}
			if (p < e && *p == '*') {
				if (next >= items->n || items->v[next].t != JT_INT)
					return jr_err(r, "* wants int");
				*x = items->v[next++].i;
				p++;
			} else {
				while (p < e && *p >= '0' && *p <= '9' && *x < 100000)
					*x = (*x < 0 ? 0 : *x) * 10 + (*p++ - '0');
			}
		}
		while (p < e && strchr("hlL", *p) && *p)
			p++;
		if (p >= e)
			return jr_err(r, "incomplete format");
		char conv = *p++;
		if (conv == '%') {
			if (jb_putc(&b, '%'))
				return TFM_E_FORMAT;
			continue;
		}
		if (!have) {
			if (next >= items->n)
				return jr_err(r, "not enough arguments for format string");
			v = items->v[next++];
		}
		char cf[64], num[400];
		int left = strchr(flags, '-') != NULL;
		struct jv s;
		struct jbuf tmp = { .a = &r->a };
		switch (conv) {
		case 's': case 'r': case 'a':
			if (conv == 's')
				st = jv_tostr(&r->a, v, &s);
			else if (!(st = jv_repr(&tmp, v, 0)))
				s = jv_str(tmp.p ? tmp.p : "", tmp.n);
			if (st)
				return st;
			if (prec >= 0)
				s.s.n = ju_offset(s.s.p, s.s.n, (size_t)prec);
			if (pad_to(&b, s.s.p, s.s.n, width, left ? '<' : '>', " ", 1))
				return TFM_E_FORMAT;
			continue;
		case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
			struct jv iv = jv_int(0);
			if (conv == 'c' && v.t == JT_STR) {
				s = v;
			} else {
				if ((st = need_num(r, v, conv, 1, &iv)))
					return st;
				if (conv == 'c') {
					char enc[4];
					size_t k = ju_encode((uint32_t)iv.i, enc);
					if (jr_str(r, enc, k, &s))
						return TFM_E_FORMAT;
				} else {
					char c2 = conv == 'i' || conv == 'u' ? 'd' : conv;
					if (prec >= 0)
						snprintf(cf, sizeof cf, "%%%s%lld.%lldll%c", flags,
							 (long long)(width < 0 ? 0 : width), (long long)prec, c2);
					else
						snprintf(cf, sizeof cf, "%%%s%lldll%c", flags,
							 (long long)(width < 0 ? 0 : width), c2);
					if (width > 300)
						return jr_err(r, "format width too large");
					snprintf(num, sizeof num, cf, (long long)iv.i);
					if (jb_put(&b, num, strlen(num)))
						return TFM_E_FORMAT;
					continue;
				}
			}
			if (pad_to(&b, s.s.p, s.s.n, width, left ? '<' : '>', " ", 1))
				return TFM_E_FORMAT;
			continue;
		}
		case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
			struct jv fv = jv_float(0);
			if ((st = need_num(r, v, conv, 0, &fv)))
				return st;
			if (width > 300 || prec > 300)
				return jr_err(r, "format width too large");
			snprintf(cf, sizeof cf, "%%%s%lld.%lld%c", flags, (long long)(width < 0 ? 0 : width),
				 (long long)(prec < 0 ? 6 : prec), conv);
			snprintf(num, sizeof num, cf, fv.f);
			if (jb_put(&b, num, strlen(num)))
				return TFM_E_FORMAT;
			continue;
		}
		default:
			return jr_err(r, "unsupported format character '%c'", conv);
		}
	}
	if (!used_map && items != &one && next < items->n)
		return jr_err(r, "not all arguments converted during string formatting");
	if (!used_map && items == &one && next == 0 && !(args.t == JT_DICT))
		return jr_err(r, "not all arguments converted during string formatting");
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

/* format(v, spec) for str.format. */
static int format_spec(struct jrt *r, struct jbuf *b, struct jv v, const char *spec, size_t n)
{
	const char *fill = " ";
	size_t filln = 1, i = 0;
	char align = 0, sign = '-', type = 0;
	int zero = 0, alt = 0, comma = 0;
	int64_t width = -1, prec = -1;
	if (n == 0)
		return jv_write(b, v);
	size_t k = 0;
	ju_decode(spec, n, &k);
	if (k < n && strchr("<>=^", spec[k]) && spec[k]) {
		fill = spec;
		filln = k;
		align = spec[k];
		i = k + 1;
	} else if (strchr("<>=^", spec[0]) && spec[0]) {
		align = spec[0];
		i = 1;
	}
	if (i < n && strchr("+- ", spec[i]) && spec[i])
		sign = spec[i++];
	if (i < n && spec[i] == '#') {
		alt = 1;
		i++;
	}
	if (i < n && spec[i] == '0') {
		zero = 1;
		i++;
	}
	while (i < n && spec[i] >= '0' && spec[i] <= '9' && width < 100000)
		width = (width < 0 ? 0 : width) * 10 + (spec[i++] - '0');
	if (i < n && (spec[i] == ',' || spec[i] == '_')) {
		comma = 1;
		i++;
	}
	if (i < n && spec[i] == '.') {
		prec = 0;
		i++;
		while (i < n && spec[i] >= '0' && spec[i] <= '9' && prec < 1000)
			prec = prec * 10 + (spec[i++] - '0');
	}
	if (i < n)
		type = spec[i++];
	if (i != n)
		return jr_err(r, "Invalid format specifier '%.*s'", (int)n, spec);
	if (width > 10000)
		return jr_err(r, "format width too large");
	(void)comma;
	(void)alt;
	if (zero && !align) {
		fill = "0";
		filln = 1;
		align = '=';
	}
	char num[400], cf[64];
	struct jv s;
	if (v.t == JT_STR || (!type && !jv_isnum(v)) || type == 's') {
		if (type && type != 's')
			return jr_err(r, "Unknown format code '%c' for object of type '%s'", type, jv_typename(v));
		int st = jv_tostr(&r->a, v, &s);
		if (st)
			return st;
		if (prec >= 0)
			s.s.n = ju_offset(s.s.p, s.s.n, (size_t)prec);
		return pad_to(b, s.s.p, s.s.n, width, align ? align : '<', fill, filln);
	}
	if (!jv_isnum(v))
		return jr_err(r, "unsupported format string passed to %s.__format__", jv_typename(v));
	char sg[2] = { sign == '-' ? 0 : sign, 0 };
	if (v.t != JT_FLOAT && (!type || strchr("dxXobc", type))) {
		if (!type && v.t == JT_BOOL && !sg[0] && width < 0)
			return jv_write(b, v);
		char t = type ? type : 'd';
		if (t == 'b' || t == 'c')
			return jr_err(r, "format code '%c' is not supported", t);
		snprintf(cf, sizeof cf, "%%%sll%c", sg, t);
		snprintf(num, sizeof num, cf, (long long)v.i);
	} else {
		double f = jv_num(v);
		char t = type ? type : 0;
		if (!t && prec < 0) {
			jv_float_repr(f, num, sizeof num);
			if (sg[0] && f >= 0) {
				memmove(num + 1, num, strlen(num) + 1);
				num[0] = sg[0];
			}
		} else {
			int pct = t == '%';
			if (pct) {
				f *= 100;
				t = 'f';
			}
			if (!t)
				t = 'g';
			if (!strchr("eEfFgG", t))
				return jr_err(r, "Unknown format code '%c' for object of type 'float'", t);
			snprintf(cf, sizeof cf, "%%%s.%lld%c%s", sg, (long long)(prec < 0 ? 6 : prec), t,
				 pct ? "%%" : "");
			snprintf(num, sizeof num, cf, f);
		}
	}
	return pad_to(b, num, strlen(num), width, align ? align : '>', fill, filln);
}

int jm_str_format(struct jrt *r, struct jv fmt, struct jargs *a, struct jv *out)
{
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	const char *p = fmt.s.p, *e = p + fmt.s.n;
	int auto_idx = 0, st;
	while (p < e) {
		char c = *p;
		if (c == '}' ) {
			if (p + 1 < e && p[1] == '}') {
				if (jb_putc(&b, '}'))
					return TFM_E_FORMAT;
				p += 2;
				continue;
			}
			return jr_err(r, "Single '}' encountered in format string");
		}
		if (c != '{') {
			if (jb_putc(&b, c))
				return TFM_E_FORMAT;
			p++;
			continue;
		}
		if (p + 1 < e && p[1] == '{') {
			if (jb_putc(&b, '{'))
				return TFM_E_FORMAT;
			p += 2;
			continue;
		}
		const char *f = ++p;
		int depth = 1;
		while (p < e && depth) {
			if (*p == '{')
				depth++;
			else if (*p == '}')
				depth--;
			if (depth)
				p++;
		}
		if (p >= e)
			return jr_err(r, "Single '{' encountered in format string");
		const char *fe = p++; /* field is [f, fe) */
		const char *colon = memchr(f, ':', (size_t)(fe - f)), *bang = memchr(f, '!', (size_t)(fe - f));
		if (bang && colon && bang > colon)
			bang = NULL;
		const char *ne = bang ? bang : colon ? colon : fe;
		/* the argument: name up to the first . or [ */
		const char *q = f;
		while (q < ne && *q != '.' && *q != '[')
			q++;
		struct jv v;
		if (q == f) {
			if (!ja_arg(a, auto_idx, NULL, &v))
				return jr_err(r, "Replacement index %d out of range for positional args tuple",
					      auto_idx);
			auto_idx++;
		} else if (*f >= '0' && *f <= '9') {
			int idx = atoi(f);
			if (!ja_arg(a, idx, NULL, &v))
				return jr_err(r, "Replacement index %d out of range for positional args tuple", idx);
		} else {
			char *name = ja_strndup(&r->a, f, (size_t)(q - f));
			if (!name)
				return TFM_E_FORMAT;
			if (!ja_arg(a, -1, name, &v))
				return jr_err(r, "format: no argument named '%s'", name);
		}
		while (q < ne) {
			if (*q == '.') {
				const char *s0 = ++q;
				while (q < ne && *q != '.' && *q != '[')
					q++;
				char *name = ja_strndup(&r->a, s0, (size_t)(q - s0));
				if (!name || (st = jm_getattr(r, v, name, &v)))
					return TFM_E_FORMAT;
			} else {
				const char *s0 = ++q;
				while (q < ne && *q != ']')
					q++;
				struct jv key = jv_str(s0, (size_t)(q - s0));
				if (q > s0 && *s0 >= '0' && *s0 <= '9')
					key = jv_int(atoll(s0));
				if ((st = jm_getitem(r, v, key, &v)))
					return st;
				q++;
			}
		}
		if (bang && bang + 1 < fe && (bang[1] == 'r' || bang[1] == 'a')) {
			struct jbuf t = { .a = &r->a };
			if (jv_repr(&t, v, 0))
				return TFM_E_FORMAT;
			v = jv_str(t.p ? t.p : "", t.n);
		} else if (bang && (st = jv_tostr(&r->a, v, &v))) {
			return st;
		}
		const char *spec = colon ? colon + 1 : fe;
		if ((st = format_spec(r, &b, v, spec, (size_t)(fe - spec))))
			return st;
	}
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}
