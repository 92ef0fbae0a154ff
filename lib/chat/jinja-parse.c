/* jinja-parse.c: tokens to a syntax tree, by recursive descent with
 * jinja2's grammar and precedence (condexpr < or < and < not < compare <
 * + - < ~ < * / // % < ** < unary < postfix, filters and tests binding to
 * the unary they follow).  Nesting is capped so that hostile input ends in
 * an error rather than a stack overflow. */
#include "jinja-impl.h"

#include <string.h>

#define MAX_NEST 200

struct ps {
	struct jarena *a;
	const struct jtok *t;
	size_t n, i;
	int depth;
	int seen[3]; /* references to varargs, kwargs, caller so far */
};

struct nvec {
	struct jnode **v;
	const char **kw;
	int n, cap;
};

static const struct jtok *cur(struct ps *p) { return &p->t[p->i]; }
static const struct jtok *peek(struct ps *p, int k)
{
	return p->i + (size_t)k < p->n ? &p->t[p->i + (size_t)k] : &p->t[p->n - 1];
}

static int tok_is(const struct jtok *t, int type, const char *s)
{
	if (t->t != type)
		return 0;
	return !s || (t->n == strlen(s) && !memcmp(t->p, s, t->n));
}
#define IS_OP(p, s) tok_is(cur(p), TK_OP, s)
#define IS_NAME(p, s) tok_is(cur(p), TK_NAME, s)

static const char *describe(const struct jtok *t, char *buf, size_t n)
{
	switch (t->t) {
	case TK_EOF: return "end of template";
	case TK_DATA: return "template data";
	case TK_VAR_BEGIN: return "'{{'";
	case TK_VAR_END: return "end of print statement";
	case TK_BLOCK_BEGIN: return "'{%'";
	case TK_BLOCK_END: return "end of statement block";
	case TK_STRING: return "string";
	default:
		snprintf(buf, n, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p);
		return buf;
	}
}

static struct jnode *fail(struct ps *p, const char *what)
{
	char buf[64];
	const struct jtok *t = cur(p);
	tfm_seterr(TFM_E_FORMAT, "template line %d: %s (at %s)", t->line, what,
		   describe(t, buf, sizeof buf));
	return NULL;
}

static int expect_op(struct ps *p, const char *op)
{
	if (!IS_OP(p, op)) {
		char msg[32];
		snprintf(msg, sizeof msg, "expected '%s'", op);
		fail(p, msg);
		return TFM_E_FORMAT;
	}
	p->i++;
	return TFM_OK;
}

static int expect_type(struct ps *p, int type, const char *what)
{
	if (cur(p)->t != type) {
		fail(p, what);
		return TFM_E_FORMAT;
	}
	p->i++;
	return TFM_OK;
}

static struct jnode *mk(struct ps *p, int k, int line)
{
	struct jnode *n = ja_alloc(p->a, sizeof *n);
	if (n) {
		n->k = k;
		n->line = line;
	}
	return n;
}

static const char *tok_name(struct ps *p, const struct jtok *t)
{
	return ja_strndup(p->a, t->p, t->n);
}

static int nv_push(struct ps *p, struct nvec *v, struct jnode *n, const char *kw)
{
	if (v->n == v->cap) {
		int cap = v->cap ? v->cap * 2 : 4;
		struct jnode **nn = ja_alloc(p->a, (size_t)cap * sizeof *nn);
		const char **nk = ja_alloc(p->a, (size_t)cap * sizeof *nk);
		if (!nn || !nk)
			return TFM_E_FORMAT;
		if (v->n) {
			memcpy(nn, v->v, (size_t)v->n * sizeof *nn);
			memcpy(nk, v->kw, (size_t)v->n * sizeof *nk);
		}
		v->v = nn;
		v->kw = nk;
		v->cap = cap;
	}
	v->v[v->n] = n;
	v->kw[v->n] = kw;
	v->n++;
	return TFM_OK;
}

static int enter(struct ps *p)
{
	if (++p->depth > MAX_NEST) {
		fail(p, "template nested too deeply");
		return TFM_E_FORMAT;
	}
	return TFM_OK;
}

static struct jnode *parse_expression(struct ps *p, int with_condexpr);
static struct jnode *parse_tuple(struct ps *p, int simplified, int with_condexpr,
				 const char *extra_end, int explicit_parens);
