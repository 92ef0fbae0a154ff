/* test_hfmap.c: the Hugging Face -> GGUF tensor map (names checked against
 * llama.cpp's tensor_mapping.py by hand, and every tensor of every committed
 * fixture in tests/fixtures/MANIFEST.json) and the weight transforms on small
 * arrays worked out by hand. */
#include "t.h"
#include <math.h>

#include <jansson.h>

#include "format/hfmap.h"
#include "spec/spec.h"

/* name maps to want with exactly the flags want_flags */
static void want_map(const char *arch, const char *hf, const char *want, unsigned want_flags)
{
	char out[128];
	unsigned fl = 0xdeadbeef;
	int st = tfm_hfmap_name(arch, hf, out, sizeof out, &fl);
	CHECK_MSG(st == TFM_OK, "%s %s: %s", arch, hf, tfm_errmsg());
	if (st != TFM_OK)
		return;
	CHECK_MSG(!strcmp(out, want), "%s %s -> %s, want %s", arch, hf, out, want);
	CHECK_MSG(fl == want_flags, "%s %s: flags %#x, want %#x", arch, hf, fl, want_flags);
}

static void t_names_llama_family(void)
{
	want_map("llama", "model.embed_tokens.weight", "token_embd.weight", 0);
	want_map("llama", "model.norm.weight", "output_norm.weight", 0);
	want_map("llama", "lm_head.weight", "output.weight", 0);
	want_map("llama", "model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight", 0);
	want_map("llama", "model.layers.12.self_attn.q_proj.weight", "blk.12.attn_q.weight",
		 TFM_HFMAP_PERMUTE_Q);
	want_map("llama", "model.layers.12.self_attn.q_proj.bias", "blk.12.attn_q.bias",
		 TFM_HFMAP_PERMUTE_Q);
	want_map("llama", "model.layers.3.self_attn.k_proj.weight", "blk.3.attn_k.weight",
		 TFM_HFMAP_PERMUTE_K);
	want_map("llama", "model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight", 0);
	want_map("llama", "model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight", 0);
	want_map("llama", "model.layers.3.post_attention_layernorm.weight", "blk.3.ffn_norm.weight", 0);
	want_map("llama", "model.layers.3.mlp.gate_proj.weight", "blk.3.ffn_gate.weight", 0);
	want_map("llama", "model.layers.3.mlp.up_proj.weight", "blk.3.ffn_up.weight", 0);
	want_map("llama", "model.layers.3.mlp.down_proj.weight", "blk.3.ffn_down.weight", 0);
	want_map("llama", "model.layers.3.self_attn.rotary_emb.inv_freq", "", TFM_HFMAP_SKIP);
	want_map("mistral", "model.layers.1.self_attn.k_proj.weight", "blk.1.attn_k.weight",
		 TFM_HFMAP_PERMUTE_K);
	want_map("smollm3", "model.layers.1.self_attn.q_proj.weight", "blk.1.attn_q.weight",
		 TFM_HFMAP_PERMUTE_Q);
	/* NEOX-rope architectures keep HF's layout */
	want_map("qwen2", "model.layers.1.self_attn.q_proj.bias", "blk.1.attn_q.bias", 0);
	want_map("qwen3", "model.layers.1.self_attn.k_norm.weight", "blk.1.attn_k_norm.weight", 0);
	want_map("olmo2", "model.layers.1.self_attn.q_norm.weight", "blk.1.attn_q_norm.weight", 0);
	want_map("olmo2", "model.layers.1.post_attention_layernorm.weight",
		 "blk.1.post_attention_norm.weight", 0);
	want_map("olmo2", "model.layers.1.post_feedforward_layernorm.weight",
		 "blk.1.post_ffw_norm.weight", 0);
	want_map("gemma", "model.norm.weight", "output_norm.weight", TFM_HFMAP_ADD_ONE);
	/* mamba, as llama.cpp's MambaModel: A = -exp(A_log), conv1d squeezed */
	want_map("mamba", "backbone.layers.3.mixer.A_log", "blk.3.ssm_a", TFM_HFMAP_NEG_EXP);
	want_map("mamba", "backbone.layers.0.mixer.conv1d.weight", "blk.0.ssm_conv1d.weight",
		 TFM_HFMAP_SQUEEZE);
	want_map("falcon_mamba", "backbone.embeddings.weight", "token_embd.weight", 0);
	want_map("mamba", "backbone.layers.1.mixer.D", "blk.1.ssm_d", 0);
	{
		float a[2] = {0.0f, 0.6931471805599453f};
		struct tfm_spec sp = {0};
		CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_NEG_EXP, &sp, a, 2, 1, NULL));
		CHECK(fabsf(a[0] + 1.0f) < 1e-6f && fabsf(a[1] + 2.0f) < 1e-6f);
	}
	want_map("gemma", "model.layers.0.post_attention_layernorm.weight", "blk.0.ffn_norm.weight",
		 TFM_HFMAP_ADD_ONE);
	want_map("gemma", "model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", 0);
	want_map("gemma2", "model.layers.0.post_attention_layernorm.weight",
		 "blk.0.post_attention_norm.weight", TFM_HFMAP_ADD_ONE);
	want_map("gemma2", "model.layers.0.pre_feedforward_layernorm.weight", "blk.0.ffn_norm.weight",
		 TFM_HFMAP_ADD_ONE);
	want_map("gemma2", "model.layers.0.post_feedforward_layernorm.weight",
		 "blk.0.post_ffw_norm.weight", TFM_HFMAP_ADD_ONE);
	want_map("phi3", "model.layers.0.self_attn.qkv_proj.weight", "blk.0.attn_qkv.weight",
		 TFM_HFMAP_FUSED_QKV);
	want_map("phi3", "model.layers.0.mlp.gate_up_proj.weight", "blk.0.ffn_up.weight",
		 TFM_HFMAP_FUSED_GATE_UP);
}

