/* jinja-eval.c: walks the syntax tree.  Statements write to the current
 * output buffer; expressions give values.  Scoping is jinja2's: a for loop
 * gives each iteration a fresh scope (a set inside it does not outlive the
 * iteration), a macro call a scope under the one the macro was defined in;
 * if, filter and set blocks share their parent's.  Break and continue are
 * the positive statuses JR_BREAK and JR_CONTINUE on their way up. */
#include "jinja-impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { JR_BREAK = 1, JR_CONTINUE = 2 };

/* The recursive walk (eval, exec_body) stays lean on the C stack: the big
 * helpers it calls are kept out of its frames. */
#define NOINLINE __attribute__((noinline))

static int exec_body(struct jrt *r, struct jnode *const *kids, int n, struct jscope *sc);
static int eval(struct jrt *r, const struct jnode *n, struct jscope *sc, struct jv *out);

int jr_err(struct jrt *r, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return tfm_seterr(TFM_E_FORMAT, "%s", msg);
}

int jr_undef_err(struct jrt *r, struct jv u)
{
	return jr_err(r, "%.*s", (int)u.s.n, u.s.n ? u.s.p : "undefined value");
}

int jr_enter(struct jrt *r)
{
	if (++r->depth > r->max_depth) {
		r->depth--;
		return jr_err(r, "template nested too deeply (more than %d levels of blocks, calls and expressions)",
			      r->max_depth);
	}
	return TFM_OK;
}

int jr_step(struct jrt *r)
{
	if (++r->steps > r->max_steps)
		return jr_err(r, "template ran too long (more than %llu loop iterations and calls)",
			      (unsigned long long)r->max_steps);
	return TFM_OK;
}

int jr_str(struct jrt *r, const char *p, size_t n, struct jv *out)
{
	char *s = ja_strndup(&r->a, p, n);
	if (!s)
		return TFM_E_FORMAT;
	*out = jv_str(s, n);
	return TFM_OK;
}

int ja_arg(const struct jargs *a, int pos, const char *kw, struct jv *out)
{
	if (pos >= 0 && pos < a->n && !a->kw[pos]) {
		*out = a->v[pos];
		return 1;
	}
	for (int i = 0; kw && i < a->n; i++) {
		if (a->kw[i] && !strcmp(a->kw[i], kw)) {
			*out = a->v[i];
			return 1;
		}
	}
	return 0;
}

int jr_iter(struct jrt *r, struct jv v, struct jlist **out)
{
	switch (v.t) {
	case JT_LIST:
		*out = v.l;
		return TFM_OK;
	case JT_UNDEF:
		return (*out = jl_new(&r->a, 0)) ? TFM_OK : TFM_E_FORMAT;
	case JT_DICT: {
		struct jlist *l = jl_new(&r->a, v.d->n);
		if (!l)
			return TFM_E_FORMAT;
		for (size_t i = 0; i < v.d->n; i++)
			l->v[l->n++] = v.d->k[i];
		*out = l;
		return TFM_OK;
	}
	case JT_STR: {
		struct jlist *l = jl_new(&r->a, v.s.n);
		if (!l)
			return TFM_E_FORMAT;
		for (size_t i = 0; i < v.s.n;) {
			size_t j = i;
			ju_decode(v.s.p, v.s.n, &j);
			l->v[l->n++] = jv_str(v.s.p + i, j - i);
			i = j;
		}
		*out = l;
		return TFM_OK;
	}
	default:
		return jr_err(r, "'%s' object is not iterable", jv_typename(v));
	}
}

/* ---- scopes ---- */

static struct jscope *scope_new(struct jrt *r, struct jscope *parent)
{
	struct jscope *s = ja_alloc(&r->a, sizeof *s);
	if (!s || !(s->vars = jd_new(&r->a, 0)))
		return NULL;
	s->parent = parent;
	return s;
}

static int scope_set(struct jrt *r, struct jscope *sc, const char *name, struct jv v)
{
	return jd_set(&r->a, sc->vars, jv_str(name, strlen(name)), v);
}

static struct jv *scope_find(struct jscope *sc, const char *name)
{
	for (; sc; sc = sc->parent) {
		struct jv *v = jd_gets(sc->vars, name);
		if (v)
			return v;
	}
	return NULL;
}

/* ---- output ---- */

static int emit_value(struct jrt *r, struct jv v)
{
	if (v.t == JT_STR)
		return jb_put(r->out, v.s.p, v.s.n);
	return jv_write(r->out, v);
}

