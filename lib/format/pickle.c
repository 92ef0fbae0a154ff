/* pickle.c: a restricted unpickler for PyTorch state dicts.  Pickles are
 * data here, never code: a small stack machine accepts only the opcodes a
 * state dict needs and calls only a fixed list of globals (OrderedDict, the
 * torch tensor rebuilders, storage types), which it interprets itself.
 * Anything else is TFM_E_FORMAT naming the opcode or the global. */
#include "format/ckpt-impl.h"

#include <stdlib.h>
#include <string.h>

enum pk_kind { K_NONE, K_BOOL, K_INT, K_FLOAT, K_STR, K_TUPLE, K_LIST, K_DICT, K_GLOBAL,
	       K_STORAGE, K_TENSOR };
static const char *const kind_name[] = { "None", "bool", "int", "float", "str", "tuple",
	"list", "dict", "global", "storage", "tensor" };

enum pk_call { G_ODICT, G_REBUILD_V2, G_REBUILD_PARAM, G_FROM_TYPE, G_TYPE, G_STORAGE };

/* The only globals a pickle may name.  Types and dtypes may appear as
 * arguments (G_TYPE) but are never called. */
static const struct pk_global {
	const char *module, *name;
	int call;
	int type;  /* G_STORAGE: the tfm type, or -1 for dtypes we reject later */
} allowed[] = {
	{ "collections", "OrderedDict", G_ODICT, 0 },
	{ "torch._utils", "_rebuild_tensor_v2", G_REBUILD_V2, 0 },
	{ "torch._utils", "_rebuild_parameter", G_REBUILD_PARAM, 0 },
	{ "torch._utils", "_rebuild_parameter_with_state", G_REBUILD_PARAM, 0 },
	{ "torch._tensor", "_rebuild_from_type_v2", G_FROM_TYPE, 0 },
	{ "torch", "Tensor", G_TYPE, 0 },
	{ "torch._tensor", "Tensor", G_TYPE, 0 },
	{ "torch.nn.parameter", "Parameter", G_TYPE, 0 },
	{ "torch", "float32", G_TYPE, 0 },
	{ "torch", "float16", G_TYPE, 0 },
	{ "torch", "bfloat16", G_TYPE, 0 },
	{ "torch", "FloatStorage", G_STORAGE, TFM_TYPE_F32 },
	{ "torch", "HalfStorage", G_STORAGE, TFM_TYPE_F16 },
	{ "torch", "BFloat16Storage", G_STORAGE, TFM_TYPE_BF16 },
	/* integer, complex and float8 storages: names only (nothing is ever
	 * called), parsed so that buffers such as position_ids can be skipped
	 * and other tensors of them rejected as unsupported, by name */
	{ "torch", "DoubleStorage", G_STORAGE, -1 },
	{ "torch", "LongStorage", G_STORAGE, -1 },
	{ "torch", "IntStorage", G_STORAGE, -1 },
	{ "torch", "ShortStorage", G_STORAGE, -1 },
	{ "torch", "CharStorage", G_STORAGE, -1 },
	{ "torch", "ByteStorage", G_STORAGE, -1 },
	{ "torch", "BoolStorage", G_STORAGE, -1 },
	{ "torch", "ComplexFloatStorage", G_STORAGE, -1 },
	{ "torch", "ComplexDoubleStorage", G_STORAGE, -1 },
	{ "torch", "Float8_e4m3fnStorage", G_STORAGE, -1 },
	{ "torch", "Float8_e5m2Storage", G_STORAGE, -1 },
	{ "torch", "Float8_e4m3fnuzStorage", G_STORAGE, -1 },
	{ "torch", "Float8_e5m2fnuzStorage", G_STORAGE, -1 },
	{ "torch", "UInt16Storage", G_STORAGE, -1 },
	{ "torch", "UInt32Storage", G_STORAGE, -1 },
	{ "torch", "UInt64Storage", G_STORAGE, -1 },
};
#define N_ALLOWED (int)(sizeof allowed / sizeof allowed[0])

