/* marian-import.c: the tokenizer of Marian models (opus-mt-*) as
 * transformers' MarianTokenizer runs it: source.spm (SentencePiece unigram)
 * cuts the text, each piece becomes its vocab.json id (<unk> when absent),
 * and </s> closes it; decoding joins vocab.json's pieces (U+2581 a space)
 * and strips the ends.  The GGUF vocabulary is vocab.json's, scored from
 * source.spm; what source.spm lacks is never matched, what vocab.json lacks
 * is matched and becomes <unk> (tfm.tok.unmatched, extra_pieces).  A target
 * text (labels) is cut by target.spm instead, through the same vocab.json:
 * its scores by id, its extra pieces and what of its normalizer differs
 * (tfm.tok.target_*).  With separate_vocabs the target text goes through
 * target_vocab.json instead, which also decodes (tfm.tok.target_tokens).
 * A layout tfm would tokenize differently is refused by name. */
#include "vocab-impl.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct tfm_ckpt_file *file_of(const struct tfm_ckpt *c, const char *name)
{
	for (int i = 0; i < c->n_files; i++)
		if (c->files[i].name && !strcmp(c->files[i].name, name))
			return &c->files[i];
	return NULL;
}

/* A JSON file, its integers as reals (save_pretrained may write a
 * model_max_length beyond int64); NULL with the error set. */
static json_t *load(const struct tfm_ckpt_file *f, size_t flags)
{
	json_error_t e;
	json_t *j = json_loadb((const char *)f->data, f->size, flags, &e);
	if (!j)
		tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", f->name, e.line, e.text);
	else if (!json_is_object(j)) {
		json_decref(j);
		j = NULL;
		tfm_seterr(TFM_E_FORMAT, "%s: not a JSON object", f->name);
	}
	return j;
}

/* A special token as transformers saves it: "</s>" or {"content": "</s>"}. */
static const char *content(json_t *x)
{
	return json_is_string(x) ? json_string_value(x)
				 : json_string_value(json_object_get(x, "content"));
}

/* The special tokens MarianTokenizer skips when decoding (eos, unk, pad,
 * additional_special_tokens), special_tokens_map.json over
 * tokenizer_config.json over the defaults, as from_pretrained reads them. */
struct specials {
	const char *eos, *unk, *pad;
	json_t *more;       /* additional_special_tokens, borrowed */
};

static void specials_from(struct specials *s, json_t *j)
{
	const char *x;
	if ((x = content(json_object_get(j, "eos_token"))))
		s->eos = x;
	if ((x = content(json_object_get(j, "unk_token"))))
		s->unk = x;
	if ((x = content(json_object_get(j, "pad_token"))))
		s->pad = x;
	if (json_is_array(json_object_get(j, "additional_special_tokens")))
		s->more = json_object_get(j, "additional_special_tokens");
}

static int is_special(const struct specials *s, const char *p)
{
	size_t i;
	json_t *e;
	if (!strcmp(p, s->eos) || !strcmp(p, s->unk) || !strcmp(p, s->pad))
		return 1;
	json_array_foreach(s->more, i, e)
		if (content(e) && !strcmp(content(e), p))
			return 1;
	return 0;
}

/* tokenizer_config.json: what MarianTokenizer would do that tfm does not
 * is refused; clean_up_tokenization_spaces is kept. */
static int read_config(struct tfm_vb *v, json_t *cfg)
{
	json_t *sk = json_object_get(cfg, "sp_model_kwargs");
	if (json_object_size(sk))
		return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer_config.json: sp_model_kwargs "
				  "(SentencePiece sampling options) are not supported");
	if (json_is_true(json_object_get(cfg, "do_lower_case")))
		return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer_config.json: do_lower_case is not "
				  "supported for Marian");
	v->ugm.clean_up = json_is_true(json_object_get(cfg, "clean_up_tokenization_spaces"));
	return TFM_OK;
}

/* tokenizer_config.json's added tokens: vocab.json's special tokens (their
 * lstrip / rstrip kept); others are refused (transformers would decode
 * them apart, joined by spaces). */
