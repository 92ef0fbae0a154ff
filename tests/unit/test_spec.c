/* test_spec.c: presets from real config.json files (tests/data/configs),
 * parameter counts against the published checkpoint sizes, KV-cache bytes
 * against hand computation, --set parsing, spec <-> GGUF keys.
 * Expected numbers come from the released checkpoints (parameter totals) or
 * from hand computation written out beside each check, never from the code. */
#include "t.h"
#include "format/config-json.h"

static json_t *load_config(const char *name)
{
	char *p = t_path("tests/data/configs/%s", name);
	json_error_t err;
	json_t *j = json_load_file(p, 0, &err);
	if (!j)
		fprintf(stderr, "%s: %s\n", p, err.text);
	free(p);
	return j;
}

/* Spec and counts of a config file; f16 KV cache, context ctx. */
static int spec_of(const char *name, struct tfm_spec *s, struct tfm_counts *c, int64_t ctx)
{
	json_t *j = load_config(name);
	if (!j)
		return TFM_E_OPEN;
	int st = tfm_spec_from_config(s, j);
	json_decref(j);
	if (!st && c)
		st = tfm_spec_count(s, 2.0, ctx, c);
	return st;
}

static void t_llama2_7b(void)
{
	struct tfm_spec s;
	struct tfm_counts c;
	CHECK_OK(spec_of("llama-2-7b.json", &s, &c, 4096));
	CHECK(!strcmp(s.arch, "llama") && !strcmp(s.gguf_arch, "llama"));
	CHECK(s.n_head_kv == 32 && s.head_dim == 128 && s.rope_dims == 128);
	CHECK(s.rope_interleaved == 0 && !s.tied_output);
	CHECK(c.total == 6738415616LL);   /* Llama-2-7b-hf safetensors */
	/* 2 (K,V) * 32 layers * 4096 (32 heads * 128) * 2 bytes */
	CHECK(c.kv_bytes_per_token == 524288.0);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 4096) == 524288.0 * 4096);
	/* embedding: 32000 * 4096; the untied head is not an embedding */
	CHECK(c.embedding == 131072000LL);
	CHECK(c.head == 131072000LL);
	CHECK(c.active == c.total);
	/* FLOPs: 2 * (6738415616 - 131072000 - 65 * 4096 norms) matmul weights
	 * + 32 layers * 2 * 32 heads * (128 + 128) * 4096 positions */
	double want = 2.0 * (6738415616.0 - 131072000.0 - 65 * 4096.0) +
		      32.0 * 2 * 32 * 256 * 4096;
	CHECK_CLOSE(c.flops_per_token, want, 0, 1e-12);
}

static void t_mixtral(void)
{
	struct tfm_spec s;
	struct tfm_counts c;
	CHECK_OK(spec_of("mixtral-8x7b.json", &s, &c, 4096));
	CHECK(s.n_expert == 8 && s.n_expert_used == 2 && s.layer_moe[0] && s.layer_moe[31]);
	CHECK(s.window == 0 && s.mask == TFM_MASK_CAUSAL);
	CHECK(c.total == 46702792704LL);
	/* active by hand: total - 32 layers * 6 unused experts * 3*4096*14336 */
	CHECK(c.active == 46702792704LL - 32LL * 6 * 3 * 4096 * 14336);
	/* the issue quotes 12,879,921,152: 4,096 less (a norm vector) */
	CHECK_CLOSE((double)c.active, 12879921152.0, 0, 1e-6);
	/* GQA: 2 * 32 layers * 8 kv heads * 128 * 2 bytes */
	CHECK(c.kv_bytes_per_token == 131072.0);

	/* AI21-Jamba-1.5-Mini (tests/data/configs, from the published config):
	 * transformers 4.57.1's num_parameters() on the meta device, 51.6B;
	 * active: less 16 MoE layers * 14 unused experts * 3*4096*14336 */
	CHECK_OK(spec_of("jamba-1.5-mini.json", &s, &c, 4096));
	CHECK(c.total == 51570323328LL);
	CHECK(c.active == 51570323328LL - 16LL * 14 * 3 * 4096 * 14336);
	CHECK(s.layer_kind[4] == TFM_LAYER_ATTN && s.layer_kind[12] == TFM_LAYER_ATTN &&
	      s.layer_kind[0] == TFM_LAYER_MAMBA && s.layer_kind[31] == TFM_LAYER_MAMBA);
	CHECK(s.layer_moe[1] && !s.layer_moe[0] && s.layer_moe[31] && s.ssm_dt_rank == 256);
	/* KV only in the 4 attention layers: 4 * 2 * 8 heads * 128 * 2 bytes;
	 * 28 mamba layers keep conv (3 * 8192) and scan (8192 * 16) state */
	CHECK(c.kv_bytes_per_token == 4.0 * 2 * 8 * 128 * 2);
	CHECK(tfm_spec_kv_bytes(&s, 0, 4096) == 28.0 * (3 * 8192 + 8192 * 16) * 4);
}

/* NX-AI/xLSTM-7b as xLSTMConfig's defaults describe it (tests/data/configs,
 * written from transformers 4.57.1's xLSTMConfig()): num_parameters() of
 * xLSTMForCausalLM on the meta device; the state per layer is 8 heads of
 * C 256 x 512, n 256, m 1 (f32), none per token */
static void t_xlstm_7b(void)
{
	struct tfm_spec s;
	struct tfm_counts c;
	CHECK_OK(spec_of("xlstm-7b.json", &s, &c, 4096));
	CHECK(!strcmp(s.arch, "xlstm") && s.n_layer == 32 && s.ssm_n_head == 8);
	CHECK(s.xlstm_qk_dim == 2048 && s.xlstm_v_dim == 4096 && s.n_ff == 10944);
	CHECK(s.xlstm_gate_cap == 15.0f && s.final_softcap == 30.0f && !s.tied_output);
	CHECK(s.layer_kind[0] == TFM_LAYER_MLSTM && s.layer_kind[31] == TFM_LAYER_MLSTM);
	CHECK(c.total == 6865424896LL);
	CHECK(c.active == c.total);
	CHECK(c.embedding == 50304LL * 4096 && c.head == 50304LL * 4096);
	CHECK(c.kv_bytes_per_token == 0);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 4096) == 32.0 * 8 * (256 * 512 + 256 + 1) * 4);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 1 << 20) == tfm_spec_kv_bytes(&s, 2.0, 1));
}

