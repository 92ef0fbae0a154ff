/* tfm-bench: prompt processing and generation speed of a model (from a file,
 * or with random weights from a config.json or spec GGUF) as a fraction of
 * the machine's limits; the attention kernel alone against the scalar
 * reference, with KV-cache bytes per variant; and the limits themselves.
 * Options and glue only: the measurements are in lib/bench. */
#include "format/config-json.h"
#include "common.h"
#include "bench/attn-family.h"
#include "bench/bench.h"
#include "kernels/backend.h"
#include "model/bench.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: tfm-bench [-hqVv] [-d LIST] [-F FORMAT] [-k K[,V]] [-n LIST] [-p LIST]\n"
	"                 [-pg PP,TG] [-r N] [-t LIST] [--dtype TYPE] [--limits FILE]\n"
	"                 [--mem-limit SIZE] [--seqs N] [--set KEY=VALUE] -m MODEL | --config FILE\n"
	"       tfm-bench --attn [-qv] [-c LIST] [-F FORMAT] [-k K[,V]] [-r N] [-t N]\n"
	"                 [--block N] [--head-dim D] [--heads H] [--kv-heads K]\n"
	"                 [--window W]\n"
	"       tfm-bench --measure-limits [-qv] [-F FORMAT] [-t N]\n";

static const char options_help[] =
	"\n"
	"      --attn              time the attention kernel alone (MHA, GQA, MQA, MLA, window)\n"
	"  -c, --ctx LIST          context lengths of --attn (comma-separated)\n"
	"      --block N           queries of the prefill block of --attn\n"
	"      --config FILE       benchmark a config.json with random weights\n"
	"  -d, --n-depth LIST      tokens of context before each test (default 0)\n"
	"      --dtype TYPE        type of the random weights' matrices (f32)\n"
	"  -F, --format FORMAT     md (default), csv, json, jsonl or svg (--attn)\n"
	"  -h, --help              print this help and exit\n"
	"      --head-dim D        dimensions per head of --attn\n"
	"      --heads H           query heads of --attn\n"
	"  -k, --kv-type K[,V]     types of the K and V caches\n"
	"      --kv-heads K        KV heads of --attn's GQA and window variants\n"
	"      --limits FILE       read the machine's limits from FILE (no measuring)\n"
	"  -m, --model MODEL       the model to benchmark\n"
	"      --mem-limit SIZE    refuse work needing more memory (8G, none; TFM_MEM_LIMIT)\n"
	"      --measure-limits    measure and print the limits only\n"
	"  -n, --n-gen LIST        decode steps of the generation tests (0: skip)\n"
	"  -p, --n-prompt LIST     tokens of the prompt-processing tests (0: skip)\n"
	"      --pg PP,TG          a test of PP prompt tokens then TG decode steps (-pg)\n"
	"  -q, --quiet             no messages on stderr\n"
	"  -r, --repetitions N     timed runs of each test\n"
	"      --seqs N            encoders: N sequences of each -p length in one pass\n"
	"      --set KEY=VALUE     change a knob of the spec\n"
	"  -t, --threads LIST      threads (one with --attn and --measure-limits)\n"
	"  -V, --version           print the version and exit\n"
	"  -v, --verbose           say on stderr what is measured\n"
	"      --window W          sliding window of --attn's window variant\n";

enum { FMT_MD, FMT_CSV, FMT_JSON, FMT_JSONL, FMT_SVG };
static const char *const fmt_names[] = {"md", "csv", "json", "jsonl", "svg"};

struct opts {
	int fmt, verbose, quiet;
	const char *model, *config, *limits;
	/* lists, as llama-bench's: every combination is one test */
	int64_t pp[16], tg[16], depth[16], thr[16], pg[16][2];
	int n_pp, n_tg, n_depth, n_thr, n_pg;
	int64_t reps, threads;    /* threads: thr[0] */
	int64_t seqs;             /* encoders: sequences a prompt test runs at once */
	int dtype, k_type, v_type;
	const char *sets[64];
	int n_sets;
	/* --attn */
	int64_t ctx[32];
	int n_ctx;
	int64_t heads, kv_heads, head_dim, window, block;
};

