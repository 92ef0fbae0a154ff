#!/usr/bin/env bats
# ssm.bats: state-space models (mamba, falcon_mamba, mamba2) and RWKV through the tools: the
# recurrent state in place of a KV cache, random-weight benchmarks, refusals.
load helpers

FX=$ROOT/tests/fixtures

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "ssm: tfm-inspect reports a state constant in the context, no KV per token" {
	# 2 layers x (3 conv columns x 96 + 96 x 16 scan state) x 4 bytes = 14592
	for c in 64 65536; do
		run tfm-inspect -F json -c $c "$FX/mamba/config.json"
		assert_success
		[ "$(echo "$output" | jq -e .state_bytes)" = 14592 ]
		[ "$(echo "$output" | jq -e .kv_bytes)" = 14592 ]
		[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 0 ]
	done
	run tfm-inspect "$FX/mamba/config.json"
	assert_output --partial 'recurrent state   14,592 bytes'
}

@test "ssm: tfm-bench runs a random-weight mamba from its config.json" {
	run tfm-bench -q --config "$FX/mamba-b/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq -r .arch)" = mamba ]
	[ "$(echo "$output" | jq -r .params)" = 59880 ]
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
}

@test "ssm: a mamba GGUF converts, and its params equal its tensors" {
	tfm-convert -o "$T/m.gguf" "$FX/falcon_mamba"
	run tfm-inspect -F json "$T/m.gguf"
	assert_success
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	[ "$(echo "$output" | jq -r .gguf_arch)" = mamba ]
}

@test "ssm: mamba config keys that change the forward pass are refused (65) by name" {
	jq '. + {"hidden_act": "gelu"}' "$FX/mamba/config.json" > "$T/config.json"
	run tfm-inspect "$T/config.json"
	assert_failure 65
	assert_output --partial hidden_act
	jq '. + {"time_step_rank": "half"}' "$FX/mamba/config.json" > "$T/config.json"
	run tfm-inspect "$T/config.json"
	assert_failure 65
	assert_output --partial time_step_rank
	# initialisation and precision keys leave the forward pass as it is
	jq '. + {"residual_in_fp32": false, "rescale_prenorm_residual": true, "time_step_scale": 2.0}' \
		"$FX/mamba/config.json" > "$T/config.json"
	run tfm-inspect "$T/config.json"
	assert_success
}

@test "ssm: mamba2 (config.json with Infinity, as transformers writes it): state, bench, refusals" {
	grep -q 'Infinity' "$FX/mamba2/config.json"
	# 2 layers x (3 conv columns x (64 + 2 x 16) + 64 x 16 scan state) x 4 bytes = 10496
	run tfm-inspect -F json -c 4096 "$FX/mamba2/config.json"
	assert_success
	[ "$(echo "$output" | jq -e .state_bytes)" = 10496 ]
	[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 0 ]
	run tfm-bench -q --config "$FX/mamba2/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq -r .arch)" = mamba2 ]
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
	tfm-convert -o "$T/m2.gguf" "$FX/mamba2-b"
	run tfm-inspect -F json "$T/m2.gguf"
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	# knobs that change the mixer and are not implemented: refused by name
	for kv in '"rms_norm": false' '"hidden_act": "gelu"' '"n_groups": 3' '"time_step_limit": [0.5, 0.1]'; do
		jq ". + {$kv}" "$FX/mamba2/config.json" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
		assert_output --partial "$(echo "$kv" | cut -d'"' -f2 | sed 's/n_groups/groups/')"
	done
}

@test "ssm: rwkv v4: state, bench, GGUF, refusals" {
	# 3 layers x 5 x 32 x 4 bytes
	run tfm-inspect -F json -c 4096 "$FX/rwkv/config.json"
	assert_success
	[ "$(echo "$output" | jq -e .state_bytes)" = 1920 ]
	[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 0 ]
	run tfm-bench -q --config "$FX/rwkv/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
	tfm-convert -o "$T/r.gguf" "$FX/rwkv-b"
	run tfm-inspect -F json "$T/r.gguf"
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	jq '. + {"attention_hidden_size": 16}' "$FX/rwkv/config.json" > "$T/config.json"
	run tfm-inspect "$T/config.json"
	assert_failure 65
	assert_output --partial attention_hidden_size
}

