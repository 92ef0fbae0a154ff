/* run.c: timed runs for tfm-bench.  Whole models (prefill and decode from an
 * empty context, random token ids from a fixed seed, as llama-bench's pp and
 * tg tests) and the attention kernel of a backend alone. */
#include "tfm.h"
#include "bench/bench.h"
#include "kernels/backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* One timed run: tokens/s of the prompt and generated tokens (tok: the
 * depth's tokens, then the prompt's, then the generated ones); an encoder
 * (enc 1) reads the prompt as one sequence, or r->n_seq of them side by side
 * (embeddings of d floats); an encoder-decoder (enc 2) see below. */
static int model_once(struct tfm_ctx *c, int64_t d, int enc, const int32_t *tok,
		      const struct tfm_bench_run *r, float *logits, double *tps)
{
	int st;
	tfm_ctx_reset(c);
	if (enc == 2) {
		/* encoder-decoder: pp is the encoder over a source of n_prompt
		 * tokens; tg the decoder's steps over a source of n_depth tokens
		 * (at least 1) encoded beforehand, untimed */
		if (r->n_prompt > 0 && r->n_gen > 0)
			return tfm_seterr(TFM_E_UNSUPPORTED, "bench: an encoder-decoder model: a "
					  "prompt (encoder) or a generation (decoder) test, not both");
		if (r->n_prompt > 0) {
			double t0 = tfm_bench_now();
			if ((st = tfm_seq2seq_encode(c, tok + r->n_depth, r->n_prompt, NULL)))
				return st;
			double dt = tfm_bench_now() - t0;
			*tps = dt > 0 ? (double)r->n_prompt / dt : 0;
			return TFM_OK;
		}
		if ((st = tfm_seq2seq_encode(c, tok, r->n_depth > 0 ? r->n_depth : 1, NULL)))
			return st;
		double t0 = tfm_bench_now();
		for (int64_t i = 0; i < r->n_gen; i++)
			if ((st = tfm_eval(c, tok + r->n_depth + i, 1, logits, 0)))
				return st;
		double dt = tfm_bench_now() - t0;
		*tps = dt > 0 ? (double)r->n_gen / dt : 0;
		return TFM_OK;
	}
	if (enc) {
		/* one sequence, the hidden states (no LM head) */
		if (r->n_depth > 0 || r->n_gen > 0 || r->n_prompt < 1)
			return tfm_seterr(TFM_E_UNSUPPORTED, "bench: an encoder-only model reads one "
					  "whole sequence: a prompt test only");
		if (r->n_seq > 1) { /* n_seq sequences side by side: their embeddings */
			int64_t ns = r->n_seq;
			int64_t *len = tfm_malloc((size_t)ns * sizeof *len);
			float *out = tfm_malloc((size_t)(ns * d) * sizeof *out);
			for (int64_t i = 0; len && i < ns; i++)
				len[i] = r->n_prompt;
			double t0 = tfm_bench_now();
			st = len && out ? tfm_embed_batch(c, tok, NULL, len, ns, TFM_POOL_NONE, -1, out)
					: TFM_E_NOMEM;
			double dt = tfm_bench_now() - t0;
			free(len);
			free(out);
			*tps = dt > 0 ? (double)(ns * r->n_prompt) / dt : 0;
			return st;
		}
		double t0 = tfm_bench_now();
		if ((st = tfm_eval(c, tok, r->n_prompt, NULL, 0)))
			return st;
		double dt = tfm_bench_now() - t0;
		*tps = dt > 0 ? (double)r->n_prompt / dt : 0;
		return TFM_OK;
	}
	if (r->n_depth > 0 && (st = tfm_eval(c, tok, r->n_depth, logits, 0)))
		return st;
	tok += r->n_depth;
	double t0 = tfm_bench_now();
	if (r->n_prompt > 0 && (st = tfm_eval(c, tok, r->n_prompt, logits, 0)))
		return st;
	tok += r->n_prompt;
	for (int64_t i = 0; i < r->n_gen; i++)
		if ((st = tfm_eval(c, tok + i, 1, logits, 0)))
			return st;
	double dt = tfm_bench_now() - t0;
	int64_t n = r->n_prompt + r->n_gen;
	*tps = dt > 0 ? (double)n / dt : 0;
	return TFM_OK;
}

