/* tfm-run: generate text with a decoder model, or embed, classify, fill
 * masks and tag entities with an encoder-only model (run-encode.c).  Options and glue only: the model,
 * tokenizer and sampler live in libtfm.  -n is the number of new tokens, as
 * llama.cpp's; see man/tfm-run.1. */
#include "common.h"
#include "text/sampler.h"
#include "model/beam.h"
#include "run-chat.h"
#include "run-encode.h"

#include <editline/readline.h>
#include <signal.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: tfm-run -m MODEL [-hqVv] [-c CTX] [-F text | jsonl] [-f FILE] [-k K[,V]]\n"
	"               [-n N] [-p PROMPT] [-t N] [--beams K] [--early-stopping MODE]\n"
	"               [--ignore-eos] [--length-penalty LP] [--logprobs K]\n"
	"               [--mem-limit SIZE] [--min-p P] [--no-display-prompt]\n"
	"               [--no-repeat-ngram N]\n"
	"               [--repeat-last-n N] [--repeat-penalty R] [--seed S] [--set KEY=VALUE]\n"
	"               [--source-lang CODE] [--special] [--stop STR] [--target-lang CODE]\n"
	"               [--temp T] [--top-k K] [--top-p P] [--vocab FILE]\n"
	"       tfm-run --chat -m MODEL [-F text | jsonl] [--chat-template FILE]\n"
	"               [--system TEXT] [options as above]\n"
	"       tfm-run --embed -m MODEL [-F tsv | jsonl | f32] [-c CTX] [-f FILE]\n"
	"               [-p TEXT] [-t N] [--no-normalize | --normalize] [--no-truncate]\n"
	"               [--pooling MODE] [--set KEY=VALUE]\n"
	"       tfm-run --classify -m MODEL [-F tsv | jsonl | f32] [-c CTX] [-f FILE]\n"
	"               [-p TEXT] [-t N] [--no-truncate] [--set KEY=VALUE] [--top K]\n"
	"       tfm-run --fill -m MODEL [-F tsv | jsonl | f32] [-c CTX] [-f FILE]\n"
	"               [-p TEXT] [-t N] [--no-truncate] [--set KEY=VALUE] [--top K]\n"
	"       tfm-run --tag -m MODEL [-F tsv | jsonl | f32] [-c CTX] [-f FILE]\n"
	"               [-p TEXT] [-t N] [--no-truncate] [--set KEY=VALUE]\n";

static const char options_help[] =
	"\n"
	"  -c, --ctx CTX           context size in tokens (default: training context, at most 4096)\n"
	"  -F, --format FMT        text (default) or jsonl (one record per generated token)\n"
	"  -f, --file FILE         read the prompt from FILE\n"
	"  -h, --help              print this help and exit\n"
	"  -k, --kv-type K[,V]     KV cache types: f32 (default), f16, bf16, q8_0, q5_1, q5_0,\n"
	"                          q4_1, q4_0\n"
	"  -m, --model MODEL       the model: GGUF, Hugging Face directory or archive, llama2.c\n"
	"  -n, --count N           new tokens to generate (default 256; encoder-decoder: the\n"
	"                          model's max_new_tokens, max_length - 1, else 19)\n"
	"  -p, --prompt PROMPT     the prompt (default: each line of stdin is one)\n"
	"  -q, --quiet             print errors only\n"
	"  -t, --threads N         threads (default: online cores)\n"
	"  -V, --version           print the version and exit\n"
	"  -v, --verbose           print progress and tokens per second on stderr\n"
	"      --beams K           beam search with K beams (default: the model's num_beams, 1)\n"
	"      --chat              talk with a chat model through its chat template\n"
	"      --chat-template FILE  the Jinja chat template (default: the model's)\n"
	"      --classify          each line (or text<TAB>text pair) through a sequence classifier\n"
	"      --embed             a sentence embedding of each line (encoder-only models)\n"
	"      --early-stopping MODE  beam search: false (default), true or never\n"
	"      --fill              the best tokens for each mask token of each line (masked LM)\n"
	"      --ignore-eos        do not stop at end-of-sequence tokens\n"
	"      --length-penalty LP beam search: scores divided by length^LP (default: the model's, 1)\n"
	"      --logprobs K        with -F jsonl, the K most likely tokens of each step\n"
	"      --mem-limit SIZE    refuse work needing more memory (8G, none; TFM_MEM_LIMIT)\n"
	"      --min-p P           keep tokens at least P times as likely as the best (0.05)\n"
	"      --no-display-prompt do not print the prompt\n"
	"      --no-normalize      --embed: do not L2-normalise (default: as the model says)\n"
	"      --no-repeat-ngram N never repeat an N-gram (default: the model's, 0: off)\n"
	"      --no-truncate       refuse lines longer than the model's maximum instead of cutting\n"
	"      --normalize         --embed: L2-normalise each embedding\n"
	"      --pooling MODE      --embed: cls, mean, max, mean_sqrt_len or last (default: the model's)\n"
	"      --repeat-last-n N   tokens the repetition penalty looks at (64)\n"
	"      --repeat-penalty R  repetition penalty (1: none; default 1.0)\n"
	"      --seed S            seed of the sampler (default: from the clock)\n"
	"      --set KEY=VALUE     change a knob of the model's variant spec\n"
	"      --source-lang CODE  mBART: the language of the source lines (en_XX)\n"
	"      --special           read control tokens written in the prompt as tokens\n"
	"      --stop STR          stop where the output contains STR (repeatable)\n"
	"      --system TEXT       with --chat: the system message\n"
	"      --tag               the entities a token classifier finds in each line (NER)\n"
	"      --target-lang CODE  mBART: the language to generate (ro_RO)\n"
	"      --temp T            temperature (default 0.8; 0: greedy)\n"
	"      --top K             --classify: the K best labels (default: all); --fill: tokens (5)\n"
	"      --top-k K           keep the K most likely tokens (40; 0: all)\n"
	"      --top-p P           keep the most likely tokens up to mass P (0.95)\n"
	"      --vocab FILE        llama2.c tokenizer.bin of a llama2.c checkpoint\n";

enum { O_TEMP = 256, O_TOPK, O_TOPP, O_MINP, O_PEN, O_PENN, O_SEED, O_LOGPROBS, O_VOCAB, O_SET,
       O_MEMLIM, O_SPECIAL, O_STOP, O_NOECHO, O_IGNEOS, O_CHAT, O_SYSTEM, O_CHATTPL,
       O_EMBED, O_CLASSIFY, O_FILL, O_TAG, O_POOLING, O_NORM, O_NONORM, O_NOTRUNC, O_TOP,
       O_BEAMS, O_EARLY, O_LENPEN, O_NOREPEAT, O_SRCLANG, O_TGTLANG };

