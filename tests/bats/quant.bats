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
# ---- a real model: stories260K converted by tfm-convert (f32) ----
# Its rows are 64 wide (172 for ffn_down), so the K types fall back to the
# 32-block types and ffn_down to f16, as llama-quantize does.

model() {
	M=$BATS_FILE_TMPDIR/s260.gguf
	[ -s "$M" ] || tfm-convert -q --vocab "$TOK512" -o "$M" "$STORIES"
}

@test "quant: every TYPE writes a GGUF; quantized ones are smaller" {
	model
	in=$(stat -c %s "$M")
	for t in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_K q5_K q6_K q4_K_M q5_K_M; do
		run tfm-quant -q -o "$T/$t.gguf" "$t" "$M"
		assert_success
		[ "$(head -c 4 "$T/$t.gguf")" = GGUF ]
		case $t in f32) ;; *) [ "$(stat -c %s "$T/$t.gguf")" -lt "$in" ] ;; esac
		# the rest of tfm reads it: same model, same parameters
		[ "$(tfm-inspect -F json "$T/$t.gguf" | jq -r .params.total)" = 260032 ]
	done
	[ "$(stat -c %s "$T/q4_0.gguf")" -lt "$(stat -c %s "$T/q8_0.gguf")" ]
	[ "$(stat -c %s "$T/f16.gguf")" -lt "$(stat -c %s "$T/f32.gguf")" ]
}

@test "quant: --dry-run lists each tensor's type and size, and the total" {
	model
	run --separate-stderr tfm-quant --dry-run q4_0 "$M"
	assert_success
	# norms stay f32; 64-wide matrices are q4_0 (64/32 blocks of 18
	# bytes a row); 172-wide ffn_down rows fall back to f16; the output
	# projection (output.weight, or the token embedding tied to it) gets
	# q6_K, which needs rows of 256: q8_0
	assert_line "$(printf 'blk.0.attn_norm.weight\t64\tf32\tf32\t256')"
	assert_line "$(printf 'blk.0.attn_q.weight\t64x64\tf32\tq4_0\t%d' $((64 * 2 * 18)))"
	assert_line "$(printf 'blk.0.ffn_down.weight\t172x64\tf32\tf16\t%d' $((172 * 64 * 2)))"
	out=token_embd.weight
	echo "$output" | grep -q '^output\.weight' && out=output.weight
	assert_line "$(printf '%s\t64x512\tf32\tq8_0\t%d' $out $((512 * 2 * 34)))"
	total=$(echo "$output" | awk -F '\t' '$1 != "total" { s += $5 } END { print s }')
	assert_line "$(printf 'total\t-\t-\tq4_0\t%d' "$total")"
	# the fallback is noted on stderr
	run sh -c "tfm-quant --dry-run q4_0 '$M' 2>&1 >/dev/null"
	assert_output --partial 'blk.0.ffn_down.weight: rows of 172 are not a multiple of 32 (q4_0): using f16'
	run sh -c "tfm-quant -q --dry-run q4_0 '$M' 2>&1 >/dev/null"
	assert_output ''
}

@test "quant: --tensor-type and --keep-embeddings override the choice" {
	model
	run --separate-stderr tfm-quant --dry-run --tensor-type 'attn_[qk]\.=q8_0' --keep-embeddings q4_0 "$M"
	assert_success
	assert_line --regexp '^blk\.3\.attn_k\.weight	64x32	f32	q8_0	'
	assert_line --regexp '^blk\.3\.attn_v\.weight	64x32	f32	q4_0	'
	assert_line --regexp '^token_embd\.weight	64x512	f32	f32	'
}

@test "quant: requantizing needs --allow-requantize; the same type is copied" {
	model
	tfm-quant -q -o "$T/q8.gguf" q8_0 "$M"
	run tfm-quant -o "$T/q4.gguf" q4_0 "$T/q8.gguf"
	assert_failure 65
	assert_output --partial 'requantizing needs --allow-requantize'
	[ ! -e "$T/q4.gguf" ]
	run tfm-quant -q --allow-requantize -o "$T/q4.gguf" q4_0 "$T/q8.gguf"
	assert_success
	# q8_0 again: nothing to convert, the file comes out the same
	run tfm-quant -q -o "$T/q8b.gguf" q8_0 "$T/q8.gguf"
	assert_success
	cmp "$T/q8.gguf" "$T/q8b.gguf"
}

@test "quant: threads, pipes and zstd give the same bytes" {
	model
	tfm-quant -q -t 1 -o "$T/a.gguf" q4_K_M "$M"
	tfm-quant -q -t 3 -o "$T/b.gguf" q4_K_M "$M"
	cmp "$T/a.gguf" "$T/b.gguf"
	tfm-quant -q q4_K_M < "$M" | cmp - "$T/a.gguf"
	zstd -q -c "$M" | tfm-quant -q -z q4_K_M | zstd -q -d -c | cmp - "$T/a.gguf"
}

@test "quant: -v reports each converted tensor's error" {
	model
	run sh -c "tfm-quant -v -o '$T/v.gguf' q8_0 '$M' 2>&1"
	assert_success
	assert_line --regexp '^tfm-quant: blk\.0\.attn_q\.weight +f32 +-> q8_0 +rmse [0-9.e-]+ \(relative 0\.00[0-9]+\)$'
	# one line for each tensor that changes type
	n=$(tfm-quant -q --dry-run q4_0 "$M" | awk -F '\t' '$1 != "total" && $3 != $4' | wc -l)
	[ "$n" -ge 36 ]
	run sh -c "tfm-quant -v -o '$T/v.gguf' q4_0 '$M' 2>&1 | grep -c ' rmse '"
	assert_output "$n"
}