static void t_small_models(void)
{
	struct tfm_spec s;
	struct tfm_counts c;
	CHECK_OK(spec_of("gpt2.json", &s, &c, 1024));
	CHECK(c.total == 124439808LL);
	CHECK(s.tied_output && s.pos_embd == TFM_POS_EMBD_LEARNED && s.act == TFM_ACT_GELU_TANH);
	CHECK(c.embedding == 50257LL * 768 + 1024LL * 768);
	/* 2 * 12 layers * 768 * 4 bytes (f32 below) */
	CHECK(tfm_spec_kv_bytes(&s, 4.0, 1) == 2.0 * 12 * 768 * 4);

	CHECK_OK(spec_of("bert-base-uncased.json", &s, &c, 512));
	CHECK(c.total == 109482240LL);   /* BertModel, pooler included */
	CHECK(s.family == TFM_FAMILY_ENCODER && s.norm_place == TFM_NORM_POST);
	CHECK(c.kv_bytes_per_token == 0);
	CHECK(s.n_token_types == 2 && s.pooler);

	/* RobertaModel and DistilBertModel as transformers 4.57.1 counts them
	 * (sum of numel over AutoModel.from_config(config).parameters()) */
	CHECK_OK(spec_of("roberta-base.json", &s, &c, 512));
	CHECK(c.total == 124645632LL);
	CHECK(s.pos_offset == 2 && s.n_ctx_train == 512 && s.n_token_types == 1 && s.pooler);
	CHECK(s.head == TFM_HEAD_EMBED && s.mask == TFM_MASK_BIDIR);
	CHECK_OK(spec_of("distilbert-base-uncased.json", &s, &c, 512));
	CHECK(c.total == 66362880LL);
	CHECK(s.n_token_types == 0 && !s.pooler && s.n_layer == 6 && s.norm_eps == 1e-12);

	/* answerdotai/ModernBERT-base's published config: ModernBertForMaskedLM
	 * (its architectures) and ModernBertModel as transformers 4.57.1 and
	 * 5.23.0 count them (AutoModelForMaskedLM / AutoModel.from_config(config)
	 * .num_parameters(): 149,655,232 and 149,014,272); the 5.x file
	 * (rope_parameters per layer type, layer_types) gives the same spec */
	for (int v5 = 0; v5 < 2; v5++) {
		CHECK_OK(spec_of(v5 ? "modernbert-base-v5.json" : "modernbert-base.json", &s, &c, 512));
		CHECK(c.total == 149655232LL);
		CHECK(s.mlm_head && s.head_bias && s.tied_output);
		s.mlm_head = 0; /* ModernBertModel */
		CHECK_OK(tfm_spec_count(&s, 2.0, 512, &c));
		CHECK(c.total == 149014272LL);
		CHECK(s.family == TFM_FAMILY_ENCODER && s.mask == TFM_MASK_BIDIR && s.window == 128);
		CHECK(s.rope_theta == 160000.0 && s.rope_theta_local == 10000.0 && s.head_dim == 64);
		CHECK(!s.layer_window[0] && s.layer_window[1] && s.layer_window[2] &&
		      !s.layer_window[3] && !s.layer_window[21] && s.layer_window[20]);
		CHECK(s.gated && s.act == TFM_ACT_GELU && !s.norm_bias && s.no_first_attn_norm);
		CHECK(s.head == TFM_HEAD_EMBED && !s.pooler && s.head_transform);
	}
	/* microsoft/deberta-v3-base's config: DebertaV2Model.num_parameters()
	 * of transformers 4.57.1 (relative embeddings 512 x 768 and their
	 * LayerNorm, projections shared with the content keys and queries) */
	CHECK_OK(spec_of("deberta-v3-base.json", &s, &c, 512));
	CHECK(c.total == 183831552LL);
	CHECK(s.pos_attn == TFM_POS_DEBERTA && s.rel_span == 256 && s.rel_buckets == 256 &&
	      s.rel_max_pos == 512 && s.rel_c2p && s.rel_p2c && s.rel_share_key && s.rel_norm);
	CHECK(s.pos_embd == TFM_POS_EMBD_NONE && s.n_token_types == 0 && !s.pooler);
	CHECK_CLOSE(s.attn_scale, 1 / sqrt(64.0 * 3), 1e-7, 0);
	/* deberta-v2-xlarge's shape keys (ConvLayer of 3 taps, attention_head_size
	 * 64): DebertaV2Model(config).num_parameters() = 884,593,152 */
	CHECK_OK(spec_of("deberta-v2-xlarge.json", &s, &c, 512));
	CHECK(c.total == 884593152LL);
	CHECK(s.conv_kernel == 3 && s.conv_groups == 1 && s.conv_act == TFM_CONV_ACT_GELU);
	/* microsoft/deberta-base's shape keys (DeBERTa v1): DebertaModel(config)
	 * .num_parameters() = 138,601,728 (in_proj, q_bias, v_bias, pos_proj
	 * without a bias, pos_q_proj, 1024 relative rows) */
	CHECK_OK(spec_of("deberta-base.json", &s, &c, 512));
	CHECK(c.total == 138601728LL);
	CHECK(s.attn_bias_qv && !s.attn_bias_qkv && !s.rel_pos_k_bias && s.rel_span == 512 &&
	      s.rel_buckets == 0 && !s.rel_norm && !s.rel_share_key);

	CHECK_OK(spec_of("t5-small.json", &s, &c, 512));
	CHECK(c.total == 60506624LL);
	CHECK(s.family == TFM_FAMILY_ENCDEC && s.n_layer_dec == 6 && s.pos_attn == TFM_POS_T5);
	CHECK(s.act == TFM_ACT_RELU && !s.gated && s.attn_scale == 1.0f);
	/* the seq2seq models of issue 12, their configs as transformers 4.57.1
	 * saves them (built here from the published values); counts:
	 * AutoModelForSeq2SeqLM.from_config(c).num_parameters() */
	CHECK_OK(spec_of("flan-t5-base.json", &s, &c, 512));
	CHECK(c.total == 247577856LL);   /* gated-gelu, untied head */
	CHECK(s.gated && s.act == TFM_ACT_GELU_TANH && !s.tied_output && s.head_scale == 0);
	CHECK_OK(spec_of("bart-base.json", &s, &c, 1024));
	CHECK(c.total == 139420416LL);   /* final_logits_bias, a buffer, not counted */
	CHECK(s.norm_place == TFM_NORM_POST && s.pos_offset == 2 && s.head_bias && s.embd_norm &&
	      s.dec_start_id == 2);
	CHECK_OK(spec_of("opus-mt-en-de.json", &s, &c, 512));
	CHECK(c.total == 74410496LL);    /* the sinusoidal tables counted, as transformers */
	CHECK(s.pos_embd == TFM_POS_EMBD_SINUSOIDAL && s.act == TFM_ACT_SILU &&
	      s.dec_start_id == 58100 && s.eos_id == 0 && !s.embd_norm);
	CHECK(tfm_spec_cross_kv_bytes(&s, 2.0, 100) == 6.0 * 2 * 512 * 2 * 100);

	/* facebook/opt-350m's published count; by hand: embeddings 50272*512 +
	 * 2050*1024; project_in/out 2*512*1024; per layer 4*(1024*1024+1024) +
	 * 2*(1024*4096)+4096+1024 + 2*2*1024 = 12,596,224; 24 layers; no final
	 * norm (post-LN); head tied: 25,739,264 + 2,099,200 + 1,048,576 +
	 * 302,309,376 = 331,196,416 */
	CHECK_OK(spec_of("opt-350m.json", &s, &c, 2048));
	CHECK(c.total == 331196416LL);
	CHECK(s.norm_place == TFM_NORM_POST && s.n_embd_io == 512 && !s.final_norm);
}

