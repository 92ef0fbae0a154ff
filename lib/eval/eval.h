/* eval.h: perplexity accumulators.  Per scored token we add the negative
 * log-likelihood of the target, the entropy of the predicted distribution,
 * whether the argmax was the target and how many text bytes the target
 * decodes to.  Sums are kept in fixed point (2^-32 nats) in 128-bit
 * integers, so partial results from shards merge exactly: any grouping of
 * the same tokens gives bit-identical totals. */
#ifndef TFM_EVAL_H
#define TFM_EVAL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct tfm_pool;

__extension__ typedef __int128 tfm_i128;

struct tfm_ppl_acc {
	int64_t n;        /* scored tokens */
	int64_t n_top1;   /* tokens whose argmax was the target */
	int64_t n_bytes;  /* text bytes the scored targets decode to */
	tfm_i128 nll;     /* sum of q, q = round(nll * 2^32), nats */
	tfm_i128 nll2;    /* sum of q * q (2^-64 nats^2) */
	tfm_i128 ent;     /* sum of round(entropy * 2^32), nats */
	/* KL divergence against a base model's distribution (tfm_kl_add) */
	int64_t n_kl;     /* positions compared */
	int64_t n_agree;  /* positions where both argmaxes agree */
	tfm_i128 kl;      /* sum of round(KL * 2^32), nats */
	tfm_i128 kl2;     /* sum of squares of those (2^-64) */
	int64_t kl_max;   /* largest round(KL * 2^32) */
	tfm_i128 dp;      /* sum of round(dp * 2^32), dp = p_model(target) - p_base(target) */
	tfm_i128 dp2;     /* sum of squares of those (2^-64) */
	tfm_i128 nll_base;/* sum of round(base nll * 2^32) at the same positions */
};

/* What --save-logits keeps of a base model's distribution at one position:
 * the target's log-probability, the TFM_LOGPROBS_K most probable tokens
 * with theirs (descending; ties by lower id), and the log of the probability
 * mass of all other tokens.  formats/logprobs.md describes the file. */
#define TFM_LOGPROBS_K 32
struct tfm_logprobs {
	float logp_target;
	float logp_rest;             /* log of the mass outside the top K (-inf: none) */
	int32_t k;                   /* entries used: min(K, n_vocab) */
	int32_t id[TFM_LOGPROBS_K];
	float logp[TFM_LOGPROBS_K];
};

struct tfm_ppl_result {
	int64_t tokens;
	double nll, nll_stderr;     /* mean nats per token and its standard error */
	double ppl, ppl_stderr;     /* exp(nll), ppl * nll_stderr (llama.cpp) */
	double bits_per_token, bits_per_byte;
	double entropy_bits;        /* mean predictive entropy */
	double top1;                /* fraction of argmax hits */
	int64_t kl_positions;       /* 0: no KL measured */
	double kld, kld_stderr;     /* mean KL(base || model) in nats, standard error */
	double kld_max;             /* largest KL at one position */
	double top1_agree;          /* fraction where base and model argmax agree */
	double dp_mean, dp_rms;     /* p_model(target) - p_base(target): mean, RMS */
	double ln_ppl_ratio;        /* ln(PPL(model) / PPL(base)) over the same positions */
};

void tfm_ppl_init(struct tfm_ppl_acc *a);
/* One scored position: logits[n_vocab] predicting target. */
void tfm_ppl_add(struct tfm_ppl_acc *a, const float *logits, int64_t n_vocab,
		 int32_t target, int64_t n_bytes);
/* tfm_ppl_add for n rows of logits [n][n_vocab] predicting targets[n]
 * (bytes[n] each), the rows' softmaxes spread over pool (may be NULL):
 * the same sums as n calls of tfm_ppl_add in row order. */
int tfm_ppl_add_rows(struct tfm_ppl_acc *a, struct tfm_pool *pool, const float *logits,
		     int64_t n, int64_t n_vocab, const int32_t *targets, const int64_t *bytes);
