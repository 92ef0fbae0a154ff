/* random.c: a model with random weights from a spec alone, for benchmarks.
 * The tensor list mirrors what load.c binds for the spec (llama.cpp names);
 * the buffers are owned by the model and freed with it. */
#include "model/model-impl.h"
#include "format/gguf.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rnd {
	struct tfm_model_tensor *t;
	void **bufs;
	int64_t n, cap;
	uint64_t state;
	int type;
	int st;
};

static float next(struct rnd *r) /* uniform in [-1, 1) */
{
	r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((r->state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

/* a tensor {ne0, ne1} with values center + scale * U(-1, 1); 2-D ones
 * stored as r->type */
static void add3(struct rnd *r, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
		 float center, float scale);

static void add(struct rnd *r, const char *name, int64_t ne0, int64_t ne1, float center,
		float scale)
{
	add3(r, name, ne0, ne1, 1, center, scale);
}

/* {ne0, ne1, ne2}: ne2 > 1 stacks experts */
static void add3(struct rnd *r, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
		 float center, float scale)
{
	if (r->st)
		return;
	if (r->n == r->cap) {
		int64_t cap = r->cap ? 2 * r->cap : 64;
		struct tfm_model_tensor *t = tfm_realloc(r->t, (size_t)cap * sizeof *t);
		void **b = t ? tfm_realloc(r->bufs, (size_t)cap * 2 * sizeof *b) : NULL;
		if (t)
			r->t = t;
		if (!t || !b) {
			r->st = TFM_E_NOMEM;
			return;
		}
		r->bufs = b;
		r->cap = cap;
	}
	int type = ne1 > 1 ? r->type : TFM_TYPE_F32;
	ne1 *= ne2; /* rows */
	size_t nb = tfm_type_nbytes(type, ne0) * (size_t)ne1;
	float *f = tfm_malloc((size_t)(ne0 * ne1) * sizeof *f);
	char *nm = tfm_strdup(name);
	void *data = type == TFM_TYPE_F32 ? f : nb ? tfm_malloc(nb) : NULL;
	r->bufs[2 * r->n] = nm;
	r->bufs[2 * r->n + 1] = data;
	if (!f || !nm || !data) {
		if (data != f)
			free(f);
		r->st = nb || type == TFM_TYPE_F32 ? TFM_E_NOMEM
			: tfm_seterr(TFM_E_UNSUPPORTED, "%s: rows of %lld in %s", name,
				     (long long)ne0, tfm_type_name(type));
		r->n++;
		return;
	}
	for (int64_t i = 0; i < ne0 * ne1; i++)
		f[i] = center + scale * next(r);
	if (data != f) {
		for (int64_t row = 0; row < ne1 && !r->st; row++)
			r->st = tfm_quantize_row(type, f + row * ne0,
						 (uint8_t *)data + (size_t)row * (nb / (size_t)ne1), ne0);
		free(f);
	}
	struct tfm_model_tensor *t = &r->t[r->n++];
	t->name = nm;
	t->type = type;
	t->n_dims = ne2 > 1 ? 3 : ne1 > 1 ? 2 : 1;
	t->ne[0] = ne0, t->ne[1] = ne1 / ne2, t->ne[2] = ne2, t->ne[3] = 1;
	t->data = data;
}

/* The last tensor added, reshaped to {ne0, ne1, ne2, ne3} (the same count) */
static void shape4(struct rnd *r, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3)
{
	if (r->st || !r->n)
		return;
	struct tfm_model_tensor *t = &r->t[r->n - 1];
	t->n_dims = ne3 > 1 ? 4 : ne2 > 1 ? 3 : ne1 > 1 ? 2 : 1;
	t->ne[0] = ne0, t->ne[1] = ne1, t->ne[2] = ne2, t->ne[3] = ne3;
}

static void norm(struct rnd *r, const struct tfm_spec *s, const char *prefix, int64_t n)
{
	char name[96];
	snprintf(name, sizeof name, "%s.weight", prefix);
	add(r, name, n, 1, s->norm_plus_one ? 0 : 1, 0);
	if (s->norm_bias) {
		snprintf(name, sizeof name, "%s.bias", prefix);
		add(r, name, n, 1, 0, 0);
	}
}

/* A mamba layer: A negative (decay), D near 1, dt bias near softplus^-1(0.01) */
static void mamba(struct rnd *r, const struct tfm_spec *s, int64_t l)
{
	int64_t d = s->n_embd, di = s->ssm_d_inner, ds = s->ssm_d_state, R = s->ssm_dt_rank;
	char n[96];
#define N(x) (snprintf(n, sizeof n, "blk.%lld." x, (long long)l), n)
	norm(r, s, N("attn_norm"), d);
	add(r, N("ssm_in.weight"), d, 2 * di, 0, 1 / sqrtf((float)d));
	add(r, N("ssm_conv1d.weight"), s->ssm_d_conv, di, 0, 1 / sqrtf((float)s->ssm_d_conv));
	if (s->ssm_conv_bias)
		add(r, N("ssm_conv1d.bias"), di, 1, 0, 0.02f);
	add(r, N("ssm_x.weight"), di, R + 2 * ds, 0, 1 / sqrtf((float)di));
	add(r, N("ssm_dt.weight"), R, di, 0, 1 / sqrtf((float)R));
	add(r, N("ssm_dt.bias"), di, 1, -4.6f, 0.5f);
	add(r, N("ssm_a"), ds, di, -1, 0.5f);
	add(r, N("ssm_d"), di, 1, 1, 0.1f);
	add(r, N("ssm_out.weight"), di, d, 0, 1 / sqrtf((float)di));
	if (s->ssm_dt_norm && s->ssm_norm_w) { /* jamba's dt, B, C norm weights */
		norm(r, s, N("ssm_dt_norm"), R);
		norm(r, s, N("ssm_b_norm"), ds);
		norm(r, s, N("ssm_c_norm"), ds);
	}
	if (s->ssm_bias) {
		add(r, N("ssm_in.bias"), 2 * di, 1, 0, 0.02f);
		add(r, N("ssm_out.bias"), d, 1, 0, 0.02f);
	}
#undef N
}

/* A Gated DeltaNet layer (qwen3_next): A negative per value head, dt bias
 * near softplus^-1(0.01) as mamba2's */
static void gdn(struct rnd *r, const struct tfm_spec *s, int64_t l)
{
	int64_t d = s->n_embd, vd = s->ssm_d_inner, nv = s->ssm_n_head;
	int64_t cd = 2 * s->ssm_n_group * s->ssm_d_state + vd;
	char n[96];
#define N(x) (snprintf(n, sizeof n, "blk.%lld." x, (long long)l), n)
	norm(r, s, N("attn_norm"), d);
	add(r, N("ssm_in.weight"), d, cd + vd, 0, 1 / sqrtf((float)d));
	add(r, N("ssm_ba.weight"), d, 2 * nv, 0, 1 / sqrtf((float)d));
	add(r, N("ssm_conv1d.weight"), s->ssm_d_conv, cd, 0, 1 / sqrtf((float)s->ssm_d_conv));
	add(r, N("ssm_dt.bias"), nv, 1, -4.6f, 0.5f);
	add(r, N("ssm_a"), nv, 1, -1, 0.5f);
	add(r, N("ssm_norm.weight"), vd / nv, 1, 1, 0.1f);
	add(r, N("ssm_out.weight"), vd, d, 0, 1 / sqrtf((float)vd));
#undef N
}

/* A mamba2 layer: A negative per head, D near 1, dt bias near
 * softplus^-1(0.01), the gated norm's weight near 1 */
static void mamba2(struct rnd *r, const struct tfm_spec *s, int64_t l)
{
	int64_t d = s->n_embd, di = s->ssm_d_inner, nh = s->ssm_n_head;
	int64_t cd = di + 2 * s->ssm_n_group * s->ssm_d_state, proj = di + cd + nh;
	char n[96];
#define N(x) (snprintf(n, sizeof n, "blk.%lld." x, (long long)l), n)
	norm(r, s, N("attn_norm"), d);
	add(r, N("ssm_in.weight"), d, proj, 0, 1 / sqrtf((float)d));
	add(r, N("ssm_conv1d.weight"), s->ssm_d_conv, cd, 0, 1 / sqrtf((float)s->ssm_d_conv));
	if (s->ssm_conv_bias)
		add(r, N("ssm_conv1d.bias"), cd, 1, 0, 0.02f);
	add(r, N("ssm_dt.bias"), nh, 1, -4.6f, 0.5f);
	add(r, N("ssm_a"), nh, 1, -1, 0.5f);
	shape4(r, 1, nh, 1, 1); /* llama.cpp's shapes */
	add(r, N("ssm_d"), nh, 1, 1, 0.1f);
	shape4(r, 1, nh, 1, 1);
	add(r, N("ssm_norm.weight"), di, 1, 1, 0.1f);
	shape4(r, di / s->ssm_n_group, s->ssm_n_group, 1, 1);
	add(r, N("ssm_out.weight"), di, d, 0, 1 / sqrtf((float)di));
	if (s->ssm_bias) {
		add(r, N("ssm_in.bias"), proj, 1, 0, 0.02f);
		add(r, N("ssm_out.bias"), d, 1, 0, 0.02f);
	}
#undef N
}

/* An xLSTM mLSTM mixer: forget gates open (bias near 3), input
 * gates small (near -3), as xLSTM initialises them less extremely */
static void mlstm(struct rnd *r, const struct tfm_spec *s, int64_t l)
{
	int64_t d = s->n_embd, qk = s->xlstm_qk_dim, vd = s->xlstm_v_dim, nh = s->ssm_n_head;
	float wd = 1 / sqrtf((float)d);
	char n[96];
#define N(x) (snprintf(n, sizeof n, "blk.%lld." x, (long long)l), n)
	norm(r, s, N("attn_norm"), d);
	add(r, N("mlstm_q.weight"), d, qk, 0, wd);
	add(r, N("mlstm_k.weight"), d, qk, 0, wd);
	add(r, N("mlstm_v.weight"), d, vd, 0, wd);
	add(r, N("mlstm_ogate.weight"), d, vd, 0, wd);
	add(r, N("mlstm_igate.weight"), d, nh, 0, wd);
	add(r, N("mlstm_igate.bias"), nh, 1, -3, 0.5f);
	add(r, N("mlstm_fgate.weight"), d, nh, 0, wd);
	add(r, N("mlstm_fgate.bias"), nh, 1, 3, 0.5f);
	add(r, N("mlstm_norm.weight"), vd, 1, 1, 0.1f);
	add(r, N("mlstm_out.weight"), vd, d, 0, 1 / sqrtf((float)vd));
#undef N
}

/* An RWKV v4 block: lerps in (0, 1), decay -exp(.) near -1; v5: decay
 * exp(-exp(.)) in (0, 1) (v5.1 per head), the group norm, v5.2's gate; v6:
 * the fused token-shift lerps, their low-rank pair (w2 {rank, n_embd, 5}, llama.cpp's shape),
 * raw time_decay near -1 and the decay's pair, the bonus and gate; v7:
 * its vectors and low-rank pairs (no value residual in layer 0) */
static void rwkv(struct rnd *r, const struct tfm_spec *s, int64_t l)
{
	int64_t d = s->n_embd, ff = s->n_ff;
	float wd = 1 / sqrtf((float)d);
	char n[96];
#define N(x) (snprintf(n, sizeof n, "blk.%lld." x, (long long)l), n)
	norm(r, s, N("attn_norm"), d);
	norm(r, s, N("attn_norm_2"), d);
	add(r, N("time_mix_key.weight"), d, d, 0, wd);
	add(r, N("time_mix_value.weight"), d, d, 0, wd);
	add(r, N("time_mix_receptance.weight"), d, d, 0, wd);
	add(r, N("time_mix_output.weight"), d, d, 0, wd);
	add(r, N("channel_mix_lerp_k.weight"), d, 1, 0.5f, 0.3f);
	add(r, N("channel_mix_key.weight"), d, ff, 0, wd);
	add(r, N("channel_mix_value.weight"), ff, d, 0, 1 / sqrtf((float)ff));
	if (s->rwkv_version >= 5)
		norm(r, s, N("time_mix_ln"), d);
	if (s->rwkv_version == 7) { /* w0 near -1: decays near exp(-0.6 sigmoid(-1)) */
		static const char *const lo[4][2] = {{"time_mix_w1.weight", "time_mix_w2.weight"},
						     {"time_mix_a1.weight", "time_mix_a2.weight"},
						     {"time_mix_v1.weight", "time_mix_v2.weight"},
						     {"time_mix_g1.weight", "time_mix_g2.weight"}};
		const int64_t rk[4] = {s->rwkv_lora_w, s->rwkv_lora_a, s->rwkv_lora_v,
				       s->rwkv_lora_g};
		for (int i = 0; i < 4; i++) {
			/* the first layer's value is the residual: no v1, v2
			 * of its own, but llama.cpp's loader wants them (unused,
			 * of a's rank, as its converter writes a's there) */
			int64_t rank = i == 2 && l == 0 ? rk[1] : rk[i];
			snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, lo[i][0]);
			add(r, n, d, rank, 0, wd);
			snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, lo[i][1]);
			add(r, n, rank, d, 0, 1 / sqrtf((float)rank));
		}
		add(r, N("time_mix_lerp_fused.weight"), 6 * d, 1, 0.5f, 0.3f);
		shape4(r, d, 1, 1, 6); /* llama.cpp's shape */
		add(r, N("time_mix_w0.weight"), d, 1, -1, 0.5f);
		add(r, N("time_mix_a0.weight"), d, 1, 0, 0.5f);
		add(r, N("time_mix_v0.weight"), d, 1, 0, 0.5f);
		add(r, N("time_mix_k_k.weight"), d, 1, 1, 0.2f);
		add(r, N("time_mix_k_a.weight"), d, 1, 1, 0.2f);
		add(r, N("time_mix_r_k.weight"), d, 1, 0, 0.5f);
		return;
	}
	if (s->rwkv_version == 6) {
		int64_t rm = s->rwkv_lora_mix, rw = s->rwkv_lora_w;
		add(r, N("time_mix_lerp_x.weight"), d, 1, 0.5f, 0.3f);
		add(r, N("time_mix_lerp_fused.weight"), 5 * d, 1, 0.5f, 0.3f);
		shape4(r, d, 1, 1, 5); /* llama.cpp's shape */
		add(r, N("time_mix_w1.weight"), d, 5 * rm, 0, wd);
		add3(r, N("time_mix_w2.weight"), rm, d, 5, 0, 0.1f / sqrtf((float)rm));
		add(r, N("time_mix_decay.weight"), d, 1, -1, 0.5f);
		add(r, N("time_mix_decay_w1.weight"), d, rw, 0, wd);
		add(r, N("time_mix_decay_w2.weight"), rw, d, 0, 0.1f / sqrtf((float)rw));
		add(r, N("time_mix_first.weight"), d, 1, 0, 0.5f);
		shape4(r, s->rwkv_head_size, d / s->rwkv_head_size, 1, 1); /* llama.cpp's */
		add(r, N("time_mix_gate.weight"), d, d, 0, wd);
		add(r, N("channel_mix_lerp_r.weight"), d, 1, 0.5f, 0.3f);
		add(r, N("channel_mix_receptance.weight"), d, d, 0, wd);
		return;
	}
	add(r, N("time_mix_lerp_k.weight"), d, 1, 0.5f, 0.3f);
	add(r, N("time_mix_lerp_v.weight"), d, 1, 0.5f, 0.3f);
	add(r, N("time_mix_lerp_r.weight"), d, 1, 0.5f, 0.3f);
	if (s->rwkv_version == 5) {
		int64_t nd = s->rwkv_minor == 1 ? d / s->rwkv_head_size : d;
		add(r, N("time_mix_decay.weight"), nd, 1, 0.6f, 0.3f);
		add(r, N("time_mix_first.weight"), nd, 1, 0.5f, 0.3f);
		if (s->rwkv_minor == 2) {
			add(r, N("time_mix_lerp_g.weight"), d, 1, 0.5f, 0.3f);
			add(r, N("time_mix_gate.weight"), d, d, 0, wd);
		}
	} else {
		add(r, N("time_mix_decay.weight"), d, 1, -1, 0.5f);
		add(r, N("time_mix_first.weight"), d, 1, 0, 0.5f);
	}
	add(r, N("channel_mix_lerp_r.weight"), d, 1, 0.5f, 0.3f);
	add(r, N("channel_mix_receptance.weight"), d, d, 0, wd);
#undef N
}

static void tensors(struct rnd *r, const struct tfm_spec *s)
{
	int64_t d = s->n_embd, hd = s->head_dim ? s->head_dim : s->n_head ? s->n_embd / s->n_head : 0;
	int64_t nkv = s->n_head_kv ? s->n_head_kv : s->n_head;
	int64_t qd = s->n_head * hd, kvd = nkv * hd, ff = s->n_ff;
	float wd = 1 / sqrtf((float)d), wf = 1 / sqrtf((float)ff);
	int post_in = s->norm_place == TFM_NORM_POST_IN;
	int post = post_in || s->norm_place == TFM_NORM_SANDWICH;
	char n[96];
	/* word embeddings io wide (OPT-350m, ELECTRA, ALBERT); positions,
	 * token types and their norm too when project_in follows the norm */
	int64_t io = s->n_embd_io > 0 ? s->n_embd_io : d, ew = s->embd_proj ? io : d;
	int enc = s->family == TFM_FAMILY_ENCODER;
	int64_t rows = s->n_vocab_src > 0 ? s->n_vocab_src : s->n_vocab;
	add(r, "token_embd.weight", io, rows, 0, 1);
	if (s->family == TFM_FAMILY_ENCDEC && s->enc_embd)
		add(r, "enc.token_embd.weight", io, rows, 0, 1);
	if (s->n_embd_io > 0) {
		add(r, "project_in.weight", io, d, 0, 1 / sqrtf((float)io));
		if (s->embd_proj && !s->embd_proj_first)
			add(r, "project_in.bias", d, 1, 0, 0.02f);
		else
			add(r, "project_out.weight", d, io, 0, wd);
	}
	int encdec = s->family == TFM_FAMILY_ENCDEC, t5 = s->pos_attn == TFM_POS_T5;
	int64_t npos = (s->n_ctx_train > 0 ? s->n_ctx_train : 2048) + s->pos_offset;
	if (s->pos_embd == TFM_POS_EMBD_LEARNED && encdec) { /* each stack its own */
		add(r, "enc.position_embd.weight", ew, npos, 0, 0.1f);
		add(r, "dec.position_embd.weight", ew, npos, 0, 0.1f);
	} else if (s->pos_embd == TFM_POS_EMBD_LEARNED) {
		add(r, "position_embd.weight", ew, npos, 0, 0.1f);
	}
	if (s->embd_norm && encdec) {
		norm(r, s, "enc.token_embd_norm", ew);
		norm(r, s, "dec.token_embd_norm", ew);
	} else if (s->embd_norm) {
		norm(r, s, "token_embd_norm", s->embd_proj_first ? d : ew);
	}
	if (encdec && s->head_bias)
		add(r, "output.bias", s->n_vocab, 1, 0, 0.02f);
	if (s->conv_kernel > 0 && s->conv_groups > 0) { /* DeBERTa's ConvLayer */
		int64_t dg = d / s->conv_groups;
		add(r, "enc_conv.weight", s->conv_kernel, d * dg, 0,
		    1 / sqrtf((float)(dg * s->conv_kernel)));
		add(r, "enc_conv.bias", d, 1, 0, 0.02f);
		norm(r, s, "enc_conv_norm", d);
	}
	if (s->pos_attn == TFM_POS_DEBERTA) { /* DeBERTa's relative embeddings */
		add(r, "rel_embd.weight", d, 2 * s->rel_span, 0, 1);
		if (s->rel_norm)
			norm(r, s, "rel_embd_norm", d);
	}
	if (t5) { /* each stack's relative bias table, block 0 */
		add(r, "enc.blk.0.attn_rel_b.weight", s->n_head, s->t5_buckets, 0, 0.5f);
		if (encdec)
			add(r, "dec.blk.0.attn_rel_b.weight", s->n_head, s->t5_buckets, 0, 0.5f);
	}
	if (encdec && s->final_norm)
		norm(r, s, "enc.output_norm", d);
	if (s->final_norm)
		norm(r, s, encdec ? "dec.output_norm" : t5 ? "enc.output_norm" : "output_norm", d);
	if (!s->tied_output && (s->head == TFM_HEAD_LM || s->mlm_head))
		add(r, "output.weight", io, s->n_vocab, 0, wd);
	if (enc) { /* token types and the heads bind_encoder reads */
		int cls = s->head == TFM_HEAD_CLASSIFIER || s->head == TFM_HEAD_TOKEN;
		if (s->n_token_types > 0)
			add(r, "token_types.weight", ew, s->n_token_types, 0, 0.1f);
		/* BertModel has its pooler; ModernBERT's prediction head serves
		 * every task head */
		int tr = s->head_transform && ((cls && s->pooler) || s->mlm_head);
		if ((s->pooler && s->head != TFM_HEAD_TOKEN) || tr) {
			add(r, "cls.weight", d, d, 0, wd);
			if (s->head_dense_bias)
				add(r, "cls.bias", d, 1, 0, 0.02f);
			if (s->head_transform)
				norm(r, s, "cls.norm", d);
		}
		if (s->head_transform && s->mlm_head && s->head_bias)
			add(r, "output.bias", s->n_vocab, 1, 0, 0.02f);
		if (s->head_transform && s->mlm_head && !s->tied_output)
			add(r, "output.weight", io, s->n_vocab, 0, wd);
		if (cls && s->n_labels > 0) {
			add(r, "cls.output.weight", d, s->n_labels, 0, wd);
			add(r, "cls.output.bias", s->n_labels, 1, 0, 0.02f);
		}
		if (s->mlm_head && !s->head_transform) {
			add(r, "mlm.dense.weight", d, d, 0, wd);
			add(r, "mlm.dense.bias", d, 1, 0, 0.02f);
			norm(r, s, "mlm.norm", d);
			add(r, "output.bias", s->n_vocab, 1, 0, 0.02f);
		}
	}
	/* shared blocks (ALBERT): the G blocks the layers run */
	int64_t n_blk = s->n_layer_groups > 0 ? s->n_layer_groups
			: s->n_layer + (encdec ? s->n_layer_dec : 0);
	for (int64_t l = 0; l < n_blk; l++) {
#define N(x) tfm_layer_name(s, n, sizeof n, l, x)
		if (encdec && l >= s->n_layer) { /* the decoder's cross-attention */
			norm(r, s, N("cross_attn_norm"), d);
			add(r, N("cross_attn_q.weight"), d, qd, 0, wd);
			add(r, N("cross_attn_k.weight"), d, qd, 0, wd);
			add(r, N("cross_attn_v.weight"), d, qd, 0, wd);
			add(r, N("cross_attn_o.weight"), qd, d, 0, 1 / sqrtf((float)qd));
			if (s->attn_bias_qkv) {
				add(r, N("cross_attn_q.bias"), qd, 1, 0, 0.02f);
				add(r, N("cross_attn_k.bias"), qd, 1, 0, 0.02f);
				add(r, N("cross_attn_v.bias"), qd, 1, 0, 0.02f);
			}
			if (s->attn_bias_out)
				add(r, N("cross_attn_o.bias"), d, 1, 0, 0.02f);
		}
		if (s->layer_kind[l] == TFM_LAYER_RWKV) { /* its channel mixing is its FFN */
			rwkv(r, s, l);
			continue;
		}
		if (s->layer_kind[l] != TFM_LAYER_ATTN) {
			/* a recurrent mixer, then an FFN (dense or MoE) when the
			 * spec gives the layer one: the loader's bind_recurrent */
			int k = s->layer_kind[l];
			if (k == TFM_LAYER_MAMBA)
				mamba(r, s, l);
			else if (k == TFM_LAYER_MAMBA2)
				mamba2(r, s, l);
			else if (k == TFM_LAYER_GDN)
				gdn(r, s, l);
			else
				mlstm(r, s, l);
			if (s->n_ff <= 0 && !s->layer_moe[l])
				continue;
			norm(r, s, N("ffn_norm"), d);
			goto ffn;
		}
		/* llama.cpp's BERT names its post norms; ModernBERT's layer 0 has
		 * no attention norm */
		int pn = enc && s->norm_place == TFM_NORM_POST;
		if (!post_in && !(l == 0 && s->no_first_attn_norm))
			norm(r, s, pn ? N("attn_output_norm") : N("attn_norm"), d);
		if (!post_in && !(s->parallel_residual && s->shared_attn_ffn_norm))
			norm(r, s, pn ? N("layer_output_norm") : N("ffn_norm"), d);
		if (post) {
			norm(r, s, N("post_attention_norm"), d);
			norm(r, s, N("post_ffw_norm"), d);
		}
		if (s->kv_lora_rank > 0) { /* MLA */
			int64_t ql = s->q_lora_rank, kl = s->kv_lora_rank, vd = s->v_head_dim;
			if (ql > 0) {
				add(r, N("attn_q_a.weight"), d, ql, 0, wd);
				norm(r, s, N("attn_q_a_norm"), ql);
				add(r, N("attn_q_b.weight"), ql, qd, 0, 1 / sqrtf((float)ql));
			} else {
				add(r, N("attn_q.weight"), d, qd, 0, wd);
			}
			add(r, N("attn_kv_a_mqa.weight"), d, kl + s->qk_rope_dim, 0, wd);
			norm(r, s, N("attn_kv_a_norm"), kl);
			add(r, N("attn_kv_b.weight"), kl, s->n_head * (s->qk_nope_dim + vd), 0,
			    1 / sqrtf((float)kl));
		} else {
			add(r, N("attn_q.weight"), d, s->attn_out_gate ? 2 * qd : qd, 0, wd);
			add(r, N("attn_k.weight"), d, kvd, 0, wd);
			add(r, N("attn_v.weight"), d, kvd, 0, wd);
		}
		if (s->attn_bias_qv) {
			add(r, N("attn_q.bias"), qd, 1, 0, 0.02f);
			add(r, N("attn_v.bias"), kvd, 1, 0, 0.02f);
		}
		if (s->attn_bias_qkv && s->kv_lora_rank <= 0) {
			add(r, N("attn_q.bias"), qd, 1, 0, 0.02f);
			add(r, N("attn_k.bias"), kvd, 1, 0, 0.02f);
			add(r, N("attn_v.bias"), kvd, 1, 0, 0.02f);
		}
		if (s->pos_attn == TFM_POS_DEBERTA && !s->rel_share_key) {
			if (s->rel_c2p) {
				add(r, N("attn_pos_k.weight"), d, qd, 0, wd);
				if (s->rel_pos_k_bias)
					add(r, N("attn_pos_k.bias"), qd, 1, 0, 0.02f);
			}
			if (s->rel_p2c) {
				add(r, N("attn_pos_q.weight"), d, qd, 0, wd);
				add(r, N("attn_pos_q.bias"), qd, 1, 0, 0.02f);
			}
		}
		int64_t od = s->kv_lora_rank > 0 ? s->n_head * s->v_head_dim : qd; /* attn_output's in */
		add(r, N("attn_output.weight"), od, d, 0, 1 / sqrtf((float)od));
		if (s->attn_bias_out)
			add(r, N("attn_output.bias"), d, 1, 0, 0.02f);
		if (s->qk_norm == TFM_QK_NORM_HEAD || s->qk_norm == TFM_QK_NORM_FULL) {
			int full = s->qk_norm == TFM_QK_NORM_FULL;
			add(r, N("attn_q_norm.weight"), full ? qd : hd, 1, s->norm_plus_one ? 0 : 1, 0);
			add(r, N("attn_k_norm.weight"), full ? kvd : hd, 1, s->norm_plus_one ? 0 : 1, 0);
		}
ffn:
		if (s->layer_moe[l]) {
			int64_t E = s->n_expert, fe = s->n_ff_expert;
			int64_t fs = s->n_ff_shared > 0 ? s->n_ff_shared : s->n_expert_shared * fe;
			add(r, N("ffn_gate_inp.weight"), d, E, 0, wd);
			add3(r, N("ffn_gate_exps.weight"), d, fe, E, 0, wd);
			add3(r, N("ffn_up_exps.weight"), d, fe, E, 0, wd);
			add3(r, N("ffn_down_exps.weight"), fe, d, E, 0, 1 / sqrtf((float)fe));
			if (fs > 0) {
				add(r, N("ffn_gate_shexp.weight"), d, fs, 0, wd);
				add(r, N("ffn_up_shexp.weight"), d, fs, 0, wd);
				add(r, N("ffn_down_shexp.weight"), fs, d, 0, 1 / sqrtf((float)fs));
				if (s->moe_shared_gate) /* sigmoid(x . w) on the shared expert */
					add(r, N("ffn_gate_inp_shexp.weight"), d, 1, 0, wd);
			}
			continue;
		}
		if (s->gated)
			add(r, N("ffn_gate.weight"), d, ff, 0, wd);
		add(r, N("ffn_up.weight"), d, ff, 0, wd);
		add(r, N("ffn_down.weight"), ff, d, 0, wf);
		if (s->ffn_bias) {
			add(r, N("ffn_up.bias"), ff, 1, 0, 0.02f);
			add(r, N("ffn_down.bias"), d, 1, 0, 0.02f);
		}
#undef N
	}
}

static void release_random(struct tfm_model *m)
{
	for (int64_t i = 0; i < m->n_tensor_bufs; i++)
		free(m->tensor_bufs[i]);
	free(m->tensor_bufs);
	m->tensor_bufs = NULL;
}

void tfm_random_free(void **bufs, int64_t n_bufs)
{
	for (int64_t i = 0; bufs && i < n_bufs; i++)
		free(bufs[i]);
	free(bufs);
}

int tfm_random_gguf(struct tfm_gguf *g, int type, uint64_t seed, void ***bufs, int64_t *n_bufs)
{
	struct rnd r = {.state = seed ^ 0x9E3779B97F4A7C15ull, .type = type};
	struct tfm_spec s;
	*bufs = NULL, *n_bufs = 0;
	int st = tfm_spec_from_gguf(&s, g);
	if (st || (st = tfm_model_check_spec(&s)))
		return st;
	if (!tfm_k_type_ok(type))
		return tfm_seterr(TFM_E_UNSUPPORTED, "random weights of type %s", tfm_type_name(type));
	if (tfm_gguf_n_tensors(g) > 0)
		return tfm_seterr(TFM_E_INVAL, "random weights for a GGUF that has tensors");
	struct tfm_counts cn;
	if ((st = tfm_spec_count(&s, 4, 1, &cn)) ||
	    (st = tfm_mem_check((double)cn.total * (double)tfm_type_nbytes(type, 256) / 256.0,
				"random %s weights of %lld parameters", tfm_type_name(type),
				(long long)cn.total)))
		return st;
	tensors(&r, &s);
	st = r.st;
	for (int64_t i = 0; !st && i < r.n; i++)
		st = tfm_gguf_add_tensor(g, r.t[i].name, r.t[i].type, r.t[i].n_dims, r.t[i].ne,
					 r.t[i].data, NULL, NULL);
	free(r.t);
	if (st) {
		tfm_random_free(r.bufs, 2 * r.n);
		return st;
	}
	*bufs = r.bufs, *n_bufs = 2 * r.n;
	/* llama.cpp's file types of the float matrices: 0 f32, 1 f16, 32 bf16 */
	if (type == TFM_TYPE_F32 || type == TFM_TYPE_F16 || type == TFM_TYPE_BF16)
		return tfm_gguf_set_u32(g, "general.file_type",
					type == TFM_TYPE_F16 ? 1 : type == TFM_TYPE_BF16 ? 32 : 0);
	return TFM_OK;
}

int tfm_model_random(struct tfm_model **m, const struct tfm_spec *s, int type, uint64_t seed,
		     const struct tfm_model_opts *o)
{
	struct rnd r = {.state = seed ^ 0x9E3779B97F4A7C15ull, .type = type};
	*m = NULL;
	int st = tfm_model_check_spec(s);
	if (st)
		return st;
	if (!tfm_k_type_ok(type))
		return tfm_seterr(TFM_E_UNSUPPORTED, "random weights of type %s", tfm_type_name(type));
	/* the weights in memory, before any is made: a 7B spec in f32 is 27 GB */
	struct tfm_counts cn;
	if ((st = tfm_spec_count(s, 4, 1, &cn)))
		return st;
	if ((st = tfm_mem_check((double)cn.total * (double)tfm_type_nbytes(type, 256) / 256.0,
				"random %s weights of %lld parameters", tfm_type_name(type),
				(long long)cn.total)))
		return st;
	tensors(&r, s);
	if (!(st = r.st) && !(st = tfm_model_new(m, s, r.t, r.n, o))) {
		(*m)->tensor_bufs = r.bufs;
		(*m)->n_tensor_bufs = 2 * r.n;
		(*m)->release = release_random;
		free(r.t);
		return TFM_OK;
	}
	for (int64_t i = 0; i < 2 * r.n; i++)
		free(r.bufs[i]);
	free(r.bufs);
	free(r.t);
	return st;
}
