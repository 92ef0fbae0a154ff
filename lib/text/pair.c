/* pair.c: encoder inputs as BERT's post-processor builds them: a single
 * text [CLS] A [SEP], and a text pair (BertProcessing,
 * and the TemplateProcessing BERT tokenizers declare for pairs):
 * [CLS] A [SEP] B [SEP] with token type 0 up to the first [SEP] and 1
 * after it.  Other tokenizers' pair templates (RoBERTa's <s> A </s></s> B
 * </s>) are refused until they are read from tokenizer.json. */
#include "text/tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

int tfm_tokenize_seq(const struct tfm_tokenizer *t, const char *text, size_t len,
		     int parse_special, int32_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	if (t->kind != TFM_TOK_WPM || !t->add_eos || t->cls < 0 || t->sep < 0 || t->bos != t->cls ||
	    t->eos != t->sep)
		return tfm_seterr(TFM_E_UNSUPPORTED, "encoder input needs a WordPiece tokenizer "
				  "closing with [SEP] (other post-processors, such as RoBERTa's "
				  "<s> ... </s>, are not read yet)");
	return tfm_tokenize_special(t, text, len, 1, parse_special, ids, n);
}

int tfm_tokenize_words(const struct tfm_tokenizer *t, const char *text, size_t len,
		       int32_t **ids, int32_t **spans, size_t *n)
{
	struct tfm_ids a = {0}, sp = {0};
	*ids = *spans = NULL;
	*n = 0;
	if (t->kind != TFM_TOK_WPM || !t->add_eos || t->cls < 0 || t->sep < 0 || t->bos != t->cls ||
	    t->eos != t->sep)
		return tfm_seterr(TFM_E_UNSUPPORTED, "words and their offsets need a WordPiece "
				  "tokenizer closing with [SEP]");
	int st = tfm_ids_push(&a, t->cls);
	if (!st)
		st = tfm_ids_push(&sp, -1);
	if (!st)
		st = tfm_ids_push(&sp, -1);
	if (!st)
		st = tfm_wpm_encode_spans(t, text, len, &a, &sp);
	if (!st)
		st = tfm_ids_push(&a, t->sep);
	if (!st)
		st = tfm_ids_push(&sp, -1);
	if (!st)
		st = tfm_ids_push(&sp, -1);
	if (st) {
		free(a.v);
		free(sp.v);
		return st;
	}
	*ids = a.v;
	*spans = sp.v;
	*n = a.n;
	return TFM_OK;
}

int tfm_tokenize_pair(const struct tfm_tokenizer *t, const char *a, size_t alen, const char *b,
		      size_t blen, int32_t **ids, int32_t **types, size_t *n)
{
	int32_t *x = NULL, *y = NULL;
	size_t nx = 0, ny = 0;
	*ids = *types = NULL;
	*n = 0;
	if (t->kind != TFM_TOK_WPM || t->cls < 0 || t->sep < 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "text pairs need a WordPiece tokenizer with "
				  "[CLS] and [SEP] (BERT's pair template)");
	int st = tfm_tokenize(t, a, alen, 0, &x, &nx);
	if (!st)
		st = tfm_tokenize(t, b, blen, 0, &y, &ny);
	if (st)
		goto out;
	size_t m = nx + ny + 3;
	*ids = tfm_malloc(m * sizeof **ids);
	*types = tfm_malloc(m * sizeof **types);
	if (!*ids || !*types) {
		free(*ids), free(*types);
		*ids = *types = NULL;
		st = TFM_E_NOMEM;
		goto out;
	}
	size_t k = 0;
	(*ids)[k++] = t->cls;
	memcpy(*ids + k, x, nx * sizeof *x);
	k += nx;
	(*ids)[k++] = t->sep;
	for (size_t i = 0; i < m; i++)
		(*types)[i] = i >= k;
	memcpy(*ids + k, y, ny * sizeof *y);
	k += ny;
	(*ids)[k++] = t->sep;
	*n = k;
out:
	free(x);
	free(y);
	return st;
}