struct pk_val {
	int kind;
	int64_t i;                    /* K_INT, K_BOOL; K_STORAGE: numel */
	double f;                     /* K_FLOAT */
	char *s;                      /* K_STR; K_STORAGE: key */
	int g;                        /* K_GLOBAL, K_STORAGE: index in allowed[] */
	struct pk_val **items;        /* K_TUPLE, K_LIST; K_DICT: key, value pairs */
	int64_t n, cap;
	struct pk_val *storage;       /* K_TENSOR */
	int64_t off;
	int nd;
	int64_t size[TFM_PK_MAXDIMS], stride[TFM_PK_MAXDIMS];
};

struct pk {
	const uint8_t *p, *start, *end;
	const char *name;
	struct pk_val **all;          /* every value, freed at the end */
	int64_t n_all, cap_all;
	struct pk_val **stack;
	int64_t sp, cap_stack;
	int64_t *marks;
	int64_t n_marks, cap_marks;
	struct pk_val **memo;         /* [cap_memo], NULL where unset */
	int64_t cap_memo, memo_len;
};

#define PKERR(k, fmt, ...) tfm_seterr(TFM_E_FORMAT, "%s: pickle: " fmt, (k)->name, ##__VA_ARGS__)

static struct pk_val *newval(struct pk *k, int kind)
{
	struct pk_val *v;
	if (tfm_grow((void **)&k->all, &k->cap_all, k->n_all + 1, sizeof *k->all) ||
	    !(v = tfm_calloc(1, sizeof *v)))
		return NULL;
	v->kind = kind;
	k->all[k->n_all++] = v;
	return v;
}

static int push(struct pk *k, struct pk_val *v)
{
	if (!v || tfm_grow((void **)&k->stack, &k->cap_stack, k->sp + 1, sizeof *k->stack))
		return TFM_E_NOMEM;
	k->stack[k->sp++] = v;
	return TFM_OK;
}

static int pop(struct pk *k, struct pk_val **v)
{
	int64_t floor = k->n_marks ? k->marks[k->n_marks - 1] : 0;
	if (k->sp <= floor)
		return PKERR(k, "stack underflow at byte %td", k->p - k->start - 1);
	*v = k->stack[--k->sp];
	return TFM_OK;
}

static int append(struct pk_val *c, struct pk_val *v)
{
	if (tfm_grow((void **)&c->items, &c->cap, c->n + 1, sizeof *c->items))
		return TFM_E_NOMEM;
	c->items[c->n++] = v;
	return TFM_OK;
}

/* Pop everything above the last MARK into a fresh tuple (then used as is,
 * or its items moved into a list or dict). */
static int pop_mark(struct pk *k, struct pk_val **out)
{
	if (!k->n_marks)
		return PKERR(k, "no MARK at byte %td", k->p - k->start - 1);
	int64_t m = k->marks[--k->n_marks];
	struct pk_val *t = newval(k, K_TUPLE);
	if (!t)
		return TFM_E_NOMEM;
	for (int64_t i = m; i < k->sp; i++)
		if (append(t, k->stack[i]))
			return TFM_E_NOMEM;
	k->sp = m;
	*out = t;
	return TFM_OK;
}

static int need(struct pk *k, size_t n)
{
	if ((size_t)(k->end - k->p) < n)
		return PKERR(k, "truncated at byte %td", k->p - k->start);
	return TFM_OK;
}

static uint64_t rd_le(struct pk *k, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)k->p[i] << (8 * i);
	k->p += n;
	return v;
}

static int str_val(struct pk *k, uint64_t len)
{
	if (len > (uint64_t)(k->end - k->p))
		return PKERR(k, "string runs past the end");
	if (memchr(k->p, 0, (size_t)len))
		return PKERR(k, "string with a NUL byte");
	struct pk_val *v = newval(k, K_STR);
	if (!v || !(v->s = tfm_malloc((size_t)len + 1)))
		return TFM_E_NOMEM;
	memcpy(v->s, k->p, (size_t)len);
	v->s[len] = 0;
	k->p += len;
	return push(k, v);
}

