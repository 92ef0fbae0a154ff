/* beam.c: transformers' logits processors and beam search (see beam.h).
 * The search follows generation/utils.py's _beam_search step by step for
 * one input: each step keeps the 2K best continuations of the K running
 * beams by summed log-probability; those that end (eos, or the length
 * limit) among the first K become finished hypotheses scored sum / len^lp
 * (len: new tokens, eos included), the K best of which are kept; the K
 * best that did not end run on.  The search stops when no running beam can
 * beat the worst finished one (early_stopping false: at the current
 * length; "never" with lp > 0: at the longest), when all K are finished
 * (early_stopping true), or when every continuation ended.  Sums in
 * double; transformers' in float32 (the fixtures keep margins of 1e-3). */
#include "model/model-impl.h"
#include "model/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NEG 1e9 /* transformers' -1e9 for scores that must not be chosen */

void tfm_gen_rules_apply(const struct tfm_gen_rules *r, const int32_t *seq, int64_t n,
			 float *scores, int64_t n_vocab)
{
	int64_t ng = r->no_repeat_ngram;
	if (ng > 0 && n + 1 >= ng) {
		/* the n-grams of seq whose first ng - 1 tokens are its last ng - 1:
		 * their last token is banned (fairseq's, as transformers) */
		const int32_t *tail = seq + n - (ng - 1);
		for (int64_t i = 0; i + ng <= n; i++)
			if (!memcmp(seq + i, tail, (size_t)(ng - 1) * sizeof *seq)) {
				int32_t t = seq[i + ng - 1];
				if (t >= 0 && t < n_vocab)
					scores[t] = -INFINITY;
			}
	}
	if (r->eos_id >= 0 && r->eos_id < n_vocab && n < r->min_len)
		scores[r->eos_id] = -INFINITY;
	int32_t force = -1;
	if (r->forced_bos >= 0 && n == 1)
		force = r->forced_bos;
	if (r->forced_eos >= 0 && r->max_len > 0 && n == r->max_len - 1)
		force = r->forced_eos;
	if (force >= 0 && force < n_vocab) {
		for (int64_t v = 0; v < n_vocab; v++)
			scores[v] = -INFINITY;
		scores[force] = 0;
	}
}

/* log_softmax of x[n] in place */
static void log_softmax(float *x, int64_t n)
{
	double mx = -INFINITY, sum = 0;
	for (int64_t i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	for (int64_t i = 0; i < n; i++)
		sum += exp((double)x[i] - mx);
	double lse = mx + log(sum);
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)((double)x[i] - lse);
}

/* idx[k] = the k best of v[n], best first (ties: the lower index first);
 * k <= n */
