/* run-encode.c: tfm-run --embed / --classify / --fill / --tag (see
 * run-encode.h and man/tfm-run.1).  Each line is tokenized with the model's tokenizer and
 * its post-processor ([CLS] ... [SEP]; for --classify a line
 * "text<TAB>text" is a pair with token types 0 and 1), cut to the model's
 * maximum (sentence-transformers' max_seq_length, else the training
 * context) with a warning naming the line, run through tfm_embed or
 * tfm_classify, and written as TSV, JSON lines or raw float32 rows.
 * --fill reads the mask token written in the text ([MASK], <mask>) and
 * prints the best tokens for each, with their softmax probabilities.
 * --tag groups words into entities as transformers' token-classification
 * pipeline does with aggregation_strategy="first". */
#include "run-encode.h"
#include "common.h"

#include <errno.h>
#include <math.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --embed and --classify gather lines into batches of at most BATCH_ROWS
 * tokens (a longer line: alone) and BATCH_SEQS lines, one pass each */
#define BATCH_ROWS 1024
#define BATCH_SEQS 64

struct enc {
	struct tfm_model *m;
	const struct tfm_spec *s;
	const struct tfm_tokenizer *tok;
	struct tfm_ctx *c;
	const struct enc_opts *o;
	int64_t max;          /* tokens per sequence */
	float *vec, *prob;    /* [n_embd] or [n_labels] (--fill: [n_vocab] each) */
	int32_t *order;       /* [n_labels] labels by score */
	char **labels;        /* [n_labels] */
	/* the pending batch: nb lines, their tokens and types back to back */
	int64_t rows, nb, ntok;
	int32_t *bt, *by;     /* [rows] */
	int64_t blen[BATCH_SEQS], bline[BATCH_SEQS];
	float *bvec, *bprob;  /* [BATCH_SEQS][n_embd or n_labels] */
};

static int put(const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, stdout) != n)
		return errno == EPIPE ? TFM_E_PIPE : tfm_seterr(TFM_E_IO, "stdout: %s", strerror(errno));
	return TFM_OK;
}

static int printfx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int printfx(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vprintf(fmt, ap);
	va_end(ap);
	if (r < 0)
		return errno == EPIPE ? TFM_E_PIPE : tfm_seterr(TFM_E_IO, "stdout: %s", strerror(errno));
	return TFM_OK;
}

/* the labels: <arch>.classifier.output_labels, else LABEL_i as transformers */
static int load_labels(struct enc *e)
{
	const struct tfm_gguf *g = tfm_model_gguf(e->m);
	char key[96];
	int64_t nl = e->s->n_labels;
	snprintf(key, sizeof key, "%s.classifier.output_labels", e->s->gguf_arch);
	e->labels = tfm_calloc((size_t)nl, sizeof *e->labels);
	if (!e->labels)
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < nl; i++) {
		const char *str;
		size_t len;
		char buf[32];
		if (g && tfm_gguf_get_arr_str(g, key, i, &str, &len) == TFM_OK) {
			e->labels[i] = tfm_malloc(len + 1);
			if (!e->labels[i])
				return TFM_E_NOMEM;
			memcpy(e->labels[i], str, len);
			e->labels[i][len] = 0;
		} else {
			snprintf(buf, sizeof buf, "LABEL_%lld", (long long)i);
			if (!(e->labels[i] = tfm_strdup(buf)))
				return TFM_E_NOMEM;
		}
	}
	return TFM_OK;
}

