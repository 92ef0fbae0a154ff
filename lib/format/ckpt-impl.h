/* ckpt-impl.h: what the checkpoint readers share inside libtfm (not
 * installed): building a tfm_ckpt (tensors, side files, buffers it owns),
 * reading archive members into memory, and each format's entry point. */
#ifndef TFM_CKPT_IMPL_H
#define TFM_CKPT_IMPL_H

#include "tfm.h"

/* A new, empty checkpoint for source (copied) in the given format. */
int tfm_ckpt_new(struct tfm_ckpt **out, const char *source, const char *format);
/* The checkpoint takes ownership: a blob is closed, a buffer freed, at
 * tfm_ckpt_close.  On failure the blob/buffer is released at once. */
int tfm_ckpt_keep_blob(struct tfm_ckpt *c, struct tfm_blob *b);
int tfm_ckpt_keep_buf(struct tfm_ckpt *c, void *p, size_t size); /* counts bytes_copied */
/* Add a tensor: shape in torch order (outermost first), n_dims <= 4; nbytes
 * must equal product(shape) * element size.  Duplicate names are an error. */
int tfm_ckpt_add_tensor(struct tfm_ckpt *c, const char *name, int type, int n_dims,
			const int64_t *shape, const void *data, size_t nbytes);
/* Add a side file (the bytes are copied). */
int tfm_ckpt_add_file(struct tfm_ckpt *c, const char *name, const void *data, size_t size);
/* Known non-weight buffers (rotary inv_freq, position_ids, token_type_ids,
 * gpt2's attention mask attn.bias / attn.masked_bias): their integer or
 * bool dtypes are skipped instead of rejected. */
int tfm_ckpt_is_buffer(const char *name);

/* Archive members read into memory (libarchive streams: no random access,
 * so a member's bytes are copied out).  want(name, ctx) says which members
 * to read; the others are listed with data NULL.  Names lose a leading "./". */
struct tfm_ckpt_member {
	char *name;
	uint8_t *data;   /* [size], malloc'd, or NULL when not read */
	size_t size;
};
int tfm_ckpt_archive_read(const uint8_t *data, size_t size, const char *aname,
			  int (*want)(const char *name, void *ctx), void *ctx,
			  struct tfm_ckpt_member **out, int *n_out);
void tfm_ckpt_members_free(struct tfm_ckpt_member *m, int n);
/* A plain tar or a zip of stored entries, read in place: members point into
 * data (never freed; data must outlive them).  TFM_OK, 1 when the layout is
 * not one of those (libarchive must read it), or TFM_E_NOMEM.  Free with
 * tfm_ckpt_members_unmap (names only). */
int tfm_ckpt_archive_map(const uint8_t *data, size_t size, struct tfm_ckpt_member **out,
			 int *n_out);
void tfm_ckpt_members_unmap(struct tfm_ckpt_member *m, int n);

/* Format readers (each fills c; c->source names the input for messages).
 * Tensors may point into data, which must outlive c. */
int tfm_pytorch_parse(struct tfm_ckpt *c, const uint8_t *data, size_t size, const char *name);
int tfm_pytorch_bid(const struct tfm_ckpt_member *m, int n); /* a torch zip? */
int tfm_hf_open_dir(struct tfm_ckpt *c, const char *dir);
/* The directory's config.json and side files only (no weights). */
int tfm_hf_open_config(struct tfm_ckpt *c, const char *dir);
/* names: the archive's members; mapped: their data is all there (in place),
 * otherwise only names are and libarchive reads what is needed. */
int tfm_hf_open_archive(struct tfm_ckpt *c, const uint8_t *data, size_t size,
			const struct tfm_ckpt_member *names, int n_names, int mapped);
/* Side files and config.json beside a lone weights file, when present. */
int tfm_hf_load_beside(struct tfm_ckpt *c, const char *path);
int tfm_llama2c_bid(const uint8_t *data, size_t size);
int tfm_llama2c_parse(struct tfm_ckpt *c, const uint8_t *data, size_t size);
int tfm_rwkvcpp_bid(const uint8_t *data, size_t size);   /* the 'ggmf' magic */
int tfm_rwkvcpp_parse(struct tfm_ckpt *c, const uint8_t *data, size_t size);

/* The restricted unpickler's result: the tensors of a state dict. */
enum { TFM_PK_MAXDIMS = 8 };
struct tfm_pickle_tensor {
	char *name;
	char *storage_key;    /* the data/<key> member */
	const char *storage;  /* "FloatStorage", ... */
	int64_t storage_numel;
	int64_t offset;       /* elements */
	int n_dims;
	int64_t size[TFM_PK_MAXDIMS], stride[TFM_PK_MAXDIMS]; /* torch order */
};
int tfm_pickle_state_dict(const uint8_t *data, size_t size, const char *name,
			  struct tfm_pickle_tensor **out, int64_t *n_out);
void tfm_pickle_tensors_free(struct tfm_pickle_tensor *t, int64_t n);
/* The tfm type of a storage ("FloatStorage" -> F32), or -1. */
int tfm_pickle_storage_type(const char *storage);

#endif
