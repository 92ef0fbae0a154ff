/* fuzz_safetensors.c: a lone .safetensors file from untrusted bytes (header
 * length, JSON header, dtypes, shapes, data_offsets): every tensor it
 * accepts must lie inside the input, which this reads whole. */
#include "fuzz.h"

#include "format/ckpt-impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct tfm_ckpt *c = NULL;
	if (!init++)
		fuzz_init();
	if (tfm_ckpt_new(&c, "fuzz.safetensors", "safetensors"))
		return 0;
	int st = tfm_safetensors_parse(c, data, size, NULL);
	fuzz_check_status(st);
	if (!st) {
		for (int64_t i = 0; i < c->n_tensors; i++) {
			const struct tfm_ckpt_tensor *t = &c->tensors[i];
			const uint8_t *p = t->data;
			FUZZ_ASSERT(t->nbytes == 0 || (p >= data && p + t->nbytes <= data + size));
			FUZZ_ASSERT(tfm_ckpt_find(c, t->name) == t);
			fuzz_touch(t->data, t->nbytes);
		}
	}
	tfm_ckpt_close(c);
	return 0;
}
