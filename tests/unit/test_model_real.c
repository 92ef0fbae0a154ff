/* test_model_real.c: the executor on real weights and other programs'
 * outputs: stories260K read straight from its llama2.c file (greedy text
 * equal to llama2.c's, prefill equal to decode, thread counts), the Hugging
 * Face fixtures against transformers' logits, and tfm_model_open end to end
 * (the converter, GGUF files, --set). */
#include "t.h"
#include "model/model-impl.h"
#include "format/hfmap.h"
#include "format/convert.h"
#include "format/config-json.h"
#include "format/gguf.h"
#include "model-util.h"
#include "model/mamba.h"

#include <dirent.h>
#include <math.h>
#include <unistd.h>

/* ---- stories260K: a real model, read here straight from the llama2.c file
 * (7 int32: dim, hidden, layers, heads, kv heads, vocab, seq_len; then f32
 * tables in run.c's order), so this test needs no importer ---- */

struct l2c {
	struct tfm_blob blob;
	struct tfm_spec s;
	struct tfm_model_tensor t[64];
	char names[64][48];
	int nt;
};

static void l2c_add(struct l2c *c, const float **p, const char *name, int64_t ne0, int64_t ne1)
{
	struct tfm_model_tensor *t = &c->t[c->nt];
	snprintf(c->names[c->nt], sizeof c->names[0], "%s", name);
	t->name = c->names[c->nt++];
	t->type = TFM_TYPE_F32;
	t->n_dims = ne1 > 1 ? 2 : 1;
	t->ne[0] = ne0, t->ne[1] = ne1, t->ne[2] = t->ne[3] = 1;
	t->data = *p;
	*p += ne0 * ne1;
}

static int l2c_open(struct l2c *c, const char *path)
{
	memset(c, 0, sizeof *c);
	if (tfm_blob_open(&c->blob, path))
		return -1;
	int32_t h[7];
	memcpy(h, c->blob.data, sizeof h);
	int64_t d = h[0], ff = h[1], L = h[2], H = h[3], KV = h[4], V = h[5] < 0 ? -h[5] : h[5];
	int64_t hd = d / H, kvd = KV * hd;
	struct tfm_spec *s = &c->s;
	t_base_spec(s);
	strcpy(s->arch, "llama");
	s->n_embd = d, s->n_ff = ff, s->n_layer = L, s->n_head = H, s->n_head_kv = KV;
	s->head_dim = hd, s->n_vocab = V, s->n_ctx_train = h[6], s->tied_output = h[5] > 0;
	const float *p = (const float *)(c->blob.data + sizeof h);
	char n[48];
	l2c_add(c, &p, "token_embd.weight", d, V);
	/* per kind, all layers in a row */
	static const char *const kinds[] = {"attn_norm", "attn_q", "attn_k", "attn_v",
					    "attn_output", "ffn_norm", "ffn_gate", "ffn_down",
					    "ffn_up"};
	int64_t shape[][2] = {{d, 1}, {d, d}, {d, kvd}, {d, kvd}, {d, d}, {d, 1}, {d, ff},
			      {ff, d}, {d, ff}};
	for (int k = 0; k < 9; k++)
		for (int64_t l = 0; l < L; l++) {
			snprintf(n, sizeof n, "blk.%lld.%s.weight", (long long)l, kinds[k]);
			l2c_add(c, &p, n, shape[k][0], shape[k][1]);
		}
	l2c_add(c, &p, "output_norm.weight", d, 1);
	p += h[6] * hd; /* freq_cis_real, freq_cis_imag: RoPE tables we compute */
	if (h[5] < 0)
		l2c_add(c, &p, "output.weight", d, V);
	return (const uint8_t *)p <= c->blob.data + c->blob.size ? 0 : -1;
}

static void t_stories260k(void)
{
	char *path = t_path("%s/models/stories260K/stories260K.bin", t_shared());
	char *tpath = t_path("%s/models/stories260K/tok512.bin", t_shared());
	char *gpath = t_path("%s/models/stories260K/greedy-once-upon-a-time.txt", t_shared());
	struct l2c c;
	struct tfm_blob tb, gb;
	struct tfm_tokenizer *tok = NULL;
	struct tfm_model *m;
	struct tfm_ctx *ctx;
	CHECK(l2c_open(&c, path) == 0);
	CHECK_OK(tfm_blob_open(&tb, tpath));
	CHECK_OK(tfm_blob_open(&gb, gpath));
	CHECK_OK(tfm_tokenizer_from_llama2c(&tok, tb.data, tb.size, 512));
	CHECK_OK(tfm_model_new(&m, &c.s, c.t, c.nt, NULL));
	CHECK_OK(tfm_ctx_new(&ctx, m, 256));
	if (!tok || !m || !ctx)
		return;
	/* run.c -t 0 -n 256 -i "Once upon a time": 256 positions, prompt forced */
	int32_t *prompt, seq[260];
	size_t np;
	CHECK_OK(tfm_tokenize(tok, "Once upon a time", 16, 1, &prompt, &np));
	float *lg = malloc(256 * 512 * sizeof *lg), *all = malloc(256 * 512 * sizeof *all);
	int64_t n = 0;
	seq[n++] = prompt[0];
	int bad = 0;
	for (int64_t pos = 0; pos < 256; pos++) {
		bad += tfm_eval(ctx, &seq[pos], 1, lg + pos * 512, 0) != TFM_OK;
		int32_t next = 0;
		for (int32_t v = 1; v < 512; v++)
			if (lg[pos * 512 + v] > lg[pos * 512 + next])
				next = v;
		if ((size_t)pos + 1 < np)
			next = prompt[pos + 1];
		seq[n++] = next;
		if (next == 1)
			break;
	}
	CHECK(bad == 0);
	char *text;
	size_t len;
	CHECK_OK(tfm_detokenize(tok, seq + 1, (size_t)n - 1, &text, &len));
	size_t glen = gb.size;
	while (glen && (gb.data[glen - 1] == '\n' || gb.data[glen - 1] == ' '))
		glen--;
	CHECK_MSG(len == glen && !memcmp(text, gb.data, glen), "greedy text differs:\n%s", text);
	/* prefill of the same 256 tokens gives the decode logits */
	tfm_ctx_reset(ctx);
	CHECK_OK(tfm_eval(ctx, seq, 256, all, 1));
	double dd = t_maxdiff(all, lg, 256 * 512);
	fprintf(stderr, "  stories260K: %lld tokens, greedy text %s llama2.c's, prefill-decode %.2g\n",
		(long long)n, len == glen && !memcmp(text, gb.data, glen) ? "equals" : "DIFFERS from", dd);
	CHECK_MSG(dd < 1e-4, "prefill vs decode %g", dd);
	/* and 2 threads (forced onto these small matrices) change no bit */
	struct tfm_model_opts o2 = {.n_threads = 2};
	struct tfm_model *m2;
	struct tfm_ctx *c2;
	CHECK_OK(tfm_model_new(&m2, &c.s, c.t, c.nt, &o2));
	CHECK_OK(tfm_ctx_new(&c2, m2, 256));
	tfm_ctx_set_par_min(c2, 0);
	int same = 1;
	for (int64_t pos = 0; pos < 256; pos++) {
		same &= tfm_eval(c2, &seq[pos], 1, all, 0) == TFM_OK;
		same &= !memcmp(all, lg + pos * 512, 512 * sizeof *all);
	}
	CHECK_MSG(same, "decode logits differ with 2 threads");
	tfm_ctx_free(c2);
	tfm_model_close(m2);
	free(text), free(prompt), free(lg), free(all);
	tfm_ctx_free(ctx);
	tfm_model_close(m);
	tfm_tokenizer_free(tok);
	tfm_blob_close(&tb), tfm_blob_close(&gb), tfm_blob_close(&c.blob);
	free(path), free(tpath), free(gpath);
}

/* ---- the Hugging Face fixtures (tests/fixtures, made by
 * scripts/make-fixtures with transformers): the checkpoint through the
 * library's reader, the spec from config.json, names and layouts through
 * hfmap (what the converter does), then logits against transformers' ---- */

