/* gguf-write.c: write a struct tfm_gguf as a GGUF v3 file through a
 * struct tfm_out: header, key/values in insertion order, tensor infos with
 * offsets aligned to general.alignment (default 32), zero padding, then the
 * data, one tensor at a time (from its bytes or its producer). */
#include "gguf-impl.h"

#include <stdlib.h>
#include <string.h>

struct wr {
	struct tfm_out *out;
	uint64_t pos;   /* bytes of this file written so far (alignment is relative to it) */
	int st;         /* first error */
};

static void w_raw(struct wr *w, const void *p, size_t n)
{
	if (w->st || !n)
		return;
	w->st = tfm_out_write(w->out, p, n);
	w->pos += n;
}

static void w_u32(struct wr *w, uint32_t v) { w_raw(w, &v, 4); }
static void w_u64(struct wr *w, uint64_t v) { w_raw(w, &v, 8); }

static void w_str(struct wr *w, const char *s, size_t len)
{
	w_u64(w, len);
	w_raw(w, s, len);
}

static void w_pad(struct wr *w, size_t align)
{
	static const uint8_t zero[256];
	size_t pad = (size_t)((align - w->pos % align) % align);
	while (pad) {
		size_t n = pad < sizeof zero ? pad : sizeof zero;
		w_raw(w, zero, n);
		pad -= n;
	}
}

/* An array body: element type, count, elements (nested arrays recurse). */
static void w_arr(struct wr *w, const struct tfm_gguf_val *v)
{
	w_u32(w, (uint32_t)v->elem_type);
	w_u64(w, (uint64_t)v->n);
	size_t width = gguf_type_width(v->elem_type);
	if (width) {
		w_raw(w, v->data, (size_t)v->n * width);
	} else if (v->elem_type == TFM_GGUF_STRING) {
		for (int64_t j = 0; j < v->n; j++)
			w_str(w, v->pool + v->off[j], v->off[j + 1] - v->off[j] - 1);
	} else {
		for (int64_t j = 0; j < v->n; j++)
			w_arr(w, &v->sub[j]);
	}
}

static void w_val(struct wr *w, const struct tfm_gguf_val *v)
{
	w_u32(w, (uint32_t)v->type);
	if (v->type == TFM_GGUF_STRING)
		w_str(w, v->str, v->len);
	else if (v->type == TFM_GGUF_ARRAY)
		w_arr(w, v);
	else
		w_raw(w, &v->raw, gguf_type_width(v->type));
}

/* Offset of each tensor in the data section: [n_t]. */
static uint64_t *plan_offsets(const struct tfm_gguf *g, size_t align)
{
	uint64_t *off = tfm_malloc(((size_t)g->n_t + 1) * sizeof *off), o = 0;
	if (!off)
		return NULL;
	for (int64_t i = 0; i < g->n_t; i++) {
		off[i] = o;
		o += g->t[i].pub.nbytes;
		o += (align - o % align) % align;
	}
	return off;
}

/* The data of tensor i, produced into *buf (grown to fit) when needed. */
static int tensor_bytes(const struct gguf_tensor *t, void **buf, size_t *cap, const void **p)
{
	char nb[512];
	if (t->pub.data || !t->pub.nbytes) {
		*p = t->pub.data;
		return TFM_OK;
	}
	if (t->pub.nbytes > *cap) {
		void *nbuf = tfm_amalloc(t->pub.nbytes);
		if (!nbuf)
			return TFM_E_NOMEM;
		tfm_afree(*buf);
		*buf = nbuf;
		*cap = t->pub.nbytes;
	}
	int st = t->produce(t->ctx, &t->pub, *buf);
	if (st)
		return tfm_adderr(st, "tensor %s", gguf_sane(t->pub.name, strlen(t->pub.name), nb));
	*p = *buf;
	return TFM_OK;
}

/* A general.alignment key that readers would reject is refused here. */
static int check_alignment(const struct tfm_gguf *g)
{
	int64_t i = tfm_gguf_find(g, "general.alignment");
	if (i < 0)
		return TFM_OK;
	uint32_t a = (uint32_t)g->kv[i].v.raw;
	if (g->kv[i].v.type != TFM_GGUF_UINT32 || !a || (a & (a - 1)))
		return tfm_seterr(TFM_E_INVAL, "gguf: general.alignment must be a uint32 power of two");
	return TFM_OK;
}

int tfm_gguf_write(const struct tfm_gguf *g, struct tfm_out *out)
{
	return tfm_gguf_write_progress(g, out, NULL, NULL);
}

int tfm_gguf_write_progress(const struct tfm_gguf *g, struct tfm_out *out,
			    void (*cb)(void *ctx, int64_t i, int64_t n, double done, double total,
				       const char *name),
			    void *ctx)
{
	struct wr w = { .out = out };
	size_t align = tfm_gguf_alignment(g);
	uint64_t *off;
	void *buf = NULL;  /* [cap] bytes of the tensor being produced */
	size_t cap = 0;
	int st = check_alignment(g);
	if (st)
		return st;
	if (!(off = plan_offsets(g, align)))
		return TFM_E_NOMEM;
	w_raw(&w, "GGUF", 4);
	w_u32(&w, 3);
	w_u64(&w, (uint64_t)g->n_t);
	w_u64(&w, (uint64_t)g->n_kv);
	for (int64_t i = 0; i < g->n_kv; i++) {
		w_str(&w, g->kv[i].key, g->kv[i].key_len);
		w_val(&w, &g->kv[i].v);
	}
	for (int64_t i = 0; i < g->n_t; i++) {
		const struct tfm_gguf_tensor *t = &g->t[i].pub;
		w_str(&w, t->name, strlen(t->name));
		w_u32(&w, (uint32_t)t->n_dims);
		for (int d = 0; d < t->n_dims; d++)
			w_u64(&w, (uint64_t)t->ne[d]);
		w_u32(&w, (uint32_t)t->type);
		w_u64(&w, off[i]);
	}
	if (g->n_t)
		w_pad(&w, align);
	double total = 0, done = 0;
	for (int64_t i = 0; cb && i < g->n_t; i++)
		total += (double)g->t[i].pub.nbytes;
	for (int64_t i = 0; i < g->n_t && !w.st; i++) {
		const void *p;
		if (cb)
			cb(ctx, i, g->n_t, done, total, g->t[i].pub.name);
		if ((w.st = tensor_bytes(&g->t[i], &buf, &cap, &p)))
			break;
		w_raw(&w, p, g->t[i].pub.nbytes);
		w_pad(&w, align);
		done += (double)g->t[i].pub.nbytes;
	}
	if (cb && !w.st)
		cb(ctx, g->n_t, g->n_t, done, total, NULL);
	tfm_afree(buf);
	free(off);
	return w.st;
}
