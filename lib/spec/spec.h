/* spec.h: the variant spec.  A model is a spec plus weights; the spec is a
 * plain struct of knobs covering every variant of DESIGN.md section 3.
 * Architecture presets only fill knobs; one block executor runs any spec.
 * Knobs the executor does not run yet are still represented here, and the
 * executor refuses them with a clear "not supported yet" error. */
#ifndef TFM_SPEC_H
#define TFM_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct tfm_gguf;

#define TFM_MAX_LAYERS 512
#define TFM_MAX_ROPE_FACTORS 256

enum tfm_family { TFM_FAMILY_DECODER = 0, TFM_FAMILY_ENCODER, TFM_FAMILY_ENCDEC };
/* GDN: Gated DeltaNet linear attention (qwen3_next; lib/model/gdn.c);
 * MLSTM: xLSTM's mLSTM (lib/model/xlstm.c) */
enum tfm_layer_kind { TFM_LAYER_ATTN = 0, TFM_LAYER_MAMBA, TFM_LAYER_MAMBA2, TFM_LAYER_RWKV,
		      TFM_LAYER_GDN, TFM_LAYER_MLSTM };
enum tfm_norm_type { TFM_NORM_RMS = 0, TFM_NORM_LAYER, TFM_NORM_NONE };
/* Where norms sit around each sublayer:
 *  PRE:      x = x + f(norm(x))                       (llama, gpt2)
 *  POST:     x = norm(x + f(x))                       (bert, original transformer)
 *  SANDWICH: x = x + post_norm(f(norm(x)))            (gemma2/3)
 *  POST_IN:  x = x + norm(f(x))                       (olmo2: norm inside the residual) */
enum tfm_norm_place { TFM_NORM_PRE = 0, TFM_NORM_POST, TFM_NORM_SANDWICH, TFM_NORM_POST_IN };
enum tfm_act { TFM_ACT_SILU = 0, TFM_ACT_GELU, TFM_ACT_GELU_TANH, TFM_ACT_RELU,
	       TFM_ACT_RELU2, TFM_ACT_GELU_QUICK };
/* Positions added to the embeddings. */
enum tfm_pos_embd { TFM_POS_EMBD_NONE = 0, TFM_POS_EMBD_LEARNED, TFM_POS_EMBD_SINUSOIDAL };
/* Positions inside attention. */
/* DEBERTA: disentangled attention (He et al. 2021): content-to-position and
 * position-to-content scores from shared relative-position embeddings
 * (lib/model/deberta.c; the rel.* knobs) */
enum tfm_pos_attn { TFM_POS_NONE = 0, TFM_POS_ROPE, TFM_POS_ALIBI, TFM_POS_T5, TFM_POS_DEBERTA };
enum tfm_rope_scaling { TFM_ROPE_SCALE_NONE = 0, TFM_ROPE_SCALE_LINEAR, TFM_ROPE_SCALE_NTK,
			TFM_ROPE_SCALE_DYNAMIC, TFM_ROPE_SCALE_YARN, TFM_ROPE_SCALE_LLAMA3,
			TFM_ROPE_SCALE_LONGROPE };
enum tfm_mask { TFM_MASK_CAUSAL = 0, TFM_MASK_BIDIR, TFM_MASK_WINDOW, TFM_MASK_CHUNKED };
/* HEAD: per-head norm with a weight; FULL: over all heads; ROPE_RMS: each
 * head divided by its RMS (eps norm.eps), no weight, on RoPE layers only
 * (llama4's L2Norm, applied after the rotation, which keeps the RMS) */
enum tfm_qk_norm { TFM_QK_NORM_NONE = 0, TFM_QK_NORM_HEAD, TFM_QK_NORM_FULL, TFM_QK_NORM_ROPE_RMS };
enum tfm_moe_gate { TFM_MOE_GATE_SOFTMAX = 0, TFM_MOE_GATE_SIGMOID };
/* classifier: one label set per sequence; token: per token (NER) */
enum tfm_head { TFM_HEAD_LM = 0, TFM_HEAD_CLASSIFIER, TFM_HEAD_EMBED, TFM_HEAD_TOKEN };
/* Sentence-transformers' pooling modes: the first token, the mean, the
 * per-dimension max, the sum / sqrt(n), the last token. */
enum tfm_pooling { TFM_POOL_NONE = 0, TFM_POOL_CLS, TFM_POOL_MEAN, TFM_POOL_LAST, TFM_POOL_MAX,
		   TFM_POOL_MEAN_SQRT };
