/* test_bench.c: the arithmetic behind tfm-bench: sample statistics, the
 * weight bytes of a model (total and read per decoded token, dense and MoE),
 * the KV bytes of a context, the --limits file, and that the attention
 * timer runs both backends.  Expected values are counted by hand from the
 * shapes (in the comments), never taken from the code under test. */
#include "t.h"
#include "tfm.h"
#include "bench/attn-family.h"
#include "bench/bench.h"
#include "kernels/backend.h"
#include "model/bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void t_stats(void)
{
	double x[] = {1, 2, 3, 4}, m, sd;
	tfm_bench_stats(x, 4, &m, &sd);
	CHECK_CLOSE(m, 2.5, 1e-12, 0);
	CHECK_CLOSE(sd, sqrt(5.0 / 3.0), 1e-12, 0); /* squares 2.25+0.25+0.25+2.25 over 3 */
	tfm_bench_stats(x, 1, &m, &sd);
	CHECK(m == 1 && sd == 0);
	CHECK(tfm_bench_now() > 0);
}

static struct tfm_model *tiny(const char *type, int64_t n_layer, int dtype)
{
	struct tfm_spec s;
	struct tfm_model *m = NULL;
	json_t *c = json_pack("{ss si si si si si si si}", "model_type", type, "hidden_size", 64,
			      "intermediate_size", 128, "num_hidden_layers", (int)n_layer,
			      "num_attention_heads", 4, "num_key_value_heads", 2, "vocab_size", 256,
			      "max_position_embeddings", 128);
	if (!strcmp(type, "mixtral")) {
		json_object_set_new(c, "num_local_experts", json_integer(4));
		json_object_set_new(c, "num_experts_per_tok", json_integer(2));
	}
	struct tfm_model_opts o = {.n_threads = 1};
	CHECK_OK(tfm_spec_from_config(&s, c));
	CHECK_OK(tfm_model_random(&m, &s, dtype, 1, &o));
	json_decref(c);
	return m;
}

static void t_dense(void)
{
	struct tfm_model_bytes b;
	struct tfm_model *m = tiny("llama", 2, TFM_TYPE_F32);
	if (!m)
		return;
	CHECK_OK(tfm_model_bytes(m, &b));
	/* per layer: q, o 64x64; k, v 64x32; gate, up, down 64x128; 2 norms of 64
	 * = 4096*2 + 2048*2 + 8192*3 + 128 = 36992; two layers 73984; embedding
	 * and head 256x64 each = 32768; output norm 64: 106816 weights */
	CHECK(b.params == 106816);
	CHECK_CLOSE(b.total, 4.0 * 106816, 0, 0);
	/* decode reads all but the embedding table, of which one row */
	CHECK_CLOSE(b.per_token, 4.0 * (106816 - 16384 + 64), 0, 0);
	CHECK(b.type == TFM_TYPE_F32);
	struct tfm_ctx *c;
	CHECK_OK(tfm_ctx_new(&c, m, 32));
	/* 2 layers x 32 positions x (k 32 + v 32) floats */
	CHECK(tfm_ctx_kv_alloc(c) == 2 * 32 * 64 * 4);
	tfm_ctx_free(c);
	tfm_model_close(m);
	/* q8_0: 34 bytes per 32 weights of each matrix row, vectors stay f32 */
	m = tiny("llama", 2, TFM_TYPE_Q8_0);
	if (!m)
		return;
	CHECK_OK(tfm_model_bytes(m, &b));
	double mats = 106816 - 5 * 64; /* all but the 5 norms */
	CHECK_CLOSE(b.total, mats / 32 * 34 + 5 * 64 * 4, 0, 0);
	CHECK(b.type == TFM_TYPE_Q8_0);
	tfm_model_close(m);
}

static void t_moe(void)
{
	struct tfm_model_bytes b;
	struct tfm_model *m = tiny("mixtral", 1, TFM_TYPE_F32);
	if (!m)
		return;
	CHECK_OK(tfm_model_bytes(m, &b));
	/* embedding 16384, head 16384, attention 12288, router 64x4 = 256,
	 * 4 experts of 3 x 64x128 = 24576 each, 3 norms of 64 */
	int64_t want = 16384 + 16384 + 12288 + 256 + 4 * 24576 + 192;
	CHECK(b.params == want);
	CHECK_CLOSE(b.total, 4.0 * want, 0, 0);
	/* a token uses 2 of the 4 experts and one embedding row */
	CHECK_CLOSE(b.per_token, 4.0 * (want - 16384 + 64 - 2 * 24576), 0, 0);
	tfm_model_close(m);
}

static void t_limits(void)
{
	struct tfm_bench_limits l;
	char *dir = t_tmpdir(), *p = t_path("%s/lim.json", dir), *q = t_path("%s/bad.json", dir);
	const char good[] = "{\"bandwidth_bytes_per_s\": 2.5e10, \"sgemm_flops_per_s\": 1e11, "
			    "\"threads\": 2}";
	const char bad[] = "{\"bandwidth_bytes_per_s\": -1, \"sgemm_flops_per_s\": 1e11}";
	CHECK_OK(t_write_file(p, good, sizeof good - 1));
	CHECK_OK(t_write_file(q, bad, sizeof bad - 1));
	CHECK_OK(tfm_bench_limits_read(&l, p));
	CHECK(l.bandwidth == 2.5e10 && l.sgemm == 1e11 && l.n_threads == 2);
	CHECK_ST(tfm_bench_limits_read(&l, q), TFM_E_FORMAT);
	free(p);
	p = t_path("%s/none.json", dir);
	CHECK_ST(tfm_bench_limits_read(&l, p), TFM_E_OPEN);
	free(p);
	free(q);
	free(dir);
	CHECK(tfm_bench_llc_bytes() > 0);
}

