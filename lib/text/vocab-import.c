/* vocab-import.c: tfm_tokenizer_to_gguf: the tokenizer.ggml.* keys, as
 * llama.cpp's converters write them, from a checkpoint's tokenizer files:
 * a llama2.c tokenizer.bin, a SentencePiece tokenizer.model (a small
 * protobuf reader; BPE or unigram), a Hugging Face tokenizer.json
 * (byte-level BPE, SentencePiece-style BPE with byte fallback, WordPiece,
 * or Unigram: its normalizer and pre-tokenizer through ugm-import.c),
 * vocab.json + merges.txt, a BERT vocab.txt, an RWKV world
 * rwkv_vocab_v20230424.txt (rwkv-import.c), or Marian's source.spm,
 * target.spm and vocab.json (marian-import.c), or without a tokenizer.json
 * what transformers converts a slow tokenizer to (DeBERTa's spm.model;
 * slow-import.c).  Special token ids and
 * add_bos/add_eos come from tokenizer_config.json when present. */
#include "slow-import.h"
#include "vocab-impl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tfm_vb_init(struct tfm_vb *v)
{
	memset(v, 0, sizeof *v);
	v->bos = v->eos = v->unk = v->sep = v->pad = v->cls = v->mask = -1;
	v->add_bos = v->add_eos = v->add_space_prefix = -1;
	v->src_lang = v->tgt_lang = -1;
}

void tfm_vb_free(struct tfm_vb *v)
{
	for (int64_t i = 0; i < v->n; i++)
		free(v->tok[i]);
	for (int64_t i = 0; i < v->n_merges; i++)
		free(v->merges[i]);
	free(v->tok);
	free(v->len);
	free(v->score);
	free(v->type);
	free(v->merges);
	free(v->strip[0]);
	free(v->strip[1]);
	tfm_ugm_keys_free(&v->ugm);
}

/* Set token id to s (growing the vocabulary; gaps are filled later). */
int tfm_vb_set(struct tfm_vb *v, int64_t id, const char *s, size_t n, float score, int type)
{
	if (id < 0 || id > (1 << 26))
		return tfm_seterr(TFM_E_FORMAT, "token id %lld out of range", (long long)id);
	/* Ids past the model's embedding cannot be embedded (llama.cpp's
	 * converter asserts the same); without a model they must be about
	 * dense: a few bytes of JSON naming id 2^26 must not become a
	 * vocabulary of 2^26 "[PAD]" entries and a GGUF of gigabytes. */
	if (v->id_limit > 0 && id >= v->id_limit)
		return v->limit_is_model
			? tfm_seterr(TFM_E_FORMAT, "token id %lld ('%.*s') is past the model's "
				     "vocabulary of %lld", (long long)id, (int)(n < 64 ? n : 64), s,
				     (long long)v->id_limit)
			: tfm_seterr(TFM_E_FORMAT, "token id %lld ('%.*s') is far past the %lld "
				     "entries the tokenizer defines", (long long)id,
				     (int)(n < 64 ? n : 64), s, (long long)(v->id_limit - 1024) / 2);
	if (id >= v->cap) {
		int64_t cap = v->cap ? v->cap : 256;
		while (cap <= id)
			cap *= 2;
		char **t = tfm_realloc(v->tok, (size_t)cap * sizeof *t);
		if (t)
			v->tok = t;
		size_t *l = tfm_realloc(v->len, (size_t)cap * sizeof *l);
		if (l)
			v->len = l;
		float *sc = tfm_realloc(v->score, (size_t)cap * sizeof *sc);
		if (sc)
			v->score = sc;
		int32_t *ty = tfm_realloc(v->type, (size_t)cap * sizeof *ty);
		if (ty)
			v->type = ty;
		if (!t || !l || !sc || !ty)
			return TFM_E_NOMEM;
		for (int64_t i = v->cap; i < cap; i++) {
			v->tok[i] = NULL;
			v->len[i] = 0;
			v->score[i] = 0;
			v->type[i] = 0;
		}
		v->cap = cap;
	}
	char *c = tfm_malloc(n + 1);
	if (!c)
		return TFM_E_NOMEM;
	memcpy(c, s, n);
	c[n] = 0;
	free(v->tok[id]);
	v->tok[id] = c;
	v->len[id] = n;
	v->score[id] = score;
	v->type[id] = type;
	if (id >= v->n)
		v->n = id + 1;
	return TFM_OK;
}

/* Pad with "[PAD<i>]" (UNUSED) up to n and fill gaps, as llama.cpp does. */
static int vb_fill(struct tfm_vb *v, int64_t n)
{
	char buf[32];
	int st;
	for (int64_t i = 0; i < (n > v->n ? n : v->n); i++) {
		if (i < v->n && v->tok[i])
			continue;
		snprintf(buf, sizeof buf, "[PAD%lld]", (long long)i);
		if ((st = tfm_vb_set(v, i, buf, strlen(buf), -1000.0f, TFM_TOKT_UNUSED)))
			return st;
	}
	return TFM_OK;
}

static int vb_merge(struct tfm_vb *v, const char *a, size_t an, const char *b, size_t bn)
{
	/* kept as "a b" C strings: a NUL inside would cut the merge */
	if (memchr(a, 0, an) || memchr(b, 0, bn))
		return tfm_seterr(TFM_E_FORMAT, "BPE merge %lld has a NUL byte", (long long)v->n_merges);
	if (v->n_merges == v->merges_cap) {
		int64_t cap = v->merges_cap ? v->merges_cap * 2 : 1024;
		char **m = tfm_realloc(v->merges, (size_t)cap * sizeof *m);
		if (!m)
			return TFM_E_NOMEM;
		v->merges = m;
		v->merges_cap = cap;
	}
	char *s = tfm_malloc(an + bn + 2);
	if (!s)
		return TFM_E_NOMEM;
	memcpy(s, a, an);
	s[an] = ' ';
	memcpy(s + an + 1, b, bn);
	s[an + bn + 1] = 0;
	v->merges[v->n_merges++] = s;
	return TFM_OK;
}

int64_t tfm_vb_find(const struct tfm_vb *v, const char *s)
{
	for (int64_t i = 0; i < v->n; i++)
		if (v->tok[i] && !strcmp(v->tok[i], s))
			return i;
	return -1;
}

/* ---- llama2.c tokenizer.bin (as llama.cpp's convert-llama2c-to-ggml) ---- */

