/* test_quant.c: ggml block formats: sizes, hand-made blocks decoded and
 * encoded to hand-computed values, round-trip error of each quantizer on
 * Gaussian rows under a bound derived from its bits, fast kernels against
 * the reference, dot products against the f32 dot of the dequantized rows,
 * and TFM_ISA choosing the path (the program runs itself again under it). */
#include "t.h"

#include "quant/quant-impl.h"

#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static double urand(void) /* (0, 1) */
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static float gauss(void)
{
	return (float)(sqrt(-2 * log(urand())) * cos(2 * M_PI * urand()));
}
static void fill_gauss(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = gauss();
}
static double rms(const float *x, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return sqrt(s / n);
}
static double rmse(const float *a, const float *b, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
	return sqrt(s / n);
}

static const int qtypes[] = {TFM_TYPE_Q8_0, TFM_TYPE_Q4_0, TFM_TYPE_Q4_1, TFM_TYPE_Q5_0,
			     TFM_TYPE_Q5_1, TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K,
			     TFM_TYPE_Q8_K, TFM_TYPE_Q8_1};
#define NQ ((int)(sizeof qtypes / sizeof qtypes[0]))
static const char *qname(int t)
{
	switch (t) {
	case TFM_TYPE_Q8_0: return "q8_0";
	case TFM_TYPE_Q4_0: return "q4_0";
	case TFM_TYPE_Q4_1: return "q4_1";
	case TFM_TYPE_Q5_0: return "q5_0";
	case TFM_TYPE_Q5_1: return "q5_1";
	case TFM_TYPE_Q4_K: return "q4_K";
	case TFM_TYPE_Q5_K: return "q5_K";
	case TFM_TYPE_Q6_K: return "q6_K";
	case TFM_TYPE_Q8_K: return "q8_K";
	case TFM_TYPE_Q8_1: return "q8_1";
	}
	return "?";
}

/* ---- tests ---- */

/* Bytes per block as ggml-common.h's static_asserts state them. */
static void t_sizes(void)
{
	CHECK(sizeof(struct tfm_block_q4_0) == 18 && tfm_quant_block_bytes(TFM_TYPE_Q4_0) == 18);
	CHECK(sizeof(struct tfm_block_q4_1) == 20 && tfm_quant_block_bytes(TFM_TYPE_Q4_1) == 20);
	CHECK(sizeof(struct tfm_block_q5_0) == 22 && tfm_quant_block_bytes(TFM_TYPE_Q5_0) == 22);
	CHECK(sizeof(struct tfm_block_q5_1) == 24 && tfm_quant_block_bytes(TFM_TYPE_Q5_1) == 24);
	CHECK(sizeof(struct tfm_block_q8_0) == 34 && tfm_quant_block_bytes(TFM_TYPE_Q8_0) == 34);
	CHECK(sizeof(struct tfm_block_q8_1) == 36 && tfm_quant_block_bytes(TFM_TYPE_Q8_1) == 36);
	CHECK(sizeof(struct tfm_block_q4_K) == 144 && tfm_quant_block_bytes(TFM_TYPE_Q4_K) == 144);
	CHECK(sizeof(struct tfm_block_q5_K) == 176 && tfm_quant_block_bytes(TFM_TYPE_Q5_K) == 176);
	CHECK(sizeof(struct tfm_block_q6_K) == 210 && tfm_quant_block_bytes(TFM_TYPE_Q6_K) == 210);
	CHECK(sizeof(struct tfm_block_q8_K) == 292 && tfm_quant_block_bytes(TFM_TYPE_Q8_K) == 292);
	CHECK(tfm_quant_blck(TFM_TYPE_Q4_0) == 32 && tfm_quant_blck(TFM_TYPE_Q6_K) == 256);
	CHECK(tfm_quant_row_bytes(TFM_TYPE_Q4_K, 4096) == 16 * 144);
	CHECK(tfm_quant_row_bytes(TFM_TYPE_Q4_K, 64) == 0);
	CHECK(tfm_quant_row_bytes(TFM_TYPE_F16, 3) == 6);
	CHECK(tfm_quant_row_bytes(TFM_TYPE_BF16, 3) == 6);
	CHECK(!tfm_quant_supported(TFM_TYPE_Q2_K));
	CHECK(tfm_vec_dot_type(TFM_TYPE_Q4_1) == TFM_TYPE_Q8_1);
	CHECK(tfm_vec_dot_type(TFM_TYPE_Q5_0) == TFM_TYPE_Q8_0);
	CHECK(tfm_vec_dot_type(TFM_TYPE_Q6_K) == TFM_TYPE_Q8_K);
	CHECK(tfm_vec_dot_type(TFM_TYPE_Q8_K) == -1);
}

static void t_errors(void)
{
	float x[64] = {0};
	uint8_t y[512];
	CHECK_ST(tfm_quantize_row_ref(TFM_TYPE_Q2_K, x, y, 256), TFM_E_UNSUPPORTED);
	CHECK_ST(tfm_quantize_row(TFM_TYPE_Q4_0, x, y, 48), TFM_E_INVAL);
	CHECK_ST(tfm_dequantize_row(TFM_TYPE_Q4_K, y, x, 64), TFM_E_INVAL);
	CHECK(tfm_vec_dot(TFM_TYPE_IQ2_XXS) == NULL);
}

/* Blocks written by hand from the layouts, decoded to values computed by
 * hand. */
