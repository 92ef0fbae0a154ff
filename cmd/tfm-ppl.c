/* tfm-ppl: perplexity and related measures of a model on a text, with gates
 * for CI and exact sharding.  Options and glue only; the accumulators are in
 * lib/eval.  Chunked mode is llama.cpp's llama-perplexity, so its
 * "Final estimate" line can be compared with llama.cpp's; see man/tfm-ppl.1. */
#include "common.h"
#include "eval/eval.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

static const char usage[] =
	"usage: tfm-ppl -m MODEL [-hqVv] [-b N] [-c N] [-F text | json | jsonl] [-f FILE]\n"
	"               [-k K[,V]] [-t N] [--baseline FILE] [--chunks K] [--kl-base FILE]\n"
	"               [--max-ppl X] [--mem-limit SIZE] [--mode chunked | strided]\n"
	"               [--save-logits FILE] [--set KEY=VALUE] [--shard I/N]\n"
	"               [--source-lang CODE] [--stride S] [--target-lang CODE]\n"
	"               [--tolerance PCT] [--vocab FILE]\n"
	"       tfm-ppl --merge [-hqVv] [-F text | json | jsonl] [--baseline FILE]\n"
	"               [--max-ppl X] [--tolerance PCT] FILE ...\n";

static const char options_help[] =
	"\n"
	"  -b, --batch N           tokens given to the model at once (default: the window)\n"
	"  -c, --ctx N             window size in tokens (default 512; a masked LM: at most\n"
	"                          its positions)\n"
	"  -F, --format FMT        text (default), json or jsonl (one record per window)\n"
	"  -f, --file FILE         the text (default: stdin)\n"
	"  -h, --help              print this help and exit\n"
	"  -k, --kv-type K[,V]     KV cache types: f32 (default), f16, bf16, q8_0, q5_1, q5_0,\n"
	"                          q4_1, q4_0\n"
	"  -m, --model MODEL       the model\n"
	"  -q, --quiet             print errors only\n"
	"  -t, --threads N         threads (default: online cores)\n"
	"  -V, --version           print the version and exit\n"
	"  -v, --verbose           print the running perplexity after each window\n"
	"      --baseline FILE     compare with a -F json result; exit 1 if worse (gate)\n"
	"      --chunks K          use only the first K windows\n"
	"      --kl-base FILE      KL divergence against a --save-logits file\n"
	"      --max-ppl X         exit 1 when the perplexity is above X (gate)\n"
	"      --merge FILE ...    add up the -F json results of --shard runs\n"
	"      --mem-limit SIZE    refuse work needing more memory (8G, none; TFM_MEM_LIMIT)\n"
	"      --mode MODE         chunked (llama.cpp's, default) or strided\n"
	"      --save-logits FILE  write the next-token distributions (for --kl-base)\n"
	"      --set KEY=VALUE     change a knob of the model's variant spec\n"
	"      --shard I/N         evaluate only the I-th of N shards of the windows\n"
	"      --source-lang CODE  mBART: the language of the sources (en_XX)\n"
	"      --stride S          window step of --mode strided\n"
	"      --target-lang CODE  mBART: the language of the targets (ro_RO)\n"
	"      --tolerance PCT     allowed increase over --baseline, percent (0)\n"
	"      --vocab FILE        llama2.c tokenizer.bin of a llama2.c checkpoint\n";

enum { O_BASE = 256, O_CHUNKS, O_MAXPPL, O_MODE, O_SET, O_SHARD, O_STRIDE, O_TOL, O_VOCAB,
       O_MERGE, O_KLBASE, O_SAVE, O_MEMLIM, O_SRCLANG, O_TGTLANG };

static const struct option longopts[] = {
	{ "batch", required_argument, NULL, 'b' },
	{ "ctx", required_argument, NULL, 'c' },
	{ "format", required_argument, NULL, 'F' },
	{ "file", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ "model", required_argument, NULL, 'm' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "threads", required_argument, NULL, 't' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "baseline", required_argument, NULL, O_BASE },
	{ "chunks", required_argument, NULL, O_CHUNKS },
	{ "kl-base", required_argument, NULL, O_KLBASE },
	{ "max-ppl", required_argument, NULL, O_MAXPPL },
	{ "mem-limit", required_argument, NULL, O_MEMLIM },
	{ "merge", no_argument, NULL, O_MERGE },
	{ "mode", required_argument, NULL, O_MODE },
	{ "save-logits", required_argument, NULL, O_SAVE },
	{ "set", required_argument, NULL, O_SET },
	{ "shard", required_argument, NULL, O_SHARD },
	{ "source-lang", required_argument, NULL, O_SRCLANG },
	{ "target-lang", required_argument, NULL, O_TGTLANG },
	{ "stride", required_argument, NULL, O_STRIDE },
	{ "tolerance", required_argument, NULL, O_TOL },
	{ "vocab", required_argument, NULL, O_VOCAB },
	{ "kv-type", required_argument, NULL, 'k' },
	{ NULL, 0, NULL, 0 },
};

enum { FMT_TEXT, FMT_JSON, FMT_JSONL };

/* What identifies a measurement: two results can be compared or merged
 * only when all of this agrees. */
struct meta {
	char model[256];     /* file name of the model, without directories */
	char text_hash[17];  /* FNV-1a 64 of the text bytes, hex */
	int64_t text_bytes, text_tokens, ctx, stride, windows;
	char mode[16];
	int64_t shard_i, shard_n; /* shard_n 0: whole */
	char tokens_hash[17];     /* FNV-1a 64 of the token ids: the tokenizer */
	int have_pct;             /* KL percentiles known (not after --merge) */
	double kl_median, kl_p99;
};

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* A JSON number, or null where it is not finite (JSON has no inf or NaN:
 * jansson would refuse it and the key would silently go missing). */
