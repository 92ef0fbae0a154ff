/* convert.c: any checkpoint (or GGUF) to an in-memory GGUF with tfm.* spec
 * keys, llama.cpp keys, tokenizer keys and llama.cpp tensor names.  Tensors
 * that need no change point at the source bytes; the others are produced on
 * demand (dtype conversion, Q/K permutation, QKV reordering, pooled K/V
 * heads), one at a time, so writing streams with peak memory near one
 * tensor. */
#include "tfm.h"
#include "format/hfmap.h"
#include "format/st-import.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TFM_MAX_EXPERTS 512

/* One output tensor and where it comes from: one source, or n_src sources
 * of equal size stacked along the outermost dimension (MoE experts). */
struct cv_tensor {
	struct tfm_convert *cv;
	const void *src;     /* source bytes (n_src == 1) */
	const void **srcs;   /* [n_src] sources, srcs == &src for a single one */
	int n_src;
	int src_type;        /* enum tfm_type of src */
	int out_type;
	unsigned flags;      /* TFM_HFMAP_* transforms */
	int64_t ne0, ne1;    /* source shape seen as [ne1][ne0] rows (after transposition: out) */
	int64_t n;           /* elements (all sources together) */
	int pool;            /* K/V heads mean-pooled by cv->pool_r (output n / pool_r) */
	int64_t ne_mid;      /* EXPERTS_T: the source's [E][ne_mid][ne0] middle dimension */
	int half;            /* SPLIT_GATE_UP: 1 the first, 2 the second half of ne0; 0 all */
	void *buf;           /* materialised output (tfm_convert_load) */
};

struct tfm_convert {
	struct tfm_ckpt *ck;     /* source checkpoint, or NULL */
	struct tfm_blob blob;    /* source GGUF bytes */
	struct tfm_gguf *src;    /* source GGUF, or NULL */
	struct tfm_gguf *g;      /* the output */
	struct tfm_spec spec;
	struct tfm_spec spec_src; /* the source's spec, for the transforms of its rows */
	int64_t pool_r, pool_hd; /* GQA pooling: r source KV heads of pool_hd per output head */
	struct cv_tensor *ts;    /* [n_out], indexed like g's tensors */
	int64_t n_out;
	int dtype;
	int loaded;
	int warned_dequant;      /* --dtype on quantized weights: said once */
};

static int is_float_type(int t)
{
	return t == TFM_TYPE_F32 || t == TFM_TYPE_F16 || t == TFM_TYPE_BF16;
}

/* Output type of a tensor: 1-D tensors (norms, biases) stay f32, as in
 * llama.cpp; others take the requested dtype or keep their own. */
static int pick_type(int src_type, int n_dims, int dtype)
{
	if (!is_float_type(src_type))
		return src_type; /* quantized GGUF tensors pass through */
	if (n_dims < 2)
		return TFM_TYPE_F32;
	return dtype >= 0 ? dtype : src_type;
}

/* A source part as f32: float types directly, quantized ones (--dtype of a
 * quantized GGUF) dequantized row by row. */
static int src_to_f32(const struct cv_tensor *c, const void *src, float *f, int64_t n)
{
	if (is_float_type(c->src_type) || !tfm_quant_supported(c->src_type))
		return tfm_type_to_f32(c->src_type, src, f, n);
	size_t rb = tfm_quant_row_bytes(c->src_type, c->ne0);
	for (int64_t r = 0; r < n / c->ne0; r++) {
		int st = tfm_dequantize_row(c->src_type, (const char *)src + (size_t)r * rb,
					    f + r * c->ne0, c->ne0);
		if (st)
			return st;
	}
	return TFM_OK;
}

/* GQA pooling of f [n] (rows of w floats; a bias: rows of 1): the head of
 * hd rows at output position g is the mean of source heads g r .. g r + r - 1,
 * in place (the output is the first n / r floats). */
static void pool_heads(const struct tfm_convert *cv, float *f, int64_t n, int64_t w)
{
	int64_t r = cv->pool_r, hd = cv->pool_hd, rows = n / w, nh = rows / hd;
	for (int64_t g = 0; g < nh / r; g++)
		for (int64_t i = 0; i < hd; i++)
			for (int64_t c = 0; c < w; c++) {
				double s = 0;
				for (int64_t k = 0; k < r; k++)
					s += f[((g * r + k) * hd + i) * w + c];
				f[(g * hd + i) * w + c] = (float)(s / (double)r);
			}
}