static void top_k(const double *v, int64_t n, int64_t *idx, int64_t k)
{
	for (int64_t j = 0; j < k; j++)
		idx[j] = -1;
	for (int64_t i = 0; i < n; i++) {
		if (idx[k - 1] >= 0 && !(v[i] > v[idx[k - 1]]))
			continue;
		int64_t j = k - 1;
		while (j > 0 && (idx[j - 1] < 0 || v[i] > v[idx[j - 1]])) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
}

int tfm_beam_search(struct tfm_ctx **c, const int32_t *seq, int64_t n, const float *logits,
		    const struct tfm_beam_opts *o, int32_t *out, int64_t *n_out, double *score)
{
	const struct tfm_spec *s = &c[0]->m->spec;
	int64_t K = o->n_beams, V = s->n_vocab, K2 = 2 * K, L = o->rules.max_len;
	int32_t eos = o->rules.eos_id;
	*n_out = 0;
	if (K < 1 || K > 256 || V < K2 || L <= n || n < 1)
		return tfm_seterr(TFM_E_INVAL, "beam search: %lld beams, a vocabulary of %lld, "
				  "length %lld of at most %lld", (long long)K, (long long)V,
				  (long long)n, (long long)L);
	/* running beams and finished hypotheses: [K][L] ids; candidates [2K][L] */
	int32_t *run = tfm_malloc((size_t)(K * L) * sizeof *run);
	int32_t *fin = tfm_malloc((size_t)(K * L) * sizeof *fin);
	int32_t *cand = tfm_malloc((size_t)(K2 * L) * sizeof *cand);
	int32_t *tmp = tfm_malloc((size_t)(K * L) * sizeof *tmp);
	float *lp = tfm_malloc((size_t)(K * V) * sizeof *lp);
	double *acc = tfm_malloc((size_t)(K * V) * sizeof *acc);
	double rs[K], fs[K], cs[K2], merged[3 * K], runsc[K2], fs2[K];
	int64_t flen[K], flen2[K], ci[K2], ri[K], mi[K], bctx[K], nctx[K], cparent[K2];
	int ff[K], ff2[K], hits[K2], taken[K], used[K];
	int st = TFM_OK;
	if (!run || !fin || !cand || !tmp || !lp || !acc) {
		st = TFM_E_NOMEM;
		goto out;
	}
	for (int64_t b = 0; b < K; b++) {
		memcpy(run + b * L, seq, (size_t)n * sizeof *seq);
		memcpy(lp + b * V, logits, (size_t)V * sizeof *lp); /* the beams start alike */
		rs[b] = b ? -NEG : 0;
		fs[b] = -NEG, ff[b] = 0, flen[b] = 0;
		bctx[b] = 0; /* every beam is c[0]'s state */
	}
	int heur = 1; /* improvement possible (is_early_stop_heuristic_unsatisfied) */
	for (int64_t cur = n;; cur++) {
		for (int64_t b = 0; b < K; b++) {
			float *l = lp + b * V;
			log_softmax(l, V);
			tfm_gen_rules_apply(&o->rules, run + b * L, cur, l, V);
			for (int64_t v = 0; v < V; v++)
				acc[b * V + v] = (double)l[v] + rs[b];
		}
		top_k(acc, K * V, ci, K2);
		int all_hit = 1;
		for (int64_t i = 0; i < K2; i++) {
			int64_t p = ci[i] / V;
			int32_t t = (int32_t)(ci[i] % V);
			memcpy(cand + i * L, run + p * L, (size_t)cur * sizeof *cand);
			cand[i * L + cur] = t;
			cparent[i] = p;
			cs[i] = acc[ci[i]];
			hits[i] = (eos >= 0 && t == eos) || cur + 1 >= L;
			all_hit &= hits[i];
			runsc[i] = cs[i] - (hits[i] ? NEG : 0);
		}
		/* the K best that did not end run on */
		top_k(runsc, K2, ri, K);
		/* finished: the old K and the candidates that ended among the
		 * first K, scored by length, K best kept */
		int all_fin = 1;
		for (int64_t b = 0; b < K; b++)
			all_fin &= ff[b];
		double pen = pow((double)(cur + 1 - n), o->length_penalty);
		for (int64_t b = 0; b < K; b++)
			merged[b] = fs[b];
		for (int64_t i = 0; i < K2; i++) {
			double v = cs[i] / pen;
			if (all_fin && o->early_stopping == 1)
				v -= NEG;
			if (!heur)
				v -= NEG;
			if (!(hits[i] && i < K))
				v -= NEG;
			merged[K + i] = v;
		}
		top_k(merged, 3 * K, mi, K);
		for (int64_t b = 0; b < K; b++) {
			int64_t j = mi[b];
			fs2[b] = merged[j];
			if (j < K) {
				memcpy(tmp + b * L, fin + j * L, (size_t)flen[j] * sizeof *tmp);
				ff2[b] = ff[j], flen2[b] = flen[j];
			} else {
				memcpy(tmp + b * L, cand + (j - K) * L + n, (size_t)(cur + 1 - n) * sizeof *tmp);
				ff2[b] = hits[j - K] && j - K < K, flen2[b] = cur + 1 - n;
			}
		}
		for (int64_t b = 0; b < K; b++) {
			memcpy(fin + b * L, tmp + b * L, (size_t)flen2[b] * sizeof *fin);
			fs[b] = fs2[b], ff[b] = ff2[b], flen[b] = flen2[b];
		}
		/* the early-stop heuristic at the new length */
		double best = runsc[ri[0]];
		double hl = o->early_stopping == 2 && o->length_penalty > 0 ? (double)(L - n)
									      : (double)(cur + 1 - n);
		double worst = INFINITY;
		all_fin = 1;
		for (int64_t b = 0; b < K; b++) {
			worst = fs[b] < worst ? fs[b] : worst;
			all_fin &= ff[b];
		}
		if (!all_fin)
			worst = -NEG;
		heur = heur && best / pow(hl, o->length_penalty) > worst;
		if (!heur || (all_fin && o->early_stopping == 1) || all_hit)
			break;
		/* the new running beams: a parent's context goes to its first
		 * child, its other children get copies (all made before any
		 * context moves on) */
		for (int64_t b = 0; b < K; b++)
			taken[b] = used[b] = 0;
		for (int64_t j = 0; j < K; j++) {
			int64_t pc = bctx[cparent[ri[j]]];
			nctx[j] = -1;
			if (!taken[pc]) {
				taken[pc] = 1;
				nctx[j] = pc;
				used[pc] = 1;
			}
		}
		for (int64_t j = 0; j < K && !st; j++) {
			if (nctx[j] >= 0)
				continue;
			int64_t f = 0;
			while (used[f])
				f++;
			used[f] = 1;
			nctx[j] = f;
			st = tfm_ctx_copy(c[f], c[bctx[cparent[ri[j]]]]);
		}
		if (st)
			goto out;
		for (int64_t j = 0; j < K; j++) {
			memcpy(tmp + j * L, cand + ri[j] * L, (size_t)(cur + 1) * sizeof *tmp);
			rs[j] = runsc[ri[j]];
		}
		memcpy(run, tmp, (size_t)(K * L) * sizeof *run);
		for (int64_t j = 0; j < K; j++) {
			bctx[j] = nctx[j];
			if ((st = tfm_eval(c[bctx[j]], run + j * L + cur, 1, lp + j * V, 0)))
				goto out;
		}
	}
	memcpy(out, fin, (size_t)flen[0] * sizeof *out);
	*n_out = flen[0];
	*score = fs[0];
out:
	free(run), free(fin), free(cand), free(tmp), free(lp), free(acc);
	return st;
}
