/* parse.c: strtonum-style number parsing with range checks. */
#include "tfm.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int tfm_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (!*s || *end || errno)
		return tfm_seterr(TFM_E_INVAL, "'%s': not an integer", s);
	if (v < lo || v > hi)
		return tfm_seterr(TFM_E_INVAL, "'%s': out of range [%lld, %lld]", s,
				  (long long)lo, (long long)hi);
	*out = v;
	return TFM_OK;
}

int tfm_parse_f64(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || isnan(v))
		return tfm_seterr(TFM_E_INVAL, "'%s': not a number", s);
	if (v < lo || v > hi)
		return tfm_seterr(TFM_E_INVAL, "'%s': out of range [%g, %g]", s, lo, hi);
	*out = v;
	return TFM_OK;
}