static void t_hand_decode(void)
{
	float y[256];
	/* q4_0: d = 0.5 (0x3800); qs[0] = 0x1F: element 0 = (15-8)*0.5,
	 * element 16 = (1-8)*0.5; other nibbles 8 -> 0 */
	struct tfm_block_q4_0 b40 = {0x3800, {0}};
	memset(b40.qs, 0x88, sizeof b40.qs);
	b40.qs[0] = 0x1F;
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q4_0, &b40, y, 32));
	CHECK(y[0] == 3.5f && y[16] == -3.5f && y[1] == 0 && y[31] == 0);
	CHECK_OK(tfm_dequantize_row(TFM_TYPE_Q4_0, &b40, y, 32));
	CHECK(y[0] == 3.5f && y[16] == -3.5f && y[1] == 0 && y[31] == 0);

	/* q4_1: d = 2, m = -1: element 0 = 3*2-1 = 5, element 16 = 0*2-1 */
	struct tfm_block_q4_1 b41 = {0x4000, 0xbc00, {0x03}};
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q4_1, &b41, y, 32));
	CHECK(y[0] == 5.0f && y[16] == -1.0f && y[5] == -1.0f);

	/* q5_0: d = 0.25; element 0: nibble 15 + fifth bit (qh bit 0) ->
	 * 31-16 = 15 -> 3.75; element 16: nibble 0, qh bit 16 clear -> -4;
	 * element 17: nibble 0, qh bit 17 set -> 0 */
	struct tfm_block_q5_0 b50 = {0x3400, {0x01, 0x00, 0x02, 0x00}, {0x0F}};
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q5_0, &b50, y, 32));
	CHECK(y[0] == 3.75f && y[16] == -4.0f && y[17] == 0.0f && y[1] == -4.0f);

	/* q5_1: d = 1, m = 0.5: element 31 = high nibble of qs[15] (2) + qh
	 * bit 31 (16) = 18 -> 18.5 */
	struct tfm_block_q5_1 b51 = {0x3c00, 0x3800, {0, 0, 0, 0x80}, {0}};
	b51.qs[15] = 0x20;
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q5_1, &b51, y, 32));
	CHECK(y[31] == 18.5f && y[0] == 0.5f);

	/* q8_0: d = 0.125; qs[3] = -100 -> -12.5 */
	struct tfm_block_q8_0 b80 = {0x3000, {0}};
	b80.qs[3] = -100;
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q8_0, &b80, y, 32));
	CHECK(y[3] == -12.5f && y[0] == 0);
	CHECK_OK(tfm_dequantize_row(TFM_TYPE_Q8_0, &b80, y, 32));
	CHECK(y[3] == -12.5f && y[0] == 0);

	/* q4_K: d = 1, dmin = 0.5.  Sub-block 0: scale 2 (scales[0] low 6
	 * bits), min 4 (scales[4]); sub-block 4: scale = scales[8] low nibble
	 * 1 | (scales[0] >> 6) << 4 = 17, min = scales[8] high nibble 2 |
	 * (scales[4] >> 6) << 4 = 34.  Element 0 = low nibble of qs[0] (3):
	 * 2*3 - 0.5*4 = 4; element 128 = low nibble of qs[64] (5):
	 * 17*5 - 0.5*34 = 68; element 32 (sub-block 1, all zero) = 0. */
	struct tfm_block_q4_K bk4;
	memset(&bk4, 0, sizeof bk4);
	bk4.d = 0x3c00;
	bk4.dmin = 0x3800;
	bk4.scales[0] = 2 | 0x40;
	bk4.scales[4] = 4 | 0x80;
	bk4.scales[8] = 0x21;
	bk4.qs[0] = 0x03;
	bk4.qs[64] = 0x05;
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q4_K, &bk4, y, 256));
	CHECK(y[0] == 4.0f && y[128] == 68.0f && y[32] == 0.0f && y[1] == -2.0f && y[129] == -17.0f);

	/* q5_K: the same scales; fifth bit of element 1 = qh[1] bit 0,
	 * of element 33 = qh[1] bit 1 (sub-block 1: scale 0 -> 0). */
	struct tfm_block_q5_K bk5;
	memset(&bk5, 0, sizeof bk5);
	bk5.d = 0x3c00;
	bk5.dmin = 0x3800;
	bk5.scales[0] = 2 | 0x40;
	bk5.scales[4] = 4 | 0x80;
	bk5.scales[8] = 0x21;
	bk5.qs[1] = 0x01;
	bk5.qh[1] = 0x01;
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q5_K, &bk5, y, 256));
	CHECK(y[1] == 2 * 17 - 2.0f && y[0] == -2.0f && y[128] == -17.0f);

	/* q6_K: d = 0.5, scales[0] = 3, scales[4] = -2.  Element 0: ql[0] low
	 * nibble 1 | (qh[0] & 3) << 4 = 2<<4 -> 33-32 = 1 -> 0.5*3*1 = 1.5;
	 * element 64: ql[0] high nibble 15 | (qh[0] >> 4 & 3) = 0 -> 15-32 =
	 * -17 -> 0.5*-2*-17 = 17; element 1: q = 0 -> -32 -> -48. */
	struct tfm_block_q6_K bk6;
	memset(&bk6, 0, sizeof bk6);
	bk6.d = 0x3800;
	bk6.scales[0] = 3;
	bk6.scales[4] = -2;
	bk6.ql[0] = 0xF1;
	bk6.qh[0] = 0x02;
	CHECK_OK(tfm_dequantize_row_ref(TFM_TYPE_Q6_K, &bk6, y, 256));
	CHECK(y[0] == 1.5f && y[64] == 17.0f && y[1] == -48.0f && y[16] == 0.0f);
}

