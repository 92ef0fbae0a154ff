/* pretok.c: byte-level BPE pre-tokenizers, by the names GGUF files give in
 * tokenizer.ggml.pre, with the regex lists of llama.cpp's llama-vocab.cpp.
 * As llama.cpp's unicode_regex_split, each regex of a list splits every
 * piece left by the previous one: matches and the text between them both
 * become pieces.  Regexes run in PCRE2 with UTF and UCP. */
#include "tokenizer-impl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#define GPT2_RE "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define LLAMA3_RE "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|" \
	"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_RE "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|" \
	"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define BLOOM_RE " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"

static const char *const re_default[] = {
	"[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2_RE, "\\p{N}+", "[0-9][0-9][0-9]", NULL };
static const char *const re_llama3[] = { LLAMA3_RE, NULL };
static const char *const re_gpt2[] = { GPT2_RE, NULL };
static const char *const re_qwen2[] = { QWEN2_RE, NULL };
static const char *const re_falcon[] = {
	"[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2_RE, "[0-9][0-9][0-9]", NULL };
static const char *const re_starcoder[] = { "\\p{N}", GPT2_RE, NULL };
static const char *const re_deepseek_llm[] = {
	"[\r\n]",
	"\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf"
	"\xc7\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf"
	"\xce\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81"
	"\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f\xb5"
	"\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4\x80-\xe1\xb4\xab"
	"\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc\x95\xe1\xbc\x98-\xe1\xbc\x9d"
	"\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b"
	"\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe"
	"\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b"
	"\xe1\xbf\xa0-\xe1\xbf\xac\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87"
	"\xe2\x84\x8a-\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8"
	"\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84\xbf"
	"\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb"
	"\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-\xea\x99\xad"
	"\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87\xea\x9e\x8b-\xea\x9e\x8e"
	"\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba"
	"\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93"
	"\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2"
	"\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+",
	"\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x80-\xe3\x80\x82]+",
	"\\s+$",
	"[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+",
	"\\p{N}+",
	NULL };
static const char *const re_deepseek_coder[] = {
	"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
	"[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+", "\\p{N}", NULL };
static const char *const re_deepseek3[] = {
	"\\p{N}{1,3}",
	"[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
	"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
	" ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	NULL };
static const char *const re_bloom[] = { BLOOM_RE, NULL };
static const char *const re_viking[] = { BLOOM_RE, "\\p{N}", NULL };

/* Names as llama.cpp's vocabulary loader accepts them. */
static const struct { const char *name; const char *const *re; } pretoks[] = {
	{ "default", re_default },
	{ "llama3", re_llama3 }, { "llama-v3", re_llama3 }, { "llama-bpe", re_llama3 },
	{ "falcon3", re_llama3 }, { "pixtral", re_llama3 }, { "dbrx", re_llama3 },
	{ "smaug-bpe", re_llama3 }, { "chatglm-bpe", re_llama3 }, { "glm4", re_llama3 },
	{ "deepseek-llm", re_deepseek_llm }, { "deepseek-coder", re_deepseek_coder },
	{ "deepseek-v3", re_deepseek3 },
	{ "falcon", re_falcon },
	{ "mpt", re_gpt2 }, { "gpt-2", re_gpt2 }, { "phi-2", re_gpt2 }, { "olmo", re_gpt2 },
	{ "jais", re_gpt2 }, { "jina-es", re_gpt2 }, { "jina-de", re_gpt2 },
	{ "jina-v1-en", re_gpt2 }, { "jina-v2-es", re_gpt2 }, { "jina-v2-de", re_gpt2 },
	{ "jina-v2-code", re_gpt2 }, { "roberta-bpe", re_gpt2 }, { "gigachat", re_gpt2 },
	{ "starcoder", re_starcoder }, { "refact", re_starcoder }, { "command-r", re_starcoder },
	{ "smollm", re_starcoder }, { "codeshell", re_starcoder }, { "exaone", re_starcoder },
	{ "minerva-7b", re_starcoder },
	{ "qwen2", re_qwen2 }, { "stablelm2", re_qwen2 }, { "deepseek-r1-qwen", re_qwen2 },
	{ "poro-chat", re_bloom }, { "bloom", re_bloom }, { "gpt3-finnish", re_bloom },
	{ "viking", re_viking },
};

#define MAX_RE 8

struct tfm_pretok {
	int n;
	pcre2_code *re[MAX_RE];
	pcre2_match_data *md;
};

void tfm_pretok_free(struct tfm_pretok *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++)
		pcre2_code_free(p->re[i]);
	pcre2_match_data_free(p->md);
	free(p);
}

int tfm_pretok_new(struct tfm_pretok **out, const char *name)
{
	const char *const *re = NULL;
	*out = NULL;
	for (size_t i = 0; i < sizeof pretoks / sizeof pretoks[0]; i++)
		if (!strcmp(pretoks[i].name, name))
			re = pretoks[i].re;
	if (!re)
		return tfm_seterr(TFM_E_UNSUPPORTED, "BPE pre-tokenizer '%s' is not supported", name);
	struct tfm_pretok *p = tfm_calloc(1, sizeof *p);
	if (!p)
		return TFM_E_NOMEM;
	for (; *re && p->n < MAX_RE; re++) {
		int err;
		PCRE2_SIZE eoff;
		p->re[p->n] = pcre2_compile((PCRE2_SPTR)*re, PCRE2_ZERO_TERMINATED,
					    PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &eoff, NULL);
		if (!p->re[p->n]) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(err, msg, sizeof msg);
			tfm_pretok_free(p);
			return tfm_seterr(TFM_E_INTERNAL, "pre-tokenizer '%s': regex at %zu: %s",
					  name, (size_t)eoff, (const char *)msg);
		}
		pcre2_jit_compile(p->re[p->n], PCRE2_JIT_COMPLETE);
		p->n++;
	}
	if (!(p->md = pcre2_match_data_create(4, NULL))) {
		tfm_pretok_free(p);
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	}
	*out = p;
	return TFM_OK;
}

/* Pieces are kept as (offset, length) pairs in a growing array. */
struct pieces {
	size_t *v;  /* [n][2] */
	size_t n, cap;
};

static int piece_add(struct pieces *a, size_t off, size_t len)
{
	if (!len)
		return TFM_OK;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		size_t *v = tfm_realloc(a->v, cap * 2 * sizeof *v);
		if (!v)
			return TFM_E_NOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[2 * a->n] = off;
	a->v[2 * a->n + 1] = len;
	a->n++;
	return TFM_OK;
}

/* Split one piece by one regex: matches and gaps. */
static int split_piece(const struct tfm_pretok *p, const pcre2_code *re, const char *s,
		       size_t off, size_t len, struct pieces *out)
{
	size_t pos = 0, prev = 0;
	int st;
	while (pos <= len) {
		int rc = pcre2_match(re, (PCRE2_SPTR)(s + off), len, pos, PCRE2_NO_UTF_CHECK, p->md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return tfm_seterr(TFM_E_INTERNAL, "pre-tokenizer: regex match failed (%d)", rc);
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
		size_t a = ov[0], b = ov[1];
		if (b == a) { /* empty match: step over one character */
			pos = a + 1;
			while (pos < len && ((unsigned char)s[off + pos] & 0xc0) == 0x80)
				pos++;
			continue;
		}
		if ((st = piece_add(out, off + prev, a - prev)) || (st = piece_add(out, off + a, b - a)))
			return st;
		prev = pos = b;
	}
	return piece_add(out, off + prev, len - prev);
}

/* Invalid UTF-8 cannot go to PCRE2 in UTF mode; llama.cpp reads each bad
 * byte as U+FFFD and the words it passes on carry U+FFFD, so do the same. */
int tfm_pretok_split(const struct tfm_pretok *p, const char *text, size_t len,
		     int (*fn)(void *ctx, const char *w, size_t n), void *ctx)
{
	struct pieces a = { 0 }, b = { 0 };
	char *clean = NULL;
	int st = TFM_E_NOMEM;
	size_t clen = 0;
	clean = tfm_malloc(len * 3 + 1);
	if (!clean)
		goto done;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		uint32_t cp = tfm_utf8_decode(text, len, &j);
		if (cp == 0xfffd && !(j - i == 3 && !memcmp(text + i, "\xef\xbf\xbd", 3)))
			j = i + 1;
		if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			cp = 0xfffd;
		char u[4];
		size_t n = (cp == 0xfffd) ? tfm_utf8_encode(0xfffd, u) : j - i;
		const char *src = (cp == 0xfffd) ? u : text + i;
		memcpy(clean + clen, src, n);
		clen += n;
		i = j;
	}
	if ((st = piece_add(&a, 0, clen)))
		goto done;
	for (int r = 0; r < p->n; r++) {
		b.n = 0;
		for (size_t k = 0; k < a.n; k++)
			if ((st = split_piece(p, p->re[r], clean, a.v[2 * k], a.v[2 * k + 1], &b)))
				goto done;
		struct pieces tmp = a;
		a = b;
		b = tmp;
	}
	for (size_t k = 0; k < a.n; k++) {
		if ((st = fn(ctx, clean + a.v[2 * k], a.v[2 * k + 1])))
			goto done;
	}
	st = TFM_OK;
done:
	free(a.v);
	free(b.v);
	free(clean);
	return st;
}
