#!/usr/bin/env bats
# tfm-run: greedy text against llama2.c's output, streaming to a closed pipe,
# jsonl records, seeds, threads, exit codes.
load helpers

setup() {
	need_shared
	T=$BATS_TEST_TMPDIR
	GOLD=$SHARED/models/stories260K/greedy-once-upon-a-time.txt
}

@test "run: --help prints the usage on stdout, exit 0" {
	run tfm-run --help
	assert_success
	assert_line --index 0 --regexp '^usage: tfm-run -m MODEL '
}

@test "run: --version" {
	run tfm-run --version
	assert_success
	assert_output --regexp '^tfm-run \(tfm\) [0-9]'
}

@test "run: bad option is a usage error (64)" {
	run tfm-run --no-such-option
	assert_failure 64
	run tfm-run -m "$STORIES" --temp -1
	assert_failure 64
	run tfm-run -p hi
	assert_failure 64
}

@test "run: missing model is 66" {
	run tfm-run -m "$T/no-such-model.gguf" -p hi
	assert_failure 66
}

# The golden file is llama2.c's run.c output for
#   run stories260K.bin -z tok512.bin -t 0 -n 256 -i "Once upon a time"
# llama.cpp (build d32676d77) agrees: on its own conversion
#   llama-convert-llama2c-to-ggml --copy-vocab-from-model tok512.bin \
#       --llama2c-model stories260K.bin --llama2c-output-model stories260K.gguf
#   llama-completion -m stories260K.gguf -c 512 -p "Once upon a time" -n 252 \
#       --temp 0 -t 2 -no-cnv --no-display-prompt
# prints the same text after the prompt (5 tokens with BOS, 252 generated),
# with one extra newline at the end.
# llama2.c's -n 256 counts positions (BOS and the 4 prompt tokens included):
# 252 new tokens, tfm-run's (and llama.cpp's) -n 252.
@test "run: greedy stories260K (llama2.c checkpoint) equals llama2.c byte for byte" {
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 252 -p "Once upon a time" \
		> "$T/out.txt" 2> "$T/err.txt"
	cmp "$T/out.txt" "$GOLD"
	[ ! -s "$T/err.txt" ]
}

@test "run: greedy stories260K from the GGUF tfm-convert writes equals llama2.c" {
	tfm-convert --vocab "$TOK512" -o "$T/s.gguf" "$STORIES"
	tfm-run -m "$T/s.gguf" --temp 0 -n 252 -p "Once upon a time" > "$T/out.txt"
	cmp "$T/out.txt" "$GOLD"
}

@test "run: greedy is the same with 1 and 2 threads" {
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 200 -t 1 -p "The cat" > "$T/t1.txt"
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 200 -t 2 -p "The cat" > "$T/t2.txt"
	cmp "$T/t1.txt" "$T/t2.txt"
	[ -s "$T/t1.txt" ]
}

@test "run: a reader that goes away ends it quietly, exit 0" {
	set -o pipefail
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 256 -p "Once upon a time" \
		2> "$T/err.txt" | head -c 50 > "$T/out.txt"
	[ ! -s "$T/err.txt" ]
	[ "$(wc -c < "$T/out.txt")" -eq 50 ]
	head -c 50 "$GOLD" | cmp - "$T/out.txt"
}

@test "run: -F jsonl writes one valid JSON object per generated token" {
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 40 -F jsonl --logprobs 3 \
		-p "Once upon a time" > "$T/out.jsonl"
	n=$(wc -l < "$T/out.jsonl")
	[ "$n" -gt 0 ]
	while IFS= read -r line; do
		printf '%s\n' "$line" | jq -e 'has("id") and has("text") and (.logprob <= 0)
			and (.top | length == 3) and (.top[0].logprob >= .top[1].logprob)
			and (.top[0].id == .id)' > /dev/null
	done < "$T/out.jsonl"
	# The texts joined are the greedy continuation of the text output.
	jq -j .text "$T/out.jsonl" > "$T/joined.txt"
	printf '\n' >> "$T/joined.txt"
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 40 -p "Once upon a time" > "$T/text.txt"
	[ "Once upon a time$(cat "$T/joined.txt")" = "$(cat "$T/text.txt")" ]
}

@test "run: the same seed gives the same text, another seed another" {
	opts=(-m "$STORIES" --vocab "$TOK512" --temp 1 --top-k 0 --top-p 1 --min-p 0 -n 120 -p "Once")
	tfm-run "${opts[@]}" --seed 42 > "$T/a.txt"
	tfm-run "${opts[@]}" --seed 42 > "$T/b.txt"
	tfm-run "${opts[@]}" --seed 43 > "$T/c.txt"
	cmp "$T/a.txt" "$T/b.txt"
	! cmp -s "$T/a.txt" "$T/c.txt"
}

