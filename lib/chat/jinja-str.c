/* jinja-str.c: UTF-8 and the character classes of Python's str methods,
 * which templates see (len() and indexing count code points; strip() and
 * split() know Unicode spaces).  Case mapping and letters come from the
 * tokenizers' Unicode tables. */
#include "jinja-impl.h"

#include "text/tokenizer-impl.h"

uint32_t ju_decode(const char *s, size_t n, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t k = *i;
	uint32_t c = u[k];
	size_t len = c < 0x80 ? 1 : c < 0xc2 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 0;
	if (len == 1) {
		*i = k + 1;
		return c;
	}
	if (len == 0 || k + len > n)
		goto bad;
	uint32_t cp = c & (0xff >> (len + 1));
	for (size_t j = 1; j < len; j++) {
		if ((u[k + j] & 0xc0) != 0x80)
			goto bad;
		cp = cp << 6 | (u[k + j] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		goto bad;
	*i = k + len;
	return cp;
bad:
	*i = k + 1;
	return 0xfffd;
}

size_t ju_encode(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A code point starts at every byte that is not a continuation byte (the
 * strings come from JSON or from templates: valid UTF-8). */
size_t ju_len(const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += ((unsigned char)s[i] & 0xc0) != 0x80;
	return k;
}

size_t ju_offset(const char *s, size_t n, size_t idx)
{
	size_t i = 0;
	while (i < n && idx > 0) {
		i++;
		while (i < n && ((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		idx--;
	}
	return i;
}

int ju_isspace(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202f || c == 0x205f || c == 0x3000;
}

size_t ju_space_at(const char *s, size_t n, size_t i)
{
	if (i >= n)
		return 0;
	if ((unsigned char)s[i] < 0x80)
		return ju_isspace((unsigned char)s[i]) ? 1 : 0;
	size_t j = i;
	uint32_t c = ju_decode(s, n, &j);
	return ju_isspace(c) ? j - i : 0;
}

size_t ju_space_before(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	if ((unsigned char)s[n - 1] < 0x80)
		return ju_isspace((unsigned char)s[n - 1]) ? 1 : 0;
	size_t b = n - 1;
	while (b > 0 && n - b < 4 && ((unsigned char)s[b] & 0xc0) == 0x80)
		b--;
	size_t j = b;
	uint32_t c = ju_decode(s, n, &j);
	return j == n && ju_isspace(c) ? n - b : 0;
}

uint32_t ju_upper(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
	return tfm_uc_upper(cp);
}

uint32_t ju_lower(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
	return tfm_uc_lower(cp);
}

int ju_isalpha(uint32_t cp)
{
	if (cp < 0x80)
		return (cp | 32) >= 'a' && (cp | 32) <= 'z';
	return (tfm_uc_flags(cp) & TFM_UC_LETTER) != 0;
}

int ju_isdigit(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= '0' && cp <= '9';
	return (tfm_uc_flags(cp) & TFM_UC_NUMBER) != 0;
}

int ju_isalnum(uint32_t cp)
{
	return ju_isalpha(cp) || ju_isdigit(cp);
}
