#!/usr/bin/env bats
# tfm-convert: formats in, GGUF out, pipes, exit codes, atomic output.
load helpers

setup() {
	need_shared
	T=$BATS_TEST_TMPDIR
}

@test "convert: --help prints the usage on stdout, exit 0" {
	run tfm-convert --help
	assert_success
	assert_line --index 0 --regexp '^usage: tfm-convert '
}

@test "convert: --version" {
	run tfm-convert --version
	assert_success
	assert_output --regexp '^tfm-convert \(tfm\) [0-9]'
}

@test "convert: bad option is a usage error (64)" {
	run tfm-convert --no-such-option
	assert_failure 64
}

@test "convert: llama2.c to GGUF file, then GGUF is recognised by tfm-inspect" {
	run tfm-convert --vocab "$TOK512" -o "$T/s.gguf" "$STORIES"
	assert_success
	assert_output ''
	[ "$(head -c 4 "$T/s.gguf")" = GGUF ]
	run tfm-inspect -F json "$T/s.gguf"
	assert_success
	[ "$(echo "$output" | jq -r .params.total)" = 260032 ]
}

@test "convert: pipe into tfm-inspect -" {
	run sh -c "tfm-convert --vocab '$TOK512' '$STORIES' | tfm-inspect -F json - | jq -r .params.total"
	assert_success
	assert_output 260032
}

@test "convert: GGUF to GGUF re-write keeps the tensors byte for byte" {
	tfm-convert --vocab "$TOK512" -o "$T/a.gguf" "$STORIES"
	tfm-convert -o "$T/b.gguf" "$T/a.gguf"
	# the first column is the input's name
	tfm-inspect --tensors -F tsv "$T/a.gguf" | cut -f2- > "$T/a.txt"
	tfm-inspect --tensors -F tsv "$T/b.gguf" | cut -f2- > "$T/b.txt"
	grep -q 'blk.4.ffn_down.weight' "$T/a.txt"
	cmp "$T/a.txt" "$T/b.txt"
	# same data section: the files end with the same tensor bytes
	cmp <(tail -c 1000000 "$T/a.gguf") <(tail -c 1000000 "$T/b.gguf")
}

@test "convert: zstd output round-trips through stdin" {
	tfm-convert -z --vocab "$TOK512" -o "$T/s.gguf.zst" "$STORIES"
	[ "$(head -c 4 "$T/s.gguf.zst" | od -An -tx1 | tr -d ' ')" = 28b52ffd ]
	run sh -c "tfm-convert - < '$T/s.gguf.zst' | tfm-inspect -F json - | jq -r .params.total"
	assert_success
	assert_output 260032
}

@test "convert: --dtype f16 halves the weights" {
	tfm-convert --vocab "$TOK512" -o "$T/f32.gguf" "$STORIES"
	tfm-convert --dtype f16 --vocab "$TOK512" -o "$T/f16.gguf" "$STORIES"
	a=$(stat -c %s "$T/f32.gguf"); b=$(stat -c %s "$T/f16.gguf")
	# 2-D weights are ~all of the 260K parameters: f16 file well under 60%
	[ $((b * 100 / a)) -lt 60 ]
	run tfm-convert --dtype q4_0 -o "$T/x.gguf" "$STORIES"
	assert_failure 64
}

@test "convert: missing input is 66, bad data is 65, no output left behind" {
	run tfm-convert -o "$T/out.gguf" /nonexistent/model.bin
	assert_failure 66
	printf 'this is not a model at all, just some bytes of text\n' > "$T/junk.bin"
	run tfm-convert -o "$T/out.gguf" "$T/junk.bin"
	assert_failure 65
	[ ! -e "$T/out.gguf" ]
	run sh -c "ls '$T' | grep -c tmp"
	assert_output 0
}

@test "convert: truncated llama2.c checkpoint is 65 with no output" {
	head -c 100000 "$STORIES" > "$T/trunc.bin"
	run tfm-convert -o "$T/out.gguf" "$T/trunc.bin"
	assert_failure 65
	[ ! -e "$T/out.gguf" ]
}

