/* ref.c: the scalar reference backend, the specification every other backend
 * is tested against.  Plain loops, double accumulators, no threads; speed is
 * not a goal here. */
#include "tfm.h"
#include "kernels/backend.h"

#include <math.h>
#include <stdlib.h>

void tfm_ref_matmul(struct tfm_kexec *k, float *y, const float *x, const struct tfm_mat *w,
		    int64_t n)
{
	float *row = k->scratch; /* [w->in] */
	const uint8_t *wd = w->data;
	for (int64_t o = 0; o < w->out; o++) {
		if (tfm_k_row_to_f32(w->type, wd + (size_t)o * w->row_bytes, row, w->in)) {
			for (int64_t t = 0; t < n; t++)
				y[t * w->out + o] = NAN;
			continue;
		}
		for (int64_t t = 0; t < n; t++) {
			const float *xt = x + t * w->in;
			double s = 0;
			for (int64_t i = 0; i < w->in; i++)
				s += (double)xt[i] * row[i];
			y[t * w->out + o] = (float)s;
		}
	}
}

static void ref_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps,
			int plus_one)
{
	double ss = 0;
	for (int64_t i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	double r = 1.0 / sqrt(ss / n + eps);
	for (int64_t i = 0; i < n; i++) {
		double g = w ? w[i] + (plus_one ? 1.0 : 0.0) : 1.0;
		y[i] = (float)(x[i] * r * g);
	}
}

static void ref_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n,
			  float eps, int plus_one)
{
	double m = 0, v = 0;
	for (int64_t i = 0; i < n; i++)
		m += x[i];
	m /= n;
	for (int64_t i = 0; i < n; i++)
		v += (x[i] - m) * (x[i] - m);
	v /= n;
	double r = 1.0 / sqrt(v + eps);
	for (int64_t i = 0; i < n; i++) {
		double g = w ? w[i] + (plus_one ? 1.0 : 0.0) : 1.0;
		y[i] = (float)((x[i] - m) * r * g + (b ? b[i] : 0.0));
	}
}

static void ref_rope(float *x, int64_t n_head, int64_t head_dim, int64_t n_rot, int interleaved,
		     const float *cs, const float *sn)
{
	for (int64_t h = 0; h < n_head; h++) {
		float *v = x + h * head_dim;
		for (int64_t i = 0; i < n_rot / 2; i++) {
			int64_t a = interleaved ? 2 * i : i;
			int64_t b = interleaved ? 2 * i + 1 : i + n_rot / 2;
			double x0 = v[a], x1 = v[b];
			v[a] = (float)(x0 * cs[i] - x1 * sn[i]);
			v[b] = (float)(x0 * sn[i] + x1 * cs[i]);
		}
	}
}

static void ref_softmax(float *x, int64_t n)
{
	double mx = -INFINITY, s = 0;
	for (int64_t i = 0; i < n; i++)
		if (x[i] > mx)
			mx = x[i];
	for (int64_t i = 0; i < n; i++)
		s += exp(x[i] - mx);
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(exp(x[i] - mx) / s);
}

float tfm_ref_act1(float xf, int act)
{
	double x = xf;
	switch (act) {
	case TFM_K_SILU: return (float)(x / (1 + exp(-x)));
	case TFM_K_GELU: return (float)(0.5 * x * (1 + erf(x / sqrt(2.0))));
	case TFM_K_GELU_TANH:
		return (float)(0.5 * x * (1 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
	case TFM_K_RELU: return (float)(x > 0 ? x : 0);
	case TFM_K_RELU2: return (float)(x > 0 ? x * x : 0);
	case TFM_K_GELU_QUICK: return (float)(x / (1 + exp(-1.702 * x)));
	}
	return NAN;
}

static void ref_act(float *x, int64_t n, int act)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = tfm_ref_act1(x[i], act);
}

static void ref_act_mul(float *g, const float *u, int64_t n, int act)
{
	for (int64_t i = 0; i < n; i++)
		g[i] = (float)((double)tfm_ref_act1(g[i], act) * u[i]);
}

static void ref_add(float *y, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] + b[i];
}

static void ref_mul(float *y, const float *a, const float *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] * b[i];
}

/* The cache is [n_slots][n_head_kv] rows of k_type and v_type (tfm_k_kv_bytes);
 * each row read is dequantized whole (tfm_k_row_to_f32), not element by
 * element: a block type's element costs the decoding of its block. */