static int from_llama2c(struct tfm_vb *v, const struct tfm_ckpt_file *f)
{
	size_t off = 4;
	int64_t i;
	int st;
	for (i = 0; off < f->size; i++) {
		float score;
		int32_t len;
		if (f->size - off < 8)
			return tfm_seterr(TFM_E_FORMAT, "tokenizer.bin: truncated at token %lld", (long long)i);
		memcpy(&score, f->data + off, 4);
		memcpy(&len, f->data + off + 4, 4);
		if (len < 0 || (size_t)len > f->size - off - 8)
			return tfm_seterr(TFM_E_FORMAT, "tokenizer.bin: bad length at token %lld", (long long)i);
		const char *s = (const char *)f->data + off + 8;
		off += 8 + (size_t)len;
		unsigned x;
		char close;
		int type = (len == 6 && sscanf(s, "<0x%2X%c", &x, &close) == 2 && close == '>')
			   ? TFM_TOKT_BYTE : TFM_TOKT_NORMAL;
		if (i == 0)
			type = TFM_TOKT_UNKNOWN;
		else if (i == 1 || i == 2)
			type = TFM_TOKT_CONTROL;
		/* spaces are U+2581 in GGUF SentencePiece vocabularies */
		char *e = tfm_malloc((size_t)len * 3 + 1);
		size_t k = 0;
		if (!e)
			return TFM_E_NOMEM;
		for (int32_t j = 0; j < len; j++) {
			if (s[j] == ' ') {
				memcpy(e + k, "\xe2\x96\x81", 3);
				k += 3;
			} else {
				e[k++] = s[j];
			}
		}
		st = tfm_vb_set(v, i, e, k, score, type);
		free(e);
		if (st)
			return st;
	}
	if (i < 3) /* ids 1 and 2 are BOS and EOS, as tfm_tokenizer_from_llama2c requires */
		return tfm_seterr(TFM_E_FORMAT, "tokenizer.bin: only %lld tokens", (long long)i);
	v->model = "llama";
	v->pre = "default";
	v->has_scores = 1;
	v->unk = 0;
	v->bos = 1;
	v->eos = 2;
	v->add_bos = 1;
	v->add_eos = 0;
	v->add_space_prefix = 1;
	return TFM_OK;
}

/* ---- SentencePiece tokenizer.model (protobuf ModelProto) ---- */

static int pb_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64; s += 7) {
		if (*i >= n)
			return -1;
		uint8_t b = p[(*i)++];
		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* Next field of a message: number, wire type, and for wire type 2 the
 * bytes, for 0/1/5 the value.  Returns 1 on a field, 0 at the end, -1 on
 * bad data. */
static int pb_next(const uint8_t *p, size_t n, size_t *i, int *field, int *wt,
		   uint64_t *val, const uint8_t **sub, size_t *subn)
{
	uint64_t key;
	if (*i >= n)
		return 0;
	if (pb_varint(p, n, i, &key))
		return -1;
	*field = (int)(key >> 3);
	*wt = (int)(key & 7);
	switch (*wt) {
	case 0:
		return pb_varint(p, n, i, val) ? -1 : 1;
	case 1:
		if (n - *i < 8)
			return -1;
		memcpy(val, p + *i, 8);
		*i += 8;
		return 1;
	case 5: {
		uint32_t u;
		if (n - *i < 4)
			return -1;
		memcpy(&u, p + *i, 4);
		*val = u;
		*i += 4;
		return 1;
	}
	case 2: {
		uint64_t len;
		if (pb_varint(p, n, i, &len) || len > n - *i)
			return -1;
		*sub = p + *i;
		*subn = (size_t)len;
		*i += (size_t)len;
		return 1;
	}
	}
	return -1;
}

int tfm_vb_from_spm(struct tfm_vb *v, const struct tfm_ckpt_file *f)
{
	size_t i = 0;
	int field, wt, r, st;
	uint64_t val;
	const uint8_t *sub;
	size_t subn;
	int64_t id = 0, model_type = 1;
	int ws_suffix = 0, escape_ws = 1;
	v->ugm.remove_ws = 1;
	v->bos = 1;
	v->eos = 2;
	v->unk = 0;
	v->add_space_prefix = 1;
	while ((r = pb_next(f->data, f->size, &i, &field, &wt, &val, &sub, &subn)) == 1) {
		size_t j = 0;
		int fl, w2;
		uint64_t v2;
		const uint8_t *s2;
		size_t s2n;
		if (field == 1 && wt == 2) { /* SentencePiece */
			const uint8_t *piece = NULL;
			size_t pn = 0;
			float score = 0;
			int type = TFM_TOKT_NORMAL;
			while ((r = pb_next(sub, subn, &j, &fl, &w2, &v2, &s2, &s2n)) == 1) {
				if (fl == 1 && w2 == 2) {
					piece = s2;
					pn = s2n;
				} else if (fl == 2 && w2 == 5) {
					uint32_t u = (uint32_t)v2;
					memcpy(&score, &u, 4);
				} else if (fl == 3 && w2 == 0) {
					type = (int)v2;
				}
			}
			if (r < 0 || !piece)
				goto bad;
			if ((st = tfm_vb_set(v, id++, (const char *)piece, pn, score, type)))
				return st;
		} else if (field == 5 && wt == 2) { /* denormalizer spec: rules for decoding */
			while ((r = pb_next(sub, subn, &j, &fl, &w2, &v2, &s2, &s2n)) == 1)
				if (fl == 2 && w2 == 2 && s2n)
					v->denormalizer = 1;
			if (r < 0)
				goto bad;
		} else if ((field == 2 || field == 3) && wt == 2) { /* trainer / normalizer spec */
			while ((r = pb_next(sub, subn, &j, &fl, &w2, &v2, &s2, &s2n)) == 1) {
				if (field == 3 && fl == 2 && w2 == 2) { /* precompiled_charsmap */
					free(v->ugm.cmap);
					v->ugm.cmap = NULL;
					v->ugm.cmap_n = s2n;
					if (s2n && !(v->ugm.cmap = tfm_malloc(s2n)))
						return TFM_E_NOMEM;
					if (s2n)
						memcpy(v->ugm.cmap, s2, s2n);
				}
				if (w2 != 0)
					continue;
				int64_t x = (int64_t)(int32_t)v2;
				if (field == 2 && fl == 3)
					model_type = x;
				else if (field == 2 && fl == 40)
					v->unk = x;
				else if (field == 2 && fl == 41)
					v->bos = x;
				else if (field == 2 && fl == 42)
					v->eos = x;
				else if (field == 2 && fl == 43)
					v->pad = x;
				else if (field == 2 && fl == 35)
					v->ugm.byte_fallback = v2 != 0;
				else if (field == 2 && fl == 24)
					ws_suffix = v2 != 0;
				else if (field == 3 && fl == 3)
					v->add_space_prefix = v2 != 0;
				else if (field == 3 && fl == 4)
					v->ugm.remove_ws = v2 != 0;
				else if (field == 3 && fl == 5)
					escape_ws = v2 != 0;
			}
			if (r < 0)
				goto bad;
		}
	}
	if (r < 0 || v->n == 0)
		goto bad;
	if (model_type == 1) {
		/* unigram: llama.cpp's UGM, with SentencePiece's normalizer */
		if (!escape_ws || ws_suffix)
			return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.model: unigram with %s is not "
					  "supported", ws_suffix ? "treat_whitespace_as_suffix" :
					  "escape_whitespaces false");
		if (v->ugm.cmap) {
			struct tfm_charsmap m;
			if ((st = tfm_charsmap_init(&m, v->ugm.cmap, v->ugm.cmap_n)))
				return tfm_adderr(st, "tokenizer.model");
			tfm_charsmap_free(&m);
		}
		v->model = "t5";
		v->is_ugm = 1;
		v->ugm.spm = 1;
		v->pre = "default";
		v->has_scores = 1;
		v->add_bos = 0; /* SentencePiece adds nothing; T5 closes with </s> */
		v->add_eos = 0;
		return TFM_OK;
	} else if (model_type == 2) {
		v->model = "llama";
	} else {
		return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.model: SentencePiece model type %lld "
				  "is not supported (BPE and unigram are)", (long long)model_type);
	}
	v->pre = "default";
	v->has_scores = 1;
	v->add_bos = 1;
	v->add_eos = 0;
	return TFM_OK;
