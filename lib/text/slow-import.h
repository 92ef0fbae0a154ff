/* slow-import.h: a tokenizer.json built from a slow tokenizer's files, as
 * transformers' convert_slow_tokenizer does (slow-import.c).  Private to
 * lib/text. */
#ifndef TFM_SLOW_IMPORT_H
#define TFM_SLOW_IMPORT_H

#include <jansson.h>
#include <stddef.h>

struct tfm_ckpt_file;

/* The tokenizer.json text (*out malloc'd, *n bytes) for SentencePiece model
 * spm, tokenizer_config.json cfg and config.json's model_type (or NULL);
 * TFM_E_UNSUPPORTED for a tokenizer without a conversion here. */
int tfm_slow_tokenizer_json(const struct tfm_ckpt_file *spm, json_t *cfg,
			    const char *model_type, char **out, size_t *n);

#endif