/* Render a body into a string of its own. */
NOINLINE static int capture(struct jrt *r, struct jnode *const *kids, int n, struct jscope *sc, struct jv *out)
{
	struct jbuf b = { .a = &r->a, .max = r->max_output };
	struct jbuf *saved = r->out;
	r->out = &b;
	int st = exec_body(r, kids, n, sc);
	r->out = saved;
	if (st < 0)
		return st;
	*out = jv_str(b.p ? b.p : "", b.n);
	return TFM_OK;
}

/* ---- assignment ---- */

NOINLINE static int assign(struct jrt *r, const struct jnode *t, struct jv v, struct jscope *sc)
{
	if (t->k == JN_NAME)
		return scope_set(r, sc, t->name, v);
	if (t->k == JN_NSREF) {
		struct jv *ns = scope_find(sc, t->name);
		if (!ns || ns->t != JT_NS)
			return jr_err(r, "cannot assign attribute on non-namespace object");
		return jd_set(&r->a, ns->d, jv_str(t->attr, strlen(t->attr)), v);
	}
	if (t->k == JN_TUPLE || t->k == JN_LIST) {
		struct jlist *l;
		int st = jr_iter(r, v, &l);
		if (st)
			return st;
		if (v.t == JT_UNDEF)
			return jr_undef_err(r, v);
		if (l->n != (size_t)t->nkids)
			return jr_err(r, l->n > (size_t)t->nkids ? "too many values to unpack (expected %d)"
				      : "not enough values to unpack (expected %d)", t->nkids);
		for (int i = 0; i < t->nkids; i++)
			if ((st = assign(r, t->kids[i], l->v[i], sc)))
				return st;
		return TFM_OK;
	}
	return jr_err(r, "cannot assign to this expression");
}

/* ---- calls ---- */

NOINLINE static int eval_args(struct jrt *r, const struct jnode *n, struct jscope *sc, int extra, struct jargs *a)
{
	a->n = n->nkids;
	a->v = ja_alloc(&r->a, (size_t)(n->nkids + extra) * sizeof *a->v);
	a->kw = ja_alloc(&r->a, (size_t)(n->nkids + extra) * sizeof *a->kw);
	if (!a->v || !a->kw)
		return TFM_E_FORMAT;
	for (int i = 0; i < n->nkids; i++) {
		int st = eval(r, n->kids[i], sc, &a->v[i]);
		if (st)
			return st;
		a->kw[i] = n->kw ? n->kw[i] : NULL;
	}
	return TFM_OK;
}

NOINLINE static int call_macro(struct jrt *r, struct jmacro *m, struct jargs *a, struct jv *out)
{
	const struct jnode *d = m->def;
	int st;
	struct jscope *ms = scope_new(r, m->scope);
	struct jlist *varargs = jl_new(&r->a, 0);
	struct jdict *kwargs = jd_new(&r->a, 0);
	if (!ms || !varargs || !kwargs)
		return TFM_E_FORMAT;
	if ((st = jr_step(r)))
		return st;
	int npos = 0;
	while (npos < a->n && !a->kw[npos])
		npos++;
	struct jv caller = m->caller;
	for (int i = 0; i < a->n; i++) {
		if (!a->kw[i])
			continue;
		int k = 0;
		while (k < d->nparams && strcmp(d->params[k], a->kw[i]))
			k++;
		if (k == d->nparams && !strcmp(a->kw[i], "caller") && d->k == JN_MACRO) {
			if (!(d->op & JM_USES_CALLER))
				return jr_err(r, "macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.", m->name);
			caller = a->v[i];
			continue;
		}
		if (k < d->nparams && k < npos)
			return jr_err(r, "macro '%s' got multiple values for argument '%s'", m->name, a->kw[i]);
		if (k == d->nparams && d->k == JN_MACRO && !(d->op & JM_USES_KWARGS))
			return jr_err(r, "macro '%s' takes no keyword argument '%s'", m->name, a->kw[i]);
		if (k == d->nparams && (st = jd_set(&r->a, kwargs, jv_str(a->kw[i], strlen(a->kw[i])), a->v[i])))
			return st;
	}
	for (int k = 0; k < d->nparams; k++) {
		struct jv v;
		if (k < npos) {
			v = a->v[k];
		} else if (!ja_arg(a, -1, d->params[k], &v)) {
			if (d->defs[k]) {
				if ((st = eval(r, d->defs[k], ms, &v)))
					return st;
			} else {
				char *hint = ja_alloc(&r->a, strlen(d->params[k]) + 40);
				if (!hint)
					return TFM_E_FORMAT;
				sprintf(hint, "parameter '%s' was not provided", d->params[k]);
				v = jv_undef(hint);
			}
		}
		if ((st = scope_set(r, ms, d->params[k], v)))
			return st;
	}
	if (npos > d->nparams && d->k == JN_MACRO && !(d->op & JM_USES_VARARGS))
		return jr_err(r, "macro '%s' takes not more than %d argument(s)", m->name, d->nparams);
	for (int i = d->nparams; i < npos; i++)
		if ((st = jl_push(&r->a, varargs, a->v[i])))
			return st;
	struct jv va = jv_list(varargs), kw = { .t = JT_DICT };
	va.tuple = 1;
	kw.d = kwargs;
	if ((st = scope_set(r, ms, "varargs", va)) || (st = scope_set(r, ms, "kwargs", kw)))
		return st;
	if (caller.t != JT_UNDEF && (st = scope_set(r, ms, "caller", caller)))
		return st;
	if ((st = jr_enter(r)))
		return st;
	st = capture(r, d->kids, d->nkids, ms, out);
	jr_leave(r);
	return st;
}

