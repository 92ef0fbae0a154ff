/* model-impl.h: the bodies of struct tfm_model and struct tfm_ctx, shared by
 * the files of lib/model (load.c binds weights, exec.c runs the block
 * executor, open.c reads files).  Not installed. */
#ifndef TFM_MODEL_IMPL_H
#define TFM_MODEL_IMPL_H

#include "tfm.h"
#include "kernels/backend.h"

/* A norm's parameters (f32 copies; b may be NULL). */
struct tfm_norm_w {
	float *w, *b;   /* [n] */
	float eps;      /* 0: the spec's norm.eps */
};

struct tfm_layer {
	struct tfm_norm_w attn_norm, attn_post_norm, ffn_norm, ffn_post_norm;
	struct tfm_mat wq, wk, wv;   /* {n_embd, q_dim}, {n_embd, kv_dim} x2 */
	struct tfm_mat wqkv;         /* fused {n_embd, q_dim + 2 kv_dim}, or data NULL */
	float *bq, *bk, *bv, *bqkv;  /* [q_dim], [kv_dim], [kv_dim], [q_dim + 2 kv_dim] */
	struct tfm_mat wo;           /* {q_dim, n_embd} */
	float *bo;                   /* [n_embd] */
	struct tfm_norm_w q_norm, k_norm; /* [head_dim] (per head) or [q_dim]/[kv_dim] */
	struct tfm_mat gate, up, down; /* {n_embd, n_ff} x2, {n_ff, n_embd}; gate.data NULL if not gated */
	float *gate_b, *up_b, *down_b;
	/* mixture of experts: gate/up/down above are expert 0 of the stacked
	 * tensors ({n_embd, n_ff_expert, n_expert} ...), expert e at data + e *
	 * exp_stride[0..2] bytes */
	int moe;
	struct tfm_mat router;       /* {n_embd, n_expert} */
	float *router_b;             /* [n_expert] or NULL */
	float *exp_probs_b;          /* [n_expert]: selection-only bias (deepseek v3), or NULL */
	size_t exp_stride[3];
	struct tfm_mat sh_gate, sh_up, sh_down; /* shared experts, or data NULL */
	float *sh_gate_inp;          /* [n_embd]: sigmoid gate of the shared experts, or NULL */
	/* multi-head latent attention (deepseek2): q through a low-rank pair
	 * (attn_q_a {n_embd, q_lora}, norm, attn_q_b {q_lora, n_head*(nope+rope)})
	 * or wq; attn_kv_a_mqa {n_embd, kv_lora + rope} -> latent (normed) and the
	 * shared rope key; attn_kv_b {kv_lora, n_head*(nope + v_dim)}, whose
	 * nope rows of each head are W_UK and v_dim rows W_UV (read in place);
	 * mla_ukt: W_UK transposed, f32 [n_head][kv_lora][nope], for the
	 * absorbed queries.  llama.cpp's files split kv_b: attn_k_b {nope,
	 * kv_lora, n_head} is W_UK^T as mla_ukt holds it, attn_v_b {kv_lora,
	 * v_dim, n_head} W_UV (kv_b's data is then NULL).  mla_uv: W_UV of head
	 * 0 {kv_lora, v_dim}, head h's at data + h * mla_uv_stride */
	struct tfm_mat q_a, q_b, kv_a, kv_b, mla_uv;
	size_t mla_uv_stride;
	float *mla_ukt;
	struct tfm_norm_w q_a_norm, kv_a_norm;
	float diff_lambda, diff_scale; /* differential attention: lambda, 1 - lambda_init */
	/* mamba mixer (mamba.c): ssm_in {n_embd, 2 d_inner}, ssm_x {d_inner,
	 * dt_rank + 2 d_state}, ssm_dt {dt_rank, d_inner}, ssm_out {d_inner, n_embd} */
	struct tfm_mat ssm_in, ssm_x, ssm_dt, ssm_out;
	struct tfm_mat ssm_ba;       /* gdn.c: b and a per value head {n_embd, 2 nv} */
	float *ssm_in_b, *ssm_out_b;  /* [2 d_inner], [n_embd] or NULL */
	float *ssm_conv_w, *ssm_conv_b; /* [d_inner][d_conv], [d_inner] or NULL */
	float *ssm_dt_b, *ssm_d;     /* [d_inner] */
	float *ssm_a;                /* [d_inner][d_state]: A = -exp(A_log) */
	float *ssm_dt_nw, *ssm_b_nw, *ssm_c_nw; /* jamba's dt/B/C norm weights [dt_rank],
	                                          [d_state], [d_state] or NULL */
	/* mamba2 (mamba2.c): ssm_in {n_embd, 2 d_inner + 2 n_group d_state +
	 * n_head} (z, xBC, dt), conv taps [conv_dim][d_conv] with conv_dim =
	 * d_inner + 2 n_group d_state, ssm_dt_b, ssm_a, ssm_d [n_head], the
	 * gated norm's weight [d_inner] */
	float *ssm_norm_w;
	/* rwkv v4 (rwkv.c): time mixing's lerp weights mix_k, mix_v, mix_r [n_embd],
	 * decay w = -exp(time_decay) (stored so) and bonus u [n_embd], its key,
	 * value, receptance, output {n_embd, n_embd}; channel mixing's lerps
	 * cmix_k, cmix_r, key {n_embd, n_ff}, value {n_ff, n_embd}, receptance
	 * {n_embd, n_embd} */
	float *mix_k, *mix_v, *mix_r, *rw_decay, *rw_first, *cmix_k, *cmix_r;
	struct tfm_mat rw_k, rw_v, rw_r, rw_o, cm_k, cm_v, cm_r;
	/* xLSTM's mLSTM (xlstm.c): q, k {n_embd, qk_dim}, v, output gate o
	 * {n_embd, v_dim}, input / forget gates {n_embd, n_head} with biases
	 * [n_head], the per-head norm's weight [v_dim], out {v_dim, n_embd} */
	struct tfm_mat ml_q, ml_k, ml_v, ml_o, ml_ig, ml_fg, ml_out;
	float *ml_ig_b, *ml_fg_b, *ml_norm_w;
	/* rwkv v5 (rwkv5.c): rw_decay is w = exp(-exp(time_decay)), rw_first
	 * the bonus u, both [n_embd] (v5.1's per-head values spread over their
	 * heads at load); the group norm rw_lnx [n_embd]; v5.2's lerp mix_g
	 * [n_embd] and gate {n_embd, n_embd} (NULL data in v5.1) */
	float *mix_g;
	struct tfm_norm_w rw_lnx;
	struct tfm_mat rw_g;
	/* rwkv v7 (rwkv.c): the six lerps r, w, k, v, a, g mix7 [6][n_embd];
	 * w0, a0, v0 (NULL in layer 0), k_k, k_a, r_k [n_embd]; the low-rank
	 * pairs {n_embd, rank} then {rank, n_embd} of the decay (w1, w2), the
	 * in-context learning rate (a1, a2), the value residual (v1, v2; none
	 * in layer 0) and the gate (g1, g2); rw_k/v/r/o, rw_lnx as v5; the
	 * channel mixing cmix_k, cm_k, cm_v as v4 (no receptance) */
	float *mix7, *w0, *a0, *v0, *k_k, *k_a, *r_k;
	struct tfm_mat w1, w2, a1, a2, v1, v2, g1, g2;
	/* rwkv v6 (rwkv.c): the token shift's lerps mix_x and mix6 [5][n_embd]
	 * (w, k, v, r, g), its low-rank pair mx1 {n_embd, 5 rank}, mx2 {rank,
	 * 5 n_embd} (five {rank, n_embd} one after another); the decay's raw
	 * time_decay in w0 [n_embd] and its pair w1 {n_embd, rank}, w2 {rank,
	 * n_embd}; the bonus rw_first, gate rw_g, rw_k/v/r/o, rw_lnx as v5.2;
	 * the channel mixing as v5 but its lerps as x + (x_prev - x) mix */
	float *mix_x, *mix6;
	struct tfm_mat mx1, mx2;
	/* deberta-v2 (deberta.c): separate position projections of the relative
	 * embeddings, attn_pos_k / attn_pos_q {n_embd, q_dim} with biases, or
	 * data NULL (share_att_key: the content projections) */
	struct tfm_mat pos_k, pos_q;
	float *pos_k_b, *pos_q_b;
	/* encoder-decoder (exec.c): a decoder layer's cross-attention over the
	 * encoded source, its norm, q/o {n_embd, q_dim}, {q_dim, n_embd} and
	 * k/v {n_embd, q_dim} (as many KV heads as heads); data NULL elsewhere */
	struct tfm_norm_w cross_norm;
	struct tfm_mat cq, ck, cv, co;
	float *cbq, *cbk, *cbv, *cbo;
	int64_t window;              /* sliding window (tokens), 0: none */
	int64_t chunk;               /* chunked local attention (tokens), 0: none */
	int rope;                    /* RoPE applies here */
	int rope_local;              /* with inv_freq_local (cs2/sn2 tables) */
};