@test "run: each line of stdin is a prompt with a fresh context" {
	printf 'Once upon a time\nThe dog\n' |
		tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 > "$T/both.txt"
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time" > "$T/1.txt"
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "The dog" > "$T/2.txt"
	cat "$T/1.txt" "$T/2.txt" | cmp - "$T/both.txt"
}

@test "run: -n is the number of new tokens, as llama.cpp's, whatever the prompt's length" {
	g() { tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n "$1" -F jsonl -p "$2" | wc -l; }
	[ "$(g 10 "Once upon a time")" -eq 10 ]
	[ "$(g 10 "")" -eq 10 ]
	[ "$(g 0 "Once upon a time")" -eq 0 ]
	# a long prompt (120 tokens) still generates -n tokens
	long=$(head -c 400 "$GOLD" | tr '\n' ' ')
	[ "$(g 7 "$long")" -eq 7 ]
	# and the text is the prompt and the new tokens
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 0 -p "Once upon a time" > "$T/o.txt"
	[ "$(cat "$T/o.txt")" = "Once upon a time" ]
}

@test "run: --no-display-prompt prints the new text only" {
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 30 -p "Once upon a time" > "$T/a.txt"
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 30 -p "Once upon a time" \
		--no-display-prompt > "$T/b.txt"
	[ "Once upon a time$(cat "$T/b.txt")" = "$(cat "$T/a.txt")" ]
}

@test "run: --stop ends the generation before the stop string (text) or at its token (jsonl)" {
	full=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time")
	# the greedy text names Lily; the output ends just before her
	[[ "$full" == *"named Lily."* ]]
	out=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time" --stop Lily)
	[ "$out" = "${full%%Lily*}" ]
	# the earliest of several stop strings; one that spans tokens ("ily. S")
	out=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time" \
		--stop "zzz" --stop "ily. S" --stop "named")
	[ "$out" = "${full%%named*}" ]
	out=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time" --stop "ily. S")
	[ "$out" = "${full%%ily. S*}" ]
	# a stop string that never comes: the whole text
	out=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time" --stop "@@")
	[ "$out" = "$full" ]
	# jsonl: the token completing the stop string is the last record
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 60 -p "Once upon a time" -F jsonl \
		--stop Lily > "$T/s.jsonl"
	[ "$(jq -r .text "$T/s.jsonl" | tail -1)" = " Lily" ]
	run tfm-run -m "$STORIES" --vocab "$TOK512" -p x --stop ""
	assert_failure 64
}

@test "run: --ignore-eos generates past the end-of-sequence token" {
	# stories260K never ends a greedy story with EOS, so its GGUF's
	# tokenizer.ggml.eos_token_id (u32 after the key and its type) is made
	# 432 (","), the first token of the greedy continuation.
	tfm-convert --vocab "$TOK512" -o "$T/s.gguf" "$STORIES"
	off=$(grep -obUa 'tokenizer.ggml.eos_token_id' "$T/s.gguf" | head -1 | cut -d: -f1)
	printf '\260\001\000\000' | dd of="$T/s.gguf" bs=1 seek=$((off + 27 + 4)) conv=notrunc status=none
	n=$(tfm-run -m "$T/s.gguf" --temp 0 -n 50 -F jsonl -p "Once upon a time" | wc -l)
	[ "$n" -eq 0 ]
	n=$(tfm-run -m "$T/s.gguf" --temp 0 -n 50 -F jsonl --ignore-eos -p "Once upon a time" | wc -l)
	[ "$n" -eq 50 ]
}

@test "run: generation past the context is an error (65)" {
	run tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -c 16 -n 100 -p "Once upon a time"
	assert_failure 65
	assert_output --partial 'context'
	# A prompt longer than the context: 65, and nothing on stdout.
	tfm-run -m "$STORIES" --vocab "$TOK512" -c 3 -p "Once upon a time" > "$T/o.txt" 2> /dev/null || rc=$?
	[ "$rc" -eq 65 ]
	[ ! -s "$T/o.txt" ]
}

@test "run: with a sliding window on every layer, generation runs past the context" {
	# Window 8: a context of 16 is a ring; the text is the one a context
	# large enough for all of it gives.
	w=(-m "$STORIES" --vocab "$TOK512" --temp 0 -n 100 --set attn.window=8 -p "Once upon a time")
	tfm-run "${w[@]}" -c 16 > "$T/ring.txt"
	tfm-run "${w[@]}" -c 512 > "$T/flat.txt"
	cmp "$T/ring.txt" "$T/flat.txt"
	[ "$(wc -c < "$T/ring.txt")" -gt 100 ]
}

