/* fuzz_llama2c.c: a llama2.c checkpoint from untrusted bytes (legacy 7-int
 * header or 'ak42' version 1): the bid, the parse, the synthesized config
 * through tfm_spec_from_config, and when it all holds one evaluation on the
 * checkpoint's own weights (the file size bounds them). */
#include "fuzz.h"

#include "format/ckpt-impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		fuzz_init();
	fuzz_ckpt_bytes(data, size, "llama2c", tfm_llama2c_bid, tfm_llama2c_parse);
	return 0;
}
