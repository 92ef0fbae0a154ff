/* normalize.c: the unigram tokenizer's text normalization.  Either the
 * steps of a tokenizer.json normalizer (Sequence, Precompiled, Strip,
 * Replace of a string or of a run "c{n,}", Prepend, NFC / NFD / NFKC / NFKD,
 * Lowercase, StripAccents: utf8proc's tables) and its pre-tokenizer
 * settings (Metaspace, WhitespaceSplit), or SentencePiece's own normalizer
 * (a tokenizer.model, or a GGUF written by llama.cpp).  Anything else is
 * refused by name: a normalizer skipped would change the ids silently. */
#include "unigram.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define SPM_SPACE "\xe2\x96\x81"

struct buf { char *p; size_t n, cap; };

static int put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = tfm_realloc(b->p, cap);
		if (!p)
			return TFM_E_NOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return TFM_OK;
}

/* Rust's char::is_whitespace (Unicode White_Space), which Strip uses. */
static int is_ws(uint32_t c)
{
	return (tfm_uc_flags(c) & TFM_UC_SPACE) != 0;
}

/* ---- parsing tokenizer.json ---- */

static int refuse(const char *what, json_t *j)
{
	char *dump = json_dumps(j, JSON_COMPACT);
	int st = tfm_seterr(TFM_E_UNSUPPORTED, "tokenizer.json: unigram %s not supported: %.300s",
			    what, dump ? dump : "?");
	free(dump);
	return st;
}

static int add_step(struct tfm_ugm *u, struct tfm_norm_step s)
{
	struct tfm_norm_step *v = tfm_realloc(u->step, (size_t)(u->n_step + 1) * sizeof *v);
	if (!v) {
		free(s.with);
		return TFM_E_NOMEM;
	}
	u->step = v;
	u->step[u->n_step++] = s;
	return TFM_OK;
}