static json_t *jnum(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *result_json(const struct meta *m, const struct tfm_ppl_acc *a)
{
	struct tfm_ppl_result r;
	tfm_ppl_result(a, &r);
	json_t *j = json_pack("{ss ss sI sI sI sI ss sI sI}", "model", m->model, "text_hash",
			      m->text_hash, "text_bytes", (json_int_t)m->text_bytes, "text_tokens",
			      (json_int_t)m->text_tokens, "tokens", (json_int_t)r.tokens, "ctx",
			      (json_int_t)m->ctx, "mode", m->mode, "stride", (json_int_t)m->stride,
			      "windows", (json_int_t)m->windows);
	if (!j)
		return NULL;
	json_object_set_new(j, "nll", jnum(r.nll));
	json_object_set_new(j, "nll_stderr", jnum(r.nll_stderr));
	json_object_set_new(j, "ppl", jnum(r.ppl));
	json_object_set_new(j, "ppl_stderr", jnum(r.ppl_stderr));
	json_object_set_new(j, "bits_per_token", jnum(r.bits_per_token));
	json_object_set_new(j, "bits_per_byte", jnum(r.bits_per_byte));
	json_object_set_new(j, "entropy_bits", jnum(r.entropy_bits));
	json_object_set_new(j, "top1", jnum(r.top1));
	if (r.kl_positions) {
		json_t *k = json_object();
		json_object_set_new(k, "positions", json_integer(r.kl_positions));
		json_object_set_new(k, "mean", jnum(r.kld));
		json_object_set_new(k, "stderr", jnum(r.kld_stderr));
		if (m->have_pct) {
			json_object_set_new(k, "median", jnum(m->kl_median));
			json_object_set_new(k, "p99", jnum(m->kl_p99));
		}
		json_object_set_new(k, "max", jnum(r.kld_max));
		json_object_set_new(k, "same_top1", jnum(r.top1_agree));
		json_object_set_new(k, "dp_mean", jnum(r.dp_mean));
		json_object_set_new(k, "dp_rms", jnum(r.dp_rms));
		json_object_set_new(k, "ln_ppl_ratio", jnum(r.ln_ppl_ratio));
		json_object_set_new(j, "kl", k);
	}
	if (m->shard_n) {
		char s[48];
		snprintf(s, sizeof(s), "%lld/%lld", (long long)m->shard_i, (long long)m->shard_n);
		json_object_set_new(j, "shard", json_string(s));
	}
	json_object_set_new(j, "sums", tfm_ppl_acc_to_json(a));
	return j;
}

static int meta_from_json(struct meta *m, const json_t *j, const char *name)
{
	memset(m, 0, sizeof(*m));
	const char *model = json_string_value(json_object_get(j, "model"));
	const char *hash = json_string_value(json_object_get(j, "text_hash"));
	const char *mode = json_string_value(json_object_get(j, "mode"));
	json_t *tb = json_object_get(j, "text_bytes"), *tt = json_object_get(j, "text_tokens"),
	       *c = json_object_get(j, "ctx"), *s = json_object_get(j, "stride"),
	       *w = json_object_get(j, "windows");
	if (!model || !hash || !mode || !json_is_integer(tb) || !json_is_integer(tt) ||
	    !json_is_integer(c) || !json_is_integer(s) || !json_is_integer(w))
		return tfm_seterr(TFM_E_FORMAT, "%s: not a tfm-ppl -F json result", name);
	if (json_integer_value(tb) < 0 || json_integer_value(tt) < 0 || json_integer_value(c) < 1 ||
	    json_integer_value(s) < 0 || json_integer_value(w) < 0)
		return tfm_seterr(TFM_E_FORMAT,
				  "%s: text_bytes, text_tokens, ctx, stride or windows out of range", name);
	snprintf(m->model, sizeof(m->model), "%s", model);
	snprintf(m->text_hash, sizeof(m->text_hash), "%s", hash);
	snprintf(m->mode, sizeof(m->mode), "%s", mode);
	m->text_bytes = json_integer_value(tb);
	m->text_tokens = json_integer_value(tt);
	m->ctx = json_integer_value(c);
	m->stride = json_integer_value(s);
	m->windows = json_integer_value(w);
	const char *sh = json_string_value(json_object_get(j, "shard"));
	if (sh) {
		long long i, n;
		char end;
		if (sscanf(sh, "%lld/%lld%c", &i, &n, &end) != 2 || n < 1 || i < 0 || i >= n)
			return tfm_seterr(TFM_E_FORMAT, "%s: bad shard '%s'", name, sh);
		m->shard_i = i;
		m->shard_n = n;
	}
	return TFM_OK;
}

/* Same model, text and settings (shards aside)? */
static int meta_same(const struct meta *a, const struct meta *b)
{
	return !strcmp(a->model, b->model) && !strcmp(a->text_hash, b->text_hash) &&
	       a->text_bytes == b->text_bytes && a->ctx == b->ctx && a->stride == b->stride &&
	       !strcmp(a->mode, b->mode) && a->windows == b->windows;
}

static int load_json(const char *path, json_t **out)
{
	struct tfm_blob b;
	int st = tfm_blob_open(&b, path);
	if (st)
		return st;
	json_error_t e;
	*out = json_loadb((const char *)b.data, b.size, 0, &e);
	tfm_blob_close(&b);
	if (!*out || !json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", path, e.line,
				  e.text[0] ? e.text : "not a JSON object");
	}
	return TFM_OK;
}

struct opts {
	const char *model, *vocab, *file, *baseline, *kl_base, *save_logits;
	const char *src_lang, *tgt_lang;
	int64_t ctx, batch, threads, stride, chunks, shard_i, shard_n;
	double tolerance, max_ppl;
	int fmt, strided, verbose, k_type, v_type, ctx_given;
	const char **set;
	int n_set;
};

