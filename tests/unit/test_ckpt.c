/* test_ckpt.c: checkpoint readers on files the test writes itself
 * (safetensors, sharded index, Hugging Face directory and archives,
 * llama2.c v0/v1) and on the real llama2.c model in ../shared.  Expected
 * values are the ones written, or numbers from DATA.md.  PyTorch zips and
 * the unpickler are in test_pytorch.c. */
#include "t.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

/* A uint16_t of tensor data, which need not be 2-byte aligned. */
static uint16_t u16_at(const void *p, size_t i)
{
	uint16_t v;
	memcpy(&v, (const char *)p + 2 * i, 2);
	return v;
}

/* A float of tensor data: checkpoint data (a safetensors header of any
 * length, a pickle's storage) need not be 4-byte aligned. */
static float f32_at(const void *p, size_t i)
{
	float f;
	memcpy(&f, (const char *)p + i * sizeof f, sizeof f);
	return f;
}

/* ---- safetensors writer ---- */

struct st_t {
	const char *name, *dtype;
	int nd;
	int64_t shape[4];
	const void *data;
	size_t nbytes;
};

/* Header JSON padded with spaces to a multiple of 8, then the data. */
static uint8_t *st_build(const struct st_t *t, int n, const char *meta, size_t *size)
{
	char hdr[8192];
	size_t hl = 0, off = 0;
	hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "{");
	if (meta)
		hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "\"__metadata__\":%s,", meta);
	for (int i = 0; i < n; i++) {
		hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
				       i ? "," : "", t[i].name, t[i].dtype);
		for (int d = 0; d < t[i].nd; d++)
			hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "%s%lld", d ? "," : "",
					       (long long)t[i].shape[d]);
		hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "],\"data_offsets\":[%zu,%zu]}",
				       off, off + t[i].nbytes);
		off += t[i].nbytes;
	}
	hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "}");
	while (hl % 8)
		hdr[hl++] = ' ';
	*size = 8 + hl + off;
	uint8_t *b = malloc(*size);
	uint64_t h = hl;
	memcpy(b, &h, 8);
	memcpy(b + 8, hdr, hl);
	off = 8 + hl;
	for (int i = 0; i < n; i++) {
		memcpy(b + off, t[i].data, t[i].nbytes);
		off += t[i].nbytes;
	}
	return b;
}

static int write_st(const char *path, const struct st_t *t, int n, const char *meta)
{
	size_t size;
	uint8_t *b = st_build(t, n, meta, &size);
	int r = t_write_file(path, b, size);
	free(b);
	return r;
}

static const float A[6] = { 0.5f, -1, 2, 3.25f, -4, 5 };          /* [2][3] */
static const uint16_t B16[4] = { 0x3c00, 0xc000, 0x3555, 0x0000 }; /* 1, -2, 0.33325195, 0 */
static const uint16_t CBF[4] = { 0x3f80, 0x4040, 0xbf00, 0x0000 }; /* 1, 3, -0.5, 0 */
static const float S1 = 7.0f;

static int64_t nel(const struct tfm_ckpt_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->n_dims; i++)
		n *= t->ne[i];
	return n;
}

/* The three tensors of the small test model, as written. */
static void check_abc(struct tfm_ckpt *c)
{
	const struct tfm_ckpt_tensor *a = tfm_ckpt_find(c, "model.a.weight");
	const struct tfm_ckpt_tensor *b = tfm_ckpt_find(c, "model.b.bias");
	const struct tfm_ckpt_tensor *bf = tfm_ckpt_find(c, "model.c.weight");
	CHECK(a && b && bf);
	if (!a || !b || !bf)
		return;
	/* torch shape [2, 3] is ggml ne {3, 2} */
	CHECK(a->type == TFM_TYPE_F32 && a->n_dims == 2 && a->ne[0] == 3 && a->ne[1] == 2 &&
	      a->ne[2] == 1 && a->ne[3] == 1 && a->nbytes == 24);
	CHECK(!memcmp(a->data, A, sizeof A));
	CHECK(b->type == TFM_TYPE_F16 && b->n_dims == 1 && b->ne[0] == 4 && b->nbytes == 8);
	const void *h = b->data;
	CHECK(tfm_f16_to_f32(u16_at(h, 0)) == 1.0f && tfm_f16_to_f32(u16_at(h, 1)) == -2.0f);
	CHECK(tfm_f16_to_f32(u16_at(h, 2)) == 0.333251953125f);
	/* [2, 1, 2] -> {2, 1, 2} */
	CHECK(bf->type == TFM_TYPE_BF16 && bf->n_dims == 3 && bf->ne[0] == 2 && bf->ne[1] == 1 &&
	      bf->ne[2] == 2);
	const void *g = bf->data;
	CHECK(tfm_bf16_to_f32(u16_at(g, 0)) == 1.0f && tfm_bf16_to_f32(u16_at(g, 1)) == 3.0f &&
	      tfm_bf16_to_f32(u16_at(g, 2)) == -0.5f);
}

