/* ppl.c: perplexity accumulators (see eval.h).  Values are rounded to
 * 2^-32 nats once, when a token is added; everything after is integer
 * arithmetic, which is what makes --shard/--merge exact. */
#include "tfm.h"
#include "eval/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCALE 4294967296.0 /* 2^32 */

void tfm_ppl_init(struct tfm_ppl_acc *a)
{
	memset(a, 0, sizeof(*a));
}

void tfm_ppl_add_values(struct tfm_ppl_acc *a, double nll, double entropy, int top1,
			int64_t n_bytes)
{
	int64_t q = llround(nll * SCALE);
	a->n++;
	a->n_top1 += top1 != 0;
	a->n_bytes += n_bytes;
	a->nll += q;
	a->nll2 += (tfm_i128)q * q;
	a->ent += llround(entropy * SCALE);
}

/* One position's NLL and entropy (nats), and whether the target is the
 * argmax.  One pass for the max (lowest index on ties, as the sampler's
 * argmax), one for Z and sum p*l; entropy H = log Z - E[l - max]. */
static void score(const float *logits, int64_t n_vocab, int32_t target, double *nll,
		  double *ent, int *top1)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n_vocab; i++)
		if (logits[i] > logits[best])
			best = i;
	double mx = logits[best], z = 0, pl = 0;
	for (int64_t i = 0; i < n_vocab; i++) {
		double d = (double)logits[i] - mx, e = exp(d);
		z += e;
		pl += e * d;
	}
	double logz = log(z);
	*nll = logz - ((double)logits[target] - mx);
	*ent = logz - pl / z;
	*top1 = best == target;
}

void tfm_ppl_add(struct tfm_ppl_acc *a, const float *logits, int64_t n_vocab,
		 int32_t target, int64_t n_bytes)
{
	double nll, ent;
	int top1;
	score(logits, n_vocab, target, &nll, &ent, &top1);
	tfm_ppl_add_values(a, nll, ent, top1, n_bytes);
}

struct rows_job {
	const float *logits;
	int64_t n, n_vocab;
	const int32_t *targets;
	double *nll, *ent;
	int *top1;
};

static void rows_task(void *ctx, int i, int n_tasks)
{
	struct rows_job *j = ctx;
	for (int64_t r = i; r < j->n; r += n_tasks)
		score(j->logits + r * j->n_vocab, j->n_vocab, j->targets[r], &j->nll[r], &j->ent[r],
		      &j->top1[r]);
}

int tfm_ppl_add_rows(struct tfm_ppl_acc *a, struct tfm_pool *pool, const float *logits,
		     int64_t n, int64_t n_vocab, const int32_t *targets, const int64_t *bytes)
{
	/* each row scored by one thread; the sums (integers) in row order */
	struct rows_job j = {.logits = logits, .n = n, .n_vocab = n_vocab, .targets = targets};
	j.nll = tfm_malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
	j.ent = tfm_malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
	j.top1 = tfm_malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	if (!j.nll || !j.ent || !j.top1) {
		free(j.nll), free(j.ent), free(j.top1);
		return TFM_E_NOMEM;
	}
	int nt = pool ? tfm_pool_size(pool) : 1;
	if (nt > 1 && n > 1)
		tfm_pool_run(pool, rows_task, &j, (int)(n < nt ? n : nt));
	else
		rows_task(&j, 0, 1);
	for (int64_t r = 0; r < n; r++)
		tfm_ppl_add_values(a, j.nll[r], j.ent[r], j.top1[r], bytes[r]);
	free(j.nll), free(j.ent), free(j.top1);
	return TFM_OK;
}

/* log sum_i exp(logits[i]), computed from the largest logit (whose lowest
 * index goes to *argmax when it is not NULL). */
static double log_sum_exp(const float *logits, int64_t n, int64_t *argmax)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	double mx = logits[best], z = 0;
	for (int64_t i = 0; i < n; i++)
		z += exp((double)logits[i] - mx);
	if (argmax)
		*argmax = best;
	return log(z) + mx;
}

void tfm_log_softmax(const float *logits, int64_t n_vocab, float *logp)
{
	double lz = log_sum_exp(logits, n_vocab, NULL);
	for (int64_t i = 0; i < n_vocab; i++)
		logp[i] = (float)((double)logits[i] - lz);
}

/* Is (la, ia) ranked before (lb, ib): higher log-probability, then lower id. */
static int before(double la, int32_t ia, double lb, int32_t ib)
{
	return la > lb || (la == lb && ia < ib);
}

