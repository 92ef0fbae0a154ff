/* common.c: see common.h. */
#include "common.h"
#include "kernels/backend.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *prog = "tfm";

/* An interrupted run leaves no temporary output behind, and still dies of
 * the signal (exit status 128 + signal, as the shell expects). */
static void on_signal(int sig)
{
	tfm_out_unlink_temps();
	signal(sig, SIG_DFL);
	raise(sig);
}

void cmd_init(const char *name)
{
	prog = name;
	signal(SIGPIPE, SIG_IGN);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa, old;
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue; /* started with it ignored (nohup): keep that */
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
	const char *lvl = getenv("TFM_LOG");
	if (lvl && *lvl >= '0' && *lvl <= '4')
		tfm_log_set_level(*lvl - '0');
}

int cmd_fail(int st)
{
	if (st == TFM_E_PIPE)
		return 0;
	fprintf(stderr, "%s: %s\n", prog, tfm_errmsg());
	return tfm_exit_code(st);
}

int cmd_usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (usage)
		fputs(usage, stderr);
	return 64;
}

void cmd_version(void)
{
	printf("%s (tfm) %s\n", prog, TFM_VERSION);
}

int cmd_close_stdout(void)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		if (errno == EPIPE)
			return 0;
		fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
		return 74;
	}
	return 0;
}

int cmd_opt_i64(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
	if (tfm_parse_i64(arg, lo, hi, out)) {
		fprintf(stderr, "%s: %s: %s\n", prog, opt, tfm_errmsg());
		return 64;
	}
	return 0;
}

int cmd_opt_f64(const char *opt, const char *arg, double lo, double hi, double *out)
{
	if (tfm_parse_f64(arg, lo, hi, out)) {
		fprintf(stderr, "%s: %s: %s\n", prog, opt, tfm_errmsg());
		return 64;
	}
	return 0;
}

int cmd_opt_kv_types(const char *usage, const char *arg, int kept, int *k, int *v)
{
	char buf[64];
	const char *comma = strchr(arg, ',');
	for (int i = 0; i < 2; i++) {
		const char *p = i ? (comma ? comma + 1 : arg) : arg;
		size_t n = i || !comma ? strlen(p) : (size_t)(comma - arg);
		snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), p);
		int *t = i ? v : k;
		*t = n < sizeof buf ? tfm_type_from_name(buf) : -1;
		if (*t < 0 || !tfm_type_info(*t))
			return cmd_usage_error(usage, "-k %s: unknown type '%s'", arg, buf);
		if (kept && !tfm_k_kv_type_ok(*t))
			return cmd_usage_error(usage, "-k %s: a KV cache is f32, f16, bf16, q8_0, "
					       "q5_1, q5_0, q4_1 or q4_0", arg);
	}
	if (comma && strchr(comma + 1, ','))
		return cmd_usage_error(usage, "-k %s: expected TYPE or K,V", arg);
	return 0;
}

const char *cmd_kv_name(char *buf, size_t n, int k, int v)
{
	if (k == v)
		snprintf(buf, n, "%s", tfm_type_name(k));
	else
		snprintf(buf, n, "%s,%s", tfm_type_name(k), tfm_type_name(v));
	return buf;
}

double cmd_kv_elem_bytes(int k, int v)
{
	const struct tfm_type_info *a = tfm_type_info(k), *b = tfm_type_info(v);
	double ea = a ? (double)a->size / (double)a->blck : 4.0;
	double eb = b ? (double)b->size / (double)b->blck : 4.0;
	return (ea + eb) / 2;
}

/* ---- progress ---- */

static struct { double t_last; int shown; } progress;

void *cmd_progress_ctx(int quiet)
{
	return !quiet && isatty(STDERR_FILENO) ? &progress : NULL;
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cmd_progress(void *ctx, int64_t i, int64_t n, double done, double total, const char *name)
{
	/* small files are done before a line helps (TFM_PROGRESS_MIN: bytes) */
	const char *e = getenv("TFM_PROGRESS_MIN");
	if (!ctx || total < (e && *e ? atof(e) : 64.0 * 1048576))
		return;
	if (!name) { /* the end: the line goes away */
		if (progress.shown)
			fputs("\r\033[K", stderr);
		progress.shown = 0;
		return;
	}
	double t = mono_now();
	if (progress.shown && t - progress.t_last < 0.2)
		return;
	progress.t_last = t;
	progress.shown = 1;
	fprintf(stderr, "\r\033[K%s: %3.0f%% (%.2f of %.2f GB) tensor %lld/%lld %.60s", prog,
		100.0 * done / total, done / 1e9, total / 1e9, (long long)i + 1, (long long)n, name);
}
