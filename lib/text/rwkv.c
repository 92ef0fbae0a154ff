/* rwkv.c: the RWKV "world" tokenizer with the semantics of llama.cpp's
 * llm_tokenizer_rwkv: every token's bytes go into a byte trie (a later id
 * replaces an earlier one with the same bytes), and the text is cut
 * greedily, the longest token that matches at each position.  GGUF stores
 * a token's bytes escaped (llama_unescape_rwkv_token): \t \n \r, \xNN, and
 * a backslash before any other character stands for that character. */
#include "tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

/* Edges live in one open-addressing table keyed by (node << 8 | byte). */
struct tfm_rwkv {
	size_t cap;          /* power of two */
	uint64_t *key;       /* [cap] edge key + 1; 0 = empty */
	uint32_t *child;     /* [cap] */
	int32_t *val;        /* [n_nodes] token id, -1 none; node 0 is the root */
	uint32_t n_nodes;
};

static size_t edge_slot(const struct tfm_rwkv *r, uint64_t k)
{
	uint64_t h = k * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 17) & (r->cap - 1);
	while (r->key[i] && r->key[i] != k + 1)
		i = (i + 1) & (r->cap - 1);
	return i;
}

static int64_t edge_get(const struct tfm_rwkv *r, uint32_t node, unsigned char c)
{
	size_t i = edge_slot(r, ((uint64_t)node << 8) | c);
	return r->key[i] ? (int64_t)r->child[i] : -1;
}

int tfm_rwkv_unescape(const char *s, size_t n, char *out, size_t *out_n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			out[k++] = s[i];
			continue;
		}
		if (++i == n)
			return tfm_seterr(TFM_E_FORMAT, "ends with a lone backslash");
		switch (s[i]) {
		case 't': out[k++] = '\t'; break;
		case 'n': out[k++] = '\n'; break;
		case 'r': out[k++] = '\r'; break;
		case 'x': {
			/* llama.cpp reads lowercase hex digits (Python's repr writes them) */
			static const char hex[] = "0123456789abcdef";
			if (n - i < 3 || !s[i + 1] || !s[i + 2] || !strchr(hex, s[i + 1]) ||
			    !strchr(hex, s[i + 2]))
				return tfm_seterr(TFM_E_FORMAT, "bad \\x escape at byte %zu", i - 1);
			out[k++] = (char)((strchr(hex, s[i + 1]) - hex) * 16 + (strchr(hex, s[i + 2]) - hex));
			i += 2;
			break;
		}
		default: out[k++] = s[i];
		}
	}
	*out_n = k;
	return TFM_OK;
}

void tfm_rwkv_free(struct tfm_rwkv *r)
{
	if (!r)
		return;
	free(r->key);
	free(r->child);
	free(r->val);
	free(r);
}

int tfm_rwkv_init(struct tfm_tokenizer *t)
{
	size_t total = 0;
	for (int64_t i = 0; i < t->n_vocab; i++)
		total += t->plen[i];
	if (total > UINT32_MAX / 2)
		return tfm_seterr(TFM_E_FORMAT, "rwkv tokenizer: %zu bytes of tokens", total);
	struct tfm_rwkv *r = tfm_calloc(1, sizeof *r);
	if (!r)
		return TFM_E_NOMEM;
	r->cap = 16;
	while (r->cap < 2 * total + 2)
		r->cap *= 2;
	r->key = tfm_calloc(r->cap, sizeof *r->key);
	r->child = tfm_malloc(r->cap * sizeof *r->child);
	r->val = tfm_malloc((total + 1) * sizeof *r->val);
	if (!r->key || !r->child || !r->val) {
		tfm_rwkv_free(r);
		return TFM_E_NOMEM;
	}
	r->n_nodes = 1;
	r->val[0] = -1;
	for (int64_t id = 0; id < t->n_vocab; id++) {
		const unsigned char *p = (const unsigned char *)t->piece[id];
		uint32_t node = 0;
		if (!t->plen[id]) /* llama.cpp marks the root, which no walk reads */
			continue;
		for (uint32_t j = 0; j < t->plen[id]; j++) {
			size_t i = edge_slot(r, ((uint64_t)node << 8) | p[j]);
			if (!r->key[i]) {
				r->key[i] = (((uint64_t)node << 8) | p[j]) + 1;
				r->child[i] = r->n_nodes;
				r->val[r->n_nodes] = -1;
				r->n_nodes++;
			}
			node = r->child[i];
		}
		r->val[node] = (int32_t)id;
	}
	t->rwkv = r;
	return TFM_OK;
}

int tfm_rwkv_encode(const struct tfm_tokenizer *t, const char *text, size_t len,
		    struct tfm_ids *out)
{
	const struct tfm_rwkv *r = t->rwkv;
	const unsigned char *s = (const unsigned char *)text;
	size_t pos = 0;
	int st;
	while (pos < len) {
		int32_t id = -1;
		size_t end = pos;
		int64_t node = edge_get(r, 0, s[pos]);
		for (size_t j = pos; node >= 0;) {
			if (r->val[node] >= 0) {
				id = r->val[node];
				end = j + 1;
			}
			if (++j >= len)
				break;
			node = edge_get(r, (uint32_t)node, s[j]);
		}
		if (id < 0) {
			/* llama.cpp pushes its unknown token (none, for rwkv) and
			 * moves on one byte; when a prefix is in the trie but no token
			 * ends on the way it would start over at 0.  The world
			 * vocabulary has every byte, so neither happens there. */
			if (t->unk < 0)
				return tfm_seterr(TFM_E_INVAL, "rwkv tokenizer: no token for byte 0x%02x "
						  "at offset %zu, and no unknown token", s[pos], pos);
			id = t->unk;
			end = pos + 1;
		}
		if ((st = tfm_ids_push(out, id)))
			return st;
		pos = end;
	}
	return TFM_OK;
}
