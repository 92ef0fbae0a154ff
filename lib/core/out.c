/* out.c: atomic output.  A path is written to a temporary file beside it and
 * renamed on commit, so a failed or interrupted run leaves nothing half
 * written; "-" or NULL is stdout.  Optional zstd compression on the way. */
#include "tfm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

struct tfm_out {
	int fd;
	char *path, *tmp; /* NULL for stdout */
	int err;          /* first error status */
	int64_t written;
	ZSTD_CStream *zs;
	uint8_t *buf; size_t cap, len; /* write buffer (raw or compressed) */
};

/* Temporary files being written, for tfm_out_unlink_temps() from a signal
 * handler: slots are set and cleared with the signals blocked, and the
 * handler only reads them and calls unlink (async-signal-safe). */
#define MAX_TEMPS 16
static char *volatile temps[MAX_TEMPS];

static void temps_set(char *old, char *new)
{
	sigset_t all, prev;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &prev);
	for (int i = 0; i < MAX_TEMPS; i++)
		if (temps[i] == old) {
			temps[i] = new;
			break;
		}
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
}

void tfm_out_unlink_temps(void)
{
	for (int i = 0; i < MAX_TEMPS; i++)
		if (temps[i])
			unlink(temps[i]);
}

int tfm_out_check_path(const char *path)
{
	struct stat st;
	if (!path || !strcmp(path, "-"))
		return TFM_OK;
	if (!*path)
		return tfm_seterr(TFM_E_CREATE, "empty output path");
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return tfm_seterr(TFM_E_CREATE, "%s: is a directory", path);
	/* the temporary file goes beside it: the directory must take files */
	size_t n = strlen(path);
	char *dir = tfm_malloc(n + 2);
	if (!dir)
		return TFM_E_NOMEM;
	memcpy(dir, path, n + 1);
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	int ok = access(dir, W_OK | X_OK) == 0;
	int e = errno;
	free(dir);
	if (!ok)
		return tfm_seterr(TFM_E_CREATE, "%s: %s", path, strerror(e));
	return TFM_OK;
}

static int raw_write(struct tfm_out *o, const void *p, size_t n)
{
	const uint8_t *c = p;
	while (n) {
		ssize_t r = write(o->fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			if (errno == EPIPE)
				return o->err = tfm_seterr(TFM_E_PIPE, "broken pipe");
			return o->err = tfm_seterr(TFM_E_IO, "%s: write: %s",
						  o->path ? o->path : "<stdout>", strerror(errno));
		}
		c += r;
		n -= (size_t)r;
	}
	return TFM_OK;
}

static int flush_buf(struct tfm_out *o)
{
	int st = o->len ? raw_write(o, o->buf, o->len) : TFM_OK;
	o->len = 0;
	return st;
}

int tfm_out_open(struct tfm_out **out, const char *path, int zstd)
{
	struct tfm_out *o = tfm_calloc(1, sizeof *o);
	if (!o)
		return TFM_E_NOMEM;
	o->cap = 1 << 20;
	o->buf = tfm_malloc(o->cap);
	if (!o->buf)
		goto nomem;
	if (!path || !strcmp(path, "-")) {
		o->fd = 1;
	} else {
		o->path = tfm_strdup(path);
		size_t n = strlen(path) + 16;
		o->tmp = tfm_malloc(n);
		if (!o->path || !o->tmp)
			goto nomem;
		snprintf(o->tmp, n, "%s.tmpXXXXXX", path);
		o->fd = mkostemp(o->tmp, O_CLOEXEC);
		if (o->fd < 0) {
			int st = tfm_seterr(TFM_E_CREATE, "%s: %s", path, strerror(errno));
			free(o->tmp);
			o->tmp = NULL;
			tfm_out_abort(o);
			return st;
		}
		temps_set(NULL, o->tmp);
		/* mkstemp makes 0600; give the output the usual mode */
		mode_t um = umask(0);
		umask(um);
		fchmod(o->fd, 0666 & ~um);
	}
	if (zstd) {
		o->zs = ZSTD_createCStream();
		if (!o->zs)
			goto nomem;
		ZSTD_initCStream(o->zs, 3);
	}
	*out = o;
	return TFM_OK;
nomem:
	tfm_out_abort(o);
	return tfm_seterr(TFM_E_NOMEM, "out of memory");
}

static int zwrite(struct tfm_out *o, const void *p, size_t n, ZSTD_EndDirective end)
{
	ZSTD_inBuffer in = { p, n, 0 };
	for (;;) {
		ZSTD_outBuffer ob = { o->buf + o->len, o->cap - o->len, 0 };
		size_t r = ZSTD_compressStream2(o->zs, &ob, &in, end);
		if (ZSTD_isError(r))
			return o->err = tfm_seterr(TFM_E_IO, "zstd: %s", ZSTD_getErrorName(r));
		o->len += ob.pos;
		if (o->len == o->cap && flush_buf(o))
			return o->err;
		if (end == ZSTD_e_continue ? in.pos == in.size : r == 0)
			break;
		if (o->len > o->cap / 2 && flush_buf(o))
			return o->err;
	}
	return TFM_OK;
}

int tfm_out_write(struct tfm_out *o, const void *p, size_t n)
{
	if (o->err)
		return o->err;
	o->written += (int64_t)n;
	if (o->zs)
		return zwrite(o, p, n, ZSTD_e_continue);
	if (o->len + n > o->cap) {
		if (flush_buf(o))
			return o->err;
		if (n >= o->cap)
			return raw_write(o, p, n);
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return TFM_OK;
}

int tfm_out_printf(struct tfm_out *o, const char *fmt, ...)
{
	char small[1024], *s = small;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return o->err = tfm_seterr(TFM_E_INTERNAL, "printf failed");
	if ((size_t)n >= sizeof small) {
		s = tfm_malloc((size_t)n + 1);
		if (!s)
			return o->err = TFM_E_NOMEM;
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	int st = tfm_out_write(o, s, (size_t)n);
	if (s != small)
		free(s);
	return st;
}

int64_t tfm_out_tell(struct tfm_out *o) { return o->written; }

int tfm_out_commit(struct tfm_out *o)
{
	int st = o->err;
	if (!st && o->zs)
		st = zwrite(o, "", 0, ZSTD_e_end);
	if (!st)
		st = flush_buf(o);
	if (!st && o->tmp) {
		if (fsync(o->fd) < 0 && errno != EINVAL)
			st = tfm_seterr(TFM_E_IO, "%s: fsync: %s", o->path, strerror(errno));
		if (close(o->fd) < 0 && !st)
			st = tfm_seterr(TFM_E_IO, "%s: close: %s", o->path, strerror(errno));
		o->fd = -1;
		if (!st && rename(o->tmp, o->path) < 0)
			st = tfm_seterr(TFM_E_CREATE, "%s: rename: %s", o->path, strerror(errno));
		if (!st) {
			temps_set(o->tmp, NULL);
			free(o->tmp);
			o->tmp = NULL;
		}
	}
	tfm_out_abort(o);
	return st;
}

void tfm_out_abort(struct tfm_out *o)
{
	if (!o)
		return;
	if (o->tmp) {
		if (o->fd >= 0)
			close(o->fd);
		unlink(o->tmp);
		temps_set(o->tmp, NULL);
	}
	if (o->zs)
		ZSTD_freeCStream(o->zs);
	free(o->tmp);
	free(o->path);
	free(o->buf);
	free(o);
}

int tfm_out_isatty(const char *path)
{
	return (!path || !strcmp(path, "-")) && isatty(1);
}
