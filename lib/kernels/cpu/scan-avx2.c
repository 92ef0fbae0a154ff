/* scan-avx2.c: the recurrent mixers' steps with AVX2 + FMA, 8 lanes
 * (scan-simd.h has the kernels and how they relate to the reference). */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/exp-avx2.h"

#include <immintrin.h>
#include <math.h>

static inline __m256i tail_mask(int64_t n) /* lanes [0, n), n < 8 */
{
	static const int32_t m[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
	return _mm256_loadu_si256((const __m256i *)(m + 8 - n));
}

static inline float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

#define VW 8
#define vf __m256
#define vm __m256i
#define SCAN(name) tfm_cpu_##name##_avx2
#define MASK(n) tail_mask(n)
#define LD(p) _mm256_loadu_ps(p)
#define LDM(p, m) _mm256_maskload_ps(p, m)
#define ST(p, v) _mm256_storeu_ps(p, v)
#define STM(p, m, v) _mm256_maskstore_ps(p, m, v)
#define SET1(x) _mm256_set1_ps(x)
#define ZERO() _mm256_setzero_ps()
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define DIV _mm256_div_ps
#define FMA _mm256_fmadd_ps
#define MAX _mm256_max_ps
#define VEXP exp256
#define HSUM hsum256

#include "kernels/cpu/scan-simd.h"
