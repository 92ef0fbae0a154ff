/* unigram.c: the SentencePiece unigram model (GGUF tokenizer.ggml.model
 * "t5") with the semantics of the tokenizers library's Unigram: the text
 * normalized (normalize.c), split by Metaspace into words that begin with
 * U+2581, and each word cut by Viterbi into the pieces of highest total
 * score (log probability).  A character no piece starts with costs the
 * lowest score - 10 and becomes the unknown token; runs of them fuse into
 * one, or into their <0xNN> byte tokens with byte_fallback.  Pieces are
 * found with a byte trie, so a word costs O(length x longest piece).
 * Marian's vocabulary is not its encoder model's: the trie then leaves out
 * the ids that model lacks and holds its pieces the vocabulary lacks (ids
 * n_vocab + k, emitted as the unknown token).  Its target model is a second
 * struct tfm_ugm over the same vocabulary, with scores of its own. */
#include "unigram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPM_SPACE "\xe2\x96\x81"

static uint64_t edge_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* child of node by byte c, -1 if none */
static int32_t child(const struct tfm_ugm *u, size_t node, unsigned char c)
{
	uint64_t key = ((uint64_t)node << 8 | c) + 1;
	for (size_t i = edge_hash(key) & (u->ecap - 1);; i = (i + 1) & (u->ecap - 1)) {
		if (!u->ekey[i])
			return -1;
		if (u->ekey[i] == key)
			return u->eval[i];
	}
}

static void add_edge(struct tfm_ugm *u, size_t node, unsigned char c, int32_t to)
{
	uint64_t key = ((uint64_t)node << 8 | c) + 1;
	size_t i = edge_hash(key) & (u->ecap - 1);
	while (u->ekey[i])
		i = (i + 1) & (u->ecap - 1);
	u->ekey[i] = key;
	u->eval[i] = to;
}

/* Which pieces text can match: all of the model's vocabulary for
 * tokenizers (its trie holds every entry), normal and user-defined ones
 * for SentencePiece. */
static int matchable(const struct tfm_tokenizer *t, const struct tfm_ugm *u, int64_t i)
{
	if (!t->plen[i])
		return 0;
	if (u->unmatched && u->unmatched[i])
		return 0;
	if (u->score && u->score[i] == -INFINITY) /* a piece that model lacks */
		return 0;
	if (u->hf)
		return t->type[i] != TFM_TOKT_UNUSED; /* the [PADn] fill */
	return t->type[i] == TFM_TOKT_NORMAL || t->type[i] == TFM_TOKT_USER_DEFINED;
}

/* The score of a trie id: the model's own or the vocabulary's, or an
 * extra piece's. */
static double piece_score(const struct tfm_tokenizer *t, const struct tfm_ugm *u, int64_t id)
{
	if (id >= t->n_vocab)
		return u->extra_score[id - t->n_vocab];
	return u->score ? u->score[id] : t->score[id];
}

/* Add piece p[n] to the trie as id (the first of duplicates wins). */
static void trie_add(struct tfm_ugm *u, const char *p, size_t n, int32_t id)
{
	size_t node = 0;
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)p[k];
		int32_t nx = child(u, node, c);
		if (nx < 0) {
			nx = (int32_t)u->n_nodes++;
			u->id[nx] = -1;
			add_edge(u, node, c, nx);
		}
		node = (size_t)nx;
	}
	if (u->id[node] < 0)
		u->id[node] = id;
}

int tfm_ugm_build(struct tfm_tokenizer *t, struct tfm_ugm *u)
{
	size_t total = 1;
	double lo = INFINITY;
	for (int64_t i = 0; i < t->n_vocab; i++) {
		if (!matchable(t, u, i))
			continue;
		total += t->plen[i];
		if (piece_score(t, u, i) < lo)
			lo = piece_score(t, u, i);
	}
	if (u->n_extra > INT32_MAX - t->n_vocab)
		return tfm_seterr(TFM_E_FORMAT, "unigram: %lld extra pieces", (long long)u->n_extra);
	for (int64_t k = 0; k < u->n_extra; k++) {
		total += u->extra_len[k];
		if (u->extra_score[k] < lo)
			lo = u->extra_score[k];
	}
	u->unk_score = (lo == INFINITY ? 0 : lo) - 10.0;
	u->ecap = 16;
	while (u->ecap < total * 2)
		u->ecap <<= 1;
	u->ekey = tfm_calloc(u->ecap, sizeof *u->ekey);
	u->eval = tfm_calloc(u->ecap, sizeof *u->eval);
	u->id = tfm_malloc(total * sizeof *u->id);
	if (!u->ekey || !u->eval || !u->id)
		return TFM_E_NOMEM;
	u->n_nodes = 1;
	u->id[0] = -1;
	for (int64_t i = 0; i < t->n_vocab; i++)
		if (matchable(t, u, i))
			trie_add(u, t->piece[i], t->plen[i], (int32_t)i);
	for (int64_t k = 0; k < u->n_extra; k++)
		if (u->extra_len[k])
			trie_add(u, u->extra[k], u->extra_len[k], (int32_t)(t->n_vocab + k));
	return TFM_OK;
}

