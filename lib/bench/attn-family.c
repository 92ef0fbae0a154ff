/* attn-family.c: the attention family of tfm-bench --attn (attn-family.h):
 * for each variant the reference (the definition, double sums) and beside
 * it the fast kernel (float; OpenBLAS for the products over positions; the
 * recurrent form of the linear attentions).  Layouts, n = ctx, p = n - 1:
 *   q  [H][d] (diff: [P][2][d], q1 then q2; gau: [d])
 *   k  [H][n][d] keys (diff: k1 [P][n][d]; gau: [n][d]); k2: diff's k2,
 *      simplicial's K'
 *   v  [H][n][d] values (diff: [P][n][2d]; gau: [n][e]); v2: simplicial's V'
 *   w  performer's random features [m][d]
 *   S, z  linear / performer: the state of positions 0..p-1, [H][f][d] and
 *      [H][f], f = d (elu + 1) or m */
#include "bench/attn-family.h"
#include "bench/bench.h"
#include "tfm.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tfm_fam_case {
	int var;
	int64_t H, d, n, P, m, e, f;  /* heads, head dim, ctx, diff pairs, features, gau values, state rows */
	int64_t j0, l0;              /* simplicial: first positions of the two key windows */
	float *q, *k, *k2, *v, *v2, *w, *S, *z;
	float *work;                 /* fast kernels' scratch */
	double lambda, lambda_init;  /* diff */
};

static const char *const names[TFM_FAM_N] = {"diff", "linear", "performer", "gau", "simplicial",
					     "simplicial-window"};
static const double theory[TFM_FAM_N] = {1, 0, 0, 1, 2, 0};

const char *tfm_fam_name(int var) { return var >= 0 && var < TFM_FAM_N ? names[var] : "?"; }
double tfm_fam_theory(int var) { return var >= 0 && var < TFM_FAM_N ? theory[var] : NAN; }

static int64_t pairs(const struct tfm_fam_shape *s) { return s->n_head / 2 > 0 ? s->n_head / 2 : 1; }
static int64_t feats(const struct tfm_fam_shape *s) { return s->features > 0 ? s->features : 2 * s->head_dim; }
static int64_t mini(int64_t a, int64_t b) { return a < b ? a : b; }

double tfm_fam_state_bytes(int var, const struct tfm_fam_shape *s)
{
	double H = (double)s->n_head, d = (double)s->head_dim, n = (double)s->ctx;
	double m = (double)feats(s);
	switch (var) {
	case TFM_FAM_DIFF: return n * (double)pairs(s) * 4 * d * 4;        /* k1, k2, v of 2d */
	case TFM_FAM_LINEAR: return H * (d * d + d) * 4;
	case TFM_FAM_PERFORMER: return (H * (m * d + m) + m * d) * 4;      /* state and W */
	case TFM_FAM_GAU: return n * (d + 2 * H * d) * 4;
	case TFM_FAM_SIMPLICIAL: return n * H * 4 * d * 4;                 /* K, K', V, V' */
	case TFM_FAM_SIMPLICIAL_WIN:
		return ((double)mini(s->ctx, s->win1) + (double)mini(s->ctx, s->win2)) * H * 2 * d * 4;
	}
	return 0;
}

int64_t tfm_fam_out_n(int var, const struct tfm_fam_shape *s)
{
	if (var == TFM_FAM_DIFF)
		return pairs(s) * 2 * s->head_dim;
	if (var == TFM_FAM_GAU)
		return 2 * s->n_head * s->head_dim;
	return s->n_head * s->head_dim;
}

void tfm_fam_free(struct tfm_fam_case *c)
{
	if (!c)
		return;
	tfm_afree(c->q), tfm_afree(c->k), tfm_afree(c->k2), tfm_afree(c->v), tfm_afree(c->v2);
	tfm_afree(c->w), tfm_afree(c->S), tfm_afree(c->z), tfm_afree(c->work);
	free(c);
}

static float rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (float)(*x >> 40) / (float)(1ull << 23) - 1.0f;
}

