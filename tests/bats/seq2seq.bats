#!/usr/bin/env bats
# Encoder-decoder models end to end: tfm-run translating lines and tfm-ppl
# scoring source<TAB>target pairs with a Marian model and its trained
# tokenizer (tests/fixtures/seq2seq/marian-tok, scripts/make-fixture-marian:
# transformers 4.57.1's generate and loss; marian-sep-tok with separate
# vocabularies), GGUF round trips of T5 and
# BART-family files, tfm-inspect's cross-attention bytes, tfm-bench's
# encoder and decoder tests, and the refusals.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	MT=$ROOT/tests/fixtures/seq2seq/marian-tok
	S2S=$ROOT/tests/fixtures/seq2seq
}

@test "seq2seq: tfm-run translates each line as transformers' generate (greedy and beam search, Marian)" {
	jq -r '.[].text' "$MT/cli.json" > "$T/en.txt"
	# the model's own defaults are greedy; no_repeat_ngram_size 2 and 12 new tokens
	tfm-run -m "$MT" -n 12 --no-repeat-ngram 2 < "$T/en.txt" > "$T/greedy.txt"
	jq -r '.[].greedy.out' "$MT/cli.json" > "$T/want-greedy.txt"
	diff "$T/want-greedy.txt" "$T/greedy.txt"
	tfm-run -m "$MT" -n 12 --beams 3 --length-penalty 0.8 --no-repeat-ngram 2 \
		< "$T/en.txt" > "$T/beam.txt"
	jq -r '.[].beam.out' "$MT/cli.json" > "$T/want-beam.txt"
	diff "$T/want-beam.txt" "$T/beam.txt"
	# -F jsonl with beams: the ids generate returned (after the start token,
	# without the end-of-sequence token)
	tfm-run -m "$MT" -n 12 --beams 3 --length-penalty 0.8 --no-repeat-ngram 2 -F jsonl \
		< "$T/en.txt" | jq -c .ids > "$T/beam-ids"
	jq -c '.[].beam.ids | .[1:] | if .[-1] == 0 then .[:-1] else . end' "$MT/cli.json" \
		> "$T/want-ids"
	diff "$T/want-ids" "$T/beam-ids"
}

@test "seq2seq: T5 with its SentencePiece tokenizer: tfm-run's lines and tfm-tok's ids are transformers'" {
	T5T=$S2S/t5-s2s-tok
	jq -r '.[].text' "$T5T/cli.json" > "$T/in.txt"
	# transformers' default max_length 20: 19 new tokens; the fixture asked for 12
	tfm-run -m "$T5T" -n 12 < "$T/in.txt" > "$T/out.txt"
	jq -r '.[].out' "$T5T/cli.json" | diff - "$T/out.txt"
	# -F jsonl: a record per generated token, the lines back to back (no eos)
	jq -c '[.[].ids[1:][] | select(. != 1)]' "$T5T/cli.json" > "$T/w"
	tfm-run -m "$T5T" -n 12 -F jsonl < "$T/in.txt" | jq -s -c 'map(.id)' > "$T/g"
	diff "$T/w" "$T/g"
	# the source ids: tfm-tok gives the text's, transformers' add </s>
	head -1 "$T/in.txt" | tfm-tok -m "$T5T" | tr ' ' '\n' | jq -s -c . > "$T/tok"
	jq -c '.[0].src_ids[:-1]' "$T5T/cli.json" | diff - "$T/tok"
}

