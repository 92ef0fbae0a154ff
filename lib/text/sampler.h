/* sampler.h: picking the next token from logits.  Greedy (temperature 0:
 * argmax, lowest id on ties) or a llama.cpp-style chain: repetition penalty
 * -> top-k -> top-p -> min-p -> temperature -> draw with our own seeded
 * PCG32, so that a --seed gives the same text on every machine. */
#ifndef TFM_SAMPLER_H
#define TFM_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/* PCG32 (O'Neill, pcg-c-basic): 64-bit LCG state, XSH-RR output. */
struct tfm_pcg32 {
	uint64_t state, inc;
};
void tfm_pcg32_seed(struct tfm_pcg32 *r, uint64_t seed, uint64_t seq);
uint32_t tfm_pcg32_next(struct tfm_pcg32 *r);
double tfm_pcg32_double(struct tfm_pcg32 *r); /* uniform in [0, 1), 53 bits */

struct tfm_sampler_opts {
	double temp;           /* <= 0: greedy */
	int64_t top_k;         /* <= 0: off */
	double top_p;          /* >= 1: off */
	double min_p;          /* <= 0: off */
	double repeat_penalty; /* 1: off; llama.cpp: l > 0 ? l / r : l * r */
	int64_t repeat_last_n; /* tokens of history the penalty looks at */
	uint64_t seed;
};
/* temp 0.8, top_k 40, top_p 0.95, min_p 0.05, penalty 1 over 64, seed 0
 * (llama.cpp's defaults). */
void tfm_sampler_opts_default(struct tfm_sampler_opts *o);

struct tfm_sampler;
int tfm_sampler_new(struct tfm_sampler **s, int64_t n_vocab, const struct tfm_sampler_opts *o);
void tfm_sampler_free(struct tfm_sampler *s);
/* Forget the token history (new prompt); the RNG goes on. */
void tfm_sampler_reset(struct tfm_sampler *s);
/* Add a token to the history the repetition penalty looks at (prompt tokens
 * and generated tokens alike, as llama.cpp does). */
void tfm_sampler_accept(struct tfm_sampler *s, int32_t id);
/* The next token for logits[n_vocab] (not modified). */
int32_t tfm_sampler_sample(struct tfm_sampler *s, const float *logits);
/* The distribution the sampler draws from, for tests and inspection: the kept
 * token ids in draw order (descending probability, ties by id) and their
 * probabilities (sum 1).  ids and probs hold n_vocab entries; returns the
 * number kept.  Greedy: the argmax alone with probability 1. */
int64_t tfm_sampler_dist(struct tfm_sampler *s, const float *logits, int32_t *ids, float *probs);

/* log-softmax of logits[n] at index id (double precision, max-shifted). */
double tfm_logprob(const float *logits, int64_t n, int32_t id);
/* Index of the largest logit, lowest index on ties. */
int32_t tfm_argmax(const float *logits, int64_t n);

#endif
