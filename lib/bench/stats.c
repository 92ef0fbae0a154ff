/* stats.c: timers, sample statistics and memory probes for tfm-bench.
 * Heap bytes come from glibc's mallinfo2 (arena bytes in use plus mmapped
 * chunks), or under AddressSanitizer (whose allocator mallinfo2 does not
 * see) from the sanitizer's own count; RSS from /proc/self/statm; both are
 * 0 where unavailable. */
#include "tfm.h"
#include "bench/bench.h"

#include <malloc.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TFM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TFM_ASAN 1
#endif
#ifdef TFM_ASAN
/* from the sanitizer runtime (sanitizer/allocator_interface.h, which gcc
 * does not install everywhere) */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif
#include <math.h>
#include <time.h>
#include <unistd.h>

double tfm_bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void tfm_bench_stats(const double *x, int n, double *mean, double *stddev)
{
	double s = 0, ss = 0;
	for (int i = 0; i < n; i++)
		s += x[i];
	*mean = n > 0 ? s / n : 0;
	for (int i = 0; i < n; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*stddev = n > 1 ? sqrt(ss / (n - 1)) : 0;
}

size_t tfm_bench_heap_bytes(void)
{
#ifdef TFM_ASAN
	return __sanitizer_get_current_allocated_bytes();
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

size_t tfm_bench_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size, rss;
	size_t r = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &rss) == 2)
		r = (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
	fclose(f);
	return r;
}
