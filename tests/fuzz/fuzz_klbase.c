/* fuzz_klbase.c: a tfm-ppl --kl-base file (formats/logprobs.md, after zstd)
 * from untrusted bytes: the header line, then every record read and turned
 * into a KL divergence against a fixed model distribution, as tfm-ppl
 * --kl-base does.  Accepted records must give finite results. */
#include "fuzz.h"

#include "eval/eval.h"

#include <math.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	json_t *h = NULL;
	size_t off;
	if (!init++)
		fuzz_init();
	int st = tfm_logprobs_header(data, size, "fuzz.lp", &h, &off);
	fuzz_check_status(st);
	if (st)
		return 0;
	int64_t nv = json_integer_value(json_object_get(h, "n_vocab"));
	int64_t k = json_integer_value(json_object_get(h, "k"));
	int64_t n = json_integer_value(json_object_get(h, "positions"));
	json_decref(h);
	FUZZ_ASSERT(nv >= 1 && k >= 1 && k <= TFM_LOGPROBS_K && n >= 0);
	size_t rb = tfm_logprobs_record_bytes(k);
	FUZZ_ASSERT(off + (size_t)n * rb == size);
	if (nv > (1 << 16))
		return 0; /* the model side of the comparison is this harness's memory */
	float *logits = malloc((size_t)nv * sizeof *logits);
	if (!logits)
		return 0;
	for (int64_t i = 0; i < nv; i++)
		logits[i] = (float)(i % 7) - 3.0f;
	struct tfm_ppl_acc a;
	struct tfm_ppl_result r;
	tfm_ppl_init(&a);
	for (int64_t i = 0; i < n; i++) {
		struct tfm_logprobs rec;
		st = tfm_logprobs_read(data + off + (size_t)i * rb, k, nv, &rec, "fuzz.lp");
		fuzz_check_status(st);
		if (st)
			break;
		int32_t target = (int32_t)(i % nv);
		tfm_ppl_add(&a, logits, nv, target, 1);
		double kl = tfm_kl_add(&a, &rec, logits, nv, target);
		FUZZ_ASSERT(isfinite(kl) && kl >= 0);
	}
	tfm_ppl_result(&a, &r);
	FUZZ_ASSERT(isfinite(r.kld) && isfinite(r.kld_stderr) && isfinite(r.dp_rms));
	free(logits);
	return 0;
}