static struct jnode *parse_unary(struct ps *p, int with_filter);
static struct jnode *parse_primary(struct ps *p);
static struct jnode *parse_postfix(struct ps *p, struct jnode *n);
static struct jnode *parse_filter(struct ps *p, struct jnode *n, int start_inline);

/* "(" [arg {"," arg}] [","] ")", an arg being expr or name=expr. */
static int parse_call_args(struct ps *p, struct nvec *args)
{
	int st = expect_op(p, "(");
	int comma = 0;
	while (!st && !IS_OP(p, ")")) {
		if (comma) {
			if ((st = expect_op(p, ",")))
				break;
			if (IS_OP(p, ")"))
				break;
		}
		if (IS_OP(p, "*") || IS_OP(p, "**")) {
			fail(p, "*args and **kwargs are not supported");
			return TFM_E_FORMAT;
		}
		const char *kw = NULL;
		if (cur(p)->t == TK_NAME && tok_is(peek(p, 1), TK_OP, "=")) {
			kw = tok_name(p, cur(p));
			p->i += 2;
		} else if (args->n && args->kw[args->n - 1]) {
			fail(p, "positional argument after keyword argument");
			return TFM_E_FORMAT;
		}
		struct jnode *e = parse_expression(p, 1);
		if (!e || nv_push(p, args, e, kw))
			return TFM_E_FORMAT;
		comma = 1;
	}
	return st ? st : expect_op(p, ")");
}

static void set_args(struct jnode *n, struct nvec *v)
{
	n->kids = v->v;
	n->kw = v->kw;
	n->nkids = v->n;
}

static struct jnode *parse_list(struct ps *p)
{
	struct jnode *n = mk(p, JN_LIST, cur(p)->line);
	struct nvec v = { 0 };
	if (!n || expect_op(p, "["))
		return NULL;
	while (!IS_OP(p, "]")) {
		if (v.n && expect_op(p, ","))
			return NULL;
		if (IS_OP(p, "]"))
			break;
		struct jnode *e = parse_expression(p, 1);
		if (!e || nv_push(p, &v, e, NULL))
			return NULL;
	}
	p->i++;
	set_args(n, &v);
	return n;
}

static struct jnode *parse_dict(struct ps *p)
{
	struct jnode *n = mk(p, JN_DICT, cur(p)->line);
	struct nvec keys = { 0 }, vals = { 0 };
	if (!n || expect_op(p, "{"))
		return NULL;
	while (!IS_OP(p, "}")) {
		if (keys.n && expect_op(p, ","))
			return NULL;
		if (IS_OP(p, "}"))
			break;
		struct jnode *k = parse_expression(p, 1);
		if (!k || expect_op(p, ":"))
			return NULL;
		struct jnode *v = parse_expression(p, 1);
		if (!v || nv_push(p, &keys, k, NULL) || nv_push(p, &vals, v, NULL))
			return NULL;
	}
	p->i++;
	set_args(n, &keys);
	n->kids2 = vals.v;
	n->nkids2 = vals.n;
	return n;
}

static struct jnode *parse_primary(struct ps *p)
{
	const struct jtok *t = cur(p);
	struct jnode *n;
	if (enter(p))
		return NULL;
	switch (t->t) {
	case TK_NAME:
		if (!(n = mk(p, JN_CONST, t->line)))
			return NULL;
		if (tok_is(t, TK_NAME, "true") || tok_is(t, TK_NAME, "True"))
			n->v = jv_bool(1);
		else if (tok_is(t, TK_NAME, "false") || tok_is(t, TK_NAME, "False"))
			n->v = jv_bool(0);
		else if (tok_is(t, TK_NAME, "none") || tok_is(t, TK_NAME, "None"))
			n->v = jv_none();
		else {
			n->k = JN_NAME;
			if (!(n->name = tok_name(p, t)))
				return NULL;
			p->seen[0] += !strcmp(n->name, "varargs");
			p->seen[1] += !strcmp(n->name, "kwargs");
			p->seen[2] += !strcmp(n->name, "caller");
		}
		p->i++;
		break;
	case TK_STRING: {
		/* adjacent literals concatenate */
		size_t len = 0, k = p->i;
		for (; p->t[k].t == TK_STRING; k++)
			len += p->t[k].n;
		char *s = ja_alloc(p->a, len + 1);
		if (!s || !(n = mk(p, JN_CONST, t->line)))
			return NULL;
		len = 0;
		for (; p->i < k; p->i++) {
			memcpy(s + len, p->t[p->i].p, p->t[p->i].n);
			len += p->t[p->i].n;
		}
		n->v = jv_str(s, len);
		break;
	}
	case TK_INT:
	case TK_FLOAT:
		if (!(n = mk(p, JN_CONST, t->line)))
			return NULL;
		n->v = t->t == TK_INT ? jv_int(t->i) : jv_float(t->f);
		p->i++;
		break;
	case TK_OP:
		if (tok_is(t, TK_OP, "(")) {
			p->i++;
			n = parse_tuple(p, 0, 1, NULL, 1);
			if (!n || expect_op(p, ")"))
				return NULL;
			break;
		}
		if (tok_is(t, TK_OP, "[")) {
			n = parse_list(p);
			break;
		}
		if (tok_is(t, TK_OP, "{")) {
			n = parse_dict(p);
			break;
		}
		/* fall through */
	default:
		return fail(p, "unexpected token");
	}
	p->depth--;
	return n;
}