struct tfm_model {
	struct tfm_spec spec;
	const struct tfm_backend *be;
	char device[32];           /* tfm_model_device's text */
	int n_threads;
	int64_t head_dim, q_dim, kv_dim, n_rot; /* n_rot: rotary dims per head */
	int64_t v_dim, vv_dim;     /* value head size, n_head_kv * v_dim */
	int k_type, v_type;        /* enum tfm_type of the K and V caches (tfm_k_kv_type_ok) */
	int64_t k_rot, v_rot;      /* Walsh-Hadamard block of q and k, of v (0: none; kvrot.c) */
	int mla;                   /* multi-head latent attention */
	struct tfm_mat tok_embd;   /* {n_embd, n_vocab} (n_vocab_src rows when set) */
	struct tfm_mat enc_tok_embd; /* encoder-decoder with embd.enc_own: the encoder's
	                              * {n_embd, n_vocab_src or n_vocab}; else unset */
	struct tfm_mat pos_embd;   /* {n_embd, n_pos}, data NULL if none */
	struct tfm_mat output;     /* {n_io, n_vocab} (token_embd when tied) */
	struct tfm_mat proj_in;    /* {n_io, n_embd} when spec.n_embd_io, else data NULL */
	struct tfm_mat proj_out;   /* {n_embd, n_io}; data NULL with spec.embd_proj */
	float *proj_in_b;          /* [n_embd] with spec.embd_proj, else NULL */
	float *out_b;              /* [n_vocab] output.bias, or NULL */
	struct tfm_norm_w embd_norm, out_norm;
	/* encoders (encode.c): token types, the pooler and the classifier */
	struct tfm_mat type_embd;  /* {n_embd, n_token_types}, data NULL if none */
	struct tfm_mat pooler;     /* {n_embd, n_embd}, data NULL if none */
	float *pooler_b;           /* [n_embd], or NULL (spec.head_dense_bias 0) */
	struct tfm_norm_w pooler_norm; /* spec.head_transform: the LayerNorm after its act */
	struct tfm_mat cls;        /* {n_embd, n_labels}, data NULL if none */
	float *cls_b;              /* [n_labels] */
	struct tfm_mat mlm;        /* masked-LM transform {n_embd, n_embd}, data NULL if none;
				      then mlm_norm and the output head (tied, out_b) */
	float *mlm_b;              /* [n_embd], or NULL (spec.head_dense_bias 0) */
	struct tfm_norm_w mlm_norm;
	float *t5_bias;            /* T5: [n_head][2 t5_span + 1] the bias by distance key - query
				      (tfm_attn_args.rel_bias), from block 0's attn_rel_b */
	int64_t t5_span;
	float *t5_bias_dec;        /* encoder-decoder: the decoder's causal table, as t5_bias */
	struct tfm_norm_w enc_norm; /* encoder-decoder: the encoder stack's final norm (out_norm
				      is the decoder's), w NULL if none */
	struct tfm_mat enc_pos_embd; /* encoder-decoder: the encoder's positions (pos_embd is the
				      decoder's), data NULL if none */
	struct tfm_norm_w enc_embd_norm; /* the encoder's embedding norm (embd_norm: the decoder's) */
	float *rel_emb;            /* deberta: [2 rel_span][n_embd] the relative embeddings, normed
				      (rel_embd_norm) when spec.rel_norm; NULL otherwise */
	float *conv_w;             /* deberta ConvLayer: [k][g][d/g out][d/g in] taps (spec.conv_kernel
				      k, conv_groups g), or NULL */
	float *conv_b;             /* [n_embd] */
	struct tfm_norm_w conv_norm;
	struct tfm_layer *layers;  /* [n_layer] (encoder-decoder: [n_layer + n_layer_dec], the
				      encoder's layers first) */
	float *inv_freq;           /* [n_rot / 2] RoPE frequencies */
	double pos_scale;          /* position multiplier (linear RoPE scaling) */
	double rope_mscale;        /* multiplies cos and sin (YaRN, LongRoPE attention factor) */
	float *inv_freq_long;      /* [n_rot / 2] LongRoPE past the original context, or NULL */
	float *inv_freq_local;     /* [n_rot / 2] window layers' own theta (gemma3), or NULL */
	int64_t rope_orig;         /* LongRoPE, dynamic NTK: original context */
	float *alibi;              /* [n_head] slopes, or NULL */
	float attn_scale;
	int any_rope;
	int all_window;            /* every layer local (window or chunk): the cache can be a ring */
	int64_t max_window;        /* the largest window or chunk */
	void **owned;              /* f32 copies of vectors, freed on close */
	int64_t n_owned, cap_owned;
	/* where the weights came from (open.c) */
	struct tfm_blob blob;
	int have_blob;
	struct tfm_gguf *gguf;     /* owned when parsed here */
	int own_gguf;
	struct tfm_convert *cv;
	void **tensor_bufs;        /* materialised tensors of a converted model */
	int64_t n_tensor_bufs;
	struct tfm_tokenizer *tok;
	/* frees the source above; set by open.c so that load.c (and models built
	 * in memory) do not depend on the file readers */
	void (*release)(struct tfm_model *m);
};

