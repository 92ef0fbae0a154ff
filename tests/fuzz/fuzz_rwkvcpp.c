/* fuzz_rwkvcpp.c: an rwkv.cpp model file from untrusted bytes (the ggmf
 * header, tensor records of 1 to 3 dims): the bid, the parse, the synthesized config
 * through tfm_spec_from_config, and when it all holds one evaluation on the
 * checkpoint's own weights (the file size bounds them). */
#include "fuzz.h"

#include "format/ckpt-impl.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct tfm_ckpt *c = NULL;
	struct tfm_spec s;
	if (!init++)
		fuzz_init();
	tfm_rwkvcpp_bid(data, size);
	if (tfm_ckpt_new(&c, "fuzz.bin", "rwkv.cpp"))
		return 0;
	int st = tfm_rwkvcpp_parse(c, data, size);
	fuzz_check_status(st);
	if (!st) {
		FUZZ_ASSERT(c->config);
		struct tfm_model_tensor *t = calloc((size_t)c->n_tensors + 1, sizeof *t);
		for (int64_t i = 0; t && i < c->n_tensors; i++) {
			const struct tfm_ckpt_tensor *ct = &c->tensors[i];
			fuzz_touch(ct->data, ct->nbytes);
			t[i] = (struct tfm_model_tensor){ ct->name, ct->type, ct->n_dims,
				{ ct->ne[0], ct->ne[1], ct->ne[2], ct->ne[3] }, ct->data };
		}
		st = tfm_spec_from_config(&s, c->config);
		fuzz_check_status(st);
		if (!st && t) {
			fuzz_spec(&s);
			fuzz_model(&s, t, c->n_tensors);
		}
		free(t);
	}
	tfm_ckpt_close(c);
	return 0;
}