static const struct option longopts[] = {
	{ "ctx", required_argument, NULL, 'c' },
	{ "format", required_argument, NULL, 'F' },
	{ "file", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ "model", required_argument, NULL, 'm' },
	{ "count", required_argument, NULL, 'n' },
	{ "prompt", required_argument, NULL, 'p' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "threads", required_argument, NULL, 't' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "beams", required_argument, NULL, O_BEAMS },
	{ "early-stopping", required_argument, NULL, O_EARLY },
	{ "length-penalty", required_argument, NULL, O_LENPEN },
	{ "no-repeat-ngram", required_argument, NULL, O_NOREPEAT },
	{ "source-lang", required_argument, NULL, O_SRCLANG },
	{ "target-lang", required_argument, NULL, O_TGTLANG },
	{ "chat", no_argument, NULL, O_CHAT },
	{ "chat-template", required_argument, NULL, O_CHATTPL },
	{ "classify", no_argument, NULL, O_CLASSIFY },
	{ "embed", no_argument, NULL, O_EMBED },
	{ "fill", no_argument, NULL, O_FILL },
	{ "tag", no_argument, NULL, O_TAG },
	{ "no-normalize", no_argument, NULL, O_NONORM },
	{ "no-truncate", no_argument, NULL, O_NOTRUNC },
	{ "normalize", no_argument, NULL, O_NORM },
	{ "pooling", required_argument, NULL, O_POOLING },
	{ "top", required_argument, NULL, O_TOP },
	{ "ignore-eos", no_argument, NULL, O_IGNEOS },
	{ "logprobs", required_argument, NULL, O_LOGPROBS },
	{ "no-display-prompt", no_argument, NULL, O_NOECHO },
	{ "special", no_argument, NULL, O_SPECIAL },
	{ "stop", required_argument, NULL, O_STOP },
	{ "system", required_argument, NULL, O_SYSTEM },
	{ "mem-limit", required_argument, NULL, O_MEMLIM },
	{ "min-p", required_argument, NULL, O_MINP },
	{ "repeat-last-n", required_argument, NULL, O_PENN },
	{ "repeat-penalty", required_argument, NULL, O_PEN },
	{ "seed", required_argument, NULL, O_SEED },
	{ "set", required_argument, NULL, O_SET },
	{ "temp", required_argument, NULL, O_TEMP },
	{ "top-k", required_argument, NULL, O_TOPK },
	{ "top-p", required_argument, NULL, O_TOPP },
	{ "vocab", required_argument, NULL, O_VOCAB },
	{ "kv-type", required_argument, NULL, 'k' },
	{ NULL, 0, NULL, 0 },
};

struct run {
	struct tfm_model *m;
	const struct tfm_tokenizer *tok;
	struct tfm_ctx *c;
	struct tfm_sampler *smp;
	int64_t n_vocab, n_ctx, count;
	int jsonl, logprobs;
	float *logits;        /* [n_vocab] */
	int32_t *top;         /* [logprobs] scratch */
	int pipe_closed;      /* the reader went away: stop quietly */
	int special;          /* --special: control tokens written in the prompt are parsed */
	int echo;             /* print the prompt (not --no-display-prompt) */
	int ignore_eos;       /* --ignore-eos */
	const char **stop;    /* --stop strings */
	int n_stop;
	char *hold;           /* generated text not yet printed: may begin a stop string */
	size_t hold_n, hold_cap;
	int verbose;          /* -v */
	int64_t n_gen;        /* generated tokens, for -v */
	int64_t n_prompt;     /* prompt tokens evaluated, for -v */
	double t_prompt, t_gen; /* seconds in prefill and in generation */
	/* transformers' rules of token choice (model/beam.h) and beam search */
	struct tfm_beam_opts beam;   /* n_beams 1: greedy or sampling */
	int rules_on;                /* a rule applies to the sampled path */
	struct tfm_ctx **bc;         /* n_beams contexts, bc[0] = c */
	int32_t *seq, *out;          /* [n_ctx + count + 2] the decoder's input so far (prompt
				      and new tokens); [count + 1] beam output */
	int32_t dec_start;           /* encoder-decoder: the decoder's first token */
	int64_t seq_cap;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Write to stdout and flush (tokens stream as they come); a closed pipe ends
 * the run quietly, any other error is an I/O failure. */
static int out(struct run *r, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, stdout) != n)
		goto fail;
	if (fflush(stdout) == EOF)
		goto fail;
	return TFM_OK;
fail:
	if (errno == EPIPE) {
		r->pipe_closed = 1;
		return TFM_E_PIPE;
	}
	return tfm_seterr(TFM_E_IO, "stdout: %s", strerror(errno));
}

/* A JSON string of arbitrary bytes: invalid UTF-8 (a byte-fallback token
 * holding part of a character) becomes U+FFFD. */
static void put(char **b, size_t *n, size_t *cap, const char *s, size_t len)
{
	if (*n + len + 1 > *cap) {
		size_t c = (*cap ? *cap * 2 : 256) + len;
		char *nb = realloc(*b, c);
		if (!nb)
			abort(); /* a few hundred bytes; out of memory here is fatal */
		*b = nb;
		*cap = c;
	}
	memcpy(*b + *n, s, len);
	*n += len;
	(*b)[*n] = 0;
}

static int utf8_len(const unsigned char *s, size_t len)
{
	int k = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
		: (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (k == 0 || (size_t)k > len || (k == 2 && s[0] < 0xc2))
		return 0;
	for (int i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return k;
}

static void json_str(char **b, size_t *n, size_t *cap, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	put(b, n, cap, "\"", 1);
	for (size_t i = 0; i < len;) {
		char esc[8];
		int k = utf8_len(u + i, len - i);
		if (k == 0) {
			put(b, n, cap, "\\ufffd", 6);
			i++;
		} else if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)u[i];
			put(b, n, cap, esc, 2);
			i++;
		} else if (u[i] < 0x20) {
			const char *e = u[i] == '\n' ? "\\n" : u[i] == '\t' ? "\\t" : u[i] == '\r' ? "\\r" : NULL;
			if (e)
				put(b, n, cap, e, 2);
			else {
				snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
				put(b, n, cap, esc, 6);
			}
			i++;
		} else {
			put(b, n, cap, s + i, (size_t)k);
			i += (size_t)k;
		}
	}
	put(b, n, cap, "\"", 1);
}

