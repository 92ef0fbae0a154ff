/* gguf-impl.h: the body of struct tfm_gguf, shared by gguf-kv.c (values,
 * getters, setters), gguf-read.c (parsing) and gguf-write.c (writing).
 * Every value is owned by the struct; only tensor data of a parsed file
 * points into the caller's bytes. */
#ifndef TFM_GGUF_IMPL_H
#define TFM_GGUF_IMPL_H

#include "tfm.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tfm's GGUF code assumes a little-endian host (GGUF is little-endian)"
#endif

/* Arrays of arrays may nest; a file cannot make us recurse deeper than this. */
#define GGUF_MAX_DEPTH 8

/* One value.  Scalars keep their raw little-endian bytes in raw (the
 * type's width, zero-extended); strings are NUL-terminated copies. */
struct tfm_gguf_val {
	int type;                   /* enum tfm_gguf_type */
	uint64_t raw;               /* scalar bytes (memcpy of the file's bytes) */
	char *str;                  /* STRING: [len + 1], NUL-terminated */
	size_t len;
	/* ARRAY */
	int elem_type;
	int64_t n;
	void *data;                 /* numeric: [n * width] raw bytes */
	size_t *off;                /* string elements: [n + 1] offsets into pool */
	char *pool;                 /* each string followed by a NUL */
	struct tfm_gguf_val *sub;   /* ARRAY elements: [n] values, each an ARRAY */
};

struct gguf_kv {
	char *key;                  /* NUL-terminated copy */
	size_t key_len;
	struct tfm_gguf_val v;
};

struct gguf_tensor {
	struct tfm_gguf_tensor pub; /* pub.name is owned here */
	tfm_gguf_produce_fn produce;
	void *ctx;
};

struct tfm_gguf {
	struct gguf_kv *kv;         /* [n_kv], insertion (or file) order */
	int64_t n_kv, cap_kv;
	struct gguf_tensor *t;      /* [n_t] */
	int64_t n_t, cap_t;
	uint32_t version;           /* of a parsed file; 3 for a new one */
	size_t data_offset;         /* start of the data section (parsed files) */
	char *name;                 /* for messages: the file name */
};

/* Width in bytes of a numeric GGUF type; 0 for STRING, ARRAY and unknowns. */
size_t gguf_type_width(int type);
const char *gguf_type_name(int type);
/* Printable form of a key or name for messages (non-printables as \xNN,
 * cut after about 80 characters).  buf must hold 512 bytes. */
const char *gguf_sane(const char *s, size_t len, char *buf);
void gguf_val_free(struct tfm_gguf_val *v);
int gguf_val_copy(struct tfm_gguf_val *dst, const struct tfm_gguf_val *src);
/* Append a key (taking ownership of v's contents on success and failure). */
int gguf_kv_put(struct tfm_gguf *g, const char *key, size_t key_len, struct tfm_gguf_val *v);
/* The same without looking for an existing key (the reader checks for
 * duplicates once, after sorting). */
int gguf_kv_append(struct tfm_gguf *g, const char *key, size_t key_len, struct tfm_gguf_val *v);

#endif