static int added_tokens(struct tfm_vb *v, const struct specials *sp, json_t *cfg, json_t *voc)
{
	const char *k;
	json_t *e;
	json_object_foreach(json_object_get(cfg, "added_tokens_decoder"), k, e) {
		const char *s = json_string_value(json_object_get(e, "content"));
		json_t *id = json_object_get(voc, s ? s : "");
		if (!s || !json_is_true(json_object_get(e, "special")) || !is_special(sp, s))
			return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer_config.json: added token %s "
					  "'%.60s' is not a special token (not supported)", k,
					  s ? s : "?");
		/* transformers gives a token vocab.json lacks a new id past it */
		if (!json_is_integer(id) || strtoll(k, NULL, 10) != json_integer_value(id))
			return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer_config.json: added token %s "
					  "'%.60s' is not vocab.json's (not supported)", k, s);
		for (int side = 0; side < 2; side++) {
			if (!json_is_true(json_object_get(e, side ? "rstrip" : "lstrip")))
				continue;
			int32_t *x = tfm_realloc(v->strip[side],
						 (size_t)(v->n_strip[side] + 1) * sizeof *x);
			if (!x)
				return TFM_E_NOMEM;
			v->strip[side] = x;
			x[v->n_strip[side]++] = (int32_t)json_integer_value(id);
		}
	}
	return TFM_OK;
}

static int spm_checks(const struct tfm_vb *s, const char *name)
{
	if (s->ugm.byte_fallback)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: byte_fallback is not supported for Marian",
				  name);
	if (s->denormalizer)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: a denormalizer (decoding rules) is not "
				  "supported", name);
	return TFM_OK;
}

/* Piece -> index map over a parsed model's pieces. */
static int index_pieces(struct tfm_strmap *m, const struct tfm_vb *s)
{
	if (tfm_strmap_init(m, (size_t)s->n))
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < s->n; i++)
		if (s->tok[i])
			tfm_strmap_put(m, s->tok[i], s->len[i], (int32_t)i);
	return TFM_OK;
}

static int push_extra(struct tfm_ugm_extra *x, const char *p, size_t n, float score)
{
	char **e = tfm_realloc(x->piece, (size_t)(x->n + 1) * sizeof *e);
	if (e)
		x->piece = e;
	size_t *l = tfm_realloc(x->len, (size_t)(x->n + 1) * sizeof *l);
	if (l)
		x->len = l;
	float *sc = tfm_realloc(x->score, (size_t)(x->n + 1) * sizeof *sc);
	if (sc)
		x->score = sc;
	char *c = e && l && sc ? tfm_malloc(n + 1) : NULL;
	if (!c)
		return TFM_E_NOMEM;
	memcpy(c, p, n);
	c[n] = 0;
	x->piece[x->n] = c;
	x->len[x->n] = n;
	x->score[x->n++] = score;
	return TFM_OK;
}

/* A model's normal pieces that vocab.json lacks, into x (matched as the
 * model would, then <unk>). */
static int extra_pieces(struct tfm_ugm_extra *x, const struct tfm_vb *s, json_t *voc,
			const char *name)
{
	int st;
	for (int64_t i = 0; i < s->n; i++) {
		if (s->type[i] != TFM_TOKT_NORMAL || !s->tok[i] || json_object_get(voc, s->tok[i]))
			continue;
		if (memchr(s->tok[i], 0, s->len[i]))
			return tfm_seterr(TFM_E_FORMAT, "%s: piece %lld has a NUL", name, (long long)i);
		if ((st = push_extra(x, s->tok[i], s->len[i], s->score[i])))
			return st;
	}
	return TFM_OK;
}

/* target.spm's score for each of vocab.json's ids (all set in v): its
 * normal pieces', -inf (never matched) for any other and for the special
 * tokens.  mt: target.spm's piece -> index. */
static int target_scores(struct tfm_vb *v, json_t *voc, const struct specials *sp,
			 const struct tfm_vb *tgt, const struct tfm_strmap *mt)
{
	struct tfm_ugm_keys *k = &v->ugm;
	const char *p;
	json_t *x;
	if (!(k->target_score = tfm_malloc((size_t)(v->n + 1) * sizeof *k->target_score)))
		return TFM_E_NOMEM;
	k->n_target = v->n;
	for (int64_t i = 0; i < v->n; i++)
		k->target_score[i] = -INFINITY;
	json_object_foreach(voc, p, x) {
		int32_t t = tfm_strmap_get(mt, p, strlen(p));
		if (t >= 0 && tgt->type[t] == TFM_TOKT_NORMAL && !is_special(sp, p))
			k->target_score[json_integer_value(x)] = tgt->score[t];
	}
	return TFM_OK;
}

/* target.spm beside source.spm: a model tfm cuts targets with (a unigram
 * one, no user-defined pieces, finite scores), and its normalizer where it
 * differs from source.spm's (the charsmap and the two flags are all of a
 * SentencePiece normalizer that tfm_vb_from_spm lets through). */
