/* gguf-tensor.c: tensor infos of a GGUF: lookup, and adding tensors for
 * writing (data given as bytes that must outlive the write, or produced on
 * demand by a callback). */
#include "gguf-impl.h"

#include <stdlib.h>
#include <string.h>

int64_t tfm_gguf_n_tensors(const struct tfm_gguf *g) { return g->n_t; }

const struct tfm_gguf_tensor *tfm_gguf_tensor(const struct tfm_gguf *g, int64_t i)
{
	return i >= 0 && i < g->n_t ? &g->t[i].pub : NULL;
}

const struct tfm_gguf_tensor *tfm_gguf_find_tensor(const struct tfm_gguf *g, const char *name)
{
	if (!name)
		return NULL;
	for (int64_t i = 0; i < g->n_t; i++)
		if (!strcmp(g->t[i].pub.name, name))
			return &g->t[i].pub;
	return NULL;
}

size_t tfm_gguf_alignment(const struct tfm_gguf *g)
{
	int64_t i = tfm_gguf_find(g, "general.alignment");
	if (i < 0 || g->kv[i].v.type != TFM_GGUF_UINT32)
		return TFM_GGUF_DEFAULT_ALIGNMENT;
	uint32_t a = (uint32_t)g->kv[i].v.raw;
	return a && !(a & (a - 1)) ? a : TFM_GGUF_DEFAULT_ALIGNMENT;
}

int tfm_gguf_add_tensor(struct tfm_gguf *g, const char *name, int type, int n_dims,
			const int64_t *ne, const void *data,
			tfm_gguf_produce_fn produce, void *ctx)
{
	const struct tfm_type_info *ti = tfm_type_info(type);
	char nb[512];
	if (!name)
		return tfm_seterr(TFM_E_INVAL, "gguf: tensor with no name");
	gguf_sane(name, strlen(name), nb);
	if (!ti)
		return tfm_seterr(TFM_E_INVAL, "gguf: tensor %s: invalid type %s", nb, tfm_type_name(type));
	if (n_dims < 1 || n_dims > TFM_GGUF_MAX_DIMS)
		return tfm_seterr(TFM_E_INVAL, "gguf: tensor %s: %d dimensions (1 to 4 allowed)", nb, n_dims);
	if (!data && !produce)
		return tfm_seterr(TFM_E_INVAL, "gguf: tensor %s: neither data nor a producer", nb);
	if (tfm_gguf_find_tensor(g, name))
		return tfm_seterr(TFM_E_INVAL, "gguf: duplicate tensor %s", nb);
	struct gguf_tensor t = { .produce = produce, .ctx = ctx };
	int64_t nel = 1;
	for (int d = 0; d < TFM_GGUF_MAX_DIMS; d++) {
		int64_t n = d < n_dims ? ne[d] : 1;
		if (n < 0 || (n && nel > INT64_MAX / n))
			return tfm_seterr(TFM_E_INVAL, "gguf: tensor %s: bad shape", nb);
		t.pub.ne[d] = n;
		nel *= n;
	}
	if (t.pub.ne[0] % ti->blck)
		return tfm_seterr(TFM_E_INVAL, "gguf: tensor %s: row of %lld is not a multiple of the "
				  "%s block size %lld", nb, (long long)t.pub.ne[0], ti->name,
				  (long long)ti->blck);
	t.pub.nbytes = tfm_type_nbytes(type, nel);
	if (!t.pub.nbytes && nel)
		return tfm_seterr(TFM_E_INVAL, "gguf: tensor %s: too large", nb);
	t.pub.type = type;
	t.pub.n_dims = n_dims;
	t.pub.data = data;
	if (g->n_t == g->cap_t) {
		int64_t cap = g->cap_t ? 2 * g->cap_t : 64;
		struct gguf_tensor *nt = tfm_realloc(g->t, (size_t)cap * sizeof *nt);
		if (!nt)
			return TFM_E_NOMEM;
		g->t = nt;
		g->cap_t = cap;
	}
	if (!(t.pub.name = tfm_strdup(name)))
		return TFM_E_NOMEM;
	g->t[g->n_t++] = t;
	return TFM_OK;
}