void tfm_ugm_destroy(struct tfm_ugm *u)
{
	if (!u)
		return;
	tfm_ugm_free(u);
	free(u);
}

/* One lattice position: the best path that ends here. */
struct node { double score; int32_t id; int32_t from; }; /* from -1: unreached */

/* Append the ids of the unknown run w[0, n): byte tokens when the model
 * falls back to bytes and has them all, else one unknown token. */
static int unknown(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *w, size_t n,
		   struct tfm_ids *out)
{
	/* Marian looks SentencePiece's unknown piece (its text) up in
	 * vocab.json, where the target side may have it */
	int32_t v = u->unk_lookup ? tfm_strmap_get(&t->map, w, n) : -1;
	if (v >= 0 && t->type[v] != TFM_TOKT_UNUSED)
		return tfm_ids_push(out, v);
	int all = u->byte_fallback;
	for (size_t k = 0; all && k < n; k++)
		all = t->byte_tok[(unsigned char)w[k]] >= 0;
	if (all) {
		for (size_t k = 0; k < n; k++) {
			int st = tfm_ids_push(out, t->byte_tok[(unsigned char)w[k]]);
			if (st)
				return st;
		}
		return TFM_OK;
	}
	if (t->unk < 0)
		return tfm_seterr(TFM_E_FORMAT, "unigram: no piece for '%.*s' and no unknown token",
				  (int)(n < 32 ? n : 32), w);
	return tfm_ids_push(out, t->unk);
}

/* Viterbi over w[0, n) (tokenizers' encode_optimized): at each character
 * boundary every piece that starts there extends the best path; a
 * character no single-character piece covers gets the unknown score. */
static int viterbi(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *w, size_t n,
		   struct node *lat, int32_t *path, struct tfm_ids *out)
{
	for (size_t i = 0; i <= n; i++)
		lat[i] = (struct node){ 0, -1, -1 };
	lat[0].from = 0;
	for (size_t s = 0; s < n;) {
		size_t cl = tfm_utf8_len((unsigned char)w[s]);
		if (cl > n - s)
			cl = n - s;
		double base = lat[s].score;
		int single = 0;
		size_t node = 0;
		for (size_t e = s; e < n; e++) {
			int32_t nx = child(u, node, (unsigned char)w[e]);
			if (nx < 0)
				break;
			node = (size_t)nx;
			int32_t id = u->id[node];
			if (id < 0)
				continue;
			double c = base + piece_score(t, u, id);
			if (lat[e + 1].from < 0 || c > lat[e + 1].score)
				lat[e + 1] = (struct node){ c, id, (int32_t)s };
			if (e + 1 - s == cl)
				single = 1;
		}
		if (!single) {
			double c = base + u->unk_score;
			if (lat[s + cl].from < 0 || c > lat[s + cl].score)
				lat[s + cl] = (struct node){ c, -1, (int32_t)s };
		}
		s += cl;
	}
	/* back from the end; path holds the start of each token */
	size_t k = 0;
	for (size_t e = n; e > 0; e = (size_t)lat[e].from)
		path[k++] = (int32_t)e;
	int st = TFM_OK;
	size_t unk_start = 0;
	int in_unk = 0;
	for (size_t j = k; !st && j-- > 0;) {
		size_t e = (size_t)path[j], s = (size_t)lat[e].from;
		int32_t id = lat[e].id;
		if (id < 0) { /* fuse a run of unknown characters */
			if (!in_unk)
				unk_start = s;
			in_unk = 1;
			continue;
		}
		if (in_unk)
			st = unknown(t, u, w + unk_start, s - unk_start, out);
		in_unk = 0;
		if (!st && id >= t->n_vocab && t->unk < 0)
			st = tfm_seterr(TFM_E_FORMAT, "unigram: a piece outside the vocabulary "
					"and no unknown token");
		if (!st)
			st = tfm_ids_push(out, id < t->n_vocab ? id : t->unk);
	}
	if (!st && in_unk)
		st = unknown(t, u, w + unk_start, n - unk_start, out);
	return st;
}