/* EXPERTS_T: f [E][a][b] (b = c->ne0 fastest) to out [E][b'][a], each
 * expert transposed, b' the half of b that c->half picks (all of it for 0);
 * returns the elements written. */
static int64_t experts_t(const struct cv_tensor *c, const float *f, float *out, int64_t n)
{
	int64_t b = c->ne0, a = c->ne_mid, E = n / (a * b);
	int64_t nb = c->half ? b / 2 : b, off = c->half == 2 ? b / 2 : 0;
	for (int64_t e = 0; e < E; e++)
		for (int64_t j = 0; j < nb; j++)
			for (int64_t i = 0; i < a; i++)
				out[(e * nb + j) * a + i] = f[(e * a + i) * b + off + j];
	return E * nb * a;
}

/* Produce output tensor t into buf: convert to f32, transform, convert out.
 * Only tensors that need work get here; add_tensor gives the others their
 * source bytes directly. */
static int produce(void *ctx, const struct tfm_gguf_tensor *t, void *buf)
{
	struct cv_tensor *c = ctx;
	/* f32 staging of one source: the part and, for transforms, a scratch */
	int64_t np = c->n / c->n_src;
	size_t out_part = t->nbytes / (size_t)c->n_src;
	float *f = tfm_malloc((size_t)np * sizeof *f * (c->flags || c->pool ? 2 : 1));
	if (!f)
		return TFM_E_NOMEM;
	int st = TFM_OK;
	for (int k = 0; k < c->n_src && !st; k++) {
		st = src_to_f32(c, c->srcs[k], f, np);
		if (!st && (c->flags & TFM_HFMAP_EXPERTS_T)) {
			int64_t no = experts_t(c, f, f + np, np);
			st = tfm_type_from_f32(c->out_type, f + np, (char *)buf + out_part * (size_t)k, no);
			continue;
		}
		if (!st && c->flags)
			st = tfm_hfmap_transform(c->flags, &c->cv->spec_src, f, c->ne0, c->ne1, f + np);
		if (!st && c->pool)
			pool_heads(c->cv, f, np, c->ne0 == np ? 1 : c->ne0);
		if (!st)
			st = tfm_type_from_f32(c->out_type, f, (char *)buf + out_part * (size_t)k,
					       c->pool ? np / c->cv->pool_r : np);
	}
	free(f);
	if (st)
		return tfm_adderr(st, "%s", t->name);
	return TFM_OK;
}

