/* scan-avx512.c: the recurrent mixers' steps with AVX-512F, 16 lanes
 * (scan-simd.h has the kernels and how they relate to the reference). */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/exp-avx512.h"

#include <immintrin.h>
#include <math.h>

#define VW 16
#define vf __m512
#define vm __mmask16
#define SCAN(name) tfm_cpu_##name##_avx512
#define MASK(n) ((__mmask16)((1u << (n)) - 1))
#define LD(p) _mm512_loadu_ps(p)
#define LDM(p, m) _mm512_maskz_loadu_ps(m, p)
#define ST(p, v) _mm512_storeu_ps(p, v)
#define STM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define SET1(x) _mm512_set1_ps(x)
#define ZERO() _mm512_setzero_ps()
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define DIV _mm512_div_ps
#define FMA _mm512_fmadd_ps
#define MAX _mm512_max_ps
#define VEXP exp512
#define HSUM _mm512_reduce_add_ps

#include "kernels/cpu/scan-simd.h"