/* Metaspace: spaces become U+2581, the text gets one first (prepend
 * scheme "always", or "first" at the start of the input) unless it has
 * one, and with split it is cut before each U+2581.  Each word then goes
 * through viterbi. */
static int metaspace(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *s,
		     size_t n, int first, char *buf, struct node *lat, int32_t *path,
		     struct tfm_ids *out)
{
	size_t k = 0;
	if (n == 0)
		return TFM_OK;
	if ((u->prepend == 1 || (u->prepend == 2 && first)) &&
	    !(n >= 1 && s[0] == ' ') && !(n >= 3 && !memcmp(s, SPM_SPACE, 3))) {
		memcpy(buf, SPM_SPACE, 3);
		k = 3;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(buf + k, SPM_SPACE, 3);
			k += 3;
		} else {
			buf[k++] = s[i];
		}
	}
	if (!u->split)
		return viterbi(t, u, buf, k, lat, path, out);
	int st = TFM_OK;
	for (size_t a = 0; !st && a < k;) {
		size_t b = a + 1;
		while (b < k && !(k - b >= 3 && !memcmp(buf + b, SPM_SPACE, 3)))
			b++;
		st = viterbi(t, u, buf + a, b - a, lat, path, out);
		a = b;
	}
	return st;
}

/* MarianTokenizer's remove_language_code: text opening with ">>" up to the
 * first "<<" is one token, the vocabulary's or the unknown one. */
static int lang_code(const struct tfm_tokenizer *t, const char **text, size_t *len,
		     struct tfm_ids *out)
{
	const char *s = *text, *e;
	if (*len < 4 || s[0] != '>' || s[1] != '>' || !(e = memmem(s, *len, "<<", 2)))
		return TFM_OK;
	size_t n = (size_t)(e - s) + 2;
	int32_t id = tfm_strmap_get(&t->map, s, n);
	if (id < 0 || t->type[id] == TFM_TOKT_UNUSED)
		id = t->unk;
	if (id < 0)
		return tfm_seterr(TFM_E_FORMAT, "unigram: language code '%.*s' not in the "
				  "vocabulary and no unknown token", (int)(n < 32 ? n : 32), s);
	*text += n;
	*len -= n;
	return tfm_ids_push(out, id);
}

int tfm_ugm_encode(const struct tfm_tokenizer *t, const struct tfm_ugm *u, const char *text,
		   size_t len, int first, struct tfm_ids *out)
{
	char *s = NULL, *buf = NULL;
	size_t n = 0;
	struct node *lat = NULL;
	int32_t *path = NULL;
	int st = u->lang_code ? lang_code(t, &text, &len, out) : TFM_OK;
	if (st)
		return st;
	st = tfm_ugm_normalize(u, text, len, &s, &n);
	if (st)
		return st;
	if (n > INT32_MAX / 4) {
		st = tfm_seterr(TFM_E_INVAL, "unigram: text of %zu bytes", n);
		goto done;
	}
	/* Metaspace at most triples a byte (' ' -> U+2581), plus the prefix */
	buf = tfm_malloc(n * 3 + 4);
	lat = tfm_malloc((n * 3 + 5) * sizeof *lat);
	path = tfm_malloc((n * 3 + 5) * sizeof *path);
	if (!buf || !lat || !path) {
		st = TFM_E_NOMEM;
		goto done;
	}
	if (!u->hf) { /* SentencePiece: the whole normalized text at once */
		st = viterbi(t, u, s, n, lat, path, out);
		goto done;
	}
	if (!u->ws_split) {
		st = metaspace(t, u, s, n, first, buf, lat, path, out);
		goto done;
	}
	for (size_t i = 0; !st && i < n;) { /* WhitespaceSplit first */
		size_t j = i;
		uint32_t c = tfm_utf8_decode(s, n, &j);
		if (tfm_uc_flags(c) & TFM_UC_SPACE) { /* Rust's char::is_whitespace */
			i = j;
			continue;
		}
		size_t w = i;
		while (j < n) {
			size_t k = j;
			c = tfm_utf8_decode(s, n, &k);
			if (tfm_uc_flags(c) & TFM_UC_SPACE)
				break;
			j = k;
		}
		st = metaspace(t, u, s + w, j - w, first && w == 0, buf, lat, path, out);
		first = 0;
		i = j;
	}
done:
	free(s);
	free(buf);
	free(lat);
	free(path);
	return st;
}