/* Add one output tensor; data is used directly when no work is needed. */
static int add_tensor(struct tfm_convert *cv, const char *name, int src_type,
		      int n_dims, const int64_t *ne_in, const void *src, unsigned flags, int half)
{
	int64_t sq[2];
	if (flags & TFM_HFMAP_SQUEEZE) { /* the same bytes, 2-D {ne0, rest} */
		sq[0] = ne_in[0], sq[1] = 1;
		for (int d = 1; d < n_dims; d++)
			sq[1] *= ne_in[d];
		n_dims = 2, ne_in = sq;
	}
	int64_t col[2], ng = cv->spec.ssm_n_group > 0 ? cv->spec.ssm_n_group : 1;
	if ((flags & (TFM_HFMAP_COLUMN | TFM_HFMAP_GROUPED)) && n_dims == 1 &&
	    ne_in[0] % ng == 0) { /* the same bytes: {1, n} or {n / groups, groups} */
		col[0] = flags & TFM_HFMAP_COLUMN ? 1 : ne_in[0] / ng;
		col[1] = flags & TFM_HFMAP_COLUMN ? ne_in[0] : ng;
		n_dims = 2, ne_in = col;
	}
	flags &= TFM_HFMAP_DATA_FLAGS | TFM_HFMAP_EXPERTS_T;
	int64_t ne[4] = { 1, 1, 1, 1 }, n = 1;
	for (int d = 0; d < n_dims; d++) {
		ne[d] = ne_in[d];
		n *= ne[d];
	}
	if (flags & TFM_HFMAP_EXPERTS_T) { /* {b, a, E} -> {a, b or b/2, E} */
		if (n_dims != 3 || (half && ne[0] % 2))
			return tfm_seterr(TFM_E_FORMAT, "%s: stacked experts must be 3-D%s", name,
					  half ? " with an even last dimension" : "");
		ne[0] = ne_in[1];
		ne[1] = half ? ne_in[0] / 2 : ne_in[0];
	}
	if (flags & TFM_HFMAP_TRANSPOSE) {
		if (n_dims != 2)
			return tfm_seterr(TFM_E_FORMAT, "%s: transpose of a %d-D tensor", name, n_dims);
		int64_t t = ne[0];
		ne[0] = ne[1];
		ne[1] = t;
	}
	int out_type = pick_type(src_type, n_dims, cv->dtype);
	if (cv->dtype >= 0 && !is_float_type(src_type) && n_dims >= 2) {
		/* --dtype asks for float weights: dequantize, never keep silently */
		if (!tfm_quant_supported(src_type))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: --dtype %s: cannot dequantize %s",
					  name, tfm_type_name(cv->dtype), tfm_type_name(src_type));
		if (!cv->warned_dequant++)
			tfm_log(TFM_LOG_WARN, "tfm-convert: warning: --dtype %s: dequantizing the %s weights "
				"(their quantization error stays)", tfm_type_name(cv->dtype),
				tfm_type_name(src_type));
		out_type = cv->dtype;
	}
	if (flags && !is_float_type(src_type))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: cannot transform a %s tensor", name,
				  tfm_type_name(src_type));
	int pool = 0;
	if (cv->pool_r > 1 && !strncmp(name, "blk.", 4)) {
		static const char *const sfx[] = {".attn_k.weight", ".attn_v.weight", ".attn_k.bias",
						  ".attn_v.bias", ".attn_qkv.weight", ".attn_kv_a_mqa.weight"};
		size_t ln = strlen(name);
		for (int i = 0; i < 6; i++) {
			size_t ls = strlen(sfx[i]);
			if (ln <= ls || strcmp(name + ln - ls, sfx[i]))
				continue;
			if (i >= 4)
				return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pooling KV heads of a %s "
						  "tensor not supported", name,
						  i == 4 ? "fused QKV" : "latent (MLA)");
			pool = 1;
		}
	}
	if (pool) {
		int64_t kv_src = cv->pool_r * cv->spec.n_head_kv * cv->pool_hd;
		if ((flags & TFM_HFMAP_TRANSPOSE) || n_dims > 2 || ne[n_dims - 1] != kv_src)
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pooling KV heads of a tensor shaped "
					  "%lld x %lld (want %lld rows) not supported", name,
					  (long long)ne[0], (long long)ne[1], (long long)kv_src);
		if (!is_float_type(out_type))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: pooling KV heads of %s weights: "
					  "give --dtype f32, f16 or bf16", name,
					  tfm_type_name(out_type));
		ne[n_dims - 1] /= cv->pool_r;
	}
	struct cv_tensor *c = &cv->ts[cv->n_out];
	c->cv = cv;
	c->src = src;
	c->srcs = &c->src;
	c->n_src = 1;
	c->src_type = src_type;
	c->out_type = out_type;
	c->flags = flags;
	/* transforms see the source rows: [ne1][ne0] before transposition */
	c->ne0 = ne_in[0];
	c->ne1 = n / ne_in[0];
	c->n = n;
	c->pool = pool;
	c->ne_mid = n_dims >= 2 ? ne_in[1] : 1;
	c->half = half;
	int direct = src && out_type == src_type && !flags && !pool;
	int st = tfm_gguf_add_tensor(cv->g, name, out_type, n_dims, ne, direct ? src : NULL,
				     direct ? NULL : produce, c);
	if (st)
		return st;
	cv->n_out++;
	return TFM_OK;
}

/* general.name: the config's _name_or_path, else the input's base name
 * without trailing slashes or archive/weights extensions, so a directory
 * and the same directory packed as an archive give the same file. */
static void model_name(const struct tfm_ckpt *ck, const char *path, char *out, size_t cap)
{
	json_t *nm = json_object_get(ck->config, "_name_or_path");
	if (json_is_string(nm) && *json_string_value(nm)) {
		snprintf(out, cap, "%s", json_string_value(nm));
		return;
	}
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t b = n;
	while (b > 0 && path[b - 1] != '/')
		b--;
	static const char *const ext[] = { ".tar.zst", ".tar.gz", ".tgz", ".tar.xz", ".tar",
					   ".zip", ".safetensors", ".bin", ".pt", ".pth" };
	for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
		size_t e = strlen(ext[i]);
		if (n - b > e && !strncmp(path + n - e, ext[i], e)) {
			n -= e;
			break;
		}
	}
	snprintf(out, cap, "%.*s", (int)(n - b), path + b);
}

