/* jinja-impl.h: the insides of the Jinja2 interpreter shared by its files:
 * the arena every node and value lives in, tokens, the syntax tree, values
 * with Python's semantics, and the evaluator's state.  Everything a
 * rendering allocates comes from one arena freed at its end, so values are
 * plain structs passed by copy and nothing is reference counted. */
#ifndef TFM_JINJA_IMPL_H
#define TFM_JINJA_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tfm.h"
#include "chat/jinja.h"

/* ---- arena (jinja-value.c) ---- */
struct jchunk;
struct jarena {
	struct jchunk *chunks;
	char *cur;
	size_t left;
	size_t total, limit; /* bytes taken from malloc, and the most allowed */
};
void *ja_alloc(struct jarena *a, size_t n);  /* zeroed; NULL with the error set */
char *ja_strndup(struct jarena *a, const char *s, size_t n); /* NUL-terminated */
void ja_free(struct jarena *a);

/* A growable byte buffer in an arena (output, captured blocks, strings
 * being built).  Growth past max fails with a message. */
struct jbuf {
	struct jarena *a;
	char *p;
	size_t n, cap, max;
};
int jb_put(struct jbuf *b, const char *s, size_t n);
int jb_putc(struct jbuf *b, char c);
int jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- tokens (jinja-lex.c) ---- */
enum jtk {
	TK_EOF, TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END,
	TK_NAME, TK_STRING, TK_INT, TK_FLOAT, TK_OP,
};
struct jtok {
	int t, line;
	const char *p; /* DATA, NAME, OP: text; STRING: the decoded value */
	size_t n;
	int64_t i;
	double f;
};
/* src must be normalized (newlines, no final newline): see jx_normalize. */
int jx_lex(struct jarena *a, const char *src, size_t n, struct jtok **toks, size_t *ntoks);
/* Newlines to \n and one final newline dropped, as jinja2 reads a source. */
char *jx_normalize(struct jarena *a, const char *src, size_t n, size_t *outn);

/* ---- values (jinja-value.c) ---- */
enum jt {
	JT_UNDEF, JT_NONE, JT_BOOL, JT_INT, JT_FLOAT, JT_STR, JT_LIST, JT_DICT,
	JT_NS, JT_MACRO, JT_FUNC, JT_METHOD, JT_LOOP,
};
struct jlist { size_t n, cap; struct jv *v; };
/* Lists that stand for Python iterables: a generator (map, select, items
 * filters: iterable, always true, no len(), no tojson), a reversed list
 * iterator, and dict views (len() and iteration, no indexing, no tojson). */
enum { JG_LIST, JG_GENERATOR, JG_REVERSED, JG_ITEMS, JG_KEYS, JG_VALUES };
struct jdict { size_t n, cap; struct jv *k, *v; }; /* insertion order, as Python */
struct jmacro;
struct jfunc;
struct jmethod;
struct jloop;
struct jv {
	uint8_t t;
	uint8_t tuple;  /* JT_LIST: a tuple */
	uint8_t gen;    /* JT_LIST: not a list but what Python gives for it: JG_* */
	union {
		int64_t i;  /* JT_BOOL (0/1), JT_INT */
		double f;
		struct { const char *p; size_t n; } s; /* JT_STR; JT_UNDEF: the hint */
		struct jlist *l;
		struct jdict *d;   /* JT_DICT, JT_NS */
		struct jmacro *m;
		const struct jfunc *fn;
		struct jmethod *bm;
		struct jloop *loop;
	};
};
struct jmethod { struct jv self; const char *name; };

static inline struct jv jv_undef(const char *hint) { struct jv v = { .t = JT_UNDEF }; v.s.p = hint; v.s.n = hint ? __builtin_strlen(hint) : 0; return v; }
static inline struct jv jv_none(void) { struct jv v = { .t = JT_NONE }; return v; }
static inline struct jv jv_bool(int b) { struct jv v = { .t = JT_BOOL }; v.i = !!b; return v; }
static inline struct jv jv_int(int64_t i) { struct jv v = { .t = JT_INT }; v.i = i; return v; }
static inline struct jv jv_float(double f) { struct jv v = { .t = JT_FLOAT }; v.f = f; return v; }
static inline struct jv jv_str(const char *p, size_t n) { struct jv v = { .t = JT_STR }; v.s.p = p; v.s.n = n; return v; }
#define JV_LIT(s) jv_str((s), sizeof(s) - 1)

