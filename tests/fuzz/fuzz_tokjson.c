/* fuzz_tokjson.c: a Hugging Face tokenizer.json (byte-level BPE with its
 * pre-tokenizer, WordPiece, or Unigram with its normalizer: a base64
 * precompiled_charsmap; added tokens, post-processor) from untrusted
 * bytes, imported into GGUF tokenizer keys as tfm-convert does, read back
 * and run (tokimport.h). */
#include "tokimport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		fuzz_init();
	fuzz_tok_file("tokenizer.json", data, size);
	return 0;
}
