/* run-chat.c: the turns of tfm-run --chat (see run-chat.h).  Each turn the
 * whole conversation is rendered with the chat template, as transformers'
 * apply_chat_template does, and tokenized with control tokens parsed and no
 * BOS added (the template writes its own); the tokens the context already
 * holds are not fed again: only what follows the longest common prefix. */
#include "run-chat.h"

#include <stdlib.h>
#include <string.h>

/* End-of-turn tokens by their text, as llama.cpp recognises them beside the
 * EOS ids of config.json and generation_config.json. */
static const char *const eot_names[] = {
	"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>",
	"<|end_of_text|>", "<|return|>", "<|END_OF_TURN_TOKEN|>",
};

static char *piece_dup(const struct tfm_tokenizer *t, int32_t id)
{
	size_t n = 0;
	const char *p = id >= 0 ? tfm_token_piece(t, id, &n) : NULL;
	char *s = malloc(n + 1);
	if (s) {
		if (n)
			memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

int chat_init(struct chat *ch, struct tfm_model *m, struct tfm_ctx *c, struct tfm_sampler *smp,
	      const char *src, size_t len, int64_t max_new)
{
	memset(ch, 0, sizeof *ch);
	ch->m = m, ch->c = c, ch->smp = smp, ch->max_new = max_new;
	ch->tok = tfm_model_tokenizer(m);
	if (!ch->tok)
		return tfm_seterr(TFM_E_FORMAT, "the model has no tokenizer");
	if (!src) {
		const struct tfm_gguf *g = tfm_model_gguf(m);
		if (!g || tfm_gguf_find(g, "tokenizer.chat_template") < 0)
			return tfm_seterr(TFM_E_FORMAT, "the model has no chat template "
					  "(tokenizer.chat_template); give one with --chat-template");
		int st = tfm_gguf_get_str(g, "tokenizer.chat_template", &src, &len);
		if (st)
			return st;
	}
	int st = tfm_jinja_parse(&ch->tpl, src, len);
	if (st)
		return tfm_adderr(st, "chat template");
	ch->bos = piece_dup(ch->tok, tfm_tokenizer_bos(ch->tok));
	ch->eos = piece_dup(ch->tok, tfm_tokenizer_eos(ch->tok));
	ch->n_vocab = tfm_model_spec(m)->n_vocab;
	ch->logits = malloc((size_t)ch->n_vocab * sizeof *ch->logits);
	if (!ch->bos || !ch->eos || !ch->logits)
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	/* the end-of-turn tokens this vocabulary has, whole */
	for (size_t i = 0; i < sizeof eot_names / sizeof eot_names[0] && ch->n_eot < 16; i++) {
		int32_t *ids = NULL;
		size_t n = 0;
		if (!tfm_tokenize_special(ch->tok, eot_names[i], strlen(eot_names[i]), 0, 1, &ids, &n) &&
		    n == 1) {
			size_t pl;
			const char *p = tfm_token_piece(ch->tok, ids[0], &pl);
			if (pl == strlen(eot_names[i]) && !memcmp(p, eot_names[i], pl))
				ch->eot[ch->n_eot++] = ids[0];
		}
		free(ids);
	}
	return TFM_OK;
}

void chat_free(struct chat *ch)
{
	tfm_jinja_free(ch->tpl);
	free(ch->bos);
	free(ch->eos);
	free(ch->cached);
	free(ch->logits);
}

static int is_end(const struct chat *ch, int32_t id)
{
	if (tfm_tokenizer_is_eos(ch->tok, id))
		return 1;
	for (int i = 0; i < ch->n_eot; i++)
		if (ch->eot[i] == id)
			return 1;
	return 0;
}

static int cache_push(struct chat *ch, const int32_t *ids, int64_t n)
{
	if (ch->n_cached + n > ch->cap_cached) {
		int64_t cap = (ch->n_cached + n) * 2 + 64;
		int32_t *p = realloc(ch->cached, (size_t)cap * sizeof *p);
		if (!p)
			return tfm_seterr(TFM_E_NOMEM, "out of memory");
		ch->cached = p;
		ch->cap_cached = cap;
	}
	memcpy(ch->cached + ch->n_cached, ids, (size_t)n * sizeof *ids);
	ch->n_cached += n;
	return TFM_OK;
}

/* Render the request and feed the context what it lacks; the logits of the
 * last prompt token are in ch->logits. */
static int feed_prompt(struct chat *ch, const json_t *messages, const json_t *extra)
{
	json_t *req = json_object();
	if (!req)
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	json_object_set(req, "messages", (json_t *)messages);
	json_object_set_new(req, "add_generation_prompt", json_true());
	json_object_set_new(req, "bos_token", json_string(ch->bos));
	json_object_set_new(req, "eos_token", json_string(ch->eos));
	if (extra)
		json_object_update(req, (json_t *)extra);
	char *text = NULL;
	size_t len = 0;
	int32_t *ids = NULL;
	size_t n = 0;
	int st = tfm_jinja_render_chat(ch->tpl, req, NULL, &text, &len);
	json_decref(req);
	if (!st)
		st = tfm_tokenize_special(ch->tok, text, len, 0, 1, &ids, &n);
	free(text);
	if (st)
		return st;
	if (n == 0) {
		free(ids);
		return tfm_seterr(TFM_E_FORMAT, "the chat template rendered nothing");
	}
	/* keep the longest common prefix (at least one token is fed, for logits) */
	int64_t keep = 0;
	while (keep < ch->n_cached && keep < (int64_t)n - 1 && ch->cached[keep] == ids[keep])
		keep++;
	if (tfm_ctx_rewind(ch->c, keep)) {
		tfm_ctx_reset(ch->c);
		keep = 0;
	}
	ch->n_cached = keep;
	ch->last_kept = keep;
	ch->last_fed = (int64_t)n - keep;
	tfm_sampler_reset(ch->smp);
	for (size_t i = 0; i < n; i++)
		tfm_sampler_accept(ch->smp, ids[i]);
	st = tfm_eval(ch->c, ids + keep, (int64_t)n - keep, ch->logits, 0);
	if (!st)
		st = cache_push(ch, ids + keep, (int64_t)n - keep);
	else if (st == TFM_E_INVAL)
		st = tfm_adderr(TFM_E_FORMAT, "the conversation is longer than the context (-c)");
	free(ids);
	return st;
}

int chat_turn(struct chat *ch, const json_t *messages, const json_t *extra,
	      int (*out)(void *ctx, const char *p, size_t n), void *octx, char **answer)
{
	*answer = NULL;
	int st = feed_prompt(ch, messages, extra);
	if (st)
		return st;
	size_t n = 0, cap = 256;
	char *a = malloc(cap);
	if (!a)
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	int32_t prev = ch->n_cached ? ch->cached[ch->n_cached - 1] : -1;
	for (int64_t g = 0; g < ch->max_new && !(ch->stop && *ch->stop); g++) {
		int32_t id = tfm_sampler_sample(ch->smp, ch->logits);
		if (is_end(ch, id))
			break;
		char piece[512];
		int k = tfm_token_decode(ch->tok, prev, id, piece, sizeof piece);
		if (k < 0) {
			st = k;
			break;
		}
		if (n + (size_t)k + 1 > cap) {
			char *b = realloc(a, cap = (n + (size_t)k + 1) * 2);
			if (!b) {
				st = tfm_seterr(TFM_E_NOMEM, "out of memory");
				break;
			}
			a = b;
		}
		memcpy(a + n, piece, (size_t)k);
		n += (size_t)k;
		if (out && (st = out(octx, piece, (size_t)k)))
			break;
		tfm_sampler_accept(ch->smp, id);
		prev = id;
		if (g == ch->max_new - 1)
			break;
		if ((st = tfm_eval(ch->c, &id, 1, ch->logits, 0))) {
			if (st == TFM_E_INVAL)
				st = tfm_adderr(TFM_E_FORMAT, "the conversation is longer than the "
						"context (-c)");
			break;
		}
		if ((st = cache_push(ch, &id, 1)))
			break;
	}
	a[n] = 0;
	if (st) {
		free(a);
		return st;
	}
	*answer = a;
	return TFM_OK;
}
