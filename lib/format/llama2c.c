/* llama2c.c: llama2.c checkpoints (Karpathy's run.c): the legacy file (7
 * int32 header, negative vocab = separate classifier) and version 1 ('ak42',
 * 256-byte header), all f32.  Tensors get GGUF names and point into the
 * mapped file; the config is a synthesized llama config. */
#include "format/ckpt-impl.h"

#include <stdio.h>
#include <string.h>

#define AK42_MAGIC 0x616b3432u

struct l2c_params {
	int32_t dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len;
	int shared;     /* classifier shared with the token embedding */
	int version;    /* 0 legacy, 1 ak42 */
	size_t header;  /* bytes before the first tensor */
};

/* Plausible llama2.c hyper-parameters: the header has no magic, so these
 * bounds (and later the exact file size) keep other files from matching. */
static int plausible(const struct l2c_params *p)
{
	return p->dim > 0 && p->dim <= (1 << 16) && p->hidden > 0 && p->hidden <= (1 << 18) &&
	       p->n_layers > 0 && p->n_layers <= 1024 && p->n_heads > 0 &&
	       p->n_heads <= p->dim && p->dim % p->n_heads == 0 && p->n_kv_heads > 0 &&
	       p->n_kv_heads <= p->n_heads && p->n_heads % p->n_kv_heads == 0 &&
	       p->vocab > 0 && p->vocab <= (1 << 22) && p->seq_len > 0 &&
	       p->seq_len <= (1 << 22);
}

static int read_params(const uint8_t *d, size_t n, struct l2c_params *p)
{
	int32_t h[7];
	uint32_t magic;
	memset(p, 0, sizeof *p);
	if (n < 28)
		return -1;
	memcpy(&magic, d, 4);
	if (magic == AK42_MAGIC) {
		if (n < 256)
			return -1;
		memcpy(&p->version, d + 4, 4);
		memcpy(h, d + 8, 28);
		p->shared = d[36];
		p->header = 256;
	} else {
		memcpy(h, d, 28);
		p->header = 28;
	}
	p->dim = h[0], p->hidden = h[1], p->n_layers = h[2], p->n_heads = h[3];
	p->n_kv_heads = h[4], p->vocab = h[5], p->seq_len = h[6];
	if (p->version == 0) {
		p->shared = p->vocab > 0;
		if (p->vocab < 0 && p->vocab != INT32_MIN)
			p->vocab = -p->vocab;
	}
	return 0;
}

int tfm_llama2c_bid(const uint8_t *d, size_t n)
{
	struct l2c_params p;
	uint32_t magic;
	if (n >= 4) {
		memcpy(&magic, d, 4);
		if (magic == AK42_MAGIC)
			return 1;  /* the version is checked in parse, with a message */
	}
	return !read_params(d, n, &p) && plausible(&p);
}

/* One stacked tensor [n_layers][rows][cols] in the file, or a single one. */
struct l2c_part {
	const char *name;  /* GGUF name, "%d" for the layer */
	int64_t rows, cols;
	int per_layer;
	int nd;            /* 1 for the norm vectors (rows is then 1) */
};

/* Add layer l of part t (or the single tensor when t is not per layer),
 * whose stack starts at p. */
static int add(struct tfm_ckpt *c, const struct l2c_part *t, int l, const float *p)
{
	char name[96];
	int64_t shape[2] = { t->rows, t->cols };
	size_t n = (size_t)(t->rows * t->cols);
	if (t->nd == 1)
		shape[0] = t->cols;
	snprintf(name, sizeof name, t->name, l);
	return tfm_ckpt_add_tensor(c, name, TFM_TYPE_F32, t->nd, shape, p + (size_t)l * n,
				   n * sizeof(float));
}

static int64_t numel(const struct l2c_part *t, int n_layers)
{
	return t->rows * t->cols * (t->per_layer ? n_layers : 1);
}

