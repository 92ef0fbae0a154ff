/* blob.c: the whole of an input (path, "-" or pipe) as bytes in memory.
 * Regular files are mmapped; pipes and stdin are read.  A zstd frame is
 * decompressed into memory transparently. */
#include "tfm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static int read_all(int fd, uint8_t **out, size_t *size, const char *name)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = tfm_malloc(cap);
	if (!buf)
		return TFM_E_NOMEM;
	for (;;) {
		if (n == cap) {
			uint8_t *nb = tfm_realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return TFM_E_NOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return tfm_seterr(TFM_E_IO, "%s: read: %s", name, strerror(errno));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*size = n;
	return TFM_OK;
}

static int is_zstd(const uint8_t *p, size_t n)
{
	return n >= 4 && p[0] == 0x28 && p[1] == 0xB5 && p[2] == 0x2F && p[3] == 0xFD;
}

/* The decompression buffer grows by doubling up to max bytes (the expansion
 * and memory caps); needing more than max is refused. */
static int zgrow(uint8_t **buf, size_t *cap, size_t max, const struct tfm_blob *b)
{
	if (*cap > max) /* already past: the check names both sizes */
		return tfm_expand_check((int64_t)b->size, (int64_t)*cap, b->name);
	size_t nc = *cap * 2 > max ? max + 1 : *cap * 2;
	uint8_t *nb = tfm_realloc(*buf, nc);
	if (!nb)
		return TFM_E_NOMEM;
	*buf = nb;
	*cap = nc;
	return TFM_OK;
}

/* Decompress a zstd stream of unknown size with the streaming API.  A
 * declared content size is checked before anything is allocated, and the
 * output may not pass tfm_expand_cap() or the memory limit. */
static int unzstd(struct tfm_blob *b)
{
	int64_t lim = tfm_expand_cap((int64_t)b->size);
	const char *src;
	int64_t mem = tfm_mem_limit(&src);
	if (mem > 0 && mem < lim)
		lim = mem;
	size_t max = (uint64_t)lim > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)lim;
	size_t cap = b->size * 4 + (1 << 20), n = 0;
	unsigned long long hint = ZSTD_getFrameContentSize(b->data, b->size);
	if (hint != ZSTD_CONTENTSIZE_UNKNOWN && hint != ZSTD_CONTENTSIZE_ERROR) {
		int st = tfm_expand_check((int64_t)b->size,
					  hint > (unsigned long long)INT64_MAX ? INT64_MAX
									      : (int64_t)hint, b->name);
		if (st)
			return tfm_adderr(st, "zstd frame header");
		cap = (size_t)hint + 1;
	}
	if (cap > max + 1)
		cap = max + 1;
	ZSTD_DStream *ds = ZSTD_createDStream();
	if (!ds)
		return tfm_seterr(TFM_E_NOMEM, "zstd: out of memory");
	uint8_t *buf = tfm_malloc(cap);
	int st = TFM_OK;
	if (!buf) {
		ZSTD_freeDStream(ds);
		return TFM_E_NOMEM;
	}
	ZSTD_inBuffer in = { b->data, b->size, 0 };
	size_t ret = 1;
	while (in.pos < in.size) {
		if (n == cap && (st = zgrow(&buf, &cap, max, b)))
			goto out;
		ZSTD_outBuffer ob = { buf + n, cap - n, 0 };
		ret = ZSTD_decompressStream(ds, &ob, &in);
		if (ZSTD_isError(ret)) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: zstd: %s", b->name,
					ZSTD_getErrorName(ret));
			goto out;
		}
		n += ob.pos;
		if (ob.pos == 0 && in.pos == in.size)
			break;
	}
	/* flush what remains buffered inside the decoder */
	while (ret != 0) {
		if (n == cap && (st = zgrow(&buf, &cap, max, b)))
			goto out;
		ZSTD_outBuffer ob = { buf + n, cap - n, 0 };
		ret = ZSTD_decompressStream(ds, &ob, &in);
		if (ZSTD_isError(ret)) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: zstd: %s", b->name,
					ZSTD_getErrorName(ret));
			goto out;
		}
		n += ob.pos;
		if (ob.pos == 0) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: zstd: truncated stream", b->name);
			goto out;
		}
	}
	if (n > max)
		st = tfm_expand_check((int64_t)b->size, (int64_t)n, b->name);
