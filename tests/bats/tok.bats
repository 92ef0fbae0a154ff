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
	mkdir "$BATS_TEST_TMPDIR/m"
	cp "$ROOT/tests/fixtures/llama/config.json" "$ROOT/tests/fixtures/llama/model.safetensors" \
		"$BATS_TEST_TMPDIR/m/"
	run sh -c "echo hi | tfm-tok -m '$BATS_TEST_TMPDIR/m'"
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

# Every decoder fixture has a tokenizer trained with the tokenizers library
# (scripts/make-fixture-tokenizers) and tok-expected.json: the ids that
# transformers' AutoTokenizer gives for a few texts, with and without
# special tokens.  tfm-convert carries the tokenizer into the GGUF; tfm-tok
# must give the same ids (--bos where transformers adds BOS).
@test "fixtures: tfm-tok gives transformers' ids with each fixture's trained tokenizer" {
	T=$BATS_TEST_TMPDIR
	F=$ROOT/tests/fixtures
	# every fixture MANIFEST.json gives a tokenizer has its expected ids
	want=$(jq -r '.tokenizers.kinds | keys[]' "$F/MANIFEST.json")
	have=$(cd "$F" && ls -d */tok-expected.json | sed 's,/.*,,' | sort)
	[ "$(echo $want)" = "$(echo $have)" ] || fail "MANIFEST: $(echo $want) / dirs: $(echo $have)"
	bad= n=0
	for name in $have; do
		e=$F/$name/tok-expected.json
		tfm-convert -o "$T/$name.gguf" "$F/$name" || fail "$name: tfm-convert failed"
		bos=$(jq -r 'if .add_bos then "--bos" else "" end' "$e")
		k=0
		# text (base64: it has tabs and newlines) | ids | ids without special tokens
		while IFS='|' read -r b64 ids plain; do
			got=$(printf '%s' "$b64" | base64 -d | tfm-tok $bos -m "$T/$name.gguf") ||
				fail "$name text $k: tfm-tok failed"
			[ "$got" = "$ids" ] || bad="$bad$name text $k: got [$got], want [$ids]
"
			got=$(printf '%s' "$b64" | base64 -d | tfm-tok -m "$T/$name.gguf") ||
				fail "$name text $k: tfm-tok failed"
			[ "$got" = "$plain" ] || bad="$bad$name text $k, no special tokens: got [$got], want [$plain]
"
			k=$((k + 1)) n=$((n + 1))
		done < <(jq -r '.texts[] | [(.text | @base64), (.ids | join(" ")),
			(.ids_plain | join(" "))] | join("|")' "$e")
		[ "$k" -ge 6 ] || fail "$name: $k texts"
	done
	[ -z "$bad" ] || fail "ids differ from transformers':
$bad"
	[ "$n" -ge 300 ]
}

@test "a closed pipe ends quietly" {
	run sh -c "yes 'Once upon a time' | head -c 200000 | tfm-tok -l --vocab '$TOK512' | head -1"
	assert_success
	assert_output "403 407 261 378"
}

# A conversation of ../shared/chat-templates/expected/T.json as the request
# tfm-tok --template reads.
chat_request() {
	jq -c --arg c "$2" '. as $d | $d.conversations[$c] + {bos_token: $d.bos_token, eos_token: $d.eos_token}' \
		"$SHARED/chat-templates/expected/$1.json"
}

@test "--template: the rendering transformers gives, byte for byte" {
	CT=$SHARED/chat-templates
	for t in meta-llama-Llama-3.1-8B-Instruct Qwen-Qwen2.5-7B-Instruct ibm-granite-granite-4.0; do
		for c in user tools no-gen-prompt; do
			chat_request "$t" "$c" > "$BATS_TEST_TMPDIR/req.json"
			run sh -c "TFM_JINJA_NOW='2024-07-26 12:00:00' tfm-tok --template '$CT/templates/$t.jinja' \
				< '$BATS_TEST_TMPDIR/req.json' | od -c"
			assert_success
			assert_output "$(jq -j --arg c "$c" '.renderings[$c].text' "$CT/expected/$t.json" | od -c)"
		done
	done
}

