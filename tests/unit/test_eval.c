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
	json_object_set_new(j, "nll_q32", json_string("-5")); /* no NLL is negative */
	CHECK_ST(tfm_ppl_acc_from_json(&back, j), TFM_E_FORMAT);
	json_object_set_new(j, "nll_q32", json_string("5")); /* 5^2 <= n * nll2 */
	CHECK_OK(tfm_ppl_acc_from_json(&back, j));
	CHECK(back.nll == 5);
	json_object_del(j, "n");
	CHECK_ST(tfm_ppl_acc_from_json(&back, j), TFM_E_FORMAT);
	json_decref(j);
}

/* tfm_ppl_add_rows on a pool of 3 gives the sums of tfm_ppl_add row by row */
static void t_rows(void)
{
	enum { N = 11, V = 37 };
	float lg[N * V];
	int32_t tgt[N];
	int64_t bytes[N];
	for (int i = 0; i < N * V; i++)
		lg[i] = (float)((i * 7919) % 211) / 13.0f - 8.0f;
	for (int r = 0; r < N; r++)
		tgt[r] = (r * 5) % V, bytes[r] = r % 4;
	struct tfm_ppl_acc one, rows, none;
	tfm_ppl_init(&one), tfm_ppl_init(&rows), tfm_ppl_init(&none);
	for (int r = 0; r < N; r++)
		tfm_ppl_add(&one, lg + r * V, V, tgt[r], bytes[r]);
	struct tfm_pool *pool = NULL;
	CHECK_OK(tfm_pool_new(&pool, 3));
	CHECK_OK(tfm_ppl_add_rows(&rows, pool, lg, N, V, tgt, bytes));
	CHECK(acc_eq(&rows, &one));
	CHECK(rows.n == N);
	tfm_ppl_init(&rows);
	CHECK_OK(tfm_ppl_add_rows(&rows, NULL, lg, N, V, tgt, bytes));
	CHECK(acc_eq(&rows, &one));
	CHECK_OK(tfm_ppl_add_rows(&none, pool, lg, 0, V, tgt, bytes));
	CHECK(none.n == 0);
	tfm_pool_free(pool);
}

/* KL from a base record built of the base's logits. */
static double kl_of(struct tfm_ppl_acc *a, const float *base_lg, const float *model_lg,
		    int64_t n, int32_t target)
{
	struct tfm_logprobs rec;
	tfm_logprobs_make(base_lg, n, target, &rec);
	return tfm_kl_add(a, &rec, model_lg, n, target);
}

static void t_kl(void)
{
	struct tfm_ppl_acc a;
	struct tfm_ppl_result r;
	float lg[3] = { 1, 2, 3 }, lp[3];
	tfm_ppl_init(&a);
	tfm_log_softmax(lg, 3, lp);
	double z = exp(1.0) + exp(2.0) + exp(3.0);
	CHECK_CLOSE(lp[0], 1 - log(z), 1e-6, 0);
	CHECK_CLOSE(lp[2], 3 - log(z), 1e-6, 0);
	/* the record: sorted descending, target's log-prob, nothing left over */
	struct tfm_logprobs rec;
	tfm_logprobs_make(lg, 3, 0, &rec);
	CHECK(rec.k == 3 && rec.id[0] == 2 && rec.id[1] == 1 && rec.id[2] == 0);
	CHECK_CLOSE(rec.logp[0], 3 - log(z), 1e-6, 0);
	CHECK_CLOSE(rec.logp_target, 1 - log(z), 1e-6, 0);
	CHECK(isinf(rec.logp_rest) && rec.logp_rest < 0);
	kl_of(&a, lg, lg, 3, 0); /* same distribution: 0, argmax agrees */
	tfm_ppl_result(&a, &r);
	CHECK(r.kl_positions == 1);
	CHECK_CLOSE(r.kld, 0, 1e-7, 0);
	CHECK_CLOSE(r.dp_mean, 0, 1e-7, 0);
	CHECK(r.top1_agree == 1);
	/* base (1/2, 1/2), model (1/4, 3/4): 0.5 ln 2 + 0.5 ln(2/3) = 0.5 ln(4/3);
	 * base argmax 0 (tie: lowest), model 1.  Target 0: dp = 1/4 - 1/2. */
	float base[2] = { 0, 0 }, model[2] = { 0, logf(3.0f) };
	tfm_ppl_init(&a);
	kl_of(&a, base, model, 2, 0);
	tfm_ppl_result(&a, &r);
	CHECK_CLOSE(r.kld, 0.5 * log(4.0 / 3.0), 1e-7, 0);
	CHECK(r.top1_agree == 0);
	CHECK_CLOSE(r.dp_mean, -0.25, 1e-7, 0);
	/* Reverse direction differs: 0.25 ln(1/2) + 0.75 ln(3/2).  Target 1:
	 * dp = 1/2 - 3/4. */
	float bp[2] = { 0, logf(3.0f) }, ml[2] = { 0, 0 };
	kl_of(&a, bp, ml, 2, 1);
	tfm_ppl_result(&a, &r);
	double k2 = 0.25 * log(0.5) + 0.75 * log(1.5), k1 = 0.5 * log(4.0 / 3.0);
	CHECK_CLOSE(r.kld, (k1 + k2) / 2, 1e-7, 0);
	CHECK_CLOSE(r.kld_max, fmax(k1, k2), 1e-7, 0);
	/* two values: se = sqrt(((k1^2+k2^2)/2 - mean^2) / 1) = |k1 - k2| / 2 */
	CHECK_CLOSE(r.kld_stderr, fabs(k1 - k2) / 2, 1e-7, 0);
	CHECK(r.top1_agree == 0); /* model argmax 0 (tie), base 1 */
	CHECK_CLOSE(r.dp_mean, (-0.25 - 0.25) / 2, 1e-7, 0);
	CHECK_CLOSE(r.dp_rms, 0.25, 1e-7, 0);
	/* The KL sums survive JSON and merge. */
	json_t *j = tfm_ppl_acc_to_json(&a);
	struct tfm_ppl_acc b, m;
	CHECK_OK(tfm_ppl_acc_from_json(&b, j));
	CHECK(b.n_kl == 2 && b.n_agree == 0 && b.kl == a.kl && b.kl2 == a.kl2 &&
	      b.kl_max == a.kl_max && b.dp == a.dp && b.dp2 == a.dp2 && b.nll_base == a.nll_base);
	tfm_ppl_init(&m);
	CHECK_OK(tfm_ppl_merge(&m, &b));
	CHECK_OK(tfm_ppl_merge(&m, &b));
	CHECK(m.n_kl == 4 && m.kl == 2 * a.kl && m.kl_max == a.kl_max);
	json_decref(j);
}