static const struct st_t ABC[3] = {
	{ "model.a.weight", "F32", 2, { 2, 3 }, A, sizeof A },
	{ "model.b.bias", "F16", 1, { 4 }, B16, sizeof B16 },
	{ "model.c.weight", "BF16", 3, { 2, 1, 2 }, CBF, sizeof CBF },
};

static void t_safetensors(void)
{
	char *dir = t_tmpdir(), *p = t_path("%s/m.safetensors", dir);
	int64_t pos[3] = { 0, 1, 2 };
	struct st_t t[5] = { ABC[0], ABC[1], ABC[2],
		{ "scale", "F32", 0, { 0 }, &S1, 4 },
		/* an integer buffer that is not a weight: skipped */
		{ "bert.embeddings.position_ids", "I64", 2, { 1, 3 }, pos, sizeof pos } };
	CHECK(!write_st(p, t, 5, "{\"format\":\"pt\"}"));
	struct tfm_ckpt *c;
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (!c)
		return;
	CHECK(!strcmp(c->format, "safetensors"));
	CHECK(c->naming == TFM_NAMES_HF);
	CHECK(c->n_tensors == 4);
	CHECK(c->config == NULL);  /* no config.json beside it */
	check_abc(c);
	const struct tfm_ckpt_tensor *s = tfm_ckpt_find(c, "scale");
	CHECK(s && s->n_dims == 0 && s->ne[0] == 1 && f32_at(s->data, 0) == 7.0f);
	CHECK(!tfm_ckpt_find(c, "bert.embeddings.position_ids"));
	CHECK(!tfm_ckpt_find(c, "nope"));
	tfm_ckpt_close(c);

	/* an integer weight is refused, naming the tensor and the dtype */
	struct st_t bad[2] = { ABC[0], { "model.ids.weight", "I64", 1, { 3 }, pos, sizeof pos } };
	CHECK(!write_st(p, bad, 2, NULL));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "model.ids.weight") && strstr(tfm_errmsg(), "I64"));
	CHECK(c == NULL);
	double d3[3] = { 1, 2, 3 };
	struct st_t f64[1] = { { "w", "F64", 1, { 3 }, d3, sizeof d3 } };
	CHECK(!write_st(p, f64, 1, NULL));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "F64") != NULL);
	free(p);
	free(dir);
}

/* Written by the safetensors Python package (safetensors.numpy.save_file,
 * metadata {"format": "np"}): w.weight f32 arange(6) as [2,3], h f16
 * [1, -2, 0.5], ids.position_ids i64 arange(4) as [1,4] (a buffer). */
static const uint8_t st_golden[] = {
	0xe0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x22, 0x5f, 0x5f, 0x6d, 0x65, 0x74, 0x61,
	0x64, 0x61, 0x74, 0x61, 0x5f, 0x5f, 0x22, 0x3a, 0x7b, 0x22, 0x66, 0x6f, 0x72, 0x6d, 0x61, 0x74,
	0x22, 0x3a, 0x22, 0x6e, 0x70, 0x22, 0x7d, 0x2c, 0x22, 0x69, 0x64, 0x73, 0x2e, 0x70, 0x6f, 0x73,
	0x69, 0x74, 0x69, 0x6f, 0x6e, 0x5f, 0x69, 0x64, 0x73, 0x22, 0x3a, 0x7b, 0x22, 0x64, 0x74, 0x79,
	0x70, 0x65, 0x22, 0x3a, 0x22, 0x49, 0x36, 0x34, 0x22, 0x2c, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65,
	0x22, 0x3a, 0x5b, 0x31, 0x2c, 0x34, 0x5d, 0x2c, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66,
	0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x5b, 0x30, 0x2c, 0x33, 0x32, 0x5d, 0x7d, 0x2c, 0x22,
	0x77, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x22, 0x3a, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70,
	0x65, 0x22, 0x3a, 0x22, 0x46, 0x33, 0x32, 0x22, 0x2c, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22,
	0x3a, 0x5b, 0x32, 0x2c, 0x33, 0x5d, 0x2c, 0x22, 0x64, 0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66,
	0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x5b, 0x33, 0x32, 0x2c, 0x35, 0x36, 0x5d, 0x7d, 0x2c, 0x22,
	0x68, 0x22, 0x3a, 0x7b, 0x22, 0x64, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x22, 0x46, 0x31, 0x36,
	0x22, 0x2c, 0x22, 0x73, 0x68, 0x61, 0x70, 0x65, 0x22, 0x3a, 0x5b, 0x33, 0x5d, 0x2c, 0x22, 0x64,
	0x61, 0x74, 0x61, 0x5f, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x73, 0x22, 0x3a, 0x5b, 0x35, 0x36,
	0x2c, 0x36, 0x32, 0x5d, 0x7d, 0x7d, 0x20, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f,
	0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40,
	0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38,
};