enum tfm_conv_act { TFM_CONV_ACT_TANH = 0, TFM_CONV_ACT_SILU, TFM_CONV_ACT_GELU,
		    TFM_CONV_ACT_GELU_TANH, TFM_CONV_ACT_RELU };
enum tfm_pooler_act { TFM_POOLER_TANH = 0, TFM_POOLER_RELU, TFM_POOLER_GELU, TFM_POOLER_SILU };

struct tfm_spec {
	char arch[32];            /* preset name: "llama", "gemma2", ... */
	char gguf_arch[32];       /* llama.cpp's general.architecture for it */
	int family;               /* enum tfm_family */

	/* sizes */
	int64_t n_vocab, n_embd, n_layer, n_ctx_train;
	int64_t n_layer_dec;      /* encoder-decoder: decoder layers (n_layer = encoder) */
	int64_t n_vocab_src;      /* encoder-decoder: the token tables' rows when they are not
	                             n_vocab, the decoder's vocabulary and logits (Marian's
	                             vocab_size beside decoder_vocab_size); 0: n_vocab */
	int64_t n_layer_groups;   /* albert: the layers share the weights of this many blocks
	                             (tfm_spec_layer_block); 0: every layer its own */

	/* embeddings */
	float embd_scale;         /* 0 or 1: none; gemma: sqrt(n_embd) */
	int pos_embd;             /* enum tfm_pos_embd */
	int64_t pos_offset;       /* opt: learned positions start at 2 */
	int64_t n_token_types;    /* bert: 2 */
	int embd_norm;            /* bloom, bert: a norm right after the embeddings */
	int tied_output;          /* output head shares token_embd */
	int enc_embd;             /* encoder-decoder: the encoder has a token table of its own
	                             (enc.token_embd); token_embd is the decoder's (Marian's
	                             share_encoder_decoder_embeddings false) */
	int64_t n_embd_io;        /* 0: n_embd; else token embeddings and head are this wide, with
	                             project_in/project_out to and from n_embd (OPT-350m) */
	int embd_proj;            /* with n_embd_io: word, position and token-type embeddings and
	                             their norm are n_embd_io wide, then project_in (with bias)
	                             maps them to n_embd; no project_out (ELECTRA) */
	int embd_proj_first;      /* with embd_proj: project_in (no bias) comes before the norm,
	                             which is n_embd wide (DeBERTa's embed_proj) */

	/* attention */
	int64_t n_head, n_head_kv, head_dim;   /* head_dim may differ from n_embd/n_head */
	int64_t q_lora_rank, kv_lora_rank;     /* MLA (deepseek); 0 = not MLA */
	int64_t qk_rope_dim, qk_nope_dim, v_head_dim;
	double mla_norm_eps;      /* eps of the q_a / kv_a latent norms (transformers: 1e-6 always) */
	int attn_bias_qkv, attn_bias_out;      /* biases present */
	int attn_bias_qv;         /* q and v biases, no k bias (DeBERTa v1's q_bias, v_bias) */
	float attn_scale;         /* 0: 1/sqrt(head_dim) */
	int attn_scale_inv_layer; /* gpt2 scale_attn_by_inverse_layer_idx: layer l also / (l + 1) */
	float attn_softcap;       /* 0: none (gemma2: 50) */
	int qk_norm;              /* enum tfm_qk_norm */
	int mask;                 /* enum tfm_mask (the default for all layers) */
	int64_t window;           /* sliding window size (tokens), 0 = none; with mask bidir
	                             (encoders) a query sees keys within window / 2 either side */
	int64_t chunk;            /* chunked attention size, 0 = none: query p sees keys
	                             j <= p of its own chunk, j >= floor(p / chunk) chunk */
	float attn_temp_scale;    /* llama4 temperature tuning of NoPE layers: 0 off, else q is
	                             scaled by 1 + attn_temp_scale log1p(floor((p+1) / attn_temp_floor)) */
	int64_t attn_temp_floor;
	/* A layer is local when layer_window[i]: it uses the sliding window
	 * when window > 0, the chunk when chunk > 0 (never both);
	 * mask is the base mask (CAUSAL or BIDIR); WINDOW means every layer is
	 * windowed (mistral), and then layer_window[] is all 1 as well.
	 * Encoder-decoder: encoder layers are always bidirectional and mask
	 * applies to the decoder's self-attention. */
	int diff_attn;            /* differential attention */
	int attn_out_gate;        /* the query projection gives each head [q | gate] (2 head_dim
	                             rows per head); the output is attn * sigmoid(gate) before
	                             the output projection (qwen3_next) */
	int linear_attn;          /* linear attention */
	int cross_attn;           /* decoder layers attend to the encoder (enc-dec) */