/* [start]:[stop][:[step]] or an expression, inside [ ]. */
static struct jnode *parse_subscribed(struct ps *p)
{
	int line = cur(p)->line;
	struct jnode *start = NULL, *stop = NULL, *step = NULL;
	if (!IS_OP(p, ":")) {
		start = parse_expression(p, 1);
		if (!start)
			return NULL;
		if (!IS_OP(p, ":"))
			return start;
	}
	p->i++; /* ':' */
	if (!IS_OP(p, ":") && !IS_OP(p, "]") && !IS_OP(p, ",") && !(stop = parse_expression(p, 1)))
		return NULL;
	if (IS_OP(p, ":")) {
		p->i++;
		if (!IS_OP(p, "]") && !IS_OP(p, ",") && !(step = parse_expression(p, 1)))
			return NULL;
	}
	struct jnode *n = mk(p, JN_SLICE, line);
	if (n) {
		n->a = start;
		n->b = stop;
		n->c = step;
	}
	return n;
}

static struct jnode *parse_postfix(struct ps *p, struct jnode *n)
{
	while (n) {
		int line = cur(p)->line;
		if (IS_OP(p, ".")) {
			p->i++;
			const struct jtok *t = cur(p);
			struct jnode *m;
			if (t->t == TK_NAME) {
				if (!(m = mk(p, JN_ATTR, line)) || !(m->name = tok_name(p, t)))
					return NULL;
				m->a = n;
			} else if (t->t == TK_INT) {
				struct jnode *k = mk(p, JN_CONST, line);
				if (!k || !(m = mk(p, JN_ITEM, line)))
					return NULL;
				k->v = jv_int(t->i);
				m->a = n;
				m->b = k;
			} else {
				return fail(p, "expected name or number after '.'");
			}
			p->i++;
			n = m;
		} else if (IS_OP(p, "[")) {
			p->i++;
			struct nvec v = { 0 };
			while (!IS_OP(p, "]")) {
				if (v.n && expect_op(p, ","))
					return NULL;
				struct jnode *e = parse_subscribed(p);
				if (!e || nv_push(p, &v, e, NULL))
					return NULL;
			}
			p->i++;
			if (v.n == 0)
				return fail(p, "expected a subscript");
			struct jnode *m = mk(p, JN_ITEM, line);
			if (!m)
				return NULL;
			m->a = n;
			if (v.n == 1) {
				m->b = v.v[0];
			} else {
				struct jnode *tu = mk(p, JN_TUPLE, line);
				if (!tu)
					return NULL;
				set_args(tu, &v);
				m->b = tu;
			}
			n = m;
		} else if (IS_OP(p, "(")) {
			struct jnode *m = mk(p, JN_CALL, line);
			struct nvec v = { 0 };
			if (!m || parse_call_args(p, &v))
				return NULL;
			m->a = n;
			set_args(m, &v);
			n = m;
		} else {
			break;
		}
	}
	return n;
}

static struct jnode *parse_filter(struct ps *p, struct jnode *n, int start_inline)
{
	while (IS_OP(p, "|") || start_inline) {
		if (!start_inline)
			p->i++;
		start_inline = 0;
		const struct jtok *t = cur(p);
		if (t->t != TK_NAME)
			return fail(p, "expected a filter name");
		struct jnode *m = mk(p, JN_FILTER, t->line);
		if (!m || !(m->name = tok_name(p, t)))
			return NULL;
		p->i++;
		m->a = n;
		if (IS_OP(p, "(")) {
			struct nvec v = { 0 };
			if (parse_call_args(p, &v))
				return NULL;
			set_args(m, &v);
		}
		n = m;
	}
	return n;
}