/* Print the result; then the gates.  Returns the exit code. */
static int report(const struct opts *o, const struct meta *m, const struct tfm_ppl_acc *a)
{
	struct tfm_ppl_result r;
	tfm_ppl_result(a, &r);
	if (o->fmt == FMT_TEXT) {
		printf("tokens: %lld\n", (long long)r.tokens);
		printf("nll: %.6f +/- %.6f\n", r.nll, r.nll_stderr);
		printf("bits_per_token: %.6f\n", r.bits_per_token);
		printf("bits_per_byte: %.6f\n", r.bits_per_byte);
		printf("entropy_bits: %.6f\n", r.entropy_bits);
		printf("top1: %.6f\n", r.top1);
		if (r.kl_positions) {
			printf("kl_mean: %.6f +/- %.6f\n", r.kld, r.kld_stderr);
			if (m->have_pct) {
				printf("kl_median: %.6f\n", m->kl_median);
				printf("kl_p99: %.6f\n", m->kl_p99);
			}
			printf("kl_max: %.6f\n", r.kld_max);
			printf("same_top1: %.6f\n", r.top1_agree);
			printf("dp_mean: %.6f\n", r.dp_mean);
			printf("dp_rms: %.6f\n", r.dp_rms);
			printf("ln_ppl_ratio: %.6f\n", r.ln_ppl_ratio);
		}
		printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_stderr);
	} else {
		json_t *j = result_json(m, a);
		if (!j)
			return cmd_fail(tfm_seterr(TFM_E_NOMEM, "out of memory"));
		char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
		json_decref(j);
		if (!s)
			return cmd_fail(tfm_seterr(TFM_E_NOMEM, "out of memory"));
		puts(s);
		free(s);
	}
	int rc = cmd_close_stdout();
	if (rc)
		return rc;
	if (o->baseline) {
		json_t *bj;
		struct meta bm;
		int st = load_json(o->baseline, &bj);
		if (!st)
			st = meta_from_json(&bm, bj, o->baseline);
		double bppl = st ? 0 : json_number_value(json_object_get(bj, "ppl"));
		json_decref(bj);
		if (st)
			return cmd_fail(st);
		if (bm.shard_n || !meta_same(&bm, m))
			return cmd_fail(tfm_seterr(TFM_E_FORMAT,
				"%s: baseline is for another model, text or settings (%s, ctx %lld, %s)",
				o->baseline, bm.model, (long long)bm.ctx, bm.mode));
		if (!(bppl > 0))
			return cmd_fail(tfm_seterr(TFM_E_FORMAT, "%s: no ppl", o->baseline));
		double limit = bppl * (1 + o->tolerance / 100);
		if (r.ppl > limit) {
			fprintf(stderr, "%s: gate failed: ppl %.4f is worse than baseline %.4f by %.3f%% (tolerance %g%%)\n",
				prog, r.ppl, bppl, (r.ppl / bppl - 1) * 100, o->tolerance);
			return 1;
		}
	}
	if (o->max_ppl > 0 && r.ppl > o->max_ppl) {
		fprintf(stderr, "%s: gate failed: ppl %.4f > %g\n", prog, r.ppl, o->max_ppl);
		return 1;
	}
	return 0;
}

static int merge(const struct opts *o, int n, char **files)
{
	struct meta m0 = { 0 }, m;
	struct tfm_ppl_acc total, part;
	tfm_ppl_init(&total);
	uint8_t *seen = NULL;
	int st = TFM_OK;
	for (int i = 0; i < n; i++) {
		json_t *j;
		if ((st = load_json(files[i], &j)))
			goto done;
		st = meta_from_json(&m, j, files[i]);
		if (!st)
			st = tfm_ppl_acc_from_json(&part, json_object_get(j, "sums"));
		json_decref(j);
		if (st) {
			tfm_adderr(st, "%s", files[i]);
			goto done;
		}
		if (!m.shard_n) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: not a shard (no \"shard\")", files[i]);
			goto done;
		}
		if (m.shard_n != n) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: shard %lld/%lld, but %d result files given",
					files[i], (long long)m.shard_i, (long long)m.shard_n, n);
			goto done;
		}
		if (part.n > m.text_tokens) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: %lld tokens scored of a %lld-token text",
					files[i], (long long)part.n, (long long)m.text_tokens);
			goto done;
		}
		if (i == 0) {
			m0 = m;
			seen = tfm_calloc((size_t)m.shard_n, 1);
			if (!seen) {
				st = TFM_E_NOMEM;
				goto done;
			}
		} else if (!meta_same(&m0, &m) || m.shard_n != m0.shard_n) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: another model, text or settings than %s",
					files[i], files[0]);
			goto done;
		}
		if (seen[m.shard_i]++) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: shard %lld/%lld given twice", files[i],
					(long long)m.shard_i, (long long)m.shard_n);
			goto done;
		}
		if ((st = tfm_ppl_merge(&total, &part))) {
			tfm_adderr(st, "%s", files[i]);
			goto done;
		}
		if (total.n > m0.text_tokens) {
			st = tfm_seterr(TFM_E_FORMAT, "%s: the shards score %lld tokens of a %lld-token text",
					files[i], (long long)total.n, (long long)m0.text_tokens);
			goto done;
		}
	}
	for (int64_t i = 0; i < m0.shard_n; i++)
		if (!seen[i]) {
			st = tfm_seterr(TFM_E_FORMAT, "shard %lld/%lld is missing", (long long)i,
					(long long)m0.shard_n);
			goto done;
		}
done:
	free(seen);
	if (st)
		return cmd_fail(st);
	m0.shard_i = m0.shard_n = 0;
	return report(o, &m0, &total);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* --save-logits / --kl-base files (formats/logprobs.md): zstd-compressed;
 * one JSON header line saying what was measured (text, tokens, settings),
 * then per scored position a record of the base's top-K distribution
 * (struct tfm_logprobs): f32 logp_target, f32 logp_rest, i32 id[k],
 * f32 logp[k], little-endian. */
static json_t *logits_header(const struct meta *m, int64_t n_vocab, int64_t positions)
{
	char sh[48] = "";
	if (m->shard_n)
		snprintf(sh, sizeof(sh), "%lld/%lld", (long long)m->shard_i, (long long)m->shard_n);
	int64_t k = n_vocab < TFM_LOGPROBS_K ? n_vocab : TFM_LOGPROBS_K;
	return json_pack("{si ss sI sI sI ss ss sI ss sI sI sI ss}", "tfm_logprobs", 2, "format",
			 "topk", "k", (json_int_t)k, "n_vocab", (json_int_t)n_vocab, "positions",
			 (json_int_t)positions, "text_hash", m->text_hash, "tokens_hash",
			 m->tokens_hash, "text_bytes", (json_int_t)m->text_bytes, "mode", m->mode,
			 "ctx", (json_int_t)m->ctx, "stride", (json_int_t)m->stride, "windows",
			 (json_int_t)m->windows, "shard", sh);
}