static void t_window_mla(void)
{
	struct tfm_spec s;
	struct tfm_counts c;
	CHECK_OK(spec_of("mistral-7b.json", &s, &c, 32768));
	CHECK(s.window == 4096 && s.layer_window[0] && s.layer_window[31]);
	/* per token: 2 * 32 layers * 8 kv heads * 128 * 2 bytes = 131072;
	 * the cache stops growing at the 4096-token window */
	CHECK(c.kv_bytes_per_token == 131072.0);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 1000) == 131072.0 * 1000);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 32768) == 131072.0 * 4096);
	CHECK(c.total == 7241732096LL);   /* Mistral-7B-v0.1 */

	CHECK_OK(spec_of("deepseek-v3.json", &s, &c, 4096));
	CHECK(s.kv_lora_rank == 512 && s.qk_rope_dim == 64 && s.rope_dims == 64);
	CHECK(s.moe_gate == TFM_MOE_GATE_SIGMOID && s.moe_first_dense == 3);
	CHECK(!s.layer_moe[2] && s.layer_moe[3] && s.layer_moe[60]);
	CHECK(s.rope_scaling == TFM_ROPE_SCALE_YARN && s.rope_factor == 40 && s.rope_orig_ctx == 4096);
	/* MLA caches the 512 latent + 64 shared rope key: 61 * 576 * 2 bytes */
	CHECK(c.kv_bytes_per_token == 61.0 * 576 * 2);
	/* 671B main model (the 14B MTP module not counted), by hand:
	 * 61*(attn 187107328 + norms 14336) + 3 dense*396361728
	 * + 58 MoE*(router 1835008 + bias 256 + 257 experts*44040192)
	 * + 2*129280*7168 + 7168 */
	CHECK(c.total == 671026419200LL);
	CHECK(c.active == 671026419200LL - 58LL * 248 * 44040192);
}

