/* test_tokenizer.c: tokenizers against other programs' outputs: llama.cpp's
 * tokenizer conformance vectors (SentencePiece BPE, byte-level BPE,
 * WordPiece), llama2.c's encoder on tok512, decoding round trips, Hugging
 * Face tokenizer directories (tokenizer.json, tokenizer.model, Marian's
 * source.spm + vocab.json) against transformers' ids, RWKV's world
 * vocabulary against BlinkDL's reference tokenizer and llama.cpp. */
#include "t.h"

#include "text/tokenizer-impl.h"
#include "format/ckpt-impl.h"
#include "format/convert.h"

#include <jansson.h>

/* Run one llama.cpp vector file: .inp strings separated by
 * "\n__ggml_vocab_test__\n", .out one line of ids per string (no BOS). */
static void run_vectors(const char *name, int *n_ok, int *n_all)
{
	char *pg = t_path("%s/tokenizers/llama.cpp-vocab/%s", t_shared(), name);
	char *pi = t_path("%s.inp", pg), *po = t_path("%s.out", pg);
	struct tfm_blob bg, bi, bo;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *tok = NULL;
	*n_ok = *n_all = 0;
	CHECK_OK(tfm_blob_open(&bg, pg));
	CHECK_OK(tfm_blob_open(&bi, pi));
	CHECK_OK(tfm_blob_open(&bo, po));
	CHECK_OK(tfm_gguf_parse(&g, bg.data, bg.size, pg));
	int st = tfm_tokenizer_from_gguf(&tok, g);
	CHECK_OK(st);
	if (st)
		goto done;
	const char *sep = "\n__ggml_vocab_test__\n";
	const char *in = (const char *)bi.data, *iend = in + bi.size;
	const char *out = (const char *)bo.data, *oend = out + bo.size;
	int bad_shown = 0;
	while (in < iend) {
		const char *e = memmem(in, (size_t)(iend - in), sep, strlen(sep));
		size_t n_in = e ? (size_t)(e - in) : (size_t)(iend - in);
		/* the file ends with a separator: a trailing empty piece is no test */
		if (!e && n_in == 0)
			break;
		const char *ol = memchr(out, '\n', (size_t)(oend - out));
		size_t n_out = ol ? (size_t)(ol - out) : (size_t)(oend - out);
		int32_t want[4096];
		size_t nw = 0;
		char *line = strndup(out, n_out), *save = NULL;
		for (char *w = strtok_r(line, " \t", &save); w && nw < 4096; w = strtok_r(NULL, " \t", &save))
			want[nw++] = (int32_t)strtol(w, NULL, 10);
		free(line);
		int32_t *ids;
		size_t n;
		int ok = 0;
		if (tfm_tokenize(tok, in, n_in, 0, &ids, &n) == TFM_OK) {
			ok = n == nw && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
			if (!ok && bad_shown++ < 5) {
				fprintf(stderr, "%s: mismatch on '%.*s'\n  got ", name, (int)n_in, in);
				for (size_t k = 0; k < n; k++)
					fprintf(stderr, " %d", ids[k]);
				fprintf(stderr, "\n  want");
				for (size_t k = 0; k < nw; k++)
					fprintf(stderr, " %d", want[k]);
				fputc('\n', stderr);
			}
			free(ids);
		}
		(*n_all)++;
		*n_ok += ok;
		in += n_in + (e ? strlen(sep) : 0);
		out += n_out + (ol ? 1 : 0);
		if (!e)
			break;
	}
	printf("%s: %d of %d strings match\n", name, *n_ok, *n_all);
done:
	tfm_tokenizer_free(tok);
	tfm_gguf_free(g);
	tfm_blob_close(&bg);
	tfm_blob_close(&bi);
	tfm_blob_close(&bo);
	free(pg);
	free(pi);
	free(po);
}

static void t_vectors_spm(void)
{
	int ok, all;
	run_vectors("ggml-vocab-llama-spm.gguf", &ok, &all);
	CHECK(all > 20);
	CHECK_MSG(ok == all, "llama-spm: %d of %d", ok, all);
}

static void t_vectors_gpt2(void)
{
	int ok, all;
	run_vectors("ggml-vocab-gpt-2.gguf", &ok, &all);
	CHECK(all > 20);
	CHECK_MSG(ok == all, "gpt-2: %d of %d", ok, all);
}

static void t_vectors_bert(void)
{
	int ok, all;
	run_vectors("ggml-vocab-bert-bge.gguf", &ok, &all);
	CHECK(all > 20);
	CHECK_MSG(ok == all, "bert-bge: %d of %d", ok, all);
}

static struct tfm_tokenizer *tok512(struct tfm_blob *b)
{
	char *p = t_path("%s/models/stories260K/tok512.bin", t_shared());
	struct tfm_tokenizer *t = NULL;
	CHECK_OK(tfm_blob_open(b, p));
	CHECK_OK(tfm_tokenizer_from_llama2c(&t, b->data, b->size, 512));
	free(p);
	return t;
}

static int same(const int32_t *a, size_t n, const int32_t *b, size_t m)
{
	return n == m && !memcmp(a, b, n * sizeof *a);
}

/* Expected ids from llama2.c's encode() re-done in Python (a plain
 * transcription of run.c's loop: BOS, the " " dummy prefix, per-character
 * lookup with byte fallback id = byte + 3, then repeatedly merge the best
 * scoring adjacent pair) over tok512.bin, independent of this C code. */
static void t_llama2c(void)
{
	struct tfm_blob b;
	struct tfm_tokenizer *t = tok512(&b);
	if (!t)
		return;
	CHECK(tfm_tokenizer_n_vocab(t) == 512);
	CHECK(tfm_tokenizer_bos(t) == 1 && tfm_tokenizer_eos(t) == 2);
	CHECK(tfm_tokenizer_add_bos(t) == 1);
	int32_t *ids;
	size_t n;
	static const int32_t once[] = { 1, 403, 407, 261, 378 };
	CHECK_OK(tfm_tokenize(t, "Once upon a time", 16, 1, &ids, &n));
	CHECK(same(ids, n, once, 5));
	free(ids);
	static const int32_t hello[] = { 346, 306, 414, 263, 304, 341 };
	CHECK_OK(tfm_tokenize(t, "Hello world", 11, 0, &ids, &n));
	CHECK(same(ids, n, hello, 6));
	free(ids);
	/* byte fallback for characters tok512 lacks */
	const char *u = "\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac";
	static const int32_t uni[] = { 1, 410, 485, 297, 412, 198, 178, 360, 410,
				       233, 154, 168, 233, 159, 175 };
	CHECK_OK(tfm_tokenize(t, u, strlen(u), 1, &ids, &n));
	CHECK(same(ids, n, uni, 15));
	/* decoding gives the text back (the leading space after BOS dropped) */
	char *text;
	size_t len;
	CHECK_OK(tfm_detokenize(t, ids, n, &text, &len));
	CHECK(len == strlen(u) && !strcmp(text, u));
	free(text);
	free(ids);
	CHECK_OK(tfm_tokenize(t, "", 0, 1, &ids, &n));
	CHECK(n == 1 && ids[0] == 1);
	free(ids);
	char buf[256];
	CHECK(tfm_token_decode(t, 1, 403, buf, sizeof buf) == 4 && !memcmp(buf, "Once", 4));
	CHECK(tfm_token_decode(t, 403, 407, buf, sizeof buf) == 5 && !memcmp(buf, " upon", 5));
	CHECK(tfm_token_decode(t, 0, 2, buf, sizeof buf) == 0);
	CHECK(tfm_token_decode(t, 0, 13, buf, sizeof buf) == 1 && buf[0] == '\n'); /* <0x0A> */
	CHECK_ST(tfm_token_decode(t, 0, 512, buf, sizeof buf), TFM_E_INVAL);
	size_t pl;
	const char *pc = tfm_token_piece(t, 13, &pl);
	CHECK(pc && pl == 6 && !memcmp(pc, "<0x0A>", 6));
	tfm_tokenizer_free(t);
	tfm_blob_close(&b);
	/* truncated files are refused */
	CHECK_ST(tfm_tokenizer_from_llama2c(&t, (const uint8_t *)"\4\0\0\0\0\0", 6, 512), TFM_E_FORMAT);
}

static void t_roundtrip(void)
{
	static const char *names[] = { "ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf" };
	const char *text = "Hello world!\n  tabs\tand \xe2\x80\x94 unicode: \xe6\x97\xa5\xe6\x9c\xac "
			   "\xf0\x9f\xa6\x99 123456";
	for (int k = 0; k < 2; k++) {
		char *p = t_path("%s/tokenizers/llama.cpp-vocab/%s", t_shared(), names[k]);
		struct tfm_blob b;
		struct tfm_gguf *g = NULL;
		struct tfm_tokenizer *t = NULL;
		CHECK_OK(tfm_blob_open(&b, p));
		CHECK_OK(tfm_gguf_parse(&g, b.data, b.size, p));
		CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
		if (t) {
			int32_t *ids;
			size_t n, len;
			char *back;
			CHECK_OK(tfm_tokenize(t, text, strlen(text), 1, &ids, &n));
			CHECK(n > 1 && ids[0] == tfm_tokenizer_bos(t));
			CHECK_OK(tfm_detokenize(t, ids, n, &back, &len));
			CHECK_MSG(!strcmp(back, text), "%s: '%s'", names[k], back);
			free(back);
			free(ids);
		}
		tfm_tokenizer_free(t);
		tfm_gguf_free(g);
		tfm_blob_close(&b);
		free(p);
	}
}

static void t_pretok_unknown(void)
{
	struct tfm_pretok *p;
	CHECK_ST(tfm_pretok_new(&p, "no-such-pre"), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "no-such-pre") != NULL);
	CHECK_OK(tfm_pretok_new(&p, "deepseek-llm"));
	tfm_pretok_free(p);
	CHECK_OK(tfm_pretok_new(&p, "deepseek-v3"));
	tfm_pretok_free(p);
	CHECK_OK(tfm_pretok_new(&p, "qwen2"));
	tfm_pretok_free(p);
	CHECK_OK(tfm_pretok_new(&p, "bloom"));
	tfm_pretok_free(p);
}

/* tfm_tokenizer_to_gguf from side files, read back with from_gguf. */
static struct tfm_tokenizer *via_gguf(const char *const *names, const void *const *data,
				      const size_t *sizes, int n, int want_st)
{
	struct tfm_ckpt_file files[4];
	struct tfm_ckpt c = { 0 };
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = NULL;
	for (int i = 0; i < n; i++)
		files[i] = (struct tfm_ckpt_file){ (char *)names[i], (uint8_t *)data[i], sizes[i] };
	c.source = "test";
	c.files = files;
	c.n_files = n;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_ST(tfm_tokenizer_to_gguf(&c, g), want_st);
	if (want_st == TFM_OK)
		CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
	tfm_gguf_free(g);
	return t;
}