void tfm_logprobs_make(const float *logits, int64_t n_vocab, int32_t target,
		       struct tfm_logprobs *r)
{
	memset(r, 0, sizeof(*r));
	double lz = log_sum_exp(logits, n_vocab, NULL);
	/* top K by insertion into a sorted list of at most K */
	int k = 0;
	for (int64_t i = 0; i < n_vocab; i++) {
		/* ranked by the stored (float) value, so ties stay ties */
		float l = (float)((double)logits[i] - lz);
		if (k == TFM_LOGPROBS_K && !before(l, (int32_t)i, r->logp[k - 1], r->id[k - 1]))
			continue;
		int j = k < TFM_LOGPROBS_K ? k++ : k - 1;
		while (j > 0 && before(l, (int32_t)i, r->logp[j - 1], r->id[j - 1])) {
			r->logp[j] = r->logp[j - 1];
			r->id[j] = r->id[j - 1];
			j--;
		}
		r->logp[j] = l;
		r->id[j] = (int32_t)i;
	}
	r->k = k;
	/* the rest's mass summed directly (1 - sum(top) loses it to rounding) */
	double rest = 0;
	for (int64_t i = 0; i < n_vocab; i++) {
		int in = 0;
		for (int j = 0; j < k && !in; j++)
			in = r->id[j] == i;
		if (!in)
			rest += exp((double)logits[i] - lz);
	}
	r->logp_rest = rest > 0 ? (float)log(rest) : -INFINITY;
	r->logp_target = (float)((double)logits[target] - lz);
}

double tfm_kl_add(struct tfm_ppl_acc *a, const struct tfm_logprobs *b, const float *logits,
		  int64_t n_vocab, int32_t target)
{
	int64_t mm;
	double lz = log_sum_exp(logits, n_vocab, &mm), kl = 0, top_m = 0;
	for (int j = 0; j < b->k; j++) {
		if (b->id[j] < 0 || b->id[j] >= n_vocab)
			continue; /* checked when the file is read */
		double lm = (double)logits[b->id[j]] - lz, lb = b->logp[j];
		top_m += exp(lm);
		if (lb > -700) /* p_base is 0 to double precision below */
			kl += exp(lb) * (lb - lm);
	}
	if (isfinite(b->logp_rest) && b->logp_rest > -700) {
		double rm = 1 - top_m;
		rm = rm > 1e-300 ? rm : 1e-300;
		kl += exp((double)b->logp_rest) * ((double)b->logp_rest - log(rm));
	}
	if (kl < 0)
		kl = 0; /* rounding when the two are equal */
	int64_t q = llround(kl * SCALE);
	double lt = (double)logits[target] - lz;
	int64_t d = llround((exp(lt) - exp((double)b->logp_target)) * SCALE);
	a->n_kl++;
	a->n_agree += b->k > 0 && b->id[0] == mm;
	a->kl += q;
	a->kl2 += (tfm_i128)q * q;
	a->kl_max = q > a->kl_max ? q : a->kl_max;
	a->dp += d;
	a->dp2 += (tfm_i128)d * d;
	a->nll_base += llround(-(double)b->logp_target * SCALE);
	return kl;
}

/* The range of a 128-bit sum that tfm_ppl_acc_from_json reads back. */
static int fits(tfm_i128 v)
{
	const tfm_i128 lim = (tfm_i128)1 << 126;
	return v < lim && v > -lim;
}

int tfm_ppl_merge(struct tfm_ppl_acc *dst, const struct tfm_ppl_acc *src)
{
	/* checked: sums read from shard files can be anything in range, and a
	 * wrapped sum would print as a plausible result */
	struct tfm_ppl_acc m = *dst;
	int ov = __builtin_add_overflow(m.n_kl, src->n_kl, &m.n_kl) ||
		 __builtin_add_overflow(m.n_agree, src->n_agree, &m.n_agree) ||
		 __builtin_add_overflow(m.kl, src->kl, &m.kl) ||
		 __builtin_add_overflow(m.kl2, src->kl2, &m.kl2) ||
		 __builtin_add_overflow(m.dp, src->dp, &m.dp) ||
		 __builtin_add_overflow(m.dp2, src->dp2, &m.dp2) ||
		 __builtin_add_overflow(m.nll_base, src->nll_base, &m.nll_base) ||
		 __builtin_add_overflow(m.n, src->n, &m.n) ||
		 __builtin_add_overflow(m.n_top1, src->n_top1, &m.n_top1) ||
		 __builtin_add_overflow(m.n_bytes, src->n_bytes, &m.n_bytes) ||
		 __builtin_add_overflow(m.nll, src->nll, &m.nll) ||
		 __builtin_add_overflow(m.nll2, src->nll2, &m.nll2) ||
		 __builtin_add_overflow(m.ent, src->ent, &m.ent);
	if (ov || !fits(m.kl) || !fits(m.kl2) || !fits(m.dp) || !fits(m.dp2) || !fits(m.nll_base) ||
	    !fits(m.nll) || !fits(m.nll2) || !fits(m.ent))
		return tfm_seterr(TFM_E_FORMAT, "partial results: merged sums overflow");
	m.kl_max = src->kl_max > m.kl_max ? src->kl_max : m.kl_max;
	*dst = m;
	return TFM_OK;
}