static void t_presets(void)
{
	static const char *types[] = {
		"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
		"gemma", "gemma2", "gemma3_text", "olmo2", "deepseek_v2", "deepseek_v3", "phi3",
		"gpt2", "gpt_neox", "bloom", "falcon", "mpt", "opt", "bert", "roberta",
		"distilbert", "t5", "bart", "mamba", "mamba2", "jamba", "rwkv", "xlstm", "smollm3",
		"stablelm", "cohere",
	};
	struct tfm_spec s, s2;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		json_t *j = json_pack("{ss}", "model_type", types[i]);
		int st = tfm_spec_from_config(&s, j);
		CHECK_MSG(st == TFM_OK, "%s: %s", types[i], tfm_errmsg());
		json_decref(j);
		if (st)
			continue;
		struct tfm_counts c;
		CHECK_OK(tfm_spec_count(&s, 2.0, 1024, &c));
		CHECK_MSG(c.total > 0 && c.active <= c.total, "%s", types[i]);
		/* spec -> GGUF -> spec is the identity */
		struct tfm_gguf *g = NULL;
		CHECK_OK(tfm_gguf_new(&g));
		CHECK_OK(tfm_spec_to_gguf(&s, g));
		CHECK_OK(tfm_spec_from_gguf(&s2, g));
		CHECK_MSG(!memcmp(&s, &s2, sizeof(s)), "%s: GGUF round trip differs", types[i]);
		tfm_gguf_free(g);
	}
	/* gemma2: even layers slide, scale from query_pre_attn_scalar */
	json_t *j = json_pack("{ss si si sf}", "model_type", "gemma2", "num_hidden_layers", 4,
			      "sliding_window", 128, "query_pre_attn_scalar", 144.0);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.layer_window[0] && !s.layer_window[1] && s.layer_window[2] && !s.layer_window[3]);
	CHECK(s.window == 128 && s.attn_scale == (float)(1.0 / 12.0));
	CHECK(s.attn_softcap == 50.0f && s.final_softcap == 30.0f && s.norm_plus_one);
	/* mamba dt_rank "auto" = ceil(768 / 16) = 48 */
	j = json_pack("{ss si ss}", "model_type", "mamba", "hidden_size", 768, "time_step_rank", "auto");
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.ssm_dt_rank == 48 && s.ssm_d_inner == 1536 && s.layer_kind[0] == TFM_LAYER_MAMBA);
	/* mamba-130m: by hand, per layer in_proj 768*3072 + conv 1536*4+1536
	 * + x_proj 1536*(48+32) + dt_proj 48*1536+1536 + A_log 1536*16 + D 1536
	 * + out_proj 1536*768 + norm 768 = 3,771,648; 24 layers + 50280*768 + 768 */
	j = json_pack("{ss si si si si si si ss sb}", "model_type", "mamba", "vocab_size", 50280,
		      "hidden_size", 768, "num_hidden_layers", 24, "state_size", 16, "expand", 2,
		      "conv_kernel", 4, "time_step_rank", "auto", "tie_word_embeddings", 1);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	struct tfm_counts mc;
	CHECK_OK(tfm_spec_count(&s, 2.0, 2048, &mc));
	CHECK(mc.total == 24LL * 3771648 + 50280LL * 768 + 768);
	/* constant state: 24 layers * (3*1536 conv + 1536*16 ssm) f32 */
	CHECK(mc.kv_bytes_per_token == 0 && mc.state_bytes == 24.0 * (3 * 1536 + 1536 * 16) * 4);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 100000) == mc.state_bytes);
	/* RWKV-7 0.1B (RWKV-x070-World-0.1B's sizes: 12 layers of 768, head
	 * size 64, ffn 3072, LoRA ranks w 64, a 64, v 32, g 128, vocabulary
	 * 65536), by hand as fla's RWKV7ForCausalLM holds it (no value
	 * residual in layer 0): per layer two LayerNorms 4d, six lerps 6d,
	 * w0 a0 d each, LoRAs 2d(64 + 64 + 128), k_k k_a r_k 3d, r k v o 4d^2,
	 * ln_x 2d, channel mixing d + 2 d ff = 530 d + 4 d^2 + 2 d ff, plus
	 * v0 v1 v2 (65 d) after layer 0; embeddings and head 2 V d, ln0 and
	 * ln_out 4d.  State: per layer two shifts and 12 heads of 64x64, f32 */
	j = json_pack("{ss si si si si si si si si si si si sb}", "model_type", "rwkv",
		      "rwkv_version", 7, "head_size", 64, "vocab_size", 65536, "hidden_size", 768,
		      "num_hidden_layers", 12, "intermediate_size", 3072, "decay_low_rank_dim", 64,
		      "a_low_rank_dim", 64, "v_low_rank_dim", 32, "gate_low_rank_dim", 128,
		      "rescale_every", 0, "tie_word_embeddings", 0);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK_OK(tfm_spec_count(&s, 2.0, 2048, &mc));
	{
		int64_t d = 768, ff = 3072, V = 65536;
		int64_t want = 12 * (530 * d + 4 * d * d + 2 * d * ff) + 11 * 65 * d + 2 * V * d + 4 * d;
		CHECK_MSG(mc.total == want && want == 191034624, "rwkv7 0.1b: %lld", (long long)mc.total);
		CHECK(mc.kv_bytes_per_token == 0 && mc.state_bytes == 12.0 * (2 * d + d * 64) * 4);
	}
	/* mamba-2.8b (state-spaces/mamba-2.8b-hf's sizes): transformers 4.57.1's
	 * num_parameters() on the meta device */
	j = json_pack("{ss si si si si si si ss sb}", "model_type", "mamba", "vocab_size", 50280,
		      "hidden_size", 2560, "num_hidden_layers", 64, "state_size", 16, "expand", 2,
		      "conv_kernel", 4, "time_step_rank", "auto", "tie_word_embeddings", 1);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK_OK(tfm_spec_count(&s, 2.0, 2048, &mc));
	CHECK_MSG(mc.total == 2768345600LL, "mamba-2.8b: %lld", (long long)mc.total);
	/* Bamba-9B (tests/data/configs, its published sizes): num_parameters()
	 * as above; attention in layers 9, 18, 27 only, each with half its
	 * head dims rotated */
	CHECK_OK(spec_of("bamba-9b.json", &s, &mc, 4096));
	CHECK_MSG(mc.total == 9780235392LL, "bamba-9b: %lld", (long long)mc.total);
	CHECK(s.layer_kind[9] == TFM_LAYER_ATTN && s.layer_kind[27] == TFM_LAYER_ATTN &&
	      s.layer_kind[0] == TFM_LAYER_MAMBA2 && s.layer_rope[9] && !s.layer_rope[0] &&
	      s.rope_dims == 64 && s.ssm_n_head == 128 && s.ssm_n_group == 1);
	CHECK(mc.kv_bytes_per_token == 3.0 * 2 * 8 * 128 * 2);
	/* Qwen3-Next-80B-A3B (tests/data/configs, its published sizes):
	 * num_parameters() as above; active: less 48 MoE layers * 502 unused
	 * experts * 3*2048*512.  KV in the 12 full-attention layers only (2
	 * heads of 256); 36 Gated DeltaNet layers keep conv inputs (3 * (2*16*128
	 * + 32*128)) and a 128 x 128 matrix per value head */
	CHECK_OK(spec_of("qwen3-next-80b-a3b.json", &s, &mc, 4096));
	CHECK_MSG(mc.total == 79674391296LL, "qwen3-next: %lld", (long long)mc.total);
	CHECK(mc.active == 79674391296LL - 48LL * 502 * 3 * 2048 * 512);
	CHECK(s.layer_kind[3] == TFM_LAYER_ATTN && s.layer_kind[0] == TFM_LAYER_GDN &&
	      s.layer_kind[46] == TFM_LAYER_GDN && s.layer_kind[47] == TFM_LAYER_ATTN &&
	      s.rope_dims == 64 && s.attn_out_gate && s.moe_shared_gate && s.moe_norm_topk);
	CHECK(mc.kv_bytes_per_token == 12.0 * 2 * 2 * 256 * 2);
	CHECK(tfm_spec_kv_bytes(&s, 0, 4096) == 36.0 * (3 * 8192 + 32 * 128 * 128) * 4);
	/* falcon_mamba (the fixture's config): its dt/B/C norms have no weights.
	 * By hand per layer in_proj 48*192 + conv 96*4+96 + x_proj 96*(3+32)
	 * + dt_proj 3*96+96 + A_log 96*16 + D 96 + out_proj 96*48 + norm 48
	 * = 19,728; 2 layers + 2 * 256*48 (untied) + 48 = 64,080, the
	 * numel of its model.safetensors */
	j = json_pack("{ss si si si si si si ss sb sf}", "model_type", "falcon_mamba",
		      "vocab_size", 256, "hidden_size", 48, "num_hidden_layers", 2, "state_size", 16,
		      "expand", 2, "conv_kernel", 4, "time_step_rank", "auto",
		      "tie_word_embeddings", 0, "mixer_rms_eps", 1e-6);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.ssm_dt_norm && s.ssm_norm_eps == 1e-6);
	CHECK_OK(tfm_spec_count(&s, 4.0, 64, &mc));
	CHECK_MSG(mc.total == 64080, "falcon_mamba: %lld parameters", (long long)mc.total);
	/* jamba: attention every 8th layer from 4, MoE every 2nd from 1 */
	j = json_pack("{ss}", "model_type", "jamba");
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.layer_kind[4] == TFM_LAYER_ATTN && s.layer_kind[12] == TFM_LAYER_ATTN &&
	      s.layer_kind[5] == TFM_LAYER_MAMBA && s.layer_moe[1] && !s.layer_moe[2]);
	/* the llama2.c importer's flag */
	j = json_pack("{ss sb}", "model_type", "llama", "rope_interleaved", 1);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.rope_interleaved == 1);
	/* roberta-base: 124,645,632 parameters (RobertaModel, pooler included);
	 * 514 position rows of which the first 2 are padding */
	j = json_pack("{ss si si}", "model_type", "roberta", "max_position_embeddings", 514,
		      "type_vocab_size", 1);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	struct tfm_counts rc;
	CHECK_OK(tfm_spec_count(&s, 2.0, 512, &rc));
	CHECK(s.pos_offset == 2 && s.n_ctx_train == 512 && rc.total == 124645632LL);
	/* smollm3: every 4th layer has no rope */
	j = json_pack("{ss si}", "model_type", "smollm3", "num_hidden_layers", 8);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.layer_rope[0] && s.layer_rope[2] && !s.layer_rope[3] && !s.layer_rope[7]);
	/* google/t5-v1_1-small: gated GELU, untied head; 76,961,152 parameters */
	j = json_pack("{ss si si si si si si si ss sb}", "model_type", "t5", "vocab_size", 32128,
		      "d_model", 512, "d_kv", 64, "d_ff", 1024, "num_layers", 8,
		      "num_decoder_layers", 8, "num_heads", 6, "feed_forward_proj", "gated-gelu",
		      "tie_word_embeddings", 0);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK_OK(tfm_spec_count(&s, 2.0, 512, &rc));
	CHECK(s.gated && s.act == TFM_ACT_GELU_TANH && !s.tied_output && s.head_scale == 0);
	CHECK(rc.total == 76961152LL);
	/* facebook/bart-base (BartModel): 139,420,416 parameters */
	j = json_pack("{ss si si si si si si si si si}", "model_type", "bart", "vocab_size", 50265,
		      "d_model", 768, "encoder_layers", 6, "decoder_layers", 6,
		      "encoder_attention_heads", 12, "decoder_attention_heads", 12,
		      "encoder_ffn_dim", 3072, "decoder_ffn_dim", 3072, "max_position_embeddings", 1024);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK_OK(tfm_spec_count(&s, 2.0, 512, &rc));
	CHECK(rc.total == 139420416LL);
	/* llama 3.1 rope scaling */
	j = json_pack("{ss sf s{sf sf sf si ss}}", "model_type", "llama", "rope_theta", 500000.0,
		      "rope_scaling", "factor", 8.0, "low_freq_factor", 1.0, "high_freq_factor", 4.0,
		      "original_max_position_embeddings", 8192, "rope_type", "llama3");
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.rope_scaling == TFM_ROPE_SCALE_LLAMA3 && s.rope_factor == 8.0 &&
	      s.rope_orig_ctx == 8192 && s.llama3_high_freq_factor == 4.0 && s.rope_theta == 500000.0);
	/* qwen2 with layer_types: the explicit pattern wins */
	j = json_pack("{ss si si sb s[ssss]}", "model_type", "qwen2", "num_hidden_layers", 4,
		      "sliding_window", 512, "use_sliding_window", 1, "layer_types",
		      "full_attention", "sliding_attention", "full_attention", "sliding_attention");
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(!s.layer_window[0] && s.layer_window[1] && !s.layer_window[2] && s.window == 512);
	CHECK(s.attn_bias_qkv && !s.attn_bias_out);
	j = json_pack("{ss si s[s]}", "model_type", "qwen2", "num_hidden_layers", 4,
		      "layer_types", "full_attention");
	CHECK_ST(tfm_spec_from_config(&s, j), TFM_E_FORMAT);
	json_decref(j);
	/* falcon-7b: multi-query, one shared norm, parallel residual */
	j = json_pack("{ss}", "model_type", "falcon");
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.n_head_kv == 1 && s.parallel_residual && s.shared_attn_ffn_norm);
}