static void t_names_moe(void)
{
	want_map("mixtral", "model.layers.2.block_sparse_moe.gate.weight", "blk.2.ffn_gate_inp.weight", 0);
	want_map("mixtral", "model.layers.2.block_sparse_moe.experts.7.w1.weight",
		 "blk.2.ffn_gate_exps.weight", TFM_HFMAP_EXPERT | (7u << 16));
	want_map("mixtral", "model.layers.2.block_sparse_moe.experts.0.w2.weight",
		 "blk.2.ffn_down_exps.weight", TFM_HFMAP_EXPERT);
	want_map("mixtral", "model.layers.2.block_sparse_moe.experts.63.w3.weight",
		 "blk.2.ffn_up_exps.weight", TFM_HFMAP_EXPERT | (63u << 16));
	want_map("mixtral", "model.layers.2.self_attn.q_proj.weight", "blk.2.attn_q.weight",
		 TFM_HFMAP_PERMUTE_Q);
	want_map("qwen2_moe", "model.layers.0.mlp.gate.weight", "blk.0.ffn_gate_inp.weight", 0);
	want_map("qwen2_moe", "model.layers.0.mlp.experts.59.down_proj.weight",
		 "blk.0.ffn_down_exps.weight", TFM_HFMAP_EXPERT | (59u << 16));
	want_map("qwen2_moe", "model.layers.0.mlp.shared_expert.up_proj.weight",
		 "blk.0.ffn_up_shexp.weight", 0);
	want_map("qwen2_moe", "model.layers.0.mlp.shared_expert_gate.weight",
		 "blk.0.ffn_gate_inp_shexp.weight", 0);
	want_map("deepseek_v2", "model.layers.1.self_attn.kv_a_proj_with_mqa.weight",
		 "blk.1.attn_kv_a_mqa.weight", 0);
	want_map("deepseek_v2", "model.layers.1.self_attn.q_a_layernorm.weight",
		 "blk.1.attn_q_a_norm.weight", 0);
	want_map("deepseek_v2", "model.layers.1.mlp.shared_experts.gate_proj.weight",
		 "blk.1.ffn_gate_shexp.weight", 0);
	want_map("deepseek_v2", "model.layers.0.mlp.gate_proj.weight", "blk.0.ffn_gate.weight", 0);
	CHECK(TFM_HFMAP_EXPERT_ID(TFM_HFMAP_EXPERT | (63u << 16)) == 63);
	/* Llama 4: Llama4ForCausalLM's names and Llama4ForConditionalGeneration's
	 * (language_model.*; the vision tower is skipped) */
	static const char *const l4pre[] = {"model.", "language_model.model."};
	for (int i = 0; i < 2; i++) {
		char hf[160];
		snprintf(hf, sizeof hf, "%slayers.1.feed_forward.experts.gate_up_proj", l4pre[i]);
		want_map("llama4", hf, "blk.1.ffn_gate_exps.weight",
			 TFM_HFMAP_EXPERTS_T | TFM_HFMAP_SPLIT_GATE_UP);
		snprintf(hf, sizeof hf, "%slayers.1.feed_forward.experts.down_proj", l4pre[i]);
		want_map("llama4", hf, "blk.1.ffn_down_exps.weight", TFM_HFMAP_EXPERTS_T);
		snprintf(hf, sizeof hf, "%slayers.1.feed_forward.router.weight", l4pre[i]);
		want_map("llama4", hf, "blk.1.ffn_gate_inp.weight", 0);
		snprintf(hf, sizeof hf, "%slayers.1.feed_forward.shared_expert.down_proj.weight", l4pre[i]);
		want_map("llama4", hf, "blk.1.ffn_down_shexp.weight", 0);
		snprintf(hf, sizeof hf, "%slayers.0.feed_forward.up_proj.weight", l4pre[i]);
		want_map("llama4", hf, "blk.0.ffn_up.weight", 0);
		snprintf(hf, sizeof hf, "%slayers.0.self_attn.q_proj.weight", l4pre[i]);
		want_map("llama4", hf, "blk.0.attn_q.weight", 0); /* already pairwise: no permutation */
	}
	want_map("llama4", "language_model.lm_head.weight", "output.weight", 0);
	want_map("llama4", "vision_model.model.layers.0.mlp.fc1.weight", "", TFM_HFMAP_SKIP);
	want_map("llama4", "multi_modal_projector.linear_1.weight", "", TFM_HFMAP_SKIP);
}