static int write_record(struct tfm_out *o, const struct tfm_logprobs *r)
{
	int st = tfm_out_write(o, &r->logp_target, 4);
	if (!st)
		st = tfm_out_write(o, &r->logp_rest, 4);
	if (!st)
		st = tfm_out_write(o, r->id, 4 * (size_t)r->k);
	if (!st)
		st = tfm_out_write(o, r->logp, 4 * (size_t)r->k);
	return st;
}

/* Check that base (a blob holding a --save-logits file) is for the same
 * text, tokens, settings and vocabulary; *data points at the first record. */
static int kl_base_check(const struct tfm_blob *b, const json_t *want, const uint8_t **data)
{
	json_t *h;
	size_t off;
	int st = tfm_logprobs_header(b->data, b->size, b->name, &h, &off);
	if (st)
		return st;
	if (strcmp(json_string_value(json_object_get(h, "tokens_hash")) ?: "",
		   json_string_value(json_object_get(want, "tokens_hash")) ?: "") ||
	    json_integer_value(json_object_get(h, "n_vocab")) !=
		    json_integer_value(json_object_get(want, "n_vocab")))
		st = tfm_seterr(TFM_E_FORMAT, "%s: saved from another text or tokenizer", b->name);
	else if (!json_equal(h, want))
		st = tfm_seterr(TFM_E_FORMAT, "%s: saved with other settings "
				"(-c, --mode, --stride, --chunks, --shard)", b->name);
	else
		*data = b->data + off;
	json_decref(h);
	return st;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-quantile of n sorted values (nearest rank). */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);
	return v[i ? i - 1 : 0];
}

/* Window w: its first token *begin, its length *len, and the rows of logits
 * it scores, [*lo, *hi). */
static void window(int strided, int64_t w, int64_t ctx, int64_t stride, int64_t n,
		   int64_t *begin, int64_t *len, int64_t *lo, int64_t *hi)
{
	if (!strided) {
		*begin = w * ctx;
		*len = ctx;
		*lo = ctx / 2;
		*hi = ctx - 1;
		return;
	}
	*begin = w * stride;
	int64_t end = *begin + ctx < n ? *begin + ctx : n;
	int64_t prev_end = w ? ((w - 1) * stride + ctx < n ? (w - 1) * stride + ctx : n) : 1;
	*len = end - *begin;
	*lo = prev_end - *begin - 1; /* row predicting the first new target */
	if (*lo < 0)
		*lo = 0; /* stride == ctx: a window's first token has no context */
	*hi = *len - 1;
}

/* A masked LM (an encoder with its masked-LM head): pseudo-perplexity
 * (lib/eval/pppl.c), windows of -c tokens (the tokenizer's frame included)
 * side by side, every token of the text scored once with the rest of its
 * window around it. */
static int measure_pseudo(const struct opts *o, struct meta *m, struct tfm_ppl_acc *total,
			  struct tfm_model *model, const struct tfm_tokenizer *tok,
			  const struct tfm_blob *text, size_t len)
{
	const struct tfm_spec *s = tfm_model_spec(model);
	const char *opt = o->strided ? "--mode strided" : o->kl_base ? "--kl-base" :
			  o->save_logits ? "--save-logits" : o->batch ? "-b" : NULL;
	if (opt)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pseudo-perplexity (a masked LM) does not "
				  "support %s", s->arch, opt);
	int64_t ctx = o->ctx;
	if (s->n_ctx_train > 0 && ctx > s->n_ctx_train) {
		if (o->ctx_given)
			return tfm_seterr(TFM_E_FORMAT, "-c %lld: the model has %lld positions",
					  (long long)ctx, (long long)s->n_ctx_train);
		ctx = s->n_ctx_train; /* the default window is the model's */
	}
	struct tfm_pppl p;
	struct tfm_ctx *c = NULL;
	float *logits = NULL;
	int st = tfm_pppl_prepare(&p, tok, (const char *)text->data, len, ctx);
	if (st)
		return st;
	int64_t n_win = p.n_win;
	if (o->chunks > 0 && o->chunks < n_win)
		n_win = o->chunks;
	snprintf(m->mode, sizeof(m->mode), "pseudo");
	snprintf(m->tokens_hash, sizeof(m->tokens_hash), "%016llx",
		 (unsigned long long)fnv1a((const uint8_t *)p.ids, (size_t)p.n * sizeof(*p.ids)));
	m->text_tokens = p.n;
	m->ctx = ctx;
	m->stride = p.per_win;
	m->windows = n_win;
	int64_t w0 = 0, w1 = n_win;
	if (o->shard_n) {
		w0 = n_win * o->shard_i / o->shard_n;
		w1 = n_win * (o->shard_i + 1) / o->shard_n;
	}
	logits = tfm_malloc((size_t)s->n_vocab * sizeof(float));
	if (!logits)
		st = TFM_E_NOMEM;
	if (!st)
		st = tfm_ctx_new(&c, model, ctx);
	if (!st)
		tfm_log(TFM_LOG_INFO, "pseudo-perplexity: %lld tokens, %lld windows of %lld (%lld "
			"forward passes)", (long long)p.n, (long long)n_win, (long long)ctx,
			(long long)(w1 - w0 < p.n_win ? (w1 - w0) * p.per_win : p.n));
	double t0 = now();
	for (int64_t w = w0; !st && w < w1; w++) {
		struct tfm_ppl_acc acc;
		tfm_ppl_init(&acc);
		if ((st = tfm_pppl_window(c, tok, &p, w, logits, s->n_vocab, &acc)) ||
		    (st = tfm_ppl_merge(total, &acc)))
			break;
		struct tfm_ppl_result r, so_far;
		tfm_ppl_result(&acc, &r);
		tfm_ppl_result(total, &so_far);
		if (o->fmt == FMT_JSONL)
			printf("{\"window\":%lld,\"tokens\":%lld,\"nll\":%.17g,\"ppl\":%.17g}\n",
			       (long long)w, (long long)r.tokens, r.nll, so_far.ppl);
		if (o->verbose > 0)
			fprintf(stderr, "[%lld/%lld] pseudo-ppl %.4f (%.2f s/window)\n", (long long)(w + 1),
				(long long)w1, so_far.ppl, (now() - t0) / (double)(w - w0 + 1));
	}
	free(logits);
	tfm_ctx_free(c);
	tfm_pppl_free(&p);
	return st;
}