/* cfg: a config.json to use instead of the checkpoint's (NULL: its own). */
static int fixture_model(const char *dir, const char *cfg, struct tfm_spec *s,
			 struct tfm_model **m, float ***bufs, int64_t *nbufs)
{
	struct tfm_ckpt *c;
	int st = tfm_ckpt_open(&c, dir, NULL);
	if (st)
		return st;
	json_t *alt = NULL;
	if (cfg) {
		json_error_t je;
		alt = json_load_file(cfg, 0, &je);
		if (!alt) {
			tfm_ckpt_close(c);
			return tfm_seterr(TFM_E_FORMAT, "%s: %s", cfg, je.text);
		}
	}
	st = tfm_spec_from_config(s, alt ? alt : c->config);
	json_decref(alt);
	if (st) {
		tfm_ckpt_close(c);
		return st;
	}
	struct tfm_model_tensor *t = calloc((size_t)c->n_tensors * 2, sizeof *t);
	float **b = calloc((size_t)c->n_tensors * 3, sizeof *b);
	int64_t nt = 0, nb = 0;
	for (int64_t i = 0; i < c->n_tensors && !st; i++) {
		const struct tfm_ckpt_tensor *ct = &c->tensors[i];
		char name[128];
		unsigned fl = 0;
		if ((st = tfm_hfmap_name(s->arch, ct->name, name, sizeof name, &fl)))
			break;
		if (fl & TFM_HFMAP_SKIP)
			continue;
		int64_t ne0 = ct->ne[0], ne1 = 1;
		for (int d = 1; d < ct->n_dims; d++)
			ne1 *= ct->ne[d];
		float *f = malloc((size_t)(ne0 * ne1) * sizeof *f), *scr = malloc((size_t)(ne0 * ne1) * sizeof *f);
		b[nb++] = f;
		if (fl & TFM_HFMAP_EXPERTS_T) {
			/* llama4: [E][a][b] (x @ W) -> per expert [b][a], gate_up split
			 * into its halves: written here independently of convert.c */
			int64_t E = ct->ne[2], a = ct->ne[1], bb = ct->ne[0];
			int split = (fl & TFM_HFMAP_SPLIT_GATE_UP) != 0, nh = split ? 2 : 1;
			st = tfm_type_to_f32(ct->type, ct->data, scr, ne0 * ne1);
			for (int h = 0; h < nh && !st; h++) {
				int64_t w = bb / nh;
				float *o = h ? malloc((size_t)(E * w * a) * sizeof *o) : f;
				if (h)
					b[nb++] = o;
				for (int64_t e = 0; e < E; e++)
					for (int64_t j = 0; j < w; j++)
						for (int64_t i = 0; i < a; i++)
							o[(e * w + j) * a + i] = scr[(e * a + i) * bb + h * w + j];
				char nm[128];
				snprintf(nm, sizeof nm, "%s", name);
				if (h) { /* blk.N.ffn_gate_exps.weight -> ffn_up_exps */
					char *g = strstr(nm, "ffn_gate_exps");
					snprintf(nm, sizeof nm, "%.*sffn_up_exps.weight", (int)(g - nm), name);
				}
				t[nt].name = strdup(nm);
				t[nt].n_dims = 3;
				t[nt].ne[0] = a, t[nt].ne[1] = w, t[nt].ne[2] = E, t[nt].ne[3] = 1;
				t[nt++].data = o;
			}
			free(scr);
			continue;
		}
		if (!(st = tfm_type_to_f32(ct->type, ct->data, f, ne0 * ne1)))
			st = tfm_hfmap_transform(fl, s, f, ne0, ne1, scr);
		free(scr);
		if (fl & TFM_HFMAP_TRANSPOSE) {
			int64_t x = ne0;
			ne0 = ne1, ne1 = x;
		}
		if (fl & TFM_HFMAP_PERMUTE_Q)
			s->rope_interleaved = 1; /* llama.cpp's pairwise layout */
		if (fl & TFM_HFMAP_ADD_ONE)
			s->norm_plus_one = 0;   /* gemma: 1 + w stored */
		if (fl & TFM_HFMAP_EXPERT) { /* stack into {ne0, ne1, n_expert} */
			int64_t j = 0;
			while (j < nt && strcmp(t[j].name, name))
				j++;
			if (j == nt) {
				t[nt].name = strdup(name);
				t[nt].n_dims = 3;
				t[nt].ne[0] = ne0, t[nt].ne[1] = ne1, t[nt].ne[2] = s->n_expert, t[nt].ne[3] = 1;
				b[nb++] = calloc((size_t)(ne0 * ne1 * s->n_expert), sizeof(float));
				t[nt++].data = b[nb - 1];
			}
			memcpy((float *)t[j].data + TFM_HFMAP_EXPERT_ID(fl) * ne0 * ne1, f,
			       (size_t)(ne0 * ne1) * sizeof *f);
			continue;
		}
		t[nt].name = strdup(name);
		t[nt].n_dims = ne1 > 1 ? 2 : 1;
		t[nt].ne[0] = ne0, t[nt].ne[1] = ne1, t[nt].ne[2] = t[nt].ne[3] = 1;
		t[nt++].data = f;
	}
	if (!st)
		st = tfm_model_new(m, s, t, nt, NULL);
	for (int64_t i = 0; i < nt; i++)
		free((char *)t[i].name);
	free(t);
	tfm_ckpt_close(c);
	*bufs = b;
	*nbufs = nb;
	return st;
}

static void t_fixtures(void)
{
	/* the knobs this executor refuses, each with its fixture */
	static const char *const refused[] = {"none"};
	struct tfm_blob mb;
	json_error_t je;
	CHECK_OK(tfm_blob_open(&mb, "tests/fixtures/MANIFEST.json"));
	json_t *man = json_loadb((const char *)mb.data, mb.size, 0, &je);
	tfm_blob_close(&mb);
	json_t *fx = json_object_get(man, "fixtures");
	CHECK(json_object_size(fx) >= 20);
	const char *key;
	json_t *val;
	int ran = 0;
	int ran_v5 = 0;
	json_object_foreach(fx, key, val)
	for (int v5 = 0; v5 < 2; v5++) {
		/* config-v5.json: the same config as transformers 5 saves it
		 * (rope_parameters, renamed keys), made by scripts/make-configs-v5 */
		char *dir = t_path("tests/fixtures/%s", key);
		char *cfg5 = t_path("%s/config-v5.json", dir);
		if (v5 && access(cfg5, R_OK)) {
			free(dir), free(cfg5);
			continue;
		}
		const char *lay = v5 ? "(v5 config)" : "";
		struct tfm_spec s;
		struct tfm_model *m = NULL;
		float **bufs = NULL;
		int64_t nb = 0;
		int st = fixture_model(dir, v5 ? cfg5 : NULL, &s, &m, &bufs, &nb);
		free(cfg5);
		int want_refusal = 0;
		for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
			want_refusal |= !strcmp(key, refused[i]);
		if (want_refusal) {
			CHECK_MSG(st == TFM_E_UNSUPPORTED, "%s: want a refusal, got %s", key,
				  tfm_strstatus(st));
			fprintf(stderr, "  fixture %-20s refused: %s\n", key, tfm_errmsg());
		} else {
			CHECK_MSG(st == TFM_OK, "%s: %s", key, tfm_errmsg());
		}
		if (m) {
			/* input_ids.json: {"prefill": [...], "decode": [...]} */
			char *ip = t_path("%s/input_ids.json", dir), *pp = t_path("%s/prefill.f32", dir);
			char *dp = t_path("%s/decode.f32", dir);
			json_t *ids = json_load_file(ip, 0, &je);
			json_t *pa = json_object_get(ids, "prefill"), *da = json_object_get(ids, "decode");
			int64_t np = (int64_t)json_array_size(pa), nd = (int64_t)json_array_size(da);
			int64_t V = s.n_vocab;
			int32_t tok[64];
			for (int64_t i = 0; i < np + nd && i < 64; i++)
				tok[i] = (int32_t)json_integer_value(json_array_get(i < np ? pa : da,
										    (size_t)(i < np ? i : i - np)));
			size_t npw = 0, ndw = 0;
			float *pw = t_read_f32(pp, &npw), *dw = t_read_f32(dp, &ndw);
			float *lg = malloc((size_t)(np * V) * sizeof *lg);
			struct tfm_ctx *c;
			CHECK(np > 0 && nd > 0 && np + nd <= 64 && pw && dw &&
			      npw == (size_t)(np * V) && ndw == (size_t)(nd * V));
			CHECK_OK(tfm_ctx_new(&c, m, 64));
			if (c && pw && dw && npw == (size_t)(np * V) && ndw == (size_t)(nd * V)) {
				CHECK_OK(tfm_eval(c, tok, np, lg, 1));
				double ep = t_maxdiff(lg, pw, np * V), ed = 0;
				for (int64_t i = 0; i < nd; i++) {
					CHECK_OK(tfm_eval(c, tok + np + i, 1, lg, 0));
					double e = t_maxdiff(lg, dw + i * V, V);
					ed = e > ed ? e : ed;
				}
				fprintf(stderr, "  fixture %-20s vs transformers: prefill %.2g, decode %.2g %s\n",
					key, ep, ed, lay);
				CHECK_MSG(ep < 1e-4 && ed < 1e-4, "%s%s: prefill %g, decode %g", key, lay,
					  ep, ed);
				ran++;
				ran_v5 += v5;
			}
			tfm_ctx_free(c);
			tfm_model_close(m);
			json_decref(ids);
			free(pw), free(dw), free(lg), free(ip), free(pp), free(dp);
		}
		for (int64_t i = 0; i < nb; i++)
			free(bufs[i]);
		free(bufs);
		free(dir);
	}
	CHECK(ran >= 18);
	CHECK_MSG(ran_v5 >= 20, "%d fixtures with a transformers 5 config", ran_v5);
	json_decref(man);
}

/* Recurrent state: the fixtures' 28 tokens in one call against the same
 * tokens in uneven chunks (1, 2 and 3 tokens: fewer than d_conv - 1, so the
 * conv state shifts within itself, then the rest one by one, decode), within
 * 1e-5 relative (per token, in the max norm of the logit vector) on the ref
 * backend, whose sums run in one order for any batch, so that this measures
 * the state alone; on the cpu backend within 1e-4: a GEMM for several
 * tokens and a GEMV for one sum in other orders, and the deep random
 * hybrids amplify that (transformers' own decode of bamba is 3.8e-5 from its
 * one-call forward).  A rewind into the past is refused (a state has no
 * history), and a reset starts again from a zero state. */
