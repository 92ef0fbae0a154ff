/* bench.h: measurement code for tfm-bench.  Timers and sample statistics,
 * the machine's limits (memory read bandwidth, sgemm peak), whole-model runs
 * (prompt processing and generation from an empty context) and the attention
 * kernel alone.  Benchmarks measure; nothing here checks a timing. */
#ifndef TFM_BENCH_H
#define TFM_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct tfm_model;
struct tfm_backend;

/* Monotonic seconds. */
double tfm_bench_now(void);

/* Mean and sample standard deviation (n - 1; 0 for one sample). */
void tfm_bench_stats(const double *x, int n, double *mean, double *stddev);

/* The machine's limits.  bandwidth: bytes/s of a threaded streaming read
 * over a buffer much larger than the last-level cache (the best of at least
 * 8 passes and 0.3 s); sgemm: FLOP/s of single-threaded cblas_sgemm on large
 * square matrices, one per thread, summed over n_threads threads (the CPU
 * backend runs sgemm that way: see lib/kernels/cpu/cpu.c), the best of at
 * least 3 passes and 0.5 s. */
struct tfm_bench_limits {
	double bandwidth;      /* bytes/s */
	double sgemm;          /* FLOP/s */
	int n_threads;         /* threads they were measured with; 0: unknown */
	size_t bw_bytes;       /* buffer of the bandwidth test */
	int64_t sgemm_n;       /* matrix size of the sgemm test */
};
/* Last-level cache in bytes (sysfs / sysconf; 32 MiB when unknown). */
size_t tfm_bench_llc_bytes(void);
/* bytes 0: max(8 x last-level cache, 256 MiB). */
int tfm_bench_bandwidth(double *bytes_per_s, int n_threads, size_t bytes);
/* n 0: 1536. */
int tfm_bench_sgemm_peak(double *flops_per_s, int n_threads, int64_t n);
/* Both, into l. */
int tfm_bench_measure_limits(struct tfm_bench_limits *l, int n_threads);
/* JSON {"bandwidth_bytes_per_s": B, "sgemm_flops_per_s": F, ...}: both keys
 * must be positive numbers (TFM_E_FORMAT otherwise, TFM_E_OPEN if absent). */
int tfm_bench_limits_read(struct tfm_bench_limits *l, const char *path);

/* One whole-model test on random token ids (fixed seed): after n_depth
 * tokens of context (evaluated, not timed), one prefill of n_prompt tokens
 * (if > 0), then n_gen decode steps of one token (if > 0); both is
 * llama-bench's -pg.  One warm-up run, then reps timed runs.
 * samples[reps]: tokens/s of each run. */
struct tfm_bench_run {
	int64_t n_prompt, n_gen;
	int64_t n_depth;       /* tokens evaluated first, not timed (llama-bench -d) */
	int64_t n_seq;         /* encoders: n_seq sequences of n_prompt in one pass (<= 1: one) */
	int reps;
	double *samples;       /* [reps], owned by the caller */
};
int tfm_bench_model(struct tfm_model *m, struct tfm_bench_run *r);

/* The attention kernel alone: one call of be->attn for n_tok queries at the
 * end of a cache of ctx positions (positions ctx - n_tok .. ctx - 1), with
 * random keys, values and queries.  Repeats until min_s seconds or max_reps
 * calls (at least 1) and gives the mean seconds per call. */
struct tfm_bench_attn {
	int64_t ctx, n_tok;
	int64_t n_head, n_head_kv, head_dim, v_dim, window;
	int v_from_k;   /* values read from the key rows (MLA's latent cache) */
	int n_threads;
	double min_s;
	int max_reps;
};
int tfm_bench_attn_time(const struct tfm_backend *be, const struct tfm_bench_attn *a,
			double *seconds);

/* Heap bytes in use (malloc, including mmapped chunks) and resident set
 * size, to measure what an allocation costs. */
size_t tfm_bench_heap_bytes(void);
size_t tfm_bench_rss_bytes(void);

/* A hand-written SVG of line plots on log-log axes, panels side by side:
 * one series per variant.  Points with y <= 0 are left out. */
struct tfm_bench_series {
	const char *name;
	const double *x, *y;   /* [n] */
	int n;
};
struct tfm_bench_panel {
	const char *title, *xlabel, *ylabel;
	const struct tfm_bench_series *s;   /* [n_series] */
	int n_series;
};
struct tfm_out;
/* The panels side by side under a title (also the SVG's <title>). */
int tfm_bench_svg(struct tfm_out *o, const char *title, const struct tfm_bench_panel *p,
		  int n_panels);

#endif