struct jlist *jl_new(struct jarena *a, size_t cap);
int jl_push(struct jarena *a, struct jlist *l, struct jv v);
struct jv jv_list(struct jlist *l);
struct jdict *jd_new(struct jarena *a, size_t cap);
/* Set k to v (replacing the value of an equal key in place). */
int jd_set(struct jarena *a, struct jdict *d, struct jv k, struct jv v);
struct jv *jd_get(const struct jdict *d, struct jv k);      /* NULL if absent */
struct jv *jd_gets(const struct jdict *d, const char *k);   /* by C string */

/* Python semantics: truth, str(), repr(), ==, ordering, type names. */
int jv_truthy(struct jv v);
int jv_isnum(struct jv v); /* bool, int or float */
double jv_num(struct jv v);
const char *jv_typename(struct jv v); /* "str", "dict", "NoneType", ... */
int jv_tostr(struct jarena *a, struct jv v, struct jv *out); /* str(v) as a JT_STR */
int jv_write(struct jbuf *b, struct jv v);                     /* str(v) appended */
int jv_repr(struct jbuf *b, struct jv v, int depth);
int jv_eq(struct jv a, struct jv b);
/* <0, 0, >0; TFM_E_FORMAT (with a message) for types Python cannot order,
 * returned through *st. */
int jv_cmp(struct jv a, struct jv b, int *st);
void jv_float_repr(double f, char *out, size_t n); /* Python's repr(float) */
/* json.dumps(v, ensure_ascii, indent, separators, sort_keys); indent NULL
 * for none. */
struct jjson_opts { int ensure_ascii, sort_keys; const char *indent; const char *item_sep, *key_sep; };
int jv_json(struct jbuf *b, struct jv v, const struct jjson_opts *o, int depth);

/* UTF-8 and Python's string predicates (jinja-str.c). */
uint32_t ju_decode(const char *s, size_t n, size_t *i);
size_t ju_encode(uint32_t cp, char *out);
size_t ju_len(const char *s, size_t n);                 /* code points */
size_t ju_offset(const char *s, size_t n, size_t idx);  /* byte offset of code point idx */
int ju_isspace(uint32_t cp);                             /* str.isspace */
size_t ju_space_at(const char *s, size_t n, size_t i);   /* bytes of a space at i, or 0 */
size_t ju_space_before(const char *s, size_t n);         /* bytes of a space ending at n, or 0 */
uint32_t ju_upper(uint32_t cp);
uint32_t ju_lower(uint32_t cp);
int ju_isalpha(uint32_t cp);
int ju_isalnum(uint32_t cp);
int ju_isdigit(uint32_t cp);

/* ---- syntax tree (jinja-parse.c) ---- */
enum jnk {
	/* expressions */
	JN_CONST, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL,
	JN_FILTER, JN_TEST, JN_NOT, JN_NEG, JN_POS, JN_BINOP, JN_AND, JN_OR, JN_COND, JN_CMP,
	JN_NSREF,
	/* statements */
	JN_BLOCK, JN_TEXT, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO,
	JN_CALLBLOCK, JN_FILTERBLOCK, JN_BREAK, JN_CONTINUE, JN_WITH,
};
/* Binary operators of JN_BINOP and comparison operators of JN_CMP. */
enum { OP_ADD = 1, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT,
       OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN };
