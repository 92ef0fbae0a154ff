#!/usr/bin/env bats
# bench.bats: tfm-bench's behaviour: options, output formats and their keys,
# a tiny random-weight model from a config.json, the attention sweep, the
# --limits file, exit codes.  Benchmarks measure; these tests never look at
# a timing.
load helpers
bats_require_minimum_version 1.5.0

setup() {
	TINY=$BATS_TEST_TMPDIR/tiny.json
	cat > "$TINY" <<-'EOF'
	{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
	 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
	 "vocab_size": 256, "max_position_embeddings": 128}
	EOF
	LIM=$BATS_TEST_TMPDIR/limits.json
	echo '{"bandwidth_bytes_per_s": 1e10, "sgemm_flops_per_s": 5e10}' > "$LIM"
	ATTN="--attn -c 32,64 --heads 4 --kv-heads 2 --head-dim 16 --window 16 --block 8 -r 1 -t 1"
}

@test "bench: -h prints the usage on stdout, -V the version" {
	run tfm-bench -h
	assert_success
	assert_line --index 0 --partial "usage: tfm-bench [-hqVv]"
	assert_line --partial "tfm-bench --attn"
	assert_line --partial "tfm-bench --measure-limits"
	run tfm-bench -V
	assert_success
	assert_output --partial "tfm-bench (tfm)"
}

@test "bench: usage errors exit 64" {
	run tfm-bench
	assert_failure 64
	run tfm-bench -m x --config y
	assert_failure 64
	run tfm-bench --config "$TINY" -F xml
	assert_failure 64
	run tfm-bench --config "$TINY" -F svg
	assert_failure 64
	run tfm-bench --config "$TINY" -r 0
	assert_failure 64
	run tfm-bench --config "$TINY" -p 0 -n 0
	assert_failure 64
	run tfm-bench --config "$TINY" --dtype nosuch
	assert_failure 64
	run tfm-bench --attn --heads 6 --kv-heads 4
	assert_failure 64
	run tfm-bench --attn -c 64,x
	assert_failure 64
	run tfm-bench --config "$TINY" extra
	assert_failure 64
}

@test "bench: tiny --config run, -F json: one object with its keys" {
	run tfm-bench --config "$TINY" -p 8 -n 4 -r 1 -t 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '.source == "random" and .arch == "llama" and .type == "f32"'
	# 2 layers of 64x64 q,o + 2 x 64x32 k,v + 3 x 64x128 ffn, 256x64 embd and head,
	# 5 norms of 64: 106,816 weights of 4 bytes
	echo "$output" | jq -e '.params == 106816 and .size_bytes == 427264'
	echo "$output" | jq -e '.limits.source == "file" and .limits.bandwidth_bytes_per_s == 1e10'
	echo "$output" | jq -e '[.tests[].test] == ["pp8", "tg4"]'
	echo "$output" | jq -e '.tests[0] | .limit == "sgemm" and .reps == 1 and (.samples_ts | length) == 1'
	echo "$output" | jq -e '.tests[1] | .limit == "bandwidth" and .avg_ts > 0 and .limit_fraction > 0'
	echo "$output" | jq -e '.tests[] | has("stddev_ts") and has("n_prompt") and has("n_gen")'
}

@test "bench: encoders from their config (BERT, ELECTRA, ALBERT): prompt tests only" {
	E=$ROOT/tests/fixtures/encoders
	for f in bert electra-cls albert-cls; do
		run --separate-stderr tfm-bench --config "$E/$f/config.json" -p 8,16 -n 4 -r 1 -t 1 \
			--limits "$LIM" -F json
		assert_success
		# the weights the spec counts, a pp test per -p and no tg
		echo "$output" | jq -e '[.tests[].test] == ["pp8", "pp16"] and .tests[1].avg_ts > 0'
		p=$(tfm-inspect -F json "$E/$f" 2> /dev/null | jq .params.total)
		echo "$output" | jq -e --argjson p "$p" '.params == $p and .size_bytes == 4 * $p'
		[[ $stderr == *"an encoder-only model: prompt tests (-p) only"* ]]
	done
}

