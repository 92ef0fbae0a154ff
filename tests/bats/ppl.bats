#!/usr/bin/env bats
# tfm-ppl: llama.cpp's perplexity on WikiText-2, JSON output, gates, stdin,
# exact shards.
load helpers

setup() {
	need_shared
	T=$BATS_TEST_TMPDIR
	M=(-m "$STORIES" --vocab "$TOK512")
	# The first 60,000 bytes of WikiText-2 test, CR removed: about 40K tokens.
	tr -d '\r' < "$SHARED/text/wikitext-2-raw-test.txt" | head -c 60000 > "$T/wiki.txt"
}

@test "ppl: --help prints the usage on stdout, exit 0" {
	run tfm-ppl --help
	assert_success
	assert_line --index 0 --regexp '^usage: tfm-ppl -m MODEL '
}

@test "ppl: --version" {
	run tfm-ppl --version
	assert_success
	assert_output --regexp '^tfm-ppl \(tfm\) [0-9]'
}

@test "ppl: usage errors (64), missing model (66), short text (65)" {
	run tfm-ppl --no-such-option
	assert_failure 64
	run tfm-ppl -f "$T/wiki.txt"
	assert_failure 64
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" --mode sideways
	assert_failure 64
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" --shard 2/2
	assert_failure 64
	run tfm-ppl -m "$T/none.gguf" -f "$T/wiki.txt"
	assert_failure 66
	printf 'Once upon a time' > "$T/short.txt"
	run tfm-ppl "${M[@]}" -f "$T/short.txt"
	assert_failure 65
}

@test "ppl: text output ends with llama.cpp's Final estimate line" {
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 8
	assert_success
	assert_line --index 6 --regexp '^Final estimate: PPL = [0-9]+\.[0-9]{4} \+/- [0-9]+\.[0-9]{5}$'
}

@test "ppl: -F json is one valid object with the documented keys" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 8 -F json > "$T/r.json"
	[ "$(wc -l < "$T/r.json")" -eq 1 ]
	jq -e '(.model == "stories260K.bin") and (.text_bytes == 60000) and (.ctx == 128)
		and (.mode == "chunked") and (.tokens == 8 * 63) and (.ppl > 1)
		and (.ppl_stderr > 0) and (.nll > 0) and (.nll_stderr > 0)
		and ((.ppl | log) - .nll | fabs < 1e-9)
		and ((.bits_per_token - .nll / (2 | log)) | fabs < 1e-9)
		and (.bits_per_byte > 0) and (.entropy_bits > 0) and (.entropy_bits <= 9)
		and (.top1 >= 0) and (.top1 <= 1)' "$T/r.json"
}

@test "ppl: -F jsonl: one object per window, then the result" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 5 -F jsonl > "$T/r.jsonl"
	[ "$(wc -l < "$T/r.jsonl")" -eq 6 ]
	head -n 5 "$T/r.jsonl" | jq -e -s 'length == 5 and all(.tokens == 63 and .ppl > 1)'
	tail -n 1 "$T/r.jsonl" | jq -e '.tokens == 315'
	# ppl is the running perplexity: the last window's equals the result's,
	# and the first window's is exp of its own nll
	[ "$(sed -n 5p "$T/r.jsonl" | jq .ppl)" = "$(tail -n 1 "$T/r.jsonl" | jq .ppl)" ]
	head -n 1 "$T/r.jsonl" | jq -e '(.ppl - (.nll | exp) | fabs) < 1e-9 * .ppl'
}

@test "ppl: a progress line on a terminal's stderr only" {
	run sh -c "tfm-ppl ${M[*]} -f '$T/wiki.txt' -c 128 --chunks 3 2>&1 >/dev/null"
	assert_output ''
	command -v script >/dev/null || fail "script(1) is needed"
	script -qc "tfm-ppl ${M[*]} -f '$T/wiki.txt' -c 128 --chunks 3 >/dev/null" /dev/null > "$T/tty.txt"
	grep -q '\[3/3\] ppl' "$T/tty.txt"
}

@test "ppl: text on stdin gives the same result as -f" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 -F json > "$T/f.json"
	tfm-ppl "${M[@]}" -c 128 --chunks 4 -F json < "$T/wiki.txt" > "$T/s.json"
	cmp "$T/f.json" "$T/s.json"
}