static float *fill(size_t n, uint64_t *seed, float scale)
{
	float *a = tfm_amalloc((n ? n : 1) * sizeof *a);
	for (size_t i = 0; a && i < n; i++)
		a[i] = scale * rnd(seed);
	return a;
}

/* phi of one vector x [d] into out [f]: elu + 1, or the performer's
 * features with the d^-1/4 scale (the double version for the reference) */
static void phi_ref(const struct tfm_fam_case *c, const float *x, double *out)
{
	int64_t d = c->d;
	if (c->var == TFM_FAM_LINEAR) {
		for (int64_t i = 0; i < d; i++)
			out[i] = x[i] > 0 ? x[i] + 1.0 : exp(x[i]);
		return;
	}
	double sc = pow((double)d, -0.25), nn = 0;
	for (int64_t i = 0; i < d; i++)
		nn += (sc * x[i]) * (sc * x[i]);
	for (int64_t r = 0; r < c->m; r++) {
		double a = 0;
		for (int64_t i = 0; i < d; i++)
			a += (double)c->w[r * d + i] * sc * x[i];
		out[r] = exp(a - nn / 2) / sqrt((double)c->m);
	}
}

static void phi_fast(const struct tfm_fam_case *c, const float *x, float *out, float *tmp)
{
	int64_t d = c->d;
	if (c->var == TFM_FAM_LINEAR) {
		for (int64_t i = 0; i < d; i++)
			out[i] = x[i] > 0 ? x[i] + 1.0f : expf(x[i]);
		return;
	}
	float sc = powf((float)d, -0.25f), nn = 0, rs = 1.0f / sqrtf((float)c->m);
	for (int64_t i = 0; i < d; i++) {
		tmp[i] = sc * x[i];
		nn += tmp[i] * tmp[i];
	}
	cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)c->m, (int)d, 1.0f, c->w, (int)d, tmp, 1, 0.0f,
		    out, 1);
	for (int64_t r = 0; r < c->m; r++)
		out[r] = expf(out[r] - nn / 2) * rs;
}