static void note(const struct opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const struct opts *o, const char *fmt, ...)
{
	va_list ap;
	if (o->quiet)
		return;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* 1.5 KiB, 3.2 MiB, ... */
static const char *human_bytes(char *buf, size_t n, double b)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	while (b >= 1024 && u < 4)
		b /= 1024, u++;
	snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

/* 260.03 K, 7.24 B (llama-bench's params column) */
static const char *human_count(char *buf, size_t n, double v)
{
	if (v >= 1e9)
		snprintf(buf, n, "%.2f B", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, n, "%.2f M", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, n, "%.2f K", v / 1e3);
	else
		snprintf(buf, n, "%.0f", v);
	return buf;
}

static int print_json(json_t *j, int compact)
{
	char *s = json_dumps(j, (compact ? JSON_COMPACT : JSON_INDENT(2)) | JSON_PRESERVE_ORDER |
				   JSON_REAL_PRECISION(10));
	if (!s)
		return tfm_seterr(TFM_E_NOMEM, "json output");
	puts(s);
	free(s);
	return TFM_OK;
}

/* ---- limits ---- */

static int get_limits(const struct opts *o, struct tfm_bench_limits *l, const char **source)
{
	int st;
	if (o->limits) {
		if ((st = tfm_bench_limits_read(l, o->limits)))
			return st;
		*source = "file";
		if (o->verbose)
			note(o, "limits from %s: %.2f GB/s, %.2f GFLOP/s", o->limits, l->bandwidth / 1e9,
			     l->sgemm / 1e9);
		return TFM_OK;
	}
	if (o->verbose)
		note(o, "measuring the machine's limits (%lld threads)", (long long)o->threads);
	if ((st = tfm_bench_measure_limits(l, (int)o->threads)))
		return st;
	*source = "measured";
	note(o, "measured limits: read bandwidth %.2f GB/s, sgemm %.2f GFLOP/s (%d threads)",
	     l->bandwidth / 1e9, l->sgemm / 1e9, l->n_threads);
	return TFM_OK;
}

/* A byte or element count as a JSON integer when it is one (jansson
 * writes every real with a fraction: 96576768.0). */
static json_t *jcount(double v)
{
	return v == floor(v) && fabs(v) < 9007199254740992.0 ? json_integer((json_int_t)v)
							      : json_real(v);
}

static json_t *limits_json(const struct tfm_bench_limits *l, const char *source)
{
	json_t *j = json_object();
	json_object_set_new(j, "bandwidth_bytes_per_s", json_real(l->bandwidth));
	json_object_set_new(j, "sgemm_flops_per_s", json_real(l->sgemm));
	json_object_set_new(j, "threads", json_integer(l->n_threads));
	if (l->bw_bytes)
		json_object_set_new(j, "bandwidth_buffer_bytes", json_integer((json_int_t)l->bw_bytes));
	if (l->sgemm_n)
		json_object_set_new(j, "sgemm_n", json_integer(l->sgemm_n));
	if (source)
		json_object_set_new(j, "source", json_string(source));
	return j;
}

static int measure_limits(const struct opts *o)
{
	struct tfm_bench_limits l;
	int st = tfm_bench_measure_limits(&l, (int)o->threads);
	if (st)
		return st;
	if (o->fmt == FMT_JSON || o->fmt == FMT_JSONL) {
		json_t *j = limits_json(&l, NULL);
		st = print_json(j, o->fmt == FMT_JSONL);
		json_decref(j);
		return st;
	}
	if (o->fmt == FMT_CSV) {
		printf("bandwidth_bytes_per_s,sgemm_flops_per_s,threads\n%.6g,%.6g,%d\n", l.bandwidth,
		       l.sgemm, l.n_threads);
		return TFM_OK;
	}
	char b[32];
	printf("| limit | value | measured with |\n| --- | ---: | --- |\n");
	printf("| read bandwidth | %.2f GB/s | %d threads, %s buffer |\n", l.bandwidth / 1e9,
	       l.n_threads, human_bytes(b, sizeof b, (double)l.bw_bytes));
	printf("| sgemm peak | %.2f GFLOP/s | %d threads, %lld x %lld single-threaded sgemm each |\n",
	       l.sgemm / 1e9, l.n_threads, (long long)l.sgemm_n, (long long)l.sgemm_n);
	return TFM_OK;
}

/* ---- a model ---- */

static int config_spec(const struct opts *o, struct tfm_spec *s)
{
	struct tfm_blob b;
	struct tfm_gguf *g = NULL;
	json_t *cfg = NULL;
	json_error_t err;
	int st;
	if ((st = tfm_blob_open(&b, o->config)))
		return st;
	if (tfm_gguf_is_gguf(b.data, b.size)) {
		if (!(st = tfm_gguf_parse(&g, b.data, b.size, b.name)))
			st = tfm_spec_from_gguf(s, g);
	} else if (!(cfg = tfm_config_json(b.data, b.size, &err))) {
		st = tfm_seterr(TFM_E_FORMAT, "line %d: %s (not a config.json or GGUF)", err.line,
				err.text);
	} else if (!json_is_object(cfg)) {
		st = tfm_seterr(TFM_E_FORMAT, "not a JSON object");
	} else {
		st = tfm_spec_from_config(s, cfg);
	}
	for (int i = 0; !st && i < o->n_sets; i++)
		st = tfm_spec_set(s, o->sets[i]);
	if (!st)
		st = tfm_spec_validate(s);
	if (st == TFM_E_INVAL) /* a config the spec cannot take is bad input, not usage */
		st = TFM_E_FORMAT;
	if (st)
		tfm_adderr(st, "%s", b.name);
	json_decref(cfg);
	tfm_gguf_free(g);
	tfm_blob_close(&b);
	return st;
}

struct result {
	char name[64];           /* pp512, tg128, pp512+tg128; " @ d4096" after a depth */
	int64_t n_prompt, n_gen, n_depth, threads;
	int lim;                 /* index of its thread count's limits */
	double *samples, mean, sd;
	double fraction;         /* of the limit */
	const char *limit;       /* "sgemm" or "bandwidth" */
	double work;             /* FLOPs or bytes per token */
};

struct info {
	const char *path, *source, *type, *limits_source;
	char arch[32], device[64]; /* copies: the model is closed before printing */
	struct tfm_model_bytes mb;
	struct tfm_bench_limits lim[16]; /* per thread count */
	int n_lim;
};

static void record(json_t *j, const struct info *in, const struct opts *o)
{
	json_object_set_new(j, "model", json_string(in->path));
	json_object_set_new(j, "source", json_string(in->source));
	json_object_set_new(j, "arch", json_string(in->arch));
	json_object_set_new(j, "type", json_string(in->type));
	json_object_set_new(j, "size_bytes", jcount(in->mb.total));
	json_object_set_new(j, "params", json_integer(in->mb.params));
	json_object_set_new(j, "bytes_per_token", jcount(in->mb.per_token));
	json_object_set_new(j, "device", json_string(in->device));
	char kv[48];
	json_object_set_new(j, "kv_type", json_string(cmd_kv_name(kv, sizeof kv, o->k_type, o->v_type)));
}

static void test_json(json_t *t, const struct result *r, int reps)
{
	json_t *smp = json_array();
	for (int i = 0; i < reps; i++)
		json_array_append_new(smp, json_real(r->samples[i]));
	json_object_set_new(t, "test", json_string(r->name));
	json_object_set_new(t, "threads", json_integer(r->threads));
	json_object_set_new(t, "n_prompt", json_integer(r->n_prompt));
	json_object_set_new(t, "n_gen", json_integer(r->n_gen));
	json_object_set_new(t, "n_depth", json_integer(r->n_depth));
	json_object_set_new(t, "reps", json_integer(reps));
	json_object_set_new(t, "avg_ts", json_real(r->mean));
	json_object_set_new(t, "stddev_ts", json_real(r->sd));
	json_object_set_new(t, "samples_ts", smp);
	json_object_set_new(t, "limit", r->limit ? json_string(r->limit) : json_null());
	json_object_set_new(t, "limit_fraction", r->limit ? json_real(r->fraction) : json_null());
	json_object_set_new(t, "work_per_token", r->limit ? jcount(r->work) : json_null());
}

static int print_model(const struct info *in, const struct result *r, int nr,
		       const struct opts *o)
{
	int reps = (int)o->reps, st = TFM_OK;
	char b1[32], b2[32], kv[48];
	cmd_kv_name(kv, sizeof kv, o->k_type, o->v_type);
	if (o->fmt == FMT_JSON) {
		json_t *j = json_object(), *tests = json_array();
		record(j, in, o);
		/* one thread count: its number and limits; several: arrays */
		if (in->n_lim == 1) {
			json_object_set_new(j, "threads", json_integer(o->thr[0]));
			json_object_set_new(j, "limits", limits_json(&in->lim[0], in->limits_source));
		} else {
			json_t *th = json_array(), *li = json_array();
			for (int i = 0; i < in->n_lim; i++) {
				json_array_append_new(th, json_integer(o->thr[i]));
				json_array_append_new(li, limits_json(&in->lim[i], in->limits_source));
			}
			json_object_set_new(j, "threads", th);
			json_object_set_new(j, "limits", li);
		}
		for (int i = 0; i < nr; i++) {
			json_t *t = json_object();
			test_json(t, &r[i], reps);
			json_array_append_new(tests, t);
		}
		json_object_set_new(j, "tests", tests);
		st = print_json(j, 0);
		json_decref(j);
	} else if (o->fmt == FMT_JSONL) {
		for (int i = 0; i < nr && !st; i++) {
			json_t *j = json_object();
			record(j, in, o);
			json_object_set_new(j, "bandwidth_bytes_per_s", json_real(in->lim[r[i].lim].bandwidth));
			json_object_set_new(j, "sgemm_flops_per_s", json_real(in->lim[r[i].lim].sgemm));
			json_object_set_new(j, "limits_source", json_string(in->limits_source));
			test_json(j, &r[i], reps);
			st = print_json(j, 1);
			json_decref(j);
		}
	} else if (o->fmt == FMT_CSV) {
		printf("model,arch,type,size_bytes,params,device,threads,kv_type,test,n_prompt,n_gen,"
		       "n_depth,reps,avg_ts,stddev_ts,limit,limit_fraction\n");
		for (int i = 0; i < nr; i++) {
			printf("\"%s\",%s,%s,%.0f,%" PRId64 ",%s,%lld,%s,%s,%lld,%lld,%lld,%d,%.6g,%.6g,",
			       in->path, in->arch, in->type, in->mb.total, in->mb.params, in->device,
			       (long long)r[i].threads, kv, r[i].name,
			       (long long)r[i].n_prompt, (long long)r[i].n_gen, (long long)r[i].n_depth,
			       reps, r[i].mean, r[i].sd);
			if (r[i].limit)
				printf("%s,%.6g\n", r[i].limit, r[i].fraction);
			else
				printf(",\n");
		}
	} else {
		printf("| model | size | params | backend | threads | test | t/s | %% of limit |\n"
		       "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n");
		for (int i = 0; i < nr; i++) {
			char frac[48] = "-";
			if (r[i].limit)
				snprintf(frac, sizeof frac, "%.1f %% %s", 100 * r[i].fraction, r[i].limit);
			printf("| %s %s | %s | %s | %s | %lld | %s | %.2f ± %.2f | %s |\n",
			       in->arch, in->type, human_bytes(b1, sizeof b1, in->mb.total),
			       human_count(b2, sizeof b2, (double)in->mb.params), in->device,
			       (long long)r[i].threads, r[i].name, r[i].mean, r[i].sd, frac);
		}
	}
	return st;
}

/* Opens the model (or makes the random one) for a thread count. */
static int open_model(const struct opts *o, int64_t threads, struct tfm_model **m,
		      struct info *in)
{
	struct tfm_model_opts mo = {.n_threads = (int)threads, .set = o->sets,
				    .n_set = o->n_sets, .k_type = o->k_type,
				    .v_type = o->v_type};
	struct tfm_spec spec;
	int st;
	if (o->config) {
		if ((st = config_spec(o, &spec)))
			return st;
		mo.set = NULL, mo.n_set = 0; /* applied to the spec already */
		in->path = o->config, in->source = "random";
		return tfm_model_random(m, &spec, o->dtype, 1234, &mo);
	}
	in->path = o->model, in->source = "file";
	return tfm_model_open(m, o->model, &mo);
}

/* One test: its runs, its speed and its fraction of the limit.  A pure
 * prefill is bound by the sgemm rate (FLOPs at its mean context; the LM
 * head runs for its last token only), pure generation by the bandwidth
 * (weights and the KV cache it reads per token); a -pg test mixes both and
 * has no single limit. */
static int run_test(const struct opts *o, struct tfm_model *m, const struct info *in,
		    struct result *x)
{
	const struct tfm_spec *s = tfm_model_spec(m);
	const struct tfm_bench_limits *l = &in->lim[x->lim];
	struct tfm_counts c;
	int st;
	char depth[32] = "";
	if (x->n_depth)
		snprintf(depth, sizeof depth, " @ d%lld", (long long)x->n_depth);
	if (x->n_prompt && x->n_gen)
		snprintf(x->name, sizeof x->name, "pp%lld+tg%lld%s", (long long)x->n_prompt,
			 (long long)x->n_gen, depth);
	else if (o->seqs > 1) /* an encoder's batch of sequences */
		snprintf(x->name, sizeof x->name, "pp%lld x%lld", (long long)x->n_prompt,
			 (long long)o->seqs);
	else
		snprintf(x->name, sizeof x->name, "%s%lld%s", x->n_prompt ? "pp" : "tg",
			 (long long)(x->n_prompt + x->n_gen), depth);
	if (!(x->samples = tfm_calloc((size_t)o->reps, sizeof(double))))
		return TFM_E_NOMEM;
	struct tfm_bench_run run = {.n_prompt = x->n_prompt, .n_gen = x->n_gen,
				    .n_depth = x->n_depth, .reps = (int)o->reps, .n_seq = o->seqs,
				    .samples = x->samples};
	if (o->verbose)
		note(o, "%s, %lld threads: %lld runs after a warm-up", x->name,
		     (long long)x->threads, (long long)o->reps);
	if ((st = tfm_bench_model(m, &run)))
		return st;
	tfm_bench_stats(x->samples, (int)o->reps, &x->mean, &x->sd);
	if (x->n_prompt && x->n_gen)
		return TFM_OK;
	int64_t mid = x->n_depth + (x->n_prompt ? x->n_prompt / 2 : x->n_gen / 2);
	if ((st = tfm_spec_count(s, cmd_kv_elem_bytes(o->k_type, o->v_type), mid, &c)))
		return st;
	if (x->n_prompt) {
		x->work = c.flops_per_token > 0 ? c.flops_per_token : 2.0 * (double)in->mb.params;
		if (s->head == TFM_HEAD_LM)
			x->work -= 2.0 * (double)s->n_vocab * (double)s->n_embd *
				   (double)(x->n_prompt - 1) / (double)x->n_prompt;
		x->limit = "sgemm";
		x->fraction = x->mean * x->work / l->sgemm;
	} else {
		x->work = in->mb.per_token + tfm_spec_kv_bytes(s, cmd_kv_elem_bytes(o->k_type, o->v_type), mid);
		x->limit = "bandwidth";
		x->fraction = x->mean * x->work / l->bandwidth;
	}
	return TFM_OK;
}

static int bench_model(const struct opts *o)
{
	struct tfm_model *m = NULL;
	struct info in = {0};
	struct result *r = NULL;
	int nr = 0, st = TFM_OK;
	int per_thr = o->n_depth * (o->n_pp + o->n_tg + o->n_pg);
	if (!(r = tfm_calloc((size_t)(per_thr * o->n_thr), sizeof *r)))
		return TFM_E_NOMEM;
	for (int ti = 0; ti < o->n_thr; ti++) {
		if ((st = open_model(o, o->thr[ti], &m, &in)))
			goto out;
		const struct tfm_spec *s = tfm_model_spec(m);
		if ((st = tfm_model_bytes(m, &in.mb)))
			goto out;
		snprintf(in.arch, sizeof in.arch, "%s", s->arch[0] ? s->arch : "model");
		snprintf(in.device, sizeof in.device, "%s", tfm_model_device(m));
		in.type = tfm_type_name(in.mb.type);
		struct opts ol = *o;
		ol.threads = o->thr[ti];
		if (o->limits && ti > 0) /* a file is read once (it may be a pipe) */
			in.lim[ti] = in.lim[0];
		else if ((st = get_limits(&ol, &in.lim[ti], &in.limits_source)))
			goto out;
		in.n_lim = ti + 1;
		for (int di = 0; di < o->n_depth; di++) {
			int64_t tests[48][2];
			int nt = 0;
			for (int i = 0; i < o->n_pp; i++)
				tests[nt][0] = o->pp[i], tests[nt++][1] = 0;
			for (int i = 0; i < o->n_tg; i++)
				tests[nt][0] = 0, tests[nt++][1] = o->tg[i];
			for (int i = 0; i < o->n_pg; i++)
				tests[nt][0] = o->pg[i][0], tests[nt++][1] = o->pg[i][1];
			/* an encoder reads whole sequences: prompt tests only */
			int enc = s->family == TFM_FAMILY_ENCODER;
			if (!enc && o->seqs > 1) {
				st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: --seqs: encoder-only models "
						"only", in.arch);
				goto out;
			}
			if (enc && ti == 0 && di == 0 && (o->n_tg || o->n_pg || o->depth[di] > 0))
				fprintf(stderr, "%s: %s: an encoder-only model: prompt tests "
					"(-p) only, no generation or depth\n", prog, in.arch);
			/* an encoder-decoder model: pp the encoder, tg the decoder over
			 * a source of -d tokens; no pg */
			int encdec = s->family == TFM_FAMILY_ENCDEC;
			if (encdec && ti == 0 && di == 0 && o->n_pg)
				fprintf(stderr, "%s: %s: an encoder-decoder model: pp (encoder) and tg "
					"(decoder) tests, no pg\n", prog, in.arch);
			for (int i = 0; i < nt; i++) {
				if ((tests[i][0] <= 0 && tests[i][1] <= 0) ||
				    (enc && (tests[i][1] > 0 || o->depth[di] > 0)) ||
				    (encdec && tests[i][0] > 0 && tests[i][1] > 0))
					continue;
				struct result *x = &r[nr++];
				x->n_prompt = tests[i][0], x->n_gen = tests[i][1];
				x->n_depth = o->depth[di], x->threads = o->thr[ti], x->lim = ti;
				if ((st = run_test(o, m, &in, x)))
					goto out;
			}
		}
		tfm_model_close(m);
		m = NULL;
	}
	st = print_model(&in, r, nr, o);
out:
	for (int i = 0; i < per_thr * o->n_thr; i++)
		free(r[i].samples);
	free(r);
	tfm_model_close(m);
	return st;
}