static int run_for(struct jrt *r, const struct jnode *n, struct jscope *sc, struct jv iter, int depth);

int jr_call(struct jrt *r, struct jv f, struct jargs *a, struct jv *out)
{
	switch (f.t) {
	case JT_MACRO:
		return call_macro(r, f.m, a, out);
	case JT_FUNC:
		return f.fn->fn(r, a, out);
	case JT_METHOD:
		return jm_call_method(r, f.bm, a, out);
	case JT_LOOP: {
		/* loop(items) of a recursive for: the loop's body over items, one
		 * level deeper, as a string */
		struct jloop *L = f.loop;
		struct jv items;
		if (!L->node->op)
			return jr_err(r, "the loop is not recursive: add 'recursive' to the for tag");
		if (a->n != 1 || !ja_arg(a, 0, NULL, &items))
			return jr_err(r, "loop() takes exactly one argument");
		struct jbuf b = { .a = &r->a, .max = r->max_output };
		struct jbuf *saved = r->out;
		r->out = &b;
		int st = jr_enter(r);
		if (!st) {
			st = run_for(r, L->node, L->scope, items, L->depth + 1);
			jr_leave(r);
		}
		r->out = saved;
		if (st < 0)
			return st;
		*out = jv_str(b.p ? b.p : "", b.n);
		return TFM_OK;
	}
	case JT_UNDEF:
		return jr_undef_err(r, f);
	default:
		return jr_err(r, "'%s' object is not callable", jv_typename(f));
	}
}

/* ---- expressions ---- */

static int int_result(struct jrt *r, int ok, int64_t v, struct jv *out)
{
	if (!ok)
		return jr_err(r, "integer overflow");
	*out = jv_int(v);
	return TFM_OK;
}

static double py_fmod(double a, double b)
{
	double m = fmod(a, b);
	if (m != 0 && ((b < 0) != (m < 0)))
		m += b;
	return m;
}

NOINLINE static int repeat(struct jrt *r, struct jv seq, int64_t k, struct jv *out)
{
	if (k < 0)
		k = 0;
	if (seq.t == JT_STR) {
		if (seq.s.n && (uint64_t)k > r->max_output / seq.s.n)
			return jr_err(r, "string repetition too large");
		struct jbuf b = { .a = &r->a, .max = r->max_output };
		for (int64_t i = 0; i < k; i++)
			if (jb_put(&b, seq.s.p, seq.s.n))
				return TFM_E_FORMAT;
		*out = jv_str(b.p ? b.p : "", b.n);
		return TFM_OK;
	}
	if (seq.l->n && (uint64_t)k > (r->max_output / 16) / seq.l->n)
		return jr_err(r, "list repetition too large");
	struct jlist *l = jl_new(&r->a, seq.l->n * (size_t)k);
	if (!l)
		return TFM_E_FORMAT;
	for (int64_t i = 0; i < k; i++)
		for (size_t j = 0; j < seq.l->n; j++)
			l->v[l->n++] = seq.l->v[j];
	*out = jv_list(l);
	out->tuple = seq.tuple;
	return TFM_OK;
}

static const char *op_sym(int op)
{
	static const char *const s[] = { "", "+", "-", "*", "/", "//", "%", "**", "~" };
	return op >= OP_ADD && op <= OP_CONCAT ? s[op] : "?";
}

