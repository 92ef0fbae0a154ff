/* test_encoder.c: encoder-only models against transformers.  Each fixture
 * of tests/fixtures/encoders (scripts/make-fixtures-encoders: BERT,
 * RoBERTa, DistilBERT, ELECTRA, ALBERT, ModernBERT, DeBERTa v1 / v2 / v3 with random weights, outputs computed by
 * transformers 4.57.1 in float32) is opened as tfm-run opens it (converted
 * in memory), on the reference and the cpu backend, 1 and 3 threads; the
 * last hidden states, the pooled embedding or pooler output, the
 * classifier logits, the token classifier's and the masked-LM logits must
 * be within 1e-4 of
 * transformers'. */
#include "t.h"
#include "model/model-impl.h"
#include "model/deberta.h"
#include "model-util.h"
#include "format/convert.h"
#include "format/gguf.h"

#include <jansson.h>
#include <unistd.h>

#define TOL 1e-4

/* The pooler output of BERT / RoBERTa base models: tanh(W h0 + b), which
 * tfm_classify computes before its classifier; here from the hidden state. */
static void pooler_out(const struct tfm_model *m, const float *h0, float *out)
{
	int64_t d = m->spec.n_embd;
	float *w = malloc((size_t)(d * d) * sizeof *w);
	for (int64_t o = 0; o < d; o++)
		tfm_k_row_to_f32(m->pooler.type, (const uint8_t *)m->pooler.data +
				 (size_t)o * m->pooler.row_bytes, w + o * d, d);
	for (int64_t o = 0; o < d; o++) {
		double a = m->pooler_b[o];
		for (int64_t i = 0; i < d; i++)
			a += (double)w[o * d + i] * h0[i];
		out[o] = (float)tanh(a);
	}
	free(w);
}

/* tfm_embed_batch of three sequences cut from ids[n] (all, the first half,
 * the last two thirds), mean-pooled, against each alone through tfm_embed:
 * the largest difference, -1 when a call failed. */
static double batch_vs_alone(struct tfm_model *m, const int32_t *ids, const int32_t *types,
			     int64_t n)
{
	int64_t d = tfm_model_spec(m)->n_embd, len[3] = { n, n / 2, n - n / 3 };
	int64_t off[3] = { 0, 0, n / 3 }, tot = len[0] + len[1] + len[2];
	int32_t *bt = malloc((size_t)tot * sizeof *bt), *by = malloc((size_t)tot * sizeof *by);
	float *eb = malloc((size_t)(3 * d) * sizeof *eb), *ea = malloc((size_t)d * sizeof *ea);
	struct tfm_ctx *c = NULL, *c1 = NULL;
	double worst = -1;
	for (int i = 0, t = 0; i < 3; i++)
		for (int64_t j = 0; j < len[i]; j++, t++) {
			bt[t] = ids[off[i] + j];
			by[t] = types[off[i] + j];
		}
	if (tfm_ctx_new(&c, m, tot) || tfm_ctx_new(&c1, m, n) ||
	    tfm_embed_batch(c, bt, by, len, 3, TFM_POOL_MEAN, 0, eb))
		goto out;
	worst = 0;
	for (int i = 0, t = 0; i < 3; t += (int)len[i++]) {
		if (tfm_embed(c1, bt + t, by + t, len[i], TFM_POOL_MEAN, 0, ea)) {
			worst = -1;
			break;
		}
		double e = t_maxdiff(eb + i * d, ea, d);
		worst = e > worst ? e : worst;
	}
out:
	tfm_ctx_free(c);
	tfm_ctx_free(c1);
	free(bt), free(by), free(eb), free(ea);
	return worst;
}

