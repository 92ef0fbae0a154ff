/* gguf.h: GGUF v3 in memory.  A struct tfm_gguf holds metadata (key/value
 * pairs of every GGUF type, nested arrays included) and tensor infos.  It is
 * either parsed from bytes (tensor data then points into those bytes, which
 * must outlive it) or built up for writing (tensor data given as a pointer or
 * produced on demand by a callback, so a writer streams one tensor at a
 * time).  Every size and offset read from a file is bounds-checked. */
#ifndef TFM_GGUF_H
#define TFM_GGUF_H

#include <stddef.h>
#include <stdint.h>

struct tfm_out;

enum tfm_gguf_type {
	TFM_GGUF_UINT8 = 0, TFM_GGUF_INT8 = 1, TFM_GGUF_UINT16 = 2, TFM_GGUF_INT16 = 3,
	TFM_GGUF_UINT32 = 4, TFM_GGUF_INT32 = 5, TFM_GGUF_FLOAT32 = 6, TFM_GGUF_BOOL = 7,
	TFM_GGUF_STRING = 8, TFM_GGUF_ARRAY = 9, TFM_GGUF_UINT64 = 10, TFM_GGUF_INT64 = 11,
	TFM_GGUF_FLOAT64 = 12, TFM_GGUF_TYPE_COUNT = 13
};

#define TFM_GGUF_MAX_DIMS 4
#define TFM_GGUF_DEFAULT_ALIGNMENT 32

struct tfm_gguf;

/* A tensor: ne[0] is the innermost (contiguous) dimension, as in ggml, so a
 * PyTorch weight of shape [out, in] has ne = {in, out}. */
struct tfm_gguf_tensor {
	const char *name;
	int type;                        /* enum tfm_type */
	int n_dims;
	int64_t ne[TFM_GGUF_MAX_DIMS];   /* unused dims are 1 */
	size_t nbytes;
	uint64_t offset;                 /* within the data section (read files) */
	const void *data;                /* NULL when produced by a callback */
};

/* Reading.  name is used in messages. */
int tfm_gguf_parse(struct tfm_gguf **out, const void *data, size_t size, const char *name);
int tfm_gguf_is_gguf(const void *data, size_t size); /* magic check only */
/* Is the file at path (possibly zstd-compressed) a GGUF?  1 or 0 from its
 * first bytes only, or a negative status when it cannot be opened.  Stdin
 * ("-") and pipes, which can be read only once, give 1: read them whole as
 * a GGUF (tfm_blob_open), the one format that comes that way. */
int tfm_gguf_probe(const char *path);

/* Building. */
int tfm_gguf_new(struct tfm_gguf **out);
void tfm_gguf_free(struct tfm_gguf *g);

/* Metadata lookup: index of key, or -1. */
int64_t tfm_gguf_find(const struct tfm_gguf *g, const char *key);
int64_t tfm_gguf_n_kv(const struct tfm_gguf *g);
const char *tfm_gguf_key(const struct tfm_gguf *g, int64_t i);
int tfm_gguf_kv_type(const struct tfm_gguf *g, int64_t i);      /* enum tfm_gguf_type */
int tfm_gguf_arr_type(const struct tfm_gguf *g, int64_t i);     /* element type of an array */
int64_t tfm_gguf_arr_n(const struct tfm_gguf *g, int64_t i);    /* elements of an array */

/* Typed getters by key.  Integers of any width and bool convert to int64,
 * floats of either width (and integers) to double; a missing key gives
 * TFM_E_FORMAT with a message unless the *_or variants are used (which log
 * a warning and return the default when the key has the wrong type). */
int tfm_gguf_get_int(const struct tfm_gguf *g, const char *key, int64_t *v);
int tfm_gguf_get_float(const struct tfm_gguf *g, const char *key, double *v);
int tfm_gguf_get_str(const struct tfm_gguf *g, const char *key, const char **s, size_t *len);
int64_t tfm_gguf_get_int_or(const struct tfm_gguf *g, const char *key, int64_t dflt);
double tfm_gguf_get_float_or(const struct tfm_gguf *g, const char *key, double dflt);
const char *tfm_gguf_get_str_or(const struct tfm_gguf *g, const char *key, const char *dflt);
/* Arrays: numeric arrays expose their raw little-endian elements; string
 * arrays are read one element at a time.  Nested arrays are reached with
 * tfm_gguf_arr_sub (an element that is itself an array). */
int tfm_gguf_get_arr(const struct tfm_gguf *g, const char *key, int *elem_type,
		     int64_t *n, const void **data);
int tfm_gguf_get_arr_str(const struct tfm_gguf *g, const char *key, int64_t i,
			 const char **s, size_t *len);
/* Numeric arrays converted element by element; n must equal the array's
 * length (tfm_gguf_arr_n), else TFM_E_FORMAT.  _i64 takes integer and bool
 * arrays only; _f32 any numeric array. */
