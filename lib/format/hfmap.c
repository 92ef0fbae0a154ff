/* hfmap.c: the Hugging Face -> GGUF tensor-name tables and the weight
 * transforms of hfmap.h.  Names and transforms follow llama.cpp's
 * convert_hf_to_gguf.py (gguf-py tensor_mapping.py); formats/tensor-names.md
 * lists every row.  Tables are data: one per architecture, first match wins. */
#include "format/hfmap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "spec/spec.h"
#include "tfm.h"

/* Pattern language (both columns):
 *   '#'  one or more digits: the block index, copied to the output
 *   '@'  one or more digits: the expert index, dropped from the output
 *        (experts are stacked) and returned in the flags
 *   '$'  "weight" or "bias", the end of the name, copied to the output
 *   '*'  (hf column only) anything to the end of the name
 * Everything else matches itself. */
struct ent {
	const char *hf;
	const char *gguf; /* NULL with TFM_HFMAP_SKIP */
	unsigned flags;
};

#define SKIP TFM_HFMAP_SKIP
#define END {NULL, NULL, 0}

/* Buffers some checkpoints carry, in every architecture: names ending so. */
static const char *const common_skip[] = {"rotary_emb.inv_freq", "position_ids", NULL};

/* ---- the llama family (prefix "model.") ---- */
static const struct ent llama_base[] = {
	{"embed_tokens.$", "token_embd.$", 0},
	{"norm.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.self_attn.v_proj.$", "blk.#.attn_v.$", 0},
	{"layers.#.self_attn.o_proj.$", "blk.#.attn_output.$", 0},
	{"layers.#.post_attention_layernorm.$", "blk.#.ffn_norm.$", 0},
	{"layers.#.mlp.gate_proj.$", "blk.#.ffn_gate.$", 0},
	{"layers.#.mlp.up_proj.$", "blk.#.ffn_up.$", 0},
	{"layers.#.mlp.down_proj.$", "blk.#.ffn_down.$", 0},
	END
};
/* llama.cpp's LlamaModel permutes Q and K (weights and biases) so that its
 * NORM rope (pairs 2i, 2i+1) matches HF's half-split rope. */
static const struct ent qk_permuted[] = {
	{"layers.#.self_attn.q_proj.$", "blk.#.attn_q.$", TFM_HFMAP_PERMUTE_Q},
	{"layers.#.self_attn.k_proj.$", "blk.#.attn_k.$", TFM_HFMAP_PERMUTE_K},
	END
};
/* Architectures llama.cpp runs with NEOX rope keep HF's layout. */
static const struct ent qk_plain[] = {
	{"layers.#.self_attn.q_proj.$", "blk.#.attn_q.$", 0},
	{"layers.#.self_attn.k_proj.$", "blk.#.attn_k.$", 0},
	END
};
/* diffllama's lambda vectors (no .weight suffix in the checkpoint) */
static const struct ent diff_lambda[] = {
	{"layers.#.self_attn.lambda_q1", "blk.#.attn_lambda_q1", 0},
	{"layers.#.self_attn.lambda_k1", "blk.#.attn_lambda_k1", 0},
	{"layers.#.self_attn.lambda_q2", "blk.#.attn_lambda_q2", 0},
	{"layers.#.self_attn.lambda_k2", "blk.#.attn_lambda_k2", 0},
	END
};
static const struct ent qk_norm[] = {
	{"layers.#.self_attn.q_norm.$", "blk.#.attn_q_norm.$", 0},
	{"layers.#.self_attn.k_norm.$", "blk.#.attn_k_norm.$", 0},
	END
};
static const struct ent olmo2_norms[] = {
	{"layers.#.post_attention_layernorm.$", "blk.#.post_attention_norm.$", 0},
	{"layers.#.post_feedforward_layernorm.$", "blk.#.post_ffw_norm.$", 0},
	END
};
/* gemma stores RMSNorm weights as w-1; llama.cpp adds the 1 back. */
static const struct ent gemma_norms[] = {
	{"norm.$", "output_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.post_attention_layernorm.$", "blk.#.ffn_norm.$", TFM_HFMAP_ADD_ONE},
	END
};
static const struct ent gemma2_norms[] = {
	{"norm.$", "output_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.post_attention_layernorm.$", "blk.#.post_attention_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.pre_feedforward_layernorm.$", "blk.#.ffn_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.post_feedforward_layernorm.$", "blk.#.post_ffw_norm.$", TFM_HFMAP_ADD_ONE},
	/* gemma3-style per-head q/k norms are w-1 too */
	{"layers.#.self_attn.q_norm.$", "blk.#.attn_q_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.self_attn.k_norm.$", "blk.#.attn_k_norm.$", TFM_HFMAP_ADD_ONE},
	END
};
static const struct ent phi3_fused[] = {
	{"layers.#.self_attn.qkv_proj.$", "blk.#.attn_qkv.$", TFM_HFMAP_FUSED_QKV},
	{"layers.#.mlp.gate_up_proj.$", "blk.#.ffn_up.$", TFM_HFMAP_FUSED_GATE_UP},
	END
};
static const struct ent mixtral_moe[] = {
	{"layers.#.block_sparse_moe.gate.$", "blk.#.ffn_gate_inp.$", 0},
	{"layers.#.block_sparse_moe.experts.@.w1.$", "blk.#.ffn_gate_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.block_sparse_moe.experts.@.w2.$", "blk.#.ffn_down_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.block_sparse_moe.experts.@.w3.$", "blk.#.ffn_up_exps.$", TFM_HFMAP_EXPERT},
	END
};
/* qwen2_moe, qwen3_moe, deepseek: experts under mlp.experts, shared experts. */
static const struct ent mlp_moe[] = {
	{"layers.#.mlp.gate.e_score_correction_bias", "blk.#.exp_probs_b.bias", 0},
	{"layers.#.mlp.gate.$", "blk.#.ffn_gate_inp.$", 0},
	{"layers.#.mlp.experts.@.gate_proj.$", "blk.#.ffn_gate_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.mlp.experts.@.up_proj.$", "blk.#.ffn_up_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.mlp.experts.@.down_proj.$", "blk.#.ffn_down_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.mlp.shared_expert.gate_proj.$", "blk.#.ffn_gate_shexp.$", 0},
	{"layers.#.mlp.shared_expert.up_proj.$", "blk.#.ffn_up_shexp.$", 0},
	{"layers.#.mlp.shared_expert.down_proj.$", "blk.#.ffn_down_shexp.$", 0},
	{"layers.#.mlp.shared_expert_gate.$", "blk.#.ffn_gate_inp_shexp.$", 0},
	{"layers.#.mlp.shared_experts.gate_proj.$", "blk.#.ffn_gate_shexp.$", 0},
	{"layers.#.mlp.shared_experts.up_proj.$", "blk.#.ffn_up_shexp.$", 0},
	{"layers.#.mlp.shared_experts.down_proj.$", "blk.#.ffn_down_shexp.$", 0},
	END
};
/* Llama 4: experts stacked in two 3-D parameters in bmm layout (x @ W):
 * gate_up_proj [E][n_embd][2 n_ff] becomes ffn_gate_exps and ffn_up_exps
 * [E][n_ff][n_embd], down_proj [E][n_ff][n_embd] ffn_down_exps
 * [E][n_embd][n_ff], as llama.cpp's converter splits and transposes them.
 * The vision tower and projector of Llama4ForConditionalGeneration are not
 * converted (the text model is). */