static void t_names_other(void)
{
	want_map("gpt2", "transformer.h.0.attn.c_attn.weight", "blk.0.attn_qkv.weight",
		 TFM_HFMAP_TRANSPOSE | TFM_HFMAP_FUSED_QKV);
	want_map("gpt2", "h.0.attn.c_attn.bias", "blk.0.attn_qkv.bias", TFM_HFMAP_FUSED_QKV);
	want_map("gpt2", "transformer.h.1.mlp.c_proj.weight", "blk.1.ffn_down.weight",
		 TFM_HFMAP_TRANSPOSE);
	want_map("gpt2", "transformer.h.1.attn.bias", "", TFM_HFMAP_SKIP);
	want_map("gpt2", "h.1.attn.masked_bias", "", TFM_HFMAP_SKIP);
	want_map("gpt2", "transformer.wpe.weight", "position_embd.weight", 0);
	want_map("gpt_neox", "gpt_neox.layers.0.attention.query_key_value.bias", "blk.0.attn_qkv.bias",
		 TFM_HFMAP_QKV_HEADS);
	want_map("gpt_neox", "gpt_neox.layers.0.attention.bias", "", TFM_HFMAP_SKIP);
	want_map("gpt_neox", "gpt_neox.layers.0.attention.rotary_emb.inv_freq", "", TFM_HFMAP_SKIP);
	want_map("gpt_neox", "embed_out.weight", "output.weight", 0);
	want_map("opt", "model.decoder.embed_positions.weight", "position_embd.weight", 0);
	want_map("opt", "model.decoder.layers.1.final_layer_norm.bias", "blk.1.ffn_norm.bias", 0);
	want_map("opt", "model.decoder.final_layer_norm.weight", "output_norm.weight", 0);
	want_map("bloom", "transformer.word_embeddings_layernorm.bias", "token_embd_norm.bias", 0);
	want_map("bloom", "h.0.self_attention.query_key_value.weight", "blk.0.attn_qkv.weight",
		 TFM_HFMAP_QKV_HEADS);
	want_map("falcon", "transformer.h.0.self_attention.query_key_value.weight",
		 "blk.0.attn_qkv.weight", TFM_HFMAP_QKV_GROUPS);
	/* llama.cpp: ln_attn feeds attention as attn_norm_2, ln_mlp the FFN as attn_norm */
	want_map("falcon", "transformer.h.0.ln_mlp.weight", "blk.0.attn_norm.weight", 0);
	want_map("falcon", "transformer.h.0.ln_attn.bias", "blk.0.attn_norm_2.bias", 0);
	want_map("mpt", "transformer.blocks.1.attn.Wqkv.weight", "blk.1.attn_qkv.weight",
		 TFM_HFMAP_FUSED_QKV);
	want_map("mpt", "transformer.norm_f.weight", "output_norm.weight", 0);
	want_map("bert", "bert.embeddings.token_type_embeddings.weight", "token_types.weight", 0);
	want_map("bert", "bert.encoder.layer.11.output.LayerNorm.bias", "blk.11.layer_output_norm.bias", 0);
	want_map("bert", "bert.embeddings.position_ids", "", TFM_HFMAP_SKIP);
	/* the masked-LM head is kept (tfm names), the next-sentence head dropped;
	 * the classifier as llama.cpp's ranking head (cls, cls.output) */
	want_map("bert", "cls.predictions.transform.dense.weight", "mlm.dense.weight", 0);
	want_map("bert", "cls.predictions.bias", "output.bias", 0);
	want_map("bert", "cls.predictions.decoder.bias", "", TFM_HFMAP_SKIP);
	want_map("bert", "cls.seq_relationship.weight", "", TFM_HFMAP_SKIP);
	want_map("bert", "bert.pooler.dense.weight", "cls.weight", 0);
	want_map("bert", "classifier.bias", "cls.output.bias", 0);
	want_map("roberta", "roberta.encoder.layer.1.attention.self.query.weight",
		 "blk.1.attn_q.weight", 0);
	want_map("roberta", "classifier.dense.weight", "cls.weight", 0);
	want_map("roberta", "classifier.out_proj.bias", "cls.output.bias", 0);
	want_map("roberta", "lm_head.layer_norm.weight", "mlm.norm.weight", 0);
	want_map("distilbert", "distilbert.transformer.layer.0.sa_layer_norm.bias",
		 "blk.0.attn_output_norm.bias", 0);
	want_map("distilbert", "pre_classifier.weight", "cls.weight", 0);
	want_map("distilbert", "vocab_projector.bias", "output.bias", 0);
}

