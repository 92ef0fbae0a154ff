/* fuzz_tokenize.c: arbitrary bytes through the real vocabularies of
 * ../shared and tests/data: llama.cpp's SentencePiece (llama-spm), GPT-2
 * byte-level BPE and BERT WordPiece vocabularies, llama2.c's tok512, the
 * MiniLM tokenizer.json, the Llama-3-style tokenizer.json (its
 * pre-tokenizer regex) and two unigram tokenizer.json (XLM-R's nmt_nfkc
 * charsmap; byte fallback).  The first byte picks the vocabulary and whether
 * BOS is added and special tokens are parsed; the rest is the text.
 * Byte-level BPE must give back valid UTF-8 text exactly. */
#include "fuzz.h"

#include "format/ckpt-impl.h"

#include <stdlib.h>
#include <string.h>

enum { N_TOK = 8 };
static struct tfm_tokenizer *toks[N_TOK];
static int byte_level[N_TOK];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_tokenize: %s: %s\n", what, tfm_errmsg());
	exit(1);
}

static struct tfm_tokenizer *from_gguf_file(const char *path)
{
	struct tfm_blob b;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = NULL;
	if (tfm_blob_open(&b, path) || tfm_gguf_parse(&g, b.data, b.size, path) ||
	    tfm_tokenizer_from_gguf(&t, g))
		die(path);
	tfm_gguf_free(g);
	tfm_blob_close(&b);
	return t;
}

/* Side files (dir/name for each name) imported as tfm-convert does. */
static struct tfm_tokenizer *from_files(const char *dir, const char *const *names, int n)
{
	struct tfm_ckpt *c = NULL;
	struct tfm_gguf *g = NULL;
	struct tfm_tokenizer *t = NULL;
	char path[4096];
	if (tfm_ckpt_new(&c, dir, "hf-dir") || tfm_gguf_new(&g))
		die(dir);
	for (int i = 0; i < n; i++) {
		struct tfm_blob b;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (tfm_blob_open(&b, path) || tfm_ckpt_add_file(c, names[i], b.data, b.size))
			die(path);
		tfm_blob_close(&b);
	}
	if (tfm_tokenizer_to_gguf(c, g) || tfm_tokenizer_from_gguf(&t, g))
		die(dir);
	tfm_gguf_free(g);
	tfm_ckpt_close(c);
	return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *sh = fuzz_shared();
	char p[4096];
	fuzz_init();
	static const char *const vocabs[] = { "llama-spm", "gpt-2", "bert-bge" };
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s/tokenizers/llama.cpp-vocab/ggml-vocab-%s.gguf", sh,
			 vocabs[i]);
		toks[i] = from_gguf_file(p);
	}
	byte_level[1] = 1;
	struct tfm_blob b;
	snprintf(p, sizeof p, "%s/models/stories260K/tok512.bin", sh);
	if (tfm_blob_open(&b, p) || tfm_tokenizer_from_llama2c(&toks[3], b.data, b.size, 512))
		die(p);
	tfm_blob_close(&b);
	snprintf(p, sizeof p, "%s/models/all-MiniLM-L6-v2", sh);
	static const char *const minilm[] = { "tokenizer.json", "tokenizer_config.json" };
	toks[4] = from_files(p, minilm, 2);
	static const char *const llama3[] = { "tokenizer.json", "tokenizer_config.json",
					      "generation_config.json" };
	toks[5] = from_files("tests/data/tok-llama3", llama3, 3);
	byte_level[5] = 1;
	static const char *const ugm[] = { "tokenizer.json", "tokenizer_config.json" };
	toks[6] = from_files("tests/data/tok-unigram-xlmr", ugm, 2);
	toks[7] = from_files("tests/data/tok-unigram-bf", ugm, 2);
	return 0;
}

static int valid_utf8(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
			 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (!k || n - i < k)
			return 0;
		uint32_t cp = k == 1 ? c : c & (0x7f >> k);
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int which = data[0] % N_TOK, add_bos = data[0] >> 6 & 1, special = data[0] >> 7;
	const struct tfm_tokenizer *t = toks[which];
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	int32_t *ids = NULL;
	size_t n = 0;
	int st = tfm_tokenize_special(t, text, len, add_bos, special, &ids, &n);
	fuzz_check_status(st);
	if (st)
		return 0;
	int64_t nv = tfm_tokenizer_n_vocab(t);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(ids[i] >= 0 && ids[i] < nv);
	char *back = NULL;
	size_t bl = 0;
	st = tfm_detokenize(t, ids, n, &back, &bl);
	fuzz_check_status(st);
	if (!st && byte_level[which] && !add_bos && !special && valid_utf8(data + 1, len)) {
		if (bl != len || memcmp(back, text, len)) {
			fprintf(stderr, "fuzz_tokenize: vocabulary %d: %zu bytes in, %zu out\n",
				which, len, bl);
			FUZZ_ASSERT(!"byte-level BPE gives back its text");
		}
	}
	free(back);
	free(ids);
	return 0;
}
