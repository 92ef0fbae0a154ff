/* hfmap.h: Hugging Face tensor names to GGUF tensor names (llama.cpp's), per
 * architecture preset, plus the transforms llama.cpp's converter applies on
 * the way (Q/K rope permutation, fused-QKV reordering, Conv1D transpose,
 * gemma's norm +1).  formats/tensor-names.md is the table of every mapping. */
#ifndef TFM_HFMAP_H
#define TFM_HFMAP_H

#include <stddef.h>
#include <stdint.h>

struct tfm_spec;

/* Flags returned with a name.  Bits 16..31 carry the expert index when
 * TFM_HFMAP_EXPERT is set (TFM_HFMAP_EXPERT_ID(flags)). */
enum {
	TFM_HFMAP_SKIP = 1u << 0,      /* a buffer, not a weight: drop it (out is "") */
	TFM_HFMAP_TRANSPOSE = 1u << 1, /* gpt2 Conv1D: stored [in][out], GGUF wants [out][in] */
	TFM_HFMAP_PERMUTE_Q = 1u << 2, /* rows [n_head][2][hd/2] -> [n_head][hd/2][2] */
	TFM_HFMAP_PERMUTE_K = 1u << 3, /* same with n_head_kv heads */
	TFM_HFMAP_QKV_HEADS = 1u << 4, /* rows [n_head][3][hd] -> [3][n_head][hd] (bloom, gpt_neox) */
	TFM_HFMAP_QKV_GROUPS = 1u << 5,/* rows [n_kv][n_head/n_kv+2][hd] -> [q all; k all; v all] (falcon) */
	TFM_HFMAP_ADD_ONE = 1u << 6,   /* gemma norms: stored w-1, GGUF stores w */
	TFM_HFMAP_EXPERT = 1u << 7,    /* one expert of a stacked 3-D *_exps tensor */
	TFM_HFMAP_FUSED_GATE_UP = 1u << 8, /* phi3 gate_up_proj: rows [gate (n_ff); up (n_ff)], kept fused */
	TFM_HFMAP_FUSED_QKV = 1u << 9, /* already [q rows; k rows; v rows] (gpt2, phi3, mpt): informational */
	TFM_HFMAP_NEG_EXP = 1u << 10,  /* mamba A_log: GGUF stores A = -exp(A_log) */
	TFM_HFMAP_SQUEEZE = 1u << 11,  /* mamba conv1d (d_inner, 1, d_conv) -> {d_conv, d_inner} */
	TFM_HFMAP_EXPERTS_T = 1u << 12,/* 3-D [E][in][out] (bmm layout): each expert transposed to
	                                  [E][out][in] (llama4); done by the converter */
	TFM_HFMAP_SPLIT_GATE_UP = 1u << 13, /* with EXPERTS_T, [E][in][2 n_ff]: out is the gate
	                                  name; the converter writes the first half of the last
	                                  dimension there and the second under ffn_up_exps */
	TFM_HFMAP_COLUMN = 1u << 14,   /* a vector [n] as {1, n} (llama.cpp's mamba2 A and D) */
	TFM_HFMAP_GROUPED = 1u << 15,  /* a vector [n] as {n / ssm_n_group, ssm_n_group}
	                                  (llama.cpp's mamba2 gated norm weight) */
};
#define TFM_HFMAP_EXPERT_ID(flags) ((int)((flags) >> 16))
/* The flags that tfm_hfmap_transform acts on (the rest are informational). */
#define TFM_HFMAP_DATA_FLAGS (TFM_HFMAP_TRANSPOSE | TFM_HFMAP_PERMUTE_Q | TFM_HFMAP_PERMUTE_K | \
			      TFM_HFMAP_QKV_HEADS | TFM_HFMAP_QKV_GROUPS | TFM_HFMAP_ADD_ONE | \
			      TFM_HFMAP_NEG_EXP)

/* Map the HF tensor name hf_name of architecture preset arch (the spec's
 * arch: "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
 * "gemma", "gemma2", "olmo2", "smollm3", "phi3", "gpt2", "gpt_neox", "opt",
 * "bloom", "falcon", "mpt", "deepseek_v2", "bert", "roberta",
 * "distilbert") to its GGUF name in
 * out[cap] and its flags.  Experts map to the stacked name
 * ("blk.3.ffn_gate_exps.weight") with TFM_HFMAP_EXPERT and the index.
 * Returns TFM_OK; TFM_E_UNSUPPORTED for an unknown arch or name (the message
 * names it); TFM_E_INVAL when out is too small. */
int tfm_hfmap_name(const char *arch, const char *hf_name, char *out, size_t cap, unsigned *flags);

/* Apply the data flags of `flags` to an f32 tensor in place.  data has the
 * GGUF shape [ne1][ne0] (ne0 fastest), i.e. PyTorch shape (ne1, ne0); a 1-D
 * tensor (a bias, a norm) is ne0 = n, ne1 = 1, and its elements are the
 * rows.  TRANSPOSE leaves the shape [ne0][ne1].  scratch holds ne0*ne1
 * floats (may be NULL when only ADD_ONE is set).  Uses s->n_head,
 * s->n_head_kv; TFM_E_INVAL when the rows do not split into those heads. */
int tfm_hfmap_transform(unsigned flags, const struct tfm_spec *s, float *data,
			int64_t ne0, int64_t ne1, float *scratch);

#endif