static void one(const char *name, const char *dev, int threads, int *ran)
{
	char *dir = t_path("tests/fixtures/encoders/%s", name);
	char *ip = t_path("%s/inputs.json", dir), *hp = t_path("%s/hidden.f32", dir);
	char *pp = t_path("%s/pooled.f32", dir), *lp = t_path("%s/logits.f32", dir);
	char *sp = t_path("%s/modules.json", dir), *mp = t_path("%s/mlm.f32", dir);
	char *tp = t_path("%s/tokens.f32", dir);
	struct tfm_model_opts o = {.n_threads = threads, .device = dev};
	struct tfm_model *m = NULL;
	struct tfm_ctx *c = NULL;
	json_error_t je;
	json_t *in = json_load_file(ip, 0, &je);
	int32_t ids[64], types[64];
	int n = t_read_ints(json_object_get(in, "ids"), ids, 64);
	t_read_ints(json_object_get(in, "types"), types, 64);
	CHECK(n > 0 && n <= 64);
	CHECK_OK(tfm_model_open(&m, dir, &o));
	if (m)
		CHECK_OK(tfm_ctx_new(&c, m, 0));
	if (!m || !c || n <= 0 || n > 64)
		goto out;
	const struct tfm_spec *s = tfm_model_spec(m);
	int64_t d = s->n_embd;
	size_t nh, np, nl, nm;
	float *hw = t_read_f32(hp, &nh), *pw = t_read_f32(pp, &np), *lw = t_read_f32(lp, &nl);
	float *mw = t_read_f32(mp, &nm);
	double em = -1, et = -1;
	size_t ntk;
	float *tw = t_read_f32(tp, &ntk);
	float *h = malloc((size_t)(n * d) * sizeof *h), *e = malloc((size_t)d * sizeof *e);
	CHECK_MSG(nh == (size_t)(n * d), "%s: hidden.f32 of %zu floats", name, nh);
	CHECK_OK(tfm_encode(c, ids, types, n, h));
	double eh = nh == (size_t)(n * d) ? t_maxdiff(h, hw, n * d) : INFINITY, ep = -1, el = -1;
	CHECK_MSG(eh <= TOL, "%s %s/%d: hidden states differ by %g", name, dev, threads, eh);
	if (np == (size_t)d && !access(sp, R_OK)) {
		/* sentence-transformers directory: the model's own pooling and
		 * Normalize, read from modules.json at conversion */
		CHECK_MSG(s->pooling == TFM_POOL_MEAN && s->normalize, "%s: pooling %d normalize %d",
			  name, s->pooling, s->normalize);
		CHECK_OK(tfm_embed(c, ids, types, n, TFM_POOL_NONE, -1, e));
		ep = t_maxdiff(e, pw, d);
	} else if (np == (size_t)d) {
		CHECK(m->pooler.data != NULL);
		if (m->pooler.data) {
			pooler_out(m, h, e);
			ep = t_maxdiff(e, pw, d);
		}
	}
	if (ep >= 0)
		CHECK_MSG(ep <= TOL, "%s %s/%d: pooled output differs by %g", name, dev, threads, ep);
	double eb = batch_vs_alone(m, ids, types, n);
	CHECK_MSG(eb >= 0 && eb <= 1e-5, "%s %s/%d: a batch's embeddings differ from each "
		  "sequence's alone by %g", name, dev, threads, eb);
	if (ntk > 0) { /* token classification: logits of every token */
		int64_t L = s->n_labels;
		float *lg = malloc((size_t)(n * (L > 0 ? L : 1)) * sizeof *lg);
		CHECK_MSG(L > 0 && ntk == (size_t)(n * L), "%s: tokens.f32 of %zu floats, %lld labels",
			  name, ntk, (long long)L);
		if (L > 0 && ntk == (size_t)(n * L)) {
			CHECK_OK(tfm_tag(c, ids, types, n, lg));
			et = t_maxdiff(lg, tw, n * L);
			CHECK_MSG(et <= TOL, "%s %s/%d: token logits differ by %g", name, dev, threads, et);
		}
		free(lg);
	}
	if (nl > 0) {
		float lg[16], pr[16];
		CHECK_MSG(s->n_labels == (int64_t)nl && nl <= 16, "%s: %lld labels, want %zu", name,
			  (long long)s->n_labels, nl);
		if (s->n_labels == (int64_t)nl && nl <= 16) {
			CHECK_OK(tfm_classify(c, ids, types, n, lg, pr));
			el = t_maxdiff(lg, lw, (int64_t)nl);
			CHECK_MSG(el <= TOL, "%s %s/%d: logits differ by %g", name, dev, threads, el);
			double sum = 0;
			for (size_t i = 0; i < nl; i++) {
				double want = s->multi_label ? 1 / (1 + exp(-(double)lw[i])) : 0;
				if (s->multi_label)
					CHECK_CLOSE(pr[i], want, 1e-5, 0);
				sum += pr[i];
			}
			if (!s->multi_label)
				CHECK_CLOSE(sum, 1.0, 1e-5, 0);
		}
	}
	if (nm > 0) { /* the masked-LM logits at every position */
		int64_t V = s->n_vocab;
		float *lg = malloc((size_t)V * sizeof *lg);
		CHECK_MSG(nm == (size_t)(n * V), "%s: mlm.f32 of %zu floats", name, nm);
		for (int64_t p = 0; p < n && nm == (size_t)(n * V); p++) {
			CHECK_OK(tfm_fill_mask(c, ids, types, n, p, lg));
			double e = t_maxdiff(lg, mw + p * V, V);
			em = e > em ? e : em;
		}
		CHECK_MSG(em >= 0 && em <= TOL, "%s %s/%d: masked-LM logits differ by %g", name, dev,
			  threads, em);
		free(lg);
	}
	fprintf(stderr, "  %-14s %-4s %d thr vs transformers: hidden %.2g (batch %.2g)", name, dev,
		threads, eh, eb);
	if (em >= 0)
		fprintf(stderr, ", mlm %.2g", em);
	if (et >= 0)
		fprintf(stderr, ", token logits %.2g", et);
	if (ep >= 0)
		fprintf(stderr, ", pooled %.2g", ep);
	if (el >= 0)
		fprintf(stderr, ", logits %.2g", el);
	fputc('\n', stderr);
	(*ran)++;
	free(hw), free(pw), free(lw), free(mw), free(tw), free(h), free(e);
out:
	tfm_ctx_free(c);
	tfm_model_close(m);
	json_decref(in);
	free(dir), free(ip), free(hp), free(pp), free(lp), free(sp), free(mp), free(tp);
}