/* A vocabulary larger than K: the KL is that of the distributions coarsened
 * to the base's top K and one bucket for the rest (hand formula). */
static void t_kl_topk(void)
{
	enum { V = 100 };
	float bl[V], ml[V];
	for (int i = 0; i < V; i++) {
		bl[i] = (float)(0.05 * i);          /* base prefers high ids */
		ml[i] = (float)(0.04 * i + (i % 3 == 0 ? 0.3 : 0));
	}
	double zb = 0, zm = 0;
	for (int i = 0; i < V; i++)
		zb += exp(bl[i]), zm += exp(ml[i]);
	/* top 32 of the base: ids 99..68 */
	double kl = 0, rb = 0, rm = 0, exact = 0;
	for (int i = 0; i < V; i++) {
		double pb = exp(bl[i]) / zb, pm = exp(ml[i]) / zm;
		exact += pb * log(pb / pm);
		if (i >= V - TFM_LOGPROBS_K)
			kl += pb * log(pb / pm);
		else
			rb += pb, rm += pm;
	}
	kl += rb * log(rb / rm);
	struct tfm_ppl_acc a;
	tfm_ppl_init(&a);
	struct tfm_logprobs rec;
	tfm_logprobs_make(bl, V, 5, &rec);
	CHECK(rec.k == TFM_LOGPROBS_K && rec.id[0] == 99 && rec.id[31] == 68);
	CHECK_CLOSE(exp(rec.logp_rest), rb, 1e-6, 0);
	double got = tfm_kl_add(&a, &rec, ml, V, 5);
	CHECK_CLOSE(got, kl, 1e-6, 1e-5);
	CHECK(got <= exact + 1e-9); /* coarsening never increases KL */
}

/* Shard sums from hostile files (tests/fuzz/fuzz_pplshard): a merge whose
 * sums would overflow is refused and leaves the total as it was (the int64
 * and int128 additions were undefined), and sums of squares are never
 * negative. */
static void t_merge_hostile(void)
{
	struct tfm_ppl_acc a, b, before;
	tfm_ppl_init(&a);
	tfm_ppl_add_values(&a, 2, 1, 1, 3);
	before = a;
	/* an int64 count */
	b = a;
	b.n = INT64_MAX;
	CHECK_ST(tfm_ppl_merge(&a, &b), TFM_E_FORMAT);
	CHECK(acc_eq(&a, &before));
	/* an int128 sum: 2^126 + 2^126 (and past 2^126, which a shard file cannot hold) */
	b = a;
	b.nll2 = (tfm_i128)1 << 126;
	struct tfm_ppl_acc t = b;
	CHECK_ST(tfm_ppl_merge(&t, &b), TFM_E_FORMAT);
	CHECK(acc_eq(&t, &b));
	b.nll2 = t.nll2 = (tfm_i128)1 << 125; /* 2^126: would be written, not read back */
	CHECK_ST(tfm_ppl_merge(&t, &b), TFM_E_FORMAT);
	/* what fits still merges */
	CHECK_OK(tfm_ppl_merge(&a, &before));
	CHECK(a.n == 2 && a.n_bytes == 6);
	json_t *j = tfm_ppl_acc_to_json(&before);
	struct tfm_ppl_acc back;
	json_object_set_new(j, "nll2_q64", json_string("-1"));
	CHECK_ST(tfm_ppl_acc_from_json(&back, j), TFM_E_FORMAT);
	json_decref(j);
}

