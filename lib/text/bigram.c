/* bigram.c: the priority queue of candidate merges shared by the BPE and
 * SentencePiece tokenizers: a binary min-heap on (key, left position), so
 * the best merge comes first and ties go to the leftmost pair; and the merge
 * of a popped pair into the symbol list. */
#include "text/tokenizer-impl.h"

static int before(const struct tfm_bigram *a, const struct tfm_bigram *b)
{
	return a->key < b->key || (a->key == b->key && a->left < b->left);
}

int tfm_bigram_push(struct tfm_bigram_heap *h, struct tfm_bigram b)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct tfm_bigram *v = tfm_realloc(h->v, cap * sizeof *v);
		if (!v)
			return TFM_E_NOMEM;
		h->v = v;
		h->cap = cap;
	}
	size_t i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(&b, &h->v[p]))
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = b;
	return TFM_OK;
}

struct tfm_bigram tfm_bigram_pop(struct tfm_bigram_heap *h)
{
	struct tfm_bigram top = h->v[0], last = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

int tfm_bigram_apply(struct tfm_sym *sy, const struct tfm_bigram *b)
{
	struct tfm_sym *l = &sy[b->left], *r = &sy[b->right];
	if (l->n == 0 || r->n == 0 || l->n + r->n != b->size)
		return 0;
	l->n += r->n;
	r->n = 0;
	l->next = r->next;
	if (r->next >= 0)
		sy[r->next].prev = b->left;
	return 1;
}
