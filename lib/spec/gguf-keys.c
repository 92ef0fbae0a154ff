/* gguf-keys.c: spec <-> GGUF metadata.  Every knob is written as
 * tfm.<group>.<knob> (formats/spec-keys.md), beside llama.cpp's own keys for
 * the architecture so llama.cpp-ecosystem tools read the file too.  Reading
 * prefers the tfm.* keys; without them the spec is derived from llama.cpp's
 * keys for the architectures listed in from_llamacpp(). */
#include "spec-impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TRY(x) do { if ((st = (x)) != TFM_OK) goto out; } while (0)

static const char *arch_of(const struct tfm_spec *s)
{
	return s->gguf_arch[0] ? s->gguf_arch : s->arch;
}

/* "<arch>.<name>" */
static const char *ak(char *buf, size_t n, const char *arch, const char *name)
{
	snprintf(buf, n, "%s.%s", arch, name);
	return buf;
}

static int put_tfm(const struct tfm_spec *s, struct tfm_gguf *g)
{
	int st = TFM_OK;
	char key[96];
	for (int i = 0; i < tfm_spec_n_knobs_; i++) {
		const struct tfm_spec_knob *k = &tfm_spec_knobs_[i];
		const char *p = (const char *)s + k->off;
		snprintf(key, sizeof(key), "tfm.%s", k->key);
		switch (k->type) {
		case KT_I64: TRY(tfm_gguf_set_i64(g, key, *(const int64_t *)p)); break;
		case KT_INT: TRY(tfm_gguf_set_i32(g, key, *(const int *)p)); break;
		case KT_I32: TRY(tfm_gguf_set_i32(g, key, *(const int32_t *)p)); break;
		case KT_BOOL: TRY(tfm_gguf_set_bool(g, key, *(const int *)p)); break;
		case KT_ENUM: {
			const char *n = tfm_spec_enum_name(k->key, *(const int *)p);
			if (!n) {
				st = tfm_seterr(TFM_E_INVAL, "%s: bad value %d", k->key, *(const int *)p);
				goto out;
			}
			TRY(tfm_gguf_set_str(g, key, n));
			break;
		}
		case KT_F32: TRY(tfm_gguf_set_f32(g, key, *(const float *)p)); break;
		case KT_F64: TRY(tfm_gguf_set_f64(g, key, *(const double *)p)); break;
		case KT_STR: TRY(tfm_gguf_set_str(g, key, p)); break;
		case KT_F32ARR:
			if (s->n_rope_factors > 0)
				TRY(tfm_gguf_set_arr(g, key, TFM_GGUF_FLOAT32, p, s->n_rope_factors));
			break;
		case KT_U8ARR:
			TRY(tfm_gguf_set_arr(g, key, TFM_GGUF_UINT8, p, tfm_spec_n_layers(s)));
			break;
		}
	}
out:
	return st;
}