void tfm_ref_attn(struct tfm_kexec *k, float *out, const float *q, const void *kc,
		  const void *vc, const struct tfm_attn_args *a)
{
	int64_t hd = a->head_dim, qd = a->n_head * hd;
	int64_t vd = a->v_dim ? a->v_dim : hd;
	size_t krow = tfm_k_kv_bytes(a->k_type, 1, 1, hd), vrow = tfm_k_kv_bytes(a->v_type, 1, 1, vd);
	int vtype = a->v_type;
	int64_t vn = vd; /* elements of a value row as stored */
	if (a->v_from_k) /* values: the head of each key row */
		vc = kc, vrow = krow, vtype = a->k_type, vn = hd;
	double *acc = (double *)k->scratch; /* [vd] one head's output, summed over keys */
	float *kr = (float *)(acc + vd);    /* [hd] one key row */
	float *vr = kr + hd;                /* [vn] one value row */
	float *sc = vr + vn;                /* [n_slots] scores of the visible keys */
	int64_t grp = a->n_head / a->n_head_kv;
	for (int64_t t = 0; t < a->n_tok; t++) {
		int64_t p = a->bidir ? (a->n_kv > 0 ? a->n_kv : a->pos0 + a->n_tok) - 1
				     : a->pos0 + t; /* last key seen */
		int64_t lo = a->window > 0 && p - a->window + 1 > 0 ? p - a->window + 1 : 0;
		if (a->chunk > 0)
			lo = p - p % a->chunk;
		if (a->bidir && a->window > 0) { /* keys within window / 2 either side */
			int64_t q = a->pos0 + t, h = a->window / 2;
			lo = q - h > 0 ? q - h : 0;
			p = q + h < p ? q + h : p;
		}
		for (int64_t h = 0; h < a->n_head; h++) {
			const float *qv = q + t * qd + h * hd;
			int64_t kh = h / grp;
			for (int64_t j = lo; j <= p; j++) {
				const uint8_t *kb = (const uint8_t *)kc +
					((j % a->n_slots) * a->n_head_kv + kh) * krow;
				(void)tfm_k_row_to_f32(a->k_type, kb, kr, hd);
				double s = 0;
				for (int64_t d = 0; d < hd; d++)
					s += (double)qv[d] * kr[d];
				s *= a->scale;
				if (a->softcap > 0)
					s = a->softcap * tanh(s / a->softcap);
				if (a->alibi)
					s += (double)a->alibi[h] * (double)(j - p);
				if (a->rel_bias) {
					int64_t r = j - (a->pos0 + t), w = a->rel_span;
					r = r < -w ? -w : r > w ? w : r;
					s += a->rel_bias[h * (2 * w + 1) + r + w];
				}
				sc[j - lo] = (float)s;
			}
			ref_softmax(sc, p - lo + 1);
			for (int64_t d = 0; d < vd; d++)
				acc[d] = 0;
			for (int64_t j = lo; j <= p; j++) { /* each acc[d] summed in order of j */
				const uint8_t *vb = (const uint8_t *)vc +
					((j % a->n_slots) * a->n_head_kv + kh) * vrow;
				(void)tfm_k_row_to_f32(vtype, vb, vr, vn);
				for (int64_t d = 0; d < vd; d++)
					acc[d] += (double)sc[j - lo] * vr[d];
			}
			float *o = out + (t * a->n_head + h) * vd;
			for (int64_t d = 0; d < vd; d++)
				o[d] = (float)acc[d];
		}
	}
}

static void ref_kv_store(void *kc, void *vc, const float *k, const float *v, int64_t slot,
			 const struct tfm_attn_args *a)
{
	int64_t hd = a->head_dim, vd = a->v_dim ? a->v_dim : hd;
	size_t krow = tfm_k_kv_bytes(a->k_type, 1, 1, hd), vrow = tfm_k_kv_bytes(a->v_type, 1, 1, vd);
	for (int64_t h = 0; h < a->n_head_kv; h++) {
		tfm_k_kv_put(a->k_type, (uint8_t *)kc + (slot * a->n_head_kv + h) * krow, k + h * hd, hd);
		if (!a->v_from_k)
			tfm_k_kv_put(a->v_type, (uint8_t *)vc + (slot * a->n_head_kv + h) * vrow,
				     v + h * vd, vd);
	}
}

static size_t ref_scratch_need(int64_t max_in, int64_t n_slots)
{
	/* matmul: a weight row; attention: a head's sums in double, a key and
	 * a value row (head and value sizes are <= max_in), the scores */
	return 4 * (size_t)max_in + (size_t)n_slots;
}

/* the reference runs on one thread: every unit in one call */
static void ref_parallel(struct tfm_kexec *k,
			 void (*fn)(void *ctx, struct tfm_kexec *kt, int task, int64_t u0, int64_t u1),
			 void *ctx, int64_t n_units, double work)
{
	(void)work;
	fn(ctx, k, 0, 0, n_units);
}

const struct tfm_backend tfm_ref_backend = {
	.name = "ref",
	.matmul = tfm_ref_matmul,
	.rmsnorm = ref_rmsnorm,
	.layernorm = ref_layernorm,
	.rope = ref_rope,
	.softmax = ref_softmax,
	.act = ref_act,
	.act_mul = ref_act_mul,
	.add = ref_add,
	.mul = ref_mul,
	.attn = tfm_ref_attn,
	.kv_store = ref_kv_store,
	.scratch_need = ref_scratch_need,
	.parallel = ref_parallel,
	.mamba_scan = tfm_ref_mamba_scan,
	.mamba2_scan = tfm_ref_mamba2_scan,
	.gdn_step = tfm_ref_gdn_step,
	.rwkv4_wkv = tfm_ref_rwkv4_wkv,
	.rwkv5_wkv = tfm_ref_rwkv5_wkv,
	.rwkv7_wkv = tfm_ref_rwkv7_wkv,
	.mlstm_step = tfm_ref_mlstm_step,
};
