/* igemm-avx2.c: prefill matmul of q4_0 / q4_1 / q5_0 / q5_1 / q8_0 / q4_K /
 * q5_K / q6_K weights as an 8-bit integer GEMM with AVX2 (no VNNI), the AVX2 side of
 * igemm-avx512.c: the activations are quantized once (to q8_0, or for
 * K-quant weights to q8_K: igemm-simd.h's x_quantize), a tile of weight
 * rows is unpacked to bytes with its block scales, and each 32-element block of (8 tokens x 1 row) is one
 * exact int32 sum, scaled by d_w * d_x and added in f32, blocks in order.
 * Every output is computed by the same operations whatever tile or thread
 * computes it.
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs in int16,
 * saturating.  The activations stay signed (|x| <= 127); the weights of the
 * small types are their unsigned codes u (0..15 or 0..31), value
 * d * (u - off) + m, so a pair sum is at most 2 * 31 * 128 and the pair sums
 * of 8 (u <= 15) or 4 (u <= 31) groups of four elements add up in int16
 * before one vpmaddwd widens them: exact.  off * sum(x) is taken off in
 * int32 (q4_0: 8, q5_0: 16), and the minimum m adds m * d_x * sum(x) in f32
 * (q4_1, q5_1, and q4_K / q5_K per sub-block of 32 with their own
 * scales).  q8_0 weights are signed: llama.cpp's sign trick, |w| times x
 * with w's sign, keeps each pair within 2 * 128 * 127.
 *
 * Packed activations, per group of 8 tokens (a short last group is padded
 * with zeros, which add nothing): bytes [nb][8][8][4] (block, group of four
 * elements, token, element), f32 scales d_x [nb][8], f32 d_x * sum(x)
 * [nb][8], int32 sum(x) [nb][8].  Unpacked weights: bytes [rows][in], f32
 * scales [rows][nb], f32 minimums [rows][nb] (0 for q4_0, q5_0, q8_0).
 *
 * q5_1 and q6_K too (igemm-avx512.c has neither); q6_K's scales cover 16
 * elements, so each block's two halves are widened and scaled apart, its
 * codes less 32 taken as signed bytes with the sign trick. */
#include "kernels/cpu/cpu-impl.h"
#include "kernels/cpu/igemm-simd.h"
#include "quant/quant.h"
#include "quant/quant-impl.h"
#include "quant/simd-x86-inl.h"

#include <immintrin.h>
#include <string.h>

/* bytes of one group of 8 tokens */
static size_t group_bytes(int64_t in) { return (size_t)(8 * in + in / TFM_QK * 8 * 12); }

size_t tfm_cpu_igemm_x_bytes_avx2(int64_t n, int64_t in)
{
	return (size_t)((n + 7) / 8) * group_bytes(in);
}

size_t tfm_cpu_igemm_w_bytes_avx2(int64_t rows, int64_t in)
{
	return (size_t)rows * (size_t)(in + in / TFM_QK * 8);
}

/* Group G (tokens 8 G ..) of x into xp (tfm_cpu_igemm_x_bytes_avx2(n, in)
 * bytes for all groups), quantized as x_quantize says (k256: for K-quant
 * weights); q8: scratch for one q8_K row of in.  Groups are independent:
 * threads may pack different groups at once. */
void tfm_cpu_igemm_pack_x_avx2(uint8_t *xp, const float *x, int64_t n, int64_t in, int64_t G,
			       void *q8, int k256)
{
	int64_t nb = in / TFM_QK;
	uint8_t *g = xp + G * group_bytes(in);
	float *dx = (float *)(g + 8 * in), *sx = dx + 8 * nb;
	int32_t *ix = (int32_t *)(sx + 8 * nb);
	int64_t nt = n - G * 8 < 8 ? n - G * 8 : 8;
	if (nt < 8) /* padding tokens: x = 0, scales and sums 0 */
		memset(g, 0, group_bytes(in));
	for (int64_t tt = 0; tt < nt; tt++) {
		x_quantize(q8, x + (G * 8 + tt) * in, in, k256);
		for (int64_t b = 0; b < nb; b++) {
			uint8_t *dst = g + b * 256 + tt * 4;
			float d;
			const int8_t *qs = x_block(q8, k256, b, &d);
			__m256i q = _mm256_loadu_si256((const __m256i *)qs);
			/* sum of the 32 signed bytes: of the unsigned (q + 128), less 32 * 128 */
			__m256i u = _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80));
			int sum = (int)sum_u8x32(u) - 32 * 128;
			dx[b * 8 + tt] = d;
			sx[b * 8 + tt] = d * (float)sum;
			ix[b * 8 + tt] = sum;
			for (int e = 0; e < 8; e++)
				memcpy(dst + e * 32, qs + 4 * e, 4);
		}
	}
}