/* tokens of one line: a single text, or for --classify a pair at the tab */
static int tokens(struct enc *e, const char *line, size_t len, int64_t lineno, int32_t **ids,
		  int32_t **types, size_t *n)
{
	const char *tab = e->o->mode == ENC_CLASSIFY ? memchr(line, '\t', len) : NULL;
	int st;
	*types = NULL;
	if (tab) {
		st = tfm_tokenize_pair(e->tok, line, (size_t)(tab - line), tab + 1,
				       len - (size_t)(tab - line) - 1, ids, types, n);
		if (!st && (int64_t)*n > e->max)
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: a pair of %zu tokens, the model takes "
					"%lld (pairs are not cut)", (long long)lineno, *n,
					(long long)e->max);
		return st;
	}
	if ((st = tfm_tokenize_seq(e->tok, line, len, e->o->mode == ENC_FILL, ids, n)))
		return st;
	if ((int64_t)*n > e->max) {
		if (!e->o->truncate)
			return tfm_seterr(TFM_E_FORMAT, "line %lld: %zu tokens, the model takes %lld "
					  "(--no-truncate)", (long long)lineno, *n, (long long)e->max);
		tfm_log(TFM_LOG_WARN, "line %lld: %zu tokens cut to %lld", (long long)lineno, *n,
			(long long)e->max);
		/* as transformers' truncation: the text is cut, the closing
		 * special token ([SEP]) kept */
		(*ids)[e->max - 1] = (*ids)[*n - 1];
		*n = (size_t)e->max;
	}
	return TFM_OK;
}

static int write_embed(struct enc *e, int64_t lineno)
{
	int64_t d = e->s->n_embd;
	if (e->o->fmt == ENC_F32)
		return put(e->vec, (size_t)d * sizeof(float));
	int st = TFM_OK;
	if (e->o->fmt == ENC_JSONL) {
		json_t *a = json_array();
		for (int64_t i = 0; i < d; i++)
			json_array_append_new(a, json_real(e->vec[i]));
		json_t *o = json_pack("{s:I,s:o}", "line", (json_int_t)lineno, "embedding", a);
		char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
		json_decref(o);
		if (!txt)
			return TFM_E_NOMEM;
		st = printfx("%s\n", txt);
		free(txt);
		return st;
	}
	for (int64_t i = 0; i < d && !st; i++)
		st = printfx("%s%.9g", i ? "\t" : "", (double)e->vec[i]);
	return st ? st : put("\n", 1);
}

static int write_classes(struct enc *e, const float *logits, int64_t lineno)
{
	int64_t nl = e->s->n_labels, k = e->o->top > 0 && e->o->top < nl ? e->o->top : nl;
	if (e->o->fmt == ENC_F32)
		return put(e->prob, (size_t)nl * sizeof(float));
	for (int64_t i = 0; i < nl; i++) /* by score, ties to the lower id */
		e->order[i] = (int32_t)i;
	for (int64_t i = 1; i < nl; i++)
		for (int64_t j = i; j > 0 && e->prob[e->order[j]] > e->prob[e->order[j - 1]]; j--) {
			int32_t x = e->order[j];
			e->order[j] = e->order[j - 1];
			e->order[j - 1] = x;
		}
	int st = TFM_OK;
	if (e->o->fmt == ENC_JSONL) {
		json_t *a = json_array();
		for (int64_t i = 0; i < k; i++) {
			int32_t l = e->order[i];
			json_array_append_new(a, json_pack("{s:s,s:f,s:f}", "label", e->labels[l],
							   "score", (double)e->prob[l], "logit",
							   (double)logits[l]));
		}
		json_t *o = json_pack("{s:I,s:o}", "line", (json_int_t)lineno, "labels", a);
		char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
		json_decref(o);
		if (!txt)
			return TFM_E_NOMEM;
		st = printfx("%s\n", txt);
		free(txt);
		return st;
	}
	for (int64_t i = 0; i < k && !st; i++)
		st = printfx("%s%s\t%.9g", i ? "\t" : "", e->labels[e->order[i]],
			     (double)e->prob[e->order[i]]);
	return st ? st : put("\n", 1);
}

static int is_mask(const struct tfm_tokenizer *t, int32_t id)
{
	size_t len;
	const char *p = tfm_token_piece(t, id, &len);
	return p && ((len == 6 && !memcmp(p, "[MASK]", 6)) || (len == 6 && !memcmp(p, "<mask>", 6)));
}

/* the best tokens of each mask token of the line, in text order: TSV
 * "LINE POS TOKEN SCORE ..." per mask, a JSON object per line, or with f32
 * the probabilities of every token, a row per mask */
