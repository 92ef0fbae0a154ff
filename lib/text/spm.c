/* spm.c: SentencePiece-style BPE with scores and byte fallback, with the
 * semantics of llama.cpp's llm_tokenizer_spm (and llama2.c's encode): the
 * text gets a leading space, spaces become U+2581 (GGUF vocabularies), the
 * text splits into UTF-8 characters, and adjacent pairs that form a token
 * merge best score first (ties: leftmost); what is left and is not a token
 * falls back to byte tokens <0xNN>.  With merges (a tokenizer.json BPE
 * with byte fallback), only the listed pairs merge, lowest rank first, as
 * in tokenizers' BPE. */
#include "tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

static int try_bigram(const struct tfm_tokenizer *t, const char *s, struct tfm_sym *sy,
		      struct tfm_bigram_heap *h, char *key, int left, int right)
{
	if (left < 0 || right < 0)
		return TFM_OK;
	size_t n = sy[left].n + sy[right].n;
	int32_t id = tfm_strmap_get(&t->map, s + sy[left].off, n);
	if (id < 0)
		return TFM_OK;
	/* higher score first: the queue takes the smallest key */
	struct tfm_bigram b = { left, right, -(double)(t->score ? t->score[id] : 0.0f), n };
	if (t->merge_arena) { /* with merges: only listed pairs, lowest rank first */
		memcpy(key, s + sy[left].off, sy[left].n);
		key[sy[left].n] = ' ';
		memcpy(key + sy[left].n + 1, s + sy[right].off, sy[right].n);
		int32_t rank = tfm_strmap_get(&t->merges, key, n + 1);
		if (rank < 0)
			return TFM_OK;
		b.key = rank;
	}
	return tfm_bigram_push(h, b);
}

int tfm_spm_encode(const struct tfm_tokenizer *t, const char *text, size_t len, int prefix,
		   struct tfm_ids *out)
{
	/* Preprocess: optional leading space, then spaces -> U+2581. */
	size_t cap = (len + 1) * 3;
	char *s = tfm_malloc(cap);
	struct tfm_sym *sy = NULL;
	struct tfm_bigram_heap h = { 0 };
	char *key = NULL;           /* "left right" of a pair (merges) */
	int st = TFM_E_NOMEM;
	if (!s)
		return st;
	size_t k = 0;
	const char *ws = t->escape_ws ? "\xe2\x96\x81" : " ";
	size_t wsn = t->escape_ws ? 3 : 1;
	if (prefix) {
		memcpy(s, ws, wsn);
		k += wsn;
	}
	for (size_t i = 0; i < len; i++) {
		if (text[i] == ' ') {
			memcpy(s + k, ws, wsn);
			k += wsn;
		} else {
			s[k++] = text[i];
		}
	}
	/* Symbols: UTF-8 characters. */
	if (!(sy = tfm_malloc(k * sizeof *sy)) || !(key = tfm_malloc(k + 2)))
		goto done;
	int ns = 0;
	for (size_t off = 0; off < k;) {
		size_t n = tfm_utf8_len((unsigned char)s[off]);
		if (n > k - off)
			n = k - off;
		sy[ns].off = off;
		sy[ns].n = n;
		sy[ns].prev = ns - 1;
		off += n;
		sy[ns].next = off == k ? -1 : ns + 1;
		ns++;
	}
	for (int i = 1; i < ns; i++)
		if ((st = try_bigram(t, s, sy, &h, key, i - 1, i)))
			goto done;
	while (h.n) {
		struct tfm_bigram b = tfm_bigram_pop(&h);
		if (!tfm_bigram_apply(sy, &b))
			continue;
		int next = sy[b.left].next, prev = sy[b.left].prev;
		if ((st = try_bigram(t, s, sy, &h, key, prev, b.left)) ||
		    (st = try_bigram(t, s, sy, &h, key, b.left, next)))
			goto done;
	}
	st = TFM_OK;
	for (int i = ns ? 0 : -1; i != -1 && !st; i = sy[i].next) {
		int32_t id = tfm_strmap_get(&t->map, s + sy[i].off, sy[i].n);
		if (id >= 0) {
			st = tfm_ids_push(out, id);
			continue;
		}
		for (size_t j = 0; j < sy[i].n && !st; j++) {
			unsigned char c = (unsigned char)s[sy[i].off + j];
			int32_t b = t->byte_tok[c] >= 0 ? t->byte_tok[c] : t->unk;
			if (b < 0) /* never id -1: the model would index its embeddings with it */
				st = tfm_seterr(TFM_E_FORMAT, "SentencePiece: no token for byte 0x%02x "
						"and no unknown token in the vocabulary", c);
			else
				st = tfm_ids_push(out, b);
		}
	}
done:
	free(s);
	free(sy);
	free(key);
	free(h.v);
	return st;
}
