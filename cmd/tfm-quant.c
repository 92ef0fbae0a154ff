/* tfm-quant: re-encode the weights of a GGUF file (f32, f16, bf16, q8_0,
 * q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K, and llama.cpp's q4_K_M / q5_K_M
 * mixes).  Which tensors are quantized, and to what, follows llama.cpp's
 * llama-quantize; the blocks are ggml's reference encodings. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <getopt.h>
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "quant/quant.h"

static const char usage[] =
	"usage: tfm-quant [-hqVvz] [-o OUTPUT] [-t N] [--tensor-type REGEX=TYPE ...]\n"
	"                 [--keep-embeddings] [--allow-requantize] [--allow-nonfinite]\n"
	"                 [--dry-run] TYPE [INPUT]\n";

static const char options_help[] =
	"\n"
	"      --allow-nonfinite   quantize NaN and infinite weights as 0 (else 65)\n"
	"      --allow-requantize  convert tensors that are already quantized\n"
	"      --dry-run           write nothing; one line per tensor: name, types, sizes\n"
	"  -h, --help              print this help and exit\n"
	"      --keep-embeddings   keep the token embedding in its type\n"
	"  -o, --output OUTPUT     write the GGUF to OUTPUT (default: stdout)\n"
	"  -q, --quiet             print nothing but errors\n"
	"  -t, --threads N         threads\n"
	"      --tensor-type REGEX=TYPE  type of the tensors matching REGEX (repeatable)\n"
	"  -V, --version           print the version and exit\n"
	"  -v, --verbose           report each tensor's quantization error\n"
	"  -z, --zstd              compress the output with zstd\n"
	"\n"
	"TYPE is one of: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_K q5_K q6_K\n"
	"q4_K_M q5_K_M q4_K_S q5_K_S (q4_K and q5_K are llama.cpp's Q4_K_S, Q5_K_S).\n";

/* The TYPE argument: the default tensor type and llama.cpp's file type
 * number (LLAMA_FTYPE_*) written to general.file_type. */
struct target {
	const char *name;
	int type;
	int ftype;
	int mix; /* MIX_S, MIX_M: llama.cpp's rules giving some tensors more bits */
};
enum { MIX_NONE, MIX_S, MIX_M };
static const struct target targets[] = {
	{"f32", TFM_TYPE_F32, 0, 0},     {"f16", TFM_TYPE_F16, 1, 0},
	{"bf16", TFM_TYPE_BF16, 32, 0},  {"q8_0", TFM_TYPE_Q8_0, 7, 0},
	{"q4_0", TFM_TYPE_Q4_0, 2, 0},   {"q4_1", TFM_TYPE_Q4_1, 3, 0},
	{"q5_0", TFM_TYPE_Q5_0, 8, 0},   {"q5_1", TFM_TYPE_Q5_1, 9, 0},
	/* q4_K and q5_K are llama.cpp's Q4_K_S and Q5_K_S */
	{"q4_K", TFM_TYPE_Q4_K, 14, MIX_S},   {"q5_K", TFM_TYPE_Q5_K, 16, MIX_S},
	{"q6_K", TFM_TYPE_Q6_K, 18, 0},       {"q4_K_M", TFM_TYPE_Q4_K, 15, MIX_M},
	{"q5_K_M", TFM_TYPE_Q5_K, 17, MIX_M}, {"q4_K_S", TFM_TYPE_Q4_K, 14, MIX_S},
	{"q5_K_S", TFM_TYPE_Q5_K, 16, MIX_S},
};
#define NTARGETS (sizeof targets / sizeof targets[0])

static const struct target *find_target(const char *s)
{
	for (size_t i = 0; i < NTARGETS; i++)
		if (!strcasecmp(s, targets[i].name))
			return &targets[i];
	return NULL;
}

static int is_float(int type)
{
	return type == TFM_TYPE_F32 || type == TFM_TYPE_F16 || type == TFM_TYPE_BF16;
}