int tfm_gguf_get_arr_f32(const struct tfm_gguf *g, const char *key, float *dst, int64_t n);
int tfm_gguf_get_arr_i64(const struct tfm_gguf *g, const char *key, int64_t *dst, int64_t n);

/* Setters (replace an existing key of the same name). */
int tfm_gguf_set_u8(struct tfm_gguf *g, const char *key, uint8_t v);
int tfm_gguf_set_i8(struct tfm_gguf *g, const char *key, int8_t v);
int tfm_gguf_set_u16(struct tfm_gguf *g, const char *key, uint16_t v);
int tfm_gguf_set_i16(struct tfm_gguf *g, const char *key, int16_t v);
int tfm_gguf_set_u32(struct tfm_gguf *g, const char *key, uint32_t v);
int tfm_gguf_set_i32(struct tfm_gguf *g, const char *key, int32_t v);
int tfm_gguf_set_u64(struct tfm_gguf *g, const char *key, uint64_t v);
int tfm_gguf_set_i64(struct tfm_gguf *g, const char *key, int64_t v);
int tfm_gguf_set_f32(struct tfm_gguf *g, const char *key, float v);
int tfm_gguf_set_f64(struct tfm_gguf *g, const char *key, double v);
int tfm_gguf_set_bool(struct tfm_gguf *g, const char *key, int v);
int tfm_gguf_set_str(struct tfm_gguf *g, const char *key, const char *s);
int tfm_gguf_set_strn(struct tfm_gguf *g, const char *key, const char *s, size_t len);
/* Numeric array (copied). */
int tfm_gguf_set_arr(struct tfm_gguf *g, const char *key, int elem_type, const void *data, int64_t n);
/* String array (copied); lens may be NULL for NUL-terminated strings. */
int tfm_gguf_set_arr_str(struct tfm_gguf *g, const char *key, const char *const *s,
			 const size_t *lens, int64_t n);
/* Copy key i of src into dst (any type, nested arrays included). */
int tfm_gguf_copy_kv(struct tfm_gguf *dst, const struct tfm_gguf *src, int64_t i);
int tfm_gguf_remove(struct tfm_gguf *g, const char *key); /* TFM_OK when absent too */

/* Tensors. */
int64_t tfm_gguf_n_tensors(const struct tfm_gguf *g);
const struct tfm_gguf_tensor *tfm_gguf_tensor(const struct tfm_gguf *g, int64_t i);
const struct tfm_gguf_tensor *tfm_gguf_find_tensor(const struct tfm_gguf *g, const char *name);
/* Add a tensor for writing.  With data non-NULL the bytes are used as they
 * are (not copied: they must live until the write).  With data NULL, produce
 * is called during tfm_gguf_write to fill exactly nbytes into buf. */
typedef int (*tfm_gguf_produce_fn)(void *ctx, const struct tfm_gguf_tensor *t, void *buf);
int tfm_gguf_add_tensor(struct tfm_gguf *g, const char *name, int type, int n_dims,
			const int64_t *ne, const void *data,
			tfm_gguf_produce_fn produce, void *ctx);
size_t tfm_gguf_alignment(const struct tfm_gguf *g);

/* Values as handles, to reach nested arrays (an array whose elements are
 * arrays).  A handle stays valid until the next change to g. */
struct tfm_gguf_val;
const struct tfm_gguf_val *tfm_gguf_get_val(const struct tfm_gguf *g, int64_t i);
int tfm_gguf_val_type(const struct tfm_gguf_val *v);             /* enum tfm_gguf_type */
/* An array value: element type, count, raw data (NULL for arrays of
 * strings or of arrays); TFM_E_FORMAT when v is not an array. */
int tfm_gguf_val_arr(const struct tfm_gguf_val *v, int *elem_type, int64_t *n,
		     const void **data);
int tfm_gguf_val_arr_str(const struct tfm_gguf_val *v, int64_t j, const char **s, size_t *len);
/* Element j of an array of arrays, or NULL. */
const struct tfm_gguf_val *tfm_gguf_arr_sub(const struct tfm_gguf_val *v, int64_t j);
/* Set key to an array of n arrays, element j a deep copy of subs[j] (each
 * an array value, e.g. from tfm_gguf_get_val of another key). */
int tfm_gguf_set_arr_arr(struct tfm_gguf *g, const char *key,
			 const struct tfm_gguf_val *const *subs, int64_t n);

/* Of a parsed file: its version (2 or 3) and where its data section starts. */
uint32_t tfm_gguf_version(const struct tfm_gguf *g);
size_t tfm_gguf_data_offset(const struct tfm_gguf *g);

/* Write the whole file (header, kv, tensor infos, aligned data). */
int tfm_gguf_write(const struct tfm_gguf *g, struct tfm_out *out);
/* The same, calling cb before tensor i of n is produced (bytes done of
 * total) and once at the end with i == n and name NULL: for progress. */
int tfm_gguf_write_progress(const struct tfm_gguf *g, struct tfm_out *out,
			    void (*cb)(void *ctx, int64_t i, int64_t n, double done, double total,
				       const char *name),
			    void *ctx);

#endif