static void t_names_errors(void)
{
	char out[64], tiny[8];
	unsigned fl;
	CHECK_ST(tfm_hfmap_name("llama", "model.layers.0.self_attn.q_projx.weight", out, sizeof out, &fl),
		 TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "q_projx") != NULL);
	CHECK_ST(tfm_hfmap_name("llama", "model.layers.x.mlp.up_proj.weight", out, sizeof out, &fl),
		 TFM_E_UNSUPPORTED);
	CHECK_ST(tfm_hfmap_name("llama", "model.layers.0.mlp.up_proj.scales", out, sizeof out, &fl),
		 TFM_E_UNSUPPORTED);
	CHECK_ST(tfm_hfmap_name("nosucharch", "lm_head.weight", out, sizeof out, &fl), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "nosucharch") != NULL);
	/* llama's permutation must not leak into qwen2 (and the reverse) */
	CHECK_OK(tfm_hfmap_name("qwen2", "model.layers.0.self_attn.q_proj.weight", out, sizeof out, &fl));
	CHECK(fl == 0);
	CHECK_ST(tfm_hfmap_name("llama", "model.layers.0.mlp.up_proj.weight", tiny, sizeof tiny, &fl),
		 TFM_E_INVAL);
}

/* Every tensor of every committed fixture maps, to distinct GGUF names, and
 * each model has the tensors every decoder needs. */
