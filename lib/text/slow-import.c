/* slow-import.c: the tokenizer.json transformers' converter builds from a
 * slow tokenizer's files, for checkpoints that ship none.  AutoTokenizer
 * converts such a checkpoint on loading (convert_slow_tokenizer.py), so
 * this is the tokenizer their users run.
 *
 * Only DeBERTa-v2 / v3 (tokenizer_config.json tokenizer_class
 * DebertaV2Tokenizer, spm.model: every DeBERTa-v3 on the Hub) so far,
 * as DebertaV2Converter makes it:
 *   model          Unigram: spm.model's pieces and scores, its unk_id, no
 *                  byte fallback;
 *   normalizer     Sequence [Lowercase (do_lower_case), Strip, Precompiled
 *                  (spm.model's charsmap, when it has one), Replace " {2,}"
 *                  -> " "];
 *   pre_tokenizer  Metaspace, prepend_scheme always (split_by_punct is
 *                  refused: tfm has no Punctuation pre-tokenizer);
 *   post_processor [CLS] A [SEP], pairs [CLS] A [SEP] B [SEP] (B's types 1);
 *   added_tokens   tokenizer_config.json's added_tokens_decoder, else
 *                  DebertaV2Tokenizer's special tokens ([MASK] past the
 *                  pieces).
 * The caller reads the result as any tokenizer.json. */
#include "slow-import.h"
#include "vocab-impl.h"

#include <stdlib.h>
#include <string.h>

/* Standard base64 of n bytes (tokenizers' Precompiled charsmap). */
static char *base64(const uint8_t *p, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = tfm_malloc(4 * ((n + 2) / 3) + 1), *q = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		*q++ = a[w >> 18 & 63];
		*q++ = a[w >> 12 & 63];
		*q++ = i + 1 < n ? a[w >> 6 & 63] : '=';
		*q++ = i + 2 < n ? a[w & 63] : '=';
	}
	*q = 0;
	return o;
}

/* {"SpecialToken": {"id": name, "type_id": t}} or the sequence's. */
static json_t *item(const char *kind, const char *id, int type)
{
	return json_pack("{s{sssi}}", kind, "id", id, "type_id", type);
}

static json_t *special(const char *name, int64_t id)
{
	return json_pack("{sss[I]s[s]}", "id", name, "ids", (json_int_t)id, "tokens", name);
}

/* DebertaV2Converter's normalizer, pre-tokenizer, decoder and template. */
static int deberta_pipeline(json_t *root, const struct tfm_vb *sp, json_t *cfg)
{
	if (json_is_true(json_object_get(cfg, "split_by_punct")))
		return tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer_config.json: split_by_punct true "
				  "(a Punctuation pre-tokenizer) is not supported");
	json_t *norm = json_array();
	if (json_is_true(json_object_get(cfg, "do_lower_case")))
		json_array_append_new(norm, json_pack("{ss}", "type", "Lowercase"));
	json_array_append_new(norm, json_pack("{sssbsb}", "type", "Strip", "strip_left", 1,
					      "strip_right", 1));
	if (sp->ugm.cmap_n) {
		char *b = base64(sp->ugm.cmap, sp->ugm.cmap_n);
		if (!b) {
			json_decref(norm);
			return TFM_E_NOMEM;
		}
		json_array_append_new(norm, json_pack("{ssss}", "type", "Precompiled",
						      "precompiled_charsmap", b));
		free(b);
	}
	json_array_append_new(norm, json_pack("{ss s{ss} ss}", "type", "Replace", "pattern",
					      "Regex", " {2,}", "content", " "));
	json_object_set_new(root, "normalizer", json_pack("{ssso}", "type", "Sequence",
							  "normalizers", norm));
	json_t *ms = json_pack("{sssssssb}", "type", "Metaspace", "replacement", "\xe2\x96\x81",
			       "prepend_scheme", "always", "split", 1);
	json_object_set_new(root, "pre_tokenizer", json_deep_copy(ms));
	json_object_set_new(root, "decoder", ms);
	int64_t cls = tfm_vb_find(sp, "[CLS]"), sep = tfm_vb_find(sp, "[SEP]");
	if (cls < 0 || sep < 0)
		return tfm_seterr(TFM_E_FORMAT, "spm.model: no [CLS] or [SEP] piece (DeBERTa's "
				  "template needs both)");
	json_t *pp = json_pack("{ss s[ooo] s[ooooo] s{soso}}", "type", "TemplateProcessing",
			       "single", item("SpecialToken", "[CLS]", 0), item("Sequence", "A", 0),
			       item("SpecialToken", "[SEP]", 0),
			       "pair", item("SpecialToken", "[CLS]", 0), item("Sequence", "A", 0),
			       item("SpecialToken", "[SEP]", 0), item("Sequence", "B", 1),
			       item("SpecialToken", "[SEP]", 1),
			       "special_tokens", "[CLS]", special("[CLS]", cls),
			       "[SEP]", special("[SEP]", sep));
	if (!pp)
		return TFM_E_NOMEM;
	json_object_set_new(root, "post_processor", pp);
	return TFM_OK;
}