static int fill(struct enc *e, const int32_t *ids, const int32_t *types, int64_t n,
		int64_t lineno)
{
	int64_t V = e->s->n_vocab, k = e->o->top > 0 ? e->o->top : 5, nm = 0;
	json_t *masks = e->o->fmt == ENC_JSONL ? json_array() : NULL;
	int st = TFM_OK;
	if (k > V)
		k = V;
	for (int64_t p = 0; p < n && !st; p++) {
		if (!is_mask(e->tok, ids[p]))
			continue;
		nm++;
		if ((st = tfm_fill_mask(e->c, ids, types, n, p, e->vec)))
			break;
		float mx = e->vec[0], sum = 0;
		for (int64_t i = 1; i < V; i++)
			mx = e->vec[i] > mx ? e->vec[i] : mx;
		for (int64_t i = 0; i < V; i++)
			sum += e->prob[i] = expf(e->vec[i] - mx);
		for (int64_t i = 0; i < V; i++)
			e->prob[i] /= sum;
		if (e->o->fmt == ENC_F32) {
			st = put(e->prob, (size_t)V * sizeof(float));
			continue;
		}
		/* the k best, ties to the lower id */
		for (int64_t j = 0; j < k; j++) {
			int32_t b = -1;
			for (int64_t i = 0; i < V; i++) {
				int taken = 0;
				for (int64_t q = 0; q < j; q++)
					taken |= e->order[q] == i;
				if (!taken && (b < 0 || e->prob[i] > e->prob[b]))
					b = (int32_t)i;
			}
			e->order[j] = b;
		}
		json_t *top = masks ? json_array() : NULL;
		if (!masks)
			st = printfx("%lld\t%lld", (long long)lineno, (long long)p);
		for (int64_t j = 0; j < k && !st; j++) {
			size_t len;
			const char *piece = tfm_token_piece(e->tok, e->order[j], &len);
			if (piece && len >= 3 && !memcmp(piece, "\xe2\x96\x81", 3)) /* the word-start mark */
				piece += 3, len -= 3;
			if (top)
				json_array_append_new(top, json_pack("{s:i,s:s%,s:f}", "id", e->order[j],
								     "token", piece ? piece : "",
								     piece ? len : 0,
								     "score", (double)e->prob[e->order[j]]));
			else
				st = printfx("\t%.*s\t%.9g", (int)(piece ? len : 0), piece ? piece : "",
					     (double)e->prob[e->order[j]]);
		}
		if (top)
			json_array_append_new(masks, json_pack("{s:I,s:o}", "pos", (json_int_t)p, "top", top));
		else if (!st)
			st = put("\n", 1);
	}
	if (!st && !nm)
		st = tfm_seterr(TFM_E_FORMAT, "line %lld has no mask token", (long long)lineno);
	if (!st && masks) {
		json_t *o = json_pack("{s:I,s:O}", "line", (json_int_t)lineno, "masks", masks);
		char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
		json_decref(o);
		st = txt ? printfx("%s\n", txt) : TFM_E_NOMEM;
		free(txt);
	}
	json_decref(masks);
	return st;
}

/* code points of line[0, off) */
static int64_t chars(const char *line, int64_t off)
{
	int64_t c = 0;
	for (int64_t i = 0; i < off; i++)
		c += ((unsigned char)line[i] & 0xc0) != 0x80;
	return c;
}

/* "B-PER" -> B, "PER"; "I-PER" -> I, "PER"; "O" -> I, "O" (transformers'
 * TokenClassificationPipeline.get_tag) */
static const char *tag_of(const char *label, char *bi)
{
	if ((label[0] == 'B' || label[0] == 'I') && label[1] == '-') {
		*bi = label[0];
		return label + 2;
	}
	*bi = 'I';
	return label;
}

struct ent { int64_t start, end; double score; int64_t n; const char *tag; };

