#!/usr/bin/env bats
# tfm-run --embed and --classify: all-MiniLM-L6-v2 against the embeddings
# sentence-transformers computed (../shared), the bert-cls3 fixture against
# transformers' logits for lines and pairs (scripts/make-fixtures-encoders),
# output formats, and the refusals (exit 65 naming what is refused).
load helpers

setup() {
	need_shared
	T=$BATS_TEST_TMPDIR
	M=$SHARED/models/all-MiniLM-L6-v2
	CLS3=$ROOT/tests/fixtures/encoders/bert-cls3
}

# the smallest cosine between row i of jsonl $1 and rows[i].embedding of $2
min_cos() {
	jq -n --slurpfile g "$1" --slurpfile x "$2" '
		[range(0; $g | length) as $i | ($g[$i].embedding) as $a | ($x[0].rows[$i].embedding) as $b |
		 ([range(0; $a | length)] | map($a[.] * $b[.]) | add) /
		 ((($a | map(. * .) | add) * ($b | map(. * .) | add)) | sqrt)] | min'
}

# like_cli_classify DIR: tfm-run --classify over the texts of DIR/cli.json
# (lines and TAB pairs): as many results, each label's score and logit
# within 1e-4 of transformers' (labels by the config's label2id)
like_cli_classify() {
	jq -r '.[].text' "$1/cli.json" > "$T/lines"
	run tfm-run --classify -m "$1" -F jsonl -f "$T/lines"
	assert_success
	echo "$output" > "$T/c.jsonl"
	[ "$(jq -s length "$T/c.jsonl")" -eq "$(jq length "$1/cli.json")" ]
	d=$(jq -n --slurpfile g "$T/c.jsonl" --slurpfile r "$1/cli.json" \
		--slurpfile cfg "$1/config.json" '
		$cfg[0].label2id as $id |
		[range(0; $r[0] | length) as $i | $g[$i].labels[] |
		 ((.score - $r[0][$i].probs[$id[.label]]) | fabs),
		 ((.logit - $r[0][$i].logits[$id[.label]]) | fabs)] | max')
	echo "classify max diff $d"
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }'
}

# like_cli_fill DIR: tfm-run --fill over the texts of DIR/cli.json: the
# same five best ids at each mask, probabilities within 1e-4
like_cli_fill() {
	jq -r '.[].text' "$1/cli.json" > "$T/mlines"
	run tfm-run --fill -m "$1" -F jsonl -f "$T/mlines"
	assert_success
	echo "$output" > "$T/f.jsonl"
	[ "$(jq -c '[.masks[] | [.pos, [.top[].id]]]' "$T/f.jsonl")" = \
	  "$(jq -c '.[] | [.masks[] | [.pos, .ids]]' "$1/cli.json")" ]
	d=$(jq -n --slurpfile g "$T/f.jsonl" --slurpfile r "$1/cli.json" '
		[range(0; $r[0] | length) as $i | range(0; $r[0][$i].masks | length) as $m |
		 range(0; 5) as $k |
		 ($g[$i].masks[$m].top[$k].score - $r[0][$i].masks[$m].scores[$k]) | fabs] | max')
	echo "fill max diff $d"
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }'
}

@test "encoder: all-MiniLM-L6-v2 token ids equal transformers'" {
	jq -r '.rows[].ids | map(tostring) | join(" ")' "$M/expected-embeddings.json" > "$T/want"
	run tfm-tok -l --bos -m "$M" < "$M/sentences.txt"
	assert_success
	assert_output "$(cat "$T/want")"
}

@test "encoder: --embed reproduces sentence-transformers (f32: cos >= 0.99999)" {
	run tfm-run --embed -m "$M" -F jsonl -f "$M/sentences.txt"
	assert_success
	echo "$output" > "$T/e.jsonl"
	[ "$(wc -l < "$T/e.jsonl")" -eq 8 ]
	[ "$(jq -r .line "$T/e.jsonl" | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 " ]
	c=$(min_cos "$T/e.jsonl" "$M/expected-embeddings.json")
	echo "min cosine $c"
	awk -v c="$c" 'BEGIN { exit !(c >= 0.99999) }'
}