static const struct ent llama4[] = {
	{"layers.#.feed_forward.router.$", "blk.#.ffn_gate_inp.$", 0},
	{"layers.#.feed_forward.experts.gate_up_proj", "blk.#.ffn_gate_exps.weight",
	 TFM_HFMAP_EXPERTS_T | TFM_HFMAP_SPLIT_GATE_UP},
	{"layers.#.feed_forward.experts.down_proj", "blk.#.ffn_down_exps.weight", TFM_HFMAP_EXPERTS_T},
	{"layers.#.feed_forward.shared_expert.gate_proj.$", "blk.#.ffn_gate_shexp.$", 0},
	{"layers.#.feed_forward.shared_expert.up_proj.$", "blk.#.ffn_up_shexp.$", 0},
	{"layers.#.feed_forward.shared_expert.down_proj.$", "blk.#.ffn_down_shexp.$", 0},
	{"layers.#.feed_forward.gate_proj.$", "blk.#.ffn_gate.$", 0},
	{"layers.#.feed_forward.up_proj.$", "blk.#.ffn_up.$", 0},
	{"layers.#.feed_forward.down_proj.$", "blk.#.ffn_down.$", 0},
	{"vision_model.*", NULL, SKIP},
	{"multi_modal_projector.*", NULL, SKIP},
	END
};
/* deepseek_v2/v3 multi-head latent attention. */
static const struct ent mla[] = {
	{"layers.#.self_attn.q_proj.$", "blk.#.attn_q.$", 0},
	{"layers.#.self_attn.q_a_proj.$", "blk.#.attn_q_a.$", 0},
	{"layers.#.self_attn.q_a_layernorm.$", "blk.#.attn_q_a_norm.$", 0},
	{"layers.#.self_attn.q_b_proj.$", "blk.#.attn_q_b.$", 0},
	{"layers.#.self_attn.kv_a_proj_with_mqa.$", "blk.#.attn_kv_a_mqa.$", 0},
	{"layers.#.self_attn.kv_a_layernorm.$", "blk.#.attn_kv_a_norm.$", 0},
	{"layers.#.self_attn.kv_b_proj.$", "blk.#.attn_kv_b.$", 0},
	END
};