static void t_fixture_names(void)
{
	json_error_t jerr;
	json_t *m = json_load_file("tests/fixtures/MANIFEST.json", 0, &jerr);
	CHECK_MSG(m != NULL, "MANIFEST.json: %s", jerr.text);
	if (!m)
		return;
	json_t *fx = json_object_get(m, "fixtures");
	const char *fname;
	json_t *f;
	int n_fixtures = 0, n_tensors = 0;
	json_object_foreach(fx, fname, f) {
		if (json_is_true(json_object_get(f, "missing")))
			continue;
		const char *arch = json_string_value(json_object_get(f, "model_type"));
		json_t *tensors = json_object_get(f, "tensors"), *seen = json_object();
		const char *hf;
		json_t *shape;
		n_fixtures++;
		json_object_foreach(tensors, hf, shape) {
			char out[128];
			unsigned fl;
			int st = tfm_hfmap_name(arch, hf, out, sizeof out, &fl);
			CHECK_MSG(st == TFM_OK, "%s: %s", fname, tfm_errmsg());
			if (st != TFM_OK || (fl & TFM_HFMAP_SKIP))
				continue;
			n_tensors++;
			/* experts share the stacked name, told apart by their index */
			char key[160];
			snprintf(key, sizeof key, "%s#%d", out, TFM_HFMAP_EXPERT_ID(fl));
			CHECK_MSG(!json_object_get(seen, key), "%s: %s and %s both map to %s", fname, hf,
				  json_string_value(json_object_get(seen, key)), key);
			json_object_set_new(seen, key, json_string(hf));
		}
		CHECK_MSG(json_object_get(seen, "token_embd.weight#0"), "%s: no token_embd", fname);
		/* post-LN models (OPT with do_layer_norm_before=false) end without one */
		/* ... and olmo's norms have no weights */
		int post_ln = strstr(fname, "postln") != NULL || !strcmp(fname, "opt-350m") ||
			      !strcmp(fname, "olmo");
		CHECK_MSG(post_ln != !!json_object_get(seen, "output_norm.weight#0"),
			  "%s: output_norm %s", fname, post_ln ? "present" : "missing");
		if (!strcmp(arch, "rwkv")) { /* time and channel mixing */
			static const char *const rw[] = {"time_mix_key.weight", "time_mix_output.weight",
							 "time_mix_decay.weight", "time_mix_first.weight",
							 "channel_mix_value.weight", "attn_norm_2.weight"};
			for (size_t i = 0; i < sizeof rw / sizeof rw[0]; i++) {
				char k[64];
				snprintf(k, sizeof k, "blk.1.%s#0", rw[i]);
				CHECK_MSG(json_object_get(seen, k), "%s: no %s", fname, k);
			}
			json_decref(seen);
			continue;
		}
		if (!strcmp(arch, "xlstm")) { /* the mLSTM mixer, then the gated FFN */
			static const char *const ml[] = {"attn_norm.weight", "mlstm_q.weight",
							 "mlstm_k.weight", "mlstm_v.weight",
							 "mlstm_ogate.weight", "mlstm_igate.weight",
							 "mlstm_igate.bias", "mlstm_fgate.weight",
							 "mlstm_fgate.bias", "mlstm_norm.weight",
							 "mlstm_out.weight", "ffn_norm.weight",
							 "ffn_gate.weight", "ffn_up.weight",
							 "ffn_down.weight"};
			for (size_t i = 0; i < sizeof ml / sizeof ml[0]; i++) {
				char k[64];
				snprintf(k, sizeof k, "blk.1.%s#0", ml[i]);
				CHECK_MSG(json_object_get(seen, k), "%s: no %s", fname, k);
			}
			CHECK_MSG(json_object_size(seen) == 3 + 2 * 15, "%s: %zu tensors mapped, not "
				  "3 + 15 per layer", fname, json_object_size(seen));
			json_decref(seen);
			continue;
		}
		if (!strcmp(arch, "jamba") || !strcmp(arch, "bamba") || !strcmp(arch, "qwen3_next")) {
			/* hybrids: attention or a recurrent mixer (jamba's mamba
			 * with its dt, B, C norms; bamba's mamba2 with its gated
			 * norm; qwen3_next's Gated DeltaNet), then an FFN: experts
			 * in some of jamba's and qwen3_next's layers, dense in
			 * bamba's */
			int attn = 0, ssm = 0, ffn = 0, a = !strcmp(arch, "jamba") ? 0 :
							       !strcmp(arch, "bamba") ? 1 : 2;
			static const char *const sn[3][7] = {
				{"ssm_x.weight", "ssm_dt_norm.weight", "ssm_b_norm.weight",
				 "ssm_c_norm.weight", "ssm_a", "ssm_out.weight", "ssm_conv1d.weight"},
				{"ssm_in.weight", "ssm_dt.bias", "ssm_norm.weight", "ssm_a", "ssm_d",
				 "ssm_out.weight", "ssm_conv1d.weight"},
				{"ssm_in.weight", "ssm_ba.weight", "ssm_dt.bias", "ssm_norm.weight", "ssm_a",
				 "ssm_out.weight", "ssm_conv1d.weight"}};
			for (int l = 0; l < 4; l++) {
				char k[64];
				snprintf(k, sizeof k, "blk.%d.attn_output.weight#0", l);
				attn += json_object_get(seen, k) != NULL;
				int all = 1;
				for (size_t i = 0; i < 7; i++) {
					snprintf(k, sizeof k, "blk.%d.%s#0", l, sn[a][i]);
					all &= json_object_get(seen, k) != NULL;
				}
				ssm += all;
				snprintf(k, sizeof k, a == 1 ? "blk.%d.ffn_down.weight#0" :
					 "blk.%d.ffn_down_exps.weight#2", l);
				ffn += json_object_get(seen, k) != NULL;
				if (a == 2) { /* the shared expert's gate, the zero-centred QK-norm */
					snprintf(k, sizeof k, "blk.%d.ffn_gate_inp_shexp.weight#0", l);
					ffn += json_object_get(seen, k) != NULL;
				}
			}
			CHECK_MSG(attn && ssm && ffn, "%s: attention %d, recurrent %d, FFN %d in 4 layers",
				  fname, attn, ssm, ffn);
			json_decref(seen);
			continue;
		}
		if (strstr(arch, "mamba")) { /* a mixer of its own, no FFN */
			/* mamba2: dt from in_proj (no x_proj, dt_proj), a gated norm */
			static const char *const ssm[] = {"ssm_in.weight", "ssm_conv1d.weight",
							  "ssm_x.weight", "ssm_dt.weight", "ssm_dt.bias",
							  "ssm_a", "ssm_d", "ssm_out.weight"};
			static const char *const ssm2[] = {"ssm_in.weight", "ssm_conv1d.weight",
							   "ssm_dt.bias", "ssm_a", "ssm_d",
							   "ssm_norm.weight", "ssm_out.weight"};
			int v2 = !strcmp(arch, "mamba2");
			size_t nn = v2 ? sizeof ssm2 / sizeof ssm2[0] : sizeof ssm / sizeof ssm[0];
			for (size_t i = 0; i < nn; i++) {
				char k[64];
				snprintf(k, sizeof k, "blk.1.%s#0", v2 ? ssm2[i] : ssm[i]);
				CHECK_MSG(json_object_get(seen, k), "%s: no %s", fname, k);
			}
			json_decref(seen);
			continue;
		}
		CHECK_MSG(json_object_get(seen, "blk.1.attn_output.weight#0"), "%s: no attn_output", fname);
		CHECK_MSG(json_object_get(seen, "blk.1.ffn_down.weight#0") ||
			  (json_object_get(seen, "blk.1.ffn_down_exps.weight#0") &&
			   /* llama4 stores its experts stacked already */
			   (json_object_get(seen, "blk.1.ffn_down_exps.weight#3") ||
			    !strcmp(arch, "llama4_text"))), "%s: no ffn_down", fname);
		json_decref(seen);
	}
	CHECK_MSG(n_fixtures >= 15, "%d fixtures", n_fixtures);
	CHECK(n_tensors > 200);
	json_decref(m);
}

