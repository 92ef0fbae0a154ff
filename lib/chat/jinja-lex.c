/* jinja-lex.c: template source to tokens, with jinja2's whitespace rules as
 * transformers configures them: trim_blocks (a block or comment tag eats
 * the newline after it), lstrip_blocks (spaces and tabs before a block or
 * comment tag at the start of a line go), and the "-" and "+" markers of
 * {%- -%} {{- -}} {#- -#} {%+ +%}. */
#include "jinja-impl.h"

#include <string.h>

struct lx {
	struct jarena *a;
	const char *s;
	size_t n, i;
	int line;        /* line of s[lpos] */
	size_t lpos;
	struct jtok *t;
	size_t nt, cap;
};

static int line_at(struct lx *x, size_t pos)
{
	for (; x->lpos < pos; x->lpos++)
		if (x->s[x->lpos] == '\n')
			x->line++;
	return x->line;
}

static int lx_err(struct lx *x, size_t pos, const char *msg, const char *arg)
{
	return tfm_seterr(TFM_E_FORMAT, "template line %d: %s%s", line_at(x, pos), msg, arg ? arg : "");
}

static struct jtok *emit(struct lx *x, int type, size_t pos, const char *p, size_t n)
{
	if (x->nt == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		struct jtok *nt = ja_alloc(x->a, cap * sizeof *nt);
		if (!nt)
			return NULL;
		if (x->nt)
			memcpy(nt, x->t, x->nt * sizeof *nt);
		x->t = nt;
		x->cap = cap;
	}
	struct jtok *t = &x->t[x->nt++];
	memset(t, 0, sizeof *t);
	t->t = type;
	t->line = line_at(x, pos);
	t->p = p;
	t->n = n;
	return t;
}

static size_t skip_space(const char *s, size_t n, size_t i)
{
	size_t k;
	while ((k = ju_space_at(s, n, i)))
		i += k;
	return i;
}

