/* rwkv-import.c: the RWKV world vocabulary file (rwkv_vocab_v20230424.txt:
 * one token a line, "<id> <Python str or bytes literal> <byte length>",
 * ids 1, 2, ... in order) into the tokenizer.ggml.* keys as llama.cpp's
 * convert_hf_to_gguf.py _set_vocab_rwkv_world writes them: token 0 "<s>"
 * (control; BOS and EOS), then each token's bytes as Python's
 * repr(bytes)[2:-1], model "rwkv", end of turn 261 ("\n\n"). */
#include "vocab-impl.h"
#include "tokenizer-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tfm_rwkv_world_probe(const uint8_t *data, size_t size)
{
	/* the first line is "1 " and a quote ('\x00' in the real file) */
	return size >= 4 && !memcmp(data, "1 ", 2) &&
	       (data[2] == '\'' || data[2] == '"' || (data[2] == 'b' && (data[3] == '\'' ||
								    data[3] == '"')));
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The Python literal s[n] (str or bytes, quoted) as UTF-8 bytes into out
 * (room for n bytes: no escape decodes to more than it takes); the errors
 * say what, the caller adds where. */
static int py_literal(const char *s, size_t n, char *out, size_t *out_n)
{
	int bytes = n > 0 && s[0] == 'b';
	if (bytes) {
		s++;
		n--;
	}
	if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
		return tfm_seterr(TFM_E_FORMAT, "not a quoted Python string");
	char q = s[0];
	size_t k = 0, end = n - 1;
	for (size_t i = 1; i < end; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == (unsigned char)q)
			return tfm_seterr(TFM_E_FORMAT, "unescaped quote inside the string");
		if (bytes && c >= 0x80)
			return tfm_seterr(TFM_E_FORMAT, "non-ASCII character in a bytes literal");
		if (c != '\\') {
			out[k++] = (char)c;
			continue;
		}
		if (++i >= end)
			return tfm_seterr(TFM_E_FORMAT, "string ends with a backslash");
		uint32_t cp;
		int hex = 0;
		switch (s[i]) {
		case '\\': case '\'': case '"': out[k++] = s[i]; continue;
		case 'a': out[k++] = '\a'; continue;
		case 'b': out[k++] = '\b'; continue;
		case 'f': out[k++] = '\f'; continue;
		case 'n': out[k++] = '\n'; continue;
		case 'r': out[k++] = '\r'; continue;
		case 't': out[k++] = '\t'; continue;
		case 'v': out[k++] = '\v'; continue;
		case 'x': hex = 2; break;
		case 'u': hex = bytes ? 0 : 4; break;
		case 'U': hex = bytes ? 0 : 8; break;
		case 'N':
			if (!bytes)
				return tfm_seterr(TFM_E_FORMAT, "\\N{...} escapes are not supported");
			break;
		default:
			if (s[i] >= '0' && s[i] <= '7') {
				cp = 0;
				for (int d = 0; d < 3 && i < end && s[i] >= '0' && s[i] <= '7'; d++)
					cp = cp * 8 + (uint32_t)(s[i++] - '0');
				i--;
				goto put_cp;
			}
		}
		if (!hex) { /* Python keeps an unknown escape as it is */
			out[k++] = '\\';
			out[k++] = s[i];
			continue;
		}
		cp = 0;
		for (int d = 1; d <= hex; d++) {
			int h = i + (size_t)d < end ? hexval(s[i + d]) : -1;
			if (h < 0)
				return tfm_seterr(TFM_E_FORMAT, "bad \\%c escape", s[i]);
			cp = cp * 16 + (uint32_t)h;
		}
		i += (size_t)hex;
put_cp:
		if (bytes) {
			if (cp > 0xff)
				return tfm_seterr(TFM_E_FORMAT, "octal escape beyond a byte");
			out[k++] = (char)cp;
		} else {
			if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
				return tfm_seterr(TFM_E_FORMAT, "code point U+%04X cannot be UTF-8", cp);
			/* \xNN is 4 bytes of text for at most 2 of UTF-8; \ooo in a
			 * str is at most U+01FF, 2 bytes for 2 or more */
			k += tfm_utf8_encode(cp, out + k);
		}
	}
	*out_n = k;
	return TFM_OK;
}