@test "ppl: strided mode scores every token once, as Hugging Face's sliding window" {
	head -c 3000 "$T/wiki.txt" > "$T/short.txt"
	n=$(tfm-ppl "${M[@]}" -f "$T/short.txt" -c 4096 --mode strided -F json | jq .text_tokens)
	[ "$n" -gt 600 ]
	# every target after the first, once, for any window and stride < window
	for cs in "128 32" "128 127" "64 1" "300 150" "1000 999"; do
		set -- $cs
		tfm-ppl "${M[@]}" -f "$T/short.txt" -c $1 --mode strided --stride $2 -F json > "$T/r.json"
		jq -e --argjson n "$n" '.mode == "strided" and .tokens == $n - 1' "$T/r.json" ||
			fail "-c $1 --stride $2: $(jq -c '[.tokens, .windows]' "$T/r.json")"
	done
	# windows: 1 + ceil((n - c) / s)
	tfm-ppl "${M[@]}" -f "$T/short.txt" -c 128 --mode strided --stride 32 -F json > "$T/r.json"
	jq -e --argjson n "$n" '.windows == 1 + ((($n - 128) + 31) / 32 | floor)' "$T/r.json"
	# A window as long as the text: one forward pass, whatever the stride;
	# the direct calculation is chunked-free full-context scoring, the same
	# for every stride.
	a=$(tfm-ppl "${M[@]}" -f "$T/short.txt" -c "$n" --mode strided --stride 3 -F json | jq .nll)
	b=$(tfm-ppl "${M[@]}" -f "$T/short.txt" -c "$n" --mode strided --stride "$n" -F json | jq .nll)
	[ "$a" = "$b" ]
	# Non-overlapping windows (stride = window) skip each window's first token.
	tfm-ppl "${M[@]}" -f "$T/short.txt" -c 128 --mode strided --stride 128 -F json > "$T/r.json"
	w=$(jq .windows "$T/r.json")
	jq -e --argjson n "$n" --argjson w "$w" '.tokens == $n - $w' "$T/r.json"
	run tfm-ppl "${M[@]}" -f "$T/short.txt" -c 128 --mode strided --stride 129
	assert_failure 64
}

@test "ppl: three shards merged equal the whole run exactly" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 20 -F json > "$T/whole.json"
	for i in 0 1 2; do
		tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 20 --shard $i/3 -F json > "$T/s$i.json"
	done
	jq -e '.shard == "1/3" and .tokens > 0' "$T/s1.json"
	tfm-ppl --merge -F json "$T/s2.json" "$T/s0.json" "$T/s1.json" > "$T/merged.json"
	cmp "$T/whole.json" "$T/merged.json"
	# Text output of the merge is the text output of the whole.
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 20 > "$T/whole.txt"
	tfm-ppl --merge "$T/s0.json" "$T/s1.json" "$T/s2.json" > "$T/merged.txt"
	cmp "$T/whole.txt" "$T/merged.txt"
	# A missing or repeated shard is refused.
	run tfm-ppl --merge "$T/s0.json" "$T/s1.json"
	assert_failure 65
	run tfm-ppl --merge "$T/s0.json" "$T/s1.json" "$T/s1.json"
	assert_failure 65
}

@test "ppl: --merge refuses crafted shard files (65) instead of printing garbage" {
	for i in 0 1; do
		tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 4 --shard $i/2 -F json > "$T/s$i.json"
	done
	tfm-ppl --merge -F json "$T/s0.json" "$T/s1.json" | jq -e '.ppl > 1'
	# Each edit of shard 1 makes a file tfm-ppl cannot have written.
	bad() {
		jq "$1" "$T/s1.json" > "$T/bad.json"
		run tfm-ppl --merge -F json "$T/s0.json" "$T/bad.json"
		assert_failure 65
		refute_output --partial '"ppl"'
	}
	bad '.sums.nll_q32 = "-99999999999999999999999"'             # ppl 3.6e-121
	bad '.sums.nll2_q64 = "1"'                                    # (sum q)^2 > n sum q^2
	bad '.sums.ent_q32 = "-1"'
	bad '.sums.n = 9000000000000000000'                           # more than the text
	bad '.sums.n_top1 = (.sums.n + 1)'
	bad '.sums.nll_q32 = "85070591730234615865843651857942052863" | .sums.nll2_q64 = "85070591730234615865843651857942052863"'
	bad '.shard = "1/4611686018427387904"'                        # would allocate 4 EB
	bad '.shard = "1/3"'                                          # 3 shards, 2 files
	bad '.ctx = -5'
	bad '.text_tokens = -1'
	bad 'del(.sums)'
	# Sums that each pass but overflow when added up are refused too.
	for i in 0 1 2 3; do
		jq --arg s "$i/4" '.shard = $s | .text_tokens = 1000 | .sums.n = 1 | .sums.n_top1 = 0 |
			.sums.nll_q32 = "4294967296" | .sums.ent_q32 = "0" |
			.sums.nll2_q64 = "85070591730234615865843651857942052863"' "$T/s0.json" > "$T/b$i.json"
	done
	run tfm-ppl --merge -F json "$T/b0.json" "$T/b1.json"
	assert_failure 65
	run tfm-ppl --merge -F json "$T/b0.json" "$T/b1.json" "$T/b2.json" "$T/b3.json"
	assert_failure 65
	assert_output --partial 'overflow'
}