/* Data before a tag, with the tag's left whitespace control applied. */
static int emit_data(struct lx *x, size_t from, size_t to, char sign, int lstrip, int line_starting)
{
	const char *s = x->s;
	if (sign == '-') {
		size_t k;
		while (to > from && (k = ju_space_before(s + from, to - from)))
			to -= k;
	} else if (sign != '+' && lstrip) {
		size_t l = to;
		while (l > from && s[l - 1] != '\n')
			l--;
		if (l > from || line_starting) {
			size_t k = l;
			while (k < to && (s[k] == ' ' || s[k] == '\t'))
				k++;
			if (k == to)
				to = l;
		}
	}
	if (to > from && !emit(x, TK_DATA, from, s + from, to - from))
		return TFM_E_FORMAT;
	return TFM_OK;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/* A string literal's value: Python's unicode-escape of its body. */
static int lex_string(struct lx *x, struct jtok **out)
{
	const char *s = x->s;
	char q = s[x->i];
	size_t start = x->i, j = x->i + 1;
	while (j < x->n && s[j] != q) {
		if (s[j] == '\\' && j + 1 < x->n)
			j++;
		j++;
	}
	if (j >= x->n)
		return lx_err(x, start, "unterminated string", NULL);
	char *v = ja_alloc(x->a, j - start);
	if (!v)
		return TFM_E_FORMAT;
	size_t n = 0;
	for (size_t i = start + 1; i < j;) {
		if (s[i] != '\\') {
			v[n++] = s[i++];
			continue;
		}
		char e = s[i + 1];
		uint32_t cp = 0;
		int digits = 0;
		i += 2;
		switch (e) {
		case '\n': continue;
		case '\\': case '\'': case '"': v[n++] = e; continue;
		case 'a': v[n++] = 7; continue;
		case 'b': v[n++] = 8; continue;
		case 'f': v[n++] = 12; continue;
		case 'n': v[n++] = '\n'; continue;
		case 'r': v[n++] = '\r'; continue;
		case 't': v[n++] = '\t'; continue;
		case 'v': v[n++] = 11; continue;
		case 'x': digits = 2; break;
		case 'u': digits = 4; break;
		case 'U': digits = 8; break;
		default:
			if (e >= '0' && e <= '7') {
				cp = (uint32_t)(e - '0');
				for (int k = 0; k < 2 && i < j && s[i] >= '0' && s[i] <= '7'; k++)
					cp = cp * 8 + (uint32_t)(s[i++] - '0');
				n += ju_encode(cp, v + n);
				continue;
			}
			v[n++] = '\\';
			v[n++] = e;
			continue;
		}
		for (int k = 0; k < digits; k++) {
			int h = i < j ? hexval(s[i]) : -1;
			if (h < 0)
				return lx_err(x, start, "bad escape in string literal", NULL);
			cp = cp << 4 | (uint32_t)h;
			i++;
		}
		if (cp > 0x10ffff)
			return lx_err(x, start, "bad escape in string literal", NULL);
		n += ju_encode(cp, v + n);
	}
	struct jtok *t = emit(x, TK_STRING, start, v, n);
	if (!t)
		return TFM_E_FORMAT;
	x->i = j + 1;
	*out = t;
	return TFM_OK;
}

static int lex_number(struct lx *x)
{
	const char *s = x->s;
	size_t i = x->i, start = i;
	int is_float = 0;
	while (i < x->n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && i + 1 < x->n &&
	       s[i + 1] >= '0' && s[i + 1] <= '9')))
		i++;
	int after_dot = start > 0 && s[start - 1] == '.';
	if (!after_dot && i + 1 < x->n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
		is_float = 1;
		i++;
		while (i < x->n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			i++;
	}
	if (!after_dot && i < x->n && s[i] == 'e') {
		size_t k = i + 1;
		if (k < x->n && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k < x->n && s[k] >= '0' && s[k] <= '9') {
			is_float = 1;
			i = k;
			while (i < x->n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
				i++;
		}
	}
	char buf[64];
	size_t bn = 0;
	for (size_t k = start; k < i && bn < sizeof buf - 1; k++)
		if (s[k] != '_')
			buf[bn++] = s[k];
	buf[bn] = 0;
	struct jtok *t = emit(x, is_float ? TK_FLOAT : TK_INT, start, s + start, i - start);
	if (!t)
		return TFM_E_FORMAT;
	if (is_float) {
		t->f = strtod(buf, NULL);
	} else {
		int64_t v = 0;
		for (size_t k = 0; k < bn; k++) {
			int d = buf[k] - '0';
			if (v > (INT64_MAX - d) / 10)
				return lx_err(x, start, "integer literal too large", NULL);
			v = v * 10 + d;
		}
		t->i = v;
	}
	x->i = i;
	return TFM_OK;
}

static const char *const ops2[] = { "//", "**", "==", "!=", ">=", "<=" };

/* The tokens of a {{ }} or {% %} tag up to and including its end.
 * Returns the position after the end, with *nl set when it ended in a
 * newline (the next data starts a line). */
static int lex_tag(struct lx *x, char kind, int *nl)
{
	const char *s = x->s;
	char stack[256];
	int depth = 0;
	for (;;) {
		x->i = skip_space(s, x->n, x->i);
		size_t i = x->i;
		if (i >= x->n)
			return lx_err(x, i, kind == '{' ? "missing '}}'" : "missing '%}'", NULL);
		if (depth == 0) {
			char c = kind == '{' ? '}' : '%';
			int sgn = (s[i] == '-' || (s[i] == '+' && kind == '%'));
			if (i + 1 + sgn < x->n && s[i + sgn] == c && s[i + sgn + 1] == '}') {
				if (!emit(x, kind == '{' ? TK_VAR_END : TK_BLOCK_END, i, s + i, 2 + sgn))
					return TFM_E_FORMAT;
				i += 2 + sgn;
				if (sgn && s[x->i] == '-')
					i = skip_space(s, x->n, i);
				else if (!sgn && kind == '%' && i < x->n && s[i] == '\n')
					i++;
				*nl = i > 0 && s[i - 1] == '\n';
				x->i = i;
				return TFM_OK;
			}
		}
		char c = s[i];
		struct jtok *t;
		int st;
		if (c >= '0' && c <= '9') {
			if ((st = lex_number(x)))
				return st;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
			size_t j = i;
			while (j < x->n && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') ||
			       (s[j] >= '0' && s[j] <= '9') || s[j] == '_'))
				j++;
			if (!emit(x, TK_NAME, i, s + i, j - i))
				return TFM_E_FORMAT;
			x->i = j;
		} else if (c == '\'' || c == '"') {
			if ((st = lex_string(x, &t)))
				return st;
		} else {
			size_t len = 0;
			for (size_t k = 0; k < sizeof ops2 / sizeof *ops2; k++)
				if (i + 1 < x->n && s[i] == ops2[k][0] && s[i + 1] == ops2[k][1])
					len = 2;
			if (!len && strchr("+-/*%~[](){}><=.:|,;", c) && c)
				len = 1;
			if (!len) {
				char what[8] = { c, 0 };
				return lx_err(x, i, "unexpected character ", what);
			}
			if (strchr("([{", c)) {
				if (depth == (int)sizeof stack)
					return lx_err(x, i, "brackets nested too deeply", NULL);
				stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
			} else if (strchr(")]}", c)) {
				if (depth == 0 || stack[depth - 1] != c) {
					char what[8] = { '\'', c, '\'', 0 };
					return lx_err(x, i, "unexpected ", what);
				}
				depth--;
			}
			if (!emit(x, TK_OP, i, s + i, len))
				return TFM_E_FORMAT;
			x->i = i + len;
		}
	}
}

