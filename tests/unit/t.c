/* t.c: the unit-test runner shared by every tests/unit/test_*.c. */
#include "t.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

int t_pass, t_fail;
const char *t_name = "";

int t_run(const struct t_case *cases, int n, int argc, char **argv)
{
	for (int i = 0; i < n; i++) {
		/* the filter picks cases; the fixtures run whatever it says */
		int fixture = !strcmp(cases[i].name, "setup") || !strcmp(cases[i].name, "teardown");
		if (argc > 1 && !fixture && !strstr(cases[i].name, argv[1]))
			continue;
		t_name = cases[i].name;
		int before = t_fail;
		cases[i].fn();
		if (getenv("T_VERBOSE"))
			fprintf(stderr, "%s %s\n", t_fail == before ? "ok  " : "FAIL", t_name);
	}
	printf("%d passed, %d failed\n", t_pass, t_fail);
	return t_fail ? 1 : 0;
}

const char *t_shared(void)
{
	const char *s = getenv("TFM_SHARED");
	if (!s)
		s = "../shared";
	struct stat sb;
	if (stat(s, &sb) || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "FAIL: %s is missing: tests need ../shared (DATA.md)\n", s);
		exit(1);
	}
	return s;
}

char *t_path(const char *fmt, ...)
{
	char *p = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	va_end(ap);
	return p;
}

char *t_tmpdir(void)
{
	mkdir("build", 0755);
	mkdir("build/tmp", 0755);
	char *p = t_path("build/tmp/t-XXXXXX");
	if (!mkdtemp(p))
		abort();
	return p;
}

int t_write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(data, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}
