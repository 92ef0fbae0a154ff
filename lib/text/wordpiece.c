/* wordpiece.c: WordPiece (BERT; GGUF tokenizer.ggml.model = bert) with the
 * semantics of llama.cpp's llm_tokenizer_wpm.  GGUF stores BERT vocabularies
 * with word-initial pieces as "\u2581word" and continuations ("##ing") bare,
 * so a word is matched as "\u2581" + word, greedily longest first; a word
 * with an unmatched position becomes [UNK].  Pre-tokenization: NFD reduced
 * to the base character (which strips accents), lowercase, split on
 * whitespace, punctuation, ASCII symbols and CJK ideographs, drop controls. */
#include "tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

static int is_chinese(uint32_t c)
{
	return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
	       (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
	       (c >= 0x2B740 && c <= 0x2B81F) ||
	       (c >= 0x2B920 && c <= 0x2CEAF) || /* HF's range (0x2B820 in Unicode) */
	       (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Greedy longest-match of "\u2581" + word. */
static int encode_word(const struct tfm_tokenizer *t, const char *w, size_t wn,
		       char *buf, struct tfm_ids *out)
{
	memcpy(buf, "\xe2\x96\x81", 3);
	memcpy(buf + 3, w, wn);
	size_t n = wn + 3, start = out->n;
	int st;
	for (size_t i = 0; i < n; i++) {
		size_t j = i + t->max_len + 1 < n ? i + t->max_len + 1 : n;
		int32_t id = -1;
		for (; j > i; j--)
			if ((id = tfm_strmap_get(&t->map, buf + i, j - i)) >= 0)
				break;
		if (id < 0) {
			out->n = start; /* discard the word's tokens */
			break;
		}
		if ((st = tfm_ids_push(out, id)))
			return st;
		i = j - 1;
	}
	if (out->n > start)
		return TFM_OK;
	if (t->unk < 0) /* never id -1: the model would index its embeddings with it */
		return tfm_seterr(TFM_E_FORMAT, "WordPiece: no token for '%.*s' and no unknown "
				  "token in the vocabulary", (int)(wn < 64 ? wn : 64), w);
	return tfm_ids_push(out, t->unk);
}

/* encode_word, then the word's byte span [ws, we) of the input for each of
 * its tokens when spans is given (pairs of int32) */
static int word(const struct tfm_tokenizer *t, const char *w, size_t wn, char *buf,
		struct tfm_ids *out, struct tfm_ids *spans, size_t ws, size_t we)
{
	size_t n0 = out->n;
	int st = encode_word(t, w, wn, buf, out);
	for (size_t k = n0; !st && spans && k < out->n; k++)
		if (!(st = tfm_ids_push(spans, (int32_t)ws)))
			st = tfm_ids_push(spans, (int32_t)we);
	return st;
}

int tfm_wpm_encode(const struct tfm_tokenizer *t, const char *text, size_t len, struct tfm_ids *out)
{
	return tfm_wpm_encode_spans(t, text, len, out, NULL);
}

int tfm_wpm_encode_spans(const struct tfm_tokenizer *t, const char *text, size_t len,
			 struct tfm_ids *out, struct tfm_ids *spans)
{
	size_t ws = 0, we = 0; /* the current word's bytes in text */
	/* Lowercasing can grow a character (at most 4 bytes each). */
	char *wbuf = tfm_malloc(len * 4 + 8), *buf = tfm_malloc(len * 4 + 16);
	size_t wn = 0;
	int st = TFM_OK;
	if (!wbuf || !buf) {
		st = TFM_E_NOMEM;
		goto done;
	}
	if (len > INT32_MAX)
		st = tfm_seterr(TFM_E_INVAL, "WordPiece: text of %zu bytes", len);
	for (size_t i = 0; i < len && !st;) {
		size_t i0 = i;
		uint32_t cp = tfm_uc_nfd_first(tfm_utf8_decode(text, len, &i));
		int f = tfm_uc_flags(cp);
		if (f & TFM_UC_SPACE) {
			if (wn)
				st = word(t, wbuf, wn, buf, out, spans, ws, we);
			wn = 0;
			continue;
		}
		if (cp == 0 || cp == 0xfffd || (f & TFM_UC_CONTROL))
			continue;
		char u[4];
		size_t un = tfm_utf8_encode(tfm_uc_lower(cp), u);
		if ((f & TFM_UC_PUNCT) || (cp < 0x7f && (f & TFM_UC_SYMBOL)) || is_chinese(cp)) {
			if (wn && (st = word(t, wbuf, wn, buf, out, spans, ws, we)))
				break;
			wn = 0;
			st = word(t, u, un, buf, out, spans, i0, i);
		} else {
			if (!wn)
				ws = i0;
			we = i;
			memcpy(wbuf + wn, u, un);
			wn += un;
		}
	}
	if (!st && wn)
		st = word(t, wbuf, wn, buf, out, spans, ws, we);
done:
	free(wbuf);
	free(buf);
	return st;
}