static int put_entity(struct enc *e, const char *line, const struct ent *g, int64_t lineno,
		      json_t *arr)
{
	const char *name = g->tag; /* the first word's label after its B- / I- */
	double score = g->score / (double)g->n;
	if (!strcmp(name, "O")) /* the pipeline's ignore_labels */
		return TFM_OK;
	if (arr) {
		json_array_append_new(arr, json_pack("{s:s,s:f,s:s%,s:I,s:I}", "entity_group", name,
						     "score", score, "word", line + g->start,
						     (size_t)(g->end - g->start), "start",
						     (json_int_t)chars(line, g->start), "end",
						     (json_int_t)chars(line, g->end)));
		return TFM_OK;
	}
	return printfx("%lld\t%s\t%.9g\t%lld\t%lld\t%.*s\n", (long long)lineno, name, score,
		       (long long)chars(line, g->start), (long long)chars(line, g->end),
		       (int)(g->end - g->start), line + g->start);
}

/* --tag: a label per word from its first token (aggregation "first"), then
 * consecutive words of one entity type grouped (B- opens a group, I- and
 * plain labels continue one of the same type), mean score; "O" dropped */
static int tag(struct enc *e, const char *line, size_t len, int64_t lineno)
{
	int32_t *ids = NULL, *sp = NULL;
	size_t n = 0;
	int64_t nl = e->s->n_labels;
	float *lg = NULL;
	json_t *arr = NULL;
	int st = tfm_tokenize_words(e->tok, line, len, &ids, &sp, &n);
	if (!st && (int64_t)n > e->max) {
		if (!e->o->truncate) {
			st = tfm_seterr(TFM_E_FORMAT, "line %lld: %zu tokens, the model takes %lld "
					"(--no-truncate)", (long long)lineno, n, (long long)e->max);
		} else {
			tfm_log(TFM_LOG_WARN, "line %lld: %zu tokens cut to %lld", (long long)lineno, n,
				(long long)e->max);
			ids[e->max - 1] = ids[n - 1];
			sp[2 * (e->max - 1)] = sp[2 * (e->max - 1) + 1] = -1;
			n = (size_t)e->max;
		}
	}
	if (!st && !(lg = tfm_malloc(n * (size_t)nl * sizeof *lg)))
		st = TFM_E_NOMEM;
	if (!st)
		st = tfm_tag(e->c, ids, NULL, (int64_t)n, lg);
	for (size_t t = 0; !st && t < n; t++) { /* softmax per token, as the pipeline */
		float *r = lg + t * (size_t)nl, mx = r[0], sum = 0;
		for (int64_t i = 1; i < nl; i++)
			mx = r[i] > mx ? r[i] : mx;
		for (int64_t i = 0; i < nl; i++)
			sum += r[i] = expf(r[i] - mx);
		for (int64_t i = 0; i < nl; i++)
			r[i] /= sum;
	}
	if (!st && e->o->fmt == ENC_F32) {
		st = put(lg, n * (size_t)nl * sizeof *lg);
		goto out;
	}
	if (!st && e->o->fmt == ENC_JSONL)
		arr = json_array();
	struct ent g = { 0 };
	for (size_t t = 0; !st && t < n; t++) {
		if (sp[2 * t] < 0 || (t > 0 && sp[2 * t] == sp[2 * (t - 1)]))
			continue; /* a special token, or a word's later piece */
		const float *r = lg + t * (size_t)nl;
		int64_t best = 0;
		for (int64_t i = 1; i < nl; i++)
			if (r[i] > r[best])
				best = i;
		char bi;
		const char *tg = tag_of(e->labels[best], &bi);
		if (g.n && !strcmp(tg, g.tag) && bi != 'B') {
			g.end = sp[2 * t + 1];
			g.score += r[best];
			g.n++;
		} else {
			if (g.n)
				st = put_entity(e, line, &g, lineno, arr);
			g = (struct ent){ sp[2 * t], sp[2 * t + 1], r[best], 1, tg };
		}
	}
	if (!st && g.n)
		st = put_entity(e, line, &g, lineno, arr);
	if (!st && arr) {
		json_t *o = json_pack("{s:I,s:O}", "line", (json_int_t)lineno, "entities", arr);
		char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
		json_decref(o);
		st = txt ? printfx("%s\n", txt) : TFM_E_NOMEM;
		free(txt);
	}
out:
	if (st && st != TFM_E_PIPE && st != TFM_E_IO)
		tfm_adderr(st, "line %lld", (long long)lineno);
	json_decref(arr);
	free(lg);
	free(ids);
	free(sp);
	return st;
}