/* The k most likely ids of logits, best first (ties: lower id). */
static int top_k(const float *l, int64_t n, int32_t *ids, int k)
{
	int got = 0;
	for (int64_t i = 0; i < n; i++) {
		int j;
		if (got < k)
			j = got++;
		else if (l[i] > l[ids[k - 1]])
			j = k - 1;
		else
			continue;
		while (j > 0 && l[i] > l[ids[j - 1]]) { /* strict: lower id stays ahead */
			ids[j] = ids[j - 1];
			j--;
		}
		ids[j] = (int32_t)i;
	}
	return got;
}

/* --stop: the generated text so far is kept from the first byte that
 * might begin a stop string; text mode prints what cannot, and on a match
 * prints what comes before the stop string and ends the generation (the
 * stop string itself is not printed, as in llama.cpp's server and the
 * OpenAI API).  In jsonl every token is written as it comes, and the one
 * that completes a stop string is the last.  Returns 1 on a match. */
static int hold_add(struct run *r, const char *p, size_t n, int *stopped)
{
	*stopped = 0;
	if (r->n_stop == 0)
		return r->jsonl ? TFM_OK : out(r, p, n);
	if (r->hold_n + n + 1 > r->hold_cap) {
		size_t c = (r->hold_n + n + 1) * 2;
		char *nb = realloc(r->hold, c);
		if (!nb)
			return tfm_seterr(TFM_E_NOMEM, "out of memory");
		r->hold = nb;
		r->hold_cap = c;
	}
	memcpy(r->hold + r->hold_n, p, n);
	r->hold_n += n;
	r->hold[r->hold_n] = 0;
	size_t match = r->hold_n, cut = r->hold_n;
	for (int i = 0; i < r->n_stop; i++) { /* the earliest whole stop string */
		const char *m = memmem(r->hold, r->hold_n, r->stop[i], strlen(r->stop[i]));
		if (m && (size_t)(m - r->hold) < match)
			match = (size_t)(m - r->hold);
	}
	*stopped = match < r->hold_n;
	if (*stopped)
		cut = match;
	else /* keep the longest tail that is the head of a stop string */
		for (int i = 0; i < r->n_stop; i++) {
			size_t sl = strlen(r->stop[i]);
			for (size_t k = sl - 1 < r->hold_n ? sl - 1 : r->hold_n; k > 0; k--)
				if (!memcmp(r->hold + r->hold_n - k, r->stop[i], k)) {
					if (r->hold_n - k < cut)
						cut = r->hold_n - k;
					break;
				}
		}
	int st = TFM_OK;
	if (r->jsonl) { /* the records are out already; keep the text for matching */
		if (*stopped)
			r->hold_n = 0;
		return TFM_OK;
	}
	if (cut && (st = out(r, r->hold, cut)))
		return st;
	if (*stopped) {
		r->hold_n = 0;
		return TFM_OK;
	}
	memmove(r->hold, r->hold + cut, r->hold_n - cut);
	r->hold_n -= cut;
	return TFM_OK;
}

/* End of a generation without a match: print what was held back. */
static int hold_flush(struct run *r)
{
	int st = !r->jsonl && r->hold_n ? out(r, r->hold, r->hold_n) : TFM_OK;
	r->hold_n = 0;
	return st;
}

/* One generated token: its text, or in jsonl a record with log-probabilities
 * of the model's own distribution (before penalties and filters). */
static int emit(struct run *r, int32_t prev, int32_t id, int *stopped)
{
	char piece[512];
	/* generated ids: an encoder-decoder's target vocabulary (Marian's own) */
	const struct tfm_tokenizer *tok = tfm_tokenizer_target(r->tok);
	int len = tfm_token_decode(tok, prev, id, piece, sizeof(piece));
	*stopped = 0;
	if (len < 0)
		return len;
	if (!r->jsonl)
		return hold_add(r, piece, (size_t)len, stopped);
	char *b = NULL;
	size_t n = 0, cap = 0;
	char num[64];
	snprintf(num, sizeof(num), "{\"id\":%d,\"text\":", id);
	put(&b, &n, &cap, num, strlen(num));
	json_str(&b, &n, &cap, piece, (size_t)len);
	snprintf(num, sizeof(num), ",\"logprob\":%.6g", tfm_logprob(r->logits, r->n_vocab, id));
	put(&b, &n, &cap, num, strlen(num));
	if (r->logprobs > 0) {
		int k = top_k(r->logits, r->n_vocab, r->top, r->logprobs);
		put(&b, &n, &cap, ",\"top\":[", 8);
		for (int i = 0; i < k; i++) {
			int32_t t = r->top[i];
			snprintf(num, sizeof(num), "%s{\"id\":%d,\"text\":", i ? "," : "", t);
			put(&b, &n, &cap, num, strlen(num));
			len = tfm_token_decode(tok, prev, t, piece, sizeof(piece));
			json_str(&b, &n, &cap, piece, len > 0 ? (size_t)len : 0);
			snprintf(num, sizeof(num), ",\"logprob\":%.6g}", tfm_logprob(r->logits, r->n_vocab, t));
			put(&b, &n, &cap, num, strlen(num));
		}
		put(&b, &n, &cap, "]", 1);
	}
	put(&b, &n, &cap, "}\n", 2);
	int st = out(r, b, n);
	free(b);
	if (!st && r->n_stop) {
		len = tfm_token_decode(tok, prev, id, piece, sizeof(piece));
		st = hold_add(r, piece, len > 0 ? (size_t)len : 0, stopped);
	}
	return st;
}

/* The executor refuses tokens past the context (TFM_E_INVAL) unless every
 * layer has a sliding window and the cache is a ring: here that is the input
 * being too long for -c, bad input data (65), not a usage error. */
static int context_error(int st)
{
	return st == TFM_E_INVAL ? tfm_adderr(TFM_E_FORMAT, "-c") : st;
}

/* An encoder-decoder's target ids[n] as one text, decoded whole as
 * transformers' decode(skip_special_tokens=True) (the tokenizer's end
 * rules: Marian strips, cleans up spaces), cut before the first --stop
 * string; *text malloc'd.  The target vocabulary's pieces (Marian's own
 * where it has one). */
static int target_text(const struct run *r, const int32_t *ids, int64_t n, char **text, size_t *len)
{
	int st = tfm_detokenize(tfm_tokenizer_target(r->tok), ids, (size_t)n, text, len);
	if (st)
		return st;
	for (int i = 0; i < r->n_stop; i++) {
		char *p = strstr(*text, r->stop[i]);
		if (p && (size_t)(p - *text) < *len)
			*len = (size_t)(p - *text), (*text)[*len] = 0;
	}
	return TFM_OK;
}

