/* limit.c: how much memory tfm may take, and checks against it before the
 * large allocations (a context's KV cache and scratch, random weights,
 * decompressed input), so that a request that cannot fit is refused with
 * both numbers instead of ending in the kernel's OOM killer.
 *
 * The limit is, first found: tfm_mem_set_limit() (the tools' --mem-limit),
 * the environment's TFM_MEM_LIMIT, the machine's MemAvailable.  "0" or
 * "none" means no limit.  Decompressed input is also capped at
 * TFM_EXPAND_RATIO (default 1000) times its compressed size, with a floor
 * of 256 MiB, so that a small crafted file cannot expand to gigabytes;
 * TFM_EXPAND_RATIO=0 lifts that cap. */
#include "tfm.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t set_limit = -1; /* -1: not set; 0: none */

int tfm_mem_parse_size(const char *s, int64_t *out)
{
	if (!s || !*s)
		return tfm_seterr(TFM_E_INVAL, "empty size");
	if (!strcmp(s, "none")) {
		*out = 0;
		return TFM_OK;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	double mul = 1;
	if (end == s)
		return tfm_seterr(TFM_E_INVAL, "'%s' is not a size (bytes, or with K, M, G, T)", s);
	switch (toupper((unsigned char)*end)) {
	case 'K': mul = 1024.0; end++; break;
	case 'M': mul = 1048576.0; end++; break;
	case 'G': mul = 1073741824.0; end++; break;
	case 'T': mul = 1099511627776.0; end++; break;
	}
	if (mul > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (mul > 1 && (*end == 'b' || *end == 'B'))
		end++;
	if (errno || end == s || *end || !(v >= 0) || !isfinite(v) || v * mul >= 9.2e18)
		return tfm_seterr(TFM_E_INVAL, "'%s' is not a size (bytes, or with K, M, G, T)", s);
	*out = (int64_t)(v * mul);
	return TFM_OK;
}

int tfm_mem_set_limit(const char *s)
{
	int64_t v;
	int st = tfm_mem_parse_size(s, &v);
	if (st)
		return tfm_adderr(st, "--mem-limit");
	set_limit = v;
	return TFM_OK;
}

/* MemAvailable of /proc/meminfo in bytes, or 0 when unknown. */
static int64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb > 0 ? (int64_t)kb * 1024 : 0;
}

int64_t tfm_mem_limit(const char **source)
{
	const char *src = "--mem-limit";
	int64_t v = set_limit;
	if (v < 0) {
		const char *e = getenv("TFM_MEM_LIMIT");
		src = "TFM_MEM_LIMIT";
		if (!e || !*e || tfm_mem_parse_size(e, &v)) {
			src = "available memory";
			v = mem_available();
		}
	}
	if (source)
		*source = src;
	return v; /* 0: no limit */
}

void tfm_mem_human(int64_t n, char *buf, size_t cap)
{
	static const char *unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%lld bytes", (long long)n);
	else
		snprintf(buf, cap, "%.1f %s", v, unit[u]);
}

int tfm_mem_check(double need, const char *fmt, ...)
{
	const char *src;
	int64_t lim = tfm_mem_limit(&src);
	if (lim == 0 || need <= (double)lim)
		return TFM_OK;
	char what[200], a[32], b[32];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tfm_mem_human(need >= 9.2e18 ? INT64_MAX : (int64_t)need, a, sizeof a);
	tfm_mem_human(lim, b, sizeof b);
	return tfm_seterr(TFM_E_NOMEM, "%s needs %s, more than the %s of %s (see --mem-limit, "
			  "TFM_MEM_LIMIT)", what, a, src, b);
}

int64_t tfm_expand_cap(int64_t compressed)
{
	int64_t ratio = 1000;
	const char *e = getenv("TFM_EXPAND_RATIO");
	if (e && *e) {
		char *end;
		long long r = strtoll(e, &end, 10);
		if (!*end && r >= 0)
			ratio = r;
	}
	if (ratio == 0)
		return INT64_MAX;
	double cap = (double)compressed * (double)ratio;
	if (cap < 256.0 * 1048576)
		cap = 256.0 * 1048576;
	return cap >= 9.2e18 ? INT64_MAX : (int64_t)cap;
}

int tfm_expand_check(int64_t compressed, int64_t expanded, const char *name)
{
	char a[32], b[32], c[32];
	int64_t cap = tfm_expand_cap(compressed);
	tfm_mem_human(compressed, a, sizeof a);
	if (expanded > cap) {
		tfm_mem_human(cap, b, sizeof b);
		return tfm_seterr(TFM_E_FORMAT, "%s: %s expand to more than %s (the cap is %s times "
				  "the compressed size, at least 256 MiB): a decompression bomb? "
				  "TFM_EXPAND_RATIO=0 lifts the cap", name, a, b,
				  getenv("TFM_EXPAND_RATIO") ? getenv("TFM_EXPAND_RATIO") : "1000");
	}
	const char *src;
	int64_t lim = tfm_mem_limit(&src);
	if (lim > 0 && expanded > lim) {
		tfm_mem_human(expanded, b, sizeof b);
		tfm_mem_human(lim, c, sizeof c);
		return tfm_seterr(TFM_E_NOMEM, "%s: %s expand to %s or more, more than the %s of %s "
				  "(see --mem-limit, TFM_MEM_LIMIT)", name, a, b, src, c);
	}
	return TFM_OK;
}