static char *dupn(const char *s, size_t n)
{
	char *d = tfm_malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

/* "c{n,}" or "c+" with c one literal character: the runs Replace rewrites. */
static int parse_repeat(struct tfm_norm_step *s, const char *re)
{
	size_t n = strlen(re), i = 0;
	if (!n || strchr("\\.[](){}*+?|^$", re[0]))
		return -1;
	tfm_utf8_decode(re, n, &i);
	if (i > sizeof s->pat - 1)
		return -1;
	memcpy(s->pat, re, i);
	s->patn = i;
	if (!strcmp(re + i, "+")) {
		s->min_rep = 1;
		return 0;
	}
	unsigned v = 0;
	const char *p = re + i;
	if (*p++ != '{' || *p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9' && v < 1000)
		v = v * 10 + (unsigned)(*p++ - '0');
	if (strcmp(p, ",}") || v == 0)
		return -1;
	s->min_rep = v;
	return 0;
}

static int parse_norm(struct tfm_ugm *u, json_t *n)
{
	const char *type = json_string_value(json_object_get(n, "type"));
	struct tfm_norm_step s = { 0 };
	size_t i;
	json_t *e;
	int st;
	if (!n || json_is_null(n))
		return TFM_OK;
	if (!type)
		return refuse("normalizer", n);
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(n, "normalizers");
		if (!json_is_array(a))
			return refuse("normalizer", n);
		json_array_foreach(a, i, e)
			if ((st = parse_norm(u, e)))
				return st;
		return TFM_OK;
	}
	if (!strcmp(type, "Precompiled")) {
		s.op = TFM_NORM_PRECOMPILED;
		return add_step(u, s);
	}
	if (!strcmp(type, "Strip")) {
		json_t *l = json_object_get(n, "strip_left"), *r = json_object_get(n, "strip_right");
		if (!json_is_boolean(l) || !json_is_boolean(r))
			return refuse("Strip normalizer", n);
		s.op = TFM_NORM_STRIP;
		s.left = json_is_true(l);
		s.right = json_is_true(r);
		return add_step(u, s);
	}
	if (!strcmp(type, "Prepend")) {
		json_t *p = json_object_get(n, "prepend");
		if (!json_is_string(p))
			return refuse("Prepend normalizer", n);
		s.op = TFM_NORM_PREPEND;
		s.withn = json_string_length(p);
		if (!(s.with = dupn(json_string_value(p), s.withn)))
			return TFM_E_NOMEM;
		return add_step(u, s);
	}
	if (!strcmp(type, "Replace")) {
		json_t *pat = json_object_get(n, "pattern"), *c = json_object_get(n, "content");
		json_t *ps = json_object_get(pat, "String"), *pr = json_object_get(pat, "Regex");
		if (!json_is_string(c))
			return refuse("Replace normalizer", n);
		if (json_is_string(ps) && json_string_length(ps) > 0 &&
		    json_string_length(ps) < sizeof s.pat) {
			s.op = TFM_NORM_REPLACE;
			s.patn = json_string_length(ps);
			memcpy(s.pat, json_string_value(ps), s.patn);
		} else if (json_is_string(pr) && !parse_repeat(&s, json_string_value(pr))) {
			s.op = TFM_NORM_REPEAT;
		} else {
			return refuse("Replace pattern (a string, or a regex \"c{n,}\" / \"c+\")", n);
		}
		s.withn = json_string_length(c);
		if (!(s.with = dupn(json_string_value(c), s.withn)))
			return TFM_E_NOMEM;
		return add_step(u, s);
	}
	static const struct { const char *name; int op; } uni[] = {
		{ "NFC", TFM_NORM_NFC }, { "NFD", TFM_NORM_NFD }, { "NFKC", TFM_NORM_NFKC },
		{ "NFKD", TFM_NORM_NFKD }, { "Lowercase", TFM_NORM_LOWER },
		{ "StripAccents", TFM_NORM_STRIP_ACCENTS } };
	for (size_t k = 0; k < sizeof uni / sizeof uni[0]; k++)
		if (!strcmp(type, uni[k].name)) {
			s.op = uni[k].op;
			return add_step(u, s);
		}
	/* BertNormalizer, Nmt, ByteLevel, ...: not in the unigram tokenizers */
	return refuse("normalizer", n);
}

int tfm_ugm_parse_normalizer(struct tfm_ugm *u, const char *text, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(text, n, JSON_DECODE_ANY, &je);
	if (!j)
		return tfm_seterr(TFM_E_FORMAT, "unigram normalizer: %s", je.text);
	int st = parse_norm(u, j);
	json_decref(j);
	u->hf = 1;
	return st;
}

static int parse_metaspace(struct tfm_ugm *u, json_t *p)
{
	json_t *r = json_object_get(p, "replacement"), *sc = json_object_get(p, "prepend_scheme");
	json_t *aps = json_object_get(p, "add_prefix_space"), *sp = json_object_get(p, "split");
	if (r && !(json_is_string(r) && !strcmp(json_string_value(r), SPM_SPACE)))
		return refuse("Metaspace replacement (only U+2581)", p);
	if (json_is_string(sc)) {
		const char *s = json_string_value(sc);
		u->prepend = !strcmp(s, "always") ? 1 : !strcmp(s, "first") ? 2 :
			     !strcmp(s, "never") ? 0 : -1;
		if (u->prepend < 0)
			return refuse("Metaspace prepend_scheme", p);
	} else if (sc && !json_is_null(sc)) {
		return refuse("Metaspace prepend_scheme", p);
	} else {
		u->prepend = !json_is_false(aps); /* before tokenizers 0.14 */
	}
	u->split = !json_is_false(sp);
	return TFM_OK;
}

int tfm_ugm_parse_pre_tokenizer(struct tfm_ugm *u, const char *text, size_t n)
{
	json_error_t je;
	json_t *j = json_loadb(text, n, JSON_DECODE_ANY, &je), *e;
	size_t i;
	int st = TFM_OK, seen = 0;
	if (!j)
		return tfm_seterr(TFM_E_FORMAT, "unigram pre_tokenizer: %s", je.text);
	const char *type = json_string_value(json_object_get(j, "type"));
	u->hf = 1;
	if (type && !strcmp(type, "Metaspace")) {
		st = parse_metaspace(u, j);
		seen = 1;
	} else if (type && !strcmp(type, "Sequence")) {
		/* [WhitespaceSplit, Metaspace] (T5 as older converters wrote it) */
		json_t *a = json_object_get(j, "pretokenizers");
		json_array_foreach(a, i, e) {
			const char *t = json_string_value(json_object_get(e, "type"));
			if (t && !strcmp(t, "WhitespaceSplit") && !seen && !u->ws_split) {
				u->ws_split = 1;
			} else if (t && !strcmp(t, "Metaspace") && !seen) {
				if ((st = parse_metaspace(u, e)))
					break;
				seen = 1;
			} else {
				st = refuse("pre_tokenizer", e);
				break;
			}
		}
	}
	if (!st && !seen)
		st = refuse("pre_tokenizer (Metaspace is needed)", j);
	json_decref(j);
	return st;
}

void tfm_ugm_free(struct tfm_ugm *u)
{
	for (int i = 0; i < u->n_step; i++)
		free(u->step[i].with);
	free(u->step);
	free(u->ekey);
	free(u->eval);
	free(u->id);
	free(u->unmatched);
	free(u->extra);
	free(u->extra_len);
	free(u->extra_score);
	free(u->extra_arena);
	free(u->score);
	tfm_charsmap_free(&u->cmap);
	memset(u, 0, sizeof *u);
}

/* ---- the steps ---- */

/* Characters that stay in the grapheme of the character before them
 * (UAX #29 Extend and SpacingMark, reduced to what changes the charsmap's
 * lookups: combining marks, ZWNJ, ZWJ, U+FF9E/F, emoji modifiers and tags,
 * variation selectors). */
static int extends(uint32_t c)
{
	return (tfm_uc_flags(c) & TFM_UC_MARK) || c == 0x200c || c == 0x200d ||
	       c == 0xff9e || c == 0xff9f || /* halfwidth (semi-)voiced marks: Extend */
	       (c >= 0x1f3fb && c <= 0x1f3ff) || (c >= 0xe0020 && c <= 0xe007f) ||
	       (c >= 0xfe00 && c <= 0xfe0f);
}

/* A grapheme break never joins a control character (GB4, GB5). */
static int is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029 ||
	       c == 0x200b || c == 0xfeff;
}