bad:
	return tfm_seterr(TFM_E_FORMAT, "tokenizer.model: not a SentencePiece model");
}

/* ---- Hugging Face tokenizer.json / vocab.json / vocab.txt ---- */

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *load_json_flags(const struct tfm_ckpt_file *f, size_t flags)
{
	json_error_t e;
	json_t *j = json_loadb((const char *)f->data, f->size, flags, &e);
	if (!j)
		tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", f->name, e.line, e.text);
	return j;
}

static json_t *load_json(const struct tfm_ckpt_file *f)
{
	return load_json_flags(f, 0);
}

/* The id of a TemplateProcessing special token: its one id in
 * special_tokens, else the vocabulary's token of that name; -1 none. */
static int64_t template_id(const struct tfm_vb *v, json_t *sp, const char *name)
{
	json_t *ids = json_object_get(json_object_get(sp, name ? name : ""), "ids");
	if (json_array_size(ids) == 1 && json_is_integer(json_array_get(ids, 0)))
		return json_integer_value(json_array_get(ids, 0));
	return name ? tfm_vb_find(v, name) : -1;
}

/* The whole "single" template as a frame: the special tokens before the
 * one sequence $A and those after it (v->frame).  Anything else (no $A,
 * two sequences, an unknown token, more than TFM_TOK_FRAME_MAX on a side)
 * leaves has_frame 0. */
static void template_frame(struct tfm_vb *v, json_t *single, json_t *sp)
{
	size_t i;
	json_t *e;
	int side = 0;
	v->has_frame = 0;
	v->n_frame[0] = v->n_frame[1] = 0;
	json_array_foreach(single, i, e) {
		json_t *st = json_object_get(e, "SpecialToken");
		if (json_object_get(e, "Sequence")) {
			if (side++)
				return;
			continue;
		}
		int64_t id = st ? template_id(v, sp, jstr(st, "id")) : -1;
		if (id < 0 || v->n_frame[side] == TFM_TOK_FRAME_MAX)
			return;
		v->frame[side][v->n_frame[side]++] = id;
	}
	v->has_frame = side == 1;
}

/* tokenizer.json's post_processor: a TemplateProcessing (alone or in a
 * Sequence, as Llama 3 ships it) adds the special tokens its "single"
 * template puts first and last; RobertaProcessing and BertProcessing name
 * their cls and sep tokens.  That is what the tokenizers library adds,
 * so it decides add_bos/add_eos and which ids they are. */
static void post_processor(struct tfm_vb *v, json_t *pp)
{
	const char *type = jstr(pp, "type");
	if (!type)
		return;
	if (!strcmp(type, "Sequence")) {
		size_t i;
		json_t *e;
		json_array_foreach(json_object_get(pp, "processors"), i, e)
			post_processor(v, e);
		return;
	}
	if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
		/* "cls": [piece, id], "sep": [piece, id]: cls A sep; pairs
		 * cls A sep sep B sep (RoBERTa) or cls A sep B sep (BERT) */
		json_t *c = json_object_get(pp, "cls"), *s = json_object_get(pp, "sep");
		json_t *ci = json_array_get(c, 1), *si = json_array_get(s, 1);
		if (json_is_integer(ci) && json_is_integer(si)) {
			v->cls = v->bos = json_integer_value(ci);
			v->sep = v->eos = json_integer_value(si);
			v->add_bos = v->add_eos = 1;
		}
		return;
	}
	if (strcmp(type, "TemplateProcessing"))
		return;
	json_t *single = json_object_get(pp, "single");
	size_t n = json_array_size(single);
	if (!n)
		return;
	json_t *sp = json_object_get(pp, "special_tokens");
	template_frame(v, single, sp);
	for (int end = 0; end < 2; end++) {
		json_t *piece = json_object_get(json_array_get(single, end ? n - 1 : 0), "SpecialToken");
		int64_t id = piece ? template_id(v, sp, jstr(piece, "id")) : -1;
		if (end) {
			v->add_eos = id >= 0;
			if (id >= 0)
				v->eos = id;
		} else {
			v->add_bos = id >= 0;
			if (id >= 0)
				v->bos = id;
		}
	}
}

/* eos_token_id of config.json and generation_config.json (an int or a
 * list): every id that ends generation in transformers. */
static void eos_id_add(json_t *x, int64_t *ids, int *n)
{
	/* ids may come as reals (JSON_DECODE_INT_AS_REAL); one out of range
	 * (2.9e71 from a long digit string) is no id, and casting it is UB */
	double v = json_is_number(x) ? json_number_value(x) : -1;
	if (!(v >= 0 && v < 2147483648.0) || *n >= 5)
		return;
	int64_t id = (int64_t)v;
	for (int k = 0; k < *n; k++)
		if (ids[k] == id)
			return;
	if (id >= 0)
		ids[(*n)++] = id;
}

static void eos_ids_from(json_t *j, int64_t *ids, int *n)
{
	json_t *e = json_object_get(j, "eos_token_id"), *x;
	size_t i;
	if (json_is_number(e))
		eos_id_add(e, ids, n);
	json_array_foreach(e, i, x)
		eos_id_add(x, ids, n);
}

#define LLAMA3_HF "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_HF "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define GPT2_HF "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"


/* Map a tokenizer.json pre_tokenizer to a llama.cpp pre-tokenizer name by
 * its structure and regex; NULL when not recognised. */
static const char *pre_name(json_t *pt)
{
	const char *type = jstr(pt, "type");
	if (!type)
		return NULL;
	if (!strcmp(type, "ByteLevel")) {
		json_t *ur = json_object_get(pt, "use_regex");
		return (!ur || json_is_true(ur)) ? "gpt-2" : NULL;
	}
	if (strcmp(type, "Sequence"))
		return NULL;
	json_t *seq = json_object_get(pt, "pretokenizers");
	size_t n = json_array_size(seq);
	if (n == 2) {
		json_t *a = json_array_get(seq, 0), *b = json_array_get(seq, 1);
		const char *ta = jstr(a, "type"), *tb = jstr(b, "type");
		if (ta && tb && !strcmp(ta, "Split") && !strcmp(tb, "ByteLevel")) {
			const char *re = jstr(json_object_get(a, "pattern"), "Regex");
			if (!re)
				return NULL;
			if (!strcmp(re, LLAMA3_HF))
				return "llama-bpe";
			if (!strcmp(re, QWEN2_HF))
				return "qwen2";
			if (!strcmp(re, GPT2_HF))
				return "gpt-2";
			return NULL;
		}
		if (ta && tb && !strcmp(ta, "Digits") && !strcmp(tb, "ByteLevel") &&
		    json_is_true(json_object_get(a, "individual_digits")))
			return "smollm"; /* same splitting as starcoder and refact */
	}
	return NULL;
}