static void t_ssm_state(void)
{
	static const char *const names[] = {"mamba", "mamba-b", "falcon_mamba", "mamba2", "mamba2-b",
					    "rwkv", "rwkv-b", "jamba", "jamba-b", "bamba", "bamba-b",
					    "qwen3_next", "qwen3_next-b", "xlstm", "xlstm-b"};
	static const int64_t chunks[] = {1, 2, 3, 7, 1, 1, 1};
	for (size_t f = 0; f < 2 * (sizeof names / sizeof names[0]); f++) {
		int ref = f % 2 == 0;
		char *dir = t_path("tests/fixtures/%s", names[f / 2]);
		char *ip = t_path("%s/input_ids.json", dir);
		struct tfm_spec s;
		struct tfm_model *m = NULL;
		json_error_t je;
		struct tfm_model_opts o = {.n_threads = 2, .device = ref ? "ref" : "cpu"};
		CHECK_OK(tfm_model_open(&m, dir, &o));
		if (m)
			s = *tfm_model_spec(m);
		json_t *ids = json_load_file(ip, 0, &je);
		json_t *pa = json_object_get(ids, "prefill"), *da = json_object_get(ids, "decode");
		int64_t np = (int64_t)json_array_size(pa), n = np + (int64_t)json_array_size(da);
		int32_t tok[64];
		CHECK(m && n > 16 && n <= 64);
		for (int64_t i = 0; i < n && i < 64; i++)
			tok[i] = (int32_t)json_integer_value(json_array_get(i < np ? pa : da,
								    (size_t)(i < np ? i : i - np)));
		struct tfm_ctx *c = NULL;
		if (m && n > 16 && n <= 64 && !tfm_ctx_new(&c, m, 64)) {
			int64_t V = s.n_vocab;
			float *one = malloc((size_t)(n * V) * sizeof *one);
			float *part = malloc((size_t)(n * V) * sizeof *part);
			CHECK_OK(tfm_eval(c, tok, n, one, 1));
			tfm_ctx_reset(c);
			int64_t done = 0;
			for (size_t k = 0; done < n; k++) {
				int64_t b = k < sizeof chunks / sizeof chunks[0] ? chunks[k] : 1;
				if (b > n - done)
					b = n - done;
				CHECK_OK(tfm_eval(c, tok + done, b, part + done * V, 1));
				done += b;
			}
			/* per token, max |difference| over max |logit| (the
			 * relative error of the logit vector in the max norm):
			 * element-wise relative errors of logits near 0 measure
			 * only the order of float sums, which differs between a
			 * GEMV (one token) and a GEMM (several) */
			double worst = 0;
			for (int64_t t = 0; t < n; t++) {
				double d = 0, mx = 1e-30;
				for (int64_t i = t * V; i < (t + 1) * V; i++) {
					double e = fabs((double)part[i] - one[i]);
					d = e > d ? e : d;
					mx = fabs((double)one[i]) > mx ? fabs((double)one[i]) : mx;
				}
				worst = d / mx > worst ? d / mx : worst;
			}
			fprintf(stderr, "  %-14s %-3s chunked prefill + decode vs one call: %.2g relative\n",
				names[f / 2], o.device, worst);
			CHECK_MSG(worst <= (ref ? 1e-5 : 1e-4), "%s (%s): chunked vs one call %g",
				  names[f / 2], o.device, worst);
			/* a state, what the spec predicts at any context (with
			 * 0 bytes per cached element the spec counts the state
			 * alone); a KV cache only for attention layers (jamba's),
			 * state and cache together what the spec predicts */
			int attn = 0;
			for (int64_t l = 0; l < s.n_layer; l++)
				attn += s.layer_kind[l] == TFM_LAYER_ATTN;
			CHECK(attn ? tfm_ctx_kv_bytes(c) > 0 : tfm_ctx_kv_bytes(c) == 0);
			CHECK_MSG(tfm_ctx_state_bytes(c) > 0 &&
				  tfm_ctx_state_bytes(c) == (int64_t)tfm_spec_kv_bytes(&s, 0, 64) &&
				  tfm_ctx_state_bytes(c) == (int64_t)tfm_spec_kv_bytes(&s, 0, 1 << 20) &&
				  tfm_ctx_state_bytes(c) + tfm_ctx_kv_bytes(c) ==
				  (int64_t)tfm_spec_kv_bytes(&s, 4, 64),
				  "%s: state %lld + KV %lld, spec %g", names[f / 2],
				  (long long)tfm_ctx_state_bytes(c), (long long)tfm_ctx_kv_bytes(c),
				  tfm_spec_kv_bytes(&s, 4, 64));
			CHECK(tfm_ctx_rewind(c, n - 1) == TFM_E_UNSUPPORTED);
			CHECK(strstr(tfm_errmsg(), "recurrent state") != NULL);
			CHECK_OK(tfm_ctx_rewind(c, n)); /* nothing to undo */
			tfm_ctx_reset(c);
			CHECK_OK(tfm_eval(c, tok, n, part, 1));
			CHECK_MSG(t_maxdiff(part, one, n * V) == 0, "%s: reset keeps state", names[f / 2]);
			free(one), free(part);
		}
		tfm_ctx_free(c);
		tfm_model_close(m);
		json_decref(ids);
		free(ip), free(dir);
	}
}

/* MLA's latent cache (mla_attention): the context allocates exactly what
 * the spec counts, n_layer (kv_lora + rope) elements per token; prefill in
 * one call and token by token agree within 1e-5 relative (per token, max
 * norm) on ref and cpu; an f16 cache stays near; a V type of its own is
 * refused (the values live in the key rows). */
static void t_mla_cache(void)
{
	static const char *const names[] = {"deepseek_v2", "deepseek_v2-groups",
					    "deepseek_v2-lite", "deepseek_v3"};
	static const char *const devs[] = {"ref", "cpu"};
	enum { N = 19 };
	for (size_t f = 0; f < sizeof names / sizeof names[0]; f++)
		for (int dv = 0; dv < 2; dv++) {
			char *dir = t_path("tests/fixtures/%s", names[f]);
			struct tfm_model_opts o = {.n_threads = 2, .device = devs[dv]};
			struct tfm_model *m = NULL, *m16 = NULL;
			struct tfm_ctx *c = NULL, *c16 = NULL;
			CHECK_OK(tfm_model_open(&m, dir, &o));
			if (m)
				CHECK_OK(tfm_ctx_new(&c, m, 64));
			if (!c) {
				tfm_model_close(m);
				free(dir);
				continue;
			}
			const struct tfm_spec *s = tfm_model_spec(m);
			int64_t V = s->n_vocab, w = s->kv_lora_rank + s->qk_rope_dim;
			CHECK_MSG(tfm_ctx_kv_bytes(c) == s->n_layer * 64 * w * 4 &&
				  tfm_ctx_kv_bytes(c) == (int64_t)tfm_spec_kv_bytes(s, 4, 64),
				  "%s: context KV %lld, spec %g, latent %lld", names[f],
				  (long long)tfm_ctx_kv_bytes(c), tfm_spec_kv_bytes(s, 4, 64),
				  (long long)(s->n_layer * 64 * w * 4));
			int32_t tok[N];
			for (int i = 0; i < N; i++)
				tok[i] = (int32_t)((i * 37 + 5) % V);
			float *one = malloc((size_t)(N * V) * sizeof *one);
			float *part = malloc((size_t)(N * V) * sizeof *part);
			CHECK_OK(tfm_eval(c, tok, N, one, 1));
			tfm_ctx_reset(c);
			for (int i = 0; i < N; i++)
				CHECK_OK(tfm_eval(c, tok + i, 1, part + i * V, 1));
			double worst = 0;
			for (int t = 0; t < N; t++) {
				double d = 0, mx = 1e-30;
				for (int64_t i = t * V; i < (t + 1) * V; i++) {
					d = fmax(d, fabs((double)part[i] - one[i]));
					mx = fmax(mx, fabs((double)one[i]));
				}
				worst = fmax(worst, d / mx);
			}
			CHECK_MSG(worst <= 1e-5, "%s %s: prefill vs decode %g", names[f], devs[dv], worst);
			/* f16 latent rows: near the f32 cache */
			o.k_type = o.v_type = TFM_TYPE_F16;
			CHECK_OK(tfm_model_open(&m16, dir, &o));
			if (m16 && !tfm_ctx_new(&c16, m16, 64)) {
				CHECK(tfm_ctx_kv_bytes(c16) == s->n_layer * 64 * w * 2);
				CHECK_OK(tfm_eval(c16, tok, N, part, 1));
				double e16 = t_maxdiff(part, one, N * V);
				CHECK_MSG(e16 < 1e-2, "%s %s: f16 latent cache off by %g", names[f],
					  devs[dv], e16);
				fprintf(stderr, "  %-18s %s latent cache %lld B/token: prefill vs decode "
					"%.2g, f16 cache %.2g\n", names[f], devs[dv],
					(long long)(s->n_layer * w * 4), worst, e16);
			}
			tfm_ctx_free(c16);
			tfm_model_close(m16);
			m16 = NULL;
			o.v_type = TFM_TYPE_F32; /* V apart from K: refused */
			CHECK(tfm_model_open(&m16, dir, &o) == TFM_E_UNSUPPORTED);
			CHECK(strstr(tfm_errmsg(), "one latent cache") != NULL);
			tfm_model_close(m16);
			free(one), free(part);
			tfm_ctx_free(c);
			tfm_model_close(m);
			free(dir);
		}
}

/* tfm_model_open end to end: the llama2.c checkpoint through the converter
 * (with its tokenizer), and each runnable fixture directory; the logits
 * equal the in-memory paths above.  Then a GGUF file (written from the
 * converted model) opened in place, with --set overrides. */