@test "encoder: a q8_0 file keeps cos >= 0.999, the GGUF says mean pooling" {
	tfm-convert -o "$T/m.gguf" "$M"
	tfm-quant -q -o "$T/q8.gguf" q8_0 "$T/m.gguf"
	run tfm-inspect -F json "$T/m.gguf"
	assert_success
	tfm-run --embed -m "$T/q8.gguf" -F jsonl -f "$M/sentences.txt" > "$T/e.jsonl"
	c=$(min_cos "$T/e.jsonl" "$M/expected-embeddings.json")
	echo "q8_0 min cosine $c"
	awk -v c="$c" 'BEGIN { exit !(c >= 0.999) }'
	tfm-run --embed -m "$T/m.gguf" -F jsonl -f "$M/sentences.txt" > "$T/f.jsonl"
	c=$(min_cos "$T/f.jsonl" "$M/expected-embeddings.json")
	awk -v c="$c" 'BEGIN { exit !(c >= 0.99999) }'
}

@test "encoder: TSV and f32 rows; --pooling cls --no-normalize is the raw [CLS] state" {
	run tfm-run --embed -m "$M" -f "$M/sentences.txt"
	assert_success
	[ "${#lines[@]}" -eq 8 ]
	[ "$(echo "${lines[0]}" | awk -F'\t' '{ print NF }')" -eq 384 ]
	tfm-run --embed -m "$M" -F f32 -f "$M/sentences.txt" > "$T/e.f32"
	[ "$(stat -c %s "$T/e.f32")" -eq $((8 * 384 * 4)) ]
	# the normalised rows have norm 1; without Normalize the first has not
	echo "${lines[0]}" | awk -F'\t' '{ for (i = 1; i <= NF; i++) s += $i * $i; exit !(s > 0.99999 && s < 1.00001) }'
	run tfm-run --embed -m "$M" --pooling cls --no-normalize -p "$(head -1 "$M/sentences.txt")"
	assert_success
	want=$(jq -r '.rows[0].cls | map(tostring) | join(" ")' "$M/expected-embeddings.json")
	echo "$output" | awk -F'\t' -v w="$want" '{ n = split(w, x, " ");
		for (i = 1; i <= n; i++) { d = $i - x[i]; if (d < 0) d = -d; if (d > 1e-5) exit 1 } }'
}

@test "encoder: --classify gives transformers' logits and scores for lines and pairs" {
	like_cli_classify "$CLS3"
	run tfm-run --classify -m "$CLS3" --top 1 -p 'the cat sat'
	assert_success
	assert_output --regexp '^pos	0\.[0-9]+$'
}

@test "encoder: a RoBERTa cross-encoder: <s> A </s></s> B </s> as its RobertaProcessing says" {
	RP=$ROOT/tests/fixtures/encoders/roberta-pair
	like_cli_classify "$RP"
	# the single texts' ids, <s> ... </s> as transformers' tokenizer
	grep -v '	' "$T/lines" | tfm-tok -l --bos -m "$RP" > "$T/got"
	jq -r '.[] | select(.text | contains("\t") | not) | .ids | map(tostring) | join(" ")' \
		"$RP/cli.json" > "$T/want"
	cmp "$T/got" "$T/want"
}

@test "encoder: XLM-RoBERTa with its SentencePiece unigram tokenizer: --classify and --fill as transformers" {
	X=$ROOT/tests/fixtures/encoders/xlm-roberta-cls
	like_cli_classify "$X"
	# the single lines' ids as transformers' tokenizer (tfm-tok --bos: the
	# unigram tokenizer's whole frame, <s> ... </s>)
	grep -v '	' "$T/lines" | tfm-tok -l --bos -m "$X" > "$T/got"
	jq -r '.[] | select(.text | contains("\t") | not) | .ids | map(tostring) | join(" ")' \
		"$X/cli.json" > "$T/want"
	cmp "$T/got" "$T/want"
	X2=$ROOT/tests/fixtures/encoders/xlm-roberta-mlm
	like_cli_fill "$X2"
	# pseudo-perplexity runs through the unigram frame <s> ... </s> and <mask>
	run tfm-ppl -m "$X2" -f "$T/lines" -c 24 -F json
	assert_success
	echo "$output" | jq -e '.mode == "pseudo" and .tokens > 10 and .ppl > 1'
}