/* Quantizing hand-made inputs: all zeros, and one large value. */
static void t_hand_encode(void)
{
	float x[256], y[256];
	uint8_t buf[512];
	/* zeros decode to zeros in every type, with all-zero scales */
	memset(x, 0, sizeof x);
	for (int k = 0; k < NQ; k++) {
		int t = qtypes[k];
		memset(buf, 0xAA, sizeof buf);
		CHECK_OK(tfm_quantize_row_ref(t, x, buf, 256));
		CHECK_OK(tfm_dequantize_row_ref(t, buf, y, 256));
		int bad = 0;
		for (int i = 0; i < 256; i++)
			bad += y[i] != 0;
		CHECK_MSG(bad == 0, "%s: zeros decode to %d non-zeros", qname(t), bad);
	}
	/* q4_0, one value -8 at 5: d = -8/-8 = 1 (0x3c00); element 5 ->
	 * trunc(-8 + 8.5) = 0, the rest trunc(8.5) = 8 */
	memset(x, 0, sizeof x);
	x[5] = -8;
	struct tfm_block_q4_0 b40;
	tfm_quantize_row_ref(TFM_TYPE_Q4_0, x, &b40, 32);
	CHECK(b40.d == 0x3c00 && b40.qs[5] == 0x80 && b40.qs[0] == 0x88);
	/* q8_0 of x[j] = j - 16: d = 16/127 (f16 0x3008 = 0.1259765625),
	 * q = roundf(x*127/16): -16 -> -127, 15 -> roundf(119.0625) = 119,
	 * -1 -> roundf(-7.9375) = -8 */
	for (int j = 0; j < 32; j++)
		x[j] = j - 16;
	struct tfm_block_q8_0 b80;
	tfm_quantize_row_ref(TFM_TYPE_Q8_0, x, &b80, 32);
	CHECK(b80.d == 0x3008);
	CHECK(b80.qs[0] == -127 && b80.qs[31] == 119 && b80.qs[15] == -8 && b80.qs[16] == 0);
	/* q8_K: one value 2 among zeros: d = 1/(-127/2) in f32, q = -(-127)
	 * ... iscale*x = -127/2*2 = -127; bsums[0] = -127 */
	memset(x, 0, sizeof x);
	x[3] = 2;
	struct tfm_block_q8_K bq8;
	tfm_quantize_row_ref(TFM_TYPE_Q8_K, x, &bq8, 256);
	CHECK(bq8.qs[3] == -127 && bq8.qs[0] == 0 && bq8.bsums[0] == -127 && bq8.bsums[1] == 0);
	CHECK(bq8.d == 1 / (-127.f / 2));
	/* q6_K: a block with one value 1 among zeros decodes it within the
	 * q6_K step: the 16-element group's scale is found for that value */
	memset(x, 0, sizeof x);
	x[200] = 1;
	struct tfm_block_q6_K b6;
	tfm_quantize_row_ref(TFM_TYPE_Q6_K, x, &b6, 256);
	tfm_dequantize_row_ref(TFM_TYPE_Q6_K, &b6, y, 256);
	CHECK_CLOSE(y[200], 1.0, 1.0 / 64, 0);
	CHECK(y[0] == 0 && y[201] == 0);
}

/* Round trip on Gaussian rows (sigma 1).  Bounds on RMSE / RMS: rounding
 * to a grid of step D errs by D/sqrt(12) in RMS, and D follows from the
 * bits and the block: the expected largest |x| of 16, 32 and 256 Gaussians
 * is about 2.0, 2.42 and 3.0 sigma, the range max-min of 32 about 4.1.
 *   q8_0, q8_1  D = amax/127      -> 0.55%   bound 0.63%
 *   q8_K        D = amax256/127   -> 0.68%   bound 0.80%
 *   q4_0        D = amax/8        -> 8.7%    bound 10%
 *   q5_0        D = amax/16       -> 4.4%    bound 5.0%
 *   q4_1        D = range/15      -> 7.9%    bound 9.2%
 *   q5_1        D = range/31      -> 3.8%    bound 4.6%
 *   q4_K, q5_K  as q4_1, q5_1 (the scale search only lowers it): 9.2%, 4.6%
 *   q6_K        D = amax16/32     -> 1.8%    bound 2.1%
 *   f16, bf16   relative steps 2^-10..2^-11, 2^-7..2^-8: 0.03%, 0.25%
 * (the bounds are the estimates plus 15%). */
static void t_roundtrip(void)
{
	const int64_t n = 256 * 64;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	uint8_t *q = malloc(n * 2);
	struct { int type; double bound; } cases[] = {
		{TFM_TYPE_Q8_0, 0.0063}, {TFM_TYPE_Q8_1, 0.0063}, {TFM_TYPE_Q4_0, 0.10},
		{TFM_TYPE_Q4_1, 0.092}, {TFM_TYPE_Q5_0, 0.050}, {TFM_TYPE_Q5_1, 0.046},
		{TFM_TYPE_Q4_K, 0.092}, {TFM_TYPE_Q5_K, 0.046}, {TFM_TYPE_Q6_K, 0.021},
		{TFM_TYPE_Q8_K, 0.008}, {TFM_TYPE_F16, 0.0003}, {TFM_TYPE_BF16, 0.0025},
	};
	fill_gauss(x, n);
	double r = rms(x, n);
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int t = cases[k].type;
		CHECK_OK(tfm_quantize_row_ref(t, x, q, n));
		CHECK_OK(tfm_dequantize_row_ref(t, q, y, n));
		double e = rmse(x, y, n) / r;
		printf("  roundtrip %-5s rel RMSE %.5f (bound %.4f)\n", t == TFM_TYPE_F16 ? "f16" :
		       t == TFM_TYPE_BF16 ? "bf16" : qname(t), e, cases[k].bound);
		CHECK_MSG(e < cases[k].bound, "type %d: rel RMSE %g >= %g", t, e, cases[k].bound);
	}
	free(x);
	free(y);
	free(q);
}