/* llama.cpp's keys, as convert_hf_to_gguf.py writes them. */
static int put_llamacpp(const struct tfm_spec *s, struct tfm_gguf *g)
{
	int st = TFM_OK;
	const char *a = arch_of(s);
	char k[128];
	int has_attn = 0, n_window = 0;
	for (int64_t i = 0; i < tfm_spec_n_layers(s); i++) {
		has_attn |= s->layer_kind[i] == TFM_LAYER_ATTN;
		n_window += s->layer_window[i];
	}
	TRY(tfm_gguf_set_str(g, "general.architecture", a));
	if (s->n_ctx_train > 0)
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "context_length"), (uint32_t)s->n_ctx_train));
	else if (!has_attn) /* a state has no context length: llama.cpp's converter writes 2^20 */
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "context_length"), 1u << 20));
	TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "embedding_length"), (uint32_t)s->n_embd));
	TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "block_count"), (uint32_t)s->n_layer));
	if (s->family == TFM_FAMILY_ENCDEC)
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "decoder_block_count"),
				     (uint32_t)s->n_layer_dec));
	if (s->family == TFM_FAMILY_ENCDEC && s->dec_start_id >= 0) /* llama.cpp's t5 reads it */
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "decoder_start_token_id"),
				     (uint32_t)s->dec_start_id));
	TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "vocab_size"), (uint32_t)s->n_vocab));
	if (s->n_ff > 0)
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "feed_forward_length"), (uint32_t)s->n_ff));
	if (s->norm == TFM_NORM_RMS)
		TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "attention.layer_norm_rms_epsilon"),
				     (float)s->norm_eps));
	else if (s->norm == TFM_NORM_LAYER)
		TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "attention.layer_norm_epsilon"),
				     (float)s->norm_eps));
	if (has_attn) {
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.head_count"), (uint32_t)s->n_head));
		if (!strcmp(a, "jamba")) { /* per layer, 0 marks a recurrent layer */
			int32_t kv[TFM_MAX_LAYERS];
			for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
				kv[i] = s->layer_kind[i] == TFM_LAYER_ATTN ? (int32_t)s->n_head_kv : 0;
			TRY(tfm_gguf_set_arr(g, ak(k, sizeof(k), a, "attention.head_count_kv"),
					     TFM_GGUF_INT32, kv, s->n_layer));
		} else {
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.head_count_kv"),
					     (uint32_t)s->n_head_kv));
		}
		if (s->kv_lora_rank) {
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.key_length"),
					     (uint32_t)(s->qk_nope_dim + s->qk_rope_dim)));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.value_length"),
					     (uint32_t)s->v_head_dim));
			if (s->q_lora_rank)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.q_lora_rank"),
						     (uint32_t)s->q_lora_rank));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.kv_lora_rank"),
					     (uint32_t)s->kv_lora_rank));
		} else if (s->head_dim * s->n_head != s->n_embd) {
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.key_length"),
					     (uint32_t)s->head_dim));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.value_length"),
					     (uint32_t)s->head_dim));
		}
		if (s->family == TFM_FAMILY_ENCODER) {
			/* llama.cpp's pooling ids: 0 none, 1 mean, 2 cls, 3 last, 4
			 * rank (its classifier head); it has no max or mean_sqrt_len */
			static const int lpool[] = { 0, 2, 1, 3, -1, -1 };
			TRY(tfm_gguf_set_bool(g, ak(k, sizeof(k), a, "attention.causal"), 0));
			/* llama.cpp's BERT loader needs it (type_vocab_size) */
			if (s->n_token_types > 0)
				TRY(tfm_gguf_set_u32(g, "tokenizer.ggml.token_type_count",
						     (uint32_t)s->n_token_types));
			if (s->head == TFM_HEAD_CLASSIFIER)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "pooling_type"), 4));
			else if (s->pooling >= 0 && s->pooling < 6 && lpool[s->pooling] >= 0)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "pooling_type"),
						     (uint32_t)lpool[s->pooling]));
		}
		if (s->window > 0 && n_window)
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.sliding_window"),
					     (uint32_t)s->window));
		if (!strcmp(a, "modern-bert")) {
			/* llama.cpp: layer i local when i % pattern != 0 (its symmetric
			 * window of sliding_window / 2 either side), or an array; the
			 * classifier's pooling (llama.cpp ids: 1 mean, 2 cls) */
			int64_t np = 0;
			for (int64_t p = 1; p <= s->n_layer && !np; p++) {
				int ok = 1;
				for (int64_t i = 0; i < s->n_layer && ok; i++)
					ok = s->layer_window[i] == (i % p != 0);
				np = ok ? p : 0;
			}
			if (np)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a,
							   "attention.sliding_window_pattern"),
						     (uint32_t)np));
			if (s->head == TFM_HEAD_CLASSIFIER)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "classifier.pooling_type"),
						     s->pooling == TFM_POOL_MEAN ? 1 : 2));
			if (s->act != TFM_ACT_GELU) /* llama.cpp's default: GEGLU */
				TRY(tfm_gguf_set_str(g, ak(k, sizeof(k), a, "hidden_activation"),
						     tfm_spec_enum_name("ffn.act", s->act)));
		}
		if (!strcmp(a, "llama4") && (s->chunk <= 0 || !n_window)) /* llama.cpp: no chunks */
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.sliding_window"), 0));
		if (s->attn_softcap > 0)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "attn_logit_softcapping"),
					     s->attn_softcap));
	}
	if (s->final_softcap > 0)
		TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "final_logit_softcapping"), s->final_softcap));
	if (s->pos_attn == TFM_POS_ROPE) {
		TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "rope.freq_base"), (float)s->rope_theta));
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "rope.dimension_count"),
				     (uint32_t)s->rope_dims));
		if (s->rope_theta_local > 0)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "rope.freq_base_swa"),
					     (float)s->rope_theta_local));
		const char *t = NULL;
		switch (s->rope_scaling) {
		case TFM_ROPE_SCALE_LINEAR: t = "linear"; break;
		case TFM_ROPE_SCALE_YARN: t = "yarn"; break;
		case TFM_ROPE_SCALE_LONGROPE: t = "longrope"; break;
		}
		if (t) {
			TRY(tfm_gguf_set_str(g, ak(k, sizeof(k), a, "rope.scaling.type"), t));
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "rope.scaling.factor"),
					     (float)s->rope_factor));
			if (s->rope_orig_ctx)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a,
							   "rope.scaling.original_context_length"),
						     (uint32_t)s->rope_orig_ctx));
			if (s->yarn_attn_factor > 0)
				TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "rope.scaling.attn_factor"),
						     (float)s->yarn_attn_factor));
		}
	} else if (s->pos_attn == TFM_POS_ALIBI) {
		TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "attention.max_alibi_bias"),
				     (float)s->alibi_max_bias));
	} else if (s->pos_attn == TFM_POS_T5) {
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "attention.relative_buckets_count"),
				     (uint32_t)s->t5_buckets));
	}
	if (s->n_expert > 0) {
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_count"), (uint32_t)s->n_expert));
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_used_count"),
				     (uint32_t)s->n_expert_used));
		if (s->n_ff_expert != s->n_ff)
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_feed_forward_length"),
					     (uint32_t)s->n_ff_expert));
		if (s->n_expert_shared) {
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_shared_count"),
					     (uint32_t)s->n_expert_shared));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_shared_feed_forward_length"),
					     (uint32_t)s->n_ff_shared));
		}
		if (s->moe_n_group > 0) {
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_group_count"),
					     (uint32_t)s->moe_n_group));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_group_used_count"),
					     (uint32_t)s->moe_topk_group));
		}
		if (!strcmp(a, "llama4"))
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "interleave_moe_layer_step"),
					     (uint32_t)(s->moe_every > 0 ? s->moe_every : 1)));
		if (s->moe_first_dense)
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "leading_dense_block_count"),
					     (uint32_t)s->moe_first_dense));
		if (s->moe_routed_scale != 1.0)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "expert_weights_scale"),
					     (float)s->moe_routed_scale));
		TRY(tfm_gguf_set_bool(g, ak(k, sizeof(k), a, "expert_weights_norm"), s->moe_norm_topk));
		/* llama.cpp's gating-function ids: 1 softmax, 2 sigmoid */
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "expert_gating_func"),
				     s->moe_gate == TFM_MOE_GATE_SIGMOID ? 2 : 1));
	}
	if (s->ssm_d_inner > 0) {
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "ssm.conv_kernel"), (uint32_t)s->ssm_d_conv));
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "ssm.inner_size"), (uint32_t)s->ssm_d_inner));
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "ssm.state_size"), (uint32_t)s->ssm_d_state));
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "ssm.time_step_rank"),
				     (uint32_t)(s->ssm_n_head ? s->ssm_n_head : s->ssm_dt_rank)));
		if (s->ssm_n_group)
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "ssm.group_count"),
					     (uint32_t)s->ssm_n_group));
		if (!strcmp(a, "mamba"))
			TRY(tfm_gguf_set_bool(g, ak(k, sizeof(k), a, "ssm.dt_b_c_rms"), s->ssm_dt_norm));
	}
	if (s->rwkv_head_size)
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "wkv.head_size"), (uint32_t)s->rwkv_head_size));
	if (!strcmp(a, "rwkv6") || !strcmp(a, "rwkv7")) {
		/* llama.cpp's: the weights as trained (no rescaling), two token
		 * shifts (time and channel mixing), the low-rank sizes */
		TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "token_shift_count"), 2));
		if (a[4] == '6') {
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "rescale_every_n_layers"), 0));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "time_mix_extra_dim"),
					     (uint32_t)s->rwkv_lora_mix));
			TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, "time_decay_extra_dim"),
					     (uint32_t)s->rwkv_lora_w));
		} else {
			static const char *const rk[4] = {"attention.decay_lora_rank",
							  "attention.iclr_lora_rank",
							  "attention.value_residual_mix_lora_rank",
							  "attention.gate_lora_rank"};
			const int64_t rv[4] = {s->rwkv_lora_w, s->rwkv_lora_a, s->rwkv_lora_v,
					       s->rwkv_lora_g};
			for (int i = 0; i < 4; i++)
				TRY(tfm_gguf_set_u32(g, ak(k, sizeof(k), a, rk[i]), (uint32_t)rv[i]));
		}
	}
	if (s->head_scale > 0 && s->head_scale != 1.0f && !strcmp(a, "command-r"))
		TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "logit_scale"), s->head_scale));
	if (!strcmp(a, "granite")) { /* llama.cpp divides the logits by logit_scale */
		if (s->head_scale > 0 && s->head_scale != 1.0f)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "logit_scale"), 1.0f / s->head_scale));
		if (s->embd_scale > 0 && s->embd_scale != 1.0f)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "embedding_scale"), s->embd_scale));
		if (s->residual_scale > 0 && s->residual_scale != 1.0f)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "residual_scale"), s->residual_scale));
		if (s->attn_scale > 0)
			TRY(tfm_gguf_set_f32(g, ak(k, sizeof(k), a, "attention.scale"), s->attn_scale));
	}
	if (s->parallel_residual && !strcmp(a, "gptneox"))
		TRY(tfm_gguf_set_bool(g, ak(k, sizeof(k), a, "use_parallel_residual"), 1));
