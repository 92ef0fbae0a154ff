/* test_seq2seq.c: encoder-decoder models (T5 v1.0, v1.1, mT5, BART,
 * mBART, Marian) against transformers.  Each fixture of
 * tests/fixtures/seq2seq (scripts/make-fixtures-seq2seq: random weights,
 * outputs computed by transformers 4.57.1 in float32) is opened as tfm-run
 * opens it (converted in memory), on the reference and the cpu backend, 1
 * and 3 threads:
 *   - the encoder's output (after its final norm, if any) within 1e-4,
 *   - the teacher-forced decoder logits within 1e-4, fed at once and one
 *     token at a time (the self-attention cache and the cross-attention
 *     keys kept from the encoding),
 *   - greedy decoding equal to transformers' generate token for token
 *     (forced BOS / EOS as generate applied them), for two sources in one
 *     context (a second encoding replaces the first),
 *   - beam search equal to generate(num_beams=K) with each fixture's
 *     length_penalty, early_stopping and no_repeat_ngram_size (one ends at
 *     eos before the length limit), its score within 1e-4,
 *   - parameters equal to transformers' num_parameters().
 * Then the refusals: a decoder fed before any source, a source past the
 * context or the vocabulary. */
#include "t.h"
#include "model/model-impl.h"
#include "model-util.h"
#include "format/gguf.h"
#include "model/beam.h"

#include <jansson.h>

#define TOL 1e-4

static int32_t argmax(const float *x, int64_t n)
{
	int32_t b = 0;
	for (int64_t i = 1; i < n; i++)
		if (x[i] > x[b])
			b = (int32_t)i;
	return b;
}

/* Greedy decoding of src as generate(do_sample=False, num_beams=1): from
 * the decoder start token, up to max_new tokens with the rules ru (forced
 * BOS / EOS), stopping after eos; out gets the start token and the
 * generated ones.  The number of ids. */
static int greedy(struct tfm_ctx *c, const int32_t *src, int n_src, int max_new,
		  const struct tfm_gen_rules *ru, int32_t *out)
{
	const struct tfm_spec *s = tfm_model_spec(c->m);
	float *lg = malloc((size_t)s->n_vocab * sizeof *lg);
	int n = 0;
	if (tfm_seq2seq_encode(c, src, n_src, NULL))
		goto out;
	out[n++] = s->dec_start_id;
	for (int i = 0; i < max_new; i++) {
		if (tfm_eval(c, out + n - 1, 1, lg, 0))
			break;
		tfm_gen_rules_apply(ru, out, n, lg, s->n_vocab);
		out[n] = argmax(lg, s->n_vocab);
		if (out[n++] == s->eos_id)
			break;
	}
out:
	free(lg);
	return n;
}

