/* fuzz_pytorch.c: a PyTorch zip checkpoint from untrusted bytes: the zip
 * (read in place when stored and aligned, else through libarchive), the
 * restricted unpickler on data.pkl, storages and their views.  Every
 * tensor accepted is read whole. */
#include "fuzz.h"

#include "format/ckpt-impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct tfm_ckpt *c = NULL;
	struct tfm_ckpt_member *m = NULL;
	int n = 0;
	if (!init++)
		fuzz_init();
	/* the bid tfm_ckpt_open makes on the member names */
	int st = tfm_ckpt_archive_map(data, size, &m, &n);
	if (st == TFM_OK) {
		for (int i = 0; i < n; i++) {
			const uint8_t *p = m[i].data;
			FUZZ_ASSERT(m[i].name);
			FUZZ_ASSERT(!p || (p >= data && p + m[i].size <= data + size));
			fuzz_touch(p, p ? m[i].size : 0);
		}
		tfm_pytorch_bid(m, n);
		tfm_ckpt_members_unmap(m, n);
	} else {
		FUZZ_ASSERT(st == 1 || st == TFM_E_NOMEM);
	}
	if (tfm_ckpt_new(&c, "fuzz.bin", "pytorch"))
		return 0;
	st = tfm_pytorch_parse(c, data, size, NULL);
	fuzz_check_status(st);
	if (!st)
		for (int64_t i = 0; i < c->n_tensors; i++)
			fuzz_touch(c->tensors[i].data, c->tensors[i].nbytes);
	tfm_ckpt_close(c);
	return 0;
}