/* Added tokens: special ones are CONTROL, others USER_DEFINED. */
static int added_tokens(struct tfm_vb *v, json_t *root)
{
	json_t *at = json_object_get(root, "added_tokens"), *e;
	size_t i;
	int st;
	json_array_foreach(at, i, e) {
		const char *s = jstr(e, "content");
		json_int_t id = json_integer_value(json_object_get(e, "id"));
		if (!s)
			continue;
		int type = json_is_true(json_object_get(e, "special")) ? TFM_TOKT_CONTROL
								       : TFM_TOKT_USER_DEFINED;
		if ((st = tfm_vb_set(v, id, s, strlen(s), 0, type)))
			return st;
		/* lstrip / rstrip: the whitespace beside the token in the text is
		 * part of its match (RoBERTa's, XLM-R's <mask>, ALBERT's [MASK]) */
		for (int k = 0; k < 2; k++) {
			if (!json_is_true(json_object_get(e, k ? "rstrip" : "lstrip")))
				continue;
			int32_t *x = tfm_realloc(v->strip[k], (size_t)(v->n_strip[k] + 1) * sizeof *x);
			if (!x)
				return TFM_E_NOMEM;
			v->strip[k] = x;
			x[v->n_strip[k]++] = (int32_t)id;
		}
	}
	return TFM_OK;
}

static int bpe_vocab(struct tfm_vb *v, json_t *vocab)
{
	const char *k;
	json_t *x;
	int st;
	json_object_foreach(vocab, k, x) {
		if (!json_is_integer(x))
			return tfm_seterr(TFM_E_FORMAT, "BPE vocab: '%s' has no integer id", k);
		if ((st = tfm_vb_set(v, json_integer_value(x), k, strlen(k), 0, TFM_TOKT_NORMAL)))
			return st;
	}
	return TFM_OK;
}

static int bpe_merges(struct tfm_vb *v, json_t *merges)
{
	size_t i;
	json_t *m;
	int st;
	json_array_foreach(merges, i, m) {
		if (json_is_string(m)) {
			const char *s = json_string_value(m), *sp = strchr(s, ' ');
			if (!sp)
				return tfm_seterr(TFM_E_FORMAT, "BPE merge %zu has no space", i);
			st = vb_merge(v, s, (size_t)(sp - s), sp + 1, strlen(sp + 1));
		} else if (json_array_size(m) == 2) {
			const char *a = json_string_value(json_array_get(m, 0));
			const char *b = json_string_value(json_array_get(m, 1));
			if (!a || !b)
				return tfm_seterr(TFM_E_FORMAT, "BPE merge %zu is not two strings", i);
			st = vb_merge(v, a, strlen(a), b, strlen(b));
		} else {
			return tfm_seterr(TFM_E_FORMAT, "BPE merge %zu is malformed", i);
		}
		if (st)
			return st;
	}
	return TFM_OK;
}

/* BERT vocabularies as llama.cpp stores them: "##x" -> "x", "[X]" kept,
 * others "\u2581" + word. */
static int wpm_token(struct tfm_vb *v, int64_t id, const char *s, size_t n, int type)
{
	char *buf = tfm_malloc(n + 4);
	int st;
	if (!buf)
		return TFM_E_NOMEM;
	size_t k = 0;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		memcpy(buf, s, n);
		k = n;
		if (type == TFM_TOKT_NORMAL)
			type = TFM_TOKT_CONTROL;
	} else if (n >= 2 && s[0] == '#' && s[1] == '#') {
		memcpy(buf, s + 2, n - 2);
		k = n - 2;
	} else {
		memcpy(buf, "\xe2\x96\x81", 3);
		memcpy(buf + 3, s, n);
		k = n + 3;
	}
	st = tfm_vb_set(v, id, buf, k, 0, type);
	free(buf);
	return st;
}

static void wpm_specials(struct tfm_vb *v)
{
	v->model = "bert";
	v->pre = "default";
	v->unk = tfm_vb_find(v, "[UNK]");
	v->sep = tfm_vb_find(v, "[SEP]");
	v->pad = tfm_vb_find(v, "[PAD]");
	v->cls = tfm_vb_find(v, "[CLS]");
	v->mask = tfm_vb_find(v, "[MASK]");
	v->bos = v->cls;
	v->eos = v->sep;
	v->add_bos = 1;
	v->add_eos = 1;
}

/* ---- SentencePiece-style BPE in tokenizer.json (Llama 2, Mistral, Gemma
 * as transformers converts them, or as the tokenizers library trains them):
 * spaces are U+2581 in the vocabulary, no byte-level mapping, characters
 * without a token fall back to <0xNN> byte tokens. ---- */

#define SPM_SPACE "\xe2\x96\x81"

/* o's string k is s (false when absent) */
static int jeq(json_t *o, const char *k, const char *s)
{
	const char *x = jstr(o, k);
	return x && !strcmp(x, s);
}

/* A BPE tokenizer.json is SentencePiece-style when it falls back to bytes
 * or writes spaces as U+2581 (a Replace normalizer or a Metaspace
 * pre-tokenizer). */
static int replaces_space(json_t *n)
{
	const char *type = jstr(n, "type");
	size_t i;
	json_t *e;
	if (type && !strcmp(type, "Sequence")) {
		json_array_foreach(json_object_get(n, "normalizers"), i, e)
			if (replaces_space(e))
				return 1;
		return 0;
	}
	return type && !strcmp(type, "Replace") && jeq(json_object_get(n, "pattern"), "String", " ") &&
	       jeq(n, "content", SPM_SPACE);
}

static int is_spm_bpe(json_t *root, json_t *model)
{
	return json_is_true(json_object_get(model, "byte_fallback")) ||
	       replaces_space(json_object_get(root, "normalizer")) ||
	       jeq(json_object_get(root, "pre_tokenizer"), "type", "Metaspace");
}

/* The normalizers tfm's SentencePiece encoder does: Prepend("\u2581")
 * (the space prefix) and Replace(" ", "\u2581"); anything else (NFKC, a
 * Strip, ...) would change the text and is refused. */