NOINLINE static int binop(struct jrt *r, int op, struct jv a, struct jv b, struct jv *out)
{
	int st;
	if (op == OP_CONCAT) {
		struct jv sa, sb;
		if ((st = jv_tostr(&r->a, a, &sa)) || (st = jv_tostr(&r->a, b, &sb)))
			return st;
		if (sa.s.n + sb.s.n > r->max_output)
			return jr_err(r, "string longer than the output limit (%zu bytes)", r->max_output);
		char *p = ja_alloc(&r->a, sa.s.n + sb.s.n + 1);
		if (!p)
			return TFM_E_FORMAT;
		memcpy(p, sa.s.p, sa.s.n);
		memcpy(p + sa.s.n, sb.s.p, sb.s.n);
		*out = jv_str(p, sa.s.n + sb.s.n);
		return TFM_OK;
	}
	if (a.t == JT_UNDEF)
		return jr_undef_err(r, a);
	if (b.t == JT_UNDEF)
		return jr_undef_err(r, b);
	if (jv_isnum(a) && jv_isnum(b)) {
		int fl = a.t == JT_FLOAT || b.t == JT_FLOAT;
		double x = jv_num(a), y = jv_num(b);
		int64_t v;
		int ovf;
		switch (op) {
		case OP_ADD:
			if (fl)
				break;
			ovf = __builtin_add_overflow(a.i, b.i, &v);
			return int_result(r, !ovf, v, out);
		case OP_SUB:
			if (fl)
				break;
			ovf = __builtin_sub_overflow(a.i, b.i, &v);
			return int_result(r, !ovf, v, out);
		case OP_MUL:
			if (fl)
				break;
			ovf = __builtin_mul_overflow(a.i, b.i, &v);
			return int_result(r, !ovf, v, out);
		case OP_DIV:
			if (y == 0)
				return jr_err(r, "division by zero");
			*out = jv_float(x / y);
			return TFM_OK;
		case OP_FLOORDIV:
		case OP_MOD:
			if (y == 0)
				return jr_err(r, op == OP_MOD ? "modulo by zero" : "integer division or modulo by zero");
			if (!fl) {
				if (a.i == INT64_MIN && b.i == -1)
					return jr_err(r, "integer overflow");
				int64_t q = a.i / b.i, m = a.i % b.i;
				if (m != 0 && ((m < 0) != (b.i < 0))) {
					q--;
					m += b.i;
				}
				*out = jv_int(op == OP_MOD ? m : q);
				return TFM_OK;
			}
			*out = jv_float(op == OP_MOD ? py_fmod(x, y) : floor(x / y));
			return TFM_OK;
		case OP_POW:
			if (!fl && b.i >= 0) {
				int64_t acc = 1, base = a.i, e = b.i;
				while (e > 0) {
					if ((e & 1) && __builtin_mul_overflow(acc, base, &acc))
						return jr_err(r, "integer overflow");
					e >>= 1;
					if (e && __builtin_mul_overflow(base, base, &base))
						return jr_err(r, "integer overflow");
				}
				*out = jv_int(acc);
				return TFM_OK;
			}
			if (x == 0 && y < 0)
				return jr_err(r, "0.0 cannot be raised to a negative power");
			*out = jv_float(pow(x, y));
			return TFM_OK;
		}
		switch (op) {
		case OP_ADD: *out = jv_float(x + y); return TFM_OK;
		case OP_SUB: *out = jv_float(x - y); return TFM_OK;
		case OP_MUL: *out = jv_float(x * y); return TFM_OK;
		}
	}
	if (op == OP_ADD && a.t == JT_STR && b.t == JT_STR)
		return binop(r, OP_CONCAT, a, b, out);
	if (op == OP_ADD && a.t == JT_LIST && b.t == JT_LIST && a.tuple == b.tuple && !a.gen && !b.gen) {
		struct jlist *l = jl_new(&r->a, a.l->n + b.l->n);
		if (!l)
			return TFM_E_FORMAT;
		memcpy(l->v, a.l->v, a.l->n * sizeof *l->v);
		memcpy(l->v + a.l->n, b.l->v, b.l->n * sizeof *l->v);
		l->n = a.l->n + b.l->n;
		*out = jv_list(l);
		out->tuple = a.tuple;
		return TFM_OK;
	}
	if (op == OP_MUL && (a.t == JT_STR || (a.t == JT_LIST && !a.gen)) && (b.t == JT_INT || b.t == JT_BOOL))
		return repeat(r, a, b.i, out);
	if (op == OP_MUL && (b.t == JT_STR || (b.t == JT_LIST && !b.gen)) && (a.t == JT_INT || a.t == JT_BOOL))
		return repeat(r, b, a.i, out);
	if (op == OP_MOD && a.t == JT_STR)
		return jm_percent(r, a, b, out);
	if (op == OP_ADD && a.t == JT_STR)
		return jr_err(r, "can only concatenate str (not \"%s\") to str", jv_typename(b));
	return jr_err(r, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op),
		      jv_typename(a), jv_typename(b));
}

