/* ugm-import.c: for tfm-convert, what a unigram tokenizer needs beside its
 * vocabulary: tokenizer.json's normalizer (its Precompiled charsmap, base64,
 * becomes llama.cpp's tokenizer.ggml.precompiled_charsmap; the rest is kept
 * as JSON in tfm.tok.normalizer) and pre_tokenizer (tfm.tok.pre_tokenizer),
 * or a tokenizer.model's normalizer_spec flags.  Both are checked here with
 * the parsers the tokenizer loads them with, so a pipeline tfm cannot run
 * is refused when converting; so is a decoder tfm's decoding differs from.
 * Marian's keys (both of its models; marian-import.c fills them) are
 * written here too. */
#include "unigram.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static int b64_decode(const char *s, size_t n, uint8_t **out, size_t *outn)
{
	uint8_t *o = tfm_malloc(n / 4 * 3 + 3);
	size_t k = 0;
	uint32_t acc = 0;
	int bits = 0;
	if (!o)
		return TFM_E_NOMEM;
	size_t i = 0;
	for (; i < n && s[i] != '='; i++) {
		int v = b64val((unsigned char)s[i]);
		if (v < 0) {
			free(o);
			return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: precompiled_charsmap is not "
					  "base64 (byte %zu)", i);
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[k++] = (uint8_t)(acc >> bits);
		}
	}
	for (; i < n && s[i] == '='; i++)
		;
	if (i != n) {
		free(o);
		return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: precompiled_charsmap is not base64");
	}
	*out = o;
	*outn = k;
	return TFM_OK;
}

/* Take every Precompiled's charsmap out of the normalizer n (there must be
 * one map: GGUF has one key for it). */
static int take_charsmap(struct tfm_ugm_keys *k, json_t *n)
{
	const char *type = json_string_value(json_object_get(n, "type"));
	size_t i;
	json_t *e;
	int st;
	json_array_foreach(json_object_get(n, "normalizers"), i, e)
		if ((st = take_charsmap(k, e)))
			return st;
	if (!type || strcmp(type, "Precompiled"))
		return TFM_OK;
	json_t *c = json_object_get(n, "precompiled_charsmap");
	if (!json_is_string(c))
		return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: Precompiled normalizer without "
				  "a precompiled_charsmap string");
	uint8_t *b = NULL;
	size_t bn = 0;
	if ((st = b64_decode(json_string_value(c), json_string_length(c), &b, &bn)))
		return st;
	if (k->cmap && (bn != k->cmap_n || memcmp(b, k->cmap, bn))) {
		free(b);
		return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: two different Precompiled "
				  "normalizers");
	}
	free(k->cmap);
	k->cmap = b;
	k->cmap_n = bn;
	json_object_del(n, "precompiled_charsmap");
	return TFM_OK;
}

/* tfm decodes a unigram model one way: U+2581 -> ' ', <0xNN> -> the byte,
 * the first word's space dropped when the pre-tokenizer prepends one.
 * Decoders that do that are Metaspace and Llama's Sequence of Replace,
 * ByteFallback, Fuse and Strip(1 leading space); others are refused. */
static int check_decoder(json_t *d)
{
	const char *type = json_string_value(json_object_get(d, "type"));
	size_t i;
	json_t *e;
	int st;
	if (!d || json_is_null(d))
		return TFM_OK;
	if (type && !strcmp(type, "Sequence")) {
		json_array_foreach(json_object_get(d, "decoders"), i, e)
			if ((st = check_decoder(e)))
				return st;
		return TFM_OK;
	}
	const char *r = json_string_value(json_object_get(d, "replacement"));
	const char *pat = json_string_value(json_object_get(json_object_get(d, "pattern"),
							    "String"));
	const char *c = json_string_value(json_object_get(d, "content"));
	if (type && ((!strcmp(type, "Metaspace") && (!r || !strcmp(r, "\xe2\x96\x81"))) ||
		     !strcmp(type, "ByteFallback") || !strcmp(type, "Fuse") ||
		     (!strcmp(type, "Replace") && pat && !strcmp(pat, "\xe2\x96\x81") && c &&
		      !strcmp(c, " ")) ||
		     (!strcmp(type, "Strip") && c && !strcmp(c, " ") &&
		      json_integer_value(json_object_get(d, "start")) <= 1 &&
		      json_integer_value(json_object_get(d, "stop")) == 0)))
		return TFM_OK;
	char *dump = json_dumps(d, JSON_COMPACT);
	st = tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: unigram decoder not supported: %.300s",
			dump ? dump : "?");
	free(dump);
	return st;
}