/* MoE: experts arrive as separate tensors; llama.cpp stacks each layer's
 * experts of one kind into a 3-D tensor {in, out, n_expert}. */
struct expert_group {
	char name[256];
	const struct tfm_ckpt_tensor *parts[TFM_MAX_EXPERTS];
	int n;          /* highest expert index + 1 */
	unsigned flags;
};

static int add_experts(struct tfm_convert *cv, struct expert_group *eg)
{
	const struct tfm_ckpt_tensor *t0 = eg->parts[0];
	for (int e = 0; e < eg->n; e++) {
		const struct tfm_ckpt_tensor *t = eg->parts[e];
		if (!t || t->type != t0->type || t->n_dims != 2 || t->ne[0] != t0->ne[0] ||
		    t->ne[1] != t0->ne[1])
			return tfm_seterr(TFM_E_FORMAT, "%s: expert %d missing or of another shape",
					  eg->name, e);
	}
	int64_t ne[3] = { t0->ne[0], t0->ne[1], eg->n };
	int st = add_tensor(cv, eg->name, t0->type, 3, ne, NULL, eg->flags, 0);
	if (st)
		return st;
	struct cv_tensor *c = &cv->ts[cv->n_out - 1];
	c->srcs = tfm_calloc((size_t)eg->n, sizeof *c->srcs);
	if (!c->srcs)
		return TFM_E_NOMEM;
	for (int e = 0; e < eg->n; e++)
		c->srcs[e] = eg->parts[e]->data;
	c->n_src = eg->n;
	c->ne1 = t0->ne[1]; /* transforms see one expert at a time */
	return TFM_OK;
}

/* config.json's vocab_size against the rows of the embedding (or head):
 * a declared size the tensors do not have is refused here, not when the
 * model is run, and it bounds the tokenizer's ids (vocab-import.c). */
static int check_vocab_rows(struct tfm_convert *cv)
{
	const struct tfm_gguf_tensor *t = tfm_gguf_find_tensor(cv->g, "token_embd.weight");
	/* Marian unshared: the token tables have vocab_size rows, the head
	 * decoder_vocab_size (the spec's n_vocab) */
	int64_t rows = t && cv->spec.n_vocab_src > 0 ? cv->spec.n_vocab_src : cv->spec.n_vocab;
	if (!t)
		t = tfm_gguf_find_tensor(cv->g, "output.weight");
	if (!t || t->n_dims < 2 || t->ne[1] == rows)
		return TFM_OK;
	return tfm_seterr(TFM_E_FORMAT, "config.json: vocab_size %lld, but %s has %lld rows",
			  (long long)rows, t->name, (long long)t->ne[1]);
}

/* general.file_type, llama.cpp's LLAMA_FTYPE_MOSTLY_* of the 2-D weights:
 * the type most of their bytes have (all f32: 0). */
static uint32_t file_type(const struct tfm_convert *cv)
{
	double bytes[3] = { 0 }; /* f32, f16, bf16 */
	for (int64_t i = 0; i < cv->n_out; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(cv->g, i);
		int k = t->type == TFM_TYPE_F16 ? 1 : t->type == TFM_TYPE_BF16 ? 2 : 0;
		if (t->n_dims >= 2)
			bytes[k] += (double)t->nbytes;
	}
	return bytes[1] > bytes[0] && bytes[1] >= bytes[2] ? 1 : bytes[2] > bytes[0] ? 32 : 0;
}

/* generation_config.json's sampling defaults as llama.cpp's converter
 * writes them (general.sampling.*), for tfm-run and llama.cpp to start
 * from.  do_sample false is transformers' greedy decoding: temp 0. */