NOINLINE static int compare(struct jrt *r, int op, struct jv a, struct jv b, int *res)
{
	int st = TFM_OK, c;
	switch (op) {
	case OP_EQ: *res = jv_eq(a, b); return TFM_OK;
	case OP_NE: *res = !jv_eq(a, b); return TFM_OK;
	case OP_IN:
	case OP_NOTIN: {
		int found = 0;
		if (b.t == JT_STR) {
			if (a.t != JT_STR)
				return jr_err(r, "'in <string>' requires string as left operand, not %s",
					      jv_typename(a));
			found = a.s.n == 0 || memmem(b.s.p, b.s.n, a.s.p, a.s.n) != NULL;
		} else if (b.t == JT_LIST) {
			for (size_t i = 0; i < b.l->n && !found; i++)
				found = jv_eq(b.l->v[i], a);
		} else if (b.t == JT_DICT || b.t == JT_NS) {
			found = jd_get(b.d, a) != NULL;
		} else if (b.t != JT_UNDEF) {
			return jr_err(r, "argument of type '%s' is not iterable", jv_typename(b));
		}
		*res = op == OP_IN ? found : !found;
		return TFM_OK;
	}
	}
	if (a.t == JT_UNDEF)
		return jr_undef_err(r, a);
	if (b.t == JT_UNDEF)
		return jr_undef_err(r, b);
	c = jv_cmp(a, b, &st);
	if (st)
		return st;
	switch (op) {
	case OP_LT: *res = c < 0; break;
	case OP_LE: *res = c <= 0; break;
	case OP_GT: *res = c > 0; break;
	default: *res = c >= 0; break;
	}
	return TFM_OK;
}

/* Python slice indices for a sequence of length len. */
static void slice_adjust(int64_t len, struct jv *sv, int64_t *start, int64_t *stop, int64_t *step)
{
	*step = sv[2].t == JT_INT || sv[2].t == JT_BOOL ? sv[2].i : 1;
	int64_t lo = *step < 0 ? -1 : 0, hi = *step < 0 ? len - 1 : len;
	for (int k = 0; k < 2; k++) {
		int64_t *x = k ? stop : start;
		if (sv[k].t == JT_INT || sv[k].t == JT_BOOL) {
			*x = sv[k].i;
			if (*x < 0) {
				*x += len;
				if (*x < lo)
					*x = lo;
			} else if (*x > hi) {
				*x = hi;
			}
		} else {
			*x = (*step < 0) == (k == 0) ? hi : lo;
		}
	}
}

NOINLINE static int eval_slice(struct jrt *r, struct jv obj, const struct jnode *s, struct jscope *sc, struct jv *out)
{
	struct jv sv[3] = { jv_none(), jv_none(), jv_none() };
	const struct jnode *parts[3] = { s->a, s->b, s->c };
	int st;
	for (int k = 0; k < 3; k++) {
		if (parts[k] && (st = eval(r, parts[k], sc, &sv[k])))
			return st;
		if (sv[k].t != JT_NONE && sv[k].t != JT_INT && sv[k].t != JT_BOOL)
			return jr_err(r, "slice indices must be integers or None");
	}
	if (sv[2].t != JT_NONE && sv[2].i == 0)
		return jr_err(r, "slice step cannot be zero");
	if (obj.t == JT_UNDEF)
		return jr_undef_err(r, obj);
	int64_t start, stop, step;
	if (obj.t == JT_LIST && obj.gen) {
		/* jinja2's getitem turns the TypeError into undefined */
		*out = jv_undef("the object is not subscriptable");
		return TFM_OK;
	}
	if (obj.t == JT_LIST) {
		slice_adjust((int64_t)obj.l->n, sv, &start, &stop, &step);
		struct jlist *l = jl_new(&r->a, 0);
		if (!l)
			return TFM_E_FORMAT;
		for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
			if ((st = jl_push(&r->a, l, obj.l->v[i])))
				return st;
		*out = jv_list(l);
		out->tuple = obj.tuple;
		return TFM_OK;
	}
	if (obj.t == JT_STR) {
		struct jlist *chars;
		if ((st = jr_iter(r, obj, &chars)))
			return st;
		slice_adjust((int64_t)chars->n, sv, &start, &stop, &step);
		struct jbuf b = { .a = &r->a };
		for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
			if ((st = jb_put(&b, chars->v[i].s.p, chars->v[i].s.n)))
				return st;
		*out = jv_str(b.p ? b.p : "", b.n);
		return TFM_OK;
	}
	return jr_err(r, "'%s' object is not subscriptable", jv_typename(obj));
}

