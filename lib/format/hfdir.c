/* hfdir.c: a Hugging Face model: config.json (required), the weights
 * (model.safetensors, a sharded model.safetensors.index.json, or the same for
 * pytorch_model.bin) and the tokenizer files beside them; from a directory
 * (files mmapped: tensors point into the maps) or from an archive (.tar,
 * .tar.gz, .tar.zst, .zip, .tar.xz) without unpacking to disk: a plain tar
 * or stored zip in place (archmap.c), others with libarchive, which streams
 * (no random access), so the members needed are copied into memory. */
#include "format/ckpt-impl.h"
#include "format/config-json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Side files carried into c->files when present.  T5 and ALBERT name their
 * SentencePiece model spiece.model, XLM-R and mBART sentencepiece.bpe.model;
 * Marian has two, source.spm and target.spm, beside vocab.json (and
 * target_vocab.json with separate vocabularies); DeBERTa spm.model. */
static const char *const side_files[] = {
	"tokenizer.json", "tokenizer.model", "vocab.txt", "merges.txt", "vocab.json",
	"tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
	"added_tokens.json", "spiece.model", "sentencepiece.bpe.model", "chat_template.jinja",
	"source.spm", "target.spm", "target_vocab.json", /* Marian */
	"rwkv_vocab_v20230424.txt", /* RWKV world models */
	"spm.model", /* DeBERTa-v2 / v3 (slow-import.c) */
	"modules.json", "sentence_bert_config.json", "1_Pooling/config.json", /* st-import.c */
};
#define N_SIDE (sizeof side_files / sizeof side_files[0])

/* Where the files come from: a directory, or archive members under root. */
struct hf_src {
	struct tfm_ckpt *c;
	const char *dir;
	const struct tfm_ckpt_member *m;
	int n;
	const char *root;   /* "" or "dir/" */
	const char *label;  /* for messages */
};

/* TFM_OK with the bytes, 1 when the file is absent, or an error.  keep: the
 * bytes must live as long as the checkpoint (weights); otherwise the caller
 * copies them and calls src_put. */
static int src_get(struct hf_src *s, const char *name, int keep, const uint8_t **d,
		   size_t *n, struct tfm_blob *tmp)
{
	if (s->dir) {
		char *p = NULL;
		if (asprintf(&p, "%s/%s", s->dir, name) < 0)
			return tfm_seterr(TFM_E_NOMEM, "out of memory");
		if (access(p, F_OK)) {
			free(p);
			return 1;
		}
		int st = tfm_blob_open(tmp, p);
		free(p);
		if (st)
			return st;
		*d = tmp->data;
		*n = tmp->size;
		if (keep) {
			struct tfm_blob b = *tmp;
			memset(tmp, 0, sizeof *tmp);
			if ((st = tfm_ckpt_keep_blob(s->c, &b)))
				return st;
		}
		return TFM_OK;
	}
	size_t rl = strlen(s->root);
	for (int i = 0; i < s->n; i++) {
		const char *mn = s->m[i].name;
		if (s->m[i].data && !strncmp(mn, s->root, rl) && !strcmp(mn + rl, name)) {
			*d = s->m[i].data;
			*n = s->m[i].size;
			return TFM_OK;
		}
	}
	return 1;
}

static void src_put(struct hf_src *s, struct tfm_blob *tmp)
{
	if (s->dir && tmp->name)
		tfm_blob_close(tmp);
	memset(tmp, 0, sizeof *tmp);
}

static int load_config_and_side(struct hf_src *s, int required)
{
	struct tfm_ckpt *c = s->c;
	struct tfm_blob tmp = { 0 };
	const uint8_t *d;
	size_t n;
	int st = src_get(s, "config.json", 0, &d, &n, &tmp);
	if (st == 1) {
		if (required)
			return tfm_seterr(TFM_E_FORMAT, "%s: no config.json", s->label);
	} else if (st) {
		return st;
	} else if (!c->config) {
		json_error_t je;
		c->config = tfm_config_json(d, n, &je);
		src_put(s, &tmp);
		if (!c->config || !json_is_object(c->config))
			return tfm_seterr(TFM_E_FORMAT, "%s: config.json: %s", s->label,
					  c->config ? "not a JSON object" : je.text);
	}
	src_put(s, &tmp);
	for (size_t i = 0; i < N_SIDE; i++) {
		st = src_get(s, side_files[i], 0, &d, &n, &tmp);
		if (st == 1)
			continue;
		if (st)
			return st;
		st = tfm_ckpt_add_file(c, side_files[i], d, n);
		src_put(s, &tmp);
		if (st)
			return st;
	}
	return TFM_OK;
}

static int parse_weights(struct hf_src *s, const char *file, const uint8_t *d, size_t n)
{
	char label[512];
	snprintf(label, sizeof label, "%s/%s", s->label, file);
	size_t fl = strlen(file);
	if (fl > 12 && !strcmp(file + fl - 12, ".safetensors"))
		return tfm_safetensors_parse(s->c, d, n, label);
	return tfm_pytorch_parse(s->c, d, n, label);
}

