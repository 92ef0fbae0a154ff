/* limits.c: the machine's limits for tfm-bench's "% of limit": memory read
 * bandwidth (threaded streaming read, buffer far past the last-level cache)
 * and sgemm peak (OpenBLAS, one single-threaded sgemm per thread, as the CPU
 * backend calls it); and the --limits file that stores them. */
#include "tfm.h"
#include "bench/bench.h"

#include <cblas.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

extern void openblas_set_num_threads(int n);

size_t tfm_bench_llc_bytes(void)
{
	/* the highest cache level sysfs lists for cpu0 */
	size_t best = 0;
	for (int i = 0; i < 8; i++) {
		char path[96], buf[32];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		if (fgets(buf, sizeof buf, f)) {
			char *end;
			unsigned long long v = strtoull(buf, &end, 10);
			if (*end == 'K')
				v <<= 10;
			else if (*end == 'M')
				v <<= 20;
			if (v > best)
				best = (size_t)v;
		}
		fclose(f);
	}
#ifdef _SC_LEVEL3_CACHE_SIZE
	if (!best) {
		long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
		if (v > 0)
			best = (size_t)v;
	}
#endif
	return best ? best : (size_t)32 << 20;
}

/* Run fn(ctx, i, n) on n threads of its own, all at once.  Not tfm_pool:
 * its threads take tasks from a shared counter, so with one big task per
 * thread a worker that wakes late could find its task taken; here each
 * thread does exactly its own slice. */
struct thr {
	void (*fn)(void *ctx, int i, int n);
	void *ctx;
	int i, n;
};

static void *thr_main(void *p)
{
	struct thr *t = p;
	t->fn(t->ctx, t->i, t->n);
	return NULL;
}

static int run_threads(int n, void (*fn)(void *ctx, int i, int n), void *ctx)
{
	pthread_t th[256];
	struct thr t[256];
	int started = 0, st = TFM_OK;
	if (n > 256)
		n = 256;
	for (int i = 1; i < n; i++, started++) {
		t[i] = (struct thr){fn, ctx, i, n};
		if (pthread_create(&th[i], NULL, thr_main, &t[i])) {
			st = tfm_seterr(TFM_E_INTERNAL, "cannot start a thread");
			break;
		}
	}
	if (!st)
		fn(ctx, 0, n);
	for (int i = 1; i <= started; i++)
		pthread_join(th[i], NULL);
	return st;
}

/* ---- bandwidth ---- */

struct bw_job {
	const uint8_t *buf;   /* [bytes] */
	size_t bytes;
	int n_tasks;
	_Atomic uint64_t sink; /* keeps the reads alive */
};

static void bw_task(void *ctx, int i, int n)
{
	struct bw_job *j = ctx;
	size_t per = j->bytes / (size_t)n & ~(size_t)255;
	const uint8_t *p = j->buf + (size_t)i * per, *end = p + per;
	uint64_t out;
#ifdef __SSE2__
	/* four independent accumulators so the loads, not the adds, limit */
	__m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
	for (; p < end; p += 64) {
		a = _mm_add_epi64(a, _mm_load_si128((const __m128i *)p));
		b = _mm_add_epi64(b, _mm_load_si128((const __m128i *)(p + 16)));
		c = _mm_add_epi64(c, _mm_load_si128((const __m128i *)(p + 32)));
		d = _mm_add_epi64(d, _mm_load_si128((const __m128i *)(p + 48)));
	}
	a = _mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d));
	uint64_t lanes[2];
	_mm_storeu_si128((__m128i *)lanes, a);
	out = lanes[0] + lanes[1];
#else
	uint64_t a = 0, b = 0, c = 0, d = 0;
	for (; p < end; p += 32) {
		const uint64_t *q = (const uint64_t *)p;
		a += q[0], b += q[1], c += q[2], d += q[3];
	}
	out = a + b + c + d;
#endif
	atomic_fetch_add(&j->sink, out);
}

int tfm_bench_bandwidth(double *bytes_per_s, int n_threads, size_t bytes)
{
	int st = TFM_OK;
	*bytes_per_s = 0;
	if (n_threads <= 0)
		n_threads = tfm_ncpu();
	if (!bytes) {
		bytes = 8 * tfm_bench_llc_bytes();
		if (bytes < (size_t)256 << 20)
			bytes = (size_t)256 << 20;
	}
	bytes &= ~(size_t)4095;
	uint8_t *buf = tfm_amalloc(bytes);
	if (!buf)
		return tfm_adderr(TFM_E_NOMEM, "bandwidth buffer of %zu MiB", bytes >> 20);
	for (size_t i = 0; i < bytes; i++) /* touch every page, with varied bytes */
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	struct bw_job j = {.buf = buf, .bytes = bytes};
	double best = 0;
	if ((st = run_threads(n_threads, bw_task, &j))) /* warm up the TLB */
		goto out;
	/* the best pass: on a shared machine some passes lose the core */
	double start = tfm_bench_now();
	for (int pass = 0; pass < 64 && (pass < 8 || tfm_bench_now() - start < 0.3); pass++) {
		double t0 = tfm_bench_now();
		if ((st = run_threads(n_threads, bw_task, &j)))
			goto out;
		double dt = tfm_bench_now() - t0;
		double bw = (double)(bytes / (size_t)n_threads & ~(size_t)255) * n_threads / dt;
		if (bw > best)
			best = bw;
	}
	*bytes_per_s = best;
	tfm_log(TFM_LOG_DEBUG, "bandwidth: %.2f GB/s over %zu MiB, %d threads (sink %llu)",
		best / 1e9, bytes >> 20, n_threads, (unsigned long long)j.sink);
out:
	tfm_afree(buf);
	return st;
}

