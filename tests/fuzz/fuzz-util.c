/* fuzz-util.c: the checks the harnesses share (fuzz.h): walking a parsed
 * GGUF through every getter, exercising a tokenizer, binding and running a
 * model on tiny shapes, and the derived numbers of a spec.  Sizes that a
 * hostile input controls are capped here only where the harness itself
 * allocates (the library must cope with the rest). */
#include "fuzz.h"

#include "model/model-impl.h"
#include "format/ckpt-impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int verbose; /* TFM_FUZZ_VERBOSE: each status checked, for debugging a harness */

void fuzz_init(void)
{
	tfm_log_set_level(TFM_LOG_QUIET);
	verbose = getenv("TFM_FUZZ_VERBOSE") != NULL;
}

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "fuzz: %s:%d: broken promise: %s (last error: %s)\n", file, line, what,
		tfm_errmsg());
	abort();
}

void fuzz_check_status(int st)
{
	FUZZ_ASSERT(st <= TFM_OK && st >= TFM_E_PIPE);
	if (verbose)
		fprintf(stderr, "fuzz: %s%s%s\n", tfm_strstatus(st), st ? ": " : "",
			st ? tfm_errmsg() : "");
}

uint64_t fuzz_touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	uint64_t h = 0;
	for (size_t i = 0; i < n; i++)
		h = h * 31 + b[i];
	return h;
}

const char *fuzz_shared(void)
{
	const char *s = getenv("TFM_SHARED");
	struct stat sb;
	if (!s)
		s = "../shared";
	if (stat(s, &sb) || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "fuzz: %s is missing: the harness needs ../shared (DATA.md)\n", s);
		exit(1);
	}
	return s;
}

/* A value and, for arrays of arrays, its elements (depth-limited: the
 * parser's own limit is what is being tested, not this walk's). */
static void walk_val(const struct tfm_gguf_val *v, int depth)
{
	int et;
	int64_t n;
	const void *data;
	if (!v || depth > 8 || tfm_gguf_val_type(v) != TFM_GGUF_ARRAY)
		return;
	if (tfm_gguf_val_arr(v, &et, &n, &data))
		return;
	FUZZ_ASSERT(n >= 0);
	int64_t lim = n < 4096 ? n : 4096;
	if (et == TFM_GGUF_STRING) {
		for (int64_t j = 0; j < lim; j++) {
			const char *s;
			size_t len;
			if (!tfm_gguf_val_arr_str(v, j, &s, &len))
				fuzz_touch(s, len);
		}
	} else if (et == TFM_GGUF_ARRAY) {
		for (int64_t j = 0; j < lim; j++)
			walk_val(tfm_gguf_arr_sub(v, j), depth + 1);
	}
}