static void t_fixtures(void)
{
	static const char *const names[] = {"bert", "bert-cls3", "roberta", "roberta-multi",
					    "distilbert", "st-mean", "bert-mlm", "roberta-mlm",
					    "distilbert-mlm", "bert-tag", "electra", "electra-cls",
					    "electra-tag", "albert", "albert-cls", "albert-g3",
					    "modernbert", "modernbert-mlm", "modernbert-cls",
					    "modernbert-tag", "modernbert-pair", "electra-mlm", "albert-mlm",
					    "deberta-v3", "deberta-v2-cls", "deberta-v2-tag",
					    "deberta-v3-mlm", "deberta-v2-mlm", "deberta-v2-abs",
					    "deberta-v2-conv", "deberta-v2-conv5", "deberta-v1",
					    "deberta-v1-cls", "deberta-v1-mlm", "deberta-v1-abs",
					    "deberta-v2-mlm-untied", "xlm-roberta-cls", "xlm-roberta-mlm", "modernbert-bpe", "albert-tok", "t5-enc", "t5-enc-gated", "t5-enc-gelu"};
	static const char *const devs[] = {"ref", "cpu"};
	int ran = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		for (int dv = 0; dv < 2; dv++)
			for (int th = 1; th <= 3; th += 2)
				one(names[i], devs[dv], th, &ran);
	CHECK(ran == 172);
}