# Tiny mBART models beside their tokenizers (scripts/make-unigram-fixtures):
# cc25's frame A </s> ro_RO and mBART-50's de_DE A </s>; --target-lang as
# their model cards use generate (cc25: the code starts the decoder;
# mBART-50: the code forced first).
@test "mBART: sources framed with their language, --target-lang as transformers' generate" {
	for name in mbart mbart50; do
		d=$ROOT/tests/data/tok-unigram-$name
		tfm-convert -q -o "$T/$name.gguf" "$d"
		n=$(jq '.generate | length' "$d/expected.json")
		for ((i = 0; i < n; i++)); do
			jq -r ".generate[$i].text" "$d/expected.json" | tr '\n' ' ' | sed 's/ $//' > "$T/in"
			lang=$(jq -r ".generate[$i].target_lang // empty" "$d/expected.json")
			# generate's ids after the start token, its eos (forced at the last step) left out
			jq -c ".generate[$i].ids[1:] | map(select(. != 2))" "$d/expected.json" > "$T/want"
			tfm-run -m "$T/$name.gguf" -n 8 -F jsonl ${lang:+--target-lang $lang} \
				-p "$(cat "$T/in")" | jq -s -c 'map(.id)' > "$T/got"
			diff "$T/want" "$T/got" || fail "$name text $i ${lang:-without a target language}"
		done
		# tfm-ppl: transformers' loss with labels framed in the target
		# language and the decoder started by MBart's shift_tokens_right
		jq -r '.ppl.pairs[] | "\(.[0])\t\(.[1])"' "$d/expected.json" > "$T/pairs.tsv"
		for k in "" _en_de; do
			tfm-ppl -m "$T/$name.gguf" -f "$T/pairs.tsv" -F json \
				${k:+--source-lang en_XX --target-lang de_DE} > "$T/r.json"
			jq -n -e --slurpfile r "$T/r.json" --slurpfile w "$d/expected.json" \
				"(\$r[0].nll - \$w[0].ppl.nll$k | fabs < 1e-5) and
				 \$r[0].tokens == \$w[0].ppl.tokens$k" || fail "$name: tfm-ppl ${k:-as saved}"
		done
	done
	# a model whose tokenizer frames no language refuses the options
	run tfm-run -m "$MT" -p hi --target-lang de_DE
	assert_failure 65
	assert_output --partial "frames no language code"
}

@test "seq2seq: the same through a GGUF, quantized, and with head closing the pipe" {
	tfm-convert -o "$T/m.gguf" "$MT"
	jq -r '.[].text' "$MT/cli.json" > "$T/en.txt"
	tfm-run -m "$T/m.gguf" -n 12 --no-repeat-ngram 2 < "$T/en.txt" > "$T/greedy.txt"
	jq -r '.[].greedy.out' "$MT/cli.json" | diff - "$T/greedy.txt"
	# generation_config.json's keys travel as tfm.gen.* (forced_eos 0)
	tfm-inspect -F json "$T/m.gguf" > /dev/null
	tfm-quant -q -o "$T/q.gguf" q8_0 "$T/m.gguf"
	run tfm-run -m "$T/q.gguf" -n 12 -f "$T/en.txt"
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	run sh -c "tfm-run -m '$T/m.gguf' -n 12 < '$T/en.txt' | head -c 3"
	assert_success
	[ "${#output}" -eq 3 ]
}

@test "seq2seq: tfm-ppl scores source<TAB>target pairs as transformers' loss (Marian)" {
	jq -r '.pairs[] | "\(.[0])\t\(.[1])"' "$MT/ppl.json" > "$T/pairs.tsv"
	run tfm-ppl -m "$MT" -f "$T/pairs.tsv" -F json
	assert_success
	echo "$output" > "$T/r.json"
	jq -e '.mode == "seq2seq" and .windows == 3' "$T/r.json"
	[ "$(jq .tokens "$T/r.json")" -eq "$(jq .tokens "$MT/ppl.json")" ]
	jq -n -e --slurpfile r "$T/r.json" --slurpfile w "$MT/ppl.json" \
		'($r[0].nll - $w[0].nll) | fabs < 1e-4'
	# shards merge exactly; a gate on the result
	for i in 0 1 2; do
		tfm-ppl -m "$MT" -f "$T/pairs.tsv" -F json --shard $i/3 > "$T/s$i.json"
	done
	tfm-ppl --merge -F json "$T/s0.json" "$T/s1.json" "$T/s2.json" > "$T/m.json"
	[ "$(jq .nll "$T/m.json")" = "$(jq .nll "$T/r.json")" ]
	run tfm-ppl -m "$MT" -f "$T/pairs.tsv" --baseline "$T/r.json"
	assert_success
	# a line without a TAB, --mode strided
	printf 'no tab here\n' > "$T/bad.tsv"
	run tfm-ppl -m "$MT" -f "$T/bad.tsv"
	assert_failure 65
	assert_output --partial 'no TAB'
	run tfm-ppl -m "$MT" -f "$T/pairs.tsv" --mode strided
	assert_failure 65
}