/* A filter chain of a set or filter block: the innermost filter's operand
 * is the captured body. */
NOINLINE static int apply_chain(struct jrt *r, const struct jnode *f, struct jscope *sc, struct jv in, struct jv *out)
{
	int st;
	if (!f) {
		*out = in;
		return TFM_OK;
	}
	if ((st = apply_chain(r, f->a, sc, in, &in)))
		return st;
	struct jargs a;
	if ((st = eval_args(r, f, sc, 0, &a)))
		return st;
	return jf_filter(r, f->name, in, &a, out);
}

static int eval_inner(struct jrt *r, const struct jnode *n, struct jscope *sc, struct jv *out)
{
	struct jv a, b;
	int st;
	switch (n->k) {
	case JN_CONST:
		*out = n->v;
		return TFM_OK;
	case JN_NAME: {
		struct jv *v = scope_find(sc, n->name);
		if (v) {
			*out = *v;
			return TFM_OK;
		}
		const struct jfunc *fn = jm_global(n->name);
		if (fn) {
			out->t = JT_FUNC;
			out->fn = fn;
			return TFM_OK;
		}
		char *hint = ja_alloc(&r->a, strlen(n->name) + 20);
		if (!hint)
			return TFM_E_FORMAT;
		sprintf(hint, "'%s' is undefined", n->name);
		*out = jv_undef(hint);
		return TFM_OK;
	}
	case JN_LIST:
	case JN_TUPLE: {
		struct jlist *l = jl_new(&r->a, (size_t)n->nkids);
		if (!l)
			return TFM_E_FORMAT;
		for (int i = 0; i < n->nkids; i++)
			if ((st = eval(r, n->kids[i], sc, &l->v[l->n++])))
				return st;
		*out = jv_list(l);
		out->tuple = n->k == JN_TUPLE;
		return TFM_OK;
	}
	case JN_DICT: {
		struct jdict *d = jd_new(&r->a, (size_t)n->nkids);
		if (!d)
			return TFM_E_FORMAT;
		for (int i = 0; i < n->nkids; i++) {
			if ((st = eval(r, n->kids[i], sc, &a)) || (st = eval(r, n->kids2[i], sc, &b)))
				return st;
			if (a.t == JT_LIST && !a.tuple)
				return jr_err(r, "unhashable type: 'list'");
			if (a.t == JT_DICT)
				return jr_err(r, "unhashable type: 'dict'");
			if ((st = jd_set(&r->a, d, a, b)))
				return st;
		}
		out->t = JT_DICT;
		out->tuple = 0;
		out->d = d;
		return TFM_OK;
	}
	case JN_ATTR:
		if ((st = eval(r, n->a, sc, &a)))
			return st;
		if (a.t == JT_UNDEF)
			return jr_undef_err(r, a);
		return jm_getattr(r, a, n->name, out);
	case JN_ITEM:
		if ((st = eval(r, n->a, sc, &a)))
			return st;
		if (n->b->k == JN_SLICE)
			return eval_slice(r, a, n->b, sc, out);
		if ((st = eval(r, n->b, sc, &b)))
			return st;
		if (a.t == JT_UNDEF)
			return jr_undef_err(r, a);
		return jm_getitem(r, a, b, out);
	case JN_SLICE:
		return jr_err(r, "a slice outside of a subscript");
	case JN_CALL: {
		struct jargs args;
		if ((st = eval(r, n->a, sc, &a)) || (st = eval_args(r, n, sc, 0, &args)))
			return st;
		return jr_call(r, a, &args, out);
	}
	case JN_FILTER: {
		struct jargs args;
		if ((st = eval(r, n->a, sc, &a)) || (st = eval_args(r, n, sc, 0, &args)))
			return st;
		return jf_filter(r, n->name, a, &args, out);
	}
	case JN_TEST: {
		struct jargs args;
		int res;
		if ((st = eval(r, n->a, sc, &a)) || (st = eval_args(r, n, sc, 0, &args)) ||
		    (st = jf_test(r, n->name, a, &args, &res)))
			return st;
		*out = jv_bool(res);
		return TFM_OK;
	}
	case JN_NOT:
		if ((st = eval(r, n->a, sc, &a)))
			return st;
		*out = jv_bool(!jv_truthy(a));
		return TFM_OK;
	case JN_NEG:
	case JN_POS:
		if ((st = eval(r, n->a, sc, &a)))
			return st;
		if (a.t == JT_UNDEF)
			return jr_undef_err(r, a);
		if (!jv_isnum(a))
			return jr_err(r, "bad operand type for unary %c: '%s'", n->k == JN_NEG ? '-' : '+',
				      jv_typename(a));
		if (n->k == JN_POS)
			*out = a.t == JT_BOOL ? jv_int(a.i) : a;
		else if (a.t == JT_FLOAT)
			*out = jv_float(-a.f);
		else if (a.i == INT64_MIN)
			return jr_err(r, "integer overflow");
		else
			*out = jv_int(-a.i);
		return TFM_OK;
	case JN_BINOP:
		if ((st = eval(r, n->a, sc, &a)) || (st = eval(r, n->b, sc, &b)))
			return st;
		return binop(r, n->op, a, b, out);
	case JN_AND:
	case JN_OR:
		if ((st = eval(r, n->a, sc, &a)))
			return st;
		if (jv_truthy(a) == (n->k == JN_OR)) {
			*out = a;
			return TFM_OK;
		}
		return eval(r, n->b, sc, out);
	case JN_COND:
		if ((st = eval(r, n->b, sc, &b)))
			return st;
		if (jv_truthy(b))
			return eval(r, n->a, sc, out);
		if (n->c)
			return eval(r, n->c, sc, out);
		*out = jv_undef("the inline if-expression evaluated to false and no else section was defined");
		return TFM_OK;
	case JN_CMP: {
		int res = 1;
		if ((st = eval(r, n->a, sc, &a)))
			return st;
		for (int i = 0; i < n->nkids2 && res; i++) {
			if ((st = eval(r, n->kids2[i], sc, &b)) || (st = compare(r, n->ops[i], a, b, &res)))
				return st;
			a = b;
		}
		*out = jv_bool(res);
		return TFM_OK;
	}
	default:
		return jr_err(r, "not an expression");
	}
}