/* The context's one-sequence contract and the inputs tfm_encode refuses. */
static void t_refusals(void)
{
	struct tfm_model *m = NULL;
	struct tfm_ctx *c = NULL;
	CHECK_OK(tfm_model_open(&m, "tests/fixtures/encoders/roberta", NULL));
	if (!m)
		return;
	CHECK_OK(tfm_ctx_new(&c, m, 8));
	if (!c) {
		tfm_model_close(m);
		return;
	}
	int32_t ids[9] = {0, 5, 6, 7, 8, 9, 10, 11, 12}, types[9] = {0};
	float lg[200], h[9 * 64];
	CHECK_ST(tfm_encode(c, ids, NULL, 9, h), TFM_E_INVAL);   /* longer than the context */
	types[2] = 1;
	CHECK_ST(tfm_encode(c, ids, types, 4, h), TFM_E_INVAL);  /* one token type only */
	ids[3] = 1;
	CHECK_ST(tfm_encode(c, ids, NULL, 4, h), TFM_E_INVAL);   /* RoBERTa's padding token */
	ids[3] = 7;
	CHECK_ST(tfm_eval(c, ids, 4, lg, 0), TFM_E_UNSUPPORTED); /* no LM head */
	CHECK_ST(tfm_classify(c, ids, NULL, 4, lg, NULL), TFM_E_UNSUPPORTED);
	CHECK_ST(tfm_fill_mask(c, ids, NULL, 4, 1, lg), TFM_E_UNSUPPORTED); /* RobertaModel */
	CHECK_ST(tfm_tag(c, ids, NULL, 4, lg), TFM_E_UNSUPPORTED);
	CHECK_OK(tfm_encode(c, ids, NULL, 8, h));
	tfm_ctx_free(c);
	tfm_model_close(m);
}

/* The GGUF of a BERT fixture without its tfm.* keys, as llama.cpp's own
 * converter would leave it: the spec from llama.cpp's bert keys (non-causal,
 * pooling_type) gives the same hidden states and mean-pooled embedding. */
static void t_llamacpp_keys(void)
{
	static const char *const names[] = {"bert", "st-mean", "modernbert"};
	char *dir = t_tmpdir(), *gp = t_path("%s/stripped.gguf", dir);
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		char *d = t_path("tests/fixtures/encoders/%s", names[k]);
		char *hp = t_path("%s/hidden.f32", d), *ip = t_path("%s/inputs.json", d);
		struct tfm_convert *cv = NULL;
		struct tfm_convert_opts co = { .dtype = -1 };
		struct tfm_model *m = NULL;
		struct tfm_ctx *c = NULL;
		CHECK_OK(tfm_convert_open(&cv, d, &co));
		if (cv) {
			struct tfm_gguf *g = tfm_convert_gguf(cv);
			struct tfm_out *out;
			for (int64_t i = tfm_gguf_n_kv(g) - 1; i >= 0; i--)
				if (!strncmp(tfm_gguf_key(g, i), "tfm.", 4))
					tfm_gguf_remove(g, tfm_gguf_key(g, i));
			CHECK_OK(tfm_out_open(&out, gp, 0));
			CHECK_OK(tfm_gguf_write(g, out));
			CHECK_OK(tfm_out_commit(out));
			tfm_convert_close(cv);
			CHECK_OK(tfm_model_open(&m, gp, NULL));
		}
		if (m)
			CHECK_OK(tfm_ctx_new(&c, m, 0));
		json_error_t je;
		json_t *in = json_load_file(ip, 0, &je);
		int32_t ids[64], types[64];
		int n = t_read_ints(json_object_get(in, "ids"), ids, 64);
		t_read_ints(json_object_get(in, "types"), types, 64);
		size_t nh;
		float *hw = t_read_f32(hp, &nh);
		if (c && n > 0 && n <= 64 && nh == (size_t)n * (size_t)tfm_model_spec(m)->n_embd) {
			const struct tfm_spec *s = tfm_model_spec(m);
			float *h = malloc(nh * sizeof *h);
			CHECK(s->family == TFM_FAMILY_ENCODER && s->mask == TFM_MASK_BIDIR &&
			      s->pooling == (k == 1 ? TFM_POOL_MEAN : TFM_POOL_CLS));
			if (k == 2) /* modern-bert: the window pattern and local theta */
				CHECK(s->window == 8 && !s->layer_window[0] && s->layer_window[1] &&
				      s->layer_window[2] && !s->layer_window[3] &&
				      s->rope_theta == 10000.0 && s->rope_theta_local == 500.0);
			CHECK_OK(tfm_encode(c, ids, types, n, h));
			double e = t_maxdiff(h, hw, (int64_t)nh);
			fprintf(stderr, "  llama.cpp keys only %-8s hidden %.2g\n", names[k], e);
			CHECK_MSG(e <= TOL, "%s: llama.cpp keys only: %g", names[k], e);
			if (k == 1) { /* llama.cpp's mean pooling, normalised as its embedding tool does */
				size_t np;
				char *pp = t_path("%s/pooled.f32", d);
				float *pw = t_read_f32(pp, &np), v[64];
				CHECK_OK(tfm_embed(c, ids, types, n, TFM_POOL_NONE, 1, v));
				CHECK(np == (size_t)s->n_embd && s->n_embd <= 64);
				if (np == (size_t)s->n_embd && s->n_embd <= 64)
					CHECK_MSG(t_maxdiff(v, pw, s->n_embd) <= TOL, "%s: pooled", names[k]);
				free(pw), free(pp);
			}
			free(h);
		} else {
			CHECK(0);
		}
		free(hw);
		json_decref(in);
		tfm_ctx_free(c);
		tfm_model_close(m);
		free(d), free(hp), free(ip);
	}
	free(dir), free(gp);
}