static void t_errors(void)
{
	struct tfm_spec s;
	json_t *j = json_pack("{ss}", "model_type", "foo");
	CHECK_ST(tfm_spec_from_config(&s, j), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "model_type 'foo' is not supported") != NULL);
	json_decref(j);
	j = json_pack("{si}", "hidden_size", 8);
	CHECK_ST(tfm_spec_from_config(&s, j), TFM_E_FORMAT);
	json_decref(j);
	j = json_pack("{ss si si}", "model_type", "llama", "num_attention_heads", 32,
		      "num_key_value_heads", 5);
	CHECK_ST(tfm_spec_from_config(&s, j), TFM_E_FORMAT);
	json_decref(j);
}

static void t_set(void)
{
	struct tfm_spec s;
	CHECK_OK(spec_of("llama-2-7b.json", &s, NULL, 0));
	CHECK_OK(tfm_spec_set(&s, "attn.window=256"));
	CHECK(s.window == 256 && s.layer_window[0] && s.layer_window[31]);
	CHECK(tfm_spec_kv_bytes(&s, 2.0, 4096) == 524288.0 * 256);
	CHECK_OK(tfm_spec_set(&s, "attn.window=0"));
	CHECK(s.window == 0 && !s.layer_window[0]);
	CHECK_OK(tfm_spec_set(&s, "rope.scaling=yarn"));
	CHECK_OK(tfm_spec_set(&s, "rope.factor=4"));
	CHECK(s.rope_scaling == TFM_ROPE_SCALE_YARN && s.rope_factor == 4.0 &&
	      s.rope_orig_ctx == 4096);
	CHECK_OK(tfm_spec_set(&s, "rope.theta=500000"));
	CHECK(s.rope_theta == 500000.0);
	CHECK_OK(tfm_spec_set(&s, "norm.eps=1e-6"));
	CHECK(s.norm_eps == 1e-6);
	CHECK_OK(tfm_spec_set(&s, "tfm.attn.softcap=50"));
	CHECK(s.attn_softcap == 50.0f);
	CHECK_OK(tfm_spec_set(&s, "layer.rope=0"));
	CHECK(!s.layer_rope[0] && !s.layer_rope[31]);

	CHECK_ST(tfm_spec_set(&s, "attn.nope=1"), TFM_E_INVAL);
	CHECK(strstr(tfm_errmsg(), "attn.nope") != NULL);
	CHECK_ST(tfm_spec_set(&s, "rope.scaling=warp"), TFM_E_INVAL);
	CHECK(strstr(tfm_errmsg(), "yarn") != NULL);   /* lists the names */
	CHECK_ST(tfm_spec_set(&s, "attn.window=-1"), TFM_E_INVAL);
	CHECK_ST(tfm_spec_set(&s, "attn.window=12x"), TFM_E_INVAL);
	CHECK_ST(tfm_spec_set(&s, "attn.window"), TFM_E_INVAL);
	CHECK_ST(tfm_spec_set(&s, "=3"), TFM_E_INVAL);
	CHECK_ST(tfm_spec_set(&s, "attn.bias_qkv=maybe"), TFM_E_INVAL);
	/* a value that breaks the spec is refused and the spec kept */
	CHECK_ST(tfm_spec_set(&s, "attn.n_head_kv=5"), TFM_E_INVAL);
	CHECK(s.n_head_kv == 32);
	CHECK_ST(tfm_spec_set(&s, "layer.window=1,0"), TFM_E_INVAL);
}