@test "--template: raise_exception exits 65 with the template's message" {
	chat_request google-gemma-2-2b-it system-user > "$BATS_TEST_TMPDIR/req.json"
	run sh -c "tfm-tok --template '$SHARED/chat-templates/templates/google-gemma-2-2b-it.jinja' \
		< '$BATS_TEST_TMPDIR/req.json'"
	assert_failure 65
	assert_output "tfm-tok: raise_exception: System role not supported"
}

@test "--template with a tokenizer: the rendering's tokens" {
	printf '{%% for m in messages %%}{{ m.content }}<|endoftext|>{%% endfor %%}' > "$BATS_TEST_TMPDIR/t.jinja"
	req='{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}'
	run sh -c "printf '%s' '$req' | tfm-tok --template '$BATS_TEST_TMPDIR/t.jinja' -m '$VOCAB/ggml-vocab-gpt-2.gguf' --special"
	assert_success
	assert_output "64 50256 65 50256"
	run sh -c "printf '%s' '$req' | tfm-tok --template '$BATS_TEST_TMPDIR/t.jinja'"
	assert_output "a<|endoftext|>b<|endoftext|>"
}

@test "--template: bad input, bad templates, bad options" {
	T=$SHARED/chat-templates/templates/Qwen-Qwen3-0.6B.jinja
	run sh -c "echo '{\"messages\": [' | tfm-tok --template '$T'"
	assert_failure 65
	assert_output --partial "tfm-tok: <stdin>: line"
	run sh -c "echo '{}' | tfm-tok --template '$T'"
	assert_failure 65
	assert_output --partial "no \"messages\""
	printf 'ok\n{%% for m in messages %%}\n{{ m.role }' > "$BATS_TEST_TMPDIR/bad.jinja"
	run sh -c "echo '{\"messages\": []}' | tfm-tok --template '$BATS_TEST_TMPDIR/bad.jinja'"
	assert_failure 65
	assert_output --partial "template line 3"
	printf '{%% macro f() %%}{{ f() }}{%% endmacro %%}{{ f() }}' > "$BATS_TEST_TMPDIR/deep.jinja"
	run sh -c "echo '{\"messages\": []}' | tfm-tok --template '$BATS_TEST_TMPDIR/deep.jinja'"
	assert_failure 65
	assert_output --partial "nested too deeply"
	run sh -c "echo '{\"messages\": []}' | tfm-tok --template '$BATS_TEST_TMPDIR/missing.jinja'"
	assert_failure 66
	run sh -c "echo '{\"messages\": []}' | TFM_JINJA_NOW=yesterday tfm-tok --template '$T'"
	assert_failure 64
	assert_output --partial "TFM_JINJA_NOW"
	run tfm-tok --template "$T" --decode
	assert_failure 64
	run tfm-tok --template "$T" -l
	assert_failure 64
	run tfm-tok --template "$T" --pieces
	assert_failure 64
}

# SentencePiece unigram models (scripts/make-unigram-fixtures): XLM-R's
# nmt_nfkc charsmap, a T5-like pipeline (WhitespaceSplit), byte fallback,
# ALBERT's, and DeBERTa-v3's spm.model without a tokenizer.json (converted
# as transformers' DebertaV2Converter does).
# expected.json: the ids of transformers' fast tokenizer with and without
# special tokens (tokenizers always reads special tokens in the text, so
# --special), and its decoded text.
@test "unigram: tfm-tok gives the fast tokenizer's ids and decodes as it does" {
	T=$BATS_TEST_TMPDIR
	bad= n=0 nd=0
	for name in xlmr t5 bf albert deberta; do
		d=$ROOT/tests/data/tok-unigram-$name
		tfm-convert -o "$T/$name.gguf" "$d" || fail "$name: tfm-convert failed"
		while IFS='|' read -r b64 ids plain dec; do
			got=$(printf '%s' "$b64" | base64 -d | tfm-tok --special --bos -m "$T/$name.gguf") ||
				fail "$name text $n: tfm-tok failed"
			[ "$got" = "$ids" ] || bad="$bad$name text $n: got [$got], want [$ids]
"
			got=$(printf '%s' "$b64" | base64 -d | tfm-tok --special -m "$T/$name.gguf")
			[ "$got" = "$plain" ] || bad="$bad$name text $n, plain: got [$got], want [$plain]
"
			# tfm drops control tokens when decoding, transformers writes them
			if ! printf '%s' "$b64" | base64 -d | grep -q '</s>'; then
				got=$(echo "$plain" | tfm-tok --decode -m "$T/$name.gguf" | base64 -w0)
				[ "$got" = "$dec" ] || bad="$bad$name text $n: decoded [$(echo "$got" |
					base64 -d)], want [$(echo "$dec" | base64 -d)]