/* DeBERTa's relative positions: tfm_deberta_rel_pos against the tensor
 * transformers' build_relative_position makes for 1024 tokens (relpos.json:
 * its first and last query rows, d = -k and 1023 - k), with the deberta-v3
 * fixture's 8 buckets of 64 positions and deberta-v3-base's 256 of 512. */
static void t_deberta_relpos(void)
{
	json_error_t je;
	json_t *j = json_load_file("tests/fixtures/encoders/deberta-v3/relpos.json", 0, &je);
	const char *key;
	json_t *v;
	int n_cfg = 0;
	CHECK_MSG(j != NULL, "relpos.json: %s", je.text);
	json_object_foreach(j, key, v) {
		struct tfm_spec s = {0};
		s.rel_buckets = json_integer_value(json_object_get(v, "buckets"));
		s.rel_max_pos = json_integer_value(json_object_get(v, "max_pos"));
		json_t *first = json_object_get(v, "first"), *last = json_object_get(v, "last");
		int64_t n = (int64_t)json_array_size(first), bad = 0, mx = 0;
		CHECK(n == 1024 && json_array_size(last) == 1024);
		for (int64_t k = 0; k < n; k++) {
			int64_t a = tfm_deberta_rel_pos(&s, -k), b = tfm_deberta_rel_pos(&s, n - 1 - k);
			bad += a != json_integer_value(json_array_get(first, (size_t)k));
			bad += b != json_integer_value(json_array_get(last, (size_t)k));
			mx = b > mx ? b : mx;
		}
		fprintf(stderr, "  relative positions %-8s (%lld buckets, %lld positions): %lld of "
			"%lld differ, largest %lld\n", key, (long long)s.rel_buckets,
			(long long)s.rel_max_pos, (long long)bad, (long long)(2 * n), (long long)mx);
		CHECK_MSG(bad == 0, "%s: %lld relative positions differ", key, (long long)bad);
		n_cfg++;
	}
	CHECK(n_cfg == 2);
	json_decref(j);
}

/* f32 rows [rows][w->in] of a weight */
static float *mat_rows(const struct tfm_mat *w)
{
	float *f = malloc((size_t)(w->in * w->out) * sizeof *f);
	for (int64_t r = 0; r < w->out; r++)
		tfm_k_row_to_f32(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes,
				 f + r * w->in, w->in);
	return f;
}

/* dst[rows][out] = src[rows][in] W^T + b, in double */
static void proj(float *dst, const float *src, int64_t rows, const struct tfm_mat *w,
		 const float *b)
{
	float *wf = mat_rows(w);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t o = 0; o < w->out; o++) {
			double a = b ? b[o] : 0;
			for (int64_t i = 0; i < w->in; i++)
				a += (double)src[r * w->in + i] * wf[o * w->in + i];
			dst[r * w->out + o] = (float)a;
		}
	free(wf);
}

/* The disentangled attention of deberta.c (position rows projected for the
 * rows reached, three matmuls and gathers per head) against the scalar
 * reference (every term a dot product of its own, the full position
 * tables), layer 0 of six fixtures over a whole context of random inputs
 * (24 to 64 tokens: log buckets, clamped rows, c2p and p2c alone and
 * together, v1's split in_proj and pos_proj without a bias), ref and cpu,
 * 1 and 3 threads. */
