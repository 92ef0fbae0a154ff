/* logprobs.c: reading tfm-ppl's log-probability files (--save-logits,
 * --kl-base; formats/logprobs.md) from bytes that may be hostile: the
 * header line is checked for itself (version, k against n_vocab, the
 * record count against the bytes left) and every record's ids and values
 * before any KL is computed from them. */
#include "tfm.h"
#include "eval/eval.h"

#include <math.h>
#include <string.h>

/* The longest header line looked for. */
#define MAX_HEADER 65536

size_t tfm_logprobs_record_bytes(int64_t k)
{
	return 8 + 8 * (size_t)k;
}

static int64_t hint(const json_t *h, const char *key, int64_t dflt)
{
	const json_t *v = json_object_get(h, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

int tfm_logprobs_header(const uint8_t *data, size_t size, const char *name, json_t **hdr,
			size_t *off)
{
	const uint8_t *nl = memchr(data, '\n', size < MAX_HEADER ? size : MAX_HEADER);
	json_error_t e;
	json_t *h = nl ? json_loadb((const char *)data, (size_t)(nl - data), 0, &e) : NULL;
	int st = TFM_OK;
	*hdr = NULL;
	if (!json_is_object(h) || hint(h, "tfm_logprobs", 0) != 2) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: not a tfm-ppl --save-logits file", name);
		goto fail;
	}
	const char *fmt = json_string_value(json_object_get(h, "format"));
	int64_t nv = hint(h, "n_vocab", -1), k = hint(h, "k", -1), n = hint(h, "positions", -1);
	if (!fmt || strcmp(fmt, "topk") || nv < 1 || nv > INT32_MAX ||
	    k != (nv < TFM_LOGPROBS_K ? nv : TFM_LOGPROBS_K) || n < 0) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: bad header (format, n_vocab, k or positions)",
				name);
		goto fail;
	}
	size_t rec = tfm_logprobs_record_bytes(k), left = size - (size_t)(nl - data) - 1;
	if ((uint64_t)n > left / rec || left != rec * (size_t)n) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: truncated (%zu bytes of records, want %lld x %zu)",
				name, left, (long long)n, rec);
		goto fail;
	}
	*hdr = h;
	*off = (size_t)(nl - data) + 1;
	return TFM_OK;
fail:
	json_decref(h);
	return st;
}

/* A log-probability as tfm_logprobs_make writes it: at most 0 (a little
 * more allowed for the rounding of the rest's mass) or -inf; never NaN. */
static int logp_ok(float x)
{
	return !isnan(x) && x <= 0.01f;
}

int tfm_logprobs_read(const uint8_t *p, int64_t k, int64_t n_vocab, struct tfm_logprobs *r,
		      const char *name)
{
	if (k < 0 || k > TFM_LOGPROBS_K)
		return tfm_seterr(TFM_E_INVAL, "%s: %lld entries per record (at most %d)", name,
				  (long long)k, TFM_LOGPROBS_K);
	memcpy(&r->logp_target, p, 4);
	memcpy(&r->logp_rest, p + 4, 4);
	memcpy(r->id, p + 8, 4 * (size_t)k);
	memcpy(r->logp, p + 8 + 4 * (size_t)k, 4 * (size_t)k);
	r->k = (int32_t)k;
	for (int64_t j = 0; j < k; j++) {
		if (r->id[j] < 0 || r->id[j] >= n_vocab)
			return tfm_seterr(TFM_E_FORMAT, "%s: token id %d out of range", name, r->id[j]);
		if (!logp_ok(r->logp[j]))
			return tfm_seterr(TFM_E_FORMAT, "%s: log-probability %g of token %d is not one",
					  name, (double)r->logp[j], r->id[j]);
	}
	if (!logp_ok(r->logp_target) || !logp_ok(r->logp_rest))
		return tfm_seterr(TFM_E_FORMAT, "%s: log-probabilities %g, %g (target, rest) are "
				  "not ones", name, (double)r->logp_target, (double)r->logp_rest);
	return TFM_OK;
}