/* spec -> GGUF file bytes -> spec: exact, LongRoPE lists included. */
static void t_gguf_file(void)
{
	json_t *lf = json_array(), *sf = json_array();
	for (int i = 0; i < 48; i++) {   /* phi3-mini-128k: head_dim 96, 48 factors */
		json_array_append_new(lf, json_real(1.0 + i * 0.25));
		json_array_append_new(sf, json_real(1.0 + i / 64.0));
	}
	json_t *j = json_pack("{ss si si so}", "model_type", "phi3", "max_position_embeddings", 131072,
			      "original_max_position_embeddings", 4096,
			      "rope_scaling", json_pack("{ss so so}", "type", "longrope",
							"long_factor", lf, "short_factor", sf));
	struct tfm_spec s, s2;
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(s.rope_scaling == TFM_ROPE_SCALE_LONGROPE && s.n_rope_factors == 48);
	CHECK(s.rope_factor == 32.0 && s.rope_long_factors[47] == 12.75f);
	char *dir = t_tmpdir(), *path = t_path("%s/spec.gguf", dir);
	struct tfm_gguf *g = NULL;
	struct tfm_out *out = NULL;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_spec_to_gguf(&s, g));
	CHECK_OK(tfm_out_open(&out, path, 0));
	CHECK_OK(tfm_gguf_write(g, out));
	CHECK_OK(tfm_out_commit(out));
	tfm_gguf_free(g);
	g = NULL;
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, path));
	CHECK_OK(tfm_gguf_parse(&g, b.data, b.size, b.name));
	CHECK_OK(tfm_spec_from_gguf(&s2, g));
	CHECK(!memcmp(&s, &s2, sizeof(s)));
	/* llama.cpp's keys are there too */
	CHECK(!strcmp(tfm_gguf_get_str_or(g, "general.architecture", ""), "phi3"));
	CHECK(tfm_gguf_get_int_or(g, "phi3.rope.scaling.original_context_length", 0) == 4096);
	CHECK(tfm_gguf_get_int_or(g, "phi3.attention.head_count_kv", 0) == 32);
	tfm_gguf_free(g);
	tfm_blob_close(&b);
	free(path);
	free(dir);
}