/* ---- the attention kernel ---- */

enum { V_MHA, V_GQA, V_MQA, V_MLA, V_WIN, N_VAR };
static const char *const var_names[N_VAR] = {"MHA", "GQA", "MQA", "MLA", "window"};

struct attn_point {
	double dec, dec_ref, pre, pre_ref;   /* seconds per call; <0: not measured */
	double kv_pred;                      /* tfm_spec_kv_bytes at ctx */
	double kv_alloc, ctx_heap, ctx_rss;  /* of a real context; <0: not measured */
};

/* The attention family beside the executor's kernels (attn-family.h):
 * the fast kernel and its reference, one decode step; a point is skipped
 * when its predicted time passes FAM_MAX_S or its cache FAM_MAX_BYTES. */
#define FAM_MAX_S 2.0
#define FAM_MAX_BYTES (1024.0 * 1024 * 1024)
struct fam_point {
	double dec, dec_ref;  /* seconds per step; <0: not measured */
	double bytes;         /* cache or state at ctx */
};

static struct tfm_fam_shape fam_shape(const struct opts *o, int64_t ctx)
{
	/* simplicial-window: the paper's proportions, w1 = --window, w2 = 32 */
	return (struct tfm_fam_shape){.n_head = o->heads, .head_dim = o->head_dim, .ctx = ctx,
				      .win1 = o->window, .win2 = o->window < 32 ? o->window : 32};
}