/* End of the grapheme cluster that starts at s[i]. */
static size_t grapheme_end(const char *s, size_t n, size_t i)
{
	size_t j = i;
	uint32_t c = tfm_utf8_decode(s, n, &j);
	if (c == '\r' && j < n && s[j] == '\n')
		return j + 1;
	if (is_control(c))
		return j;
	while (j < n) {
		size_t k = j;
		if (!extends(tfm_utf8_decode(s, n, &k)))
			break;
		j = k;
	}
	return j;
}

/* tokenizers' Precompiled: a grapheme shorter than 6 bytes is replaced
 * whole by the replacement of the shortest key that prefixes it; else
 * (or when none does) each character by its own. */
static int precompiled(const struct tfm_charsmap *m, const char *s, size_t n, struct buf *o)
{
	int st = TFM_OK;
	for (size_t i = 0; !st && i < n;) {
		size_t g = grapheme_end(s, n, i), kl;
		const char *r;
		size_t rn;
		if (g - i < 6) {
			if ((st = tfm_charsmap_match(m, s + i, g - i, 0, &kl, &r, &rn)))
				return st;
			if (kl) {
				st = put(o, r, rn);
				i = g;
				continue;
			}
		}
		while (!st && i < g) {
			size_t j = i;
			tfm_utf8_decode(s, n, &j);
			if ((st = tfm_charsmap_match(m, s + i, j - i, 0, &kl, &r, &rn)))
				return st;
			st = kl ? put(o, r, rn) : put(o, s + i, j - i);
			i = j;
		}
	}
	return st;
}

