/* fuzz_config.c: a Hugging Face config.json from untrusted bytes (bare
 * Infinity / NaN tokens as Python writes them) turned into a spec (what tfm-inspect and tfm-bench --config do): the presets of
 * every model type, the 5.x normalization, the key checks, then the
 * numbers derived from an accepted spec and its GGUF round trip. */
#include "fuzz.h"
#include "format/config-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	json_error_t e;
	struct tfm_spec s;
	if (!init++)
		fuzz_init();
	json_t *j = tfm_config_json(data, size, &e); /* as transformers writes it */
	if (!j)
		return 0;
	int st = tfm_spec_from_config(&s, j);
	fuzz_check_status(st);
	if (!st) {
		FUZZ_ASSERT(tfm_spec_validate(&s) == TFM_OK);
		fuzz_spec(&s);
		/* what tfm-bench --config does next, without the weights */
		fuzz_check_status(tfm_model_check_spec(&s));
	}
	json_decref(j);
	return 0;
}