@test "bench: --seqs runs an encoder's sequences side by side; a decoder refuses it" {
	E=$ROOT/tests/fixtures/encoders
	run --separate-stderr tfm-bench --config "$E/bert/config.json" -p 8,16 --seqs 3 -r 1 -t 1 \
		--limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '[.tests[].test] == ["pp8 x3", "pp16 x3"] and .tests[1].avg_ts > 0'
	run tfm-bench --config "$TINY" -p 8 -n 0 --seqs 2 -r 1 -t 1 --limits "$LIM"
	assert_failure 65
	assert_output --partial '--seqs: encoder-only models only'
	run tfm-bench --config "$TINY" --seqs 0
	assert_failure 64
}

@test "bench: the limit fraction is t/s times work over the --limits value" {
	run tfm-bench --config "$TINY" -p 8 -n 4 -r 2 -t 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '(.tests[0].limit_fraction - .tests[0].avg_ts * .tests[0].work_per_token / 5e10 | fabs) < 1e-6'
	echo "$output" | jq -e '(.tests[1].limit_fraction - .tests[1].avg_ts * .tests[1].work_per_token / 1e10 | fabs) < 1e-6'
	# generation reads the weights and the KV cache at its mean context: tg4
	# at 2 tokens, 2 layers x (32 + 32) f32 per token: 1024 bytes
	echo "$output" | jq -e '.tests[1].work_per_token == .bytes_per_token + 1024'
	# a prefill does at least the FLOPs of its layers' matrices (2 x 2 x
	# (2 x 64x64 + 2 x 64x32 + 3 x 64x128)) and less than twice all weights
	echo "$output" | jq -e '.tests[0].work_per_token >= 147456 and .tests[0].work_per_token < 2 * .params'
}

@test "bench: lists of -p, -n, -t, depths -d and -pg, as llama-bench" {
	run tfm-bench --config "$TINY" -p 8,16 -n 4 -d 0,12 -pg 8,2 -t 1,2 -r 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '[.tests[] | .test] == ["pp8", "pp16", "tg4", "pp8+tg2",
		"pp8 @ d12", "pp16 @ d12", "tg4 @ d12", "pp8+tg2 @ d12",
		"pp8", "pp16", "tg4", "pp8+tg2", "pp8 @ d12", "pp16 @ d12", "tg4 @ d12", "pp8+tg2 @ d12"]'
	echo "$output" | jq -e '[.tests[] | .threads] == [1,1,1,1,1,1,1,1,2,2,2,2,2,2,2,2]'
	echo "$output" | jq -e '.threads == [1, 2] and (.limits | length) == 2'
	echo "$output" | jq -e '.tests[3] | .n_prompt == 8 and .n_gen == 2 and .limit == null and .limit_fraction == null'
	echo "$output" | jq -e '.tests[6] | .n_depth == 12 and .n_gen == 4 and .limit == "bandwidth"'
	# deeper generation reads more KV cache per token: 12 more tokens of 512 bytes
	echo "$output" | jq -e '.tests[6].work_per_token - .tests[2].work_per_token == 6144'
	run tfm-bench --config "$TINY" -p 8 -n 0 -d 4 -r 1 -t 1 --limits "$LIM" -F csv
	assert_success
	assert_line --index 1 --partial ',pp8 @ d4,8,0,4,1,'
	run tfm-bench --config "$TINY" -p 0 -n 0 --pg 4,2 -r 1 -t 1 --limits "$LIM"
	assert_success
	assert_line --regexp '^\| llama f32 .* \| pp4\+tg2 \| .* \| - \|$'
	run tfm-bench --config "$TINY" --pg 4 -r 1
	assert_failure 64
	run tfm-bench --attn -t 1,2
	assert_failure 64
	run tfm-bench --config "$TINY" -p 8,x
	assert_failure 64
}

@test "bench: -F jsonl and csv give one record per test; -n 0 drops tg" {
	run tfm-bench --config "$TINY" -p 8 -n 4 -r 1 -t 1 --limits "$LIM" -F jsonl
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	echo "$output" | jq -e -s 'length == 2 and .[0].test == "pp8" and .[1].test == "tg4" and .[0].limits_source == "file"'
	run tfm-bench --config "$TINY" -p 8 -n 0 -r 1 -t 1 --limits "$LIM" -F csv
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --partial "model,arch,type,size_bytes,params,device,threads"
	assert_line --index 1 --partial ",pp8,8,0,0,1,"
}