/* DebertaV2Tokenizer's special tokens where tokenizer_config.json names
 * none (the Hub's {"do_lower_case": false, "vocab_type": "spm"}): its
 * defaults, or the *_token the file gives, in transformers' order; each
 * the piece of that name, else a new id past the pieces ([MASK]: 128000
 * in DeBERTa-v3). */
static int default_specials(json_t *list, const struct tfm_vb *sp, json_t *cfg)
{
	static const char *const attr[] = { "bos_token", "eos_token", "unk_token", "sep_token",
					    "pad_token", "cls_token", "mask_token" };
	static const char *const dflt[] = { "[CLS]", "[SEP]", "[UNK]", "[SEP]", "[PAD]", "[CLS]",
					    "[MASK]" };
	const char *seen[7];
	int64_t next = sp->n;
	for (int a = 0; a < 7; a++) {
		json_t *x = json_object_get(cfg, attr[a]);
		const char *s = json_is_string(x) ? json_string_value(x)
			      : json_string_value(json_object_get(x, "content"));
		if (!s)
			s = dflt[a];
		int dup = 0;
		for (int b = 0; b < a; b++)
			dup |= !strcmp(seen[b], s);
		seen[a] = s;
		if (dup)
			continue;
		int64_t id = tfm_vb_find(sp, s);
		json_array_append_new(list, json_pack("{sIsssbsbsbsbsb}", "id",
						      (json_int_t)(id >= 0 ? id : next++), "content", s,
						      "single_word", 0, "lstrip", 0, "rstrip", 0,
						      "normalized", 0, "special", 1));
	}
	return TFM_OK;
}

/* tokenizer_config.json's added_tokens_decoder as tokenizer.json's list,
 * or DebertaV2Tokenizer's defaults. */
static int added(json_t *root, const struct tfm_vb *sp, json_t *cfg)
{
	json_t *list = json_array(), *e;
	const char *k;
	json_object_set_new(root, "added_tokens", list);
	if (!json_object_size(json_object_get(cfg, "added_tokens_decoder")))
		return default_specials(list, sp, cfg);
	json_object_foreach(json_object_get(cfg, "added_tokens_decoder"), k, e) {
		char *end;
		long long id = strtoll(k, &end, 10);
		const char *s = json_string_value(json_object_get(e, "content"));
		if (*end || id < 0 || !s)
			return tfm_seterr(TFM_E_FORMAT, "tokenizer_config.json: added token '%.40s' "
					  "is not an id with a content", k);
		json_t *x = json_pack("{sIss}", "id", (json_int_t)id, "content", s);
		static const char *const flags[] = { "single_word", "lstrip", "rstrip", "normalized",
						     "special" };
		for (int f = 0; f < 5; f++)
			json_object_set_new(x, flags[f],
					    json_boolean(json_is_true(json_object_get(e, flags[f]))));
		json_array_append_new(list, x);
	}
	return TFM_OK;
}

int tfm_slow_tokenizer_json(const struct tfm_ckpt_file *spm, json_t *cfg,
			    const char *model_type, char **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	/* the class tokenizer_config.json names, else the model type's (as
	 * AutoTokenizer picks it) */
	const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
	int deberta = cls ? !strcmp(cls, "DebertaV2Tokenizer") ||
			    !strcmp(cls, "DebertaV2TokenizerFast")
			  : model_type && !strcmp(model_type, "deberta-v2");
	if (!deberta)
		return tfm_seterr(TFM_E_UNSUPPORTED, "no tokenizer.json, and the slow tokenizer "
				  "(tokenizer_class %s, model_type %s) has no conversion in tfm "
				  "(DebertaV2Tokenizer's spm.model has)", cls ? cls : "none",
				  model_type ? model_type : "none");
	struct tfm_vb sp;
	tfm_vb_init(&sp);
	int st = tfm_vb_from_spm(&sp, spm);
	if (!st && !sp.is_ugm)
		st = tfm_seterr(TFM_E_UNSUPPORTED, "spm.model: a BPE SentencePiece model (DeBERTa's "
				"converter builds unigram ones)");
	json_t *root = st ? NULL : json_object(), *voc = json_array();
	for (int64_t i = 0; root && i < sp.n; i++) {
		if (!sp.tok[i]) {
			st = tfm_seterr(TFM_E_FORMAT, "spm.model: piece %lld missing", (long long)i);
			break;
		}
		json_array_append_new(voc, json_pack("[s%f]", sp.tok[i], sp.len[i],
						     (double)sp.score[i]));
	}
	if (!st) {
		json_object_set_new(root, "model", json_pack("{sssIsOsb}", "type", "Unigram",
							     "unk_id", (json_int_t)sp.unk, "vocab",
							     voc, "byte_fallback", 0));
		if (!(st = deberta_pipeline(root, &sp, cfg)) && !(st = added(root, &sp, cfg))) {
			*out = json_dumps(root, JSON_COMPACT);
			*n = *out ? strlen(*out) : 0;
			if (!*out)
				st = TFM_E_NOMEM;
		}
	}
	json_decref(voc);
	json_decref(root);
	tfm_vb_free(&sp);
	return st;
}
