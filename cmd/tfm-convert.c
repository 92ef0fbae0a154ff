/* tfm-convert: import a checkpoint (Hugging Face directory or archive,
 * safetensors, PyTorch .bin, llama2.c, GGUF) and write a GGUF file.
 * Options and glue only: the work is tfm_convert_* and tfm_gguf_write. */
#include "common.h"

#include <getopt.h>
#include <string.h>

static const char usage[] =
	"usage: tfm-convert [-hqVvz] [--dtype TYPE] [--mem-limit SIZE] [-o OUTPUT]\n"
	"                   [--random SEED] [--set attn.n_head_kv=K] [--vocab FILE] [INPUT]\n";

static void help(void)
{
	fputs(usage, stdout);
	fputs("\n"
	      "  -o, --output FILE  write the GGUF to FILE (default: stdout, not a terminal)\n"
	      "      --dtype TYPE   f32, f16 or bf16 for 2-D weights (default: as the source)\n"
	      "      --mem-limit SIZE  refuse input that decompresses to more (8G, none)\n"
	      "      --random SEED  random weights for INPUT's config.json alone (a file, or\n"
	      "                     a directory with its tokenizer): a model to benchmark\n"
	      "      --set attn.n_head_kv=K  mean-pool each group of KV heads into one (GQA)\n"
	      "      --vocab FILE   llama2.c tokenizer.bin or RWKV rwkv_vocab_v20230424.txt\n"
	      "                     (llama2.c, rwkv.cpp files)\n"
	      "  -z, --zstd         compress the output with zstd\n"
	      "  -q, --quiet        print nothing but errors\n"
	      "  -v, --verbose      print what is converted\n"
	      "  -V, --version      print the version and exit\n"
	      "  -h, --help         print this help and exit\n"
	      "\nINPUT is a Hugging Face directory or .tar/.tar.gz/.tar.zst/.zip of one, a\n"
	      ".safetensors file, a PyTorch .bin, a llama2.c checkpoint or a GGUF file;\n"
	      "- or none reads a GGUF from stdin.\n", stdout);
}

int main(int argc, char **argv)
{
	cmd_init("tfm-convert");
	static const struct option longopts[] = {
		{ "dtype", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "mem-limit", required_argument, NULL, 'L' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "random", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "vocab", required_argument, NULL, 'B' },
		{ "set", required_argument, NULL, 'S' },
		{ "zstd", no_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	struct tfm_convert_opts o = { .vocab = NULL, .dtype = -1 };
	int zstd = 0, c, random = 0;
	int64_t seed = 0;
	while ((c = getopt_long(argc, argv, "ho:qVvz", longopts, NULL)) != -1) {
		switch (c) {
		case 'B': o.vocab = optarg; break;
		case 'D':
			o.dtype = tfm_type_from_name(optarg);
			if (o.dtype != TFM_TYPE_F32 && o.dtype != TFM_TYPE_F16 &&
			    o.dtype != TFM_TYPE_BF16)
				return cmd_usage_error(usage, "--dtype %s: want f32, f16 or bf16", optarg);
			break;
		case 'h': help(); return cmd_close_stdout();
		case 'L':
			if (tfm_mem_set_limit(optarg))
				return cmd_usage_error(usage, "%s", tfm_errmsg());
			break;
		case 'S': {
			/* the one knob a conversion changes: GQA pooling */
			const char *key = "attn.n_head_kv=";
			if (strncmp(optarg, key, strlen(key)))
				return cmd_usage_error(usage, "--set %s: tfm-convert takes only "
						       "attn.n_head_kv=K (pooling KV heads)", optarg);
			if (cmd_opt_i64("--set attn.n_head_kv", optarg + strlen(key), 1,
					INT64_C(1) << 20, &o.n_head_kv))
				return 64;
			break;
		}
		case 'o': output = optarg; break;
		case 'R':
			if (cmd_opt_i64("--random", optarg, 0, INT64_MAX, &seed))
				return 64;
			random = 1;
			o.config_only = 1;
			break;
		case 'q': tfm_log_set_level(TFM_LOG_ERROR); break;
		case 'V': cmd_version(); return cmd_close_stdout();
		case 'v': tfm_log_set_level(TFM_LOG_INFO); break;
		case 'z': zstd = 1; break;
		default: fputs(usage, stderr); return 64;
		}
	}
	if (argc - optind > 1)
		return cmd_usage_error(usage, "one input at a time");
	const char *input = optind < argc ? argv[optind] : "-";
	if (tfm_out_isatty(output))
		return cmd_usage_error(usage, "refusing to write binary to a terminal; "
				       "use -o FILE or a pipe");

	struct tfm_convert *cv = NULL;
	struct tfm_out *out = NULL;
	void **bufs = NULL;
	int64_t n_bufs = 0;
	int st = tfm_out_check_path(output); /* before the work, not after it */
	if (st)
		return cmd_fail(st);
	st = tfm_convert_open(&cv, input, &o);
	if (st)
		goto done;
	struct tfm_gguf *g = tfm_convert_gguf(cv);
	if (random && (st = tfm_random_gguf(g, o.dtype >= 0 ? o.dtype : TFM_TYPE_F32,
					    (uint64_t)seed, &bufs, &n_bufs)))
		goto done;
	tfm_log(TFM_LOG_INFO, "%s: %lld tensors, %lld keys", input,
		(long long)tfm_gguf_n_tensors(g), (long long)tfm_gguf_n_kv(g));
	if ((st = tfm_out_open(&out, output, zstd)))
		goto done;
	if ((st = tfm_gguf_write_progress(g, out, cmd_progress,
					  cmd_progress_ctx(tfm_log_get_level() < TFM_LOG_WARN))))
		goto done;
	st = tfm_out_commit(out);
	out = NULL;
done:
	tfm_out_abort(out);
	tfm_convert_close(cv);
	tfm_random_free(bufs, n_bufs);
	if (st)
		return cmd_fail(st);
	return cmd_close_stdout();
}