static void t_deberta_ref(void)
{
	static const char *const names[] = {"deberta-v3", "deberta-v2-cls", "deberta-v2-mlm",
					    "deberta-v2-tag", "deberta-v1", "deberta-v1-cls"};
	static const char *const devs[] = {"ref", "cpu"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		for (int dv = 0; dv < 2; dv++)
			for (int th = 1; th <= 3; th += 2) {
				char *dir = t_path("tests/fixtures/encoders/%s", names[i]);
				struct tfm_model_opts o = {.n_threads = th, .device = devs[dv]};
				struct tfm_model *m = NULL;
				struct tfm_ctx *c = NULL;
				CHECK_OK(tfm_model_open(&m, dir, &o));
				if (m)
					CHECK_OK(tfm_ctx_new(&c, m, 0));
				free(dir);
				if (!c) {
					tfm_model_close(m);
					continue;
				}
				tfm_ctx_set_par_min(c, 0); /* the threaded kernels too */
				const struct tfm_spec *s = &m->spec;
				struct tfm_layer *L = &m->layers[0];
				int64_t n = c->n_batch, d = s->n_embd, qd = m->q_dim, R = 2 * s->rel_span;
				uint32_t x = 12345;
				for (int64_t k = 0; k < n * d; k++) {
					x = x * 1664525u + 1013904223u;
					c->xn[k] = (float)((x >> 8) / 16777216.0 * 4 - 2);
				}
				tfm_deberta_attention(c, 0, n);
				float *got = malloc((size_t)(n * qd) * sizeof *got);
				float *want = malloc((size_t)(n * qd) * sizeof *want);
				float *pk = malloc((size_t)(R * qd) * sizeof *pk);
				float *pq = malloc((size_t)(R * qd) * sizeof *pq);
				int32_t *c2p = malloc((size_t)(2 * n) * sizeof *c2p);
				int32_t *p2c = malloc((size_t)(2 * n) * sizeof *p2c);
				memcpy(got, c->att, (size_t)(n * qd) * sizeof *got);
				if (s->rel_c2p)
					proj(pk, m->rel_emb, R, s->rel_share_key ? &L->wk : &L->pos_k,
					     s->rel_share_key ? L->bk : L->pos_k_b);
				if (s->rel_p2c)
					proj(pq, m->rel_emb, R, s->rel_share_key ? &L->wq : &L->pos_q,
					     s->rel_share_key ? L->bq : L->pos_q_b);
				for (int64_t dd = -(n - 1); dd < n; dd++) {
					int64_t r = tfm_deberta_rel_pos(s, dd);
					int64_t a = r + s->rel_span, b = -r + s->rel_span;
					c2p[dd + n - 1] = (int32_t)(a < 0 ? 0 : a >= R ? R - 1 : a);
					p2c[dd + n - 1] = (int32_t)(b < 0 ? 0 : b >= R ? R - 1 : b);
				}
				tfm_deberta_attn_ref(want, c->q, c->k, c->v, s->rel_c2p ? pk : NULL,
						     s->rel_p2c ? pq : NULL, c2p, p2c, n, s->n_head,
						     m->head_dim, m->attn_scale);
				double e = t_maxdiff(got, want, n * qd);
				fprintf(stderr, "  disentangled attention %-14s %s %d thr, %lld tokens: "
					"vs reference %.2g\n", names[i], devs[dv], th, (long long)n, e);
				CHECK_MSG(e <= 1e-5, "%s %s/%d: %g", names[i], devs[dv], th, e);
				free(got), free(want), free(pk), free(pq), free(c2p), free(p2c);
				tfm_ctx_free(c);
				tfm_model_close(m);
			}
}

static const struct t_case t_cases[] = {
	{"deberta_relpos", t_deberta_relpos},
	{"deberta_ref", t_deberta_ref},
	{"llamacpp_keys", t_llamacpp_keys},
	{"fixtures", t_fixtures},
	{"refusals", t_refusals},
};
T_MAIN(t_cases)