/* Multiply-adds of the reference's step (it runs only where this is small). */
static double fam_ref_work(int v, const struct tfm_fam_shape *s)
{
	double n = (double)s->ctx, d = (double)s->head_dim, H = (double)s->n_head;
	double w1 = (double)(s->ctx < s->win1 ? s->ctx : s->win1);
	double w2 = (double)(s->ctx < s->win2 ? s->ctx : s->win2);
	switch (v) {
	case TFM_FAM_PERFORMER: return n * H * 2 * d * d;
	case TFM_FAM_SIMPLICIAL: return n * n * H * 2 * d;
	case TFM_FAM_SIMPLICIAL_WIN: return w1 * w2 * H * 2 * d;
	case TFM_FAM_GAU: return n * 3 * H * d;
	}
	return n * H * 4 * d;
}

static int bench_family(const struct opts *o, struct fam_point (*fp)[32])
{
	int skipped = 0;
	for (int v = 0; v < TFM_FAM_N; v++) {
		double prev_t = -1, prev_n = 0;
		for (int i = 0; i < o->n_ctx; i++) {
			struct fam_point *p = &fp[v][i];
			struct tfm_fam_shape s = fam_shape(o, o->ctx[i]);
			double grow = tfm_fam_theory(v) > 1 ? tfm_fam_theory(v) : 1;
			p->dec = p->dec_ref = -1;
			p->bytes = tfm_fam_state_bytes(v, &s);
			if ((prev_t > 0 && prev_t * pow((double)o->ctx[i] / prev_n, grow) > FAM_MAX_S) ||
			    p->bytes > FAM_MAX_BYTES || prev_t == -2) {
				skipped++;
				prev_t = -2;
				continue;
			}
			if (o->verbose)
				note(o, "%s attention, ctx %lld", tfm_fam_name(v), (long long)o->ctx[i]);
			int st = tfm_fam_time(v, &s, 1, 0.05, (int)o->reps * 20, &p->dec);
			if (!st && fam_ref_work(v, &s) <= 3e8)
				st = tfm_fam_time(v, &s, 0, 0.05, (int)o->reps * 20, &p->dec_ref);
			if (st)
				return tfm_adderr(st, "%s attention at %lld tokens", tfm_fam_name(v),
						  (long long)o->ctx[i]);
			prev_t = p->dec, prev_n = (double)o->ctx[i];
		}
	}
	if (skipped)
		note(o, "%d points of the attention family not measured: over %.0f s a step or "
		     "%.0f GiB of cache", skipped, FAM_MAX_S, FAM_MAX_BYTES / 1073741824.0);
	return TFM_OK;
}

/* The spec of variant v: one layer of the given attention shape. */
static void variant_spec(const struct opts *o, int v, struct tfm_spec *s)
{
	tfm_spec_init(s);
	snprintf(s->arch, sizeof s->arch, "llama");
	snprintf(s->gguf_arch, sizeof s->gguf_arch, "llama");
	s->n_layer = 1;
	s->n_vocab = 32;
	s->n_ff = 32;
	s->n_head = o->heads;
	s->head_dim = o->head_dim;
	s->rope_dims = o->head_dim;
	s->n_embd = o->heads * o->head_dim;
	s->n_ctx_train = 4096;
	s->n_head_kv = v == V_MHA || v == V_MLA ? o->heads : v == V_MQA ? 1 : o->kv_heads;
	s->layer_kind[0] = TFM_LAYER_ATTN;
	s->layer_rope[0] = 1;
	if (v == V_MLA) { /* deepseek's proportions: latent 4D, rope D/2, nope D, v D */
		s->kv_lora_rank = 4 * o->head_dim;
		s->qk_rope_dim = o->head_dim / 2 > 0 ? o->head_dim / 2 : 1;
		s->qk_nope_dim = o->head_dim;
		s->v_head_dim = o->head_dim;
		s->head_dim = s->qk_nope_dim + s->qk_rope_dim;
		s->rope_dims = s->qk_rope_dim;
	}
	if (v == V_WIN) {
		s->mask = TFM_MASK_WINDOW;
		s->window = o->window;
		s->layer_window[0] = 1;
	}
}