int tfm_ugm_keys_from_json(struct tfm_ugm_keys *k, json_t *root)
{
	struct tfm_ugm u;
	int st;
	memset(&u, 0, sizeof u);
	json_t *n = json_deep_copy(json_object_get(root, "normalizer"));
	json_t *p = json_object_get(root, "pre_tokenizer");
	k->byte_fallback = json_is_true(json_object_get(json_object_get(root, "model"),
							"byte_fallback"));
	if (!n)
		n = json_null();
	if ((st = take_charsmap(k, n)) || (st = check_decoder(json_object_get(root, "decoder"))))
		goto done;
	if (k->cmap && (st = tfm_charsmap_init(&u.cmap, k->cmap, k->cmap_n))) {
		tfm_adderr(st, "tokenizer.json");
		goto done;
	}
	st = TFM_E_NOMEM;
	if (!(k->norm = json_dumps(n, JSON_COMPACT | JSON_ENCODE_ANY)) ||
	    !(k->pretok = json_dumps(p ? p : json_null(), JSON_COMPACT | JSON_ENCODE_ANY)))
		goto done;
	if ((st = tfm_ugm_parse_normalizer(&u, k->norm, strlen(k->norm))) ||
	    (st = tfm_ugm_parse_pre_tokenizer(&u, k->pretok, strlen(k->pretok))))
		goto done;
	/* llama.cpp's flags, for llama.cpp (tfm runs the steps themselves);
	 * a WhitespaceSplit pre-tokenizer (T5's) drops runs of whitespace as
	 * SentencePiece's remove_extra_whitespaces does, and llama.cpp's
	 * converter reads that flag true from T5's spiece.model */
	k->add_prefix = u.prepend != 0;
	k->remove_ws = u.ws_split != 0;
	for (int i = 0; i < u.n_step; i++) {
		if (u.step[i].op == TFM_NORM_REPEAT && u.step[i].patn == 1 && u.step[i].pat[0] == ' ')
			k->remove_ws = 1;
		if (u.step[i].op == TFM_NORM_PRECOMPILED && !k->cmap) {
			st = tfm_seterr(TFM_E_FORMAT, "tokenizer.json: Precompiled without a charsmap");
			goto done;
		}
	}
	st = TFM_OK;
done:
	json_decref(n);
	tfm_ugm_free(&u);
	return st;
}

static int write_extra(struct tfm_gguf *g, const struct tfm_ugm_extra *x, const char *pieces,
		       const char *scores)
{
	int st;
	if (!x->n)
		return TFM_OK;
	if ((st = tfm_gguf_set_arr_str(g, pieces, (const char *const *)x->piece, x->len, x->n)))
		return st;
	return tfm_gguf_set_arr(g, scores, TFM_GGUF_FLOAT32, x->score, x->n);
}

/* Marian's target model: its scores over the whole vocabulary (-inf past
 * the ids vocab.json gave it), its extra pieces, and what of its
 * normalizer differs from the source model's. */