static int eval(struct jrt *r, const struct jnode *n, struct jscope *sc, struct jv *out)
{
	int st = jr_enter(r);
	if (st)
		return st;
	st = eval_inner(r, n, sc, out);
	jr_leave(r);
	if (st && !r->err_line)
		r->err_line = n->line;
	return st;
}

/* ---- statements ---- */

static int loop_attr_scope(struct jrt *r, struct jscope *it, struct jloop *L)
{
	struct jv lv = { .t = JT_LOOP };
	lv.loop = L;
	return scope_set(r, it, "loop", lv);
}

static int run_for(struct jrt *r, const struct jnode *n, struct jscope *sc, struct jv iter, int depth)
{
	struct jlist *items;
	int st = jr_iter(r, iter, &items);
	if (st)
		return st;
	if (n->c) {
		/* "for x in xs if cond": filter first, so that loop.length and
		 * loop.last count only the items kept */
		struct jlist *kept = jl_new(&r->a, 0);
		if (!kept)
			return TFM_E_FORMAT;
		for (size_t i = 0; i < items->n; i++) {
			struct jscope *fs = scope_new(r, sc);
			struct jv ok;
			if (!fs)
				return TFM_E_FORMAT;
			if ((st = jr_step(r)) || (st = assign(r, n->a, items->v[i], fs)) ||
			    (st = eval(r, n->c, fs, &ok)))
				return st;
			if (jv_truthy(ok) && (st = jl_push(&r->a, kept, items->v[i])))
				return st;
		}
		items = kept;
	}
	if (items->n == 0)
		return n->nkids2 ? exec_body(r, n->kids2, n->nkids2, sc) : TFM_OK;
	struct jloop *L = ja_alloc(&r->a, sizeof *L);
	if (!L)
		return TFM_E_FORMAT;
	L->items = items;
	L->depth = depth;
	L->node = n;
	L->scope = sc;
	for (L->i = 0; L->i < items->n; L->i++) {
		struct jscope *it = scope_new(r, sc);
		if (!it)
			return TFM_E_FORMAT;
		if ((st = jr_step(r)) || (st = assign(r, n->a, items->v[L->i], it)) ||
		    (st = loop_attr_scope(r, it, L)))
			return st;
		st = exec_body(r, n->kids, n->nkids, it);
		if (st == JR_BREAK)
			break;
		if (st < 0)
			return st;
	}
	return TFM_OK;
}

