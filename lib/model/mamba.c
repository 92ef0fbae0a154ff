/* mamba.c: the Mamba mixer (Gu & Dao 2023, as transformers' MambaMixer slow
 * path and llama.cpp's build_mamba_layer): in_proj -> causal depthwise conv1d
 * -> SiLU -> x_proj to dt, B, C (falcon_mamba: weightless RMS norms on each)
 * -> dt_proj + softplus -> selective scan with A = -exp(A_log) (stored so)
 * and the D skip -> times SiLU(z) -> out_proj.  Per sequence each layer keeps
 * the last d_conv - 1 conv inputs and the d_inner x d_state scan state in the
 * context; prefill scans the batch, decode is the same code with n = 1;
 * blocks of 16 channels are shared out over the backend's pool
 * (be->parallel). */
#include "model/model-impl.h"
#include "model/mamba.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a layer with recurrent state kept here: mamba, mamba2, rwkv (rwkv.c),
 * gdn (gdn.c), mlstm (xlstm.c) */
static int is_mamba(const struct tfm_spec *s, int64_t l)
{
	return s->layer_kind[l] == TFM_LAYER_MAMBA || s->layer_kind[l] == TFM_LAYER_MAMBA2 ||
	       s->layer_kind[l] == TFM_LAYER_RWKV || s->layer_kind[l] == TFM_LAYER_GDN ||
	       s->layer_kind[l] == TFM_LAYER_MLSTM;
}

/* the width of a layer's conv inputs: d_inner (mamba), xBC (mamba2), qkv (gdn) */
static int64_t conv_width(const struct tfm_spec *s, int64_t l)
{
	return s->layer_kind[l] == TFM_LAYER_MAMBA2 ? tfm_mamba2_conv_dim(s) :
	       s->layer_kind[l] == TFM_LAYER_GDN ? tfm_gdn_conv_dim(s) : s->ssm_d_inner;
}

/* per layer: conv [d_conv - 1][conv width], then the scan state
 * [d_inner][d_state] (mamba2: [n_head][head_dim][d_state], as many; gdn:
 * [n_head][d_state][head_v_dim], as many) */
static int64_t layer_floats(const struct tfm_spec *s, int64_t l)
{
	if (s->layer_kind[l] == TFM_LAYER_RWKV) /* token shifts; num, den, max or v5's S */
		return tfm_rwkv_state_floats(s);
	if (s->layer_kind[l] == TFM_LAYER_MLSTM) /* C, n, m per head */
		return tfm_mlstm_state_floats(s);
	return (s->ssm_d_conv - 1) * conv_width(s, l) + s->ssm_d_inner * s->ssm_d_state;
}

int64_t tfm_mamba_state_bytes(const struct tfm_model *m)
{
	int64_t n = 0;
	for (int64_t l = 0; l < m->spec.n_layer; l++)
		if (is_mamba(&m->spec, l))
			n += layer_floats(&m->spec, l) * (int64_t)sizeof(float);
	return n;
}

int tfm_mamba_ctx_new(struct tfm_ctx *c)
{
	const struct tfm_spec *s = &c->m->spec;
	int64_t state = tfm_mamba_state_bytes(c->m) / (int64_t)sizeof(float);
	if (!state)
		return TFM_OK;
	int64_t B = c->n_batch, di = s->ssm_d_inner, w = s->ssm_dt_rank + 2 * s->ssm_d_state;
	/* state; scratch xz [B][2 di], xc [B][di], dbc [B][w], dt [B][di], y [B][di]
	 * (mamba2: tfm_mamba2_scratch_floats) */
	int nt = tfm_pool_size(c->kx.pool);
	int64_t scr = B * (2 * di + di + w + di + di), scr2 = tfm_mamba2_scratch_floats(s, B, nt);
	int64_t scr3 = tfm_rwkv_scratch_floats(s, B), scr4 = tfm_gdn_scratch_floats(s, B, nt);
	int64_t scr5 = tfm_mlstm_scratch_floats(s, B);
	scr4 = scr4 > scr5 ? scr4 : scr5;
	scr = scr > scr2 ? scr : scr2;
	scr = scr > scr4 ? scr : scr4;
	int64_t total = state + (scr > scr3 ? scr : scr3);
	c->ssm = tfm_calloc((size_t)total, sizeof(float));
	c->ssm_chunk_min = TFM_SSM_CHUNK_MIN;
	if (!c->ssm)
		return tfm_seterr(TFM_E_NOMEM, "recurrent state of %lld layers", (long long)s->n_layer);
	return TFM_OK;
}

