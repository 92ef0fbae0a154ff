/* run-chat.h: a conversation with a chat model for tfm-run --chat: the
 * messages so far, rendered every turn with the model's chat template, and
 * the tokens already in the context so that each turn feeds only what is
 * new (the KV cache is reused across turns). */
#ifndef TFM_RUN_CHAT_H
#define TFM_RUN_CHAT_H

#include "tfm.h"
#include "chat/jinja.h"
#include "text/sampler.h"

struct chat {
	struct tfm_model *m;
	const struct tfm_tokenizer *tok;
	struct tfm_ctx *c;
	struct tfm_sampler *smp;
	struct tfm_jinja *tpl;
	json_t *messages;        /* [{"role", "content"}] */
	char *bos, *eos;         /* the template's bos_token and eos_token */
	int32_t *cached;         /* the tokens in the context, in order */
	int64_t n_cached, cap_cached;
	int32_t eot[16];         /* end-of-turn tokens beside the EOS ids */
	int n_eot;
	int64_t n_vocab, max_new; /* max_new: -n */
	float *logits;
	volatile int *stop;      /* set (SIGINT) to end the answer early */
	int64_t last_fed, last_kept; /* the last turn's prompt: tokens fed, reused */
};

/* The template: src (a file's text) or the model's tokenizer.chat_template. */
int chat_init(struct chat *ch, struct tfm_model *m, struct tfm_ctx *c, struct tfm_sampler *smp,
	      const char *src, size_t len, int64_t max_new);
void chat_free(struct chat *ch);
/* One turn: render messages (plus add_generation_prompt), feed what the
 * context lacks, generate the answer.  Each piece of its text goes to
 * out(ctx, text, n) as it comes; *answer (malloc'd) is the whole. */
int chat_turn(struct chat *ch, const json_t *messages, const json_t *extra,
	      int (*out)(void *ctx, const char *p, size_t n), void *octx, char **answer);

#endif