/* Beam search from r->c, which has read r->seq[n] (its logits in
 * r->logits): the best hypothesis printed as one line of text (without its
 * end-of-sequence token), or with -F jsonl one record {"ids", "text",
 * "score"}. */
static int beam_line(struct run *r, int64_t n)
{
	int64_t n_out = 0;
	double score = 0;
	r->beam.rules.max_len = n + r->count;
	int st = tfm_beam_search(r->bc, r->seq, n, r->logits, &r->beam, r->out, &n_out, &score);
	if (st)
		return context_error(st);
	r->n_gen += n_out;
	if (n_out > 0 && !r->ignore_eos && tfm_tokenizer_is_eos(r->tok, r->out[n_out - 1]))
		n_out--;
	char *b = NULL;
	size_t bn = 0, cap = 0;
	char num[64];
	if (r->jsonl) {
		put(&b, &bn, &cap, "{\"ids\":[", 8);
		for (int64_t i = 0; i < n_out; i++) {
			snprintf(num, sizeof num, "%s%d", i ? "," : "", r->out[i]);
			put(&b, &bn, &cap, num, strlen(num));
		}
		put(&b, &bn, &cap, "],\"text\":", 9);
	}
	char *text = NULL;
	size_t tn = 0;
	if ((st = target_text(r, r->out, n_out, &text, &tn))) {
		free(b);
		return st;
	}
	if (r->jsonl) {
		json_str(&b, &bn, &cap, text ? text : "", tn);
		snprintf(num, sizeof num, ",\"score\":%.9g}\n", score);
		put(&b, &bn, &cap, num, strlen(num));
		st = out(r, b, bn);
	} else {
		if (!(st = out(r, text ? text : "", tn)))
			st = out(r, "\n", 1);
	}
	free(b), free(text);
	return st;
}

/* Generate for one prompt from a fresh context: up to count new tokens (as
 * llama.cpp's -n), the last of them printed without being evaluated. */
static int generate(struct run *r, const char *text, size_t len)
{
	int32_t *ids = NULL;
	size_t n_ids = 0;
	double t1 = -1; /* end of the prefill */
	/* seq2seq: the source as the tokenizer's post-processor frames one
	 * text (T5: text </s>; BART: <s> text </s>), as transformers'
	 * tokenizer(text) */
	int seq2seq = tfm_model_spec(r->m)->family == TFM_FAMILY_ENCDEC;
	int st = seq2seq ? tfm_tokenize_seq(r->tok, text, len, r->special, &ids, &n_ids)
			 : TFM_E_UNSUPPORTED;
	if (st == TFM_E_UNSUPPORTED)
		st = tfm_tokenize_special(r->tok, text, len, tfm_tokenizer_add_bos(r->tok),
					  r->special, &ids, &n_ids);
	if (st)
		return st;
	if (n_ids == 0) {
		st = tfm_seterr(TFM_E_FORMAT, "empty prompt and the model adds no BOS token");
		goto done;
	}
	int32_t bos = tfm_tokenizer_bos(r->tok);
	const struct tfm_spec *spec = tfm_model_spec(r->m);
	int encdec = spec->family == TFM_FAMILY_ENCDEC;
	tfm_ctx_reset(r->c);
	tfm_sampler_reset(r->smp);
	double t0 = now();
	if (encdec) {
		/* seq2seq: the line is the source; the decoder starts from its
		 * start token, and the output line is the target alone */
		if ((st = tfm_seq2seq_encode(r->c, ids, (int64_t)n_ids, NULL))) {
			st = context_error(st);
			goto done;
		}
		r->n_prompt += (int64_t)n_ids;
		ids[0] = r->dec_start;
		n_ids = 1;
	}
	if ((st = tfm_eval(r->c, ids, (int64_t)n_ids, r->logits, 0))) {
		st = context_error(st);
		goto done;
	}
	t1 = now();
	r->t_prompt += t1 - t0;
	r->n_prompt += encdec ? 0 : (int64_t)n_ids;
	/* Echo the prompt (text only) the way run.c does: piece by piece. */
	int32_t prev = -1;
	for (size_t i = 0; i < n_ids; i++) {
		tfm_sampler_accept(r->smp, ids[i]);
		if (r->echo && !r->jsonl && !encdec && !(i == 0 && ids[i] == bos)) {
			char piece[512];
			int k = tfm_token_decode(r->tok, prev, ids[i], piece, sizeof(piece));
			if (k < 0) {
				st = k;
				goto done;
			}
			if ((st = out(r, piece, (size_t)k)))
				goto done;
		}
		prev = ids[i];
	}
	if (encdec) /* the target's first piece is the start of a text */
		prev = -1;
	r->hold_n = 0;
	int64_t n_seq = (int64_t)n_ids; /* r->seq: what the decoder has read */
	if (n_seq + r->count + 2 > r->seq_cap) { /* a ring cache takes any prompt */
		int32_t *ns = realloc(r->seq, (size_t)(n_seq + r->count + 2) * sizeof *ns);
		if (!ns) {
			st = TFM_E_NOMEM;
			goto done;
		}
		r->seq = ns, r->seq_cap = n_seq + r->count + 2;
	}
	memcpy(r->seq, ids, n_ids * sizeof *ids);
	if (r->beam.n_beams > 1) {
		st = beam_line(r, n_seq);
		goto done;
	}
	r->beam.rules.max_len = n_seq + r->count;
	for (int64_t g = 0; g < r->count; g++) {
		if (r->rules_on)
			tfm_gen_rules_apply(&r->beam.rules, r->seq, n_seq, r->logits, r->n_vocab);
		int32_t next = tfm_sampler_sample(r->smp, r->logits);
		r->seq[n_seq++] = next;
		if (!r->ignore_eos && tfm_tokenizer_is_eos(r->tok, next)) {
			n_seq--;
			break;
		}
		int stopped = 0;
		/* an encoder-decoder's text is printed whole at the end */
		if ((!encdec || r->jsonl) && (st = emit(r, prev, next, &stopped)))
			goto done;
		r->n_gen++;
		tfm_sampler_accept(r->smp, next);
		prev = next;
		if (stopped || g == r->count - 1)
			break;
		if ((st = tfm_eval(r->c, &next, 1, r->logits, 0))) {
			if (!r->jsonl) {
				hold_flush(r);
				out(r, "\n", 1); /* end the line of text before the message */
			}
			st = context_error(st);
			goto done;
		}
	}
	if (encdec && !r->jsonl) {
		char *t = NULL;
		size_t tn = 0;
		if (!(st = target_text(r, r->seq + 1, n_seq - 1, &t, &tn)) && !(st = out(r, t, tn)))
			st = out(r, "\n", 1);
		free(t);
		goto done;
	}
	if ((st = hold_flush(r)))
		goto done;
	if (!r->jsonl)
		st = out(r, "\n", 1);
done:
	if (t1 >= 0)
		r->t_gen += now() - t1;
	free(ids);
	return st;
}

