/* tfm-tok: tokenize standard input with a model's tokenizer (GGUF, or a
 * llama2.c tokenizer.bin), decode token ids back to text, or render a chat
 * (a JSON request) through a chat template.  Options and glue only; the
 * tokenizers are in lib/text, the template interpreter in lib/chat. */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: tfm-tok [-hlV] [--bos] [--decode] [--ids | --pieces] [-m model]\n"
	"               [--source-lang CODE] [--special] [--target] [--target-lang CODE]\n"
	"               [--template file] [--vocab file]\n";

static const char options_help[] =
	"\n"
	"      --bos               frame each text as the model does (BOS; encoders: <s> ... </s>)\n"
	"      --decode            read token ids, write the decoded text\n"
	"  -h, --help              print this help and exit\n"
	"      --ids               write token ids (the default)\n"
	"  -l, --lines             one output line per input line\n"
	"  -m, --model model       the model: GGUF, or any checkpoint tfm-convert reads\n"
	"      --pieces            write the tokens' vocabulary pieces instead of ids\n"
	"      --source-lang CODE  mBART: the language code framing a text (with --bos)\n"
	"      --special           read control tokens written in the text as tokens\n"
	"      --target            encode as an encoder-decoder's target text (labels), framed\n"
	"      --target-lang CODE  mBART: the language code framing a target (with --target)\n"
	"      --template FILE     render the chat request on stdin with a Jinja chat template\n"
	"  -V, --version           print the version and exit\n"
	"      --vocab file        a llama2.c tokenizer.bin or rwkv_vocab_v20230424.txt\n";

enum { OPT_BOS = 256, OPT_DECODE, OPT_IDS, OPT_PIECES, OPT_SOURCE_LANG, OPT_SPECIAL, OPT_TARGET,
       OPT_TARGET_LANG, OPT_TEMPLATE, OPT_VOCAB };

static const struct option longopts[] = {
	{ "bos", no_argument, NULL, OPT_BOS },
	{ "decode", no_argument, NULL, OPT_DECODE },
	{ "help", no_argument, NULL, 'h' },
	{ "ids", no_argument, NULL, OPT_IDS },
	{ "lines", no_argument, NULL, 'l' },
	{ "model", required_argument, NULL, 'm' },
	{ "pieces", no_argument, NULL, OPT_PIECES },
	{ "source-lang", required_argument, NULL, OPT_SOURCE_LANG },
	{ "special", no_argument, NULL, OPT_SPECIAL },
	{ "target", no_argument, NULL, OPT_TARGET },
	{ "target-lang", required_argument, NULL, OPT_TARGET_LANG },
	{ "template", required_argument, NULL, OPT_TEMPLATE },
	{ "version", no_argument, NULL, 'V' },
	{ "vocab", required_argument, NULL, OPT_VOCAB },
	{ NULL, 0, NULL, 0 },
};

struct opts {
	const char *model, *vocab, *tmpl, *src_lang, *tgt_lang;
	int bos, decode, pieces, lines, special, target;
};

/* A write that failed: EPIPE ends quietly, anything else is an I/O error. */
static int out_status(void)
{
	if (!ferror(stdout))
		return TFM_OK;
	if (errno == EPIPE)
		return TFM_E_PIPE;
	return tfm_seterr(TFM_E_IO, "write error: %s", strerror(errno));
}

/* The tokenizer of -m MODEL (a GGUF, or any checkpoint tfm-convert reads,
 * converted in memory: only its metadata is built, no tensor is read), or
 * of a llama2.c tokenizer.bin or an RWKV world vocabulary given alone with
 * --vocab. */
static int load(const struct opts *o, struct tfm_tokenizer **tok)
{
	struct tfm_blob b = { 0 };
	struct tfm_gguf *g = NULL;
	struct tfm_convert *cv = NULL;
	int st;
	if (!o->model) {
		if ((st = tfm_blob_open(&b, o->vocab)))
			return st;
		if ((st = tfm_rwkv_world_probe(b.data, b.size)
			  ? tfm_tokenizer_from_rwkv_world(tok, b.data, b.size)
			  : tfm_tokenizer_from_llama2c(tok, b.data, b.size, 0)))
			tfm_adderr(st, "%s", b.name);
		tfm_blob_close(&b);
		return st;
	}
	/* a GGUF directly; anything else through the converter, which reads it
	 * once (the first bytes tell them apart; stdin can only be a GGUF) */
	int is_gguf = tfm_path_is_dir(o->model) ? 0 : tfm_gguf_probe(o->model);
	if (is_gguf < 0)
		return is_gguf;
	if (is_gguf) {
		if ((st = tfm_blob_open(&b, o->model)))
			return st;
		if (!(st = tfm_gguf_parse(&g, b.data, b.size, b.name)))
			st = tfm_tokenizer_from_gguf(tok, g);
		if (st)
			tfm_adderr(st, "%s", b.name);
		tfm_gguf_free(g);
		tfm_blob_close(&b);
		return st;
	}
	struct tfm_convert_opts co = { .vocab = o->vocab, .dtype = -1 };
	/* the converter's messages name the input already */
	if (!(st = tfm_convert_open(&cv, o->model, &co)) &&
	    (st = tfm_tokenizer_from_gguf(tok, tfm_convert_gguf(cv))))
		tfm_adderr(st, "%s", o->model);
	tfm_convert_close(cv);
	return st;
}

