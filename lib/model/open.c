/* open.c: tfm_model_open.  A GGUF file is parsed in place (mmapped, or read
 * from a pipe); anything else goes through tfm_convert (lib/format/convert.h)
 * and runs from its in-memory GGUF with every tensor materialised.  Then the
 * spec from the GGUF, the --set overrides in order, the executor's checks,
 * the weights bound by name, and the tokenizer when the file has one. */
#include "model/model-impl.h"

#include <stdlib.h>
#include <string.h>

static void release(struct tfm_model *m)
{
	tfm_tokenizer_free(m->tok);
	m->tok = NULL;
	if (m->cv)
		tfm_convert_close(m->cv); /* owns its gguf */
	else if (m->own_gguf)
		tfm_gguf_free(m->gguf);
	if (m->have_blob)
		tfm_blob_close(&m->blob);
	m->gguf = NULL;
	m->cv = NULL;
	m->have_blob = 0;
}

/* The source of a model: blob + parsed GGUF, or a converter. */
struct source {
	struct tfm_blob blob;
	int have_blob;
	struct tfm_gguf *g;
	struct tfm_convert *cv;
};

static int open_source(struct source *src, const char *path, const struct tfm_model_opts *o)
{
	int st;
	memset(src, 0, sizeof *src);
	/* a GGUF is parsed in place; anything else goes through the converter,
	 * which reads it once (the first bytes tell them apart) */
	int is_gguf = tfm_path_is_dir(path) ? 0 : tfm_gguf_probe(path);
	if (is_gguf < 0)
		return is_gguf;
	if (is_gguf) {
		if ((st = tfm_blob_open(&src->blob, path)))
			return st;
		src->have_blob = 1;
		if (!tfm_gguf_is_gguf(src->blob.data, src->blob.size))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: not a GGUF (convert checkpoints "
					  "with tfm-convert first)", src->blob.name);
		return tfm_gguf_parse(&src->g, src->blob.data, src->blob.size, src->blob.name);
	}
	struct tfm_convert_opts co = {.vocab = o->vocab, .dtype = -1};
	if ((st = tfm_convert_open(&src->cv, path, &co)))
		return st;
	if ((st = tfm_convert_load(src->cv)))
		return st;
	src->g = tfm_convert_gguf(src->cv);
	return src->g ? TFM_OK : tfm_seterr(TFM_E_INTERNAL, "%s: converter gave no GGUF", path);
}

static void close_source(struct source *src)
{
	if (src->cv)
		tfm_convert_close(src->cv);
	else if (src->g)
		tfm_gguf_free(src->g);
	if (src->have_blob)
		tfm_blob_close(&src->blob);
}

int tfm_model_open(struct tfm_model **out, const char *path, const struct tfm_model_opts *o)
{
	struct tfm_model_opts dflt = {0};
	struct source src = {0};
	struct tfm_spec spec;
	struct tfm_model *m = NULL;
	int st;
	*out = NULL;
	if (!o)
		o = &dflt;
	if ((st = open_source(&src, path, o)))
		goto fail;
	if ((st = tfm_spec_from_gguf(&spec, src.g)))
		goto fail;
	for (int i = 0; i < o->n_set; i++)
		if ((st = tfm_spec_set(&spec, o->set[i])))
			goto fail;
	if ((st = tfm_spec_validate(&spec)))
		goto fail;
	if ((st = tfm_model_from_gguf(&m, src.g, &spec, o)))
		goto fail;
	m->blob = src.blob;
	m->have_blob = src.have_blob;
	m->gguf = src.g;
	m->own_gguf = !src.cv;
	m->cv = src.cv;
	m->release = release;
	memset(&src, 0, sizeof src);
	/* a model without tokenizer keys still runs on token ids */
	if (tfm_gguf_find(m->gguf, "tokenizer.ggml.model") >= 0 &&
	    (st = tfm_tokenizer_from_gguf(&m->tok, m->gguf)))
		goto fail;
	if (o && (o->src_lang || o->tgt_lang)) {
		st = m->tok ? tfm_tokenizer_set_lang(m->tok, o->src_lang, o->tgt_lang)
			    : tfm_seterr(TFM_E_UNSUPPORTED, "a language code: the model has no "
					 "tokenizer");
		if (st)
			goto fail;
	}
	*out = m;
	return TFM_OK;
fail:
	tfm_model_close(m);
	close_source(&src);
	return st;
}