@test "convert: a pickle that calls os.system is refused (65), nothing runs" {
	rm -f /tmp/tfm-pwned
	run tfm-convert -o "$T/out.gguf" "$ROOT/tests/data/hf-evil"
	assert_failure 65
	assert_output --partial 'os'
	[ ! -e /tmp/tfm-pwned ]
	[ ! -e "$T/out.gguf" ]
}

@test "convert: non-GGUF data on stdin is a clear error" {
	run sh -c "printf 'hello' | tfm-convert > '$T/o'"
	assert_failure 65
}

@test "convert: every HF fixture converts; GGUF parameters equal the computed total" {
	for c in "$ROOT"/tests/fixtures/*/config.json "$ROOT"/tests/fixtures/encoders/*/config.json; do
		d=$(dirname "$c") n=$(basename "$(dirname "$c")")
		tfm-convert -o "$T/$n.gguf" "$d" || fail "$n: convert failed"
		run tfm-inspect -F json "$T/$n.gguf"
		[ "$(echo "$output" | jq '.params.total == .tensor_params')" = true ] ||
			fail "$n: $(echo "$output" | jq -c '[.params.total, .tensor_params]')"
	done
}

@test "convert: a config as transformers 5 saves it (rope_parameters) gives the same GGUF as the 4.x layout" {
	n=0
	for f in "$ROOT"/tests/fixtures/*/config-v5.json; do
		d=$(dirname "$f") name=$(basename "$(dirname "$f")")
		mkdir -p "$T/v5/$name"
		cp "$d"/* "$T/v5/$name/"
		cp "$f" "$T/v5/$name/config.json"
		tfm-convert -o "$T/a.gguf" "$d"
		tfm-convert -o "$T/b.gguf" "$T/v5/$name"
		cmp "$T/a.gguf" "$T/b.gguf" || fail "$name: the two layouts differ"
		n=$((n + 1))
	done
	[ "$n" -ge 20 ]
}

@test "convert: rope_parameters keys tfm does not implement are refused (65), naming the key" {
	mkdir -p "$T/m"
	cp "$ROOT"/tests/fixtures/llama/* "$T/m/"
	jq '.rope_parameters = {"rope_type": "default", "rope_theta": 10000, "mrope_section": [2, 2]}' \
		"$ROOT/tests/fixtures/llama/config.json" > "$T/m/config.json"
	run tfm-convert -o "$T/o.gguf" "$T/m"
	assert_failure 65
	assert_output --partial 'rope_parameters.mrope_section'
	[ ! -e "$T/o.gguf" ]
	jq '.rope_parameters = {"rope_type": "yarn", "factor": 2, "truncate": false}' \
		"$ROOT/tests/fixtures/llama/config.json" > "$T/m/config.json"
	run tfm-convert -o "$T/o.gguf" "$T/m"
	assert_failure 65
	assert_output --partial 'truncate=false'
	jq '.model_type = "gemma2" | .rope_parameters = {"full_attention": {"rope_type": "default", "rope_theta": 10000}, "sliding_attention": {"rope_type": "default", "rope_theta": 500}}' \
		"$ROOT/tests/fixtures/gemma2/config.json" > "$T/m/config.json"
	run tfm-inspect -v "$T/m/config.json"
	assert_failure 65
	assert_output --partial 'sliding layers'
}

@test "convert: rope_parameters per layer type: gemma3's sliding rope_theta is its local base" {
	printf '%s' '{"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 6,
	  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
	  "layer_types": ["sliding_attention","sliding_attention","sliding_attention","sliding_attention","sliding_attention","full_attention"],
	  "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 12345.0},
	                      "full_attention": {"rope_type": "default", "rope_theta": 999999.0}}}' > "$T/g3.json"
	run tfm-inspect -v "$T/g3.json"
	assert_success
	assert_line --regexp '^  rope.theta +999999$'
	assert_line --regexp '^  rope.theta_local +12345$'
}

@test "convert: qwen3_moe's expert count under its transformers 5 name (num_local_experts)" {
	printf '%s' '{"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
	  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
	  "moe_intermediate_size": 32, "num_local_experts": 6, "num_experts_per_tok": 2}' > "$T/q.json"
	run tfm-inspect -v "$T/q.json"
	assert_success
	assert_line --regexp '^  moe.n_expert +6$'
	printf '%s' '{"model_type": "qwen3_moe", "num_local_experts": 6, "num_experts": 8}' > "$T/q2.json"
	run tfm-inspect -v "$T/q2.json"
	assert_failure 65
	assert_output --partial 'disagree'
}

@test "convert: an HF directory packed as .tar.zst and .zip gives the same GGUF" {
	d=$ROOT/tests/fixtures/llama
	tfm-convert -o "$T/dir.gguf" "$d"
	tar -C "$d" -cf - . | zstd -q > "$T/llama.tar.zst"
	tfm-convert -o "$T/tar.gguf" "$T/llama.tar.zst"
	cmp "$T/dir.gguf" "$T/tar.gguf"
	(cd "$d" && bsdtar --format zip -cf "$T/llama.zip" .)
	tfm-convert -o "$T/zip.gguf" "$T/llama.zip"
	cmp "$T/dir.gguf" "$T/zip.gguf"
}

@test "convert: llama Q/K are permuted for llama.cpp and the spec says interleaved" {
	tfm-convert -o "$T/l.gguf" "$ROOT/tests/fixtures/llama"
	run tfm-inspect -F json "$T/l.gguf"
	[ "$(echo "$output" | jq '.spec["rope.interleaved"]')" = true ]
	tfm-convert -o "$T/q.gguf" "$ROOT/tests/fixtures/qwen2"
	run tfm-inspect -F json "$T/q.gguf"
	[ "$(echo "$output" | jq '.spec["rope.interleaved"]')" = false ]
}

@test "convert: refuses to write binary to a terminal (64)" {
	run script -qec "tfm-convert --vocab '$TOK512' '$STORIES'" /dev/null
	assert_failure 64
	assert_output --partial 'refusing to write binary to a terminal'
	refute_output --partial GGUF
}

@test "convert: the README's list of model types is exactly the fixture types (decoders, encoders, encoder-decoders)" {
	readme=$(grep '^Model types checked against transformers:' "$ROOT/README.md" |
		grep -o '`[a-z0-9_-]*`' | tr -d '`' | sort)
	fixtures=$(jq -r '.fixtures[].model_type' "$ROOT/tests/fixtures/MANIFEST.json" \
		"$ROOT/tests/fixtures/encoders/MANIFEST.json" \
		"$ROOT/tests/fixtures/seq2seq/MANIFEST.json" | sort -u)
	[ -n "$readme" ]
	[ "$readme" = "$fixtures" ] || fail "README: $(echo $readme) / fixtures: $(echo $fixtures)"
}

@test "convert: a tokenizer id past the embedding is refused (65) at once, no GGUF of gigabytes" {
	T=$BATS_TEST_TMPDIR
	mkdir "$T/m"
	cp "$ROOT/tests/fixtures/llama/config.json" "$ROOT/tests/fixtures/llama/model.safetensors" "$T/m/"
	# 223 bytes naming token 2^26: once a 1.7 GB GGUF after 23 s and 6.9 GB
	printf '%s' '{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},"added_tokens":[{"id":67108864,"content":"x","special":true}]}' > "$T/m/tokenizer.json"
	run tfm-convert -o "$T/out.gguf" "$T/m"
	assert_failure 65
	assert_output --partial "token id 67108864 ('x') is past the model's vocabulary of 256"
	[ ! -e "$T/out.gguf" ]
	# without a vocab_size (llama's default 32000 is not the 256 rows either)
	jq 'del(.vocab_size)' "$ROOT/tests/fixtures/llama/config.json" > "$T/m/config.json"
	run tfm-convert -o "$T/out.gguf" "$T/m"
	assert_failure 65
	assert_output --partial "vocab_size 32000, but token_embd.weight has 256 rows"
}

@test "convert: config.json's vocab_size must be the embedding's rows (65)" {
	T=$BATS_TEST_TMPDIR
	mkdir "$T/m"
	cp "$ROOT/tests/fixtures/llama/model.safetensors" "$T/m/"
	jq '.vocab_size = 67108864' "$ROOT/tests/fixtures/llama/config.json" > "$T/m/config.json"
	run tfm-convert -o "$T/out.gguf" "$T/m"
	assert_failure 65
	assert_output --partial "vocab_size 67108864, but token_embd.weight has 256 rows"
	[ ! -e "$T/out.gguf" ]
}

@test "convert: decompression bombs: capped expansion (65), memory limit (70), both overridable" {
	T=$BATS_TEST_TMPDIR
	# 300 MiB of zeros in ~10 KB of zstd, as an archive member and as a file
	head -c 300M /dev/zero > "$T/zeros"
	tar -C "$T" -cf - zeros | zstd -q -c > "$T/bomb.tar.zst"
	zstd -q -c < "$T/zeros" > "$T/bomb.zst"
	rm "$T/zeros"
	run tfm-convert -o "$T/out.gguf" "$T/bomb.tar.zst"
	assert_failure 65
	assert_output --partial 'a decompression bomb?'
	[ ! -e "$T/out.gguf" ]
	run tfm-inspect "$T/bomb.zst"
	assert_failure 65
	assert_output --partial 'a decompression bomb?'
	# lifting the ratio cap lets it through to the next check (not a model)
	TFM_EXPAND_RATIO=0 run tfm-convert -o "$T/out.gguf" "$T/bomb.tar.zst"
	refute_output --partial 'decompression bomb'
	# a real archive within the ratio but over --mem-limit or TFM_MEM_LIMIT: 70, both numbers
	tar -C "$ROOT/tests/fixtures" -cf - llama | zstd -q -c > "$T/llama.tar.zst"
	run tfm-convert --mem-limit 100K -o "$T/out.gguf" "$T/llama.tar.zst"
	assert_failure 70
	assert_output --regexp 'expand to .* more than the --mem-limit of 100.0 KiB'
	TFM_MEM_LIMIT=100K run tfm-convert -o "$T/out.gguf" "$T/llama.tar.zst"
	assert_failure 70
	assert_output --partial 'TFM_MEM_LIMIT of 100.0 KiB'
	run tfm-convert --mem-limit 1G -o "$T/out.gguf" "$T/llama.tar.zst"
	assert_success
	run tfm-convert --mem-limit lots -o "$T/out.gguf" "$T/llama.tar.zst"
	assert_failure 64
}

@test "convert: a 17-byte zstd header declaring 776 GiB is refused (65), not allocated" {
	T=$BATS_TEST_TMPDIR
	printf '\x28\xb5\x2f\xfd\xe0\x00\x00\x00\x00\xc2\x00\x00\x00\x01\x00\x00\x00' > "$T/h.zst"
	run tfm-convert -o "$T/out.gguf" "$T/h.zst"
	assert_failure 65
	run tfm-ppl -m "$STORIES" --vocab "$TOK512" -f "$T/h.zst"
	assert_failure 65
	assert_output --partial 'decompression bomb'
}

@test "convert: an unknown input's message lists GGUF among the formats" {
	echo hello > "$BATS_TEST_TMPDIR/x.txt"
	run tfm-convert -o "$BATS_TEST_TMPDIR/y.gguf" "$BATS_TEST_TMPDIR/x.txt"
	assert_failure 65
	assert_output --partial 'unrecognised format (not a GGUF file, Hugging Face directory'
}

@test "convert: --dtype f16 of a quantized GGUF dequantizes with a warning, never keeps q8_0 silently" {
	T=$BATS_TEST_TMPDIR
	tfm-convert -o "$T/f.gguf" "$ROOT/tests/fixtures/llama"
	tfm-quant -q -o "$T/q.gguf" q8_0 "$T/f.gguf"
	run tfm-convert --dtype f16 -o "$T/h.gguf" "$T/q.gguf"
	assert_success
	assert_output --partial 'warning: --dtype f16: dequantizing the q8_0 weights'
	run tfm-inspect -T "$T/h.gguf"
	refute_output --partial 'q8_0'
	assert_output --regexp 'blk\.0\.attn_q\.weight +f16'
}

@test "convert: GGUF metadata agrees: one BOS id, general.name and general.file_type" {
	T=$BATS_TEST_TMPDIR
	need_shared
	tfm-convert --vocab "$TOK512" -o "$T/s.gguf" "$STORIES"
	run tfm-inspect -F json "$T/s.gguf"
	[ "$(jq -r '.spec."tok.bos_id"' <<< "$output")" = 1 ]
	[ "$(jq -r '.spec."tok.eos_id"' <<< "$output")" = 2 ]
	grep -qa 'general.name' "$T/s.gguf"
	grep -qa 'general.file_type' "$T/s.gguf"
}

@test "convert: the chat template is carried into the GGUF (tokenizer_config.json string or list, chat_template.jinja)" {
	T=$BATS_TEST_TMPDIR
	tpl="$SHARED/chat-templates/templates/meta-llama-Llama-3.1-8B-Instruct.jinja"
	need_shared
	cp -r "$ROOT/tests/data/tok-llama3" "$T/m"
	run tfm-convert -o "$T/none.gguf" "$T/m"
	run tfm-inspect "$T/none.gguf"
	assert_line 'chat template     no'
	jq --rawfile t "$tpl" '.chat_template = $t' "$ROOT/tests/data/tok-llama3/tokenizer_config.json" \
		> "$T/m/tokenizer_config.json"
	tfm-convert -o "$T/s.gguf" "$T/m"
	run tfm-inspect "$T/s.gguf"
	assert_line 'chat template     yes'
	grep -qaF 'tokenizer.chat_template' "$T/s.gguf"
	grep -qaF "$(sed -n 5p "$tpl")" "$T/s.gguf"
	# the list form: "default" and named ones
	jq --rawfile t "$tpl" '.chat_template = [{"name": "default", "template": $t},
		{"name": "tool_use", "template": "{{ messages }}"}]' \
		"$ROOT/tests/data/tok-llama3/tokenizer_config.json" > "$T/m/tokenizer_config.json"
	tfm-convert -o "$T/l.gguf" "$T/m"
	grep -qaF 'tokenizer.chat_template.tool_use' "$T/l.gguf"
	run tfm-inspect "$T/l.gguf"
	assert_line 'chat template     yes'
	# chat_template.jinja beside the config wins (transformers 4.43+ saves it there)
	printf '{{ "jinja file" }}' > "$T/m/chat_template.jinja"
	tfm-convert -o "$T/j.gguf" "$T/m"
	grep -qaF '{{ "jinja file" }}' "$T/j.gguf"
	# anything else is refused
	jq '.chat_template = 5' "$ROOT/tests/data/tok-llama3/tokenizer_config.json" > "$T/m/tokenizer_config.json"
	rm "$T/m/chat_template.jinja"
	run tfm-convert -o "$T/x.gguf" "$T/m"
	assert_failure 65
}

@test "convert: --set attn.n_head_kv=K pools KV heads (GQA); other keys are usage errors, impossible groups 65" {
	tfm-convert -o "$T/a.gguf" "$ROOT/tests/fixtures/llama"
	tfm-convert --set attn.n_head_kv=1 -o "$T/b.gguf" "$ROOT/tests/fixtures/llama"
	a=$(tfm-inspect -F json "$T/a.gguf" | jq .kv_bytes_per_token)
	b=$(tfm-inspect -F json "$T/b.gguf" | jq .kv_bytes_per_token)
	[ "$a" -eq $((2 * b)) ]
	tfm-inspect -F json "$T/b.gguf" | jq -e '.spec["attn.n_head_kv"] == 1'
	# the pooled model runs
	echo '{"bandwidth_bytes_per_s": 1e10, "sgemm_flops_per_s": 1e10}' > "$T/lim.json"
	tfm-bench -q -m "$T/b.gguf" -p 8 -n 2 -r 1 -t 1 --limits "$T/lim.json" -F json |
		jq -e '.tests | length == 2'
	run tfm-convert --set rope.theta=1 -o "$T/c.gguf" "$ROOT/tests/fixtures/llama"
	assert_failure 64
	run tfm-convert --set attn.n_head_kv=3 -o "$T/c.gguf" "$ROOT/tests/fixtures/llama"
	assert_failure 65
	assert_output --partial 'do not pool'
	[ ! -e "$T/c.gguf" ]
}

@test "convert: rwkv.cpp's files: RWKV v4, v5.1, v5.2, v6 (Q5_1), v7 convert, other quantizations refused (65), a truncated file leaves nothing" {
	need_shared
	R=$SHARED/models/rwkv-tiny T=$BATS_TEST_TMPDIR
	run tfm-convert -o "$T/r.gguf" "$R/tiny-rwkv-4v0-660K-FP16.bin"
	assert_success
	run tfm-inspect -F json "$T/r.gguf"
	assert_success
	echo "$output" | jq -e '.arch == "rwkv" and .params.total == 661504 and .file_type == "F16"'
	# v5, v7: the parameters are the files' tensor elements (v7's file also
	# holds layer 0's a0, a1, a2 again as the v0, v1, v2 llama.cpp's rwkv7
	# loader wants: 64 + 2 x 64 x 32 more); the state per layer two token
	# shifts and the heads' matrices (v5 8 of 8x8, v7 one of 64x64), f32
	for v in "5v1-730K 680640 5 1 8 0" "5v2-730K 731904 5 2 8 0" "7v0-834K 829888 7 0 64 4160"; do
		set -- $v
		for ft in 32 16; do
			run tfm-convert -o "$T/v.gguf" "$R/tiny-rwkv-$1-FP$ft.bin"
			assert_success
			run tfm-inspect -F json "$T/v.gguf"
			assert_success
			echo "$output" | jq -e --argjson n "$2" --argjson v "$3" --argjson m "$4" \
				--argjson hs "$5" --argjson x "$6" --arg ft "F$ft" \
				'.arch == "rwkv" and .params.total == $n and .tensor_params == $n + $x and
				 .file_type == $ft and .state_bytes == 12 * (2 * 64 + 64 * $hs) * 4 and
				 .spec["rwkv.version"] == $v and .spec["rwkv.version_minor"] == $m and
				 .spec["rwkv.head_size"] == $hs'
		done
	done
	# v6: rwkv.cpp's Q5_1 file (tests/data/rwkvcpp), dequantized to F32;
	# 16 heads of 8, ranks 32 (token shift) and 64 (decay)
	run tfm-convert -o "$T/v.gguf" "$ROOT/tests/data/rwkvcpp/tiny-rwkv-6v0-3m-Q5_1.bin"
	assert_success
	run tfm-inspect -F json "$T/v.gguf"
	assert_success
	echo "$output" | jq -e '.arch == "rwkv" and .params.total == 3334656 and
		.tensor_params == 3334656 and .file_type == "F32" and
		.state_bytes == 12 * (2 * 128 + 128 * 8) * 4 and .spec["rwkv.version"] == 6 and
		.spec["rwkv.head_size"] == 8 and .spec["rwkv.lora_mix"] == 32 and
		.spec["rwkv.lora_decay"] == 64'
	# a quantization tfm does not read (rwkv.cpp's Q4_1_O, type 4): refused by name
	{
		printf 'fmgge\000\000\000\000\001\000\000\100\000\000\000\001\000\000\000\000\000\000\000'
		printf '\002\000\000\000\020\000\000\000\004\000\000\000\100\000\000\000\100\000\000\000'
		printf 'blocks.0.ln1.wei'
		head -c 4096 /dev/zero
	} > "$T/q.bin"
	run tfm-convert -o "$T/q.gguf" "$T/q.bin"
	assert_failure 65
	assert_output --partial "rwkv.cpp Q4_1_O tensors (blocks.0.ln1.wei) not supported"
	[ ! -e "$T/q.gguf" ]
	head -c 100000 "$R/tiny-rwkv-4v0-660K-FP32.bin" > "$T/cut.bin"
	run tfm-convert -o "$T/cut.gguf" "$T/cut.bin"
	assert_failure 65
	assert_output --partial "rwkv.cpp: "
	[ ! -e "$T/cut.gguf" ]
	[ -z "$(ls "$T" | grep -F 'cut.gguf.')" ]
}

@test "convert: rwkv.cpp's v5, v6 and v7 models run in tfm-ppl and tfm-run (with a byte vocabulary)" {
	need_shared
	R=$SHARED/models/rwkv-tiny T=$BATS_TEST_TMPDIR
	# the tiny models read bytes: a llama2.c tokenizer.bin whose token i is
	# the byte i (score 0) maps ASCII text to its bytes (tfm's llama2.c
	# tokenizer also adds BOS 1 and a leading space)
	{
		printf '\001\000\000\000'
		for i in $(seq 0 255); do
			printf '\000\000\000\000\001\000\000\000'
			printf "\\$(printf %03o "$i")"
		done
	} > "$T/bytes.bin"
	printf 'The quick brown fox jumps over the lazy dog. It was a sunny day in the park and the children were playing.\n' > "$T/t.txt"
	# the perplexity finite and far below a broken model's (about 256 over
	# bytes, or worse): measured 5.3 and 5.5 for v5; 41 for v7, whose tiny
	# model is barely trained (rwkv.cpp's own logits after '"in' give its
	# likeliest byte 5.6%, v5.2's 47%); v6's tiny model is degenerate: its
	# expected logits after '"in' give byte 0 99.9%, and tfm's ppl is 35006
	# here (a bar of 1e5: finite, the model ran)
	cp "$ROOT/tests/data/rwkvcpp/tiny-rwkv-6v0-3m-Q5_1.bin" "$T/"
	for v in "5v1-730K-FP32 10" "5v2-730K-FP16 10" "7v0-834K-FP32 60" "6v0-3m-Q5_1 1e5"; do
		set -- $v
		m=$R/tiny-rwkv-$1.bin
		[ -e "$T/tiny-rwkv-$1.bin" ] && m=$T/tiny-rwkv-$1.bin
		run tfm-convert --vocab "$T/bytes.bin" -o "$T/$1.gguf" "$m"
		assert_success
		run tfm-ppl -m "$T/$1.gguf" -f "$T/t.txt" -c 32 -F json
		assert_success
		echo "$output" | jq -e --argjson max "$2" \
			'(.ppl | isnormal) and .ppl > 1 and .ppl < $max and .tokens == 45'
		run tfm-run -m "$T/$1.gguf" -p 'In the' -n 16 --seed 1
		assert_success
		# (v6 writes its byte 0, which the shell drops)
		[ "$1" = 6v0-3m-Q5_1 ] || [ "${#output}" -ge 16 ]
	done
}

@test "convert: --random SEED writes random weights for a config alone (with the directory's tokenizer), the same file for the same seed" {
	T=$BATS_TEST_TMPDIR FX=$ROOT/tests/fixtures
	# a directory: its config and tokenizer, not its weights
	run tfm-convert --random 3 -o "$T/a.gguf" "$FX/mamba2"
	assert_success
	run tfm-inspect -F json "$T/a.gguf"
	assert_success
	echo "$output" | jq -e '.arch == "mamba2" and .params.total == .tensor_params and
		.params.total > 0 and .tokenizer.model == "gpt2" and .tokenizer.n_tokens == 256'
	run tfm-convert --random 3 -o "$T/b.gguf" "$FX/mamba2"
	assert_success
	cmp "$T/a.gguf" "$T/b.gguf"
	run tfm-convert --random 4 -o "$T/c.gguf" "$FX/mamba2"
	assert_success
	! cmp -s "$T/a.gguf" "$T/c.gguf"
	run tfm-run -m "$T/a.gguf" -p "hello" -n 4 --seed 1
	assert_success
	# a config.json file and a vocabulary; f16 matrices
	jq '.vocab_size = 65536' "$FX/rwkv/config.json" > "$T/rwkv.json"
	run tfm-convert --random 1 --dtype f16 --vocab "$ROOT/tests/data/rwkv-world/rwkv_vocab_v20230424.txt" \
		-o "$T/r.gguf" "$T/rwkv.json"
	assert_success
	run tfm-inspect -F json "$T/r.gguf"
	assert_success
	echo "$output" | jq -e '.arch == "rwkv" and .params.total == .tensor_params and
		.file_type == "F16" and .tokenizer.model == "rwkv"'
	# not a config, no config, not a seed: nothing written
	printf '{"model_type": "llama"' > "$T/bad.json"
	run tfm-convert --random 1 -o "$T/x.gguf" "$T/bad.json"
	assert_failure 65
	assert_output --partial "not a config.json"
	mkdir "$T/empty"
	run tfm-convert --random 1 -o "$T/x.gguf" "$T/empty"
	assert_failure 65
	assert_output --partial "no config.json"
	run tfm-convert --random x -o "$T/x.gguf" "$FX/mamba2"
	assert_failure 64
	[ -z "$(ls "$T" | grep -F 'x.gguf')" ]
}