@test "ssm: jamba (mamba and attention layers, MoE): state beside KV, bench, GGUF, text, refusals" {
	# state: 2 mamba layers x (3 conv columns x 96 + 96 x 8 scan state) x 4 bytes = 8448;
	# KV only in the 2 attention layers: 2 x (K + V) x 2 heads x 12 x 4 bytes = 384 per token
	for c in 64 4096; do
		run tfm-inspect -F json -c $c "$FX/jamba/config.json"
		assert_success
		[ "$(echo "$output" | jq -e .state_bytes)" = 8448 ]
		[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 384 ]
		[ "$(echo "$output" | jq -e .kv_bytes)" = $((8448 + 384 * c)) ]
	done
	run tfm-bench -q --config "$FX/jamba/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq -r .arch)" = jamba ]
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
	tfm-convert -o "$T/j.gguf" "$FX/jamba-b"
	run tfm-inspect -F json "$T/j.gguf"
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	tfm-quant -q -o "$T/j8.gguf" q8_0 "$T/j.gguf"
	# the trained tokenizer end to end: generation, and a perplexity that
	# the f32 and q8_0 files agree on to 1%
	run tfm-run -m "$T/j.gguf" -p "The game" -n 8 --temp 0
	assert_success
	[ -n "$output" ]
	head -c 4000 "$SHARED/text/wikitext-2-raw-test.txt" > "$T/text.txt"
	p32=$(tfm-ppl -q -m "$T/j.gguf" -f "$T/text.txt" -c 64 -F json | jq .ppl)
	p8=$(tfm-ppl -q -m "$T/j8.gguf" -f "$T/text.txt" -c 64 -F json | jq .ppl)
	awk -v a="$p32" -v b="$p8" 'BEGIN { d = (a - b) / a; exit !(a > 1 && (d < 0 ? -d : d) < 0.01) }'
	# knobs not implemented are refused by name
	for kv in '"sliding_window": 16' '"hidden_act": "gelu"'; do
		jq ". + {$kv}" "$FX/jamba/config.json" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
		assert_output --partial "$(echo "$kv" | cut -d'"' -f2)"
	done
	jq '. + {"attn_layer_offset": 2}' "$FX/jamba/config.json" > "$T/config.json"
	run tfm-inspect "$T/config.json"
	assert_failure 65
	assert_output --partial "below their periods"
}

@test "ssm: bamba (mamba2 and attention with half-rotary RoPE): state beside KV, bench, GGUF, refusals" {
	# state: 3 mamba2 layers x (3 conv columns x (128 + 2 x 16) + 128 x 16 scan state) x 4
	# bytes = 30336; KV only in the attention layer: (K + V) x 2 heads x 16 x 4 bytes = 256
	run tfm-inspect -F json -c 4096 "$FX/bamba/config.json"
	assert_success
	[ "$(echo "$output" | jq -e .state_bytes)" = 30336 ]
	[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 256 ]
	run tfm-bench -q --config "$FX/bamba-b/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq -r .arch)" = bamba ]
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
	tfm-convert -o "$T/b.gguf" "$FX/bamba-b"
	run tfm-inspect -F json "$T/b.gguf"
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	run tfm-run -m "$T/b.gguf" -p "The game" -n 6 --temp 0
	assert_success
	# knobs not implemented are refused by name
	for kv in '"partial_rotary_factor": 0.25' '"hidden_act": "gelu"'; do
		jq ". + {$kv}" "$FX/bamba/config.json" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
		assert_output --partial "$(echo "$kv" | cut -d'"' -f2)"
	done
}

@test "ssm: qwen3_next (Gated DeltaNet and gated attention, MoE): state beside KV, bench, GGUF, refusals" {
	# state: 3 DeltaNet layers x (3 conv columns x (2 x 2 x 8 + 4 x 12) + 4 heads x 8 x 12)
	# x 4 bytes = 7488; KV only in the attention layer: (K + V) x 2 heads x 16 x 4 bytes = 256
	run tfm-inspect -F json -c 4096 "$FX/qwen3_next/config.json"
	assert_success
	[ "$(echo "$output" | jq -e .state_bytes)" = 7488 ]
	[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 256 ]
	[ "$(echo "$output" | jq -r '.spec["layer.kind"]')" = ggga ]
	run tfm-bench -q --config "$FX/qwen3_next/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq -r .arch)" = qwen3_next ]
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
	# the zero-centred norms get their 1 in the GGUF (and the spec says so)
	tfm-convert -o "$T/q.gguf" "$FX/qwen3_next-b"
	run tfm-inspect -F json "$T/q.gguf"
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	[ "$(echo "$output" | jq -r '.spec["norm.plus_one"]')" = false ]
	run tfm-run -m "$T/q.gguf" -p "The game" -n 6 --temp 0
	assert_success
	for kv in '"attention_bias": true' '"layer_types": ["full_attention", "sliding_attention", "full_attention", "linear_attention"]'; do
		jq ". + {$kv}" "$FX/qwen3_next/config.json" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
	done
}