@test "encoder: ALBERT with its unigram tokenizer (NFKD, accents stripped, lower case): --fill as transformers" {
	A=$ROOT/tests/fixtures/encoders/albert-tok
	like_cli_fill "$A"
	# upper case and accents reach the model lowered and stripped; the
	# spaces around [MASK] (lstrip) go with it
	a=$(tfm-run --fill -m "$A" -F jsonl -p 'THE CAT IS [MASK].' | jq -c '.masks')
	b=$(tfm-run --fill -m "$A" -F jsonl -p 'thé cAt ïs   [MASK].' | jq -c '.masks')
	[ "$a" = "$b" ]
	[ "$(echo "$a" | jq -c '[.[0].top[].id]')" = "$(jq -c '.[0].masks[0].ids' "$A/cli.json")" ]
}

@test "encoder: a byte-level BPE with BERT's template (ModernBERT's tokenizer): [CLS] A [SEP] B [SEP]" {
	MB=$ROOT/tests/fixtures/encoders/modernbert-bpe
	like_cli_classify "$MB"
	# the ids of lines and pairs as transformers' tokenizer
	tfm-convert -o "$T/mb.gguf" "$MB"
	jq -r '.[] | select(.text | contains("\t") | not) | .ids | map(tostring) | join(" ")' \
		"$MB/cli.json" > "$T/want"
	grep -v '	' "$T/lines" | tfm-tok -l --bos -m "$T/mb.gguf" > "$T/got"
	cmp "$T/got" "$T/want"
	grep -qa 'tfm.tok.pair' "$T/mb.gguf"
}

@test "encoder: --classify of a modernbert cross-encoder matches transformers for lines and pairs" {
	MP=$ROOT/tests/fixtures/encoders/modernbert-pair
	like_cli_classify "$MP"
	# the longest line runs past the local layers' window (2 keys either side)
	[ "$(jq '[.[].ids | length] | max' "$MP/cli.json")" -gt 5 ]
}

@test "encoder: long lines are cut with a warning, or refused with --no-truncate" {
	run tfm-run --embed -m "$M" -c 4 -p "$(head -1 "$M/sentences.txt")"
	assert_success
	[ "$(echo "$output" | grep -c 'cut to 4')" -eq 1 ]
	run tfm-run --embed -m "$M" -c 4 --no-truncate -p "$(head -1 "$M/sentences.txt")"
	assert_failure 65
	assert_output --partial 'line 1'
}

@test "encoder: --embed batches lines (up to 1024 tokens a pass) with each line's own embedding, in order" {
	tfm-convert -o "$T/m.gguf" "$M"
	# 150 WikiText lines of 1 to ~150 tokens: several batches, some full
	tr -d '\r' < "$SHARED/text/wikitext-2-raw-test.txt" | grep -v '^ *$' | head -150 |
		cut -c 1-600 > "$T/lines.txt"
	tfm-run --embed -m "$T/m.gguf" -F jsonl -f "$T/lines.txt" > "$T/all.jsonl"
	[ "$(jq -s '[.[].line] == [range(1; 151)]' "$T/all.jsonl")" = true ]
	# every 10th line alone (-p: no batch) gives the same embedding
	for i in $(seq 1 10 150); do
		tfm-run --embed -m "$T/m.gguf" -F jsonl -p "$(sed -n "${i}p" "$T/lines.txt")" |
			jq -c --argjson i "$i" '{line: $i, embedding}'
	done > "$T/alone.jsonl"
	jq -n -e --slurpfile a "$T/all.jsonl" --slurpfile o "$T/alone.jsonl" '
		[$o[] as $r | ($a[] | select(.line == $r.line).embedding) as $b |
		 [range(0; $b | length) | ($b[.] - $r.embedding[.]) | fabs] | max] | max < 1e-5'
	# a line it cannot take: the lines before it are written, then exit 65 naming it
	{ head -3 "$T/lines.txt"; printf '%s\n' "$(head -c 3000 "$T/lines.txt" | tr '\n' ' ')"; } > "$T/bad.txt"
	run tfm-run --embed -m "$T/m.gguf" -F jsonl --no-truncate -f "$T/bad.txt"
	assert_failure 65
	[ "$(echo "$output" | grep -c '^{"line":')" -eq 3 ]
	assert_output --partial 'line 4'
}