/* ---- sgemm ---- */

struct gemm_job {
	int64_t n;
	float *mem;           /* [n_tasks][3][n][n] */
	int reps;
};

static void gemm_task(void *ctx, int i, int n_tasks)
{
	struct gemm_job *j = ctx;
	size_t nn = (size_t)(j->n * j->n);
	float *a = j->mem + (size_t)i * 3 * nn, *b = a + nn, *c = b + nn;
	for (int r = 0; r < j->reps; r++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->n, (int)j->n, (int)j->n,
			    1.0f, a, (int)j->n, b, (int)j->n, 0.0f, c, (int)j->n);
}

int tfm_bench_sgemm_peak(double *flops_per_s, int n_threads, int64_t n)
{
	int st = TFM_OK;
	*flops_per_s = 0;
	if (n_threads <= 0)
		n_threads = tfm_ncpu();
	if (n <= 0)
		n = 1536;
	/* the CPU backend pins OpenBLAS to one thread and runs sgemm from its
	 * own pool; measure the same arrangement */
	openblas_set_num_threads(1);
	size_t nn = (size_t)(n * n);
	float *mem = tfm_amalloc((size_t)n_threads * 3 * nn * sizeof *mem);
	if (!mem)
		return tfm_adderr(TFM_E_NOMEM, "sgemm matrices of %lld", (long long)n);
	for (size_t i = 0; i < (size_t)n_threads * 3 * nn; i++)
		mem[i] = (float)((i * 2654435761u >> 16) & 1023) / 1024.0f - 0.5f;
	struct gemm_job j = {.n = n, .mem = mem, .reps = 1};
	if ((st = run_threads(n_threads, gemm_task, &j))) /* warm-up */
		goto out;
	double best = 0;
	double start = tfm_bench_now();
	for (int pass = 0; pass < 20 && (pass < 3 || tfm_bench_now() - start < 0.5); pass++) {
		double t0 = tfm_bench_now();
		if ((st = run_threads(n_threads, gemm_task, &j)))
			goto out;
		double dt = tfm_bench_now() - t0;
		double f = 2.0 * (double)n * n * n * n_threads / dt;
		if (f > best)
			best = f;
	}
	*flops_per_s = best;
	tfm_log(TFM_LOG_DEBUG, "sgemm: %.2f GFLOP/s at %lld, %d threads", best / 1e9,
		(long long)n, n_threads);
out:
	tfm_afree(mem);
	return st;
}

int tfm_bench_measure_limits(struct tfm_bench_limits *l, int n_threads)
{
	int st;
	memset(l, 0, sizeof *l);
	l->n_threads = n_threads > 0 ? n_threads : tfm_ncpu();
	l->bw_bytes = 8 * tfm_bench_llc_bytes();
	if (l->bw_bytes < (size_t)256 << 20)
		l->bw_bytes = (size_t)256 << 20;
	l->sgemm_n = 1536;
	if ((st = tfm_bench_bandwidth(&l->bandwidth, l->n_threads, l->bw_bytes)))
		return st;
	return tfm_bench_sgemm_peak(&l->sgemm, l->n_threads, l->sgemm_n);
}

static int positive(json_t *root, const char *key, const char *path, double *out)
{
	json_t *v = json_object_get(root, key);
	if (!json_is_number(v) || json_number_value(v) <= 0)
		return tfm_seterr(TFM_E_FORMAT, "%s: %s must be a positive number", path, key);
	*out = json_number_value(v);
	return TFM_OK;
}

int tfm_bench_limits_read(struct tfm_bench_limits *l, const char *path)
{
	struct tfm_blob b;
	json_error_t err;
	int st;
	memset(l, 0, sizeof *l);
	if ((st = tfm_blob_open(&b, path)))
		return st;
	json_t *root = json_loadb((const char *)b.data, b.size, 0, &err);
	if (!root) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", b.name, err.line, err.text);
		goto out;
	}
	if (!json_is_object(root)) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: not a JSON object", b.name);
		goto out;
	}
	if ((st = positive(root, "bandwidth_bytes_per_s", b.name, &l->bandwidth)) ||
	    (st = positive(root, "sgemm_flops_per_s", b.name, &l->sgemm)))
		goto out;
	json_t *t = json_object_get(root, "threads");
	if (json_is_integer(t))
		l->n_threads = (int)json_integer_value(t);
out:
	json_decref(root);
	tfm_blob_close(&b);
	return st;
}