/* rows of a [n][2] test matrix: row r holds (10r, 10r+1) */
static void fill_rows(float *d, int n)
{
	for (int r = 0; r < n; r++) {
		d[2 * r] = 10.0f * r;
		d[2 * r + 1] = 10.0f * r + 1;
	}
}

static int rows_are(const float *d, const int *want, int n)
{
	for (int r = 0; r < n; r++)
		if (d[2 * r] != 10.0f * want[r] || d[2 * r + 1] != 10.0f * want[r] + 1)
			return 0;
	return 1;
}

static void t_permute(void)
{
	struct tfm_spec s;
	float d[16 * 2], scratch[16 * 2];
	memset(&s, 0, sizeof s);
	/* Q, 2 heads of head_dim 4.  HF rows of a head: [h0 i0, h0 i1, h1 i0, h1 i1]
	 * (half, i).  llama.cpp: reshape(n_head, 2, hd/2).swapaxes(1, 2) gives
	 * (i, half): [h0 i0, h1 i0, h0 i1, h1 i1] = old rows 0, 2, 1, 3. */
	s.n_head = 2;
	s.n_head_kv = 1;
	s.head_dim = 4;
	fill_rows(d, 8);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_Q, &s, d, 2, 8, scratch));
	static const int want_q[8] = {0, 2, 1, 3, 4, 6, 5, 7};
	CHECK(rows_are(d, want_q, 8));
	/* K, one KV head of head_dim 8: (half, i) -> (i, half): old rows
	 * 0, 4, 1, 5, 2, 6, 3, 7. */
	s.head_dim = 8;
	fill_rows(d, 8);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_K, &s, d, 2, 8, scratch));
	static const int want_k[8] = {0, 4, 1, 5, 2, 6, 3, 7};
	CHECK(rows_are(d, want_k, 8));
	/* a bias (1-D): its elements are the rows */
	float b[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	s.head_dim = 4;
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_Q, &s, b, 8, 1, scratch));
	int ok = 1;
	for (int i = 0; i < 8; i++)
		ok &= b[i] == (float)want_q[i];
	CHECK(ok);
	/* rows that do not split into the heads */
	CHECK_ST(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_Q, &s, d, 2, 6, scratch), TFM_E_INVAL);
	CHECK_ST(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_Q, &s, d, 2, 8, NULL), TFM_E_INVAL);
}

