#!/usr/bin/env bats
# tfm-quant: options, exit codes, pipes, dry run, requantize refusal; the
# tensor-free vocabulary GGUFs of llama.cpp as a minimal real input.
load helpers
bats_require_minimum_version 1.5.0

VOCAB=$SHARED/tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf

setup() {
	need_shared
	T=$BATS_TEST_TMPDIR
}

@test "quant: --help prints the usage on stdout, exit 0" {
	run tfm-quant --help
	assert_success
	assert_line --index 0 --regexp '^usage: tfm-quant \[-hqVvz\] \[-o OUTPUT\] \[-t N\]'
	run tfm-quant -h
	assert_success
}

@test "quant: --version" {
	run tfm-quant --version
	assert_success
	assert_output --regexp '^tfm-quant \(tfm\) [0-9]'
}

@test "quant: usage errors exit 64" {
	run tfm-quant
	assert_failure 64
	assert_output --partial 'missing TYPE'
	run tfm-quant q3_K "$VOCAB"
	assert_failure 64
	assert_output --partial 'unknown TYPE'
	run tfm-quant --no-such-option q4_0 "$VOCAB"
	assert_failure 64
	run tfm-quant -t 0 q4_0 "$VOCAB"
	assert_failure 64
	run tfm-quant --tensor-type 'attn=q9_0' q4_0 "$VOCAB"
	assert_failure 64
	run tfm-quant --tensor-type 'attn=q4_K_M' q4_0 "$VOCAB"
	assert_failure 64
	run tfm-quant --tensor-type '(=q8_0' q4_0 "$VOCAB"
	assert_failure 64
	run tfm-quant q4_0 "$VOCAB" extra
	assert_failure 64
}

@test "quant: a missing input exits 66, a non-GGUF input 65" {
	run tfm-quant -o "$T/x.gguf" q4_0 "$T/nonexistent.gguf"
	assert_failure 66
	run tfm-quant -o "$T/x.gguf" q4_0 "$TOK512"
	assert_failure 65
	[ ! -e "$T/x.gguf" ]
}

@test "quant: an output that cannot be created exits 73" {
	run tfm-quant -q -o "$T/no/such/dir/x.gguf" q8_0 "$VOCAB"
	assert_failure 73
}

@test "quant: a tensor-free GGUF keeps its keys, gains general.file_type" {
	run tfm-quant -q -o "$T/v.gguf" q8_0 "$VOCAB"
	assert_success
	assert_output ''
	[ "$(head -c 4 "$T/v.gguf")" = GGUF ]
	grep -q -a tokenizer.ggml.tokens "$T/v.gguf"
	grep -q -a general.file_type "$T/v.gguf"
	# stdin to stdout gives the same bytes; so does zstd in and out
	tfm-quant -q q8_0 < "$VOCAB" > "$T/v2.gguf"
	cmp "$T/v.gguf" "$T/v2.gguf"
	zstd -q -c "$VOCAB" | tfm-quant -q -z q8_0 - > "$T/v3.gguf.zst"
	zstd -q -d -c "$T/v3.gguf.zst" | cmp - "$T/v.gguf"
}

@test "quant: --dry-run writes nothing and prints the total" {
	run tfm-quant --dry-run -o "$T/d.gguf" q4_K_M "$VOCAB"
	assert_success
	assert_output "$(printf 'total\t-\t-\tq4_K_M\t0')"
	[ ! -e "$T/d.gguf" ]
}

@test "quant: refuses to write a GGUF to a terminal (64)" {
	# script(1) gives the command a pseudo-terminal as standard output
	run script -qec "tfm-quant q8_0 '$VOCAB'" /dev/null
	assert_failure 64
	assert_output --partial 'refusing to write a GGUF to a terminal'
	run script -qec "tfm-quant --dry-run q8_0 '$VOCAB'" /dev/null
	assert_success
}