int tfm_fam_new(struct tfm_fam_case **out, int var, const struct tfm_fam_shape *s, uint64_t seed)
{
	*out = NULL;
	if (var < 0 || var >= TFM_FAM_N || s->n_head < 1 || s->head_dim < 1 || s->ctx < 1 ||
	    s->n_head > 4096 || s->head_dim > 2048 || s->ctx > (1 << 24) ||
	    (var == TFM_FAM_PERFORMER && feats(s) > 4096) ||
	    (var == TFM_FAM_SIMPLICIAL_WIN && (s->win1 < 1 || s->win2 < 1)))
		return tfm_seterr(TFM_E_INVAL, "%s attention: bad shape", tfm_fam_name(var));
	struct tfm_fam_case *c = calloc(1, sizeof *c);
	if (!c)
		return TFM_E_NOMEM;
	c->var = var;
	c->H = s->n_head, c->d = s->head_dim, c->n = s->ctx;
	c->P = pairs(s), c->m = feats(s), c->e = 2 * c->H * c->d;
	c->f = var == TFM_FAM_PERFORMER ? c->m : c->d;
	int64_t H = c->H, d = c->d, n = c->n;
	size_t hnd = (size_t)(H * n * d);
	switch (var) {
	case TFM_FAM_DIFF:
		c->q = fill((size_t)(c->P * 2 * d), &seed, 1);
		c->k = fill((size_t)(c->P * n * d), &seed, 1);
		c->k2 = fill((size_t)(c->P * n * d), &seed, 1);
		c->v = fill((size_t)(c->P * n * 2 * d), &seed, 1);
		c->work = tfm_amalloc((size_t)(3 * n + 2 * d) * sizeof(float));
		c->lambda_init = 0.8 - 0.6 * exp(-0.3 * 1); /* layer 1's */
		c->lambda = 0.5;
		break;
	case TFM_FAM_LINEAR:
	case TFM_FAM_PERFORMER:
		c->q = fill((size_t)(H * d), &seed, 1);
		c->k = fill(hnd, &seed, 1);
		c->v = fill(hnd, &seed, 1);
		if (var == TFM_FAM_PERFORMER) { /* Gaussian-like rows: sums of uniforms */
			c->w = fill((size_t)(c->m * d), &seed, 0);
			for (int64_t i = 0; c->w && i < c->m * d; i++)
				c->w[i] = rnd(&seed) + rnd(&seed) + rnd(&seed); /* variance 1 */
		}
		c->S = tfm_amalloc((size_t)(H * c->f * d + 1) * sizeof(float));
		c->z = tfm_amalloc((size_t)(H * c->f + 1) * sizeof(float));
		c->work = tfm_amalloc((size_t)(c->f * d + 3 * c->f + d) * sizeof(float));
		break;
	case TFM_FAM_GAU:
		c->q = fill((size_t)d, &seed, 1);
		c->k = fill((size_t)(n * d), &seed, 1);
		c->v = fill((size_t)(n * c->e), &seed, 1);
		c->work = tfm_amalloc((size_t)n * sizeof(float));
		break;
	default: /* simplicial */
		c->q = fill((size_t)(H * d), &seed, 1);
		c->k = fill(hnd, &seed, 1);
		c->k2 = fill(hnd, &seed, 1);
		c->v = fill(hnd, &seed, 1);
		c->v2 = fill(hnd, &seed, 1);
		c->j0 = var == TFM_FAM_SIMPLICIAL_WIN && n > s->win1 ? n - s->win1 : 0;
		c->l0 = var == TFM_FAM_SIMPLICIAL_WIN && n > s->win2 ? n - s->win2 : 0;
		/* a block of 64 rows: U [64][d], scores [64][n], W [64][d], acc [d] */
		c->work = tfm_amalloc((size_t)(64 * (2 * d + n) + d) * sizeof(float));
	}
	if (!c->q || !c->k || !c->v || !c->work || (var == TFM_FAM_DIFF && !c->k2) ||
	    (var >= TFM_FAM_SIMPLICIAL && (!c->k2 || !c->v2)) ||
	    (var == TFM_FAM_PERFORMER && !c->w) ||
	    ((var == TFM_FAM_LINEAR || var == TFM_FAM_PERFORMER) && (!c->S || !c->z))) {
		tfm_fam_free(c);
		return tfm_seterr(TFM_E_NOMEM, "%s attention at %lld tokens", tfm_fam_name(var),
				  (long long)n);
	}
	if (var == TFM_FAM_LINEAR || var == TFM_FAM_PERFORMER) {
		/* the state of positions 0..n-2, as decoding has built it */
		float *ph = c->work, *tmp = ph + c->f;
		memset(c->S, 0, (size_t)(H * c->f * d) * sizeof(float));
		memset(c->z, 0, (size_t)(H * c->f) * sizeof(float));
		for (int64_t h = 0; h < H; h++)
			for (int64_t j = 0; j + 1 < n; j++) {
				phi_fast(c, c->k + (h * n + j) * d, ph, tmp);
				cblas_sger(CblasRowMajor, (int)c->f, (int)d, 1.0f, ph, 1,
					   c->v + (h * n + j) * d, 1, c->S + h * c->f * d, (int)d);
				for (int64_t r = 0; r < c->f; r++)
					c->z[h * c->f + r] += ph[r];
			}
	}
	*out = c;
	return TFM_OK;
}

/* ---- diff ---- */