/* The chat request on stdin (JSON: messages, add_generation_prompt,
 * bos_token, eos_token, tools...) through the template of --template, as
 * transformers' apply_chat_template renders it.  TFM_JINJA_NOW pins the
 * clock of strftime_now. */
static int render_chat(const struct opts *o, const struct tfm_blob *in, char **text, size_t *len)
{
	struct tfm_blob tb = { 0 };
	struct tfm_jinja *t = NULL;
	json_t *req = NULL;
	json_error_t je;
	int st;
	if ((st = tfm_blob_open(&tb, o->tmpl)))
		return st;
	if ((st = tfm_jinja_parse(&t, (const char *)tb.data, tb.size))) {
		tfm_adderr(st, "%s", tb.name);
		goto done;
	}
	if (!(req = json_loadb((const char *)in->data, in->size, 0, &je))) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", in->name, je.line, je.text);
		goto done;
	}
	struct tfm_jinja_opts jo = { .now = getenv("TFM_JINJA_NOW") };
	if (jo.now && !*jo.now)
		jo.now = NULL;
	st = tfm_jinja_render_chat(t, req, &jo, text, len);
	if (st == TFM_E_INVAL) /* the only bad argument: the clock */
		tfm_adderr(st, "TFM_JINJA_NOW");
done:
	json_decref(req);
	tfm_jinja_free(t);
	tfm_blob_close(&tb);
	return st;
}

static int encode(const struct tfm_tokenizer *tok, const struct opts *o, const char *s, size_t n)
{
	int32_t *ids;
	size_t m;
	/* --bos frames a text as the tokenizer's post-processor does, an
	 * encoder's closing token included (RoBERTa's <s> A </s>) */
	int st = o->target ? tfm_tokenize_target(tok, s, n, &ids, &m)
		 : o->bos ? tfm_tokenize_seq(tok, s, n, o->special, &ids, &m) : TFM_E_UNSUPPORTED;
	if (st == TFM_E_UNSUPPORTED && !o->target)
		st = tfm_tokenize_special(tok, s, n, o->bos, o->special, &ids, &m);
	if (st)
		return st;
	for (size_t i = 0; i < m; i++) {
		if (i)
			putchar(' ');
		if (o->pieces) {
			size_t pl;
			const char *p = tfm_token_piece(tok, ids[i], &pl);
			fwrite(p, 1, pl, stdout);
		} else {
			printf("%d", ids[i]);
		}
	}
	putchar('\n');
	free(ids);
	return out_status();
}

/* Ids as a model generates them: Marian's target vocabulary where it has
 * one of its own (MarianTokenizer's decode). */