@test "bench: markdown table by default" {
	run tfm-bench --config "$TINY" -p 8 -n 4 -r 1 -t 1 --limits "$LIM"
	assert_success
	assert_line --index 0 "| model | size | params | backend | threads | test | t/s | % of limit |"
	assert_line --regexp '^\| llama f32 \| 417\.25 KiB \| 106\.82 K \| .* \| 1 \| pp8 \| .* % sgemm \|$'
	assert_line --regexp '^\| llama f32 .* \| tg4 \| .* % bandwidth \|$'
}

@test "bench: --dtype q8_0 random weights are smaller; --set changes the spec" {
	run tfm-bench --config "$TINY" --dtype q8_0 -p 8 -n 2 -r 1 -t 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '.type == "q8_0" and .size_bytes < 427264 / 3'
	run tfm-bench --config "$TINY" --set model.n_layer=1 -p 8 -n 2 -r 1 -t 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '.params < 106816'
}

@test "bench: --limits given: no measurement" {
	run tfm-bench -v --config "$TINY" -p 8 -n 2 -r 1 -t 1 --limits "$LIM" -F json
	assert_success
	refute_output --partial "measuring"
	refute_output --partial "measured limits"
	run tfm-bench -v --config "$TINY" -p 8 -n 2 -r 1 -t 1 -F json
	assert_success
	assert_output --partial "measuring the machine's limits"
}

@test "bench: --measure-limits -F json writes a file --limits reads" {
	tfm-bench --measure-limits -t 1 -F json > "$BATS_TEST_TMPDIR/m.json"
	jq -e '.bandwidth_bytes_per_s > 0 and .sgemm_flops_per_s > 0 and .threads == 1' "$BATS_TEST_TMPDIR/m.json"
	run tfm-bench --config "$TINY" -p 8 -n 2 -r 1 -t 1 --limits "$BATS_TEST_TMPDIR/m.json" -F json
	assert_success
	echo "$output" | jq -e '.limits.source == "file"'
}

@test "bench: exit codes: 65 bad config, 66 missing input" {
	run tfm-bench --config /nonexistent/config.json -p 8 -n 2 --limits "$LIM"
	assert_failure 66
	run tfm-bench -m /nonexistent/model.gguf -p 8 -n 2 --limits "$LIM"
	assert_failure 66
	run tfm-bench --config "$TINY" -p 8 --limits /nonexistent/limits.json
	assert_failure 66
	echo '{"model_type": "llama", ' > "$BATS_TEST_TMPDIR/broken.json"
	run tfm-bench --config "$BATS_TEST_TMPDIR/broken.json" -p 8 -n 2 --limits "$LIM"
	assert_failure 65
	echo '{"model_type": "no-such-model"}' > "$BATS_TEST_TMPDIR/unknown.json"
	run tfm-bench --config "$BATS_TEST_TMPDIR/unknown.json" -p 8 -n 2 --limits "$LIM"
	assert_failure 65
	echo '{"bandwidth_bytes_per_s": 0}' > "$BATS_TEST_TMPDIR/badlim.json"
	run tfm-bench --config "$TINY" -p 8 -n 2 --limits "$BATS_TEST_TMPDIR/badlim.json"
	assert_failure 65
	# rows of 64 do not fit q4_K's blocks of 256
	run tfm-bench --config "$TINY" --dtype q4_K -p 8 -n 2 --limits "$LIM"
	assert_failure 65
	# the executor keeps an f32 KV cache only
	run tfm-bench --config "$TINY" -k q8_0 -p 8 -n 2 --limits "$LIM"
	assert_failure 65
}

@test "bench: a real GGUF (stories260K): 260,032 parameters of f32" {
	need_shared
	tfm-convert --vocab "$TOK512" -o "$BATS_TEST_TMPDIR/s.gguf" "$STORIES"
	run tfm-bench -m "$BATS_TEST_TMPDIR/s.gguf" -p 16 -n 4 -r 1 -t 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '.source == "file" and .params == 260032 and .size_bytes == 1040128'
	# decode reads every matrix (the head is tied: the whole embedding table)
	echo "$output" | jq -e '.bytes_per_token >= 1040128'
	# --config takes the spec of a GGUF and random weights of the same shape
	run tfm-bench --config "$BATS_TEST_TMPDIR/s.gguf" -p 16 -n 4 -r 1 -t 1 --limits "$LIM" -F json
	assert_success
	echo "$output" | jq -e '.source == "random" and .params == 260032'
}

