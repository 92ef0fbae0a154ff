/* exp-avx512.h: the vector exp of the AVX512 kernels (softmax, activations,
 * the recurrent scans), for files compiled with -mavx512f. */
#ifndef TFM_CPU_EXP_AVX512_H
#define TFM_CPU_EXP_AVX512_H

#include <immintrin.h>

/* exp(x) for x <= 88: Cephes' expf (range reduction by ln 2 split in two
 * parts, degree-6 polynomial), about 1 ulp; inputs below -87.3 give ~1e-38. */
static inline __m512 exp512(__m512 x)
{
	x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
	x = _mm512_min_ps(x, _mm512_set1_ps(88.3f));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	__m512 p = _mm512_set1_ps(1.9875691500E-4f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
	p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	return _mm512_scalef_ps(p, n);
}

#endif
