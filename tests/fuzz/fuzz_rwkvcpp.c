/* fuzz_rwkvcpp.c: an rwkv.cpp model file from untrusted bytes (the ggmf
 * header, tensor records of 1 to 3 dims): the bid, the parse, the synthesized config
 * through tfm_spec_from_config, and when it all holds one evaluation on the
 * checkpoint's own weights (the file size bounds them). */
#include "fuzz.h"

#include "format/ckpt-impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		fuzz_init();
	fuzz_ckpt_bytes(data, size, "rwkv.cpp", tfm_rwkvcpp_bid, tfm_rwkvcpp_parse);
	return 0;
}