@test "bench: --attn tiny sweep, -F json keys and KV bytes per variant" {
	run tfm-bench $ATTN -F json
	assert_success
	echo "$output" | jq -e '(.results | length) == 22'
	echo "$output" | jq -e '[.results[] | select(.family | not) | .variant] | unique == ["GQA", "MHA", "MLA", "MQA", "window"]'
	echo "$output" | jq -e '[.results[] | select(.family) | .variant] | unique == ["diff", "gau", "linear", "performer", "simplicial", "simplicial-window"]'
	echo "$output" | jq -e '.results[] | select(.family | not) | .decode_s > 0 and .decode_ref_s > 0 and .prefill_s > 0'
	echo "$output" | jq -e '.results[] | select(.family) | .decode_s > 0 and .decode_ref_s > 0'
	# the family's state by hand: linear 4 heads x (16 x 16 + 16) floats, constant;
	# 2-simplicial K, K', V, V' of 4 x 16 per position, 64 positions
	echo "$output" | jq -e '[.results[] | select(.variant == "linear") | .kv_bytes] == [4352, 4352]'
	echo "$output" | jq -e '.results[] | select(.variant == "simplicial" and .ctx == 64) | .kv_bytes == 65536'
	# an exponent of context length beside the theory for every variant
	echo "$output" | jq -e '(.exponents | length) == 11 and ([.exponents[] | select(.variant == "simplicial")][0] | .decode_exponent_theory == 2 and .context_exponent_theory == 3)'
	echo "$output" | jq -e '[.exponents[] | select(.variant == "linear")][0].decode_exponent_theory == 0'
	# f32 K and V per token of one layer: heads x head dim x 2 x 4 bytes
	echo "$output" | jq -e '[.results[] | select(.ctx == 64 and (.family | not)) | {(.variant): .kv_bytes_per_token}] | add == {"MHA": 512, "GQA": 256, "MQA": 128, "MLA": 288, "window": 256}'
	# the window caps the cache at 16 positions
	echo "$output" | jq -e '.results[] | select(.variant == "window" and .ctx == 64) | .kv_bytes == 4096'
	echo "$output" | jq -e '.results[] | select(.variant == "MHA" and .ctx == 64) | .kv_bytes == 32768 and .ctx_kv_alloc_bytes == 32768 and .ctx_heap_bytes >= 32768'
}

@test "bench: --attn -F md, csv, jsonl and svg" {
	run tfm-bench $ATTN
	assert_success
	assert_line --partial "| variant | kv heads | ctx | decode us | ref us |"
	assert_line --regexp '^\| MLA \| 4 \| 64 \| '
	assert_line --regexp '^\| simplicial \| 4 \| 64 \| '
	assert_line --regexp '^\| simplicial \| [0-9.-]+ \| 2 \| [0-9.-]+ \| 3 \|$'
	run tfm-bench $ATTN -F csv
	assert_success
	[ "${#lines[@]}" -eq 23 ]
	assert_line --index 0 --partial "variant,n_head,n_head_kv,head_dim,v_dim,window,kv_lora_rank,ctx,decode_s"
	run tfm-bench $ATTN -F jsonl
	assert_success
	[ "${#lines[@]}" -eq 33 ]
	echo "$output" | jq -e -s 'length == 33 and ([.[] | select(has("decode_exponent_theory"))] | length) == 11'
	tfm-bench $ATTN -F svg > "$BATS_TEST_TMPDIR/a.svg"
	head -2 "$BATS_TEST_TMPDIR/a.svg" | grep -q '^<svg xmlns="http://www.w3.org/2000/svg"'
	tail -1 "$BATS_TEST_TMPDIR/a.svg" | grep -qx '</svg>'
	grep -c '<polyline' "$BATS_TEST_TMPDIR/a.svg" | grep -qx 27
	grep -q '>window</text>' "$BATS_TEST_TMPDIR/a.svg"
}

