/* tokimport.h: the tokenizer-import harnesses' common step: side files of
 * a checkpoint (copied in as tfm_ckpt_add_file does for real checkpoints)
 * through tfm_tokenizer_to_gguf, the keys read back by
 * tfm_tokenizer_from_gguf, and that tokenizer exercised.  A tokenizer
 * written by tfm must be one tfm reads back. */
#ifndef TFM_FUZZ_TOKIMPORT_H
#define TFM_FUZZ_TOKIMPORT_H

#include "fuzz.h"

#include "format/ckpt-impl.h"

#include <string.h>

static inline void fuzz_tok_import(struct tfm_ckpt *c, const uint8_t *text, size_t len)
{
	struct tfm_gguf *g = NULL;
	if (tfm_gguf_new(&g))
		return;
	int st = tfm_tokenizer_to_gguf(c, g);
	fuzz_check_status(st);
	if (!st && tfm_gguf_find(g, "tokenizer.ggml.model") >= 0) {
		struct tfm_tokenizer *t = NULL;
		fuzz_walk_gguf(g);
		st = tfm_tokenizer_from_gguf(&t, g);
		fuzz_check_status(st);
		FUZZ_ASSERT(st == TFM_OK);
		if (!st)
			fuzz_tokenizer(t, text, len);
		tfm_tokenizer_free(t);
	}
	tfm_gguf_free(g);
}

/* A checkpoint holding one side file. */
static inline void fuzz_tok_file(const char *name, const uint8_t *data, size_t size)
{
	struct tfm_ckpt *c = NULL;
	if (tfm_ckpt_new(&c, "fuzz", "hf-dir"))
		return;
	if (!tfm_ckpt_add_file(c, name, data, size))
		fuzz_tok_import(c, data, size < 256 ? size : 256);
	tfm_ckpt_close(c);
}

#endif
