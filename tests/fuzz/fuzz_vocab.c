/* fuzz_vocab.c: the tokenizer files of a checkpoint together, from
 * untrusted bytes: a BERT vocab.txt, vocab.json + merges.txt, or a
 * tokenizer.json, with tokenizer_config.json (special tokens by content,
 * add_bos/add_eos), generation_config.json and config.json (vocab_size,
 * eos_token_id) beside it.  The first byte picks the kind; the rest is
 * split at "\n--fuzz--\n" into the files in that order. */
#include "tokimport.h"

#include <string.h>

#define SEP "\n--fuzz--\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	static const char *const kinds[3][6] = {
		{ "vocab.txt", "tokenizer_config.json", "generation_config.json", "config.json" },
		{ "vocab.json", "merges.txt", "tokenizer_config.json", "generation_config.json",
		  "config.json" },
		{ "tokenizer.json", "tokenizer_config.json", "generation_config.json",
		  "config.json" },
	};
	struct tfm_ckpt *c = NULL;
	if (!init++)
		fuzz_init();
	if (size < 1 || tfm_ckpt_new(&c, "fuzz", "hf-dir"))
		return 0;
	const char *const *names = kinds[data[0] % 3];
	const uint8_t *p = data + 1, *end = data + size;
	for (int i = 0; names[i] && p <= end; i++) {
		const uint8_t *e = memmem(p, (size_t)(end - p), SEP, strlen(SEP));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
		if (!strcmp(names[i], "config.json")) {
			json_error_t je;
			c->config = json_loadb((const char *)p, n, 0, &je);
		} else if (tfm_ckpt_add_file(c, names[i], p, n)) {
			goto done;
		}
		if (!e)
			break;
		p = e + strlen(SEP);
	}
	fuzz_tok_import(c, data + 1, size - 1 < 256 ? size - 1 : 256);
done:
	tfm_ckpt_close(c);
	return 0;
}
