/* ckpt.c: opening any checkpoint.  Each format "bids" on the input (a
 * directory; archive magics; a safetensors header; a llama2.c header) and
 * the winner fills one neutral tfm_ckpt.  Also the pieces the readers share:
 * adding tensors and side files, owning maps and buffers, archive members. */
#include "format/ckpt-impl.h"
#include "format/config-json.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>

struct ckpt_priv {
	struct tfm_blob **blobs;  /* inputs kept open: tensor data points into them */
	int n_blobs, cap_blobs;
	void **bufs;              /* malloc'd buffers tensor data points into */
	int n_bufs, cap_bufs;
	int64_t cap_tensors;
	int cap_files;
	int64_t *hash;            /* [hash_cap]: tensor index + 1, 0 = empty; open addressing,
	                             so that find stays fast with 10^5 tensors (large MoE) */
	int64_t hash_cap;         /* a power of two, at least twice n_tensors */
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static void hash_insert(struct ckpt_priv *p, const char *name, int64_t i)
{
	uint64_t m = (uint64_t)p->hash_cap - 1, h = fnv1a(name) & m;
	while (p->hash[h])
		h = (h + 1) & m;
	p->hash[h] = i + 1;
}

static int hash_grow(struct tfm_ckpt *c, int64_t need)
{
	struct ckpt_priv *p = c->priv_;
	if (need * 2 <= p->hash_cap)
		return TFM_OK;
	int64_t cap = p->hash_cap ? p->hash_cap : 64;
	while (cap < need * 2)
		cap *= 2;
	int64_t *h = tfm_calloc((size_t)cap, sizeof *h);
	if (!h)
		return TFM_E_NOMEM;
	free(p->hash);
	p->hash = h;
	p->hash_cap = cap;
	for (int64_t i = 0; i < c->n_tensors; i++)
		hash_insert(p, c->tensors[i].name, i);
	return TFM_OK;
}

static int grow_int(void **p, int *cap, int need, size_t elem)
{
	int64_t c = *cap;
	int st = tfm_grow(p, &c, need, elem);
	*cap = (int)c;
	return st;
}

int tfm_ckpt_new(struct tfm_ckpt **out, const char *source, const char *format)
{
	struct tfm_ckpt *c = tfm_calloc(1, sizeof *c);
	if (!c)
		return TFM_E_NOMEM;
	c->priv_ = tfm_calloc(1, sizeof(struct ckpt_priv));
	c->source = tfm_strdup(source ? source : "<stdin>");
	c->format = format;
	if (!c->priv_ || !c->source) {
		tfm_ckpt_close(c);
		return TFM_E_NOMEM;
	}
	*out = c;
	return TFM_OK;
}

int tfm_ckpt_keep_blob(struct tfm_ckpt *c, struct tfm_blob *b)
{
	struct ckpt_priv *p = c->priv_;
	struct tfm_blob *nb = NULL;
	if (grow_int((void **)&p->blobs, &p->cap_blobs, p->n_blobs + 1, sizeof *p->blobs) ||
	    !(nb = tfm_malloc(sizeof *nb))) {
		tfm_blob_close(b);
		return TFM_E_NOMEM;
	}
	*nb = *b;  /* the struct moves; the data it points to does not */
	p->blobs[p->n_blobs++] = nb;
	return TFM_OK;
}

int tfm_ckpt_keep_buf(struct tfm_ckpt *c, void *buf, size_t size)
{
	struct ckpt_priv *p = c->priv_;
	if (grow_int((void **)&p->bufs, &p->cap_bufs, p->n_bufs + 1, sizeof *p->bufs)) {
		free(buf);
		return TFM_E_NOMEM;
	}
	p->bufs[p->n_bufs++] = buf;
	c->bytes_copied += size;
	return TFM_OK;
}

static size_t elem_size(int type)
{
	switch (type) {
	case TFM_TYPE_F32: return 4;
	case TFM_TYPE_F16: return 2;
	case TFM_TYPE_BF16: return 2;
	}
	return 0;
}

int tfm_ckpt_add_tensor(struct tfm_ckpt *c, const char *name, int type, int n_dims,
			const int64_t *shape, const void *data, size_t nbytes)
{
	struct ckpt_priv *p = c->priv_;
	size_t es = elem_size(type);
	if (!es)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s: type #%d is not supported "
				  "(only f32, f16, bf16)", c->source, name, type);
	if (n_dims < 0 || n_dims > 4)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s has %d dimensions (at most 4)",
				  c->source, name, n_dims);
	uint64_t n = 1;
	for (int i = 0; i < n_dims; i++) {
		if (shape[i] < 0 || __builtin_mul_overflow(n, (uint64_t)shape[i], &n))
			return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: bad shape", c->source, name);
	}
	uint64_t want;
	if (__builtin_mul_overflow(n, (uint64_t)es, &want) || want != nbytes)
		return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: %zu bytes, its shape needs %llu",
				  c->source, name, nbytes, (unsigned long long)want);
	if (tfm_ckpt_find(c, name))
		return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s appears twice", c->source, name);
	if (tfm_grow((void **)&c->tensors, &p->cap_tensors, c->n_tensors + 1, sizeof *c->tensors) ||
	    hash_grow(c, c->n_tensors + 1))
		return TFM_E_NOMEM;
	struct tfm_ckpt_tensor *t = &c->tensors[c->n_tensors];
	memset(t, 0, sizeof *t);
	if (!(t->name = tfm_strdup(name)))
		return TFM_E_NOMEM;
	t->type = type;
	t->n_dims = n_dims;
	for (int i = 0; i < 4; i++)   /* torch [out, in] -> ggml {in, out}; unused dims 1 */
		t->ne[i] = i < n_dims ? shape[n_dims - 1 - i] : 1;
	t->data = data;
	t->nbytes = nbytes;
	hash_insert(p, t->name, c->n_tensors);
	c->n_tensors++;
	return TFM_OK;
}