static void t_import_llama2c(void)
{
	struct tfm_blob b;
	char *p = t_path("%s/models/stories260K/tok512.bin", t_shared());
	CHECK_OK(tfm_blob_open(&b, p));
	const char *names[] = { "tokenizer.bin" };
	const void *data[] = { b.data };
	size_t sizes[] = { b.size };
	struct tfm_ckpt_file f = { "tokenizer.bin", (uint8_t *)b.data, b.size };
	struct tfm_ckpt c = { .source = "t", .files = &f, .n_files = 1 };
	struct tfm_gguf *g = NULL;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_tokenizer_to_gguf(&c, g));
	const char *s;
	size_t n;
	CHECK_OK(tfm_gguf_get_str(g, "tokenizer.ggml.model", &s, &n));
	CHECK(n == 5 && !memcmp(s, "llama", 5));
	int64_t types[512];
	CHECK_OK(tfm_gguf_get_arr_i64(g, "tokenizer.ggml.token_type", types, 512));
	/* as llama.cpp's llama2c converter: unk 2, bos/eos 3 (control), <0xNN> 6 */
	CHECK(types[0] == 2 && types[1] == 3 && types[2] == 3 && types[13] == 6 && types[300] == 1);
	CHECK_OK(tfm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 403, &s, &n));
	CHECK(n == 7 && !memcmp(s, "\xe2\x96\x81Once", 7)); /* " Once" with U+2581 */
	CHECK(tfm_gguf_get_int_or(g, "tokenizer.ggml.bos_token_id", -1) == 1);
	CHECK(tfm_gguf_get_int_or(g, "tokenizer.ggml.add_bos_token", -1) == 1);
	tfm_gguf_free(g);
	/* the GGUF tokenizer encodes as llama2.c does (ids from the python encoder) */
	struct tfm_tokenizer *t = via_gguf(names, data, sizes, 1, TFM_OK);
	if (t) {
		int32_t *ids;
		static const int32_t once[] = { 1, 403, 407, 261, 378 };
		CHECK_OK(tfm_tokenize(t, "Once upon a time", 16, 1, &ids, &n));
		CHECK(same(ids, n, once, 5));
		char *text;
		CHECK_OK(tfm_detokenize(t, ids, n, &text, &n));
		CHECK(!strcmp(text, "Once upon a time"));
		free(text);
		free(ids);
	}
	tfm_tokenizer_free(t);
	tfm_blob_close(&b);
	free(p);
}

static void t_import_hf(void)
{
	int32_t *ids;
	size_t n;
	/* WordPiece vocab.txt; "Hello worlds!" by hand: hello | world ##s | ! */
	const char *vt = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n!\n";
	const char *n1[] = { "vocab.txt" };
	const void *d1[] = { vt };
	size_t s1[] = { strlen(vt) };
	struct tfm_tokenizer *t = via_gguf(n1, d1, s1, 1, TFM_OK);
	if (t) {
		static const int32_t want[] = { 2, 4, 5, 6, 7, 3 };
		CHECK_OK(tfm_tokenize(t, "Hello worlds!", 13, 1, &ids, &n));
		CHECK(same(ids, n, want, 6));
		free(ids);
		static const int32_t unk[] = { 1 };
		CHECK_OK(tfm_tokenize(t, "xyz", 3, 0, &ids, &n));
		CHECK(same(ids, n, unk, 1));
		free(ids);
	}
	tfm_tokenizer_free(t);
	/* byte-level BPE tokenizer.json; "ab ab" by hand: words "ab", " ab";
	 * "a b" (rank 0) then "\u0120 ab" (rank 1) give ab=2, \u0120ab=4 */
	const char *tj = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,"
			 "\"\\u0120\":3,\"\\u0120ab\":4},\"merges\":[\"a b\",\"\\u0120 ab\"]},"
			 "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
			 "\"added_tokens\":[{\"id\":5,\"content\":\"<|end|>\",\"special\":true}]}";
	const char *n2[] = { "tokenizer.json" };
	const void *d2[] = { tj };
	size_t s2[] = { strlen(tj) };
	t = via_gguf(n2, d2, s2, 1, TFM_OK);
	if (t) {
		static const int32_t want[] = { 2, 4 };
		CHECK_OK(tfm_tokenize(t, "ab ab", 5, 0, &ids, &n));
		CHECK(same(ids, n, want, 2));
		free(ids);
		CHECK(tfm_tokenizer_n_vocab(t) == 6);
		char buf[256];
		CHECK(tfm_token_decode(t, -1, 5, buf, sizeof buf) == 0); /* control */
	}
	tfm_tokenizer_free(t);
	/* an unknown pre-tokenizer structure is refused, naming it */
	const char *bad = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},"
			  "\"pre_tokenizer\":{\"type\":\"Whitespace\"}}";
	const void *d3[] = { bad };
	size_t s3[] = { strlen(bad) };
	via_gguf(n2, d3, s3, 1, TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "Whitespace") != NULL);
	/* no tokenizer files: nothing written, no error */
	struct tfm_ckpt_file f4 = { "config.json", (uint8_t *)"{}", 2 };
	struct tfm_ckpt c4 = { .source = "t", .files = &f4, .n_files = 1 };
	struct tfm_gguf *g = NULL;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_tokenizer_to_gguf(&c4, g));
	CHECK(tfm_gguf_find(g, "tokenizer.ggml.model") < 0);
	tfm_gguf_free(g);
}

/* A SentencePiece-style BPE tokenizer.json (Llama 2's layout: Prepend and
 * Replace normalizers, byte fallback, BOS from a TemplateProcessing),
 * written by hand.  Ids from the tokenizers library 0.22.2
 * (Tokenizer.from_str(...).encode(text).ids).  "ab" shows that only listed
 * merges join: "a b" (rank 0) comes first, then "\u2581" + "ab" is the
 * token "\u2581ab" but no merge lists that pair, so it stays apart. */
static void t_import_spm_json(void)
{
	static const char head[] =
		"{\"added_tokens\":[{\"id\":1,\"content\":\"<s>\",\"special\":true}],"
		"\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[%s"
		"{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},"
		"\"pre_tokenizer\":null,"
		"\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
		"{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
		"\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[1],\"tokens\":[\"<s>\"]}}},"
		"\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
		"\"byte_fallback\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1,\"<0xC3>\":2,\"<0xA9>\":3,"
		"\"\\u2581\":4,\"a\":5,\"b\":6,\"ab\":7,\"\\u2581a\":8,\"\\u2581ab\":9,\"ba\":10},"
		"\"merges\":[\"a b\",\"\\u2581 a\",\"\\u2581a b\",\"b a\"]}}";
	static const char prepend[] = "{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},";
	static const struct { int prefix; const char *text; int32_t want[6]; size_t n; } cs[] = {
		{ 1, "ab", { 1, 4, 7 }, 3 },
		{ 1, "ab ba", { 1, 4, 7, 4, 10 }, 5 },
		{ 1, "\xc3\xa9", { 1, 4, 2, 3 }, 4 },
		{ 1, "bab", { 1, 4, 6, 7 }, 4 },
		{ 0, "ab", { 1, 7 }, 2 },
		{ 0, "ab ba", { 1, 7, 4, 10 }, 4 },
		{ 0, "\xc3\xa9", { 1, 2, 3 }, 3 },
	};
	const char *names[] = { "tokenizer.json" };
	char buf[2048];
	for (int prefix = 1; prefix >= 0; prefix--) {
		snprintf(buf, sizeof buf, head, prefix ? prepend : "");
		const void *data[] = { buf };
		size_t sizes[] = { strlen(buf) };
		struct tfm_tokenizer *t = via_gguf(names, data, sizes, 1, TFM_OK);
		if (!t)
			continue;
		CHECK(tfm_tokenizer_add_bos(t) == 1 && tfm_tokenizer_bos(t) == 1);
		for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
			if (cs[i].prefix != prefix)
				continue;
			int32_t *ids;
			size_t n;
			CHECK_OK(tfm_tokenize(t, cs[i].text, strlen(cs[i].text), 1, &ids, &n));
			CHECK_MSG(same(ids, n, cs[i].want, cs[i].n), "prefix %d '%s': %zu ids", prefix,
				  cs[i].text, n);
			free(ids);
		}
		char out[64];
		int k = tfm_token_decode(t, -1, 2, out, sizeof out);
		CHECK(k == 1 && (unsigned char)out[0] == 0xc3); /* <0xC3> is a byte token */
		tfm_tokenizer_free(t);
	}
	/* a normalizer tfm does not apply is refused, naming it */
	snprintf(buf, sizeof buf, head, "{\"type\":\"NFKC\"},");
	const void *data[] = { buf };
	size_t sizes[] = { strlen(buf) };
	via_gguf(names, data, sizes, 1, TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "NFKC") != NULL);
}

/* The ids of exp's texts ({"texts": [{"text", "ids", "ids_plain"}]}, as
 * transformers gives them) against t's, with the special tokens t adds
 * (tfm_tokenizer_add_bos) and without.  Returns the number of texts. */
static int check_texts(const struct tfm_tokenizer *t, json_t *exp, const char *what)
{
	size_t i;
	json_t *e;
	int n_text = 0;
	json_array_foreach(json_object_get(exp, "texts"), i, e) {
		const char *s = json_string_value(json_object_get(e, "text"));
		CHECK_MSG(s != NULL, "%s: text %zu", what, i);
		for (int plain = 0; s && plain < 2; plain++) {
			json_t *w = json_object_get(e, plain ? "ids_plain" : "ids");
			int32_t *ids = NULL;
			size_t n = 0;
			CHECK_OK(tfm_tokenize(t, s, strlen(s), plain ? 0 : tfm_tokenizer_add_bos(t), &ids,
					      &n));
			int ok = n == json_array_size(w);
			for (size_t k = 0; ok && k < n; k++)
				ok = ids[k] == json_integer_value(json_array_get(w, k));
			CHECK_MSG(ok, "%s: '%s' (%s): %zu ids, want %zu", what, s,
				  plain ? "plain" : "with special tokens", n, json_array_size(w));
			free(ids);
		}
		n_text++;
	}
	return n_text;
}

/* tests/data/tok-llama3 (scripts/make-tok-fixtures): a directory as Llama 3
 * ships its tokenizer.  BOS comes from tokenizer.json's post_processor
 * (TemplateProcessing inside a Sequence), tokenizer_config.json carries
 * model_max_length 1000000000000000019884624838656, eos_token_id is a list
 * in config.json and generation_config.json.  Ids against transformers'
 * tokenizer (expected.json). */
