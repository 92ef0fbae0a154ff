/* beam.h: choosing tokens as transformers' generate does (4.57): the logits
 * processors it applies before a choice (no_repeat_ngram_size, forced BOS
 * and EOS, min_length), and beam search (num_beams > 1, do_sample false:
 * generation/utils.py _beam_search) over several contexts of one model. */
#ifndef TFM_BEAM_H
#define TFM_BEAM_H

#include <stdint.h>

struct tfm_ctx;

/* The rules of one generation; seq is always the whole decoder input so far
 * (a decoder-only model's prompt and what followed; an encoder-decoder's
 * start token and what followed), as transformers' input_ids. */
struct tfm_gen_rules {
	int64_t no_repeat_ngram; /* n > 0: a token that would repeat an n-gram of seq is banned */
	int32_t forced_bos;      /* >= 0: the only token allowed when seq has one token */
	int32_t forced_eos;      /* >= 0: the only token allowed when seq has max_len - 1 */
	int32_t eos_id;          /* >= 0: the end-of-sequence token (min_len, beam search) */
	int64_t min_len;         /* eos banned while seq is shorter than this (0: no rule) */
	int64_t max_len;         /* seq's length limit, prompt included (> its length) */
};

/* Apply the rules to scores[n_vocab] (logits or log-probabilities) before
 * the token that follows seq[n]: banned tokens get -inf; a forced token
 * gets 0 and every other -inf, as transformers' processors. */
void tfm_gen_rules_apply(const struct tfm_gen_rules *r, const int32_t *seq, int64_t n,
			 float *scores, int64_t n_vocab);

struct tfm_beam_opts {
	int n_beams;              /* K >= 1 */
	double length_penalty;    /* a finished hypothesis scores sum(log p) / len^lp */
	int early_stopping;       /* 0: false (transformers' heuristic), 1: true, 2: "never" */
	struct tfm_gen_rules rules; /* eos_id and max_len are needed */
};

/* Beam search from c[0], which holds the state after seq[n] with logits
 * [n_vocab] of its last position; c[1] .. c[K - 1] are contexts of the same
 * model and size, overwritten (tfm_ctx_copy).  out[max_len - n]: the best
 * finished hypothesis' new tokens (its eos included, as generate returns
 * them), *n_out of them; *score: its score (sequences_scores).  The
 * vocabulary must hold at least 2 K tokens. */
int tfm_beam_search(struct tfm_ctx **c, const int32_t *seq, int64_t n, const float *logits,
		    const struct tfm_beam_opts *o, int32_t *out, int64_t *n_out, double *score);

#endif