/* The model's own sampling defaults (general.sampling.*, which
 * tfm-convert and llama.cpp's converter take from generation_config.json)
 * for the options not given on the command line. */
enum { SET_TEMP = 1, SET_TOPK = 2, SET_TOPP = 4, SET_MINP = 8, SET_PEN = 16, SET_PENN = 32 };

static void sampling_defaults(const struct tfm_gguf *g, unsigned given, struct tfm_sampler_opts *so)
{
	if (!g)
		return;
	double v;
	int64_t k;
	if (!(given & SET_TEMP) && !tfm_gguf_get_float(g, "general.sampling.temp", &v) &&
	    v >= 0 && v <= 1e6)
		so->temp = v;
	if (!(given & SET_TOPK) && !tfm_gguf_get_int(g, "general.sampling.top_k", &k) &&
	    k >= 0 && k <= INT32_MAX)
		so->top_k = k;
	if (!(given & SET_TOPP) && !tfm_gguf_get_float(g, "general.sampling.top_p", &v) &&
	    v >= 0 && v <= 1)
		so->top_p = v;
	if (!(given & SET_MINP) && !tfm_gguf_get_float(g, "general.sampling.min_p", &v) &&
	    v >= 0 && v <= 1)
		so->min_p = v;
	if (!(given & SET_PEN) && !tfm_gguf_get_float(g, "general.sampling.penalty_repeat", &v) &&
	    v > 0 && v <= 1e6)
		so->repeat_penalty = v;
	if (!(given & SET_PENN) && !tfm_gguf_get_int(g, "general.sampling.penalty_last_n", &k) &&
	    k >= 0 && k <= 1 << 20)
		so->repeat_last_n = k;
}

/* ---- --chat ---- */

static volatile sig_atomic_t chat_interrupted;

static void on_chat_sigint(int sig)
{
	(void)sig;
	chat_interrupted = 1;
}

/* Ctrl-C's handler. At the prompt it interrupts the read (readline then
 * returns with chat_interrupted set); while an answer is printed it must
 * restart the write it lands in, or a Ctrl-C that arrives while stdout is
 * blocked on a slow terminal fails the write with EINTR (exit 74). */
static void chat_sigint(int restart, struct sigaction *old)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_chat_sigint;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, old);
}

static int chat_out(void *ctx, const char *p, size_t n)
{
	return out(ctx, p, n);
}

/* Text as a JSON string: bytes that are not UTF-8 (a token holding part of
 * a character, from a model that went astray) become U+FFFD. */
static json_t *json_text(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *b = malloc(3 * n + 1);
	if (!b)
		return NULL;
	for (size_t i = 0; i < n;) {
		int k = utf8_len((const unsigned char *)s + i, n - i);
		if (k == 0) {
			memcpy(b + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		} else {
			memcpy(b + o, s + i, (size_t)k);
			o += (size_t)k;
			i += (size_t)k;
		}
	}
	json_t *j = json_stringn(b, o);
	free(b);
	return j;
}

static json_t *message(const char *role, const char *content)
{
	json_t *m = json_object();
	if (m) {
		json_object_set_new(m, "role", json_string(role));
		json_object_set_new(m, "content", json_text(content));
	}
	return m;
}

/* One user message and the answer, printed as it comes. */
static int chat_say(struct run *r, struct chat *ch, const char *text)
{
	json_array_append_new(ch->messages, message("user", text));
	char *answer = NULL;
	chat_interrupted = 0;
	int st = chat_turn(ch, ch->messages, NULL, chat_out, r, &answer);
	if (!st && r->verbose > 0)
		fprintf(stderr, "tfm-run: prompt: %lld tokens fed, %lld reused from the cache\n",
			(long long)ch->last_fed, (long long)ch->last_kept);
	if (!st)
		st = out(r, "\n", 1);
	if (st) {
		free(answer);
		return st;
	}
	json_array_append_new(ch->messages, message("assistant", answer));
	free(answer);
	return TFM_OK;
}

/* -F jsonl: {"messages": [...], ...} per line in, {"role": "assistant",
 * "content": ...} per line out; other members of the request (tools,
 * enable_thinking, ...) go to the template. */
static int chat_jsonl(struct run *r, struct chat *ch)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int st = TFM_OK;
	long lineno = 0;
	while (!st && (len = getline(&line, &cap, stdin)) >= 0) {
		lineno++;
		json_error_t e;
		json_t *req = json_loadb(line, (size_t)len, 0, &e);
		json_t *msgs = req ? json_object_get(req, "messages") : NULL;
		if (!json_is_array(msgs)) {
			json_decref(req);
			st = tfm_seterr(TFM_E_FORMAT, "stdin: line %ld: not {\"messages\": [...]}", lineno);
			break;
		}
		json_incref(msgs);
		json_object_del(req, "messages");
		char *answer = NULL;
		if (!(st = chat_turn(ch, msgs, req, NULL, NULL, &answer))) {
			if (r->verbose > 0)
				fprintf(stderr, "tfm-run: prompt: %lld tokens fed, %lld reused from the "
					"cache\n", (long long)ch->last_fed, (long long)ch->last_kept);
			json_t *o = message("assistant", answer);
			char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
			if (!txt)
				st = tfm_seterr(TFM_E_NOMEM, "out of memory");
			else if (!(st = out(r, txt, strlen(txt))))
				st = out(r, "\n", 1);
			free(txt);
			json_decref(o);
		}
		free(answer);
		json_decref(msgs);
		json_decref(req);
	}
	free(line);
	return st;
}

/* --chat: on a terminal, a conversation with line editing and history
 * (Ctrl-C ends the answer, /exit or Ctrl-D the conversation); in a
 * pipeline, each line of stdin is the next user message of one
 * conversation (text), or a whole request (-F jsonl). */