/* An i128 as a double: exact enough (53 bits) for means. */
static double i128_d(tfm_i128 v)
{
	return (double)v;
}

void tfm_ppl_result(const struct tfm_ppl_acc *a, struct tfm_ppl_result *r)
{
	memset(r, 0, sizeof(*r));
	r->tokens = a->n;
	if (a->n_kl > 0) {
		double nk = (double)a->n_kl;
		double km = i128_d(a->kl) / SCALE / nk;
		double kv = i128_d(a->kl2) / (SCALE * SCALE) / nk - km * km;
		r->kl_positions = a->n_kl;
		r->kld = km;
		r->kld_stderr = a->n_kl > 1 && kv > 0 ? sqrt(kv / (nk - 1)) : 0;
		r->top1_agree = (double)a->n_agree / nk;
		r->kld_max = (double)a->kl_max / SCALE;
		r->dp_mean = i128_d(a->dp) / SCALE / nk;
		r->dp_rms = sqrt(i128_d(a->dp2) / (SCALE * SCALE) / nk);
		/* the model's NLL over the same positions is the scored NLL: KL is
		 * measured at every scored position */
		if (a->n == a->n_kl)
			r->ln_ppl_ratio = (i128_d(a->nll) - i128_d(a->nll_base)) / SCALE / nk;
	}
	if (a->n == 0)
		return;
	double n = (double)a->n;
	double mean = i128_d(a->nll) / SCALE / n;
	double mean2 = i128_d(a->nll2) / (SCALE * SCALE) / n;
	double var = mean2 - mean * mean;
	r->nll = mean;
	r->nll_stderr = a->n > 1 && var > 0 ? sqrt(var / (n - 1)) : 0;
	r->ppl = exp(mean);
	r->ppl_stderr = r->ppl * r->nll_stderr;
	r->bits_per_token = mean / M_LN2;
	r->bits_per_byte = a->n_bytes > 0 ? i128_d(a->nll) / SCALE / M_LN2 / (double)a->n_bytes : 0;
	r->entropy_bits = i128_d(a->ent) / SCALE / n / M_LN2;
	r->top1 = (double)a->n_top1 / n;
}

static json_t *i128_json(tfm_i128 v)
{
	char buf[48], *p = buf + sizeof(buf);
	int neg = v < 0;
	unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
	*--p = 0;
	do {
		*--p = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u);
	if (neg)
		*--p = '-';
	return json_string(p);
}

static int i128_parse(const json_t *j, const char *key, tfm_i128 *out)
{
	const char *s = json_string_value(json_object_get(j, key));
	if (!s || !*s)
		return tfm_seterr(TFM_E_FORMAT, "partial result: %s missing", key);
	int neg = *s == '-';
	s += neg;
	unsigned __int128 u = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return tfm_seterr(TFM_E_FORMAT, "partial result: %s: not a number", key);
		unsigned __int128 next = u * 10 + (unsigned)(*s - '0');
		if (next / 10 != u)
			return tfm_seterr(TFM_E_FORMAT, "partial result: %s: out of range", key);
		u = next;
	}
	if (u >> 126)
		return tfm_seterr(TFM_E_FORMAT, "partial result: %s: out of range", key);
	*out = neg ? -(tfm_i128)u : (tfm_i128)u;
	return TFM_OK;
}

json_t *tfm_ppl_acc_to_json(const struct tfm_ppl_acc *a)
{
	json_t *j = json_pack("{sI sI sI so so so}", "n", (json_int_t)a->n, "n_top1",
			      (json_int_t)a->n_top1, "n_bytes", (json_int_t)a->n_bytes,
			      "nll_q32", i128_json(a->nll), "nll2_q64", i128_json(a->nll2),
			      "ent_q32", i128_json(a->ent));
	if (j && a->n_kl > 0) {
		json_object_set_new(j, "n_kl", json_integer(a->n_kl));
		json_object_set_new(j, "n_agree", json_integer(a->n_agree));
		json_object_set_new(j, "kl_q32", i128_json(a->kl));
		json_object_set_new(j, "kl2_q64", i128_json(a->kl2));
		json_object_set_new(j, "kl_max_q32", json_integer(a->kl_max));
		json_object_set_new(j, "dp_q32", i128_json(a->dp));
		json_object_set_new(j, "dp2_q64", i128_json(a->dp2));
		json_object_set_new(j, "nll_base_q32", i128_json(a->nll_base));
	}
	return j;
}