@test "seq2seq: tfm-ppl --save-logits and --kl-base over target tokens (Marian, f32 against q8_0)" {
	jq -r '.pairs[] | "\(.[0])\t\(.[1])"' "$MT/ppl.json" > "$T/pairs.tsv"
	tfm-convert -q -o "$T/m.gguf" "$MT"
	tfm-quant -q -o "$T/q.gguf" q8_0 "$T/m.gguf"
	tfm-ppl -m "$T/m.gguf" -f "$T/pairs.tsv" --save-logits "$T/base.logits" -F json > "$T/r.json"
	# against itself: only the saved logits' rounding; one position per target token
	tfm-ppl -m "$T/m.gguf" -f "$T/pairs.tsv" --kl-base "$T/base.logits" -F json > "$T/self.json"
	jq -e --slurpfile r "$T/r.json" '.kl.positions == $r[0].tokens and .kl.mean < 1e-6 and
		.kl.same_top1 == 1' "$T/self.json"
	# q8_0 moves the distributions, and its nll is its own run's
	tfm-ppl -m "$T/q.gguf" -f "$T/pairs.tsv" --kl-base "$T/base.logits" -F json > "$T/q.json"
	tfm-ppl -m "$T/q.gguf" -f "$T/pairs.tsv" -F json > "$T/q0.json"
	jq -e --slurpfile q0 "$T/q0.json" '.kl.mean > 1e-4 and .kl.mean < 1 and .nll == $q0[0].nll' \
		"$T/q.json"
	# another model's tokens do not fit the file
	run tfm-ppl -m "$S2S/t5-s2s-tok" -f "$T/pairs.tsv" --kl-base "$T/base.logits"
	assert_failure
	assert_output --partial "another text or tokenizer"
}

@test "seq2seq: T5 and BART-family GGUFs: llama.cpp's t5 names, tfm.gen keys, the cross-attention bytes" {
	tfm-convert -o "$T/t5.gguf" "$S2S/t5-s2s"
	tfm-inspect -F json -T "$T/t5.gguf" > "$T/i.json"
	jq -e '[.tensors[].name] | index("enc.blk.0.attn_rel_b.weight") and
		index("dec.blk.2.cross_attn_o.weight") and index("dec.output_norm.weight")' "$T/i.json"
	[ "$(jq .params.total "$T/i.json")" -eq 94104 ]
	# 3 decoder layers x K and V x 4 heads x 12 x 4 bytes per source token
	[ "$(jq .cross_kv_bytes_per_token "$T/i.json")" = 1152 ]
	[ "$(jq .kv_bytes_per_token "$T/i.json")" = 1152 ]
	run tfm-inspect "$T/t5.gguf"
	assert_output --partial 'cross-attn kv'
	# the generation defaults of a BART config as tfm.gen.* keys
	tfm-bench --config "$ROOT/tests/data/configs/bart-base.json" -p 16 -n 4 -r 1 --dtype q8_0 \
		-F json > "$T/b.json"
	[ "$(jq '[.tests[] | select(.test == "pp16" or .test == "tg4")] | length' "$T/b.json")" -eq 2 ]
}

@test "seq2seq: refusals (--chat, --embed, beams with sampling, a source past the context)" {
	run tfm-run -m "$MT" --chat -p hi
	assert_failure 65
	assert_output --partial 'encoder-decoder'
	run tfm-run --embed -m "$MT" -p hi
	assert_failure 65
	run tfm-run -m "$MT" --beams 2 --temp 0.7 -p hi
	assert_failure 64
	run tfm-run -m "$MT" --early-stopping maybe -p hi
	assert_failure 64
	run tfm-run -m "$MT" -c 4 -p 'a rather long line that the context cannot hold'
	assert_failure 65
}

@test "seq2seq: speech models (whisper, wav2vec2) are refused by name (65): no audio front end" {
	T=$BATS_TEST_TMPDIR
	for t in whisper wav2vec2 seamless_m4t; do
		printf '{"model_type": "%s", "d_model": 384, "vocab_size": 51865}' "$t" > "$T/config.json"
		run tfm-inspect "$T/config.json"
		assert_failure 65
		assert_output --partial "model_type '$t' is a speech or audio model: tfm has no audio front end"
		run tfm-convert -o "$T/x.gguf" "$T"
		assert_failure 65
		[ ! -e "$T/x.gguf" ]
	done
}