static struct jnode *parse_test(struct ps *p, struct jnode *n)
{
	int line = cur(p)->line, negated = 0;
	p->i++; /* is */
	if (IS_NAME(p, "not")) {
		negated = 1;
		p->i++;
	}
	const struct jtok *t = cur(p);
	if (t->t != TK_NAME)
		return fail(p, "expected a test name");
	struct jnode *m = mk(p, JN_TEST, line);
	if (!m || !(m->name = tok_name(p, t)))
		return NULL;
	p->i++;
	m->a = n;
	t = cur(p);
	if (IS_OP(p, "(")) {
		struct nvec v = { 0 };
		if (parse_call_args(p, &v))
			return NULL;
		set_args(m, &v);
	} else if ((t->t == TK_NAME || t->t == TK_STRING || t->t == TK_INT || t->t == TK_FLOAT ||
		    IS_OP(p, "[") || IS_OP(p, "{")) &&
		   !IS_NAME(p, "else") && !IS_NAME(p, "or") && !IS_NAME(p, "and")) {
		if (IS_NAME(p, "is"))
			return fail(p, "you cannot chain tests with 'is'");
		struct jnode *arg = parse_postfix(p, parse_primary(p));
		struct nvec v = { 0 };
		if (!arg || nv_push(p, &v, arg, NULL))
			return NULL;
		set_args(m, &v);
	}
	if (negated) {
		struct jnode *no = mk(p, JN_NOT, line);
		if (!no)
			return NULL;
		no->a = m;
		m = no;
	}
	return m;
}

static struct jnode *parse_filter_expr(struct ps *p, struct jnode *n)
{
	while (n) {
		if (IS_OP(p, "|"))
			n = parse_filter(p, n, 0);
		else if (IS_NAME(p, "is"))
			n = parse_test(p, n);
		else if (IS_OP(p, "("))
			n = parse_postfix(p, n);
		else
			break;
	}
	return n;
}

static struct jnode *parse_unary(struct ps *p, int with_filter)
{
	int line = cur(p)->line;
	struct jnode *n;
	if (enter(p))
		return NULL;
	if (IS_OP(p, "-") || IS_OP(p, "+")) {
		int neg = IS_OP(p, "-");
		p->i++;
		struct jnode *e = parse_unary(p, 0);
		if (!e || !(n = mk(p, neg ? JN_NEG : JN_POS, line)))
			return NULL;
		n->a = e;
	} else {
		n = parse_primary(p);
	}
	n = parse_postfix(p, n);
	if (with_filter)
		n = parse_filter_expr(p, n);
	p->depth--;
	return n;
}

static struct jnode *binop(struct ps *p, int op, int line, struct jnode *a, struct jnode *b)
{
	if (!a || !b)
		return NULL;
	struct jnode *n = mk(p, JN_BINOP, line);
	if (n) {
		n->op = op;
		n->a = a;
		n->b = b;
	}
	return n;
}

static struct jnode *parse_pow(struct ps *p)
{
	struct jnode *n = parse_unary(p, 1);
	while (n && IS_OP(p, "**")) {
		int line = cur(p)->line;
		p->i++;
		n = binop(p, OP_POW, line, n, parse_unary(p, 1));
	}
	return n;
}

static struct jnode *parse_math2(struct ps *p)
{
	struct jnode *n = parse_pow(p);
	while (n) {
		int op = IS_OP(p, "*") ? OP_MUL : IS_OP(p, "/") ? OP_DIV : IS_OP(p, "//") ? OP_FLOORDIV
			 : IS_OP(p, "%") ? OP_MOD : 0;
		if (!op)
			break;
		int line = cur(p)->line;
		p->i++;
		n = binop(p, op, line, n, parse_pow(p));
	}
	return n;
}

static struct jnode *parse_concat(struct ps *p)
{
	struct jnode *n = parse_math2(p);
	while (n && IS_OP(p, "~")) {
		int line = cur(p)->line;
		p->i++;
		n = binop(p, OP_CONCAT, line, n, parse_math2(p));
	}
	return n;
}

