/* test_ppl_direct.c: tfm-ppl's strided mode against a direct calculation.
 * For every target token t of a short text, run a fresh forward pass over
 * exactly the context Hugging Face's sliding window gives it (tokens from
 * the start of the first window that reaches t) and take -log p(t); the mean
 * must equal what `tfm-ppl --mode strided` reports.  This shares the model
 * with tfm-ppl but none of its windowing or accumulation. */
#include "t.h"

#include <jansson.h>

static double run_ppl_nll(const char *args)
{
	char *cmd = t_path("build/bin/tfm-ppl %s -F json", args);
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (!p)
		return NAN;
	json_error_t e;
	json_t *j = json_loadf(p, 0, &e);
	int rc = pclose(p);
	double nll = j && rc == 0 ? json_number_value(json_object_get(j, "nll")) : NAN;
	json_decref(j);
	return nll;
}

static void t_strided_direct(void)
{
	const char *sh = t_shared();
	char *bin = t_path("%s/models/stories260K/stories260K.bin", sh);
	char *tok = t_path("%s/models/stories260K/tok512.bin", sh);
	char *wiki = t_path("%s/text/wikitext-2-raw-test.txt", sh);
	/* the text: 2000 bytes of WikiText-2 without \r, no final newline */
	struct tfm_blob w;
	CHECK_OK(tfm_blob_open(&w, wiki));
	char text[2000];
	size_t n = 0;
	for (size_t i = 0; i < w.size && n < sizeof text; i++)
		if (w.data[i] != '\r')
			text[n++] = (char)w.data[i];
	while (n && text[n - 1] == '\n')
		n--;
	tfm_blob_close(&w);
	char *dir = t_tmpdir(), *path = t_path("%s/text.txt", dir);
	CHECK(t_write_file(path, text, n) == 0);

	struct tfm_model_opts o = { .n_threads = 1, .vocab = tok };
	struct tfm_model *m = NULL;
	CHECK_OK(tfm_model_open(&m, bin, &o));
	if (!m)
		return;
	const struct tfm_tokenizer *tk = tfm_model_tokenizer(m);
	int32_t *ids = NULL;
	size_t n_ids = 0;
	CHECK_OK(tfm_tokenize(tk, text, n, tfm_tokenizer_add_bos(tk), &ids, &n_ids));
	CHECK(n_ids > 300);
	int64_t V = tfm_model_spec(m)->n_vocab;
	float *logits = malloc(sizeof *logits * (size_t)V);
	struct tfm_ctx *c = NULL;
	CHECK_OK(tfm_ctx_new(&c, m, 512));

	static const int64_t cs[][2] = { { 64, 16 }, { 100, 99 }, { 128, 64 } };
	for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
		int64_t C = cs[k][0], S = cs[k][1];
		double sum = 0;
		for (int64_t t = 1; t < (int64_t)n_ids; t++) {
			/* the first window [w*S, w*S + C) that contains t */
			int64_t wi = t < C ? 0 : (t - C + S) / S;
			int64_t start = wi * S;
			tfm_ctx_reset(c);
			CHECK_OK(tfm_eval(c, ids + start, t - start, logits, 0));
			double mx = logits[0], z = 0;
			for (int64_t i = 1; i < V; i++)
				mx = logits[i] > mx ? logits[i] : mx;
			for (int64_t i = 0; i < V; i++)
				z += exp(logits[i] - mx);
			sum += log(z) + mx - logits[ids[t]];
		}
		double direct = sum / (double)(n_ids - 1);
		char *args = t_path("-m %s --vocab %s -f %s -c %lld --mode strided --stride %lld -t 1",
				    bin, tok, path, (long long)C, (long long)S);
		double got = run_ppl_nll(args);
		free(args);
		fprintf(stderr, "strided -c %lld --stride %lld: tfm-ppl nll %.9f, direct %.9f\n",
			(long long)C, (long long)S, got, direct);
		CHECK_CLOSE(got, direct, 1e-6, 1e-6);
	}
	tfm_ctx_free(c);
	free(logits);
	free(ids);
	tfm_model_close(m);
	free(bin), free(tok), free(wiki), free(dir), free(path);
}

static const struct t_case t_cases[] = {
	{ "strided_direct", t_strided_direct },
};
T_MAIN(t_cases)