static int run_chat(struct run *r, const char *tpl_path, const char *system, const char *prompt)
{
	struct chat ch;
	struct tfm_blob tb = { 0 };
	int st;
	if (tpl_path && (st = tfm_blob_open(&tb, tpl_path)))
		return st;
	st = chat_init(&ch, r->m, r->c, r->smp, tpl_path ? (const char *)tb.data : NULL,
		       tpl_path ? tb.size : 0, r->count);
	tfm_blob_close(&tb);
	ch.stop = (volatile int *)&chat_interrupted;
	ch.messages = json_array();
	if (!st && system)
		json_array_append_new(ch.messages,
				      message("system", system));
	if (st)
		goto done;
	if (r->jsonl) {
		st = chat_jsonl(r, &ch);
		goto done;
	}
	if (prompt) {
		st = chat_say(r, &ch, prompt);
		goto done;
	}
	int tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	struct sigaction old;
	if (tty) { /* Ctrl-C ends the answer, not the program */
		chat_sigint(0, &old);
		using_history();
		fprintf(stderr, "tfm-run: chat; /exit or Ctrl-D ends it, Ctrl-C stops an answer\n");
	}
	for (;;) {
		char *line = NULL;
		if (tty) {
			chat_interrupted = 0;
			chat_sigint(0, NULL);
			line = readline("> ");
			chat_sigint(1, NULL);
			if (!line && chat_interrupted) { /* Ctrl-C at the prompt: a new line */
				fputc('\n', stdout);
				continue;
			}
		} else {
			size_t cap = 0;
			ssize_t len = getline(&line, &cap, stdin);
			if (len < 0) {
				free(line);
				line = NULL;
			} else {
				while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
					line[--len] = 0;
			}
		}
		if (!line)
			break;
		if (!strcmp(line, "/exit")) {
			free(line);
			break;
		}
		if (*line) {
			if (tty)
				add_history(line);
			st = chat_say(r, &ch, line);
		}
		free(line);
		if (st)
			break;
	}
	if (tty)
		sigaction(SIGINT, &old, NULL);
done:
	json_decref(ch.messages);
	chat_free(&ch);
	return st;
}