static void walk_kv(const struct tfm_gguf *g, int64_t i)
{
	const char *key = tfm_gguf_key(g, i);
	FUZZ_ASSERT(key);
	int type = tfm_gguf_kv_type(g, i);
	FUZZ_ASSERT(type >= 0 && type < TFM_GGUF_TYPE_COUNT);
	int64_t iv;
	double dv;
	const char *s;
	size_t len;
	tfm_gguf_get_int(g, key, &iv);
	tfm_gguf_get_float(g, key, &dv);
	tfm_gguf_get_int_or(g, key, 0);
	tfm_gguf_get_float_or(g, key, 0);
	if (!tfm_gguf_get_str(g, key, &s, &len))
		fuzz_touch(s, len);
	tfm_gguf_get_str_or(g, key, "");
	walk_val(tfm_gguf_get_val(g, i), 0);
	if (type != TFM_GGUF_ARRAY)
		return;
	int et;
	int64_t n = tfm_gguf_arr_n(g, i);
	const void *data;
	FUZZ_ASSERT(n >= 0);
	if (!tfm_gguf_get_arr(g, key, &et, &n, &data) && data) {
		FUZZ_ASSERT(tfm_gguf_arr_type(g, i) == et);
		const int w[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
		if (et >= 0 && et < TFM_GGUF_TYPE_COUNT && w[et])
			fuzz_touch(data, (size_t)n * (size_t)w[et]);
	}
	if (n > 0 && n <= (1 << 20)) {
		float *f = malloc((size_t)n * sizeof *f);
		int64_t *x = malloc((size_t)n * sizeof *x);
		if (f && x) {
			tfm_gguf_get_arr_f32(g, key, f, n);
			tfm_gguf_get_arr_i64(g, key, x, n);
		}
		free(f);
		free(x);
	}
	for (int64_t j = 0; j < n && j < 64; j++)
		if (!tfm_gguf_get_arr_str(g, key, j, &s, &len))
			fuzz_touch(s, len);
}

void fuzz_walk_gguf(const struct tfm_gguf *g)
{
	int64_t nkv = tfm_gguf_n_kv(g), nt = tfm_gguf_n_tensors(g);
	FUZZ_ASSERT(nkv >= 0 && nt >= 0);
	for (int64_t i = 0; i < nkv; i++)
		walk_kv(g, i);
	for (int64_t i = 0; i < nt; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(g, i);
		FUZZ_ASSERT(t && t->name);
		FUZZ_ASSERT(t->n_dims >= 1 && t->n_dims <= TFM_GGUF_MAX_DIMS);
		FUZZ_ASSERT(tfm_gguf_find_tensor(g, t->name));
		if (t->data)
			fuzz_touch(t->data, t->nbytes);
	}
	tfm_gguf_alignment(g);
	tfm_gguf_version(g);
	tfm_gguf_data_offset(g);
}

static void check_ids(const struct tfm_tokenizer *t, const int32_t *ids, size_t n)
{
	int64_t nv = tfm_tokenizer_n_vocab(t);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(ids[i] >= 0 && ids[i] < nv);
}

static void one_text(const struct tfm_tokenizer *t, const char *s, size_t len)
{
	for (int mode = 0; mode < 4; mode++) {
		int32_t *ids = NULL;
		size_t n = 0;
		int st = tfm_tokenize_special(t, s, len, mode & 1, mode >> 1, &ids, &n);
		fuzz_check_status(st);
		if (st)
			continue;
		check_ids(t, ids, n);
		char *text = NULL;
		size_t tl = 0;
		st = tfm_detokenize(t, ids, n, &text, &tl);
		fuzz_check_status(st);
		if (!st) {
			FUZZ_ASSERT(text[tl] == 0);
			free(text);
		}
		for (size_t i = 0; i < n; i++) {
			char buf[256]; /* the documented minimum */
			int k = tfm_token_decode(t, i ? ids[i - 1] : -1, ids[i], buf, sizeof buf);
			FUZZ_ASSERT(k <= (int)sizeof buf);
			if (k < 0)
				fuzz_check_status(k);
		}
		free(ids);
	}
}

void fuzz_tokenizer(const struct tfm_tokenizer *t, const uint8_t *text, size_t len)
{
	static const char *const fixed[] = {
		"", "Hello world", " leading  spaces\t\n", "<s></s><unk><|endoftext|>[CLS]",
		"\xc3\xbc \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x99\x82 12345",
		"\xff\xfe bad \xc3 utf-8 \xed\xa0\x80",
	};
	int64_t nv = tfm_tokenizer_n_vocab(t);
	FUZZ_ASSERT(nv > 0);
	int32_t bos = tfm_tokenizer_bos(t), eos = tfm_tokenizer_eos(t);
	FUZZ_ASSERT(bos >= -1 && bos < nv);
	FUZZ_ASSERT(eos >= -1 && eos < nv);
	tfm_tokenizer_add_bos(t);
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		one_text(t, fixed[i], strlen(fixed[i]));
	if (text)
		one_text(t, (const char *)text, len < 4096 ? len : 4096);
	/* pieces of the first 2048 ids and the last ones (real vocabularies
	 * have 30K-150K: all of them would make each run slow), and ids just
	 * out of range, each decoded after BOS */
	for (int64_t id = -1; id <= nv; id = id == 2048 && nv > 2052 ? nv - 3 : id + 1) {
		size_t pl;
		const char *p = tfm_token_piece(t, (int32_t)id, &pl);
		if (p)
			fuzz_touch(p, pl);
		char buf[256];
		int k = tfm_token_decode(t, bos, (int32_t)id, buf, sizeof buf);
		FUZZ_ASSERT(k <= (int)sizeof buf);
		tfm_tokenizer_is_eos(t, (int32_t)id);
	}
}

void fuzz_gguf_tokenizer(const struct tfm_gguf *g, const uint8_t *text, size_t len)
{
	struct tfm_tokenizer *t = NULL;
	if (tfm_gguf_find(g, "tokenizer.ggml.model") < 0)
		return;
	int st = tfm_tokenizer_from_gguf(&t, g);
	fuzz_check_status(st);
	if (st)
		return;
	fuzz_tokenizer(t, text, len);
	tfm_tokenizer_free(t);
}

void fuzz_model(const struct tfm_spec *s, const struct tfm_model_tensor *t, int64_t n)
{
	struct tfm_model_opts o = { .n_threads = 1, .device = "cpu" };
	struct tfm_model *m = NULL;
	struct tfm_ctx *c = NULL;
	float *logits = NULL;
	int st = tfm_model_new(&m, s, t, n, &o);
	fuzz_check_status(st);
	if (st)
		return;
	const struct tfm_spec *ms = tfm_model_spec(m);
	FUZZ_ASSERT(ms->n_vocab > 0);
	if (ms->n_vocab > (1 << 22))
		goto done;
	st = tfm_ctx_new(&c, m, 4);
	fuzz_check_status(st);
	if (st)
		goto done;
	logits = malloc(2 * (size_t)ms->n_vocab * sizeof *logits);
	if (!logits)
		goto done;
	int32_t tok[2] = { 0, (int32_t)(ms->n_vocab - 1) };
	/* a prefill of two tokens with every row of logits, then one decode step */
	st = tfm_eval(c, tok, 2, logits, 1);
	fuzz_check_status(st);
	if (!st) {
		st = tfm_eval(c, tok, 1, logits, 0);
		fuzz_check_status(st);
		FUZZ_ASSERT(st || tfm_ctx_pos(c) == 3);
	}
done:
	free(logits);
	tfm_ctx_free(c);
	tfm_model_close(m);
}

void fuzz_spec(const struct tfm_spec *s)
{
	struct tfm_counts c;
	int st = tfm_spec_count(s, 2.0, 4096, &c);
	fuzz_check_status(st);
	if (!st)
		FUZZ_ASSERT(c.total >= 0 && c.active >= 0 && c.active <= c.total);
	tfm_spec_kv_bytes(s, 2.0, 4096);
	json_t *j = tfm_spec_to_json(s);
	if (j) {
		char *d = json_dumps(j, JSON_COMPACT);
		free(d);
		json_decref(j);
	}
	/* what tfm writes into a GGUF, tfm reads back */
	struct tfm_gguf *g = NULL;
	struct tfm_spec back;
	if (tfm_gguf_new(&g))
		return;
	st = tfm_spec_to_gguf(s, g);
	fuzz_check_status(st);
	if (!st) {
		st = tfm_spec_from_gguf(&back, g);
		FUZZ_ASSERT(st == TFM_OK);
	}
	tfm_gguf_free(g);
}

void fuzz_ckpt_bytes(const uint8_t *data, size_t size, const char *fmt,
		     int (*bid)(const uint8_t *, size_t),
		     int (*parse)(struct tfm_ckpt *, const uint8_t *, size_t))
{
	struct tfm_ckpt *c = NULL;
	struct tfm_spec s;
	bid(data, size);
	if (tfm_ckpt_new(&c, "fuzz.bin", fmt))
		return;
	int st = parse(c, data, size);
	fuzz_check_status(st);
	if (!st) {
		FUZZ_ASSERT(c->config);
		struct tfm_model_tensor *t = calloc((size_t)c->n_tensors + 1, sizeof *t);
		for (int64_t i = 0; t && i < c->n_tensors; i++) {
			const struct tfm_ckpt_tensor *ct = &c->tensors[i];
			fuzz_touch(ct->data, ct->nbytes);
			t[i] = (struct tfm_model_tensor){ ct->name, ct->type, ct->n_dims,
				{ ct->ne[0], ct->ne[1], ct->ne[2], ct->ne[3] }, ct->data };
		}
		st = tfm_spec_from_config(&s, c->config);
		fuzz_check_status(st);
		if (!st && t) {
			fuzz_spec(&s);
			fuzz_model(&s, t, c->n_tensors);
		}
		free(t);
	}
	tfm_ckpt_close(c);
}