/* An encoder-decoder model's text: one "source<TAB>target" pair a line
 * (empty lines skipped).  Pair i's decoder input is its start token, then
 * the target's tokens as the tokenizer frames them (T5: closed by </s>):
 * tgt[tgt_off[i] .. + tgt_len[i]], whose rows 0 .. tgt_len[i] - 2 predict
 * the target's tokens, all scored (teacher forcing, as transformers'
 * labels); its source src[src_off[i] .. + src_len[i]]. */
struct pairs {
	int32_t *src, *tgt;
	int64_t *src_off, *src_len, *tgt_off, *tgt_len;
	int64_t n, n_src, n_tgt, longest;
};

static void pairs_free(struct pairs *p)
{
	free(p->src), free(p->tgt), free(p->src_off), free(p->src_len), free(p->tgt_off),
	free(p->tgt_len);
}

/* Append ids[n] to *v (length *len, capacity *cap). */
static int append(int32_t **v, int64_t *len, int64_t *cap, const int32_t *ids, int64_t n)
{
	if (*len + n > *cap) {
		int64_t c = (*len + n) * 2;
		int32_t *nv = realloc(*v, (size_t)c * sizeof **v);
		if (!nv)
			return TFM_E_NOMEM;
		*v = nv, *cap = c;
	}
	memcpy(*v + *len, ids, (size_t)n * sizeof *ids);
	*len += n;
	return TFM_OK;
}

/* A source as the tokenizer's post-processor frames one text (T5: text
 * </s>; BART: <s> text </s>), as transformers' tokenizer(text);
 * tokenizers without one: as tfm_tokenize. */
static int frame(const struct tfm_tokenizer *tok, const char *text, size_t len, int32_t **ids,
		 size_t *n)
{
	int st = tfm_tokenize_seq(tok, text, len, 0, ids, n);
	if (st == TFM_E_UNSUPPORTED)
		st = tfm_tokenize(tok, text, len, tfm_tokenizer_add_bos(tok), ids, n);
	return st;
}

/* source<TAB>target lines: the framed sources, and each target as the
 * decoder reads it, start then the labels (start -1: the labels' last
 * token, mBART's shift_tokens_right). */
static int read_pairs(const struct tfm_tokenizer *tok, int32_t start, const char *text, size_t len,
		      struct pairs *p)
{
	int64_t cs = 0, ct = 0, cp = 0, line = 0;
	int st = TFM_OK;
	memset(p, 0, sizeof *p);
	for (size_t i = 0; i < len && !st;) {
		const char *a = text + i, *e = memchr(a, '\n', len - i);
		size_t n = e ? (size_t)(e - a) : len - i;
		i += n + 1;
		line++;
		if (n && a[n - 1] == '\r')
			n--;
		if (!n)
			continue;
		const char *tab = memchr(a, '\t', n);
		if (!tab)
			return tfm_seterr(TFM_E_FORMAT, "line %lld: an encoder-decoder model reads "
					  "source<TAB>target lines; no TAB", (long long)line);
		if (p->n == cp) {
			cp = cp ? 2 * cp : 64;
			int64_t **arr[] = {&p->src_off, &p->src_len, &p->tgt_off, &p->tgt_len};
			for (int k = 0; k < 4; k++) {
				int64_t *nv = realloc(*arr[k], (size_t)cp * sizeof **arr[k]);
				if (!nv)
					return TFM_E_NOMEM;
				*arr[k] = nv;
			}
		}
		int32_t *ids = NULL;
		size_t ns = 0, nt = 0;
		if ((st = frame(tok, a, (size_t)(tab - a), &ids, &ns)))
			break;
		p->src_off[p->n] = p->n_src, p->src_len[p->n] = (int64_t)ns;
		st = append(&p->src, &p->n_src, &cs, ids, (int64_t)ns);
		free(ids);
		ids = NULL;
		/* the target as transformers' labels (Marian: its target model) */
		if (st || (st = tfm_tokenize_target(tok, tab + 1, n - (size_t)(tab - a) - 1, &ids, &nt)))
			break;
		p->tgt_off[p->n] = p->n_tgt, p->tgt_len[p->n] = (int64_t)nt + 1;
		int32_t first = start >= 0 || !nt ? start : ids[nt - 1];
		if (!(st = append(&p->tgt, &p->n_tgt, &ct, &first, 1)))
			st = append(&p->tgt, &p->n_tgt, &ct, ids, (int64_t)nt);
		free(ids);
		if (!st && (ns == 0 || nt == 0))
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: an empty %s", (long long)line,
					ns ? "target" : "source");
		if (st)
			break;
		int64_t l = (int64_t)ns > (int64_t)nt + 1 ? (int64_t)ns : (int64_t)nt + 1;
		if (l > p->longest)
			p->longest = l;
		p->n++;
	}
	if (!st && !p->n)
		st = tfm_seterr(TFM_E_FORMAT, "no source<TAB>target line in the text");
	return st;
}