static int sampling_keys(const struct tfm_ckpt *ck, struct tfm_gguf *g)
{
	const struct tfm_ckpt_file *f = tfm_ckpt_file(ck, "generation_config.json");
	if (!f)
		return TFM_OK;
	json_error_t e;
	json_t *j = json_loadb((const char *)f->data, f->size, JSON_DECODE_INT_AS_REAL, &e);
	if (!json_is_object(j)) {
		json_decref(j);
		return tfm_seterr(TFM_E_FORMAT, "generation_config.json: line %d: %s", e.line, e.text);
	}
	static const struct { const char *hf, *key; int is_int; } map[] = {
		{ "top_k", "general.sampling.top_k", 1 },
		{ "top_p", "general.sampling.top_p", 0 },
		{ "min_p", "general.sampling.min_p", 0 },
		{ "temperature", "general.sampling.temp", 0 },
		{ "repetition_penalty", "general.sampling.penalty_repeat", 0 },
	};
	int st = TFM_OK;
	for (size_t i = 0; i < sizeof map / sizeof map[0] && !st; i++) {
		json_t *v = json_object_get(j, map[i].hf);
		if (!json_is_number(v))
			continue;
		double x = json_number_value(v);
		if (!(x >= 0 && x < 1e9))
			st = tfm_seterr(TFM_E_FORMAT, "generation_config.json: %s=%g is out of range",
					map[i].hf, x);
		else if (map[i].is_int)
			st = tfm_gguf_set_i32(g, map[i].key, (int32_t)x);
		else
			st = tfm_gguf_set_f32(g, map[i].key, (float)x);
	}
	if (!st && json_is_false(json_object_get(j, "do_sample")))
		st = tfm_gguf_set_f32(g, "general.sampling.temp", 0.0f);
	json_decref(j);
	return st;
}

/* transformers' generation defaults that decide which tokens generate
 * picks (beam search and its rules), as tfm.gen.* keys for tfm-run: from
 * generation_config.json, or from config.json when there is none (as
 * transformers' GenerationConfig.from_model_config).  early_stopping: 0
 * false, 1 true, 2 "never". */
static int generation_keys(const struct tfm_ckpt *ck, struct tfm_gguf *g)
{
	const struct tfm_ckpt_file *f = tfm_ckpt_file(ck, "generation_config.json");
	const char *name = "generation_config.json";
	if (!f)
		f = tfm_ckpt_file(ck, "config.json"), name = "config.json";
	if (!f)
		return TFM_OK;
	json_error_t e;
	json_t *j = json_loadb((const char *)f->data, f->size, 0, &e);
	if (!json_is_object(j)) {
		json_decref(j);
		return tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", name, e.line, e.text);
	}
	static const struct { const char *hf, *key; double lo, hi; } map[] = {
		{ "num_beams", "tfm.gen.num_beams", 1, 256 },
		{ "no_repeat_ngram_size", "tfm.gen.no_repeat_ngram_size", 0, 1 << 20 },
		{ "max_length", "tfm.gen.max_length", 0, 2147483647.0 },
		{ "max_new_tokens", "tfm.gen.max_new_tokens", 0, 2147483647.0 },
		{ "min_length", "tfm.gen.min_length", 0, 2147483647.0 },
		{ "forced_bos_token_id", "tfm.gen.forced_bos_token_id", 0, 2147483647.0 },
		{ "forced_eos_token_id", "tfm.gen.forced_eos_token_id", 0, 2147483647.0 },
		{ "decoder_start_token_id", "tfm.gen.decoder_start_token_id", 0, 2147483647.0 },
	};
	int st = TFM_OK;
	for (size_t i = 0; i < sizeof map / sizeof map[0] && !st; i++) {
		json_t *v = json_object_get(j, map[i].hf);
		if (json_is_array(v) && json_array_size(v) == 1) /* [id] */
			v = json_array_get(v, 0);
		if (json_is_null(v) || !v)
			continue;
		double x = json_is_number(v) ? json_number_value(v) : NAN;
		if (!(x >= map[i].lo && x <= map[i].hi) || x != floor(x))
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: %s not supported (an integer from %g "
					"to %g)", name, map[i].hf, map[i].lo, map[i].hi);
		else
			st = tfm_gguf_set_i32(g, map[i].key, (int32_t)x);
	}
	json_t *lp = json_object_get(j, "length_penalty"), *es = json_object_get(j, "early_stopping");
	if (!st && json_is_number(lp)) {
		double x = json_number_value(lp);
		st = isfinite(x) && fabs(x) < 1e6
			? tfm_gguf_set_f32(g, "tfm.gen.length_penalty", (float)x)
			: tfm_seterr(TFM_E_FORMAT, "%s: length_penalty=%g", name, x);
	}
	if (!st && es && !json_is_null(es)) {
		int v = json_is_true(es) ? 1 : json_is_false(es) ? 0
			: json_is_string(es) && !strcmp(json_string_value(es), "never") ? 2 : -1;
		st = v >= 0 ? tfm_gguf_set_i32(g, "tfm.gen.early_stopping", v)
			    : tfm_seterr(TFM_E_UNSUPPORTED, "%s: early_stopping not supported (true, "
					 "false or \"never\")", name);
	}
	json_decref(j);
	return st;
}