static void one(const char *name, const char *dev, int threads)
{
	char *dir = t_path("tests/fixtures/seq2seq/%s", name);
	char *ip = t_path("%s/inputs.json", dir), *gp = t_path("%s/greedy.json", dir);
	char *ep = t_path("%s/enc.f32", dir), *lp = t_path("%s/logits.f32", dir);
	struct tfm_model_opts o = {.n_threads = threads, .device = dev};
	struct tfm_model *m = NULL;
	struct tfm_ctx *c = NULL;
	json_error_t je;
	json_t *in = json_load_file(ip, 0, &je), *gr = json_load_file(gp, 0, &je);
	int32_t src[64], tgt[64], gsrc[64], gids[64], got[64];
	int ns = t_read_ints(json_object_get(in, "src"), src, 64);
	int nt = t_read_ints(json_object_get(in, "tgt"), tgt, 64);
	CHECK(in && gr && ns > 0 && ns <= 64 && nt > 0 && nt <= 64);
	CHECK_OK(tfm_model_open(&m, dir, &o));
	if (m)
		CHECK_OK(tfm_ctx_new(&c, m, 64));
	if (!m || !c || !in || !gr || ns <= 0 || ns > 64 || nt <= 0 || nt > 64)
		goto out;
	tfm_ctx_set_par_min(c, 0); /* the threaded kernels too */
	const struct tfm_spec *s = tfm_model_spec(m);
	int64_t d = s->n_embd, V = s->n_vocab;
	size_t ne, nl;
	float *ew = t_read_f32(ep, &ne), *lw = t_read_f32(lp, &nl);
	float *h = malloc((size_t)(ns * d) * sizeof *h), *lg = malloc((size_t)(nt * V) * sizeof *lg);
	CHECK_MSG(ne == (size_t)(ns * d) && nl == (size_t)(nt * V), "%s: enc.f32 %zu, logits.f32 "
		  "%zu floats", name, ne, nl);
	/* the encoder, then the decoder teacher-forced in one call */
	CHECK_OK(tfm_seq2seq_encode(c, src, ns, h));
	double ee = ne == (size_t)(ns * d) ? t_maxdiff(h, ew, ns * d) : INFINITY;
	CHECK_OK(tfm_eval(c, tgt, nt, lg, 1));
	double el = nl == (size_t)(nt * V) ? t_maxdiff(lg, lw, nt * V) : INFINITY;
	/* one token at a time, after encoding the source again */
	double es = 0;
	CHECK_OK(tfm_seq2seq_encode(c, src, ns, NULL));
	for (int t = 0; t < nt && nl == (size_t)(nt * V); t++) {
		CHECK_OK(tfm_eval(c, tgt + t, 1, lg, 0));
		double e = t_maxdiff(lg, lw + t * V, V);
		es = e > es ? e : es;
	}
	fprintf(stderr, "  %-13s %s/%d: encoder %.2g, logits %.2g, stepwise %.2g\n", name, dev,
		threads, ee, el, es);
	CHECK_MSG(ee <= TOL, "%s %s/%d: encoder output differs by %g", name, dev, threads, ee);
	CHECK_MSG(el <= TOL, "%s %s/%d: teacher-forced logits differ by %g", name, dev, threads, el);
	CHECK_MSG(es <= TOL, "%s %s/%d: step-by-step logits differ by %g", name, dev, threads, es);
	/* greedy decoding of two sources, one context */
	int max_new = (int)json_integer_value(json_object_get(gr, "max_new_tokens"));
	/* the forced tokens generate used (BART's family; absent for T5) */
	json_t *fb = json_object_get(gr, "forced_bos_token_id"), *fe = json_object_get(gr, "forced_eos_token_id");
	struct tfm_gen_rules ru = {.forced_bos = json_is_integer(fb) ? (int32_t)json_integer_value(fb) : -1,
				   .forced_eos = json_is_integer(fe) ? (int32_t)json_integer_value(fe) : -1,
				   .eos_id = s->eos_id, .max_len = 1 + max_new};
	json_t *ds = json_object_get(gr, "decoder_start_token_id");
	CHECK(!ds || json_integer_value(ds) == s->dec_start_id);
	static const char *const keys[2][2] = {{"src", "ids"}, {"src2", "ids2"}};
	for (int k = 0; k < 2; k++) {
		int n1 = t_read_ints(json_object_get(gr, keys[k][0]), gsrc, 64);
		int n2 = t_read_ints(json_object_get(gr, keys[k][1]), gids, 64);
		CHECK(n1 > 0 && n2 > 1 && max_new > 0 && max_new < 60);
		if (n1 <= 0 || n2 <= 1 || max_new <= 0 || max_new >= 60)
			continue;
		int n = greedy(c, gsrc, n1, max_new, &ru, got);
		CHECK_MSG(n == n2 && !memcmp(got, gids, (size_t)n * sizeof *got),
			  "%s %s/%d: greedy ids of %s differ from transformers' (%d vs %d ids)", name,
			  dev, threads, keys[k][0], n, n2);
	}
	free(ew), free(lw), free(h), free(lg);
out:
	tfm_ctx_free(c);
	tfm_model_close(m);
	json_decref(in), json_decref(gr);
	free(dir), free(ip), free(gp), free(ep), free(lp);
}