@test "encoder: T5's encoder stack runs (T5EncoderModel); a seq2seq config over its weights is refused (65)" {
	E=$ROOT/tests/fixtures/encoders/t5-enc
	tfm-convert -o "$T/t5.gguf" "$E"
	# the parameters transformers' T5EncoderModel counts (scripts/make-fixtures-encoders)
	[ "$(tfm-inspect -F json "$T/t5.gguf" | jq .params.total)" -eq 46712 ]
	tfm-inspect -F json "$T/t5.gguf" | jq -e '.spec["model.family"] == "encoder" and
		.spec["attn.pos"] == "t5" and .spec["head.pooling"] == "mean"'
	cp -r "$E" "$T/full"
	jq '.architectures = ["T5ForConditionalGeneration"]' "$E/config.json" > "$T/full/config.json"
	run tfm-convert -o "$T/full.gguf" "$T/full"
	if [ "$status" -eq 0 ]; then
		run tfm-run --embed -m "$T/full.gguf" -p hi
	fi
	assert_failure 65
	assert_output --partial 'missing tensor dec.blk.0.'
}

@test "encoder: refusals and usage errors" {
	run tfm-run --classify -m "$M" -p hi
	assert_failure 65
	assert_output --partial 'no sequence-classification head'
	run tfm-run --embed -m "$STORIES" --vocab "$TOK512" -p hi
	assert_failure 64
	run tfm-run --embed -m "$STORIES" -p hi
	assert_failure 65
	run tfm-run -m "$M" -p hi -n 2
	assert_failure 65
	assert_output --partial 'no LM head'
	run tfm-run --embed -m "$M" --pooling median -p hi
	assert_failure 64
	run tfm-run --embed -m "$M" --top 2 -p hi
	assert_failure 64
	run tfm-run --classify -m "$CLS3" --pooling cls -p hi
	assert_failure 64
	run tfm-run --pooling cls -m "$M" -p hi
	assert_failure 64
	run tfm-run --embed -m "$M" -F text -p hi
	assert_success
}

@test "encoder: config keys and model types that are not implemented are refused (65)" {
	mkdir "$T/rel" "$T/albert"
	cp "$CLS3"/model.safetensors "$CLS3"/vocab.txt "$CLS3"/tokenizer.json "$T/rel/"
	jq '.position_embedding_type = "relative_key"' "$CLS3/config.json" > "$T/rel/config.json"
	run tfm-run --classify -m "$T/rel" -p hi
	assert_failure 65
	assert_output --partial 'relative_key'
	jq '.is_decoder = true' "$CLS3/config.json" > "$T/rel/config.json"
	run tfm-run --classify -m "$T/rel" -p hi
	assert_failure 65
	assert_output --partial 'is_decoder'
	jq '.architectures = ["BertForQuestionAnswering"]' "$CLS3/config.json" > "$T/rel/config.json"
	run tfm-run --classify -m "$T/rel" -p hi
	assert_failure 65
	assert_output --partial 'BertForQuestionAnswering'
	cp "$CLS3"/model.safetensors "$T/albert/"
	jq '.model_type = "albert"' "$CLS3/config.json" > "$T/albert/config.json"
	run tfm-run --embed -m "$T/albert" -p hi
	assert_failure 65
	assert_output --partial 'albert'
}