/* A shard name from an index must name a file beside it. */
static int safe_name(const char *f)
{
	return f[0] && f[0] != '/' && !strstr(f, "..") && !strchr(f, '/');
}

static int load_index(struct hf_src *s, const char *iname, const uint8_t *d, size_t n)
{
	struct tfm_ckpt *c = s->c;
	json_error_t je;
	json_t *idx = json_loadb((const char *)d, n, 0, &je), *wm, *v;
	json_t *done = json_object();
	int st = TFM_OK;
	const char *key;
	if (!done) {
		st = tfm_seterr(TFM_E_NOMEM, "out of memory");
		goto out;
	}
	if (!idx || !json_is_object(wm = json_object_get(idx, "weight_map"))) {
		st = tfm_seterr(TFM_E_FORMAT, "%s/%s: %s", s->label, iname,
				idx ? "no weight_map object" : je.text);
		goto out;
	}
	json_object_foreach(wm, key, v) {
		const char *f = json_string_value(v);
		if (!f || !safe_name(f)) {
			st = tfm_seterr(TFM_E_FORMAT, "%s/%s: tensor %s: bad shard name", s->label,
					iname, key);
			goto out;
		}
		if (json_object_get(done, f))
			continue;
		json_object_set_new(done, f, json_true());
		const uint8_t *sd;
		size_t sn;
		struct tfm_blob tmp = { 0 };
		st = src_get(s, f, 1, &sd, &sn, &tmp);
		if (st == 1)
			st = tfm_seterr(TFM_E_FORMAT, "%s: shard %s (named by %s) is missing",
					s->label, f, iname);
		if (st || (st = parse_weights(s, f, sd, sn)))
			goto out;
	}
	/* every tensor the index names must have been in its shard */
	json_object_foreach(wm, key, v) {
		if (!tfm_ckpt_find(c, key) && !tfm_ckpt_is_buffer(key)) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: %s names tensor %s in %s, which lacks it",
					s->label, iname, key, json_string_value(v));
			goto out;
		}
	}
out:
	json_decref(idx);
	json_decref(done);
	return st;
}

/* In transformers' order of preference: safetensors before pickles, a
 * single file before a sharded index. */
static const char *const weight_files[] = {
	"model.safetensors", "model.safetensors.index.json",
	"pytorch_model.bin", "pytorch_model.bin.index.json",
};

static int load_hf(struct hf_src *s)
{
	int st = load_config_and_side(s, 1);
	if (st)
		return st;
	for (int i = 0; i < 4; i++) {
		const uint8_t *d;
		size_t n;
		struct tfm_blob tmp = { 0 };
		int index = strstr(weight_files[i], ".index.json") != NULL;
		st = src_get(s, weight_files[i], !index, &d, &n, &tmp);
		if (st == 1)
			continue;
		if (st)
			return st;
		if (index) {
			st = load_index(s, weight_files[i], d, n);
			src_put(s, &tmp);
			return st;
		}
		return parse_weights(s, weight_files[i], d, n);
	}
	return tfm_seterr(TFM_E_FORMAT, "%s: no weights (model.safetensors, "
			  "model.safetensors.index.json, pytorch_model.bin or its index)", s->label);
}

int tfm_hf_open_dir(struct tfm_ckpt *c, const char *dir)
{
	struct hf_src s = { .c = c, .dir = dir, .label = c->source };
	return load_hf(&s);
}

int tfm_hf_open_config(struct tfm_ckpt *c, const char *dir)
{
	struct hf_src s = { .c = c, .dir = dir, .label = c->source };
	return load_config_and_side(&s, 1);
}

int tfm_hf_load_beside(struct tfm_ckpt *c, const char *path)
{
	if (!path || !strcmp(path, "-"))
		return TFM_OK;
	char *dir = tfm_strdup(path);
	if (!dir)
		return TFM_E_NOMEM;
	char *sl = strrchr(dir, '/');
	if (sl)
		sl[sl == dir] = 0;  /* "/x" -> "/" */
	else
		strcpy(dir, ".");
	struct hf_src s = { .c = c, .dir = dir, .label = dir };
	int st = load_config_and_side(&s, 0);
	free(dir);
	return st;
}

/* ---- archives ---- */

/* Which members to read: config.json, the side files and the weights file
 * under root; or, on the second pass, only the shards an index names. */
struct want_ctx {
	const char *root;
	const char *weights;  /* one of weight_files[] */
	json_t *shards;       /* shard name -> true, for the second pass */
};

