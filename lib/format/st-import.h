/* st-import.h: what an encoder checkpoint says beyond config.json.  Private
 * to lib/format (convert.c). */
#ifndef TFM_ST_IMPORT_H
#define TFM_ST_IMPORT_H

#include "tfm.h"

/* For an encoder-only spec, after the tensors are in g: the heads present
 * (head.pooler, head.mlm); a sentence-transformers directory's modules
 * (modules.json, the Pooling module's config.json, Normalize,
 * sentence_bert_config.json's max_seq_length) into the spec's head knobs,
 * and a classifier's id2label into <arch>.classifier.output_labels (llama.cpp's
 * key).  A module or setting that changes the embedding and is not
 * implemented is TFM_E_UNSUPPORTED naming it.  Other families: TFM_OK. */
int tfm_st_import(const struct tfm_ckpt *ck, struct tfm_spec *s, struct tfm_gguf *g);

#endif
