/* fuzz_l2ctok.c: a llama2.c tokenizer.bin from untrusted bytes, both ways
 * tfm reads one: directly as the tokenizer of a llama2.c model
 * (tfm_tokenizer_from_llama2c, with the vocabulary size given or counted)
 * and imported into GGUF keys by tfm-convert --vocab (tokimport.h). */
#include "tokimport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		fuzz_init();
	const int64_t nv[] = { 0, 3, 512 };
	for (int i = 0; i < 3; i++) {
		struct tfm_tokenizer *t = NULL;
		int st = tfm_tokenizer_from_llama2c(&t, data, size, nv[i]);
		fuzz_check_status(st);
		if (!st) {
			FUZZ_ASSERT(nv[i] == 0 || tfm_tokenizer_n_vocab(t) == nv[i]);
			if (i == 0)
				fuzz_tokenizer(t, data, size < 256 ? size : 256);
		}
		tfm_tokenizer_free(t);
	}
	fuzz_tok_file("tokenizer.bin", data, size);
	return 0;
}
