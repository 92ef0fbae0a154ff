/* fuzz_pplshard.c: tfm-ppl -F json results from untrusted bytes, as
 * tfm-ppl --merge reads its shard files: the "sums" object of one result,
 * or of each result in a JSON array, parsed, merged in order and turned
 * into means and JSON again. */
#include "fuzz.h"

#include "eval/eval.h"

#include <stdlib.h>

static int one(struct tfm_ppl_acc *total, const json_t *j)
{
	struct tfm_ppl_acc part;
	int st = tfm_ppl_acc_from_json(&part, json_object_get(j, "sums"));
	fuzz_check_status(st);
	if (!st)
		fuzz_check_status(st = tfm_ppl_merge(total, &part));
	return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	json_error_t e;
	struct tfm_ppl_acc total;
	struct tfm_ppl_result r;
	if (!init++)
		fuzz_init();
	json_t *j = json_loadb((const char *)data, size, 0, &e);
	if (!j)
		return 0;
	tfm_ppl_init(&total);
	int st = TFM_OK;
	if (json_is_array(j)) {
		size_t i;
		json_t *x;
		json_array_foreach(j, i, x)
			if ((st = one(&total, x)))
				break;
	} else {
		st = one(&total, j);
	}
	if (!st) {
		tfm_ppl_result(&total, &r);
		json_t *o = tfm_ppl_acc_to_json(&total);
		struct tfm_ppl_acc back;
		/* what tfm-ppl writes, tfm-ppl reads back */
		FUZZ_ASSERT(o && tfm_ppl_acc_from_json(&back, o) == TFM_OK);
		free(json_dumps(o, JSON_COMPACT));
		json_decref(o);
	}
	json_decref(j);
	return 0;
}