/* --set attn.n_head_kv=K: check the spec can be pooled, then set it. */
static int pool_setup(struct tfm_convert *cv, int64_t k)
{
	struct tfm_spec *s = &cv->spec;
	cv->spec_src = *s;
	int64_t nkv = s->n_head_kv ? s->n_head_kv : s->n_head;
	if (k <= 0 || k == nkv)
		return TFM_OK;
	const char *arch = s->arch[0] ? s->arch : "model";
	if (s->kv_lora_rank)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: attn.n_head_kv=%lld: MLA has no KV heads "
				  "to pool", arch, (long long)k);
	if (k > nkv || nkv % k)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: attn.n_head_kv=%lld: %lld KV heads do not "
				  "pool into %lld groups", arch, (long long)k, (long long)nkv,
				  (long long)k);
	if (s->qk_norm == TFM_QK_NORM_FULL)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: attn.n_head_kv=%lld: a key norm over all "
				  "heads cannot be pooled", arch, (long long)k);
	cv->pool_r = nkv / k;
	cv->pool_hd = s->head_dim ? s->head_dim : s->n_embd / s->n_head;
	s->n_head_kv = k;
	return TFM_OK;
}

static int from_ckpt(struct tfm_convert *cv, const char *path, const struct tfm_convert_opts *o)
{
	struct tfm_ckpt_opts co = { .vocab = o ? o->vocab : NULL,
				    .config_only = o ? o->config_only : 0 };
	struct expert_group *groups = NULL;
	int n_groups = 0;
	int st = tfm_ckpt_open(&cv->ck, path, &co);
	if (st)
		return st;
	struct tfm_ckpt *ck = cv->ck;
	if (!ck->config)
		return tfm_seterr(TFM_E_FORMAT, "%s: no config.json", path);
	if ((st = tfm_spec_from_config(&cv->spec, ck->config)))
		return tfm_adderr(st, "%s", path);
	if ((st = pool_setup(cv, o ? o->n_head_kv : 0)))
		return tfm_adderr(st, "%s", path);
	/* one output per source tensor, two for a split gate_up */
	cv->ts = tfm_calloc(2 * (size_t)ck->n_tensors + 1, sizeof *cv->ts);
	if (!cv->ts)
		return TFM_E_NOMEM;
	unsigned seen = 0; /* union of the flags met */
	for (int64_t i = 0; i < ck->n_tensors; i++) {
		const struct tfm_ckpt_tensor *t = &ck->tensors[i];
		char name[256];
		unsigned flags = 0;
		if (ck->naming == TFM_NAMES_GGUF) {
			snprintf(name, sizeof name, "%s", t->name);
		} else {
			/* Marian unshared: each stack's embed_tokens its own table */
			const char *arch = cv->spec.enc_embd && !strcmp(cv->spec.arch, "marian")
					   ? "marian-unshared" : cv->spec.arch;
			st = tfm_hfmap_name(arch, t->name, name, sizeof name, &flags);
			if (st)
				goto out;
			if (flags & TFM_HFMAP_SKIP)
				continue;
			seen |= flags;
		}
		if (flags & TFM_HFMAP_EXPERT) {
			int e = TFM_HFMAP_EXPERT_ID(flags), g;
			if (e >= TFM_MAX_EXPERTS) {
				st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: more than %d experts", t->name,
						TFM_MAX_EXPERTS);
				goto out;
			}
			for (g = 0; g < n_groups && strcmp(groups[g].name, name); g++)
				;
			if (g == n_groups) {
				struct expert_group *ng = tfm_realloc(groups, (size_t)(g + 1) * sizeof *ng);
				if (!ng) {
					st = TFM_E_NOMEM;
					goto out;
				}
				groups = ng;
				memset(&groups[g], 0, sizeof groups[g]);
				snprintf(groups[g].name, sizeof groups[g].name, "%s", name);
				groups[g].flags = flags & ~0xffff0000u & ~(unsigned)TFM_HFMAP_EXPERT;
				n_groups++;
			}
			groups[g].parts[e] = t;
			if (e + 1 > groups[g].n)
				groups[g].n = e + 1;
			continue;
		}
		if (flags & TFM_HFMAP_SPLIT_GATE_UP) { /* gate, then up from the same source */
			char up[256];
			const char *g = strstr(name, "ffn_gate_exps");
			if (!g) {
				st = tfm_seterr(TFM_E_FORMAT, "%s: split target %s", t->name, name);
				goto out;
			}
			snprintf(up, sizeof up, "%.*sffn_up_exps%s", (int)(g - name), name,
				 g + strlen("ffn_gate_exps"));
			if ((st = add_tensor(cv, name, t->type, t->n_dims, t->ne, t->data, flags, 1)) ||
			    (st = add_tensor(cv, up, t->type, t->n_dims, t->ne, t->data, flags, 2)))
				goto out;
			continue;
		}
		if ((st = add_tensor(cv, name, t->type, t->n_dims, t->ne, t->data, flags, 0)))
			goto out;
	}
	for (int g = 0; g < n_groups; g++)
		if ((st = add_experts(cv, &groups[g])))
			goto out;
	/* Q/K rows permuted to llama.cpp's layout: rotary pairs become adjacent */
	if (seen & (TFM_HFMAP_PERMUTE_Q | TFM_HFMAP_PERMUTE_K))
		cv->spec.rope_interleaved = 1;
	/* gemma norms are stored as w (not w-1) in GGUF, as llama.cpp does */
	if (seen & TFM_HFMAP_ADD_ONE)
		cv->spec.norm_plus_one = 0;
	if ((st = check_vocab_rows(cv)) || (st = tfm_st_import(ck, &cv->spec, cv->g)))
		goto out;
	char name[256];
	model_name(ck, path, name, sizeof name);
	if ((st = tfm_gguf_set_str(cv->g, "general.name", name)) ||
	    (st = tfm_gguf_set_u32(cv->g, "general.file_type", file_type(cv))) ||
	    (st = tfm_tokenizer_to_gguf(ck, cv->g)) || (st = sampling_keys(ck, cv->g)) ||
	    (cv->spec.family == TFM_FAMILY_ENCDEC && (st = generation_keys(ck, cv->g))))
		goto out;
	/* the spec's token ids are the tokenizer's, where it has them: one
	 * BOS in the file, not tokenizer.ggml.bos_token_id 1 beside
	 * tfm.tok.bos_id -1 */
	int64_t id;
	if ((id = tfm_gguf_get_int_or(cv->g, "tokenizer.ggml.bos_token_id", -1)) >= 0)
		cv->spec.bos_id = (int32_t)id;
	if ((id = tfm_gguf_get_int_or(cv->g, "tokenizer.ggml.eos_token_id", -1)) >= 0)
		cv->spec.eos_id = (int32_t)id;
	if ((id = tfm_gguf_get_int_or(cv->g, "tokenizer.ggml.padding_token_id", -1)) >= 0)
		cv->spec.pad_id = (int32_t)id;
	st = tfm_spec_to_gguf(&cv->spec, cv->g);
