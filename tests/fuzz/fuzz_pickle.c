/* fuzz_pickle.c: the restricted unpickler on a bare data.pkl from untrusted
 * bytes: the opcode check, then the state dict (tensor rebuilds, storages,
 * sizes and strides).  Whatever it returns must be self-consistent. */
#include "fuzz.h"

#include "format/ckpt-impl.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct tfm_pickle_tensor *t = NULL;
	int64_t n = 0;
	if (!init++)
		fuzz_init();
	fuzz_check_status(tfm_pickle_check(data, size, "fuzz.pkl"));
	int st = tfm_pickle_state_dict(data, size, "fuzz.pkl", &t, &n);
	fuzz_check_status(st);
	if (!st) {
		FUZZ_ASSERT(n >= 0);
		for (int64_t i = 0; i < n; i++) {
			FUZZ_ASSERT(t[i].name && t[i].storage_key && t[i].storage);
			FUZZ_ASSERT(t[i].n_dims >= 0 && t[i].n_dims <= TFM_PK_MAXDIMS);
			fuzz_touch(t[i].name, strlen(t[i].name));
			fuzz_touch(t[i].storage_key, strlen(t[i].storage_key));
			tfm_pickle_storage_type(t[i].storage);
		}
	}
	tfm_pickle_tensors_free(t, n);
	return 0;
}