/* {% raw %}...{% endraw %}: x->i is after the opening tag.  Returns the
 * position of the "{%" of endraw and, in *end, the position after it. */
static int find_endraw(struct lx *x, size_t from, size_t *tag, char *sign, size_t *end)
{
	const char *s = x->s;
	for (size_t i = from; i + 1 < x->n; i++) {
		if (s[i] != '{' || s[i + 1] != '%')
			continue;
		size_t k = i + 2;
		char sg = 0;
		if (k < x->n && (s[k] == '-' || s[k] == '+'))
			sg = s[k++];
		k = skip_space(s, x->n, k);
		if (x->n - k < 6 || memcmp(s + k, "endraw", 6))
			continue;
		k = skip_space(s, x->n, k + 6);
		if (k + 2 < x->n + 1 && k + 1 < x->n && s[k] == '%' && s[k + 1] == '}') {
			k += 2;
			if (k < x->n && s[k] == '\n')
				k++;
		} else if (k + 2 < x->n && (s[k] == '-' || s[k] == '+') && s[k + 1] == '%' && s[k + 2] == '}') {
			int minus = s[k] == '-';
			k += 3;
			if (minus)
				k = skip_space(s, x->n, k);
		} else {
			continue;
		}
		*tag = i;
		*sign = sg;
		*end = k;
		return TFM_OK;
	}
	return lx_err(x, from, "missing {% endraw %}", NULL);
}

/* After "{%" and its sign at k: " raw %}" or " raw -%}"?  Returns the
 * position after it, or 0. */
static size_t raw_begin(struct lx *x, size_t k)
{
	const char *s = x->s;
	k = skip_space(s, x->n, k);
	if (x->n - k < 3 || memcmp(s + k, "raw", 3))
		return 0;
	k = skip_space(s, x->n, k + 3);
	if (k + 1 < x->n && s[k] == '%' && s[k + 1] == '}')
		return k + 2;
	if (k + 2 < x->n && s[k] == '-' && s[k + 1] == '%' && s[k + 2] == '}')
		return skip_space(s, x->n, k + 3);
	return 0;
}

int jx_lex(struct jarena *a, const char *src, size_t n, struct jtok **toks, size_t *ntoks)
{
	struct lx x = { .a = a, .s = src, .n = n, .line = 1 };
	int line_starting = 1, st;
	while (x.i < n) {
		size_t j = x.i;
		for (; j + 1 < n; j++)
			if (src[j] == '{' && (src[j + 1] == '{' || src[j + 1] == '%' || src[j + 1] == '#'))
				break;
		if (j + 1 >= n) {
			if (!emit(&x, TK_DATA, x.i, src + x.i, n - x.i))
				return TFM_E_FORMAT;
			break;
		}
		char kind = src[j + 1], sign = 0;
		size_t k = j + 2;
		if (k < n && (src[k] == '-' || src[k] == '+'))
			sign = src[k++];
		size_t rb = kind == '%' ? raw_begin(&x, k) : 0;
		if ((st = emit_data(&x, x.i, j, sign, kind != '{', line_starting)))
			return st;
		if (rb) {
			size_t tag = 0, end = 0;
			char sg = 0;
			if ((st = find_endraw(&x, rb, &tag, &sg, &end)))
				return st;
			if ((st = emit_data(&x, rb, tag, sg, 1, rb > 0 && src[rb - 1] == '\n')))
				return st;
			line_starting = end > 0 && src[end - 1] == '\n';
			x.i = end;
			continue;
		}
		if (kind == '#') {
			size_t e = k;
			while (e + 1 < n && !(src[e] == '#' && src[e + 1] == '}'))
				e++;
			if (e + 1 >= n)
				return lx_err(&x, j, "missing end of comment tag", NULL);
			size_t after = e + 2;
			if (e > k && src[e - 1] == '-')
				after = skip_space(src, n, after);
			else if (!(e > k && src[e - 1] == '+') && after < n && src[after] == '\n')
				after++;
			line_starting = src[after - 1] == '\n';
			x.i = after;
			continue;
		}
		if (!emit(&x, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, j, src + j, k - j))
			return TFM_E_FORMAT;
		x.i = k;
		if ((st = lex_tag(&x, kind, &line_starting)))
			return st;
	}
	if (!emit(&x, TK_EOF, n, src + n, 0))
		return TFM_E_FORMAT;
	*toks = x.t;
	*ntoks = x.nt;
	return TFM_OK;
}

char *jx_normalize(struct jarena *a, const char *src, size_t n, size_t *outn)
{
	char *d = ja_alloc(a, n + 1);
	if (!d)
		return NULL;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (src[i] == '\r') {
			d[m++] = '\n';
			if (i + 1 < n && src[i + 1] == '\n')
				i++;
		} else {
			d[m++] = src[i];
		}
	}
	if (m > 0 && d[m - 1] == '\n')
		m--;
	d[m] = 0;
	*outn = m;
	return d;
}