@test "ppl: --merge refuses shards whose sums overflow (65)" {
	for i in 0 1; do
		tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 2 --shard $i/2 -F json > "$T/s$i.json"
		sed 's/"n":[0-9]*,/"n":5000000000000000000,/; s/"text_tokens":[0-9]*,/"text_tokens":9000000000000000000,/' \
			"$T/s$i.json" > "$T/big$i.json"
	done
	tfm-ppl --merge -F json "$T/s0.json" "$T/s1.json" > /dev/null
	run tfm-ppl --merge -F json "$T/big0.json" "$T/big1.json"
	assert_failure 65
	assert_output --partial 'overflow'
}

@test "ppl: gates: baseline tolerance (1), mismatched baseline (65), --max-ppl (1)" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 -F json > "$T/base.json"
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 --baseline "$T/base.json"
	assert_success
	# A baseline 10% better: fails at 5%, passes at 20%.
	jq -c '.ppl = .ppl / 1.1' "$T/base.json" > "$T/better.json"
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 --baseline "$T/better.json" --tolerance 5
	assert_failure 1
	assert_output --partial 'Final estimate'
	assert_output --partial 'gate failed'
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 --baseline "$T/better.json" --tolerance 20
	assert_success
	# Another context, another text: not comparable.
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 4 --baseline "$T/base.json"
	assert_failure 65
	head -c 50000 "$T/wiki.txt" > "$T/other.txt"
	run tfm-ppl "${M[@]}" -f "$T/other.txt" -c 128 --chunks 4 --baseline "$T/base.json"
	assert_failure 65
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 --max-ppl 1.5
	assert_failure 1
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 4 --max-ppl 100000
	assert_success
}

# llama.cpp reference (build d32676d77, CPU, F32 weights), on stories260K
# converted by llama.cpp's own converter:
#   llama-convert-llama2c-to-ggml --copy-vocab-from-model tok512.bin \
#       --llama2c-model stories260K.bin --llama2c-output-model stories260K.gguf
#   tr -d '\r' < wikitext-2-raw-test.txt > wiki.txt
#   llama-perplexity -m stories260K.gguf -f wiki.txt -c 512 -t 2
#     -> 1574 chunks, "Final estimate: PPL = 126.8842 +/- 0.74979"
#   llama-perplexity ... -c 512 --chunks 20 -t 2
#     -> "Final estimate: PPL = 103.6918 +/- 5.36380"
#   llama-perplexity ... -c 512 -t 2 -ctk f32 -ctv f32 -fa off
#     -> "Final estimate: PPL = 126.8691 +/- 0.74968"  (221 s wall)
#   llama-perplexity ... -c 512 --chunks 20 -t 2 -ctk f32 -ctv f32 -fa off
#     -> "Final estimate: PPL = 103.6748 +/- 5.36263"
# By default llama.cpp keeps the KV cache in f16, hence the small
# difference from its default numbers (gate 0.1%); with an f32 cache and no
# flash attention it computes what we compute (gate 0.001%).
@test "ppl: WikiText-2 -c 512 matches llama-perplexity within 0.1%" {
	tr -d '\r' < "$SHARED/text/wikitext-2-raw-test.txt" > "$T/wiki-all.txt"
	tfm-ppl "${M[@]}" -f "$T/wiki-all.txt" -c 512 -t 2 -F json > "$T/r.json"
	jq -e '.windows == 1574 and .tokens == 1574 * 255' "$T/r.json"
	jq -e '(.ppl / 126.8842 - 1 | fabs) < 0.001' "$T/r.json"
	jq -e '(.ppl_stderr / 0.74979 - 1 | fabs) < 0.01' "$T/r.json"
	jq -e '(.ppl / 126.8691 - 1 | fabs) < 0.00001' "$T/r.json"
	run tfm-ppl "${M[@]}" -f "$T/wiki-all.txt" -c 512 -t 2 --chunks 20
	assert_success
	ppl=$(echo "$output" | sed -n 's/^Final estimate: PPL = \([0-9.]*\) .*/\1/p')
	awk -v p="$ppl" 'BEGIN { d = p / 103.6918 - 1; exit !(d < 0.001 && d > -0.001) }'
}