static void t_safetensors_golden(void)
{
	char *dir = t_tmpdir(), *p = t_path("%s/np.safetensors", dir);
	CHECK(!t_write_file(p, st_golden, sizeof st_golden));
	struct tfm_ckpt *c;
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c) {
		CHECK(c->n_tensors == 2);
		const struct tfm_ckpt_tensor *w = tfm_ckpt_find(c, "w.weight"),
			*h = tfm_ckpt_find(c, "h");
		CHECK(w && w->type == TFM_TYPE_F32 && w->ne[0] == 3 && w->ne[1] == 2);
		for (int i = 0; w && i < 6; i++)
			CHECK(f32_at(w->data, i) == (float)i);
		CHECK(h && h->type == TFM_TYPE_F16 && h->n_dims == 1 && h->ne[0] == 3);
		if (h) {
			const void *x = h->data;
			CHECK(tfm_f16_to_f32(u16_at(x, 0)) == 1.0f && tfm_f16_to_f32(u16_at(x, 1)) == -2.0f &&
			      tfm_f16_to_f32(u16_at(x, 2)) == 0.5f);
		}
	}
	tfm_ckpt_close(c);
	free(p);
	free(dir);
}

/* 20000 tensors: the name index grows many times; every name is found.
 * Also duplicate names in a header are refused. */
static void t_safetensors_many(void)
{
	enum { N = 20000 };
	size_t cap = (size_t)N * 80 + 64, hl = 0;
	char *h = malloc(cap);
	hl += (size_t)sprintf(h, "{");
	for (int i = 0; i < N; i++)
		hl += (size_t)sprintf(h + hl, "%s\"layer.%d.w\":{\"dtype\":\"F32\",\"shape\":[1],"
				      "\"data_offsets\":[%d,%d]}", i ? "," : "", i, 4 * i, 4 * i + 4);
	hl += (size_t)sprintf(h + hl, "}");
	while (hl % 8)
		h[hl++] = ' ';
	size_t size = 8 + hl + 4 * (size_t)N;
	uint8_t *b = malloc(size);
	uint64_t hl64 = hl;
	memcpy(b, &hl64, 8);
	memcpy(b + 8, h, hl);
	for (int i = 0; i < N; i++) {
		float f = (float)i;
		memcpy(b + 8 + hl + 4 * (size_t)i, &f, 4);
	}
	char *dir = t_tmpdir(), *p = t_path("%s/many.safetensors", dir);
	CHECK(!t_write_file(p, b, size));
	struct tfm_ckpt *c;
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c) {
		CHECK(c->n_tensors == N);
		int bad = 0;
		for (int i = 0; i < N; i++) {
			char name[32];
			snprintf(name, sizeof name, "layer.%d.w", i);
			const struct tfm_ckpt_tensor *t = tfm_ckpt_find(c, name);
			if (!t || f32_at(t->data, 0) != (float)i || t != &c->tensors[i])
				bad++;
		}
		CHECK_MSG(bad == 0, "%d tensors not found", bad);
		CHECK(tfm_ckpt_find(c, "layer.20000.w") == NULL);
	}
	tfm_ckpt_close(c);
	/* a duplicate name: the same key twice in the JSON header */
	static const char dup[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		"\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
	size_t dl = strlen(dup), dp = (dl + 7) / 8 * 8;
	memset(b, ' ', 8 + dp + 8);
	uint64_t d64 = dp;
	memcpy(b, &d64, 8);
	memcpy(b + 8, dup, dl);
	CHECK(!t_write_file(p, b, 8 + dp + 8));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
	free(b);
	free(h);
	free(p);
	free(dir);
}

static void t_safetensors_corrupt(void)
{
	char *dir = t_tmpdir(), *p = t_path("%s/m.safetensors", dir);
	size_t size;
	uint8_t *b = st_build(ABC, 3, NULL, &size);
	struct tfm_ckpt *c;
	uint64_t h;
	memcpy(&h, b, 8);

	/* header size larger than the file */
	uint64_t big = size;
	memcpy(b, &big, 8);
	CHECK(!t_write_file(p, b, size));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "header") != NULL);
	memcpy(b, &h, 8);

	/* truncated: the last tensor's data is cut */
	CHECK(!t_write_file(p, b, size - 3));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "model.c.weight") != NULL);

	/* shorter than the size field */
	CHECK(!t_write_file(p, b, 5));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);

	/* data_offsets past the data section: [0,24] -> [0,94] */
	char *o = memmem(b + 8, h, "[0,24]", 6);
	CHECK(o != NULL);
	if (o) {
		memcpy(o, "[0,94]", 6);
		CHECK(!t_write_file(p, b, size));
		CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
		CHECK(strstr(tfm_errmsg(), "data_offsets") != NULL);
		/* in range but not the shape's size: [0,20] */
		memcpy(o, "[0,20]", 6);
		CHECK(!t_write_file(p, b, size));
		CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
		memcpy(o, "[0,24]", 6);
	}
	/* broken JSON */
	b[9] = '!';
	CHECK(!t_write_file(p, b, size));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "JSON") != NULL);

	/* something else entirely */
	CHECK(!t_write_file(p, "hello world, not a model", 24));
	char *q = t_path("%s/x.bin", dir);
	CHECK(!t_write_file(q, "hello world, not a model", 24));
	CHECK_ST(tfm_ckpt_open(&c, q, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "unrecognised format (not a GGUF file") != NULL);
	CHECK_ST(tfm_ckpt_open(&c, "/nonexistent/m.safetensors", NULL), TFM_E_OPEN);
	free(b);
	free(p);
	free(q);
	free(dir);
}

