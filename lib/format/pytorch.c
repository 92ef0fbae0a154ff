/* pytorch.c: PyTorch zip checkpoints (torch.save since 1.6): <prefix>/data.pkl
 * (the state dict, read by the restricted unpickler), <prefix>/data/<key>
 * (raw storages, little-endian), <prefix>/version.  Storages of torch's own
 * zips (stored, aligned) point into the input; other zips are read with
 * libarchive from memory, and then the storages are copied out. */
#include "format/ckpt-impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *s)
{
	const char *sl = strrchr(s, '/');
	return sl ? sl + 1 : s;
}

/* Is this member <prefix>/data.pkl? */
static int is_data_pkl(const char *name)
{
	return !strcmp(base_name(name), "data.pkl");
}

int tfm_pytorch_bid(const struct tfm_ckpt_member *m, int n)
{
	int pkl = 0;
	for (int i = 0; i < n; i++) {
		if (!strcmp(base_name(m[i].name), "config.json"))
			return 0;  /* a Hugging Face archive that may hold a .bin */
		pkl |= is_data_pkl(m[i].name);
	}
	return pkl;
}

static const struct tfm_ckpt_member *member(const struct tfm_ckpt_member *m, int n,
					    const char *prefix, const char *key)
{
	size_t pl = strlen(prefix);
	for (int i = 0; i < n; i++) {
		const char *nm = m[i].name;
		if (!strncmp(nm, prefix, pl) && !strncmp(nm + pl, "data/", 5) &&
		    !strcmp(nm + pl + 5, key))
			return &m[i];
	}
	return NULL;
}

static size_t storage_elem(const char *storage)
{
	static const struct { const char *name; size_t size; } t[] = {
		{ "FloatStorage", 4 }, { "HalfStorage", 2 }, { "BFloat16Storage", 2 },
		{ "DoubleStorage", 8 }, { "LongStorage", 8 }, { "IntStorage", 4 },
		{ "ShortStorage", 2 }, { "CharStorage", 1 }, { "ByteStorage", 1 },
		{ "BoolStorage", 1 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(storage, t[i].name))
			return t[i].size;
	return 0;
}

static int add_one(struct tfm_ckpt *c, const char *name, const struct tfm_pickle_tensor *t,
		   const struct tfm_ckpt_member *m, int n, const char *prefix)
{
	int type = tfm_pickle_storage_type(t->storage);
	size_t es = storage_elem(t->storage);
	if (type < 0) {
		if (tfm_ckpt_is_buffer(t->name)) {
			/* a buffer, not a weight (position ids, gpt2's causal mask):
			 * models rebuild it, so it is not carried */
			tfm_log(TFM_LOG_DEBUG, "%s: skipping buffer %s (%s)", name, t->name,
				t->storage);
			return TFM_OK;
		}
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s has storage %s (tfm reads "
				  "float32, float16 and bfloat16)", name, t->name, t->storage);
	}
	const struct tfm_ckpt_member *s = member(m, n, prefix, t->storage_key);
	if (!s || !s->data)
		return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: storage data/%s is missing", name,
				  t->name, t->storage_key);
	/* contiguous (row-major) only: each stride is the product of the sizes
	 * after it; dimensions of size 1 may have any stride */
	uint64_t numel = 1;
	for (int d = t->n_dims - 1; d >= 0; d--) {
		if (t->size[d] != 1 && (uint64_t)t->stride[d] != numel)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s is not contiguous "
					  "(save it after .contiguous())", name, t->name);
		if (__builtin_mul_overflow(numel, (uint64_t)t->size[d], &numel))
			return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: bad size", name, t->name);
	}
	uint64_t end, have = s->size / es;
	if (__builtin_add_overflow((uint64_t)t->offset, numel, &end) || end > have ||
	    end > (uint64_t)t->storage_numel)
		return tfm_seterr(TFM_E_FORMAT, "%s: tensor %s: elements [%lld, %llu) outside its "
				  "storage of %llu", name, t->name, (long long)t->offset,
				  (unsigned long long)end, (unsigned long long)have);
	if (t->n_dims > 4)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: tensor %s has %d dimensions (at most 4)",
				  name, t->name, t->n_dims);
	return tfm_ckpt_add_tensor(c, t->name, type, t->n_dims, t->size,
				   s->data + (size_t)t->offset * es, (size_t)numel * es);
}

