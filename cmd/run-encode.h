/* run-encode.h: tfm-run --embed, --classify, --fill and --tag: one input
 * line is one sequence through an encoder-only model; the output is a
 * sentence embedding, the classifier's labels, the best tokens for each
 * mask token, or the entities a token classifier finds, per line in input
 * order. */
#ifndef TFM_RUN_ENCODE_H
#define TFM_RUN_ENCODE_H

#include "tfm.h"

enum { ENC_EMBED = 1, ENC_CLASSIFY, ENC_FILL, ENC_TAG };
enum { ENC_TSV = 0, ENC_JSONL, ENC_F32 };

struct enc_opts {
	int mode;          /* ENC_EMBED or ENC_CLASSIFY */
	int fmt;           /* ENC_TSV, ENC_JSONL, ENC_F32 */
	int pooling;       /* enum tfm_pooling; TFM_POOL_NONE: the model's */
	int normalize;     /* -1: the model's, 0 off, 1 on */
	int64_t top;       /* --classify: labels per line, 0: all; --fill: tokens per mask, 0: 5 */
	int truncate;      /* 1: cut long inputs with a warning; 0: refuse them */
	int64_t n_ctx;     /* -c, 0: the model's maximum */
};

/* Text from prompt (one sequence), else each line of file, else of stdin. */
int run_encode(struct tfm_model *m, const struct enc_opts *o, const char *prompt,
	       const char *file);

#endif