/* ---- Hugging Face directories and archives ---- */

static const char CONFIG[] = "{\"model_type\":\"llama\",\"hidden_size\":3,\"num_hidden_layers\":1}";
static const char TOKJSON[] = "{\"model\":{\"type\":\"BPE\"}}";
static const char VOCAB[] = "[PAD]\n[UNK]\nhello\n";

static void put(const char *dir, const char *name, const void *d, size_t n)
{
	char *p = t_path("%s/%s", dir, name);
	CHECK(!t_write_file(p, d, n));
	free(p);
}

static void check_hf(struct tfm_ckpt *c, const char *format)
{
	CHECK(!strcmp(c->format, format));
	CHECK(c->n_tensors == 3);
	check_abc(c);
	CHECK(json_is_object(c->config));
	CHECK(!strcmp(json_string_value(json_object_get(c->config, "model_type")), "llama"));
	CHECK(json_integer_value(json_object_get(c->config, "hidden_size")) == 3);
	const struct tfm_ckpt_file *f = tfm_ckpt_file(c, "tokenizer.json");
	CHECK(f && f->size == strlen(TOKJSON) && !memcmp(f->data, TOKJSON, f->size));
	f = tfm_ckpt_file(c, "vocab.txt");
	CHECK(f && f->size == strlen(VOCAB) && !memcmp(f->data, VOCAB, f->size));
	CHECK(tfm_ckpt_file(c, "merges.txt") == NULL);
	CHECK(c->n_files == 2);
}

static void make_hf_dir(const char *dir)
{
	mkdir(dir, 0755);
	put(dir, "config.json", CONFIG, strlen(CONFIG));
	put(dir, "tokenizer.json", TOKJSON, strlen(TOKJSON));
	put(dir, "vocab.txt", VOCAB, strlen(VOCAB));
	char *p = t_path("%s/model.safetensors", dir);
	CHECK(!write_st(p, ABC, 3, "{\"format\":\"pt\"}"));
	free(p);
}

static const char *const HF_FILES[] = { "config.json", "tokenizer.json", "vocab.txt",
					"model.safetensors", NULL };
static const char *const SHARD_FILES[] = { "model-00001-of-00002.safetensors", "config.json",
	"model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json",
	"vocab.txt", NULL };
enum { AR_TAR, AR_TGZ, AR_TZST, AR_ZIP, AR_TXZ, AR_GNU, AR_ZIP0 };
static int pack(const char *out, const char *dir, const char *prefix, int kind,
		const char *const *files);

