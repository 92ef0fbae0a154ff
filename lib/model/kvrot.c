/* kvrot.c: the Walsh-Hadamard rotation of quantized KV caches.  Before keys
 * are stored in a block-quantized cache (q8_0, q5_1, q5_0, q4_1, q4_0),
 * every query and key head is multiplied by an orthonormal Walsh-Hadamard
 * matrix H (blockwise, n x n): q.k is unchanged (H H^T = I) but a key's
 * outliers are spread over its block, so 4 to 8 bits per element lose less.
 * Values are rotated in blocks of 64 before they are stored, and the
 * attention output is rotated back (H is symmetric and H H = I).  As
 * llama.cpp's KV cache does since 2026 (attn_rot_k, attn_rot_v): keys in
 * blocks of the largest power of two >= 64 dividing the head size, values
 * in blocks of 64, only for head sizes that are multiples of 64.  H is
 * Sylvester's: H[i][j] = (-1)^popcount(i & j) / sqrt(n). */
#include "model/model-impl.h"

#include <math.h>

int64_t tfm_kvrot_block(int type, int64_t dim, int keys)
{
	const struct tfm_type_info *ti = tfm_type_info(type);
	if (!ti || ti->blck < 2 || dim % 64)
		return 0;
	if (!keys)
		return 64;
	int64_t n = 64;
	while (dim % (2 * n) == 0)
		n *= 2;
	return n;
}

void tfm_kvrot(float *x, int64_t rows, int64_t dim, int64_t n)
{
	float s = 1.0f / sqrtf((float)n);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t b = 0; b < dim; b += n) {
			float *v = x + r * dim + b;
			/* the fast transform: log2(n) butterfly passes */
			for (int64_t h = 1; h < n; h *= 2)
				for (int64_t i = 0; i < n; i += 2 * h)
					for (int64_t j = i; j < i + h; j++) {
						float a = v[j], c = v[j + h];
						v[j] = a + c, v[j + h] = a - c;
					}
			for (int64_t i = 0; i < n; i++)
				v[i] *= s;
		}
}
