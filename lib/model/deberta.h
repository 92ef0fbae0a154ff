/* deberta.h: the disentangled self-attention of lib/model/deberta.c
 * (DeBERTa v1, v2, v3), its context scratch and its scalar reference, and
 * DeBERTa-v2's ConvLayer.
 * Internal to lib/model. */
#ifndef TFM_MODEL_DEBERTA_H
#define TFM_MODEL_DEBERTA_H

#include <stdint.h>

struct tfm_ctx;
struct tfm_spec;

/* The knobs check of pos_attn deberta (TFM_OK for other specs). */
int tfm_deberta_check_spec(const struct tfm_spec *s);
/* Scratch of the attention in c (none unless pos_attn deberta). */
int tfm_deberta_ctx_new(struct tfm_ctx *c);
void tfm_deberta_ctx_free(struct tfm_ctx *c);
/* c->att[n][n_head * head_dim] = layer l's disentangled attention over
 * c->xn[n][n_embd], one whole sequence from position 0 (q, k, v scratch
 * of the context are overwritten). */
void tfm_deberta_attention(struct tfm_ctx *c, int64_t l, int64_t n);
/* DeBERTa-v2's ConvLayer after the first layer: c->x[n][n_embd] =
 * LayerNorm(c->x + act(conv(e) + bias)), e = c->conv (the embeddings'
 * output, saved by the executor). */
void tfm_deberta_conv(struct tfm_ctx *c, int64_t n);
/* The relative position of q - k = r as the model sees it: r, or its log
 * bucket (transformers' make_log_bucket_position) when rel.buckets > 0. */
int64_t tfm_deberta_rel_pos(const struct tfm_spec *s, int64_t r);
/* The scalar reference: out[n][nh * hd] from q, k, v [n][nh * hd], the
 * position keys pk and queries pq [2 span][nh * hd] (NULL: no c2p / p2c
 * term), the rows c2p[q - k + n - 1] and p2c[k - q + n - 1] they are read
 * at, and the scale of every term; dot products in double. */
void tfm_deberta_attn_ref(float *out, const float *q, const float *k, const float *v,
			  const float *pk, const float *pq, const int32_t *c2p,
			  const int32_t *p2c, int64_t n, int64_t nh, int64_t hd, float scale);

#endif