static void t_open(void)
{
	char *path = t_path("%s/models/stories260K/stories260K.bin", t_shared());
	char *vocab = t_path("%s/models/stories260K/tok512.bin", t_shared());
	struct tfm_model_opts o = {.vocab = vocab};
	struct tfm_model *m;
	struct tfm_ctx *c;
	CHECK_OK(tfm_model_open(&m, path, &o));
	if (!m)
		return;
	const struct tfm_spec *s = tfm_model_spec(m);
	CHECK(s->n_vocab == 512 && s->n_layer == 5 && s->n_head_kv == 4 && s->rope_interleaved);
	CHECK(tfm_model_tokenizer(m) != NULL);
	CHECK(tfm_model_gguf(m) != NULL);
	/* the same logits as the direct reader of t_stories260k */
	struct l2c l;
	struct tfm_model *m2;
	struct tfm_ctx *c2;
	CHECK(l2c_open(&l, path) == 0);
	CHECK_OK(tfm_model_new(&m2, &l.s, l.t, l.nt, NULL));
	CHECK_OK(tfm_ctx_new(&c, m, 64));
	CHECK_OK(tfm_ctx_new(&c2, m2, 64));
	int32_t tok[12] = {1, 403, 407, 261, 378, 43, 8, 505, 2, 3, 100, 511};
	float a[12 * 512], b[12 * 512];
	CHECK_OK(tfm_eval(c, tok, 12, a, 1));
	CHECK_OK(tfm_eval(c2, tok, 12, b, 1));
	CHECK_MSG(!memcmp(a, b, sizeof a), "open vs direct: %g", t_maxdiff(a, b, 12 * 512));
	/* write the converted model as a GGUF file and open that in place */
	char *dir = t_tmpdir(), *gp = t_path("%s/stories.gguf", dir);
	struct tfm_out *out;
	CHECK_OK(tfm_out_open(&out, gp, 0));
	CHECK_OK(tfm_gguf_write(tfm_model_gguf(m), out));
	CHECK_OK(tfm_out_commit(out));
	struct tfm_model *m3;
	struct tfm_ctx *c3;
	CHECK_OK(tfm_model_open(&m3, gp, NULL));
	if (m3) {
		CHECK_OK(tfm_ctx_new(&c3, m3, 64));
		CHECK_OK(tfm_eval(c3, tok, 12, b, 1));
		CHECK(!memcmp(a, b, sizeof a));
		CHECK(tfm_model_tokenizer(m3) != NULL);
		tfm_ctx_free(c3);
		tfm_model_close(m3);
	}
	/* --set overrides go through the executor's checks */
	const char *set1[] = {"attn.window=4"};
	struct tfm_model_opts o2 = {.set = set1, .n_set = 1};
	CHECK_OK(tfm_model_open(&m3, gp, &o2));
	if (m3) {
		CHECK(tfm_model_spec(m3)->window == 4);
		tfm_model_close(m3);
	}
	const char *set2[] = {"rope.scaling=ntk", "rope.factor=2"};
	struct tfm_model_opts o3 = {.set = set2, .n_set = 2};
	CHECK_ST(tfm_model_open(&m3, gp, &o3), TFM_E_UNSUPPORTED);
	CHECK_MSG(strstr(tfm_errmsg(), "not supported yet") != NULL, "%s", tfm_errmsg());
	const char *set3[] = {"no.such.knob=1"};
	struct tfm_model_opts o4 = {.set = set3, .n_set = 1};
	CHECK(tfm_model_open(&m3, gp, &o4) != TFM_OK);
	tfm_ctx_free(c), tfm_ctx_free(c2);
	tfm_model_close(m), tfm_model_close(m2);
	tfm_blob_close(&l.blob);
	free(path), free(vocab), free(dir), free(gp);

	/* every fixture through the converter (tfm-convert's code, in memory) */
	const char *fx[64];
	size_t n_fx = 0;
	DIR *dd = opendir("tests/fixtures");
	CHECK(dd != NULL);
	for (struct dirent *e; dd && (e = readdir(dd)) && n_fx < 64;) {
		char *cj = t_path("tests/fixtures/%s/config.json", e->d_name);
		if (e->d_name[0] != '.' && access(cj, R_OK) == 0)
			fx[n_fx++] = strdup(e->d_name);
		free(cj);
	}
	if (dd)
		closedir(dd);
	CHECK_MSG(n_fx >= 23, "%zu fixtures", n_fx);
	for (size_t i = 0; i < n_fx; i++) {
		char *d = t_path("tests/fixtures/%s", fx[i]), *pp = t_path("%s/prefill.f32", d);
		char *ip = t_path("%s/input_ids.json", d);
		json_error_t je;
		json_t *ids = json_load_file(ip, 0, &je);
		json_t *pa = json_object_get(ids, "prefill");
		int64_t np = (int64_t)json_array_size(pa);
		int32_t t[64];
		for (int64_t k = 0; k < np && k < 64; k++)
			t[k] = (int32_t)json_integer_value(json_array_get(pa, (size_t)k));
		size_t npw = 0;
		float *pw = t_read_f32(pp, &npw), *lg = NULL;
		int st = tfm_model_open(&m, d, NULL);
		CHECK_MSG(st == TFM_OK, "open %s: %s", fx[i], tfm_errmsg());
		if (!st) {
			int64_t V = tfm_model_spec(m)->n_vocab;
			lg = malloc((size_t)(np * V) * sizeof *lg);
			CHECK_OK(tfm_ctx_new(&c, m, 64));
			CHECK(pw && npw == (size_t)(np * V));
			if (c && pw && npw == (size_t)(np * V)) {
				CHECK_OK(tfm_eval(c, t, np, lg, 1));
				double e = t_maxdiff(lg, pw, np * V);
				fprintf(stderr, "  open %-12s prefill vs transformers %.2g\n", fx[i], e);
				CHECK_MSG(e < 1e-4, "open %s: %g", fx[i], e);
			}
			tfm_ctx_free(c);
			tfm_model_close(m);
		}
		json_decref(ids);
		free(d), free(pp), free(ip), free(pw), free(lg);
		free((char *)fx[i]);
	}
}

/* g written to path, without its tfm.* keys when strip (what llama.cpp's
 * converter would write) */
static void write_gguf(struct tfm_gguf *g, const char *path, int strip)
{
	for (int64_t i = tfm_gguf_n_kv(g) - 1; strip && i >= 0; i--)
		if (!strncmp(tfm_gguf_key(g, i), "tfm.", 4))
			tfm_gguf_remove(g, tfm_gguf_key(g, i));
	struct tfm_out *out;
	CHECK_OK(tfm_out_open(&out, path, 0));
	CHECK_OK(tfm_gguf_write(g, out));
	CHECK_OK(tfm_out_commit(out));
}

/* Every fixture converted, then stripped of its tfm.* keys: what remains is
 * what llama.cpp's own converter writes for the architecture.  For the
 * fixtures whose knobs llama.cpp's keys express, the spec derived from
 * llama.cpp's keys alone gives the same logits; the others (knobs llama.cpp
 * has no key for: dynamic NTK, llama3 scaling and LongRoPE factors, which it
 * keeps in tensors tfm does not write, gemma2's query_pre_attn_scalar, GPT-2's
 * attention-scale knobs, mamba2-b's time_step_limit) run as llama.cpp would
 * run such a file, and are only reported; an architecture tfm cannot derive
 * is refused. */
static const char *const llamacpp_exact[] = {
	"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma3", "gpt2",
	"llama-rope-linear", "llama-rope-yarn", "qwen2_moe", "qwen3_moe", "starcoder2", "olmo2",
	"stablelm", "stablelm-parallel", "olmoe", "olmo", "granite", "cohere", "phi", "gptj",
	"gpt_neox", "falcon", "bloom", "mpt", "mamba", "mamba-b", "mamba2", "llama4-c",
	"deepseek_v2-lite",
};

static void t_llamacpp_only(void)
{
	DIR *dd = opendir("tests/fixtures");
	char *dir = t_tmpdir(), *gp = t_path("%s/stripped.gguf", dir);
	int ran = 0, refused = 0;
	CHECK(dd != NULL);
	for (struct dirent *e; dd && (e = readdir(dd));) {
		char *d = t_path("tests/fixtures/%s", e->d_name), *pp = t_path("%s/prefill.f32", d);
		char *ip = t_path("%s/input_ids.json", d);
		struct tfm_convert *cv = NULL;
		struct tfm_convert_opts co = { .dtype = -1 };
		if (e->d_name[0] == '.' || access(pp, R_OK) ||
		    tfm_convert_open(&cv, d, &co) != TFM_OK) {
			free(d), free(pp), free(ip);
			continue;
		}
		write_gguf(tfm_convert_gguf(cv), gp, 1);
		tfm_convert_close(cv);
		struct tfm_model *m = NULL;
		int st = tfm_model_open(&m, gp, NULL);
		int exact = 0;
		for (size_t i = 0; i < sizeof llamacpp_exact / sizeof llamacpp_exact[0]; i++)
			exact |= !strcmp(e->d_name, llamacpp_exact[i]);
		if (st) {
			CHECK_MSG(!exact && (st == TFM_E_UNSUPPORTED || st == TFM_E_FORMAT), "%s: %s",
				  e->d_name, tfm_errmsg());
			refused++;
		} else {
			json_error_t je;
			json_t *ids = json_load_file(ip, 0, &je);
			json_t *pa = json_object_get(ids, "prefill");
			int64_t np = (int64_t)json_array_size(pa), V = tfm_model_spec(m)->n_vocab;
			int32_t tok[64];
			for (int64_t i = 0; i < np && i < 64; i++)
				tok[i] = (int32_t)json_integer_value(json_array_get(pa, (size_t)i));
			size_t nw = 0;
			float *want = t_read_f32(pp, &nw), *lg = malloc((size_t)(np * V) * sizeof *lg);
			struct tfm_ctx *c = NULL;
			CHECK_OK(tfm_ctx_new(&c, m, 64));
			if (c && want && nw == (size_t)(np * V)) {
				CHECK_OK(tfm_eval(c, tok, np, lg, 1));
				double err = t_maxdiff(lg, want, np * V);
				fprintf(stderr, "  llama.cpp keys only %-20s %.2g%s\n", e->d_name, err,
					exact ? "" : " (knobs llama.cpp has no key for)");
				CHECK_MSG(!exact || err < 1e-4, "%s: llama.cpp keys only: %g", e->d_name, err);
				ran += exact;
			}
			tfm_ctx_free(c);
			tfm_model_close(m);
			json_decref(ids);
			free(want), free(lg);
		}
		free(d), free(pp), free(ip);
	}
	if (dd)
		closedir(dd);
	fprintf(stderr, "  llama.cpp keys only: %d ran, %d refused by architecture\n", ran, refused);
	CHECK(ran == (int)(sizeof llamacpp_exact / sizeof llamacpp_exact[0]));
	free(dir), free(gp);
}

