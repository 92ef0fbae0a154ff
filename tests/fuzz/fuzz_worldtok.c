/* fuzz_worldtok.c: an RWKV world vocabulary (rwkv_vocab_v20230424.txt)
 * from untrusted bytes, both ways tfm reads one: directly as tfm-tok
 * --vocab does (tfm_tokenizer_from_rwkv_world) and imported into GGUF keys
 * by tfm-convert --vocab (tokimport.h), then the tokenizer run on the
 * bytes themselves. */
#include "tokimport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		fuzz_init();
	struct tfm_tokenizer *t = NULL;
	int st = tfm_tokenizer_from_rwkv_world(&t, data, size);
	fuzz_check_status(st);
	if (!st)
		fuzz_tokenizer(t, data, size < 256 ? size : 256);
	tfm_tokenizer_free(t);
	fuzz_tok_file("rwkv_vocab_v20230424.txt", data, size);
	return 0;
}