@test "bench: --attn --kv-type q8_0 predicts smaller caches, measures no f32 context" {
	run tfm-bench $ATTN -q -k q8_0 -F json
	assert_success
	echo "$output" | jq -e '.results[] | select(.variant == "MHA" and .ctx == 64) | .kv_bytes_per_token == 136 and .ctx_kv_alloc_bytes == null'
}

@test "bench: --config of a 7B model is refused before its random weights are made (70)" {
	run tfm-bench --mem-limit 8G --config "$ROOT/tests/data/configs/llama-2-7b.json"
	assert_failure 70
	assert_output --regexp 'random f32 weights of 6738415616 parameters needs 25.1 GiB, more than the --mem-limit of 8.0 GiB'
}

@test "bench: --config of a file that is no config names the path once" {
	echo hello > "$BATS_TEST_TMPDIR/wiki.txt"
	run tfm-bench --config "$BATS_TEST_TMPDIR/wiki.txt"
	assert_failure 65
	[ "$(grep -o 'wiki.txt' <<< "$output" | wc -l)" -eq 1 ]
}

@test "bench: JSON writes byte counts as integers (not 96576768.0)" {
	run tfm-bench --config "$ROOT/tests/data/configs/gpt2.json" --set model.n_layer=1 -n 2 -p 8 -r 1 -F json
	assert_success
	refute_output --regexp '"(size_bytes|bytes_per_token|flops_per_token)": [0-9]+\.0[,}]?$'
	assert_output --regexp '"size_bytes": [0-9]+,'
	run tfm-bench --attn -c 64 --heads 4 --kv-heads 2 --head-dim 16 -r 1 -F json
	assert_success
	refute_output --regexp '"(kv_bytes|kv_bytes_per_token|ctx_kv_alloc_bytes)": [0-9]+\.0'
}

@test "bench: --attn -F svg has a title with the shapes; progress only on a terminal" {
	run tfm-bench --attn -c 64,128 --heads 4 --kv-heads 2 --head-dim 16 -r 1 -F svg
	assert_success
	assert_output --partial '<title>tfm-bench --attn: 4 query heads of 16 dimensions, 2 KV heads'
	# stderr not a terminal: nothing
	tfm-bench --attn -c 64 --heads 4 --kv-heads 2 --head-dim 16 -r 1 -F json 2> "$BATS_TEST_TMPDIR/err" > /dev/null
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	# under a pseudo-terminal: one progress line per measurement, cleared at the end
	script -qec "tfm-bench --attn -c 64,128 --heads 4 --kv-heads 2 --head-dim 16 -r 1 -F json > $BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/tty" > /dev/null
	grep -q 'tfm-bench: 10/10: window attention at 128 tokens' "$BATS_TEST_TMPDIR/tty"
	jq -e '.results | length == 22' "$BATS_TEST_TMPDIR/a.json"
}

@test "bench and run: TFM_ISA forces the kernels' instruction set; the paths agree" {
	need_shared
	tfm-convert --vocab "$TOK512" -o "$BATS_TEST_TMPDIR/s.gguf" "$STORIES"
	run env TFM_ISA=scalar tfm-bench -q -m "$BATS_TEST_TMPDIR/s.gguf" -p 16 -n 4 -r 1 -F json
	assert_success
	[ "$(jq -r .device <<< "$output")" = cpu/scalar ]
	a=$(TFM_ISA=scalar tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time")
	b=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time")
	[ "$a" = "$b" ]
	if grep -qw avx2 /proc/cpuinfo; then
		c=$(TFM_ISA=avx2 tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time")
		[ "$a" = "$c" ]
	fi
	run env TFM_ISA=sse9 tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 2 -p "Once"
	assert_success
	assert_output --partial 'TFM_ISA=sse9'
}

@test "bench: a checkpoint converted in memory is checked against the memory limit first (70)" {
	run tfm-bench -q -m "$ROOT/tests/fixtures/llama" --mem-limit 20K -p 8 -n 2 -r 1
	assert_failure 70
	assert_output --partial 'converting the checkpoint in memory needs 48.0 KiB, more than the --mem-limit of 20.0 KiB'
	run tfm-bench -q -m "$ROOT/tests/fixtures/llama" --mem-limit 100M -p 8 -n 2 -r 1
	assert_success
}