out:
	return st;
}

int tfm_spec_to_gguf(const struct tfm_spec *s, struct tfm_gguf *g)
{
	int st = tfm_spec_validate(s);
	if (st)
		return st;
	st = put_llamacpp(s, g);
	if (!st)
		st = put_tfm(s, g);
	return st;
}

static int get_tfm(struct tfm_spec *s, const struct tfm_gguf *g)
{
	char key[96];
	int st = TFM_OK;
	for (int i = 0; i < tfm_spec_n_knobs_; i++) {
		const struct tfm_spec_knob *k = &tfm_spec_knobs_[i];
		char *p = (char *)s + k->off;
		snprintf(key, sizeof(key), "tfm.%s", k->key);
		int64_t idx = tfm_gguf_find(g, key);
		if (idx < 0)
			continue;   /* a knob newer than the file keeps its default */
		int64_t iv;
		double dv;
		const char *sv;
		size_t len;
		switch (k->type) {
		case KT_I64:
		case KT_INT:
		case KT_I32:
		case KT_BOOL:
			TRY(tfm_gguf_get_int(g, key, &iv));
			if (k->type == KT_I64)
				*(int64_t *)p = iv;
			else if (k->type == KT_I32)
				*(int32_t *)p = (int32_t)iv;
			else
				*(int *)p = (int)iv;
			break;
		case KT_ENUM: {
			TRY(tfm_gguf_get_str(g, key, &sv, &len));
			char name[32];
			snprintf(name, sizeof(name), "%.*s", (int)len, sv);
			int v = tfm_spec_enum_value(k->key, name);
			if (v < 0) {
				st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: unknown value '%s'", key, name);
				goto out;
			}
			*(int *)p = v;
			break;
		}
		case KT_F32:
		case KT_F64:
			TRY(tfm_gguf_get_float(g, key, &dv));
			if (k->type == KT_F32)
				*(float *)p = (float)dv;
			else
				*(double *)p = dv;
			break;
		case KT_STR:
			TRY(tfm_gguf_get_str(g, key, &sv, &len));
			if (len >= sizeof(s->arch)) {
				st = tfm_seterr(TFM_E_FORMAT, "%s: too long", key);
				goto out;
			}
			memset(p, 0, sizeof(s->arch));
			memcpy(p, sv, len);
			break;
		case KT_F32ARR: {
			int64_t n = tfm_gguf_arr_n(g, idx);
			if (n < 0 || n > TFM_MAX_ROPE_FACTORS) {
				st = tfm_seterr(TFM_E_FORMAT, "%s: %lld factors (at most %d)", key,
						(long long)n, TFM_MAX_ROPE_FACTORS);
				goto out;
			}
			TRY(tfm_gguf_get_arr_f32(g, key, (float *)p, n));
			break;
		}
		case KT_U8ARR: {
			int et;
			int64_t n;
			const void *data;
			TRY(tfm_gguf_get_arr(g, key, &et, &n, &data));
			if ((et != TFM_GGUF_UINT8 && et != TFM_GGUF_INT8) || n > TFM_MAX_LAYERS) {
				st = tfm_seterr(TFM_E_FORMAT, "%s: expected at most %d uint8", key,
						TFM_MAX_LAYERS);
				goto out;
			}
			memcpy(p, data, (size_t)n);
			break;
		}
		}
	}
out:
	return st ? tfm_adderr(st, "spec") : TFM_OK;
}

/* llama.cpp-only files. */
static int64_t lget_i(const struct tfm_gguf *g, const char *a, const char *name, int64_t d)
{
	char k[128];
	return tfm_gguf_get_int_or(g, ak(k, sizeof(k), a, name), d);
}
static double lget_f(const struct tfm_gguf *g, const char *a, const char *name, double d)
{
	char k[128];
	return tfm_gguf_get_float_or(g, ak(k, sizeof(k), a, name), d);
}

static int rope_factor_tensor(const struct tfm_gguf *g, const char *name, float *dst,
			      int64_t *n)
{
	const struct tfm_gguf_tensor *t = tfm_gguf_find_tensor(g, name);
	if (!t)
		return 0;
	if (t->type != TFM_TYPE_F32 || !t->data || t->ne[0] > TFM_MAX_ROPE_FACTORS)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: expected at most %d f32 values", name,
				  TFM_MAX_ROPE_FACTORS);
	memcpy(dst, t->data, (size_t)t->ne[0] * sizeof(float));
	*n = t->ne[0];
	return 1;
}

/* Does the file have tensor blk.<layer>.<name>? */
static int has_t(const struct tfm_gguf *g, int64_t layer, const char *name)
{
	char n[128];
	snprintf(n, sizeof n, "blk.%lld.%s", (long long)layer, name);
	return tfm_gguf_find_tensor(g, n) != NULL;
}

/* llama.cpp's mamba and mamba2: every layer of the kind a mixer (no
 * attention, no FFN), its sizes from the ssm.* keys, biases as the
 * tensors say */
static void ssm_only(struct tfm_spec *s, const struct tfm_gguf *g, const char *a, int kind)
{
	s->ssm_d_conv = lget_i(g, a, "ssm.conv_kernel", 0);
	s->ssm_d_inner = lget_i(g, a, "ssm.inner_size", 0);
	s->ssm_d_state = lget_i(g, a, "ssm.state_size", 0);
	s->ssm_conv_bias = !tfm_gguf_n_tensors(g) || has_t(g, 0, "ssm_conv1d.bias");
	s->ssm_bias = has_t(g, 0, "ssm_in.bias");
	s->pos_attn = TFM_POS_NONE;
	s->rope_dims = 0;
	s->gated = 0;
	s->n_head = s->n_head_kv = s->head_dim = 0;
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++) {
		s->layer_kind[i] = kind;
		s->layer_rope[i] = 0;
	}
}

/* llama.cpp's rwkv6 and rwkv7 (its converter's files, or tfm's without the
 * tfm.* keys): every layer an RWKV block (LayerNorms with biases, the
 * embeddings' own LayerNorm, relu^2 channel mixing); llama.cpp's
 * rescale_every_n_layers divides the stored weights, refused here */