/* Storages read in place must be aligned for their elements (torch aligns
 * its records to 64 bytes); other zips are copied out instead. */
static int storages_aligned(const struct tfm_ckpt_member *m, int n)
{
	for (int i = 0; i < n; i++)
		if (strstr(m[i].name, "/data/") && ((uintptr_t)m[i].data & 7))
			return 0;
	return 1;
}

static int want_all(const char *name, void *ctx)
{
	return 1;
}

int tfm_pytorch_parse(struct tfm_ckpt *c, const uint8_t *data, size_t size, const char *name)
{
	struct tfm_ckpt_member *m = NULL;
	struct tfm_pickle_tensor *t = NULL;
	int64_t nt = 0;
	int n = 0, st;
	if (!name)
		name = c->source;
	if (size >= 2 && data[0] == 0x80 && data[1] <= 5)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: a bare pickle (PyTorch before 1.6?): "
				  "re-save it with torch.save(), which writes a zip", name);
	if (size < 4 || memcmp(data, "PK\x03\x04", 4))
		return tfm_seterr(TFM_E_FORMAT, "%s: not a PyTorch zip checkpoint", name);
	/* torch's own zips (stored, aligned) are read in place */
	int borrowed = (st = tfm_ckpt_archive_map(data, size, &m, &n)) == TFM_OK;
	if (st < 0)
		return st;
	if (borrowed && !storages_aligned(m, n)) {
		tfm_ckpt_members_unmap(m, n);
		m = NULL;
		n = 0;
		borrowed = 0;
	}
	if (!borrowed) {
		tfm_log(TFM_LOG_DEBUG, "%s: not a stored, aligned zip: copying through libarchive",
			name);
		if ((st = tfm_ckpt_archive_read(data, size, name, want_all, NULL, &m, &n)))
			return st;
	}
	const struct tfm_ckpt_member *pkl = NULL;
	for (int i = 0; i < n; i++) {
		if (is_data_pkl(m[i].name) && (!pkl || strlen(m[i].name) < strlen(pkl->name)))
			pkl = &m[i];
		/* torch writes "little" here; storages are raw bytes in that order */
		if (!strcmp(base_name(m[i].name), "byteorder") && m[i].size >= 3 &&
		    !memcmp(m[i].data, "big", 3)) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: big-endian storages", name);
			goto out;
		}
	}
	if (!pkl) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: no data.pkl in the zip", name);
		goto out;
	}
	char prefix[1024];
	size_t pl = strlen(pkl->name) - strlen("data.pkl");
	if (pl >= sizeof prefix) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: member name too long", name);
		goto out;
	}
	memcpy(prefix, pkl->name, pl);
	prefix[pl] = 0;
	if ((st = tfm_pickle_state_dict(pkl->data, pkl->size, name, &t, &nt)))
		goto out;
	for (int64_t i = 0; i < nt; i++)
		if ((st = add_one(c, name, &t[i], m, n, prefix)))
			goto out;
	if (!nt)
		tfm_log(TFM_LOG_WARN, "%s: the pickle holds no tensors", name);
	/* the checkpoint owns the copied storages now: tensors point into them */
	for (int i = 0; i < n && !borrowed; i++) {
		if (!m[i].data)
			continue;
		if (st)
			free(m[i].data);
		else
			st = tfm_ckpt_keep_buf(c, m[i].data, m[i].size);
		m[i].data = NULL;
	}
out:
	tfm_pickle_tensors_free(t, nt);
	if (borrowed)
		tfm_ckpt_members_unmap(m, n);
	else
		tfm_ckpt_members_free(m, n);
	return st;
}
