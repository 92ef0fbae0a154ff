/* pair.c: encoder inputs as tokenizer.json's post-processor builds them.
 * BERT (BertProcessing, or the TemplateProcessing BERT tokenizers declare):
 * [CLS] A [SEP], pairs [CLS] A [SEP] B [SEP] with token types 0 up to the
 * first [SEP] and 1 after it.  RoBERTa (RobertaProcessing): <s> A </s>,
 * pairs <s> A </s></s> B </s>, types all 0.  A unigram model takes the one
 * of these its tfm.tok.pair names (XLM-R's roberta, DeBERTa-v3's bert), or
 * T5's A </s>, pairs A </s> B </s>.  A frame of its own (tfm.tok.frame_*,
 * mBART's A </s> ro_RO) takes single texts only.  Other post-processors are
 * refused.
 * A target text (labels) takes the same frame; Marian cuts it with its
 * target model. */
#include "text/tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

/* BERT: WordPiece, [CLS] A [SEP] (B [SEP]), types 0 then 1.  RoBERTa:
 * byte-level BPE whose post-processor named cls and sep (RobertaProcessing),
 * <s> A </s> (</s> B </s>), types all 0.  0: neither. */
static int template_of(const struct tfm_tokenizer *t)
{
	if (t->has_frame) /* tfm.tok.frame_*: single texts only */
		return 4;
	/* unigram: the template tfm.tok.pair names (its post-processor's) */
	if (t->kind == TFM_TOK_UGM) {
		int s = t->pair_style;
		if (!t->add_eos || t->eos < 0 || (s != 3 && (!t->add_bos || t->bos < 0)) ||
		    (s == 3 && t->add_bos))
			return 0;
		return s;
	}
	if (t->cls < 0 || t->sep < 0 || t->bos != t->cls || t->eos != t->sep || !t->add_eos)
		return 0;
	if (t->kind == TFM_TOK_BPE) /* RoBERTa's pairs unless tfm.tok.pair says BERT's */
		return !t->add_bos ? 0 : t->pair_style == 1 ? 1 : 2;
	return t->kind == TFM_TOK_WPM ? 1 : 0;
}

int tfm_tokenize_seq(const struct tfm_tokenizer *t, const char *text, size_t len,
		     int parse_special, int32_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	int tpl = template_of(t);
	if (!tpl)
		return tfm_seterr(TFM_E_UNSUPPORTED, "encoder input needs BERT's or RoBERTa's "
				  "post-processor ([CLS] text [SEP], <s> text </s>); this tokenizer "
				  "has neither");
	int st = tfm_tokenize_special(t, text, len, 1, parse_special, ids, n);
	/* WordPiece and unigram add their closing token, a frame its own */
	if (st || t->has_frame || t->kind == TFM_TOK_WPM || t->kind == TFM_TOK_UGM)
		return st;
	int32_t *x = realloc(*ids, (*n + 1) * sizeof *x); /* RoBERTa: the closing </s> */
	if (!x) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	}
	x[(*n)++] = t->sep;
	*ids = x;
	return TFM_OK;
}

int tfm_tokenize_target(const struct tfm_tokenizer *t, const char *text, size_t len,
			int32_t **ids, size_t *n)
{
	/* mBART: the target language's frame; MBartTokenizerFast reads the
	 * special tokens written in a target as tokens */
	if (t->has_frame && t->tgt_lang >= 0)
		return tfm_tokenize_lang(t, t->ugm, text, len, t->tgt_lang, 1, ids, n);
	/* Marian with separate vocabularies: the target tokenizer's own */
	if (t->target) {
		*ids = NULL;
		*n = 0;
		if (!template_of(t->target))
			return tfm_seterr(TFM_E_UNSUPPORTED, "a target text needs the frame of the "
					  "encoder's input (tfm.tok.pair); this tokenizer has none");
		return tfm_tokenize_model(t->target, t->target->ugm, text, len, 1, 0, ids, n);
	}
	if (t->kind != TFM_TOK_UGM || !t->ugm_target)
		return tfm_tokenize_seq(t, text, len, 0, ids, n);
	*ids = NULL;
	*n = 0;
	if (!template_of(t))
		return tfm_seterr(TFM_E_UNSUPPORTED, "a target text needs the frame of the "
				  "encoder's input (tfm.tok.pair); this tokenizer has none");
	/* framed as tfm_tokenize_seq frames a source text (Marian: text </s>) */
	return tfm_tokenize_model(t, t->ugm_target, text, len, 1, 0, ids, n);
}

int tfm_tokenize_words(const struct tfm_tokenizer *t, const char *text, size_t len,
		       int32_t **ids, int32_t **spans, size_t *n)
{
	struct tfm_ids a = {0}, sp = {0};
	*ids = *spans = NULL;
	*n = 0;
	if (t->kind != TFM_TOK_WPM || template_of(t) != 1)
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
	int tpl = template_of(t);
	if (!tpl || tpl == 4)
		return tfm_seterr(TFM_E_UNSUPPORTED, "text pairs need BERT's or RoBERTa's "
				  "post-processor; this tokenizer has neither");
	int st = tfm_tokenize(t, a, alen, 0, &x, &nx);
	if (!st)
		st = tfm_tokenize(t, b, blen, 0, &y, &ny);
	if (st)
		goto out;
	size_t m = nx + ny + 3 + (tpl == 2);
	if (tpl == 3) { /* A </s> B </s> */
		if (!(*ids = tfm_malloc((nx + ny + 2) * sizeof **ids)) ||
		    !(*types = tfm_calloc(nx + ny + 2, sizeof **types))) {
			free(*ids);
			*ids = NULL;
			st = TFM_E_NOMEM;
			goto out;
		}
		memcpy(*ids, x, nx * sizeof *x);
		(*ids)[nx] = t->eos;
		memcpy(*ids + nx + 1, y, ny * sizeof *y);
		(*ids)[nx + ny + 1] = t->eos;
		*n = nx + ny + 2;
		goto out;
	}
	*ids = tfm_malloc(m * sizeof **ids);
	*types = tfm_malloc(m * sizeof **types);
	if (!*ids || !*types) {
		free(*ids), free(*types);
		*ids = *types = NULL;
		st = TFM_E_NOMEM;
		goto out;
	}
	size_t k = 0;
	(*ids)[k++] = t->kind == TFM_TOK_UGM ? t->bos : t->cls;
	memcpy(*ids + k, x, nx * sizeof *x);
	k += nx;
	int32_t sep = t->kind == TFM_TOK_UGM ? t->eos : t->sep;
	(*ids)[k++] = sep;
	if (tpl == 2)
		(*ids)[k++] = sep;
	for (size_t i = 0; i < m; i++)
		(*types)[i] = tpl == 1 && i >= k;
	memcpy(*ids + k, y, ny * sizeof *y);
	k += ny;
	(*ids)[k++] = sep;
	*n = k;
out:
	free(x);
	free(y);
	return st;
}