static int strip(const struct tfm_norm_step *sp, const char *s, size_t n, struct buf *o)
{
	size_t a = 0, b = n;
	while (sp->left && a < b) {
		size_t j = a;
		if (!is_ws(tfm_utf8_decode(s, b, &j)))
			break;
		a = j;
	}
	while (sp->right && b > a) {
		size_t k = b - 1; /* back to the lead byte of the last character */
		while (k > a && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
		size_t j = k;
		if (!is_ws(tfm_utf8_decode(s, b, &j)) || j != b)
			break;
		b = k;
	}
	return put(o, s + a, b - a);
}

static int replace(const struct tfm_norm_step *sp, const char *s, size_t n, struct buf *o)
{
	int st = TFM_OK;
	for (size_t i = 0; !st && i < n;) {
		size_t r = 0;
		while (i + (r + 1) * sp->patn <= n && !memcmp(s + i + r * sp->patn, sp->pat, sp->patn)) {
			r++;
			if (sp->op == TFM_NORM_REPLACE)
				break;
		}
		unsigned need = sp->op == TFM_NORM_REPLACE ? 1 : sp->min_rep;
		if (r >= need) {
			st = put(o, sp->with, sp->withn);
			i += r * sp->patn;
		} else if (r > 0) {
			st = put(o, s + i, r * sp->patn);
			i += r * sp->patn;
		} else {
			st = put(o, s + i, 1);
			i++;
		}
	}
	return st;
}

/* SentencePiece's normalizer (normalizer.cc, as a fact sheet): the longest
 * charsmap match at each position (else one character; a bad byte is
 * U+FFFD), leading whitespace skipped and runs of spaces kept to one when
 * remove_extra_whitespaces, a dummy "\u2581" first, spaces as "\u2581",
 * trailing ones dropped. */
static int spm_normalize(const struct tfm_ugm *u, const char *s, size_t n, struct buf *o)
{
	int st = TFM_OK, prev_space = u->remove_ws, started = 0;
	for (size_t i = 0; !st && i < n;) {
		size_t kl = 0, rn;
		const char *r;
		if (u->has_cmap && (st = tfm_charsmap_match(&u->cmap, s + i, n - i, 1, &kl, &r, &rn)))
			return st;
		if (!kl) {
			size_t j = i;
			uint32_t c = tfm_utf8_decode(s, n, &j);
			kl = j - i;
			r = c == 0xfffd ? "\xef\xbf\xbd" : s + i;
			rn = c == 0xfffd ? 3 : kl;
		}
		i += kl;
		if (!started && u->remove_ws && rn == 1 && r[0] == ' ')
			continue; /* leading whitespace */
		if (!started) {
			started = 1;
			if (u->add_prefix)
				st = put(o, SPM_SPACE, 3);
		}
		while (prev_space && rn && r[0] == ' ')
			r++, rn--;
		for (size_t k = 0; !st && k < rn; k++)
			st = r[k] == ' ' ? put(o, SPM_SPACE, 3) : put(o, r + k, 1);
		if (rn)
			prev_space = r[rn - 1] == ' ';
		prev_space = prev_space && u->remove_ws;
	}
	while (!st && u->remove_ws && o->n >= 3 && !memcmp(o->p + o->n - 3, SPM_SPACE, 3))
		o->n -= 3;
	return st;
}

/* NFC, NFD, NFKC, NFKD of s[n] (utf8proc_map; NUL bytes are kept), or
 * each code point lowered (utf8proc_tolower, and U+0130 to i U+0307, as
 * Rust's char::to_lowercase: its only lower case of two code points) or
 * dropped when it is a mark (StripAccents: Mn, Mc, Me).  Text that is not
 * UTF-8 is refused: the Rust normalizers never see it. */
static int unicode(int op, const char *s, size_t n, struct buf *o)
{
	if (op == TFM_NORM_LOWER || op == TFM_NORM_STRIP_ACCENTS) {
		for (size_t i = 0; i < n;) {
			utf8proc_int32_t c;
			utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
							      (utf8proc_ssize_t)(n - i), &c);
			if (k <= 0)
				return tfm_seterr(TFM_E_FORMAT, "unigram normalizer: text that is not "
						  "UTF-8 (byte %zu)", i);
			i += (size_t)k;
			if (op == TFM_NORM_STRIP_ACCENTS) {
				utf8proc_category_t g = utf8proc_category(c);
				if (g == UTF8PROC_CATEGORY_MN || g == UTF8PROC_CATEGORY_MC ||
				    g == UTF8PROC_CATEGORY_ME)
					continue;
			} else if (c == 0x130) { /* the one lower case of two code points */
				int st = put(o, "i\xcc\x87", 3);
				if (st)
					return st;
				continue;
			} else {
				c = utf8proc_tolower(c);
			}
			utf8proc_uint8_t e[4];
			utf8proc_ssize_t m = utf8proc_encode_char(c, e);
			int st = put(o, (const char *)e, (size_t)m);
			if (st)
				return st;
		}
		return TFM_OK;
	}
	utf8proc_option_t opt = UTF8PROC_STABLE |
		(op == TFM_NORM_NFC || op == TFM_NORM_NFKC ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE) |
		(op == TFM_NORM_NFKC || op == TFM_NORM_NFKD ? UTF8PROC_COMPAT : 0);
	utf8proc_uint8_t *d = NULL;
	utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &d, opt);
	if (m < 0) {
		free(d);
		return tfm_seterr(m == UTF8PROC_ERROR_NOMEM ? TFM_E_NOMEM : TFM_E_FORMAT,
				  "unigram normalizer: %s", utf8proc_errmsg(m));
	}
	int st = put(o, (const char *)d, (size_t)m);
	free(d);
	return st;
}