static int global(struct pk *k, const char *mod, const char *name)
{
	for (int i = 0; i < N_ALLOWED; i++) {
		if (!strcmp(allowed[i].module, mod) && !strcmp(allowed[i].name, name)) {
			struct pk_val *v = newval(k, K_GLOBAL);
			if (!v)
				return TFM_E_NOMEM;
			v->g = i;
			return push(k, v);
		}
	}
	return PKERR(k, "forbidden global %s.%s", mod, name);
}

/* GLOBAL's argument: "module\nname\n", each a short printable line. */
static int read_line(struct pk *k, char *buf, size_t cap)
{
	const uint8_t *nl = memchr(k->p, '\n', (size_t)(k->end - k->p));
	if (!nl)
		return PKERR(k, "GLOBAL: truncated");
	size_t n = (size_t)(nl - k->p);
	if (n >= cap)
		return PKERR(k, "GLOBAL: name too long");
	for (size_t i = 0; i < n; i++)
		if (k->p[i] < 0x20 || k->p[i] > 0x7e)
			return PKERR(k, "GLOBAL: bad name");
	memcpy(buf, k->p, n);
	buf[n] = 0;
	k->p = nl + 1;
	return TFM_OK;
}

static int is_int(const struct pk_val *v)
{
	return v->kind == K_INT || v->kind == K_BOOL;
}

static int int_tuple(struct pk *k, const struct pk_val *t, int64_t *out, int *nd,
		     const char *what)
{
	if (t->kind != K_TUPLE)
		return PKERR(k, "_rebuild_tensor_v2: %s is a %s, not a tuple", what,
			     kind_name[t->kind]);
	if (t->n > TFM_PK_MAXDIMS)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor with %lld dimensions", k->name,
				  (long long)t->n);
	for (int64_t i = 0; i < t->n; i++) {
		if (!is_int(t->items[i]) || t->items[i]->i < 0)
			return PKERR(k, "_rebuild_tensor_v2: bad %s", what);
		out[i] = t->items[i]->i;
	}
	*nd = (int)t->n;
	return TFM_OK;
}

/* Interpret a call of an allowed global; nothing is ever executed. */
static int call(struct pk *k, const struct pk_val *f, const struct pk_val *args,
		struct pk_val **out, int depth)
{
	if (f->kind != K_GLOBAL)
		return PKERR(k, "call of a %s", kind_name[f->kind]);
	if (args->kind != K_TUPLE)
		return PKERR(k, "call with %s arguments", kind_name[args->kind]);
	const struct pk_global *g = &allowed[f->g];
	struct pk_val *const *a = args->items;
	struct pk_val *v;
	int st, nd2;
	switch (g->call) {
	case G_ODICT:
		if (args->n != 0)
			return PKERR(k, "OrderedDict with arguments");
		*out = newval(k, K_DICT);
		return *out ? TFM_OK : TFM_E_NOMEM;
	case G_REBUILD_V2:
		/* _rebuild_tensor_v2(storage, storage_offset, size, stride,
		 *                    requires_grad, backward_hooks[, metadata]) */
		if (args->n < 6 || args->n > 7 || a[0]->kind != K_STORAGE || !is_int(a[1]) ||
		    a[1]->i < 0)
			return PKERR(k, "bad _rebuild_tensor_v2 arguments");
		if (!(v = newval(k, K_TENSOR)))
			return TFM_E_NOMEM;
		v->storage = a[0];
		v->off = a[1]->i;
		if ((st = int_tuple(k, a[2], v->size, &v->nd, "size")) ||
		    (st = int_tuple(k, a[3], v->stride, &nd2, "stride")))
			return st;
		if (nd2 != v->nd)
			return PKERR(k, "_rebuild_tensor_v2: size and stride differ in length");
		*out = v;
		return TFM_OK;
	case G_REBUILD_PARAM:
		/* _rebuild_parameter(data, requires_grad, backward_hooks) and
		 * _rebuild_parameter_with_state(..., state): the state is dropped */
		if (args->n < 3 || args->n > 4 || a[0]->kind != K_TENSOR)
			return PKERR(k, "bad _rebuild_parameter arguments");
		*out = a[0];
		return TFM_OK;
	case G_FROM_TYPE:
		/* _rebuild_from_type_v2(func, new_type, args, state): func(*args);
		 * the subclass (Parameter) and its state do not matter here */
		if (args->n != 4 || depth > 0 || a[1]->kind != K_GLOBAL)
			return PKERR(k, "bad _rebuild_from_type_v2 arguments");
		return call(k, a[0], a[2], out, depth + 1);
	}
	return PKERR(k, "%s.%s is not callable", g->module, g->name);
}