int tfm_ckpt_add_file(struct tfm_ckpt *c, const char *name, const void *data, size_t size)
{
	struct ckpt_priv *p = c->priv_;
	if (tfm_ckpt_file(c, name))
		return TFM_OK;  /* the first one found wins */
	if (grow_int((void **)&c->files, &p->cap_files, c->n_files + 1, sizeof *c->files))
		return TFM_E_NOMEM;
	struct tfm_ckpt_file *f = &c->files[c->n_files];
	f->name = tfm_strdup(name);
	f->data = tfm_malloc(size + 1);  /* NUL-terminated for text parsers */
	if (!f->name || !f->data) {
		free(f->name);
		free(f->data);
		return TFM_E_NOMEM;
	}
	if (size)
		memcpy(f->data, data, size);
	f->data[size] = 0;
	f->size = size;
	c->n_files++;
	return TFM_OK;
}

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcmp(s + n - m, suf);
}

/* A suffix match on a whole dotted component: "h.0.attn.bias" has
 * "attn.bias", "c_attn.bias" does not. */
static int ends_with_part(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return ends_with(s, suf) && (n == m || s[n - m - 1] == '.');
}

int tfm_ckpt_is_buffer(const char *name)
{
	return ends_with_part(name, "inv_freq") || ends_with_part(name, "position_ids") ||
	       ends_with_part(name, "token_type_ids") || ends_with_part(name, "attn.bias") ||
	       ends_with_part(name, "attn.masked_bias");
}

const struct tfm_ckpt_tensor *tfm_ckpt_find(const struct tfm_ckpt *c, const char *name)
{
	const struct ckpt_priv *p = c->priv_;
	if (p && p->hash_cap) {
		uint64_t m = (uint64_t)p->hash_cap - 1, h = fnv1a(name) & m;
		for (; p->hash[h]; h = (h + 1) & m)
			if (!strcmp(c->tensors[p->hash[h] - 1].name, name))
				return &c->tensors[p->hash[h] - 1];
		return NULL;
	}
	for (int64_t i = 0; i < c->n_tensors; i++)
		if (!strcmp(c->tensors[i].name, name))
			return &c->tensors[i];
	return NULL;
}

