/* replay.c: a harness without libFuzzer, for `make check`: calls
 * LLVMFuzzerTestOneInput on each file named (a directory: each file in it),
 * or with no arguments on every file of tests/fuzz/regress/NAME/, NAME
 * from the program's name (replay_NAME).  A crash ends the program; else it
 * prints "N passed, 0 failed" for tests/run-all.  Fails when there is
 * nothing to replay, so a harness cannot lose its inputs unnoticed. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int n_run;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return 1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
		n += r;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return 1;
	}
	/* an exact-size copy, so that ASan sees reads past the end */
	uint8_t *in = malloc(n ? n : 1);
	if (in)
		memcpy(in, buf, n);
	free(buf);
	if (!in) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return 1;
	}
	LLVMFuzzerTestOneInput(in, n);
	free(in);
	n_run++;
	return 0;
}

static int run_path(const char *path)
{
	struct stat sb;
	if (stat(path, &sb)) {
		fprintf(stderr, "replay: %s: no such file or directory\n", path);
		return 1;
	}
	if (!S_ISDIR(sb.st_mode))
		return run_file(path);
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort), bad = 0;
	if (n < 0) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char p[4096];
		if (ents[i]->d_name[0] != '.') {
			snprintf(p, sizeof p, "%s/%s", path, ents[i]->d_name);
			bad |= run_path(p);
		}
		free(ents[i]);
	}
	free(ents);
	return bad;
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (!strncmp(base, "replay_", 7))
		base += 7;
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	int bad = 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			bad |= run_path(argv[i]);
	} else {
		char dir[4096];
		snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", base);
		bad = run_path(dir);
	}
	if (!n_run) {
		fprintf(stderr, "replay %s: no inputs\n", base);
		bad = 1;
	}
	printf("%d passed, %d failed\n", bad ? 0 : n_run, bad);
	return bad;
}
