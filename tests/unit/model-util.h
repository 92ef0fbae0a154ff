/* model-util.h: helpers shared by the executor tests. */
#ifndef TFM_TEST_MODEL_UTIL_H
#define TFM_TEST_MODEL_UTIL_H

#include "t.h"

#include <jansson.h>

/* A small llama-like spec: vocab 37, 24 wide, 2 layers, GQA 4/2 heads of 6. */
void t_base_spec(struct tfm_spec *s);
/* Largest |a - b| over n values (NaN counts as the largest). */
double t_maxdiff(const float *a, const float *b, int64_t n);

/* A whole file of float32 values (malloc'd; *n floats), NULL if unreadable. */
float *t_read_f32(const char *path, size_t *n);
/* Up to cap integers of a JSON array into v; the array's length. */
int t_read_ints(const json_t *a, int32_t *v, int cap);

#endif