static int want_member(const char *name, void *ctx)
{
	struct want_ctx *w = ctx;
	size_t rl = strlen(w->root);
	if (strncmp(name, w->root, rl) || strchr(name + rl, '/'))
		return 0;
	const char *b = name + rl;
	if (w->shards)
		return json_object_get(w->shards, b) != NULL;
	if (!strcmp(b, "config.json") || (w->weights && !strcmp(b, w->weights)))
		return 1;
	for (size_t i = 0; i < N_SIDE; i++)
		if (!strcmp(b, side_files[i]))
			return 1;
	return 0;
}

static const struct tfm_ckpt_member *find(const struct tfm_ckpt_member *m, int n,
					  const char *root, const char *name)
{
	size_t rl = strlen(root);
	for (int i = 0; i < n; i++)
		if (!strncmp(m[i].name, root, rl) && !strcmp(m[i].name + rl, name))
			return &m[i];
	return NULL;
}

/* The shards an index names, as a set; NULL after an error. */
static json_t *index_shards(const struct tfm_ckpt_member *ix, const char *label)
{
	json_error_t je;
	json_t *idx = json_loadb((const char *)ix->data, ix->size, 0, &je), *wm, *v;
	json_t *set = json_object();
	const char *key;
	if (!idx || !set || !json_is_object(wm = json_object_get(idx, "weight_map"))) {
		tfm_seterr(TFM_E_FORMAT, "%s/%s: %s", label, ix->name,
			   idx ? "no weight_map object" : je.text);
		json_decref(idx);
		json_decref(set);
		return NULL;
	}
	json_object_foreach(wm, key, v)
		if (json_is_string(v))
			json_object_set_new(set, json_string_value(v), json_true());
	json_decref(idx);
	return set;
}

/* Append b to a (both member lists); b is consumed. */
static int join(struct tfm_ckpt_member **a, int *na, struct tfm_ckpt_member *b, int nb)
{
	struct tfm_ckpt_member *m = tfm_realloc(*a, (size_t)(*na + nb + 1) * sizeof *m);
	if (!m) {
		tfm_ckpt_members_free(b, nb);
		return TFM_E_NOMEM;
	}
	memcpy(m + *na, b, (size_t)nb * sizeof *m);
	free(b);
	*a = m;
	*na += nb;
	return TFM_OK;
}

int tfm_hf_open_archive(struct tfm_ckpt *c, const uint8_t *data, size_t size,
			const struct tfm_ckpt_member *names, int n_names, int mapped)
{
	/* the files sit at the top level or inside one directory */
	const char *cfg = NULL;
	for (int i = 0; i < n_names; i++) {
		const char *nm = names[i].name, *sl = strchr(nm, '/');
		if (!strcmp(nm, "config.json") ||
		    (sl && sl > nm && !strcmp(sl + 1, "config.json"))) {
			if (!cfg || strlen(nm) < strlen(cfg))
				cfg = nm;
		}
	}
	if (!cfg)
		return tfm_seterr(TFM_E_FORMAT, "%s: archive without config.json (at the top "
				  "level or in one directory)", c->source);
	char root[4096];
	size_t rl = strlen(cfg) - strlen("config.json");
	if (rl >= sizeof root)
		return tfm_seterr(TFM_E_FORMAT, "%s: path too long", c->source);
	memcpy(root, cfg, rl);
	root[rl] = 0;
	if (mapped) {  /* every member is in place: nothing to read or copy */
		struct hf_src s = { .c = c, .m = names, .n = n_names, .root = root,
				    .label = c->source };
		return load_hf(&s);
	}
	struct want_ctx w = { root, NULL, NULL };
	for (int i = 0; i < 4 && !w.weights; i++)
		if (find(names, n_names, root, weight_files[i]))
			w.weights = weight_files[i];
	/* libarchive streams: read what we need in one pass, and the shards an
	 * index names in a second one (never every file in the archive) */
	struct tfm_ckpt_member *m = NULL, *m2 = NULL;
	int n = 0, n2 = 0;
	int st = tfm_ckpt_archive_read(data, size, c->source, want_member, &w, &m, &n);
	if (st)
		return st;
	const struct tfm_ckpt_member *ix;
	if (w.weights && strstr(w.weights, ".index.json") &&
	    (ix = find(m, n, root, w.weights)) && ix->data) {
		if (!(w.shards = index_shards(ix, c->source)))
			st = TFM_E_FORMAT;
		else if (!(st = tfm_ckpt_archive_read(data, size, c->source, want_member, &w,
						      &m2, &n2)))
			st = join(&m, &n, m2, n2);
		json_decref(w.shards);
	}
	/* the checkpoint owns the member bytes from here on: tensors point there */
	for (int i = 0; i < n; i++) {
		if (!m[i].data)
			continue;
		if (st)
			free(m[i].data);
		else
			st = tfm_ckpt_keep_buf(c, m[i].data, m[i].size);  /* frees it on failure */
	}
	if (!st) {
		struct hf_src s = { .c = c, .m = m, .n = n, .root = root, .label = c->source };
		st = load_hf(&s);
	}
	for (int i = 0; i < n; i++)
		free(m[i].name);
	free(m);
	return st;
}