struct tfm_ctx {
	struct tfm_model *m;
	int64_t n_ctx, pos, n_batch;
	int64_t n_slots;           /* the most slots of any layer */
	int ring;                  /* positions wrap around the slots (all layers windowed) */
	int rope_long;             /* this call uses the long LongRoPE factors */
	const int32_t *types;      /* [n] token types of this call (encoders), NULL: all 0 */
	/* encoders, several sequences in one call (tfm_embed_batch): n_seg of
	 * lengths seg[] back to back, each attending only to itself, token t
	 * at position tpos[t] of its own (n_seg 0: one sequence from pos) */
	const int64_t *seg;
	int64_t n_seg, seg_max;
	const int32_t *tpos;
	float *inv_dyn;            /* [n_rot / 2] dynamic NTK: this context's frequencies */
	int64_t dyn_max;           /* dynamic NTK: the length they were made for */
	void *kc, *vc;             /* per layer tfm_k_kv_bytes(slots[l]) (64-byte aligned), the backend's layout of k_type, v_type */
	int64_t *slots;            /* [n_layer] cache slots of each layer (see tfm_ctx_new); owns k_off, v_off */
	size_t *k_off, *v_off;     /* [n_layer] byte offsets of each layer's cache in kc, vc */
	int64_t kv_bytes;          /* sum of tfm_k_kv_bytes over layers (tfm_ctx_kv_bytes) */
	/* encoder-decoder: each decoder layer's cross-attention keys and values
	 * of the encoded source (n_src tokens, up to n_ctx slots) at
	 * ck_off/cv_off[l] in kc, vc (tfm_ctx_cross_bytes); the encoder's
	 * layers share one cache (each stores, attends, and the next
	 * overwrites it); enc_pass: the encoder stack is running */
	size_t *ck_off, *cv_off;   /* [n_layer + n_layer_dec] */
	int64_t n_src, cross_bytes;
	uint64_t src_serial;       /* which encoding this is (tfm_ctx_copy) */
	int enc_pass;
	size_t kbytes, vbytes;     /* the whole of kc, vc */
	/* scratch for one batch of up to n_batch tokens */
	float *x, *xn, *h, *h2;    /* [n_batch][n_embd] */
	float *q, *k, *v, *att;    /* [n_batch][q_dim], [n_batch][kv_dim] x2, [n_batch][q_dim] */
	float *qkv;                /* [n_batch][q_dim + 2 kv_dim] (fused weights only) */
	float *g, *u;              /* [n_batch][n_ff] */
	float *cs, *sn;            /* [n_batch][n_rot / 2] */
	float *cs2, *sn2;          /* [n_batch][n_rot / 2] for rope_local layers */
	/* mixture of experts */
	float *rl;                 /* [n_batch][n_expert] router probabilities */
	float *selw;               /* [n_batch][n_expert_used] weights of the chosen experts */
	int32_t *sel;              /* [n_batch][n_expert_used] their ids */
	int32_t *list;             /* [n_batch] tokens routed to one expert */
	float *wl;                 /* [n_batch] their weights */
	float *xe, *ye;            /* [n_batch][n_embd] gathered inputs, expert outputs */
	/* MLA: [n_batch][q_lora], [n_batch][kv_lora + rope], [n_batch][kv_lora];
	 * the latent keys [n_batch][kv_lora + rope], the absorbed queries
	 * [n_batch][n_head][kv_lora + rope], the latent outputs
	 * [n_batch][n_head][kv_lora], two per-head rows [n_batch][max(kv_lora,
	 * nope, v_dim)] */
	float *mqa, *mkva, *mckv, *mkey, *mq, *mout, *mt1, *mt2;
	float *ssm;                /* mamba.c: recurrent state of the mamba layers, then their scratch */
	int64_t ssm_chunk_min;     /* mamba2, gdn: prefill of this many tokens or more runs the
	                              chunked form (not on ref); tests lower it */
	float *rel;                /* deberta.c: scratch of the disentangled attention, or NULL */
	float *conv;               /* deberta.c: the ConvLayer's input (the embeddings' output) and
				      scratch, [4][n_batch][n_embd], or NULL */
	struct tfm_kexec kx;
	void *mem;                 /* one allocation behind the scratch */
};

