/* charsmap.c: SentencePiece's precompiled_charsmap (normalizer_spec field 3,
 * tokenizers' Precompiled normalizer): a little-endian u32 byte count of a
 * double-array trie (Darts-clone units, u32 each), the units, then the
 * replacement strings, NUL-terminated, that the trie's values index.  Every
 * offset the untrusted blob gives is checked against the blob. */
#include "tokenizer-impl.h"

#include <stdlib.h>
#include <string.h>

int tfm_charsmap_init(struct tfm_charsmap *m, const uint8_t *blob, size_t n)
{
	memset(m, 0, sizeof *m);
	if (n < 4)
		return tfm_seterr(TFM_E_FORMAT, "precompiled_charsmap: %zu bytes, too short", n);
	uint32_t tn = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 |
		      (uint32_t)blob[3] << 24;
	if (tn % 4 || tn == 0 || tn > n - 4)
		return tfm_seterr(TFM_E_FORMAT, "precompiled_charsmap: trie of %u bytes in a blob "
				  "of %zu", tn, n);
	m->n_units = tn / 4;
	m->n_norm = n - 4 - tn;
	m->unit = tfm_malloc(m->n_units * sizeof *m->unit);
	m->norm = tfm_malloc(m->n_norm + 1);
	if (!m->unit || !m->norm) {
		tfm_charsmap_free(m);
		return TFM_E_NOMEM;
	}
	for (size_t i = 0; i < m->n_units; i++) {
		const uint8_t *p = blob + 4 + 4 * i;
		m->unit[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			     (uint32_t)p[3] << 24;
	}
	memcpy(m->norm, blob + 4 + tn, m->n_norm);
	m->norm[m->n_norm] = 0;
	/* tokenizers refuses a replacement part that is not UTF-8 */
	for (size_t i = 0; i < m->n_norm;) {
		size_t j = i;
		uint32_t cp = tfm_utf8_decode(m->norm, m->n_norm, &j);
		if (cp == 0xfffd && (j - i != 3 || memcmp(m->norm + i, "\xef\xbf\xbd", 3))) {
			tfm_charsmap_free(m);
			return tfm_seterr(TFM_E_FORMAT, "precompiled_charsmap: replacement text is "
					  "not UTF-8 at byte %zu", i);
		}
		i = j;
	}
	return TFM_OK;
}

void tfm_charsmap_free(struct tfm_charsmap *m)
{
	free(m->unit);
	free(m->norm);
	memset(m, 0, sizeof *m);
}

/* A unit's offset to its children (Darts-clone: 22 bits, scaled by 256
 * when bit 9 is set). */
static uint32_t unit_offset(uint32_t u)
{
	return (u >> 10) << ((u & (1u << 9)) >> 6);
}

int tfm_charsmap_match(const struct tfm_charsmap *m, const char *s, size_t n, int longest,
		       size_t *key_len, const char **out, size_t *out_len)
{
	size_t pos = 0, best = 0;
	uint32_t val = 0;
	*key_len = 0;
	if (!m->n_units)
		return TFM_OK;
	pos ^= unit_offset(m->unit[0]);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!c)
			break;
		pos ^= c;
		if (pos >= m->n_units)
			break;
		uint32_t u = m->unit[pos];
		if ((u & ((1u << 31) | 0xff)) != c)
			break;
		pos ^= unit_offset(u);
		if (pos >= m->n_units)
			break;
		if ((u >> 8) & 1) {
			best = i + 1;
			val = m->unit[pos] & 0x7fffffffu;
			if (!longest)
				break;
		}
	}
	if (!best)
		return TFM_OK;
	if (val >= m->n_norm)
		return tfm_seterr(TFM_E_FORMAT, "precompiled_charsmap: replacement offset %u past "
				  "the %zu bytes of replacements", val, m->n_norm);
	*key_len = best;
	*out = m->norm + val;
	*out_len = strlen(m->norm + val); /* norm[n_norm] is NUL */
	return TFM_OK;
}