void tfm_mamba_ctx_free(struct tfm_ctx *c)
{
	free(c->ssm);
	c->ssm = NULL;
}

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); } /* torch's threshold 20 */

/* x[n] /= rms(x), times w when given (jamba) */
static void rms(float *x, const float *w, int64_t n, float eps)
{
	double ss = 0;
	for (int64_t i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	float r = 1.0f / sqrtf((float)(ss / (double)n) + eps);
	for (int64_t i = 0; i < n; i++)
		x[i] = w ? w[i] * (x[i] * r) : x[i] * r;
}

void tfm_ssm_conv(float *out, const float *in, int64_t stride, float *state, const float *w,
		  const float *b, int64_t n, int64_t width, int64_t K)
{
	/* tap k of token t reads input t - (K-1) + k */
	for (int64_t t = 0; t < n; t++)
		for (int64_t i = 0; i < width; i++) {
			float a = b ? b[i] : 0.0f;
			const float *wk = w + i * K;
			for (int64_t k = 0; k < K; k++) {
				int64_t src = t - (K - 1) + k;
				a += wk[k] * (src >= 0 ? in[src * stride + i] : state[(K - 1 + src) * width + i]);
			}
			out[t * width + i] = silu(a);
		}
	/* the state keeps the last K - 1 inputs */
	for (int64_t j = 0; j < K - 1; j++) {
		int64_t src = n - (K - 1) + j; /* input index relative to this batch */
		if (src >= 0)
			memcpy(state + j * width, in + src * stride, (size_t)width * sizeof(float));
		else
			memmove(state + j * width, state + (j + n) * width, (size_t)width * sizeof(float));
	}
}

/* Layer l's state in c->ssm: after those of the recurrent layers before it */
static float *layer_state(struct tfm_ctx *c, int64_t l)
{
	const struct tfm_spec *s = &c->m->spec;
	int64_t off = 0;
	for (int64_t j = 0; j < l; j++)
		if (is_mamba(s, j))
			off += layer_floats(s, j);
	return c->ssm + off;
}

void tfm_ssm_rwkv_block(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0)
{
	tfm_rwkv_block(c, l, n, pos0, layer_state(c, l),
		       c->ssm + tfm_mamba_state_bytes(c->m) / (int64_t)sizeof(float));
}

/* The scan's channels in blocks of SCAN_BLOCK (a whole number of AVX2 and
 * AVX-512 vectors), the units the pool shares out. */
#define SCAN_BLOCK 16

struct scan_job {
	const struct tfm_backend *be;
	const struct tfm_layer *L;
	float *y, *hs;                  /* [n][di], [di][N] */
	const float *xz, *xc, *dt, *bc; /* [n][2 di], [n][di], [n][di], [n] rows of w: B at 0, C at N */
	int64_t n, di, N, w;
};

/* channels [SCAN_BLOCK u0, SCAN_BLOCK u1) of the scan, then of y * silu(z) */
static void scan_blocks(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1)
{
	struct scan_job *j = ctx;
	int64_t di = j->di, N = j->N, i0 = u0 * SCAN_BLOCK;
	int64_t i1 = u1 * SCAN_BLOCK < di ? u1 * SCAN_BLOCK : di;
	(void)kt, (void)task;
	j->be->mamba_scan(j->y + i0, j->hs + i0 * N, j->xc + i0, j->dt + i0, j->L->ssm_a + i0 * N,
			  j->L->ssm_d + i0, j->bc, j->bc + N, j->w, di, j->n, i1 - i0, N);
	for (int64_t t = 0; t < j->n; t++)
		for (int64_t i = i0; i < i1; i++)
			j->y[t * di + i] *= silu(j->xz[t * 2 * di + di + i]);
}

void tfm_mamba_mix(struct tfm_ctx *c, int64_t l, int64_t n, int64_t pos0)
{
	struct tfm_model *m = c->m;
	const struct tfm_spec *s = &m->spec;
	const struct tfm_backend *be = m->be;
	const struct tfm_layer *L = &m->layers[l];
	int64_t di = s->ssm_d_inner, K = s->ssm_d_conv, N = s->ssm_d_state, R = s->ssm_dt_rank;
	int64_t w = R + 2 * N, B = c->n_batch, lf = layer_floats(s, l);
	float *conv = layer_state(c, l);          /* [K - 1][di]: inputs pos0-K+1 .. pos0-1 */
	float *hs = conv + (K - 1) * conv_width(s, l); /* [di][N] */
	int64_t state = tfm_mamba_state_bytes(m) / (int64_t)sizeof(float);
	if (pos0 == 0)
		memset(conv, 0, (size_t)lf * sizeof(float));
	if (s->layer_kind[l] == TFM_LAYER_MAMBA2) {
		tfm_mamba2_mix(c, l, n, conv, hs, c->ssm + state);
		return;
	}
	if (s->layer_kind[l] == TFM_LAYER_GDN) {
		tfm_gdn_mix(c, l, n, conv, hs, c->ssm + state);
		return;
	}
	if (s->layer_kind[l] == TFM_LAYER_MLSTM) {
		tfm_mlstm_mix(c, l, n, conv, c->ssm + state);
		return;
	}
	float *xz = c->ssm + state;               /* [n][2 di]: x then z */
	float *xc = xz + B * 2 * di;              /* [n][di] conv output, SiLU'd */
	float *dbc = xc + B * di;                 /* [n][R + 2N]: dt_in, B, C */
	float *dt = dbc + B * w;                  /* [n][di] */
	float *y = dt + B * di;                   /* [n][di] */
	be->matmul(&c->kx, xz, c->xn, &L->ssm_in, n);
	if (L->ssm_in_b)
		for (int64_t t = 0; t < n; t++)
			be->add(xz + t * 2 * di, xz + t * 2 * di, L->ssm_in_b, 2 * di);
	tfm_ssm_conv(xc, xz, 2 * di, conv, L->ssm_conv_w, L->ssm_conv_b, n, di, K);
	be->matmul(&c->kx, dbc, xc, &L->ssm_x, n);
	if (s->ssm_dt_norm) {
		float eps = (float)(s->ssm_norm_eps > 0 ? s->ssm_norm_eps : s->norm_eps);
		for (int64_t t = 0; t < n; t++) {
			rms(dbc + t * w, L->ssm_dt_nw, R, eps);
			rms(dbc + t * w + R, L->ssm_b_nw, N, eps);
			rms(dbc + t * w + R + N, L->ssm_c_nw, N, eps);
		}
	}
	/* dt_proj reads the first R columns of each dbc row: gather them into y */
	for (int64_t t = 0; t < n; t++)
		memcpy(y + t * R, dbc + t * w, (size_t)R * sizeof(float));
	be->matmul(&c->kx, dt, y, &L->ssm_dt, n);
	for (int64_t t = 0; t < n; t++)
		for (int64_t i = 0; i < di; i++)
			dt[t * di + i] = softplus(dt[t * di + i] + L->ssm_dt_b[i]);
	/* the work in par_min's units (a matmul's multiply-adds, ~50 a ns on
	 * one core): ~1 ns per state element and token, an exp among it
	 * (measured, AVX2); decode of 1536 x 16 takes ~50 us */
	struct scan_job sj = {.be = be, .L = L, .y = y, .hs = hs, .xz = xz, .xc = xc, .dt = dt,
			      .bc = dbc + R, .n = n, .di = di, .N = N, .w = w};
	be->parallel(&c->kx, scan_blocks, &sj, (di + SCAN_BLOCK - 1) / SCAN_BLOCK,
		     50.0 * (double)n * di * N);
	be->matmul(&c->kx, c->h, y, &L->ssm_out, n);
	if (L->ssm_out_b)
		for (int64_t t = 0; t < n; t++)
			be->add(c->h + t * s->n_embd, c->h + t * s->n_embd, L->ssm_out_b, s->n_embd);
}

/* The mamba mixer's own sizes (v2: mamba2's heads and groups). */
static int check_sizes(const struct tfm_spec *s, int v2)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	if (v2 && (s->ssm_n_head < 1 || s->ssm_n_group < 1 || s->ssm_n_head % s->ssm_n_group ||
		   s->ssm_d_inner % s->ssm_n_head || s->ssm_dt_norm ||
		   (s->ssm_dt_max > 0 && s->ssm_dt_max < s->ssm_dt_min)))
		return tfm_seterr(TFM_E_FORMAT, "%s: bad mamba2 sizes (inner %lld, %lld heads, %lld "
				  "groups, dt in [%g, %g])%s", arch, (long long)s->ssm_d_inner,
				  (long long)s->ssm_n_head, (long long)s->ssm_n_group, s->ssm_dt_min,
				  s->ssm_dt_max, s->ssm_dt_norm ? " or dt/B/C norms" : "");
	if (s->n_embd < 1 || s->n_vocab < 1 || s->ssm_d_inner < 1 || s->ssm_d_state < 1 ||
	    s->ssm_d_conv < 1 || (!v2 && s->ssm_dt_rank < 1))
		return tfm_seterr(TFM_E_FORMAT, "%s: bad mamba sizes (embd %lld, vocab %lld, inner "
				  "%lld, state %lld, conv %lld, dt rank %lld)", arch,
				  (long long)s->n_embd, (long long)s->n_vocab, (long long)s->ssm_d_inner,
				  (long long)s->ssm_d_state, (long long)s->ssm_d_conv,
				  (long long)s->ssm_dt_rank);
	if (!v2 && (s->ssm_n_head || s->ssm_n_group))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: mamba layers with heads or groups "
				  "(mamba2's)", arch);
	return TFM_OK;
}

