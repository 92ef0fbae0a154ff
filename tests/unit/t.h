/* t.h: the unit-test harness.  Each test program is a list of T(name)
 * functions run by main(); checks count passes and failures, and the
 * program prints "N passed, N failed" and exits non-zero on any failure.
 * TFM_SHARED is the path of ../shared (fail, never skip, when missing). */
#ifndef TFM_T_H
#define TFM_T_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfm.h"

extern int t_pass, t_fail;
extern const char *t_name;

#define CHECK(cond) do { if (cond) t_pass++; else { t_fail++; \
	fprintf(stderr, "FAIL %s: %s:%d: %s\n", t_name, __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { if (cond) t_pass++; else { t_fail++; \
	fprintf(stderr, "FAIL %s: %s:%d: %s: ", t_name, __FILE__, __LINE__, #cond); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_OK(expr) do { int st_ = (expr); if (st_ == TFM_OK) t_pass++; else { t_fail++; \
	fprintf(stderr, "FAIL %s: %s:%d: %s: %s (%s)\n", t_name, __FILE__, __LINE__, #expr, \
		tfm_strstatus(st_), tfm_errmsg()); } } while (0)
#define CHECK_ST(expr, want) do { int st_ = (expr); if (st_ == (want)) t_pass++; else { t_fail++; \
	fprintf(stderr, "FAIL %s: %s:%d: %s: got %s, want %s (%s)\n", t_name, __FILE__, __LINE__, \
		#expr, tfm_strstatus(st_), tfm_strstatus(want), tfm_errmsg()); } } while (0)
/* |got - want| <= atol + rtol * |want| */
#define CHECK_CLOSE(got, want, atol, rtol) do { double g_ = (got), w_ = (want); \
	if (fabs(g_ - w_) <= (atol) + (rtol) * fabs(w_)) t_pass++; else { t_fail++; \
	fprintf(stderr, "FAIL %s: %s:%d: %s = %.9g, want %.9g\n", t_name, __FILE__, __LINE__, \
		#got, g_, w_); } } while (0)

typedef void (*t_fn)(void);
struct t_case { const char *name; t_fn fn; };
/* Each test file defines: static const struct t_case t_cases[] = {...}; and
 * T_MAIN().  The program's argument, if any, runs only the cases whose name
 * contains it; cases named "setup" and "teardown" run whatever it says. */
int t_run(const struct t_case *cases, int n, int argc, char **argv);
#define T_MAIN(cases) int main(int argc, char **argv) \
	{ return t_run(cases, (int)(sizeof(cases) / sizeof((cases)[0])), argc, argv); }

/* Paths: the project root (cwd of make check) and ../shared. */
const char *t_shared(void);                 /* exits with a failure if missing */
char *t_path(const char *fmt, ...);         /* malloc'd formatted path */
char *t_tmpdir(void);                       /* fresh directory under build/tmp */
int t_write_file(const char *path, const void *data, size_t n);

#endif