/* Allocation of a real context of ctx tokens for variant v's model. */
static int measure_ctx(struct tfm_model *m, int64_t ctx, struct attn_point *p)
{
	struct tfm_ctx *c = NULL;
	size_t h0 = tfm_bench_heap_bytes(), r0 = tfm_bench_rss_bytes();
	int st = tfm_ctx_new(&c, m, ctx);
	if (st)
		return st;
	size_t h1 = tfm_bench_heap_bytes(), r1 = tfm_bench_rss_bytes();
	p->kv_alloc = (double)tfm_ctx_kv_alloc(c);
	p->ctx_heap = h1 >= h0 && h0 ? (double)(h1 - h0) : -1;
	p->ctx_rss = r1 >= r0 && r0 ? (double)(r1 - r0) : -1;
	tfm_ctx_free(c);
	return TFM_OK;
}

static void jnum(json_t *j, const char *k, double v)
{
	if (v >= 0 && strstr(k, "bytes")) { /* byte counts are integers */
		json_object_set_new(j, k, jcount(v));
		return;
	}
	json_object_set_new(j, k, v >= 0 ? json_real(v) : json_null());
}

/* Decode exponents of context length: fitted over ctx >= 1024 (all points
 * when fewer than three are there), and the theory. */
static const double var_theory[N_VAR] = {1, 1, 1, 1, 0};

static double fitted(const struct opts *o, const double *t)
{
	double x[32];
	for (int i = 0; i < o->n_ctx; i++)
		x[i] = (double)o->ctx[i];
	return tfm_fam_fit_exponent(x, t, o->n_ctx, 1024);
}