static void t_import_llama3(void)
{
	struct tfm_convert *cv = NULL;
	struct tfm_convert_opts co = { .dtype = -1 };
	struct tfm_tokenizer *t = NULL;
	json_error_t je;
	char *dir = t_path("tests/data/tok-llama3"), *ep = t_path("%s/expected.json", dir);
	json_t *exp = json_load_file(ep, 0, &je);
	CHECK_MSG(exp != NULL, "%s: %s", ep, je.text);
	CHECK_OK(tfm_convert_open(&cv, dir, &co));
	if (cv)
		CHECK_OK(tfm_tokenizer_from_gguf(&t, tfm_convert_gguf(cv)));
	if (!t || !exp)
		goto done;
	int32_t bos = (int32_t)json_integer_value(json_object_get(exp, "bos"));
	CHECK(tfm_tokenizer_add_bos(t) == 1);
	CHECK(tfm_tokenizer_bos(t) == bos);
	CHECK(!tfm_tokenizer_is_eos(t, bos));
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(exp, "eos_ids"), i, x)
		CHECK_MSG(tfm_tokenizer_is_eos(t, (int32_t)json_integer_value(x)), "eos %zu", i);
	CHECK(check_texts(t, exp, dir) >= 5);
done:
	tfm_tokenizer_free(t);
	tfm_convert_close(cv);
	json_decref(exp);
	free(dir), free(ep);
}

/* Every decoder fixture's tokenizer (scripts/make-fixture-tokenizers:
 * byte-level BPE or SentencePiece-style BPE trained with the tokenizers
 * library, the kind of each in MANIFEST.json "tokenizers") through
 * tfm_convert: whether BOS is added, which ids BOS and EOS are, and the ids
 * of tok-expected.json's texts, which transformers gave. */
static void t_fixture_tokenizers(void)
{
	json_error_t je;
	char *mp = t_path("tests/fixtures/MANIFEST.json");
	json_t *man = json_load_file(mp, 0, &je), *kind;
	CHECK_MSG(man != NULL, "%s: %s", mp, je.text);
	const char *name;
	int n_fix = 0;
	json_object_foreach(json_object_get(json_object_get(man, "tokenizers"), "kinds"), name, kind) {
		struct tfm_convert *cv = NULL;
		struct tfm_convert_opts co = { .dtype = -1 };
		struct tfm_tokenizer *t = NULL;
		char *dir = t_path("tests/fixtures/%s", name);
		char *ep = t_path("%s/tok-expected.json", dir);
		json_t *exp = json_load_file(ep, 0, &je);
		CHECK_MSG(exp != NULL, "%s: %s", ep, je.text);
		CHECK_OK(tfm_convert_open(&cv, dir, &co));
		if (cv)
			CHECK_OK(tfm_tokenizer_from_gguf(&t, tfm_convert_gguf(cv)));
		if (t && exp) {
			int add_bos = json_is_true(json_object_get(exp, "add_bos"));
			json_t *bos = json_object_get(exp, "bos"), *eos = json_object_get(exp, "eos");
			CHECK_MSG(tfm_tokenizer_add_bos(t) == add_bos, "%s: add_bos %d", name,
				  tfm_tokenizer_add_bos(t));
			if (json_is_integer(bos))
				CHECK_MSG(tfm_tokenizer_bos(t) == json_integer_value(bos), "%s: bos %d", name,
					  tfm_tokenizer_bos(t));
			if (json_is_integer(eos))
				CHECK_MSG(tfm_tokenizer_eos(t) == json_integer_value(eos), "%s: eos %d", name,
					  tfm_tokenizer_eos(t));
			CHECK_MSG(check_texts(t, exp, name) >= 6, "%s: too few texts", name);
			n_fix++;
		}
		tfm_tokenizer_free(t);
		tfm_convert_close(cv);
		json_decref(exp);
		free(dir), free(ep);
	}
	CHECK(n_fix >= 50);
	json_decref(man);
	free(mp);
}

/* A SentencePiece ModelProto written by hand (protobuf wire format):
 * pieces <unk> (type 2), <s>, </s> (type 3), "\u2581a" (score -1), "a"
 * (score -2), "b" (score -3); trainer_spec model_type = 2 (BPE). */
static void t_import_spm_model(void)
{
	uint8_t buf[256];
	size_t k = 0;
	static const struct { const char *p; float score; int type; } pc[] = {
		{ "<unk>", 0, 2 }, { "<s>", 0, 3 }, { "</s>", 0, 3 },
		{ "\xe2\x96\x81" "a", -1, 1 }, { "a", -2, 1 }, { "b", -3, 1 } };
	for (int i = 0; i < 6; i++) {
		size_t pl = strlen(pc[i].p);
		buf[k++] = 0x0a;                /* field 1, length-delimited */
		buf[k++] = (uint8_t)(2 + pl + 5 + 2);
		buf[k++] = 0x0a;                /* piece */
		buf[k++] = (uint8_t)pl;
		memcpy(buf + k, pc[i].p, pl);
		k += pl;
		buf[k++] = 0x15;                /* score: field 2, fixed32 */
		memcpy(buf + k, &pc[i].score, 4);
		k += 4;
		buf[k++] = 0x18;                /* type: field 3, varint */
		buf[k++] = (uint8_t)pc[i].type;
	}
	buf[k++] = 0x12;                        /* trainer_spec */
	buf[k++] = 2;
	buf[k++] = 0x18;                        /* model_type */
	buf[k++] = 2;
	const char *names[] = { "tokenizer.model" };
	const void *data[] = { buf };
	size_t sizes[] = { k };
	struct tfm_tokenizer *t = via_gguf(names, data, sizes, 1, TFM_OK);
	if (t) {
		int32_t *ids;
		size_t n;
		/* " ab" -> "\u2581a" (3), "b" (5) */
		static const int32_t want[] = { 1, 3, 5 };
		CHECK_OK(tfm_tokenize(t, "ab", 2, 1, &ids, &n));
		CHECK(same(ids, n, want, 3));
		free(ids);
	}
	tfm_tokenizer_free(t);
	buf[1] = 0xff; /* truncated */
	via_gguf(names, data, sizes, 1, TFM_E_FORMAT);
}

/* Control tokens written in the text, with and without parse_special.  Ids
 * of "a", "b", "\u2581a", "\u2581b" read from the vocabularies with the gguf
 * Python package; after a special token SentencePiece prefixes a space
 * again (llama.cpp's is_prev_special). */
static void t_special(void)
{
	static const char *names[] = { "ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf" };
	static const char *texts[] = { "a<|endoftext|>b", "a</s>b" };
	static const int32_t want[2][3] = { { 64, 50256, 65 }, { 263, 2, 289 } };
	static const int32_t ctl[] = { 50256, 2 };
	for (int k = 0; k < 2; k++) {
		char *p = t_path("%s/tokenizers/llama.cpp-vocab/%s", t_shared(), names[k]);
		struct tfm_blob b;
		struct tfm_gguf *g = NULL;
		struct tfm_tokenizer *t = NULL;
		CHECK_OK(tfm_blob_open(&b, p));
		CHECK_OK(tfm_gguf_parse(&g, b.data, b.size, p));
		CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
		if (t) {
			int32_t *ids;
			size_t n;
			CHECK_OK(tfm_tokenize_special(t, texts[k], strlen(texts[k]), 0, 1, &ids, &n));
			CHECK_MSG(same(ids, n, want[k], 3), "%s", names[k]);
			free(ids);
			CHECK_OK(tfm_tokenize(t, texts[k], strlen(texts[k]), 0, &ids, &n));
			int seen = 0;
			for (size_t i = 0; i < n; i++)
				seen |= ids[i] == ctl[k];
			CHECK(n > 3 && !seen);
			free(ids);
		}
		tfm_tokenizer_free(t);
		tfm_gguf_free(g);
		tfm_blob_close(&b);
		free(p);
	}
}

/* Pre-tokenizer splits.  Expected pieces (joined by \001) come from Python's
 * `regex` module running the same regex lists with llama.cpp's
 * unicode_regex_split semantics (each regex splits every piece, matches and
 * gaps both kept): an independent regex engine against PCRE2. */
