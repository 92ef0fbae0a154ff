/* test_sampler.c: the sampler against hand-computed distributions and the
 * PCG32 reference stream (O'Neill's pcg32-demo, seed 42, sequence 54). */
#include "t.h"
#include "text/sampler.h"

static void opts_off(struct tfm_sampler_opts *o, double temp)
{
	tfm_sampler_opts_default(o);
	o->temp = temp;
	o->top_k = 0;
	o->top_p = 1;
	o->min_p = 0;
	o->repeat_penalty = 1;
}

static void t_pcg32(void)
{
	static const uint32_t want[6] = { 0xa15c02b7, 0x7b47f409, 0xba1d3330,
					  0x83d2f293, 0xbfa4784b, 0xcbed606e };
	struct tfm_pcg32 r;
	tfm_pcg32_seed(&r, 42, 54);
	for (int i = 0; i < 6; i++)
		CHECK_MSG(tfm_pcg32_next(&r) == want[i], "output %d", i);
	tfm_pcg32_seed(&r, 7, 1);
	double lo = 1, hi = 0, sum = 0;
	for (int i = 0; i < 100000; i++) {
		double u = tfm_pcg32_double(&r);
		lo = u < lo ? u : lo;
		hi = u > hi ? u : hi;
		sum += u;
	}
	CHECK(lo >= 0 && hi < 1);
	CHECK_CLOSE(sum / 100000, 0.5, 0.005, 0);
}

static void t_greedy(void)
{
	struct tfm_sampler_opts o;
	opts_off(&o, 0);
	struct tfm_sampler *s;
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	float l[4] = { 1, 3, 2, 3 };
	CHECK(tfm_sampler_sample(s, l) == 1); /* tie between 1 and 3: lowest id */
	CHECK(tfm_argmax(l, 4) == 1);
	float l2[4] = { -5, -4, -1, -2 };
	CHECK(tfm_sampler_sample(s, l2) == 2);
	int32_t ids[4];
	float p[4];
	CHECK(tfm_sampler_dist(s, l2, ids, p) == 1 && ids[0] == 2 && p[0] == 1);
	tfm_sampler_free(s);
}

static void t_penalty(void)
{
	/* llama.cpp: positive logits divided by r, negative multiplied, once per
	 * distinct token of the last N.  [2, -1, 1.5, 0] with r 2 over {0, 1, 0}:
	 * [1, -2, 1.5, 0] -> argmax 2. */
	struct tfm_sampler_opts o;
	opts_off(&o, 0);
	o.repeat_penalty = 2;
	o.repeat_last_n = 3;
	struct tfm_sampler *s;
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	float l[4] = { 2, -1, 1.5f, 0 };
	CHECK(tfm_sampler_sample(s, l) == 0);
	tfm_sampler_accept(s, 0);
	tfm_sampler_accept(s, 1);
	tfm_sampler_accept(s, 0);
	CHECK(tfm_sampler_sample(s, l) == 2);
	/* With temperature 1 and nothing else: softmax of [1, -2, 1.5, 0]. */
	tfm_sampler_free(s);
	o.temp = 1;
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	tfm_sampler_accept(s, 0);
	tfm_sampler_accept(s, 1);
	int32_t ids[4];
	float p[4];
	CHECK(tfm_sampler_dist(s, l, ids, p) == 4);
	double e[4] = { exp(1.5), exp(1.0), exp(0.0), exp(-2.0) };
	double z = e[0] + e[1] + e[2] + e[3];
	CHECK(ids[0] == 2 && ids[1] == 0 && ids[2] == 3 && ids[3] == 1);
	for (int i = 0; i < 4; i++)
		CHECK_CLOSE(p[i], e[i] / z, 1e-6, 0);
	/* The window slides: after 3 more tokens of id 3, 0 and 1 are out. */
	tfm_sampler_accept(s, 3);
	tfm_sampler_accept(s, 3);
	tfm_sampler_accept(s, 3);
	CHECK(tfm_sampler_dist(s, l, ids, p) == 4);
	CHECK(ids[0] == 0 && ids[1] == 2 && ids[2] == 3 && ids[3] == 1);
	tfm_sampler_reset(s);
	CHECK(tfm_sampler_dist(s, l, ids, p) == 4 && ids[0] == 0 && ids[3] == 1);
	tfm_sampler_free(s);
}