@test "ssm: xlstm (mLSTM blocks): state, bench, GGUF, text, refusals" {
	# 2 layers x 4 heads x (C 16 x 16 + n 16 + m 1) x 4 bytes = 8736, at any context
	for c in 64 65536; do
		run tfm-inspect -F json -c $c "$FX/xlstm/config.json"
		assert_success
		[ "$(echo "$output" | jq -e .state_bytes)" = 8736 ]
		[ "$(echo "$output" | jq -e .kv_bytes)" = 8736 ]
		[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 0 ]
	done
	# xlstm-b: 2 layers x 2 heads x (32 x 64 + 32 + 1) x 4 bytes = 33296
	run tfm-inspect -F json "$FX/xlstm-b/config.json"
	[ "$(echo "$output" | jq -e .state_bytes)" = 33296 ]
	run tfm-bench -q --config "$FX/xlstm-b/config.json" -p 16 -n 4 -r 1 -t 1 -F json
	assert_success
	[ "$(echo "$output" | jq -r .arch)" = xlstm ]
	[ "$(echo "$output" | jq -r .params)" = 136264 ]
	[ "$(echo "$output" | jq '[.tests[] | select(.avg_ts > 0)] | length')" = 2 ]
	tfm-convert -o "$T/x.gguf" "$FX/xlstm-b"
	run tfm-inspect -F json "$T/x.gguf"
	assert_success
	[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ]
	[ "$(echo "$output" | jq -r .gguf_arch)" = xlstm ]
	# the GGUF (its tfm.xlstm.* keys) generates what the checkpoint does
	a=$(tfm-run -m "$T/x.gguf" -p "The game" -n 12 --temp 0)
	b=$(tfm-run -m "$FX/xlstm-b" -p "The game" -n 12 --temp 0)
	[ -n "$a" ]
	[ "$a" = "$b" ]
	# kernel choices and precisions leave the forward pass as it is
	jq '. + {"mode": "train", "chunkwise_kernel": "parallel--native_autograd", "chunk_size": 16,
		"autocast_kernel_dtype": "float16", "max_inference_chunksize": 8}' \
		"$FX/xlstm/config.json" > "$T/config.json"
	run tfm-inspect "$T/config.json"
	assert_success
	# knobs that change the math and are not implemented: refused by name
	for kv in '"weight_mode": "fused"' '"use_bias": true' '"inference_state_dtype": "bfloat16"' \
		  '"embedding_dim": 32' '"num_blocks": 3'; do
		jq ". + {$kv}" "$FX/xlstm/config.json" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
		assert_output --partial "$(echo "$kv" | cut -d'"' -f2)"
	done
}

@test "ssm: tfm-ppl on every recurrent family: chunked, strided, shards, KL" {
	head -c 6000 "$SHARED/text/wikitext-2-raw-test.txt" > "$T/w.txt"
	for f in mamba2 falcon_mamba rwkv jamba bamba qwen3_next xlstm; do
		M=(-m "$FX/$f" -f "$T/w.txt" -c 32)
		tfm-ppl "${M[@]}" --chunks 8 -F json > "$T/whole.json"
		jq -e '.ppl > 1 and .tokens == 8 * 15' "$T/whole.json"
		# strided: every token but the first scored once, the state rebuilt
		# for each window (a state cannot be rewound)
		tfm-ppl "${M[@]}" --mode strided --stride 16 -F json > "$T/s.json"
		jq -e '.ppl > 1 and .tokens == .text_tokens - 1' "$T/s.json"
		for i in 0 1; do
			tfm-ppl "${M[@]}" --chunks 8 --shard $i/2 -F json > "$T/p$i.json"
		done
		tfm-ppl --merge -F json "$T/p1.json" "$T/p0.json" > "$T/merged.json"
		cmp "$T/whole.json" "$T/merged.json"
		tfm-ppl "${M[@]}" --chunks 8 --save-logits "$T/base.lp" -F json > /dev/null
		tfm-ppl "${M[@]}" --chunks 8 --kl-base "$T/base.lp" -F json > "$T/kl.json"
		jq -e '.kl.mean < 1e-6 and .kl.same_top1 == 1' "$T/kl.json"
		tfm-ppl "${M[@]}" --chunks 8 --kl-base "$T/base.lp" --set norm.eps=0.5 -F json > "$T/kl2.json"
		jq -e '.kl.mean > 1e-4' "$T/kl2.json"
	done
}

@test "ssm: the hybrids not run yet are refused by name (65)" {
	for t in zamba2 nemotron_h granitemoehybrid kimi_linear lfm2 minimax falcon_h1 rwkv7; do
		jq --arg t "$t" '.model_type = $t' "$FX/jamba/config.json" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
		assert_output --partial "$t"
	done
}