/* The fast quantizers (activation formats) and dequantizers agree with the
 * reference: dequantized outputs within RMSE 1e-4 (relative), and q8_K
 * byte for byte (same rounding). */
static void t_fast_vs_ref(void)
{
	printf("  fast kernels: %s\n", tfm_quant_isa());
	const int64_t n = 256 * 32;
	float *x = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
	uint8_t *qa = malloc(n * 2), *qb = malloc(n * 2);
	fill_gauss(x, n);
	int types[] = {TFM_TYPE_Q8_0, TFM_TYPE_Q8_1, TFM_TYPE_Q8_K, TFM_TYPE_Q4_0, TFM_TYPE_Q4_K};
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		int t = types[k];
		CHECK_OK(tfm_quantize_row_ref(t, x, qa, n));
		CHECK_OK(tfm_quantize_row(t, x, qb, n));
		CHECK_OK(tfm_dequantize_row_ref(t, qa, a, n));
		CHECK_OK(tfm_dequantize_row(t, qb, b, n));
		double e = rmse(a, b, n) / rms(x, n);
		CHECK_MSG(e <= 1e-4, "%s: fast vs ref rel RMSE %g", qname(t), e);
		if (t == TFM_TYPE_Q8_K)
			CHECK(!memcmp(qa, qb, tfm_quant_row_bytes(t, n)));
		/* the fast dequantizer alone, on the same bytes */
		CHECK_OK(tfm_dequantize_row(t, qa, b, n));
		CHECK(!memcmp(a, b, n * 4));
	}
#if defined(__x86_64__) || defined(__i386__)
	if (tfm_quant_cpu_avx2()) {
		/* q8_0 / q8_1 may differ from roundf only on exact ties */
		CHECK_OK(tfm_quantize_row_ref(TFM_TYPE_Q8_0, x, qa, n));
		tfm_quantize_q8_0_avx2(x, qb, n);
		int diff = 0;
		for (int64_t i = 0; i < tfm_quant_row_bytes(TFM_TYPE_Q8_0, n); i++)
			diff += qa[i] != qb[i];
		CHECK_MSG(diff <= 2, "q8_0 avx2: %d bytes differ", diff);
	}
#elif defined(__aarch64__)
	{
		/* every ARMv8-A processor has NEON: run even where TFM_ISA
		 * says scalar */
		CHECK_OK(tfm_quantize_row_ref(TFM_TYPE_Q8_0, x, qa, n));
		tfm_quantize_q8_0_neon(x, qb, n);
		int diff = 0;
		for (int64_t i = 0; i < tfm_quant_row_bytes(TFM_TYPE_Q8_0, n); i++)
			diff += qa[i] != qb[i];
		CHECK_MSG(diff <= 2, "q8_0 neon: %d bytes differ", diff);
		CHECK_OK(tfm_quantize_row_ref(TFM_TYPE_Q8_1, x, qa, n));
		tfm_quantize_q8_1_neon(x, qb, n);
		diff = 0;
		for (int64_t i = 0; i < tfm_quant_row_bytes(TFM_TYPE_Q8_1, n); i++)
			diff += qa[i] != qb[i];
		CHECK_MSG(diff <= 2, "q8_1 neon: %d bytes differ", diff);
		CHECK_OK(tfm_quantize_row_ref(TFM_TYPE_Q8_K, x, qa, n));
		tfm_quantize_q8_K_neon(x, qb, n);
		CHECK(!memcmp(qa, qb, tfm_quant_row_bytes(TFM_TYPE_Q8_K, n)));
	}
#endif
	free(x);
	free(a);
	free(b);
	free(qa);
	free(qb);
}

/* Dot products: the reference against the f32 dot of the two dequantized
 * rows (the same numbers, so only f32 rounding and q8_1's f16 sum differ),
 * the fast version against the reference, and both against the dot of the
 * original f32 rows within the quantization error. */