static struct jnode *parse_math1(struct ps *p)
{
	struct jnode *n = parse_concat(p);
	while (n && (IS_OP(p, "+") || IS_OP(p, "-"))) {
		int op = IS_OP(p, "+") ? OP_ADD : OP_SUB, line = cur(p)->line;
		p->i++;
		n = binop(p, op, line, n, parse_concat(p));
	}
	return n;
}

static struct jnode *parse_compare(struct ps *p)
{
	int line = cur(p)->line;
	struct jnode *n = parse_math1(p);
	struct nvec v = { 0 };
	int ops[64], nops = 0;
	while (n) {
		int op = IS_OP(p, "==") ? OP_EQ : IS_OP(p, "!=") ? OP_NE : IS_OP(p, "<") ? OP_LT
			 : IS_OP(p, "<=") ? OP_LE : IS_OP(p, ">") ? OP_GT : IS_OP(p, ">=") ? OP_GE
			 : IS_NAME(p, "in") ? OP_IN : 0;
		if (op) {
			p->i++;
		} else if (IS_NAME(p, "not") && tok_is(peek(p, 1), TK_NAME, "in")) {
			op = OP_NOTIN;
			p->i += 2;
		} else {
			break;
		}
		if (nops == (int)(sizeof ops / sizeof *ops))
			return fail(p, "too many chained comparisons");
		struct jnode *e = parse_math1(p);
		if (!e || nv_push(p, &v, e, NULL))
			return NULL;
		ops[nops++] = op;
	}
	if (!n || nops == 0)
		return n;
	struct jnode *c = mk(p, JN_CMP, line);
	if (!c || !(c->ops = ja_alloc(p->a, (size_t)nops * sizeof *c->ops)))
		return NULL;
	memcpy(c->ops, ops, (size_t)nops * sizeof *ops);
	c->a = n;
	c->kids2 = v.v;
	c->nkids2 = v.n;
	return c;
}

static struct jnode *parse_not(struct ps *p)
{
	if (IS_NAME(p, "not")) {
		int line = cur(p)->line;
		p->i++;
		if (enter(p))
			return NULL;
		struct jnode *e = parse_not(p), *n;
		p->depth--;
		if (!e || !(n = mk(p, JN_NOT, line)))
			return NULL;
		n->a = e;
		return n;
	}
	return parse_compare(p);
}

static struct jnode *parse_and(struct ps *p)
{
	struct jnode *n = parse_not(p);
	while (n && IS_NAME(p, "and")) {
		struct jnode *m = mk(p, JN_AND, cur(p)->line);
		p->i++;
		if (!m || !(m->b = parse_not(p)))
			return NULL;
		m->a = n;
		n = m;
	}
	return n;
}

static struct jnode *parse_or(struct ps *p)
{
	struct jnode *n = parse_and(p);
	while (n && IS_NAME(p, "or")) {
		struct jnode *m = mk(p, JN_OR, cur(p)->line);
		p->i++;
		if (!m || !(m->b = parse_and(p)))
			return NULL;
		m->a = n;
		n = m;
	}
	return n;
}

static struct jnode *parse_condexpr(struct ps *p)
{
	struct jnode *n = parse_or(p);
	while (n && IS_NAME(p, "if")) {
		struct jnode *m = mk(p, JN_COND, cur(p)->line);
		p->i++;
		if (!m || !(m->b = parse_or(p)))
			return NULL;
		m->a = n;
		if (IS_NAME(p, "else")) {
			p->i++;
			if (enter(p) || !(m->c = parse_condexpr(p)))
				return NULL;
			p->depth--;
		}
		n = m;
	}
	return n;
}

static struct jnode *parse_expression(struct ps *p, int with_condexpr)
{
	if (enter(p))
		return NULL;
	struct jnode *n = with_condexpr ? parse_condexpr(p) : parse_or(p);
	p->depth--;
	return n;
}

static int is_tuple_end(struct ps *p, const char *extra_end)
{
	const struct jtok *t = cur(p);
	if (t->t == TK_VAR_END || t->t == TK_BLOCK_END || tok_is(t, TK_OP, ")"))
		return 1;
	return extra_end && tok_is(t, TK_NAME, extra_end);
}

