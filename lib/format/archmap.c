/* archmap.c: archive members read in place.  A plain tar (or a .tar.zst,
 * which tfm_blob_open has already decompressed) and a zip of uncompressed
 * ("stored") entries, such as torch writes, keep each member's bytes whole
 * and in order, so members can point into the input instead of being copied
 * out through libarchive.  Only those layouts are walked here: anything
 * unusual (compression, encryption, sparse files, bad checksums or offsets)
 * answers "fall back", and libarchive reads the archive.  Zip CRCs are not
 * checked (that would read every byte); every offset is bounds-checked, so a
 * corrupt file gives wrong values, never a bad read. */
#include "format/ckpt-impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The zip64 extended information (extra field 1) replaces the fields that
 * are 0xffffffff, in this order: size, compressed size, local offset. */
static int zip64_extra(const uint8_t *x, size_t xl, uint64_t *usize, uint64_t *csize,
		       uint64_t *loff)
{
	while (xl >= 4) {
		size_t id = (size_t)le(x, 2), len = (size_t)le(x + 2, 2);
		if (len > xl - 4)
			return -1;
		if (id == 1) {
			const uint8_t *f = x + 4;
			size_t left = len;
			uint64_t *v[3] = { usize, csize, loff };
			for (int i = 0; i < 3; i++) {
				if (*v[i] != 0xffffffffu)
					continue;
				if (left < 8)
					return -1;
				*v[i] = le(f, 8);
				f += 8;
				left -= 8;
			}
			return 0;
		}
		x += 4 + len;
		xl -= 4 + len;
	}
	return 0;
}

/* A zip whose entries are all stored (torch's own, or zip -0). */
static int zip_map(const uint8_t *d, size_t n, struct tfm_ckpt_member **out, int *n_out)
{
	struct tfm_ckpt_member *m = NULL;
	int nm = 0, st = 1;
	if (n < 22)
		return 1;
	size_t eocd = SIZE_MAX, lo = n - 22 > 65535 ? n - 22 - 65535 : 0;
	for (size_t i = n - 22 + 1; i-- > lo;) {
		if (le(d + i, 4) == 0x06054b50u) {
			eocd = i;
			break;
		}
	}
	if (eocd == SIZE_MAX)
		return 1;
	uint64_t entries = le(d + eocd + 10, 2), cdsize = le(d + eocd + 12, 4),
		 cdoff = le(d + eocd + 16, 4);
	if (entries == 0xffff || cdsize == 0xffffffffu || cdoff == 0xffffffffu) {
		/* zip64: the locator sits just before the end record */
		if (eocd < 20 || le(d + eocd - 20, 4) != 0x07064b50u)
			return 1;
		uint64_t z = le(d + eocd - 20 + 8, 8);
		if (z > n || n - z < 56 || le(d + z, 4) != 0x06064b50u)
			return 1;
		entries = le(d + z + 32, 8);
		cdsize = le(d + z + 40, 8);
		cdoff = le(d + z + 48, 8);
	}
	if (cdoff > n || cdsize > n - cdoff || entries > cdsize / 46)
		return 1;
	if (!(m = tfm_calloc((size_t)entries + 1, sizeof *m)))
		return TFM_E_NOMEM;
	const uint8_t *p = d + cdoff, *end = d + cdoff + cdsize;
	for (uint64_t e = 0; e < entries; e++) {
		if (end - p < 46 || le(p, 4) != 0x02014b50u)
			goto out;
		uint64_t flags = le(p + 8, 2), method = le(p + 10, 2), csize = le(p + 20, 4),
			 usize = le(p + 24, 4), loff = le(p + 42, 4);
		size_t nl = (size_t)le(p + 28, 2), el = (size_t)le(p + 30, 2),
		       cl = (size_t)le(p + 32, 2);
		if ((size_t)(end - p) - 46 < nl + el + cl ||
		    zip64_extra(p + 46 + nl, el, &usize, &csize, &loff))
			goto out;
		if ((flags & 1) || method != 0 || csize != usize)
			goto out;  /* encrypted or compressed */
		if (loff > n || n - loff < 30 || le(d + loff, 4) != 0x04034b50u)
			goto out;
		uint64_t data = loff + 30 + le(d + loff + 26, 2) + le(d + loff + 28, 2);
		if (data > n || usize > n - data)
			goto out;
		const char *name = (const char *)p + 46;
		p += 46 + nl + el + cl;
		if (!nl || name[nl - 1] == '/')
			continue;  /* a directory */
		char *nm2 = tfm_malloc(nl + 1);
		if (!nm2) {
			st = TFM_E_NOMEM;
			goto out;
		}
		memcpy(nm2, name, nl);
		nm2[nl] = 0;
		m[nm].name = nm2;
		m[nm].data = (uint8_t *)(d + data);  /* borrowed: never freed */
		m[nm].size = (size_t)usize;
		nm++;
		if (strlen(nm2) != nl)
			goto out;  /* a NUL in the name */
	}
	*out = m;
	*n_out = nm;
	return TFM_OK;
out:
	tfm_ckpt_members_unmap(m, nm);
	return st;
}

/* ---- tar (POSIX ustar, pax and GNU long names) ---- */

/* An octal field, or GNU's base-256 (high bit set); -1 when malformed. */
static int64_t tar_num(const uint8_t *f, size_t n)
{
	int64_t v = 0;
	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -1;  /* negative, or too large */
		for (size_t i = 1; i < n; i++) {
			if (v > (INT64_MAX >> 8))
				return -1;
			v = v << 8 | f[i];
		}
		return v;
	}
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (INT64_MAX >> 3))
			return -1;
		v = v << 3 | (f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -1;
	return v;
}

