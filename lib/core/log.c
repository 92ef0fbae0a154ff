/* log.c: leveled logging to stderr; the caller picks the level. */
#include "tfm.h"

static int level = TFM_LOG_WARN;

void tfm_log_set_level(int l) { level = l; }
int tfm_log_get_level(void) { return level; }

void tfm_log(int l, const char *fmt, ...)
{
	if (l > level || l <= TFM_LOG_QUIET)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