const struct tfm_ckpt_file *tfm_ckpt_file(const struct tfm_ckpt *c, const char *name)
{
	for (int i = 0; i < c->n_files; i++)
		if (!strcmp(c->files[i].name, name))
			return &c->files[i];
	return NULL;
}

void tfm_ckpt_close(struct tfm_ckpt *c)
{
	if (!c)
		return;
	struct ckpt_priv *p = c->priv_;
	for (int64_t i = 0; i < c->n_tensors; i++)
		free(c->tensors[i].name);
	free(c->tensors);
	for (int i = 0; i < c->n_files; i++) {
		free(c->files[i].name);
		free(c->files[i].data);
	}
	free(c->files);
	if (c->config)
		json_decref(c->config);
	if (p) {
		for (int i = 0; i < p->n_blobs; i++) {
			tfm_blob_close(p->blobs[i]);
			free(p->blobs[i]);
		}
		free(p->blobs);
		for (int i = 0; i < p->n_bufs; i++)
			free(p->bufs[i]);
		free(p->bufs);
		free(p->hash);
		free(p);
	}
	free(c->source);
	free(c);
}

/* ---- archive members ---- */

void tfm_ckpt_members_free(struct tfm_ckpt_member *m, int n)
{
	for (int i = 0; i < n; i++) {
		free(m[i].name);
		free(m[i].data);
	}
	free(m);
}

/* What the members of one archive may expand to, together. */
struct expand {
	int64_t in;    /* the archive's bytes */
	size_t max;    /* tfm_expand_cap and the memory limit */
	size_t used;   /* members read so far */
};

static int read_member(struct archive *a, struct archive_entry *e, const char *aname,
		       const char *name, uint8_t **out, size_t *size, struct expand *x)
{
	size_t room = x->max - x->used, *budget = &room;
	/* the header's size is a hint: a lying one must not allocate terabytes;
	 * all members together may expand at most to *budget bytes */
	int64_t hint = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
	size_t cap = hint >= 0 && hint < ((int64_t)1 << 30) ? (size_t)hint + 1 :
		     hint >= 0 ? (size_t)1 << 30 : (size_t)1 << 16, n = 0;
	if (cap > *budget + 1)
		cap = *budget + 1;
	uint8_t *buf = tfm_malloc(cap);
	if (!buf)
		return TFM_E_NOMEM;
	for (;;) {
		if (n == cap) {
			if (n > *budget) {
				free(buf);
				return tfm_adderr(tfm_expand_check(x->in, (int64_t)(x->used + n), aname),
						  "member %s", name);
			}
			size_t nc = cap * 2 > *budget + 1 ? *budget + 1 : cap * 2;
			uint8_t *nb = tfm_realloc(buf, nc);
			if (!nb) {
				free(buf);
				return TFM_E_NOMEM;
			}
			buf = nb;
			cap = nc;
		}
		la_ssize_t r = archive_read_data(a, buf + n, cap - n);
		if (r < 0) {
			int st = tfm_seterr(TFM_E_FORMAT, "%s: %s: %s", aname, name,
					    archive_error_string(a));
			free(buf);
			return st;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	x->used += n;
	*out = buf;
	*size = n;
	return TFM_OK;
}

int tfm_ckpt_archive_read(const uint8_t *data, size_t size, const char *aname,
			  int (*want)(const char *name, void *ctx), void *ctx,
			  struct tfm_ckpt_member **out, int *n_out)
{
	struct tfm_ckpt_member *m = NULL;
	int n = 0, cap = 0, st = TFM_OK;
	struct expand x = { .in = (int64_t)size };
	const char *src;
	int64_t lim = tfm_expand_cap((int64_t)size), mem = tfm_mem_limit(&src);
	if (mem > 0 && mem < lim)
		lim = mem;
	x.max = (uint64_t)lim > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)lim;
	struct archive *a = archive_read_new();
	if (!a)
		return tfm_seterr(TFM_E_NOMEM, "libarchive: out of memory");
	/* the compressions snapshots come in; not filter_all, which may run
	 * external programs for exotic ones */
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_bzip2(a);
	archive_read_support_filter_xz(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_zip(a);
	if (archive_read_open_memory(a, data, size) != ARCHIVE_OK) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: %s", aname, archive_error_string(a));
		goto out;
	}
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: %s", aname, archive_error_string(a));
			goto out;
		}
		if (archive_entry_filetype(e) != AE_IFREG)
			continue;
		const char *nm = archive_entry_pathname(e);
		if (!nm)
			continue;
		while (nm[0] == '.' && nm[1] == '/')
			nm += 2;
		if ((st = grow_int((void **)&m, &cap, n + 1, sizeof *m)))
			goto out;
		memset(&m[n], 0, sizeof m[n]);
		if (!(m[n].name = tfm_strdup(nm))) {
			st = TFM_E_NOMEM;
			goto out;
		}
		n++;
		if (want && want(m[n - 1].name, ctx) &&
		    (st = read_member(a, e, aname, m[n - 1].name, &m[n - 1].data, &m[n - 1].size,
				      &x)))
			goto out;
	}