static void diff_ref(const struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d;
	double sc = 1 / sqrt((double)d);
	double *p1 = malloc((size_t)n * 2 * sizeof *p1), *p2 = p1 + n;
	for (int64_t pr = 0; pr < c->P; pr++) {
		const float *q1 = c->q + pr * 2 * d, *q2 = q1 + d;
		double *pp[2] = {p1, p2};
		const float *kk[2] = {c->k + pr * n * d, c->k2 + pr * n * d}, *qq[2] = {q1, q2};
		for (int w = 0; w < 2; w++) {
			double mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < n; j++) {
				double a = 0;
				for (int64_t t = 0; t < d; t++)
					a += (double)qq[w][t] * kk[w][j * d + t];
				pp[w][j] = a * sc;
				mx = fmax(mx, pp[w][j]);
			}
			for (int64_t j = 0; j < n; j++)
				sum += (pp[w][j] = exp(pp[w][j] - mx));
			for (int64_t j = 0; j < n; j++)
				pp[w][j] /= sum;
		}
		double o[2 * 4096], ss = 0;
		for (int64_t t = 0; t < 2 * d; t++) {
			double a = 0;
			for (int64_t j = 0; j < n; j++)
				a += (p1[j] - c->lambda * p2[j]) * c->v[(pr * n + j) * 2 * d + t];
			o[t] = a;
			ss += a * a;
		}
		double r = 1 / sqrt(ss / (double)(2 * d) + 1e-5);
		for (int64_t t = 0; t < 2 * d; t++)
			out[pr * 2 * d + t] = (float)(o[t] * r * (1 - c->lambda_init));
	}
	free(p1);
}

static void softmax_f(float *s, int64_t n)
{
	float mx = -INFINITY, sum = 0;
	for (int64_t j = 0; j < n; j++)
		mx = s[j] > mx ? s[j] : mx;
	for (int64_t j = 0; j < n; j++)
		sum += (s[j] = expf(s[j] - mx));
	float inv = 1.0f / sum;
	for (int64_t j = 0; j < n; j++)
		s[j] *= inv;
}

static void diff_fast(struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d;
	float sc = 1.0f / sqrtf((float)d), *s1 = c->work, *s2 = s1 + n;
	for (int64_t pr = 0; pr < c->P; pr++) {
		const float *q1 = c->q + pr * 2 * d, *q2 = q1 + d;
		cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)d, sc, c->k + pr * n * d, (int)d,
			    q1, 1, 0.0f, s1, 1);
		cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)d, sc, c->k2 + pr * n * d, (int)d,
			    q2, 1, 0.0f, s2, 1);
		softmax_f(s1, n);
		softmax_f(s2, n);
		float lam = (float)c->lambda;
		for (int64_t j = 0; j < n; j++)
			s1[j] -= lam * s2[j];
		float *o = out + pr * 2 * d, ss = 0;
		cblas_sgemv(CblasRowMajor, CblasTrans, (int)n, (int)(2 * d), 1.0f,
			    c->v + pr * n * 2 * d, (int)(2 * d), s1, 1, 0.0f, o, 1);
		for (int64_t t = 0; t < 2 * d; t++)
			ss += o[t] * o[t];
		float r = (float)(1 - c->lambda_init) / sqrtf(ss / (float)(2 * d) + 1e-5f);
		for (int64_t t = 0; t < 2 * d; t++)
			o[t] *= r;
	}
}

/* ---- linear and performer ---- */

static void linear_ref(const struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d, f = c->f;
	double *pq = malloc((size_t)(2 * f) * sizeof *pq), *pk = pq + f;
	for (int64_t h = 0; h < c->H; h++) {
		phi_ref(c, c->q + h * d, pq);
		double den = 0, num[4096] = {0};
		for (int64_t j = 0; j < n; j++) {
			phi_ref(c, c->k + (h * n + j) * d, pk);
			double a = 0;
			for (int64_t r = 0; r < f; r++)
				a += pq[r] * pk[r];
			den += a;
			for (int64_t t = 0; t < d; t++)
				num[t] += a * c->v[(h * n + j) * d + t];
		}
		for (int64_t t = 0; t < d; t++)
			out[h * d + t] = (float)(num[t] / den);
	}
	free(pq);
}