@test "encoder: modernbert counts as transformers, converts to modern-bert; unimplemented keys are refused (65)" {
	MB=$ROOT/tests/fixtures/encoders/modernbert-cls
	# ModernBertForSequenceClassification.num_parameters() (transformers 4.57.1)
	run tfm-inspect -F json "$MB"
	assert_success
	[ "$(echo "$output" | jq .params.total)" -eq 33923 ]
	tfm-convert -o "$T/mb.gguf" "$MB"
	run tfm-inspect -F json "$T/mb.gguf"
	assert_success
	[ "$(echo "$output" | jq -r .gguf_arch)" = modern-bert ]
	[ "$(echo "$output" | jq .params.total)" -eq 33923 ]
	[ "$(echo "$output" | jq .tensor_params)" -eq 33923 ]
	[ "$(echo "$output" | jq -r '.spec."head.pooling"')" = mean ]
	mkdir "$T/mb"
	cp "$MB"/model.safetensors "$T/mb/"
	jq '.classifier_pooling = "max"' "$MB/config.json" > "$T/mb/config.json"
	run tfm-inspect "$T/mb"
	assert_failure 65
	assert_output --partial 'classifier_pooling'
	jq '.rope_scaling = {"rope_type": "linear", "factor": 2.0}' "$MB/config.json" > "$T/mb/config.json"
	run tfm-convert -o "$T/x.gguf" "$T/mb"
	assert_failure 65
	assert_output --partial 'rope_scaling'
	[ ! -e "$T/x.gguf" ]
	jq '.architectures = ["ModernBertForQuestionAnswering"]' "$MB/config.json" > "$T/mb/config.json"
	run tfm-inspect "$T/mb"
	assert_failure 65
	assert_output --partial 'ModernBertForQuestionAnswering'
}

@test "encoder: --fill gives transformers' five best tokens and probabilities for each mask" {
	MLM=$ROOT/tests/fixtures/encoders/bert-mlm
	like_cli_fill "$MLM"
	run tfm-run --fill -m "$MLM" --top 1 -p 'The cat is [MASK].'
	assert_success
	assert_output --regexp "^1	4	$(jq -r '.[0].masks[0].tokens[0]' "$MLM/cli.json" | sed 's/\[/\\[/; s/\]/\\]/')	0\.[0-9]+$"
	run tfm-run --fill -m "$MLM" -p 'no mask here'
	assert_failure 65
	assert_output --partial 'no mask token'
	run tfm-run --fill -m "$M" -p 'The [MASK] sat.'
	assert_failure 65
	assert_output --partial 'no masked-LM head'
}