/* What the permutation is for: HF rotates q with the half-split (NeoX) rope,
 * llama.cpp's NORM rope rotates pairs (2i, 2i+1).  For any W and x,
 * permute(neox(W x)) == norm(permute(W) x).  Checked with both ropes written
 * out here, so the test does not depend on the index formula. */
static void rope_neox(float *q, int hd, int pos)
{
	for (int i = 0; i < hd / 2; i++) {
		double a = pos * pow(10000.0, -2.0 * i / hd), c = cos(a), s = sin(a);
		float x0 = q[i], x1 = q[i + hd / 2];
		q[i] = (float)(x0 * c - x1 * s);
		q[i + hd / 2] = (float)(x1 * c + x0 * s);
	}
}

static void rope_norm(float *q, int hd, int pos)
{
	for (int i = 0; i < hd / 2; i++) {
		double a = pos * pow(10000.0, -2.0 * i / hd), c = cos(a), s = sin(a);
		float x0 = q[2 * i], x1 = q[2 * i + 1];
		q[2 * i] = (float)(x0 * c - x1 * s);
		q[2 * i + 1] = (float)(x1 * c + x0 * s);
	}
}

static void t_permute_rope(void)
{
	enum { NH = 2, HD = 8, NIN = 3, NOUT = NH * HD };
	struct tfm_spec s;
	float w[NOUT * NIN], wp[NOUT * NIN], scratch[NOUT * NIN], x[NIN] = {0.3f, -1.1f, 0.7f};
	float q[NOUT], qp[NOUT], qv[NOUT];
	memset(&s, 0, sizeof s);
	s.n_head = NH;
	s.n_head_kv = NH;
	for (int i = 0; i < NOUT * NIN; i++)
		w[i] = wp[i] = (float)sin(1.0 + i * 0.37);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_Q, &s, wp, NIN, NOUT, scratch));
	for (int r = 0; r < NOUT; r++) {
		q[r] = qp[r] = 0;
		for (int c = 0; c < NIN; c++) {
			q[r] += w[r * NIN + c] * x[c];
			qp[r] += wp[r * NIN + c] * x[c];
		}
	}
	for (int h = 0; h < NH; h++) {
		rope_neox(q + h * HD, HD, 5);
		rope_norm(qp + h * HD, HD, 5);
	}
	/* permute the rotated HF vector the same way as the weight rows */
	memcpy(qv, q, sizeof q);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_PERMUTE_Q, &s, qv, NOUT, 1, scratch));
	double maxd = 0;
	for (int r = 0; r < NOUT; r++)
		maxd = fmax(maxd, fabs(qv[r] - qp[r]));
	CHECK_MSG(maxd < 1e-5, "max diff %g", maxd);
}