static int target_model(struct tfm_vb *v, const struct tfm_vb *src, const struct tfm_vb *tgt)
{
	struct tfm_ugm_keys *k = &v->ugm;
	if (strcmp(tgt->model, "t5"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "target.spm: a SentencePiece BPE model is not "
				  "supported for Marian (unigram is)");
	for (int64_t i = 0; i < tgt->n; i++) {
		if (tgt->type[i] == TFM_TOKT_USER_DEFINED)
			return tfm_seterr(TFM_E_UNSUPPORTED, "target.spm: user-defined piece '%.60s' "
					  "is not supported for Marian", tgt->tok[i]);
		if (tgt->type[i] == TFM_TOKT_NORMAL && !isfinite(tgt->score[i]))
			return tfm_seterr(TFM_E_FORMAT, "target.spm: piece %lld has no finite "
					  "score", (long long)i);
	}
	if (tgt->ugm.cmap_n != src->ugm.cmap_n ||
	    (tgt->ugm.cmap_n && memcmp(tgt->ugm.cmap, src->ugm.cmap, tgt->ugm.cmap_n))) {
		k->target_own_cmap = 1;
		if (tgt->ugm.cmap_n && !(k->target_cmap = tfm_malloc(tgt->ugm.cmap_n)))
			return TFM_E_NOMEM;
		if (tgt->ugm.cmap_n)
			memcpy(k->target_cmap, tgt->ugm.cmap, tgt->ugm.cmap_n);
		k->target_cmap_n = tgt->ugm.cmap_n;
	}
	k->target_add_prefix = tgt->add_space_prefix != src->add_space_prefix
			       ? tgt->add_space_prefix : -1;
	k->target_remove_ws = tgt->ugm.remove_ws != src->ugm.remove_ws ? tgt->ugm.remove_ws : -1;
	return TFM_OK;
}

/* vocab.json's entries, typed and scored from the two models: special
 * tokens are control tokens (decoding skips them all, <unk> too, as
 * skip_special_tokens does); a piece source.spm has as a normal piece has
 * its score; any other is never matched (tfm.tok.unmatched), and decodes
 * to nothing when target.spm has it as a control symbol (<s>), else to
 * its text.  Then each model's pieces vocab.json lacks, and target.spm's
 * scores by id. */
static int vocab_entries(struct tfm_vb *v, json_t *voc, const struct specials *sp,
			 const struct tfm_vb *src, const struct tfm_vb *tgt, int separate)
{
	struct tfm_strmap ms = { 0 }, mt = { 0 };
	struct tfm_ugm_keys *k = &v->ugm;
	const char *p;
	json_t *x;
	int st;
	if ((st = index_pieces(&ms, src)) || (st = index_pieces(&mt, tgt)))
		goto done;
	if (!(k->unmatched = tfm_malloc(json_object_size(voc) * sizeof *k->unmatched + 1))) {
		st = TFM_E_NOMEM;
		goto done;
	}
	json_object_foreach(voc, p, x) {
		size_t n = strlen(p);
		if (!json_is_integer(x)) {
			st = tfm_seterr(TFM_E_FORMAT, "vocab.json: '%.60s' has no integer id", p);
			goto done;
		}
		int64_t id = json_integer_value(x);
		if (id >= 0 && id < v->n && v->tok[id]) {
			st = tfm_seterr(TFM_E_FORMAT, "vocab.json: id %lld is given to '%.60s' and "
					"'%.60s'", (long long)id, v->tok[id], p);
			goto done;
		}
		int32_t s = tfm_strmap_get(&ms, p, n), t = tfm_strmap_get(&mt, p, n);
		int type = TFM_TOKT_NORMAL;
		float score = 0;
		if (is_special(sp, p))
			type = TFM_TOKT_CONTROL;
		else if (s >= 0 && src->type[s] == TFM_TOKT_NORMAL)
			score = src->score[s];
		else if (t >= 0 && tgt->type[t] == TFM_TOKT_CONTROL)
			type = TFM_TOKT_CONTROL;
		else
			k->unmatched[k->n_unmatched++] = (int32_t)id;
		if ((st = tfm_vb_set(v, id, p, n, score, type)))
			goto done;
	}
	/* pieces vocab.json lacks: matched as source.spm / target.spm would,
	 * then <unk> */
	if ((st = extra_pieces(&k->extra, src, voc, "source.spm")) ||
	    (!separate && ((st = extra_pieces(&k->target_extra, tgt, voc, "target.spm")) ||
			   (st = target_scores(v, voc, sp, tgt, &mt)))))
		goto done;
	st = TFM_OK;
done:
	tfm_strmap_free(&ms);
	tfm_strmap_free(&mt);
	return st;
}

/* separate_vocabs: target_vocab.json, the labels' and the decoder's
 * vocabulary (MarianTokenizer's target_encoder and decoder), as
 * vocab_entries types vocab.json with target.spm alone, into the
 * tfm.tok.target_* keys: its pieces by id (no gaps), target.spm's scores
 * (-inf: never matched), target.spm's pieces it lacks.  transformers ends
 * labels with vocab.json's </s> id and skips vocab.json's special ids when
 * decoding: a target vocabulary whose </s> has another id, or whose piece
 * at a special id is not a special token, is refused. */
static int target_vocab(struct tfm_vb *v, json_t *voc, json_t *tvoc, const struct specials *sp,
			const struct tfm_vb *tgt)
{
	struct tfm_ugm_keys *k = &v->ugm;
	struct tfm_strmap mt = { 0 };
	int64_t n = (int64_t)json_object_size(tvoc);
	const char *p;
	json_t *x;
	int st;
	if (n <= 0 || n > INT32_MAX)
		return tfm_seterr(TFM_E_FORMAT, "target_vocab.json: no entries");
	k->n_target = n;
	k->target_tok = tfm_calloc((size_t)n, sizeof *k->target_tok);
	k->target_len = tfm_calloc((size_t)n, sizeof *k->target_len);
	k->target_type = tfm_calloc((size_t)n, sizeof *k->target_type);
	k->target_score = tfm_malloc((size_t)n * sizeof *k->target_score);
	if (!k->target_tok || !k->target_len || !k->target_type || !k->target_score)
		return TFM_E_NOMEM;
	if ((st = index_pieces(&mt, tgt)))
		return st;
	json_object_foreach(tvoc, p, x) {
		int64_t id = json_is_integer(x) ? json_integer_value(x) : -1;
		if (id < 0 || id >= n || k->target_tok[id]) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "target_vocab.json: '%.60s' has id %lld "
					"(ids 0 to %lld, once each, are supported)", p,
					(long long)id, (long long)n - 1);
			goto done;
		}
		size_t len = strlen(p);
		int32_t t = tfm_strmap_get(&mt, p, len);
		if (!(k->target_tok[id] = tfm_strdup(p))) {
			st = TFM_E_NOMEM;
			goto done;
		}
		k->target_len[id] = len;
		k->target_type[id] = TFM_TOKT_NORMAL;
		k->target_score[id] = -INFINITY;
		if (is_special(sp, p) || (t >= 0 && tgt->type[t] == TFM_TOKT_CONTROL))
			k->target_type[id] = TFM_TOKT_CONTROL;
		else if (t >= 0 && tgt->type[t] == TFM_TOKT_NORMAL)
			k->target_score[id] = tgt->score[t];
	}
	/* vocab.json's special ids, skipped by id when decoding */
	json_object_foreach(voc, p, x) {
		int64_t id = json_integer_value(x);
		if (is_special(sp, p) && id < n && !is_special(sp, k->target_tok[id])) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "target_vocab.json: id %lld is '%.60s', "
					"vocab.json's special token '%.60s' (not supported)",
					(long long)id, k->target_tok[id], p);
			goto done;
		}
	}
	json_t *te = json_object_get(tvoc, sp->eos), *tu = json_object_get(tvoc, sp->unk);
	if (!json_is_integer(te) || json_integer_value(te) != json_integer_value(json_object_get(voc, sp->eos)) ||
	    !json_is_integer(tu)) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "target_vocab.json: its eos token '%.60s' at "
				"vocab.json's id and an unk token '%.60s' are needed", sp->eos, sp->unk);
		goto done;
	}
	k->target_unk = json_integer_value(tu);
	x = json_object_get(tvoc, sp->pad);
	k->target_pad = json_is_integer(x) ? json_integer_value(x) : -1;
	st = extra_pieces(&k->target_extra, tgt, tvoc, "target.spm");