static struct jnode *parse_tuple(struct ps *p, int simplified, int with_condexpr,
				 const char *extra_end, int explicit_parens)
{
	int line = cur(p)->line, is_tuple = 0;
	struct nvec v = { 0 };
	for (;;) {
		if (v.n && expect_op(p, ","))
			return NULL;
		if (is_tuple_end(p, extra_end))
			break;
		struct jnode *e = simplified ? parse_primary(p) : parse_expression(p, with_condexpr);
		if (!e || nv_push(p, &v, e, NULL))
			return NULL;
		if (IS_OP(p, ","))
			is_tuple = 1;
		else
			break;
	}
	if (!is_tuple) {
		if (v.n)
			return v.v[0];
		if (!explicit_parens)
			return fail(p, "expected an expression");
	}
	struct jnode *n = mk(p, JN_TUPLE, line);
	if (n)
		set_args(n, &v);
	return n;
}

/* ---- statements ---- */

static int parse_body(struct ps *p, const char *const *ends, struct nvec *body, const char **which);

static int block_end(struct ps *p)
{
	return expect_type(p, TK_BLOCK_END, "expected end of statement block");
}

/* The body up to one of ends; consumes "{% end" and the end's name, and for
 * the closing end (not elif/else) the "%}" too when close is set. */
static int sub_body(struct ps *p, struct jnode *n, const char *const *ends, const char **which)
{
	struct nvec v = { 0 };
	int st = parse_body(p, ends, &v, which);
	if (st)
		return st;
	n->kids = v.v;
	n->nkids = v.n;
	return TFM_OK;
}

static int parse_signature(struct ps *p, struct jnode *n)
{
	struct nvec v = { 0 };
	int st = expect_op(p, "(");
	int have_default = 0;
	while (!st && !IS_OP(p, ")")) {
		if (v.n && (st = expect_op(p, ",")))
			break;
		if (cur(p)->t != TK_NAME) {
			fail(p, "expected a parameter name");
			return TFM_E_FORMAT;
		}
		const char *name = tok_name(p, cur(p));
		struct jnode *def = NULL;
		p->i++;
		if (IS_OP(p, "=")) {
			p->i++;
			if (!(def = parse_expression(p, 1)))
				return TFM_E_FORMAT;
			have_default = 1;
		} else if (have_default) {
			fail(p, "non-default argument follows default argument");
			return TFM_E_FORMAT;
		}
		if (!name || nv_push(p, &v, def, name))
			return TFM_E_FORMAT;
	}
	if (st || (st = expect_op(p, ")")))
		return st;
	n->params = v.kw;
	n->defs = v.v;
	n->nparams = v.n;
	return TFM_OK;
}

static const char *const END_IF[] = { "elif", "else", "endif", NULL };
static const char *const END_ENDIF[] = { "endif", NULL };

/* if / elif / else: an elif is an if in the else branch of the one
 * before, built in a loop so that long chains do not nest the parser. */
static struct jnode *parse_if(struct ps *p, int line)
{
	struct jnode *first = NULL, *n = NULL;
	const char *which = "elif";
	while (!strcmp(which, "elif")) {
		struct jnode *m = mk(p, JN_IF, line);
		if (!m || !(m->a = parse_tuple(p, 0, 0, NULL, 0)) || block_end(p) ||
		    sub_body(p, m, END_IF, &which))
			return NULL;
		if (n) {
			if (!(n->kids2 = ja_alloc(p->a, sizeof *n->kids2)))
				return NULL;
			n->kids2[0] = m;
			n->nkids2 = 1;
		} else {
			first = m;
		}
		n = m;
		line = cur(p)->line;
	}
	if (block_end(p))
		return NULL;
	if (!strcmp(which, "else")) {
		struct jnode tmp = { 0 };
		if (sub_body(p, &tmp, END_ENDIF, &which) || block_end(p))
			return NULL;
		n->kids2 = tmp.kids;
		n->nkids2 = tmp.nkids;
	}
	return first;
}

static const char *const END_FOR[] = { "else", "endfor", NULL };
static const char *const END_ENDFOR[] = { "endfor", NULL };