struct override {
	pcre2_code *re;
	int type;
};

/* One output tensor. */
struct plan {
	const struct tfm_gguf_tensor *t;
	int type;          /* output type */
	double sse, sx2;   /* squared error and squared input, for -v */
	struct quant *q;
};

struct quant {
	struct tfm_pool *pool;
	int verbose;
	int allow_nonfinite; /* quantize NaN/Inf as 0 instead of refusing */
	struct plan *plan;
	int64_t n;
};

/* Names llama.cpp never quantizes (llama-quant.cpp,
 * tensor_allows_quantization), besides norms and 1-D tensors. */
static const char *const keep_names[] = {
	"ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
	"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight",
	"indexer.k_proj.weight", "indexer.q_proj.weight",
	"time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
	"time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
	"time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight",
	"time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
	"time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
	"time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",
	"sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
};

static int quantizable(const struct tfm_gguf_tensor *t, int keep_embd)
{
	size_t len = strlen(t->name);
	if (t->type >= TFM_TYPE_I8 && t->type <= TFM_TYPE_F64) /* integer tables, f64 */
		return 0;
	if (len < 6 || strcmp(t->name + len - 6, "weight") || t->n_dims < 2)
		return 0;
	if (strstr(t->name, "_norm.weight") || !strcmp(t->name, "position_embd.weight") ||
	    !strcmp(t->name, "token_types.weight"))
		return 0;
	for (size_t i = 0; i < sizeof keep_names / sizeof keep_names[0]; i++)
		if (strstr(t->name, keep_names[i]))
			return 0;
	if (keep_embd && !strcmp(t->name, "token_embd.weight"))
		return 0;
	return 1;
}

/* llama.cpp's use_more_bits: the first and last eighth of the layers and
 * every third one between get more bits in the _M mixes. */
static int more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* A row length the type cannot take falls back as llama.cpp does: the
 * K-quants to a 32-block type of at least as many bits, then f16. */
static int fallback(const struct tfm_gguf_tensor *t, int type, int quiet)
{
	int64_t blck = tfm_quant_blck(type);
	if (t->ne[0] % blck == 0)
		return type;
	int nt = type == TFM_TYPE_Q4_K ? TFM_TYPE_Q5_0 : type == TFM_TYPE_Q5_K ? TFM_TYPE_Q5_1 :
		 type == TFM_TYPE_Q6_K ? TFM_TYPE_Q8_0 : TFM_TYPE_F16;
	if (t->ne[0] % tfm_quant_blck(nt))
		nt = TFM_TYPE_F16;
	if (!quiet)
		fprintf(stderr, "%s: %s: rows of %lld are not a multiple of %lld (%s): using %s\n",
			prog, t->name, (long long)t->ne[0], (long long)blck, tfm_type_name(type),
			tfm_type_name(nt));
	return nt;
}

/* Rows [r0, r1) of one tensor: to f32, to the output type, and for -v the
 * error against the f32 rows. */
struct rows_job {
	struct plan *p;
	uint8_t *dst;
	int64_t nrows;
	double *sse, *sx2; /* [n_tasks] */
	int *st;           /* [n_tasks] */
	int64_t *bad;      /* [n_tasks] first non-finite element, or -1 */
	float *badv;       /* [n_tasks] its value */
};