static int spm_normalizer(struct tfm_vb *v, json_t *n)
{
	const char *type = jstr(n, "type");
	size_t i;
	json_t *e;
	int st;
	if (!n || json_is_null(n))
		return TFM_OK;
	if (type && !strcmp(type, "Sequence")) {
		json_array_foreach(json_object_get(n, "normalizers"), i, e)
			if ((st = spm_normalizer(v, e)))
				return st;
		return TFM_OK;
	}
	if (type && !strcmp(type, "Prepend") && jeq(n, "prepend", SPM_SPACE)) {
		v->add_space_prefix = 1;
		return TFM_OK;
	}
	if (replaces_space(n))
		return TFM_OK;
	char *dump = json_dumps(n, JSON_COMPACT);
	st = tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: SentencePiece-style BPE normalizer not "
			"supported: %.300s", dump ? dump : "?");
	free(dump);
	return st;
}

/* No pre-tokenizer, or Metaspace ("\u2581" for spaces; prepend_scheme, or
 * add_prefix_space before tokenizers 0.14, gives the space prefix). */
static int spm_pre_tokenizer(struct tfm_vb *v, json_t *pt)
{
	const char *type = jstr(pt, "type");
	if (!pt || json_is_null(pt))
		return TFM_OK;
	if (type && !strcmp(type, "Metaspace") &&
	    (!json_object_get(pt, "replacement") || jeq(pt, "replacement", SPM_SPACE))) {
		const char *scheme = jstr(pt, "prepend_scheme");
		json_t *aps = json_object_get(pt, "add_prefix_space");
		v->add_space_prefix = scheme ? strcmp(scheme, "never") != 0 : !json_is_false(aps);
		return TFM_OK;
	}
	char *dump = json_dumps(pt, JSON_COMPACT);
	int st = tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: SentencePiece-style BPE "
			    "pre_tokenizer not supported: %.300s", dump ? dump : "?");
	free(dump);
	return st;
}

/* The vocabulary as llama.cpp's "llama" model: <0xNN> tokens are bytes,
 * the model's unk_token unknown.  llama.cpp merges the pair whose joined
 * token has the best score; tokenizers merges the listed pair of lowest
 * rank.  A token's score is minus the rank of the first merge that makes
 * it, so that llama.cpp merges in about the same order (tokens no merge
 * makes: 0); the merges are written too, and tfm merges by them, exactly
 * as tokenizers does (a pair whose joined string is a token but that no
 * merge lists stays apart). */
static int from_spm_bpe(struct tfm_vb *v, json_t *root, json_t *model)
{
	int st;
	v->add_space_prefix = 0;
	if ((st = spm_normalizer(v, json_object_get(root, "normalizer"))) ||
	    (st = spm_pre_tokenizer(v, json_object_get(root, "pre_tokenizer"))) ||
	    (st = bpe_vocab(v, json_object_get(model, "vocab"))) ||
	    (st = bpe_merges(v, json_object_get(model, "merges"))))
		return st;
	for (int64_t i = 0; i < v->n; i++) {
		unsigned x;
		char close;
		if (v->tok[i] && v->len[i] == 6 && sscanf(v->tok[i], "<0x%2X%c", &x, &close) == 2 &&
		    close == '>')
			v->type[i] = TFM_TOKT_BYTE;
	}
	struct tfm_strmap m;
	if (tfm_strmap_init(&m, (size_t)v->n))
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < v->n; i++)
		if (v->tok[i])
			tfm_strmap_put(&m, v->tok[i], v->len[i], (int32_t)i);
	char *made = tfm_calloc((size_t)v->n + 1, 1);
	if (!made) {
		tfm_strmap_free(&m);
		return TFM_E_NOMEM;
	}
	for (int64_t r = 0; r < v->n_merges; r++) {
		/* "a b" -> the token "ab" (the space is the separator vb_merge wrote) */
		const char *s = v->merges[r], *sp = strchr(s, ' ');
		size_t an = (size_t)(sp - s), bn = strlen(sp + 1);
		char *j = tfm_malloc(an + bn + 1);
		if (!j) {
			st = TFM_E_NOMEM;
			break;
		}
		memcpy(j, s, an);
		memcpy(j + an, sp + 1, bn + 1);
		int32_t id = tfm_strmap_get(&m, j, an + bn);
		free(j);
		if (id >= 0 && !made[id]) {
			made[id] = 1;
			v->score[id] = -(float)r;
		}
	}
	free(made);
	tfm_strmap_free(&m);
	if (st)
		return st;
	const char *unk = jstr(model, "unk_token");
	if (unk && (v->unk = tfm_vb_find(v, unk)) >= 0)
		v->type[v->unk] = TFM_TOKT_UNKNOWN;
	if ((st = added_tokens(v, root)))
		return st;
	v->model = "llama";
	v->pre = "default";
	v->has_scores = 1;
	/* tokenizers adds what the post_processor says, nothing by default */
	v->add_bos = v->add_eos = 0;
	return TFM_OK;
}

/* tokenizer.json's Unigram: "vocab" [[piece, score], ...] in id order,
 * unk_id, byte_fallback; the normalizer and pre-tokenizer go to
 * tfm.tok.* keys (ugm-import.c). */
static int from_unigram(struct tfm_vb *v, json_t *root, json_t *model)
{
	json_t *voc = json_object_get(model, "vocab"), *e;
	size_t i;
	int st;
	if (!json_is_array(voc) || !json_array_size(voc))
		return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: Unigram vocab is not a list");
	json_array_foreach(voc, i, e) {
		json_t *p = json_array_get(e, 0), *sc = json_array_get(e, 1);
		if (!json_is_string(p) || !json_is_number(sc))
			return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: Unigram vocab entry %zu is "
					  "not [piece, score]", i);
		const char *s = json_string_value(p);
		size_t n = json_string_length(p);
		unsigned x;
		char close;
		int type = n == 6 && sscanf(s, "<0x%2X%c", &x, &close) == 2 && close == '>'
			   ? TFM_TOKT_BYTE : TFM_TOKT_NORMAL;
		if (memchr(s, 0, n))
			return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: Unigram piece %zu has a NUL", i);
		if ((st = tfm_vb_set(v, (int64_t)i, s, n, (float)json_number_value(sc), type)))
			return st;
	}
	if ((st = tfm_ugm_keys_from_json(&v->ugm, root)) || (st = added_tokens(v, root)))
		return st;
	json_t *unk = json_object_get(model, "unk_id");
	if (json_is_integer(unk)) {
		if (json_integer_value(unk) < 0 || json_integer_value(unk) >= v->n)
			return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: unk_id %lld out of the "
					  "vocabulary", (long long)json_integer_value(unk));
		v->unk = json_integer_value(unk);
		v->type[v->unk] = TFM_TOKT_UNKNOWN;
	} else if (unk && !json_is_null(unk)) {
		return tfm_seterr(TFM_E_FORMAT, "tokenizer.json: unk_id is not an integer");
	}
	v->model = "t5";
	v->pre = "default";
	v->is_ugm = 1;
	v->has_scores = 1;
	v->add_bos = v->add_eos = 0; /* the post_processor says */
	return TFM_OK;
}