@test "run: -k/--kv-type K[,V]: f16 and bf16 caches run, block types need 32-wide heads (65), other types are usage errors" {
	run tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 40 -k f16 -p "Once upon a time"
	assert_success
	assert_output --regexp '^Once upon a time'
	run tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 40 -k f16,bf16 -p "Once upon a time"
	assert_success
	for kv in q8_0 q4_0 f16,q5_1 q4_1,f32; do
		run tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 40 --kv-type $kv -p "Once upon a time"
		assert_failure 65
		assert_output --partial 'not whole blocks'
	done
	for kv in q4_K q6_K f16,q2_K nonsense f16,f16,f16; do
		run tfm-run -m "$STORIES" --vocab "$TOK512" -k $kv -p x
		assert_failure 64
	done
}

@test "run: a full disk (ENOSPC on stdout) is one message and exit 74" {
	[ -w /dev/full ] || skip "no /dev/full"
	run sh -c "echo 'Once upon a time' | tfm-run -m '$STORIES' --vocab '$TOK512' --temp 0 -n 64 > /dev/full"
	assert_failure 74
	[ "$(printf '%s\n' "$output" | grep -c .)" -eq 1 ] || fail "messages: $output"
	assert_output --partial 'No space left on device'
}

@test "run: a context that cannot fit in memory is refused before allocating (70), with both numbers" {
	run tfm-run -m "$STORIES" --vocab "$TOK512" -c 300000000 -p Once -n 4
	assert_failure 70
	assert_output --regexp 'a context of 300000000 tokens .* needs [0-9.]+ GiB, more than the available memory of'
	run tfm-run -m "$STORIES" --vocab "$TOK512" --mem-limit 1M -c 100000 -p Once -n 4
	assert_failure 70
	assert_output --partial 'more than the --mem-limit of 1.0 MiB'
	TFM_MEM_LIMIT=1M run tfm-run -m "$STORIES" --vocab "$TOK512" -c 100000 -p Once -n 4
	assert_failure 70
	run tfm-run -m "$STORIES" --vocab "$TOK512" --mem-limit none -c 1000 -p Once -n 4
	assert_success
	run tfm-run -m "$STORIES" --vocab "$TOK512" --mem-limit -5 -p Once
	assert_failure 64
}

@test "run: --special reads control tokens written in the prompt as those tokens" {
	# tok512's EOS is the piece "\n</s>\n" (llama2.c); as plain text it is
	# echoed, as the control token it is not, and the continuation differs.
	p=$'Once upon a time.\n</s>\nThe'
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 8 -p "$p" > "$T/plain.txt"
	tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 8 -p "$p" --special > "$T/special.txt"
	grep -q '</s>' "$T/plain.txt"
	! grep -q '</s>' "$T/special.txt"
	! cmp -s "$T/plain.txt" "$T/special.txt"
}

# A chat template that makes stories260K's "conversation" a story: the
# turns one after another.  The chat's answer is then tfm-run's greedy text.
story_template() {
	printf '{{ bos_token }}{%% for m in messages %%}{{ m.content }}{%% endfor %%}' > "$T/story.jinja"
}

@test "run: --chat -F jsonl: one request per line in, the assistant message per line out" {
	story_template
	echo '{"messages":[{"role":"user","content":"Once upon a time"}]}' |
		tfm-run -m "$STORIES" --vocab "$TOK512" --chat --chat-template "$T/story.jinja" \
		--temp 0 -n 30 -F jsonl > "$T/a.jsonl"
	jq -e '.role == "assistant"' "$T/a.jsonl"
	want=$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 30 -p "Once upon a time" --no-display-prompt)
	[ "$(jq -r .content "$T/a.jsonl")" = "$want" ]
}

@test "run: --chat reuses the KV cache across turns, with the answers of a fresh context" {
	story_template
	printf 'Once upon a time\n there was a dog\n' |
		tfm-run -m "$STORIES" --vocab "$TOK512" --chat --chat-template "$T/story.jinja" \
		--temp 0 -n 20 -v > "$T/two.txt" 2> "$T/err.txt"
	[ "$(wc -l < "$T/two.txt")" -eq 2 ]
	# the second turn feeds only what the cache lacks
	sed -n 2p "$T/err.txt" | grep -Eq 'prompt: [0-9]+ tokens fed, [1-9][0-9]* reused'
	# and answers as the whole conversation given at once to a fresh context
	a1=$(sed -n 1p "$T/two.txt")
	jq -nc --arg a "$a1" '{messages: [{role: "user", content: "Once upon a time"},
		{role: "assistant", content: $a}, {role: "user", content: " there was a dog"}]}' |
		tfm-run -m "$STORIES" --vocab "$TOK512" --chat --chat-template "$T/story.jinja" \
		--temp 0 -n 20 -F jsonl > "$T/fresh.jsonl"
	[ "$(jq -r .content "$T/fresh.jsonl")" = "$(sed -n 2p "$T/two.txt")" ]
}

