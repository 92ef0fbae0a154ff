/* dispatch.c: the one place that knows which kernel backends exist.  "auto"
 * is the best available (CPU until the CUDA backend lands); "ref" is the
 * scalar specification, selectable for debugging. */
#include "tfm.h"
#include "kernels/backend.h"

#include <string.h>

extern const struct tfm_backend tfm_ref_backend;
extern const struct tfm_backend tfm_cpu_backend;

static const struct tfm_backend *const all[] = {&tfm_ref_backend, &tfm_cpu_backend};

const struct tfm_backend *tfm_backend_ref(void) { return &tfm_ref_backend; }
const struct tfm_backend *tfm_backend_cpu(void) { return &tfm_cpu_backend; }
int tfm_backend_count(void) { return (int)(sizeof all / sizeof all[0]); }

const struct tfm_backend *tfm_backend_at(int i)
{
	return i >= 0 && i < tfm_backend_count() ? all[i] : NULL;
}

int tfm_backend_find(const struct tfm_backend **be, const char *name)
{
	if (!name || !strcmp(name, "auto") || !strcmp(name, "cpu")) {
		*be = &tfm_cpu_backend;
		return TFM_OK;
	}
	if (!strcmp(name, "ref")) {
		*be = &tfm_ref_backend;
		return TFM_OK;
	}
	if (!strcmp(name, "cuda"))
		return tfm_seterr(TFM_E_DEVICE, "cuda: this build has no CUDA backend");
	return tfm_seterr(TFM_E_INVAL, "%s: unknown device (auto, cpu, cuda, ref)", name);
}
