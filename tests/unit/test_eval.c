/* test_eval.c: perplexity accumulators against hand-computed values. */
#include "t.h"
#include "eval/eval.h"

static void t_uniform(void)
{
	/* Uniform over 8: nll ln 8, entropy 3 bits, argmax id 0 (lowest). */
	float l[8] = { 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f };
	struct tfm_ppl_acc a;
	struct tfm_ppl_result r;
	tfm_ppl_init(&a);
	tfm_ppl_add(&a, l, 8, 3, 2);
	tfm_ppl_add(&a, l, 8, 0, 2);
	tfm_ppl_result(&a, &r);
	CHECK(r.tokens == 2);
	CHECK_CLOSE(r.nll, log(8.0), 1e-9, 0);
	CHECK_CLOSE(r.ppl, 8, 1e-8, 0);
	CHECK_CLOSE(r.nll_stderr, 0, 1e-9, 0);
	CHECK_CLOSE(r.bits_per_token, 3, 1e-9, 0);
	CHECK_CLOSE(r.bits_per_byte, 1.5, 1e-9, 0); /* 6 bits over 4 bytes */
	CHECK_CLOSE(r.entropy_bits, 3, 1e-9, 0);
	CHECK_CLOSE(r.top1, 0.5, 0, 0);
}

static void t_two_way(void)
{
	/* p = (1/4, 3/4): target 1 costs ln(4/3); H = -(.25 ln .25 + .75 ln .75). */
	float l[2] = { 0, logf(3.0f) };
	struct tfm_ppl_acc a;
	struct tfm_ppl_result r;
	tfm_ppl_init(&a);
	tfm_ppl_add(&a, l, 2, 1, 1);
	tfm_ppl_result(&a, &r);
	CHECK_CLOSE(r.nll, log(4.0 / 3.0), 1e-7, 0);
	double h = -(0.25 * log(0.25) + 0.75 * log(0.75));
	CHECK_CLOSE(r.entropy_bits, h / log(2.0), 1e-7, 0);
	CHECK(r.top1 == 1);
	/* Large logits do not overflow. */
	float big[3] = { 1000, 1000, -1000 };
	tfm_ppl_init(&a);
	tfm_ppl_add(&a, big, 3, 1, 1);
	tfm_ppl_result(&a, &r);
	CHECK_CLOSE(r.nll, log(2.0), 1e-9, 0);
	CHECK_CLOSE(r.entropy_bits, 1, 1e-9, 0);
}

static void t_stderr(void)
{
	/* nll 1 and 3: mean 2, E[x^2] - mean^2 = 5 - 4 = 1, se = sqrt(1 / 1) = 1,
	 * ppl e^2 +/- e^2 (llama-perplexity's formula). */
	struct tfm_ppl_acc a;
	struct tfm_ppl_result r;
	tfm_ppl_init(&a);
	tfm_ppl_add_values(&a, 1, 0.5, 0, 1);
	tfm_ppl_add_values(&a, 3, 1.5, 1, 3);
	tfm_ppl_result(&a, &r);
	CHECK_CLOSE(r.nll, 2, 1e-9, 0);
	CHECK_CLOSE(r.nll_stderr, 1, 1e-9, 0);
	CHECK_CLOSE(r.ppl, exp(2.0), 1e-9, 1e-12);
	CHECK_CLOSE(r.ppl_stderr, exp(2.0), 1e-9, 1e-12);
	CHECK_CLOSE(r.bits_per_byte, 4 / log(2.0) / 4, 1e-9, 0);
	CHECK_CLOSE(r.entropy_bits, 1 / log(2.0), 1e-9, 0);
	/* Four values 1, 2, 3, 4: mean 2.5, E[x^2] 7.5, var 1.25, se sqrt(1.25/3). */
	tfm_ppl_init(&a);
	for (int i = 1; i <= 4; i++)
		tfm_ppl_add_values(&a, i, 0, 0, 1);
	tfm_ppl_result(&a, &r);
	CHECK_CLOSE(r.nll_stderr, sqrt(1.25 / 3), 1e-9, 0);
	/* Nothing scored: zeros, no NaN. */
	tfm_ppl_init(&a);
	tfm_ppl_result(&a, &r);
	CHECK(r.tokens == 0 && r.ppl == 0 && r.nll_stderr == 0);
}

static int acc_eq(const struct tfm_ppl_acc *x, const struct tfm_ppl_acc *y)
{
	return x->n == y->n && x->n_top1 == y->n_top1 && x->n_bytes == y->n_bytes &&
	       x->nll == y->nll && x->nll2 == y->nll2 && x->ent == y->ent;
}

static void t_merge(void)
{
	/* Any split of the same tokens gives identical sums. */
	struct tfm_ppl_acc whole, p[3];
	tfm_ppl_init(&whole);
	for (int k = 0; k < 3; k++)
		tfm_ppl_init(&p[k]);
	for (int i = 0; i < 1000; i++) {
		double v = 0.1 + 7.3 * ((i * 7919) % 1000) / 1000.0;
		tfm_ppl_add_values(&whole, v, v / 3, i % 3 == 0, i % 5);
		tfm_ppl_add_values(&p[i % 3], v, v / 3, i % 3 == 0, i % 5);
	}
	struct tfm_ppl_acc m;
	tfm_ppl_init(&m);
	tfm_ppl_merge(&m, &p[2]);
	tfm_ppl_merge(&m, &p[0]);
	tfm_ppl_merge(&m, &p[1]);
	CHECK(acc_eq(&m, &whole));
	struct tfm_ppl_result r1, r2;
	tfm_ppl_result(&m, &r1);
	tfm_ppl_result(&whole, &r2);
	CHECK(memcmp(&r1, &r2, sizeof(r1)) == 0);

	/* JSON round trip, including values past 64 bits. */
	json_t *j = tfm_ppl_acc_to_json(&whole);
	CHECK(j != NULL);
	struct tfm_ppl_acc back;
	CHECK_OK(tfm_ppl_acc_from_json(&back, j));
	CHECK(acc_eq(&back, &whole));
	CHECK(whole.nll2 > (tfm_i128)INT64_MAX); /* the test reaches 128 bits */
	json_object_set_new(j, "nll_q32", json_string("12x"));
	CHECK_ST(tfm_ppl_acc_from_json(&back, j), TFM_E_FORMAT);
	json_object_set_new(j, "nll_q32", json_string("-5"));
	CHECK_OK(tfm_ppl_acc_from_json(&back, j));
	CHECK(back.nll == -5);
	json_object_del(j, "n");
	CHECK_ST(tfm_ppl_acc_from_json(&back, j), TFM_E_FORMAT);
	json_decref(j);
}

static const struct t_case t_cases[] = {
	{ "uniform", t_uniform }, { "two_way", t_two_way }, { "stderr", t_stderr },
	{ "merge", t_merge },
};
T_MAIN(t_cases)
