/* tfm.h: the public API of libtfm.
 * Core services live here (status codes, errors, logging, input/output, the
 * thread pool); each component has one header of its own, included below.
 * The library never exits and never prints to stdout. */
#ifndef TFM_H
#define TFM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TFM_VERSION "0.1.0"

/* Status codes: TFM_OK is 0, errors are negative.  tfm_exit_code() maps them
 * to sysexits-style exit statuses for the commands. */
enum tfm_status {
	TFM_OK = 0,
	TFM_E_NOMEM = -1,       /* out of memory */
	TFM_E_IO = -2,          /* read or write failed */
	TFM_E_FORMAT = -3,      /* bad or corrupt input data */
	TFM_E_UNSUPPORTED = -4, /* valid input we do not handle (yet) */
	TFM_E_INVAL = -5,       /* bad argument or option value */
	TFM_E_OPEN = -6,        /* cannot open input */
	TFM_E_CREATE = -7,      /* cannot create output */
	TFM_E_DEVICE = -8,      /* device unavailable */
	TFM_E_INTERNAL = -9,    /* a bug */
	TFM_E_PIPE = -10,       /* reader went away (EPIPE): end quietly */
};

/* Record an error: sets the thread-local message and returns st, so that
 * `return tfm_seterr(TFM_E_FORMAT, "%s: bad magic", path);` reads naturally. */
int tfm_seterr(int st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message with "prefix: " (context on the way up). */
int tfm_adderr(int st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *tfm_errmsg(void);
const char *tfm_strstatus(int st);
int tfm_exit_code(int st); /* 0, 65, 66, 69, 70, 73, 74, 64 */

/* Logging to stderr, by level; the default is TFM_LOG_WARN. */
enum tfm_log_level { TFM_LOG_QUIET = 0, TFM_LOG_ERROR, TFM_LOG_WARN, TFM_LOG_INFO, TFM_LOG_DEBUG };
void tfm_log_set_level(int level);
int tfm_log_get_level(void);
void tfm_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Memory: checked helpers that record TFM_E_NOMEM on failure. */
void *tfm_malloc(size_t n);
void *tfm_calloc(size_t n, size_t size);
void *tfm_realloc(void *p, size_t n);
char *tfm_strdup(const char *s);
/* Growable arrays: make room for need elements of elem bytes in *p (capacity
 * *cap elements), doubling from 16; the new elements are zeroed. */
int tfm_grow(void **p, int64_t *cap, int64_t need, size_t elem);
/* 64-byte aligned allocation, freed with tfm_afree(). */
void *tfm_amalloc(size_t n);
void tfm_afree(void *p);

/* Memory limits (limit.c).  The limit is tfm_mem_set_limit's (the tools'
 * --mem-limit SIZE), else TFM_MEM_LIMIT, else the machine's MemAvailable;
 * 0 means none.  *source (may be NULL) says which.  tfm_mem_check refuses
 * (TFM_E_NOMEM, with both numbers) a need above the limit; the message
 * names what needs it (printf format). */
int tfm_mem_parse_size(const char *s, int64_t *out); /* "8G", "512M", "none" */
int tfm_mem_set_limit(const char *s);
int64_t tfm_mem_limit(const char **source);
int tfm_mem_check(double need, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tfm_mem_human(int64_t n, char *buf, size_t cap);  /* "1.5 GiB" */
/* Decompression: at most TFM_EXPAND_RATIO (default 1000) times the
 * compressed size, at least 256 MiB; TFM_E_FORMAT past it, and the memory
 * limit applies (tfm_mem_check). */
int64_t tfm_expand_cap(int64_t compressed);
int tfm_expand_check(int64_t compressed, int64_t expanded, const char *name);

/* Input: the whole of a path, "-" (stdin) or a pipe, as bytes in memory.
 * A regular file is mmapped, anything else is read.  A zstd frame is
 * decompressed transparently.  data stays valid until tfm_blob_close(). */
struct tfm_blob {
	const uint8_t *data;
	size_t size;
	char *name;   /* for messages: the path, or "<stdin>" */
	/* private */
	void *map_;   /* mmapped region, or NULL */
	size_t map_size_;
	uint8_t *owned_;
};
int tfm_blob_open(struct tfm_blob *b, const char *path);
/* Wrap memory the caller owns (not freed by close). */
void tfm_blob_wrap(struct tfm_blob *b, const void *data, size_t size, const char *name);
void tfm_blob_close(struct tfm_blob *b);
/* The first bytes of a path's content as tfm_blob_open would give them (a
 * zstd frame's start is decompressed, nothing more), so that a caller can
 * tell formats apart without reading or decompressing the whole input.
 * *got < n when the input is shorter.  Only for regular files: stdin ("-"),
 * pipes and devices can be read only once (TFM_E_INVAL). */
int tfm_input_peek(const char *path, void *buf, size_t n, size_t *got);
/* True when path names a directory. */
int tfm_path_is_dir(const char *path);

/* Output: to a path (written to a temporary file in the same directory and
 * renamed by tfm_out_commit) or "-" / NULL (stdout).  With zstd set, the
 * stream is compressed.  tfm_out_abort() removes the temporary file.
 * Writes after a failure are ignored; the first error is kept. */
struct tfm_out;
int tfm_out_open(struct tfm_out **out, const char *path, int zstd);
int tfm_out_write(struct tfm_out *o, const void *p, size_t n);
int tfm_out_printf(struct tfm_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t tfm_out_tell(struct tfm_out *o); /* bytes written so far (before zstd) */
int tfm_out_commit(struct tfm_out *o);  /* flush, fsync, rename; frees o */
void tfm_out_abort(struct tfm_out *o);  /* discard; frees o */
/* Remove every temporary file of an open output; async-signal-safe, for a
 * program's SIGINT/SIGTERM/SIGHUP handler. */
void tfm_out_unlink_temps(void);
/* Before the work: TFM_E_CREATE when path cannot become an output (empty,
 * a directory, a directory that takes no files); "-" and NULL pass. */
int tfm_out_check_path(const char *path);
/* Is this output a terminal (refuse binary to a terminal)? */
int tfm_out_isatty(const char *path);

/* Thread pool.  tfm_pool_run calls fn(ctx, i, n_tasks) for i in [0, n_tasks)
 * spread over the pool's threads (the caller's thread takes part) and returns
 * when all are done.  A pool of 1 thread runs everything inline. */
struct tfm_pool;
int tfm_pool_new(struct tfm_pool **p, int n_threads);
void tfm_pool_free(struct tfm_pool *p);
int tfm_pool_size(const struct tfm_pool *p);
void tfm_pool_run(struct tfm_pool *p, void (*fn)(void *ctx, int i, int n), void *ctx, int n_tasks);
int tfm_ncpu(void); /* online cores */

/* Half and bfloat16 conversions (scalar, exact round-to-nearest-even). */
float tfm_f16_to_f32(uint16_t h);
uint16_t tfm_f32_to_f16(float f);
float tfm_bf16_to_f32(uint16_t h);
uint16_t tfm_f32_to_bf16(float f);

/* Number parsing with range checks (for options and key=value). */
int tfm_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int tfm_parse_f64(const char *s, double lo, double hi, double *out);

/* Components. */
#include "quant/dtype.h"
#include "format/gguf.h"
#include "format/ckpt.h"
#include "format/convert.h"
#include "spec/spec.h"
#include "text/tokenizer.h"
#include "chat/jinja.h"
#include "model/model.h"
#include "model/encoder.h"

#endif