static int memo_put(struct pk *k, uint64_t idx)
{
	/* real pickles number their memo entries densely from 0 */
	if (idx > (uint64_t)(k->end - k->start) + 256)
		return PKERR(k, "memo index %llu out of range",
			     (unsigned long long)idx);
	if (!k->sp || (k->n_marks && k->marks[k->n_marks - 1] == k->sp))
		return PKERR(k, "memo put with an empty stack");
	if (tfm_grow((void **)&k->memo, &k->cap_memo, (int64_t)idx + 1, sizeof *k->memo))
		return TFM_E_NOMEM;
	if (!k->memo[idx])
		k->memo_len++;
	k->memo[idx] = k->stack[k->sp - 1];
	return TFM_OK;
}

static int memo_get(struct pk *k, uint64_t idx)
{
	if (idx >= (uint64_t)k->cap_memo || !k->memo[idx])
		return PKERR(k, "memo entry %llu unset", (unsigned long long)idx);
	return push(k, k->memo[idx]);
}

/* Names of the opcodes we refuse, for the message. */
static const char *refused_name(int op)
{
	switch (op) {
	case 'i': return "INST";
	case 'o': return "OBJ";
	case 0x82: return "EXT1";
	case 0x83: return "EXT2";
	case 0x84: return "EXT4";
	case 0x92: return "NEWOBJ_EX";
	case 'P': return "PERSID";
	case 'S': return "STRING";
	case 'T': return "BINSTRING";
	case 'U': return "SHORT_BINSTRING";
	case 'V': return "UNICODE";
	case 'B': return "BINBYTES";
	case 'C': return "SHORT_BINBYTES";
	case 0x8e: return "BINBYTES8";
	case 0x96: return "BYTEARRAY8";
	case 0x97: return "NEXT_BUFFER";
	case 0x98: return "READONLY_BUFFER";
	case 'I': return "INT";
	case 'L': return "LONG";
	case 0x8b: return "LONG4";
	case 'F': return "FLOAT";
	case 'l': return "LIST";
	case 'd': return "DICT";
	case 0x8f: return "EMPTY_SET";
	case 0x90: return "ADDITEMS";
	case 0x91: return "FROZENSET";
	case '0': return "POP";
	case '2': return "DUP";
	case '1': return "POP_MARK";
	case 'g': return "GET";
	case 'p': return "PUT";
	}
	return NULL;
}