/* A post-processor's pair template as tfm.tok.pair names it: "roberta"
 * (bos A eos eos B eos, types 0: XLM-R; RobertaProcessing), "bert" (bos A
 * eos B eos, B and its eos type 1: DeBERTa-v3, ALBERT; BertProcessing),
 * "t5" (A eos B eos, types 0); NULL for any other. */
static const char *pair_style(const struct tfm_vb *v, json_t *pp)
{
	static const struct { const char *name, *items, *types; } styles[] = {
		{ "roberta", "bAeeBe", "000000" }, { "bert", "bAeBe", "00011" },
		{ "t5", "AeBe", "0000" } };
	const char *type = jstr(pp, "type");
	if (type && !strcmp(type, "RobertaProcessing"))
		return "roberta";
	if (type && !strcmp(type, "BertProcessing"))
		return "bert";
	if (!type || strcmp(type, "TemplateProcessing"))
		return NULL;
	json_t *pair = json_object_get(pp, "pair"), *sp = json_object_get(pp, "special_tokens");
	for (int k = 0; k < 3; k++) {
		const char *w = styles[k].items; /* b, e: the bos and eos ids; A, B: sequences */
		size_t n = strlen(w), i;
		if (json_array_size(pair) != n || (w[0] == 'b' && (!v->add_bos || v->bos < 0)) ||
		    !v->add_eos || v->eos < 0)
			continue;
		for (i = 0; i < n; i++) {
			json_t *it = json_array_get(pair, i), *st = json_object_get(it, "SpecialToken");
			json_t *sq = json_object_get(it, "Sequence"), *x = st ? st : sq;
			json_t *ty = json_object_get(x, "type_id");
			if (json_integer_value(ty) != styles[k].types[i] - '0')
				break;
			if (w[i] == 'A' || w[i] == 'B') {
				const char *id = jstr(sq, "id");
				if (!id || id[0] != w[i] || id[1])
					break;
				continue;
			}
			const char *name = jstr(st, "id");
			json_t *ids = json_object_get(json_object_get(sp, name ? name : ""), "ids");
			if (json_array_size(ids) != 1 || json_integer_value(json_array_get(ids, 0)) !=
			    (w[i] == 'b' ? v->bos : v->eos))
				break;
		}
		if (i == n)
			return styles[k].name;
	}
	return NULL;
}

static int from_tokenizer_json(struct tfm_vb *v, const struct tfm_ckpt_file *f)
{
	json_t *root = load_json(f);
	int st;
	if (!root)
		return TFM_E_FORMAT;
	json_t *model = json_object_get(root, "model");
	const char *type = jstr(model, "type");
	if (!v->id_limit)
		v->id_limit = 2 * (int64_t)(json_object_size(json_object_get(model, "vocab")) +
					    json_array_size(json_object_get(root, "added_tokens"))) + 1024;
	if (!type && json_object_get(model, "merges"))
		type = "BPE";
	if (type && !strcmp(type, "BPE") && is_spm_bpe(root, model)) {
		if ((st = from_spm_bpe(v, root, model)))
			goto done;
	} else if (type && !strcmp(type, "BPE")) {
		json_t *pt = json_object_get(root, "pre_tokenizer");
		const char *pre = pre_name(pt);
		if (!pre) {
			char *dump = json_dumps(pt, JSON_COMPACT);
			st = tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: BPE pre_tokenizer not "
					"recognised: %.300s", dump ? dump : "null");
			free(dump);
			goto done;
		}
		if ((st = bpe_vocab(v, json_object_get(model, "vocab"))) ||
		    (st = bpe_merges(v, json_object_get(model, "merges"))) ||
		    (st = added_tokens(v, root)))
			goto done;
		v->model = "gpt2";
		v->pre = pre;
	} else if (type && !strcmp(type, "WordPiece")) {
		const char *k;
		json_t *x;
		json_object_foreach(json_object_get(model, "vocab"), k, x)
			if ((st = wpm_token(v, json_integer_value(x), k, strlen(k), TFM_TOKT_NORMAL)))
				goto done;
		json_t *at = json_object_get(root, "added_tokens"), *e;
		size_t i;
		json_array_foreach(at, i, e) {
			json_int_t id = json_integer_value(json_object_get(e, "id"));
			if (json_is_true(json_object_get(e, "special")) && id >= 0 && id < v->n)
				v->type[id] = TFM_TOKT_CONTROL;
		}
		wpm_specials(v);
	} else if (type && !strcmp(type, "Unigram")) {
		if ((st = from_unigram(v, root, model)))
			goto done;
	} else {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: model type '%s' is not supported "
				"(BPE, WordPiece and Unigram are)", type ? type : "?");
		goto done;
	}
	post_processor(v, json_object_get(root, "post_processor"));
	const char *ps = pair_style(v, json_object_get(root, "post_processor"));
	if (v->is_ugm && (v->ugm.pair = ps) && strcmp(ps, "t5")) {
		v->cls = v->bos; /* what llama.cpp's encoders read */
		v->sep = v->eos;
	} else if (!v->is_ugm && !strcmp(v->model, "gpt2") && ps && strcmp(ps, "t5")) {
		/* a byte-level BPE encoder's frame: RoBERTa's, or BERT's
		 * [CLS] A [SEP] B [SEP] (ModernBERT's TemplateProcessing) */
		v->cls = v->bos;
		v->sep = v->eos;
		v->pair = ps;
	}
	st = TFM_OK;
done:
	json_decref(root);
	return st;
}

/* A tokenizer.json converted from spm.model and tokenizer_config.json
 * (slow-import.c), then read as one. */
static int from_slow(struct tfm_vb *v, const struct tfm_ckpt_file *sm,
		     const struct tfm_ckpt_file *cfg, const char *model_type)
{
	json_t *c = load_json_flags(cfg, JSON_DECODE_INT_AS_REAL);
	if (!c)
		return TFM_E_FORMAT;
	char *text = NULL;
	size_t n = 0;
	int st = tfm_slow_tokenizer_json(sm, c, model_type, &text, &n);
	json_decref(c);
	if (st)
		return st;
	struct tfm_ckpt_file f = { .name = "tokenizer.json (from spm.model)",
				   .data = (uint8_t *)text, .size = n };
	st = from_tokenizer_json(v, &f);
	free(text);
	return st;
}

