/* presets-xlstm.c: transformers' xlstm (xLSTMForCausalLM, mLSTM blocks as
 * transformers 4.57.1's own code runs them, not the external xlstm
 * package).  Each block is x += mlstm(rmsnorm(x)); x += ffn(rmsnorm(x))
 * with a gated SiLU FFN of round_up(hidden * ffn_proj_factor,
 * ffn_round_up_to_multiple_of); then an RMS out_norm (always: transformers'
 * xLSTMModel ignores add_out_norm), the head and the logits soft-capped at
 * output_logit_soft_cap. */
#include "presets-impl.h"

/* transformers' round_up_to_next_multiple_of in floating point:
 * int(((x + m - 1) // m) * m) */
static int64_t round_up(double x, double m)
{
	return (int64_t)(floor((x + m - 1) / m) * m);
}

/* a dtype name that is not "float32": the states would be rounded to it */
static int not_f32(const json_t *c, const char *k)
{
	const char *v = gs(c, k, "float32");
	return strcmp(v, "float32") != 0;
}

int tfm_preset_xlstm(struct tfm_spec *s, const json_t *c)
{
	set_arch(s, "xlstm", "xlstm");
	s->pos_attn = TFM_POS_NONE;
	s->rope_dims = 0;
	s->n_vocab = gi(c, "vocab_size", 50304);
	int64_t hs = gi(c, "hidden_size", -1), ed = gi(c, "embedding_dim", -1);
	/* None: the other one (xLSTMConfig.__init__) */
	s->n_embd = hs >= 0 ? hs : ed >= 0 ? ed : 4096;
	if (ed >= 0 && ed != s->n_embd)
		return tfm_seterr(TFM_E_UNSUPPORTED, "xlstm: embedding_dim %lld != hidden_size %lld "
				  "is not supported", (long long)ed, (long long)s->n_embd);
	int64_t nl = gi(c, "num_hidden_layers", -1), nb = gi(c, "num_blocks", -1);
	s->n_layer = nb >= 0 ? nb : nl >= 0 ? nl : 32; /* xLSTMModel builds num_blocks blocks */
	if (nl >= 0 && nl != s->n_layer)
		return tfm_seterr(TFM_E_UNSUPPORTED, "xlstm: num_blocks %lld != num_hidden_layers "
				  "%lld is not supported", (long long)s->n_layer, (long long)nl);
	s->ssm_n_head = gi(c, "num_heads", 8);
	if (gb(c, "use_bias", 0))
		return tfm_seterr(TFM_E_UNSUPPORTED, "xlstm: use_bias=true is not supported yet");
	const char *wm = gs(c, "weight_mode", "single");
	if (strcmp(wm, "single"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "xlstm: weight_mode \"%.20s\" is not supported "
				  "(single: separate q, k, v, gate projections)", wm);
	if (not_f32(c, "inference_state_dtype"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "xlstm: inference_state_dtype \"%.20s\" is not "
				  "supported (float32)", gs(c, "inference_state_dtype", ""));
	s->tied_output = gb(c, "tie_word_embeddings", 0);
	gb(c, "add_out_norm", 1); /* transformers' xLSTMModel has its out_norm either way */
	s->norm = TFM_NORM_RMS;
	s->norm_eps = gf(c, "norm_eps", 1e-6);
	s->final_norm = 1;
	s->xlstm_eps = gf(c, "eps", 1e-6);
	/* xLSTMLayer: int(hidden_size * factor), unrounded (the cache's
	 * rounded widths only fit when they agree) */
	double qf = gf(c, "qk_dim_factor", 0.5), vf = gf(c, "v_dim_factor", 1.0);
	if (!(qf > 0 && qf < 1e4 && vf > 0 && vf < 1e4))
		return tfm_seterr(TFM_E_FORMAT, "xlstm: qk_dim_factor %g, v_dim_factor %g", qf, vf);
	s->xlstm_qk_dim = (int64_t)((double)s->n_embd * qf);
	s->xlstm_v_dim = (int64_t)((double)s->n_embd * vf);
	double pf = gf(c, "ffn_proj_factor", 2.667);
	int64_t mult = gi(c, "ffn_round_up_to_multiple_of", 64);
	if (!(pf > 0 && pf < 1e4) || mult < 1 || mult > 1 << 20)
		return tfm_seterr(TFM_E_FORMAT, "xlstm: ffn_proj_factor %g, round to %lld", pf,
				  (long long)mult);
	s->n_ff = round_up((double)s->n_embd * pf, (double)mult);
	s->gated = 1;
	s->act = TFM_ACT_SILU;
	/* soft caps: None (null) is none */
	s->xlstm_gate_cap = gnull(c, "gate_soft_cap") ? 0 : (float)gf(c, "gate_soft_cap", 15.0);
	s->final_softcap = gnull(c, "output_logit_soft_cap") ? 0
			   : (float)gf(c, "output_logit_soft_cap", 30.0);
	if (s->xlstm_gate_cap < 0 || s->final_softcap < 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "xlstm: a negative soft cap is not supported");
	/* kernel choices (the chunkwise, sequence and step kernels sum the same
	 * terms: tfm runs the step); mode "train" cannot run transformers'
	 * forward at all */
	gs(c, "mode", "inference");
	gi(c, "chunk_size", 64);
	s->bos_id = (int32_t)gi(c, "bos_token_id", 0);
	s->eos_id = (int32_t)gi(c, "eos_token_id", 2);
	s->pad_id = (int32_t)gi(c, "pad_token_id", 1);
	if (s->ssm_n_head < 1 || s->xlstm_qk_dim < 1 || s->xlstm_v_dim < 1 ||
	    s->xlstm_qk_dim % s->ssm_n_head || s->xlstm_v_dim % s->ssm_n_head)
		return tfm_seterr(TFM_E_FORMAT, "xlstm: %lld heads do not divide qk width %lld and "
				  "v width %lld", (long long)s->ssm_n_head, (long long)s->xlstm_qk_dim,
				  (long long)s->xlstm_v_dim);
	all_layers(s->layer_kind, s->n_layer, TFM_LAYER_MLSTM);
	all_layers(s->layer_rope, s->n_layer, 0);
	return TFM_OK;
}