static void rows_task(void *ctx, int i, int n)
{
	struct rows_job *j = ctx;
	const struct tfm_gguf_tensor *t = j->p->t;
	int64_t ne0 = t->ne[0];
	int64_t r0 = j->nrows * i / n, r1 = j->nrows * (i + 1) / n;
	size_t ib = tfm_quant_row_bytes(t->type, ne0), ob = tfm_quant_row_bytes(j->p->type, ne0);
	float *x = tfm_malloc(ne0 * sizeof *x), *y = j->p->q->verbose ? tfm_malloc(ne0 * sizeof *y) : NULL;
	double sse = 0, sx2 = 0;
	int st = TFM_OK;
	if (!x || (j->p->q->verbose && !y)) {
		st = TFM_E_NOMEM;
		goto out;
	}
	for (int64_t r = r0; r < r1 && !st; r++) {
		const uint8_t *src = (const uint8_t *)t->data + r * ib;
		uint8_t *dst = j->dst + r * ob;
		if ((st = tfm_dequantize_row(t->type, src, x, ne0)))
			break;
		/* a non-finite weight would be cast to an integer (undefined) and
		 * poison its whole block: refused, or 0 with --allow-nonfinite */
		for (int64_t k = 0; k < ne0; k++)
			if (!isfinite(x[k])) {
				if (j->p->q->allow_nonfinite) {
					x[k] = 0;
				} else if (j->bad[i] < 0) {
					j->bad[i] = r * ne0 + k;
					j->badv[i] = x[k];
					st = TFM_E_FORMAT;
				}
			}
		if (st)
			break;
		if ((st = tfm_quantize_row_ref(j->p->type, x, dst, ne0)))
			break;
		if (y) {
			if ((st = tfm_dequantize_row(j->p->type, dst, y, ne0)))
				break;
			for (int64_t k = 0; k < ne0; k++) {
				sse += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
				sx2 += (double)x[k] * x[k];
			}
		}
	}
out:
	j->sse[i] = sse;
	j->sx2[i] = sx2;
	j->st[i] = st;
	free(x);
	free(y);
}

static int produce(void *ctx, const struct tfm_gguf_tensor *ot, void *buf)
{
	struct plan *p = ctx;
	struct quant *q = p->q;
	int64_t nrows = 1;
	for (int d = 1; d < TFM_GGUF_MAX_DIMS; d++)
		nrows *= p->t->ne[d];
	int nt = tfm_pool_size(q->pool) * 4;
	if (nt > nrows)
		nt = (int)nrows;
	if (nt < 1)
		nt = 1;
	double sse[nt], sx2[nt];
	int st[nt];
	int64_t bad[nt];
	float badv[nt];
	for (int i = 0; i < nt; i++)
		bad[i] = -1;
	struct rows_job j = {p, buf, nrows, sse, sx2, st, bad, badv};
	tfm_pool_run(q->pool, rows_task, &j, nt);
	p->sse = p->sx2 = 0;
	for (int i = 0; i < nt; i++) {
		if (bad[i] >= 0)
			return tfm_seterr(TFM_E_FORMAT, "%s: element %lld is %s: non-finite weights are "
					  "refused (--allow-nonfinite quantizes them as 0)", ot->name,
					  (long long)bad[i], isnan(badv[i]) ? "NaN" :
					  badv[i] > 0 ? "+Inf" : "-Inf");
		if (st[i]) /* the message was set on a worker thread */
			return tfm_seterr(st[i], "%s: converting to %s: %s", ot->name,
					  tfm_type_name(p->type), tfm_strstatus(st[i]));
		p->sse += sse[i];
		p->sx2 += sx2[i];
	}
	if (q->verbose) {
		int64_t nel = nrows * p->t->ne[0];
		fprintf(stderr, "%s: %-32s %-5s -> %-5s rmse %.6g (relative %.4f)\n", prog, p->t->name,
			tfm_type_name(p->t->type), tfm_type_name(p->type), sqrt(p->sse / nel),
			p->sx2 > 0 ? sqrt(p->sse / p->sx2) : 0.0);
	}
	return TFM_OK;
}