/* the pending lines through one tfm_embed_batch or tfm_classify_batch,
 * written in order */
static int batch_flush(struct enc *e)
{
	int embed = e->o->mode == ENC_EMBED;
	int64_t w = embed ? e->s->n_embd : e->s->n_labels;
	if (!e->nb)
		return TFM_OK;
	int st = embed ? tfm_embed_batch(e->c, e->bt, e->by, e->blen, e->nb, e->o->pooling,
					 e->o->normalize, e->bvec)
		       : tfm_classify_batch(e->c, e->bt, e->by, e->blen, e->nb, e->bvec, e->bprob);
	if (st)
		tfm_adderr(st, "lines %lld-%lld", (long long)e->bline[0],
			   (long long)e->bline[e->nb - 1]);
	for (int64_t i = 0; !st && i < e->nb; i++) {
		if (embed) {
			memcpy(e->vec, e->bvec + i * w, (size_t)w * sizeof *e->vec);
			st = write_embed(e, e->bline[i]);
		} else {
			memcpy(e->prob, e->bprob + i * w, (size_t)w * sizeof *e->prob);
			st = write_classes(e, e->bvec + i * w, e->bline[i]);
		}
	}
	e->nb = e->ntok = 0;
	return st;
}

/* a line joins the pending batch (which goes first when full); a line
 * that cannot be read writes the lines before it, then fails */
static int batch_line(struct enc *e, const char *line, size_t len, int64_t lineno)
{
	int32_t *ids = NULL, *types = NULL;
	size_t n = 0;
	int st = tokens(e, line, len, lineno, &ids, &types, &n);
	if (st) {
		int fst = batch_flush(e);
		free(ids);
		free(types);
		if (st != TFM_E_PIPE && st != TFM_E_IO)
			tfm_adderr(st, "line %lld", (long long)lineno);
		return fst ? fst : st;
	}
	if (e->nb == BATCH_SEQS || e->ntok + (int64_t)n > e->rows)
		st = batch_flush(e);
	if (!st) {
		memcpy(e->bt + e->ntok, ids, n * sizeof *ids);
		for (size_t i = 0; i < n; i++)
			e->by[e->ntok + (int64_t)i] = types ? types[i] : 0;
		e->ntok += (int64_t)n;
		e->blen[e->nb] = (int64_t)n;
		e->bline[e->nb++] = lineno;
	}
	free(ids);
	free(types);
	return st;
}

static int one_line(struct enc *e, const char *line, size_t len, int64_t lineno)
{
	if (e->bt)
		return batch_line(e, line, len, lineno);
	if (e->o->mode == ENC_TAG)
		return tag(e, line, len, lineno);

	int32_t *ids = NULL, *types = NULL;
	size_t n = 0;
	float lg[4096];
	int st = tokens(e, line, len, lineno, &ids, &types, &n);
	if (!st && e->o->mode == ENC_FILL) {
		st = fill(e, ids, types, (int64_t)n, lineno);
	} else if (!st && e->o->mode == ENC_EMBED) {
		st = tfm_embed(e->c, ids, types, (int64_t)n, e->o->pooling, e->o->normalize, e->vec);
		if (!st)
			st = write_embed(e, lineno);
	} else if (!st) {
		st = tfm_classify(e->c, ids, types, (int64_t)n, lg, e->prob);
		if (!st)
			st = write_classes(e, lg, lineno);
	}
	if (st && st != TFM_E_PIPE && st != TFM_E_IO)
		tfm_adderr(st, "line %lld", (long long)lineno);
	free(ids);
	free(types);
	return st;
}

