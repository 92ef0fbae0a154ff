/* fuzz_ckpt.c: any checkpoint file from untrusted bytes through
 * tfm_ckpt_open, as tfm-convert and tfm-inspect open it: zstd, the format
 * bids (plain tar and stored zip read in place, other archives through
 * libarchive, safetensors, PyTorch zip, llama2.c), a Hugging Face archive's
 * config.json, index and side files.  The bytes go to a memfd, since the
 * reader takes a path. */
#include "fuzz.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct tfm_ckpt *c = NULL;
	char path[64];
	if (!init++)
		fuzz_init();
	int fd = memfd_create("fuzz-ckpt", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t done = 0;
	while (done < size) {
		ssize_t w = write(fd, data + done, size - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int st = done == size ? tfm_ckpt_open(&c, path, NULL) : TFM_E_IO;
	fuzz_check_status(st);
	if (!st) {
		FUZZ_ASSERT(c->format);
		for (int64_t i = 0; i < c->n_tensors; i++)
			fuzz_touch(c->tensors[i].data, c->tensors[i].nbytes);
		for (int i = 0; i < c->n_files; i++)
			fuzz_touch(c->files[i].data, c->files[i].size);
		if (c->config) {
			struct tfm_spec s;
			fuzz_check_status(tfm_spec_from_config(&s, c->config));
		}
	}
	tfm_ckpt_close(c);
	close(fd);
	return 0;
}