int tfm_llama2c_parse(struct tfm_ckpt *c, const uint8_t *d, size_t n)
{
	struct l2c_params p;
	if (read_params(d, n, &p))
		return tfm_seterr(TFM_E_FORMAT, "%s: llama2.c: truncated header", c->source);
	if (p.version != 0 && p.version != 1)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: llama2.c file version %d (tfm reads the "
				  "legacy format and version 1, f32)", c->source, p.version);
	if (!plausible(&p))
		return tfm_seterr(TFM_E_FORMAT, "%s: llama2.c: implausible header (dim %d, hidden "
				  "%d, layers %d, heads %d, kv heads %d, vocab %d, seq_len %d)",
				  c->source, p.dim, p.hidden, p.n_layers, p.n_heads, p.n_kv_heads,
				  p.vocab, p.seq_len);
	int64_t dim = p.dim, hid = p.hidden, vocab = p.vocab, hs = p.dim / p.n_heads;
	int64_t kv_dim = hs * p.n_kv_heads;
	int L = p.n_layers;
	/* shapes are torch's [out, in]; add_tensor turns them into ggml order */
	const struct l2c_part emb = { "token_embd.weight", vocab, dim, 0, 2 },
		att_norm = { "blk.%d.attn_norm.weight", 1, dim, 1, 1 },
		wq = { "blk.%d.attn_q.weight", dim, dim, 1, 2 },
		wk = { "blk.%d.attn_k.weight", kv_dim, dim, 1, 2 },
		wv = { "blk.%d.attn_v.weight", kv_dim, dim, 1, 2 },
		wo = { "blk.%d.attn_output.weight", dim, dim, 1, 2 },
		ffn_norm = { "blk.%d.ffn_norm.weight", 1, dim, 1, 1 },
		w1 = { "blk.%d.ffn_gate.weight", hid, dim, 1, 2 },
		w2 = { "blk.%d.ffn_down.weight", dim, hid, 1, 2 },
		w3 = { "blk.%d.ffn_up.weight", hid, dim, 1, 2 },
		norm = { "output_norm.weight", 1, dim, 0, 1 },
		freq = { NULL, p.seq_len, hs / 2, 0, 2 },  /* freq_cis_real, then _imag */
		wcls = { "output.weight", vocab, dim, 0, 2 };
	/* file order, per export.py legacy_export / version1_export */
	const struct l2c_part *legacy[] = { &emb, &att_norm, &wq, &wk, &wv, &wo, &ffn_norm,
		&w1, &w2, &w3, &norm, &freq, &freq, &wcls };
	const struct l2c_part *v1[] = { &att_norm, &ffn_norm, &norm, &emb, &wq, &wk, &wv, &wo,
		&w1, &w2, &w3, &wcls };
	const struct l2c_part **order = p.version ? v1 : legacy;
	int n_parts = p.version ? 12 : 14;
	if (p.shared)
		n_parts--;  /* wcls is last */
	int64_t total = 0;
	for (int i = 0; i < n_parts; i++)
		total += numel(order[i], L);
	uint64_t want = p.header + (uint64_t)total * 4;
	if (n != want)
		return tfm_seterr(TFM_E_FORMAT, "%s: llama2.c: file is %zu bytes, but dim %d, "
				  "hidden %d, %d layers, %d/%d heads, vocab %d, seq_len %d%s need "
				  "%llu (truncated?)", c->source, n, p.dim, p.hidden, p.n_layers,
				  p.n_heads, p.n_kv_heads, p.vocab, p.seq_len,
				  p.shared ? "" : " and a separate classifier",
				  (unsigned long long)want);
	/* where each stack starts, in file order */
	const float *f = (const float *)(d + p.header);  /* 4-aligned: header is 28 or 256 */
	const float *at[14];
	for (int i = 0; i < n_parts; i++) {
		at[i] = f;
		f += numel(order[i], L);
	}
	/* tensors in llama.cpp's order: embedding, layer by layer, head */
	const struct l2c_part *out[] = { &att_norm, &wq, &wk, &wv, &wo, &ffn_norm, &w1, &w2, &w3,
		&emb, &norm, &wcls };  /* 9 per layer, then 3 single */
	int st;
	for (int l = -1; l <= L; l++) {
		int j0 = l < 0 ? 9 : l < L ? 0 : 10, j1 = l < 0 ? 10 : l < L ? 9 : 12;
		for (int j = j0; j < j1; j++)
			for (int i = 0; i < n_parts; i++)
				if (order[i] == out[j] &&
				    (st = add(c, out[j], out[j]->per_layer ? l : 0, at[i])))
					return st;
	}
	c->naming = TFM_NAMES_GGUF;
	c->config = json_pack("{s:s, s:[s], s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:b, "
			      "s:s, s:b}",
			      "model_type", "llama", "architectures", "LlamaForCausalLM",
			      "hidden_size", (json_int_t)dim, "intermediate_size", (json_int_t)hid,
			      "num_hidden_layers", (json_int_t)L,
			      "num_attention_heads", (json_int_t)p.n_heads,
			      "num_key_value_heads", (json_int_t)p.n_kv_heads,
			      "vocab_size", (json_int_t)vocab,
			      "max_position_embeddings", (json_int_t)p.seq_len,
			      "rms_norm_eps", 1e-5, "rope_theta", 10000.0,
			      "tie_word_embeddings", p.shared, "hidden_act", "silu",
			      /* llama2.c keeps Meta's pairwise (interleaved) rotary layout */
			      "rope_interleaved", 1);
	if (!c->config)
		return tfm_seterr(TFM_E_NOMEM, "%s: cannot build the config", c->source);
	return TFM_OK;
}
