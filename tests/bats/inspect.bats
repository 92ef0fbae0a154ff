#!/usr/bin/env bats
# inspect.bats: tfm-inspect on config.json files, GGUF files and a llama2.c
# checkpoint; formats, options and exit codes.  Expected counts are those of
# the released checkpoints (see tests/unit/test_spec.c).
load helpers

CFG=$ROOT/tests/data/configs

@test "inspect: Llama-2-7B config total params (json)" {
	run tfm-inspect -F json "$CFG/llama-2-7b.json"
	assert_success
	[ "$(echo "$output" | jq -e .params.total)" = 6738415616 ]
	# the KV cache tfm-run keeps by default: f32, 2 x 32 layers x 4096 x 4 bytes
	[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 1048576 ]
	run tfm-inspect -F json -k f16 "$CFG/llama-2-7b.json"
	[ "$(echo "$output" | jq -e .kv_bytes_per_token)" = 524288 ]
	[ "$(echo "$output" | jq -r .spec.\"model.arch\")" = llama ]
}

@test "inspect: several configs, one JSON object each" {
	run tfm-inspect -F json "$CFG/gpt2.json" "$CFG/bert-base-uncased.json" "$CFG/t5-small.json"
	assert_success
	[ "$(echo "$output" | jq -s -c '[.[].params.total]')" = "[124439808,109482240,60506624]" ]
}

@test "inspect: Mixtral active params and tsv" {
	run tfm-inspect -F tsv "$CFG/mixtral-8x7b.json"
	assert_success
	assert_line "$CFG/mixtral-8x7b.json	params.total	46702792704"
	assert_line "$CFG/mixtral-8x7b.json	params.active	12879925248"
}

@test "inspect: --ctx and --kv-type scale the KV cache; window caps it" {
	run tfm-inspect -F json -c 1000 -k f32 "$CFG/llama-2-7b.json"
	assert_success
	[ "$(echo "$output" | jq -e .kv_bytes)" = 1048576000 ]
	run tfm-inspect -F json -c 32768 -k f16 "$CFG/mistral-7b.json"
	[ "$(echo "$output" | jq -e .kv_bytes)" = 536870912 ]
	run tfm-inspect -F json -c 8192 -k f16 --set attn.window=256 "$CFG/llama-2-7b.json"
	[ "$(echo "$output" | jq -e .kv_bytes)" = 134217728 ]
}

@test "inspect: config on stdin" {
	run sh -c "tfm-inspect -F json - < '$CFG/gpt2.json' | jq -e .params.total"
	assert_success
	assert_output 124439808
}

@test "inspect: table output names the parts" {
	run tfm-inspect -k f16 "$CFG/deepseek-v3.json"
	assert_success
	assert_line --partial "671,026,419,200 total"
	assert_line --regexp '^kv cache +70,272 bytes/token'
}

@test "inspect: stories260K llama2.c checkpoint has 260,032 parameters" {
	need_shared
	run tfm-inspect -F json "$STORIES"
	assert_success
	[ "$(echo "$output" | jq -e .params.total)" = 260032 ]
	[ "$(echo "$output" | jq -e .tensor_params)" = 260032 ]
	run tfm-inspect -T "$STORIES"
	assert_success
	assert_output --partial "token_embd.weight"
}

@test "inspect: llama.cpp vocab GGUF (llama.cpp keys only)" {
	need_shared
	run tfm-inspect -F json "$SHARED/tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf"
	assert_success
	[ "$(echo "$output" | jq -e .params.total)" = 124439808 ]
	run sh -c "cat '$SHARED/tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf' | tfm-inspect -F json - | jq -e .params.total"
	assert_success
	assert_output 6738415616
}

@test "inspect: --help and --version" {
	run tfm-inspect --help
	assert_success
	assert_line --index 0 --partial "usage: tfm-inspect [-hTVv]"
	run tfm-inspect -V
	assert_success
	assert_output --partial "tfm-inspect (tfm)"
}