/* byte i = 0x10 where bit i of the 32 bits is set (q5_0's fifth bits) */
static inline __m256i bits16(uint32_t bits)
{
	const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
						  0x0303030303030303);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
	v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
	return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* q6_K: each block of 32 holds two halves of 16 with scales of their own;
 * the codes less 32 as signed bytes, the halves' scales d * sc in the
 * scale and minimum slots (q6_K has no minimum).  ggml's layout: in each
 * 128 elements, blocks 0 and 2 take the low and high nibbles of ql[0..31],
 * blocks 1 and 3 those of ql[32..63], and 2 bits each of qh[0..31]. */
static void prep_q6(int8_t *ws, float *dw, float *mw, const uint8_t *row, int64_t in)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
	for (int64_t i = 0; i < in / TFM_QK_K; i++) {
		const struct tfm_block_q6_K *x = (const struct tfm_block_q6_K *)row + i;
		float d = fh(x->d);
		for (int h = 0; h < 2; h++) {
			__m256i l0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h));
			__m256i l1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32));
			__m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
			__m256i q[4] = {
				_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
				_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
				_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
			for (int k = 0; k < 4; k++) {
				int64_t b = i * 8 + h * 4 + k;
				__m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2);
				__m256i u = _mm256_or_si256(q[k], _mm256_slli_epi16(hi, 4));
				_mm256_storeu_si256((__m256i *)(ws + b * 32),
						    _mm256_sub_epi8(u, _mm256_set1_epi8(32)));
				dw[b] = d * x->scales[8 * h + 2 * k];
				mw[b] = d * x->scales[8 * h + 2 * k + 1];
			}
		}
	}
}

/* rows of type (q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K) -> wp
 * (tfm_cpu_igemm_w_bytes_avx2) */
void tfm_cpu_igemm_prep_w_avx2(uint8_t *wp, int type, const void *w, size_t rb, int64_t rows,
			       int64_t in)
{
	int64_t nb = in / TFM_QK;
	uint8_t *ws = wp;
	float *dw = (float *)(wp + rows * in), *mw = dw + rows * nb;
	for (int64_t r = 0; r < rows; r++) {
		const uint8_t *row = (const uint8_t *)w + (size_t)r * rb;
		if (type == TFM_TYPE_Q4_K || type == TFM_TYPE_Q5_K) {
			for (int64_t i = 0; i < in / TFM_QK_K; i++)
				k45_unpack(ws + r * in + i * TFM_QK_K, dw + r * nb + i * 8, mw + r * nb + i * 8,
					   type == TFM_TYPE_Q5_K, row, i);
			continue;
		}
		if (type == TFM_TYPE_Q6_K) {
			prep_q6((int8_t *)ws + r * in, dw + r * nb, mw + r * nb, row, in);
			continue;
		}
		for (int64_t b = 0; b < nb; b++) {
			__m256i u; /* value = d * (u - off) + m; q8_0: d * w, w signed */
			uint16_t d, m = 0;
			if (type == TFM_TYPE_Q4_1) {
				const struct tfm_block_q4_1 *q = (const struct tfm_block_q4_1 *)row + b;
				u = nibbles32(q->qs), d = q->d, m = q->m;
			} else if (type == TFM_TYPE_Q4_0) {
				const struct tfm_block_q4_0 *q = (const struct tfm_block_q4_0 *)row + b;
				u = nibbles32(q->qs), d = q->d;
			} else if (type == TFM_TYPE_Q5_1) {
				const struct tfm_block_q5_1 *q = (const struct tfm_block_q5_1 *)row + b;
				uint32_t qh;
				memcpy(&qh, q->qh, 4);
				u = _mm256_or_si256(nibbles32(q->qs), bits16(qh)), d = q->d, m = q->m;
			} else if (type == TFM_TYPE_Q5_0) {
				const struct tfm_block_q5_0 *q = (const struct tfm_block_q5_0 *)row + b;
				uint32_t qh;
				memcpy(&qh, q->qh, 4);
				u = _mm256_or_si256(nibbles32(q->qs), bits16(qh)), d = q->d;
			} else {
				const struct tfm_block_q8_0 *q = (const struct tfm_block_q8_0 *)row + b;
				u = _mm256_loadu_si256((const __m256i *)q->qs), d = q->d;
			}
			_mm256_storeu_si256((__m256i *)(ws + r * in + b * 32), u);
			dw[r * nb + b] = fh(d);
			mw[r * nb + b] = fh(m);
		}
	}
}