static int gguf_bool(const struct tfm_gguf *g, const char *key, int dflt)
{
	return tfm_gguf_get_int_or(g, key, dflt) != 0;
}

/* tfm.tok.unmatched (Marian). */
static int unmatched_ids(struct tfm_tokenizer *t, struct tfm_ugm *u, const struct tfm_gguf *g)
{
	return tfm_tok_id_flags(t, g, "tfm.tok.unmatched", &u->unmatched, 1);
}

/* The extra pieces key and its scores (Marian: tfm.tok.extra_pieces and
 * extra_scores, or the target model's). */
static int extra_pieces(struct tfm_tokenizer *t, struct tfm_ugm *u, const struct tfm_gguf *g,
			const char *key, const char *skey)
{
	int64_t i, m;
	int st;
	if ((i = tfm_gguf_find(g, key)) < 0)
		return TFM_OK;
	if (tfm_gguf_kv_type(g, i) != TFM_GGUF_ARRAY || tfm_gguf_arr_type(g, i) != TFM_GGUF_STRING)
		return tfm_seterr(TFM_E_FORMAT, "%s is not a string array", key);
	m = tfm_gguf_arr_n(g, i);
	int64_t j = tfm_gguf_find(g, skey);
	if (m > INT32_MAX - t->n_vocab || j < 0 || tfm_gguf_kv_type(g, j) != TFM_GGUF_ARRAY ||
	    tfm_gguf_arr_n(g, j) != m)
		return tfm_seterr(TFM_E_FORMAT, "%s without %s of its length", key, skey);
	u->extra = tfm_calloc((size_t)m + 1, sizeof *u->extra);
	u->extra_len = tfm_calloc((size_t)m + 1, sizeof *u->extra_len);
	u->extra_score = tfm_calloc((size_t)m + 1, sizeof *u->extra_score);
	if (!u->extra || !u->extra_len || !u->extra_score)
		return TFM_E_NOMEM;
	if ((st = tfm_gguf_get_arr_f32(g, skey, u->extra_score, m)))
		return st;
	size_t total = 1, off = 0;
	for (int64_t k = 0; k < m; k++) {
		const char *p;
		size_t n;
		if ((st = tfm_gguf_get_arr_str(g, key, k, &p, &n)))
			return st;
		total += n + 1;
	}
	if (!(u->extra_arena = tfm_malloc(total)))
		return TFM_E_NOMEM;
	for (int64_t k = 0; k < m; k++) {
		const char *p;
		size_t n;
		tfm_gguf_get_arr_str(g, key, k, &p, &n);
		memcpy(u->extra_arena + off, p, n);
		u->extra_arena[off + n] = 0;
		u->extra[k] = u->extra_arena + off;
		u->extra_len[k] = (uint32_t)n;
		off += n + 1;
	}
	u->n_extra = m;
	return TFM_OK;
}

/* A charsmap key (a byte array; empty: none) into u. */
static int charsmap_from(struct tfm_ugm *u, const struct tfm_gguf *g, const char *key)
{
	const void *data;
	int64_t n;
	int et, st;
	if (tfm_gguf_find(g, key) < 0)
		return TFM_OK;
	if ((st = tfm_gguf_get_arr(g, key, &et, &n, &data)))
		return st;
	if (et != TFM_GGUF_UINT8 && et != TFM_GGUF_INT8)
		return tfm_seterr(TFM_E_FORMAT, "%s is not a byte array", key);
	if (n > 0) {
		if ((st = tfm_charsmap_init(&u->cmap, data, (size_t)n)))
			return st;
		u->has_cmap = 1;
	}
	return TFM_OK;
}

/* Marian's target model (tfm.tok.target_*): target.spm's scores over the
 * vocabulary, its extra pieces, and its normalizer, which is the source
 * model's but for the keys given.  The unknown-run lookup and language
 * codes are the source model's (MarianTokenizer applies both to targets). */