/* A hybrid (jamba; bamba with mamba2 layers, v2): mamba layers beside attention layers, each layer
 * x += mixer(norm(x)); x += ffn(norm(x)).  The attention layers' knobs are
 * load.c's; here the mixer's, and the block form the mamba layers share. */
int tfm_mamba_check_hybrid(const struct tfm_spec *s, int v2)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	int st = check_sizes(s, v2);
	if (st)
		return st;
	if (s->norm_place != TFM_NORM_PRE || s->parallel_residual || s->residual_from_norm ||
	    s->no_first_attn_norm || (s->residual_scale != 0 && s->residual_scale != 1))
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: mamba layers beside attention run a "
				  "sequential pre-norm block; other norm placements, a parallel or "
				  "scaled residual not supported", arch);
	return TFM_OK;
}

/* The knobs of a model whose layers are all mamba layers. */
int tfm_mamba_check_spec(const struct tfm_spec *s)
{
	const char *arch = s->arch[0] ? s->arch : "model";
	if (s->n_layer > 0 && s->layer_kind[0] == TFM_LAYER_RWKV)
		return tfm_rwkv_check_spec(s);
	if (s->n_layer > 0 && s->layer_kind[0] == TFM_LAYER_MLSTM)
		return tfm_xlstm_check_spec(s);
	int v2 = s->n_layer > 0 && s->layer_kind[0] == TFM_LAYER_MAMBA2;
	for (int64_t l = 0; l < s->n_layer; l++)
		if (s->layer_kind[l] != (v2 ? TFM_LAYER_MAMBA2 : TFM_LAYER_MAMBA))
			return tfm_seterr(TFM_E_UNSUPPORTED, "%s: layer %lld: %s layers not supported yet",
					  arch, (long long)l, is_mamba(s, l) ? "mixed mamba and mamba2"
					  : s->layer_kind[l] == TFM_LAYER_RWKV ? "rwkv" : "this kind of");
	int st = check_sizes(s, v2);
	if (st)
		return st;
	if (s->family != TFM_FAMILY_DECODER || s->head != TFM_HEAD_LM || s->pooling != TFM_POOL_NONE)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: mamba only as a decoder with an LM head", arch);
	if (s->norm != TFM_NORM_RMS || s->norm_place != TFM_NORM_PRE || s->norm_plus_one ||
	    s->parallel_residual || s->embd_norm || s->pos_embd != TFM_POS_EMBD_NONE ||
	    s->n_embd_io || s->final_softcap > 0 || (s->embd_scale != 0 && s->embd_scale != 1) ||
	    (s->residual_scale != 0 && s->residual_scale != 1) ||
	    (s->head_scale != 0 && s->head_scale != 1) || s->n_expert > 0)
		return tfm_seterr(TFM_E_UNSUPPORTED, "%s: mamba blocks run pre-RMSNorm, a plain "
				  "residual and no FFN; other norms, scales or experts not supported",
				  arch);
	return TFM_OK;
}