static int64_t nel_of(const struct tfm_gguf_tensor *t)
{
	return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

int main(int argc, char **argv)
{
	enum { OPT_TT = 256, OPT_KEEP, OPT_REQ, OPT_DRY, OPT_NONFINITE };
	static const struct option lopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"threads", required_argument, NULL, 't'},
		{"version", no_argument, NULL, 'V'},
		{"verbose", no_argument, NULL, 'v'},
		{"zstd", no_argument, NULL, 'z'},
		{"tensor-type", required_argument, NULL, OPT_TT},
		{"keep-embeddings", no_argument, NULL, OPT_KEEP},
		{"allow-requantize", no_argument, NULL, OPT_REQ},
		{"allow-nonfinite", no_argument, NULL, OPT_NONFINITE},
		{"dry-run", no_argument, NULL, OPT_DRY},
		{NULL, 0, NULL, 0},
	};
	const char *output = NULL;
	int quiet = 0, verbose = 0, zstd = 0, keep_embd = 0, allow_req = 0, dry = 0;
	int64_t threads = 0;
	struct override ovr[64];
	int n_ovr = 0, c, rc = 0, st = TFM_OK;
	struct tfm_blob blob = {0};
	int blob_open = 0;
	struct tfm_gguf *in = NULL, *out = NULL;
	struct tfm_pool *pool = NULL;
	struct plan *plan = NULL;
	struct tfm_out *o = NULL;
	struct quant q = {0};

	cmd_init("tfm-quant");
	while ((c = getopt_long(argc, argv, "ho:qt:Vvz", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			fputs(options_help, stdout);
			return cmd_close_stdout();
		case 'o':
			output = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 't':
			if ((rc = cmd_opt_i64("-t", optarg, 1, 1024, &threads)))
				goto done;
			break;
		case 'V':
			cmd_version();
			return cmd_close_stdout();
		case 'v':
			verbose = 1;
			break;
		case 'z':
			zstd = 1;
			break;
		case OPT_TT: {
			const char *eq = strrchr(optarg, '=');
			const struct target *tg = eq ? find_target(eq + 1) : NULL;
			if (!tg || tg != find_target(tfm_type_name(tg->type))) { /* a plain type */
				rc = cmd_usage_error(usage, "--tensor-type %s: want REGEX=TYPE with TYPE one of "
						     "f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_K q5_K q6_K", optarg);
				goto done;
			}
			if (n_ovr == (int)(sizeof ovr / sizeof ovr[0])) {
				rc = cmd_usage_error(usage, "--tensor-type: at most 64");
				goto done;
			}
			int err;
			PCRE2_SIZE off;
			ovr[n_ovr].re = pcre2_compile((PCRE2_SPTR)optarg, (PCRE2_SIZE)(eq - optarg), 0, &err, &off, NULL);
			if (!ovr[n_ovr].re) {
				PCRE2_UCHAR msg[256];
				pcre2_get_error_message(err, msg, sizeof msg);
				rc = cmd_usage_error(usage, "--tensor-type %s: %s at %zu", optarg, (char *)msg, (size_t)off);
				goto done;
			}
			ovr[n_ovr++].type = tg->type;
			break;
		}
		case OPT_KEEP:
			keep_embd = 1;
			break;
		case OPT_REQ:
			allow_req = 1;
			break;
		case OPT_NONFINITE:
			q.allow_nonfinite = 1;
			break;
		case OPT_DRY:
			dry = 1;
			break;
		default:
			fputs(usage, stderr);
			rc = 64;
			goto done;
		}
	}
	if (argc - optind < 1 || argc - optind > 2) {
		rc = cmd_usage_error(usage, argc - optind < 1 ? "missing TYPE" : "too many arguments");
		goto done;
	}
	const struct target *tg = find_target(argv[optind]);
	if (!tg) {
		rc = cmd_usage_error(usage, "%s: unknown TYPE (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 "
				     "q4_K q5_K q6_K q4_K_M q5_K_M)", argv[optind]);
		goto done;
	}
	const char *input = argc - optind == 2 ? argv[optind + 1] : "-";
	if (quiet)
		verbose = 0;
	if (!dry && tfm_out_isatty(output)) {
		rc = cmd_usage_error(NULL, "refusing to write a GGUF to a terminal (use -o or a pipe)");
		goto done;
	}

	if (!dry && (st = tfm_out_check_path(output))) /* before the work */
		goto fail;
	if ((st = tfm_blob_open(&blob, input)))
		goto fail;
	blob_open = 1;
	if ((st = tfm_gguf_parse(&in, blob.data, blob.size, blob.name)))
		goto fail;
	int64_t nt = tfm_gguf_n_tensors(in);
	if (!(plan = tfm_calloc(nt ? nt : 1, sizeof *plan)))
		goto nomem;

	/* Counters for the _M mixes, as llama.cpp keeps them. */
	int has_output = tfm_gguf_find_tensor(in, "output.weight") != NULL;
	int n_wv = 0, i_wv = 0, i_down = 0, n_down = 0;
	for (int64_t i = 0; i < nt; i++) {
		const char *nm = tfm_gguf_tensor(in, i)->name;
		if (strstr(nm, "attn_v.weight") || strstr(nm, "attn_qkv.weight") || strstr(nm, "attn_kv_b.weight"))
			n_wv++;
		if (strstr(nm, "ffn_down"))
			n_down++;
	}
	{
		char key[160];
		const char *arch = tfm_gguf_get_str_or(in, "general.architecture", NULL);
		if (arch) {
			snprintf(key, sizeof key, "%s.block_count", arch);
			n_down = (int)tfm_gguf_get_int_or(in, key, n_down);
		}
	}

	int64_t in_bytes = 0, out_bytes = 0;
	for (int64_t i = 0; i < nt; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(in, i);
		struct plan *p = &plan[i];
		p->t = t;
		p->q = &q;
		p->type = t->type;
		if (quantizable(t, keep_embd)) {
			int type = tg->type, manual = 0;
			for (int k = 0; k < n_ovr; k++) {
				pcre2_match_data *md = pcre2_match_data_create_from_pattern(ovr[k].re, NULL);
				int m = md ? pcre2_match(ovr[k].re, (PCRE2_SPTR)t->name, PCRE2_ZERO_TERMINATED,
							 0, 0, md, NULL) : -1;
				pcre2_match_data_free(md);
				if (m >= 0) {
					type = ovr[k].type;
					manual = 1;
					break;
				}
			}
			/* llama.cpp's mixture rules apply to quantized targets */
			if (!manual && !is_float(tg->type)) {
				int out_t = !strcmp(t->name, "output.weight") ||
					    (!has_output && !strcmp(t->name, "token_embd.weight"));
				int wv = strstr(t->name, "attn_v.weight") || strstr(t->name, "attn_qkv.weight") ||
					 strstr(t->name, "attn_kv_b.weight");
				if (out_t) {
					if (t->ne[0] % tfm_quant_blck(type))
						type = TFM_TYPE_Q8_0;
					else if (type != TFM_TYPE_Q8_0)
						type = TFM_TYPE_Q6_K;
				} else if (wv) {
					if (tg->mix == MIX_M && more_bits(i_wv, n_wv))
						type = TFM_TYPE_Q6_K;
					else if (tg->ftype == 14 && i_wv < 4) /* Q4_K_S */
						type = TFM_TYPE_Q5_K;
					i_wv++;
				} else if (strstr(t->name, "ffn_down")) {
					if (tg->mix == MIX_M && more_bits(i_down, n_down))
						type = TFM_TYPE_Q6_K;
					else if (tg->ftype == 14 && i_down < n_down / 8)
						type = TFM_TYPE_Q5_K;
					i_down++;
				}
			}
			if (!is_float(type))
				type = fallback(t, type, quiet);
			p->type = type;
		}
		if (p->type != t->type) {
			if (!is_float(t->type) && !allow_req) {
				st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s is already quantized (%s): "
						"requantizing needs --allow-requantize", blob.name, t->name,
						tfm_type_name(t->type));
				goto fail;
			}
			if (!tfm_quant_supported(t->type)) {
				st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s: cannot convert from type %s",
						blob.name, t->name, tfm_type_name(t->type));
				goto fail;
			}
		}
		in_bytes += t->nbytes;
		out_bytes += p->type == t->type ? (int64_t)t->nbytes
			     : (int64_t)tfm_quant_row_bytes(p->type, nel_of(t));
	}

	if (!threads)
		threads = tfm_ncpu();
	if ((st = tfm_pool_new(&pool, (int)threads)))
		goto fail;
	q.pool = pool;
	q.verbose = verbose;

	if (dry) {
		/* name, shape, input type, output type, output bytes; then the
		 * total of the tensor data */
		for (int64_t i = 0; i < nt; i++) {
			const struct tfm_gguf_tensor *t = plan[i].t;
			printf("%s\t", t->name);
			for (int d = 0; d < t->n_dims; d++)
				printf("%s%lld", d ? "x" : "", (long long)t->ne[d]);
			printf("\t%s\t%s\t%lld\n", tfm_type_name(t->type), tfm_type_name(plan[i].type),
			       (long long)(plan[i].type == t->type ? (int64_t)t->nbytes
					   : (int64_t)tfm_quant_row_bytes(plan[i].type, nel_of(t))));
		}
		printf("total\t-\t-\t%s\t%lld\n", tg->name, (long long)out_bytes);
		if (verbose) {
			/* the errors, without writing anything */
			for (int64_t i = 0; i < nt; i++) {
				if (plan[i].type == plan[i].t->type)
					continue;
				size_t nb = tfm_quant_row_bytes(plan[i].type, nel_of(plan[i].t));
				void *buf = tfm_malloc(nb ? nb : 1);
				if (!buf)
					goto nomem;
				st = produce(&plan[i], plan[i].t, buf);
				free(buf);
				if (st)
					goto fail;
			}
		}
		goto done;
	}

	/* The output: every key of the input, the file type, the tensors in
	 * the input's order (unchanged ones by reference into the input). */
	if ((st = tfm_gguf_new(&out)))
		goto fail;
	for (int64_t i = 0; i < tfm_gguf_n_kv(in); i++)
		if ((st = tfm_gguf_copy_kv(out, in, i)))
			goto fail;
	if ((st = tfm_gguf_set_u32(out, "general.file_type", (uint32_t)tg->ftype)) ||
	    (st = tfm_gguf_set_u32(out, "general.quantization_version", 2)))
		goto fail;
	for (int64_t i = 0; i < nt; i++) {
		const struct tfm_gguf_tensor *t = plan[i].t;
		int same = plan[i].type == t->type;
		if ((st = tfm_gguf_add_tensor(out, t->name, plan[i].type, t->n_dims, t->ne,
					      same ? t->data : NULL, same ? NULL : produce, &plan[i])))
			goto fail;
	}
	if ((st = tfm_out_open(&o, output, zstd)))
		goto fail;
	if ((st = tfm_gguf_write_progress(out, o, cmd_progress, cmd_progress_ctx(quiet))))
		goto fail;
	st = tfm_out_commit(o);
	o = NULL;
	if (st)
		goto fail;
	if (!quiet)
		fprintf(stderr, "%s: %s: %lld tensors, %.2f MiB -> %.2f MiB of tensor data (%s)\n", prog,
			output ? output : "<stdout>", (long long)nt, in_bytes / 1048576.0,
			out_bytes / 1048576.0, tg->name);
	goto done;

nomem:
	st = TFM_E_NOMEM;
fail:
	rc = cmd_fail(st);
done:
	if (o)
		tfm_out_abort(o);
	for (int k = 0; k < n_ovr; k++)
		pcre2_code_free(ovr[k].re);
	tfm_gguf_free(out);
	tfm_gguf_free(in);
	tfm_pool_free(pool);
	free(plan);
	if (blob_open)
		tfm_blob_close(&blob);
	if (!rc)
		rc = cmd_close_stdout();
	return rc;
}