static int run(struct pk *k, struct pk_val **result)
{
	int st;
	struct pk_val *v, *w, *t;
	while (k->p < k->end) {
		int op = *k->p++;
		switch (op) {
		case 0x80: /* PROTO */
			if ((st = need(k, 1)))
				return st;
			if (*k->p > 5)
				return PKERR(k, "protocol %d", *k->p);
			k->p++;
			break;
		case 0x95: /* FRAME: a length hint only */
			if ((st = need(k, 8)))
				return st;
			k->p += 8;
			break;
		case '}': /* EMPTY_DICT */
			if ((st = push(k, newval(k, K_DICT))))
				return st;
			break;
		case ']': /* EMPTY_LIST */
			if ((st = push(k, newval(k, K_LIST))))
				return st;
			break;
		case ')': /* EMPTY_TUPLE */
			if ((st = push(k, newval(k, K_TUPLE))))
				return st;
			break;
		case '(': /* MARK */
			if (tfm_grow((void **)&k->marks, &k->cap_marks, k->n_marks + 1, sizeof *k->marks))
				return TFM_E_NOMEM;
			k->marks[k->n_marks++] = k->sp;
			break;
		case 't': /* TUPLE */
			if ((st = pop_mark(k, &t)) || (st = push(k, t)))
				return st;
			break;
		case 0x85: case 0x86: case 0x87: { /* TUPLE1, TUPLE2, TUPLE3 */
			int n = op - 0x84;
			struct pk_val *it[3];
			for (int i = n - 1; i >= 0; i--)
				if ((st = pop(k, &it[i])))
					return st;
			if (!(t = newval(k, K_TUPLE)))
				return TFM_E_NOMEM;
			for (int i = 0; i < n; i++)
				if (append(t, it[i]))
					return TFM_E_NOMEM;
			if ((st = push(k, t)))
				return st;
			break;
		}
		case 'X': /* BINUNICODE: u32 length */
			if ((st = need(k, 4)) || (st = str_val(k, rd_le(k, 4))))
				return st;
			break;
		case 0x8c: /* SHORT_BINUNICODE: u8 length */
			if ((st = need(k, 1)) || (st = str_val(k, rd_le(k, 1))))
				return st;
			break;
		case 0x8d: /* BINUNICODE8: u64 length */
			if ((st = need(k, 8)) || (st = str_val(k, rd_le(k, 8))))
				return st;
			break;
		case 'J': case 'K': case 'M': { /* BININT (i32), BININT1 (u8), BININT2 (u16) */
			int n = op == 'J' ? 4 : op == 'K' ? 1 : 2;
			if ((st = need(k, (size_t)n)) || !(v = newval(k, K_INT)))
				return st ? st : TFM_E_NOMEM;
			uint64_t x = rd_le(k, n);
			v->i = op == 'J' ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
			if ((st = push(k, v)))
				return st;
			break;
		}
		case 0x8a: { /* LONG1: u8 length, little-endian two's complement */
			if ((st = need(k, 1)))
				return st;
			int n = *k->p++;
			if (n > 8)
				return PKERR(k, "LONG1 of %d bytes (integer too large)", n);
			if ((st = need(k, (size_t)n)) || !(v = newval(k, K_INT)))
				return st ? st : TFM_E_NOMEM;
			uint64_t x = rd_le(k, n);
			if (n > 0 && n < 8 && (x >> (8 * n - 1)) & 1)
				x |= ~(uint64_t)0 << (8 * n);  /* sign-extend */
			v->i = (int64_t)x;
			if ((st = push(k, v)))
				return st;
			break;
		}
		case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
			if (!(v = newval(k, K_BOOL)))
				return TFM_E_NOMEM;
			v->i = op == 0x88;
			if ((st = push(k, v)))
				return st;
			break;
		case 'N': /* NONE */
			if ((st = push(k, newval(k, K_NONE))))
				return st;
			break;
		case 'G': { /* BINFLOAT: big-endian double */
			if ((st = need(k, 8)) || !(v = newval(k, K_FLOAT)))
				return st ? st : TFM_E_NOMEM;
			uint64_t x = 0;
			for (int i = 0; i < 8; i++)
				x = x << 8 | k->p[i];
			k->p += 8;
			memcpy(&v->f, &x, 8);
			if ((st = push(k, v)))
				return st;
			break;
		}
		case 'q': /* BINPUT */
			if ((st = need(k, 1)) || (st = memo_put(k, rd_le(k, 1))))
				return st;
			break;
		case 'r': /* LONG_BINPUT */
			if ((st = need(k, 4)) || (st = memo_put(k, rd_le(k, 4))))
				return st;
			break;
		case 0x94: /* MEMOIZE: the next index is the memo's length */
			if ((st = memo_put(k, (uint64_t)k->memo_len)))
				return st;
			break;
		case 'h': /* BINGET */
			if ((st = need(k, 1)) || (st = memo_get(k, rd_le(k, 1))))
				return st;
			break;
		case 'j': /* LONG_BINGET */
			if ((st = need(k, 4)) || (st = memo_get(k, rd_le(k, 4))))
				return st;
			break;
		case 's': /* SETITEM */
			if ((st = pop(k, &w)) || (st = pop(k, &v)) || (st = pop(k, &t)))
				return st;
			if (t->kind != K_DICT)
				return PKERR(k, "SETITEM on a %s", kind_name[t->kind]);
			if (append(t, v) || append(t, w) || push(k, t))
				return TFM_E_NOMEM;
			break;
		case 'u': /* SETITEMS */
			if ((st = pop_mark(k, &v)) || (st = pop(k, &t)))
				return st;
			if (t->kind != K_DICT || v->n % 2)
				return PKERR(k, "bad SETITEMS");
			for (int64_t i = 0; i < v->n; i++)
				if (append(t, v->items[i]))
					return TFM_E_NOMEM;
			if ((st = push(k, t)))
				return st;
			break;
		case 'a': /* APPEND */
			if ((st = pop(k, &v)) || (st = pop(k, &t)))
				return st;
			if (t->kind != K_LIST)
				return PKERR(k, "APPEND to a %s", kind_name[t->kind]);
			if (append(t, v) || push(k, t))
				return TFM_E_NOMEM;
			break;
		case 'e': /* APPENDS */
			if ((st = pop_mark(k, &v)) || (st = pop(k, &t)))
				return st;
			if (t->kind != K_LIST)
				return PKERR(k, "APPENDS to a %s", kind_name[t->kind]);
			for (int64_t i = 0; i < v->n; i++)
				if (append(t, v->items[i]))
					return TFM_E_NOMEM;
			if ((st = push(k, t)))
				return st;
			break;
		case 'Q': { /* BINPERSID: ('storage', type, key, location, numel) */
			if ((st = pop(k, &t)))
				return st;
			struct pk_val *const *a = t->items;
			if (t->kind != K_TUPLE || t->n != 5 || a[0]->kind != K_STR ||
			    strcmp(a[0]->s, "storage") || a[1]->kind != K_GLOBAL ||
			    allowed[a[1]->g].call != G_STORAGE || a[2]->kind != K_STR ||
			    !is_int(a[4]) || a[4]->i < 0)
				return PKERR(k, "persistent id is not a torch storage");
			if (!(v = newval(k, K_STORAGE)))
				return TFM_E_NOMEM;
			v->g = a[1]->g;
			v->s = tfm_strdup(a[2]->s);
			v->i = a[4]->i;
			if (!v->s || (st = push(k, v)))
				return TFM_E_NOMEM;
			break;
		}
		case 'R': /* REDUCE: callable, args */
		case 0x81: /* NEWOBJ: cls, args (only OrderedDict) */
			if ((st = pop(k, &t)) || (st = pop(k, &w)))
				return st;
			if (op == 0x81 && (w->kind != K_GLOBAL || allowed[w->g].call != G_ODICT))
				return PKERR(k, "NEWOBJ of a %s", kind_name[w->kind]);
			if ((st = call(k, w, t, &v, 0)) || (st = push(k, v)))
				return st;
			break;
		case 'b': /* BUILD: state for the object below; dicts and tensors
			   * carry nothing we need in it (OrderedDict's _metadata) */
			if ((st = pop(k, &w)) || (st = pop(k, &t)))
				return st;
			if (t->kind != K_DICT && t->kind != K_TENSOR)
				return PKERR(k, "BUILD on a %s", kind_name[t->kind]);
			if ((st = push(k, t)))
				return st;
			break;
		case 'c': { /* GLOBAL "module\nname\n" */
			char mod[256], name[256];
			if ((st = read_line(k, mod, sizeof mod)) ||
			    (st = read_line(k, name, sizeof name)) || (st = global(k, mod, name)))
				return st;
			break;
		}
		case 0x93: /* STACK_GLOBAL: module, name */
			if ((st = pop(k, &w)) || (st = pop(k, &v)))
				return st;
			if (v->kind != K_STR || w->kind != K_STR)
				return PKERR(k, "STACK_GLOBAL of non-strings");
			if ((st = global(k, v->s, w->s)))
				return st;
			break;
		case '.': /* STOP */
			return pop(k, result);
		default: {
			const char *nm = refused_name(op);
			if (nm)
				return PKERR(k, "opcode %s (0x%02x) is not allowed", nm, op);
			return PKERR(k, "unknown opcode 0x%02x at byte %td", op,
				     k->p - k->start - 1);
		}
		}
	}
	return PKERR(k, "no STOP opcode (truncated?)");
}

