/* common.h: glue shared by the tfm-* commands: error reporting with the
 * program name, the status-to-exit mapping, version text, stdout checks. */
#ifndef TFM_CMD_COMMON_H
#define TFM_CMD_COMMON_H

#include "tfm.h"

extern const char *prog; /* set by cmd_init */

/* Set prog, default log level, and the SIGPIPE policy (EPIPE reported as
 * TFM_E_PIPE so a command ends quietly when its reader goes away). */
void cmd_init(const char *name);
/* "prog: message" on stderr from the library's error text; returns the exit
 * code for st (0 for TFM_E_PIPE, which is silent). */
int cmd_fail(int st);
/* "prog: message" for a usage error; returns 64. */
int cmd_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cmd_version(void);
/* Flush and check stdout at exit: returns 0, or 74 with a message (EPIPE: 0). */
int cmd_close_stdout(void);
/* Parse helpers for options: on error print "prog: -x: message", return 64. */
int cmd_opt_i64(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out);
int cmd_opt_f64(const char *opt, const char *arg, double lo, double hi, double *out);

/* -k K[,V]: the types of the K and V caches (one name: both).  kept: only
 * the types the executor keeps (f32, f16, bf16, q8_0, q5_1, q5_0, q4_1,
 * q4_0); else any ggml type name (tfm-inspect and tfm-bench predict bytes
 * for any).  On error print the message and usage, return 64. */
int cmd_opt_kv_types(const char *usage, const char *arg, int kept, int *k, int *v);
/* "q8_0", or "q8_0,f16" when they differ */
const char *cmd_kv_name(char *buf, size_t n, int k, int v);
/* Mean bytes per element of a K and a V cache (K and V rows are equally
 * long but for MLA): what tfm_spec_count and tfm_spec_kv_bytes take. */
double cmd_kv_elem_bytes(int k, int v);

/* A progress line on stderr for tfm_gguf_write_progress, when stderr is a
 * terminal and the output is large (cmd_progress_ctx decides; NULL: none). */
void *cmd_progress_ctx(int quiet);
void cmd_progress(void *ctx, int64_t i, int64_t n, double done, double total, const char *name);

#endif