/* Evaluate the model over the text and accumulate. */
static int measure(const struct opts *o, struct meta *m, struct tfm_ppl_acc *total)
{
	struct tfm_model *model = NULL;
	struct tfm_ctx *c = NULL;
	struct tfm_blob text = { 0 }, kb = { 0 };
	struct tfm_out *save = NULL;
	json_t *hdr = NULL;
	const uint8_t *base = NULL;
	int32_t *ids = NULL, *win = NULL;
	float *logits = NULL;
	int64_t *nbytes_of = NULL; /* [batch]: the bytes each scored token stands for */
	double *kls = NULL; /* per-position KL, for the median and p99 */
	size_t n_ids = 0;
	struct pairs pr = {0}; /* encoder-decoder models */
	int st;
	struct tfm_model_opts mo = { .n_threads = (int)o->threads, .vocab = o->vocab, .set = o->set,
				     .k_type = o->k_type, .v_type = o->v_type,
				     .n_set = o->n_set, .src_lang = o->src_lang,
				     .tgt_lang = o->tgt_lang };

	if ((st = tfm_blob_open(&text, o->file ? o->file : "-")))
		goto done;
	size_t len = text.size;
	if (len && text.data[len - 1] == '\n') /* as llama.cpp's -f */
		len--;
	if (len == 0) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: the text is empty", text.name);
		goto done;
	}
	if ((st = tfm_model_open(&model, o->model, &mo)))
		goto done;
	const struct tfm_tokenizer *tok = tfm_model_tokenizer(model);
	if (!tok) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: the model has no tokenizer%s", o->model,
				o->vocab ? "" : " (llama2.c checkpoints need --vocab)");
		goto done;
	}
	snprintf(m->model, sizeof(m->model), "%s",
		 strrchr(o->model, '/') ? strrchr(o->model, '/') + 1 : o->model);
	snprintf(m->text_hash, sizeof(m->text_hash), "%016llx",
		 (unsigned long long)fnv1a(text.data, text.size));
	m->text_bytes = (int64_t)text.size;
	m->shard_i = o->shard_i;
	m->shard_n = o->shard_n;
	if (tfm_model_spec(model)->family == TFM_FAMILY_ENCODER) {
		st = measure_pseudo(o, m, total, model, tok, &text, len);
		goto done;
	}
	int add_bos = tfm_tokenizer_add_bos(tok);
	int32_t bos = tfm_tokenizer_bos(tok);
	const struct tfm_spec *spec = tfm_model_spec(model);
	int encdec = spec->family == TFM_FAMILY_ENCDEC;
	int64_t n_vocab = spec->n_vocab, ctx = o->ctx;
	if (encdec) {
		/* seq2seq: a window is a pair, its target teacher-forced after
		 * its source is encoded; the context holds the longest */
		if (o->strided) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: an encoder-decoder model scores "
					"source<TAB>target pairs: --mode strided does not apply",
					spec->arch);
			goto done;
		}
		/* mBART's shift_tokens_right starts the decoder with the
		 * target's last token (cc25: its language code), not
		 * decoder_start_token_id */
		int32_t start = !strcmp(spec->arch, "mbart") ? -1 : spec->dec_start_id;
		if ((st = read_pairs(tok, start, (const char *)text.data, len, &pr)))
			goto done;
		if (o->ctx_given && pr.longest > ctx) {
			st = tfm_seterr(TFM_E_FORMAT, "-c %lld: a source or target of %lld tokens",
					(long long)ctx, (long long)pr.longest);
			goto done;
		}
		if (!o->ctx_given)
			ctx = pr.longest;
		ids = pr.tgt, pr.tgt = NULL;
		n_ids = (size_t)pr.n_tgt;
	} else if ((st = tfm_tokenize(tok, (const char *)text.data, len, add_bos, &ids, &n_ids))) {
		goto done;
	}
	int64_t stride = o->strided ? (o->stride ? o->stride : ctx / 2) : ctx;
	if (stride < 1 || stride > ctx) {
		st = tfm_seterr(TFM_E_INVAL, "--stride %lld: must be between 1 and %lld",
				(long long)stride, (long long)ctx);
		goto done;
	}
	/* Windows and the positions scored in each (the logits at window
	 * position j predict token j + 1 of the window).
	 * chunked (llama-perplexity): windows of ctx tokens side by side, the
	 *   second half of each scored.
	 * strided (Hugging Face's sliding window): window w holds tokens
	 *   [w * stride, min(w * stride + ctx, n)) and scores the targets the
	 *   previous window did not reach; every target 1..n-1 is scored once. */
	int64_t n_win;
	if (encdec) {
		n_win = pr.n;
	} else if (!o->strided) {
		if ((int64_t)n_ids < 2 * ctx) {
			st = tfm_seterr(TFM_E_FORMAT, "the text has %zu token%s; -c %lld needs at least %lld",
					n_ids, n_ids == 1 ? "" : "s", (long long)ctx, (long long)(2 * ctx));
			goto done;
		}
		n_win = (int64_t)n_ids / ctx;
	} else {
		if (n_ids < 2) {
			st = tfm_seterr(TFM_E_FORMAT, "the text has %zu token%s; strided mode needs 2",
					n_ids, n_ids == 1 ? "" : "s");
			goto done;
		}
		n_win = (int64_t)n_ids <= ctx ? 1 : ((int64_t)n_ids - ctx + stride - 1) / stride + 1;
	}
	if (o->chunks > 0 && o->chunks < n_win)
		n_win = o->chunks;
	snprintf(m->model, sizeof(m->model), "%s",
		 strrchr(o->model, '/') ? strrchr(o->model, '/') + 1 : o->model);
	snprintf(m->text_hash, sizeof(m->text_hash), "%016llx",
		 (unsigned long long)fnv1a(text.data, text.size));
	snprintf(m->tokens_hash, sizeof(m->tokens_hash), "%016llx",
		 (unsigned long long)fnv1a((const uint8_t *)ids, n_ids * sizeof(*ids)));
	snprintf(m->mode, sizeof(m->mode), "%s", encdec ? "seq2seq" : o->strided ? "strided" : "chunked");
	if (encdec) /* the sources too: another source is another measurement */
		snprintf(m->tokens_hash, sizeof(m->tokens_hash), "%016llx",
			 (unsigned long long)(fnv1a((const uint8_t *)ids, n_ids * sizeof(*ids)) ^
					      fnv1a((const uint8_t *)pr.src,
						    (size_t)pr.n_src * sizeof(*pr.src))));
	m->text_bytes = (int64_t)text.size;
	m->text_tokens = (int64_t)n_ids;
	m->ctx = ctx;
	m->stride = stride;
	m->windows = n_win;
	m->shard_i = o->shard_i;
	m->shard_n = o->shard_n;
	int64_t w0 = 0, w1 = n_win;
	if (o->shard_n) {
		w0 = n_win * o->shard_i / o->shard_n;
		w1 = n_win * (o->shard_i + 1) / o->shard_n;
	}
	int64_t batch = o->batch ? o->batch : ctx;
	if (batch > ctx)
		batch = ctx;
	logits = tfm_malloc((size_t)batch * (size_t)n_vocab * sizeof(float));
	win = tfm_malloc((size_t)ctx * sizeof(int32_t));
	nbytes_of = tfm_malloc((size_t)batch * sizeof(int64_t));
	if (!logits || !win || !nbytes_of) {
		st = TFM_E_NOMEM;
		goto done;
	}
	int64_t n_scored = 0;
	for (int64_t w = w0; w < w1; w++) {
		int64_t b, l, lo, hi;
		window(o->strided, w, ctx, stride, (int64_t)n_ids, &b, &l, &lo, &hi);
		if (encdec)
			b = pr.tgt_off[w], l = pr.tgt_len[w], lo = 0, hi = l - 1;
		n_scored += hi - lo;
	}
	if (o->save_logits || o->kl_base) {
		hdr = logits_header(m, n_vocab, n_scored);
		if (!hdr) {
			st = tfm_seterr(TFM_E_NOMEM, "out of memory");
			goto done;
		}
	}
	int64_t k_rec = n_vocab < TFM_LOGPROBS_K ? n_vocab : TFM_LOGPROBS_K;
	if (o->kl_base) {
		if ((st = tfm_blob_open(&kb, o->kl_base)) || (st = kl_base_check(&kb, hdr, &base)))
			goto done;
		kls = tfm_malloc(sizeof(*kls) * (size_t)(n_scored + 1));
		if (!kls) {
			st = TFM_E_NOMEM;
			goto done;
		}
	}
	if (o->save_logits) {
		char *h = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS);
		if (!h) {
			st = tfm_seterr(TFM_E_NOMEM, "out of memory");
			goto done;
		}
		if (!(st = tfm_out_open(&save, o->save_logits, 1)))
			st = tfm_out_printf(save, "%s\n", h);
		free(h);
		if (st)
			goto done;
	}
	int64_t row = 0; /* scored positions so far, for the logits files */
	if ((st = tfm_ctx_new(&c, model, ctx)))
		goto done;
	tfm_log(TFM_LOG_INFO, "%zu tokens, %lld windows of %lld (%s), %lld positions to score",
		n_ids, (long long)n_win, (long long)ctx, m->mode, (long long)n_scored);
	double t0 = now();
	int progress = o->verbose == 0 && isatty(2);
	for (int64_t w = w0; w < w1; w++) {
		int64_t begin, wlen, first, last;
		window(o->strided, w, ctx, stride, (int64_t)n_ids, &begin, &wlen, &first, &last);
		if (encdec)
			begin = pr.tgt_off[w], wlen = pr.tgt_len[w], first = 0, last = wlen - 1;
		memcpy(win, ids + begin, (size_t)wlen * sizeof(int32_t));
		if (!o->strided && !encdec && add_bos && bos >= 0)
			win[0] = bos; /* as llama-perplexity: BOS replaces the first token */
		tfm_ctx_reset(c);
		if (encdec && (st = tfm_seq2seq_encode(c, pr.src + pr.src_off[w], pr.src_len[w], NULL)))
			goto done;
		struct tfm_ppl_acc acc;
		tfm_ppl_init(&acc);
		for (int64_t j0 = 0; j0 < wlen; j0 += batch) {
			int64_t nb = wlen - j0 < batch ? wlen - j0 : batch;
			int need = j0 + nb > first;
			if ((st = tfm_eval(c, win + j0, nb, need ? logits : NULL, need))) {
				/* e.g. -c past learned positions: the input, not usage */
				if (st == TFM_E_INVAL)
					st = tfm_adderr(TFM_E_FORMAT, "-c %lld", (long long)ctx);
				goto done;
			}
			/* the batch's scored positions [k0, k1): their softmaxes
			 * on the context's threads, then the records in order */
			int64_t k0 = first > j0 ? first - j0 : 0;
			int64_t k1 = last < j0 + nb ? last - j0 : nb;
			if (need && k1 > k0) {
				for (int64_t k = k0; k < k1; k++) {
					char piece[512];
					int nbytes = tfm_token_decode(tok, win[j0 + k], win[j0 + k + 1], piece,
								      sizeof(piece));
					nbytes_of[k - k0] = nbytes > 0 ? nbytes : 0;
				}
				if ((st = tfm_ppl_add_rows(&acc, tfm_ctx_pool(c), logits + k0 * n_vocab,
							   k1 - k0, n_vocab, win + j0 + k0 + 1, nbytes_of)))
					goto done;
			}
			for (int64_t k = 0; need && k < nb; k++) {
				int64_t j = j0 + k;
				if (j < first || j >= last)
					continue;
				const float *lg = logits + k * n_vocab;
				struct tfm_logprobs rec;
				if (save) {
					tfm_logprobs_make(lg, n_vocab, win[j + 1], &rec);
					if ((st = write_record(save, &rec)))
						goto done;
				}
				if (base) {
					size_t rb = tfm_logprobs_record_bytes(k_rec);
					const uint8_t *p = base + (size_t)row * rb;
					if ((st = tfm_logprobs_read(p, k_rec, n_vocab, &rec, kb.name)))
						goto done;
					kls[row] = tfm_kl_add(&acc, &rec, lg, n_vocab, win[j + 1]);
				}
				row++;
			}
		}
		if ((st = tfm_ppl_merge(total, &acc)))
			goto done;
		if (o->fmt == FMT_JSONL) {
			/* this window's tokens and mean NLL; the perplexity so far */
			struct tfm_ppl_result r, so_far;
			tfm_ppl_result(&acc, &r);
			tfm_ppl_result(total, &so_far);
			printf("{\"window\":%lld,\"tokens\":%lld,\"nll\":%.17g,\"ppl\":%.17g}\n",
			       (long long)w, (long long)r.tokens, r.nll, so_far.ppl);
		}
		if (o->verbose > 0 || progress) {
			struct tfm_ppl_result r;
			tfm_ppl_result(total, &r);
			double dt = now() - t0;
			/* -v: a line a window; a terminal: one line rewritten */
			fprintf(stderr, "%s[%lld/%lld] ppl %.4f (%.2f s/window)%s", progress ? "\r" : "",
				(long long)(w + 1), (long long)w1, r.ppl, dt / (double)(w - w0 + 1),
				progress ? "\033[K" : "\n");
		}
	}
	if (progress)
		fputs("\r\033[K", stderr);
	if (o->verbose > 0)
		fprintf(stderr, "%s: %lld windows in %.2f s\n", prog, (long long)(w1 - w0), now() - t0);
	if (kls && row > 0) {
		qsort(kls, (size_t)row, sizeof(*kls), cmp_double);
		m->have_pct = 1;
		m->kl_median = quantile(kls, (size_t)row, 0.5);
		m->kl_p99 = quantile(kls, (size_t)row, 0.99);
	}
	if (save) {
		st = tfm_out_commit(save);
		save = NULL;
	}