/* tfm-convert --set attn.n_head_kv=K: the pooled K and V weights and
 * biases are the means of each group of source heads, computed here from
 * the unpooled conversion (the qwen2 fixture: 2 KV heads of 16 with
 * biases, pooled into 1; llama's rope permutation of K rows is within a
 * head); the spec says K heads; fused QKV, MLA and groups that do not
 * divide are refused. */
static void t_gqa_pool(void)
{
	struct tfm_convert *a = NULL, *b = NULL;
	struct tfm_convert_opts co = { .dtype = -1 }, cp = { .dtype = -1, .n_head_kv = 1 };
	CHECK_OK(tfm_convert_open(&a, "tests/fixtures/qwen2", &co));
	CHECK_OK(tfm_convert_open(&b, "tests/fixtures/qwen2", &cp));
	if (!a || !b)
		goto out;
	CHECK_OK(tfm_convert_load(a));
	CHECK_OK(tfm_convert_load(b));
	struct tfm_gguf *ga = tfm_convert_gguf(a), *gb = tfm_convert_gguf(b);
	struct tfm_spec sa, sb;
	CHECK_OK(tfm_spec_from_gguf(&sa, ga));
	CHECK_OK(tfm_spec_from_gguf(&sb, gb));
	CHECK(sa.n_head_kv == 2 && sb.n_head_kv == 1 && sb.n_head == sa.n_head);
	int64_t hd = sa.head_dim ? sa.head_dim : sa.n_embd / sa.n_head, checked = 0;
	static const char *const names[] = {"blk.%d.attn_k.weight", "blk.%d.attn_v.weight",
					    "blk.%d.attn_k.bias", "blk.%d.attn_v.bias",
					    "blk.%d.attn_q.weight"};
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < 5; i++) {
			char nm[64];
			snprintf(nm, sizeof nm, names[i], l);
			const struct tfm_gguf_tensor *ta = tfm_gguf_find_tensor(ga, nm);
			const struct tfm_gguf_tensor *tb = tfm_gguf_find_tensor(gb, nm);
			CHECK_MSG(ta && tb, "%s", nm);
			if (!ta || !tb)
				continue;
			CHECK(ta->type == TFM_TYPE_F32 && tb->type == TFM_TYPE_F32);
			const float *fa = ta->data, *fb = tb->data;
			int64_t w = ta->n_dims == 2 ? ta->ne[0] : 1, rows = ta->n_dims == 2 ? ta->ne[1] : ta->ne[0];
			if (i == 4) { /* queries are not pooled */
				CHECK(tb->nbytes == ta->nbytes && !memcmp(fa, fb, ta->nbytes));
				continue;
			}
			CHECK_MSG(rows == 2 * hd && (int64_t)tb->nbytes * 2 == (int64_t)ta->nbytes,
				  "%s: %lld rows", nm, (long long)rows);
			double err = 0;
			for (int64_t r = 0; r < hd; r++)
				for (int64_t c = 0; c < w; c++) {
					float want = (fa[r * w + c] + fa[(hd + r) * w + c]) / 2;
					err = fmax(err, fabs(fb[r * w + c] - want));
				}
			CHECK_MSG(err < 1e-6, "%s: pooled differs by %g", nm, err);
			checked++;
		}
	CHECK(checked == 8);
out:
	tfm_convert_close(a);
	tfm_convert_close(b);
	/* what cannot be pooled */
	static const char *const bad[][2] = {{"tests/fixtures/gpt_neox", "fused QKV"},
					     {"tests/fixtures/deepseek_v2", "MLA"},
					     {"tests/fixtures/llama", "do not pool"}};
	for (int i = 0; i < 3; i++) {
		struct tfm_convert *c = NULL;
		struct tfm_convert_opts o = { .dtype = -1, .n_head_kv = i == 2 ? 3 : 1 };
		int st = tfm_convert_open(&c, bad[i][0], &o);
		CHECK_MSG(st == TFM_E_UNSUPPORTED && strstr(tfm_errmsg(), bad[i][1]), "%s: %s",
			  bad[i][0], tfm_errmsg());
		tfm_convert_close(c);
	}
}

/* Fixtures converted by llama.cpp's own converter
 * (scripts/make-llamacpp-ggufs, tests/data/llamacpp): no tfm.* keys, its
 * names and layouts (deepseek2's attn_k_b / attn_v_b, llama4's split and
 * transposed experts).  Run as llama.cpp runs them, and with the --set
 * overrides that undo where llama.cpp's reading differs from transformers'
 * (its latent norms at the model's rms eps where transformers fixes 1e-6;
 * its converter writes expert_weights_norm from norm_topk_prob, which
 * transformers' V2 ignores, and writes no sigmoid gating for a config
 * without scoring_func), the transformers logits of the fixture. */
static void t_llamacpp_files(void)
{
	static const struct {
		const char *name, *arch, *set[2];
		double plain; /* llama.cpp's reading vs transformers: at most, and more than 1e-4 */
	} f[] = {
		{"llama4-c", "llama4", {NULL}, 0},
		{"deepseek_v2", "deepseek2", {"attn.mla_norm_eps=1e-6"}, 1e-3},
		{"deepseek_v2-lite", "deepseek2", {"moe.norm_topk=0"}, 10},
		{"deepseek_v3", "deepseek2", {"moe.gate=sigmoid", "attn.mla_norm_eps=1e-6"}, 10},
		{"jamba", "jamba", {NULL}, 0},   /* per-layer KV heads mark the mamba layers */
		{"jamba-b", "jamba", {NULL}, 0},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		char *gp = t_path("tests/data/llamacpp/%s.gguf", f[i].name);
		char *ip = t_path("tests/fixtures/%s/input_ids.json", f[i].name);
		char *pp = t_path("tests/fixtures/%s/prefill.f32", f[i].name);
		int n_set = f[i].set[1] ? 2 : f[i].set[0] ? 1 : 0;
		json_error_t je;
		json_t *ids = json_load_file(ip, 0, &je), *pa = json_object_get(ids, "prefill");
		int64_t np = (int64_t)json_array_size(pa);
		int32_t tok[64];
		for (int64_t t = 0; t < np && t < 64; t++)
			tok[t] = (int32_t)json_integer_value(json_array_get(pa, (size_t)t));
		size_t nw = 0;
		float *want = t_read_f32(pp, &nw);
		CHECK(want != NULL && np > 0);
		for (int fix = 0; fix < 2 && want; fix++) {
			struct tfm_model_opts o = {.set = fix ? f[i].set : NULL, .n_set = fix ? n_set : 0};
			struct tfm_model *m = NULL;
			struct tfm_ctx *c = NULL;
			CHECK_OK(tfm_model_open(&m, gp, &o));
			if (!m)
				break;
			CHECK(!strcmp(tfm_model_spec(m)->arch, f[i].arch));
			int64_t V = tfm_model_spec(m)->n_vocab;
			float *lg = malloc((size_t)(np * V) * sizeof *lg);
			CHECK_OK(tfm_ctx_new(&c, m, 64));
			CHECK(nw == (size_t)(np * V));
			if (c && nw == (size_t)(np * V) && !tfm_eval(c, tok, np, lg, 1)) {
				double e = t_maxdiff(lg, want, np * V);
				fprintf(stderr, "  llama.cpp's %-17s %s vs transformers %.2g\n", f[i].name,
					fix ? "with the overrides" : "as llama.cpp reads it", e);
				if (fix || !f[i].plain)
					CHECK_MSG(e < 1e-4, "%s (%d): %g", f[i].name, fix, e);
				else /* the difference is real, and bounded where it is small */
					CHECK_MSG(e > 1e-5 && e < f[i].plain, "%s: %g", f[i].name, e);
			}
			free(lg);
			tfm_ctx_free(c);
			tfm_model_close(m);
			if (!n_set)
				break;
		}
		json_decref(ids);
		free(want), free(gp), free(ip), free(pp);
	}
}