static void linear_fast(struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d, f = c->f;
	float *S = c->work, *pk = S + f * d, *pq = pk + f, *z = pq + f, *tmp = z + f;
	for (int64_t h = 0; h < c->H; h++) {
		/* the step: the state gains position n-1, then the query reads it */
		const float *kp = c->k + (h * n + n - 1) * d, *vp = c->v + (h * n + n - 1) * d;
		memcpy(S, c->S + h * f * d, (size_t)(f * d) * sizeof *S);
		phi_fast(c, kp, pk, tmp);
		cblas_sger(CblasRowMajor, (int)f, (int)d, 1.0f, pk, 1, vp, 1, S, (int)d);
		float den = 0;
		phi_fast(c, c->q + h * d, pq, tmp);
		for (int64_t r = 0; r < f; r++) {
			z[r] = c->z[h * f + r] + pk[r];
			den += pq[r] * z[r];
		}
		cblas_sgemv(CblasRowMajor, CblasTrans, (int)f, (int)d, 1.0f / den, S, (int)d, pq, 1, 0.0f,
			    out + h * d, 1);
	}
}

/* ---- GAU ---- */

static void gau_ref(const struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d, e = c->e;
	double sc = 1 / sqrt((double)d);
	double *a = malloc((size_t)n * sizeof *a);
	for (int64_t j = 0; j < n; j++) {
		double s = 0;
		for (int64_t t = 0; t < d; t++)
			s += (double)c->q[t] * c->k[j * d + t];
		s = s * sc > 0 ? s * sc : 0;
		a[j] = s * s / (double)n;
	}
	for (int64_t t = 0; t < e; t++) {
		double o = 0;
		for (int64_t j = 0; j < n; j++)
			o += a[j] * c->v[j * e + t];
		out[t] = (float)o;
	}
	free(a);
}

static void gau_fast(struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d, e = c->e;
	float *a = c->work, inv = 1.0f / (float)n;
	cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)d, 1.0f / sqrtf((float)d), c->k, (int)d,
		    c->q, 1, 0.0f, a, 1);
	for (int64_t j = 0; j < n; j++)
		a[j] = a[j] > 0 ? a[j] * a[j] * inv : 0;
	cblas_sgemv(CblasRowMajor, CblasTrans, (int)n, (int)e, 1.0f, c->v, (int)e, a, 1, 0.0f, out, 1);
}

/* ---- 2-simplicial ---- */

static void simp_ref(const struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d;
	double sc = 1 / sqrt((double)d);
	for (int64_t h = 0; h < c->H; h++) {
		const float *q = c->q + h * d, *K = c->k + h * n * d, *K2 = c->k2 + h * n * d;
		const float *V = c->v + h * n * d, *V2 = c->v2 + h * n * d;
		double mx = -INFINITY, sum = 0, o[4096] = {0};
		for (int pass = 0; pass < 2; pass++)
			for (int64_t j = c->j0; j < n; j++)
				for (int64_t l = c->l0; l < n; l++) {
					double s = 0;
					for (int64_t t = 0; t < d; t++)
						s += (double)q[t] * K[j * d + t] * K2[l * d + t];
					s *= sc;
					if (!pass) {
						mx = fmax(mx, s);
						continue;
					}
					double p = exp(s - mx);
					sum += p;
					for (int64_t t = 0; t < d; t++)
						o[t] += p * V[j * d + t] * V2[l * d + t];
				}
		for (int64_t t = 0; t < d; t++)
			out[h * d + t] = (float)(o[t] / sum);
	}
}

/* Blocks of 64 first keys j: U = q o K_j, scores U K'^T (GEMM), an online
 * softmax over the blocks, W = P V' (GEMM), acc += sum_rows V_j o W_row. */