static int tar_checksum_ok(const uint8_t *h)
{
	int64_t want = tar_num(h + 148, 8), sum = 0;
	for (int i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	return want == sum;
}

/* pax records "LEN key=value\n": path and size override the next header.
 * 0, 1 when malformed, or TFM_E_NOMEM. */
static int pax_parse(const uint8_t *p, size_t n, char **path, int64_t *size)
{
	while (n) {
		size_t len = 0, i = 0;
		while (i < n && p[i] >= '0' && p[i] <= '9' && len < ((size_t)1 << 40))
			len = len * 10 + (size_t)(p[i++] - '0');
		if (i == n || p[i] != ' ' || len <= i + 1 || len > n || p[len - 1] != '\n')
			return 1;
		const uint8_t *kv = p + i + 1, *eq = memchr(kv, '=', len - i - 2);
		if (!eq)
			return 1;
		size_t kl = (size_t)(eq - kv), vl = len - i - 2 - kl - 1;
		if (kl == 4 && !memcmp(kv, "path", 4)) {
			free(*path);
			if (!(*path = tfm_malloc(vl + 1)))
				return TFM_E_NOMEM;
			memcpy(*path, eq + 1, vl);
			(*path)[vl] = 0;
		} else if (kl == 4 && !memcmp(kv, "size", 4)) {
			int64_t v = 0;
			if (vl == 0 || vl > 18)
				return 1;
			for (size_t j = 0; j < vl; j++) {
				if (eq[1 + j] < '0' || eq[1 + j] > '9')
					return 1;
				v = v * 10 + (eq[1 + j] - '0');
			}
			*size = v;
		}
		p += len;
		n -= len;
	}
	return 0;
}

static int tar_map(const uint8_t *d, size_t n, struct tfm_ckpt_member **out, int *n_out)
{
	struct tfm_ckpt_member *m = NULL;
	int nm = 0, cap = 0, st = 1;
	char *long_name = NULL;
	int64_t long_size = -1;
	size_t off = 0;
	for (;;) {
		if (n - off < 512)
			goto out;  /* no end-of-archive blocks: truncated */
		const uint8_t *h = d + off;
		int zero = 1;
		for (int i = 0; i < 512 && zero; i++)
			zero = !h[i];
		if (zero)
			break;
		if (!tar_checksum_ok(h))
			goto out;
		int64_t size = long_size >= 0 ? long_size : tar_num(h + 124, 12);
		size_t data = off + 512;
		if (size < 0 || (uint64_t)size > n - data)
			goto out;
		int type = h[156];
		if (type == 'x' || type == 'L') {
			if (type == 'x') {
				int r = pax_parse(d + data, (size_t)size, &long_name, &long_size);
				if (r) {
					st = r;  /* 1: fall back; or no memory */
					goto out;
				}
			} else {
				free(long_name);
				if (!(long_name = tfm_malloc((size_t)size + 1))) {
					st = TFM_E_NOMEM;
					goto out;
				}
				memcpy(long_name, d + data, (size_t)size);
				long_name[size] = 0;
			}
		} else if (type == '0' || type == 0 || type == '7') {
			char name[256 + 2];
			const char *nm2 = long_name;
			if (!nm2) {
				/* POSIX ustar: prefix "/" name; GNU's magic has no prefix */
				size_t l = strnlen((const char *)h, 100), pl = 0;
				if (!memcmp(h + 257, "ustar\0", 6))
					pl = strnlen((const char *)h + 345, 155);
				memcpy(name, h + 345, pl);
				if (pl)
					name[pl++] = '/';
				memcpy(name + pl, h, l);
				name[pl + l] = 0;
				nm2 = name;
			}
			while (nm2[0] == '.' && nm2[1] == '/')
				nm2 += 2;
			if (nm >= cap) {
				int64_t c64 = cap ? cap * 2 : 16;
				struct tfm_ckpt_member *mm = tfm_realloc(m, (size_t)c64 * sizeof *m);
				if (!mm) {
					st = TFM_E_NOMEM;
					goto out;
				}
				m = mm;
				cap = (int)c64;
			}
			if (!(m[nm].name = tfm_strdup(nm2))) {
				st = TFM_E_NOMEM;
				goto out;
			}
			m[nm].data = (uint8_t *)(d + data);  /* borrowed: never freed */
			m[nm].size = (size_t)size;
			nm++;
		} else if (type != 'g' && type != 'K' && !(type >= '1' && type <= '6')) {
			goto out;  /* sparse, multi-volume or unknown: libarchive's job */
		}
		if (type != 'x' && type != 'L' && type != 'g') {
			free(long_name);
			long_name = NULL;
			long_size = -1;
		}
		off = data + ((size_t)size + 511) / 512 * 512;
		if (off > n)
			goto out;
	}
	free(long_name);
	*out = m;
	*n_out = nm;
	return TFM_OK;
out:
	free(long_name);
	tfm_ckpt_members_unmap(m, nm);
	return st;
}

int tfm_ckpt_archive_map(const uint8_t *data, size_t size, struct tfm_ckpt_member **out,
			 int *n_out)
{
	*out = NULL;
	*n_out = 0;
	if (size >= 262 && !memcmp(data + 257, "ustar", 5))
		return tar_map(data, size, out, n_out);
	if (size >= 4 && !memcmp(data, "PK\x03\x04", 4))
		return zip_map(data, size, out, n_out);
	return 1;
}

void tfm_ckpt_members_unmap(struct tfm_ckpt_member *m, int n)
{
	for (int i = 0; i < n; i++)
		free(m[i].name);
	free(m);
}