/* rwkv.cpp's own files (../shared/models/rwkv-tiny): the RWKV v4, v5.1,
 * v5.2 and v7 models' logits after the bytes '"in' from the initial state,
 * fed one token at a time, against the expected logits of rwkv.cpp's
 * reference (tests/expected-logits-*.bin there, computed from the FP32
 * models; v7's from tests/data/rwkvcpp).  rwkv.cpp's own bars
 * (tests/test_tiny_rwkv.c): FP32 |sum of the 256 differences| <= 1e-3; FP16
 * |sum| <= 1.05 |the sum rwkv.cpp itself gets from its FP16 file| (-0.013652,
 * -0.289921, +0.455912, +0.005766), since rounding the matrices to f16
 * moves the logits by that much.  tfm checks those sums and also the
 * maximum |difference|: 1e-5 for FP32, for FP16 5e-3 on v4 and v7 and 1e-2
 * on v5 (measured: FP32 max 9.5e-7 / 2.4e-6 / 1.1e-6 / 4.8e-7, sum -3.2e-6 /
 * -1.2e-4 / 6.7e-5 / -9.5e-6; FP16 max 1.6e-3 / 4.4e-3 / 2.5e-3 / 4.8e-7,
 * sum -3.1e-3 / -0.29 / 0.10 / -1.1e-5 on v4 / v5.1 / v5.2 / v7).  Then 41
 * bytes of text in one call against uneven chunks (1, 2, 3, 7 tokens, then
 * decode), within 1e-5 relative per token (max norm), and the state the
 * spec predicts.  RWKV v6: rwkv.cpp's FP32 and FP16 files of its tiny v6
 * are not in the stored copy of its repository, its Q5_1 file is
 * (tests/data/rwkvcpp, 3.6 MB), read here dequantized to f32 and checked
 * against the expected logits of the FP32 model: rwkv.cpp's bar for that
 * file is |sum| <= 1.05 * 3.576909 (its own Q5_1 sum), tfm's max |diff|
 * bar 0.1 (measured: max 0.076, sum -0.58). */
static void t_rwkvcpp(void)
{
	static const struct { const char *v; double max16, sum16; } f[] = {
		{"4v0-660K", 5e-3, -0.013652}, {"5v1-730K", 1e-2, -0.289921},
		{"5v2-730K", 1e-2, 0.455912}, {"7v0-834K", 5e-3, 0.005766},
		{"6v0-3m", 0.1, 3.576909}};
	static const int64_t chunks[] = {1, 2, 3, 7};
	const char *text = "\"in the beginning the tiny model was told";
	int32_t tok[64];
	int64_t nt = (int64_t)strlen(text);
	for (int64_t i = 0; i < nt; i++)
		tok[i] = (unsigned char)text[i];
	for (size_t vi = 0; vi < sizeof f / sizeof f[0]; vi++) {
		/* v7's expected logits are not in ../shared: tests/data/rwkvcpp
		 * holds rwkv.cpp's (its models there are these files, byte for byte) */
		char *ep = vi >= 3 ? t_path("tests/data/rwkvcpp/expected-logits-%s.bin", f[vi].v)
				   : t_path("%s/models/rwkv-tiny/expected-logits-%s.bin", t_shared(),
					    f[vi].v);
		size_t nw = 0;
		float *want = t_read_f32(ep, &nw), lg[3 * 256];
		CHECK(want && nw == 256);
		for (int i = vi == 4; i < 2 && want; i++) {
			const char *type = vi == 4 ? "Q5_1" : i ? "FP16" : "FP32";
			double bar = i ? f[vi].max16 : 1e-5, sbar = i ? 1.05 * fabs(f[vi].sum16) : 1e-3;
			char *mp = vi == 4 ? t_path("tests/data/rwkvcpp/tiny-rwkv-%s-%s.bin", f[vi].v,
						    type)
					   : t_path("%s/models/rwkv-tiny/tiny-rwkv-%s-%s.bin", t_shared(),
						    f[vi].v, type);
			struct tfm_model *m = NULL;
			struct tfm_ctx *c = NULL;
			CHECK_OK(tfm_model_open(&m, mp, NULL));
			CHECK_OK(tfm_ctx_new(&c, m, 64));
			if (c) {
				for (int t = 0; t < 3; t++)
					CHECK_OK(tfm_eval(c, tok + t, 1, lg + t * 256, 0));
				double e = t_maxdiff(lg + 2 * 256, want, 256), sum = 0;
				for (int v = 0; v < 256; v++)
					sum += lg[2 * 256 + v] - want[v];
				fprintf(stderr, "  rwkv.cpp %s %s vs its expected logits: max %.2g, sum "
					"%.3g\n", f[vi].v, type, e, sum);
				CHECK_MSG(e < bar && fabs(sum) <= sbar, "%s %s: %g, sum %g", f[vi].v, type,
					  e, sum);
				/* the text in one call and in chunks */
				float *one = malloc((size_t)(nt * 256) * sizeof *one);
				float *part = malloc((size_t)(nt * 256) * sizeof *part);
				tfm_ctx_reset(c);
				CHECK_OK(tfm_eval(c, tok, nt, one, 1));
				CHECK_MSG(t_maxdiff(one + 2 * 256, want, 256) < bar, "%s %s in one call",
					  f[vi].v, type);
				tfm_ctx_reset(c);
				int64_t done = 0;
				for (size_t k = 0; done < nt; k++) {
					int64_t b = k < sizeof chunks / sizeof chunks[0] ? chunks[k] : 1;
					CHECK_OK(tfm_eval(c, tok + done, b, part + done * 256, 1));
					done += b;
				}
				double worst = 0;
				for (int64_t t = 0; t < nt; t++) {
					double d = 0, mx = 1e-30;
					for (int64_t j = t * 256; j < (t + 1) * 256; j++) {
						d = fmax(d, fabs((double)part[j] - one[j]));
						mx = fmax(mx, fabs((double)one[j]));
					}
					worst = fmax(worst, d / mx);
				}
				fprintf(stderr, "  rwkv.cpp %s %s: chunks vs one call of %lld: %.2g "
					"relative\n", f[vi].v, type, (long long)nt, worst);
				CHECK_MSG(worst <= 1e-5, "%s %s: chunks vs one call %g", f[vi].v, type,
					  worst);
				const struct tfm_spec *s = tfm_model_spec(m);
				int64_t d = s->n_embd, hs = s->rwkv_head_size;
				CHECK_MSG(tfm_ctx_state_bytes(c) == (int64_t)tfm_spec_kv_bytes(s, 4, 64) &&
					  tfm_ctx_state_bytes(c) == 4 * s->n_layer *
					  (vi ? 2 * d + d * hs : 5 * d), "%s: state %lld bytes", f[vi].v,
					  (long long)tfm_ctx_state_bytes(c));
				free(one), free(part);
			}
			tfm_ctx_free(c);
			tfm_model_close(m);
			free(mp);
		}
		free(want), free(ep);
	}
}

/* rwkv.cpp's v6 and v7 files as llama.cpp's rwkv6 and rwkv7: tfm-convert
 * writes llama.cpp's architecture, keys, tensor names and shapes (the
 * bonus {head_size, n_head}, the fused lerps {n_embd, 1, 1, 6}, layer 0's
 * unused value-residual tensors), so that llama.cpp loads the file
 * (measured beside llama-perplexity: the same perplexity to 7 digits, see
 * the README); stripped of its tfm.* keys, the file gives the same logits
 * as rwkv.cpp's expected ones, within t_rwkvcpp's bars. */
static void t_rwkvcpp_llamacpp(void)
{
	static const struct { const char *model, *logits, *arch; double bar, sbar; } f[] = {
		{"tests/data/rwkvcpp/tiny-rwkv-6v0-3m-Q5_1.bin",
		 "tests/data/rwkvcpp/expected-logits-6v0-3m.bin", "rwkv6", 0.1, 1.05 * 3.576909},
		{"models/rwkv-tiny/tiny-rwkv-7v0-834K-FP32.bin",
		 "tests/data/rwkvcpp/expected-logits-7v0-834K.bin", "rwkv7", 1e-5, 1e-3}};
	char *dir = t_tmpdir(), *gp = t_path("%s/stripped.gguf", dir);
	const int32_t tok[3] = {'"', 'i', 'n'};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		char *mp = i ? t_path("%s/%s", t_shared(), f[i].model) : t_path("%s", f[i].model);
		struct tfm_convert *cv = NULL;
		struct tfm_convert_opts co = {.dtype = -1};
		CHECK_OK(tfm_convert_open(&cv, mp, &co));
		if (!cv) {
			free(mp);
			continue;
		}
		struct tfm_gguf *g = tfm_convert_gguf(cv);
		CHECK_MSG(!strcmp(tfm_gguf_get_str_or(g, "general.architecture", ""), f[i].arch),
			  "%s: architecture %s", f[i].arch,
			  tfm_gguf_get_str_or(g, "general.architecture", ""));
		char key[96];
		snprintf(key, sizeof key, "%s.token_shift_count", f[i].arch);
		CHECK(tfm_gguf_get_int_or(g, key, 0) == 2);
		const struct tfm_gguf_tensor *t;
		if (i == 0) {
			t = tfm_gguf_find_tensor(g, "blk.0.time_mix_first.weight");
			CHECK(t && t->n_dims == 2 && t->ne[0] == 8 && t->ne[1] == 16);
		} else {
			t = tfm_gguf_find_tensor(g, "blk.0.time_mix_lerp_fused.weight");
			CHECK(t && t->n_dims == 4 && t->ne[0] == 64 && t->ne[3] == 6);
			t = tfm_gguf_find_tensor(g, "blk.0.time_mix_v1.weight");
			CHECK(t && t->ne[0] == 64 && t->ne[1] == 32);
		}
		CHECK(tfm_gguf_find_tensor(g, "blk.11.attn_norm_2.weight") != NULL);
		write_gguf(g, gp, 1);
		tfm_convert_close(cv);
		struct tfm_model *m = NULL;
		struct tfm_ctx *c = NULL;
		CHECK_OK(tfm_model_open(&m, gp, NULL));
		if (m)
			CHECK_OK(tfm_ctx_new(&c, m, 16));
		char *ep = t_path("%s", f[i].logits);
		size_t nw = 0;
		float *want = t_read_f32(ep, &nw), lg[3 * 256];
		if (c && want && nw == 256) {
			CHECK_OK(tfm_eval(c, tok, 3, lg, 1));
			double e = t_maxdiff(lg + 2 * 256, want, 256), sum = 0;
			for (int v = 0; v < 256; v++)
				sum += lg[2 * 256 + v] - want[v];
			fprintf(stderr, "  %s keys only vs rwkv.cpp's logits: max %.2g, sum %.3g\n",
				f[i].arch, e, sum);
			CHECK_MSG(e < f[i].bar && fabs(sum) <= f[i].sbar, "%s: %g, sum %g", f[i].arch,
				  e, sum);
		} else {
			CHECK_MSG(0, "%s: no model or no expected logits", f[i].arch);
		}
		tfm_ctx_free(c);
		tfm_model_close(m);
		free(want), free(ep), free(mp);
	}
	free(gp), free(dir);
}