@test "encoder: --tag gives the entities of transformers' pipeline (aggregation first)" {
	TAG=$ROOT/tests/fixtures/encoders/bert-tag
	jq -r '.[].text' "$TAG/cli.json" > "$T/lines"
	run tfm-run --tag -m "$TAG" -F jsonl -f "$T/lines"
	assert_success
	echo "$output" > "$T/t.jsonl"
	# groups, character offsets and the original text of each span
	[ "$(jq -c '[.entities[] | [.entity_group, .start, .end, .word]]' "$T/t.jsonl")" = \
	  "$(jq -c '.[] | .text as $t | [.entities[] | [.entity_group, .start, .end, $t[.start:.end]]]' "$TAG/cli.json")" ]
	d=$(jq -n --slurpfile g "$T/t.jsonl" --slurpfile r "$TAG/cli.json" '
		[range(0; $r[0] | length) as $i | range(0; $r[0][$i].entities | length) as $k |
		 ($g[$i].entities[$k].score - $r[0][$i].entities[$k].score) | fabs] | max')
	echo "max score diff $d"
	awk -v d="$d" 'BEGIN { exit !(d <= 1e-4) }'
	run tfm-run --tag -m "$TAG" -p 'sun moon day night'
	assert_success
	assert_line --index 2 --regexp '^1	LOC	0\.[0-9]+	9	18	day night$'
	run tfm-run --tag -m "$CLS3" -p 'sun'
	assert_failure 65
	assert_output --partial 'no token-classification head'
	run tfm-run --tag -m "$TAG" --top 2 -p 'sun'
	assert_failure 64
}

@test "encoder: DeBERTa fixtures convert with their relative terms and exact parameter counts" {
	# DebertaV2*.num_parameters() of transformers 4.57.1 with their heads
	for f in deberta-v3:45,376 deberta-v2-cls:51,595 deberta-v2-tag:27,556 \
		 deberta-v3-mlm:23,880 deberta-v2-mlm:17,968 deberta-v2-abs:28,928 \
		 deberta-v2-conv:25,216 deberta-v2-conv5:11,776 deberta-v1:59,872 \
		 deberta-v1-cls:37,203 deberta-v1-mlm:26,120 deberta-v1-abs:28,784 \
		 deberta-v2-mlm-untied:24,528; do
		run tfm-convert "$ROOT/tests/fixtures/encoders/${f%%:*}" -o "$T/${f%%:*}.gguf"
		assert_success
		run tfm-inspect -v "$T/${f%%:*}.gguf"
		assert_success
		assert_output --regexp "params +${f#*:} total"
		refute_output --partial 'warning'
		case $f in
		deberta-v2-abs:* | deberta-v1-abs:*) assert_output --regexp "attn.pos +none" ;;
		*) assert_output --regexp "attn.pos +deberta" ;;
		esac
	done
	run tfm-inspect -v "$T/deberta-v3.gguf"
	assert_output --regexp "rel.buckets +8"
	assert_output --regexp "rel.share_key +1"
	run tfm-inspect -T "$T/deberta-v2-cls.gguf"
	assert_output --partial 'blk.2.attn_pos_q.weight'
	assert_output --partial 'rel_embd.weight'
}

@test "encoder: DeBERTa keys and variants that are not implemented are refused (65)" {
	D=$ROOT/tests/fixtures/encoders/deberta-v3
	mkdir "$T/d"
	cp "$D"/model.safetensors "$T/d/"
	try() { # jq filter, then the text the refusal must name
		jq "$1" "$D/config.json" > "$T/d/config.json"
		run tfm-convert "$T/d" -o "$T/d.gguf"
		assert_failure 65
		assert_output --partial "$2"
	}
	try '.conv_kernel_size = 4' 'conv_kernel_size 4'
	try '.conv_kernel_size = 3 | .conv_groups = 5' 'conv_groups 5'
	try '.conv_kernel_size = 3 | .conv_act = "mish"' "conv_act 'mish'"
	# DeBERTa v1: its config with talking heads
	try '.model_type = "deberta" | .talking_head = true' 'talking_head'
	try '.pos_att_type = "c2p|p2p"' "pos_att_type 'p2p'"
	try '.pos_att_type = ["c2p", "p2p"]' "pos_att_type 'p2p'"
	try '.attention_head_size = 16' 'attention_head_size'
	try '.norm_rel_ebd = "layer_norm|batch_norm"' 'norm_rel_ebd'
	try '.max_relative_positions = 4' 'position_buckets 8 with max_relative_positions 4'
	try '.pooler_hidden_act = "gelu_new"' 'pooler_hidden_act'
	try '.pooler_hidden_size = 24' 'pooler_hidden_size'
	try '.architectures = ["DebertaV2ForQuestionAnswering"]' 'DebertaV2ForQuestionAnswering'
	[ ! -e "$T/d.gguf" ]
}

@test "encoder: a DeBERTa-v2 classifier and masked LM through tfm-run (WordPiece fixtures)" {
	DC=$ROOT/tests/fixtures/encoders/deberta-v2-cls
	like_cli_classify "$DC"
	DM=$ROOT/tests/fixtures/encoders/deberta-v2-mlm
	like_cli_fill "$DM"
}