static void t_hf_dir_and_shards(void)
{
	char *tmp = t_tmpdir(), *dir = t_path("%s/hf", tmp);
	struct tfm_ckpt *c;
	make_hf_dir(dir);
	CHECK_OK(tfm_ckpt_open(&c, dir, NULL));
	if (c)
		check_hf(c, "hf-dir");
	tfm_ckpt_close(c);

	/* sharded: two shards and an index, no model.safetensors */
	char *sd = t_path("%s/sharded", tmp), *p;
	mkdir(sd, 0755);
	put(sd, "config.json", CONFIG, strlen(CONFIG));
	put(sd, "tokenizer.json", TOKJSON, strlen(TOKJSON));
	put(sd, "vocab.txt", VOCAB, strlen(VOCAB));
	p = t_path("%s/model-00001-of-00002.safetensors", sd);
	CHECK(!write_st(p, ABC, 2, NULL));
	free(p);
	p = t_path("%s/model-00002-of-00002.safetensors", sd);
	CHECK(!write_st(p, ABC + 2, 1, NULL));
	free(p);
	static const char index[] = "{\"metadata\":{\"total_size\":40},\"weight_map\":{"
		"\"model.a.weight\":\"model-00001-of-00002.safetensors\","
		"\"model.b.bias\":\"model-00001-of-00002.safetensors\","
		"\"model.c.weight\":\"model-00002-of-00002.safetensors\"}}";
	put(sd, "model.safetensors.index.json", index, strlen(index));
	CHECK_OK(tfm_ckpt_open(&c, sd, NULL));
	if (c)
		check_hf(c, "hf-dir");
	tfm_ckpt_close(c);
	/* the same, packed (shards are read in a second pass over the archive) */
	p = t_path("%s/sharded.tar.gz", tmp);
	CHECK(!pack(p, sd, "sharded/", AR_TGZ, SHARD_FILES));
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c)
		check_hf(c, "hf-archive");
	tfm_ckpt_close(c);
	free(p);

	/* an index naming a tensor its shard lacks */
	static const char index2[] = "{\"weight_map\":{"
		"\"model.a.weight\":\"model-00001-of-00002.safetensors\","
		"\"model.z.weight\":\"model-00002-of-00002.safetensors\"}}";
	put(sd, "model.safetensors.index.json", index2, strlen(index2));
	CHECK_ST(tfm_ckpt_open(&c, sd, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "model.z.weight") != NULL);
	/* a missing shard */
	static const char index3[] = "{\"weight_map\":{\"model.a.weight\":\"gone.safetensors\"}}";
	put(sd, "model.safetensors.index.json", index3, strlen(index3));
	CHECK_ST(tfm_ckpt_open(&c, sd, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "gone.safetensors") != NULL);

	/* no config.json */
	char *nc = t_path("%s/noconfig", tmp);
	mkdir(nc, 0755);
	p = t_path("%s/model.safetensors", nc);
	CHECK(!write_st(p, ABC, 3, NULL));
	free(p);
	CHECK_ST(tfm_ckpt_open(&c, nc, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "config.json") != NULL);
	/* a bare pickle (torch < 1.6) as pytorch_model.bin is refused by name */
	put(nc, "config.json", CONFIG, strlen(CONFIG));
	p = t_path("%s/model.safetensors", nc);
	remove(p);
	free(p);
	put(nc, "pytorch_model.bin", "\x80\x02}q\x00.", 6);
	put(nc, "spiece.model", "x", 1);
	CHECK_ST(tfm_ckpt_open(&c, nc, NULL), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "PyTorch before 1.6") != NULL);
	/* a lone safetensors file picks up the config beside it */
	p = t_path("%s/model.safetensors", dir);
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c) {
		CHECK(!strcmp(c->format, "safetensors"));
		CHECK(json_is_object(c->config) && tfm_ckpt_file(c, "tokenizer.json"));
	}
	tfm_ckpt_close(c);
	free(p);
	free(nc);
	free(sd);
	free(dir);
	free(tmp);
}

/* Pack the files of dir into an archive with libarchive's writer, under
 * prefix ("" or "name/"). */

static int pack(const char *out, const char *dir, const char *prefix, int kind,
		const char *const *files)
{
	struct archive *a = archive_write_new();
	if (kind == AR_ZIP || kind == AR_ZIP0)
		archive_write_set_format_zip(a);
	else if (kind == AR_GNU)
		archive_write_set_format_gnutar(a);
	else
		archive_write_set_format_pax_restricted(a);
	if (kind == AR_ZIP0)
		archive_write_zip_set_compression_store(a);
	if (kind == AR_TGZ)
		archive_write_add_filter_gzip(a);
	if (kind == AR_TZST)
		archive_write_add_filter_zstd(a);
	if (kind == AR_TXZ)
		archive_write_add_filter_xz(a);
	if (archive_write_open_filename(a, out) != ARCHIVE_OK)
		return -1;
	if (*prefix) {  /* a directory entry first, as tar does */
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, prefix);
		archive_entry_set_filetype(e, AE_IFDIR);
		archive_entry_set_perm(e, 0755);
		archive_write_header(a, e);
		archive_entry_free(e);
	}
	for (size_t i = 0; files[i]; i++) {
		char *p = t_path("%s/%s", dir, files[i]), *n = t_path("%s%s", prefix, files[i]);
		struct tfm_blob b;
		if (tfm_blob_open(&b, p))
			return -1;
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, n);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, (la_int64_t)b.size);
		if (archive_write_header(a, e) != ARCHIVE_OK ||
		    archive_write_data(a, b.data, b.size) != (la_ssize_t)b.size)
			return -1;
		archive_entry_free(e);
		tfm_blob_close(&b);
		free(p);
		free(n);
	}
	int r = archive_write_close(a);
	archive_write_free(a);
	return r == ARCHIVE_OK ? 0 : -1;
}