"
				nd=$((nd + 1))
			fi
			n=$((n + 1))
		done < <(jq -r '.texts[] | [(.text | @base64), (.ids | join(" ")),
			(.ids_plain | join(" ")), (.decoded | @base64)] | join("|")' "$d/expected.json")
	done
	[ -z "$bad" ] || fail "differ from transformers':
$bad"
	[ "$n" -ge 100 ] && [ "$nd" -ge 100 ]
	# DeBERTa-v3's layout (spm.model, a two-key tokenizer_config.json, no
	# tokenizer.json): the [MASK] DebertaV2Tokenizer adds past the pieces
	d=$ROOT/tests/data/tok-unigram-deberta
	[ ! -e "$d/tokenizer.json" ]
	got=$(jq -j .mask.text "$d/expected.json" | tfm-tok --special --bos -m "$T/deberta.gguf")
	[ "$got" = "$(jq -r '.mask.ids | join(" ")' "$d/expected.json")" ]
	# a slow tokenizer tfm has no conversion for is refused by name
	mkdir "$T/slow"
	cp "$d/spm.model" "$d/config.json" "$d/model.safetensors" "$T/slow/"
	echo '{"tokenizer_class": "CamembertTokenizer"}' > "$T/slow/tokenizer_config.json"
	run tfm-convert -o "$T/slow.gguf" "$T/slow"
	assert_failure 65
	assert_output --partial "CamembertTokenizer"
	[ ! -e "$T/slow.gguf" ]
}

# mBART's tokenizers (scripts/make-unigram-fixtures): cc25's frame
# A </s> ro_RO and mBART-50's de_DE A </s> from tokenizer.json's
# TemplateProcessing; targets framed with tokenizer_config.json's tgt_lang
# (transformers' text_target), sources with another language as
# MBartTokenizerFast's src_lang gives them.
@test "mBART: sources, targets and other languages framed as transformers frames them" {
	T=$BATS_TEST_TMPDIR
	bad= n=0
	for name in mbart mbart50; do
		d=$ROOT/tests/data/tok-unigram-$name
		tfm-convert -q -o "$T/$name.gguf" "$d" || fail "$name: tfm-convert failed"
		while IFS='|' read -r b64 ids tgt en; do
			x=$(printf '%s' "$b64" | base64 -d)
			for w in "--bos --special:$ids" "--target:$tgt" \
				 "--bos --special --source-lang en_XX:$en"; do
				got=$(printf '%s' "$x" | tfm-tok ${w%%:*} -m "$T/$name.gguf") ||
					fail "$name text $n (${w%%:*}): tfm-tok failed"
				[ "$got" = "${w#*:}" ] || bad="$bad$name text $n (${w%%:*}): got [$got], want [${w#*:}]
"
			done
			n=$((n + 1))
		done < <(jq -r '.texts[] | [(.text | @base64), (.ids | join(" ")),
			(.target_ids | join(" ")), (.source_ids_en | join(" "))] | join("|")' "$d/expected.json")
	done
	[ -z "$bad" ] || fail "differ from transformers':
$bad"
	[ "$n" -ge 80 ]
	# a code that is no control token, or no code in the frame: refused
	run sh -c "echo hi | tfm-tok --bos --source-lang hi -m '$T/mbart.gguf'"
	assert_failure 65
	assert_output --partial "not one of the tokenizer's special tokens"
	tfm-convert -q -o "$T/x.gguf" "$ROOT/tests/data/tok-unigram-xlmr"
	run sh -c "echo hi | tfm-tok --bos --source-lang en_XX -m '$T/x.gguf'"
	assert_failure 65
	assert_output --partial "frames no language code"
}