static void t_dot(void)
{
	const int64_t n = 4096;
	float *w = malloc(n * 4), *a = malloc(n * 4), *wd = malloc(n * 4), *ad = malloc(n * 4);
	uint8_t *qw = malloc(n * 2), *qa = malloc(n * 2);
	int types[] = {TFM_TYPE_Q8_0, TFM_TYPE_Q4_0, TFM_TYPE_Q4_1, TFM_TYPE_Q5_0,
		       TFM_TYPE_Q5_1, TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	for (int rep = 0; rep < 4; rep++) {
		fill_gauss(w, n);
		fill_gauss(a, n);
		if (rep == 1) /* a bias: exercises the min terms */
			for (int64_t i = 0; i < n; i++)
				w[i] += 1.5f, a[i] += 0.5f;
		double exact = 0, mag = 0;
		for (int64_t i = 0; i < n; i++) {
			exact += (double)w[i] * a[i];
			mag += fabs((double)w[i] * a[i]);
		}
		for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
			int t = types[k], at = tfm_vec_dot_type(t);
			CHECK_OK(tfm_quantize_row_ref(t, w, qw, n));
			CHECK_OK(tfm_quantize_row(at, a, qa, n));
			CHECK_OK(tfm_dequantize_row_ref(t, qw, wd, n));
			CHECK_OK(tfm_dequantize_row_ref(at, qa, ad, n));
			double deq = 0;
			for (int64_t i = 0; i < n; i++)
				deq += (double)wd[i] * ad[i];
			float ref = tfm_vec_dot_ref(t)(n, qw, qa);
			float fast = tfm_vec_dot(t)(n, qw, qa);
			/* q8_1 carries d*sum(q) rounded to f16: rel 2^-11 of the
			 * min terms */
			double tol = 1e-5 * mag + (at == TFM_TYPE_Q8_1 ? 1e-3 * mag : 0);
			CHECK_MSG(fabs(ref - deq) <= tol, "%s rep %d: ref %g, dequantized %g", qname(t), rep, ref, deq);
			CHECK_MSG(fabs(fast - ref) <= 1e-5 * mag, "%s rep %d: fast %g, ref %g", qname(t), rep, fast, ref);
			/* against the unquantized dot: both rows err by a few %
			 * at most (q4), errors add up like a random walk */
			CHECK_MSG(fabs(ref - exact) <= 0.02 * mag, "%s rep %d: %g vs f32 %g", qname(t), rep, ref, exact);
		}
	}
	free(w);
	free(a);
	free(wd);
	free(ad);
	free(qw);
	free(qa);
}

/* Bit-identity with ggml: FNV-1a 64 hashes of the bytes ggml's
 * quantize_row_<type>_ref (libggml-base, llama.cpp d32676d7, x86-64 -O3)
 * writes for a deterministic input of 4096 values (blocks of plain,
 * tiny, cubed and zero values, with outliers).  The input is built from
 * integers with exactly rounded f32 operations, so both sides see the
 * same floats. */
static void golden_input(float *x, int n)
{
	uint32_t s = 12345;
	for (int i = 0; i < n; i++) {
		s = s * 1664525u + 1013904223u;
		int v = (int)((s >> 8) % 20001) - 10000;
		float f = v / 4000.0f;
		int blk = i / 32;
		if (blk % 5 == 1)
			f *= 0.001f;
		if (blk % 7 == 3)
			f = f * f * f;
		if (blk % 11 == 4)
			f = 0;
		if (i % 97 == 0)
			f *= 25;
		x[i] = f;
	}
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void t_ggml_golden(void)
{
	enum { N = 4096 };
	static float x[N];
	static uint8_t q[N * 2];
	static const struct { int type; uint64_t hash; } want[] = {
		{TFM_TYPE_Q4_0, 0x035937391e670286ULL}, {TFM_TYPE_Q4_1, 0x91a84662dd7e37deULL},
		{TFM_TYPE_Q5_0, 0xf08c94fee9f5855dULL}, {TFM_TYPE_Q5_1, 0x721280ed83551283ULL},
		{TFM_TYPE_Q8_0, 0xba7dd04c5a1ed6c2ULL}, {TFM_TYPE_Q8_1, 0xd50bc042ee027416ULL},
		{TFM_TYPE_Q4_K, 0xb30ead65c0aa2326ULL}, {TFM_TYPE_Q5_K, 0xd3698805bde9c078ULL},
		{TFM_TYPE_Q6_K, 0xcdcdf27a7a749adaULL}, {TFM_TYPE_Q8_K, 0x00dea37e1c66fb89ULL},
	};
	golden_input(x, N);
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		int t = want[k].type;
		memset(q, 0, sizeof q);
		CHECK_OK(tfm_quantize_row_ref(t, x, q, N));
		uint64_t h = fnv1a(q, tfm_quant_row_bytes(t, N));
		CHECK_MSG(h == want[k].hash, "%s: hash %016llx, ggml's %016llx", qname(t),
			  (unsigned long long)h, (unsigned long long)want[k].hash);
	}
}

/* The block types in a GGUF file: the type table of the GGUF layer
 * (dtype.c) agrees with the block sizes here, and rows written as tensors
 * come back byte for byte and decode to what was stored. */