@test "ppl: --save-logits then --kl-base: 0 against itself, > 0 for a changed model" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --save-logits "$T/base.lp" -F json > "$T/a.json"
	# zstd; 6 windows of 63 scored positions, each a record of the top 32:
	# 4 + 4 + 32 * (4 + 4) bytes, after the header line.
	[ "$(head -c 4 "$T/base.lp" | od -An -tx1 | tr -d ' ')" = 28b52ffd ]
	zstd -dcq "$T/base.lp" > "$T/base.raw"
	[ $(( $(wc -c < "$T/base.raw") - $(head -n 1 "$T/base.raw" | wc -c) )) -eq $((6 * 63 * 264)) ]
	# far smaller than llama.cpp's uint16-per-vocabulary-entry records
	[ "$(wc -c < "$T/base.lp")" -lt $((6 * 63 * 512 * 2)) ]
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --kl-base "$T/base.lp" -F json > "$T/same.json"
	jq -e '.kl.mean < 1e-6 and .kl.max < 1e-5 and .kl.same_top1 == 1 and (.kl.dp_rms < 1e-6)' "$T/same.json"
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --kl-base "$T/base.lp" \
		--set attn.window=16 -F json > "$T/win.json"
	jq -e '.kl.mean > 0.01 and .kl.stderr > 0 and .kl.same_top1 < 1' "$T/win.json"
	jq -e '.kl.median <= .kl.p99 and .kl.p99 <= .kl.max and .kl.positions == 378' "$T/win.json"
	# ln(PPL ratio) is the difference of the two runs' mean NLL
	b=$(jq .nll "$T/a.json"); w=$(jq .nll "$T/win.json")
	jq -e --argjson b "$b" --argjson w "$w" '(.kl.ln_ppl_ratio - ($w - $b) | fabs) < 1e-6' "$T/win.json"
	# The uncompressed file is read as well.
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --kl-base "$T/base.raw" -F json > "$T/raw.json"
	cmp "$T/same.json" "$T/raw.json"
	# Other settings: refused.
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 5 --kl-base "$T/base.lp"
	assert_failure 65
	# Another text: refused.
	head -c 30000 "$T/wiki.txt" | tail -c 20000 > "$T/other.txt"
	run tfm-ppl "${M[@]}" -f "$T/other.txt" -c 128 --chunks 6 --kl-base "$T/base.lp"
	assert_failure 65
	# A truncated file: refused.
	head -c -100 "$T/base.raw" > "$T/cut.lp"
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --kl-base "$T/cut.lp"
	assert_failure 65
	# KL sums survive shard + merge exactly (the median and p99 need every
	# value, so a merge reports the rest).
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --shard 0/2 --save-logits "$T/b0.lp" -F json > /dev/null
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --shard 1/2 --save-logits "$T/b1.lp" -F json > /dev/null
	for i in 0 1; do
		tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 --shard $i/2 --kl-base "$T/b$i.lp" \
			--set attn.window=16 -F json > "$T/k$i.json"
	done
	tfm-ppl --merge -F json "$T/k0.json" "$T/k1.json" > "$T/kmerged.json"
	cmp <(jq -S 'del(.kl.median, .kl.p99)' "$T/win.json") <(jq -S . "$T/kmerged.json")
}