int run_encode(struct tfm_model *m, const struct enc_opts *o, const char *prompt,
	       const char *file)
{
	struct enc e = { .m = m, .s = tfm_model_spec(m), .tok = tfm_model_tokenizer(m), .o = o };
	FILE *in = NULL;
	int st = TFM_OK;
	if (e.s->family != TFM_FAMILY_ENCODER)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: --%s needs an encoder-only model", e.s->arch,
				  o->mode == ENC_EMBED ? "embed" : o->mode == ENC_FILL ? "fill"
				  : o->mode == ENC_TAG ? "tag" : "classify");
	if (o->mode == ENC_CLASSIFY && e.s->head != TFM_HEAD_CLASSIFIER)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: the model has no sequence-classification "
				  "head", e.s->arch);
	if (o->mode == ENC_TAG && e.s->head != TFM_HEAD_TOKEN)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: the model has no token-classification head",
				  e.s->arch);
	if (o->mode == ENC_CLASSIFY && e.s->n_labels > 4096)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%lld labels (at most 4096)",
				  (long long)e.s->n_labels);
	if (!e.tok)
		return tfm_seterr(TFM_E_FORMAT, "the model has no tokenizer");
	if (o->fmt == ENC_F32 && isatty(STDOUT_FILENO))
		return tfm_seterr(TFM_E_INVAL, "-F f32: refusing to write binary to a terminal");
	e.max = e.s->max_tokens > 0 ? e.s->max_tokens : e.s->n_ctx_train > 0 ? e.s->n_ctx_train : 512;
	if (o->n_ctx > 0 && o->n_ctx < e.max)
		e.max = o->n_ctx;
	int64_t nv = o->mode == ENC_FILL ? e.s->n_vocab : e.s->n_embd;
	int64_t np = o->mode == ENC_FILL ? e.s->n_vocab : e.s->n_labels + 1;
	e.vec = tfm_malloc((size_t)nv * sizeof(float));
	e.prob = tfm_malloc((size_t)np * sizeof(float));
	e.order = tfm_malloc((size_t)np * sizeof(int32_t));
	if (!e.vec || !e.prob || !e.order) {
		st = TFM_E_NOMEM;
		goto out;
	}
	e.rows = e.max > BATCH_ROWS ? e.max : BATCH_ROWS;
	if ((o->mode == ENC_EMBED || o->mode == ENC_CLASSIFY) && !prompt) {
		int64_t w = o->mode == ENC_EMBED ? e.s->n_embd : e.s->n_labels;
		e.bt = tfm_malloc((size_t)e.rows * sizeof *e.bt);
		e.by = tfm_malloc((size_t)e.rows * sizeof *e.by);
		e.bvec = tfm_malloc((size_t)(BATCH_SEQS * w) * sizeof *e.bvec);
		e.bprob = tfm_malloc((size_t)(BATCH_SEQS * w) * sizeof *e.bprob);
		if (!e.bt || !e.by || !e.bvec || !e.bprob) {
			st = TFM_E_NOMEM;
			goto out;
		}
	}
	if (((o->mode == ENC_CLASSIFY || o->mode == ENC_TAG) && (st = load_labels(&e))) ||
	    (st = tfm_ctx_new_batch(&e.c, m, e.max, e.bt ? e.rows : 0)))
		goto out;
	if (prompt) {
		st = one_line(&e, prompt, strlen(prompt), 1);
		goto out;
	}
	in = file ? fopen(file, "r") : stdin;
	if (!in) {
		st = tfm_seterr(TFM_E_OPEN, "%s: %s", file, strerror(errno));
		goto out;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int64_t lineno = 0;
	while (!st && (len = getline(&line, &cap, in)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		st = one_line(&e, line, (size_t)len, ++lineno);
	}
	if (!st && ferror(in))
		st = tfm_seterr(TFM_E_IO, "%s: %s", file ? file : "stdin", strerror(errno));
	if (!st)
		st = batch_flush(&e);
	free(line);
out:
	if (in && in != stdin)
		fclose(in);
	for (int64_t i = 0; e.labels && i < e.s->n_labels; i++)
		free(e.labels[i]);
	free(e.labels);
	free(e.bt);
	free(e.by);
	free(e.bvec);
	free(e.bprob);
	free(e.vec);
	free(e.prob);
	free(e.order);
	tfm_ctx_free(e.c);
	return st;
}