/* A named weight for tfm_model_new (same meaning as in struct tfm_gguf_tensor). */
struct tfm_model_tensor {
	const char *name;
	int type;
	int n_dims;
	int64_t ne[4];
	const void *data;
};

/* Build a model from a spec and weights in memory (not copied: they must
 * outlive the model).  Checks the spec (TFM_E_UNSUPPORTED for knobs the
 * executor does not run) and binds tensors by their llama.cpp names. */
int tfm_model_new(struct tfm_model **m, const struct tfm_spec *s,
		  const struct tfm_model_tensor *t, int64_t n_tensors,
		  const struct tfm_model_opts *o);
/* From a GGUF whose tensors are all in memory (not owned: g and its bytes
 * must outlive the model); the spec is given (tfm_model_open takes it from
 * the GGUF and the --set overrides). */
int tfm_model_from_gguf(struct tfm_model **m, const struct tfm_gguf *g, const struct tfm_spec *s,
			const struct tfm_model_opts *o);
/* Frees what tfm_model_new bound (tfm_model_close calls it). */
void tfm_model_free_bound(struct tfm_model *m);
/* The GGUF name of layer l's tensor suffix ("attn_q.weight"): blk.N.suffix,
 * or T5's enc.blk.N / dec.blk.N (load.c).  Returns n. */
const char *tfm_layer_name(const struct tfm_spec *s, char *n, size_t size, int64_t l,
			   const char *suffix);
/* The knobs check alone. */
int tfm_model_check_spec(const struct tfm_spec *s);
/* encode.c: the knobs of an encoder-only spec (TFM_OK for other families). */
int tfm_encoder_check_spec(const struct tfm_spec *s);
/* Threads below this many multiply-adds per kernel call run inline (tests set
 * 0 to force the threaded paths on small models). */
void tfm_ctx_set_par_min(struct tfm_ctx *c, int64_t par_min);

/* kvrot.c: the Walsh-Hadamard block size of a cache of type for rows of dim
 * (keys: the largest power of two >= 64 dividing dim; values: 64), 0 when
 * such a cache is not rotated (not a block type, dim not a multiple of 64). */
int64_t tfm_kvrot_block(int type, int64_t dim, int keys);
/* x[rows][dim] = each block of n of each row times the orthonormal n x n
 * Walsh-Hadamard matrix (its own inverse), in place. */
void tfm_kvrot(float *x, int64_t rows, int64_t dim, int64_t n);

#endif
