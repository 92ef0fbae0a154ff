/* attn-family.h: the attention variants tfm-bench --attn times beside the
 * executor's kernels, each as a scalar reference (the definition, in
 * double) and a fast kernel (float, OpenBLAS GEMV/GEMM, the recurrent form
 * where one exists).  One call computes the attention output of the query
 * at position p = ctx - 1 over positions 0..p (a decode step): for the
 * recurrent forms, the state of positions 0..p-1 is built when the case is
 * made (not timed) and the step adds position p and reads it.
 *
 *   diff        differential attention (diffllama): head pairs, each
 *               (softmax(q1 K1^T s) - lambda softmax(q2 K2^T s)) V, V of 2d,
 *               then RMS-normalised and scaled by 1 - lambda_init
 *   linear      causal linear attention, phi = elu + 1:
 *               phi(q) . sum_j phi(k_j) v_j^T / phi(q) . sum_j phi(k_j)
 *   performer   the same with FAVOR+ positive random features,
 *               phi(x) = exp(W x - |x|^2 / 2) / sqrt(m), x = d^-1/4 q (or k)
 *   gau         GAU's single-head attention (Transformer Quality in Linear
 *               Time): shared dim s = d, values e = 2 H d,
 *               o = sum_j relu(q . k_j / sqrt(s))^2 / (p + 1) v_j
 *   simplicial  2-simplicial attention: scores q . (k_j o k'_l) / sqrt(d) over
 *               key pairs (j, l), softmax over the pairs, o = sum p_jl v_j o v'_l
 *   simplicial-window  the same with j in the last w1, l in the last w2
 *               positions (the paper's windowed form)
 */
#ifndef TFM_BENCH_ATTN_FAMILY_H
#define TFM_BENCH_ATTN_FAMILY_H

#include <stdint.h>

enum { TFM_FAM_DIFF = 0, TFM_FAM_LINEAR, TFM_FAM_PERFORMER, TFM_FAM_GAU, TFM_FAM_SIMPLICIAL,
       TFM_FAM_SIMPLICIAL_WIN, TFM_FAM_N };

struct tfm_fam_shape {
	int64_t n_head, head_dim, ctx;
	int64_t features;   /* performer: random features m (0: 2 head_dim) */
	int64_t win1, win2; /* simplicial-window: the two key windows */
};

struct tfm_fam_case;

const char *tfm_fam_name(int var);
/* The exponent of ctx that one decode step's work grows with, in theory
 * (a whole context: one more). */
double tfm_fam_theory(int var);
/* Bytes of cache or state (f32) the variant keeps for a context of ctx. */
double tfm_fam_state_bytes(int var, const struct tfm_fam_shape *s);
/* Elements of one step's output. */
int64_t tfm_fam_out_n(int var, const struct tfm_fam_shape *s);

/* A case of random inputs in [-1, 1) (seeded); TFM_E_INVAL on a bad shape,
 * TFM_E_NOMEM. */
int tfm_fam_new(struct tfm_fam_case **c, int var, const struct tfm_fam_shape *s, uint64_t seed);
void tfm_fam_free(struct tfm_fam_case *c);
/* One decode step into out [tfm_fam_out_n]. */
void tfm_fam_ref(const struct tfm_fam_case *c, float *out);
void tfm_fam_fast(struct tfm_fam_case *c, float *out);

/* Seconds per decode step of the fast (or reference) kernel: repeated for
 * at least min_s seconds or max_reps calls. */
int tfm_fam_time(int var, const struct tfm_fam_shape *s, int fast, double min_s, int max_reps,
		 double *seconds);

/* Least-squares slope of log y against log x over the n points with x >= x_min
 * and y > 0 (all points when fewer than 3 qualify); NAN when under 2. */
double tfm_fam_fit_exponent(const double *x, const double *y, int n, double x_min);

#endif