static int decode(const struct tfm_tokenizer *src, const struct opts *o, const char *s, size_t n)
{
	const struct tfm_tokenizer *tok = tfm_tokenizer_target(src);
	int32_t *ids = NULL;
	size_t m = 0, cap = 0;
	char *text = NULL;
	size_t len;
	int st = TFM_OK;
	for (size_t i = 0; i < n;) {
		while (i < n && strchr(" \t\r\n\v\f", s[i]))
			i++;
		if (i == n)
			break;
		size_t j = i;
		while (j < n && !strchr(" \t\r\n\v\f", s[j]))
			j++;
		char w[32];
		int64_t v;
		if (j - i >= sizeof w || (memcpy(w, s + i, j - i), w[j - i] = 0,
		    tfm_parse_i64(w, 0, tfm_tokenizer_n_vocab(tok) - 1, &v))) {
			st = tfm_seterr(TFM_E_FORMAT, "'%.*s' is not a token id in [0, %lld)",
					(int)(j - i > 40 ? 40 : j - i), s + i,
					(long long)tfm_tokenizer_n_vocab(tok));
			goto done;
		}
		if (m == cap) {
			cap = cap ? cap * 2 : 256;
			int32_t *nv = tfm_realloc(ids, cap * sizeof *nv);
			if (!nv) {
				st = TFM_E_NOMEM;
				goto done;
			}
			ids = nv;
		}
		ids[m++] = (int32_t)v;
		i = j;
	}
	if ((st = tfm_detokenize(tok, ids, m, &text, &len)))
		goto done;
	fwrite(text, 1, len, stdout);
	if (o->lines)
		putchar('\n');
	st = out_status();
done:
	free(ids);
	free(text);
	return st;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	int c;
	cmd_init("tfm-tok");
	while ((c = getopt_long(argc, argv, "hlm:V", longopts, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); fputs(options_help, stdout); return cmd_close_stdout();
		case 'l': o.lines = 1; break;
		case 'm': o.model = optarg; break;
		case 'V': cmd_version(); return cmd_close_stdout();
		case OPT_BOS: o.bos = 1; break;
		case OPT_DECODE: o.decode = 1; break;
		case OPT_IDS: o.pieces = 0; break;
		case OPT_PIECES: o.pieces = 1; break;
		case OPT_SOURCE_LANG: o.src_lang = optarg; break;
		case OPT_SPECIAL: o.special = 1; break;
		case OPT_TARGET: o.target = 1; break;
		case OPT_TARGET_LANG: o.tgt_lang = optarg; break;
		case OPT_TEMPLATE: o.tmpl = optarg; break;
		case OPT_VOCAB: o.vocab = optarg; break;
		default: fputs(usage, stderr); return 64;
		}
	}
	if (optind < argc)
		return cmd_usage_error(usage, "unexpected argument '%s' (text is read from standard input)",
				       argv[optind]);
	if (!o.model && !o.vocab && !o.tmpl)
		return cmd_usage_error(usage, "no tokenizer: give -m model or --vocab file");
	if (o.decode && (o.pieces || o.bos || o.special))
		return cmd_usage_error(usage, "--decode reads ids: --pieces, --bos and --special do not apply");
	if (o.target && (o.decode || o.tmpl || o.bos || o.special))
		return cmd_usage_error(usage, "--target encodes a framed text: --decode, --template, "
				       "--bos and --special do not apply");
	if ((o.src_lang || o.tgt_lang) && !o.model)
		return cmd_usage_error(usage, "--source-lang and --target-lang need a model (-m)");
	if (o.tmpl && (o.decode || o.lines))
		return cmd_usage_error(usage, "--template reads one chat request: --decode and -l do not apply");
	if (o.tmpl && !o.model && !o.vocab && (o.pieces || o.bos || o.special))
		return cmd_usage_error(usage, "--pieces, --bos and --special need a tokenizer (-m or --vocab)");

	struct tfm_tokenizer *tok = NULL;
	struct tfm_blob in = { 0 };
	char *chat = NULL;
	size_t chat_len = 0;
	int st = o.model || o.vocab ? load(&o, &tok) : TFM_OK;
	if (!st && (o.src_lang || o.tgt_lang))
		st = tfm_tokenizer_set_lang(tok, o.src_lang, o.tgt_lang);
	if (!st)
		st = tfm_blob_open(&in, "-");
	if (!st && o.tmpl)
		st = render_chat(&o, &in, &chat, &chat_len);
	if (st)
		goto done;
	if (o.tmpl && !tok) {
		/* the rendering itself, byte for byte */
		fwrite(chat, 1, chat_len, stdout);
		st = out_status();
		goto done;
	}
	if (o.tmpl) {
		st = encode(tok, &o, chat, chat_len);
		goto done;
	}
	int (*fn)(const struct tfm_tokenizer *, const struct opts *, const char *, size_t) =
		o.decode ? decode : encode;
	const char *s = (const char *)in.data;
	if (!o.lines) {
		st = fn(tok, &o, s, in.size);
	} else {
		for (size_t i = 0; i < in.size && !st;) {
			const char *nl = memchr(s + i, '\n', in.size - i);
			size_t n = nl ? (size_t)(nl - (s + i)) : in.size - i;
			st = fn(tok, &o, s + i, n);
			i += n + 1;
		}
	}
done:
	if (in.name)
		tfm_blob_close(&in);
	free(chat);
	tfm_tokenizer_free(tok);
	if (st)
		return cmd_fail(st);
	return cmd_close_stdout();
}