int tfm_ugm_normalize(const struct tfm_ugm *u, const char *s, size_t n, char **out, size_t *outn)
{
	struct buf a = { 0 }, b = { 0 };
	int st = put(&a, s, n);
	if (!st && !u->hf) {
		st = spm_normalize(u, s, n, &b);
		struct buf t = a;
		a = b;
		b = t;
	}
	for (int k = 0; !st && u->hf && k < u->n_step; k++) {
		const struct tfm_norm_step *sp = &u->step[k];
		b.n = 0;
		st = put(&b, "", 0);
		switch (sp->op) {
		case TFM_NORM_PRECOMPILED:
			if (!u->has_cmap) {
				st = tfm_seterr(TFM_E_FORMAT, "unigram: Precompiled normalizer without "
						"tokenizer.ggml.precompiled_charsmap");
				break;
			}
			st = precompiled(&u->cmap, a.p, a.n, &b);
			break;
		case TFM_NORM_STRIP: st = strip(sp, a.p, a.n, &b); break;
		case TFM_NORM_REPLACE:
		case TFM_NORM_REPEAT: st = replace(sp, a.p, a.n, &b); break;
		case TFM_NORM_PREPEND:
			if (a.n && !(st = put(&b, sp->with, sp->withn)))
				st = put(&b, a.p, a.n);
			break;
		case TFM_NORM_NFC:
		case TFM_NORM_NFD:
		case TFM_NORM_NFKC:
		case TFM_NORM_NFKD:
		case TFM_NORM_LOWER:
		case TFM_NORM_STRIP_ACCENTS: st = unicode(sp->op, a.p, a.n, &b); break;
		default: st = tfm_seterr(TFM_E_INTERNAL, "normalizer step %d", sp->op);
		}
		struct buf t = a;
		a = b;
		b = t;
	}
	free(b.p);
	if (st) {
		free(a.p);
		return st;
	}
	if (!a.p && (st = put(&a, "", 0)))
		return st;
	*out = a.p;
	*outn = a.n;
	return TFM_OK;
}
