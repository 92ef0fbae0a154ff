/* sampler.c: see sampler.h.  The chain follows llama.cpp's default order
 * (penalties, top-k, top-p, min-p, temperature, draw); top-p and min-p look at
 * the temperature-1 distribution, as there.  Candidates are kept sorted by
 * descending logit with ties broken by the lower id, so the draw order, and
 * with it a seeded run, does not depend on the sort implementation. */
#include "tfm.h"
#include "text/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tfm_pcg32_seed(struct tfm_pcg32 *r, uint64_t seed, uint64_t seq)
{
	r->state = 0;
	r->inc = (seq << 1) | 1u;
	tfm_pcg32_next(r);
	r->state += seed;
	tfm_pcg32_next(r);
}

uint32_t tfm_pcg32_next(struct tfm_pcg32 *r)
{
	uint64_t old = r->state;
	r->state = old * 6364136223846793005ULL + r->inc;
	uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
	uint32_t rot = (uint32_t)(old >> 59);
	return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

double tfm_pcg32_double(struct tfm_pcg32 *r)
{
	uint64_t a = tfm_pcg32_next(r) >> 5, b = tfm_pcg32_next(r) >> 6; /* 27 + 26 bits */
	return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

void tfm_sampler_opts_default(struct tfm_sampler_opts *o)
{
	o->temp = 0.8;
	o->top_k = 40;
	o->top_p = 0.95;
	o->min_p = 0.05;
	o->repeat_penalty = 1.0;
	o->repeat_last_n = 64;
	o->seed = 0;
}

struct cand {
	int32_t id;
	float logit;
};

struct tfm_sampler {
	struct tfm_sampler_opts o;
	int64_t n_vocab;
	struct tfm_pcg32 rng;
	struct cand *cand;    /* [n_vocab] working candidates */
	double *p;            /* [n_vocab] probabilities of the kept candidates */
	int32_t *hist;        /* [repeat_last_n] ring of recent tokens */
	int64_t n_hist, hist_at;
	uint8_t *seen;        /* [n_vocab] scratch: penalty applied once per token */
};

int tfm_sampler_new(struct tfm_sampler **out, int64_t n_vocab, const struct tfm_sampler_opts *o)
{
	*out = NULL;
	if (n_vocab <= 0 || n_vocab > INT32_MAX)
		return tfm_seterr(TFM_E_INVAL, "sampler: bad vocabulary size %lld", (long long)n_vocab);
	if (o->repeat_last_n < 0 || !(o->repeat_penalty > 0))
		return tfm_seterr(TFM_E_INVAL, "sampler: bad repetition penalty settings");
	struct tfm_sampler *s = tfm_calloc(1, sizeof(*s));
	if (!s)
		return TFM_E_NOMEM;
	s->o = *o;
	s->n_vocab = n_vocab;
	tfm_pcg32_seed(&s->rng, o->seed, 0x746663u /* "tfm" */);
	s->cand = tfm_malloc((size_t)n_vocab * sizeof(*s->cand));
	s->p = tfm_malloc((size_t)n_vocab * sizeof(*s->p));
	s->seen = tfm_calloc((size_t)n_vocab, 1);
	s->hist = tfm_malloc((size_t)(o->repeat_last_n + 1) * sizeof(*s->hist));
	if (!s->cand || !s->p || !s->seen || !s->hist) {
		tfm_sampler_free(s);
		return TFM_E_NOMEM;
	}
	*out = s;
	return TFM_OK;
}

void tfm_sampler_free(struct tfm_sampler *s)
{
	if (!s)
		return;
	free(s->cand);
	free(s->p);
	free(s->seen);
	free(s->hist);
	free(s);
}

void tfm_sampler_reset(struct tfm_sampler *s)
{
	s->n_hist = 0;
	s->hist_at = 0;
}

void tfm_sampler_accept(struct tfm_sampler *s, int32_t id)
{
	int64_t n = s->o.repeat_last_n;
	if (n <= 0)
		return;
	s->hist[s->hist_at] = id;
	s->hist_at = (s->hist_at + 1) % n;
	if (s->n_hist < n)
		s->n_hist++;
}

int32_t tfm_argmax(const float *logits, int64_t n)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return (int32_t)best;
}

double tfm_logprob(const float *logits, int64_t n, int32_t id)
{
	float mx = logits[tfm_argmax(logits, n)];
	double sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += exp((double)logits[i] - mx);
	return (double)logits[id] - mx - log(sum);
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int cand_before(const struct cand *x, const struct cand *y)
{
	return x->logit > y->logit || (x->logit == y->logit && x->id < y->id);
}

/* Move the k first candidates in cand_cmp order to c[0..k), in any order
 * (Hoare's selection; the order is total, so the set is well defined). */
static void select_k(struct cand *c, int64_t n, int64_t k)
{
	int64_t lo = 0, hi = n - 1;
	while (lo < hi) {
		struct cand piv = c[lo + (hi - lo) / 2];
		int64_t i = lo, j = hi;
		while (i <= j) {
			while (cand_before(&c[i], &piv))
				i++;
			while (cand_before(&piv, &c[j]))
				j--;
			if (i <= j) {
				struct cand t = c[i];
				c[i++] = c[j];
				c[j--] = t;
			}
		}
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			break;
	}
}

/* Fill s->cand with the logits, penalised (llama.cpp: divide a positive
 * logit, multiply a negative one, once per distinct token in the window). */
static void load(struct tfm_sampler *s, const float *logits)
{
	for (int64_t i = 0; i < s->n_vocab; i++) {
		s->cand[i].id = (int32_t)i;
		s->cand[i].logit = logits[i];
	}
	if (s->o.repeat_penalty == 1.0 || s->n_hist == 0)
		return;
	float r = (float)s->o.repeat_penalty;
	for (int64_t k = 0; k < s->n_hist; k++) {
		int32_t id = s->hist[k];
		if (id < 0 || id >= s->n_vocab || s->seen[id])
			continue;
		s->seen[id] = 1;
		float *l = &s->cand[id].logit;
		*l = *l > 0 ? *l / r : *l * r;
	}
	for (int64_t k = 0; k < s->n_hist; k++)
		if (s->hist[k] >= 0 && s->hist[k] < s->n_vocab)
			s->seen[s->hist[k]] = 0;
}

/* Softmax of the first n candidates at temperature t into s->p. */
static void softmax(struct tfm_sampler *s, int64_t n, double t)
{
	double sum = 0, mx = s->cand[0].logit;
	for (int64_t i = 0; i < n; i++) {
		s->p[i] = exp(((double)s->cand[i].logit - mx) / t);
		sum += s->p[i];
	}
	for (int64_t i = 0; i < n; i++)
		s->p[i] /= sum;
}

/* Run the chain; the kept candidates are s->cand[0..n) with s->p. */
static int64_t chain(struct tfm_sampler *s, const float *logits)
{
	load(s, logits);
	int64_t n = s->n_vocab;
	if (s->o.temp <= 0) {
		int64_t best = 0;
		for (int64_t i = 1; i < n; i++)
			if (s->cand[i].logit > s->cand[best].logit)
				best = i;
		s->cand[0] = s->cand[best];
		s->p[0] = 1;
		return 1;
	}
	if (s->o.top_k > 0 && s->o.top_k < n) {
		/* Select, then sort only the k kept: O(V) rather than O(V log V). */
		select_k(s->cand, n, s->o.top_k);
		n = s->o.top_k;
	}
	qsort(s->cand, (size_t)n, sizeof(*s->cand), cand_cmp);
	if (s->o.top_p < 1) {
		softmax(s, n, 1.0);
		double cum = 0;
		int64_t m = n;
		for (int64_t i = 0; i < n; i++) {
			cum += s->p[i];
			if (cum >= s->o.top_p) {
				m = i + 1;
				break;
			}
		}
		n = m;
	}
	if (s->o.min_p > 0) {
		/* p_i >= min_p * p_max  <=>  l_i >= l_max + log(min_p) */
		double cut = (double)s->cand[0].logit + log(s->o.min_p);
		int64_t m = 1;
		while (m < n && (double)s->cand[m].logit >= cut)
			m++;
		n = m;
	}
	softmax(s, n, s->o.temp);
	return n;
}

int32_t tfm_sampler_sample(struct tfm_sampler *s, const float *logits)
{
	int64_t n = chain(s, logits);
	if (n == 1)
		return s->cand[0].id;
	double r = tfm_pcg32_double(&s->rng), cum = 0;
	for (int64_t i = 0; i < n; i++) {
		cum += s->p[i];
		if (r < cum)
			return s->cand[i].id;
	}
	return s->cand[n - 1].id; /* rounding left r above the last sum */
}

int64_t tfm_sampler_dist(struct tfm_sampler *s, const float *logits, int32_t *ids, float *probs)
{
	int64_t n = chain(s, logits);
	for (int64_t i = 0; i < n; i++) {
		ids[i] = s->cand[i].id;
		probs[i] = (float)s->p[i];
	}
	return n;
}
