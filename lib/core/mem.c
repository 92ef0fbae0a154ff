/* mem.c: allocation helpers that record TFM_E_NOMEM with a message. */
#include "tfm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *tfm_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		tfm_seterr(TFM_E_NOMEM, "out of memory (%zu bytes)", n);
	return p;
}

void *tfm_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		tfm_seterr(TFM_E_NOMEM, "out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *tfm_realloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);
	if (!p)
		tfm_seterr(TFM_E_NOMEM, "out of memory (%zu bytes)", n);
	return p;
}

char *tfm_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = tfm_malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

int tfm_grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
	if (need <= *cap)
		return TFM_OK;
	int64_t nc = *cap > 0 ? *cap : 16;
	while (nc < need)
		nc *= 2;
	if ((uint64_t)nc > SIZE_MAX / elem)
		return tfm_seterr(TFM_E_NOMEM, "out of memory (%lld elements of %zu bytes)",
				  (long long)nc, elem);
	char *np = tfm_realloc(*p, (size_t)nc * elem);
	if (!np)
		return TFM_E_NOMEM;
	memset(np + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
	*p = np;
	*cap = nc;
	return TFM_OK;
}

void *tfm_amalloc(size_t n)
{
	void *p = NULL;
	n = (n + 63) & ~(size_t)63;
	if (posix_memalign(&p, 64, n ? n : 64)) {
		tfm_seterr(TFM_E_NOMEM, "out of memory (%zu bytes)", n);
		return NULL;
	}
	return p;
}

void tfm_afree(void *p) { free(p); }