static void pk_free(struct pk *k)
{
	for (int64_t i = 0; i < k->n_all; i++) {
		free(k->all[i]->s);
		free(k->all[i]->items);
		free(k->all[i]);
	}
	free(k->all);
	free(k->stack);
	free(k->marks);
	free(k->memo);
}

int tfm_pickle_check(const uint8_t *data, size_t size, const char *name)
{
	struct pk k = { .p = data, .start = data, .end = data + size, .name = name };
	struct pk_val *r;
	int st = run(&k, &r);
	pk_free(&k);
	return st;
}

static int count_tensors(const struct pk_val *d)
{
	int n = 0;
	for (int64_t i = 0; i + 1 < d->n; i += 2)
		n += d->items[i]->kind == K_STR && d->items[i + 1]->kind == K_TENSOR;
	return n;
}

void tfm_pickle_tensors_free(struct tfm_pickle_tensor *t, int64_t n)
{
	for (int64_t i = 0; i < n && t; i++) {
		free(t[i].name);
		free(t[i].storage_key);
	}
	free(t);
}

int tfm_pickle_state_dict(const uint8_t *data, size_t size, const char *name,
			  struct tfm_pickle_tensor **out, int64_t *n_out)
{
	struct pk k = { .p = data, .start = data, .end = data + size, .name = name };
	struct pk_val *r;
	struct tfm_pickle_tensor *t = NULL;
	int64_t n = 0;
	int st = run(&k, &r);
	if (st)
		goto out;
	if (r->kind != K_DICT) {
		st = PKERR(&k, "the top object is a %s, not a state dict",
			   kind_name[r->kind]);
		goto out;
	}
	/* a training checkpoint wraps the state dict: {"model": {...}, ...} */
	if (!count_tensors(r)) {
		for (int64_t i = 0; i + 1 < r->n; i += 2) {
			const struct pk_val *key = r->items[i], *v = r->items[i + 1];
			if (key->kind == K_STR && v->kind == K_DICT && count_tensors(v) &&
			    (!strcmp(key->s, "state_dict") || !strcmp(key->s, "model"))) {
				r = r->items[i + 1];
				break;
			}
		}
	}
	int nt = count_tensors(r);
	if (!(t = tfm_calloc((size_t)nt + 1, sizeof *t))) {
		st = TFM_E_NOMEM;
		goto out;
	}
	for (int64_t i = 0; i + 1 < r->n; i += 2) {
		const struct pk_val *key = r->items[i], *v = r->items[i + 1];
		if (key->kind != K_STR || v->kind != K_TENSOR) {
			tfm_log(TFM_LOG_DEBUG, "%s: skipping a %s entry", name, kind_name[v->kind]);
			continue;
		}
		struct tfm_pickle_tensor *p = &t[n++];
		/* torch.compile wraps the model: its state dict keys carry this
		 * prefix (llama2.c's export.py strips it the same way) */
		const char *kn = key->s;
		if (!strncmp(kn, "_orig_mod.", 10))
			kn += 10;
		p->name = tfm_strdup(kn);
		p->storage_key = tfm_strdup(v->storage->s);
		if (!p->name || !p->storage_key) {
			st = TFM_E_NOMEM;
			goto out;
		}
		p->storage = allowed[v->storage->g].name;
		p->storage_numel = v->storage->i;
		p->offset = v->off;
		p->n_dims = v->nd;
		memcpy(p->size, v->size, sizeof p->size);
		memcpy(p->stride, v->stride, sizeof p->stride);
	}
out:
	pk_free(&k);
	if (st) {
		tfm_pickle_tensors_free(t, n);
		return st;
	}
	*out = t;
	*n_out = n;
	return TFM_OK;
}

/* The tfm type of a storage name, or -1 (tensors of it are rejected). */
int tfm_pickle_storage_type(const char *storage)
{
	for (int i = 0; i < N_ALLOWED; i++)
		if (allowed[i].call == G_STORAGE && !strcmp(allowed[i].name, storage))
			return allowed[i].type;
	return -1;
}