/* Can these sums be what tfm_ppl_add and tfm_kl_add produce?  Every term
 * added is >= 0 except dp (|dp| <= 1 per position), each sum of squares
 * bounds its sum (Cauchy-Schwarz: (sum q)^2 <= n sum q^2, with a rounding
 * slack of one q64 unit per position and position, n^2 q64, so that the
 * merge of shards that pass passes too: a fuzzer found two shards, each
 * within a fixed q64 slack, whose sum was not), no KL term is
 * above kl_max.  A shard file that
 * fails these was not written by tfm-ppl. */
static int acc_check(const struct tfm_ppl_acc *a)
{
	const double q32 = 4294967296.0, q64 = q32 * q32;
	const char *bad = NULL;
	double n = (double)a->n, nk = (double)a->n_kl;
	double nll = (double)a->nll, nll2 = (double)a->nll2, kl = (double)a->kl,
	       kl2 = (double)a->kl2, dp = (double)a->dp, dp2 = (double)a->dp2;
	if (a->nll < 0 || a->nll2 < 0 || a->ent < 0)
		bad = "negative nll or entropy sums";
	else if (nll * nll > n * nll2 * (1 + 1e-9) + fmax(1, n * n) * q64)
		bad = "nll2_q64 is smaller than nll_q32 allows";
	else if (a->kl < 0 || a->kl2 < 0 || a->nll_base < 0 || a->dp2 < 0)
		bad = "negative KL sums";
	else if (kl * kl > nk * kl2 * (1 + 1e-9) + fmax(1, nk * nk) * q64 ||
		 dp * dp > nk * dp2 * (1 + 1e-9) + fmax(1, nk * nk) * q64)
		bad = "sums of squares smaller than their sums allow";
	else if (fabs(dp) > nk * q32 + 1 || dp2 > nk * q64 * (1 + 1e-9) + 1)
		bad = "dp_q32 or dp2_q64 out of range (|dp| <= 1)";
	else if (kl > nk * (double)a->kl_max * (1 + 1e-9) + 1)
		bad = "kl_q32 above n_kl * kl_max_q32";
	if (bad)
		return tfm_seterr(TFM_E_FORMAT, "partial result: %s", bad);
	return TFM_OK;
}

int tfm_ppl_acc_from_json(struct tfm_ppl_acc *a, const json_t *j)
{
	tfm_ppl_init(a);
	json_t *n = json_object_get(j, "n"), *t = json_object_get(j, "n_top1"),
	       *b = json_object_get(j, "n_bytes");
	if (!json_is_integer(n) || !json_is_integer(t) || !json_is_integer(b))
		return tfm_seterr(TFM_E_FORMAT, "partial result: n, n_top1, n_bytes missing");
	a->n = json_integer_value(n);
	a->n_top1 = json_integer_value(t);
	a->n_bytes = json_integer_value(b);
	if (a->n < 0 || a->n_top1 < 0 || a->n_top1 > a->n || a->n_bytes < 0)
		return tfm_seterr(TFM_E_FORMAT, "partial result: bad counts");
	int st;
	if ((st = i128_parse(j, "nll_q32", &a->nll)) || (st = i128_parse(j, "nll2_q64", &a->nll2)) ||
	    (st = i128_parse(j, "ent_q32", &a->ent)))
		return st;
	if (a->nll2 < 0) /* a sum of squares */
		return tfm_seterr(TFM_E_FORMAT, "partial result: nll2_q64 is negative");
	json_t *nk = json_object_get(j, "n_kl"), *na = json_object_get(j, "n_agree");
	if (!nk)
		return acc_check(a);
	if (!json_is_integer(nk) || !json_is_integer(na) || json_integer_value(nk) < 0 ||
	    json_integer_value(na) < 0 || json_integer_value(na) > json_integer_value(nk))
		return tfm_seterr(TFM_E_FORMAT, "partial result: bad n_kl, n_agree");
	a->n_kl = json_integer_value(nk);
	a->n_agree = json_integer_value(na);
	if ((st = i128_parse(j, "kl_q32", &a->kl)) || (st = i128_parse(j, "kl2_q64", &a->kl2)) ||
	    (st = i128_parse(j, "dp_q32", &a->dp)) || (st = i128_parse(j, "dp2_q64", &a->dp2)) ||
	    (st = i128_parse(j, "nll_base_q32", &a->nll_base)))
		return st;
	if (a->kl < 0 || a->kl2 < 0 || a->dp2 < 0) /* KL is never negative; squares */
		return tfm_seterr(TFM_E_FORMAT, "partial result: negative kl_q32, kl2_q64 or dp2_q64");
	json_t *km = json_object_get(j, "kl_max_q32");
	if (!json_is_integer(km) || json_integer_value(km) < 0)
		return tfm_seterr(TFM_E_FORMAT, "partial result: bad kl_max_q32");
	a->kl_max = json_integer_value(km);
	return acc_check(a);
}