static int rwkv_from_llamacpp(struct tfm_spec *s, const struct tfm_gguf *g, const char *a)
{
	char k[128];
	snprintf(s->arch, sizeof(s->arch), "rwkv");
	s->rwkv_version = a[4] - '0';
	s->rwkv_minor = 0;
	s->rwkv_head_size = lget_i(g, a, "wkv.head_size", 0);
	if (lget_i(g, a, "token_shift_count", 2) != 2)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s.token_shift_count %lld not supported (2 is)",
				  a, (long long)lget_i(g, a, "token_shift_count", 2));
	if (lget_i(g, a, "rescale_every_n_layers", 0) != 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s.rescale_every_n_layers %lld (weights "
				  "divided by the converter) not supported", a,
				  (long long)lget_i(g, a, "rescale_every_n_layers", 0));
	if (s->rwkv_version == 6) {
		s->rwkv_lora_mix = lget_i(g, a, "time_mix_extra_dim", 0);
		s->rwkv_lora_w = lget_i(g, a, "time_decay_extra_dim", 0);
	} else {
		s->rwkv_lora_w = lget_i(g, a, "attention.decay_lora_rank", 0);
		s->rwkv_lora_a = lget_i(g, a, "attention.iclr_lora_rank", 0);
		s->rwkv_lora_v = lget_i(g, a, "attention.value_residual_mix_lora_rank", 0);
		s->rwkv_lora_g = lget_i(g, a, "attention.gate_lora_rank", 0);
		if (s->rwkv_lora_g <= 0)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: RWKV v7 without its output gate "
					  "(%s) not supported", a,
					  ak(k, sizeof(k), a, "attention.gate_lora_rank"));
	}
	s->norm = TFM_NORM_LAYER;
	s->norm_bias = 1;
	s->norm_eps = lget_f(g, a, "attention.layer_norm_epsilon", 1e-5);
	s->embd_norm = 1;
	s->act = TFM_ACT_RELU2;
	s->gated = 0;
	s->pos_attn = TFM_POS_NONE;
	s->rope_dims = 0;
	s->n_head = s->n_head_kv = s->head_dim = 0;
	s->rwkv_rescale = 0;
	for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++) {
		s->layer_kind[i] = TFM_LAYER_RWKV;
		s->layer_rope[i] = 0;
	}
	return TFM_OK;
}