/* Beam search of beam.json's source with its knobs (num_beams,
 * length_penalty, early_stopping, no_repeat_ngram_size, max_new_tokens;
 * forced BOS / EOS as generate used them) equal to generate's ids. */
static void beams(const char *name, const char *dev, int threads)
{
	char *dir = t_path("tests/fixtures/seq2seq/%s", name);
	char *bp = t_path("%s/beam.json", dir);
	struct tfm_model_opts o = {.n_threads = threads, .device = dev};
	struct tfm_model *m = NULL;
	struct tfm_ctx *c[8] = {NULL};
	json_error_t je;
	json_t *bj = json_load_file(bp, 0, &je);
	int32_t src[64], want[64], got[64];
	int ns = t_read_ints(json_object_get(bj, "src"), src, 64);
	int nw = t_read_ints(json_object_get(bj, "ids"), want, 64);
	struct tfm_beam_opts bo = {0};
	bo.n_beams = (int)json_integer_value(json_object_get(bj, "num_beams"));
	bo.length_penalty = json_number_value(json_object_get(bj, "length_penalty"));
	json_t *es = json_object_get(bj, "early_stopping");
	bo.early_stopping = json_is_true(es) ? 1 : json_is_string(es) ? 2 : 0;
	bo.rules.no_repeat_ngram = json_integer_value(json_object_get(bj, "no_repeat_ngram_size"));
	int64_t max_new = json_integer_value(json_object_get(bj, "max_new_tokens"));
	json_t *fb = json_object_get(bj, "forced_bos_token_id"), *fe = json_object_get(bj, "forced_eos_token_id");
	bo.rules.forced_bos = json_is_integer(fb) ? (int32_t)json_integer_value(fb) : -1;
	bo.rules.forced_eos = json_is_integer(fe) ? (int32_t)json_integer_value(fe) : -1;
	CHECK_MSG(bj && ns > 0 && ns <= 64 && nw > 1 && nw <= 64 && bo.n_beams >= 1 &&
		  bo.n_beams <= 8 && max_new > 0 && max_new < 60, "%s: beam.json", name);
	CHECK_OK(tfm_model_open(&m, dir, &o));
	if (!m || !bj || ns <= 0 || ns > 64 || nw <= 1 || nw > 64 || bo.n_beams < 1 ||
	    bo.n_beams > 8 || max_new <= 0 || max_new >= 60)
		goto out;
	const struct tfm_spec *s = tfm_model_spec(m);
	int ok = 1;
	for (int b = 0; b < bo.n_beams; b++)
		ok &= tfm_ctx_new(&c[b], m, 64) == TFM_OK;
	CHECK(ok);
	if (!ok)
		goto out;
	tfm_ctx_set_par_min(c[0], 0);
	float *lg = malloc((size_t)s->n_vocab * sizeof *lg);
	int32_t start = s->dec_start_id;
	bo.rules.eos_id = s->eos_id;
	bo.rules.max_len = 1 + max_new;
	int64_t n_out = 0;
	double score = 0;
	CHECK_OK(tfm_seq2seq_encode(c[0], src, ns, NULL));
	CHECK_OK(tfm_eval(c[0], &start, 1, lg, 0));
	CHECK_OK(tfm_beam_search(c, &start, 1, lg, &bo, got + 1, &n_out, &score));
	got[0] = start;
	CHECK_MSG(n_out + 1 == nw && !memcmp(got, want, (size_t)nw * sizeof *got),
		  "%s %s/%d: %d beams: %lld ids, generate's %d", name, dev, threads, bo.n_beams,
		  (long long)n_out + 1, nw);
	json_t *sc = json_object_get(bj, "score");
	if (json_is_number(sc))
		CHECK_CLOSE(score, json_number_value(sc), 1e-4, 1e-4);
	fprintf(stderr, "  %-13s %s/%d: %d beams, %lld tokens, score %.6f\n", name, dev, threads,
		bo.n_beams, (long long)n_out, score);
	free(lg);
out:
	for (int b = 0; b < 8; b++)
		tfm_ctx_free(c[b]);
	tfm_model_close(m);
	json_decref(bj);
	free(dir), free(bp);
}