@test "seq2seq: Marian with separate embeddings and vocabulary sizes: the GGUF's tables, transformers' parameter count, the refusals" {
	MS=$S2S/marian-sep-s2s
	tfm-convert -o "$T/m.gguf" "$MS"
	tfm-inspect -F json -T "$T/m.gguf" > "$T/i.json"
	# transformers' num_parameters(): both tables [150, 32], lm_head [120, 32]
	[ "$(jq .params.total "$T/i.json")" -eq 54048 ]
	jq -e '.spec["model.n_vocab"] == 120 and .spec["model.n_vocab_src"] == 150 and
		.spec["embd.enc_own"] == true' "$T/i.json"
	jq -e '[.tensors[] | select(.name == "enc.token_embd.weight" or
		.name == "token_embd.weight" or .name == "output.weight") | .shape[1]] |
		sort == [120, 150, 150]' "$T/i.json"
	# the bare config counts the same
	run tfm-inspect -F json "$MS/config.json"
	assert_success
	[ "$(echo "$output" | jq .params.total)" -eq 54048 ]
	# tied with a decoder_vocab_size of its own, or shared with one: refused by name
	mkdir -p "$T/tied" "$T/shared"
	jq '.tie_word_embeddings = true' "$MS/config.json" > "$T/tied/config.json"
	run tfm-inspect "$T/tied/config.json"
	assert_failure 65
	assert_output --partial 'tie_word_embeddings'
	jq '.share_encoder_decoder_embeddings = true' "$MS/config.json" > "$T/shared/config.json"
	run tfm-inspect "$T/shared/config.json"
	assert_failure 65
	assert_output --partial 'decoder_vocab_size'
	# separate_vocabs without the target vocabulary: refused by name
	cp -r "$MT" "$T/sep"
	jq '.separate_vocabs = true' "$MT/tokenizer_config.json" > "$T/sep/tokenizer_config.json"
	run tfm-convert -o "$T/sep.gguf" "$T/sep"
	assert_failure 65
	assert_output --partial 'target_vocab.json'
}

# tests/fixtures/seq2seq/marian-sep-tok (scripts/make-fixture-marian-sep):
# separate_vocabs, vocab.json for the source, target_vocab.json (139
# pieces, other ids) for labels and for decoding; transformers 4.57.1.
@test "seq2seq: Marian with separate vocabularies: tfm-run, tfm-ppl and tfm-tok as transformers" {
	MV=$S2S/marian-sep-tok
	tfm-convert -q -o "$T/sep.gguf" "$MV"
	jq -r '.[].text' "$MV/cli.json" > "$T/en.txt"
	jq -r '.[].greedy.out' "$MV/cli.json" > "$T/want-greedy.txt"
	jq -r '.[].beam.out' "$MV/cli.json" > "$T/want-beam.txt"
	jq -r '.pairs[] | "\(.[0])\t\(.[1])"' "$MV/ppl.json" > "$T/pairs.tsv"
	for m in "$MV" "$T/sep.gguf"; do
		tfm-run -m "$m" -n 12 --no-repeat-ngram 2 < "$T/en.txt" > "$T/greedy.txt"
		diff "$T/want-greedy.txt" "$T/greedy.txt" || fail "$m: greedy"
		tfm-run -m "$m" -n 12 --beams 3 --length-penalty 0.8 --no-repeat-ngram 2 \
			< "$T/en.txt" > "$T/beam.txt"
		diff "$T/want-beam.txt" "$T/beam.txt" || fail "$m: beam"
		tfm-ppl -m "$m" -f "$T/pairs.tsv" -F json > "$T/r.json"
		jq -n -e --slurpfile r "$T/r.json" --slurpfile w "$MV/ppl.json" \
			'($r[0].nll - $w[0].nll | fabs < 1e-4) and $r[0].tokens == $w[0].tokens' ||
			fail "$m: tfm-ppl $(cat "$T/r.json")"
		# the sources' ids (transformers' add </s>); labels and decoding
		# through the target vocabulary
		while IFS= read -r line; do
			printf '%s' "$line" | tfm-tok -m "$m"
		done < "$T/en.txt" > "$T/src-ids"
		jq -r '.[].src_ids[:-1] | map(tostring) | join(" ")' "$MV/cli.json" |
			diff - "$T/src-ids" || fail "$m: source ids"
		printf 'Das Haus ist klein.' | tfm-tok -m "$m" --target > "$T/tgt-ids"
		jq -r '.target[0].ids | map(tostring) | join(" ")' "$MV/cases.json" |
			diff - "$T/tgt-ids" || fail "$m: target ids"
		jq -r '.[0].greedy.ids | map(tostring) | join(" ")' "$MV/cli.json" |
			tfm-tok -m "$m" --decode > "$T/dec"
		[ "$(cat "$T/dec")" = "$(jq -r '.[0].greedy.out' "$MV/cli.json")" ] ||
			fail "$m: --decode"
	done
}
