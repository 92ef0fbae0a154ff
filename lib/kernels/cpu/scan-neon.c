/* scan-neon.c: the recurrent mixers' steps with NEON, 4 lanes (scan-simd.h
 * has the kernels and how they relate to the reference).  A tail mask is
 * the count of lanes; masked loads and stores go through a buffer. */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/exp-neon.h"

#include <arm_neon.h>
#include <math.h>
#include <string.h>

static inline float32x4_t ld_n(const float *p, int n) /* lanes [0, n), zeros above */
{
	float t[4] = {0};
	memcpy(t, p, (size_t)n * sizeof *p);
	return vld1q_f32(t);
}

static inline void st_n(float *p, int n, float32x4_t v)
{
	float t[4];
	vst1q_f32(t, v);
	memcpy(p, t, (size_t)n * sizeof *p);
}

#define VW 4
#define vf float32x4_t
#define vm int
#define SCAN(name) tfm_cpu_##name##_neon
#define MASK(n) ((int)(n))
#define LD(p) vld1q_f32(p)
#define LDM(p, m) ld_n(p, m)
#define ST(p, v) vst1q_f32(p, v)
#define STM(p, m, v) st_n(p, m, v)
#define SET1(x) vdupq_n_f32(x)
#define ZERO() vdupq_n_f32(0)
#define ADD vaddq_f32
#define SUB vsubq_f32
#define MUL vmulq_f32
#define DIV vdivq_f32
#define FMA(a, b, c) vfmaq_f32(c, a, b)
#define MAX vmaxq_f32
#define VEXP exp4
#define HSUM vaddvq_f32

#include "kernels/cpu/scan-simd.h"