static void t_filters(void)
{
	/* Probabilities 0.5, 0.3, 0.15, 0.05 as logits (ids shuffled). */
	float l[4] = { logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f) };
	struct tfm_sampler_opts o;
	struct tfm_sampler *s;
	int32_t ids[4];
	float p[4];

	opts_off(&o, 1);
	o.top_k = 2; /* keep 0.5, 0.3 -> 0.625, 0.375 */
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK(tfm_sampler_dist(s, l, ids, p) == 2);
	CHECK(ids[0] == 1 && ids[1] == 3);
	CHECK_CLOSE(p[0], 0.625, 1e-6, 0);
	CHECK_CLOSE(p[1], 0.375, 1e-6, 0);
	tfm_sampler_free(s);

	opts_off(&o, 1);
	o.top_p = 0.85; /* 0.5, 0.8, 0.95 >= 0.85: keep three */
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK(tfm_sampler_dist(s, l, ids, p) == 3);
	CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 0);
	CHECK_CLOSE(p[0], 0.5 / 0.95, 1e-6, 0);
	CHECK_CLOSE(p[2], 0.15 / 0.95, 1e-6, 0);
	tfm_sampler_free(s);

	opts_off(&o, 1);
	o.top_p = 0.5; /* the first alone reaches 0.5 */
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK(tfm_sampler_dist(s, l, ids, p) == 1 && ids[0] == 1);
	CHECK(tfm_sampler_sample(s, l) == 1);
	tfm_sampler_free(s);

	opts_off(&o, 1);
	o.min_p = 0.25; /* p >= 0.125: 0.5, 0.3, 0.15 */
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK(tfm_sampler_dist(s, l, ids, p) == 3);
	CHECK_CLOSE(p[1], 0.3 / 0.95, 1e-6, 0);
	tfm_sampler_free(s);

	opts_off(&o, 0.5); /* p^2 normalised: .25 .09 .0225 .0025 / .365 */
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK(tfm_sampler_dist(s, l, ids, p) == 4);
	CHECK_CLOSE(p[0], 0.25 / 0.365, 1e-6, 0);
	CHECK_CLOSE(p[1], 0.09 / 0.365, 1e-6, 0);
	CHECK_CLOSE(p[3], 0.0025 / 0.365, 1e-6, 0);
	tfm_sampler_free(s);

	/* Chain order: top-k 3 first (0.5 .3 .15 -> renormalised 0.526 .316
	 * .158), then top-p 0.8 on that: 0.526, 0.842 -> two kept. */
	opts_off(&o, 1);
	o.top_k = 3;
	o.top_p = 0.8;
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK(tfm_sampler_dist(s, l, ids, p) == 2);
	tfm_sampler_free(s);
}

/* Top-k over a large vocabulary with many ties: the kept ids are the k
 * best by (logit desc, id asc), found here by k rounds of plain argmax. */
static void t_topk_select(void)
{
	enum { V = 5000, K = 37 };
	static float l[V], work[V];
	static int32_t ids[V];
	static float p[V];
	struct tfm_pcg32 r;
	tfm_pcg32_seed(&r, 5, 5);
	struct tfm_sampler_opts o;
	opts_off(&o, 1);
	o.top_k = K;
	struct tfm_sampler *s;
	CHECK_OK(tfm_sampler_new(&s, V, &o));
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < V; i++)
			l[i] = (float)(tfm_pcg32_next(&r) % 50); /* ~100 ties per value */
		memcpy(work, l, sizeof(l));
		CHECK(tfm_sampler_dist(s, l, ids, p) == K);
		int ok = 1;
		for (int k = 0; k < K; k++) {
			int32_t best = tfm_argmax(work, V);
			ok &= ids[k] == best;
			work[best] = -1e30f;
		}
		CHECK_MSG(ok, "round %d", round);
	}
	tfm_sampler_free(s);
}

static void t_draws(void)
{
	float l[4] = { logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f) };
	struct tfm_sampler_opts o;
	opts_off(&o, 1);
	o.seed = 1234;
	struct tfm_sampler *s, *s2;
	CHECK_OK(tfm_sampler_new(&s, 4, &o));
	CHECK_OK(tfm_sampler_new(&s2, 4, &o));
	int n = 200000, count[4] = { 0 }, same = 1;
	for (int i = 0; i < n; i++) {
		int32_t a = tfm_sampler_sample(s, l), b = tfm_sampler_sample(s2, l);
		same &= a == b;
		count[a]++;
	}
	CHECK(same); /* same seed, same stream */
	CHECK_CLOSE(count[0] / (double)n, 0.15, 0.005, 0);
	CHECK_CLOSE(count[1] / (double)n, 0.50, 0.005, 0);
	CHECK_CLOSE(count[2] / (double)n, 0.05, 0.005, 0);
	CHECK_CLOSE(count[3] / (double)n, 0.30, 0.005, 0);
	tfm_sampler_free(s2);
	o.seed = 1235;
	CHECK_OK(tfm_sampler_new(&s2, 4, &o));
	int differ = 0;
	for (int i = 0; i < 100; i++)
		differ += tfm_sampler_sample(s, l) != tfm_sampler_sample(s2, l);
	CHECK(differ > 0);
	tfm_sampler_free(s);
	tfm_sampler_free(s2);
}

static void t_logprob(void)
{
	float l[3] = { 0, logf(3.0f), 1000 };
	CHECK_CLOSE(tfm_logprob(l, 2, 0), log(0.25), 1e-6, 0);
	CHECK_CLOSE(tfm_logprob(l, 2, 1), log(0.75), 1e-6, 0);
	CHECK_CLOSE(tfm_logprob(l, 3, 2), 0, 1e-9, 0); /* no overflow */
	struct tfm_sampler *s;
	struct tfm_sampler_opts o;
	opts_off(&o, 1);
	CHECK_ST(tfm_sampler_new(&s, 0, &o), TFM_E_INVAL);
}

static const struct t_case t_cases[] = {
	{ "pcg32", t_pcg32 },     { "greedy", t_greedy }, { "penalty", t_penalty },
	{ "filters", t_filters }, { "draws", t_draws },
	{ "topk_select", t_topk_select },   { "logprob", t_logprob },
};
T_MAIN(t_cases)
