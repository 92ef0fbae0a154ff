/* gguf.c: a model from a parsed (or converted and materialised) GGUF and a
 * spec: the tensor infos become the name table of tfm_model_new.  The GGUF
 * and the bytes behind it must outlive the model. */
#include "model/model-impl.h"

#include <stdlib.h>
#include <string.h>

int tfm_model_from_gguf(struct tfm_model **m, const struct tfm_gguf *g, const struct tfm_spec *s,
			const struct tfm_model_opts *o)
{
	int64_t n = tfm_gguf_n_tensors(g);
	struct tfm_model_tensor *ts = tfm_calloc((size_t)(n ? n : 1), sizeof *ts);
	*m = NULL;
	if (!ts)
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < n; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(g, i);
		ts[i].name = t->name;
		ts[i].type = t->type;
		ts[i].n_dims = t->n_dims;
		memcpy(ts[i].ne, t->ne, sizeof ts[i].ne);
		ts[i].data = t->data;
		if (!t->data) {
			free(ts);
			return tfm_seterr(TFM_E_INTERNAL, "%s: tensor data not in memory", t->name);
		}
	}
	int st = tfm_model_new(m, s, ts, n, o);
	if (!st)
		(*m)->gguf = (struct tfm_gguf *)g;
	free(ts);
	return st;
}