static int from_vocab_merges(struct tfm_vb *v, const struct tfm_ckpt_file *fv,
			     const struct tfm_ckpt_file *fm)
{
	json_t *root = load_json(fv);
	int st;
	if (!root)
		return TFM_E_FORMAT;
	if (!v->id_limit)
		v->id_limit = 2 * (int64_t)json_object_size(root) + 1024;
	st = bpe_vocab(v, root);
	json_decref(root);
	if (st)
		return st;
	const char *p = (const char *)fm->data, *end = p + fm->size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (n && p[0] != '#') { /* "#version: 0.2" header */
			const char *sp = memchr(p, ' ', n);
			if (!sp)
				return tfm_seterr(TFM_E_FORMAT, "merges.txt: a line without a space");
			if ((st = vb_merge(v, p, (size_t)(sp - p), sp + 1, n - (size_t)(sp - p) - 1)))
				return st;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	v->model = "gpt2";
	v->pre = "gpt-2";
	return TFM_OK;
}

static int from_vocab_txt(struct tfm_vb *v, const struct tfm_ckpt_file *f)
{
	const char *p = (const char *)f->data, *end = p + f->size;
	int64_t id = 0;
	int st;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), full = n;
		if (n && p[n - 1] == '\r')
			n--;
		if (n || nl)
			if ((st = wpm_token(v, id++, p, n, TFM_TOKT_NORMAL)))
				return st;
		p += full + 1;
	}
	wpm_specials(v);
	return TFM_OK;
}

/* tokenizer_config.json: bos/eos by content, add_bos/add_eos. */
static int apply_config(struct tfm_vb *v, const struct tfm_ckpt_file *f)
{
	/* integers as reals: save_pretrained writes model_max_length
	 * 1000000000000000019884624838656 when unset, beyond int64; only
	 * strings and booleans are read here */
	json_t *root = load_json_flags(f, JSON_DECODE_INT_AS_REAL);
	if (!root)
		return TFM_E_FORMAT;
	static const char *const keys[] = { "bos_token", "eos_token", "unk_token", "pad_token" };
	int64_t *dst[] = { &v->bos, &v->eos, &v->unk, &v->pad };
	for (int k = 0; k < 4; k++) {
		json_t *x = json_object_get(root, keys[k]);
		const char *s = json_is_string(x) ? json_string_value(x) : jstr(x, "content");
		int64_t id = s ? tfm_vb_find(v, s) : -1;
		if (id >= 0)
			*dst[k] = id;
	}
	/* mBART's tokenizers: the languages the frame was saved with */
	json_t *sl = json_object_get(root, "src_lang"), *tl = json_object_get(root, "tgt_lang");
	v->src_lang = json_is_string(sl) ? tfm_vb_find(v, json_string_value(sl)) : -1;
	v->tgt_lang = json_is_string(tl) ? tfm_vb_find(v, json_string_value(tl)) : -1;
	json_t *ab = json_object_get(root, "add_bos_token"), *ae = json_object_get(root, "add_eos_token");
	if (json_is_boolean(ab))
		v->add_bos = json_is_true(ab);
	if (json_is_boolean(ae))
		v->add_eos = json_is_true(ae);
	json_decref(root);
	return TFM_OK;
}

/* tfm.tok.frame_prefix / _suffix: a frame bos and eos cannot say (more
 * than one token on a side), or one whose source language can change
 * (tfm.tok.src_lang_id, and tfm.tok.tgt_lang_id for targets). */
static int write_frame(const struct tfm_vb *v, struct tfm_gguf *g)
{
	int lang = 0, st;
	for (int side = 0; side < 2; side++)
		for (int i = 0; i < v->n_frame[side]; i++)
			lang |= v->src_lang >= 0 && v->frame[side][i] == v->src_lang;
	if (!v->has_frame || (v->n_frame[0] <= 1 && v->n_frame[1] <= 1 && !lang))
		return TFM_OK;
	int32_t ids[2][TFM_TOK_FRAME_MAX];
	for (int side = 0; side < 2; side++)
		for (int i = 0; i < v->n_frame[side]; i++)
			ids[side][i] = (int32_t)v->frame[side][i];
	if ((st = tfm_gguf_set_arr(g, "tfm.tok.frame_prefix", TFM_GGUF_INT32, ids[0],
				   v->n_frame[0])) ||
	    (st = tfm_gguf_set_arr(g, "tfm.tok.frame_suffix", TFM_GGUF_INT32, ids[1],
				   v->n_frame[1])) ||
	    (lang && (st = tfm_gguf_set_i32(g, "tfm.tok.src_lang_id", (int32_t)v->src_lang))) ||
	    (lang && v->tgt_lang >= 0 &&
	     (st = tfm_gguf_set_i32(g, "tfm.tok.tgt_lang_id", (int32_t)v->tgt_lang))))
		return st;
	return TFM_OK;
}

static int write_keys(const struct tfm_vb *v, struct tfm_gguf *g)
{
	int st;
	if ((st = tfm_gguf_set_str(g, "tokenizer.ggml.model", v->model)) ||
	    (v->pre && (st = tfm_gguf_set_str(g, "tokenizer.ggml.pre", v->pre))) ||
	    (st = tfm_gguf_set_arr_str(g, "tokenizer.ggml.tokens", (const char *const *)v->tok,
				       v->len, v->n)) ||
	    (v->has_scores && (st = tfm_gguf_set_arr(g, "tokenizer.ggml.scores", TFM_GGUF_FLOAT32,
						     v->score, v->n))) ||
	    (st = tfm_gguf_set_arr(g, "tokenizer.ggml.token_type", TFM_GGUF_INT32, v->type, v->n)) ||
	    /* BPE always has the key, even with no merges (llama.cpp requires it) */
	    ((v->n_merges || !strcmp(v->model, "gpt2")) &&
	     (st = tfm_gguf_set_arr_str(g, "tokenizer.ggml.merges",
					(const char *const *)v->merges, NULL, v->n_merges))))
		return st;
	static const char *const ids[] = {
		"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
		"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id",
		"tokenizer.ggml.padding_token_id", "tokenizer.ggml.cls_token_id",
		"tokenizer.ggml.mask_token_id" };
	const int64_t val[] = { v->bos, v->eos, v->unk, v->sep, v->pad, v->cls, v->mask };
	for (int k = 0; k < 7; k++)
		if (val[k] >= 0 && val[k] < v->n &&
		    (st = tfm_gguf_set_u32(g, ids[k], (uint32_t)val[k])))
			return st;
	if ((v->add_bos >= 0 && (st = tfm_gguf_set_bool(g, "tokenizer.ggml.add_bos_token", v->add_bos))) ||
	    (v->add_eos >= 0 && (st = tfm_gguf_set_bool(g, "tokenizer.ggml.add_eos_token", v->add_eos))) ||
	    (v->add_space_prefix >= 0 &&
	     (st = tfm_gguf_set_bool(g, "tokenizer.ggml.add_space_prefix", v->add_space_prefix))) ||
	    (v->is_ugm && (st = tfm_ugm_keys_write(&v->ugm, v->n, g))) ||
	    (v->pair && (st = tfm_gguf_set_str(g, "tfm.tok.pair", v->pair))) ||
	    (v->n_strip[0] && (st = tfm_gguf_set_arr(g, "tfm.tok.lstrip", TFM_GGUF_INT32,
						      v->strip[0], v->n_strip[0]))) ||
	    (v->n_strip[1] && (st = tfm_gguf_set_arr(g, "tfm.tok.rstrip", TFM_GGUF_INT32,
						      v->strip[1], v->n_strip[1]))) ||
	    (st = write_frame(v, g)))
		return st;
	return TFM_OK;
}