/* llama.cpp-only GGUF metadata (no tfm.* keys). */
static void t_llamacpp_keys(void)
{
	struct tfm_gguf *g = NULL;
	struct tfm_spec s;
	CHECK_OK(tfm_gguf_new(&g));
	tfm_gguf_set_str(g, "general.architecture", "llama");
	tfm_gguf_set_u32(g, "llama.context_length", 512);
	tfm_gguf_set_u32(g, "llama.embedding_length", 64);
	tfm_gguf_set_u32(g, "llama.block_count", 5);
	tfm_gguf_set_u32(g, "llama.feed_forward_length", 172);
	tfm_gguf_set_u32(g, "llama.attention.head_count", 8);
	tfm_gguf_set_u32(g, "llama.attention.head_count_kv", 4);
	tfm_gguf_set_u32(g, "llama.rope.dimension_count", 8);
	tfm_gguf_set_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
	tfm_gguf_set_u32(g, "llama.vocab_size", 512);
	CHECK_OK(tfm_spec_from_gguf(&s, g));
	CHECK(s.rope_interleaved == 1 && s.head_dim == 8 && s.n_head_kv == 4 && s.n_ff == 172);
	s.tied_output = 1;   /* stories260K shares its classifier */
	struct tfm_counts c;
	CHECK_OK(tfm_spec_count(&s, 4.0, 512, &c));
	/* stories260K: 512*64 + 5*(4096 + 2*2048 + 4096 + 3*64*172 + 128) + 64 */
	CHECK(c.total == 260032);
	tfm_gguf_free(g);

	CHECK_OK(tfm_gguf_new(&g));
	tfm_gguf_set_str(g, "general.architecture", "gemma2");
	tfm_gguf_set_u32(g, "gemma2.embedding_length", 2304);
	tfm_gguf_set_u32(g, "gemma2.block_count", 26);
	tfm_gguf_set_u32(g, "gemma2.feed_forward_length", 9216);
	tfm_gguf_set_u32(g, "gemma2.attention.head_count", 8);
	tfm_gguf_set_u32(g, "gemma2.attention.head_count_kv", 4);
	tfm_gguf_set_u32(g, "gemma2.attention.key_length", 256);
	tfm_gguf_set_u32(g, "gemma2.attention.sliding_window", 4096);
	tfm_gguf_set_f32(g, "gemma2.attn_logit_softcapping", 50.0f);
	tfm_gguf_set_f32(g, "gemma2.final_logit_softcapping", 30.0f);
	tfm_gguf_set_u32(g, "gemma2.vocab_size", 256000);
	CHECK_OK(tfm_spec_from_gguf(&s, g));
	CHECK(s.norm_place == TFM_NORM_SANDWICH && s.layer_window[0] && !s.layer_window[1]);
	CHECK(s.rope_interleaved == 0 && s.norm_plus_one == 0 && s.head_dim == 256);
	CHECK(s.attn_softcap == 50.0f && s.window == 4096);
	tfm_gguf_free(g);

	CHECK_OK(tfm_gguf_new(&g));
	tfm_gguf_set_str(g, "general.architecture", "starcoder");
	CHECK_ST(tfm_spec_from_gguf(&s, g), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "starcoder") != NULL);
	tfm_gguf_free(g);
}

/* llama.cpp's own vocab GGUF files keep the hyperparameters of the models
 * they came from (LLaMA-7B, GPT-2 124M): counts from llama.cpp's keys. */
static int64_t shared_gguf_total(const char *name, struct tfm_spec *s)
{
	char *p = t_path("%s/tokenizers/llama.cpp-vocab/%s", t_shared(), name);
	struct tfm_blob b;
	struct tfm_gguf *g = NULL;
	struct tfm_counts c = { 0 };
	int st = tfm_blob_open(&b, p);
	CHECK_OK(st);
	if (!st) {
		CHECK_OK(st = tfm_gguf_parse(&g, b.data, b.size, b.name));
		if (!st) {
			CHECK_OK(st = tfm_spec_from_gguf(s, g));
			if (!st)
				CHECK_OK(tfm_spec_count(s, 2.0, 512, &c));
		}
		tfm_gguf_free(g);
		tfm_blob_close(&b);
	}
	free(p);
	return c.total;
}

static void t_llamacpp_files(void)
{
	struct tfm_spec s;
	CHECK(shared_gguf_total("ggml-vocab-llama-spm.gguf", &s) == 6738415616LL);
	CHECK(s.rope_interleaved == 1 && !s.tied_output && s.n_vocab == 32000);
	CHECK(shared_gguf_total("ggml-vocab-gpt-2.gguf", &s) == 124439808LL);
	CHECK(s.tied_output && s.pos_embd == TFM_POS_EMBD_LEARNED && s.n_vocab == 50257);
	shared_gguf_total("ggml-vocab-bert-bge.gguf", &s);
	CHECK(s.family == TFM_FAMILY_ENCODER && s.n_token_types == 2);
}

static void t_json(void)
{
	struct tfm_spec s;
	CHECK_OK(spec_of("mistral-7b.json", &s, NULL, 0));
	json_t *o = tfm_spec_to_json(&s);
	CHECK(o != NULL);
	CHECK(!strcmp(json_string_value(json_object_get(o, "attn.mask")), "window"));
	CHECK(json_integer_value(json_object_get(o, "attn.window")) == 4096);
	CHECK(json_is_false(json_object_get(o, "embd.tied_output")));
	json_decref(o);
	CHECK(!strcmp(tfm_spec_enum_name("rope.scaling", TFM_ROPE_SCALE_LONGROPE), "longrope"));
	CHECK(tfm_spec_enum_value("ffn.act", "gelu_tanh") == TFM_ACT_GELU_TANH);
}

/* config.json as Python writes it: bare Infinity / -Infinity / NaN become
 * strings outside JSON strings (quotes and escapes kept), which the presets
 * read as those numbers, as is transformers 5's {"__float__": "Infinity"}:
 * mamba2's time_step_limit [0.0, Infinity] is no upper limit, [0.05, 0.5]
 * both, a NaN bound refused. */