done:
	if (save)
		tfm_out_abort(save);
	json_decref(hdr);
	tfm_blob_close(&kb);
	free(kls);
	free(ids);
	pairs_free(&pr);
	free(win);
	free(nbytes_of);
	free(logits);
	tfm_ctx_free(c);
	tfm_model_close(model);
	tfm_blob_close(&text);
	return st;
}

int main(int argc, char **argv)
{
	cmd_init("tfm-ppl");
	struct opts o = { .ctx = 512, .tolerance = 0 };
	const char *format = "text", *mode = "chunked";
	int do_merge = 0, have_tol = 0, rc;
	int ch;

	while ((ch = getopt_long(argc, argv, "F:Vb:c:f:hk:m:qt:v", longopts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			if ((rc = cmd_opt_kv_types(usage, optarg, 1, &o.k_type, &o.v_type)))
				return rc;
			break;
		case 'F': format = optarg; break;
		case 'V': cmd_version(); return cmd_close_stdout();
		case 'b': if ((rc = cmd_opt_i64("-b", optarg, 1, INT32_MAX, &o.batch))) return rc; break;
		case 'c': if ((rc = cmd_opt_i64("-c", optarg, 2, INT32_MAX, &o.ctx))) return rc; o.ctx_given = 1; break;
		case 'f': o.file = optarg; break;
		case 'h': fputs(usage, stdout); fputs(options_help, stdout); return cmd_close_stdout();
		case 'm': o.model = optarg; break;
		case 'q': tfm_log_set_level(TFM_LOG_ERROR); o.verbose = -1; break;
		case 't': if ((rc = cmd_opt_i64("-t", optarg, 0, 1024, &o.threads))) return rc; break;
		case 'v': tfm_log_set_level(TFM_LOG_INFO); o.verbose = 1; break;
		case O_BASE: o.baseline = optarg; break;
		case O_CHUNKS: if ((rc = cmd_opt_i64("--chunks", optarg, 1, INT64_MAX, &o.chunks))) return rc; break;
		case O_KLBASE: o.kl_base = optarg; break;
		case O_SAVE: o.save_logits = optarg; break;
		case O_MAXPPL: if ((rc = cmd_opt_f64("--max-ppl", optarg, 1, 1e300, &o.max_ppl))) return rc; break;
		case O_MEMLIM:
			if (tfm_mem_set_limit(optarg))
				return cmd_usage_error(usage, "%s", tfm_errmsg());
			break;
		case O_MERGE: do_merge = 1; break;
		case O_SRCLANG: o.src_lang = optarg; break;
		case O_TGTLANG: o.tgt_lang = optarg; break;
		case O_MODE: mode = optarg; break;
		case O_SET: {
			const char **ns = realloc(o.set, (size_t)(o.n_set + 1) * sizeof(*o.set));
			if (!ns)
				return cmd_fail(tfm_seterr(TFM_E_NOMEM, "out of memory"));
			o.set = ns;
			o.set[o.n_set++] = optarg;
			break;
		}
		case O_SHARD: {
			long long i, n;
			char end;
			if (sscanf(optarg, "%lld/%lld%c", &i, &n, &end) != 2 || n < 1 || i < 0 || i >= n)
				return cmd_usage_error(usage, "--shard %s: want I/N with 0 <= I < N", optarg);
			o.shard_i = i;
			o.shard_n = n;
			break;
		}
		case O_STRIDE: if ((rc = cmd_opt_i64("--stride", optarg, 1, INT32_MAX, &o.stride))) return rc; break;
		case O_TOL:
			if ((rc = cmd_opt_f64("--tolerance", optarg, 0, 1e6, &o.tolerance)))
				return rc;
			have_tol = 1;
			break;
		case O_VOCAB: o.vocab = optarg; break;
		default: fputs(usage, stderr); return 64;
		}
	}
	if (!strcmp(format, "text"))
		o.fmt = FMT_TEXT;
	else if (!strcmp(format, "json"))
		o.fmt = FMT_JSON;
	else if (!strcmp(format, "jsonl"))
		o.fmt = FMT_JSONL;
	else
		return cmd_usage_error(usage, "-F: unknown format '%s' (text, json, jsonl)", format);
	if (!strcmp(mode, "strided"))
		o.strided = 1;
	else if (strcmp(mode, "chunked"))
		return cmd_usage_error(usage, "--mode: unknown mode '%s' (chunked, strided)", mode);
	if (have_tol && !o.baseline)
		return cmd_usage_error(usage, "--tolerance needs --baseline");
	if (o.stride && !o.strided)
		return cmd_usage_error(usage, "--stride needs --mode strided");
	if (do_merge) {
		if (o.model || o.file || o.shard_n)
			return cmd_usage_error(usage, "--merge takes result files only");
		if (optind >= argc)
			return cmd_usage_error(usage, "--merge needs result files");
		rc = merge(&o, argc - optind, argv + optind);
		free(o.set);
		return rc;
	}
	if (optind < argc)
		return cmd_usage_error(usage, "unexpected argument: %s", argv[optind]);
	if (!o.model)
		return cmd_usage_error(usage, "-m model is required");

	struct meta m = { 0 };
	struct tfm_ppl_acc total;
	tfm_ppl_init(&total);
	int st = measure(&o, &m, &total);
	free(o.set);
	if (st)
		return cmd_fail(st);
	return report(&o, &m, &total);
}