/* A --kl-base file from hostile bytes (lib/eval/logprobs.c): the header
 * checked for itself, records whose values are not log-probabilities
 * refused (tests/fuzz/fuzz_klbase). */
static void t_logprobs_read(void)
{
	char hdr[256];
	uint8_t buf[512];
	int n = snprintf(hdr, sizeof hdr, "{\"tfm_logprobs\":2,\"format\":\"topk\",\"k\":2,"
			 "\"n_vocab\":2,\"positions\":1}\n");
	size_t rb = tfm_logprobs_record_bytes(2);
	CHECK(rb == 24);
	/* logp_target, logp_rest (-inf: no rest), ids, logps */
	float lt = logf(0.25f), rest = -INFINITY, lp[2] = { logf(0.75f), logf(0.25f) };
	int32_t id[2] = { 1, 0 };
	memcpy(buf, hdr, (size_t)n);
	memcpy(buf + n, &lt, 4);
	memcpy(buf + n + 4, &rest, 4);
	memcpy(buf + n + 8, id, 8);
	memcpy(buf + n + 16, lp, 8);
	json_t *h = NULL;
	size_t off = 0;
	struct tfm_logprobs r;
	CHECK_OK(tfm_logprobs_header(buf, (size_t)n + rb, "t", &h, &off));
	CHECK(off == (size_t)n && h != NULL);
	json_decref(h);
	CHECK_OK(tfm_logprobs_read(buf + off, 2, 2, &r, "t"));
	CHECK(r.k == 2 && r.id[0] == 1 && r.logp[1] == lp[1]);
	/* one byte short, one too many, no newline */
	CHECK_ST(tfm_logprobs_header(buf, (size_t)n + rb - 1, "t", &h, &off), TFM_E_FORMAT);
	buf[n + rb] = 0;
	CHECK_ST(tfm_logprobs_header(buf, (size_t)n + rb + 1, "t", &h, &off), TFM_E_FORMAT);
	CHECK_ST(tfm_logprobs_header(buf, (size_t)n - 1, "t", &h, &off), TFM_E_FORMAT);
	/* k must be min(n_vocab, 32); positions not negative */
	static const char *const bad[] = {
		"{\"tfm_logprobs\":2,\"format\":\"topk\",\"k\":3,\"n_vocab\":2,\"positions\":0}\n",
		"{\"tfm_logprobs\":2,\"format\":\"topk\",\"k\":33,\"n_vocab\":40,\"positions\":0}\n",
		"{\"tfm_logprobs\":2,\"format\":\"topk\",\"k\":-1,\"n_vocab\":-1,\"positions\":0}\n",
		"{\"tfm_logprobs\":2,\"format\":\"topk\",\"k\":2,\"n_vocab\":2,\"positions\":-1}\n",
		"{\"tfm_logprobs\":1,\"format\":\"topk\",\"k\":2,\"n_vocab\":2,\"positions\":0}\n",
		"[2]\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_ST(tfm_logprobs_header((const uint8_t *)bad[i], strlen(bad[i]), "t", &h, &off),
			 TFM_E_FORMAT);
	/* values: NaN, a log-probability above 0, an id out of range */
	float nan = NAN, big = 5;
	memcpy(buf + n + 16, &nan, 4);
	CHECK_ST(tfm_logprobs_read(buf + off, 2, 2, &r, "t"), TFM_E_FORMAT);
	memcpy(buf + n + 16, lp, 4);
	memcpy(buf + n, &big, 4);
	CHECK_ST(tfm_logprobs_read(buf + off, 2, 2, &r, "t"), TFM_E_FORMAT);
	memcpy(buf + n, &lt, 4);
	CHECK_OK(tfm_logprobs_read(buf + off, 2, 2, &r, "t"));
	CHECK_ST(tfm_logprobs_read(buf + off, 2, 1, &r, "t"), TFM_E_FORMAT);
}

static const struct t_case t_cases[] = {
	{ "kl", t_kl }, { "kl_topk", t_kl_topk },
	{ "uniform", t_uniform }, { "two_way", t_two_way }, { "stderr", t_stderr },
	{ "merge", t_merge }, { "rows", t_rows }, { "logprobs_read", t_logprobs_read },
	{ "merge_hostile", t_merge_hostile },
};
T_MAIN(t_cases)