@test "ppl: --kl-base refuses a record that is not log-probabilities (65)" {
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 2 --save-logits "$T/b.lp" -F json > /dev/null
	zstd -dcq "$T/b.lp" > "$T/b.raw"
	tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 2 --kl-base "$T/b.raw" -F json > /dev/null
	# the first record's logp_target becomes NaN (f32 0x7fc00000, little-endian)
	h=$(head -n 1 "$T/b.raw" | wc -c)
	printf '\000\000\300\177' | dd of="$T/b.raw" bs=1 seek="$h" conv=notrunc 2> /dev/null
	run tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 64 --chunks 2 --kl-base "$T/b.raw" -F json
	assert_failure 65
	assert_output --partial 'not ones'
}

@test "ppl: an f16 KV cache stays within 0.1% of f32" {
	a=$(tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 -F json | jq .ppl)
	b=$(tfm-ppl "${M[@]}" -f "$T/wiki.txt" -c 128 --chunks 6 -k f16 -F json | jq .ppl)
	[ "$a" != "$b" ] # the cache type is really used
	awk -v a="$a" -v b="$b" 'BEGIN { d = b / a - 1; exit !(d < 0.001 && d > -0.001) }'
}

@test "ppl: an empty text says so (65); one token is one token" {
	run tfm-ppl "${M[@]}" -f /dev/null
	assert_failure 65
	assert_output --partial '/dev/null: the text is empty'
	printf '\n' > "$T/nl.txt"
	run tfm-ppl "${M[@]}" -f "$T/nl.txt"
	assert_failure 65
	assert_output --partial 'the text is empty'
	printf 'a' > "$T/a.txt"
	run tfm-ppl "${M[@]}" -f "$T/a.txt" --mode strided
	refute_output --partial '1 tokens'
}

@test "ppl: a masked LM gives its pseudo-perplexity, as transformers computes it" {
	MLM="$ROOT/tests/fixtures/encoders/bert-mlm"
	ref="$MLM/pppl.json"
	TXT="$ROOT/$(jq -r .text "$ref")"
	# each window size of the reference (scripts/make-pppl-reference)
	for c in $(jq -r '.runs[].ctx' "$ref"); do
		run tfm-ppl -m "$MLM" -f "$TXT" -c "$c" -F json
		assert_success
		want=$(jq -c --argjson c "$c" '.runs[] | select(.ctx == $c)' "$ref")
		echo "$output" | jq -e --argjson w "$want" '.mode == "pseudo" and .ctx == $w.ctx and
			.windows == $w.windows and .tokens == $w.tokens and
			((.nll - $w.nll) | fabs) < 1e-5 and ((.ppl / $w.ppl - 1) | fabs) < 1e-5'
	done
	# per window (-F jsonl), and the default window is the model's 40 positions
	run tfm-ppl -m "$MLM" -f "$TXT" -F jsonl
	assert_success
	echo "$output" | head -n -1 | jq -s -e --slurpfile r "$ref" \
		'($r[0].runs[] | select(.ctx == 40).window_nll) as $w | length == ($w | length) and
		 ([range(length) as $i | ((.[$i].nll - $w[$i]) | fabs) < 1e-5] | all)'
	# shards add up to the whole
	for i in 0 1 2; do
		tfm-ppl -m "$MLM" -f "$TXT" -c 16 --shard $i/3 -F json > "$T/s$i.json"
	done
	run tfm-ppl --merge -F json "$T"/s*.json
	assert_success
	whole=$(tfm-ppl -m "$MLM" -f "$TXT" -c 16 -F json | jq .sums)
	[ "$(echo "$output" | jq .sums)" = "$whole" ]
}

@test "ppl: pseudo-perplexity refusals: options it has no meaning for, windows past the positions, no head" {
	MLM="$ROOT/tests/fixtures/encoders/bert-mlm"
	TXT="$ROOT/tests/data/pppl-text.txt"
	for o in "--mode strided" "--save-logits $T/x.bin" "-b 4"; do
		run tfm-ppl -m "$MLM" -f "$TXT" $o
		assert_failure 65
		assert_output --partial "pseudo-perplexity (a masked LM) does not support ${o%% *}"
	done
	[ ! -e "$T/x.bin" ]
	run tfm-ppl -m "$MLM" -f "$TXT" -c 41
	assert_failure 65
	assert_output --partial '-c 41: the model has 40 positions'
	run tfm-ppl -m "$ROOT/tests/fixtures/encoders/bert-cls3" -f "$TXT" -c 16
	assert_failure 65
	assert_output --partial 'no masked-LM head'
	run tfm-ppl -m "$MLM" -f "$TXT" -c 2
	assert_failure 64
}
