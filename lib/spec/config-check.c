/* config-check.c: honour or refuse (DESIGN.md 4b).  A preset reads the keys
 * it implements (the getters record them); every other key in config.json is
 * checked here against transformers' class for the model type
 * (config-keys.c): a key that cannot change the forward pass passes, a key
 * at its class default passes, anything else is refused naming the key.  A
 * key the class does not define is ignored, as transformers ignores it. */
#include "spec-impl.h"
#include "config-keys.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local const json_t *tracked;
static _Thread_local json_t *reads;

/* reads stays until the next tracking starts, for tfm_cfg_was_read */
void tfm_cfg_track(const json_t *c)
{
	tracked = c;
	if (c) {
		json_decref(reads);
		reads = json_object();
	}
}

int tfm_cfg_was_read(const char *key)
{
	return json_object_get(reads, key) != NULL;
}

void tfm_cfg_mark(const json_t *c, const char *key)
{
	if (c && c == tracked && reads)
		json_object_set_new(reads, key, json_true());
}

/* Keys that leave inference unchanged, by name or by suffix. */
static const struct { const char *k, *why; } inert[] = {
	/* metadata */
	{ "_name_or_path", "metadata" }, { "architectures", "metadata" },
	{ "transformers_version", "metadata" }, { "dtype", "storage type" },
	{ "torch_dtype", "storage type" }, { "model_type", "metadata" },
	{ "id2label", "labels of a classifier head" }, { "label2id", "labels of a classifier head" },
	{ "num_labels", "classifier head" }, { "problem_type", "classifier head" },
	{ "finetuning_task", "metadata" }, { "tokenizer_class", "metadata" },
	{ "prefix", "metadata" }, { "task_specific_params", "metadata" },
	{ "auto_map", "metadata (tfm runs transformers' own class, not remote code)" },
	{ "bos_token_id", "tokenizer (read by the tokenizer import)" },
	{ "eos_token_id", "tokenizer (read by the tokenizer import)" },
	{ "pad_token_id", "tokenizer" }, { "sep_token_id", "tokenizer" },
	{ "decoder_start_token_id", "encoder-decoder generation" },
	/* precision and execution, not math */
	{ "use_bfloat16", "precision" }, { "torchscript", "export" },
	{ "tf_legacy_loss", "training" }, { "return_dict", "output form" },
	{ "output_attentions", "output form" }, { "output_hidden_states", "output form" },
	{ "output_scores", "generation output form" }, { "return_dict_in_generate", "output form" },
	{ "use_cache", "KV cache on or off: same numbers" },
	{ "chunk_size_feed_forward", "chunked FFN: same numbers" },
	{ "tie_encoder_decoder", "encoder-decoder only" },
	{ "pretraining_tp", "tensor-parallel slicing: same numbers" },
	{ "slow_but_exact", "bloom: same numbers, other summation order" },
	{ "reorder_and_upcast_attn", "gpt2: fp32 attention; tfm computes in f32 already" },
	{ "is_decoder", "decoder models are causal either way" },
	{ "_attn_implementation", "kernel choice" }, { "attn_implementation", "kernel choice" },
	{ "init_device", "training" }, { "verbose", "logging" },
	{ "_sliding_window_pattern", "gemma3: layer_types carries it" },
	/* generation defaults: tfm-run's own options */
	{ "bad_words_ids", "generation" }, { "begin_suppress_tokens", "generation" },
	{ "diversity_penalty", "generation" }, { "do_sample", "generation" },
	{ "early_stopping", "generation" }, { "encoder_no_repeat_ngram_size", "generation" },
	{ "exponential_decay_length_penalty", "generation" }, { "forced_bos_token_id", "generation" },
	{ "forced_eos_token_id", "generation" }, { "length_penalty", "generation" },
	{ "max_length", "generation" }, { "min_length", "generation" },
	{ "no_repeat_ngram_size", "generation" }, { "num_beam_groups", "generation" },
	{ "num_beams", "generation" }, { "num_return_sequences", "generation" },
	{ "remove_invalid_values", "generation" }, { "repetition_penalty", "generation" },
	{ "suppress_tokens", "generation" }, { "temperature", "generation" },
	{ "top_k", "generation" }, { "top_p", "generation" }, { "typical_p", "generation" },
	/* state-space models (mamba, falcon_mamba) */
	{ "residual_in_fp32", "mamba: an f32 residual; tfm computes in f32 already" },
	{ "rescale_prenorm_residual", "mamba: initialisation (training)" },
	{ "time_step_scale", "mamba: initialisation of dt_proj (training)" },
	{ "time_step_min", "mamba: initialisation of dt_proj (training)" },
	{ "time_step_max", "mamba: initialisation of dt_proj (training)" },
	{ "time_step_floor", "mamba: initialisation of dt_proj (training)" },
	{ "time_step_init_scheme", "mamba: initialisation of dt_proj (training)" },
	{ "use_mambapy", "mamba: kernel choice (same numbers)" },
	{ "use_mamba_kernels", "jamba: fused CUDA kernels or the torch path (same numbers)" },
	{ "use_associative_scan", "jamba: scan order (same numbers)" },
	{ "num_logits_to_keep", "output form (which positions get logits)" },
	{ "use_falcon_mambapy", "falcon_mamba: kernel choice (same numbers)" },
	/* xlstm: kernel choices and precisions of transformers' mLSTM backend */
	{ "chunkwise_kernel", "xlstm: kernel choice (the same sums as the recurrent step)" },
	{ "sequence_kernel", "xlstm: kernel choice (the recurrent step)" },
	{ "step_kernel", "xlstm: kernel choice (the recurrent step)" },
	{ "return_last_states", "xlstm: its inference path returns the states either way" },
	{ "autocast_kernel_dtype", "xlstm: unused by transformers' native kernels" },
	{ "max_inference_chunksize", "xlstm: prefill in chunks carrying the state: same sums" },
	{ "norm_reduction_force_float32", "xlstm: f32 norm reductions; tfm's are f32 already" },
	/* training only */
	{ "initializer_range", "training" }, { "init_std", "training" },
	{ "lambda_std_dev", "initialisation of diffllama's lambda vectors (training)" },
	{ "initializer_factor", "training" }, { "router_aux_loss_coef", "training" },
	{ "output_router_logits", "training" }, { "router_jitter_noise", "training (noise only in training)" },
	{ "z_loss_coefficient", "training (bamba's auxiliary loss)" },
	{ "aux_loss_alpha", "training" }, { "seq_aux", "training" }, { "layerdrop", "training" },
	{ "encoder_layerdrop", "training" }, { "decoder_layerdrop", "training" },
	{ "embedding_fraction", "mpt: gradient scaling, forward unchanged" },
	{ "gradient_checkpointing", "training" },
	{ "summary_type", "gpt2 double-heads head" }, { "summary_use_proj", "gpt2 double-heads head" },
	{ "summary_activation", "gpt2 double-heads head" },
	{ "summary_proj_to_labels", "gpt2 double-heads head" },
	{ "summary_first_dropout", "gpt2 double-heads head" },
};