static void t_attn(void)
{
	struct tfm_bench_attn a = {.ctx = 48, .n_tok = 1, .n_head = 4, .n_head_kv = 2,
				   .head_dim = 16, .window = 16, .n_threads = 2, .max_reps = 3};
	double s;
	for (int i = 0; i < tfm_backend_count(); i++) {
		CHECK_OK(tfm_bench_attn_time(tfm_backend_at(i), &a, &s));
		CHECK(s > 0);
	}
	a.n_tok = 8;
	a.v_dim = 8; /* MLA-like: a value head of its own */
	CHECK_OK(tfm_bench_attn_time(tfm_backend_ref(), &a, &s));
	a.n_head_kv = 3; /* does not divide 4 heads */
	CHECK_ST(tfm_bench_attn_time(tfm_backend_ref(), &a, &s), TFM_E_INVAL);
}

/* The attention family of --attn: every fast kernel against its reference
 * (the definition in double) over heads, head sizes, contexts across the
 * 64-row blocks and windows; windows at least the context give the full
 * 2-simplicial attention; the fitted exponent of exact powers. */
static void t_family(void)
{
	static const int64_t heads[] = {1, 3, 4}, dims[] = {1, 5, 16}, ctxs[] = {1, 2, 7, 70, 130};
	float *a = malloc(4096 * sizeof *a), *b = malloc(4096 * sizeof *b);
	for (int v = 0; v < TFM_FAM_N; v++) {
		double worst = 0;
		for (int hi = 0; hi < 3; hi++)
			for (int di = 0; di < 3; di++)
				for (int ci = 0; ci < 5; ci++) {
					struct tfm_fam_shape s = {.n_head = heads[hi], .head_dim = dims[di],
								  .ctx = ctxs[ci], .features = 7 + di,
								  .win1 = 9, .win2 = 3};
					struct tfm_fam_case *c;
					CHECK_OK(tfm_fam_new(&c, v, &s, 5 + (uint64_t)ci));
					if (!c)
						continue;
					int64_t no = tfm_fam_out_n(v, &s);
					tfm_fam_ref(c, a);
					tfm_fam_fast(c, b);
					tfm_fam_fast(c, b); /* a step leaves the state as it was */
					for (int64_t i = 0; i < no; i++) {
						double e = fabs((double)a[i] - b[i]) / (1e-3 + fabs(a[i]));
						worst = e > worst ? e : worst;
						CHECK_MSG(e < 2e-4, "%s H%lld d%lld ctx%lld [%lld]: %g vs %g",
							  tfm_fam_name(v), (long long)s.n_head,
							  (long long)s.head_dim, (long long)s.ctx, (long long)i,
							  a[i], b[i]);
					}
					tfm_fam_free(c);
				}
		fprintf(stderr, "  %-18s fast vs reference: worst relative %.2g\n", tfm_fam_name(v), worst);
	}
	/* windows covering the context: the full 2-simplicial attention */
	struct tfm_fam_shape s = {.n_head = 2, .head_dim = 8, .ctx = 20, .win1 = 20, .win2 = 25};
	struct tfm_fam_case *c1, *c2;
	CHECK_OK(tfm_fam_new(&c1, TFM_FAM_SIMPLICIAL, &s, 3));
	CHECK_OK(tfm_fam_new(&c2, TFM_FAM_SIMPLICIAL_WIN, &s, 3));
	tfm_fam_ref(c1, a);
	tfm_fam_ref(c2, b);
	CHECK(!memcmp(a, b, 16 * sizeof *a));
	s.win1 = 19; /* one key fewer: another output */
	tfm_fam_free(c2);
	CHECK_OK(tfm_fam_new(&c2, TFM_FAM_SIMPLICIAL_WIN, &s, 3));
	tfm_fam_ref(c2, b);
	CHECK(memcmp(a, b, 16 * sizeof *a) != 0);
	tfm_fam_free(c1), tfm_fam_free(c2);
	/* state bytes by hand: linear 4 heads of 16: 4 (256 + 16) floats */
	struct tfm_fam_shape l = {.n_head = 4, .head_dim = 16, .ctx = 1000};
	CHECK(tfm_fam_state_bytes(TFM_FAM_LINEAR, &l) == 4 * 272 * 4);
	CHECK(tfm_fam_state_bytes(TFM_FAM_SIMPLICIAL, &l) == 1000.0 * 4 * 64 * 4);
	CHECK_ST(tfm_fam_new(&c1, TFM_FAM_GAU, &(struct tfm_fam_shape){.n_head = 0}, 1), TFM_E_INVAL);
	double x[] = {512, 1024, 2048, 4096}, y2[] = {1, 4, 16, 64}, y1[] = {3, 6, 12, 24};
	CHECK_CLOSE(tfm_fam_fit_exponent(x, y2, 4, 0), 2.0, 1e-12, 0);
	CHECK_CLOSE(tfm_fam_fit_exponent(x, y1, 4, 1000), 1.0, 1e-12, 0);
	CHECK(isnan(tfm_fam_fit_exponent(x, y1, 1, 0)));
	free(a), free(b);
}

static const struct t_case t_cases[] = {
	{ "stats", t_stats }, { "dense", t_dense }, { "moe", t_moe }, { "limits", t_limits },
	{ "attn", t_attn }, { "family", t_family },
};
T_MAIN(t_cases)