/* Random-weight models of the recurrent types llama.cpp runs (tfm-convert
 * --random: a config.json alone), written with tfm's keys and stripped to
 * llama.cpp's: the spec read from llama.cpp's keys (rwkv6, rwkv7 and
 * mamba2 with several B/C groups, knob values unlike the fixtures') gives
 * the same logits.  The perplexities of such files beside llama.cpp's are
 * in the README. */
static void t_random_llamacpp(void)
{
	static const char *const cfg[] = {
		"{\"model_type\": \"rwkv\", \"rwkv_version\": 6, \"head_size\": 16, "
		"\"vocab_size\": 300, \"hidden_size\": 48, \"num_hidden_layers\": 3, "
		"\"intermediate_size\": 160, \"time_mix_extra_dim\": 8, "
		"\"time_decay_extra_dim\": 12, \"rescale_every\": 0, \"layer_norm_epsilon\": 1e-5}",
		"{\"model_type\": \"rwkv\", \"rwkv_version\": 7, \"head_size\": 16, "
		"\"vocab_size\": 300, \"hidden_size\": 64, \"num_hidden_layers\": 3, "
		"\"intermediate_size\": 256, \"decay_low_rank_dim\": 8, \"a_low_rank_dim\": 12, "
		"\"v_low_rank_dim\": 4, \"gate_low_rank_dim\": 16, \"rescale_every\": 0, "
		"\"layer_norm_epsilon\": 1e-5}",
		"{\"model_type\": \"mamba2\", \"vocab_size\": 300, \"hidden_size\": 48, "
		"\"num_hidden_layers\": 2, \"state_size\": 8, \"expand\": 2, \"conv_kernel\": 3, "
		"\"num_heads\": 6, \"head_dim\": 16, \"n_groups\": 3, \"use_conv_bias\": true, "
		"\"use_bias\": true, \"layer_norm_epsilon\": 1e-5, \"tie_word_embeddings\": true}"};
	static const char *const arch[] = {"rwkv6", "rwkv7", "mamba2"};
	char *dir = t_tmpdir(), *cp = t_path("%s/config.json", dir);
	char *full = t_path("%s/full.gguf", dir), *bare = t_path("%s/bare.gguf", dir);
	int32_t tok[9] = {1, 17, 299, 42, 42, 0, 150, 7, 88};
	for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
		FILE *f = fopen(cp, "w");
		CHECK(f != NULL);
		if (!f)
			break;
		fputs(cfg[i], f);
		fclose(f);
		float *lg[2] = {NULL, NULL};
		for (int strip = 0; strip < 2; strip++) {
			struct tfm_convert *cv = NULL;
			struct tfm_convert_opts co = {.dtype = -1, .config_only = 1};
			void **bufs = NULL;
			int64_t nb = 0;
			CHECK_OK(tfm_convert_open(&cv, cp, &co));
			if (!cv)
				continue;
			struct tfm_gguf *g = tfm_convert_gguf(cv);
			CHECK_OK(tfm_random_gguf(g, TFM_TYPE_F32, 5, &bufs, &nb));
			CHECK_MSG(!strcmp(tfm_gguf_get_str_or(g, "general.architecture", ""), arch[i]),
				  "%s: written as %s", arch[i],
				  tfm_gguf_get_str_or(g, "general.architecture", ""));
			write_gguf(g, strip ? bare : full, strip);
			tfm_convert_close(cv);
			tfm_random_free(bufs, nb);
			struct tfm_model *m = NULL;
			struct tfm_ctx *c = NULL;
			CHECK_OK(tfm_model_open(&m, strip ? bare : full, NULL));
			if (m)
				CHECK_OK(tfm_ctx_new(&c, m, 16));
			lg[strip] = malloc(9 * 300 * sizeof(float));
			if (c)
				CHECK_OK(tfm_eval(c, tok, 9, lg[strip], 1));
			tfm_ctx_free(c);
			tfm_model_close(m);
		}
		double e = lg[0] && lg[1] ? t_maxdiff(lg[0], lg[1], 9 * 300) : 1;
		fprintf(stderr, "  random %s: llama.cpp keys only vs tfm's: %.2g\n", arch[i], e);
		CHECK_MSG(e == 0, "%s: llama.cpp keys only: %g", arch[i], e);
		free(lg[0]), free(lg[1]);
	}
	free(cp), free(full), free(bare), free(dir);
}

/* Mamba-2's and Gated DeltaNet's chunked prefill (the SSD chunked scan, the
 * chunked gated delta rule) against the step form on the cpu backend: one
 * mixer of each fixture's recurrent layers over random inputs, n tokens
 * across chunk boundaries (64 tokens a chunk), from a zero state and from
 * the state another prefill left, the chunked form forced for any n >= 2
 * (ssm_chunk_min).  Against the step form over the same batch (the same
 * projections, so this measures the chunked sums alone): each token's
 * output within 1e-5 relative (max norm of its row) and the state after
 * within 1e-5 relative (max norm), so decode continues from the same
 * state.  Against decode, n calls of one token: the state as before, the
 * outputs within 1e-5 of the batch's largest output (per token they
 * differ more where a token's output is tiny: the first tokens' rows of
 * GDN, ~1e-2, carry the GEMM-vs-GEMV rounding of the projections, 2e-5 of
 * their size with the step form alone). */
static double t_rowrel(const float *a, const float *want, int64_t n, int64_t d, int whole)
{
	double worst = 0, dall = 0, mall = 1e-30;
	for (int64_t t = 0; t < n; t++) {
		double dm = 0, hm = 1e-30;
		for (int64_t i = t * d; i < (t + 1) * d; i++) {
			double e = fabs((double)a[i] - want[i]);
			dm = e > dm ? e : dm;
			hm = fabs((double)want[i]) > hm ? fabs((double)want[i]) : hm;
		}
		worst = dm / hm > worst ? dm / hm : worst;
		dall = dm > dall ? dm : dall;
		mall = hm > mall ? hm : mall;
	}
	return whole ? dall / mall : worst;
}

static void t_ssm_chunked(void)
{
	/* the fixtures, then random weights on their shapes changed: two
	 * groups of B, C (heads 0-3 read group 0, 4-7 group 1); the real
	 * models' head sizes (Mamba-2: head_dim 64, d_state 128 in two groups;
	 * Qwen3-Next: dk = dv = 128, two value heads per key head) */
	static const struct {
		const char *fixture, *name;
		int64_t n_group, d_state, d_inner, n_head;
	} models[] = {
		{"mamba2", "mamba2", 0, 0, 0, 0}, {"mamba2-b", "mamba2-b", 0, 0, 0, 0},
		{"bamba", "bamba", 0, 0, 0, 0}, {"bamba-b", "bamba-b", 0, 0, 0, 0},
		{"qwen3_next", "qwen3_next", 0, 0, 0, 0}, {"qwen3_next-b", "qwen3_next-b", 0, 0, 0, 0},
		{"mamba2", "mamba2 groups", 2, 16, 64, 8},
		{"mamba2", "mamba2 real", 2, 128, 256, 4},
		{"qwen3_next", "qwen3_next real", 2, 128, 512, 4},
	};
	static const int64_t lens[] = {1, 2, 63, 64, 65, 130};
	enum { WARM = 37, NMAX = 130 };
	for (size_t f = 0; f < sizeof models / sizeof models[0]; f++) {
		char *dir = t_path("tests/fixtures/%s", models[f].fixture);
		const char *name = models[f].name;
		struct tfm_model *m = NULL;
		struct tfm_ctx *c = NULL;
		struct tfm_model_opts o = {.n_threads = 2, .device = "cpu"};
		CHECK_OK(tfm_model_open(&m, dir, &o));
		if (m && models[f].n_group) {
			struct tfm_spec rs = m->spec;
			rs.ssm_n_group = models[f].n_group;
			rs.ssm_d_state = models[f].d_state;
			rs.ssm_d_inner = models[f].d_inner;
			rs.ssm_n_head = models[f].n_head;
			tfm_model_close(m);
			m = NULL;
			CHECK_OK(tfm_model_random(&m, &rs, TFM_TYPE_F32, 7, &o));
		}
		if (m)
			CHECK_OK(tfm_ctx_new(&c, m, 256));
		if (!c) {
			tfm_model_close(m);
			free(dir);
			continue;
		}
		const struct tfm_spec *s = &m->spec;
		int64_t d = s->n_embd, nst = tfm_mamba_state_bytes(m) / (int64_t)sizeof(float);
		float *X = malloc((size_t)(NMAX * d) * sizeof *X), *H[3], *S[4];
		for (int k = 0; k < 3; k++)
			H[k] = malloc((size_t)(NMAX * d) * sizeof *H[k]);
		for (int k = 0; k < 4; k++)
			S[k] = malloc((size_t)nst * sizeof *S[k]);
		uint32_t seed = 12345;
		double wb = 0, wd = 0, ws = 0;
		int64_t layers = 0;
		for (int64_t l = 0; l < s->n_layer; l++) {
			if (s->layer_kind[l] != TFM_LAYER_MAMBA2 && s->layer_kind[l] != TFM_LAYER_GDN)
				continue;
			layers++;
			for (int warm = 0; warm < 2; warm++) {
				int64_t p0 = warm ? WARM : 0;
				memset(c->ssm, 0, (size_t)nst * sizeof(float));
				if (warm) { /* a state left by a chunked prefill */
					for (int64_t i = 0; i < WARM * d; i++)
						c->xn[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) /
							   (float)(1 << 24) * 3.0f - 1.5f;
					c->ssm_chunk_min = 2;
					tfm_mamba_mix(c, l, WARM, 0);
				}
				memcpy(S[3], c->ssm, (size_t)nst * sizeof(float));
				for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
					int64_t n = lens[li];
					for (int64_t i = 0; i < n * d; i++)
						X[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) /
						       (float)(1 << 24) * 3.0f - 1.5f;
					/* chunked, step form in one call, decode */
					for (int k = 0; k < 3; k++) {
						memcpy(c->ssm, S[3], (size_t)nst * sizeof(float));
						c->ssm_chunk_min = k == 0 ? 2 : INT64_MAX;
						for (int64_t t = 0; t < n; t += k == 2 ? 1 : n) {
							int64_t b = k == 2 ? 1 : n;
							memcpy(c->xn, X + t * d, (size_t)(b * d) * sizeof(float));
							tfm_mamba_mix(c, l, b, p0 + t);
							memcpy(H[k] + t * d, c->h, (size_t)(b * d) * sizeof(float));
						}
						memcpy(S[k], c->ssm, (size_t)nst * sizeof(float));
					}
					double eb = t_rowrel(H[0], H[1], n, d, 0);
					double ed = t_rowrel(H[0], H[2], n, d, 1);
					double es = t_rowrel(S[0], S[2], 1, nst, 0);
					double es1 = t_rowrel(S[0], S[1], 1, nst, 0);
					es = es1 > es ? es1 : es;
					CHECK_MSG(eb <= 1e-5 && ed <= 1e-5 && es <= 1e-5, "%s layer %lld, %s state, "
						  "%lld tokens: output %g (step form), %g (decode), state %g "
						  "relative", name, (long long)l, warm ? "a" : "zero",
						  (long long)n, eb, ed, es);
					wb = eb > wb ? eb : wb;
					wd = ed > wd ? ed : wd;
					ws = es > ws ? es : ws;
				}
			}
		}
		CHECK(layers > 0);
		fprintf(stderr, "  %-13s chunked prefill (%lld layers) vs step form %.2g, vs decode %.2g, "
			"state %.2g relative\n", name, (long long)layers, wb, wd, ws);
		free(X);
		for (int k = 0; k < 3; k++)
			free(H[k]);
		for (int k = 0; k < 4; k++)
			free(S[k]);
		tfm_ctx_free(c);
		tfm_model_close(m);
		free(dir);
	}
}

