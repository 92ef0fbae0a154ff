/* tokenizer.c: the tokenizer handle: loading from GGUF tokenizer.ggml.* keys
 * or a llama2.c tokenizer.bin, encode dispatch, decoding.  The per-model
 * encoders live in spm.c, bpe.c, wordpiece.c and unigram.c. */
#include "unigram.h"

#include <stdlib.h>
#include <string.h>

/* ---- string map (FNV-1a, linear probing) ---- */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

int tfm_strmap_init(struct tfm_strmap *m, size_t n_expected)
{
	size_t cap = 16;
	while (cap < n_expected * 2 + 1)
		cap <<= 1;
	m->cap = cap;
	m->key = tfm_calloc(cap, sizeof *m->key);
	m->klen = tfm_calloc(cap, sizeof *m->klen);
	m->val = tfm_calloc(cap, sizeof *m->val);
	if (!m->key || !m->klen || !m->val) {
		tfm_strmap_free(m);
		return TFM_E_NOMEM;
	}
	return TFM_OK;
}

void tfm_strmap_free(struct tfm_strmap *m)
{
	free(m->key);
	free(m->klen);
	free(m->val);
	memset(m, 0, sizeof *m);
}

void tfm_strmap_put(struct tfm_strmap *m, const char *k, size_t len, int32_t v)
{
	size_t i = fnv1a(k, len) & (m->cap - 1);
	while (m->key[i]) {
		if (m->klen[i] == len && !memcmp(m->key[i], k, len))
			return;
		i = (i + 1) & (m->cap - 1);
	}
	m->key[i] = k;
	m->klen[i] = (uint32_t)len;
	m->val[i] = v;
}

int32_t tfm_strmap_get(const struct tfm_strmap *m, const char *k, size_t len)
{
	if (!m->cap)
		return -1;
	size_t i = fnv1a(k, len) & (m->cap - 1);
	while (m->key[i]) {
		if (m->klen[i] == len && !memcmp(m->key[i], k, len))
			return m->val[i];
		i = (i + 1) & (m->cap - 1);
	}
	return -1;
}

int tfm_ids_push(struct tfm_ids *a, int32_t id)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		int32_t *v = tfm_realloc(a->v, cap * sizeof *v);
		if (!v)
			return TFM_E_NOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = id;
	return TFM_OK;
}

/* ---- UTF-8 ---- */

uint32_t tfm_utf8_decode(const char *s, size_t n, size_t *i)
{
	const unsigned char *p = (const unsigned char *)s + *i;
	size_t left = n - *i;
	uint32_t c = p[0];
	size_t len;
	if (c < 0x80) {
		*i += 1;
		return c;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2;
		c &= 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		c &= 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		c &= 0x07;
	} else {
		*i += 1;
		return 0xfffd;
	}
	if (left < len) {
		*i += 1;
		return 0xfffd;
	}
	for (size_t k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80) {
			*i += 1;
			return 0xfffd;
		}
		c = (c << 6) | (p[k] & 0x3f);
	}
	*i += len;
	return c;
}