static const char *const fixtures[] = {"t5-s2s", "t5-s2s-gated", "mt5-s2s", "t5-s2s-tok",
				       "bart-s2s", "mbart-s2s", "marian-s2s", "marian-sep-s2s"};

static void t_fixtures(void)
{
	static const char *const devs[] = {"ref", "cpu"};
	for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
		for (int dv = 0; dv < 2; dv++)
			for (int th = 1; th <= 3; th += 2)
				one(fixtures[i], devs[dv], th);
}

static void t_beams(void)
{
	static const char *const devs[] = {"ref", "cpu"};
	for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
		for (int dv = 0; dv < 2; dv++)
			beams(fixtures[i], devs[dv], 1 + 2 * dv);
}

/* Parameters as transformers' num_parameters() counts them (the
 * scripts/make-fixtures-seq2seq log), from the spec and from the bound
 * tensors */
static void t_params(void)
{
	static const double want[] = {94104, 38944, 27440, 48640, 35952, 25056, 44768, 54048};
	for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
		char *dir = t_path("tests/fixtures/seq2seq/%s", fixtures[i]);
		struct tfm_model *m = NULL;
		CHECK_OK(tfm_model_open(&m, dir, NULL));
		if (m) {
			struct tfm_counts pc;
			CHECK_OK(tfm_spec_count(tfm_model_spec(m), 4, 64, &pc));
			CHECK_MSG((double)pc.total == want[i], "%s: %lld parameters, transformers "
				  "counts %.0f", fixtures[i], (long long)pc.total, want[i]);
		}
		tfm_model_close(m);
		free(dir);
	}
}

static void t_refusals(void)
{
	char *dir = t_path("tests/fixtures/seq2seq/t5-s2s");
	struct tfm_model *m = NULL;
	struct tfm_ctx *c = NULL;
	float lg[160];
	int32_t tok = 0;
	CHECK_OK(tfm_model_open(&m, dir, NULL));
	if (m)
		CHECK_OK(tfm_ctx_new(&c, m, 16));
	if (c) {
		/* the decoder needs a source first; a source past the context */
		CHECK_ST(tfm_eval(c, &tok, 1, lg, 0), TFM_E_INVAL);
		int32_t src[17] = {0};
		CHECK_ST(tfm_seq2seq_encode(c, src, 17, NULL), TFM_E_INVAL);
		src[3] = 160;
		CHECK_ST(tfm_seq2seq_encode(c, src, 4, NULL), TFM_E_INVAL);
		CHECK(tfm_ctx_cross_bytes(c) > 0 && tfm_ctx_kv_bytes(c) > 0);
	}
	tfm_ctx_free(c);
	tfm_model_close(m);
	free(dir);
}

/* The T5 fixture as llama.cpp's convert_hf_to_gguf.py wrote it
 * (tests/data/llamacpp/t5-s2s-tok.gguf, scripts/make-llamacpp-ggufs): no
 * tfm.* keys.  llama.cpp fixes relative_attention_max_distance at 128 (this
 * fixture's is 32), so the file runs as the fixture with that knob set to
 * 128: the same encoder output, teacher-forced logits and greedy ids; its
 * tokenizer (llama.cpp's keys, T5's frame text </s>) gives transformers'
 * ids for every text of cli.json. */