/* The recurrent mixers on the pool (cpu backend's `parallel`): random
 * models of each kind on odd sizes (channel counts not a multiple of the
 * 16-channel blocks, odd head counts, more tasks than some layers have
 * units) give the same bits with 3 threads as with 1, work thresholds off:
 * a prefill of 70 tokens (the chunked forms across a chunk boundary), 5
 * (the step form over a batch), then 2 decoded. */
static void t_ssm_threads(void)
{
	static const char *const cfgs[] = {
		"{\"model_type\": \"mamba\", \"vocab_size\": 64, \"hidden_size\": 20, "
		"\"num_hidden_layers\": 2, \"state_size\": 7, \"expand\": 2, \"conv_kernel\": 4}",
		"{\"model_type\": \"mamba2\", \"vocab_size\": 64, \"hidden_size\": 20, "
		"\"num_hidden_layers\": 2, \"state_size\": 12, \"expand\": 2, \"head_dim\": 8, "
		"\"num_heads\": 5, \"n_groups\": 1, \"conv_kernel\": 4}",
		"{\"model_type\": \"rwkv\", \"vocab_size\": 64, \"hidden_size\": 40, "
		"\"num_hidden_layers\": 2, \"intermediate_size\": 56}",
		"{\"model_type\": \"rwkv\", \"rwkv_version\": 5, \"rwkv_version_minor\": 2, "
		"\"head_size\": 8, \"vocab_size\": 64, \"hidden_size\": 40, \"num_hidden_layers\": 2, "
		"\"intermediate_size\": 56}",
		"{\"model_type\": \"rwkv\", \"rwkv_version\": 6, \"head_size\": 8, \"vocab_size\": 64, "
		"\"hidden_size\": 40, \"num_hidden_layers\": 2, \"intermediate_size\": 56, "
		"\"time_decay_extra_dim\": 8, \"time_mix_extra_dim\": 4}",
		"{\"model_type\": \"rwkv\", \"rwkv_version\": 7, \"head_size\": 8, \"vocab_size\": 64, "
		"\"hidden_size\": 40, \"num_hidden_layers\": 2, \"intermediate_size\": 56, "
		"\"decay_low_rank_dim\": 8, \"a_low_rank_dim\": 8, \"v_low_rank_dim\": 4, "
		"\"gate_low_rank_dim\": 8, \"rescale_every\": 0}",
		"{\"model_type\": \"qwen3_next\", \"vocab_size\": 64, \"hidden_size\": 40, "
		"\"intermediate_size\": 48, \"num_hidden_layers\": 2, \"layer_types\": "
		"[\"linear_attention\", \"full_attention\"], \"linear_conv_kernel_dim\": 4, "
		"\"linear_key_head_dim\": 8, \"linear_value_head_dim\": 12, "
		"\"linear_num_key_heads\": 1, \"linear_num_value_heads\": 5, \"num_attention_heads\": 2, "
		"\"num_key_value_heads\": 1, \"head_dim\": 16, \"mlp_only_layers\": [0, 1], "
		"\"max_position_embeddings\": 128}",
		"{\"model_type\": \"xlstm\", \"vocab_size\": 64, \"hidden_size\": 40, "
		"\"embedding_dim\": 40, \"num_heads\": 5, \"num_hidden_layers\": 2, \"num_blocks\": 2}",
	};
	static const char *const names[] = {"mamba", "mamba2", "rwkv4", "rwkv5.2", "rwkv6", "rwkv7",
					    "qwen3_next", "xlstm"};
	enum { NP = 70, NS = 5, ND = 2, NT = NP + NS + ND };
	int32_t tok[NT];
	for (int i = 0; i < NT; i++)
		tok[i] = (int32_t)((i * 37 + 11) % 64);
	for (size_t f = 0; f < sizeof cfgs / sizeof cfgs[0]; f++) {
		struct tfm_spec s;
		json_error_t err;
		json_t *cfg = tfm_config_json(cfgs[f], strlen(cfgs[f]), &err);
		CHECK_MSG(cfg, "%s: %s", names[f], err.text);
		int st = cfg ? tfm_spec_from_config(&s, cfg) : TFM_E_FORMAT;
		json_decref(cfg);
		if (!st)
			st = tfm_spec_validate(&s);
		CHECK_MSG(st == TFM_OK, "%s: %s", names[f], tfm_errmsg());
		if (st)
			continue;
		int64_t V = s.n_vocab;
		float *lg[2];
		for (int k = 0; k < 2; k++) {
			lg[k] = calloc((size_t)(NT * V), sizeof(float));
			struct tfm_model_opts o = {.n_threads = k ? 3 : 1, .device = "cpu"};
			struct tfm_model *m = NULL;
			struct tfm_ctx *c = NULL;
			CHECK_OK(tfm_model_random(&m, &s, TFM_TYPE_F32, 11, &o));
			if (m)
				CHECK_OK(tfm_ctx_new(&c, m, 128));
			if (c) {
				if (k)
					tfm_ctx_set_par_min(c, 0);
				CHECK_OK(tfm_eval(c, tok, NP, lg[k], 1));
				CHECK_OK(tfm_eval(c, tok + NP, NS, lg[k] + NP * V, 1));
				for (int t = NP + NS; t < NT; t++)
					CHECK_OK(tfm_eval(c, tok + t, 1, lg[k] + t * V, 0));
			}
			tfm_ctx_free(c);
			tfm_model_close(m);
		}
		double dmax = t_maxdiff(lg[0], lg[1], NT * V), scale = 0;
		for (int64_t i = 0; i < NT * V; i++)
			scale = fabs(lg[0][i]) > scale ? fabs(lg[0][i]) : scale;
		CHECK_MSG(!memcmp(lg[0], lg[1], (size_t)(NT * V) * sizeof(float)),
			  "%s: 3 threads differ from 1 by %g", names[f], dmax);
		CHECK_MSG(scale > 0.01, "%s: logits all ~0", names[f]);
		fprintf(stderr, "  %-12s 1 and 3 threads: max |diff| %g (|logit| <= %.2g)\n", names[f],
			dmax, scale);
		free(lg[0]), free(lg[1]);
	}
}

static const struct t_case t_cases[] = {
	{"gqa_pool", t_gqa_pool},
	{"llamacpp_only", t_llamacpp_only},
	{"llamacpp_files", t_llamacpp_files},
	{"rwkvcpp", t_rwkvcpp},
	{"rwkvcpp_llamacpp", t_rwkvcpp_llamacpp},
	{"random_llamacpp", t_random_llamacpp},
	{"stories260k", t_stories260k},
	{"fixtures", t_fixtures},
	{"ssm_state", t_ssm_state},
	{"ssm_chunked", t_ssm_chunked},
	{"ssm_threads", t_ssm_threads},
	{"mla_cache", t_mla_cache},
	{"open", t_open},
};
T_MAIN(t_cases)