/* c->files by name (kept local so that lib/text does not need ckpt.c). */
static const struct tfm_ckpt_file *side_file(const struct tfm_ckpt *c, const char *name)
{
	for (int i = 0; i < c->n_files; i++)
		if (c->files[i].name && !strcmp(c->files[i].name, name))
			return &c->files[i];
	return NULL;
}

/* The chat template, as llama.cpp's converter carries it: chat_template.jinja
 * (transformers 4.43+ saves it there), else tokenizer_config.json's
 * "chat_template": a string, or a list of {name, template} whose "default"
 * becomes tokenizer.chat_template and the others
 * tokenizer.chat_template.<name>. */
static int chat_template(const struct tfm_ckpt *c, const struct tfm_ckpt_file *cfg,
			 struct tfm_gguf *g)
{
	const struct tfm_ckpt_file *jf = side_file(c, "chat_template.jinja");
	if (jf)
		return tfm_gguf_set_strn(g, "tokenizer.chat_template", (const char *)jf->data,
					 jf->size);
	if (!cfg)
		return TFM_OK;
	json_t *root = load_json_flags(cfg, JSON_DECODE_INT_AS_REAL);
	if (!root)
		return TFM_E_FORMAT;
	json_t *ct = json_object_get(root, "chat_template"), *e;
	int st = TFM_OK;
	size_t i;
	if (json_is_string(ct)) {
		st = tfm_gguf_set_strn(g, "tokenizer.chat_template", json_string_value(ct),
				       json_string_length(ct));
	} else if (json_is_array(ct)) {
		json_array_foreach(ct, i, e) {
			const char *name = json_string_value(json_object_get(e, "name"));
			json_t *t = json_object_get(e, "template");
			if (!name || !json_is_string(t)) {
				st = tfm_seterr(TFM_E_FORMAT, "tokenizer_config.json: chat_template %zu "
						"has no name or template", i);
				break;
			}
			char key[160];
			if (!strcmp(name, "default"))
				snprintf(key, sizeof key, "tokenizer.chat_template");
			else
				snprintf(key, sizeof key, "tokenizer.chat_template.%.100s", name);
			if ((st = tfm_gguf_set_strn(g, key, json_string_value(t), json_string_length(t))))
				break;
		}
	} else if (ct && !json_is_null(ct)) {
		st = tfm_seterr(TFM_E_FORMAT, "tokenizer_config.json: chat_template is neither a "
				"string nor a list");
	}
	json_decref(root);
	return st;
}

int tfm_tokenizer_to_gguf(const struct tfm_ckpt *c, struct tfm_gguf *g)
{
	const struct tfm_ckpt_file *bin = side_file(c, "tokenizer.bin");
	const struct tfm_ckpt_file *spm = side_file(c, "tokenizer.model");
	const struct tfm_ckpt_file *tj = side_file(c, "tokenizer.json");
	const struct tfm_ckpt_file *vj = side_file(c, "vocab.json");
	const struct tfm_ckpt_file *mt = side_file(c, "merges.txt");
	const struct tfm_ckpt_file *vt = side_file(c, "vocab.txt");
	const struct tfm_ckpt_file *cfg = side_file(c, "tokenizer_config.json");
	const struct tfm_ckpt_file *marian = side_file(c, "source.spm");
	const struct tfm_ckpt_file *world = side_file(c, "rwkv_vocab_v20230424.txt");
	const struct tfm_ckpt_file *sm = side_file(c, "spm.model"); /* DeBERTa-v2 / v3 */
	struct tfm_vb v;
	int st;
	tfm_vb_init(&v);
	if (c->config && json_integer_value(json_object_get(c->config, "vocab_size")) > 0) {
		v.id_limit = json_integer_value(json_object_get(c->config, "vocab_size"));
		v.limit_is_model = 1;
	}
	if (bin)
		st = from_llama2c(&v, bin);
	else if (world)
		st = tfm_vb_from_rwkv_world(&v, world->data, world->size);
	else if (marian && vj) /* MarianTokenizer (no fast tokenizer exists) */
		st = tfm_vb_marian(&v, c);
	else if (spm)
		st = tfm_vb_from_spm(&v, spm);
	else if (tj)
		st = from_tokenizer_json(&v, tj);
	else if (sm && cfg) /* no tokenizer.json: converted as transformers converts */
		st = from_slow(&v, sm, cfg, json_string_value(json_object_get(c->config,
									       "model_type")));
	else if (vj && mt)
		st = from_vocab_merges(&v, vj, mt);
	else if (vt)
		st = from_vocab_txt(&v, vt);
	else
		return TFM_OK; /* no tokenizer files: nothing to write */
	if (st)
		goto done;
	if (!bin && cfg && (st = apply_config(&v, cfg)))
		goto done;
	/* the model's embedding may be larger than the tokenizer */
	int64_t nv = 0;
	if (c->config)
		nv = json_integer_value(json_object_get(c->config, "vocab_size"));
	if (v.n == 0) {
		st = tfm_seterr(TFM_E_FORMAT, "no tokens");
		goto done;
	}
	if (nv > 2 * v.n + 1024) { /* padded with [PAD] tokens, as for gaps */
		st = tfm_seterr(TFM_E_FORMAT, "config.json vocab_size %lld is far beyond the "
				"tokenizer's %lld tokens", (long long)nv, (long long)v.n);
		goto done;
	}
	if ((st = vb_fill(&v, nv)))
		goto done;
	if ((st = write_keys(&v, g)))
		goto done;
	/* llama.cpp's converter: "\n\n" ends a turn */
	if (world && v.n > 261 && (st = tfm_gguf_set_u32(g, "tokenizer.ggml.eot_token_id", 261)))
		goto done;
	/* every eos_token_id of config.json and generation_config.json */
	int64_t eos[5];
	int n_eos = 0;
	const struct tfm_ckpt_file *gc = side_file(c, "generation_config.json");
	if (c->config)
		eos_ids_from(c->config, eos, &n_eos);
	if (gc) {
		json_t *gj = load_json_flags(gc, JSON_DECODE_INT_AS_REAL);
		if (!gj) {
			st = TFM_E_FORMAT;
			goto done;
		}
		eos_ids_from(gj, eos, &n_eos);
		json_decref(gj);
	}
	if ((st = chat_template(c, cfg, g)))
		goto done;
	int k = 0;
	for (int i = 0; i < n_eos; i++)
		if (eos[i] < v.n)
			eos[k++] = eos[i];
	if (k > 1 || (k == 1 && eos[0] != v.eos))
		st = tfm_gguf_set_arr(g, "tfm.tok.eos_ids", TFM_GGUF_INT64, eos, k);
done:
	tfm_vb_free(&v);
	if (st)
		tfm_adderr(st, "%s: tokenizer", c->source ? c->source : "checkpoint");
	return st;
}