static int print_attn(const struct opts *o, struct attn_point (*pt)[32], const struct tfm_spec *sp,
		      struct fam_point (*fp)[32], const char *device)
{
	double ek = cmd_kv_elem_bytes(o->k_type, o->v_type);
	char b1[32], kvn[48];
	int st = TFM_OK;
	enum { NS = N_VAR + TFM_FAM_N };
	double tdec[NS][32], expo[NS], theo[NS];
	for (int v = 0; v < NS; v++) {
		for (int i = 0; i < o->n_ctx; i++)
			tdec[v][i] = v < N_VAR ? pt[v][i].dec : fp[v - N_VAR][i].dec;
		expo[v] = fitted(o, tdec[v]);
		theo[v] = v < N_VAR ? var_theory[v] : tfm_fam_theory(v - N_VAR);
	}
#define VNAME(v) ((v) < N_VAR ? var_names[v] : tfm_fam_name((v) - N_VAR))
	if (o->fmt == FMT_SVG) {
		double x[NS][32], yt[NS][32], yk[NS][32], ya[N_VAR][32];
		struct tfm_bench_series st_[NS], sk[NS], sa[N_VAR];
		for (int v = 0; v < NS; v++) {
			for (int i = 0; i < o->n_ctx; i++) {
				x[v][i] = (double)o->ctx[i];
				yt[v][i] = tdec[v][i] * 1e6; /* < 0: not measured, not drawn */
				yk[v][i] = v < N_VAR ? pt[v][i].kv_pred : fp[v - N_VAR][i].bytes;
				if (v < N_VAR)
					ya[v][i] = pt[v][i].kv_alloc;
			}
			if (v < N_VAR)
				sa[v] = (struct tfm_bench_series){var_names[v], x[v], ya[v], o->n_ctx};
			st_[v] = (struct tfm_bench_series){VNAME(v), x[v], yt[v], o->n_ctx};
			sk[v] = (struct tfm_bench_series){VNAME(v), x[v], yk[v], o->n_ctx};
		}
		char t1[96];
		snprintf(t1, sizeof t1, "decode attention, %s", device);
		struct tfm_bench_panel p[3] = {
			{t1, "context (tokens)", "microseconds per token (one layer)", st_, NS},
			{"KV cache or state needed", "context (tokens)", "bytes (one layer)", sk, NS},
			{"KV cache allocated (tfm_ctx_new)", "context (tokens)", "bytes (one layer)", sa,
			 N_VAR},
		};
		struct tfm_out *out;
		if ((st = tfm_out_open(&out, "-", 0)))
			return st;
		char title[256];
		struct tfm_fam_shape fs = fam_shape(o, 1);
		snprintf(title, sizeof title, "tfm-bench --attn: %lld query heads of %lld dimensions, "
			 "%lld KV heads (GQA, window), window %lld (simplicial %lld x %lld), KV cache %s, "
			 "%lld threads", (long long)o->heads, (long long)o->head_dim,
			 (long long)o->kv_heads, (long long)o->window, (long long)fs.win1,
			 (long long)fs.win2, cmd_kv_name(kvn, sizeof kvn, o->k_type, o->v_type),
			 (long long)o->threads);
		tfm_bench_svg(out, title, p, pt[0][0].kv_alloc >= 0 ? 3 : 2);
		return tfm_out_commit(out);
	}
	if (o->fmt == FMT_MD) {
		printf("attention kernel, one layer: %lld heads, head dim %lld, %s vs ref, %lld threads\n\n",
		       (long long)o->heads, (long long)o->head_dim, device, (long long)o->threads);
		printf("| variant | kv heads | ctx | decode us | ref us | speedup | prefill%lld ms |"
		       " ref ms | KV/token | KV at ctx | ctx KV alloc | ctx heap |\n"
		       "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
		       (long long)o->block);
	}
	if (o->fmt == FMT_CSV)
		printf("variant,n_head,n_head_kv,head_dim,v_dim,window,kv_lora_rank,ctx,decode_s,"
		       "decode_ref_s,prefill_tokens,prefill_s,prefill_ref_s,kv_bytes_per_token,kv_bytes,"
		       "ctx_kv_alloc_bytes,ctx_heap_bytes,ctx_rss_bytes\n");
	json_t *all = o->fmt == FMT_JSON ? json_array() : NULL;
	for (int v = 0; v < N_VAR; v++) {
		const struct tfm_spec *s = &sp[v];
		double per_tok = tfm_spec_kv_bytes(s, ek, 1) - tfm_spec_kv_bytes(s, ek, 0);
		int64_t vd = s->kv_lora_rank ? s->v_head_dim : s->head_dim;
		for (int i = 0; i < o->n_ctx; i++) {
			const struct attn_point *p = &pt[v][i];
			int64_t blk = o->block < o->ctx[i] ? o->block : o->ctx[i];
			if (o->fmt == FMT_MD) {
				char pr[32] = "-", prr[32] = "-", ka[32] = "-", kh[32] = "-", kp[32];
				if (p->pre >= 0)
					snprintf(pr, sizeof pr, "%.3f", p->pre * 1e3);
				if (p->pre_ref >= 0)
					snprintf(prr, sizeof prr, "%.3f", p->pre_ref * 1e3);
				if (p->kv_alloc >= 0)
					human_bytes(ka, sizeof ka, p->kv_alloc);
				if (p->ctx_heap >= 0)
					human_bytes(kh, sizeof kh, p->ctx_heap);
				snprintf(kp, sizeof kp, "%.0f B", per_tok);
				printf("| %s | %lld | %lld | %.1f | %.1f | %.1fx | %s | %s | %s | %s | %s | %s |\n",
				       var_names[v], (long long)s->n_head_kv, (long long)o->ctx[i],
				       p->dec * 1e6, p->dec_ref * 1e6, p->dec > 0 ? p->dec_ref / p->dec : 0,
				       pr, prr, kp, human_bytes(b1, sizeof b1, p->kv_pred), ka, kh);
			} else if (o->fmt == FMT_CSV) {
				printf("%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.6g,%.6g,%lld,%.6g,%.6g,%.6g,%.6g,"
				       "%.0f,%.0f,%.0f\n", var_names[v], (long long)s->n_head,
				       (long long)s->n_head_kv, (long long)s->head_dim, (long long)vd,
				       (long long)s->window, (long long)s->kv_lora_rank,
				       (long long)o->ctx[i], p->dec, p->dec_ref, (long long)blk, p->pre,
				       p->pre_ref, per_tok, p->kv_pred, p->kv_alloc, p->ctx_heap, p->ctx_rss);
			} else {
				json_t *j = json_object();
				json_object_set_new(j, "variant", json_string(var_names[v]));
				json_object_set_new(j, "n_head", json_integer(s->n_head));
				json_object_set_new(j, "n_head_kv", json_integer(s->n_head_kv));
				json_object_set_new(j, "head_dim", json_integer(s->head_dim));
				json_object_set_new(j, "v_dim", json_integer(vd));
				json_object_set_new(j, "window", json_integer(s->window));
				json_object_set_new(j, "kv_lora_rank", json_integer(s->kv_lora_rank));
				json_object_set_new(j, "ctx", json_integer(o->ctx[i]));
				json_object_set_new(j, "device", json_string(device));
				json_object_set_new(j, "threads", json_integer(o->threads));
				jnum(j, "decode_s", p->dec);
				jnum(j, "decode_ref_s", p->dec_ref);
				json_object_set_new(j, "prefill_tokens", json_integer(blk));
				jnum(j, "prefill_s", p->pre);
				jnum(j, "prefill_ref_s", p->pre_ref);
				json_object_set_new(j, "kv_type", json_string(cmd_kv_name(kvn, sizeof kvn, o->k_type,
											   o->v_type)));
				jnum(j, "kv_bytes_per_token", per_tok);
				jnum(j, "kv_bytes", p->kv_pred);
				jnum(j, "ctx_kv_alloc_bytes", p->kv_alloc);
				jnum(j, "ctx_heap_bytes", p->ctx_heap);
				jnum(j, "ctx_rss_bytes", p->ctx_rss);
				if (all)
					json_array_append_new(all, j);
				else {
					st = print_json(j, 1);
					json_decref(j);
				}
			}
		}
	}
	/* the family: one decode step of each variant's own attention */
	for (int v = 0; v < TFM_FAM_N; v++)
		for (int i = 0; i < o->n_ctx; i++) {
			const struct fam_point *p = &fp[v][i];
			struct tfm_fam_shape s0 = fam_shape(o, 0), s1 = fam_shape(o, 1);
			double per_tok = tfm_fam_state_bytes(v, &s1) - tfm_fam_state_bytes(v, &s0);
			int64_t win = v == TFM_FAM_SIMPLICIAL_WIN ? s1.win1 : 0;
			if (o->fmt == FMT_MD) {
				char d1[32] = "-", d2[32] = "-", sp_[32] = "-", kp[32];
				if (p->dec >= 0)
					snprintf(d1, sizeof d1, "%.1f", p->dec * 1e6);
				if (p->dec_ref >= 0)
					snprintf(d2, sizeof d2, "%.1f", p->dec_ref * 1e6);
				if (p->dec > 0 && p->dec_ref >= 0)
					snprintf(sp_, sizeof sp_, "%.1fx", p->dec_ref / p->dec);
				snprintf(kp, sizeof kp, "%.0f B", per_tok);
				printf("| %s | %lld | %lld | %s | %s | %s | - | - | %s | %s | - | - |\n",
				       tfm_fam_name(v), (long long)o->heads, (long long)o->ctx[i], d1, d2, sp_,
				       kp, human_bytes(b1, sizeof b1, p->bytes));
			} else if (o->fmt == FMT_CSV) {
				printf("%s,%lld,%lld,%lld,%lld,%lld,0,%lld,%.6g,%.6g,0,-1,-1,%.6g,%.6g,-1,-1,-1\n",
				       tfm_fam_name(v), (long long)o->heads, (long long)o->heads,
				       (long long)o->head_dim, (long long)(tfm_fam_out_n(v, &s1) / o->heads),
				       (long long)win, (long long)o->ctx[i], p->dec, p->dec_ref, per_tok,
				       p->bytes);
			} else {
				json_t *j = json_object();
				json_object_set_new(j, "variant", json_string(tfm_fam_name(v)));
				json_object_set_new(j, "family", json_true());
				json_object_set_new(j, "n_head", json_integer(o->heads));
				json_object_set_new(j, "head_dim", json_integer(o->head_dim));
				json_object_set_new(j, "window", json_integer(win));
				json_object_set_new(j, "ctx", json_integer(o->ctx[i]));
				json_object_set_new(j, "device", json_string("cpu (OpenBLAS)"));
				jnum(j, "decode_s", p->dec);
				jnum(j, "decode_ref_s", p->dec_ref);
				jnum(j, "kv_bytes_per_token", per_tok);
				jnum(j, "kv_bytes", p->bytes);
				if (all)
					json_array_append_new(all, j);
				else {
					st = print_json(j, 1);
					json_decref(j);
				}
			}
		}
	json_t *ex = json_array();
	for (int v = 0; v < NS; v++) {
		json_t *j = json_object();
		json_object_set_new(j, "variant", json_string(VNAME(v)));
		json_object_set_new(j, "decode_exponent", isnan(expo[v]) ? json_null() : json_real(expo[v]));
		json_object_set_new(j, "decode_exponent_theory", json_real(theo[v]));
		json_object_set_new(j, "context_exponent", isnan(expo[v]) ? json_null()
									 : json_real(expo[v] + 1));
		json_object_set_new(j, "context_exponent_theory", json_real(theo[v] + 1));
		json_array_append_new(ex, j);
	}
	if (o->fmt == FMT_MD) {
		printf("\nexponents of context length: one decode step ~ ctx^k, a whole context ~ "
		       "ctx^(k+1); fitted over ctx >= 1024 (all points when fewer than three)\n\n"
		       "| variant | decode k fitted | theory | whole context fitted | theory |\n"
		       "| --- | ---: | ---: | ---: | ---: |\n");
		for (int v = 0; v < NS; v++) {
			char f1[16] = "-", f2[16] = "-";
			if (!isnan(expo[v]))
				snprintf(f1, sizeof f1, "%.2f", expo[v]), snprintf(f2, sizeof f2, "%.2f", expo[v] + 1);
			printf("| %s | %s | %.0f | %s | %.0f |\n", VNAME(v), f1, theo[v], f2, theo[v] + 1);
		}
	} else if (o->fmt == FMT_JSONL) {
		size_t i;
		json_t *j;
		json_array_foreach(ex, i, j)
			if (!st)
				st = print_json(j, 1);
	}
	if (all) {
		json_t *root = json_object();
		json_object_set_new(root, "exponents", json_incref(ex));
		json_object_set_new(root, "device", json_string(device));
		json_object_set_new(root, "threads", json_integer(o->threads));
		json_object_set_new(root, "memory_measure", json_string(
			"ctx_kv_alloc_bytes: the context's K and V arrays; ctx_heap_bytes: malloc "
			"growth over tfm_ctx_new (mallinfo2); ctx_rss_bytes: resident set growth"));
		json_object_set_new(root, "results", all);
		st = print_json(root, 0);
		json_decref(root);
	}
	json_decref(ex);
	if (o->fmt == FMT_MD)
		printf("\nctx KV alloc: the K and V arrays of a real context (tfm_ctx_new, the -k cache types);"
		       " ctx heap: malloc growth over tfm_ctx_new (mallinfo2).  diff ... simplicial-window:"
		       " the attention family (f32 cache or state, fast kernel vs its scalar reference,"
		       " which runs only where it is quick; -: not measured).\n");
#undef VNAME
	return st;
}