NOINLINE static int exec_inner(struct jrt *r, const struct jnode *n, struct jscope *sc)
{
	struct jv v;
	int st;
	switch (n->k) {
	case JN_TEXT:
		return jb_put(r->out, n->v.s.p, n->v.s.n);
	case JN_OUTPUT:
		if ((st = eval(r, n->a, sc, &v)))
			return st;
		return emit_value(r, v);
	case JN_BLOCK:
		return exec_body(r, n->kids, n->nkids, sc);
	case JN_IF:
		/* an elif chain is walked, not recursed into */
		for (;;) {
			if ((st = eval(r, n->a, sc, &v)))
				return st;
			if (jv_truthy(v))
				return exec_body(r, n->kids, n->nkids, sc);
			if (n->nkids2 == 1 && n->kids2[0]->k == JN_IF) {
				n = n->kids2[0];
				continue;
			}
			return exec_body(r, n->kids2, n->nkids2, sc);
		}
	case JN_FOR:
		if ((st = eval(r, n->b, sc, &v)))
			return st;
		return run_for(r, n, sc, v, 1);
	case JN_SET:
		if ((st = eval(r, n->b, sc, &v)))
			return st;
		return assign(r, n->a, v, sc);
	case JN_SETBLOCK:
		if ((st = capture(r, n->kids, n->nkids, sc, &v)) || (st = apply_chain(r, n->b, sc, v, &v)))
			return st;
		return assign(r, n->a, v, sc);
	case JN_MACRO: {
		struct jmacro *m = ja_alloc(&r->a, sizeof *m);
		if (!m)
			return TFM_E_FORMAT;
		m->name = n->name;
		m->def = n;
		m->scope = sc;
		m->caller = jv_undef(NULL);
		v.t = JT_MACRO;
		v.m = m;
		return scope_set(r, sc, n->name, v);
	}
	case JN_CALLBLOCK: {
		struct jmacro *m = ja_alloc(&r->a, sizeof *m);
		struct jargs args;
		struct jv f;
		if (!m)
			return TFM_E_FORMAT;
		m->name = "caller";
		m->def = n;
		m->scope = sc;
		m->caller = jv_undef(NULL);
		if ((st = eval(r, n->a->a, sc, &f)) || (st = eval_args(r, n->a, sc, 1, &args)))
			return st;
		args.v[args.n].t = JT_MACRO;
		args.v[args.n].m = m;
		args.kw[args.n++] = "caller";
		if ((st = jr_call(r, f, &args, &v)))
			return st;
		return emit_value(r, v);
	}
	case JN_FILTERBLOCK:
		if ((st = capture(r, n->kids, n->nkids, sc, &v)) || (st = apply_chain(r, n->a, sc, v, &v)))
			return st;
		return emit_value(r, v);
	case JN_WITH: {
		struct jscope *ws = scope_new(r, sc);
		if (!ws)
			return TFM_E_FORMAT;
		for (int i = 0; i < n->nparams; i++)
			if ((st = eval(r, n->defs[i], sc, &v)) || (st = scope_set(r, ws, n->params[i], v)))
				return st;
		return exec_body(r, n->kids, n->nkids, ws);
	}
	case JN_BREAK:
		return JR_BREAK;
	case JN_CONTINUE:
		return JR_CONTINUE;
	default:
		return jr_err(r, "not a statement");
	}
}

static int exec_body(struct jrt *r, struct jnode *const *kids, int n, struct jscope *sc)
{
	int st = jr_enter(r);
	if (st)
		return st;
	for (int i = 0; i < n && !st; i++) {
		st = exec_inner(r, kids[i], sc);
		if (st < 0 && !r->err_line)
			r->err_line = kids[i]->line;
	}
	jr_leave(r);
	return st;
}

int jr_run(struct jrt *r, const struct jnode *root, struct jscope *sc)
{
	int st = exec_body(r, root->kids, root->nkids, sc);
	if (st > 0)
		return jr_err(r, "break or continue outside of a loop");
	return st;
}
