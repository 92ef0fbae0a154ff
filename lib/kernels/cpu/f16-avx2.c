/* f16-avx2.c: AVX2 + F16C helpers of the CPU backend: f16 rows to f32
 * (KV cache tiles). */
#include "kernels/cpu/cpu-impl.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

/* y[i] = x[i] (f16 bits) as f32, exact (F16C); KV cache tiles */
void tfm_cpu_f16_row_avx2(float *y, const uint16_t *x, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
	for (; i < n; i++)
		y[i] = _cvtsh_ss(x[i]);
}