static void simp_fast(struct tfm_fam_case *c, float *out)
{
	int64_t n = c->n, d = c->d, nl = n - c->l0;
	float sc = 1.0f / sqrtf((float)d);
	float *U = c->work, *Sc = U + 64 * d, *W = Sc + 64 * nl, *acc = W + 64 * d;
	for (int64_t h = 0; h < c->H; h++) {
		const float *q = c->q + h * d, *K = c->k + h * n * d, *K2 = c->k2 + (h * n + c->l0) * d;
		const float *V = c->v + h * n * d, *V2 = c->v2 + (h * n + c->l0) * d;
		float mx = -INFINITY, sum = 0;
		memset(acc, 0, (size_t)d * sizeof *acc);
		for (int64_t j0 = c->j0; j0 < n; j0 += 64) {
			int64_t nb = n - j0 < 64 ? n - j0 : 64;
			for (int64_t r = 0; r < nb; r++)
				for (int64_t t = 0; t < d; t++)
					U[r * d + t] = q[t] * K[(j0 + r) * d + t] * sc;
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)nl, (int)d, 1.0f,
				    U, (int)d, K2, (int)d, 0.0f, Sc, (int)nl);
			float bm = -INFINITY;
			for (int64_t i = 0; i < nb * nl; i++)
				bm = Sc[i] > bm ? Sc[i] : bm;
			float mn = bm > mx ? bm : mx, corr = expf(mx - mn);
			sum *= corr;
			for (int64_t t = 0; t < d; t++)
				acc[t] *= corr;
			mx = mn;
			for (int64_t i = 0; i < nb * nl; i++)
				sum += (Sc[i] = expf(Sc[i] - mn));
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)d, (int)nl, 1.0f,
				    Sc, (int)nl, V2, (int)d, 0.0f, W, (int)d);
			for (int64_t r = 0; r < nb; r++)
				for (int64_t t = 0; t < d; t++)
					acc[t] += V[(j0 + r) * d + t] * W[r * d + t];
		}
		for (int64_t t = 0; t < d; t++)
			out[h * d + t] = acc[t] / sum;
	}
}

void tfm_fam_ref(const struct tfm_fam_case *c, float *out)
{
	switch (c->var) {
	case TFM_FAM_DIFF: diff_ref(c, out); break;
	case TFM_FAM_LINEAR: case TFM_FAM_PERFORMER: linear_ref(c, out); break;
	case TFM_FAM_GAU: gau_ref(c, out); break;
	default: simp_ref(c, out);
	}
}

void tfm_fam_fast(struct tfm_fam_case *c, float *out)
{
	switch (c->var) {
	case TFM_FAM_DIFF: diff_fast(c, out); break;
	case TFM_FAM_LINEAR: case TFM_FAM_PERFORMER: linear_fast(c, out); break;
	case TFM_FAM_GAU: gau_fast(c, out); break;
	default: simp_fast(c, out);
	}
}

int tfm_fam_time(int var, const struct tfm_fam_shape *s, int fast, double min_s, int max_reps,
		 double *seconds)
{
	struct tfm_fam_case *c;
	*seconds = 0;
	int st = tfm_fam_new(&c, var, s, 11);
	if (st)
		return st;
	float *out = tfm_amalloc((size_t)tfm_fam_out_n(var, s) * sizeof *out);
	if (!out) {
		tfm_fam_free(c);
		return TFM_E_NOMEM;
	}
	double t0 = tfm_bench_now(), dt;
	fast ? tfm_fam_fast(c, out) : tfm_fam_ref(c, out);
	dt = tfm_bench_now() - t0;
	if (dt < min_s) { /* a call that takes min_s already is its own measurement */
		int reps = 0;
		t0 = tfm_bench_now();
		do {
			fast ? tfm_fam_fast(c, out) : tfm_fam_ref(c, out);
			reps++;
			dt = tfm_bench_now() - t0;
		} while (dt < min_s && reps < (max_reps > 0 ? max_reps : 1000000));
		dt /= reps;
	}
	*seconds = dt;
	tfm_afree(out);
	tfm_fam_free(c);
	return TFM_OK;
}

double tfm_fam_fit_exponent(const double *x, const double *y, int n, double x_min)
{
	int use = 0;
	for (int i = 0; i < n; i++)
		use += x[i] >= x_min && y[i] > 0 && x[i] > 0;
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!(y[i] > 0 && x[i] > 0) || (use >= 3 && x[i] < x_min))
			continue;
		double lx = log(x[i]), ly = log(y[i]);
		sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
		k++;
	}
	if (k < 2 || k * sxx - sx * sx <= 0)
		return NAN;
	return (k * sxy - sx * sy) / (k * sxx - sx * sx);
}