out:
	archive_read_free(a);
	if (st) {
		tfm_ckpt_members_free(m, n);
		return st;
	}
	*out = m;
	*n_out = n;
	return TFM_OK;
}

/* ---- bidding ---- */

static int is_archive(const uint8_t *d, size_t n)
{
	if (n >= 262 && !memcmp(d + 257, "ustar", 5))
		return 1;
	if (n >= 2 && d[0] == 0x1f && d[1] == 0x8b)
		return 1;
	/* zstd is normally gone already: tfm_blob_open decompresses it */
	if (n >= 4 && d[0] == 0x28 && d[1] == 0xb5 && d[2] == 0x2f && d[3] == 0xfd)
		return 1;
	if (n >= 6 && (!memcmp(d, "BZh", 3) || !memcmp(d, "\xfd" "7zXZ\0", 6)))
		return 1;  /* .tar.bz2, .tar.xz */
	return n >= 4 && !memcmp(d, "PK\x03\x04", 4);
}

static int is_safetensors(const uint8_t *d, size_t n)
{
	if (n < 9)
		return 0;
	uint64_t h;
	memcpy(&h, d, 8);
	return h <= n - 8 && h >= 2 && d[8] == '{';
}

static int open_file(struct tfm_ckpt **out, const char *path, const struct tfm_ckpt_opts *o)
{
	struct tfm_blob b;
	struct tfm_ckpt *c = NULL;
	struct tfm_ckpt_member *names = NULL;
	int n_names = 0, mapped = 0, st = tfm_blob_open(&b, path);
	if (st)
		return st;
	if ((st = tfm_ckpt_new(&c, b.name, NULL))) {
		tfm_blob_close(&b);
		return st;
	}
	if ((st = tfm_ckpt_keep_blob(c, &b)))
		goto out;
	const uint8_t *d = b.data;
	size_t n = b.size;
	if (is_archive(d, n)) {
		/* a plain tar or stored zip is read in place; others stream through
		 * libarchive, listing the names first */
		if ((st = tfm_ckpt_archive_map(d, n, &names, &n_names)) < 0)
			goto out;
		mapped = st == TFM_OK;
		if (!mapped &&
		    (st = tfm_ckpt_archive_read(d, n, c->source, NULL, NULL, &names, &n_names)))
			goto out;
		if (tfm_pytorch_bid(names, n_names)) {
			c->format = "pytorch";
			if (!(st = tfm_pytorch_parse(c, d, n, c->source)))
				st = tfm_hf_load_beside(c, path);
		} else {
			c->format = "hf-archive";
			st = tfm_hf_open_archive(c, d, n, names, n_names, mapped);
		}
	} else if (is_safetensors(d, n) || (path && ends_with(path, ".safetensors"))) {
		c->format = "safetensors";
		if (!(st = tfm_safetensors_parse(c, d, n, c->source)))
			st = tfm_hf_load_beside(c, path);
	} else if (tfm_rwkvcpp_bid(d, n)) {
		c->format = "rwkv.cpp";
		st = tfm_rwkvcpp_parse(c, d, n);
	} else if (tfm_llama2c_bid(d, n)) {
		c->format = "llama2c";
		st = tfm_llama2c_parse(c, d, n);
	} else if (n >= 2 && d[0] == 0x80 && d[1] <= 5) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: a bare pickle (PyTorch before 1.6?): "
				"re-save it with torch.save(), which writes a zip", c->source);
	} else if (n >= 4 && !memcmp(d, "GGUF", 4)) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: unrecognised checkpoint format (a GGUF "
				"file, not a checkpoint)", c->source);
	} else {
		st = tfm_seterr(TFM_E_FORMAT, "%s: unrecognised format (not a GGUF file, Hugging "
				"Face directory or archive, safetensors, PyTorch zip, llama2.c or "
				"rwkv.cpp file)",
				c->source);
	}