int tfm_ugm_target_from_gguf(struct tfm_tokenizer *t, const struct tfm_ugm *src,
			     const struct tfm_gguf *g, struct tfm_ugm **out)
{
	const char *key = "tfm.tok.target_scores";
	int64_t i = tfm_gguf_find(g, key);
	int st;
	if (src->hf)
		return tfm_seterr(TFM_E_FORMAT, "%s needs SentencePiece's normalizer (it is not "
				  "written beside tfm.tok.normalizer)", key);
	if (tfm_gguf_kv_type(g, i) != TFM_GGUF_ARRAY || tfm_gguf_arr_type(g, i) != TFM_GGUF_FLOAT32 ||
	    tfm_gguf_arr_n(g, i) != t->n_vocab)
		return tfm_seterr(TFM_E_FORMAT, "%s is not a float array of one score per token", key);
	struct tfm_ugm *u = tfm_calloc(1, sizeof *u);
	if (!u)
		return TFM_E_NOMEM;
	*out = u;
	if (!(u->score = tfm_malloc((size_t)(t->n_vocab + 1) * sizeof *u->score)))
		return TFM_E_NOMEM;
	if ((st = tfm_gguf_get_arr_f32(g, key, u->score, t->n_vocab)))
		return st;
	for (int64_t k = 0; k < t->n_vocab; k++)
		if (isnan(u->score[k]) || u->score[k] == INFINITY)
			return tfm_seterr(TFM_E_FORMAT, "%s: token %lld has score %g", key,
					  (long long)k, u->score[k]);
	const char *cm = "tfm.tok.target_charsmap";
	if ((st = charsmap_from(u, g, tfm_gguf_find(g, cm) >= 0 ? cm
					      : "tokenizer.ggml.precompiled_charsmap")))
		return st;
	u->add_prefix = gguf_bool(g, "tfm.tok.target_add_space_prefix", src->add_prefix);
	u->remove_ws = gguf_bool(g, "tfm.tok.target_remove_extra_whitespaces", src->remove_ws);
	u->byte_fallback = src->byte_fallback;
	u->unk_lookup = src->unk_lookup;
	u->lang_code = src->lang_code;
	if ((st = extra_pieces(t, u, g, "tfm.tok.target_extra_pieces",
			       "tfm.tok.target_extra_scores")))
		return st;
	return tfm_ugm_build(t, u);
}

int tfm_ugm_from_gguf(struct tfm_tokenizer *t, const struct tfm_gguf *g)
{
	struct tfm_ugm *u = tfm_calloc(1, sizeof *u);
	int st = TFM_OK;
	if (!u)
		return TFM_E_NOMEM;
	t->ugm = u;
	if ((st = charsmap_from(u, g, "tokenizer.ggml.precompiled_charsmap")))
		return st;
	u->byte_fallback = gguf_bool(g, "tfm.tok.byte_fallback", 0);
	const char *nj = tfm_gguf_get_str_or(g, "tfm.tok.normalizer", NULL);
	const char *pj = tfm_gguf_get_str_or(g, "tfm.tok.pre_tokenizer", NULL);
	if (nj || pj) {
		if (!nj || !pj)
			return tfm_seterr(TFM_E_FORMAT, "unigram: tfm.tok.normalizer and "
					  "tfm.tok.pre_tokenizer go together");
		if ((st = tfm_ugm_parse_normalizer(u, nj, strlen(nj))) ||
		    (st = tfm_ugm_parse_pre_tokenizer(u, pj, strlen(pj))))
			return st;
	} else {
		/* SentencePiece's normalizer, as llama.cpp's converter describes it */
		u->add_prefix = gguf_bool(g, "tokenizer.ggml.add_space_prefix", 1);
		u->remove_ws = gguf_bool(g, "tokenizer.ggml.remove_extra_whitespaces", 1);
		if (!gguf_bool(g, "tokenizer.ggml.escape_whitespaces", 1))
			return tfm_seterr(TFM_E_UNSUPPORTED, "unigram: escape_whitespaces false is "
					  "not supported");
		if (gguf_bool(g, "tokenizer.ggml.treat_whitespace_as_suffix", 0))
			return tfm_seterr(TFM_E_UNSUPPORTED, "unigram: "
					  "treat_whitespace_as_suffix is not supported");
	}
	u->unk_lookup = gguf_bool(g, "tfm.tok.unk_lookup", 0);
	u->lang_code = gguf_bool(g, "tfm.tok.lang_code", 0);
	if ((st = unmatched_ids(t, u, g)) ||
	    (st = extra_pieces(t, u, g, "tfm.tok.extra_pieces", "tfm.tok.extra_scores")) ||
	    (st = tfm_ugm_build(t, u)))
		return st;
	/* separate vocabularies: the target tokenizer's (tokenizer.c) */
	if (tfm_gguf_find(g, "tfm.tok.target_scores") >= 0 &&
	    tfm_gguf_find(g, "tfm.tok.target_tokens") < 0)
		return tfm_ugm_target_from_gguf(t, t->ugm, g, &t->ugm_target);
	return TFM_OK;
}
