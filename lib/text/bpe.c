/* bpe.c: byte-level BPE (GPT-2 style, GGUF tokenizer.ggml.model = gpt2), as
 * llama.cpp's llm_tokenizer_bpe: the pre-tokenizer splits the text into
 * words, each word's bytes map to GPT-2's printable code points, and pairs
 * merge by rank (lowest first, ties leftmost).  A final symbol that is not a
 * token falls back to its single bytes where those are tokens. */
#include "tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

/* GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the
 * rest to 256, 257, ... in byte order. */
uint32_t tfm_bpe_byte_to_cp(uint8_t b)
{
	if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae)
		return b;
	uint32_t n = 0;
	for (int c = 0; c < b; c++)
		if (!((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae))
			n++;
	return 256 + n;
}

int tfm_bpe_cp_to_byte(uint32_t cp)
{
	if (cp < 256)
		return ((cp >= 0x21 && cp <= 0x7e) || (cp >= 0xa1 && cp <= 0xac) || cp >= 0xae)
		       ? (int)cp : -1;
	uint32_t n = 0;
	for (int c = 0; c < 256; c++)
		if (!((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae))
			if (256 + n++ == cp)
				return c;
	return -1;
}

int tfm_merges_init(struct tfm_tokenizer *t, int64_t n, const char *const *m, const size_t *lens)
{
	size_t total = 0;
	int st;
	for (int64_t i = 0; i < n; i++)
		total += lens[i] + 1;
	if (!(t->merge_arena = tfm_malloc(total ? total : 1)))
		return TFM_E_NOMEM;
	if ((st = tfm_strmap_init(&t->merges, (size_t)n)))
		return st;
	char *p = t->merge_arena;
	for (int64_t i = 0; i < n; i++) {
		/* "left right": exactly one space (spaces inside tokens are Ġ). */
		const char *sp = memchr(m[i], ' ', lens[i]);
		if (!sp)
			return tfm_seterr(TFM_E_FORMAT, "BPE merge %lld has no space: '%.*s'",
					  (long long)i, (int)lens[i], m[i]);
		memcpy(p, m[i], lens[i]);
		p[lens[i]] = 0;
		tfm_strmap_put(&t->merges, p, lens[i], (int32_t)i);
		p += lens[i] + 1;
	}
	return TFM_OK;
}

int tfm_bpe_init(struct tfm_tokenizer *t, int64_t n, const char *const *m, const size_t *lens)
{
	int st = tfm_merges_init(t, n, m, lens);
	if (st)
		return st;
	for (int b = 0; b < 256; b++) {
		char u[4];
		size_t k = tfm_utf8_encode(tfm_bpe_byte_to_cp((uint8_t)b), u);
		t->byte_tok[b] = tfm_strmap_get(&t->map, u, k);
	}
	return tfm_pretok_new((struct tfm_pretok **)&t->pretok, t->pre);
}

struct enc {
	const struct tfm_tokenizer *t;
	struct tfm_ids *out;
	char *buf;          /* the word in GPT-2 code points, then "left right" keys */
	int64_t cap;
	struct tfm_sym *sy;
	int64_t sycap;
	struct tfm_bigram_heap h;
	char *key;
	int64_t keycap;
};

static int add_bigram(struct enc *e, int left, int right)
{
	if (left < 0 || right < 0)
		return TFM_OK;
	size_t ln = e->sy[left].n, rn = e->sy[right].n;
	int st = tfm_grow((void **)&e->key, &e->keycap, ln + rn + 1, 1);
	if (st)
		return st;
	memcpy(e->key, e->buf + e->sy[left].off, ln);
	e->key[ln] = ' ';
	memcpy(e->key + ln + 1, e->buf + e->sy[right].off, rn);
	int32_t rank = tfm_strmap_get(&e->t->merges, e->key, ln + rn + 1);
	if (rank < 0)
		return TFM_OK;
	struct tfm_bigram b = { left, right, (double)rank, ln + rn };
	return tfm_bigram_push(&e->h, b);
}

static int encode_word(void *ctx, const char *w, size_t wn)
{
	struct enc *e = ctx;
	const struct tfm_tokenizer *t = e->t;
	int st;
	if ((st = tfm_grow((void **)&e->buf, &e->cap, wn * 2 + 1, 1)))
		return st;
	size_t k = 0;
	for (size_t i = 0; i < wn; i++)
		k += tfm_utf8_encode(tfm_bpe_byte_to_cp((uint8_t)w[i]), e->buf + k);
	/* llama3-style vocabularies take a whole word that is a token as is. */
	int32_t whole = -1;
	if (t->pre && (!strcmp(t->pre, "llama3") || !strcmp(t->pre, "llama-v3") ||
		       !strcmp(t->pre, "llama-bpe")))
		whole = tfm_strmap_get(&t->map, e->buf, k);
	if (whole >= 0)
		return tfm_ids_push(e->out, whole);
	if ((st = tfm_grow((void **)&e->sy, &e->sycap, k, sizeof *e->sy)))
		return st;
	int ns = 0;
	for (size_t off = 0; off < k;) {
		size_t n = tfm_utf8_len((unsigned char)e->buf[off]);
		if (n > k - off)
			n = k - off;
		e->sy[ns] = (struct tfm_sym){ ns - 1, -1, off, n };
		off += n;
		if (off < k)
			e->sy[ns].next = ns + 1;
		ns++;
	}
	e->h.n = 0;
	for (int i = 1; i < ns; i++)
		if ((st = add_bigram(e, i - 1, i)))
			return st;
	while (e->h.n) {
		struct tfm_bigram b = tfm_bigram_pop(&e->h);
		if (!tfm_bigram_apply(e->sy, &b))
			continue;
		int next = e->sy[b.left].next, prev = e->sy[b.left].prev;
		if ((st = add_bigram(e, prev, b.left)) || (st = add_bigram(e, b.left, next)))
			return st;
	}
	for (int i = ns ? 0 : -1; i != -1; i = e->sy[i].next) {
		const char *p = e->buf + e->sy[i].off;
		int32_t id = tfm_strmap_get(&t->map, p, e->sy[i].n);
		if (id >= 0) {
			if ((st = tfm_ids_push(e->out, id)))
				return st;
			continue;
		}
		for (size_t j = 0; j < e->sy[i].n; j++) {
			id = tfm_strmap_get(&t->map, p + j, 1);
			if (id >= 0 && (st = tfm_ids_push(e->out, id)))
				return st;
		}
	}
	return TFM_OK;
}

int tfm_bpe_encode(const struct tfm_tokenizer *t, const char *text, size_t len, struct tfm_ids *out)
{
	struct enc e = { .t = t, .out = out };
	int st = tfm_pretok_split(t->pretok, text, len, encode_word, &e);
	free(e.buf);
	free(e.sy);
	free(e.h.v);
	free(e.key);
	return st;
}
