/* simd-x86-inl.h: the small AVX2 + F16C helpers (256-bit vectors; and
 * cat256 for the AVX-512 files) that lib/quant's dots (dot-avx2.c,
 * dot-avx512.c) and the CPU backend's decode and GEMM kernels
 * (lib/kernels/cpu/qgemv*-avx2/512.c, igemm-avx2/512.c) share.
 * Only for files compiled with -mavx2 -mfma -mf16c (*-avx2.c) or the
 * AVX-512 flags, which include them (*-avx512.c). */
#ifndef TFM_QUANT_SIMD_X86_INL_H
#define TFM_QUANT_SIMD_X86_INL_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* F16C: exact, and inline (the library's scalar conversion is a call) */
static inline float fh(uint16_t v) { return _cvtsh_ss(v); }

/* the sum of 8 floats, in the order ((0+4)+(2+6)) + ((1+5)+(3+7)) */
static inline float hsum_ps(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* 8 int32 sums of x*y over 32 signed bytes each (|x| <= 127 or the
 * product pairs fit in int16).  maddubs wants an unsigned operand: move
 * x's sign onto y. */
static inline __m256i dot_i8(__m256i x, __m256i y)
{
	__m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* unsigned x (< 128) times signed y */
static inline __m256i dot_u8(__m256i x, __m256i y)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
}

/* 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0-15) in the low
 * lane, high nibbles (16-31) in the high lane. */
static inline __m256i nibbles32(const uint8_t *q)
{
	/* the 16 bytes in both lanes (one load), the high lane's 32-bit
	 * words shifted right by 4: each byte's high nibble is then in its
	 * low bits (the next byte's low nibble above it, masked off).  Three
	 * instructions where a load, shift, insert and mask were four. */
	__m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)q));
	v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
	return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

/* the f16 scales at a, b, c, d (four rows' blocks) as 4 floats: one
 * conversion where four scalar ones were */
static inline __m128 fh4(const void *a, const void *b, const void *c, const void *d)
{
	uint16_t h[4];
	memcpy(&h[0], a, 2), memcpy(&h[1], b, 2), memcpy(&h[2], c, 2), memcpy(&h[3], d, 2);
	__m128i v = _mm_cvtsi32_si128(h[0]);
	v = _mm_insert_epi16(v, h[1], 1);
	v = _mm_insert_epi16(v, h[2], 2);
	v = _mm_insert_epi16(v, h[3], 3);
	return _mm_cvtph_ps(v);
}

/* 32 bits -> 32 bytes of 0xFF (bit set) or 0 */
static inline __m256i bits32(const uint8_t *p)
{
	uint32_t b;
	memcpy(&b, p, 4);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)b),
					_mm256_setr_epi64x(0, 0x0101010101010101LL,
							   0x0202020202020202LL, 0x0303030303030303LL));
	const __m256i m = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
	return _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m);
}

/* row r + q of a group of rows rb bytes apart, or row r when past the end
 * (the decode kernels' groups of 4) */
static inline const uint8_t *row_of(const void *w, size_t rb, int64_t r, int q, int64_t rows)
{
	return (const uint8_t *)w + (size_t)(r + q < rows ? r + q : r) * rb;
}

#if defined(__AVX512F__)
/* two 256-bit halves as one 512-bit vector (lo in the low half) */
static inline __m512i cat256(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
#endif

#endif