static void t_gguf(void)
{
	const int64_t ne[2] = {512, 3};
	const int64_t n = ne[0] * ne[1];
	int types[] = {TFM_TYPE_F32, TFM_TYPE_F16, TFM_TYPE_BF16, TFM_TYPE_Q8_0, TFM_TYPE_Q4_0,
		       TFM_TYPE_Q4_1, TFM_TYPE_Q5_0, TFM_TYPE_Q5_1, TFM_TYPE_Q4_K, TFM_TYPE_Q5_K,
		       TFM_TYPE_Q6_K, TFM_TYPE_Q8_K};
	enum { NT = sizeof types / sizeof types[0] };
	float *x = malloc(n * 4), *y = malloc(n * 4), *z = malloc(n * 4);
	uint8_t *q[NT];
	struct tfm_gguf *g;
	fill_gauss(x, n);
	CHECK_OK(tfm_gguf_new(&g));
	for (int k = 0; k < NT; k++) {
		char name[32];
		size_t nb = tfm_quant_row_bytes(types[k], n);
		q[k] = malloc(nb);
		CHECK(nb == tfm_type_nbytes(types[k], n));
		CHECK(tfm_quant_blck(types[k]) == tfm_type_info(types[k])->blck);
		CHECK_OK(tfm_quantize_row_ref(types[k], x, q[k], n));
		snprintf(name, sizeof name, "t.%s", tfm_type_name(types[k]));
		CHECK_OK(tfm_gguf_add_tensor(g, name, types[k], 2, ne, q[k], NULL, NULL));
	}
	char *dir = t_tmpdir(), *path = t_path("%s/q.gguf", dir);
	struct tfm_out *o;
	CHECK_OK(tfm_out_open(&o, path, 0));
	CHECK_OK(tfm_gguf_write(g, o));
	CHECK_OK(tfm_out_commit(o));
	struct tfm_blob b;
	struct tfm_gguf *r = NULL;
	CHECK_OK(tfm_blob_open(&b, path));
	CHECK_OK(tfm_gguf_parse(&r, b.data, b.size, path));
	for (int k = 0; r && k < NT; k++) {
		char name[32];
		snprintf(name, sizeof name, "t.%s", tfm_type_name(types[k]));
		const struct tfm_gguf_tensor *t = tfm_gguf_find_tensor(r, name);
		CHECK_MSG(t && t->type == types[k] && t->nbytes == tfm_quant_row_bytes(types[k], n) &&
			  !memcmp(t->data, q[k], t->nbytes), "%s", name);
		if (!t)
			continue;
		CHECK_OK(tfm_dequantize_row(t->type, t->data, y, n));
		CHECK_OK(tfm_dequantize_row_ref(types[k], q[k], z, n));
		CHECK(!memcmp(y, z, n * 4));
		/* the GGUF layer's own decoder, where it has one, agrees */
		if (tfm_type_to_f32(t->type, t->data, z, n) == TFM_OK)
			CHECK_MSG(!memcmp(y, z, n * 4), "%s: dtype.c decodes differently", name);
	}
	tfm_gguf_free(r);
	tfm_blob_close(&b);
	tfm_gguf_free(g);
	for (int k = 0; k < NT; k++)
		free(q[k]);
	free(x);
	free(y);
	free(z);
	free(path);
	free(dir);
}

/* Every SIMD version this CPU can run against the reference, on rows of
 * odd block counts too (the AVX-512 kernels take two blocks at a time).
 * aarch64: NEON with and without SDOT; the two add the same exact integer
 * sums with the same f32 arithmetic, so they agree to the bit. */
static void t_dot_isa(void)
{
	struct { int type; tfm_vec_dot_fn a, b; } k[] = {
#if defined(__x86_64__) || defined(__i386__)
		{TFM_TYPE_Q8_0, tfm_vec_dot_q8_0_q8_0_avx2, tfm_vec_dot_q8_0_q8_0_avx512},
		{TFM_TYPE_Q4_0, tfm_vec_dot_q4_0_q8_0_avx2, tfm_vec_dot_q4_0_q8_0_avx512},
		{TFM_TYPE_Q4_1, tfm_vec_dot_q4_1_q8_1_avx2, NULL},
		{TFM_TYPE_Q5_0, tfm_vec_dot_q5_0_q8_0_avx2, NULL},
		{TFM_TYPE_Q5_1, tfm_vec_dot_q5_1_q8_1_avx2, NULL},
		{TFM_TYPE_Q4_K, tfm_vec_dot_q4_K_q8_K_avx2, tfm_vec_dot_q4_K_q8_K_avx512},
		{TFM_TYPE_Q5_K, tfm_vec_dot_q5_K_q8_K_avx2, tfm_vec_dot_q5_K_q8_K_avx512},
		{TFM_TYPE_Q6_K, tfm_vec_dot_q6_K_q8_K_avx2, tfm_vec_dot_q6_K_q8_K_avx512},
	};
	const char *na = "avx2", *nb = "avx512";
	int has_a = tfm_quant_cpu_avx2(), has_b = tfm_quant_cpu_avx512(), same_ab = 0;
#elif defined(__aarch64__)
		{TFM_TYPE_Q8_0, tfm_vec_dot_q8_0_q8_0_neon, tfm_vec_dot_q8_0_q8_0_dotprod},
		{TFM_TYPE_Q4_0, tfm_vec_dot_q4_0_q8_0_neon, tfm_vec_dot_q4_0_q8_0_dotprod},
		{TFM_TYPE_Q4_1, tfm_vec_dot_q4_1_q8_1_neon, tfm_vec_dot_q4_1_q8_1_dotprod},
		{TFM_TYPE_Q5_0, tfm_vec_dot_q5_0_q8_0_neon, tfm_vec_dot_q5_0_q8_0_dotprod},
		{TFM_TYPE_Q5_1, tfm_vec_dot_q5_1_q8_1_neon, tfm_vec_dot_q5_1_q8_1_dotprod},
		{TFM_TYPE_Q4_K, tfm_vec_dot_q4_K_q8_K_neon, tfm_vec_dot_q4_K_q8_K_dotprod},
		{TFM_TYPE_Q5_K, tfm_vec_dot_q5_K_q8_K_neon, tfm_vec_dot_q5_K_q8_K_dotprod},
		{TFM_TYPE_Q6_K, tfm_vec_dot_q6_K_q8_K_neon, tfm_vec_dot_q6_K_q8_K_dotprod},
	};
	/* every ARMv8-A processor has NEON */
	const char *na = "neon", *nb = "dotprod";
	int has_a = 1, has_b = tfm_quant_cpu_dotprod(), same_ab = 1;
#else
		{TFM_TYPE_Q8_0, NULL, NULL},
	};
	const char *na = "", *nb = "";
	int has_a = 0, has_b = 0, same_ab = 0;
