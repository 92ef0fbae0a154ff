/* half.c: IEEE half and bfloat16 <-> float, scalar and exact
 * (round to nearest even; NaN stays NaN). */
#include "tfm.h"

#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float tfm_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	if (exp == 0x1f)
		return bitsf(sign | 0x7f800000 | (man << 13));
	if (exp == 0) {
		if (!man)
			return bitsf(sign);
		/* subnormal: value = man * 2^-24 */
		float v = (float)man * (1.0f / 16777216.0f);
		return sign ? -v : v;
	}
	return bitsf(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tfm_f32_to_f16(float f)
{
	uint32_t u = fbits(f);
	uint32_t sign = (u >> 16) & 0x8000;
	uint32_t a = u & 0x7fffffff;
	if (a >= 0x7f800000) /* inf or nan */
		return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000 ? 0x200 : 0));
	if (a >= 0x477ff000) /* rounds to >= 65520: inf */
		return (uint16_t)(sign | 0x7c00);
	if (a < 0x38800000) { /* subnormal half or zero */
		/* add 0.5 in the magic way: round to nearest even via float add */
		float v = bitsf(a) + 0.5f;
		return (uint16_t)(sign | (fbits(v) - 0x3f000000));
	}
	uint32_t mant_odd = (a >> 13) & 1;
	a += 0xc8000fff + mant_odd; /* rebias exponent (-112<<23) and round */
	return (uint16_t)(sign | (a >> 13));
}

float tfm_bf16_to_f32(uint16_t h) { return bitsf((uint32_t)h << 16); }

uint16_t tfm_f32_to_bf16(float f)
{
	uint32_t u = fbits(f);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 64); /* quiet nan */
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}