/* ---- GPT-2 (Conv1D weights are [in][out]) ---- */
static const struct ent gpt2[] = {
	{"h.#.attn.bias", NULL, SKIP},
	{"h.#.attn.masked_bias", NULL, SKIP},
	{"wte.$", "token_embd.$", 0},
	{"wpe.$", "position_embd.$", 0},
	{"h.#.ln_1.$", "blk.#.attn_norm.$", 0},
	{"h.#.attn.c_attn.weight", "blk.#.attn_qkv.weight", TFM_HFMAP_TRANSPOSE | TFM_HFMAP_FUSED_QKV},
	{"h.#.attn.c_attn.bias", "blk.#.attn_qkv.bias", TFM_HFMAP_FUSED_QKV},
	{"h.#.attn.c_proj.weight", "blk.#.attn_output.weight", TFM_HFMAP_TRANSPOSE},
	{"h.#.attn.c_proj.bias", "blk.#.attn_output.bias", 0},
	{"h.#.ln_2.$", "blk.#.ffn_norm.$", 0},
	{"h.#.mlp.c_fc.weight", "blk.#.ffn_up.weight", TFM_HFMAP_TRANSPOSE},
	{"h.#.mlp.c_fc.bias", "blk.#.ffn_up.bias", 0},
	{"h.#.mlp.c_proj.weight", "blk.#.ffn_down.weight", TFM_HFMAP_TRANSPOSE},
	{"h.#.mlp.c_proj.bias", "blk.#.ffn_down.bias", 0},
	{"ln_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

/* ---- GPT-NeoX (Pythia): fused QKV interleaved per head ---- */
static const struct ent gpt_neox[] = {
	{"layers.#.attention.bias", NULL, SKIP},
	{"layers.#.attention.masked_bias", NULL, SKIP},
	{"embed_in.$", "token_embd.$", 0},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.attention.query_key_value.$", "blk.#.attn_qkv.$", TFM_HFMAP_QKV_HEADS},
	{"layers.#.attention.dense.$", "blk.#.attn_output.$", 0},
	{"layers.#.post_attention_layernorm.$", "blk.#.ffn_norm.$", 0},
	{"layers.#.mlp.dense_h_to_4h.$", "blk.#.ffn_up.$", 0},
	{"layers.#.mlp.dense_4h_to_h.$", "blk.#.ffn_down.$", 0},
	{"final_layer_norm.$", "output_norm.$", 0},
	{"embed_out.$", "output.$", 0},
	END
};

/* ---- OPT (llama.cpp has no OPT; names follow the same scheme) ---- */
static const struct ent opt[] = {
	{"embed_tokens.$", "token_embd.$", 0},
	{"embed_positions.$", "position_embd.$", 0},
	{"project_in.$", "project_in.$", 0},
	{"project_out.$", "project_out.$", 0},
	{"layers.#.self_attn_layer_norm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.self_attn.q_proj.$", "blk.#.attn_q.$", 0},
	{"layers.#.self_attn.k_proj.$", "blk.#.attn_k.$", 0},
	{"layers.#.self_attn.v_proj.$", "blk.#.attn_v.$", 0},
	{"layers.#.self_attn.out_proj.$", "blk.#.attn_output.$", 0},
	{"layers.#.final_layer_norm.$", "blk.#.ffn_norm.$", 0},
	{"layers.#.fc1.$", "blk.#.ffn_up.$", 0},
	{"layers.#.fc2.$", "blk.#.ffn_down.$", 0},
	{"final_layer_norm.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

/* ---- BLOOM: ALiBi, embedding norm, QKV interleaved per head ---- */
static const struct ent bloom[] = {
	{"word_embeddings.$", "token_embd.$", 0},
	{"word_embeddings_layernorm.$", "token_embd_norm.$", 0},
	{"h.#.input_layernorm.$", "blk.#.attn_norm.$", 0},
	{"h.#.self_attention.query_key_value.$", "blk.#.attn_qkv.$", TFM_HFMAP_QKV_HEADS},
	{"h.#.self_attention.dense.$", "blk.#.attn_output.$", 0},
	{"h.#.post_attention_layernorm.$", "blk.#.ffn_norm.$", 0},
	{"h.#.mlp.dense_h_to_4h.$", "blk.#.ffn_up.$", 0},
	{"h.#.mlp.dense_4h_to_h.$", "blk.#.ffn_down.$", 0},
	{"ln_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

/* ---- Falcon: QKV grouped per KV head ---- */
static const struct ent falcon[] = {
	{"word_embeddings.$", "token_embd.$", 0},
	{"h.#.input_layernorm.$", "blk.#.attn_norm.$", 0},
	/* falcon-40b style two norms: llama.cpp's graph feeds attn_norm_2 to
	 * attention and attn_norm to the FFN, so ln_attn is attn_norm_2 */
	{"h.#.ln_attn.$", "blk.#.attn_norm_2.$", 0},
	{"h.#.ln_mlp.$", "blk.#.attn_norm.$", 0},
	{"h.#.post_attention_layernorm.$", "blk.#.ffn_norm.$", 0},
	{"h.#.self_attention.query_key_value.$", "blk.#.attn_qkv.$", TFM_HFMAP_QKV_GROUPS},
	{"h.#.self_attention.dense.$", "blk.#.attn_output.$", 0},
	{"h.#.mlp.dense_h_to_4h.$", "blk.#.ffn_up.$", 0},
	{"h.#.mlp.dense_4h_to_h.$", "blk.#.ffn_down.$", 0},
	{"ln_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

/* ---- MPT: ALiBi, fused [q;k;v] ---- */
static const struct ent mpt[] = {
	{"wte.$", "token_embd.$", 0},
	{"wpe.$", "position_embd.$", 0},
	{"blocks.#.norm_1.$", "blk.#.attn_norm.$", 0},
	{"blocks.#.attn.Wqkv.$", "blk.#.attn_qkv.$", TFM_HFMAP_FUSED_QKV},
	{"blocks.#.attn.q_ln.$", "blk.#.attn_q_norm.$", 0},
	{"blocks.#.attn.k_ln.$", "blk.#.attn_k_norm.$", 0},
	{"blocks.#.attn.out_proj.$", "blk.#.attn_output.$", 0},
	{"blocks.#.norm_2.$", "blk.#.ffn_norm.$", 0},
	{"blocks.#.ffn.up_proj.$", "blk.#.ffn_up.$", 0},
	{"blocks.#.ffn.down_proj.$", "blk.#.ffn_down.$", 0},
	{"norm_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

/* ---- BERT (encoder, post-norm) ---- */
static const struct ent bert[] = {
	/* the masked-LM head: transform (mlm.dense, mlm.norm; tfm names) and
	 * the decoder, tied to token_embd, with its bias */
	{"cls.predictions.transform.dense.$", "mlm.dense.$", 0},
	{"cls.predictions.transform.LayerNorm.$", "mlm.norm.$", 0},
	{"cls.predictions.decoder.weight", "output.weight", 0},
	{"cls.predictions.decoder.bias", NULL, SKIP}, /* the same tensor as cls.predictions.bias */
	{"cls.predictions.bias", "output.bias", 0},
	{"cls.seq_relationship.*", NULL, SKIP},   /* next-sentence head: not used */
	{"embeddings.word_embeddings.$", "token_embd.$", 0},
	{"embeddings.position_embeddings.$", "position_embd.$", 0},
	{"embeddings.token_type_embeddings.$", "token_types.$", 0},
	{"embeddings.LayerNorm.$", "token_embd_norm.$", 0},
	{"encoder.layer.#.attention.self.query.$", "blk.#.attn_q.$", 0},
	{"encoder.layer.#.attention.self.key.$", "blk.#.attn_k.$", 0},
	{"encoder.layer.#.attention.self.value.$", "blk.#.attn_v.$", 0},
	{"encoder.layer.#.attention.output.dense.$", "blk.#.attn_output.$", 0},
	{"encoder.layer.#.attention.output.LayerNorm.$", "blk.#.attn_output_norm.$", 0},
	{"encoder.layer.#.intermediate.dense.$", "blk.#.ffn_up.$", 0},
	{"encoder.layer.#.output.dense.$", "blk.#.ffn_down.$", 0},
	{"encoder.layer.#.output.LayerNorm.$", "blk.#.layer_output_norm.$", 0},
	/* llama.cpp's ranking head: cls (dense + tanh), cls.output */
	{"pooler.dense.$", "cls.$", 0},
	{"classifier.$", "cls.output.$", 0},
	END
};

/* ---- RoBERTa: BERT's names; RobertaClassificationHead's dense + tanh is
 * the pooler, out_proj the classifier ---- */
static const struct ent roberta[] = {
	{"lm_head.dense.$", "mlm.dense.$", 0},   /* the masked-LM head, as BERT's */
	{"lm_head.layer_norm.$", "mlm.norm.$", 0},
	{"lm_head.decoder.weight", "output.weight", 0},
	{"lm_head.decoder.bias", NULL, SKIP},
	{"lm_head.bias", "output.bias", 0},
	{"classifier.dense.$", "cls.$", 0},
	{"classifier.out_proj.$", "cls.output.$", 0},
	END
};

/* ---- ELECTRA: BERT's names; embeddings_project is project_in (with its
 * bias), ElectraClassificationHead's dense the pooler (GELU), out_proj the
 * classifier; the generator's masked-LM head (ElectraForMaskedLM) is
 * BERT's (mlm.dense to the embedding width, mlm.norm, the tied decoder's
 * bias); the discriminator's pre-training head is not converted (as BERT's
 * next-sentence head) ---- */
static const struct ent electra[] = {
	{"embeddings_project.$", "project_in.$", 0},
	{"classifier.dense.$", "cls.$", 0},
	{"classifier.out_proj.$", "cls.output.$", 0},
	{"discriminator_predictions.*", NULL, SKIP},
	{"generator_predictions.dense.$", "mlm.dense.$", 0},
	{"generator_predictions.LayerNorm.$", "mlm.norm.$", 0},
	{"generator_lm_head.weight", "output.weight", 0},
	{"generator_lm_head.bias", "output.bias", 0},
	END
};

/* ---- ALBERT: layer group G (inner layer 0; inner_group_num other than 1
 * is refused) is block G, which the layers share (model.n_layer_groups);
 * embedding_hidden_mapping_in is project_in; the masked-LM head as BERT's
 * (mlm.dense to the embedding width, mlm.norm, the tied decoder's bias);
 * the sentence-order head is not converted ---- */
static const struct ent albert[] = {
	{"embeddings.word_embeddings.$", "token_embd.$", 0},
	{"embeddings.position_embeddings.$", "position_embd.$", 0},
	{"embeddings.token_type_embeddings.$", "token_types.$", 0},
	{"embeddings.LayerNorm.$", "token_embd_norm.$", 0},
	{"encoder.embedding_hidden_mapping_in.$", "project_in.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.attention.query.$", "blk.#.attn_q.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.attention.key.$", "blk.#.attn_k.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.attention.value.$", "blk.#.attn_v.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.attention.dense.$", "blk.#.attn_output.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.attention.LayerNorm.$",
	 "blk.#.attn_output_norm.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.ffn.$", "blk.#.ffn_up.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.ffn_output.$", "blk.#.ffn_down.$", 0},
	{"encoder.albert_layer_groups.#.albert_layers.0.full_layer_layer_norm.$",
	 "blk.#.layer_output_norm.$", 0},
	{"pooler.$", "cls.$", 0},
	{"classifier.$", "cls.output.$", 0},
	{"predictions.dense.$", "mlm.dense.$", 0},
	{"predictions.LayerNorm.$", "mlm.norm.$", 0},
	{"predictions.decoder.weight", "output.weight", 0},
	{"predictions.decoder.bias", NULL, SKIP}, /* the same tensor as predictions.bias */
	{"predictions.bias", "output.bias", 0},
	{"sop_classifier.*", NULL, SKIP},
	END
};

/* ---- ModernBERT: llama.cpp's modern-bert names; Wqkv stays fused
 * ([q; k; v] rows), Wi too (ffn_up {n_embd, 2 n_ff}: the activated half
 * first, as llama.cpp's GEGLU reads it); the prediction head (dense,
 * norm) is cls, cls.norm for every task head (llama.cpp's names), the
 * masked-LM decoder output (tied: no weight in the checkpoint) ---- */
static const struct ent modernbert[] = {
	{"embeddings.tok_embeddings.$", "token_embd.$", 0},
	{"embeddings.norm.$", "token_embd_norm.$", 0},
	{"layers.#.attn_norm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.attn.Wqkv.$", "blk.#.attn_qkv.$", TFM_HFMAP_FUSED_QKV},
	{"layers.#.attn.Wo.$", "blk.#.attn_output.$", 0},
	{"layers.#.mlp_norm.$", "blk.#.ffn_norm.$", 0},
	{"layers.#.mlp.Wi.$", "blk.#.ffn_up.$", 0},
	{"layers.#.mlp.Wo.$", "blk.#.ffn_down.$", 0},
	{"final_norm.$", "output_norm.$", 0},
	{"head.dense.$", "cls.$", 0},
	{"head.norm.$", "cls.norm.$", 0},
	{"decoder.$", "output.$", 0},
	{"classifier.$", "cls.output.$", 0},
	END
};

/* ---- DeBERTa (v1): in_proj holds per head the q, k, v rows (reordered to
 * [q; k; v] as gpt_neox's, attn_qkv, which the loader runs as three
 * projections), q_bias and v_bias (no k bias), pos_proj without a bias;
 * the rest as DeBERTa-v2's and BERT's ---- */
static const struct ent deberta_v1[] = {
	{"encoder.layer.#.attention.self.in_proj.weight", "blk.#.attn_qkv.weight", TFM_HFMAP_QKV_HEADS},
	{"encoder.layer.#.attention.self.q_bias", "blk.#.attn_q.bias", 0},
	{"encoder.layer.#.attention.self.v_bias", "blk.#.attn_v.bias", 0},
	{"encoder.layer.#.attention.self.pos_proj.weight", "blk.#.attn_pos_k.weight", 0},
	{"encoder.layer.#.attention.self.pos_q_proj.$", "blk.#.attn_pos_q.$", 0},
	END
};

/* ---- DeBERTa-v2 / v3: BERT's layer names with query_proj / key_proj /
 * value_proj; tfm's own names (llama.cpp has no DeBERTa) for the relative
 * embeddings (rel_embd), their LayerNorm (rel_embd_norm) and v2's separate
 * position projections (attn_pos_k, attn_pos_q); embed_proj is project_in
 * (no bias, before the LayerNorm); ContextPooler's dense is the pooler;
 * both masked-LM head layouts of transformers 4.57.1 (legacy
 * cls.predictions.*, and lm_predictions.lm_head.*) ---- */
static const struct ent deberta_v2[] = {
	{"embeddings.embed_proj.$", "project_in.$", 0},
	{"encoder.rel_embeddings.$", "rel_embd.$", 0},
	{"encoder.LayerNorm.$", "rel_embd_norm.$", 0},
	{"encoder.conv.conv.weight", "enc_conv.weight", TFM_HFMAP_SQUEEZE}, /* {k, d/g, d} -> {k, d d/g} */
	{"encoder.conv.conv.bias", "enc_conv.bias", 0},
	{"encoder.conv.LayerNorm.$", "enc_conv_norm.$", 0},
	{"encoder.layer.#.attention.self.query_proj.$", "blk.#.attn_q.$", 0},
	{"encoder.layer.#.attention.self.key_proj.$", "blk.#.attn_k.$", 0},
	{"encoder.layer.#.attention.self.value_proj.$", "blk.#.attn_v.$", 0},
	{"encoder.layer.#.attention.self.pos_key_proj.$", "blk.#.attn_pos_k.$", 0},
	{"encoder.layer.#.attention.self.pos_query_proj.$", "blk.#.attn_pos_q.$", 0},
	{"lm_predictions.lm_head.dense.$", "mlm.dense.$", 0},
	{"lm_predictions.lm_head.LayerNorm.$", "mlm.norm.$", 0},
	{"lm_predictions.lm_head.bias", "output.bias", 0},
	{"mask_predictions.*", NULL, SKIP},
	END
};

/* ---- T5 (T5EncoderModel, T5ForConditionalGeneration, mt5): llama.cpp's
 * t5 names.  shared is the token embedding (encoder.embed_tokens and
 * decoder.embed_tokens its tied copies); in each block layer 0 is the
 * self-attention (q, k, v, o, no biases) with its RMS norm, in the
 * decoder layer 1 the cross-attention (EncDecAttention) with its norm,
 * and the last layer the FFN (wi, or wi_0 the gate and wi_1 the up
 * projection of the gated forms); block 0's relative_attention_bias
 * {n_head, buckets} of each stack, shared by its layers, is attn_rel_b ---- */
static const struct ent t5[] = {
	{"shared.weight", "token_embd.weight", 0},
	{"encoder.embed_tokens.weight", NULL, SKIP},
	{"decoder.embed_tokens.weight", NULL, SKIP},
	{"lm_head.weight", "output.weight", 0},
	{"encoder.block.#.layer.0.SelfAttention.q.weight", "enc.blk.#.attn_q.weight", 0},
	{"encoder.block.#.layer.0.SelfAttention.k.weight", "enc.blk.#.attn_k.weight", 0},
	{"encoder.block.#.layer.0.SelfAttention.v.weight", "enc.blk.#.attn_v.weight", 0},
	{"encoder.block.#.layer.0.SelfAttention.o.weight", "enc.blk.#.attn_o.weight", 0},
	{"encoder.block.#.layer.0.SelfAttention.relative_attention_bias.weight",
	 "enc.blk.#.attn_rel_b.weight", 0},
	{"encoder.block.#.layer.0.layer_norm.weight", "enc.blk.#.attn_norm.weight", 0},
	{"encoder.block.#.layer.1.DenseReluDense.wi.weight", "enc.blk.#.ffn_up.weight", 0},
	{"encoder.block.#.layer.1.DenseReluDense.wi_0.weight", "enc.blk.#.ffn_gate.weight", 0},
	{"encoder.block.#.layer.1.DenseReluDense.wi_1.weight", "enc.blk.#.ffn_up.weight", 0},
	{"encoder.block.#.layer.1.DenseReluDense.wo.weight", "enc.blk.#.ffn_down.weight", 0},
	{"encoder.block.#.layer.1.layer_norm.weight", "enc.blk.#.ffn_norm.weight", 0},
	{"encoder.final_layer_norm.weight", "enc.output_norm.weight", 0},
	{"decoder.block.#.layer.0.SelfAttention.q.weight", "dec.blk.#.attn_q.weight", 0},
	{"decoder.block.#.layer.0.SelfAttention.k.weight", "dec.blk.#.attn_k.weight", 0},
	{"decoder.block.#.layer.0.SelfAttention.v.weight", "dec.blk.#.attn_v.weight", 0},
	{"decoder.block.#.layer.0.SelfAttention.o.weight", "dec.blk.#.attn_o.weight", 0},
	{"decoder.block.#.layer.0.SelfAttention.relative_attention_bias.weight",
	 "dec.blk.#.attn_rel_b.weight", 0},
	{"decoder.block.#.layer.0.layer_norm.weight", "dec.blk.#.attn_norm.weight", 0},
	{"decoder.block.#.layer.1.EncDecAttention.q.weight", "dec.blk.#.cross_attn_q.weight", 0},
	{"decoder.block.#.layer.1.EncDecAttention.k.weight", "dec.blk.#.cross_attn_k.weight", 0},
	{"decoder.block.#.layer.1.EncDecAttention.v.weight", "dec.blk.#.cross_attn_v.weight", 0},
	{"decoder.block.#.layer.1.EncDecAttention.o.weight", "dec.blk.#.cross_attn_o.weight", 0},
	{"decoder.block.#.layer.1.EncDecAttention.relative_attention_bias.weight",
	 "dec.blk.#.cross_attn_rel_b.weight", 0},
	{"decoder.block.#.layer.1.layer_norm.weight", "dec.blk.#.cross_attn_norm.weight", 0},
	{"decoder.block.#.layer.2.DenseReluDense.wi.weight", "dec.blk.#.ffn_up.weight", 0},
	{"decoder.block.#.layer.2.DenseReluDense.wi_0.weight", "dec.blk.#.ffn_gate.weight", 0},
	{"decoder.block.#.layer.2.DenseReluDense.wi_1.weight", "dec.blk.#.ffn_up.weight", 0},
	{"decoder.block.#.layer.2.DenseReluDense.wo.weight", "dec.blk.#.ffn_down.weight", 0},
	{"decoder.block.#.layer.2.layer_norm.weight", "dec.blk.#.ffn_norm.weight", 0},
	{"decoder.final_layer_norm.weight", "dec.output_norm.weight", 0},
	END
};

/* ---- BART, mBART, Marian (prefix model.): tfm's names in llama.cpp's t5
 * pattern (llama.cpp has no BART): each stack's positions and embedding
 * norm (layernorm_embedding) as enc./dec. position_embd and
 * token_embd_norm, its final norm (mBART's layer_norm) as output_norm;
 * final_logits_bias {1, n_vocab} is the head's bias; the embed_tokens of
 * each stack are shared's tied copies ---- */
static const struct ent bart[] = {
	{"shared.weight", "token_embd.weight", 0},
	{"encoder.embed_tokens.weight", NULL, SKIP},
	{"decoder.embed_tokens.weight", NULL, SKIP},
	{"lm_head.weight", "output.weight", 0},
	{"final_logits_bias", "output.bias", 0},
	{"encoder.embed_positions.weight", "enc.position_embd.weight", 0},
	{"decoder.embed_positions.weight", "dec.position_embd.weight", 0},
	{"encoder.layernorm_embedding.$", "enc.token_embd_norm.$", 0},
	{"decoder.layernorm_embedding.$", "dec.token_embd_norm.$", 0},
	{"encoder.layer_norm.$", "enc.output_norm.$", 0},
	{"decoder.layer_norm.$", "dec.output_norm.$", 0},
	{"encoder.layers.#.self_attn.q_proj.$", "enc.blk.#.attn_q.$", 0},
	{"encoder.layers.#.self_attn.k_proj.$", "enc.blk.#.attn_k.$", 0},
	{"encoder.layers.#.self_attn.v_proj.$", "enc.blk.#.attn_v.$", 0},
	{"encoder.layers.#.self_attn.out_proj.$", "enc.blk.#.attn_o.$", 0},
	{"encoder.layers.#.self_attn_layer_norm.$", "enc.blk.#.attn_norm.$", 0},
	{"encoder.layers.#.fc1.$", "enc.blk.#.ffn_up.$", 0},
	{"encoder.layers.#.fc2.$", "enc.blk.#.ffn_down.$", 0},
	{"encoder.layers.#.final_layer_norm.$", "enc.blk.#.ffn_norm.$", 0},
	{"decoder.layers.#.self_attn.q_proj.$", "dec.blk.#.attn_q.$", 0},
	{"decoder.layers.#.self_attn.k_proj.$", "dec.blk.#.attn_k.$", 0},
	{"decoder.layers.#.self_attn.v_proj.$", "dec.blk.#.attn_v.$", 0},
	{"decoder.layers.#.self_attn.out_proj.$", "dec.blk.#.attn_o.$", 0},
	{"decoder.layers.#.self_attn_layer_norm.$", "dec.blk.#.attn_norm.$", 0},
	{"decoder.layers.#.encoder_attn.q_proj.$", "dec.blk.#.cross_attn_q.$", 0},
	{"decoder.layers.#.encoder_attn.k_proj.$", "dec.blk.#.cross_attn_k.$", 0},
	{"decoder.layers.#.encoder_attn.v_proj.$", "dec.blk.#.cross_attn_v.$", 0},
	{"decoder.layers.#.encoder_attn.out_proj.$", "dec.blk.#.cross_attn_o.$", 0},
	{"decoder.layers.#.encoder_attn_layer_norm.$", "dec.blk.#.cross_attn_norm.$", 0},
	{"decoder.layers.#.fc1.$", "dec.blk.#.ffn_up.$", 0},
	{"decoder.layers.#.fc2.$", "dec.blk.#.ffn_down.$", 0},
	{"decoder.layers.#.final_layer_norm.$", "dec.blk.#.ffn_norm.$", 0},
	END
};

/* Marian with share_encoder_decoder_embeddings false ("marian-unshared",
 * chosen by the converter for spec embd.enc_own): no shared; each stack's
 * embed_tokens is a table of its own, the decoder's token_embd (what a
 * tied head is), the encoder's enc.token_embd; the rest as bart's. */
static const struct ent marian_unshared[] = {
	{"encoder.embed_tokens.weight", "enc.token_embd.weight", 0},
	{"decoder.embed_tokens.weight", "token_embd.weight", 0},
	END
};

/* ---- DistilBERT: pre_classifier (+ ReLU) is the pooler (cls) ---- */
static const struct ent distilbert[] = {
	{"vocab_transform.$", "mlm.dense.$", 0},  /* the masked-LM head, as BERT's */
	{"vocab_layer_norm.$", "mlm.norm.$", 0},
	{"vocab_projector.$", "output.$", 0},
	{"embeddings.word_embeddings.$", "token_embd.$", 0},
	{"embeddings.position_embeddings.$", "position_embd.$", 0},
	{"embeddings.LayerNorm.$", "token_embd_norm.$", 0},
	{"transformer.layer.#.attention.q_lin.$", "blk.#.attn_q.$", 0},
	{"transformer.layer.#.attention.k_lin.$", "blk.#.attn_k.$", 0},
	{"transformer.layer.#.attention.v_lin.$", "blk.#.attn_v.$", 0},
	{"transformer.layer.#.attention.out_lin.$", "blk.#.attn_output.$", 0},
	{"transformer.layer.#.sa_layer_norm.$", "blk.#.attn_output_norm.$", 0},
	{"transformer.layer.#.ffn.lin1.$", "blk.#.ffn_up.$", 0},
	{"transformer.layer.#.ffn.lin2.$", "blk.#.ffn_down.$", 0},
	{"transformer.layer.#.output_layer_norm.$", "blk.#.layer_output_norm.$", 0},
	{"pre_classifier.$", "cls.$", 0},
	{"classifier.$", "cls.output.$", 0},
	END
};

/* ---- StarCoder2: llama names, ungated MLP c_fc / c_proj ---- */
static const struct ent starcoder2_mlp[] = {
	{"layers.#.mlp.c_fc.$", "blk.#.ffn_up.$", 0},
	{"layers.#.mlp.c_proj.$", "blk.#.ffn_down.$", 0},
	END
};

/* ---- Phi-1/1.5/2 ---- */
static const struct ent phi[] = {
	{"embed_tokens.$", "token_embd.$", 0},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.self_attn.q_proj.$", "blk.#.attn_q.$", 0},
	{"layers.#.self_attn.k_proj.$", "blk.#.attn_k.$", 0},
	{"layers.#.self_attn.v_proj.$", "blk.#.attn_v.$", 0},
	{"layers.#.self_attn.dense.$", "blk.#.attn_output.$", 0},
	{"layers.#.mlp.fc1.$", "blk.#.ffn_up.$", 0},
	{"layers.#.mlp.fc2.$", "blk.#.ffn_down.$", 0},
	{"final_layernorm.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

/* ---- GPT-J ---- */
static const struct ent gptj[] = {
	{"h.#.attn.bias", NULL, SKIP},
	{"h.#.attn.masked_bias", NULL, SKIP},
	{"wte.$", "token_embd.$", 0},
	{"h.#.ln_1.$", "blk.#.attn_norm.$", 0},
	{"h.#.attn.q_proj.$", "blk.#.attn_q.$", 0},
	{"h.#.attn.k_proj.$", "blk.#.attn_k.$", 0},
	{"h.#.attn.v_proj.$", "blk.#.attn_v.$", 0},
	{"h.#.attn.out_proj.$", "blk.#.attn_output.$", 0},
	{"h.#.mlp.fc_in.$", "blk.#.ffn_up.$", 0},
	{"h.#.mlp.fc_out.$", "blk.#.ffn_down.$", 0},
	{"ln_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	END
};

#define MAX_TABLES 5
struct arch {
	const char *name;
	const char *prefix[4];                  /* stripped before matching; "" = as is */
	const struct ent *tab[MAX_TABLES];      /* searched in order */
};

/* ---- state-space models (prefix "backbone.") ---- */
static const struct ent mamba[] = {
	{"embeddings.weight", "token_embd.weight", 0},
	{"norm_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	{"layers.#.norm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.mixer.in_proj.$", "blk.#.ssm_in.$", 0},
	{"layers.#.mixer.conv1d.weight", "blk.#.ssm_conv1d.weight", TFM_HFMAP_SQUEEZE},
	{"layers.#.mixer.conv1d.bias", "blk.#.ssm_conv1d.bias", 0},
	{"layers.#.mixer.x_proj.$", "blk.#.ssm_x.$", 0},
	{"layers.#.mixer.dt_proj.$", "blk.#.ssm_dt.$", 0},
	{"layers.#.mixer.A_log", "blk.#.ssm_a", TFM_HFMAP_NEG_EXP},
	{"layers.#.mixer.D", "blk.#.ssm_d", 0},
	{"layers.#.mixer.out_proj.$", "blk.#.ssm_out.$", 0},
	END
};

/* ---- Mamba-2: llama.cpp's names (ssm_dt.bias is dt_bias, one per head;
 * ssm_norm the gated RMSNorm's weight) ---- */
static const struct ent mamba2[] = {
	{"embeddings.weight", "token_embd.weight", 0},
	{"norm_f.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	{"layers.#.norm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.mixer.in_proj.$", "blk.#.ssm_in.$", 0},
	{"layers.#.mixer.conv1d.weight", "blk.#.ssm_conv1d.weight", TFM_HFMAP_SQUEEZE},
	{"layers.#.mixer.conv1d.bias", "blk.#.ssm_conv1d.bias", 0},
	{"layers.#.mixer.dt_bias", "blk.#.ssm_dt.bias", 0},
	{"layers.#.mixer.A_log", "blk.#.ssm_a", TFM_HFMAP_NEG_EXP | TFM_HFMAP_COLUMN},
	{"layers.#.mixer.D", "blk.#.ssm_d", TFM_HFMAP_COLUMN},
	{"layers.#.mixer.norm.weight", "blk.#.ssm_norm.weight", TFM_HFMAP_GROUPED},
	{"layers.#.mixer.out_proj.$", "blk.#.ssm_out.$", 0},
	END
};

/* ---- Jamba and Bamba (prefix "model."): llama.cpp's jamba names; the
 * Mamba mixers under mamba., attention layers without permuted Q and K,
 * every layer's FFN (dense, or jamba's experts) under feed_forward ---- */
static const struct ent hybrid_base[] = {
	{"embed_tokens.$", "token_embd.$", 0},
	{"final_layernorm.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", 0},
	{"layers.#.pre_ff_layernorm.$", "blk.#.ffn_norm.$", 0},
	{"layers.#.self_attn.q_proj.$", "blk.#.attn_q.$", 0},
	{"layers.#.self_attn.k_proj.$", "blk.#.attn_k.$", 0},
	{"layers.#.self_attn.v_proj.$", "blk.#.attn_v.$", 0},
	{"layers.#.self_attn.o_proj.$", "blk.#.attn_output.$", 0},
	{"layers.#.mamba.in_proj.$", "blk.#.ssm_in.$", 0},
	{"layers.#.mamba.conv1d.weight", "blk.#.ssm_conv1d.weight", TFM_HFMAP_SQUEEZE},
	{"layers.#.mamba.conv1d.bias", "blk.#.ssm_conv1d.bias", 0},
	{"layers.#.mamba.A_log", "blk.#.ssm_a", TFM_HFMAP_NEG_EXP},
	{"layers.#.mamba.D", "blk.#.ssm_d", 0},
	{"layers.#.mamba.out_proj.$", "blk.#.ssm_out.$", 0},
	{"layers.#.feed_forward.gate_proj.$", "blk.#.ffn_gate.$", 0},
	{"layers.#.feed_forward.up_proj.$", "blk.#.ffn_up.$", 0},
	{"layers.#.feed_forward.down_proj.$", "blk.#.ffn_down.$", 0},
	END
};
/* Jamba's Mamba: x_proj, dt_proj and the dt/B/C norms; its experts */
static const struct ent jamba[] = {
	{"layers.#.mamba.x_proj.$", "blk.#.ssm_x.$", 0},
	{"layers.#.mamba.dt_proj.$", "blk.#.ssm_dt.$", 0},
	{"layers.#.mamba.dt_layernorm.$", "blk.#.ssm_dt_norm.$", 0},
	{"layers.#.mamba.b_layernorm.$", "blk.#.ssm_b_norm.$", 0},
	{"layers.#.mamba.c_layernorm.$", "blk.#.ssm_c_norm.$", 0},
	{"layers.#.feed_forward.router.$", "blk.#.ffn_gate_inp.$", 0},
	{"layers.#.feed_forward.experts.@.gate_proj.$", "blk.#.ffn_gate_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.feed_forward.experts.@.up_proj.$", "blk.#.ffn_up_exps.$", TFM_HFMAP_EXPERT},
	{"layers.#.feed_forward.experts.@.down_proj.$", "blk.#.ffn_down_exps.$", TFM_HFMAP_EXPERT},
	END
};
/* Bamba's Mamba-2 (mamba2's names): dt_bias, the gated norm */
static const struct ent bamba[] = {
	{"layers.#.mamba.dt_bias", "blk.#.ssm_dt.bias", 0},
	{"layers.#.mamba.norm.weight", "blk.#.ssm_norm.weight", 0},
	END
};

/* ---- Qwen3-Next (prefix "model."): zero-centred RMSNorms (1 added, as
 * gemma's) except the Gated DeltaNet's gated norm; linear_attn's
 * in_proj_qkvz and in_proj_ba keep the checkpoint's order grouped per key
 * head (llama.cpp's converter splits qkvz into attn_qkv and attn_gate;
 * tfm does not); the MTP head (mtp.*) is dropped.  Experts, the shared
 * expert and its gate as qwen2_moe's (mlp_moe rows after these). ---- */
static const struct ent qwen3_next[] = {
	{"norm.$", "output_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.input_layernorm.$", "blk.#.attn_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.post_attention_layernorm.$", "blk.#.ffn_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.self_attn.q_norm.$", "blk.#.attn_q_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.self_attn.k_norm.$", "blk.#.attn_k_norm.$", TFM_HFMAP_ADD_ONE},
	{"layers.#.linear_attn.in_proj_qkvz.$", "blk.#.ssm_in.$", 0},
	{"layers.#.linear_attn.in_proj_ba.$", "blk.#.ssm_ba.$", 0},
	{"layers.#.linear_attn.conv1d.weight", "blk.#.ssm_conv1d.weight", TFM_HFMAP_SQUEEZE},
	{"layers.#.linear_attn.conv1d.bias", "blk.#.ssm_conv1d.bias", 0},
	{"layers.#.linear_attn.dt_bias", "blk.#.ssm_dt.bias", 0},
	{"layers.#.linear_attn.A_log", "blk.#.ssm_a", TFM_HFMAP_NEG_EXP},
	{"layers.#.linear_attn.norm.weight", "blk.#.ssm_norm.weight", 0},
	{"layers.#.linear_attn.out_proj.$", "blk.#.ssm_out.$", 0},
	{"mtp.*", NULL, SKIP},
	END
};

/* ---- RWKV v4 (transformers' rwkv): llama.cpp has no v4; names in its
 * RWKV-6 style (ln2 is attn_norm_2, the vectors .weight); time_decay
 * becomes -exp(time_decay) ---- */
static const struct ent rwkv[] = {
	{"embeddings.weight", "token_embd.weight", 0},
	{"blocks.0.pre_ln.$", "token_embd_norm.$", 0},
	{"ln_out.$", "output_norm.$", 0},
	{"head.$", "output.$", 0},
	{"blocks.#.ln1.$", "blk.#.attn_norm.$", 0},
	{"blocks.#.ln2.$", "blk.#.attn_norm_2.$", 0},
	{"blocks.#.attention.time_decay", "blk.#.time_mix_decay.weight", TFM_HFMAP_NEG_EXP},
	{"blocks.#.attention.time_first", "blk.#.time_mix_first.weight", 0},
	{"blocks.#.attention.time_mix_key", "blk.#.time_mix_lerp_k.weight", 0},
	{"blocks.#.attention.time_mix_value", "blk.#.time_mix_lerp_v.weight", 0},
	{"blocks.#.attention.time_mix_receptance", "blk.#.time_mix_lerp_r.weight", 0},
	{"blocks.#.attention.key.$", "blk.#.time_mix_key.$", 0},
	{"blocks.#.attention.value.$", "blk.#.time_mix_value.$", 0},
	{"blocks.#.attention.receptance.$", "blk.#.time_mix_receptance.$", 0},
	{"blocks.#.attention.output.$", "blk.#.time_mix_output.$", 0},
	{"blocks.#.feed_forward.time_mix_key", "blk.#.channel_mix_lerp_k.weight", 0},
	{"blocks.#.feed_forward.time_mix_receptance", "blk.#.channel_mix_lerp_r.weight", 0},
	{"blocks.#.feed_forward.key.$", "blk.#.channel_mix_key.$", 0},
	{"blocks.#.feed_forward.value.$", "blk.#.channel_mix_value.$", 0},
	{"blocks.#.feed_forward.receptance.$", "blk.#.channel_mix_receptance.$", 0},
	END
};

/* ---- xLSTM (prefix "backbone."; llama.cpp has none): the mLSTM mixer's
 * projections mlstm_*, the block's norms and gated FFN as llama's ---- */
static const struct ent xlstm[] = {
	{"embeddings.weight", "token_embd.weight", 0},
	{"out_norm.$", "output_norm.$", 0},
	{"lm_head.$", "output.$", 0},
	{"blocks.#.norm_mlstm.$", "blk.#.attn_norm.$", 0},
	{"blocks.#.mlstm_layer.q.$", "blk.#.mlstm_q.$", 0},
	{"blocks.#.mlstm_layer.k.$", "blk.#.mlstm_k.$", 0},
	{"blocks.#.mlstm_layer.v.$", "blk.#.mlstm_v.$", 0},
	{"blocks.#.mlstm_layer.ogate_preact.$", "blk.#.mlstm_ogate.$", 0},
	{"blocks.#.mlstm_layer.igate_preact.$", "blk.#.mlstm_igate.$", 0},
	{"blocks.#.mlstm_layer.fgate_preact.$", "blk.#.mlstm_fgate.$", 0},
	{"blocks.#.mlstm_layer.multihead_norm.$", "blk.#.mlstm_norm.$", 0},
	{"blocks.#.mlstm_layer.out_proj.$", "blk.#.mlstm_out.$", 0},
	{"blocks.#.norm_ffn.$", "blk.#.ffn_norm.$", 0},
	{"blocks.#.ffn.proj_up_gate.$", "blk.#.ffn_gate.$", 0},
	{"blocks.#.ffn.proj_up.$", "blk.#.ffn_up.$", 0},
	{"blocks.#.ffn.proj_down.$", "blk.#.ffn_down.$", 0},
	END
};

static const struct arch archs[] = {
	{"llama", {"model.", ""}, {qk_permuted, llama_base}},
	{"mistral", {"model.", ""}, {qk_permuted, llama_base}},
	{"diffllama", {"model.", ""}, {qk_permuted, diff_lambda, llama_base}},
	{"smollm3", {"model.", ""}, {qk_permuted, llama_base}},
	{"mixtral", {"model.", ""}, {qk_permuted, mixtral_moe, llama_base}},
	{"qwen2", {"model.", ""}, {qk_plain, llama_base}},
	{"qwen3", {"model.", ""}, {qk_plain, qk_norm, llama_base}},
	{"qwen2_moe", {"model.", ""}, {qk_plain, mlp_moe, llama_base}},
	{"qwen3_moe", {"model.", ""}, {qk_plain, qk_norm, mlp_moe, llama_base}},
	{"gemma", {"model.", ""}, {gemma_norms, qk_plain, llama_base}},
	{"gemma2", {"model.", ""}, {gemma2_norms, qk_plain, llama_base}},
	{"gemma3", {"model.language_model.", "language_model.model.", "model.", ""},
	 {gemma2_norms, qk_plain, llama_base}},
	{"gemma3_text", {"model.", ""}, {gemma2_norms, qk_plain, llama_base}},
	{"olmo2", {"model.", ""}, {olmo2_norms, qk_plain, qk_norm, llama_base}},
	{"phi3", {"model.", ""}, {phi3_fused, llama_base}},
	{"stablelm", {"model.", ""}, {qk_plain, llama_base}},
	{"starcoder2", {"model.", ""}, {starcoder2_mlp, qk_plain, llama_base}},
	{"phi", {"model.", ""}, {phi}},
	{"gptj", {"transformer.", ""}, {gptj}},
	{"granite", {"model.", ""}, {qk_permuted, llama_base}},
	{"olmoe", {"model.", ""}, {qk_plain, qk_norm, mlp_moe, llama_base}},
	{"olmo", {"model.", ""}, {qk_plain, llama_base}},
	{"cohere", {"model.", ""}, {qk_plain, llama_base}},
	{"llama4", {"language_model.model.", "language_model.", "model.", ""},
	 {llama4, qk_plain, llama_base}},
	{"llama4_text", {"model.", ""}, {llama4, qk_plain, llama_base}},
	{"deepseek_v2", {"model.", ""}, {mla, mlp_moe, llama_base}},
	{"deepseek_v3", {"model.", ""}, {mla, mlp_moe, llama_base}},
	{"gpt2", {"transformer.", ""}, {gpt2}},
	{"gpt_neox", {"gpt_neox.", ""}, {gpt_neox}},
	{"opt", {"model.decoder.", "decoder.", ""}, {opt}},
	{"bloom", {"transformer.", ""}, {bloom}},
	{"falcon", {"transformer.", ""}, {falcon}},
	{"mpt", {"transformer.", ""}, {mpt}},
	{"bert", {"bert.", ""}, {bert}},
	{"roberta", {"roberta.", ""}, {roberta, bert}},
	{"xlm-roberta", {"roberta.", ""}, {roberta, bert}},
	{"distilbert", {"distilbert.", ""}, {distilbert}},
	{"electra", {"electra.", ""}, {electra, bert}},
	{"deberta-v2", {"deberta.", ""}, {deberta_v2, bert}},
	{"deberta", {"deberta.", ""}, {deberta_v1, deberta_v2, bert}},
	{"albert", {"albert.", ""}, {albert}},
	{"modernbert", {"model.", ""}, {modernbert}},
	{"t5", {""}, {t5}},
	{"mt5", {""}, {t5}},
	{"bart", {"model.", ""}, {bart}},
	{"mbart", {"model.", ""}, {bart}},
	{"marian", {"model.", ""}, {bart}},
	{"marian-unshared", {"model.", ""}, {marian_unshared, bart}},
	{"mamba", {"backbone.", ""}, {mamba}},
	{"falcon_mamba", {"backbone.", ""}, {mamba}},
	{"mamba2", {"backbone.", ""}, {mamba2}},
	{"jamba", {"model.", ""}, {jamba, hybrid_base}},
	{"bamba", {"model.", ""}, {bamba, hybrid_base}},
	{"qwen3_next", {"model.", ""}, {qwen3_next, qk_plain, mlp_moe, llama_base}},
	{"rwkv", {"rwkv.", ""}, {rwkv}},
	{"xlstm", {"backbone.", ""}, {xlstm}},
};

struct match {
	const char *bid, *eid, *suffix;
	size_t bid_len, eid_len;
};

static size_t digits(const char *s)
{
	size_t n = 0;
	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

static int pat_match(const char *p, const char *s, struct match *m)
{
	memset(m, 0, sizeof *m);
	for (; *p; p++) {
		size_t n;
		switch (*p) {
		case '#':
		case '@':
			if (!(n = digits(s)))
				return 0;
			if (*p == '#') {
				m->bid = s;
				m->bid_len = n;
			} else {
				m->eid = s;
				m->eid_len = n;
			}
			s += n;
			break;
		case '$':
			if (strcmp(s, "weight") && strcmp(s, "bias"))
				return 0;
			m->suffix = s;
			return p[1] == '\0';
		case '*':
			return 1;
		default:
			if (*s++ != *p)
				return 0;
		}
	}
	return *s == '\0';
}

/* Expand a gguf template with the captures; 0 or TFM_E_INVAL on overflow. */
static int expand(const char *t, const struct match *m, const char *hf, char *out, size_t cap)
{
	size_t o = 0;
	for (; *t; t++) {
		const char *src = t;
		size_t n = 1;
		if (*t == '#') {
			src = m->bid;
			n = m->bid_len;
		} else if (*t == '$') {
			src = m->suffix;
			n = strlen(m->suffix);
		}
		if (o + n >= cap)
			return tfm_seterr(TFM_E_INVAL, "%s: GGUF name longer than %zu bytes", hf, cap);
		memcpy(out + o, src, n);
		o += n;
	}
	out[o] = '\0';
	return TFM_OK;
}

static int use(const struct ent *e, const struct match *m, const char *hf, char *out, size_t cap,
	       unsigned *flags)
{
	unsigned f = e->flags;
	if (m->eid) {
		int64_t id = 0;
		for (size_t i = 0; i < m->eid_len; i++)
			id = id * 10 + (m->eid[i] - '0');
		if (m->eid_len > 5 || id > 0xffff)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: expert index too large", hf);
		f |= (unsigned)id << 16;
	}
	if (flags)
		*flags = f;
	if (f & SKIP) {
		if (cap)
			out[0] = '\0';
		return TFM_OK;
	}
	return expand(e->gguf, m, hf, out, cap);
}

int tfm_hfmap_name(const char *arch, const char *hf_name, char *out, size_t cap, unsigned *flags)
{
	const struct arch *a = NULL;
	struct match m;

	for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
		if (!strcmp(archs[i].name, arch))
			a = &archs[i];
	if (!a)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: no Hugging Face tensor map for architecture", arch);
	for (int i = 0; common_skip[i]; i++) {
		size_t nl = strlen(hf_name), sl = strlen(common_skip[i]);
		if (nl >= sl && !strcmp(hf_name + nl - sl, common_skip[i]) &&
		    (nl == sl || hf_name[nl - sl - 1] == '.')) {
			if (flags)
				*flags = SKIP;
			if (cap)
				out[0] = '\0';
			return TFM_OK;
		}
	}
	for (int pi = 0; pi < 4 && a->prefix[pi]; pi++) {
		size_t pl = strlen(a->prefix[pi]);
		if (strncmp(hf_name, a->prefix[pi], pl))
			continue;
		for (int ti = 0; ti < MAX_TABLES && a->tab[ti]; ti++)
			for (const struct ent *e = a->tab[ti]; e->hf; e++)
				if (pat_match(e->hf, hf_name + pl, &m))
					return use(e, &m, hf_name, out, cap, flags);
	}
	return tfm_seterr(TFM_E_UNSUPPORTED, "%s: unknown tensor for architecture %s", hf_name, arch);
}

/* ---- transforms ---- */

/* Reorder rows: new row r is old row src[r] (row length rl).  The row map
 * is computed by `src_of`. */
struct rows {
	int64_t n_rows, rl;
	int64_t a, b, c; /* parameters of the reordering */
};

/* PERMUTE: heads a, hd = n_rows/a.  New (h, i, half) <- old (h, half, i),
 * i < hd/2: HF's [h][2][hd/2] becomes [h][hd/2][2]. */
static int64_t src_permute(const struct rows *r, int64_t row)
{
	int64_t hd = r->n_rows / r->a, h = row / hd, j = row % hd;
	int64_t i = j / 2, half = j % 2;
	return h * hd + half * (hd / 2) + i;
}

/* QKV_GROUPS: a = n_head, b = n_kv, c = hd; old [n_kv][g+2][hd], g = a/b. */
static int64_t src_groups(const struct rows *r, int64_t row)
{
	int64_t hd = r->c, g = r->a / r->b, blk = row / hd, d = row % hd, old;
	if (blk < r->a)                       /* q head blk: group blk/g, slot blk%g */
		old = (blk / g) * (g + 2) + blk % g;
	else if (blk < r->a + r->b)           /* k of group blk-a */
		old = (blk - r->a) * (g + 2) + g;
	else                                  /* v of group blk-a-b */
		old = (blk - r->a - r->b) * (g + 2) + g + 1;
	return old * hd + d;
}

static void reorder(float *data, float *scratch, const struct rows *r,
		    int64_t (*src_of)(const struct rows *, int64_t))
{
	size_t rb = (size_t)r->rl * sizeof(float);
	memcpy(scratch, data, (size_t)r->n_rows * rb);
	for (int64_t row = 0; row < r->n_rows; row++)
		memcpy(data + row * r->rl, scratch + src_of(r, row) * r->rl, rb);
}

int tfm_hfmap_transform(unsigned flags, const struct tfm_spec *s, float *data,
			int64_t ne0, int64_t ne1, float *scratch)
{
	/* a 1-D tensor's elements are its rows */
	struct rows r = {.n_rows = ne1 == 1 ? ne0 : ne1, .rl = ne1 == 1 ? 1 : ne0};
	int64_t n = ne0 * ne1;

	if (ne0 <= 0 || ne1 <= 0)
		return tfm_seterr(TFM_E_INVAL, "hfmap: bad shape [%lld][%lld]", (long long)ne1,
				  (long long)ne0);
	if ((flags & TFM_HFMAP_DATA_FLAGS & ~(TFM_HFMAP_ADD_ONE | TFM_HFMAP_NEG_EXP)) && !scratch)
		return tfm_seterr(TFM_E_INVAL, "hfmap: transform needs a scratch buffer");
	if (flags & TFM_HFMAP_ADD_ONE)
		for (int64_t i = 0; i < n; i++)
			data[i] += 1.0f;
	if (flags & TFM_HFMAP_NEG_EXP)
		for (int64_t i = 0; i < n; i++)
			data[i] = -expf(data[i]);
	if (flags & TFM_HFMAP_TRANSPOSE) {
		/* [ne1][ne0] -> [ne0][ne1] */
		memcpy(scratch, data, (size_t)n * sizeof(float));
		for (int64_t i = 0; i < ne1; i++)
			for (int64_t j = 0; j < ne0; j++)
				data[j * ne1 + i] = scratch[i * ne0 + j];
	}
	if (flags & (TFM_HFMAP_PERMUTE_Q | TFM_HFMAP_PERMUTE_K)) {
		r.a = (flags & TFM_HFMAP_PERMUTE_Q) ? s->n_head : s->n_head_kv;
		if (r.a <= 0 || r.n_rows % (2 * r.a))
			return tfm_seterr(TFM_E_INVAL, "hfmap: %lld rows do not split into %lld heads of even size",
					  (long long)r.n_rows, (long long)r.a);
		if (s->head_dim > 0 && r.n_rows != r.a * s->head_dim)
			return tfm_seterr(TFM_E_INVAL, "hfmap: %lld rows, want %lld heads x %lld",
					  (long long)r.n_rows, (long long)r.a, (long long)s->head_dim);
		reorder(data, scratch, &r, src_permute);
	}
	if (flags & (TFM_HFMAP_QKV_HEADS | TFM_HFMAP_QKV_GROUPS)) {
		/* QKV_HEADS is QKV_GROUPS with one group per head */
		r.a = s->n_head;
		r.b = (flags & TFM_HFMAP_QKV_HEADS) ? s->n_head : s->n_head_kv;
		if (r.a <= 0 || r.b <= 0 || r.a % r.b || r.n_rows % (r.a + 2 * r.b))
			return tfm_seterr(TFM_E_INVAL, "hfmap: fused QKV of %lld rows does not split into "
					  "%lld q heads and %lld kv heads", (long long)r.n_rows,
					  (long long)r.a, (long long)r.b);
		r.c = r.n_rows / (r.a + 2 * r.b);
		if (s->head_dim > 0 && r.c != s->head_dim)
			return tfm_seterr(TFM_E_INVAL, "hfmap: fused QKV head size %lld, spec says %lld",
					  (long long)r.c, (long long)s->head_dim);
		reorder(data, scratch, &r, src_groups);
	}
	return TFM_OK;
}