# wait_for FILE PATTERN [N]: wait (at most 60 s) until FILE holds PATTERN
# N times; the terminal test types only once the program is ready for it.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(grep -c -- "$2" "$1" 2> /dev/null)" -ge "${3:-1}" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for '$2' in $1" >&2
	return 1
}

@test "run: --chat on a terminal: a conversation, Ctrl-C stops an answer, /exit ends it" {
	story_template
	: > "$T/tty.txt"
	# each keystroke waits for what it answers: the banner, the story, the next prompt
	(wait_for "$T/tty.txt" 'Ctrl-C stops an answer' && sleep 0.5 && printf 'Once upon a time\n' &&
		wait_for "$T/tty.txt" 'there was a little girl named Lily' && printf '\003' &&
		wait_for "$T/tty.txt" '^> ' 2 && printf '/exit\n') |
		timeout 60 script -qfec "exec tfm-run -m '$STORIES' --vocab '$TOK512' --chat \
		--chat-template '$T/story.jinja' --temp 0 -n 40000 -c 41000 --ignore-eos" /dev/null \
		>> "$T/tty.txt" ||
		{ echo "exit $?; the terminal's end:" >&2; tail -c 1500 "$T/tty.txt" | cat -v >&2; false; }
	grep -q 'Ctrl-C stops an answer' "$T/tty.txt"
	grep -q '^> Once upon a time' "$T/tty.txt"
	grep -q 'there was a little girl named Lily' "$T/tty.txt"
	# the program lived on after Ctrl-C: the next prompt took /exit
	grep -q '> /exit' "$T/tty.txt"
}

@test "run: --chat with the model's own template (carried by tfm-convert); none is 65" {
	cp -r "$ROOT/tests/data/tok-llama3" "$T/m"
	cp "$SHARED/chat-templates/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$T/m/chat_template.jinja"
	tfm-convert -o "$T/q.gguf" "$T/m"
	run tfm-run -m "$T/q.gguf" --chat -c 1024 --temp 0 -n 8 -F jsonl --system "Be terse." \
		<<< '{"messages":[{"role":"user","content":"Hello"}]}'
	assert_success
	jq -e '.role == "assistant" and (.content | type == "string")' <<< "$output"
	run tfm-run -m "$STORIES" --vocab "$TOK512" --chat -p hi
	assert_failure 65
	assert_output --partial 'no chat template'
	run tfm-run -m "$STORIES" --vocab "$TOK512" --system hi -p hi
	assert_failure 64
}

@test "run: sampling defaults come from generation_config.json (via general.sampling.*); options win" {
	cp -r "$ROOT/tests/data/tok-llama3" "$T/m"
	# do_sample false: transformers decodes greedily, and so does tfm-run
	jq '. + {do_sample: false, temperature: 0.7, top_k: 20}' \
		"$ROOT/tests/data/tok-llama3/generation_config.json" > "$T/m/generation_config.json"
	tfm-convert -o "$T/g.gguf" "$T/m"
	grep -qa 'general.sampling.temp' "$T/g.gguf"
	a=$(tfm-run -m "$T/g.gguf" -n 12 --seed 1 -p "the" -F jsonl | jq -c .id)
	b=$(tfm-run -m "$T/g.gguf" -n 12 --seed 2 -p "the" -F jsonl | jq -c .id)
	g=$(tfm-run -m "$T/g.gguf" -n 12 --temp 0 -p "the" -F jsonl | jq -c .id)
	[ "$a" = "$g" ] && [ "$b" = "$g" ]
	# --temp on the command line wins over the file
	c=$(tfm-run -m "$T/g.gguf" -n 12 --seed 1 --temp 5 --top-k 0 --top-p 1 --min-p 0 -p "the" -F jsonl | jq -c .id)
	d=$(tfm-run -m "$T/g.gguf" -n 12 --seed 2 --temp 5 --top-k 0 --top-p 1 --min-p 0 -p "the" -F jsonl | jq -c .id)
	[ "$c" != "$d" ]
}