out:
	ZSTD_freeDStream(ds);
	if (st) {
		free(buf);
		return st;
	}
	/* replace the compressed bytes with the decompressed ones */
	if (b->map_)
		munmap(b->map_, b->map_size_);
	free(b->owned_);
	b->map_ = NULL;
	b->owned_ = buf;
	b->data = buf;
	b->size = n;
	return TFM_OK;
}

int tfm_blob_open(struct tfm_blob *b, const char *path)
{
	memset(b, 0, sizeof *b);
	int fd = 0, st = TFM_OK;
	int use_stdin = !path || !strcmp(path, "-");
	b->name = tfm_strdup(use_stdin ? "<stdin>" : path);
	if (!b->name)
		return TFM_E_NOMEM;
	if (!use_stdin) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			st = tfm_seterr(TFM_E_OPEN, "%s: %s", path, strerror(errno));
			goto fail;
		}
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		st = tfm_seterr(TFM_E_IO, "%s: %s", b->name, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(sb.st_mode)) {
		st = tfm_seterr(TFM_E_OPEN, "%s: is a directory", b->name);
		goto fail;
	}
	if (S_ISREG(sb.st_mode) && sb.st_size > 0) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			st = tfm_seterr(TFM_E_IO, "%s: mmap: %s", b->name, strerror(errno));
			goto fail;
		}
		b->map_ = m;
		b->map_size_ = (size_t)sb.st_size;
		b->data = m;
		b->size = (size_t)sb.st_size;
	} else {
		st = read_all(fd, &b->owned_, &b->size, b->name);
		if (st)
			goto fail;
		b->data = b->owned_;
	}
	if (!use_stdin)
		close(fd);
	fd = -1;
	if (is_zstd(b->data, b->size) && (st = unzstd(b)))
		goto fail;
	return TFM_OK;
fail:
	if (fd > 0)
		close(fd);
	tfm_blob_close(b);
	return st;
}

int tfm_input_peek(const char *path, void *buf, size_t n, size_t *got)
{
	*got = 0;
	if (!path || !strcmp(path, "-"))
		return tfm_seterr(TFM_E_INVAL, "<stdin>: cannot be peeked at");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tfm_seterr(TFM_E_OPEN, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		close(fd);
		return tfm_seterr(TFM_E_OPEN, "%s: is a directory", path);
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return tfm_seterr(TFM_E_INVAL, "%s: not a regular file: cannot be peeked at", path);
	}
	uint8_t raw[1 << 16];
	ZSTD_DStream *ds = NULL;
	int st = TFM_OK;
	for (int first = 1; *got < n; first = 0) {
		ssize_t r = read(fd, raw, sizeof raw);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			st = tfm_seterr(errno == EISDIR ? TFM_E_OPEN : TFM_E_IO, "%s: %s", path,
					strerror(errno));
			break;
		}
		if (r == 0)
			break;
		if (first && is_zstd(raw, (size_t)r) && !(ds = ZSTD_createDStream())) {
			st = tfm_seterr(TFM_E_NOMEM, "zstd: out of memory");
			break;
		}
		if (!ds) {
			size_t k = (size_t)r < n - *got ? (size_t)r : n - *got;
			memcpy((uint8_t *)buf + *got, raw, k);
			*got += k;
			continue;
		}
		ZSTD_inBuffer in = { raw, (size_t)r, 0 };
		while (in.pos < in.size && *got < n) {
			ZSTD_outBuffer ob = { (uint8_t *)buf + *got, n - *got, 0 };
			size_t z = ZSTD_decompressStream(ds, &ob, &in);
			if (ZSTD_isError(z)) {
				st = tfm_seterr(TFM_E_FORMAT, "%s: zstd: %s", path, ZSTD_getErrorName(z));
				goto out;
			}
			*got += ob.pos;
			if (z == 0) /* end of frame */
				goto out;
		}
	}
out:
	ZSTD_freeDStream(ds);
	close(fd);
	return st;
}

void tfm_blob_wrap(struct tfm_blob *b, const void *data, size_t size, const char *name)
{
	memset(b, 0, sizeof *b);
	b->data = data;
	b->size = size;
	b->name = tfm_strdup(name ? name : "<memory>");
}

void tfm_blob_close(struct tfm_blob *b)
{
	if (!b)
		return;
	if (b->map_)
		munmap(b->map_, b->map_size_);
	free(b->owned_);
	free(b->name);
	memset(b, 0, sizeof *b);
}

int tfm_path_is_dir(const char *path)
{
	struct stat sb;
	return path && strcmp(path, "-") && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}