size_t tfm_utf8_encode(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = 0xc0 | (cp >> 6);
		o[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = 0xe0 | (cp >> 12);
		o[1] = 0x80 | ((cp >> 6) & 0x3f);
		o[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	o[0] = 0xf0 | (cp >> 18);
	o[1] = 0x80 | ((cp >> 12) & 0x3f);
	o[2] = 0x80 | ((cp >> 6) & 0x3f);
	o[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* ---- the handle ---- */

static int tok_finish(struct tfm_tokenizer *t);

static struct tfm_tokenizer *tok_new(int kind)
{
	struct tfm_tokenizer *t = tfm_calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->kind = kind;
	t->bos = t->eos = t->unk = t->pad = t->sep = t->cls = -1;
	for (int i = 0; i < 256; i++)
		t->byte_tok[i] = -1;
	return t;
}

int tfm_tok_set_vocab(struct tfm_tokenizer *t, int64_t n, const char *const *s, const size_t *lens)
{
	size_t total = 0;
	for (int64_t i = 0; i < n; i++)
		total += lens[i] + 1;
	t->n_vocab = n;
	t->piece = tfm_calloc((size_t)n, sizeof *t->piece);
	t->plen = tfm_calloc((size_t)n, sizeof *t->plen);
	t->type = tfm_calloc((size_t)n, sizeof *t->type);
	t->arena = tfm_malloc(total ? total : 1);
	if (!t->piece || !t->plen || !t->type || !t->arena)
		return TFM_E_NOMEM;
	int st = tfm_strmap_init(&t->map, (size_t)n);
	if (st)
		return st;
	char *p = t->arena;
	for (int64_t i = 0; i < n; i++) {
		memcpy(p, s[i], lens[i]);
		p[lens[i]] = 0;
		t->piece[i] = p;
		t->plen[i] = (uint32_t)lens[i];
		t->type[i] = TFM_TOKT_NORMAL;
		if (lens[i] > t->max_len)
			t->max_len = lens[i];
		tfm_strmap_put(&t->map, p, lens[i], (int32_t)i);
		p += lens[i] + 1;
	}
	return TFM_OK;
}

void tfm_tokenizer_free(struct tfm_tokenizer *t)
{
	if (!t)
		return;
	free(t->piece);
	free(t->plen);
	free(t->score);
	free(t->type);
	free(t->arena);
	tfm_strmap_free(&t->map);
	tfm_strmap_free(&t->merges);
	free(t->merge_arena);
	free(t->pre);
	free(t->special);
	free(t->strip);
	tfm_pretok_free(t->pretok);
	tfm_ugm_destroy(t->ugm);
	tfm_ugm_destroy(t->ugm_target);
	tfm_rwkv_free(t->rwkv);
	tfm_tokenizer_free(t->target);
	free(t);
}

/* "<0xNN>" -> NN, else -1. */
static int byte_piece(const char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	if (n != 6 || memcmp(p, "<0x", 3) || p[5] != '>')
		return -1;
	const char *a = strchr(hex, p[3]), *b = strchr(hex, p[4]);
	if (!a || !b || !p[3] || !p[4])
		return -1;
	return (int)((a - hex) * 16 + (b - hex));
}

static void spm_find_bytes(struct tfm_tokenizer *t)
{
	for (int64_t i = 0; i < t->n_vocab; i++) {
		int b = byte_piece(t->piece[i], t->plen[i]);
		if (b >= 0 && t->byte_tok[b] < 0)
			t->byte_tok[b] = (int32_t)i;
	}
}

int tfm_tokenizer_from_llama2c(struct tfm_tokenizer **out, const uint8_t *data,
			       size_t size, int64_t n_vocab)
{
	struct tfm_tokenizer *t = tok_new(TFM_TOK_SPM);
	const char **s = NULL;
	size_t *lens = NULL;
	float *score = NULL;
	int st = TFM_E_NOMEM;
	*out = NULL;
	if (!t)
		goto fail;
	/* First pass counts tokens when n_vocab is not given. */
	size_t off = 4;
	int64_t n = 0;
	if (size < 4) {
		st = tfm_seterr(TFM_E_FORMAT, "llama2.c tokenizer: too short");
		goto fail;
	}
	while (off < size && (n_vocab <= 0 || n < n_vocab)) {
		int32_t len;
		if (size - off < 8) {
			st = tfm_seterr(TFM_E_FORMAT, "llama2.c tokenizer: truncated at token %lld", (long long)n);
			goto fail;
		}
		memcpy(&len, data + off + 4, 4);
		if (len < 0 || (size_t)len > size - off - 8) {
			st = tfm_seterr(TFM_E_FORMAT, "llama2.c tokenizer: bad length %d at token %lld",
					len, (long long)n);
			goto fail;
		}
		off += 8 + (size_t)len;
		n++;
	}
	if (n_vocab > 0 && n < n_vocab) {
		st = tfm_seterr(TFM_E_FORMAT, "llama2.c tokenizer: %lld tokens, model needs %lld",
				(long long)n, (long long)n_vocab);
		goto fail;
	}
	if (n < 3) {
		st = tfm_seterr(TFM_E_FORMAT, "llama2.c tokenizer: only %lld tokens", (long long)n);
		goto fail;
	}
	s = tfm_calloc((size_t)n, sizeof *s);
	lens = tfm_calloc((size_t)n, sizeof *lens);
	score = tfm_calloc((size_t)n, sizeof *score);
	if (!s || !lens || !score)
		goto fail;
	off = 4;
	for (int64_t i = 0; i < n; i++) {
		int32_t len;
		memcpy(&score[i], data + off, 4);
		memcpy(&len, data + off + 4, 4);
		s[i] = (const char *)data + off + 8;
		lens[i] = (size_t)len;
		off += 8 + (size_t)len;
	}
	if ((st = tfm_tok_set_vocab(t, n, s, lens)))
		goto fail;
	t->score = score;
	score = NULL;
	/* Types as llama.cpp's llama2c converter assigns them. */
	t->type[0] = TFM_TOKT_UNKNOWN;
	t->type[1] = t->type[2] = TFM_TOKT_CONTROL;
	spm_find_bytes(t);
	for (int b = 0; b < 256; b++) {
		if (t->byte_tok[b] >= 0)
			t->type[t->byte_tok[b]] = TFM_TOKT_BYTE;
		else if (b + 3 < n) /* llama2.c's encoder assumes id = byte + 3 */
			t->byte_tok[b] = b + 3;
	}
	t->unk = 0;
	t->bos = 1;
	t->eos = 2;
	t->add_bos = 1;
	t->add_space_prefix = 1;
	t->escape_ws = 0;
	if ((st = tok_finish(t)))
		goto fail;
	*out = t;
	t = NULL;
	st = TFM_OK;
fail:
	free(s);
	free(lens);
	free(score);
	tfm_tokenizer_free(t);
	return st;
}

/* Read tokenizer.ggml.tokens (or Marian's target tokens) into a vocabulary. */
static int gguf_vocab(struct tfm_tokenizer *t, const struct tfm_gguf *g, const char *key)
{
	int64_t i = tfm_gguf_find(g, key);
	if (i < 0)
		return tfm_seterr(TFM_E_FORMAT, "GGUF has no %s", key);
	if (tfm_gguf_kv_type(g, i) != TFM_GGUF_ARRAY || tfm_gguf_arr_type(g, i) != TFM_GGUF_STRING)
		return tfm_seterr(TFM_E_FORMAT, "%s is not a string array", key);
	int64_t n = tfm_gguf_arr_n(g, i);
	if (n <= 0 || n > INT32_MAX)
		return tfm_seterr(TFM_E_FORMAT, "%s: bad length %lld", key, (long long)n);
	const char **s = tfm_calloc((size_t)n, sizeof *s);
	size_t *lens = tfm_calloc((size_t)n, sizeof *lens);
	char *raw = NULL;
	int st = TFM_E_NOMEM;
	if (!s || !lens)
		goto done;
	for (int64_t k = 0; k < n; k++)
		if ((st = tfm_gguf_get_arr_str(g, key, k, &s[k], &lens[k])))
			goto done;
	if (t->kind == TFM_TOK_RWKV) {
		/* the escaped text of each token to its bytes (never longer) */
		size_t total = 0;
		for (int64_t k = 0; k < n; k++)
			total += lens[k];
		if (!(raw = tfm_malloc(total ? total : 1))) {
			st = TFM_E_NOMEM;
			goto done;
		}
		char *p = raw;
		for (int64_t k = 0; k < n; k++) {
			if ((st = tfm_rwkv_unescape(s[k], lens[k], p, &lens[k]))) {
				tfm_adderr(st, "%s: token %lld", key, (long long)k);
				goto done;
			}
			s[k] = p;
			p += lens[k];
		}
	}
	st = tfm_tok_set_vocab(t, n, s, lens);
done:
	free(raw);
	free(s);
	free(lens);
	return st;
}

static int gguf_types(struct tfm_tokenizer *t, const struct tfm_gguf *g, const char *key)
{
	int st = TFM_OK;
	if (tfm_gguf_find(g, key) >= 0) {
		int64_t *v = tfm_malloc((size_t)t->n_vocab * sizeof *v);
		if (!v)
			return TFM_E_NOMEM;
		st = tfm_gguf_get_arr_i64(g, key, v, t->n_vocab);
		for (int64_t i = 0; !st && i < t->n_vocab; i++)
			t->type[i] = (int32_t)v[i];
		free(v);
	}
	return st;
}

static int gguf_types_scores(struct tfm_tokenizer *t, const struct tfm_gguf *g, int want_scores)
{
	int st;
	if ((st = gguf_types(t, g, "tokenizer.ggml.token_type")))
		return st;
	if (want_scores) {
		t->score = tfm_calloc((size_t)t->n_vocab, sizeof *t->score);
		if (!t->score)
			return TFM_E_NOMEM;
		if (tfm_gguf_find(g, "tokenizer.ggml.scores") >= 0 &&
		    (st = tfm_gguf_get_arr_f32(g, "tokenizer.ggml.scores", t->score, t->n_vocab)))
			return st;
	}
	return TFM_OK;
}

static int32_t gguf_id(const struct tfm_gguf *g, const struct tfm_tokenizer *t, const char *key, int32_t dflt)
{
	int64_t v = tfm_gguf_get_int_or(g, key, dflt);
	return (v >= 0 && v < t->n_vocab) ? (int32_t)v : -1;
}

int tfm_tok_id_flags(const struct tfm_tokenizer *t, const struct tfm_gguf *g, const char *key,
		     uint8_t **flags, uint8_t bit)
{
	int64_t i = tfm_gguf_find(g, key);
	if (i < 0)
		return TFM_OK;
	int64_t m = tfm_gguf_kv_type(g, i) == TFM_GGUF_ARRAY ? tfm_gguf_arr_n(g, i) : -1;
	int64_t *v = m >= 0 && m <= t->n_vocab ? tfm_malloc((size_t)(m + 1) * sizeof *v) : NULL;
	if (!v || tfm_gguf_get_arr_i64(g, key, v, m)) {
		free(v);
		return tfm_seterr(TFM_E_FORMAT, "%s: not an integer array of token ids", key);
	}
	if (!*flags && !(*flags = tfm_calloc((size_t)t->n_vocab, 1))) {
		free(v);
		return TFM_E_NOMEM;
	}
	for (int64_t j = 0; j < m; j++) {
		if (v[j] < 0 || v[j] >= t->n_vocab) {
			long long bad = (long long)v[j];
			free(v);
			return tfm_seterr(TFM_E_FORMAT, "%s: id %lld out of the vocabulary", key, bad);
		}
		(*flags)[v[j]] |= bit;
	}
	free(v);
	return TFM_OK;
}

/* The ids of array key (at most max, each in the vocabulary) into v[*m];
 * *m -1 when the key is absent. */
static int id_list(const struct tfm_tokenizer *t, const struct tfm_gguf *g, const char *key,
		   int64_t max, int64_t *v, int64_t *m)
{
	int64_t i = tfm_gguf_find(g, key);
	*m = -1;
	if (i < 0)
		return TFM_OK;
	int64_t n = tfm_gguf_kv_type(g, i) == TFM_GGUF_ARRAY ? tfm_gguf_arr_n(g, i) : -1;
	if (n < 0 || n > max || tfm_gguf_get_arr_i64(g, key, v, n))
		return tfm_seterr(TFM_E_FORMAT, "%s: not an integer array of at most %lld ids", key,
				  (long long)max);
	for (int64_t k = 0; k < n; k++)
		if (v[k] < 0 || v[k] >= t->n_vocab)
			return tfm_seterr(TFM_E_FORMAT, "%s: id %lld out of the vocabulary", key,
					  (long long)v[k]);
	*m = n;
	return TFM_OK;
}

/* tfm.tok.frame_prefix / _suffix and the language codes in them. */
static int frame_set(struct tfm_tokenizer *t, const struct tfm_gguf *g)
{
	static const char *const keys[2] = { "tfm.tok.frame_prefix", "tfm.tok.frame_suffix" };
	t->src_lang = t->tgt_lang = -1;
	for (int side = 0; side < 2; side++) {
		int64_t v[8], m = 0;
		int st = id_list(t, g, keys[side], 8, v, &m);
		if (st)
			return st;
		if (m < 0) /* absent */
			continue;
		for (int64_t k = 0; k < m; k++)
			t->frame[side][k] = (int32_t)v[k];
		t->n_frame[side] = (int)m;
		t->has_frame = 1;
	}
	static const char *const lk[2] = { "tfm.tok.src_lang_id", "tfm.tok.tgt_lang_id" };
	int32_t *lang[2] = { &t->src_lang, &t->tgt_lang };
	for (int k = 0; k < 2; k++) {
		if (tfm_gguf_find(g, lk[k]) < 0)
			continue;
		int64_t id = tfm_gguf_get_int_or(g, lk[k], -1);
		if (!t->has_frame || id < 0 || id >= t->n_vocab)
			return tfm_seterr(TFM_E_FORMAT, "%s: %lld is not a token id beside a frame",
					  lk[k], (long long)id);
		*lang[k] = (int32_t)id;
	}
	return TFM_OK;
}

int tfm_tokenizer_set_lang(struct tfm_tokenizer *t, const char *src, const char *tgt)
{
	const char *code[2] = { src, tgt };
	int32_t *lang[2] = { &t->src_lang, &t->tgt_lang };
	for (int k = 0; k < 2; k++) {
		if (!code[k])
			continue;
		if (t->src_lang < 0)
			return tfm_seterr(TFM_E_UNSUPPORTED, "a %s language: this tokenizer frames "
					  "no language code (mBART's do)", k ? "target" : "source");
		int32_t id = tfm_strmap_get(&t->map, code[k], strlen(code[k]));
		if (id < 0 || t->type[id] != TFM_TOKT_CONTROL)
			return tfm_seterr(TFM_E_UNSUPPORTED, "'%.60s' is not one of the tokenizer's "
					  "special tokens (a language code, as en_XX)", code[k]);
		if (!k) /* the source frame itself */
			for (int side = 0; side < 2; side++)
				for (int i = 0; i < t->n_frame[side]; i++)
					if (t->frame[side][i] == t->src_lang)
						t->frame[side][i] = id;
		*lang[k] = id;
	}
	return TFM_OK;
}

int tfm_tokenizer_target_start(const struct tfm_tokenizer *t, int32_t *start, int32_t *forced)
{
	*start = *forced = -1;
	if (!t->has_frame || t->tgt_lang < 0)
		return 0;
	if (t->n_frame[1] && t->frame[1][t->n_frame[1] - 1] == t->src_lang)
		*start = t->tgt_lang;
	if (t->n_frame[0] && t->frame[0][0] == t->src_lang)
		*forced = t->tgt_lang;
	return 1;
}

/* tfm.tok.lstrip / tfm.tok.rstrip: the added tokens whose match takes in
 * the whitespace left / right of them (t->strip bits 1, 2). */
static int strip_set(struct tfm_tokenizer *t, const struct tfm_gguf *g)
{
	int st = tfm_tok_id_flags(t, g, "tfm.tok.lstrip", &t->strip, 1);
	return st ? st : tfm_tok_id_flags(t, g, "tfm.tok.rstrip", &t->strip, 2);
}

/* The ids that end generation. */
static int eos_set(struct tfm_tokenizer *t, const struct tfm_gguf *g)
{
	int64_t ids[8], n = 0;
	if (t->eos >= 0)
		ids[n++] = t->eos;
	static const char *const more[] = {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"};
	for (int k = 0; k < 2; k++) {
		int32_t id = gguf_id(g, t, more[k], -1);
		if (id >= 0)
			ids[n++] = id;
	}
	int64_t v[8], m = 0;
	int st = id_list(t, g, "tfm.tok.eos_ids", 5, v, &m);
	if (st)
		return st;
	for (int64_t k = 0; k < m; k++)
		ids[n++] = v[k];
	t->n_eos_ids = 0;
	for (int64_t k = 0; k < n; k++) {
		int dup = 0;
		for (int j = 0; j < t->n_eos_ids; j++)
			dup |= t->eos_ids[j] == ids[k];
		if (!dup)
			t->eos_ids[t->n_eos_ids++] = (int32_t)ids[k];
	}
	if (t->eos < 0 && t->n_eos_ids > 0)
		t->eos = t->eos_ids[0];
	return TFM_OK;
}

int tfm_tokenizer_is_eos(const struct tfm_tokenizer *t, int32_t id)
{
	if (id >= 0 && id == t->eos)
		return 1;
	for (int j = 0; j < t->n_eos_ids; j++)
		if (t->eos_ids[j] == id)
			return 1;
	return 0;
}

/* tokenizer.ggml.merges into t->merges ("left right" -> rank); byte_level:
 * the gpt2 model, which needs them (with its byte map and pre-tokenizer).
 * A SentencePiece vocabulary imported from tokenizer.json has them too:
 * then pairs merge as tokenizers' BPE merges them (by rank, only the pairs
 * listed), not by score. */
static int gguf_merges(struct tfm_tokenizer *t, const struct tfm_gguf *g, int byte_level)
{
	const char *key = "tokenizer.ggml.merges";
	int64_t i = tfm_gguf_find(g, key), n = 0;
	int st;
	if (i < 0 && !byte_level)
		return TFM_OK;
	if (i < 0 || tfm_gguf_kv_type(g, i) != TFM_GGUF_ARRAY ||
	    tfm_gguf_arr_type(g, i) != TFM_GGUF_STRING)
		return tfm_seterr(TFM_E_FORMAT, "%s tokenizer: %s must be a string array",
				  byte_level ? "gpt2" : "llama", key);
	n = tfm_gguf_arr_n(g, i);
	const char **m = tfm_calloc((size_t)n + 1, sizeof *m);
	size_t *ml = tfm_calloc((size_t)n + 1, sizeof *ml);
	st = (m && ml) ? TFM_OK : TFM_E_NOMEM;
	for (int64_t k = 0; !st && k < n; k++)
		st = tfm_gguf_get_arr_str(g, key, k, &m[k], &ml[k]);
	if (!st)
		st = byte_level ? tfm_bpe_init(t, n, m, ml) : tfm_merges_init(t, n, m, ml);
	free(m);
	free(ml);
	return st;
}

/* Marian with separate vocabularies (tfm.tok.target_tokens): the target
 * side as a tokenizer of its own, t's frame and decoding rules over the
 * target vocabulary, cut by the target model; labels end with t's eos id
 * (tfm-convert checks the target vocabulary has it there). */
static int target_side(struct tfm_tokenizer *t, const struct tfm_gguf *g)
{
	struct tfm_tokenizer *u = tok_new(TFM_TOK_UGM);
	int st;
	if (!u)
		return TFM_E_NOMEM;
	t->target = u;
	if ((st = gguf_vocab(u, g, "tfm.tok.target_tokens")) ||
	    (st = gguf_types(u, g, "tfm.tok.target_token_type")))
		return st;
	if (t->eos < 0 || t->eos >= u->n_vocab)
		return tfm_seterr(TFM_E_FORMAT, "tfm.tok.target_tokens: no eos id %d", t->eos);
	u->eos = t->eos;
	u->unk = gguf_id(g, u, "tfm.tok.target_unknown_token_id", -1);
	u->pad = gguf_id(g, u, "tfm.tok.target_padding_token_id", -1);
	u->escape_ws = 1;
	spm_find_bytes(u);
	if ((st = tfm_ugm_target_from_gguf(u, t->ugm, g, &u->ugm)))
		return st;
	u->add_space_prefix = u->ugm->add_prefix;
	u->pair_style = t->pair_style;
	u->add_bos = t->add_bos;
	u->add_eos = t->add_eos;
	u->decode_strip = t->decode_strip;
	u->clean_up = t->clean_up;
	memcpy(u->eos_ids, t->eos_ids, sizeof u->eos_ids);
	u->n_eos_ids = t->n_eos_ids;
	return tok_finish(u);
}

const struct tfm_tokenizer *tfm_tokenizer_target(const struct tfm_tokenizer *t)
{
	return t->target ? t->target : t;
}

int tfm_tokenizer_from_gguf(struct tfm_tokenizer **out, const struct tfm_gguf *g)
{
	const char *model = tfm_gguf_get_str_or(g, "tokenizer.ggml.model", NULL);
	struct tfm_tokenizer *t = NULL;
	int st;
	*out = NULL;
	if (!model)
		return tfm_seterr(TFM_E_FORMAT, "GGUF has no tokenizer (tokenizer.ggml.model missing)");
	int kind = !strcmp(model, "llama") ? TFM_TOK_SPM : !strcmp(model, "gpt2") ? TFM_TOK_BPE :
		   !strcmp(model, "bert") ? TFM_TOK_WPM : !strcmp(model, "t5") ? TFM_TOK_UGM :
		   !strcmp(model, "rwkv") ? TFM_TOK_RWKV : 0;
	if (!kind)
		return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer model '%s' is not supported "
				  "(llama, gpt2, bert, t5 and rwkv are)", model);
	if (!(t = tok_new(kind)))
		return TFM_E_NOMEM;
	if ((st = gguf_vocab(t, g, "tokenizer.ggml.tokens")) ||
	    (st = gguf_types_scores(t, g, kind == TFM_TOK_SPM || kind == TFM_TOK_UGM)))
		goto fail;
	t->pre = tfm_strdup(tfm_gguf_get_str_or(g, "tokenizer.ggml.pre", "default"));
	if (!t->pre) {
		st = TFM_E_NOMEM;
		goto fail;
	}
	switch (kind) {
	case TFM_TOK_SPM:
		t->bos = gguf_id(g, t, "tokenizer.ggml.bos_token_id", 1);
		t->eos = gguf_id(g, t, "tokenizer.ggml.eos_token_id", 2);
		t->unk = gguf_id(g, t, "tokenizer.ggml.unknown_token_id", 0);
		t->add_bos = 1;
		t->add_space_prefix = 1;
		t->escape_ws = 1;
		spm_find_bytes(t);
		if ((st = gguf_merges(t, g, 0)))
			goto fail;
		break;
	case TFM_TOK_BPE: {
		/* no default: a byte-level BPE vocabulary without the keys has
		 * no BOS or EOS (id 11 is GPT-2's '.'... of one vocabulary only) */
		t->bos = gguf_id(g, t, "tokenizer.ggml.bos_token_id", -1);
		t->eos = gguf_id(g, t, "tokenizer.ggml.eos_token_id", -1);
		t->cls = gguf_id(g, t, "tokenizer.ggml.cls_token_id", -1); /* RoBERTa's <s>, </s> */
		t->sep = gguf_id(g, t, "tokenizer.ggml.seperator_token_id", -1);
		t->add_bos = 0;
		if ((st = gguf_merges(t, g, 1)))
			goto fail;
		/* an encoder's pair template (RoBERTa's is the default) */
		const char *bp = tfm_gguf_get_str_or(g, "tfm.tok.pair", "");
		t->pair_style = !strcmp(bp, "bert") ? 1 : !strcmp(bp, "roberta") ? 2 : 0;
		if (*bp && !t->pair_style) {
			st = tfm_seterr(TFM_E_FORMAT, "tfm.tok.pair '%.40s' is not bert or roberta "
					"(byte-level BPE)", bp);
			goto fail;
		}
		break;
	}
	case TFM_TOK_UGM:
		/* no defaults: what the keys name (tfm-convert writes them all) */
		t->bos = gguf_id(g, t, "tokenizer.ggml.bos_token_id", -1);
		t->eos = gguf_id(g, t, "tokenizer.ggml.eos_token_id", -1);
		t->unk = gguf_id(g, t, "tokenizer.ggml.unknown_token_id", -1);
		t->cls = gguf_id(g, t, "tokenizer.ggml.cls_token_id", -1);
		t->sep = gguf_id(g, t, "tokenizer.ggml.seperator_token_id", -1);
		t->escape_ws = 1;
		spm_find_bytes(t);
		if ((st = tfm_ugm_from_gguf(t, g)))
			goto fail;
		const char *pair = tfm_gguf_get_str_or(g, "tfm.tok.pair", "");
		t->pair_style = !strcmp(pair, "bert") ? 1 : !strcmp(pair, "roberta") ? 2 :
				!strcmp(pair, "t5") ? 3 : 0;
		if (*pair && !t->pair_style) {
			st = tfm_seterr(TFM_E_FORMAT, "tfm.tok.pair '%.40s' is not bert, roberta or "
					"t5", pair);
			goto fail;
		}

		/* decoding drops the space the first word was given */
		t->add_space_prefix = t->ugm->hf ? t->ugm->prepend != 0 : t->ugm->add_prefix;
		break;
	case TFM_TOK_RWKV:
		/* llama.cpp: no special tokens unless the keys name them, none
		 * added (its converter names <s>, id 0, as BOS and EOS) */
		t->bos = gguf_id(g, t, "tokenizer.ggml.bos_token_id", -1);
		t->eos = gguf_id(g, t, "tokenizer.ggml.eos_token_id", -1);
		t->unk = gguf_id(g, t, "tokenizer.ggml.unknown_token_id", -1);
		t->add_bos = 0;
		t->add_eos = 0;
		if ((st = tfm_rwkv_init(t)))
			goto fail;
		break;
	case TFM_TOK_WPM:
		t->unk = gguf_id(g, t, "tokenizer.ggml.unknown_token_id", 100);
		t->sep = gguf_id(g, t, "tokenizer.ggml.seperator_token_id", 102);
		t->pad = gguf_id(g, t, "tokenizer.ggml.padding_token_id", 0);
		t->cls = gguf_id(g, t, "tokenizer.ggml.cls_token_id", 101);
		t->bos = gguf_id(g, t, "tokenizer.ggml.bos_token_id", t->cls);
		t->eos = gguf_id(g, t, "tokenizer.ggml.eos_token_id", t->sep);
		t->add_bos = 1;
		t->add_eos = 1;
		break;
	}
	t->pad = gguf_id(g, t, "tokenizer.ggml.padding_token_id", t->pad);
	t->add_bos = (int)tfm_gguf_get_int_or(g, "tokenizer.ggml.add_bos_token", t->add_bos);
	t->add_eos = (int)tfm_gguf_get_int_or(g, "tokenizer.ggml.add_eos_token", t->add_eos);
	/* llama.cpp's T5 files (no tfm.tok.*): T5's frame, text </s>, as
	 * their add_eos_token says */
	if (kind == TFM_TOK_UGM && !t->pair_style && tfm_gguf_find(g, "tfm.tok.pair") < 0 &&
	    tfm_gguf_find(g, "tfm.tok.normalizer") < 0 && t->add_eos && !t->add_bos &&
	    !strcmp(tfm_gguf_get_str_or(g, "tokenizer.ggml.model", ""), "t5"))
		t->pair_style = 3;
	if (kind != TFM_TOK_UGM)
		t->add_space_prefix = (int)tfm_gguf_get_int_or(g, "tokenizer.ggml.add_space_prefix",
								t->add_space_prefix);
	t->decode_strip = tfm_gguf_get_int_or(g, "tfm.tok.decode_strip", 0) != 0;
	t->clean_up = tfm_gguf_get_int_or(g, "tfm.tok.clean_up_spaces", 0) != 0;
	if ((st = eos_set(t, g)) || (st = strip_set(t, g)) || (st = frame_set(t, g)) ||
	    (st = tok_finish(t)))
		goto fail;
	if (kind == TFM_TOK_UGM && tfm_gguf_find(g, "tfm.tok.target_tokens") >= 0 &&
	    (st = target_side(t, g)))
		goto fail;
	*out = t;
	return TFM_OK;
fail:
	tfm_tokenizer_free(t);
	return st;
}

int64_t tfm_tokenizer_n_vocab(const struct tfm_tokenizer *t) { return t->n_vocab; }
int32_t tfm_tokenizer_bos(const struct tfm_tokenizer *t) { return t->bos; }
int32_t tfm_tokenizer_eos(const struct tfm_tokenizer *t) { return t->eos; }
int tfm_tokenizer_add_bos(const struct tfm_tokenizer *t) { return t->add_bos; }

/* Fragments of the text: raw byte ranges, or a token matched whole. */
struct frag {
	int32_t id;      /* -1: raw text */
	size_t off, len;
};

struct frags {
	struct frag *v;
	size_t n, cap;
};

static int frag_push(struct frags *f, int32_t id, size_t off, size_t len)
{
	if (id < 0 && !len)
		return TFM_OK;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct frag *v = tfm_realloc(f->v, cap * sizeof *v);
		if (!v)
			return TFM_E_NOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = (struct frag){ id, off, len };
	return TFM_OK;
}

/* The bytes of the Unicode White_Space character (TFM_UC_SPACE: Rust's
 * char::is_whitespace, which tokenizers' lstrip / rstrip use) that s[n]
 * starts with / ends with, or 0. */
static size_t ws_after(const char *s, size_t n)
{
	size_t j = 0;
	return n && (tfm_uc_flags(tfm_utf8_decode(s, n, &j)) & TFM_UC_SPACE) ? j : 0;
}

static size_t ws_before(const char *s, size_t n)
{
	for (size_t k = 1; k <= 4 && k <= n; k++)
		if (ws_after(s + n - k, k) == k)
			return k;
	return 0;
}

/* llama.cpp's tokenizer_st_partition: for each special token, longest
 * first, split every raw fragment at its occurrences. */
static int partition(const struct tfm_tokenizer *t, const char *text, size_t len,
		     int parse_special, struct frags *out)
{
	struct frags a = { 0 }, b = { 0 };
	int st = frag_push(&a, -1, 0, len);
	for (int64_t k = 0; !st && k < t->n_special; k++) {
		int32_t id = t->special[k];
		if (!parse_special && (t->type[id] == TFM_TOKT_CONTROL || t->type[id] == TFM_TOKT_UNKNOWN))
			continue;
		const char *p = t->piece[id];
		size_t pn = t->plen[id];
		b.n = 0;
		for (size_t i = 0; !st && i < a.n; i++) {
			struct frag f = a.v[i];
			if (f.id >= 0 || f.len < pn) {
				st = frag_push(&b, f.id, f.off, f.len);
				continue;
			}
			size_t pos = f.off, end = f.off + f.len;
			const char *hit;
			while (!st && (hit = memmem(text + pos, end - pos, p, pn))) {
				size_t h = (size_t)(hit - text), e = h + pn, w;
				/* lstrip / rstrip: the whitespace beside it goes with it */
				while (t->strip && (t->strip[id] & 1) && h > pos &&
				       (w = ws_before(text + pos, h - pos)))
					h -= w;
				while (t->strip && (t->strip[id] & 2) && e < end &&
				       (w = ws_after(text + e, end - e)))
					e += w;
				if (!(st = frag_push(&b, -1, pos, h - pos)))
					st = frag_push(&b, id, h, e - h);
				pos = e;
			}
			if (!st)
				st = frag_push(&b, -1, pos, end - pos);
		}
		struct frags tmp = a;
		a = b;
		b = tmp;
	}
	free(b.v);
	if (st) {
		free(a.v);
		return st;
	}
	*out = a;
	return TFM_OK;
}

static int cmp_special(const void *x, const void *y, void *ctx)
{
	const struct tfm_tokenizer *t = ctx;
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
	if (t->plen[a] != t->plen[b])
		return t->plen[a] > t->plen[b] ? -1 : 1;
	return (a > b) - (a < b);
}

/* After the types are known: the special-token list for partition(). */
static int is_special(const struct tfm_tokenizer *t, int64_t i)
{
	/* a unigram model's <0xNN> pieces are pieces like any other
	 * (tokenizers' vocabulary), not tokens matched before encoding; an
	 * rwkv vocabulary's [PAD<i>] (UNUSED) are in the trie, as llama.cpp
	 * partitions only control, user-defined and unknown tokens */
	if (t->kind == TFM_TOK_RWKV)
		return t->plen[i] > 0 && (t->type[i] == TFM_TOKT_CONTROL ||
					  t->type[i] == TFM_TOKT_USER_DEFINED ||
					  t->type[i] == TFM_TOKT_UNKNOWN);
	return t->type[i] != TFM_TOKT_NORMAL && t->plen[i] > 0 &&
	       !(t->kind == TFM_TOK_UGM && t->type[i] == TFM_TOKT_BYTE);
}

static int tok_finish(struct tfm_tokenizer *t)
{
	int64_t n = 0;
	for (int64_t i = 0; i < t->n_vocab; i++)
		n += is_special(t, i);
	if (!n)
		return TFM_OK;
	if (!(t->special = tfm_malloc((size_t)n * sizeof *t->special)))
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < t->n_vocab; i++)
		if (is_special(t, i))
			t->special[t->n_special++] = (int32_t)i;
	qsort_r(t->special, (size_t)n, sizeof *t->special, cmp_special, t);
	return TFM_OK;
}

int tfm_tokenize_special(const struct tfm_tokenizer *t, const char *text, size_t len,
			 int add_bos, int parse_special, int32_t **ids, size_t *n)
{
	return tfm_tokenize_model(t, t->ugm, text, len, add_bos, parse_special, ids, n);
}

/* Push a frame's side, lang in src_lang's place. */
static int push_frame(const struct tfm_tokenizer *t, int side, int32_t lang, struct tfm_ids *a)
{
	int st = TFM_OK;
	for (int i = 0; !st && i < t->n_frame[side]; i++) {
		int32_t id = t->frame[side][i];
		st = tfm_ids_push(a, id == t->src_lang && lang >= 0 ? lang : id);
	}
	return st;
}

int tfm_tokenize_model(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *text,
		       size_t len, int add_bos, int parse_special, int32_t **ids, size_t *n)
{
	return tfm_tokenize_lang(t, u, text, len, add_bos ? t->src_lang : INT32_MIN,
				 parse_special, ids, n);
}

/* lang INT32_MIN: no frame (no BOS); else the frame (or BOS and, for
 * WordPiece and unigram, EOS) with lang as the language code. */
int tfm_tokenize_lang(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *text,
		      size_t len, int32_t lang, int parse_special, int32_t **ids, size_t *n)
{
	struct tfm_ids a = { 0 };
	struct frags f = { 0 };
	int st = TFM_OK, add_bos = lang != INT32_MIN;
	*ids = NULL;
	*n = 0;
	/* a unigram model adds what its post-processor adds (T5: no BOS) */
	if (add_bos && t->has_frame)
		st = push_frame(t, 0, lang, &a);
	else if (add_bos && t->bos >= 0 && (t->kind != TFM_TOK_UGM || t->add_bos))
		st = tfm_ids_push(&a, t->bos);
	if (!st && len > 0)
		st = partition(t, text, len, parse_special, &f);
	int prev_special = 1; /* SentencePiece prefixes a space at the start */
	for (size_t i = 0; !st && i < f.n; i++) {
		const char *s = text + f.v[i].off;
		size_t m = f.v[i].len;
		if (f.v[i].id >= 0) {
			st = tfm_ids_push(&a, f.v[i].id);
			prev_special = 1;
			continue;
		}
		switch (t->kind) {
		case TFM_TOK_SPM:
			st = tfm_spm_encode(t, s, m, t->add_space_prefix && prev_special, &a);
			break;
		case TFM_TOK_BPE: st = tfm_bpe_encode(t, s, m, &a); break;
		case TFM_TOK_WPM: st = tfm_wpm_encode(t, s, m, &a); break;
		case TFM_TOK_UGM: st = tfm_ugm_encode(t, u, s, m, f.v[i].off == 0, &a); break;
		case TFM_TOK_RWKV: st = tfm_rwkv_encode(t, s, m, &a); break;
		default: st = tfm_seterr(TFM_E_INTERNAL, "tokenizer kind %d", t->kind);
		}
		prev_special = 0;
	}
	free(f.v);
	/* BERT-style models close a sequence with [SEP] when they open it. */
	if (!st && add_bos && t->has_frame)
		st = push_frame(t, 1, lang, &a);
	else if (!st && add_bos && (t->kind == TFM_TOK_WPM || t->kind == TFM_TOK_UGM) &&
		 t->add_eos && t->eos >= 0)
		st = tfm_ids_push(&a, t->eos);
	if (st) {
		free(a.v);
		return st;
	}
	if (!a.v && !(a.v = tfm_malloc(sizeof *a.v)))
		return TFM_E_NOMEM;
	*ids = a.v;
	*n = a.n;
	return TFM_OK;
}

int tfm_tokenize(const struct tfm_tokenizer *t, const char *text, size_t len,
		 int add_bos, int32_t **ids, size_t *n)
{
	return tfm_tokenize_special(t, text, len, add_bos, 0, ids, n);
}

const char *tfm_token_piece(const struct tfm_tokenizer *t, int32_t id, size_t *len)
{
	if (id < 0 || id >= t->n_vocab) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = t->plen[id];
	return t->piece[id];
}

/* Append n bytes to buf (cap) at *k; TFM_E_INVAL when it does not fit. */
static int put(char *buf, size_t cap, size_t *k, const char *s, size_t n)
{
	if (*k + n > cap)
		return tfm_seterr(TFM_E_INVAL, "token text longer than %zu bytes", cap);
	memcpy(buf + *k, s, n);
	*k += n;
	return TFM_OK;
}

int tfm_token_decode(const struct tfm_tokenizer *t, int32_t prev, int32_t id, char *buf, size_t cap)
{
	if (id < 0 || id >= t->n_vocab)
		return tfm_seterr(TFM_E_INVAL, "token id %d out of range [0, %lld)", id,
				  (long long)t->n_vocab);
	const char *p = t->piece[id];
	size_t n = t->plen[id], k = 0;
	int type = t->type[id], st;
	if (t->kind == TFM_TOK_RWKV) {
		/* the token's bytes, whatever its type but control and unknown
		 * (llama.cpp's token_to_piece without special) */
		if (type == TFM_TOKT_CONTROL || type == TFM_TOKT_UNKNOWN)
			return 0;
		if ((st = put(buf, cap, &k, p, n)))
			return st;
		return (int)k;
	}
	if (type == TFM_TOKT_CONTROL || type == TFM_TOKT_UNUSED)
		return 0;
	if (type == TFM_TOKT_BYTE) {
		int b = byte_piece(p, n);
		if (b >= 0) {
			buf[0] = (char)b;
			return 1;
		}
	}
	if (type == TFM_TOKT_USER_DEFINED || type == TFM_TOKT_UNKNOWN) {
		if ((st = put(buf, cap, &k, p, n)))
			return st;
		return (int)k;
	}
	switch (t->kind) {
	case TFM_TOK_SPM:
	case TFM_TOK_UGM:
	case TFM_TOK_WPM:
		for (size_t i = 0; i < n;) {
			if (t->escape_ws || t->kind == TFM_TOK_WPM) {
				if (n - i >= 3 && !memcmp(p + i, "\xe2\x96\x81", 3)) {
					st = put(buf, cap, &k, " ", 1);
					i += 3;
					if (st)
						return st;
					continue;
				}
			}
			if ((st = put(buf, cap, &k, p + i, 1)))
				return st;
			i++;
		}
		/* Following BOS, SentencePiece strips a leading space (llama2.c). */
		if (t->kind == TFM_TOK_SPM && prev >= 0 && prev == t->bos && k > 0 && buf[0] == ' ') {
			memmove(buf, buf + 1, k - 1);
			k--;
		}
		break;
	case TFM_TOK_BPE:
		for (size_t i = 0; i < n;) {
			uint32_t cp = tfm_utf8_decode(p, n, &i);
			int b = tfm_bpe_cp_to_byte(cp);
			if (b >= 0) {
				char c = (char)b;
				st = put(buf, cap, &k, &c, 1);
			} else {
				char u[4];
				st = put(buf, cap, &k, u, tfm_utf8_encode(cp, u));
			}
			if (st)
				return st;
		}
		break;
	}
	return (int)k;
}

/* Python's str.isspace, which str.strip() removes: Unicode White_Space and
 * the separators U+001C..U+001F. */
static int py_space(uint32_t c)
{
	return (c >= 0x1c && c <= 0x1f) || (tfm_uc_flags(c) & TFM_UC_SPACE);
}

/* s[*k] without whitespace at either end (MarianTokenizer's strip()). */
static void strip_ends(char *s, size_t *k)
{
	size_t a = 0, b = *k;
	while (a < b) {
		size_t j = a;
		if (!py_space(tfm_utf8_decode(s, b, &j)))
			break;
		a = j;
	}
	while (b > a) {
		size_t c = b - 1, j;
		while (c > a && ((unsigned char)s[c] & 0xc0) == 0x80 && b - c < 4)
			c--;
		j = c;
		if (!py_space(tfm_utf8_decode(s, b, &j)) || j != b)
			break;
		b = c;
	}
	memmove(s, s + a, b - a);
	*k = b - a;
}

/* transformers' clean_up_tokenization: each replacement in turn over the
 * whole text (in place: every one shortens it). */
static void clean_up_spaces(char *s, size_t *k)
{
	static const char *const from[] = { " .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's",
					    " 've", " 're" };
	static const char *const to[] = { ".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re" };
	for (int r = 0; r < 10; r++) {
		size_t fn = strlen(from[r]), tn = strlen(to[r]), i = 0, o = 0;
		while (i < *k) {
			if (*k - i >= fn && !memcmp(s + i, from[r], fn)) {
				memcpy(s + o, to[r], tn);
				o += tn;
				i += fn;
			} else {
				s[o++] = s[i++];
			}
		}
		*k = o;
	}
}

int tfm_detokenize(const struct tfm_tokenizer *t, const int32_t *ids, size_t n,
		   char **text, size_t *len)
{
	size_t cap = 256, k = 0;
	char *s = tfm_malloc(cap), buf[1024];
	int st = TFM_OK;
	if (!s)
		return TFM_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		int m = tfm_token_decode(t, i ? ids[i - 1] : -1, ids[i], buf, sizeof buf);
		if (m < 0) {
			st = m;
			goto fail;
		}
		/* The first word of a sequence carries SentencePiece's dummy prefix. */
		if (k == 0 && m > 0 && buf[0] == ' ' && (t->kind == TFM_TOK_WPM ||
		    ((t->kind == TFM_TOK_SPM || t->kind == TFM_TOK_UGM) && t->add_space_prefix))) {
			memmove(buf, buf + 1, (size_t)m - 1);
			m--;
		}
		if (k + (size_t)m + 1 > cap) {
			while (k + (size_t)m + 1 > cap)
				cap *= 2;
			char *ns = tfm_realloc(s, cap);
			if (!ns) {
				st = TFM_E_NOMEM;
				goto fail;
			}
			s = ns;
		}
		memcpy(s + k, buf, (size_t)m);
		k += (size_t)m;
	}
	if (t->decode_strip)
		strip_ends(s, &k);
	if (t->clean_up)
		clean_up_spaces(s, &k);
	s[k] = 0;
	*text = s;
	if (len)
		*len = k;
	return TFM_OK;
fail:
	free(s);
	return st;
}
