#!/usr/bin/env bats
# ssm.bats: state-space models (mamba, falcon_mamba) through the tools: the
# recurrent state in place of a KV cache, random-weight benchmarks, refusals.
load helpers

FX=$ROOT/tests/fixtures

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

@test "ssm: mamba2 layers are refused (65) by name, not run" {
	printf '{"model_type": "mamba2", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 256, "num_heads": 4, "head_dim": 32, "n_groups": 1, "state_size": 16}' > "$T/config.json"
	run tfm-bench -q --config "$T/config.json" -p 4 -n 1 -r 1 -t 1
	assert_failure 65
	assert_output --partial mamba2
}