@test "inspect: usage errors exit 64" {
	run tfm-inspect
	[ "$status" -eq 64 ]
	run tfm-inspect -F xml "$CFG/gpt2.json"
	[ "$status" -eq 64 ]
	run tfm-inspect --set attn.nope=1 "$CFG/gpt2.json"
	[ "$status" -eq 64 ]
	assert_output --partial "attn.nope"
	run tfm-inspect -c 0 "$CFG/gpt2.json"
	[ "$status" -eq 64 ]
}

@test "inspect: unsupported model_type exits 65, missing file 66" {
	tmp=$(mktemp -d)
	echo '{"model_type": "foo"}' > "$tmp/config.json"
	run tfm-inspect "$tmp/config.json"
	[ "$status" -eq 65 ]
	assert_output --partial "model_type 'foo' is not supported"
	echo 'not json at all' > "$tmp/junk.bin"
	run tfm-inspect "$tmp/junk.bin"
	[ "$status" -eq 65 ]
	run tfm-inspect "$tmp/missing.json"
	[ "$status" -eq 66 ]
	rm -rf "$tmp"
}

# A tiny Hugging Face directory: llama config and zero f32 weights in a
# safetensors file written here (8-byte little-endian header length, JSON
# header, data).
make_hf_dir() { # DIR [SKIP_TENSOR]
	mkdir -p "$1"
	echo '{"model_type":"llama","hidden_size":8,"intermediate_size":16,"num_hidden_layers":1,
	"num_attention_heads":2,"num_key_value_heads":2,"vocab_size":16}' > "$1/config.json"
	# name:shape pairs; SKIP_TENSOR leaves one out
	local spec="model.embed_tokens.weight:16,8 lm_head.weight:16,8 model.norm.weight:8"
	local p=model.layers.0. n
	for n in q k v o; do spec="$spec ${p}self_attn.${n}_proj.weight:8,8"; done
	spec="$spec ${p}mlp.gate_proj.weight:16,8 ${p}mlp.up_proj.weight:16,8"
	spec="$spec ${p}mlp.down_proj.weight:8,16"
	spec="$spec ${p}input_layernorm.weight:8 ${p}post_attention_layernorm.weight:8"
	local hdr='{}' off=0 name shape bytes d
	for t in $spec; do
		name=${t%%:*} shape=${t#*:}
		[ "$name" = "${2:-}" ] && continue
		bytes=4
		for d in ${shape//,/ }; do bytes=$((bytes * d)); done
		hdr=$(jq -c --arg n "$name" --argjson s "[$shape]" --argjson a $off \
			--argjson b $((off + bytes)) '.[$n] = {dtype: "F32", shape: $s, data_offsets: [$a, $b]}' \
			<<< "$hdr")
		off=$((off + bytes))
	done
	# pad the header to a multiple of 8 with spaces, as safetensors writers do
	while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
	local len=${#hdr} i
	{
		for i in 0 1 2 3 4 5 6 7; do
			printf "\\$(printf %03o $(( (len >> (8 * i)) & 255 )))"
		done
		printf '%s' "$hdr"
		head -c $off /dev/zero
	} > "$1/model.safetensors"
}

@test "inspect: HF directory with safetensors: tensor sum matches the spec" {
	tmp=$(mktemp -d)
	make_hf_dir "$tmp/hf"
	# 16*8 embed + 16*8 head + 4*8*8 attn + 3*8*16 ffn + 2*8 norms + 8 final
	run tfm-inspect -F json "$tmp/hf"
	assert_success
	[ "$(echo "$output" | jq -e .params.total)" = 920 ]
	[ "$(echo "$output" | jq -e .tensor_params)" = 920 ]
	[ "$(echo "$output" | jq -e .n_tensors)" = 12 ]
	run tfm-inspect -F tsv -T "$tmp/hf"
	assert_success
	assert_line "$tmp/hf	tensor	lm_head.weight	f32	8,16	512"
	rm -rf "$tmp"
}

@test "inspect: a tensor short of the spec warns on stderr" {
	tmp=$(mktemp -d)
	make_hf_dir "$tmp/hf" lm_head.weight
	tfm-inspect -F json "$tmp/hf" > "$tmp/out" 2> "$tmp/err"
	[ "$(jq -e .tensor_params "$tmp/out")" = 792 ]
	grep -q "warning: .*792 parameters, the spec counts 920" "$tmp/err"
	rm -rf "$tmp"
}

@test "inspect: a malicious pickle is refused (65)" {
	run tfm-inspect "$ROOT/tests/data/hf-evil"
	[ "$status" -eq 65 ]
	assert_output --partial "forbidden"
}

@test "inspect: every fixture's tensors hold exactly the parameters the spec counts" {
	# tests/fixtures: tiny random checkpoints written by transformers itself
	n=0
	for d in "$ROOT"/tests/fixtures/*/; do
		[ -f "$d/config.json" ] || continue
		run tfm-inspect -F json "$d"
		assert_success
		t=$(echo "$output" | jq -e .params.total)
		w=$(echo "$output" | jq -e .tensor_params)
		[ "$t" = "$w" ] || fail "$d: spec counts $t, tensors hold $w"
		n=$((n + 1))
	done
	[ "$n" -ge 20 ]
}

@test "inspect: num_attention_heads 0 in a config is refused (65), not a crash; tfm-bench --config too" {
	printf '{"model_type": "llama", "num_attention_heads": 0}' > "$BATS_TEST_TMPDIR/h0.json"
	run tfm-inspect "$BATS_TEST_TMPDIR/h0.json"
	assert_failure 65
	assert_output --partial 'num_attention_heads=0 is out of range'
	run tfm-bench --config "$BATS_TEST_TMPDIR/h0.json"
	assert_failure 65
	printf '{"model_type": "gpt2", "n_head": -1, "n_embd": -9223372036854775808}' > "$BATS_TEST_TMPDIR/h1.json"
	run tfm-inspect "$BATS_TEST_TMPDIR/h1.json"
	assert_failure 65
}

@test "inspect: a count that would overflow 64 bits is refused (65), never printed negative" {
	printf '{"model_type": "llama", "hidden_size": 2000000000, "num_attention_heads": 1, "intermediate_size": 2000000000}' > "$BATS_TEST_TMPDIR/big.json"
	run tfm-inspect "$BATS_TEST_TMPDIR/big.json"
	assert_failure 65
	assert_output --partial 'does not fit in 64 bits'
	refute_output --partial ' -'
	printf '{"model_type": "mixtral", "num_local_experts": 2000000000, "num_experts_per_tok": 1}' > "$BATS_TEST_TMPDIR/moe.json"
	run tfm-inspect -F json "$BATS_TEST_TMPDIR/moe.json"
	assert_failure 65
}

@test "inspect: the summary: name, file type, training context, KV at tfm-run's context, tokenizer, chat template" {
	need_shared
	T=$BATS_TEST_TMPDIR
	tfm-convert --vocab "$TOK512" -o "$T/s.gguf" "$STORIES"
	run tfm-inspect "$T/s.gguf"
	assert_success
	assert_line 'name              stories260K'
	assert_line 'file type         F32'
	assert_line 'training context  512 tokens'
	assert_line --regexp '^kv cache +1,280 bytes/token \(f32\); 655,360 bytes at 512 tokens$'
	assert_line 'tokenizer         llama, 512 tokens; bos 1, eos 2, unk 0'
	assert_line 'chat template     no'
	refute_line --regexp '^spec'
	tfm-quant -q -o "$T/q.gguf" q4_1 "$T/s.gguf"
	run tfm-inspect "$T/q.gguf"
	assert_line 'file type         Q4_1'
	# a 4K-context model's KV at tfm-run's default of at most 4096 tokens
	run tfm-inspect "$CFG/mistral-7b.json"
	assert_line --regexp 'bytes at 4,096 tokens$'
	# -v: the parts and the spec; -T: the tensors first
	run tfm-inspect -v "$T/s.gguf"
	assert_line --regexp '^spec$'
	assert_line --regexp '^  attn +'
	run tfm-inspect -T "$T/s.gguf"
	assert_line --index 0 'tensors'
	run tfm-inspect -F json "$T/s.gguf"
	jq -e '.name == "stories260K" and .file_type == "F32" and .ctx_train == 512 and
		.tokenizer.n_tokens == 512 and .tokenizer.chat_template == false' <<< "$output"
}

@test "inspect: -k K,V counts the K and V caches at their own types" {
	run tfm-inspect -F json -c 1000 -k q8_0,q4_0 "$CFG/llama-2-7b.json"
	assert_success
	# 32 layers x 4096 per token, K at 34 and V at 18 bytes per 32 elements
	echo "$output" | jq -e '.kv_bytes_per_token == 32 * 4096 * (34 + 18) / 32'
	echo "$output" | jq -e '.kv_type == "q8_0,q4_0" and .kv_bytes == 1000 * .kv_bytes_per_token'
	run tfm-inspect -k q8_0,q4_0,f16 "$CFG/llama-2-7b.json"
	assert_failure 64
}

@test "inspect: a Llama 4 checkpoint's config (text_config) is its text model's spec" {
	jq '{model_type: "llama4", text_config: ., vision_config: {hidden_size: 8},
	     image_token_index: 200092}' "$ROOT/tests/fixtures/llama4/config.json" > "$BATS_TEST_TMPDIR/config.json"
	run tfm-inspect -F json "$BATS_TEST_TMPDIR/config.json"
	assert_success
	nested=$(echo "$output" | jq -S '.spec, .params')
	text=$(tfm-inspect -F json "$ROOT/tests/fixtures/llama4/config.json" | jq -S '.spec, .params')
	[ "$nested" = "$text" ]
	# chunked layers cap their cache at the chunk (8 tokens), the NoPE layer does not
	run tfm-inspect -F json --ctx 64 "$ROOT/tests/fixtures/llama4/config.json"
	[ "$(echo "$output" | jq .kv_bytes)" = $(( (3 * 8 + 64) * 4 * 2 * 2 * 24 )) ]
	# chunked layers without a chunk size: transformers raises, tfm refuses
	jq '.attention_chunk_size = null | del(.layer_types)' "$ROOT/tests/fixtures/llama4/config.json" \
		> "$BATS_TEST_TMPDIR/n.json"
	run tfm-inspect "$BATS_TEST_TMPDIR/n.json"
	assert_failure 65
	assert_output --partial 'chunked attention layers with attention_chunk_size=null'
	# the same when layer_types names the chunked layers; none chunked is fine
	jq '.attention_chunk_size = null | .layer_types = ["full_attention", "chunked_attention",
		"full_attention", "full_attention"][:.num_hidden_layers]' \
		"$ROOT/tests/fixtures/llama4/config.json" > "$BATS_TEST_TMPDIR/t.json"
	run tfm-inspect "$BATS_TEST_TMPDIR/t.json"
	assert_failure 65
	assert_output --partial 'layer_types[1]: chunked_attention with attention_chunk_size=null'
	jq '.attention_chunk_size = null | .layer_types = [range(.num_hidden_layers) | "full_attention"]' \
		"$ROOT/tests/fixtures/llama4/config.json" > "$BATS_TEST_TMPDIR/f.json"
	run tfm-inspect "$BATS_TEST_TMPDIR/f.json"
	assert_success
}

@test "inspect: an encoder directory counts the heads its tensors hold, as the GGUF made from it" {
	# BertForMaskedLM's config names no pooler: the count comes from the
	# heads the tensors hold (a pooler, a masked-LM head, a classifier);
	# the directory's parts equal those of the GGUF tfm-convert makes of
	# it, and those add up to the GGUF's tensors
	n=0
	for d in "$ROOT"/tests/fixtures/encoders/*/; do
		[ -e "$d/model.safetensors" ] || continue
		tfm-convert -q -o "$BATS_TEST_TMPDIR/m.gguf" "$d"
		a=$(tfm-inspect -F json "$d" 2>/dev/null | jq -c .params)
		b=$(tfm-inspect -F json "$BATS_TEST_TMPDIR/m.gguf" | jq -c '[.params, .params.total == .tensor_params]')
		[ "$b" = "[$a,true]" ] || { echo "$d: $a against $b"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 30 ]
	run tfm-inspect -F json "$ROOT/tests/fixtures/encoders/bert-mlm"
	[ "$(echo "$output" | jq '.params.total == .tensor_params and .params.head > 0')" = true ]
}
