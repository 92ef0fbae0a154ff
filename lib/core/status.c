/* status.c: status codes, thread-local error text, and the mapping from
 * library status to a command's exit status (sysexits values). */
#include "tfm.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char errbuf[1024];

int tfm_seterr(int st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof errbuf, fmt, ap);
	va_end(ap);
	return st;
}

int tfm_adderr(int st, const char *fmt, ...)
{
	char prefix[512], old[sizeof errbuf];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, errbuf, sizeof old);
	snprintf(errbuf, sizeof errbuf, "%.500s: %.500s", prefix, old);
	return st;
}

const char *tfm_errmsg(void)
{
	return errbuf[0] ? errbuf : "no error";
}

const char *tfm_strstatus(int st)
{
	switch (st) {
	case TFM_OK: return "ok";
	case TFM_E_NOMEM: return "out of memory";
	case TFM_E_IO: return "I/O error";
	case TFM_E_FORMAT: return "bad input data";
	case TFM_E_UNSUPPORTED: return "not supported";
	case TFM_E_INVAL: return "invalid argument";
	case TFM_E_OPEN: return "cannot open input";
	case TFM_E_CREATE: return "cannot create output";
	case TFM_E_DEVICE: return "device unavailable";
	case TFM_E_PIPE: return "broken pipe";
	default: return "internal error";
	}
}

int tfm_exit_code(int st)
{
	switch (st) {
	case TFM_OK: return 0;
	case TFM_E_INVAL: return 64;
	case TFM_E_FORMAT:
	case TFM_E_UNSUPPORTED: return 65;
	case TFM_E_OPEN: return 66;
	case TFM_E_DEVICE: return 69;
	case TFM_E_CREATE: return 73;
	case TFM_E_IO: return 74;
	case TFM_E_PIPE: return 0;
	default: return 70;
	}
}