	/* positions in attention */
	int pos_attn;             /* enum tfm_pos_attn */
	double rope_theta;
	double rope_theta_local;  /* theta of sliding-window layers, which then run
	                             without rope scaling (gemma3); 0: rope_theta */
	int64_t rope_dims;        /* rotary dims per head (partial rotary) */
	int rope_interleaved;     /* 1: pairs (2i, 2i+1) (GPT-J / Meta llama layout);
	                             0: halves (i, i + d/2) (NeoX / HF layout) */
	int rope_scaling;         /* enum tfm_rope_scaling */
	double rope_factor;
	int64_t rope_orig_ctx;    /* original_max_position_embeddings */
	/* yarn_attn_factor 0: computed, 0.1 ln(factor) + 1; yarn_mscale and
	 * yarn_mscale_all_dim are deepseek's (0: unused). */
	double yarn_beta_fast, yarn_beta_slow, yarn_attn_factor, yarn_mscale, yarn_mscale_all_dim;
	double llama3_low_freq_factor, llama3_high_freq_factor;
	int64_t n_rope_factors;   /* LongRoPE: entries of each factor list */
	float rope_long_factors[TFM_MAX_ROPE_FACTORS];
	float rope_short_factors[TFM_MAX_ROPE_FACTORS];
	double alibi_max_bias;    /* 8 in bloom/mpt */
	float alibi_scale;        /* bias multiplier, 0: 1 (falcon: 1/sqrt(head_dim), like q.k) */
	int64_t t5_buckets, t5_max_distance;
	/* DeBERTa's relative positions (pos_attn DEBERTA): rel_embd has 2 rel_span
	 * rows; the relative position q - k is log-bucketed when rel_buckets > 0
	 * (make_log_bucket_position with rel_max_pos) and its row index is
	 * clamp(r + rel_span, 0, 2 rel_span - 1); c2p / p2c: which terms;
	 * share_key: the position keys and queries are the content projections
	 * of the relative embeddings (else attn_pos_k / attn_pos_q); rel_norm:
	 * rel_embd passes the LayerNorm rel_embd_norm first */
	int64_t rel_span, rel_buckets, rel_max_pos;
	int rel_c2p, rel_p2c, rel_share_key, rel_norm;
	int rel_pos_k_bias;       /* attn_pos_k has a bias (v2's pos_key_proj; v1's pos_proj none) */
	/* DeBERTa-v2's ConvLayer (conv_kernel_size > 0): after the first layer
	 * x = LayerNorm(x + act(conv(e))), e the embeddings' output, a Conv1d of
	 * conv_kernel taps (odd; zero padding) in conv_groups groups, act enum
	 * tfm_conv_act; enc_conv, enc_conv_norm */
	int64_t conv_kernel, conv_groups;
	int conv_act;

	/* norms */
	int norm;                 /* enum tfm_norm_type */
	double norm_eps;
	int norm_bias;            /* LayerNorm with bias */
	int norm_plus_one;        /* gemma: weight stored as w-1 */
	int norm_no_affine;       /* norms have no weight or bias (olmo; opt layer_norm_elementwise_affine=false) */
	int norm_place;           /* enum tfm_norm_place */
	int parallel_residual;    /* x + attn(ln(x)) + ffn(ln(x)) (gpt-neox, falcon, phi) */
	int residual_from_norm;   /* bloom apply_residual_connection_post_layernorm: ln(x) + f(ln(x)) */
	float residual_scale;     /* 0 or 1: none; granite: x + m * f(x) */
	int shared_attn_ffn_norm; /* parallel residual with one norm (falcon-7b, gpt-j) */
	int final_norm;           /* a norm before the head */
	int no_first_attn_norm;   /* layer 0 has no attention norm: its input is the normed
	                             embeddings (ModernBERT) */

	/* feed-forward */
	int act;                  /* enum tfm_act */
	int gated;                /* act(gate(x)) * up(x) */
	int64_t n_ff;
	int ffn_bias;