static void t_hf_archives(void)
{
	char *tmp = t_tmpdir(), *dir = t_path("%s/hf", tmp);
	make_hf_dir(dir);
	/* a plain tar (also .tar.zst, decompressed on input) and a zip of stored
	 * entries are read in place; compressed ones are copied out */
	static const struct { const char *ext; int kind, in_place; } ar[] = {
		{ "tar", AR_TAR, 1 }, { "tar.gz", AR_TGZ, 0 }, { "tar.zst", AR_TZST, 1 },
		{ "zip", AR_ZIP, 0 }, { "tar.xz", AR_TXZ, 0 }, { "gnu.tar", AR_GNU, 1 },
		{ "0.zip", AR_ZIP0, 1 },
	};
	/* a directory name past ustar's 100 bytes: a pax path record, or GNU's
	 * ././@LongLink entry */
	static const char *const prefixes[] = { "", "my-model/",
		"a-directory-name-longer-than-the-one-hundred-bytes-a-ustar-header-holds-"
		"for-its-name-field-so-it-spills/",
		"and-one-past-the-one-hundred-and-fifty-five-bytes-of-the-ustar-prefix-field-"
		"which-leaves-a-pax-path-record-or-a-gnu-long-name-record-as-the-only-way-to-store-"
		"the-whole-path-of-each-file/" };
	for (size_t k = 0; k < sizeof ar / sizeof ar[0]; k++) {
		for (int sub = 0; sub < 4; sub++) {
			char *p = t_path("%s/m%d.%s", tmp, sub, ar[k].ext);
			CHECK_MSG(!pack(p, dir, prefixes[sub], ar[k].kind, HF_FILES), "pack %s", p);
			struct tfm_ckpt *c;
			CHECK_OK(tfm_ckpt_open(&c, p, NULL));
			if (c) {
				check_hf(c, "hf-archive");
				CHECK_MSG(ar[k].in_place ? c->bytes_copied == 0 : c->bytes_copied > 0,
					  "%s: %zu bytes copied", p, c->bytes_copied);
			}
			tfm_ckpt_close(c);
			free(p);
		}
	}
	/* an archive without config.json */
	char *p = t_path("%s/empty.tar", tmp);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_open_filename(a, p);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "readme.txt");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, 2);
	archive_write_header(a, e);
	archive_write_data(a, "hi", 2);
	archive_entry_free(e);
	archive_write_close(a);
	archive_write_free(a);
	struct tfm_ckpt *c;
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "config.json") != NULL);
	free(p);
	free(dir);
	free(tmp);
}

/* ---- llama2.c ---- */

