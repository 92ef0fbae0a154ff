#!/usr/bin/env bats
# tok.bats: tfm-tok options, pipes, exit codes.  Expected ids come from
# llama.cpp's vectors (ggml-vocab-*.gguf.out) and llama2.c's encoder.
load helpers

setup() {
	need_shared
	VOCAB=$SHARED/tokenizers/llama.cpp-vocab
}

@test "tok512: ids as llama2.c gives them" {
	run sh -c "printf 'Once upon a time' | tfm-tok --vocab '$TOK512' --bos"
	assert_success
	assert_output "1 403 407 261 378"
	# with the llama2.c checkpoint as -m (vocab size from its header)
	run sh -c "printf 'Once upon a time' | tfm-tok -m '$STORIES' --vocab '$TOK512'"
	assert_success
	assert_output "403 407 261 378"
}

@test "llama-spm GGUF: ids match llama.cpp's vector" {
	# the 25th ".inp" string is " Hello"; its ".out" line is "29871 15043"
	run sh -c "printf ' Hello' | tfm-tok -m '$VOCAB/ggml-vocab-llama-spm.gguf'"
	assert_success
	assert_output "$(sed -n '25s/^ *//p' "$VOCAB/ggml-vocab-llama-spm.gguf.out")"
	assert_output "29871 15043"
}

@test "-l: one output line per input line" {
	run sh -c "printf 'Hello world\n\nHello\n' | tfm-tok -l -m '$VOCAB/ggml-vocab-gpt-2.gguf'"
	assert_success
	assert_equal "${#lines[@]}" 2   # bats drops the empty line from lines[]
	assert_output "15496 995

15496"
}

@test "--decode round trip" {
	for v in llama-spm gpt-2; do
		run sh -c "printf 'Hello  world,\nsecond line \342\200\224 ok\n' | tfm-tok -m '$VOCAB/ggml-vocab-$v.gguf' | tfm-tok -m '$VOCAB/ggml-vocab-$v.gguf' --decode | od -c"
		assert_success
		assert_output "$(printf 'Hello  world,\nsecond line \342\200\224 ok\n' | od -c)"
	done
	run sh -c "printf 'Once upon a time' | tfm-tok --vocab '$TOK512' --bos | tfm-tok --vocab '$TOK512' --decode"
	assert_success
	assert_output "Once upon a time"
}

@test "--decode -l: a line of text per line of ids" {
	run sh -c "printf '1 403 407\n346 306 414\n' | tfm-tok --vocab '$TOK512' --decode -l"
	assert_success
	assert_line --index 0 "Once upon"
	assert_line --index 1 "Hello"
}

@test "--pieces" {
	run sh -c "printf 'Hello World!' | tfm-tok -m '$VOCAB/ggml-vocab-bert-bge.gguf' --pieces --bos"
	assert_success
	assert_output "[CLS] ▁hello ▁world ▁! [SEP]"
}

@test "--special reads control tokens in the text" {
	# ids of a, <|endoftext|>, b in the GPT-2 vocabulary
	run sh -c "printf 'a<|endoftext|>b' | tfm-tok --special -m '$VOCAB/ggml-vocab-gpt-2.gguf'"
	assert_success
	assert_output "64 50256 65"
	run sh -c "printf 'a<|endoftext|>b' | tfm-tok -m '$VOCAB/ggml-vocab-gpt-2.gguf'"
	assert_success
	refute_output --partial "50256"
}

@test "--help prints the usage to stdout, exit 0" {
	run tfm-tok --help
	assert_success
	assert_line --index 0 --partial "usage: tfm-tok"
	run tfm-tok -V
	assert_success
	assert_output --partial "tfm-tok"
}

@test "usage errors exit 64" {
	run tfm-tok
	assert_failure 64
	run tfm-tok --no-such-option
	assert_failure 64
	run tfm-tok --vocab "$TOK512" extra-arg
	assert_failure 64
}

@test "bad model exits 65, missing file 66" {
	run sh -c "echo hi | tfm-tok -m '$TOK512'"
	assert_failure 65
	assert_output --partial "unrecognised format (not a GGUF file"
	# a checkpoint without tokenizer files says so
	run sh -c "echo hi | tfm-tok -m '$ROOT/tests/fixtures/llama'"
	assert_failure 65
	assert_output --partial "no tokenizer"
	run sh -c "echo hi | tfm-tok -m /nonexistent/model.gguf"
	assert_failure 66
	run sh -c "echo 99999 | tfm-tok --vocab '$TOK512' --decode"
	assert_failure 65
}

@test "-m takes any checkpoint tfm-convert reads: llama2.c with --vocab gives the tokenizer's ids" {
	a=$(echo "Once upon a time" | tfm-tok --vocab "$TOK512")
	b=$(echo "Once upon a time" | tfm-tok -m "$STORIES" --vocab "$TOK512")
	[ -n "$a" ] && [ "$a" = "$b" ]
	c=$(echo "Once upon a time" | tfm-tok -m <(tfm-convert --vocab "$TOK512" "$STORIES"))
	[ "$a" = "$c" ]
}

@test "a closed pipe ends quietly" {
	run sh -c "yes 'Once upon a time' | head -c 200000 | tfm-tok -l --vocab '$TOK512' | head -1"
	assert_success
	assert_output "403 407 261 378"
}