static const char *const pretok_texts[] = {
	"Hello World! it's  I'LL 1234567 x\n\n  \tdone  ",
	"caf\303\251 \303\200b \346\227\245\346\234\254\350\252\236\343\200\202 "
	"\357\275\206\357\275\225\357\275\214\357\275\214 3.14 $(a+b)^2 <= c;",
	"  \321\202\320\265\321\201\321\202 \330\247\331\204\330\271\330\261\330\250"
	"\331\212\330\251 \360\237\246\231 x\r\ny  ",
};
static const struct { const char *pre; int text; const char *want; } pretok_cases[] = {
	{ "llama3", 0, "Hello\001 World\001!\001 it\001's\001 \001 I\001'LL\001 \001123\001456\0017\001 x\001\012\012\001  \001\011done\001  " },
	{ "llama3", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\00114\001 $(\001a\001+b\001)^\0012\001 <=\001 c\001;" },
	{ "llama3", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\012\001y\001  " },
	{ "qwen2", 0, "Hello\001 World\001!\001 it\001's\001 \001 I\001'LL\001 \0011\0012\0013\0014\0015\0016\0017\001 x\001\012\012\001  \001\011done\001  " },
	{ "qwen2", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\0011\0014\001 $(\001a\001+b\001)^\0012\001 <=\001 c\001;" },
	{ "qwen2", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\012\001y\001  " },
	{ "default", 0, "Hello\001 World\001!\001 it\001'\001s\001 \001 I\001'\001LL\001 \001123\001456\0017\001 x\001\012\012  \001\011\001done\001  " },
	{ "default", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\00114\001 \001$(\001a\001+\001b\001)^\0012\001 \001<=\001 c\001;" },
	{ "default", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\001\012\001y\001  " },
	{ "gpt-2", 0, "Hello\001 World\001!\001 it\001's\001 \001 I\001'\001LL\001 1234567\001 x\001\012\012  \001\011\001done\001  " },
	{ "gpt-2", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 3\001.\00114\001 $(\001a\001+\001b\001)^\0012\001 <=\001 c\001;" },
	{ "gpt-2", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\001\012\001y\001  " },
	{ "falcon", 0, "Hello\001 World\001!\001 it\001'\001s\001 \001 I\001'\001LL\001 \001123\001456\0017\001 x\001\012\012  \001\011\001done\001  " },
	{ "falcon", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 3\001.\00114\001 \001$(\001a\001+\001b\001)^\0012\001 \001<=\001 c\001;" },
	{ "falcon", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\001\012\001y\001  " },
	{ "starcoder", 0, "Hello\001 World\001!\001 it\001's\001 \001 I\001'\001LL\001 \0011\0012\0013\0014\0015\0016\0017\001 x\001\012\012  \001\011\001done\001  " },
	{ "starcoder", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\0011\0014\001 $(\001a\001+\001b\001)^\0012\001 <=\001 c\001;" },
	{ "starcoder", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\001\012\001y\001  " },
	{ "deepseek-llm", 0, "Hello\001 World\001!\001 it\001'\001s\001 \001 I\001'\001LL\001 \0011234567\001 x\001\012\001\012\001  \001\011done\001  " },
	{ "deepseek-llm", 1, "caf\001\303\251\001 \303\200\001b\001 \001\346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\00114\001 $(\001a\001+\001b\001)^\0012\001 <=\001 c\001;" },
	{ "deepseek-llm", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251 \360\237\246\231\001 x\001\015\001\012\001y\001  " },
	{ "deepseek-coder", 0, "Hello\001 World\001!\001 it\001'\001s\001 \001 I\001'\001LL\001 \0011\0012\0013\0014\0015\0016\0017\001 x\001\012\001\012\001  \001\011done\001  " },
	{ "deepseek-coder", 1, "caf\303\251\001 \303\200b\001 \001\346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\0011\0014\001 $\001(\001a\001+\001b\001)\001^\0012\001 <=\001 c\001;" },
	{ "deepseek-coder", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\001\012\001y\001  " },
	{ "deepseek-v3", 0, "Hello\001 World\001!\001 it\001's\001 \001 I\001'LL\001 \001123\001456\0017\001 x\001\012\012\001  \001\011done\001  " },
	{ "deepseek-v3", 1, "caf\303\251\001 \303\200b\001 \001\346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\00114\001 $(\001a\001+b\001)^\0012\001 <=\001 c\001;" },
	{ "deepseek-v3", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\012\001y\001  " },
	{ "bloom", 0, "Hello\001 World\001!\001 it's\001 \001 I'LL\001 1234567\001 x\001\012\012  \011\001done\001  " },
	{ "bloom", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 3\001.\00114\001 $\001(\001a+b\001)\001^2\001 <=\001 c;" },
	{ "bloom", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\012\001y\001  " },
	{ "viking", 0, "Hello\001 World\001!\001 it's\001 \001 I'LL\001 \0011\0012\0013\0014\0015\0016\0017\001 x\001\012\012  \011\001done\001  " },
	{ "viking", 1, "caf\303\251\001 \303\200b\001 \346\227\245\346\234\254\350\252\236\001\343\200\202\001 \357\275\206\357\275\225\357\275\214\357\275\214\001 \0013\001.\0011\0014\001 $\001(\001a+b\001)\001^\0012\001 <=\001 c;" },
	{ "viking", 2, " \001 \321\202\320\265\321\201\321\202\001 \330\247\331\204\330\271\330\261\330\250\331\212\330\251\001 \360\237\246\231\001 x\001\015\012\001y\001  " },
};

/* Hostile vocabularies (found by tests/fuzz): text a vocabulary cannot
 * encode, with no unknown token to fall back on, is an error, never id -1
 * (fuzz_vocab: a vocab.txt without [UNK]; a SentencePiece vocabulary without
 * byte tokens whose unknown_token_id is out of range); a tokenizer.bin too
 * short for llama2.c's three special tokens is refused at import instead of
 * written as a vocabulary tfm cannot read back (fuzz_l2ctok). */
static void t_hostile_vocab(void)
{
	int32_t *ids = NULL;
	size_t n = 0;
	const char *vt = "[PAD]\n[CLS]\n[SEP]\nhello\n";
	const char *n1[] = { "vocab.txt" };
	const void *d1[] = { vt };
	size_t s1[] = { strlen(vt) };
	struct tfm_tokenizer *t = via_gguf(n1, d1, s1, 1, TFM_OK);
	if (t) {
		CHECK_OK(tfm_tokenize(t, "hello", 5, 0, &ids, &n));
		CHECK(n == 1 && ids[0] == 3);
		free(ids);
		ids = NULL;
		CHECK_ST(tfm_tokenize(t, "hello xyz", 9, 0, &ids, &n), TFM_E_FORMAT);
		CHECK(ids == NULL);
	}
	tfm_tokenizer_free(t);
	struct tfm_gguf *g = NULL;
	const char *toks[] = { "a", "b", "\xe2\x96\x81" };
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_str(g, "tokenizer.ggml.model", "llama"));
	CHECK_OK(tfm_gguf_set_arr_str(g, "tokenizer.ggml.tokens", toks, NULL, 3));
	CHECK_OK(tfm_gguf_set_u32(g, "tokenizer.ggml.unknown_token_id", 7));
	t = NULL;
	CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
	if (t) {
		CHECK_OK(tfm_tokenize(t, "ab", 2, 0, &ids, &n));
		free(ids);
		ids = NULL;
		CHECK_ST(tfm_tokenize(t, "axb", 3, 0, &ids, &n), TFM_E_FORMAT);
		CHECK(ids == NULL);
	}
	tfm_tokenizer_free(t);
	tfm_gguf_free(g);
	/* a byte-level BPE without merges (a merges.txt of its header only) is
	 * written with an empty merges array, which llama.cpp and tfm require */
	const char *vj = "{\"a\": 0, \"b\": 1, \"ab\": 2}", *mt = "#version: 0.2\n";
	const char *n2[] = { "vocab.json", "merges.txt" };
	const void *d2[] = { vj, mt };
	size_t s2[] = { strlen(vj), strlen(mt) };
	t = via_gguf(n2, d2, s2, 2, TFM_OK);
	CHECK(t != NULL);
	if (t) {
		static const int32_t want[] = { 0, 1 };
		CHECK_OK(tfm_tokenize(t, "ab", 2, 0, &ids, &n));
		CHECK(same(ids, n, want, 2));
		free(ids);
	}
	tfm_tokenizer_free(t);
	/* ids far past the entries given, or a config vocab_size far past the
	 * tokenizer, would be padded with [PAD] tokens: 60 bytes of JSON asked
	 * for 10^6 of them (fuzz_tokjson; an id up to 2^26 was accepted) */
	const char *sparse = "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0,"
			     "\"a\":1,\"b\":1000000}}}";
	const char *n4[] = { "tokenizer.json" };
	const void *d4[] = { sparse };
	size_t s4[] = { strlen(sparse) };
	via_gguf(n4, d4, s4, 1, TFM_E_FORMAT);
	const char *dense = "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"[UNK]\":0,"
			    "\"a\":1,\"b\":1000}}}";
	struct tfm_ckpt_file f5 = { "tokenizer.json", (uint8_t *)dense, strlen(dense) };
	struct tfm_ckpt c5 = { .source = "t", .files = &f5, .n_files = 1 };
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_tokenizer_to_gguf(&c5, g)); /* gaps are fine */
	CHECK(tfm_gguf_arr_n(g, tfm_gguf_find(g, "tokenizer.ggml.tokens")) == 1001);
	tfm_gguf_free(g);
	c5.config = json_pack("{sI}", "vocab_size", (json_int_t)50000000);
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_ST(tfm_tokenizer_to_gguf(&c5, g), TFM_E_FORMAT);
	tfm_gguf_free(g);
	json_decref(c5.config);
	/* no tokens at all; a merge with a NUL byte (merges.txt is raw text):
	 * written before, and then refused by tfm_tokenizer_from_gguf */
	const char *empty = "{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},"
			    "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}";
	const void *d6[] = { empty };
	size_t s6[] = { strlen(empty) };
	via_gguf(n4, d6, s6, 1, TFM_E_FORMAT);
	static const char nul_merge[] = "a\0x b\n";
	const void *d7[] = { vj, nul_merge };
	size_t s7[] = { strlen(vj), sizeof nul_merge - 1 };
	via_gguf(n2, d7, s7, 2, TFM_E_FORMAT);
	/* max_token_length, then two tokens of (score, length, bytes) */
	static const uint8_t two[] = { 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a',
				       0, 0, 0, 0, 1, 0, 0, 0, 'b' };
	const char *n3[] = { "tokenizer.bin" };
	const size_t lens[] = { 0, 4, sizeof two }; /* nothing, no token, two tokens */
	for (int i = 0; i < 3; i++) {
		const void *d3[] = { two };
		size_t s3[] = { lens[i] };
		via_gguf(n3, d3, s3, 1, TFM_E_FORMAT);
	}
}

struct joined { char buf[1024]; size_t n; };

static int join_piece(void *ctx, const char *w, size_t n)
{
	struct joined *j = ctx;
	if (j->n + n + 1 >= sizeof j->buf)
		return TFM_E_INVAL;
	if (j->n)
		j->buf[j->n++] = '\001';
	memcpy(j->buf + j->n, w, n);
	j->n += n;
	j->buf[j->n] = 0;
	return TFM_OK;
}

static void t_pretok(void)
{
	int ok = 0, all = 0;
	for (size_t i = 0; i < sizeof pretok_cases / sizeof pretok_cases[0]; i++) {
		struct tfm_pretok *p;
		struct joined j = { .n = 0 };
		const char *text = pretok_texts[pretok_cases[i].text];
		CHECK_OK(tfm_pretok_new(&p, pretok_cases[i].pre));
		CHECK_OK(tfm_pretok_split(p, text, strlen(text), join_piece, &j));
		tfm_pretok_free(p);
		all++;
		if (!strcmp(j.buf, pretok_cases[i].want))
			ok++;
		else
			fprintf(stderr, "pretok %s text %d:\n  got  %s\n  want %s\n", pretok_cases[i].pre,
				pretok_cases[i].text, j.buf, pretok_cases[i].want);
	}
	printf("pre-tokenizer splits: %d of %d match\n", ok, all);
	CHECK(ok == all);
}

/* The ids of a list of ints in j. */
static int same_json(const int32_t *ids, size_t n, json_t *w)
{
	int ok = n == json_array_size(w);
	for (size_t k = 0; ok && k < n; k++)
		ok = ids[k] == json_integer_value(json_array_get(w, k));
	return ok;
}

/* tests/data/tok-unigram-* (scripts/make-unigram-fixtures): SentencePiece
 * unigram models converted by transformers (XLM-R's nmt_nfkc charsmap, a
 * T5-like one with WhitespaceSplit, one with byte fallback, ALBERT's with
 * NFKD, StripAccents and Lowercase), through
 * tfm_convert as tfm-tok -m reads them.  Each text's ids from the fast
 * tokenizer with and without special tokens (special tokens in the text
 * are parsed, as tokenizers always does), the decoded text, the pairs;
 * then the same vocabulary from the .model file against SentencePiece's
 * own ids. */
static void t_unigram_fixtures(void)
{
	static const char *const names[] = { "xlmr", "t5", "bf", "albert" };
	int n_text = 0, n_spm = 0, n_pair = 0, n_dec = 0, n_tgt = 0;
	for (int f = 0; f < 4; f++) {
		struct tfm_convert *cv = NULL;
		struct tfm_convert_opts co = { .dtype = -1 };
		struct tfm_tokenizer *t = NULL, *ts = NULL;
		json_error_t je;
		char *dir = t_path("tests/data/tok-unigram-%s", names[f]);
		char *ep = t_path("%s/expected.json", dir), *mp = t_path("%s/spiece.model", dir);
		json_t *exp = json_load_file(ep, 0, &je), *e;
		size_t i;
		CHECK_MSG(exp != NULL, "%s: %s", ep, je.text);
		CHECK_OK(tfm_convert_open(&cv, dir, &co));
		if (cv)
			CHECK_OK(tfm_tokenizer_from_gguf(&t, tfm_convert_gguf(cv)));
		/* llama.cpp's flags for llama.cpp: T5's WhitespaceSplit drops runs
		 * of whitespace, which its spiece.model says as
		 * remove_extra_whitespaces (what llama.cpp's converter writes) */
		if (cv && f == 1)
			CHECK(tfm_gguf_get_int_or(tfm_convert_gguf(cv),
						  "tokenizer.ggml.remove_extra_whitespaces", -1) == 1);
		/* the .model (t5, bf) as a tokenizer.model: SentencePiece's pipeline
		 * (ALBERT's lowercasing and accent stripping are its tokenizer's,
		 * not SentencePiece's: its spiece.model is not compared) */
		struct tfm_blob b = { 0 };
		if (f > 0 && f < 3 && tfm_blob_open(&b, mp) == TFM_OK) {
			const char *fn[] = { "tokenizer.model" };
			const void *data[] = { b.data };
			size_t sizes[] = { b.size };
			ts = via_gguf(fn, data, sizes, 1, TFM_OK);
		}
		json_array_foreach(json_object_get(exp, "texts"), i, e) {
			const char *s = json_string_value(json_object_get(e, "text"));
			int32_t *ids = NULL;
			size_t n = 0;
			if (!t || !s)
				break;
			for (int plain = 0; plain < 2; plain++) {
				CHECK_OK(tfm_tokenize_special(t, s, strlen(s), !plain, 1, &ids, &n));
				CHECK_MSG(same_json(ids, n, json_object_get(e, plain ? "ids_plain" : "ids")),
					  "%s: '%s' (%s): %zu ids", names[f], s, plain ? "plain" : "special", n);
				if (plain) {
					/* tfm drops control tokens when decoding; transformers writes them */
					char *text = NULL;
					const char *want = json_string_value(json_object_get(e, "decoded"));
					CHECK_OK(tfm_detokenize(t, ids, n, &text, NULL));
					if (!strstr(s, "</s>")) {
						CHECK_MSG(text && !strcmp(text, want), "%s: decode '%s': '%s'",
							  names[f], want, text ? text : "");
						n_dec++;
					}
					free(text);
				}
				free(ids);
			}
			/* not Marian: a target text is framed as a source text,
			 * special tokens in it not parsed */
			int32_t *ti = NULL, *si = NULL;
			size_t tn = 0, sn = 0;
			int st_t = tfm_tokenize_target(t, s, strlen(s), &ti, &tn);
			int st_s = tfm_tokenize_seq(t, s, strlen(s), 0, &si, &sn);
			CHECK_MSG(st_t == st_s && same(ti, tn, si, sn), "%s: target '%s'", names[f], s);
			free(ti), free(si);
			n_tgt += st_t == TFM_OK;
			json_t *sw = json_object_get(e, "spm_ids");
			if (ts && sw) {
				CHECK_OK(tfm_tokenize(ts, s, strlen(s), 0, &ids, &n));
				CHECK_MSG(same_json(ids, n, sw), "%s tokenizer.model: '%s': %zu ids", names[f],
					  s, n);
				free(ids);
				n_spm++;
			}
			n_text++;
		}
		json_array_foreach(json_object_get(exp, "pairs"), i, e) {
			const char *a = json_string_value(json_object_get(e, "a"));
			const char *bb = json_string_value(json_object_get(e, "b"));
			int32_t *ids = NULL, *types = NULL;
			size_t n = 0;
			if (!t)
				break;
			CHECK_OK(tfm_tokenize_pair(t, a, strlen(a), bb, strlen(bb), &ids, &types, &n));
			CHECK_MSG(same_json(ids, n, json_object_get(e, "ids")), "%s: pair '%s' '%s'",
				  names[f], a, bb);
			free(ids), free(types);
			n_pair++;
		}
		tfm_blob_close(&b);
		tfm_tokenizer_free(t);
		tfm_tokenizer_free(ts);
		tfm_convert_close(cv);
		json_decref(exp);
		free(dir), free(ep), free(mp);
	}
	printf("unigram: %d texts, %d decoded, %d tokenizer.model texts, %d pairs, %d targets\n",
	       n_text, n_dec, n_spm, n_pair, n_tgt);
	CHECK(n_text >= 100 && n_spm >= 60 && n_pair >= 9 && n_tgt >= 100);
}

/* tests/data/tok-marian's side files as tfm-convert reads a Hugging Face
 * directory's (hfdir.c), with one file changed when file is not NULL: key
 * set true in its JSON object, else its bytes replaced by text (text_n
 * bytes, or a C string when text_n is 0), or the file dropped when text is
 * NULL too; through tfm_tokenizer_to_gguf (which must give want) and back.
 * *gp keeps the GGUF when not NULL. */
static struct tfm_tokenizer *marian_open(const char *dir, const char *file, const char *key,
					 const char *text, size_t text_n, int want,
					 struct tfm_gguf **gp)
{
	struct tfm_ckpt *c = NULL;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = NULL;
	char *cp = t_path("%s/config.json", dir);
	CHECK_OK(tfm_ckpt_new(&c, dir, "hf-dir"));
	if (!c)
		goto done;
	CHECK_OK(tfm_hf_load_beside(c, cp));
	for (int i = 0; file && i < c->n_files; i++) {
		struct tfm_ckpt_file *f = &c->files[i];
		char *s = NULL;
		size_t sn = 0;
		if (strcmp(f->name, file))
			continue;
		if (key) {
			json_t *j = json_loadb((const char *)f->data, f->size, JSON_DECODE_INT_AS_REAL,
					       NULL);
			CHECK(j != NULL);
			json_object_set_new(j, key, json_true());
			s = json_dumps(j, 0);
			sn = s ? strlen(s) : 0;
			json_decref(j);
		} else if (text) {
			sn = text_n ? text_n : strlen(text);
			if ((s = malloc(sn + 1)))
				memcpy(s, text, sn);
		} else {
			f->name[0] = '-'; /* no longer the file's name */
		}
		if (s) {
			free(f->data);
			f->data = (uint8_t *)s;
			f->size = sn;
		}
	}
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_ST(tfm_tokenizer_to_gguf(c, g), want);
	if (want == TFM_OK)
		CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
done:
	if (gp)
		*gp = g;
	else
		tfm_gguf_free(g);
	tfm_ckpt_close(c);
	free(cp);
	return t;
}

/* Each case's text against its ids, as a source (tfm_tokenize_seq, control
 * tokens parsed) or a target (tfm_tokenize_target); the number of cases. */
static int marian_cases(const struct tfm_tokenizer *t, json_t *cases, int target, const char *what)
{
	size_t i;
	json_t *e;
	int k = 0;
	json_array_foreach(cases, i, e) {
		const char *s = json_string_value(json_object_get(e, "text"));
		int32_t *ids = NULL;
		size_t n = 0;
		CHECK_OK(target ? tfm_tokenize_target(t, s, strlen(s), &ids, &n)
				: tfm_tokenize_seq(t, s, strlen(s), 1, &ids, &n));
		CHECK_MSG(same_json(ids, n, json_object_get(e, "ids")), "%s '%s': %zu ids", what, s, n);
		free(ids);
		k++;
	}
	return k;
}

/* target-alt.spm as target.spm: a target model with a normalizer of its
 * own (identity, spaces kept, no dummy prefix) and 14 pieces vocab.json
 * lacks; its keys, its targets, and source texts as before.  Then GGUFs
 * whose target scores are malformed are refused. */
static int marian_target_alt(const char *dir, json_t *cases)
{
	struct tfm_blob b = { 0 };
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = NULL;
	char *p = t_path("%s/target-alt.spm", dir);
	int n = 0;
	CHECK_OK(tfm_blob_open(&b, p));
	if (b.data)
		t = marian_open(dir, "target.spm", NULL, (const char *)b.data, b.size, TFM_OK, &g);
	if (!t)
		goto done;
	int64_t k = tfm_gguf_find(g, "tfm.tok.target_charsmap");
	CHECK(k >= 0 && tfm_gguf_arr_n(g, k) == 0);
	CHECK(tfm_gguf_get_int_or(g, "tfm.tok.target_add_space_prefix", -1) == 0);
	CHECK(tfm_gguf_get_int_or(g, "tfm.tok.target_remove_extra_whitespaces", -1) == 0);
	k = tfm_gguf_find(g, "tfm.tok.target_extra_pieces");
	CHECK(k >= 0 && tfm_gguf_arr_n(g, k) == 14);
	n = marian_cases(t, json_object_get(cases, "target_alt"), 1, "target_alt");
	CHECK(marian_cases(t, json_object_get(cases, "texts"), 0, "source") >= 20);
	tfm_tokenizer_free(t);
	t = NULL;
	/* one score short; a NaN */
	int64_t nv = tfm_gguf_arr_n(g, tfm_gguf_find(g, "tokenizer.ggml.tokens"));
	float *sc = calloc((size_t)nv, sizeof *sc);
	CHECK(sc != NULL);
	if (!sc)
		goto done;
	CHECK_OK(tfm_gguf_set_arr(g, "tfm.tok.target_scores", TFM_GGUF_FLOAT32, sc, nv - 1));
	CHECK_ST(tfm_tokenizer_from_gguf(&t, g), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "tfm.tok.target_scores") != NULL);
	sc[3] = NAN;
	CHECK_OK(tfm_gguf_set_arr(g, "tfm.tok.target_scores", TFM_GGUF_FLOAT32, sc, nv));
	CHECK_ST(tfm_tokenizer_from_gguf(&t, g), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "token 3") != NULL);
	free(sc);
done:
	tfm_tokenizer_free(t);
	tfm_gguf_free(g);
	tfm_blob_close(&b);
	free(p);
	return n;
}

/* tests/data/tok-marian (scripts/make-marian-tok-fixture): a tokenizer as
 * Marian models ship it, source.spm and target.spm (SentencePiece unigram)
 * with one vocab.json that has target-only pieces and lacks two source
 * pieces.  Each text framed for the encoder (tfm_tokenize_seq, special
 * tokens in the text parsed, as transformers does) against
 * MarianTokenizer(text).input_ids; each target text (tfm_tokenize_target)
 * against tokenizer(text_target=text).input_ids, with target.spm and with
 * target-alt.spm; each id list decoded against
 * decode(ids, skip_special_tokens=True), and with
 * clean_up_tokenization_spaces when tokenizer_config.json asks for it;
 * separate_vocabs without target_vocab.json refused by name. */
static void t_marian(void)
{
	char *dir = t_path("tests/data/tok-marian"), *cp = t_path("%s/cases.json", dir);
	json_error_t je;
	json_t *cases = json_load_file(cp, 0, &je), *e;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = marian_open(dir, NULL, NULL, NULL, 0, TFM_OK, &g);
	struct tfm_tokenizer *tc = marian_open(dir, "tokenizer_config.json",
					       "clean_up_tokenization_spaces", NULL, 0, TFM_OK, NULL);
	size_t i;
	int n_text = 0, n_dec = 0, n_tgt = 0, n_alt = 0;
	CHECK_MSG(cases != NULL, "%s: %s", cp, je.text);
	if (!t || !tc || !cases)
		goto done;
	CHECK(tfm_tokenizer_n_vocab(t) == json_integer_value(json_object_get(cases, "n_vocab")));
	CHECK(tfm_tokenizer_eos(t) == 0 && tfm_tokenizer_bos(t) == -1 && !tfm_tokenizer_add_bos(t));
	/* the two source pieces vocab.json lacks, and the pieces source.spm lacks */
	int64_t k = tfm_gguf_find(g, "tfm.tok.extra_pieces");
	CHECK(k >= 0 && tfm_gguf_arr_n(g, k) == 2);
	k = tfm_gguf_find(g, "tfm.tok.unmatched");
	CHECK(k >= 0 && tfm_gguf_arr_n(g, k) > 80);
	n_text = marian_cases(t, json_object_get(cases, "texts"), 0, "source");
	/* the target model: target.spm's scores by id; its normalizer is
	 * source.spm's and vocab.json has all its pieces, so no more keys */
	k = tfm_gguf_find(g, "tfm.tok.target_scores");
	CHECK(k >= 0 && tfm_gguf_arr_n(g, k) == tfm_tokenizer_n_vocab(t));
	static const char *const absent[] = { "tfm.tok.target_charsmap",
		"tfm.tok.target_add_space_prefix", "tfm.tok.target_remove_extra_whitespaces",
		"tfm.tok.target_extra_pieces", "tfm.tok.target_extra_scores" };
	for (size_t a = 0; a < sizeof absent / sizeof *absent; a++)
		CHECK_MSG(tfm_gguf_find(g, absent[a]) < 0, "%s", absent[a]);
	n_tgt = marian_cases(t, json_object_get(cases, "target"), 1, "target");
	n_alt = marian_target_alt(dir, cases);
	json_array_foreach(json_object_get(cases, "decode"), i, e) {
		json_t *w = json_object_get(e, "ids");
		int32_t ids[64];
		size_t n = json_array_size(w);
		CHECK(n <= 64);
		for (size_t j = 0; j < n && j < 64; j++)
			ids[j] = (int32_t)json_integer_value(json_array_get(w, j));
		for (int cu = 0; cu < 2 && n <= 64; cu++) {
			const char *want = json_string_value(json_object_get(e, cu ? "text_clean_up"
										      : "text"));
			char *text = NULL;
			CHECK_OK(tfm_detokenize(cu ? tc : t, ids, n, &text, NULL));
			CHECK_MSG(text && want && !strcmp(text, want), "decode %zu%s: '%s', want '%s'",
				  i, cu ? " (clean up)" : "", text ? text : "", want ? want : "");
			free(text);
		}
		n_dec++;
	}
	printf("marian: %d texts, %d decoded, %d + %d targets\n", n_text, n_dec, n_tgt, n_alt);
	CHECK(n_text >= 20 && n_dec >= 10 && n_tgt >= 12 && n_alt >= 12);
	/* what MarianTokenizer would do otherwise, or refuse, is refused */
	static const struct { const char *file, *key, *text, *msg; int st; } bad[] = {
		{ "tokenizer_config.json", "separate_vocabs", NULL, "without target_vocab.json",
		  TFM_E_FORMAT },
		{ "target.spm", NULL, NULL, "without target.spm", TFM_E_FORMAT },
		{ "vocab.json", NULL, "{\"</s>\": 0, \"<unk>\": 1}", "<pad>", TFM_E_UNSUPPORTED },
		{ "vocab.json", NULL, "{\"</s>\": 0, \"<unk>\": 1, \"<pad>\": 1}", "id 1",
		  TFM_E_FORMAT },
		{ "vocab.json", NULL, "[1]", "not a JSON object", TFM_E_FORMAT },
		{ "vocab.json", NULL, "{\"</s>\": 0, \"<unk>\": 1, \"<pad>\": 9999}", "9999",
		  TFM_E_FORMAT },
		{ "source.spm", NULL, "not a model", "source.spm", TFM_E_FORMAT } };
	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		marian_open(dir, bad[b].file, bad[b].key, bad[b].text, 0, bad[b].st, NULL);
		CHECK_MSG(strstr(tfm_errmsg(), bad[b].msg) != NULL, "%s: %s", bad[b].file,
			  tfm_errmsg());
	}
done:
	tfm_tokenizer_free(t);
	tfm_tokenizer_free(tc);
	tfm_gguf_free(g);
	json_decref(cases);
	free(dir), free(cp);
}

/* tests/fixtures/seq2seq/marian-sep-tok (scripts/make-fixture-marian-sep):
 * separate_vocabs, vocab.json for sources and target_vocab.json (another
 * size, other ids) for labels and decoding.  Sources (tfm_tokenize_seq)
 * against MarianTokenizer(text).input_ids, targets against
 * tokenizer(text_target=text).input_ids, target ids decoded by
 * tfm_tokenizer_target against decode(ids, skip_special_tokens=True);
 * target vocabularies transformers would treat apart are refused. */
static void t_marian_sep(void)
{
	char *dir = t_path("tests/fixtures/seq2seq/marian-sep-tok");
	char *cp = t_path("%s/cases.json", dir);
	json_error_t je;
	json_t *cases = json_load_file(cp, 0, &je), *e;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = marian_open(dir, NULL, NULL, NULL, 0, TFM_OK, &g);
	size_t i;
	int n_text = 0, n_dec = 0, n_tgt = 0;
	CHECK_MSG(cases != NULL, "%s: %s", cp, je.text);
	if (!t || !cases)
		goto done;
	const struct tfm_tokenizer *tt = tfm_tokenizer_target(t);
	int64_t nt = json_integer_value(json_object_get(cases, "n_target"));
	CHECK(tfm_tokenizer_n_vocab(t) == json_integer_value(json_object_get(cases, "n_vocab")));
	CHECK(tt != t && tfm_tokenizer_n_vocab(tt) == nt && nt != tfm_tokenizer_n_vocab(t));
	CHECK(tfm_tokenizer_eos(tt) == 0 && tfm_tokenizer_target(tt) == tt);
	static const char *const keys[] = { "tfm.tok.target_tokens", "tfm.tok.target_token_type",
					    "tfm.tok.target_scores" };
	for (size_t a = 0; a < 3; a++) {
		int64_t k = tfm_gguf_find(g, keys[a]);
		CHECK_MSG(k >= 0 && tfm_gguf_arr_n(g, k) == nt, "%s", keys[a]);
	}
	CHECK(tfm_gguf_get_int_or(g, "tfm.tok.target_unknown_token_id", -1) == 1);
	CHECK(tfm_gguf_get_int_or(g, "tfm.tok.target_padding_token_id", -1) == nt - 1);
	int64_t k = tfm_gguf_find(g, "tfm.tok.target_extra_pieces");
	CHECK(k >= 0 && tfm_gguf_arr_n(g, k) >= 1); /* "▁K", left out of target_vocab.json */
	n_text = marian_cases(t, json_object_get(cases, "texts"), 0, "source");
	n_tgt = marian_cases(t, json_object_get(cases, "target"), 1, "target");
	json_array_foreach(json_object_get(cases, "decode"), i, e) {
		json_t *w = json_object_get(e, "ids");
		const char *want = json_string_value(json_object_get(e, "text"));
		int32_t ids[64];
		size_t n = json_array_size(w);
		char *text = NULL;
		CHECK(n <= 64);
		if (n > 64)
			continue;
		for (size_t j = 0; j < n; j++)
			ids[j] = (int32_t)json_integer_value(json_array_get(w, j));
		CHECK_OK(tfm_detokenize(tt, ids, n, &text, NULL));
		CHECK_MSG(text && want && !strcmp(text, want), "decode %zu: '%s', want '%s'", i,
			  text ? text : "", want ? want : "");
		free(text);
		n_dec++;
	}
	printf("marian separate vocabularies: %d texts, %d targets, %d decoded\n", n_text, n_tgt,
	       n_dec);
	CHECK(n_text >= 20 && n_tgt >= 12 && n_dec >= 10);
	/* transformers ends labels with vocab.json's </s> id and skips
	 * vocab.json's special ids when decoding: a target vocabulary with
	 * </s> elsewhere, or a piece at a special id, is refused */
	static const struct { const char *text, *msg; } bad[] = {
		{ "{\"<unk>\": 0, \"</s>\": 1, \"<pad>\": 2}", "eos token" },
		{ "{\"</s>\": 0, \"x\": 1, \"<unk>\": 2, \"<pad>\": 3}", "id 1 is 'x'" },
		{ "{\"</s>\": 0, \"<unk>\": 1, \"<pad>\": 5}", "id 5" } };
	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		marian_open(dir, "target_vocab.json", NULL, bad[b].text, 0, TFM_E_UNSUPPORTED, NULL);
		CHECK_MSG(strstr(tfm_errmsg(), bad[b].msg) != NULL, "%s", tfm_errmsg());
	}
done:
	tfm_tokenizer_free(t);
	tfm_gguf_free(g);
	json_decref(cases);
	free(dir), free(cp);
}

/* A tokenizer.json of a five-piece unigram model with a hand-made
 * charsmap ('a' -> "b": a double-array trie of 0x62 units, the value unit
 * after 'a' is the offset of "b"). */
static const char ugm_head[] =
	"{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\",0],"
	"[\"\xe2\x96\x81\",-1],[\"a\",-2],[\"b\",-2],[\"\xe2\x96\x81" "b\",-1.5]]},"
	"\"normalizer\":%s,\"pre_tokenizer\":%s,\"added_tokens\":[]}";
static const char ugm_meta[] =
	"{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":\"always\","
	"\"split\":true}";
/* The charsmap in base64: units[0x61] is 'a' with a leaf, offset 1, so
 * its value unit is units[0x60]: val, the offset of the replacement in
 * the strings "b\0". */
static void ugm_cmap(char *out, uint32_t val)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t blob[4 + 0x62 * 4 + 2] = { 0 };
	uint32_t u[0x62] = { 0 };
	u[0x61] = 1u << 10 | 1u << 8 | 0x61;
	u[0x60] = val;
	blob[0] = 0x88; /* 0x188 bytes of trie, little-endian */
	blob[1] = 0x01;
	for (int i = 0; i < 0x62; i++)
		for (int k = 0; k < 4; k++)
			blob[4 + 4 * i + k] = (uint8_t)(u[i] >> 8 * k);
	blob[sizeof blob - 2] = 'b';
	size_t k = 0;
	for (size_t i = 0; i < sizeof blob; i += 3) {
		uint32_t v = (uint32_t)blob[i] << 16 | (i + 1 < sizeof blob ? blob[i + 1] << 8 : 0) |
			     (i + 2 < sizeof blob ? blob[i + 2] : 0);
		out[k++] = b64[v >> 18];
		out[k++] = b64[(v >> 12) & 63];
		out[k++] = i + 1 < sizeof blob ? b64[(v >> 6) & 63] : '=';
		out[k++] = i + 2 < sizeof blob ? b64[v & 63] : '=';
	}
	out[k] = 0;
}

static struct tfm_tokenizer *ugm_json(const char *norm, const char *pre, int want)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, ugm_head, norm, pre);
	const char *names[] = { "tokenizer.json" };
	const void *data[] = { buf };
	size_t sizes[] = { strlen(buf) };
	return via_gguf(names, data, sizes, 1, want);
}

/* DeBERTa-v3's layout as transformers converts it: Strip, the charsmap,
 * runs of spaces, Metaspace in a Sequence; [CLS] A [SEP], pairs
 * [CLS] A [SEP] B [SEP] with B and its [SEP] of type 1.  The ids and
 * types are what tokenizers 0.22 gives for this JSON. */
static void t_unigram_bert_pair(void)
{
	static const char json[] =
		"{\"model\":{\"type\":\"Unigram\",\"unk_id\":3,\"vocab\":[[\"[PAD]\",0],"
		"[\"[CLS]\",0],[\"[SEP]\",0],[\"[UNK]\",0],[\"\xe2\x96\x81\",-1],[\"a\",-2],"
		"[\"b\",-2],[\"\xe2\x96\x81" "b\",-1.5]]},"
		"\"added_tokens\":[{\"id\":1,\"content\":\"[CLS]\",\"special\":true},"
		"{\"id\":2,\"content\":\"[SEP]\",\"special\":true}],"
		"\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Strip\","
		"\"strip_left\":true,\"strip_right\":true},{\"type\":\"Replace\",\"pattern\":"
		"{\"Regex\":\" {2,}\"},\"content\":\" \"}]},"
		"\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":"
		"\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":\"always\","
		"\"split\":true}]},"
		"\"post_processor\":{\"type\":\"TemplateProcessing\","
		"\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},{\"Sequence\":"
		"{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}}],"
		"\"pair\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},{\"Sequence\":"
		"{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}},"
		"{\"Sequence\":{\"id\":\"B\",\"type_id\":1}},{\"SpecialToken\":{\"id\":\"[SEP]\","
		"\"type_id\":1}}],\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[1]},"
		"\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[2]}}}}";
	const char *names[] = { "tokenizer.json" };
	const void *data[] = { json };
	size_t sizes[] = { strlen(json) };
	struct tfm_tokenizer *t = via_gguf(names, data, sizes, 1, TFM_OK);
	int32_t *ids = NULL, *types = NULL;
	size_t n = 0;
	if (!t)
		return;
	/* "  a   b " -> "a b" -> ▁a ▁b: ▁ a ▁b */
	static const int32_t seq[] = { 1, 4, 5, 7, 2 };
	CHECK_OK(tfm_tokenize_seq(t, "  a   b ", 8, 0, &ids, &n));
	CHECK(same(ids, n, seq, 5));
	free(ids);
	static const int32_t pair[] = { 1, 4, 5, 2, 7, 2 }, ptypes[] = { 0, 0, 0, 0, 1, 1 };
	CHECK_OK(tfm_tokenize_pair(t, "a", 1, "b", 1, &ids, &types, &n));
	CHECK(same(ids, n, pair, 6) && same(types, n, ptypes, 6));
	free(ids), free(types);
	CHECK_ST(tfm_tokenize_words(t, "a", 1, &ids, &types, &n), TFM_E_UNSUPPORTED);
	tfm_tokenizer_free(t);
}

/* Charsmaps that lie about their sizes or point past their strings are
 * refused, normalizers and pre-tokenizers tfm does not implement are
 * refused by name. */
static void t_unigram_hostile(void)
{
	char norm[2048], cm[1024];
	int32_t *ids = NULL;
	size_t n = 0;
	ugm_cmap(cm, 0);
	snprintf(norm, sizeof norm, "{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"%s\"}",
		 cm);
	struct tfm_tokenizer *t = ugm_json(norm, ugm_meta, TFM_OK);
	if (t) {
		static const int32_t want[] = { 4, 4 }; /* "a b" -> "b b" -> ▁b ▁b */
		CHECK_OK(tfm_tokenize(t, "a b", 3, 0, &ids, &n));
		CHECK(same(ids, n, want, 2));
		free(ids);
		tfm_tokenizer_free(t);
	}
	/* the value after 'a' points past the two bytes of strings: refused
	 * when it is reached */
	ugm_cmap(cm, 1000);
	snprintf(norm, sizeof norm, "{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"%s\"}",
		 cm);
	if ((t = ugm_json(norm, ugm_meta, TFM_OK))) {
		CHECK_ST(tfm_tokenize(t, "xa", 2, 0, &ids, &n), TFM_E_FORMAT);
		CHECK(strstr(tfm_errmsg(), "precompiled_charsmap") != NULL);
		tfm_tokenizer_free(t);
	}
	static const char *const bad_maps[] = {
		"oA8AAAAAAAAAAAAA",   /* a trie of 4000 bytes in 12 */
		"BgAAAAAAAAAAAAAA",   /* 6 bytes: not whole units */
		"AAAAAA==",           /* an empty trie */
		"AQI",                /* 2 bytes */
		"not base64!",
	};
	for (size_t k = 0; k < sizeof bad_maps / sizeof *bad_maps; k++) {
		snprintf(norm, sizeof norm, "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":"
			 "\"Precompiled\",\"precompiled_charsmap\":\"%s\"}]}", bad_maps[k]);
		ugm_json(norm, ugm_meta, TFM_E_FORMAT);
	}
	static const struct { const char *norm, *pre, *name; } refused[] = {
		{ "{\"type\":\"BertNormalizer\"}", NULL, "BertNormalizer" },
		{ "{\"type\":\"Nmt\"}", NULL, "Nmt" },
		{ "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKD\"},"
		  "{\"type\":\"ByteLevel\"}]}", NULL, "ByteLevel" },
		{ "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}", NULL,
		  "Replace" },
		{ "null", "{\"type\":\"Whitespace\"}", "Whitespace" },
		{ "null", "{\"type\":\"Metaspace\",\"replacement\":\"_\"}", "replacement" },
		{ "null", "null", "Metaspace is needed" },
	};
	for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
		ugm_json(refused[k].norm, refused[k].pre ? refused[k].pre : ugm_meta,
			 TFM_E_UNSUPPORTED);
		CHECK_MSG(strstr(tfm_errmsg(), refused[k].name) != NULL, "%s: %s", refused[k].name,
			  tfm_errmsg());
	}
}

/* Added tokens with lstrip / rstrip take in the whitespace beside them
 * (Unicode White_Space: U+3000, U+2003 too); ids as tokenizers 0.22 gives
 * them for this JSON (a unigram model, Metaspace always). */
static void t_added_strip(void)
{
	static const char json[] =
		"{\"added_tokens\":[{\"id\":5,\"content\":\"<m>\",\"lstrip\":true,\"rstrip\":true,"
		"\"normalized\":false,\"special\":true},{\"id\":6,\"content\":\"<r>\",\"lstrip\":"
		"false,\"rstrip\":true,\"normalized\":false,\"special\":true}],\"normalizer\":null,"
		"\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\","
		"\"prepend_scheme\":\"always\",\"split\":true},\"model\":{\"type\":\"Unigram\","
		"\"unk_id\":0,\"vocab\":[[\"<unk>\",0],[\"\xe2\x96\x81\",-1],[\"a\",-2],[\"b\",-2],"
		"[\"\xe2\x96\x81" "b\",-1.5],[\"<m>\",0],[\"<r>\",0]]}}";
	static const struct { const char *text; int32_t ids[6]; size_t n; } cases[] = {
		{ "a  \xe3\x80\x80<m> \tb", { 1, 2, 5, 4 }, 4 },
		{ "a <m>b", { 1, 2, 5, 4 }, 4 },
		{ "a<m>  b", { 1, 2, 5, 4 }, 4 },
		{ "a <r>  b", { 1, 2, 1, 6, 4 }, 5 },
		{ "a\xc2\xa0<r>\xe2\x80\x83" "b", { 1, 2, 0, 6, 4 }, 5 },
		{ "<m>", { 5 }, 1 },
	};
	const char *names[] = { "tokenizer.json" };
	const void *data[] = { json };
	size_t sizes[] = { strlen(json) };
	struct tfm_tokenizer *t = via_gguf(names, data, sizes, 1, TFM_OK);
	for (size_t k = 0; t && k < sizeof cases / sizeof *cases; k++) {
		int32_t *ids = NULL;
		size_t n = 0;
		CHECK_OK(tfm_tokenize_special(t, cases[k].text, strlen(cases[k].text), 0, 1, &ids, &n));
		CHECK_MSG(same(ids, n, cases[k].ids, cases[k].n), "case %zu: %zu ids", k, n);
		free(ids);
	}
	tfm_tokenizer_free(t);
}

/* tests/data/rwkv-world (scripts/make-rwkv-world-fixture): RWKV's world
 * vocabulary and BlinkDL's reference tokenizer's ids for 45 strings, which
 * llama.cpp's rwkv tokenizer (libllama, on the GGUF its converter writes)
 * gives too.  Each string also decodes back to its bytes. */
static struct tfm_tokenizer *world_tok(struct tfm_blob *b)
{
	struct tfm_tokenizer *t = NULL;
	char *p = t_path("tests/data/rwkv-world/rwkv_vocab_v20230424.txt");
	CHECK_OK(tfm_blob_open(b, p));
	CHECK(tfm_rwkv_world_probe(b->data, b->size));
	CHECK_OK(tfm_tokenizer_from_rwkv_world(&t, b->data, b->size));
	free(p);
	return t;
}

/* The strings of strings.inp through t against the ids of out (a file of
 * tests/data/rwkv-world), each decoded back too. */
static void world_vectors(const struct tfm_tokenizer *t, const char *out_name)
{
	struct tfm_blob bi, bo;
	char *pi = t_path("tests/data/rwkv-world/strings.inp");
	char *po = t_path("tests/data/rwkv-world/%s", out_name);
	CHECK_OK(tfm_blob_open(&bi, pi));
	CHECK_OK(tfm_blob_open(&bo, po));
	const char *sep = "\n__ggml_vocab_test__\n";
	const char *in = (const char *)bi.data, *iend = in + bi.size;
	const char *out = (const char *)bo.data, *oend = out + bo.size;
	int n_all = 0, n_ok = 0, n_round = 0;
	for (;;) {
		const char *e = memmem(in, (size_t)(iend - in), sep, strlen(sep));
		size_t n_in = e ? (size_t)(e - in) : (size_t)(iend - in);
		const char *ol = memchr(out, '\n', (size_t)(oend - out));
		size_t n_out = ol ? (size_t)(ol - out) : (size_t)(oend - out);
		int32_t want[512], *ids = NULL;
		size_t nw = 0, n = 0, tl = 0;
		char *line = strndup(out, n_out), *save = NULL, *text = NULL;
		for (char *w = strtok_r(line, " ", &save); w && nw < 512; w = strtok_r(NULL, " ", &save))
			want[nw++] = (int32_t)strtol(w, NULL, 10);
		free(line);
		CHECK_OK(tfm_tokenize(t, in, n_in, 0, &ids, &n));
		int ok = ids && n == nw && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
		CHECK_MSG(ok, "%s: string %d ('%.*s'): %zu ids, want %zu", out_name, n_all, (int)n_in,
			  in, n, nw);
		n_ok += ok;
		if (ids && !tfm_detokenize(t, ids, n, &text, &tl))
			n_round += tl == n_in && !memcmp(text, in, n_in);
		free(text);
		free(ids);
		n_all++;
		out += n_out + (ol ? 1 : 0);
		if (!e)
			break;
		in = e + strlen(sep);
	}
	printf("rwkv world %s: %d of %d strings match, %d decode back\n", out_name, n_ok, n_all,
	       n_round);
	CHECK(n_all == 45);
	CHECK(n_round == n_all);
	tfm_blob_close(&bi);
	tfm_blob_close(&bo);
	free(pi);
	free(po);
}

static void t_rwkv_world(void)
{
	struct tfm_blob vb;
	struct tfm_tokenizer *t = world_tok(&vb);
	if (!t)
		goto done;
	CHECK(tfm_tokenizer_n_vocab(t) == 65530);
	world_vectors(t, "strings.out");
	/* llama.cpp puts every token's text in its trie, <s> (id 0) too:
	 * libllama gives 98 0 99 for "a<s>b", with special tokens parsed or not,
	 * and decodes 0 to nothing */
	for (int sp = 0; sp < 2; sp++) {
		int32_t *ids = NULL;
		size_t n = 0;
		CHECK_OK(tfm_tokenize_special(t, "a<s>b", 5, 0, sp, &ids, &n));
		CHECK(n == 3 && ids[0] == 98 && ids[1] == 0 && ids[2] == 99);
		char *text = NULL;
		size_t tl = 0;
		if (n == 3 && !tfm_detokenize(t, ids, n, &text, &tl))
			CHECK(tl == 2 && !memcmp(text, "ab", 2));
		free(text);
		free(ids);
	}
	CHECK(tfm_tokenizer_bos(t) == 0 && !tfm_tokenizer_add_bos(t));
	CHECK(tfm_tokenizer_is_eos(t, 261)); /* the converter's end of turn, "\n\n" */
done:
	tfm_tokenizer_free(t);
	tfm_blob_close(&vb);
}

/* small.gguf: a GGUF file as llama.cpp's converter writes one (escaped
 * texts, <s>, [PAD<i>]), of a 267-token vocabulary; small.out: the ids of
 * BlinkDL's tokenizer and llama.cpp with it. */
static void t_rwkv_small_gguf(void)
{
	char *p = t_path("tests/data/rwkv-world/small.gguf");
	struct tfm_blob b;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = NULL;
	CHECK_OK(tfm_blob_open(&b, p));
	CHECK_OK(tfm_gguf_parse(&g, b.data, b.size, p));
	CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
	if (t) {
		CHECK(tfm_tokenizer_n_vocab(t) == 271);
		world_vectors(t, "small.out");
	}
	tfm_tokenizer_free(t);
	tfm_gguf_free(g);
	tfm_blob_close(&b);
	free(p);
}

/* The GGUF keys written for the world vocabulary: the token texts Python's
 * repr(bytes)[2:-1] gives (llama.cpp's _set_vocab_rwkv_world), read back
 * by tfm as the bytes. */
static void t_rwkv_world_gguf(void)
{
	struct tfm_blob vb;
	char *p = t_path("tests/data/rwkv-world/rwkv_vocab_v20230424.txt");
	struct tfm_ckpt_file f;
	struct tfm_ckpt c = { 0 };
	struct tfm_gguf *g = NULL;
	CHECK_OK(tfm_blob_open(&vb, p));
	f = (struct tfm_ckpt_file){ (char *)"rwkv_vocab_v20230424.txt", (uint8_t *)vb.data, vb.size };
	c.source = "test";
	c.files = &f;
	c.n_files = 1;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_tokenizer_to_gguf(&c, g));
	CHECK(!strcmp(tfm_gguf_get_str_or(g, "tokenizer.ggml.model", ""), "rwkv"));
	CHECK(tfm_gguf_find(g, "tokenizer.ggml.pre") < 0);
	CHECK(tfm_gguf_get_int_or(g, "tokenizer.ggml.eot_token_id", -1) == 261);
	static const struct { int id; const char *want; } cases[] = {
		{ 0, "<s>" }, { 1, "\\x00" }, { 10, "\\t" }, { 35, "\"" }, { 40, "'" },
		{ 93, "\\\\" }, { 256, "\\xff" }, { 261, "\\n\\n" },
		{ 10078, "\\xe3\\x80\\x80" }, /* '\u3000' */
		{ 33155, "Hello" },
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		const char *s = NULL;
		size_t n = 0;
		CHECK_OK(tfm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", cases[k].id, &s, &n));
		CHECK_MSG(s && n == strlen(cases[k].want) && !memcmp(s, cases[k].want, n),
			  "token %d: '%.*s', want '%s'", cases[k].id, (int)n, s ? s : "", cases[k].want);
	}
	struct tfm_tokenizer *t = NULL;
	CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
	if (t) {
		size_t n = 0;
		const char *pc = tfm_token_piece(t, 10078, &n);
		CHECK(n == 3 && !memcmp(pc, "\xe3\x80\x80", 3));
		pc = tfm_token_piece(t, 93, &n);
		CHECK(n == 1 && pc[0] == '\\');
	}
	tfm_tokenizer_free(t);
	tfm_gguf_free(g);
	tfm_blob_close(&vb);
	free(p);
}

static void t_rwkv_hostile(void)
{
	static const struct { const char *file; const char *msg; } bad[] = {
		{ "1 'a' 2\n", "says 2" },
		{ "2 'a' 1\n", "expected 1" },
		{ "1 'a' 1\n3 'b' 1\n", "expected 2" },
		{ "1 '\\x4' 1\n", "bad \\x escape" },
		{ "1 '\\u12' 1\n", "bad \\u escape" },
		{ "1 '\\ud800' 3\n", "cannot be UTF-8" },
		{ "1 b'\xc3\xa9' 2\n", "non-ASCII" },
		{ "1 'a'b' 3\n", "unescaped quote" },
		{ "1 'abc\n", "not '<id>" },
		{ "1 'a 1\n", "not a quoted" },
		{ "1 'a' 99999999999999999999\n", "bad length" },
		{ "1 'a' -1\n", "bad length" },
		{ "1 'a' 1\n\n2 'b' 1\n", "not '<id>" },
		{ "1 '\\N{BULLET}' 3\n", "not supported" },
		{ "99999999999999999999999 'a' 1\n", "expected 1" },
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		struct tfm_tokenizer *t = NULL;
		CHECK_ST(tfm_tokenizer_from_rwkv_world(&t, (const uint8_t *)bad[k].file,
						       strlen(bad[k].file)), TFM_E_FORMAT);
		CHECK_MSG(strstr(tfm_errmsg(), bad[k].msg), "'%s': %s", bad[k].file, tfm_errmsg());
		CHECK(t == NULL);
	}
	/* escapes Python reads: octal, \u, a str's \xNN is a code point */
	const char *ok = "1 '\\101\\u00e9\\xe9' 5\n2 b'\\101\\xe9\\q' 4\n";
	struct tfm_tokenizer *t = NULL;
	CHECK_OK(tfm_tokenizer_from_rwkv_world(&t, (const uint8_t *)ok, strlen(ok)));
	if (t) {
		size_t n = 0;
		const char *pc = tfm_token_piece(t, 1, &n);
		CHECK(n == 5 && !memcmp(pc, "A\xc3\xa9\xc3\xa9", 5));
		pc = tfm_token_piece(t, 2, &n);
		CHECK(n == 4 && !memcmp(pc, "A\xe9\\q", 4));
		/* no token for 'z' and no unknown token: an error, not a loop */
		int32_t *ids = NULL;
		size_t m = 0;
		CHECK_ST(tfm_tokenize(t, "Az", 2, 0, &ids, &m), TFM_E_INVAL);
		CHECK(ids == NULL);
	}
	tfm_tokenizer_free(t);
	/* GGUF text with a bad escape */
	struct tfm_gguf *g = NULL;
	const char *toks[] = { "a", "\\xZZ" };
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_str(g, "tokenizer.ggml.model", "rwkv"));
	CHECK_OK(tfm_gguf_set_arr_str(g, "tokenizer.ggml.tokens", toks, NULL, 2));
	t = NULL;
	CHECK_ST(tfm_tokenizer_from_gguf(&t, g), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "token 1"));
	tfm_gguf_free(g);
	/* a prefix in the trie that no token ends: the unknown token */
	const char *toks2[] = { "<unk>", "abc", "a" , "b" };
	int32_t types[] = { 2, 1, 1, 1 };
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_str(g, "tokenizer.ggml.model", "rwkv"));
	CHECK_OK(tfm_gguf_set_arr_str(g, "tokenizer.ggml.tokens", toks2, NULL, 4));
	CHECK_OK(tfm_gguf_set_arr(g, "tokenizer.ggml.token_type", TFM_GGUF_INT32, types, 4));
	CHECK_OK(tfm_gguf_set_u32(g, "tokenizer.ggml.unknown_token_id", 0));
	CHECK_OK(tfm_tokenizer_from_gguf(&t, g));
	if (t) {
		int32_t *ids = NULL;
		size_t m = 0;
		CHECK_OK(tfm_tokenize(t, "abcabxab", 8, 0, &ids, &m));
		CHECK(m == 6 && ids[0] == 1 && ids[1] == 2 && ids[2] == 3 && ids[3] == 0 &&
		      ids[4] == 2 && ids[5] == 3);
		free(ids);
	}
	tfm_tokenizer_free(t);
	tfm_gguf_free(g);
}

static const struct t_case t_cases[] = {
	{ "added_strip", t_added_strip },
	{"import_llama3", t_import_llama3},
	{ "fixture_tokenizers", t_fixture_tokenizers },
	{ "pretok", t_pretok },
	{ "special", t_special },
	{ "import_llama2c", t_import_llama2c },
	{ "import_hf", t_import_hf },
	{ "import_spm_model", t_import_spm_model },
	{ "import_spm_json", t_import_spm_json },
	{ "vectors_spm", t_vectors_spm },
	{ "vectors_gpt2", t_vectors_gpt2 },
	{ "vectors_bert", t_vectors_bert },
	{ "llama2c", t_llama2c },
	{ "roundtrip", t_roundtrip },
	{ "pretok_unknown", t_pretok_unknown },
	{ "hostile_vocab", t_hostile_vocab },
	{ "unigram_fixtures", t_unigram_fixtures },
	{ "unigram_hostile", t_unigram_hostile },
	{ "unigram_bert_pair", t_unigram_bert_pair },
	{ "marian", t_marian },
	{ "marian-sep", t_marian_sep },
	{ "rwkv_world", t_rwkv_world },
	{ "rwkv_world_gguf", t_rwkv_world_gguf },
	{ "rwkv_small_gguf", t_rwkv_small_gguf },
	{ "rwkv_hostile", t_rwkv_hostile },
};
T_MAIN(t_cases)