static inline __m256i bcast4(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

#define ROW4(f) f(0) f(1) f(2) f(3)

/* The kernel for one kind of weight, 4 rows x 8 tokens at a time; each
 * block of 32 elements: int32 sums of (8 tokens x 4 rows), then scaled and
 * added.  kind 0: unsigned codes u <= 15, the int16 pair sums of all 8
 * groups of four added before widening; kind 1: u <= 31, widened every 4
 * groups; kind 2: q8_0 (signed, sign trick), widened every group; kind
 * 3: q6_K (signed codes |w| <= 32, sign trick, pairs within 2 * 32 * 128),
 * each half of 16 widened apart and scaled by its own scale.  off: the
 * codes' offset (q4_0 8, q5_0 16, else 0), taken off as off * sum(x);
 * minimum: add m d_x sum(x).  Rows are written out one by one (ROW4), not
 * as arrays: GCC keeps arrays of vectors on the stack. */
static inline __attribute__((always_inline)) void igemm_kind(float *y, int64_t ldy,
							     const uint8_t *xp, int64_t n,
							     const uint8_t *wp, int64_t rows,
							     int64_t in, int kind, int off,
							     int minimum)
{
	int64_t nb = in / TFM_QK, ng = (n + 7) / 8;
	size_t gs = group_bytes(in);
	const float *dw = (const float *)(wp + rows * in), *mw = dw + rows * nb;
	const __m256i ones = _mm256_set1_epi16(1);
	for (int64_t G = 0; G < ng; G++) {
		const uint8_t *xg = xp + G * gs;
		const float *dxg = (const float *)(xg + 8 * in), *sxg = dxg + 8 * nb;
		const int32_t *ixg = (const int32_t *)(sxg + 8 * nb);
		int64_t nt = n - G * 8 < 8 ? n - G * 8 : 8;
		for (int64_t r0 = 0; r0 < rows; r0 += 4) {
			/* a short group repeats row r0 */
			int64_t rr0 = r0, rr1 = r0 + 1 < rows ? r0 + 1 : r0;
			int64_t rr2 = r0 + 2 < rows ? r0 + 2 : r0, rr3 = r0 + 3 < rows ? r0 + 3 : r0;
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int64_t b = 0; b < nb; b++) {
				const uint8_t *xb = xg + b * 256;
#define WP(q) const uint8_t *w##q = wp + rr##q * in + b * 32;
				ROW4(WP)
#undef WP
				__m256i p0 = _mm256_setzero_si256(), p1 = p0, p2 = p0, p3 = p0;
				__m256i h0 = p0, h1 = p0, h2 = p0, h3 = p0;
#pragma GCC unroll 4
				for (int e = 0; e < 8; e++) {
					__m256i xv = _mm256_loadu_si256((const __m256i *)(xb + e * 32));
					if (kind == 2) {
#define Q8(q)                                                                                      \
	{                                                                                          \
		__m256i wv = bcast4(w##q + e * 4);                                                 \
		__m256i s = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv)); \
		p##q = _mm256_add_epi32(p##q, _mm256_madd_epi16(s, ones));                         \
	}
						ROW4(Q8)
#undef Q8
					} else {
#define U(q) h##q = _mm256_add_epi16(h##q, _mm256_maddubs_epi16(bcast4(w##q + e * 4), xv));
#define S(q)                                                                                       \
	{                                                                                          \
		__m256i wv = bcast4(w##q + e * 4);                                                 \
		h##q = _mm256_add_epi16(h##q, _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv),       \
								   _mm256_sign_epi8(xv, wv)));     \
	}
						if (kind == 3) {
							ROW4(S)
						} else {
							ROW4(U)
						}
#undef S
#undef U
						if ((kind == 1 || kind == 3) && e == 3) {
#define W(q) p##q = _mm256_madd_epi16(h##q, ones), h##q = _mm256_setzero_si256();
							ROW4(W)
#undef W
						}
					}
				}
				if (kind == 0 || kind == 1) {
#define W(q) p##q = _mm256_add_epi32(p##q, _mm256_madd_epi16(h##q, ones));
					ROW4(W)
#undef W
				}
				if (off) {
					__m256i o = _mm256_mullo_epi32(
						_mm256_loadu_si256((const __m256i *)(ixg + b * 8)),
						_mm256_set1_epi32(off));
#define O(q) p##q = _mm256_sub_epi32(p##q, o);
					ROW4(O)
#undef O
				}
				__m256 dx = _mm256_loadu_ps(dxg + b * 8);
#define ACC(q) a##q = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p##q),                                \
				      _mm256_mul_ps(dx, _mm256_set1_ps(dw[rr##q * nb + b])), a##q);
				ROW4(ACC)
#undef ACC
				if (kind == 3) { /* the second half, h, by its own scale */
#define HI(q) a##q = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(h##q, ones)),             \
				     _mm256_mul_ps(dx, _mm256_set1_ps(mw[rr##q * nb + b])), a##q);
					ROW4(HI)
#undef HI
				}
				if (minimum) {
					__m256 sx = _mm256_loadu_ps(sxg + b * 8);
#define MIN(q) a##q = _mm256_fmadd_ps(sx, _mm256_set1_ps(mw[rr##q * nb + b]), a##q);
					ROW4(MIN)
#undef MIN
				}
			}
			float tmp[4][8];
			_mm256_storeu_ps(tmp[0], a0);
			_mm256_storeu_ps(tmp[1], a1);
			_mm256_storeu_ps(tmp[2], a2);
			_mm256_storeu_ps(tmp[3], a3);
			for (int q = 0; q < 4 && r0 + q < rows; q++)
				for (int64_t t = 0; t < nt; t++)
					y[(G * 8 + t) * ldy + r0 + q] = tmp[q][t];
		}
	}
}

/* y[t * ldy + r] = sum over blocks of d_w d_x (int dot) for t < n, r < rows,
 * weights of type prepared by tfm_cpu_igemm_prep_w_avx2 */
void tfm_cpu_igemm_avx2(float *y, int64_t ldy, const uint8_t *xp, int64_t n, const uint8_t *wp,
			int64_t rows, int64_t in, int type)
{
	switch (type) {
	case TFM_TYPE_Q8_0: igemm_kind(y, ldy, xp, n, wp, rows, in, 2, 0, 0); break;
	case TFM_TYPE_Q4_0: igemm_kind(y, ldy, xp, n, wp, rows, in, 0, 8, 0); break;
	case TFM_TYPE_Q5_0: igemm_kind(y, ldy, xp, n, wp, rows, in, 1, 16, 0); break;
	case TFM_TYPE_Q4_1:
	case TFM_TYPE_Q4_K: igemm_kind(y, ldy, xp, n, wp, rows, in, 0, 0, 1); break;
	case TFM_TYPE_Q5_1:
	case TFM_TYPE_Q5_K: igemm_kind(y, ldy, xp, n, wp, rows, in, 1, 0, 1); break;
	case TFM_TYPE_Q6_K: igemm_kind(y, ldy, xp, n, wp, rows, in, 3, 0, 0); break;
	}
}