out:
	if (mapped)
		tfm_ckpt_members_unmap(names, n_names);
	else
		tfm_ckpt_members_free(names, n_names);
	if (st) {
		tfm_ckpt_close(c);
		return st;
	}
	*out = c;
	return TFM_OK;
}

int tfm_ckpt_open(struct tfm_ckpt **out, const char *path, const struct tfm_ckpt_opts *o)
{
	struct tfm_ckpt *c = NULL;
	int st;
	*out = NULL;
	if (o && o->config_only && path && strcmp(path, "-") && tfm_path_is_dir(path)) {
		if ((st = tfm_ckpt_new(&c, path, "hf-dir")))
			return st;
		st = tfm_hf_open_config(c, path);
	} else if (o && o->config_only) { /* a config.json file */
		json_error_t je;
		struct tfm_blob b;
		if ((st = tfm_blob_open(&b, path)))
			return st;
		if (!(st = tfm_ckpt_new(&c, b.name, "config"))) {
			c->config = tfm_config_json(b.data, b.size, &je);
			if (!json_is_object(c->config))
				st = tfm_seterr(TFM_E_FORMAT, "%s: not a config.json: %s (line %d)",
						c->source, c->config ? "not an object" : je.text,
						je.line);
		}
		tfm_blob_close(&b);
	} else if (path && strcmp(path, "-") && tfm_path_is_dir(path)) {
		if ((st = tfm_ckpt_new(&c, path, "hf-dir")))
			return st;
		st = tfm_hf_open_dir(c, path);
	} else {
		st = open_file(&c, path, o);
	}
	if (st)
		goto fail;
	if (o && o->vocab) {
		struct tfm_blob v;
		if ((st = tfm_blob_open(&v, o->vocab)))
			goto fail;
		/* a llama2.c tokenizer.bin, or RWKV's world vocabulary */
		st = tfm_ckpt_add_file(c, tfm_rwkv_world_probe(v.data, v.size) ?
				       "rwkv_vocab_v20230424.txt" : "tokenizer.bin", v.data, v.size);
		tfm_blob_close(&v);
		if (st)
			goto fail;
	}
	tfm_log(TFM_LOG_DEBUG, "%s: %s checkpoint, %lld tensors, %d side files", c->source,
		c->format, (long long)c->n_tensors, c->n_files);
	*out = c;
	return TFM_OK;
fail:
	tfm_ckpt_close(c);
	return st;
}