static void t_llama2c_stories(void)
{
	char *p = t_path("%s/models/stories260K/stories260K.bin", t_shared());
	char *v = t_path("%s/models/stories260K/tok512.bin", t_shared());
	struct tfm_ckpt_opts o = { .vocab = v };
	struct tfm_ckpt *c;
	CHECK_OK(tfm_ckpt_open(&c, p, &o));
	if (!c)
		return;
	CHECK(!strcmp(c->format, "llama2c") && c->naming == TFM_NAMES_GGUF);
	json_t *j = c->config;
	CHECK(json_integer_value(json_object_get(j, "hidden_size")) == 64);
	CHECK(json_integer_value(json_object_get(j, "intermediate_size")) == 172);
	CHECK(json_integer_value(json_object_get(j, "num_hidden_layers")) == 5);
	CHECK(json_integer_value(json_object_get(j, "num_attention_heads")) == 8);
	CHECK(json_integer_value(json_object_get(j, "num_key_value_heads")) == 4);
	CHECK(json_integer_value(json_object_get(j, "vocab_size")) == 512);
	CHECK(json_integer_value(json_object_get(j, "max_position_embeddings")) == 512);
	CHECK(json_is_true(json_object_get(j, "tie_word_embeddings")));
	CHECK(json_is_true(json_object_get(j, "rope_interleaved")));
	CHECK(!strcmp(json_string_value(json_object_get(j, "model_type")), "llama"));
	/* 1 embedding + 5 layers x 9 + the final norm; the classifier is shared */
	CHECK(c->n_tensors == 47);
	CHECK(tfm_ckpt_find(c, "output.weight") == NULL);
	int64_t sum = 0;
	for (int64_t i = 0; i < c->n_tensors; i++)
		sum += nel(&c->tensors[i]);
	CHECK_MSG(sum == 260032, "sum %lld", (long long)sum);  /* DATA.md */
	const struct tfm_ckpt_tensor *t = tfm_ckpt_find(c, "token_embd.weight");
	CHECK(t && t->ne[0] == 64 && t->ne[1] == 512 && t->type == TFM_TYPE_F32);
	t = tfm_ckpt_find(c, "blk.4.attn_k.weight");
	CHECK(t && t->ne[0] == 64 && t->ne[1] == 32);   /* kv_dim = 4 heads x 8 */
	t = tfm_ckpt_find(c, "blk.0.ffn_down.weight");
	CHECK(t && t->ne[0] == 172 && t->ne[1] == 64);
	t = tfm_ckpt_find(c, "blk.2.ffn_gate.weight");
	CHECK(t && t->ne[0] == 64 && t->ne[1] == 172);
	t = tfm_ckpt_find(c, "output_norm.weight");
	CHECK(t && t->n_dims == 1 && t->ne[0] == 64);
	/* the first embedding float is the one right after the 28-byte header */
	FILE *f = fopen(p, "rb");
	float first = 0;
	CHECK(f && fseek(f, 28, SEEK_SET) == 0 && fread(&first, 4, 1, f) == 1);
	if (f)
		fclose(f);
	t = tfm_ckpt_find(c, "token_embd.weight");
	CHECK(t && f32_at(t->data, 0) == first);
	/* the final norm follows 259,968 floats (DATA.md's 260,032 less its 64);
	 * blk.4.ffn_up follows the embedding 32768, norms 2x320, wq/wo 2x20480,
	 * wk/wv 2x10240, w1/w2 2x55040 and 4 layers of w3 (4x11008) */
	float fin = 0, up4 = 0;
	f = fopen(p, "rb");
	CHECK(f && fseek(f, 28 + 4L * 259968, SEEK_SET) == 0 && fread(&fin, 4, 1, f) == 1);
	CHECK(f && fseek(f, 28 + 4L * 248960, SEEK_SET) == 0 && fread(&up4, 4, 1, f) == 1);
	if (f)
		fclose(f);
	t = tfm_ckpt_find(c, "output_norm.weight");
	CHECK(t && f32_at(t->data, 0) == fin);
	t = tfm_ckpt_find(c, "blk.4.ffn_up.weight");
	CHECK(t && f32_at(t->data, 0) == up4);
	/* llama.cpp's order: embedding, layer by layer, final norm */
	CHECK(!strcmp(c->tensors[0].name, "token_embd.weight"));
	CHECK(!strcmp(c->tensors[1].name, "blk.0.attn_norm.weight"));
	CHECK(!strcmp(c->tensors[9].name, "blk.0.ffn_up.weight"));
	CHECK(!strcmp(c->tensors[46].name, "output_norm.weight"));
	const struct tfm_ckpt_file *tb = tfm_ckpt_file(c, "tokenizer.bin");
	CHECK(tb && tb->size == 6227);  /* ls -l tok512.bin */
	tfm_ckpt_close(c);
	/* the same from standard input ("-") */
	CHECK(freopen(p, "rb", stdin) != NULL);
	CHECK_OK(tfm_ckpt_open(&c, "-", NULL));
	if (c) {
		CHECK(!strcmp(c->format, "llama2c") && c->n_tensors == 47);
		CHECK(!strcmp(c->source, "<stdin>"));
	}
	tfm_ckpt_close(c);
	free(p);
	free(v);
}

/* A synthetic model: dim 8, hidden 12, 2 layers, 2 heads, 1 KV head (kv_dim
 * 4), vocab 5, seq_len 4, head_size 4.  Each float is its own index in the
 * tensor data, so the first element of a tensor tells where it was read. */
enum { D = 8, H = 12, NL = 2, KV = 4, V = 5, SL = 4, HS = 4 };

static float *iota(size_t n)
{
	float *f = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		f[i] = (float)i;
	return f;
}

static float first(struct tfm_ckpt *c, const char *name)
{
	const struct tfm_ckpt_tensor *t = tfm_ckpt_find(c, name);
	return t ? f32_at(t->data, 0) : -1;
}