int main(int argc, char **argv)
{
	cmd_init("tfm-run");
	const char *model = NULL, *prompt = NULL, *file = NULL, *vocab = NULL, *format = "text";
	int64_t n_ctx = 0, count = 256, threads = 0, logprobs = 0, verbose = 0;
	int have_seed = 0, special = 0, echo = 1, ignore_eos = 0, n_stop = 0, chat = 0;
	unsigned given = 0; /* sampling options on the command line */
	const char *system_text = NULL, *chat_tpl = NULL, *src_lang = NULL, *tgt_lang = NULL;
	const char **stop = NULL;
	struct tfm_sampler_opts so;
	tfm_sampler_opts_default(&so);
	const char **set = NULL;
	int n_set = 0, rc = 0;
	int64_t v;
	int ch;

	int k_type = TFM_TYPE_F32, v_type = TFM_TYPE_F32;
	/* beam search and the rules of token choice; -1: the model's */
	int64_t beams = -1, no_repeat = -1, count_given = 0;
	double len_pen = NAN;
	int early = -1;
	struct enc_opts eo = { .normalize = -1, .truncate = 1 };
	int n_enc_opts = 0; /* options of --embed / --classify only */
	while ((ch = getopt_long(argc, argv, "F:Vc:f:hk:m:n:p:qt:v", longopts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			if ((rc = cmd_opt_kv_types(usage, optarg, 1, &k_type, &v_type)))
				return rc;
			break;
		case 'F': format = optarg; break;
		case 'V': cmd_version(); return cmd_close_stdout();
		case 'c': if ((rc = cmd_opt_i64("-c", optarg, 1, INT32_MAX, &n_ctx))) return rc; break;
		case 'f': file = optarg; break;
		case 'h': fputs(usage, stdout); fputs(options_help, stdout); return cmd_close_stdout();
		case 'm': model = optarg; break;
		case 'n': if ((rc = cmd_opt_i64("-n", optarg, 0, INT32_MAX, &count))) return rc; count_given = 1; break;
		case O_BEAMS: if ((rc = cmd_opt_i64("--beams", optarg, 1, 256, &beams))) return rc; break;
		case O_NOREPEAT: if ((rc = cmd_opt_i64("--no-repeat-ngram", optarg, 0, 1 << 20, &no_repeat))) return rc; break;
		case O_SRCLANG: src_lang = optarg; break;
		case O_TGTLANG: tgt_lang = optarg; break;
		case O_LENPEN: if ((rc = cmd_opt_f64("--length-penalty", optarg, -1e6, 1e6, &len_pen))) return rc; break;
		case O_EARLY:
			early = !strcmp(optarg, "false") ? 0 : !strcmp(optarg, "true") ? 1
				: !strcmp(optarg, "never") ? 2 : -1;
			if (early < 0)
				return cmd_usage_error(usage, "--early-stopping: '%s' (false, true or never)",
						       optarg);
			break;
		case 'p': prompt = optarg; break;
		case 'q': tfm_log_set_level(TFM_LOG_ERROR); verbose = -1; break;
		case 't': if ((rc = cmd_opt_i64("-t", optarg, 0, 1024, &threads))) return rc; break;
		case 'v': tfm_log_set_level(TFM_LOG_INFO); verbose = 1; break;
		case O_TEMP: given |= SET_TEMP; if ((rc = cmd_opt_f64("--temp", optarg, 0, 1e6, &so.temp))) return rc; break;
		case O_TOPK: given |= SET_TOPK; if ((rc = cmd_opt_i64("--top-k", optarg, 0, INT32_MAX, &so.top_k))) return rc; break;
		case O_TOPP: given |= SET_TOPP; if ((rc = cmd_opt_f64("--top-p", optarg, 0, 1, &so.top_p))) return rc; break;
		case O_MINP: given |= SET_MINP; if ((rc = cmd_opt_f64("--min-p", optarg, 0, 1, &so.min_p))) return rc; break;
		case O_PEN: given |= SET_PEN; if ((rc = cmd_opt_f64("--repeat-penalty", optarg, 1e-6, 1e6, &so.repeat_penalty))) return rc; break;
		case O_PENN: given |= SET_PENN; if ((rc = cmd_opt_i64("--repeat-last-n", optarg, 0, 1 << 20, &so.repeat_last_n))) return rc; break;
		case O_SEED:
			if ((rc = cmd_opt_i64("--seed", optarg, 0, INT64_MAX, &v)))
				return rc;
			so.seed = (uint64_t)v;
			have_seed = 1;
			break;
		case O_LOGPROBS: if ((rc = cmd_opt_i64("--logprobs", optarg, 0, 100, &logprobs))) return rc; break;
		case O_MEMLIM:
			if (tfm_mem_set_limit(optarg))
				return cmd_usage_error(usage, "%s", tfm_errmsg());
			break;
		case O_VOCAB: vocab = optarg; break;
		case O_SPECIAL: special = 1; break;
		case O_NOECHO: echo = 0; break;
		case O_IGNEOS: ignore_eos = 1; break;
		case O_CHAT: chat = 1; break;
		case O_SYSTEM: system_text = optarg; break;
		case O_CHATTPL: chat_tpl = optarg; break;
		case O_EMBED: case O_CLASSIFY: case O_FILL: case O_TAG:
			if (eo.mode)
				return cmd_usage_error(usage, "--embed, --classify, --fill and --tag exclude "
						       "each other");
			eo.mode = ch == O_EMBED ? ENC_EMBED : ch == O_FILL ? ENC_FILL
				: ch == O_TAG ? ENC_TAG : ENC_CLASSIFY;
			break;
		case O_NORM: eo.normalize = 1; n_enc_opts++; break;
		case O_NONORM: eo.normalize = 0; n_enc_opts++; break;
		case O_NOTRUNC: eo.truncate = 0; n_enc_opts++; break;
		case O_POOLING: {
			int pm = tfm_spec_enum_value("head.pooling", optarg);
			if (pm <= TFM_POOL_NONE)
				return cmd_usage_error(usage, "--pooling: unknown mode '%s' (cls, mean, "
						       "max, mean_sqrt_len, last)", optarg);
			eo.pooling = pm;
			n_enc_opts++;
			break;
		}
		case O_TOP: if ((rc = cmd_opt_i64("--top", optarg, 1, INT32_MAX, &eo.top))) return rc; n_enc_opts++; break;
		case O_STOP: {
			if (!*optarg)
				return cmd_usage_error(usage, "--stop: empty string");
			const char **ns = realloc(stop, (size_t)(n_stop + 1) * sizeof(*stop));
			if (!ns)
				return cmd_fail(tfm_seterr(TFM_E_NOMEM, "out of memory"));
			stop = ns;
			stop[n_stop++] = optarg;
			break;
		}
		case O_SET: {
			const char **ns = realloc(set, (size_t)(n_set + 1) * sizeof(*set));
			if (!ns)
				return cmd_fail(tfm_seterr(TFM_E_NOMEM, "out of memory"));
			set = ns;
			set[n_set++] = optarg;
			break;
		}
		default: fputs(usage, stderr); return 64;
		}
	}
	if (optind < argc)
		return cmd_usage_error(usage, "unexpected argument: %s", argv[optind]);
	if (!model)
		return cmd_usage_error(usage, "-m model is required");
	if (prompt && file)
		return cmd_usage_error(usage, "-p and -f exclude each other");
	int jsonl = 0;
	if (eo.mode) {
		if (chat || logprobs || n_stop || !echo || special || ignore_eos || given || have_seed ||
		    vocab || count_given || beams >= 0 || no_repeat >= 0 || early >= 0 || !isnan(len_pen))
			return cmd_usage_error(usage, "--embed, --classify, --fill and --tag take none of "
					       "the generation options");
		if (eo.mode != ENC_EMBED && (eo.pooling || eo.normalize >= 0))
			return cmd_usage_error(usage, "--pooling and --normalize need --embed");
		if ((eo.mode == ENC_EMBED || eo.mode == ENC_TAG) && eo.top)
			return cmd_usage_error(usage, "--top needs --classify or --fill");
		if (!strcmp(format, "jsonl"))
			eo.fmt = ENC_JSONL;
		else if (!strcmp(format, "f32"))
			eo.fmt = ENC_F32;
		else if (strcmp(format, "tsv") && strcmp(format, "text"))
			return cmd_usage_error(usage, "-F: unknown format '%s' (tsv, jsonl, f32)", format);
		format = "text";
	} else if (n_enc_opts) {
		return cmd_usage_error(usage, "--pooling, --normalize, --no-normalize, --no-truncate "
				       "and --top need --embed, --classify, --fill or --tag");
	}
	if (!strcmp(format, "jsonl"))
		jsonl = 1;
	else if (strcmp(format, "text"))
		return cmd_usage_error(usage, "-F: unknown format '%s' (text, jsonl)", format);
	if (logprobs && !jsonl)
		return cmd_usage_error(usage, "--logprobs needs -F jsonl");
	if (chat && (file || logprobs || n_stop || !echo || special))
		return cmd_usage_error(usage, "--chat takes no -f, --logprobs, --stop, "
				       "--no-display-prompt or --special");
	if (!chat && (system_text || chat_tpl))
		return cmd_usage_error(usage, "--system and --chat-template need --chat");
	if (!have_seed)
		so.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (beams > 1 && (chat || logprobs || n_stop || given || have_seed))
		return cmd_usage_error(usage, "--beams takes none of --chat, --logprobs, --stop and "
				       "the sampling options");

	struct run r = { 0 };
	struct tfm_blob fb = { 0 };
	int st;
	struct tfm_model_opts mo = { .n_threads = (int)threads, .vocab = vocab, .set = set,
				     .n_set = n_set, .k_type = k_type,
				     .v_type = v_type, .src_lang = src_lang, .tgt_lang = tgt_lang };
	if ((st = tfm_model_open(&r.m, model, &mo)))
		goto fail;
	if (eo.mode) {
		eo.n_ctx = n_ctx;
		st = run_encode(r.m, &eo, prompt, file);
		goto fail;
	}
	r.tok = tfm_model_tokenizer(r.m);
	if (!r.tok) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: the model has no tokenizer%s", model,
				vocab ? "" : " (llama2.c checkpoints need --vocab)");
		goto fail;
	}
	const struct tfm_spec *spec = tfm_model_spec(r.m);
	if (spec->family == TFM_FAMILY_ENCDEC) {
		/* transformers' generate decodes greedily unless told to sample */
		if (!(given & SET_TEMP))
			so.temp = 0;
		if (chat) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: --chat with an encoder-decoder model is "
					"not supported", model);
			goto fail;
		}
	}
	sampling_defaults(tfm_model_gguf(r.m), given, &so);
	/* transformers' generation defaults of an encoder-decoder model
	 * (tfm.gen.*, from its generation_config.json) where no option is
	 * given; a decoder-only model has the options alone */
	const struct tfm_gguf *gg = tfm_model_gguf(r.m);
	int encdec = spec->family == TFM_FAMILY_ENCDEC;
	struct tfm_gen_rules *ru = &r.beam.rules;
	ru->eos_id = spec->eos_id;
	ru->forced_bos = ru->forced_eos = -1;
	r.dec_start = spec->dec_start_id; /* generation_config's, else config.json's */
	if (encdec && gg)
		r.dec_start = (int32_t)tfm_gguf_get_int_or(gg, "tfm.gen.decoder_start_token_id",
							   r.dec_start);
	if (encdec && (r.dec_start < 0 || r.dec_start >= spec->n_vocab)) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: an encoder-decoder model without a valid decoder "
				"start token (%d)", model, (int)r.dec_start);
		goto fail;
	}
	if (encdec && gg) {
		ru->forced_bos = (int32_t)tfm_gguf_get_int_or(gg, "tfm.gen.forced_bos_token_id", -1);
		ru->forced_eos = (int32_t)tfm_gguf_get_int_or(gg, "tfm.gen.forced_eos_token_id", -1);
		ru->min_len = tfm_gguf_get_int_or(gg, "tfm.gen.min_length", 0);
		if (beams < 0)
			beams = tfm_gguf_get_int_or(gg, "tfm.gen.num_beams", 1);
		if (no_repeat < 0)
			no_repeat = tfm_gguf_get_int_or(gg, "tfm.gen.no_repeat_ngram_size", 0);
		if (isnan(len_pen))
			len_pen = tfm_gguf_get_float_or(gg, "tfm.gen.length_penalty", 1.0);
		if (early < 0)
			early = (int)tfm_gguf_get_int_or(gg, "tfm.gen.early_stopping", 0);
		if (!count_given) { /* transformers' max_length 20 with one start token */
			int64_t mx = tfm_gguf_get_int_or(gg, "tfm.gen.max_length", 20);
			count = tfm_gguf_get_int_or(gg, "tfm.gen.max_new_tokens", mx - 1);
		}
	}
	if (tgt_lang) {
		/* mBART: the decoder starts as the target language's frame
		 * says (cc25: from the code; mBART-50: from </s>, the code
		 * forced next), over the model's own start */
		int32_t start, forced;
		if (!encdec || !tfm_tokenizer_target_start(r.tok, &start, &forced)) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: --target-lang: not an encoder-decoder "
					"model whose tokenizer frames a language code", model);
			goto fail;
		}
		if (start >= 0)
			r.dec_start = start;
		if (forced >= 0)
			ru->forced_bos = forced;
	}
	if ((ru->forced_bos >= spec->n_vocab) || (ru->forced_eos >= spec->n_vocab)) {
		st = tfm_seterr(TFM_E_FORMAT, "%s: a forced token past the vocabulary", model);
		goto fail;
	}
	ru->no_repeat_ngram = no_repeat > 0 ? no_repeat : 0;
	r.beam.n_beams = beams > 1 ? (int)beams : 1;
	r.beam.length_penalty = isnan(len_pen) ? 1.0 : len_pen;
	r.beam.early_stopping = early > 0 ? early : 0;
	r.rules_on = ru->no_repeat_ngram > 0 || ru->forced_bos >= 0 || ru->forced_eos >= 0 ||
		     ru->min_len > 0;
	if (r.beam.n_beams > 1 && (chat || logprobs || n_stop || given || have_seed)) {
		st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: beam search (num_beams %d) takes none of "
				"--chat, --logprobs, --stop and the sampling options (--beams 1 to "
				"sample)", model, r.beam.n_beams);
		goto fail;
	}
	r.n_vocab = spec->n_vocab;
	if (n_ctx == 0)
		n_ctx = spec->n_ctx_train > 0 && spec->n_ctx_train < 4096 ? spec->n_ctx_train : 4096;
	r.n_ctx = n_ctx;
	r.count = count;
	r.jsonl = jsonl;
	r.verbose = verbose;
	r.special = special;
	r.echo = echo;
	r.ignore_eos = ignore_eos;
	r.stop = stop;
	r.n_stop = n_stop;
	r.logprobs = (int)logprobs;
	r.logits = tfm_malloc((size_t)r.n_vocab * sizeof(float));
	r.top = tfm_malloc((size_t)(logprobs + 1) * sizeof(int32_t));
	if (!r.logits || !r.top) {
		st = TFM_E_NOMEM;
		goto fail;
	}
	if ((st = tfm_ctx_new(&r.c, r.m, n_ctx)) || (st = tfm_sampler_new(&r.smp, r.n_vocab, &so)))
		goto fail;
	r.seq_cap = n_ctx + count + 2;
	r.seq = tfm_malloc((size_t)r.seq_cap * sizeof *r.seq);
	r.out = tfm_malloc((size_t)(count + 1) * sizeof *r.out);
	r.bc = tfm_calloc((size_t)r.beam.n_beams, sizeof *r.bc);
	if (!r.seq || !r.out || !r.bc) {
		st = TFM_E_NOMEM;
		goto fail;
	}
	r.bc[0] = r.c;
	for (int b = 1; b < r.beam.n_beams; b++)
		if ((st = tfm_ctx_new(&r.bc[b], r.m, n_ctx)))
			goto fail;

	if (chat) {
		st = run_chat(&r, chat_tpl, system_text, prompt);
	} else if (prompt) {
		st = generate(&r, prompt, strlen(prompt));
	} else if (file) {
		if ((st = tfm_blob_open(&fb, file)))
			goto fail;
		size_t len = fb.size;
		if (len && fb.data[len - 1] == '\n') /* as llama.cpp's -f */
			len--;
		st = generate(&r, (const char *)fb.data, len);
	} else {
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		while (!st && (len = getline(&line, &cap, stdin)) >= 0) {
			while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
				len--;
			st = generate(&r, line, (size_t)len);
		}
		if (!st && ferror(stdin))
			st = tfm_seterr(TFM_E_IO, "stdin: %s", strerror(errno));
		free(line);
	}
	if (verbose > 0 && !st && !chat)
		fprintf(stderr, "tfm-run: prompt: %lld tokens in %.4f s (%.1f tokens/s); "
			"generation: %lld tokens in %.4f s (%.1f tokens/s)\n",
			(long long)r.n_prompt, r.t_prompt, r.t_prompt > 0 ? r.n_prompt / r.t_prompt : 0.0,
			(long long)r.n_gen, r.t_gen, r.t_gen > 0 ? r.n_gen / r.t_gen : 0.0);
fail:
	if (st == TFM_E_PIPE)
		st = TFM_OK;
	rc = st ? cmd_fail(st) : 0;
	tfm_blob_close(&fb);
	tfm_sampler_free(r.smp);
	for (int b = 1; r.bc && b < r.beam.n_beams; b++)
		tfm_ctx_free(r.bc[b]);
	free(r.bc), free(r.seq), free(r.out);
	tfm_ctx_free(r.c);
	tfm_model_close(r.m);
	free(r.logits);
	free(r.top);
	free(r.hold);
	free(stop);
	free(set);
	if (r.pipe_closed || rc) /* an error already said: one message, not two */
		return rc;
	return cmd_close_stdout();
}