# A 145 MB llama2.c checkpoint of zeros (dim 512, 4 layers, vocab 32000):
# quantizing it takes long enough to be interrupted while writing.
big_checkpoint() {
	printf '\000\002\000\000\000\012\000\000\004\000\000\000\010\000\000\000\010\000\000\000\000\175\000\000\000\001\000\000' > "$T/hdr"
	{ cat "$T/hdr"; head -c $((36327936 * 4)) /dev/zero; } > "$T/big.bin"
	tfm-convert -o "$T/big.gguf" "$T/big.bin"
}

@test "quant: SIGTERM or SIGHUP while writing removes the temporary file; exit 128+signal" {
	big_checkpoint
	# under nohup SIGHUP is ignored from the start, and stays so for
	# tfm-quant (the Unix convention, as a shell's): only TERM can be tried
	sigs="TERM HUP"
	(( 0x$(awk '/^SigIgn/ {print $2}' /proc/$$/status) & 1 )) && sigs=TERM
	for sig in $sigs; do
		rm -f "$T"/out.gguf*
		tfm-quant -o "$T/out.gguf" q4_K "$T/big.gguf" 2>/dev/null &
		pid=$!
		# up to a minute: a loaded CI machine can take seconds to start
		for i in $(seq 6000); do
			ls "$T"/out.gguf.tmp* >/dev/null 2>&1 && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.01
		done
		ls "$T"/out.gguf.tmp* >/dev/null 2>&1 || fail "no temporary file seen (tfm-quant ended first?)"
		kill -$sig $pid
		rc=0
		wait $pid || rc=$?
		[ "$rc" -eq $((128 + $(kill -l $sig))) ] || fail "$sig: exit $rc"
		! ls "$T"/out.gguf* 2>/dev/null || fail "$sig: left $(ls "$T"/out.gguf*)"
	done
}

@test "quant and convert: -o '' and -o DIR fail with 73 before any work" {
	run tfm-quant -o '' q8_0 "$T/none.gguf"
	assert_failure 73
	assert_output --partial 'empty output path'
	run tfm-quant -o "$T" q8_0 "$T/none.gguf"
	assert_failure 73
	assert_output --partial 'is a directory'
	run tfm-convert -o '' "$T/none.bin"
	assert_failure 73
	run tfm-convert -o "$T" "$T/none.bin"
	assert_failure 73
	run tfm-convert -o "$T/no/such/dir/x.gguf" "$T/none.bin"
	assert_failure 73
}

# A tiny llama2.c checkpoint of zeros (dim 32, hidden 64, 1 layer, 4 heads,
# vocab 64, seq 16: 12,512 floats) with one NaN: the first element of wq.
nan_checkpoint() {
	printf '\040\000\000\000\100\000\000\000\001\000\000\000\004\000\000\000\004\000\000\000\100\000\000\000\020\000\000\000' > "$T/hdr"
	{ cat "$T/hdr"; head -c $((2080 * 4)) /dev/zero; printf '\000\000\300\177';
	  head -c $(((12512 - 2081) * 4)) /dev/zero; } > "$T/nan.bin"
	tfm-convert -o "$T/nan.gguf" "$T/nan.bin"
}

@test "quant: a NaN weight is refused (65) naming the tensor and index, unless --allow-nonfinite" {
	nan_checkpoint
	run tfm-quant -o "$T/q.gguf" q8_0 "$T/nan.gguf"
	assert_failure 65
	assert_output --partial 'blk.0.attn_q.weight: element 0 is NaN'
	[ ! -e "$T/q.gguf" ]
	run tfm-quant -o "$T/q.gguf" --allow-nonfinite q8_0 "$T/nan.gguf"
	assert_success
	[ -s "$T/q.gguf" ]
}

@test "quant and convert: a progress line on a terminal for large files, none in a pipe" {
	T=$BATS_TEST_TMPDIR
	tfm-convert -o "$T/f.gguf" "$ROOT/tests/fixtures/llama"
	# TFM_PROGRESS_MIN lowers the size from which the line is shown (64 MiB)
	TFM_PROGRESS_MIN=1 script -qec "tfm-quant -o $T/q.gguf q8_0 $T/f.gguf" "$T/tty" > /dev/null
	grep -q 'tfm-quant: .*% (0.00 of 0.00 GB) tensor 1/' "$T/tty"
	TFM_PROGRESS_MIN=1 script -qec "tfm-convert -o $T/c.gguf $ROOT/tests/fixtures/llama" "$T/tty2" > /dev/null
	grep -q 'tfm-convert: .*tensor 1/' "$T/tty2"
	# not on a terminal, or small: nothing
	TFM_PROGRESS_MIN=1 tfm-quant -o "$T/q2.gguf" q8_0 "$T/f.gguf" 2> "$T/err"
	! grep -q 'tensor 1/' "$T/err"
	script -qec "tfm-quant -o $T/q3.gguf q8_0 $T/f.gguf" "$T/tty3" > /dev/null
	! grep -q 'tensor 1/' "$T/tty3"
	cmp "$T/q.gguf" "$T/q2.gguf"
}