int tfm_cfg_inert(const char *key, const char **why)
{
	for (size_t i = 0; i < sizeof(inert) / sizeof(inert[0]); i++)
		if (!strcmp(inert[i].k, key)) {
			*why = inert[i].why;
			return 1;
		}
	size_t n = strlen(key);
	/* dropout probabilities: training only */
	if (strstr(key, "dropout") || (n > 6 && !strcmp(key + n - 6, "_pdrop"))) {
		*why = "dropout (training)";
		return 1;
	}
	return 0;
}

const struct tfm_cfg_key *tfm_cfg_table(const char *type)
{
	for (const struct tfm_cfg_keys *t = tfm_cfg_keys; t->type; t++)
		if (!strcmp(t->type, type))
			return t->keys;
	return NULL;
}

static const char *find(const struct tfm_cfg_key *t, const char *key)
{
	for (; t && t->key; t++)
		if (!strcmp(t->key, key))
			return t->dflt;
	return NULL;
}

/* JSON equality with numbers compared by value (1 == 1.0). */
static int same(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!same(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, k, v)
			if (!same(v, json_object_get(b, k)))
				return 0;
		return 1;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

int tfm_cfg_check(const json_t *c, const char *type)
{
	const struct tfm_cfg_key *tab = tfm_cfg_table(type);
	const char *k;
	json_t *v;
	int st = TFM_OK;
	json_object_foreach((json_t *)c, k, v) {
		const char *why, *d;
		if (json_object_get(reads, k) || tfm_cfg_inert(k, &why))
			continue;
		if (!strcmp(k, "quantization_config")) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "quantization_config: pre-quantized "
					"checkpoints (bitsandbytes, GPTQ, AWQ, ...) are not supported");
			break;
		}
		if (!(d = find(tab, k)) && !(d = find(tfm_cfg_common, k)))
			continue; /* not a key of the class: transformers ignores it too */
		json_t *dj = json_loads(d, JSON_DECODE_ANY, NULL);
		int ok = dj && same(v, dj);
		json_decref(dj);
		if (!ok) {
			char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s=%.60s is not supported (transformers' "
					"default: %s)", k, txt ? txt : "?", d);
			free(txt);
			break;
		}
	}
	tfm_cfg_track(NULL);
	return st;
}
