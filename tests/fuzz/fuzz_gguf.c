/* fuzz_gguf.c: a GGUF from untrusted bytes: parse (keys, nested arrays,
 * tensor infos), walk every getter, read the spec (tfm.* keys or
 * llama.cpp's), build the tokenizer when the keys are there, and when
 * everything holds bind the weights and run one prefill and one decode step
 * on a context of 4 positions (the bytes bound the weights, so the shapes
 * stay tiny). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct tfm_gguf *g = NULL;
	struct tfm_spec s;
	if (!init++)
		fuzz_init();
	int st = tfm_gguf_parse(&g, data, size, "fuzz.gguf");
	fuzz_check_status(st);
	if (st)
		return 0;
	fuzz_walk_gguf(g);
	fuzz_gguf_tokenizer(g, data, size < 256 ? size : 256);
	st = tfm_spec_from_gguf(&s, g);
	fuzz_check_status(st);
	if (!st && !(st = tfm_spec_validate(&s))) {
		fuzz_spec(&s);
		int64_t n = tfm_gguf_n_tensors(g);
		struct tfm_model_tensor *t = calloc((size_t)n + 1, sizeof *t);
		for (int64_t i = 0; t && i < n; i++) {
			const struct tfm_gguf_tensor *gt = tfm_gguf_tensor(g, i);
			t[i] = (struct tfm_model_tensor){ gt->name, gt->type, gt->n_dims,
				{ gt->ne[0], gt->ne[1], gt->ne[2], gt->ne[3] }, gt->data };
		}
		if (t)
			fuzz_model(&s, t, n);
		free(t);
	}
	fuzz_check_status(st);
	tfm_gguf_free(g);
	return 0;
}