static void t_qkv(void)
{
	struct tfm_spec s;
	float d[12 * 2], scratch[12 * 2];
	memset(&s, 0, sizeof s);
	/* bloom / gpt_neox, 2 heads of head_dim 2: HF rows
	 * [h0 q0 q1 k0 k1 v0 v1 | h1 q0 q1 k0 k1 v0 v1] = 0..11;
	 * [q h0, q h1; k h0, k h1; v h0, v h1] = 0 1 6 7, 2 3 8 9, 4 5 10 11. */
	s.n_head = 2;
	s.n_head_kv = 2;
	s.head_dim = 2;
	fill_rows(d, 12);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_QKV_HEADS, &s, d, 2, 12, scratch));
	static const int want_h[12] = {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11};
	CHECK(rows_are(d, want_h, 12));
	/* falcon new architecture, 4 q heads, 2 kv heads, head_dim 1: HF rows
	 * [q0 q1 k0 v0 | q2 q3 k1 v1] = 0..7 -> [q0 q1 q2 q3 k0 k1 v0 v1]
	 * = 0 1 4 5 2 6 3 7. */
	s.n_head = 4;
	s.n_head_kv = 2;
	s.head_dim = 1;
	fill_rows(d, 8);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_QKV_GROUPS, &s, d, 2, 8, scratch));
	static const int want_g[8] = {0, 1, 4, 5, 2, 6, 3, 7};
	CHECK(rows_are(d, want_g, 8));
	/* falcon-7b multi-query (one kv head): already [q...; k; v] */
	s.n_head_kv = 1;
	fill_rows(d, 6);
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_QKV_GROUPS, &s, d, 2, 6, scratch));
	static const int want_mq[6] = {0, 1, 2, 3, 4, 5};
	CHECK(rows_are(d, want_mq, 6));
	/* a bias of the 2-head bloom example */
	float b[12];
	for (int i = 0; i < 12; i++)
		b[i] = (float)i;
	s.n_head = 2;
	s.n_head_kv = 2;
	s.head_dim = 2;
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_QKV_HEADS, &s, b, 12, 1, scratch));
	int ok = 1;
	for (int i = 0; i < 12; i++)
		ok &= b[i] == (float)want_h[i];
	CHECK(ok);
	/* head size that disagrees with the spec */
	s.head_dim = 3;
	CHECK_ST(tfm_hfmap_transform(TFM_HFMAP_QKV_HEADS, &s, d, 2, 12, scratch), TFM_E_INVAL);
}

static void t_transpose_add_one(void)
{
	struct tfm_spec s;
	memset(&s, 0, sizeof s);
	/* [2][3] {{1,2,3},{4,5,6}} -> [3][2] {{1,4},{2,5},{3,6}} */
	float d[6] = {1, 2, 3, 4, 5, 6}, scratch[6];
	static const float want[6] = {1, 4, 2, 5, 3, 6};
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_TRANSPOSE, &s, d, 3, 2, scratch));
	CHECK(!memcmp(d, want, sizeof want));
	float n[3] = {0.5f, -1.0f, 0.0f};
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_ADD_ONE, &s, n, 3, 1, NULL));
	CHECK(n[0] == 1.5f && n[1] == 0.0f && n[2] == 1.0f);
	/* informational flags leave the data alone */
	float k[3] = {1, 2, 3};
	CHECK_OK(tfm_hfmap_transform(TFM_HFMAP_FUSED_QKV | TFM_HFMAP_EXPERT, &s, k, 3, 1, NULL));
	CHECK(k[0] == 1 && k[1] == 2 && k[2] == 3);
}

static const struct t_case t_cases[] = {
	{"names_llama_family", t_names_llama_family},
	{"names_moe", t_names_moe},
	{"names_other", t_names_other},
	{"names_errors", t_names_errors},
	{"fixture_names", t_fixture_names},
	{"permute", t_permute},
	{"permute_rope", t_permute_rope},
	{"qkv", t_qkv},
	{"transpose_add_one", t_transpose_add_one},
};
T_MAIN(t_cases)