#endif
	const int64_t sizes[] = {96, 256, 800, 4096}; /* 3, 8, 25, 128 blocks of 32 */
	float *w = malloc(4096 * 4), *a = malloc(4096 * 4);
	uint8_t *qw = malloc(4096 * 2), *qa = malloc(4096 * 2);
	printf("  dot kernels checked: scalar%s%s%s%s\n", has_a ? " " : "", has_a ? na : "",
	       has_b ? " " : "", has_b ? nb : "");
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		int64_t n = sizes[s];
		fill_gauss(w, n);
		fill_gauss(a, n);
		for (int64_t i = 0; i < n; i += 7)
			w[i] += 0.75f; /* asymmetric: non-zero mins */
		for (size_t j = 0; j < sizeof k / sizeof k[0]; j++) {
			int t = k[j].type;
			if (n % tfm_quant_blck(t))
				continue;
			tfm_quantize_row_ref(t, w, qw, n);
			tfm_quantize_row_ref(tfm_vec_dot_type(t), a, qa, n);
			double mag = 0;
			for (int64_t i = 0; i < n; i++)
				mag += fabs((double)w[i] * a[i]);
			float ref = tfm_vec_dot_ref(t)(n, qw, qa);
			float fa = 0, fb = 0;
			if (has_a) {
				fa = k[j].a(n, qw, qa);
				CHECK_MSG(fabs(fa - ref) <= 1e-5 * mag, "%s n=%lld %s %g ref %g", qname(t), (long long)n, na, fa, ref);
			}
			if (has_b && k[j].b) {
				fb = k[j].b(n, qw, qa);
				CHECK_MSG(fabs(fb - ref) <= 1e-5 * mag, "%s n=%lld %s %g ref %g", qname(t), (long long)n, nb, fb, ref);
				if (same_ab)
					CHECK_MSG(!memcmp(&fa, &fb, sizeof fa), "%s n=%lld %s %.9g %s %.9g",
						  qname(t), (long long)n, na, fa, nb, fb);
			}
		}
	}
	free(w);
	free(a);
	free(qw);
	free(qa);
}

/* A GGUF with alignment 1 is valid: plain-type rows at odd addresses
 * convert both ways (memcpy loads; UBSan builds check the alignment). */
static void t_misaligned(void)
{
	static const int types[] = {TFM_TYPE_F32, TFM_TYPE_F16, TFM_TYPE_BF16};
	float x[33], y[33];
	for (int i = 0; i < 33; i++)
		x[i] = (float)(i - 16) * 0.25f;
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		unsigned char buf[33 * 4 + 8];
		for (int off = 1; off < 4; off++) {
			CHECK_OK(tfm_quantize_row_ref(types[k], x, buf + off, 33));
			CHECK_OK(tfm_dequantize_row_ref(types[k], buf + off, y, 33));
			CHECK_MSG(!memcmp(x, y, sizeof x), "%s at offset %d", tfm_type_name(types[k]),
				  off); /* quarter steps are exact in f16 and bf16 */
		}
	}
}

/* The block formats too: weight rows at odd addresses quantize,
 * dequantize and dot (reference and fast kernels) exactly as aligned ones
 * (packed blocks; UBSan builds check the loads). */
static void t_misaligned_blocks(void)
{
	static const int types[] = {TFM_TYPE_Q4_0, TFM_TYPE_Q4_1, TFM_TYPE_Q5_0, TFM_TYPE_Q5_1,
				    TFM_TYPE_Q8_0, TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	enum { N = 512 };
	float x[N], a[N], y0[N], y1[N];
	for (int i = 0; i < N; i++) {
		x[i] = sinf((float)i * 0.37f) * 2;
		a[i] = cosf((float)i * 0.11f);
	}
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		int t = types[k], at = tfm_vec_dot_type(t);
		size_t nb = tfm_quant_row_bytes(t, N), na = tfm_quant_row_bytes(at, N);
		unsigned char *al = tfm_amalloc(nb), *buf = tfm_amalloc(nb + 8), *qa = tfm_amalloc(na);
		CHECK_OK(tfm_quantize_row_ref(t, x, al, N));
		CHECK_OK(tfm_dequantize_row_ref(t, al, y0, N));
		CHECK_OK(tfm_quantize_row(at, a, qa, N));
		float d0 = tfm_vec_dot_ref(t)(N, al, qa), f0 = tfm_vec_dot(t)(N, al, qa);
		for (int off = 1; off < 4; off++) {
			unsigned char *u = buf + off;
			CHECK_OK(tfm_quantize_row_ref(t, x, u, N));
			CHECK_MSG(!memcmp(u, al, nb), "%s quantized at offset %d", tfm_type_name(t), off);
			CHECK_OK(tfm_dequantize_row(t, u, y1, N));
			CHECK_MSG(!memcmp(y0, y1, sizeof y0), "%s dequantized at offset %d",
				  tfm_type_name(t), off);
			CHECK(tfm_vec_dot_ref(t)(N, u, qa) == d0);
			CHECK(tfm_vec_dot(t)(N, u, qa) == f0);
		}
		tfm_afree(al);
		tfm_afree(buf);
		tfm_afree(qa);
	}
}

/* TFM_ISA, which lib/quant reads once: this program again, as a child with
 * TFM_ISA=scalar, then the target's middle path (avx2 / neon), running only
 * isa_forced.  Not run where TFM_ISA is set already (isa_forced checks it
 * here) or where this program cannot start itself again (a qemu-user run
 * without binfmt). */