static int bench_attn(const struct opts *o)
{
	const struct tfm_backend *be, *ref = tfm_backend_ref();
	struct attn_point pt[N_VAR][32];
	struct tfm_spec sp[N_VAR];
	char device[64];
	int st;
	if ((st = tfm_backend_find(&be, NULL)))
		return st;
	snprintf(device, sizeof device, "%s%s%s", be->name, be->variant ? "/" : "",
		 be->variant ? be->variant() : "");
	double ek = cmd_kv_elem_bytes(o->k_type, o->v_type);
	int warned = 0, progress = !o->quiet && isatty(STDERR_FILENO);
	for (int v = 0; v < N_VAR; v++) {
		struct tfm_spec *s = &sp[v];
		struct tfm_model *m = NULL;
		variant_spec(o, v, s);
		if ((st = tfm_spec_validate(s)))
			return tfm_adderr(st, "%s attention", var_names[v]);
		struct tfm_model_opts mo = {.n_threads = (int)o->threads, .k_type = o->k_type,
					    .v_type = o->v_type,
					    .device = "cpu"};
		int mst = tfm_model_random(&m, s, TFM_TYPE_F16, 1, &mo);
		if (mst && !warned++)
			note(o, "no real context measured: %s", tfm_errmsg());
		for (int i = 0; i < o->n_ctx; i++) {
			struct attn_point *p = &pt[v][i];
			int64_t ctx = o->ctx[i];
			/* MLA: the kernel as the executor runs it, over the
			 * latent rows (one KV head of kv_lora + rope, values the
			 * latent part) */
			int mla = s->kv_lora_rank > 0;
			struct tfm_bench_attn a = {
				.ctx = ctx, .n_tok = 1, .n_head = s->n_head,
				.n_head_kv = mla ? 1 : s->n_head_kv,
				.head_dim = mla ? s->kv_lora_rank + s->qk_rope_dim : s->head_dim,
				.v_dim = mla ? s->kv_lora_rank : 0, .v_from_k = mla,
				.window = v == V_WIN ? o->window : 0, .n_threads = (int)o->threads,
				.min_s = 0.05, .max_reps = (int)o->reps * 20,
			};
			p->pre = p->pre_ref = p->kv_alloc = p->ctx_heap = p->ctx_rss = -1;
			p->kv_pred = tfm_spec_kv_bytes(s, ek, ctx);
			if (o->verbose)
				note(o, "%s ctx %lld", var_names[v], (long long)ctx);
			else if (progress) /* on a terminal: where the sweep is */
				fprintf(stderr, "\r\033[Ktfm-bench: %d/%d: %s attention at %lld tokens",
					v * o->n_ctx + i + 1, N_VAR * o->n_ctx, var_names[v],
					(long long)ctx);
			if ((st = tfm_bench_attn_time(be, &a, &p->dec)) ||
			    (st = tfm_bench_attn_time(ref, &a, &p->dec_ref)))
				goto fail;
			if (o->block > 0) {
				a.n_tok = o->block < ctx ? o->block : ctx;
				if ((st = tfm_bench_attn_time(be, &a, &p->pre)))
					goto fail;
				/* the scalar reference is quadratic: only where it is quick */
				if ((double)a.n_tok * (double)ctx <= 64.0 * 2048 &&
				    (st = tfm_bench_attn_time(ref, &a, &p->pre_ref)))
					goto fail;
			}
			if (!mst && (st = measure_ctx(m, ctx, p)))
				goto fail;
		}
		tfm_model_close(m);
		continue;
fail:
		if (progress)
			fputs("\r\033[K", stderr);
		tfm_model_close(m);
		return st;
	}
	if (progress)
		fputs("\r\033[K", stderr); /* the progress line goes away */
	static struct fam_point fp[TFM_FAM_N][32];
	if ((st = bench_family(o, fp)))
		return st;
	return print_attn(o, pt, sp, fp, device);
}

/* ---- options ---- */

/* A comma-separated list of at most cap integers in [lo, hi]. */
static int parse_list(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *v,
		      int *n, int cap)
{
	char buf[512];
	if (strlen(arg) >= sizeof buf)
		return cmd_usage_error(usage, "%s: list too long", opt);
	snprintf(buf, sizeof buf, "%s", arg);
	*n = 0;
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n == cap)
			return cmd_usage_error(usage, "%s: at most %d values", opt, cap);
		if (cmd_opt_i64(opt, t, lo, hi, &v[(*n)++]))
			return 64;
	}
	return *n ? 0 : cmd_usage_error(usage, "%s: empty list", opt);
}

static int parse_ctx_list(struct opts *o, const char *arg)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", arg);
	o->n_ctx = 0;
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->n_ctx == 32)
			return cmd_usage_error(usage, "-c: at most 32 lengths");
		if (cmd_opt_i64("-c", t, 1, INT64_C(1) << 24, &o->ctx[o->n_ctx++]))
			return 64;
	}
	return o->n_ctx ? 0 : cmd_usage_error(usage, "-c: empty list");
}