static void t_llamacpp_t5(void)
{
	const char *set[] = {"t5.max_distance=128"};
	struct tfm_model_opts o1 = {.n_threads = 1}, o2 = {.n_threads = 1, .set = set, .n_set = 1};
	struct tfm_model *a = NULL, *b = NULL;
	struct tfm_ctx *ca = NULL, *cb = NULL;
	json_error_t je;
	json_t *in = json_load_file("tests/fixtures/seq2seq/t5-s2s-tok/inputs.json", 0, &je);
	json_t *cli = json_load_file("tests/fixtures/seq2seq/t5-s2s-tok/cli.json", 0, &je);
	CHECK_OK(tfm_model_open(&a, "tests/data/llamacpp/t5-s2s-tok.gguf", &o1));
	CHECK_OK(tfm_model_open(&b, "tests/fixtures/seq2seq/t5-s2s-tok", &o2));
	if (a && b) {
		CHECK_OK(tfm_ctx_new(&ca, a, 64));
		CHECK_OK(tfm_ctx_new(&cb, b, 64));
	}
	int32_t src[64], tgt[64], ga[64], gb[64];
	int ns = t_read_ints(json_object_get(in, "src"), src, 64);
	int nt = t_read_ints(json_object_get(in, "tgt"), tgt, 64);
	CHECK(ns > 0 && nt > 0);
	if (!ca || !cb || ns <= 0 || nt <= 0)
		goto out;
	int64_t d = tfm_model_spec(a)->n_embd, V = tfm_model_spec(a)->n_vocab;
	CHECK(V == tfm_model_spec(b)->n_vocab && d == tfm_model_spec(b)->n_embd);
	float *h[2], *lg[2];
	struct tfm_ctx *c[2] = {ca, cb};
	for (int i = 0; i < 2; i++) {
		h[i] = malloc((size_t)(ns * d) * sizeof(float));
		lg[i] = malloc((size_t)(nt * V) * sizeof(float));
		CHECK_OK(tfm_seq2seq_encode(c[i], src, ns, h[i]));
		CHECK_OK(tfm_eval(c[i], tgt, nt, lg[i], 1));
	}
	double eh = t_maxdiff(h[0], h[1], ns * d), el = t_maxdiff(lg[0], lg[1], nt * V);
	fprintf(stderr, "  llama.cpp's T5 file vs the fixture at max distance 128: encoder %.2g, "
		"logits %.2g\n", eh, el);
	CHECK(eh <= 1e-5 && el <= 1e-5);
	struct tfm_gen_rules ru = {.forced_bos = -1, .forced_eos = -1,
				   .eos_id = tfm_model_spec(a)->eos_id, .max_len = 21};
	int na = greedy(ca, src, ns, 20, &ru, ga), nb = greedy(cb, src, ns, 20, &ru, gb);
	CHECK(na == nb && na > 1 && !memcmp(ga, gb, (size_t)na * sizeof *ga));
	for (int i = 0; i < 2; i++)
		free(h[i]), free(lg[i]);
	size_t k;
	json_t *e;
	int n_txt = 0;
	json_array_foreach(cli, k, e) {
		const char *txt = json_string_value(json_object_get(e, "text"));
		int32_t want[64], *ids = NULL;
		size_t n = 0;
		int nw = t_read_ints(json_object_get(e, "src_ids"), want, 64);
		if (!txt || nw <= 0)
			continue;
		CHECK_OK(tfm_tokenize_seq(tfm_model_tokenizer(a), txt, strlen(txt), 0, &ids, &n));
		CHECK_MSG(n == (size_t)nw && !memcmp(ids, want, n * sizeof *ids),
			  "llama.cpp's T5 file: '%s': %zu ids, want %d", txt, n, nw);
		free(ids);
		n_txt++;
	}
	CHECK(n_txt >= 4);
out:
	tfm_ctx_free(ca), tfm_ctx_free(cb);
	tfm_model_close(a), tfm_model_close(b);
	json_decref(in), json_decref(cli);
}

static const struct t_case t_cases[] = {
	{"fixtures", t_fixtures},
	{"params", t_params},
	{"beams", t_beams},
	{"refusals", t_refusals},
	{"llamacpp_t5", t_llamacpp_t5},
};
T_MAIN(t_cases)