static void t_isa_env(void)
{
	if (getenv("TFM_ISA")) {
		printf("  TFM_ISA is set: the children not started\n");
		return;
	}
#if defined(__x86_64__) || defined(__i386__)
	const char *isas[] = {"scalar", "avx2"};
#elif defined(__aarch64__)
	const char *isas[] = {"scalar", "neon"};
#else
	const char *isas[] = {"scalar"};
#endif
	for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0) {
			setenv("TFM_ISA", isas[k], 1);
			if (!freopen("/dev/null", "w", stdout)) /* its "N passed" line */
				_exit(127);
			execl("/proc/self/exe", "test_quant", "isa_forced", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
			printf("  TFM_ISA=%s: cannot start /proc/self/exe, not run\n", isas[k]);
			continue;
		}
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "TFM_ISA=%s: the child failed (status %#x)",
			  isas[k], st);
	}
}

/* Under TFM_ISA=scalar (run by isa_env, or by hand): lib/quant says
 * "scalar" and its dispatch gives the reference's bytes and bits, the q8_0
 * / q8_1 quantizers included on rows of exact ties (the reference rounds
 * them away from zero, the AVX2 and NEON versions to even).  Under the
 * middle path's name, never the top one.  Without TFM_ISA: nothing. */
static void t_isa_forced(void)
{
	const char *want = getenv("TFM_ISA");
	if (!want)
		return;
	const char *isa = tfm_quant_isa();
	fprintf(stderr, "  TFM_ISA=%s: lib/quant runs %s\n", want, isa);
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(want, "avx2")) {
		CHECK(!tfm_quant_cpu_avx512() && strcmp(isa, "avx512"));
		__builtin_cpu_init();
		if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
			CHECK(!strcmp(isa, "avx2") && tfm_vec_dot(TFM_TYPE_Q4_K) == tfm_vec_dot_q4_K_q8_K_avx2);
	}
#elif defined(__aarch64__)
	if (!strcmp(want, "neon"))
		CHECK(!strcmp(isa, "neon") && !tfm_quant_cpu_dotprod() &&
		      tfm_vec_dot(TFM_TYPE_Q4_K) == tfm_vec_dot_q4_K_q8_K_neon);
#endif
	if (strcmp(want, "scalar"))
		return;
	CHECK(!strcmp(isa, "scalar"));
	CHECK(!tfm_quant_cpu_avx2() && !tfm_quant_cpu_avx512() && !tfm_quant_cpu_neon() &&
	      !tfm_quant_cpu_dotprod());
	const int64_t n = 1024;
	float *x = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
	uint8_t *qa = malloc(n * 2), *qb = malloc(n * 2), *qx = malloc(n * 2);
	/* each block of 32: 127 first, so d = 1, then k + 0.5 (exact ties) */
	for (int64_t i = 0; i < n; i++)
		x[i] = i % 32 ? (float)(i % 32 % 9) - 4.5f : 127.0f;
	int acts[] = {TFM_TYPE_Q8_0, TFM_TYPE_Q8_1, TFM_TYPE_Q8_K};
	for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
		CHECK_OK(tfm_quantize_row_ref(acts[k], x, qa, n));
		CHECK_OK(tfm_quantize_row(acts[k], x, qb, n));
		CHECK_MSG(!memcmp(qa, qb, tfm_quant_row_bytes(acts[k], n)), "%s: not the reference's bytes",
			  qname(acts[k]));
	}
	int types[] = {TFM_TYPE_Q8_0, TFM_TYPE_Q4_0, TFM_TYPE_Q4_1, TFM_TYPE_Q5_0,
		       TFM_TYPE_Q5_1, TFM_TYPE_Q4_K, TFM_TYPE_Q5_K, TFM_TYPE_Q6_K};
	fill_gauss(x, n);
	fill_gauss(a, n);
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		int t = types[k];
		CHECK_MSG(tfm_vec_dot(t) == tfm_vec_dot_ref(t), "%s: not the reference dot", qname(t));
		CHECK_OK(tfm_quantize_row_ref(t, x, qx, n));
		CHECK_OK(tfm_quantize_row(tfm_vec_dot_type(t), a, qa, n));
		float want = tfm_vec_dot_ref(t)(n, qx, qa), got = tfm_vec_dot(t)(n, qx, qa);
		CHECK_MSG(!memcmp(&got, &want, 4), "%s: dot %.9g, reference %.9g", qname(t), got, want);
		CHECK_OK(tfm_dequantize_row_ref(t, qx, a, n));
		CHECK_OK(tfm_dequantize_row(t, qx, b, n));
		CHECK_MSG(!memcmp(a, b, n * 4), "%s: not the reference's dequantized row", qname(t));
		fill_gauss(a, n);
	}
	free(x), free(a), free(b), free(qa), free(qb), free(qx);
}

static const struct t_case t_cases[] = {
	{"misaligned", t_misaligned},
	{"misaligned_blocks", t_misaligned_blocks},
	{"dot_isa", t_dot_isa},
	{"gguf", t_gguf},
	{"ggml_golden", t_ggml_golden},
	{"sizes", t_sizes},
	{"errors", t_errors},
	{"hand_decode", t_hand_decode},
	{"hand_encode", t_hand_encode},
	{"roundtrip", t_roundtrip},
	{"fast_vs_ref", t_fast_vs_ref},
	{"dot", t_dot},
	{"isa_env", t_isa_env},
	{"isa_forced", t_isa_forced},
};
T_MAIN(t_cases)