/* Python's repr(bytes)[2:-1]: quotes chosen as Python chooses them. */
static size_t py_repr(const unsigned char *b, size_t n, char *out)
{
	int sq = memchr(b, '\'', n) != NULL, dq = memchr(b, '"', n) != NULL;
	char q = sq && !dq ? '"' : '\'';
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = b[i];
		if (c == (unsigned char)q || c == '\\') {
			out[k++] = '\\';
			out[k++] = (char)c;
		} else if (c == '\t' || c == '\n' || c == '\r') {
			out[k++] = '\\';
			out[k++] = c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
		} else if (c < 0x20 || c >= 0x7f) {
			static const char hex[] = "0123456789abcdef";
			out[k++] = '\\';
			out[k++] = 'x';
			out[k++] = hex[c >> 4];
			out[k++] = hex[c & 15];
		} else {
			out[k++] = (char)c;
		}
	}
	return k;
}

int tfm_vb_from_rwkv_world(struct tfm_vb *v, const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char *raw = NULL, *esc = NULL;
	int64_t line = 0;
	int st;
	if ((st = tfm_vb_set(v, 0, "<s>", 3, 0.0f, TFM_TOKT_CONTROL)))
		return st;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), full = n;
		line++;
		if (n && p[n - 1] == '\r')
			n--;
		const char *sp1 = memchr(p, ' ', n), *sp2 = n ? p + n - 1 : p;
		while (sp2 > p && *sp2 != ' ')
			sp2--;
		if (!sp1 || sp2 <= sp1) {
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: not '<id> <string> <length>'",
					(long long)line);
			goto done;
		}
		char num[24];
		long long id, len;
		char *e;
		size_t a = (size_t)(sp1 - p), b = (size_t)(p + n - sp2 - 1);
		errno = 0;
		if (a == 0 || a >= sizeof num || (memcpy(num, p, a), num[a] = 0,
		    id = strtoll(num, &e, 10), *e || errno) || id != line) {
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: id '%.*s', expected %lld",
					(long long)line, (int)(a < 24 ? a : 24), p, (long long)line);
			goto done;
		}
		if (b == 0 || b >= sizeof num || (memcpy(num, sp2 + 1, b), num[b] = 0,
		    len = strtoll(num, &e, 10), *e || errno) || len < 0) {
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: bad length '%.*s'", (long long)line,
					(int)(b < 24 ? b : 24), sp2 + 1);
			goto done;
		}
		size_t ln = (size_t)(sp2 - sp1 - 1), got = 0;
		free(raw);
		free(esc);
		raw = tfm_malloc(ln + 1);
		esc = tfm_malloc(4 * ln + 1);
		if (!raw || !esc) {
			st = TFM_E_NOMEM;
			goto done;
		}
		if ((st = py_literal(sp1 + 1, ln, raw, &got))) {
			tfm_adderr(st, "line %lld", (long long)line);
			goto done;
		}
		if ((long long)got != len) {
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: the string has %zu bytes, the line "
					"says %lld", (long long)line, got, len);
			goto done;
		}
		size_t en = py_repr((const unsigned char *)raw, got, esc);
		if ((st = tfm_vb_set(v, id, esc, en, 0.0f, TFM_TOKT_NORMAL)))
			goto done;
		p += full + (nl ? 1 : 0);
	}
	if (line == 0) {
		st = tfm_seterr(TFM_E_FORMAT, "no tokens");
		goto done;
	}
	v->model = "rwkv";
	v->pre = NULL;
	v->bos = v->eos = 0;
	st = TFM_OK;
done:
	free(raw);
	free(esc);
	return st;
}

int tfm_tokenizer_from_rwkv_world(struct tfm_tokenizer **out, const uint8_t *data, size_t size)
{
	struct tfm_ckpt_file f = { (char *)"rwkv_vocab_v20230424.txt", (uint8_t *)data, size };
	struct tfm_ckpt c = { 0 };
	struct tfm_gguf *g = NULL;
	int st;
	*out = NULL;
	c.source = "vocabulary";
	c.files = &f;
	c.n_files = 1;
	if (!(st = tfm_gguf_new(&g)) && !(st = tfm_tokenizer_to_gguf(&c, g)))
		st = tfm_tokenizer_from_gguf(out, g);
	tfm_gguf_free(g);
	return st;
}