int main(int argc, char **argv)
{
	enum { OPT_SET = 256, OPT_CONFIG, OPT_DTYPE, OPT_LIMITS, OPT_ATTN, OPT_MEASURE, OPT_HEADS,
	       OPT_KV_HEADS, OPT_HEAD_DIM, OPT_WINDOW, OPT_BLOCK, OPT_MEMLIM, OPT_PG, OPT_SEQS };
	static const struct option longopts[] = {
		{ "ctx", required_argument, NULL, 'c' },
		{ "n-depth", required_argument, NULL, 'd' },
		{ "pg", required_argument, NULL, OPT_PG },
		{ "format", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "kv-type", required_argument, NULL, 'k' },
		{ "model", required_argument, NULL, 'm' },
		{ "n-gen", required_argument, NULL, 'n' },
		{ "n-prompt", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "repetitions", required_argument, NULL, 'r' },
		{ "threads", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "set", required_argument, NULL, OPT_SET },
		{ "seqs", required_argument, NULL, OPT_SEQS },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "dtype", required_argument, NULL, OPT_DTYPE },
		{ "limits", required_argument, NULL, OPT_LIMITS },
		{ "mem-limit", required_argument, NULL, OPT_MEMLIM },
		{ "attn", no_argument, NULL, OPT_ATTN },
		{ "measure-limits", no_argument, NULL, OPT_MEASURE },
		{ "heads", required_argument, NULL, OPT_HEADS },
		{ "kv-heads", required_argument, NULL, OPT_KV_HEADS },
		{ "head-dim", required_argument, NULL, OPT_HEAD_DIM },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "block", required_argument, NULL, OPT_BLOCK },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {.fmt = FMT_MD, .pp = {512}, .n_pp = 1, .tg = {128}, .n_tg = 1,
			 .depth = {0}, .n_depth = 1, .thr = {0}, .n_thr = 1, .reps = 5,
			 .dtype = TFM_TYPE_F32, .k_type = TFM_TYPE_F32, .v_type = TFM_TYPE_F32, .heads = 32, .kv_heads = 8,
			 .head_dim = 128, .window = 4096, .block = 64,
			 .ctx = {512, 2048, 8192, 32768}, .n_ctx = 4};
	int attn = 0, measure = 0, ch, rc;
	cmd_init("tfm-bench");
	/* llama-bench spells --pg "-pg", which getopt would read as -p g */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-pg"))
			argv[i] = (char *)"--pg";
	while ((ch = getopt_long(argc, argv, "c:d:F:hk:m:n:p:qr:t:Vv", longopts, NULL)) != -1) {
		int64_t v;
		switch (ch) {
		case 'c':
			if (parse_ctx_list(&o, optarg))
				return 64;
			break;
		case 'F':
			o.fmt = -1;
			for (int i = 0; i < (int)(sizeof fmt_names / sizeof fmt_names[0]); i++)
				if (!strcmp(optarg, fmt_names[i]))
					o.fmt = i;
			if (o.fmt < 0)
				return cmd_usage_error(usage, "-F: '%s': expected md, csv, json, jsonl or svg",
						       optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			fputs(options_help, stdout);
			return cmd_close_stdout();
		case 'k':
			if ((rc = cmd_opt_kv_types(usage, optarg, 0, &o.k_type, &o.v_type)))
				return rc;
			break;
		case 'm':
			o.model = optarg;
			break;
		case 'd':
			if (parse_list("-d", optarg, 0, INT64_C(1) << 24, o.depth, &o.n_depth, 16))
				return 64;
			break;
		case 'n':
			if (parse_list("-n", optarg, 0, INT64_C(1) << 24, o.tg, &o.n_tg, 16))
				return 64;
			break;
		case 'p':
			if (parse_list("-p", optarg, 0, INT64_C(1) << 24, o.pp, &o.n_pp, 16))
				return 64;
			break;
		case OPT_PG: {
			int64_t v2[2];
			int n2;
			if (o.n_pg == 16)
				return cmd_usage_error(usage, "--pg: at most 16 tests");
			if (parse_list("--pg", optarg, 1, INT64_C(1) << 24, v2, &n2, 2))
				return 64;
			if (n2 != 2)
				return cmd_usage_error(usage, "--pg: expected PP,TG, not '%s'", optarg);
			o.pg[o.n_pg][0] = v2[0], o.pg[o.n_pg++][1] = v2[1];
			break;
		}
		case 'q':
			o.quiet = 1;
			break;
		case 'r':
			if (cmd_opt_i64("-r", optarg, 1, 100000, &o.reps))
				return 64;
			break;
		case 't':
			if (parse_list("-t", optarg, 1, 4096, o.thr, &o.n_thr, 16))
				return 64;
			break;
		case 'V':
			cmd_version();
			return cmd_close_stdout();
		case 'v':
			o.verbose = 1;
			break;
		case OPT_SET:
			if (o.n_sets == (int)(sizeof o.sets / sizeof o.sets[0]))
				return cmd_usage_error(usage, "--set: too many (at most 64)");
			o.sets[o.n_sets++] = optarg;
			break;
		case OPT_CONFIG:
			o.config = optarg;
			break;
		case OPT_DTYPE:
			o.dtype = tfm_type_from_name(optarg);
			if (o.dtype < 0 || !tfm_type_info(o.dtype))
				return cmd_usage_error(usage, "--dtype: unknown type '%s'", optarg);
			break;
		case OPT_MEMLIM:
			if (tfm_mem_set_limit(optarg))
				return cmd_usage_error(usage, "%s", tfm_errmsg());
			break;
		case OPT_LIMITS:
			o.limits = optarg;
			break;
		case OPT_ATTN:
			attn = 1;
			break;
		case OPT_MEASURE:
			measure = 1;
			break;
		case OPT_SEQS:
			if (cmd_opt_i64("--seqs", optarg, 1, 4096, &o.seqs))
				return 64;
			break;
		case OPT_HEADS:
		case OPT_KV_HEADS:
		case OPT_HEAD_DIM:
		case OPT_WINDOW:
		case OPT_BLOCK: {
			static const char *const nm[] = {"--heads", "--kv-heads", "--head-dim", "--window",
							 "--block"};
			int64_t *dst[] = {&o.heads, &o.kv_heads, &o.head_dim, &o.window, &o.block};
			int k = ch - OPT_HEADS;
			if (cmd_opt_i64(nm[k], optarg, k >= 3 ? 0 : 1, INT64_C(1) << 20, &v))
				return 64;
			*dst[k] = v;
			break;
		}
		default:
			fputs(usage, stderr);
			return 64;
		}
	}
	if (optind < argc)
		return cmd_usage_error(usage, "unexpected argument '%s'", argv[optind]);
	if (attn + measure + (o.model || o.config) != 1)
		return cmd_usage_error(usage, "give one of -m MODEL, --config FILE, --attn or "
				       "--measure-limits");
	if (o.model && o.config)
		return cmd_usage_error(usage, "-m and --config exclude each other");
	if (o.fmt == FMT_SVG && !attn)
		return cmd_usage_error(usage, "-F svg: only with --attn");
	if (attn && (o.heads % o.kv_heads || o.kv_heads > o.heads))
		return cmd_usage_error(usage, "--kv-heads %lld must divide --heads %lld",
				       (long long)o.kv_heads, (long long)o.heads);
	int any = o.n_pg > 0;
	for (int i = 0; i < o.n_pp; i++)
		any |= o.pp[i] > 0;
	for (int i = 0; i < o.n_tg; i++)
		any |= o.tg[i] > 0;
	if (!attn && !measure && !any)
		return cmd_usage_error(usage, "-p 0 and -n 0: nothing to measure");
	if ((attn || measure) && o.n_thr > 1)
		return cmd_usage_error(usage, "-t: one thread count with --attn and --measure-limits");
	if (!o.thr[0])
		o.thr[0] = tfm_ncpu();
	o.threads = o.thr[0];
	int st = measure ? measure_limits(&o) : attn ? bench_attn(&o) : bench_model(&o);
	if (st)
		return cmd_fail(st);
	return cmd_close_stdout();
}