static int write_target(const struct tfm_ugm_keys *k, int64_t n_vocab, struct tfm_gguf *g)
{
	int st;
	if (k->target_tok) { /* separate vocabularies: scores by target id */
		n_vocab = k->n_target;
		if ((st = tfm_gguf_set_arr_str(g, "tfm.tok.target_tokens",
					       (const char *const *)k->target_tok, k->target_len,
					       k->n_target)) ||
		    (st = tfm_gguf_set_arr(g, "tfm.tok.target_token_type", TFM_GGUF_INT32,
					   k->target_type, k->n_target)) ||
		    (st = tfm_gguf_set_u32(g, "tfm.tok.target_unknown_token_id",
					   (uint32_t)k->target_unk)) ||
		    (k->target_pad >= 0 &&
		     (st = tfm_gguf_set_u32(g, "tfm.tok.target_padding_token_id",
					    (uint32_t)k->target_pad))))
			return st;
	}
	float *sc = tfm_malloc((size_t)(n_vocab + 1) * sizeof *sc);
	if (!sc)
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < n_vocab; i++)
		sc[i] = i < k->n_target ? k->target_score[i] : -INFINITY;
	st = tfm_gguf_set_arr(g, "tfm.tok.target_scores", TFM_GGUF_FLOAT32, sc, n_vocab);
	free(sc);
	if (st || (st = write_extra(g, &k->target_extra, "tfm.tok.target_extra_pieces",
				    "tfm.tok.target_extra_scores")))
		return st;
	if (k->target_own_cmap && (st = tfm_gguf_set_arr(g, "tfm.tok.target_charsmap",
							 TFM_GGUF_UINT8, k->target_cmap,
							 (int64_t)k->target_cmap_n)))
		return st;
	if (k->target_add_prefix >= 0 &&
	    (st = tfm_gguf_set_bool(g, "tfm.tok.target_add_space_prefix", k->target_add_prefix)))
		return st;
	if (k->target_remove_ws >= 0 &&
	    (st = tfm_gguf_set_bool(g, "tfm.tok.target_remove_extra_whitespaces",
				    k->target_remove_ws)))
		return st;
	return TFM_OK;
}

int tfm_ugm_keys_write(const struct tfm_ugm_keys *k, int64_t n_vocab, struct tfm_gguf *g)
{
	int st;
	if (k->cmap && (st = tfm_gguf_set_arr(g, "tokenizer.ggml.precompiled_charsmap",
					      TFM_GGUF_UINT8, k->cmap, (int64_t)k->cmap_n)))
		return st;
	if (k->byte_fallback && (st = tfm_gguf_set_bool(g, "tfm.tok.byte_fallback", 1)))
		return st;
	if ((st = tfm_gguf_set_bool(g, "tokenizer.ggml.remove_extra_whitespaces", k->remove_ws)))
		return st;
	if (k->pair && (st = tfm_gguf_set_str(g, "tfm.tok.pair", k->pair)))
		return st;
	if ((k->n_unmatched && (st = tfm_gguf_set_arr(g, "tfm.tok.unmatched", TFM_GGUF_INT32,
						       k->unmatched, k->n_unmatched))) ||
	    (st = write_extra(g, &k->extra, "tfm.tok.extra_pieces", "tfm.tok.extra_scores")) ||
	    (k->target_score && (st = write_target(k, n_vocab, g))))
		return st;
	static const char *const flags[] = { "tfm.tok.unk_lookup", "tfm.tok.lang_code",
					     "tfm.tok.decode_strip", "tfm.tok.clean_up_spaces" };
	const int fv[] = { k->unk_lookup, k->lang_code, k->decode_strip, k->clean_up };
	for (int i = 0; i < 4; i++)
		if (fv[i] && (st = tfm_gguf_set_bool(g, flags[i], 1)))
			return st;
	if (k->spm)
		return TFM_OK;
	if ((st = tfm_gguf_set_bool(g, "tokenizer.ggml.add_space_prefix", k->add_prefix)) ||
	    (st = tfm_gguf_set_str(g, "tfm.tok.normalizer", k->norm)) ||
	    (st = tfm_gguf_set_str(g, "tfm.tok.pre_tokenizer", k->pretok)))
		return st;
	return TFM_OK;
}

void tfm_ugm_keys_free(struct tfm_ugm_keys *k)
{
	free(k->cmap);
	free(k->norm);
	free(k->pretok);
	free(k->unmatched);
	tfm_ugm_extra_free(&k->extra);
	tfm_ugm_extra_free(&k->target_extra);
	free(k->target_score);
	free(k->target_cmap);
	for (int64_t i = 0; k->target_tok && i < k->n_target; i++)
		free(k->target_tok[i]);
	free(k->target_tok);
	free(k->target_len);
	free(k->target_type);
	memset(k, 0, sizeof *k); /* pair is a static string */
}

void tfm_ugm_extra_free(struct tfm_ugm_extra *x)
{
	for (int64_t i = 0; i < x->n; i++)
		free(x->piece[i]);
	free(x->piece);
	free(x->len);
	free(x->score);
	memset(x, 0, sizeof *x);
}