static struct jnode *parse_for(struct ps *p, int line)
{
	struct jnode *n = mk(p, JN_FOR, line);
	const char *which;
	if (!n || !(n->a = parse_tuple(p, 1, 1, "in", 0)))
		return NULL;
	if (!IS_NAME(p, "in"))
		return fail(p, "expected 'in'");
	p->i++;
	if (!(n->b = parse_tuple(p, 0, 0, "recursive", 0)))
		return NULL;
	if (IS_NAME(p, "if")) {
		p->i++;
		if (!(n->c = parse_expression(p, 1)))
			return NULL;
	}
	if (IS_NAME(p, "recursive")) {
		p->i++;
		n->op = 1;
	}
	if (block_end(p) || sub_body(p, n, END_FOR, &which) || block_end(p))
		return NULL;
	if (!strcmp(which, "else")) {
		struct jnode tmp = { 0 };
		if (sub_body(p, &tmp, END_ENDFOR, &which) || block_end(p))
			return NULL;
		n->kids2 = tmp.kids;
		n->nkids2 = tmp.nkids;
	}
	return n;
}

static const char *const END_SET[] = { "endset", NULL };
static const char *const END_MACRO[] = { "endmacro", NULL };
static const char *const END_CALL[] = { "endcall", NULL };
static const char *const END_FILTER[] = { "endfilter", NULL };
static const char *const END_WITH[] = { "endwith", NULL };
static const char *const END_GENERATION[] = { "endgeneration", NULL };

static struct jnode *parse_set(struct ps *p, int line)
{
	struct jnode *target;
	const char *which;
	if (cur(p)->t == TK_NAME && tok_is(peek(p, 1), TK_OP, ".") && peek(p, 2)->t == TK_NAME) {
		if (!(target = mk(p, JN_NSREF, line)) || !(target->name = tok_name(p, cur(p))) ||
		    !(target->attr = tok_name(p, peek(p, 2))))
			return NULL;
		p->i += 3;
	} else if (!(target = parse_tuple(p, 1, 1, NULL, 0))) {
		return NULL;
	}
	if (IS_OP(p, "=")) {
		p->i++;
		struct jnode *n = mk(p, JN_SET, line);
		if (!n || !(n->b = parse_tuple(p, 0, 1, NULL, 0)) || block_end(p))
			return NULL;
		n->a = target;
		return n;
	}
	struct jnode *n = mk(p, JN_SETBLOCK, line);
	if (!n)
		return NULL;
	n->a = target;
	if (IS_OP(p, "|") && !(n->b = parse_filter(p, NULL, 0)))
		return NULL;
	if (block_end(p) || sub_body(p, n, END_SET, &which) || block_end(p))
		return NULL;
	return n;
}

static struct jnode *parse_macro(struct ps *p, int line)
{
	struct jnode *n = mk(p, JN_MACRO, line);
	const char *which;
	if (!n)
		return NULL;
	if (cur(p)->t != TK_NAME)
		return fail(p, "expected a macro name");
	n->name = tok_name(p, cur(p));
	p->i++;
	int seen[3] = { p->seen[0], p->seen[1], p->seen[2] };
	if (parse_signature(p, n) || block_end(p) || sub_body(p, n, END_MACRO, &which) || block_end(p))
		return NULL;
	/* as jinja2: extra arguments are an error unless the body reads
	 * varargs, kwargs or caller */
	for (int k = 0; k < 3; k++)
		if (p->seen[k] > seen[k])
			n->op |= 1 << k;
	return n;
}

static struct jnode *parse_call_block(struct ps *p, int line)
{
	struct jnode *n = mk(p, JN_CALLBLOCK, line);
	const char *which;
	if (!n || (IS_OP(p, "(") && parse_signature(p, n)))
		return NULL;
	if (!(n->a = parse_expression(p, 1)))
		return NULL;
	if (n->a->k != JN_CALL)
		return fail(p, "expected a call");
	if (block_end(p) || sub_body(p, n, END_CALL, &which) || block_end(p))
		return NULL;
	return n;
}

static struct jnode *parse_filter_block(struct ps *p, int line)
{
	struct jnode *n = mk(p, JN_FILTERBLOCK, line);
	const char *which;
	if (!n || !(n->a = parse_filter(p, NULL, 1)) || block_end(p) ||
	    sub_body(p, n, END_FILTER, &which) || block_end(p))
		return NULL;
	return n;
}