out:
	free(groups);
	if (st)
		tfm_adderr(st, "%s", path);
	return st;
}

static int from_gguf(struct tfm_convert *cv, const struct tfm_convert_opts *o)
{
	struct tfm_gguf *src = cv->src;
	int st;
	/* every key as it was, then the spec keys (added when absent) */
	for (int64_t i = 0; i < tfm_gguf_n_kv(src); i++)
		if ((st = tfm_gguf_copy_kv(cv->g, src, i)))
			return st;
	if ((st = tfm_spec_from_gguf(&cv->spec, src)))
		return tfm_adderr(st, "%s", cv->blob.name);
	if ((st = pool_setup(cv, o ? o->n_head_kv : 0)))
		return tfm_adderr(st, "%s", cv->blob.name);
	if ((st = tfm_spec_to_gguf(&cv->spec, cv->g)))
		return st;
	int64_t n = tfm_gguf_n_tensors(src);
	cv->ts = tfm_calloc((size_t)n + 1, sizeof *cv->ts);
	if (!cv->ts)
		return TFM_E_NOMEM;
	for (int64_t i = 0; i < n; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(src, i);
		if ((st = add_tensor(cv, t->name, t->type, t->n_dims, t->ne, t->data, 0, 0)))
			return st;
	}
	if (cv->warned_dequant) /* no longer the quantized file type */
		return tfm_gguf_set_u32(cv->g, "general.file_type", file_type(cv));
	return TFM_OK;
}