	/* mixture of experts */
	int64_t n_expert, n_expert_used, n_expert_shared;
	int64_t n_ff_expert, n_ff_shared;
	int moe_gate;             /* enum tfm_moe_gate */
	int moe_norm_topk;        /* renormalise the top-k weights */
	int64_t moe_n_group, moe_topk_group;
	double moe_routed_scale;
	int64_t moe_first_dense;  /* first k layers are dense */
	int64_t moe_every;        /* every k-th layer is MoE (1 = all) */
	int moe_shared_gate;      /* sigmoid(x . w) gate on the shared experts (qwen2_moe) */
	int moe_gate_bias;        /* routing bias added for selection only (deepseek v3) */
	int moe_weight_in;        /* the routing weight scales the expert's input, not its
	                             output (llama4) */
	/* n_ff_shared is the total width of the shared experts
	 * (deepseek: n_expert_shared * n_ff_expert). */

	/* state-space and RWKV */
	int64_t ssm_d_state, ssm_d_conv, ssm_d_inner, ssm_dt_rank, ssm_n_head, ssm_n_group;
	int ssm_conv_bias, ssm_bias; /* conv1d bias; in/out projection biases */
	/* Gated DeltaNet (layer kind GDN) reads ssm_n_group key heads and
	 * ssm_n_head value heads, ssm_d_state the key head size, ssm_d_inner
	 * all value heads' width, ssm_d_conv the conv's taps */
	int ssm_dt_norm;          /* jamba, falcon_mamba: RMS norms on dt, B and C */
	int ssm_norm_w;           /* with ssm_dt_norm: the norms have weights (jamba's
	                             ssm_dt_norm, ssm_b_norm, ssm_c_norm); else none (falcon_mamba) */
	double ssm_norm_eps;      /* their eps (falcon_mamba's mixer_rms_eps; 0: norm.eps) */
	double ssm_dt_min, ssm_dt_max; /* mamba2: dt clamped to [min, max] after softplus
	                             (time_step_limit); max 0: no upper limit */
	int rwkv_version;         /* 4, 5, 6, 7 */
	int rwkv_minor;           /* v5: 1 (rwkv.cpp's 5.1: decay and bonus per head, no gate),
	                           * 2 (5.2: per channel, and a SiLU gate on the output) */
	int64_t rwkv_head_size;   /* v5+: channels per WKV head (n_embd / head_size heads) */
	/* v7: ranks of the low-rank projections of the decay (w), the
	 * in-context learning rate (a), the value residual (v) and the gate (g);
	 * v6: rwkv_lora_w the decay's (time_decay_extra_dim), rwkv_lora_mix
	 * the token shift's (time_mix_extra_dim, each of its five lerps) */
	int64_t rwkv_lora_w, rwkv_lora_a, rwkv_lora_v, rwkv_lora_g, rwkv_lora_mix;
	int64_t rwkv_rescale;     /* rwkv: rescale_every (halve the state every R layers); 0: none */
	/* xLSTM's mLSTM layers (ssm.n_head heads): q and k of xlstm_qk_dim in all
	 * (int(hidden * qk_dim_factor)), v and the output gate of xlstm_v_dim;
	 * input / forget gate pre-activations soft-capped at xlstm_gate_cap
	 * (cap tanh(x / cap); 0: none); xlstm_eps the cell's denominator eps
	 * (config eps; norm.eps is the RMS and per-head norms') */
	int64_t xlstm_qk_dim, xlstm_v_dim;
	float xlstm_gate_cap;
	double xlstm_eps;

	/* heads */
	float final_softcap;      /* 0: none (gemma2: 30) */
	int head;                 /* enum tfm_head */
	int pooling;              /* enum tfm_pooling */
	int64_t n_labels;
	int pooler;               /* bert: dense + tanh pooler on the first token */
	int pooler_act;           /* enum tfm_pooler_act (distilbert's pre_classifier: relu) */
	int mlm_head;             /* encoders: a masked-LM head (dense, norm, tied decoder + bias) */
	int head_transform;       /* ModernBERT's prediction head: dense, pooler_act, LayerNorm
	                             before the classifier (after pooling), before the token
	                             classifier (per token: cls, cls.norm) and before the masked-LM
	                             decoder (mlm.dense, mlm.norm; output.bias only with head_bias) */
	int head_dense_bias;      /* the pooler's and the masked-LM transform's dense has a bias
	                             (default 1; ModernBERT's classifier_bias) */
	int normalize;            /* embedding head: L2-normalise (sentence-transformers Normalize) */
	int multi_label;          /* classifier: sigmoid per label (problem_type multi_label_classification) */
	int64_t max_tokens;       /* embedding head: sentence-transformers max_seq_length; 0: n_ctx_train */
	int head_bias;            /* the LM head has a bias [n_vocab] (phi, gpt-j) */
	float head_scale;         /* 0 or 1: none; scales the final hidden state (so the
	                             logits): t5 tied n_embd^-0.5, cohere logit_scale */

