/* jinja-tests.c: jinja2's builtin tests ("x is defined", "x is
 * divisibleby 3", ...), with Python's notion of each type: numbers include
 * booleans, iterables include undefined, generators are no sequences. */
#include "jinja-impl.h"

#include <math.h>
#include <string.h>

static const char *const TESTS[] = {
	"boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even",
	"false", "filter", "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le",
	"lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas", "sequence",
	"string", "test", "true", "undefined", "upper", "==", "!=", "<", "<=", ">", ">=", NULL,
};

int jf_has_test(const char *name)
{
	for (int i = 0; TESTS[i]; i++)
		if (!strcmp(TESTS[i], name))
			return 1;
	return 0;
}

static int cmp_test(struct jrt *r, struct jv v, struct jargs *a, int op, int *res)
{
	struct jv o;
	int st = TFM_OK;
	if (!ja_arg(a, 0, NULL, &o))
		return jr_err(r, "the test needs an argument");
	if (op == 0) {
		*res = jv_eq(v, o);
		return TFM_OK;
	}
	if (op == 1) {
		*res = !jv_eq(v, o);
		return TFM_OK;
	}
	if (v.t == JT_UNDEF)
		return jr_undef_err(r, v);
	if (o.t == JT_UNDEF)
		return jr_undef_err(r, o);
	int c = jv_cmp(v, o, &st);
	if (st)
		return st;
	*res = op == 2 ? c < 0 : op == 3 ? c <= 0 : op == 4 ? c > 0 : c >= 0;
	return TFM_OK;
}

static int is_name(const char *name, const char *a, const char *b, const char *c)
{
	return !strcmp(name, a) || (b && !strcmp(name, b)) || (c && !strcmp(name, c));
}

int jf_test(struct jrt *r, const char *name, struct jv v, struct jargs *a, int *res)
{
	struct jv o;
	int st;
	if (!strcmp(name, "defined")) { *res = v.t != JT_UNDEF; return TFM_OK; }
	if (!strcmp(name, "undefined")) { *res = v.t == JT_UNDEF; return TFM_OK; }
	if (!strcmp(name, "none")) { *res = v.t == JT_NONE; return TFM_OK; }
	if (!strcmp(name, "boolean")) { *res = v.t == JT_BOOL; return TFM_OK; }
	if (!strcmp(name, "true")) { *res = v.t == JT_BOOL && v.i; return TFM_OK; }
	if (!strcmp(name, "false")) { *res = v.t == JT_BOOL && !v.i; return TFM_OK; }
	if (!strcmp(name, "integer")) { *res = v.t == JT_INT; return TFM_OK; }
	if (!strcmp(name, "float")) { *res = v.t == JT_FLOAT; return TFM_OK; }
	if (!strcmp(name, "number")) { *res = jv_isnum(v); return TFM_OK; }
	if (!strcmp(name, "string")) { *res = v.t == JT_STR; return TFM_OK; }
	if (!strcmp(name, "mapping")) { *res = v.t == JT_DICT; return TFM_OK; }
	if (!strcmp(name, "iterable")) {
		*res = v.t == JT_UNDEF || v.t == JT_STR || v.t == JT_LIST || v.t == JT_DICT;
		return TFM_OK;
	}
	if (!strcmp(name, "sequence")) {
		*res = v.t == JT_UNDEF || v.t == JT_STR || (v.t == JT_LIST && !v.gen) || v.t == JT_DICT;
		return TFM_OK;
	}
	if (!strcmp(name, "callable")) {
		*res = v.t == JT_MACRO || v.t == JT_FUNC || v.t == JT_METHOD || v.t == JT_LOOP;
		return TFM_OK;
	}
	if (!strcmp(name, "escaped")) { *res = 0; return TFM_OK; }
	if (!strcmp(name, "odd") || !strcmp(name, "even")) {
		if (v.t == JT_UNDEF)
			return jr_undef_err(r, v);
		if (v.t != JT_INT && v.t != JT_BOOL)
			return jr_err(r, "%s: expected an integer, got '%s'", name, jv_typename(v));
		*res = (v.i & 1) == (name[0] == 'o');
		return TFM_OK;
	}
	if (!strcmp(name, "divisibleby")) {
		if (!ja_arg(a, 0, "num", &o) || !jv_isnum(o) || !jv_isnum(v))
			return jr_err(r, "divisibleby: expected numbers");
		if (jv_num(o) == 0)
			return jr_err(r, "integer division or modulo by zero");
		*res = v.t != JT_FLOAT && o.t != JT_FLOAT ? v.i % o.i == 0 : fmod(jv_num(v), jv_num(o)) == 0;
		return TFM_OK;
	}
	if (is_name(name, "eq", "equalto", "==")) return cmp_test(r, v, a, 0, res);
	if (is_name(name, "ne", "!=", NULL)) return cmp_test(r, v, a, 1, res);
	if (is_name(name, "lt", "lessthan", "<")) return cmp_test(r, v, a, 2, res);
	if (is_name(name, "le", "<=", NULL)) return cmp_test(r, v, a, 3, res);
	if (is_name(name, "gt", "greaterthan", ">")) return cmp_test(r, v, a, 4, res);
	if (is_name(name, "ge", ">=", NULL)) return cmp_test(r, v, a, 5, res);
	if (!strcmp(name, "in")) {
		if (!ja_arg(a, 0, "seq", &o))
			return jr_err(r, "in: missing argument");
		if (o.t == JT_STR) {
			if (v.t != JT_STR)
				return jr_err(r, "'in <string>' requires string as left operand");
			*res = v.s.n == 0 || memmem(o.s.p, o.s.n, v.s.p, v.s.n) != NULL;
		} else if (o.t == JT_LIST) {
			*res = 0;
			for (size_t i = 0; i < o.l->n && !*res; i++)
				*res = jv_eq(o.l->v[i], v);
		} else if (o.t == JT_DICT) {
			*res = jd_get(o.d, v) != NULL;
		} else if (o.t == JT_UNDEF) {
			*res = 0;
		} else {
			return jr_err(r, "argument of type '%s' is not iterable", jv_typename(o));
		}
		return TFM_OK;
	}
	if (!strcmp(name, "sameas")) {
		if (!ja_arg(a, 0, "other", &o))
			return jr_err(r, "sameas: missing argument");
		if (v.t != o.t)
			*res = 0;
		else if (v.t == JT_LIST)
			*res = v.l == o.l;
		else if (v.t == JT_DICT || v.t == JT_NS)
			*res = v.d == o.d;
		else
			*res = jv_eq(v, o);
		return TFM_OK;
	}
	if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
		struct jv s;
		struct jargs none = { 0 };
		if (v.t != JT_STR) {
			*res = 0;
			return TFM_OK;
		}
		struct jmethod m = { v, name[0] == 'l' ? "islower" : "isupper" };
		if ((st = jm_call_method(r, &m, &none, &s)))
			return st;
		*res = (int)s.i;
		return TFM_OK;
	}
	if (!strcmp(name, "filter") || !strcmp(name, "test")) {
		if (v.t != JT_STR) {
			*res = 0;
			return TFM_OK;
		}
		char *n = ja_strndup(&r->a, v.s.p, v.s.n);
		if (!n)
			return TFM_E_FORMAT;
		*res = name[0] == 'f' ? jf_has_filter(n) : jf_has_test(n);
		return TFM_OK;
	}
	return jr_err(r, "No test named '%s'.", name);
}
