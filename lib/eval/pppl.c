/* pppl.c: pseudo-perplexity of a masked language model (Salazar, Liang,
 * Nguyen and Kirchhoff 2020, "Masked Language Model Scoring").  Each token
 * of a window is replaced in turn by the mask token and scored by the
 * masked-LM head at its position, with the rest of the window, both sides,
 * as context:
 *   PLL(W) = sum_t log P(w_t | W \ t),  PPPL = exp(-PLL / N).
 * A window is the tokenizer's frame ([CLS] ... [SEP], <s> ... </s>) around
 * up to ctx - frame content tokens; the text's content tokens are cut into
 * consecutive windows and each is scored once.  The frame's own tokens are
 * not scored.  One forward pass per scored token: n^2 work per window. */
#include "eval/eval.h"
#include "model/encoder.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "tfm.h"

#include <stdlib.h>
#include <string.h>

/* The mask token: the vocabulary's "[MASK]" (BERT, ALBERT, DeBERTa) or
 * "<mask>" (RoBERTa, XLM-R); -1 when it has neither. */
static int32_t mask_token(const struct tfm_tokenizer *t)
{
	int64_t n = tfm_tokenizer_n_vocab(t);
	for (int64_t i = 0; i < n; i++) {
		size_t len;
		const char *p = tfm_token_piece(t, (int32_t)i, &len);
		if (p && len == 6 && (!memcmp(p, "[MASK]", 6) || !memcmp(p, "<mask>", 6)))
			return (int32_t)i;
	}
	return -1;
}

void tfm_pppl_free(struct tfm_pppl *p)
{
	free(p->ids);
	memset(p, 0, sizeof *p);
}

int tfm_pppl_prepare(struct tfm_pppl *p, const struct tfm_tokenizer *t, const char *text,
		     size_t len, int64_t ctx)
{
	int32_t *e = NULL, *ids = NULL;
	size_t ne = 0, n = 0;
	memset(p, 0, sizeof *p);
	p->mask = mask_token(t);
	if (p->mask < 0)
		return tfm_seterr(TFM_E_FORMAT, "pseudo-perplexity: the vocabulary has no mask token "
				  "([MASK] or <mask>)");
	/* the frame: what the post-processor puts around an empty text, split
	 * where the text's own tokens go */
	int st = tfm_tokenize_seq(t, "", 0, 0, &e, &ne);
	if (!st)
		st = tfm_tokenize_seq(t, text, len, 0, &ids, &n);
	if (st)
		goto fail;
	size_t pre = 0;
	while (pre < ne && pre < n && ids[pre] == e[pre])
		pre++;
	if (ne > 4 || n < ne || memcmp(ids + n - (ne - pre), e + pre, (ne - pre) * sizeof *e)) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "pseudo-perplexity: the tokenizer's frame around "
				"a text is not a fixed prefix and suffix");
		goto fail;
	}
	p->n_pre = (int)pre;
	p->n_suf = (int)(ne - pre);
	memcpy(p->frame, e, ne * sizeof *e);
	p->n = (int64_t)(n - ne);
	memmove(ids, ids + pre, (size_t)p->n * sizeof *ids);
	p->ids = ids;
	p->per_win = ctx - (int64_t)ne;
	if (p->per_win < 1) {
		st = tfm_seterr(TFM_E_INVAL, "-c %lld: a window needs room for %zu frame tokens and one "
				"more", (long long)ctx, ne);
		goto fail;
	}
	if (p->n < 1) {
		st = tfm_seterr(TFM_E_FORMAT, "the text has no tokens to score");
		goto fail;
	}
	p->n_win = (p->n + p->per_win - 1) / p->per_win;
	free(e);
	return TFM_OK;
fail:
	free(e);
	free(ids);
	p->ids = NULL;
	return st;
}

int tfm_pppl_window(struct tfm_ctx *c, const struct tfm_tokenizer *t, const struct tfm_pppl *p,
		    int64_t w, float *logits, int64_t n_vocab, struct tfm_ppl_acc *acc)
{
	int64_t b = w * p->per_win, k = p->n - b < p->per_win ? p->n - b : p->per_win;
	int64_t n = p->n_pre + k + p->n_suf;
	if (w < 0 || k < 1)
		return tfm_seterr(TFM_E_INVAL, "pseudo-perplexity: window %lld of %lld",
				  (long long)w, (long long)p->n_win);
	int32_t *x = malloc((size_t)n * sizeof *x);
	if (!x)
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	memcpy(x, p->frame, (size_t)p->n_pre * sizeof *x);
	memcpy(x + p->n_pre, p->ids + b, (size_t)k * sizeof *x);
	memcpy(x + p->n_pre + k, p->frame + p->n_pre, (size_t)p->n_suf * sizeof *x);
	int st = TFM_OK;
	for (int64_t i = p->n_pre; !st && i < p->n_pre + k; i++) {
		int32_t target = x[i];
		x[i] = p->mask;
		st = tfm_fill_mask(c, x, NULL, n, i, logits);
		x[i] = target;
		if (!st) {
			char piece[512];
			int nb = tfm_token_decode(t, i > 0 ? x[i - 1] : -1, target, piece,
						  sizeof piece);
			tfm_ppl_add(acc, logits, n_vocab, target, nb > 0 ? nb : 0);
		}
	}
	free(x);
	return st;
}