	/* per-layer pattern.  Encoder-decoder: encoder layers [0, n_layer), then
	 * decoder layers [n_layer, n_layer + n_layer_dec). */
	uint8_t layer_kind[TFM_MAX_LAYERS];   /* enum tfm_layer_kind */
	uint8_t layer_moe[TFM_MAX_LAYERS];    /* 1: MoE FFN */
	uint8_t layer_window[TFM_MAX_LAYERS]; /* 1: local attention in this layer (the sliding
	                                         window, or the chunk when attn.chunk is set) */
	uint8_t layer_rope[TFM_MAX_LAYERS];   /* 1: RoPE applies; 0: NoPE layer */

	/* special tokens (when known) */
	int32_t bos_id, eos_id, pad_id;
	int32_t dec_start_id;     /* encoder-decoder: the decoder's first token (T5: pad) */
};

/* Defaults: a pre-norm RMSNorm decoder with RoPE (theta 10000), eps 1e-5. */
void tfm_spec_init(struct tfm_spec *s);
/* From a Hugging Face config.json object; an unknown model_type is
 * TFM_E_UNSUPPORTED naming it. */
int tfm_spec_from_config(struct tfm_spec *s, const json_t *config);
/* From a GGUF: the tfm.* keys when present, else llama.cpp's own keys. */
int tfm_spec_from_gguf(struct tfm_spec *s, const struct tfm_gguf *g);
/* Write the tfm.* keys and llama.cpp's keys for the architecture. */
int tfm_spec_to_gguf(const struct tfm_spec *s, struct tfm_gguf *g);
/* --set KEY=VALUE (e.g. "attn.window=256", "rope.scaling=yarn"). */
int tfm_spec_set(struct tfm_spec *s, const char *key_value);
/* Consistency checks (head dims divide, counts positive, ...). */
int tfm_spec_validate(const struct tfm_spec *s);
/* The spec as a JSON object (for tfm-inspect -F json). */
json_t *tfm_spec_to_json(const struct tfm_spec *s);

/* Layers in the per-layer arrays (n_layer + n_layer_dec). */
int64_t tfm_spec_n_layers(const struct tfm_spec *s);
/* The block whose weights layer l runs: with n_layer_groups G, as ALBERT's
 * encoder computes it, int(l / (n_layer / G)) in floating point; else l. */
int64_t tfm_spec_layer_block(const struct tfm_spec *s, int64_t l);
/* Enum value <-> name ("rms", "yarn", ...) for a knob key such as
 * "rope.scaling"; NULL / -1 when unknown. */
const char *tfm_spec_enum_name(const char *key, int value);
int tfm_spec_enum_value(const char *key, const char *name);
/* The knob keys, for --help texts and docs: NULL-terminated list. */
const char *const *tfm_spec_keys(void);

/* Counts computed from the spec alone.  embedding: token, position and
 * token-type embedding tables; non_embedding = total - embedding.  Parts:
 * attn (projections, biases, QK norms, relative-position tables), ffn (dense,
 * experts, routers, shared experts), norms (every norm incl. embedding and
 * final), embd (the tables above), head (untied output, pooler,
 * classifier), ssm (mamba / rwkv mixers).  total = sum of the parts.
 * active: total minus the routed experts a token does not use. */
struct tfm_counts {
	int64_t total, active, embedding, non_embedding;
	int64_t attn, ffn, norms, embd, head, ssm; /* per part */
	double kv_bytes_per_token;   /* at the given KV element size */
	double flops_per_token;      /* forward, 2 * active matmul params + attention at ctx */
	double state_bytes;          /* constant SSM / RWKV state (f32), in kv_bytes */
};
/* kv_elem_bytes: 4 for f32, 2 for f16, 34/32 for q8_0; ctx for the attention
 * FLOPs and the window cap. */
int tfm_spec_count(const struct tfm_spec *s, double kv_elem_bytes, int64_t ctx,
		   struct tfm_counts *c);
/* KV-cache bytes for a context of ctx tokens (window layers cap at the window;
 * SSM/RWKV layers have a constant state). */
double tfm_spec_kv_bytes(const struct tfm_spec *s, double kv_elem_bytes, int64_t ctx);
/* Encoder-decoder models: bytes of the cross-attention keys and values kept
 * for a source of n_src tokens (every decoder layer); 0 for other models.
 * Not in tfm_spec_kv_bytes, which is the self-attention cache. */
double tfm_spec_cross_kv_bytes(const struct tfm_spec *s, double kv_elem_bytes, int64_t n_src);

#endif