int tfm_bench_model(struct tfm_model *m, struct tfm_bench_run *r)
{
	const struct tfm_spec *s = tfm_model_spec(m);
	struct tfm_ctx *c = NULL;
	int st;
	if (r->n_prompt < 0 || r->n_gen < 0 || r->n_depth < 0 || r->n_prompt + r->n_gen < 1 ||
	    r->reps < 1)
		return tfm_seterr(TFM_E_INVAL, "bench: a prompt or generation, and reps >= 1");
	int enc = s->family == TFM_FAMILY_ENCODER ? 1 : s->family == TFM_FAMILY_ENCDEC ? 2 : 0;
	int64_t seqs = enc == 1 && r->n_seq > 1 ? r->n_seq : 1;
	int64_t n = r->n_depth + r->n_prompt * seqs + r->n_gen + (enc == 2);
	int32_t *tok = tfm_malloc((size_t)n * sizeof *tok);
	float *logits = tfm_malloc((size_t)s->n_vocab * sizeof *logits);
	if (!tok || !logits) {
		st = TFM_E_NOMEM;
		goto out;
	}
	uint64_t seed = 42;
	for (int64_t i = 0; i < n; i++)
		tok[i] = (int32_t)(lcg(&seed) % (uint64_t)s->n_vocab);
	if ((st = seqs > 1 ? tfm_ctx_new_batch(&c, m, r->n_prompt, n) : tfm_ctx_new(&c, m, n)))
		goto out;
	double warm;
	if ((st = model_once(c, s->n_embd, enc, tok, r, logits, &warm)))
		goto out;
	for (int i = 0; i < r->reps; i++)
		if ((st = model_once(c, s->n_embd, enc, tok, r, logits, &r->samples[i])))
			goto out;
out:
	tfm_ctx_free(c);
	free(tok);
	free(logits);
	return st;
}

int tfm_bench_attn_time(const struct tfm_backend *be, const struct tfm_bench_attn *a,
			double *seconds)
{
	struct tfm_kexec k = {0};
	int64_t vd = a->v_dim ? a->v_dim : a->head_dim;
	int64_t ns = a->ctx, nt = a->n_tok;
	int st;
	*seconds = 0;
	if (a->n_head <= 0 || a->n_head_kv <= 0 || a->n_head % a->n_head_kv || a->head_dim <= 0 ||
	    nt < 1 || nt > ns || (a->v_from_k && vd > a->head_dim))
		return tfm_seterr(TFM_E_INVAL, "attention: bad shape (heads %lld, kv heads %lld, "
				  "head dim %lld, %lld of %lld tokens)", (long long)a->n_head,
				  (long long)a->n_head_kv, (long long)a->head_dim, (long long)nt,
				  (long long)ns);
	size_t nk = (size_t)(ns * a->n_head_kv * a->head_dim), nv = (size_t)(ns * a->n_head_kv * vd);
	size_t nq = (size_t)(nt * a->n_head * a->head_dim), no = (size_t)(nt * a->n_head * vd);
	int64_t max_in = a->n_head * (a->head_dim > vd ? a->head_dim : vd);
	float *kc = tfm_amalloc(nk * sizeof(float)), *vc = tfm_amalloc(nv * sizeof(float));
	float *q = tfm_amalloc(nq * sizeof(float)), *out = tfm_amalloc(no * sizeof(float));
	if (!kc || !vc || !q || !out) {
		st = tfm_adderr(TFM_E_NOMEM, "attention cache of %lld positions", (long long)ns);
		goto done;
	}
	uint64_t seed = 7;
	/* values in [-1, 1); the layout (backend specific) does not matter for
	 * the time, every slot is random */
	for (size_t i = 0; i < nk; i++)
		kc[i] = (float)lcg(&seed) / (float)(1ull << 30) - 1.0f;
	for (size_t i = 0; i < nv; i++)
		vc[i] = (float)lcg(&seed) / (float)(1ull << 30) - 1.0f;
	for (size_t i = 0; i < nq; i++)
		q[i] = (float)lcg(&seed) / (float)(1ull << 30) - 1.0f;
	if ((st = tfm_pool_new(&k.pool, a->n_threads > 0 ? a->n_threads : tfm_ncpu())))
		goto done;
	k.n_tasks = tfm_pool_size(k.pool);
	k.scratch_per_task = (be->scratch_need(max_in, ns) + 15) & ~(size_t)15;
	k.par_min = 1 << 17; /* as the executor sets it */
	k.scratch = tfm_amalloc(k.scratch_per_task * (size_t)k.n_tasks * sizeof(float));
	if (!k.scratch) {
		st = TFM_E_NOMEM;
		goto done;
	}
	struct tfm_attn_args aa = {
		.n_tok = nt, .pos0 = ns - nt, .n_head = a->n_head, .n_head_kv = a->n_head_kv,
		.head_dim = a->head_dim, .v_dim = vd, .n_slots = ns, .window = a->window,
		.scale = 1.0f / sqrtf((float)a->head_dim), .v_from_k = a->v_from_k,
	};
	/* warm-up (caches, threads); a call that takes min_s already is its
	 * own measurement (the scalar reference at long contexts) */
	double t0 = tfm_bench_now(), dt;
	be->attn(&k, out, q, kc, vc, &aa);
	dt = tfm_bench_now() - t0;
	if (dt >= a->min_s) {
		*seconds = dt;
		goto done;
	}
	int reps = 0;
	t0 = tfm_bench_now();
	do {
		be->attn(&k, out, q, kc, vc, &aa);
		reps++;
		dt = tfm_bench_now() - t0;
	} while (dt < a->min_s && reps < (a->max_reps > 0 ? a->max_reps : 1000000));
	*seconds = dt / reps;
done:
	tfm_pool_free(k.pool);
	tfm_afree(k.scratch);
	tfm_afree(kc);
	tfm_afree(vc);
	tfm_afree(q);
	tfm_afree(out);
	return st;
}