static void t_nonfinite(void)
{
	static const char txt[] = "{\"a\": [0.0, Infinity], \"b\": -Infinity, \"c\": NaN, "
				  "\"s\": \"x Infinity \\\" NaN\", \"t\": \"\\\\\", \"u\": Infinity}";
	json_error_t e;
	json_t *j = tfm_config_json(txt, sizeof txt - 1, &e);
	CHECK_MSG(j != NULL, "%s", j ? "" : e.text);
	if (j) {
		CHECK(!strcmp(json_string_value(json_array_get(json_object_get(j, "a"), 1)), "Infinity"));
		CHECK(!strcmp(json_string_value(json_object_get(j, "b")), "-Infinity"));
		CHECK(!strcmp(json_string_value(json_object_get(j, "c")), "NaN"));
		CHECK(!strcmp(json_string_value(json_object_get(j, "s")), "x Infinity \" NaN"));
		CHECK(!strcmp(json_string_value(json_object_get(j, "t")), "\\"));
		CHECK(!strcmp(json_string_value(json_object_get(j, "u")), "Infinity"));
	}
	json_decref(j);
	CHECK(tfm_config_json("{\"a\": Inf}", 10, &e) == NULL); /* not Python's token */
	static const char m2[] = "{\"model_type\": \"mamba2\", \"hidden_size\": 16, "
				 "\"num_heads\": 4, \"head_dim\": 8, \"n_groups\": 2, "
				 "\"num_hidden_layers\": 1, \"time_step_limit\": [0.0, Infinity]}";
	struct tfm_spec s;
	j = tfm_config_json(m2, sizeof m2 - 1, &e);
	CHECK_OK(tfm_spec_from_config(&s, j));
	CHECK(s.ssm_dt_min == 0 && s.ssm_dt_max == 0 && s.ssm_d_inner == 32);
	json_array_set_new(json_object_get(j, "time_step_limit"), 1, json_real(0.5));
	json_array_set_new(json_object_get(j, "time_step_limit"), 0, json_real(0.05));
	CHECK_OK(tfm_spec_from_config(&s, j));
	CHECK(s.ssm_dt_min == 0.05 && s.ssm_dt_max == 0.5);
	/* transformers 5 writes Infinity as {"__float__": "Infinity"} */
	json_array_set_new(json_object_get(j, "time_step_limit"), 1,
			   json_pack("{ss}", "__float__", "Infinity"));
	CHECK_OK(tfm_spec_from_config(&s, j));
	CHECK(s.ssm_dt_min == 0.05 && s.ssm_dt_max == 0);
	json_array_set_new(json_object_get(j, "time_step_limit"), 1,
			   json_pack("{ss}", "__float__", "NaN"));
	CHECK(tfm_spec_from_config(&s, j) == TFM_E_UNSUPPORTED);
	json_decref(j);
}

/* ModernBERT's keys: honoured (layer_types, a null local theta, mean
 * pooling) or refused with the key named */
static void t_modernbert(void)
{
	static const struct { const char *json, *err; } bad[] = {
		{ "{\"classifier_pooling\": \"max\"}", "classifier_pooling" },
		{ "{\"classifier_activation\": \"gelu_new\"}", "classifier_activation" },
		{ "{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}}",
		  "rope_scaling" },
		{ "{\"global_attn_every_n_layers\": 0}", "global_attn_every_n_layers" },
		{ "{\"hidden_size\": 50, \"num_attention_heads\": 4}", "num_attention_heads" },
		{ "{\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1e5}, "
		  "\"sliding_attention\": {\"rope_type\": \"linear\", \"factor\": 2.0}}}",
		  "sliding_attention.rope_type" },
		{ "{\"architectures\": [\"ModernBertForQuestionAnswering\"]}",
		  "ModernBertForQuestionAnswering" },
		{ "{\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1e5, "
		  "\"partial_rotary_factor\": 0.5}, \"sliding_attention\": {\"rope_theta\": 1e4, "
		  "\"partial_rotary_factor\": 0.5}}}", "partial_rotary_factor" },
	};
	struct tfm_spec s;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *j = json_loads(bad[i].json, 0, NULL);
		json_object_set_new(j, "model_type", json_string("modernbert"));
		int st = tfm_spec_from_config(&s, j);
		CHECK_MSG(st == TFM_E_UNSUPPORTED || st == TFM_E_FORMAT, "%s: %d", bad[i].json, st);
		CHECK_MSG(strstr(tfm_errmsg(), bad[i].err) != NULL, "%s: %s", bad[i].json,
			  tfm_errmsg());
		json_decref(j);
	}
	json_t *j = json_loads("{\"model_type\": \"modernbert\", \"num_hidden_layers\": 4, "
			       "\"layer_types\": [\"full_attention\", \"full_attention\", "
			       "\"sliding_attention\", \"full_attention\"], \"local_rope_theta\": null, "
			       "\"global_rope_theta\": 5e4, \"classifier_pooling\": \"mean\", "
			       "\"architectures\": [\"ModernBertForSequenceClassification\"], "
			       "\"deterministic_flash_attn\": true, \"sparse_prediction\": true}", 0, NULL);
	CHECK_OK(tfm_spec_from_config(&s, j));
	json_decref(j);
	CHECK(!s.layer_window[0] && !s.layer_window[1] && s.layer_window[2] && !s.layer_window[3]);
	CHECK(s.rope_theta == 5e4 && s.rope_theta_local == 5e4);
	CHECK(s.head == TFM_HEAD_CLASSIFIER && s.pooling == TFM_POOL_MEAN && s.pooler &&
	      !s.head_dense_bias && s.head_transform);
}

static const struct t_case t_cases[] = {
	{ "llama2_7b", t_llama2_7b }, { "mixtral", t_mixtral }, { "small_models", t_small_models },
	{ "xlstm_7b", t_xlstm_7b },
	{ "window_mla", t_window_mla }, { "presets", t_presets }, { "errors", t_errors },
	{ "set", t_set }, { "gguf_file", t_gguf_file }, { "llamacpp_keys", t_llamacpp_keys },
	{ "llamacpp_files", t_llamacpp_files }, { "json", t_json }, { "nonfinite", t_nonfinite },
	{ "modernbert", t_modernbert },
};
T_MAIN(t_cases)