int tfm_convert_open(struct tfm_convert **out, const char *path, const struct tfm_convert_opts *o)
{
	*out = NULL;
	struct tfm_convert *cv = tfm_calloc(1, sizeof *cv);
	if (!cv)
		return TFM_E_NOMEM;
	cv->dtype = o ? o->dtype : -1;
	int st;
	if (cv->dtype >= 0 && !is_float_type(cv->dtype)) {
		st = tfm_seterr(TFM_E_INVAL, "--dtype %s: tfm-convert writes f32, f16 or bf16 "
				"(use tfm-quant for quantized types)", tfm_type_name(cv->dtype));
		goto fail;
	}
	st = tfm_gguf_new(&cv->g);
	if (st)
		goto fail;
	/* A GGUF (possibly zstd-compressed, possibly on stdin) is re-written;
	 * anything else is a checkpoint.  A path is told apart by its first
	 * bytes, so a checkpoint is read (and decompressed) once, by ckpt. */
	if (!path)
		path = "-";
	int is_gguf = tfm_path_is_dir(path) ? 0 : tfm_gguf_probe(path);
	if (is_gguf < 0) {
		st = is_gguf;
		goto fail;
	}
	if (is_gguf) {
		if ((st = tfm_blob_open(&cv->blob, path)))
			goto fail;
		if (!tfm_gguf_is_gguf(cv->blob.data, cv->blob.size)) {
			st = tfm_seterr(TFM_E_UNSUPPORTED, "%s: not a GGUF file; other "
					"checkpoint formats are read from a path", cv->blob.name);
			goto fail;
		}
		st = tfm_gguf_parse(&cv->src, cv->blob.data, cv->blob.size, cv->blob.name);
		if (!st)
			st = from_gguf(cv, o);
		if (st)
			goto fail;
		*out = cv;
		return TFM_OK;
	}
	if ((st = from_ckpt(cv, path, o)))
		goto fail;
	*out = cv;
	return TFM_OK;
fail:
	tfm_convert_close(cv);
	return st;
}

struct tfm_gguf *tfm_convert_gguf(struct tfm_convert *cv) { return cv->g; }

int tfm_convert_load(struct tfm_convert *cv)
{
	if (cv->loaded)
		return TFM_OK;
	/* Produce every tensor that is not direct, then rebuild the GGUF with
	 * data pointers (the produce callbacks are not visible through the
	 * public tensor view, and produce is not called again). */
	/* what will be produced in memory, checked against the limit first */
	double need = 0;
	for (int64_t i = 0; i < cv->n_out; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(cv->g, i);
		if (!t->data || (uintptr_t)t->data % 4)
			need += (double)t->nbytes;
	}
	int st = tfm_mem_check(need, "converting the checkpoint in memory");
	if (st)
		return st;
	struct tfm_gguf *g2;
	if ((st = tfm_gguf_new(&g2)))
		return st;
	for (int64_t i = 0; i < tfm_gguf_n_kv(cv->g); i++)
		if ((st = tfm_gguf_copy_kv(g2, cv->g, i)))
			goto fail;
	for (int64_t i = 0; i < cv->n_out; i++) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(cv->g, i);
		const void *data = t->data;
		/* produced tensors get a buffer; so do sources read in place (zip,
		 * tar, safetensors) that are unaligned, since the model casts
		 * weights to element pointers */
		if (!data || (uintptr_t)data % 4) {
			void *buf = tfm_amalloc(t->nbytes);
			if (!buf) {
				st = TFM_E_NOMEM;
				goto fail;
			}
			if (data)
				memcpy(buf, data, t->nbytes);
			else if ((st = produce(&cv->ts[i], t, buf))) {
				tfm_afree(buf);
				goto fail;
			}
			cv->ts[i].buf = buf;
			data = buf;
		}
		st = tfm_gguf_add_tensor(g2, t->name, t->type, t->n_dims, t->ne, data, NULL, NULL);
		if (st)
			goto fail;
	}
	tfm_gguf_free(cv->g);
	cv->g = g2;
	cv->loaded = 1;
	return TFM_OK;
fail:
	tfm_gguf_free(g2);
	return st;
}

void tfm_convert_close(struct tfm_convert *cv)
{
	if (!cv)
		return;
	if (cv->ts)
		for (int64_t i = 0; i < cv->n_out; i++) {
			tfm_afree(cv->ts[i].buf);
			if (cv->ts[i].srcs != &cv->ts[i].src)
				free(cv->ts[i].srcs);
		}
	free(cv->ts);
	tfm_gguf_free(cv->g);
	tfm_gguf_free(cv->src);
	tfm_blob_close(&cv->blob);
	tfm_ckpt_close(cv->ck);
	free(cv);
}