@test "unigram: normalizers tfm does not run and corrupt charsmaps exit 65" {
	T=$BATS_TEST_TMPDIR
	cp -r "$ROOT/tests/data/tok-unigram-xlmr" "$T/m"
	j=$T/m/tokenizer.json
	cp "$j" "$T/orig.json"
	jq '.normalizer.normalizers += [{"type": "Nmt"}]' "$T/orig.json" > "$j"
	run sh -c "echo hi | tfm-tok -m '$T/m'"
	assert_failure 65
	assert_output --partial '"Nmt"'
	# a trie of 4000 bytes in a blob of 12
	jq '.normalizer.normalizers[0].precompiled_charsmap = "oA8AAAAAAAAAAAAA"' "$T/orig.json" > "$j"
	run sh -c "echo hi | tfm-tok -m '$T/m'"
	assert_failure 65
	assert_output --partial "precompiled_charsmap"
	jq '.pre_tokenizer = {"type": "Whitespace"}' "$T/orig.json" > "$j"
	run sh -c "echo hi | tfm-tok -m '$T/m'"
	assert_failure 65
	assert_output --partial "Whitespace"
	jq '.decoder = {"type": "WordPiece", "prefix": "##"}' "$T/orig.json" > "$j"
	run sh -c "echo hi | tfm-tok -m '$T/m'"
	assert_failure 65
	assert_output --partial "decoder not supported"
}

@test "RWKV world vocabulary: ids of BlinkDL's tokenizer and llama.cpp, decoded back" {
	W=$BATS_TEST_DIRNAME/../data/rwkv-world
	# strings.out lines 10 and 25: 'Hello world', the Chinese sentence
	run sh -c "printf 'Hello world' | tfm-tok --vocab '$W/rwkv_vocab_v20230424.txt'"
	assert_success
	assert_output "$(sed -n 10p "$W/strings.out")"
	run sh -c "printf '中文测试：你好，世界！' | tfm-tok --vocab '$W/rwkv_vocab_v20230424.txt'"
	assert_output "$(sed -n 25p "$W/strings.out")"
	run sh -c "printf 'a\377b\n\n' | tfm-tok --vocab '$W/rwkv_vocab_v20230424.txt' | tfm-tok --vocab '$W/rwkv_vocab_v20230424.txt' --decode | od -An -c"
	assert_success
	assert_output "$(printf 'a\377b\n\n' | od -An -c)"
	# small.gguf: a GGUF as llama.cpp's converter writes it (a 267-token
	# vocabulary), small.out: llama.cpp's ids with it
	run sh -c "printf 'Hello world' | tfm-tok -m '$W/small.gguf'"
	assert_success
	assert_output "$(sed -n 10p "$W/small.out")"
	run sh -c "printf '中文测试：你好，世界！' | tfm-tok -m '$W/small.gguf' | tfm-tok -m '$W/small.gguf' --decode"
	assert_output '中文测试：你好，世界！'
}

@test "RWKV world vocabulary: a bad line and a model too small for it exit 65" {
	printf "1 'a' 1\n2 'bc' 3\n" > "$BATS_TEST_TMPDIR/v.txt"
	run sh -c "echo a | tfm-tok --vocab '$BATS_TEST_TMPDIR/v.txt'"
	assert_failure 65
	assert_output --partial "line 2: the string has 2 bytes, the line says 3"
	# rwkv.cpp's tiny model has 256 rows, the world vocabulary 65530 tokens
	run sh -c "echo a | tfm-tok -m '$SHARED/models/rwkv-tiny/tiny-rwkv-7v0-834K-FP32.bin' --vocab '$BATS_TEST_DIRNAME/../data/rwkv-world/rwkv_vocab_v20230424.txt'"
	assert_failure 65
	assert_output --partial "past the model's vocabulary of 256"
}