static int from_llamacpp(struct tfm_spec *s, const struct tfm_gguf *g, const char *a)
{
	static const char *const known[] = { "llama", "qwen2", "qwen3", "gemma", "gemma2",
					     "gemma3", "phi3", "gpt2", "bert", "qwen2moe", "qwen3moe",
					     "starcoder2", "olmo2", "stablelm", "olmoe", "olmo", "granite",
					     "command-r", "phi2", "gptj", "gptneox", "falcon", "bloom", "mpt",
					     "mamba", "mamba2", "llama4", "deepseek2", "modern-bert", "jamba",
					     "rwkv6", "rwkv7", "t5", NULL };
	int ok = 0;
	for (int i = 0; known[i]; i++)
		ok |= !strcmp(known[i], a);
	if (!ok)
		return tfm_seterr(TFM_E_UNSUPPORTED, "GGUF architecture '%s' without tfm.* keys "
				  "is not supported (known: llama, qwen2, qwen3, gemma, gemma2, "
				  "gemma3, phi3, gpt2, bert, qwen2moe, qwen3moe, starcoder2, olmo2, "
				  "stablelm, olmoe, olmo, granite, command-r, phi2, gptj, gptneox, "
				  "falcon, bloom, mpt, mamba, mamba2, llama4, deepseek2, modern-bert, jamba, "
				  "rwkv6, rwkv7, t5)", a);
	char k[128];
	snprintf(s->arch, sizeof(s->arch), "%s", a);
	snprintf(s->gguf_arch, sizeof(s->gguf_arch), "%s", a);
	s->n_embd = lget_i(g, a, "embedding_length", 0);
	s->n_layer = lget_i(g, a, "block_count", 0);
	if (s->n_embd <= 0 || s->n_layer <= 0)
		return tfm_seterr(TFM_E_FORMAT, "%s.embedding_length / %s.block_count missing", a, a);
	s->n_ctx_train = lget_i(g, a, "context_length", 0);
	s->n_ff = lget_i(g, a, "feed_forward_length", 0);
	s->n_head = lget_i(g, a, "attention.head_count", 0);
	s->n_head_kv = strcmp(a, "jamba") ? lget_i(g, a, "attention.head_count_kv", s->n_head)
				      : s->n_head; /* jamba's: per layer, below */
	s->head_dim = lget_i(g, a, "attention.key_length", s->n_head ? s->n_embd / s->n_head : 0);
	s->rope_dims = lget_i(g, a, "rope.dimension_count", s->head_dim);
	s->rope_theta = lget_f(g, a, "rope.freq_base", !strcmp(a, "gemma3") ? 1e6 : 10000);
	s->norm_eps = lget_f(g, a, "attention.layer_norm_rms_epsilon",
			     lget_f(g, a, "attention.layer_norm_epsilon", 1e-5));
	s->n_vocab = lget_i(g, a, "vocab_size", 0);
	int64_t ti = tfm_gguf_find(g, "tokenizer.ggml.tokens");
	if (s->n_vocab <= 0 && ti >= 0)
		s->n_vocab = tfm_gguf_arr_n(g, ti);
	const struct tfm_gguf_tensor *te = tfm_gguf_find_tensor(g, "token_embd.weight");
	if (s->n_vocab <= 0 && te)
		s->n_vocab = te->ne[1];
	/* without tensors (a vocab-only file) tying is the architecture's habit */
	if (tfm_gguf_n_tensors(g) > 0)
		s->tied_output = !tfm_gguf_find_tensor(g, "output.weight");
	else
		s->tied_output = !strcmp(a, "gpt2") || !strncmp(a, "gemma", 5) || !strcmp(a, "bert");
	s->bos_id = (int32_t)tfm_gguf_get_int_or(g, "tokenizer.ggml.bos_token_id", -1);
	s->eos_id = (int32_t)tfm_gguf_get_int_or(g, "tokenizer.ggml.eos_token_id", -1);
	s->pad_id = (int32_t)tfm_gguf_get_int_or(g, "tokenizer.ggml.padding_token_id", -1);

	/* rope scaling */
	const char *rt = tfm_gguf_get_str_or(g, ak(k, sizeof(k), a, "rope.scaling.type"), NULL);
	s->rope_factor = lget_f(g, a, "rope.scaling.factor", 1.0);
	s->rope_orig_ctx = lget_i(g, a, "rope.scaling.original_context_length", 0);
	s->yarn_attn_factor = lget_f(g, a, "rope.scaling.attn_factor", 0);
	if (rt && !strcmp(rt, "linear"))
		s->rope_scaling = TFM_ROPE_SCALE_LINEAR;
	else if (rt && !strcmp(rt, "yarn"))
		s->rope_scaling = TFM_ROPE_SCALE_YARN;
	else if (rt && !strcmp(rt, "longrope"))
		s->rope_scaling = TFM_ROPE_SCALE_LONGROPE;
	else if (rt && strcmp(rt, "none"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s.rope.scaling.type '%s' is not supported", a, rt);
	double lin = lget_f(g, a, "rope.scale_linear", 0);   /* older files */
	if (!rt && lin > 0 && lin != 1.0) {
		s->rope_scaling = TFM_ROPE_SCALE_LINEAR;
		s->rope_factor = lin;
	}
	if (tfm_gguf_find_tensor(g, "rope_freqs.weight"))
		return tfm_seterr(TFM_E_UNSUPPORTED, "rope_freqs.weight (llama3 rope scaling as a "
				  "tensor) without tfm.* keys is not supported");
	int64_t nf = 0;
	int r1 = rope_factor_tensor(g, "rope_factors_long.weight", s->rope_long_factors, &nf);
	int r2 = rope_factor_tensor(g, "rope_factors_short.weight", s->rope_short_factors, &nf);
	if (r1 < 0 || r2 < 0)
		return r1 < 0 ? r1 : r2;
	if (r1 && r2) {
		s->n_rope_factors = nf;
		s->rope_scaling = TFM_ROPE_SCALE_LONGROPE;
		if (s->rope_orig_ctx)
			s->rope_factor = (double)s->n_ctx_train / s->rope_orig_ctx;
	}

	int64_t w = lget_i(g, a, "attention.sliding_window", 0);
	int64_t ne = lget_i(g, a, "expert_count", 0);
	if (ne > 0) {
		s->n_expert = ne;
		s->n_expert_used = lget_i(g, a, "expert_used_count", 2);
		s->n_ff_expert = lget_i(g, a, "expert_feed_forward_length", s->n_ff);
		s->moe_norm_topk = (int)lget_i(g, a, "expert_weights_norm", 1);
		/* 1 softmax, 2 sigmoid (llama.cpp's llama4 graph: always sigmoid) */
		int64_t gf = lget_i(g, a, "expert_gating_func", !strcmp(a, "llama4") ? 2 : 1);
		if (!strcmp(a, "deepseek2") && (gf == 1 || gf == 2))
			s->moe_gate = gf == 2 ? TFM_MOE_GATE_SIGMOID : TFM_MOE_GATE_SOFTMAX;
		else if (gf != 1 && strcmp(a, "llama4"))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s.expert_gating_func %lld without tfm.* "
					  "keys is not supported", a, (long long)gf);
		s->n_expert_shared = lget_i(g, a, "expert_shared_count", 0);
		if (s->n_expert_shared > 0) {
			s->n_ff_shared = lget_i(g, a, "expert_shared_feed_forward_length", 0);
			for (int64_t i = 0; i < s->n_layer; i++)
				s->moe_shared_gate |= has_t(g, i, "ffn_gate_inp_shexp.weight");
		}
		/* which layers route: those with a router (every one in llama.cpp's
		 * files; a file may mix dense layers in) */
		int with_tensors = tfm_gguf_n_tensors(g) > 0;
		for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
			s->layer_moe[i] = !with_tensors || has_t(g, i, "ffn_gate_inp.weight");
	}

	if (tfm_gguf_find(g, ak(k, sizeof(k), a, "attention.clamp_kqv")) >= 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s.attention.clamp_kqv without tfm.* keys is "
				  "not supported", a);
	if (!strcmp(a, "jamba")) {
		/* attention.head_count_kv per layer, 0 for a mamba layer (as
		 * llama.cpp's converter writes it); mamba layers with dt/B/C
		 * norm weights (eps: the model's); no positions; the experts'
		 * weights not renormalised (llama.cpp's jamba graph) */
		int64_t kv[TFM_MAX_LAYERS], nl = s->n_layer;
		if (nl > TFM_MAX_LAYERS ||
		    tfm_gguf_get_arr_i64(g, ak(k, sizeof(k), a, "attention.head_count_kv"), kv, nl))
			return tfm_seterr(TFM_E_FORMAT, "jamba.attention.head_count_kv must be an array "
					  "of %lld layers", (long long)nl);
		s->n_head_kv = 0;
		for (int64_t i = 0; i < nl; i++) {
			if (kv[i] < 0 || (kv[i] && s->n_head_kv && kv[i] != s->n_head_kv))
				return tfm_seterr(TFM_E_UNSUPPORTED, "jamba: KV heads differ between "
						  "attention layers (%lld)", (long long)kv[i]);
			if (kv[i])
				s->n_head_kv = kv[i];
			s->layer_kind[i] = kv[i] ? TFM_LAYER_ATTN : TFM_LAYER_MAMBA;
			s->layer_rope[i] = 0;
		}
		s->ssm_d_conv = lget_i(g, a, "ssm.conv_kernel", 0);
		s->ssm_d_inner = lget_i(g, a, "ssm.inner_size", 0);
		s->ssm_d_state = lget_i(g, a, "ssm.state_size", 0);
		s->ssm_dt_rank = lget_i(g, a, "ssm.time_step_rank", 0);
		s->ssm_dt_norm = s->ssm_norm_w = 1;
		int64_t m0 = 0;
		while (m0 < nl - 1 && kv[m0])
			m0++;
		s->ssm_conv_bias = !tfm_gguf_n_tensors(g) || has_t(g, m0, "ssm_conv1d.bias");
		s->ssm_bias = has_t(g, m0, "ssm_in.bias");
		s->pos_attn = TFM_POS_NONE;
		s->rope_dims = 0;
		s->moe_norm_topk = (int)lget_i(g, a, "expert_weights_norm", 0);
		s->n_ctx_train = s->n_ctx_train > 0 ? s->n_ctx_train : 262144;
	} else if (!strcmp(a, "mamba")) {
		/* every layer a mamba mixer, no attention, no FFN; falcon_mamba is
		 * mamba with ssm.dt_b_c_rms (llama.cpp's dt/B/C norms use the
		 * model's rms eps: mixer_rms_eps is not in its keys); biases as
		 * the tensors say */
		ssm_only(s, g, a, TFM_LAYER_MAMBA);
		s->ssm_dt_rank = lget_i(g, a, "ssm.time_step_rank", 0);
		s->ssm_dt_norm = lget_i(g, a, "ssm.dt_b_c_rms", 0) != 0;
		if (s->ssm_dt_norm)
			snprintf(s->arch, sizeof(s->arch), "falcon_mamba");
	} else if (!strcmp(a, "t5")) {
		/* llama.cpp's t5 (its converter's files): encoder and decoder
		 * stacks (decoder_block_count), T5's relative position buckets
		 * with llama.cpp's fixed maximum distance 128, RMS norms, no
		 * 1/sqrt(d) scaling, a gated tanh-GELU FFN where ffn_gate is
		 * present (v1.1, Flan, mT5), else ReLU (v1.0); a head tied to the
		 * embeddings takes transformers' d_model^-0.5 rescale (llama.cpp
		 * leaves it out, which changes no greedy choice) */
		s->family = TFM_FAMILY_ENCDEC;
		s->cross_attn = 1;
		s->n_layer_dec = lget_i(g, a, "decoder_block_count", s->n_layer);
		s->n_head_kv = s->n_head;
		s->pos_attn = TFM_POS_T5;
		s->rope_dims = 0;
		s->t5_buckets = lget_i(g, a, "attention.relative_buckets_count", 32);
		s->t5_max_distance = 128;
		s->attn_scale = 1.0f;
		s->norm = TFM_NORM_RMS;
		s->gated = !tfm_gguf_n_tensors(g) || tfm_gguf_find_tensor(g, "enc.blk.0.ffn_gate.weight");
		s->act = s->gated ? TFM_ACT_GELU_TANH : TFM_ACT_RELU;
		if (s->tied_output)
			s->head_scale = (float)(1.0 / sqrt((double)s->n_embd));
		s->dec_start_id = (int32_t)lget_i(g, a, "decoder_start_token_id", s->pad_id);
		s->n_ctx_train = s->n_ctx_train > 0 ? s->n_ctx_train : 512;
		for (int64_t i = 0; i < s->n_layer + s->n_layer_dec && i < TFM_MAX_LAYERS; i++)
			s->layer_rope[i] = 0;
	} else if (!strcmp(a, "mamba2")) {
		/* every layer a Mamba-2 mixer: time_step_rank is the head count
		 * (one dt per head), group_count the B/C groups; no dt limits
		 * (llama.cpp has no key for them) */
		ssm_only(s, g, a, TFM_LAYER_MAMBA2);
		s->ssm_n_head = lget_i(g, a, "ssm.time_step_rank", 0);
		s->ssm_n_group = lget_i(g, a, "ssm.group_count", 1);
		s->ssm_dt_rank = 0;
	} else if (!strcmp(a, "rwkv6") || !strcmp(a, "rwkv7")) {
		int st = rwkv_from_llamacpp(s, g, a);
		if (st)
			return st;
	} else if (!strcmp(a, "llama") || !strcmp(a, "granite")) {
		/* llama.cpp permutes Q/K for the pairwise ("normal") rope */
		s->rope_interleaved = 1;
		if (!strcmp(a, "granite")) {
			double ls = lget_f(g, a, "logit_scale", 1.0);
			s->head_scale = ls > 0 ? (float)(1.0 / ls) : 1.0f;
			s->embd_scale = (float)lget_f(g, a, "embedding_scale", 1.0);
			s->residual_scale = (float)lget_f(g, a, "residual_scale", 1.0);
			s->attn_scale = (float)lget_f(g, a, "attention.scale", 0.0);
		}
		if (w > 0) {
			s->window = w;
			s->mask = TFM_MASK_WINDOW;
			for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
				s->layer_window[i] = 1;
		}
	} else if (!strcmp(a, "deepseek2")) {
		/* multi-head latent attention as llama.cpp's deepseek2 runs it:
		 * key_length_mla / value_length_mla are the head sizes (files
		 * without them: key_length / value_length), head_count_kv 1 is the
		 * latent's single head; the latent norms at the model's rms eps;
		 * pairwise rope; softmax routing unless expert_gating_func says
		 * sigmoid, exp_probs_b a selection bias, group scores the sum of
		 * a group's best two (no V2 group_limited_greedy: refused) */
		s->kv_lora_rank = lget_i(g, a, "attention.kv_lora_rank", 0);
		s->q_lora_rank = lget_i(g, a, "attention.q_lora_rank", 0);
		s->qk_rope_dim = s->rope_dims;
		s->head_dim = lget_i(g, a, "attention.key_length_mla",
				     lget_i(g, a, "attention.key_length", 0));
		s->v_head_dim = lget_i(g, a, "attention.value_length_mla",
				       lget_i(g, a, "attention.value_length", 0));
		s->qk_nope_dim = s->head_dim - s->qk_rope_dim;
		s->n_head_kv = s->n_head;
		s->mla_norm_eps = s->norm_eps;
		s->rope_interleaved = 1;
		if (s->kv_lora_rank <= 0 || s->qk_nope_dim <= 0 || s->v_head_dim <= 0)
			return tfm_seterr(TFM_E_FORMAT, "deepseek2: kv_lora_rank %lld, head sizes "
					  "%lld / %lld", (long long)s->kv_lora_rank,
					  (long long)s->head_dim, (long long)s->v_head_dim);
		if (s->rope_scaling != TFM_ROPE_SCALE_NONE)
			return tfm_seterr(TFM_E_UNSUPPORTED, "deepseek2 with rope scaling without "
					  "tfm.* keys is not supported");
		if (tfm_gguf_find(g, ak(k, sizeof(k), a, "attention.temperature_scale")) >= 0)
			return tfm_seterr(TFM_E_UNSUPPORTED, "deepseek2.attention.temperature_scale "
					  "without tfm.* keys is not supported");
		s->moe_norm_topk = (int)lget_i(g, a, "expert_weights_norm", 0);
		s->moe_routed_scale = lget_f(g, a, "expert_weights_scale", 1.0);
		s->n_ff_shared = s->n_expert_shared * s->n_ff_expert;
		s->moe_first_dense = lget_i(g, a, "leading_dense_block_count", 0);
		for (int64_t i = 0; i < s->n_layer && !s->moe_gate_bias; i++)
			s->moe_gate_bias = has_t(g, i, "exp_probs_b.bias");
		s->moe_n_group = lget_i(g, a, "expert_group_count", 0);
		s->moe_topk_group = lget_i(g, a, "expert_group_used_count", 0);
		if (s->moe_n_group > 1 && s->moe_topk_group < s->moe_n_group && !s->moe_gate_bias)
			return tfm_seterr(TFM_E_UNSUPPORTED, "deepseek2: expert groups without "
					  "exp_probs_b (llama.cpp scores a group by its best two, "
					  "DeepSeek-V2 by its best one) without tfm.* keys is not "
					  "supported");
	} else if (!strcmp(a, "llama4")) {
		/* as llama.cpp's llama4 runs it: pairwise rope on the weights as
		 * Meta stores them; the router's sigmoid scales the expert's input
		 * (no renormalisation), a shared expert as wide as a routed one;
		 * attention.sliding_window 0: no chunks, else chunks of 8192 on
		 * the layers of attention.sliding_window_pattern (default 4: three
		 * chunked, one global), temperature tuning 0.1 / 8192; RoPE on
		 * all but every 4th layer (with no chunks: every n_layer-th, so
		 * the last layer runs without); the L2 QK-norm unless 128 experts */
		s->rope_interleaved = 1;
		s->moe_gate = TFM_MOE_GATE_SIGMOID;
		s->moe_weight_in = 1;
		s->moe_norm_topk = 0;
		s->n_expert_shared = s->n_expert > 0;
		s->n_ff_shared = s->n_expert > 0 ? s->n_ff_expert : 0;
		s->moe_every = lget_i(g, a, "interleave_moe_layer_step", 1);
		s->qk_norm = s->n_expert != 128 ? TFM_QK_NORM_ROPE_RMS : TFM_QK_NORM_NONE;
		int64_t step = 4;
		if (tfm_gguf_find(g, ak(k, sizeof(k), a, "attention.sliding_window")) >= 0 && w == 0) {
			step = s->n_layer;
		} else {
			s->chunk = 8192;
			s->attn_temp_scale = 0.1f;
			s->attn_temp_floor = 8192;
			int64_t pk = tfm_gguf_find(g, ak(k, sizeof(k), a, "attention.sliding_window_pattern"));
			if (pk >= 0 && tfm_gguf_kv_type(g, pk) == TFM_GGUF_ARRAY)
				return tfm_seterr(TFM_E_UNSUPPORTED, "%s.attention.sliding_window_pattern as "
						  "an array without tfm.* keys is not supported", a);
			int64_t np = lget_i(g, a, "attention.sliding_window_pattern", 4);
			for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
				s->layer_window[i] = np == 0 || i % np < np - 1;
		}
		for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
			s->layer_rope[i] = (i + 1) % step != 0;
	} else if (!strcmp(a, "qwen2") || !strcmp(a, "qwen3") || !strcmp(a, "qwen2moe") ||
		   !strcmp(a, "qwen3moe")) {
		s->attn_bias_qkv = !strncmp(a, "qwen2", 5);
		if (!strncmp(a, "qwen3", 5))
			s->qk_norm = TFM_QK_NORM_HEAD;
	} else if (!strcmp(a, "olmoe")) {
		s->qk_norm = TFM_QK_NORM_FULL;
	} else if (!strcmp(a, "olmo")) {
		/* LayerNorm without weight or bias: llama.cpp's files hold none */
		s->norm = TFM_NORM_LAYER;
		s->norm_no_affine = !has_t(g, 0, "attn_norm.weight");
	} else if (!strcmp(a, "command-r")) {
		/* one LayerNorm (no bias) before parallel attention and FFN,
		 * interleaved rope, logits times logit_scale */
		s->norm = TFM_NORM_LAYER;
		s->norm_bias = has_t(g, 0, "attn_norm.bias");
		s->parallel_residual = s->shared_attn_ffn_norm = 1;
		s->rope_interleaved = 1;
		s->head_scale = (float)lget_f(g, a, "logit_scale", 1.0);
		if (has_t(g, 0, "attn_q_norm.weight"))
			return tfm_seterr(TFM_E_UNSUPPORTED, "command-r with QK norms without tfm.* keys "
					  "is not supported");
	} else if (!strcmp(a, "phi2") || !strcmp(a, "gptj") || !strcmp(a, "gptneox") ||
		   !strcmp(a, "falcon") || !strcmp(a, "bloom") || !strcmp(a, "mpt")) {
		/* LayerNorm, plain GELU FFN; biases where the tensors have them */
		s->norm = TFM_NORM_LAYER;
		s->norm_bias = has_t(g, 0, "attn_norm.bias");
		s->attn_bias_qkv = has_t(g, 0, "attn_qkv.bias") || has_t(g, 0, "attn_q.bias");
		s->attn_bias_out = has_t(g, 0, "attn_output.bias");
		s->ffn_bias = has_t(g, 0, "ffn_up.bias");
		s->head_bias = tfm_gguf_find_tensor(g, "output.bias") != NULL;
		s->gated = 0;
		s->act = !strcmp(a, "phi2") || !strcmp(a, "gptj") || !strcmp(a, "bloom")
			 ? TFM_ACT_GELU_TANH : TFM_ACT_GELU;
		if (!strcmp(a, "gptj"))
			s->rope_interleaved = 1;
		if (!strcmp(a, "phi2") || !strcmp(a, "gptj") || !strcmp(a, "falcon")) {
			/* attention and FFN side by side from one norm */
			s->parallel_residual = s->shared_attn_ffn_norm = 1;
			if (!strcmp(a, "falcon") && has_t(g, 0, "attn_norm_2.weight"))
				return tfm_seterr(TFM_E_UNSUPPORTED, "falcon with two norms per layer "
						  "(new_decoder_architecture) without tfm.* keys is not "
						  "supported");
		}
		if (!strcmp(a, "gptneox"))
			s->parallel_residual = (int)lget_i(g, a, "use_parallel_residual", 1);
		if (!strcmp(a, "bloom") || !strcmp(a, "mpt")) {
			s->pos_attn = TFM_POS_ALIBI;
			s->alibi_max_bias = lget_f(g, a, "attention.max_alibi_bias", 8.0);
			s->rope_dims = 0;
			for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
				s->layer_rope[i] = 0;
			s->embd_norm = tfm_gguf_find_tensor(g, "token_embd_norm.weight") != NULL;
		}
	} else if (!strcmp(a, "olmo2")) {
		/* norms after attention and FFN, on their outputs; q and k
		 * normed over all heads */
		s->norm_place = TFM_NORM_POST_IN;
		s->qk_norm = TFM_QK_NORM_FULL;
	} else if (!strcmp(a, "starcoder2") || !strcmp(a, "stablelm")) {
		/* LayerNorm; biases where the tensors have them (llama.cpp
		 * reads them the same way) */
		s->norm = TFM_NORM_LAYER;
		s->norm_bias = has_t(g, 0, "attn_norm.bias");
		s->attn_bias_qkv = has_t(g, 0, "attn_q.bias");
		s->attn_bias_out = has_t(g, 0, "attn_output.bias");
		if (!strcmp(a, "starcoder2")) {
			s->ffn_bias = has_t(g, 0, "ffn_up.bias");
			s->gated = 0;
			s->act = TFM_ACT_GELU_TANH;
			if (w > 0) {
				s->window = w;
				s->mask = TFM_MASK_WINDOW;
				for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
					s->layer_window[i] = 1;
			}
		} else {
			if (has_t(g, 0, "attn_q_norm.weight"))
				return tfm_seterr(TFM_E_UNSUPPORTED, "stablelm with qk_layernorm "
						  "without tfm.* keys is not supported");
			/* no ffn_norm: the parallel residual of use_parallel_residual */
			if (tfm_gguf_n_tensors(g) > 0 && !has_t(g, 0, "ffn_norm.weight"))
				s->parallel_residual = s->shared_attn_ffn_norm = 1;
		}
	} else if (!strcmp(a, "phi3")) {
		if (w > 0) {
			s->window = w;
			s->mask = TFM_MASK_WINDOW;
			for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
				s->layer_window[i] = 1;
		}
	} else if (!strncmp(a, "gemma", 5)) {
		s->act = TFM_ACT_GELU_TANH;
		s->embd_scale = (float)sqrt((double)s->n_embd);
		/* llama.cpp's converter stores gemma norm weights with the 1 added */
		s->norm_plus_one = 0;
		if (strcmp(a, "gemma")) {
			int g3 = !strcmp(a, "gemma3");
			s->norm_place = TFM_NORM_SANDWICH;
			s->attn_softcap = (float)lget_f(g, a, "attn_logit_softcapping", g3 ? 0 : 50);
			s->final_softcap = (float)lget_f(g, a, "final_logit_softcapping", g3 ? 0 : 30);
			s->window = w > 0 ? w : 4096;
			/* as llama.cpp: the 27B models scale by n_embd/n_head, not head_dim */
			if (s->n_layer == (g3 ? 62 : 46))
				s->attn_scale = (float)(1.0 / sqrt((double)(s->n_embd / s->n_head)));
			for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
				s->layer_window[i] = g3 ? (i + 1) % 6 != 0 : i % 2 == 0;
			if (g3) {
				s->qk_norm = TFM_QK_NORM_HEAD;
				s->rope_theta_local = lget_f(g, a, "rope.freq_base_swa", 10000);
			}
		}
	} else if (!strcmp(a, "modern-bert")) {
		/* llama.cpp's ModernBERT: a pre-norm encoder (layer 0 without
		 * attn_norm), RoPE on halves; layer i local when i % pattern != 0
		 * (default 3), sliding_window / 2 keys either side at
		 * freq_base_swa; GEGLU (or hidden_activation's GLU) from one
		 * ffn_up; biases as the tensors say; no task head (llama.cpp's
		 * rank head carries no labels) */
		snprintf(s->arch, sizeof(s->arch), "modernbert");
		s->family = TFM_FAMILY_ENCODER;
		s->mask = TFM_MASK_BIDIR;
		s->norm = TFM_NORM_LAYER;
		s->norm_place = TFM_NORM_PRE;
		s->embd_norm = 1;
		s->no_first_attn_norm = 1;
		s->pos_embd = TFM_POS_EMBD_NONE;
		s->pos_attn = TFM_POS_ROPE;
		s->gated = 1;
		s->norm_bias = tfm_gguf_find_tensor(g, "token_embd_norm.bias") != NULL;
		s->attn_bias_qkv = has_t(g, 0, "attn_qkv.bias");
		s->attn_bias_out = has_t(g, 0, "attn_output.bias");
		s->ffn_bias = has_t(g, 0, "ffn_down.bias");
		const char *act = tfm_gguf_get_str_or(g, ak(k, sizeof(k), a, "hidden_activation"),
						      "gelu");
		if (!strcmp(act, "gelu"))
			s->act = TFM_ACT_GELU;
		else if (!strcmp(act, "silu") || !strcmp(act, "swish"))
			s->act = TFM_ACT_SILU;
		else
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s.hidden_activation '%s' without tfm.* "
					  "keys is not supported", a, act);
		s->head = TFM_HEAD_EMBED;
		s->head_transform = 1;
		static const int pool[] = { TFM_POOL_NONE, TFM_POOL_MEAN, TFM_POOL_CLS, TFM_POOL_LAST };
		int64_t pt = lget_i(g, a, "pooling_type", 2);
		if (pt < 0 || pt >= 4)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s.pooling_type %lld without tfm.* keys "
					  "is not supported", a, (long long)pt);
		s->pooling = pool[pt];
		int64_t pk = tfm_gguf_find(g, ak(k, sizeof(k), a, "attention.sliding_window_pattern"));
		if (pk >= 0 && tfm_gguf_kv_type(g, pk) == TFM_GGUF_ARRAY)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s.attention.sliding_window_pattern as an "
					  "array without tfm.* keys is not supported", a);
		int64_t np = lget_i(g, a, "attention.sliding_window_pattern", 3);
		s->window = w > 0 ? w : 0;
		for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
			s->layer_window[i] = w > 0 && (np == 0 || i % np != 0);
		s->rope_theta_local = lget_f(g, a, "rope.freq_base_swa", s->rope_theta);
	} else if (!strcmp(a, "bert")) {
		/* llama.cpp's BERT: post-norm encoder; the pooler is not converted */
		s->family = TFM_FAMILY_ENCODER;
		s->mask = TFM_MASK_BIDIR;
		s->norm_place = TFM_NORM_POST;
		s->final_norm = 0;
		s->embd_norm = 1;
		s->n_token_types = tfm_gguf_get_int_or(g, "tokenizer.ggml.token_type_count", 2);
		s->head = TFM_HEAD_EMBED;
		/* llama.cpp pooling ids: 0 none, 1 mean, 2 cls, 3 last */
		static const int pool[] = { TFM_POOL_NONE, TFM_POOL_MEAN, TFM_POOL_CLS, TFM_POOL_LAST };
		int64_t pt = lget_i(g, a, "pooling_type", 2);
		if (pt < 0 || pt >= 4) /* 4: rank, a classifier whose labels only tfm.* keys carry */
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s.pooling_type %lld without tfm.* keys "
					  "is not supported", a, (long long)pt);
		s->pooling = pool[pt];
	}
	if (!strcmp(a, "gpt2") || !strcmp(a, "bert")) {
		s->norm = TFM_NORM_LAYER;
		s->norm_bias = 1;
		s->attn_bias_qkv = s->attn_bias_out = s->ffn_bias = 1;
		s->gated = 0;
		s->act = !strcmp(a, "bert") ? TFM_ACT_GELU : TFM_ACT_GELU_TANH;
		s->pos_embd = TFM_POS_EMBD_LEARNED;
		s->pos_attn = TFM_POS_NONE;
		s->rope_dims = 0;
		for (int64_t i = 0; i < s->n_layer && i < TFM_MAX_LAYERS; i++)
			s->layer_rope[i] = 0;
	}
	return TFM_OK;
}

int tfm_spec_from_gguf(struct tfm_spec *s, const struct tfm_gguf *g)
{
	tfm_spec_init(s);
	int st;
	if (tfm_gguf_find(g, "tfm.model.arch") >= 0) {
		st = get_tfm(s, g);
	} else {
		const char *a = tfm_gguf_get_str_or(g, "general.architecture", NULL);
		if (!a)
			return tfm_seterr(TFM_E_FORMAT, "GGUF: no general.architecture");
		st = from_llamacpp(s, g, a);
	}
	if (!st)
		st = tfm_spec_validate(s);
	return st;
}