static void t_llama2c_synth(void)
{
	char *tmp = t_tmpdir(), *p = t_path("%s/v1.bin", tmp);
	/* version 1, not shared: rms_att (2x8), rms_ffn (2x8), rms_final 8,
	 * tok 5x8, wq 2x64, wk 2x32, wv 2x32, wo 2x64, w1 2x96, w2 2x96, w3 2x96,
	 * wcls 5x8 */
	size_t n1 = 16 + 16 + 8 + 40 + 128 + 64 + 64 + 128 + 192 * 3 + 40;
	uint8_t hdr[256] = { 0 };
	uint32_t magic = 0x616b3432;
	int32_t ver = 1, prm[7] = { D, H, NL, 2, 1, V, SL };
	memcpy(hdr, &magic, 4);
	memcpy(hdr + 4, &ver, 4);
	memcpy(hdr + 8, prm, 28);
	hdr[36] = 0;  /* not shared */
	float *w = iota(n1);
	FILE *f = fopen(p, "wb");
	CHECK(f && fwrite(hdr, 1, 256, f) == 256 && fwrite(w, 4, n1, f) == n1);
	fclose(f);
	struct tfm_ckpt *c;
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c) {
		CHECK(c->n_tensors == 1 + NL * 9 + 1 + 1);
		CHECK(first(c, "blk.0.attn_norm.weight") == 0);
		CHECK(first(c, "blk.1.attn_norm.weight") == 8);
		CHECK(first(c, "blk.0.ffn_norm.weight") == 16);
		CHECK(first(c, "blk.1.ffn_norm.weight") == 24);
		CHECK(first(c, "output_norm.weight") == 32);
		CHECK(first(c, "token_embd.weight") == 40);
		CHECK(first(c, "blk.0.attn_q.weight") == 80);
		CHECK(first(c, "blk.1.attn_q.weight") == 144);
		CHECK(first(c, "blk.0.attn_k.weight") == 208);
		CHECK(first(c, "blk.1.attn_k.weight") == 240);
		CHECK(first(c, "blk.0.attn_v.weight") == 272);
		CHECK(first(c, "blk.0.attn_output.weight") == 336);
		CHECK(first(c, "blk.0.ffn_gate.weight") == 464);
		CHECK(first(c, "blk.1.ffn_gate.weight") == 560);
		CHECK(first(c, "blk.0.ffn_down.weight") == 656);
		CHECK(first(c, "blk.0.ffn_up.weight") == 848);
		CHECK(first(c, "output.weight") == 1040);
		const struct tfm_ckpt_tensor *t = tfm_ckpt_find(c, "output.weight");
		CHECK(t && t->ne[0] == D && t->ne[1] == V);
		t = tfm_ckpt_find(c, "blk.1.ffn_down.weight");
		CHECK(t && t->ne[0] == H && t->ne[1] == D);
		CHECK(json_is_false(json_object_get(c->config, "tie_word_embeddings")));
	}
	tfm_ckpt_close(c);
	free(w);

	/* legacy, separate classifier (negative vocab): tok 40, rms_att 16,
	 * wq 128, wk 64, wv 64, wo 128, rms_ffn 16, w1 192, w2 192, w3 192,
	 * rms_final 8, freq_cis real 8 and imag 8 (seq_len 4 x head_size/2 2),
	 * wcls 40 */
	size_t n0 = 40 + 16 + 128 + 64 + 64 + 128 + 16 + 192 * 3 + 8 + 8 + 8 + 40;
	int32_t lp[7] = { D, H, NL, 2, 1, -V, SL };
	w = iota(n0);
	char *p0 = t_path("%s/legacy.bin", tmp);
	f = fopen(p0, "wb");
	CHECK(f && fwrite(lp, 4, 7, f) == 7 && fwrite(w, 4, n0, f) == n0);
	fclose(f);
	CHECK_OK(tfm_ckpt_open(&c, p0, NULL));
	if (c) {
		CHECK(!strcmp(c->format, "llama2c"));
		CHECK(first(c, "token_embd.weight") == 0);
		CHECK(first(c, "blk.0.attn_norm.weight") == 40);
		CHECK(first(c, "blk.1.attn_norm.weight") == 48);
		CHECK(first(c, "blk.0.attn_q.weight") == 56);
		CHECK(first(c, "blk.0.attn_k.weight") == 184);
		CHECK(first(c, "blk.0.attn_v.weight") == 248);
		CHECK(first(c, "blk.0.attn_output.weight") == 312);
		CHECK(first(c, "blk.0.ffn_norm.weight") == 440);
		CHECK(first(c, "blk.0.ffn_gate.weight") == 456);
		CHECK(first(c, "blk.0.ffn_down.weight") == 648);
		CHECK(first(c, "blk.1.ffn_up.weight") == 936);
		CHECK(first(c, "output_norm.weight") == 1032);
		CHECK(first(c, "output.weight") == 1056);  /* after 16 freq_cis floats */
		CHECK(json_integer_value(json_object_get(c->config, "vocab_size")) == V);
	}
	tfm_ckpt_close(c);

	/* truncated by one float */
	f = fopen(p0, "wb");
	CHECK(f && fwrite(lp, 4, 7, f) == 7 && fwrite(w, 4, n0 - 1, f) == n0 - 1);
	fclose(f);
	CHECK_ST(tfm_ckpt_open(&c, p0, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "llama2.c") != NULL);
	/* version 2 (q8_0) is refused by name */
	ver = 2;
	memcpy(hdr + 4, &ver, 4);
	f = fopen(p, "wb");
	CHECK(f && fwrite(hdr, 1, 256, f) == 256);
	fclose(f);
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "version 2") != NULL);
	free(w);
	free(p);
	free(p0);
	free(tmp);
}

static const struct t_case t_cases[] = {
	{ "safetensors", t_safetensors },
	{ "safetensors_golden", t_safetensors_golden },
	{ "safetensors_corrupt", t_safetensors_corrupt },
	{ "safetensors_many", t_safetensors_many },
	{ "hf_dir_and_shards", t_hf_dir_and_shards },
	{ "hf_archives", t_hf_archives },
	{ "llama2c_stories", t_llama2c_stories },
	{ "llama2c_synth", t_llama2c_synth },
};

T_MAIN(t_cases)
