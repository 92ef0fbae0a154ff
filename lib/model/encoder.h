/* encoder.h: encoder-only models (BERT, RoBERTa, DistilBERT): one whole
 * sequence through the block executor with bidirectional attention, then a
 * head: the last hidden states, a pooled sentence embedding, or a sequence
 * classifier's logits.  A context runs one sequence at a time, of at most
 * tfm_ctx_size tokens. */
#ifndef TFM_ENCODER_H
#define TFM_ENCODER_H

#include <stdint.h>

struct tfm_ctx;

/* The last hidden states hidden[n][n_embd] (NULL: none) of tok[n] with token
 * types types[n] (NULL: all 0).  TFM_E_UNSUPPORTED for a decoder;
 * TFM_E_INVAL for a sequence longer than the context, a token type past the
 * model's, or (RoBERTa) the padding token inside the input. */
int tfm_encode(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
	       float *hidden);

/* A sentence embedding out[n_embd]: tfm_encode, then pooling (enum
 * tfm_pooling; TFM_POOL_NONE: the model's) and, when normalize > 0, divided
 * by its L2 norm (normalize < 0: the model's setting). */
int tfm_embed(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
	      int pooling, int normalize, float *out);

/* Sentence embeddings out[n_seq][n_embd] of n_seq sequences of len[i]
 * tokens, back to back in tok (and types), in one pass of at most the
 * context's size: each sequence attends only to itself and numbers its
 * positions from 0, so each embedding is the one tfm_embed gives alone
 * (within rounding: the matrix products see other rows).  Models whose
 * layers are not plain attention run the sequences one at a time. */
int tfm_embed_batch(struct tfm_ctx *c, const int32_t *tok, const int32_t *types,
		    const int64_t *len, int64_t n_seq, int pooling, int normalize, float *out);

/* A sequence classifier: logits[n_labels] from the first token through the
 * pooler (dense + tanh or relu) and the classifier; probs[n_labels] (may be
 * NULL) their softmax, or per-label sigmoid for a multi-label model.
 * TFM_E_UNSUPPORTED when the model has no classification head. */
int tfm_classify(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
		 float *logits, float *probs);

/* tfm_classify of n_seq sequences side by side, as tfm_embed_batch runs
 * them: logits[n_seq][n_labels], probs (may be NULL) the same. */
int tfm_classify_batch(struct tfm_ctx *c, const int32_t *tok, const int32_t *types,
		       const int64_t *len, int64_t n_seq, float *logits, float *probs);

/* A token classifier (NER): logits[n][n_labels] for every token of tok[n],
 * the classifier on each last hidden state.  TFM_E_UNSUPPORTED when the
 * model has no token-classification head. */
int tfm_tag(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n, float *logits);

/* A masked-LM head: logits[n_vocab] at position pos of tok[n] (transform
 * dense, activation, LayerNorm, then the tied decoder and its bias).
 * TFM_E_UNSUPPORTED when the model has no masked-LM head. */
int tfm_fill_mask(struct tfm_ctx *c, const int32_t *tok, const int32_t *types, int64_t n,
		  int64_t pos, float *logits);

#endif