done:
	tfm_strmap_free(&mt);
	return st;
}

int tfm_vb_marian(struct tfm_vb *v, const struct tfm_ckpt *c)
{
	const struct tfm_ckpt_file *fs = file_of(c, "source.spm"), *ft = file_of(c, "target.spm");
	const struct tfm_ckpt_file *fv = file_of(c, "vocab.json");
	const struct tfm_ckpt_file *fc = file_of(c, "tokenizer_config.json");
	const struct tfm_ckpt_file *fm = file_of(c, "special_tokens_map.json");
	const struct tfm_ckpt_file *ftv = file_of(c, "target_vocab.json");
	struct tfm_vb src, tgt;
	json_t *voc = NULL, *cfg = NULL, *map = NULL, *tvoc = NULL;
	struct specials sp = { "</s>", "<unk>", "<pad>", NULL };
	int st;
	tfm_vb_init(&src);
	tfm_vb_init(&tgt);
	if (!ft) {
		st = tfm_seterr(TFM_E_FORMAT, "source.spm without target.spm (Marian)");
		goto done;
	}
	st = TFM_E_FORMAT;
	if (!(voc = load(fv, 0)) || (fc && !(cfg = load(fc, JSON_DECODE_INT_AS_REAL))) ||
	    (fm && !(map = load(fm, JSON_DECODE_INT_AS_REAL))))
		goto done;
	specials_from(&sp, cfg);
	specials_from(&sp, map);
	if ((st = read_config(v, cfg)))
		goto done;
	int separate = json_is_true(json_object_get(cfg, "separate_vocabs"));
	if (separate && !ftv) {
		st = tfm_seterr(TFM_E_FORMAT, "tokenizer_config.json: separate_vocabs true without "
				"target_vocab.json");
		goto done;
	}
	if (separate && !(tvoc = load(ftv, 0))) {
		st = TFM_E_FORMAT;
		goto done;
	}
	if ((st = tfm_vb_from_spm(&src, fs))) {
		tfm_adderr(st, "source.spm");
		goto done;
	}
	if ((st = tfm_vb_from_spm(&tgt, ft))) {
		tfm_adderr(st, "target.spm");
		goto done;
	}
	if (strcmp(src.model, "t5")) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "source.spm: a SentencePiece BPE model is not "
				"supported for Marian (unigram is)");
		goto done;
	}
	if ((st = spm_checks(&src, "source.spm")) || (st = spm_checks(&tgt, "target.spm")) ||
	    (st = target_model(v, &src, &tgt)))
		goto done;
	for (int64_t i = 0; i < src.n; i++) {
		/* SentencePiece matches them before its normalizer: not done here */
		if (src.type[i] == TFM_TOKT_USER_DEFINED) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "source.spm: user-defined piece '%.60s' "
					"is not supported for Marian", src.tok[i]);
			goto done;
		}
	}
	if (!v->id_limit)
		v->id_limit = 2 * (int64_t)json_object_size(voc) + 1024;
	if ((st = vocab_entries(v, voc, &sp, &src, separate ? &src : &tgt, separate)) ||
	    (separate && (st = target_vocab(v, voc, tvoc, &sp, &tgt))))
		goto done;
	const char *names[] = { sp.eos, sp.unk, sp.pad };
	int64_t *ids[] = { &v->eos, &v->unk, &v->pad };
	for (int i = 0; i < 3; i++) {
		json_t *id = json_object_get(voc, names[i]);
		if (!json_is_integer(id)) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "vocab.json lacks the %s token '%.60s'",
					i == 0 ? "eos" : i == 1 ? "unk" : "pad", names[i]);
			goto done;
		}
		*ids[i] = json_integer_value(id);
	}
	if ((st = added_tokens(v, &sp, cfg, voc)))
		goto done;
	size_t i;
	json_t *e;
	json_array_foreach(sp.more, i, e) {
		if (!content(e) || !json_is_integer(json_object_get(voc, content(e)))) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "additional special token '%.60s' is not "
					"in vocab.json (not supported)", content(e) ? content(e) : "?");
			goto done;
		}
	}
	/* source.spm's normalizer; its text A </s> (T5's frame) */
	v->ugm.cmap = src.ugm.cmap;
	v->ugm.cmap_n = src.ugm.cmap_n;
	src.ugm.cmap = NULL;
	v->ugm.remove_ws = src.ugm.remove_ws;
	v->add_space_prefix = src.add_space_prefix;
	v->ugm.spm = 1;
	v->ugm.pair = "t5";
	v->ugm.unk_lookup = v->ugm.lang_code = v->ugm.decode_strip = 1;
	v->model = "t5";
	v->pre = "default";
	v->is_ugm = 1;
	v->has_scores = 1;
	v->bos = -1;
	v->add_bos = 0;
	v->add_eos = 1;
	st = TFM_OK;
done:
	tfm_vb_free(&src);
	tfm_vb_free(&tgt);
	json_decref(voc);
	json_decref(cfg);
	json_decref(map);
	json_decref(tvoc);
	return st;
}