/* The same from already computed values (nats). */
void tfm_ppl_add_values(struct tfm_ppl_acc *a, double nll, double entropy, int top1,
			int64_t n_bytes);
/* Log-softmax of logits[n_vocab] into logp[n_vocab] (double inside). */
void tfm_log_softmax(const float *logits, int64_t n_vocab, float *logp);
/* The base record of one position from the base model's logits. */
void tfm_logprobs_make(const float *logits, int64_t n_vocab, int32_t target,
		       struct tfm_logprobs *r);
/* One position's KL(base || model) from the base's record and the model's
 * logits, over the base's top K tokens and one bucket for the rest:
 *   sum_{i in top K} p_b(i) log(p_b(i)/p_m(i)) + r_b log(r_b/r_m)
 * where r is the mass outside the top K.  This is the KL of the two
 * distributions coarsened to K+1 outcomes: exact when the vocabulary has at
 * most K tokens, otherwise a lower bound that is tight when the rest is
 * small.  Returns that KL (nats) and adds it with Delta-p of the target. */
double tfm_kl_add(struct tfm_ppl_acc *a, const struct tfm_logprobs *base, const float *logits,
		  int64_t n_vocab, int32_t target);
/* dst += src; TFM_E_FORMAT (dst unchanged) when a sum would overflow. */
int tfm_ppl_merge(struct tfm_ppl_acc *dst, const struct tfm_ppl_acc *src);
/* Means from the sums.  The standard error is llama-perplexity's:
 * sqrt((mean(x^2) - mean(x)^2) / (n - 1)); 0 when n < 2. */
void tfm_ppl_result(const struct tfm_ppl_acc *a, struct tfm_ppl_result *r);

/* Reading a --save-logits file (formats/logprobs.md) held in data[size]:
 * the header line, checked (version 2, "topk", n_vocab >= 1, k =
 * min(n_vocab, TFM_LOGPROBS_K), positions >= 0, and exactly that many
 * records after it), as *hdr (the caller decrefs it) and the offset *off
 * of the first record.  TFM_E_FORMAT with a message otherwise. */
int tfm_logprobs_header(const uint8_t *data, size_t size, const char *name, json_t **hdr,
			size_t *off);
size_t tfm_logprobs_record_bytes(int64_t k); /* 8 + 8k */
/* One record of k entries at p: token ids in [0, n_vocab), every value a
 * log-probability (not NaN, not above 0); TFM_E_FORMAT otherwise. */
int tfm_logprobs_read(const uint8_t *p, int64_t k, int64_t n_vocab, struct tfm_logprobs *r,
		      const char *name);

/* Pseudo-perplexity of a masked LM (pppl.c): the text's tokens without
 * the tokenizer's frame, cut into windows of per_win content tokens, each
 * scored inside the frame with every token masked in turn. */
struct tfm_ctx;
struct tfm_tokenizer;
struct tfm_pppl {
	int32_t *ids;      /* [n] content tokens */
	int64_t n, per_win, n_win;
	int32_t mask;      /* the mask token */
	int32_t frame[4];  /* n_pre tokens before a window's content, n_suf after */
	int n_pre, n_suf;
};
/* Tokenize text[len] for windows of at most ctx tokens, frame included.
 * TFM_E_FORMAT: no mask token or nothing to score. */
int tfm_pppl_prepare(struct tfm_pppl *p, const struct tfm_tokenizer *t, const char *text,
		     size_t len, int64_t ctx);
/* Add window w's positions to acc (logits: scratch of n_vocab floats). */
int tfm_pppl_window(struct tfm_ctx *c, const struct tfm_tokenizer *t, const struct tfm_pppl *p,
		    int64_t w, float *logits, int64_t n_vocab, struct tfm_ppl_acc *acc);
void tfm_pppl_free(struct tfm_pppl *p);

/* Partial sums as JSON (128-bit sums as decimal strings) and back. */
json_t *tfm_ppl_acc_to_json(const struct tfm_ppl_acc *a);
int tfm_ppl_acc_from_json(struct tfm_ppl_acc *a, const json_t *j);

#endif