static struct jnode *parse_with(struct ps *p, int line)
{
	struct jnode *n = mk(p, JN_WITH, line);
	struct nvec v = { 0 };
	const char *which;
	if (!n)
		return NULL;
	while (cur(p)->t != TK_BLOCK_END) {
		if (v.n && expect_op(p, ","))
			return NULL;
		if (cur(p)->t != TK_NAME)
			return fail(p, "expected a name");
		const char *name = tok_name(p, cur(p));
		p->i++;
		struct jnode *e;
		if (expect_op(p, "=") || !(e = parse_expression(p, 1)) || nv_push(p, &v, e, name))
			return NULL;
	}
	n->params = v.kw;
	n->defs = v.v;
	n->nparams = v.n;
	if (block_end(p) || sub_body(p, n, END_WITH, &which) || block_end(p))
		return NULL;
	return n;
}

static struct jnode *parse_statement(struct ps *p)
{
	const struct jtok *t = cur(p);
	int line = t->line;
	struct jnode *n = NULL;
	if (t->t != TK_NAME)
		return fail(p, "expected a tag name");
	if (enter(p))
		return NULL;
	p->i++;
	if (tok_is(t, TK_NAME, "if")) {
		n = parse_if(p, line);
	} else if (tok_is(t, TK_NAME, "for")) {
		n = parse_for(p, line);
	} else if (tok_is(t, TK_NAME, "set")) {
		n = parse_set(p, line);
	} else if (tok_is(t, TK_NAME, "macro")) {
		n = parse_macro(p, line);
	} else if (tok_is(t, TK_NAME, "call")) {
		n = parse_call_block(p, line);
	} else if (tok_is(t, TK_NAME, "filter")) {
		n = parse_filter_block(p, line);
	} else if (tok_is(t, TK_NAME, "with")) {
		n = parse_with(p, line);
	} else if (tok_is(t, TK_NAME, "break") || tok_is(t, TK_NAME, "continue")) {
		if ((n = mk(p, tok_is(t, TK_NAME, "break") ? JN_BREAK : JN_CONTINUE, line)) && block_end(p))
			n = NULL;
	} else if (tok_is(t, TK_NAME, "generation")) {
		/* transformers' {% generation %} marks assistant text: it renders
		 * its body as it is */
		const char *which;
		if (!(n = mk(p, JN_BLOCK, line)) || block_end(p) ||
		    sub_body(p, n, END_GENERATION, &which) || block_end(p))
			n = NULL;
	} else {
		p->i--;
		char what[80];
		snprintf(what, sizeof what, "unknown tag '%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p);
		n = fail(p, what);
	}
	p->depth--;
	return n;
}

static int parse_body(struct ps *p, const char *const *ends, struct nvec *body, const char **which)
{
	for (;;) {
		const struct jtok *t = cur(p);
		struct jnode *n = NULL;
		switch (t->t) {
		case TK_DATA:
			if (!(n = mk(p, JN_TEXT, t->line)))
				return TFM_E_FORMAT;
			n->v = jv_str(t->p, t->n);
			p->i++;
			break;
		case TK_VAR_BEGIN:
			p->i++;
			if (!(n = mk(p, JN_OUTPUT, t->line)) || !(n->a = parse_tuple(p, 0, 1, NULL, 0)) ||
			    expect_type(p, TK_VAR_END, "expected end of print statement"))
				return TFM_E_FORMAT;
			break;
		case TK_BLOCK_BEGIN: {
			p->i++;
			const struct jtok *nm = cur(p);
			for (int k = 0; ends && ends[k]; k++) {
				if (tok_is(nm, TK_NAME, ends[k])) {
					p->i++;
					*which = ends[k];
					return TFM_OK;
				}
			}
			if (!(n = parse_statement(p)))
				return TFM_E_FORMAT;
			break;
		}
		case TK_EOF:
			if (ends) {
				char what[64];
				int last = 0;
				while (ends[last + 1])
					last++;
				snprintf(what, sizeof what, "unexpected end of template, expected '%s'",
					 ends[last]);
				fail(p, what);
				return TFM_E_FORMAT;
			}
			*which = NULL;
			return TFM_OK;
		default:
			fail(p, "unexpected token");
			return TFM_E_FORMAT;
		}
		if (nv_push(p, body, n, NULL))
			return TFM_E_FORMAT;
	}
}

int jx_parse(struct jarena *a, const struct jtok *toks, size_t ntoks, struct jnode **root)
{
	struct ps p = { .a = a, .t = toks, .n = ntoks };
	struct jnode *n = mk(&p, JN_BLOCK, 1);
	const char *which;
	if (!n)
		return TFM_E_FORMAT;
	int st = sub_body(&p, n, NULL, &which);
	if (st)
		return st;
	*root = n;
	return TFM_OK;
}
