/* fuzz_spm.c: a SentencePiece tokenizer.model (protobuf ModelProto: pieces,
 * scores, types, trainer and normalizer specs) from untrusted bytes,
 * imported into GGUF tokenizer keys as tfm-convert does, read back and run
 * (tokimport.h). */
#include "tokimport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		fuzz_init();
	fuzz_tok_file("tokenizer.model", data, size);
	return 0;
}