enum { JM_USES_VARARGS = 1, JM_USES_KWARGS = 2, JM_USES_CALLER = 4 };
struct jnode {
	int k, op, line;           /* op: the operator; FOR: recursive; MACRO: JM_USES_* */
	const char *name;        /* NAME, ATTR, NSREF (the namespace), FILTER, TEST, MACRO */
	const char *attr;        /* NSREF: the attribute */
	struct jv v;             /* CONST, TEXT */
	struct jnode *a, *b, *c; /* operands; see the parser for each kind */
	struct jnode **kids;     /* items, arguments, body */
	const char **kw;         /* per argument: its keyword, or NULL */
	int nkids;
	struct jnode **kids2;    /* DICT values, else bodies, CMP operands */
	int nkids2;
	int *ops;                /* CMP: operator per kids2 operand */
	const char **params;     /* MACRO, CALLBLOCK: parameter names */
	struct jnode **defs;     /* their defaults (NULL where none) */
	int nparams;
};
int jx_parse(struct jarena *a, const struct jtok *toks, size_t ntoks, struct jnode **root);

struct tfm_jinja {
	struct jarena a;
	struct jnode *root;
};

/* ---- evaluation (jinja-eval.c) ---- */
struct jscope {
	struct jscope *parent;
	struct jdict *vars;
};
struct jmacro {
	const char *name;
	const struct jnode *def;   /* MACRO or CALLBLOCK */
	struct jscope *scope;      /* where it was defined */
	struct jv caller;          /* for the body of a call block's macro */
};
struct jloop {
	struct jlist *items;
	size_t i;
	int depth;
	const struct jnode *node;  /* the for, for loop(...) of a recursive loop */
	struct jscope *scope;
	struct jv last_changed;
	int has_changed;
};
/* Call arguments: positional first, then keywords (kw[i] non-NULL). */
struct jargs { int n; struct jv *v; const char **kw; };

struct jrt {
	struct jarena a;
	struct jbuf *out;           /* where output goes now */
	const struct tfm_jinja_opts *o;
	size_t max_output;
	int depth, max_depth;
	uint64_t steps, max_steps;
	struct tm now;
	struct jscope *root;
	int err_line;               /* line of the innermost failure, once known */
	int raised;                 /* the failure is the template's raise_exception */
};
/* Render the template's root into r->out with sc as its variables. */
int jr_run(struct jrt *r, const struct jnode *root, struct jscope *sc);
/* Depth guard: every recursive walk goes through it. */
int jr_enter(struct jrt *r);
static inline void jr_leave(struct jrt *r) { r->depth--; }
int jr_step(struct jrt *r);
/* Call any callable value (macro, builtin, bound method, loop). */
int jr_call(struct jrt *r, struct jv f, struct jargs *args, struct jv *out);
/* A filter or test by name, applied to v (jinja-filters.c, jinja-tests.c). */
int jf_filter(struct jrt *r, const char *name, struct jv v, struct jargs *args, struct jv *out);
int jf_test(struct jrt *r, const char *name, struct jv v, struct jargs *args, int *res);
int jf_has_test(const char *name);
int jf_has_filter(const char *name);
/* Attribute and item access with jinja2's sandbox rules (jinja-methods.c). */
int jm_getattr(struct jrt *r, struct jv obj, const char *name, struct jv *out);
int jm_getitem(struct jrt *r, struct jv obj, struct jv key, struct jv *out);
int jm_call_method(struct jrt *r, struct jmethod *m, struct jargs *args, struct jv *out);
const struct jfunc *jm_global(const char *name);
struct jfunc { const char *name; int (*fn)(struct jrt *r, struct jargs *a, struct jv *out); };
/* Python's "%" formatting of a string (jinja-methods.c). */
int jm_percent(struct jrt *r, struct jv fmt, struct jv args, struct jv *out);
/* The argument at position pos or named kw (either may be -1 / NULL);
 * 1 when given. */
int ja_arg(const struct jargs *a, int pos, const char *kw, struct jv *out);
/* Iterate: the items of a list, the keys of a dict, the characters of a
 * string, nothing for undefined; an error for anything else. */
int jr_iter(struct jrt *r, struct jv v, struct jlist **out);
/* An error with the message; returns TFM_E_FORMAT. */
int jr_err(struct jrt *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error for using an undefined value. */
int jr_undef_err(struct jrt *r, struct jv u);
/* A new JT_STR copied into the arena. */
int jr_str(struct jrt *r, const char *p, size_t n, struct jv *out);

#endif
