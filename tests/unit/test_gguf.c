/* test_gguf.c: the ggml type table and conversions (lib/quant/dtype.c),
 * and GGUF reading and writing (lib/format/gguf-*.c): round trips of every
 * metadata type, tensor alignment, producers, a byte-exact file built by
 * hand, corrupt and truncated inputs, and llama.cpp's vocab-only files. */
#include "t.h"

#include <stdint.h>

/* ---- a byte builder for hand-made files (independent of the writer) ---- */

struct bb { uint8_t *p; size_t n, cap; };

static void bb_raw(struct bb *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}
static void bb_u8(struct bb *b, uint8_t v) { bb_raw(b, &v, 1); }
static void bb_u16(struct bb *b, uint16_t v) { bb_u8(b, (uint8_t)v); bb_u8(b, (uint8_t)(v >> 8)); }
static void bb_u32(struct bb *b, uint32_t v) { for (int i = 0; i < 4; i++) bb_u8(b, (uint8_t)(v >> 8 * i)); }
static void bb_u64(struct bb *b, uint64_t v) { for (int i = 0; i < 8; i++) bb_u8(b, (uint8_t)(v >> 8 * i)); }
static void bb_str(struct bb *b, const char *s) { bb_u64(b, strlen(s)); bb_raw(b, s, strlen(s)); }
static void bb_pad(struct bb *b, size_t a) { while (b->n % a) bb_u8(b, 0); }

/* Parse a copy of exactly n bytes (so ASan sees any over-read). */
static int parse_n(const void *p, size_t n, struct tfm_gguf **g)
{
	void *c = malloc(n ? n : 1);
	memcpy(c, p, n);
	int st = tfm_gguf_parse(g, c, n, "t.gguf");
	if (st == TFM_OK) { /* tensor data points into c: keep it only for checks */
		tfm_gguf_free(*g);
		*g = NULL;
	}
	free(c);
	return st;
}

/* ---- the type table ---- */

static void t_dtype_table(void)
{
	/* ggml's type_traits (ggml.c) and block structs (ggml-common.h) */
	static const struct { int id; const char *name; int64_t blck; size_t size; } want[] = {
		{ 0, "f32", 1, 4 }, { 1, "f16", 1, 2 }, { 2, "q4_0", 32, 18 }, { 3, "q4_1", 32, 20 },
		{ 6, "q5_0", 32, 22 }, { 7, "q5_1", 32, 24 }, { 8, "q8_0", 32, 34 },
		{ 9, "q8_1", 32, 36 }, { 10, "q2_K", 256, 84 }, { 11, "q3_K", 256, 110 },
		{ 12, "q4_K", 256, 144 }, { 13, "q5_K", 256, 176 }, { 14, "q6_K", 256, 210 },
		{ 15, "q8_K", 256, 292 }, { 16, "iq2_xxs", 256, 66 }, { 17, "iq2_xs", 256, 74 },
		{ 18, "iq3_xxs", 256, 98 }, { 19, "iq1_s", 256, 50 }, { 20, "iq4_nl", 32, 18 },
		{ 21, "iq3_s", 256, 110 }, { 22, "iq2_s", 256, 82 }, { 23, "iq4_xs", 256, 136 },
		{ 24, "i8", 1, 1 }, { 25, "i16", 1, 2 }, { 26, "i32", 1, 4 }, { 27, "i64", 1, 8 },
		{ 28, "f64", 1, 8 }, { 29, "iq1_m", 256, 56 }, { 30, "bf16", 1, 2 },
		{ 34, "tq1_0", 256, 54 }, { 35, "tq2_0", 256, 66 }, { 39, "mxfp4", 32, 17 },
	};
	int n_known = 0;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct tfm_type_info *ti = tfm_type_info(want[i].id);
		CHECK_MSG(ti && !strcmp(ti->name, want[i].name) && ti->blck == want[i].blck &&
			  ti->size == want[i].size, "type %d (%s)", want[i].id, want[i].name);
		CHECK(tfm_type_from_name(want[i].name) == want[i].id);
	}
	for (int id = -1; id <= TFM_TYPE_COUNT; id++)
		n_known += tfm_type_info(id) != NULL;
	CHECK(n_known == 32);
	static const int removed[] = { 4, 5, 31, 32, 33, 36, 37, 38, 40, -1 };
	for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
		CHECK(tfm_type_info(removed[i]) == NULL);
	CHECK(!strcmp(tfm_type_name(4), "type#4"));
	CHECK(!strcmp(tfm_type_name(TFM_TYPE_Q6_K), "q6_K"));
	CHECK(tfm_type_from_name("Q4_K") == TFM_TYPE_Q4_K);
	CHECK(tfm_type_from_name("BF16") == TFM_TYPE_BF16);
	CHECK(tfm_type_from_name("q4_2") == -1);
	CHECK(tfm_type_nbytes(TFM_TYPE_Q4_K, 4096) == 16 * 144);
	CHECK(tfm_type_nbytes(TFM_TYPE_Q8_0, 64) == 68);
	CHECK(tfm_type_nbytes(TFM_TYPE_Q8_0, 33) == 0);
	CHECK(tfm_type_nbytes(TFM_TYPE_F32, 10) == 40);
	CHECK(tfm_type_nbytes(TFM_TYPE_F64, INT64_MAX / 2) == 0); /* 2^65 bytes */
	CHECK(tfm_type_nbytes(5, 32) == 0);
}

static void t_dtype_plain(void)
{
	/* f16 / bf16 bit patterns (IEEE half: 1.0 = 0x3c00, -2 = 0xc000, 0.5 = 0x3800;
	 * bfloat16: 1.0 = 0x3f80, -3.0 = 0xc040) */
	uint16_t h[4] = { 0x3c00, 0xc000, 0x3800, 0x0000 }, hb[4];
	uint16_t bf[3] = { 0x3f80, 0xc040, 0x4120 /* 10.0 */ }, bb2[3];
	float f[4];
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_F16, h, f, 4));
	CHECK(f[0] == 1.0f && f[1] == -2.0f && f[2] == 0.5f && f[3] == 0.0f);
	CHECK_OK(tfm_type_from_f32(TFM_TYPE_F16, f, hb, 4));
	CHECK(!memcmp(h, hb, sizeof h));
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_BF16, bf, f, 3));
	CHECK(f[0] == 1.0f && f[1] == -3.0f && f[2] == 10.0f);
	CHECK_OK(tfm_type_from_f32(TFM_TYPE_BF16, f, bb2, 3));
	CHECK(!memcmp(bf, bb2, sizeof bf));
	int8_t i8[3] = { -128, 0, 127 };
	int16_t i16[2] = { -32768, 1234 };
	int32_t i32[2] = { -70000, 16777216 };
	double f64[2] = { 0.25, -1e10 }, f64b[2];
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_I8, i8, f, 3));
	CHECK(f[0] == -128 && f[1] == 0 && f[2] == 127);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_I16, i16, f, 2));
	CHECK(f[0] == -32768 && f[1] == 1234);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_I32, i32, f, 2));
	CHECK(f[0] == -70000 && f[1] == 16777216);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_F64, f64, f, 2));
	CHECK(f[0] == 0.25f && f[1] == -1e10f);
	CHECK_OK(tfm_type_from_f32(TFM_TYPE_F64, f, f64b, 2));
	CHECK(f64b[0] == 0.25 && f64b[1] == (double)-1e10f);
	float src[2] = { 1.5f, -2.25f }, dst[2];
	CHECK_OK(tfm_type_from_f32(TFM_TYPE_F32, src, dst, 2));
	CHECK(dst[0] == 1.5f && dst[1] == -2.25f);
	/* what is not handled says so, naming the type */
	uint8_t blk[144] = { 0 };
	float out[256];
	CHECK_ST(tfm_type_to_f32(TFM_TYPE_IQ2_XXS, blk, out, 256), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "iq2_xxs") != NULL);
	/* K-quants convert (lib/quant): an all-zero q4_K block is all zeros */
	out[0] = out[255] = 1;
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_Q4_K, blk, out, 256));
	CHECK(out[0] == 0 && out[255] == 0);
	CHECK_ST(tfm_type_from_f32(TFM_TYPE_I32, src, blk, 2), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "i32") != NULL);
	CHECK_ST(tfm_type_to_f32(TFM_TYPE_Q8_0, blk, out, 31), TFM_E_INVAL);
	CHECK_ST(tfm_type_to_f32(4, blk, out, 32), TFM_E_INVAL);
}

/* Hand-made blocks; the expected values follow from ggml's layouts. */
static void t_dtype_blocks(void)
{
	float y[64];
	/* q8_0: d = 0.5 (f16 0x3800), qs[j] = j - 16 -> x = (j - 16) / 2; two blocks,
	 * the second with d = -1 (0xbc00) and qs[j] = 100 */
	uint8_t q8[68];
	q8[0] = 0x00; q8[1] = 0x38;
	for (int j = 0; j < 32; j++)
		q8[2 + j] = (uint8_t)(int8_t)(j - 16);
	q8[34] = 0x00; q8[35] = 0xbc;
	memset(q8 + 36, 100, 32);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_Q8_0, q8, y, 64));
	int bad = 0;
	for (int j = 0; j < 32; j++)
		bad += y[j] != (j - 16) * 0.5f || y[32 + j] != -100.0f;
	CHECK_MSG(bad == 0, "%d q8_0 values wrong", bad);

	/* q4_0: d = 2 (0x4000), byte j = low nibble j, high nibble 15 - j:
	 * x[j] = 2 * (j - 8), x[j + 16] = 2 * (15 - j - 8) */
	uint8_t q4[18] = { 0x00, 0x40 };
	for (int j = 0; j < 16; j++)
		q4[2 + j] = (uint8_t)(j | (15 - j) << 4);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_Q4_0, q4, y, 32));
	bad = 0;
	for (int j = 0; j < 16; j++)
		bad += y[j] != 2.0f * (j - 8) || y[j + 16] != 2.0f * (7 - j);
	CHECK_MSG(bad == 0, "%d q4_0 values wrong", bad);

	/* q4_1: d = 1 (0x3c00), m = -1 (0xbc00), same nibbles: x = q - 1 */
	uint8_t q41[20] = { 0x00, 0x3c, 0x00, 0xbc };
	memcpy(q41 + 4, q4 + 2, 16);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_Q4_1, q41, y, 32));
	bad = 0;
	for (int j = 0; j < 16; j++)
		bad += y[j] != (float)(j - 1) || y[j + 16] != (float)(15 - j - 1);
	CHECK_MSG(bad == 0, "%d q4_1 values wrong", bad);

	/* q5_0: d = 1, qh bits 0, 5 and 16 set, every qs byte 0x21 (low 1, high 2):
	 * x[0] = x[5] = 17 - 16 = 1, x[1] = 1 - 16 = -15, x[16] = 18 - 16 = 2,
	 * x[17] = 2 - 16 = -14 */
	uint8_t q5[22] = { 0x00, 0x3c, 0x21, 0x00, 0x01, 0x00 };
	memset(q5 + 6, 0x21, 16);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_Q5_0, q5, y, 32));
	CHECK(y[0] == 1 && y[5] == 1 && y[1] == -15 && y[16] == 2 && y[17] == -14 && y[31] == -14);
	/* q5_1: d = 0.5, m = 1, same qh and qs: x[0] = 0.5 * 17 + 1 = 9.5,
	 * x[1] = 0.5 * 1 + 1 = 1.5, x[16] = 0.5 * 18 + 1 = 10, x[17] = 0.5 * 2 + 1 = 2 */
	uint8_t q51[24] = { 0x00, 0x38, 0x00, 0x3c, 0x21, 0x00, 0x01, 0x00 };
	memset(q51 + 8, 0x21, 16);
	CHECK_OK(tfm_type_to_f32(TFM_TYPE_Q5_1, q51, y, 32));
	CHECK(y[0] == 9.5f && y[1] == 1.5f && y[5] == 9.5f && y[16] == 10 && y[17] == 2);
}

/* ---- metadata round trip ---- */

static int write_gguf(const struct tfm_gguf *g, const char *path)
{
	struct tfm_out *o;
	int st = tfm_out_open(&o, path, 0);
	if (st)
		return st;
	if ((st = tfm_gguf_write(g, o))) {
		tfm_out_abort(o);
		return st;
	}
	return tfm_out_commit(o);
}

static void t_kv_roundtrip(void)
{
	struct tfm_gguf *g, *r;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_u8(g, "k.u8", 250));
	CHECK_OK(tfm_gguf_set_i8(g, "k.i8", -100));
	CHECK_OK(tfm_gguf_set_u16(g, "k.u16", 65000));
	CHECK_OK(tfm_gguf_set_i16(g, "k.i16", -32000));
	CHECK_OK(tfm_gguf_set_u32(g, "k.u32", 4000000000u));
	CHECK_OK(tfm_gguf_set_i32(g, "k.i32", -2000000000));
	CHECK_OK(tfm_gguf_set_u64(g, "k.u64", 1ull << 62));
	CHECK_OK(tfm_gguf_set_i64(g, "k.i64", -(1ll << 60)));
	CHECK_OK(tfm_gguf_set_f32(g, "k.f32", 1e-5f));
	CHECK_OK(tfm_gguf_set_f64(g, "k.f64", 3.141592653589793));
	CHECK_OK(tfm_gguf_set_bool(g, "k.bool", 1));
	CHECK_OK(tfm_gguf_set_str(g, "k.str", "héllo"));
	CHECK_OK(tfm_gguf_set_strn(g, "k.strn", "a\0b", 3));
	CHECK_OK(tfm_gguf_set_u64(g, "k.big", UINT64_MAX));
	/* arrays of each numeric type */
	uint8_t a_u8[3] = { 1, 2, 255 }; int8_t a_i8[2] = { -1, 1 };
	uint16_t a_u16[2] = { 7, 65535 }; int16_t a_i16[2] = { -7, 300 };
	uint32_t a_u32[2] = { 9, 4000000000u }; int32_t a_i32[3] = { -9, 0, 9 };
	uint64_t a_u64[1] = { 1ull << 40 }; int64_t a_i64[2] = { -(1ll << 40), 5 };
	float a_f32[3] = { 0.5f, -1.25f, 1e30f }; double a_f64[2] = { 1e-300, -2.5 };
	uint8_t a_bool[2] = { 1, 0 };
	CHECK_OK(tfm_gguf_set_arr(g, "a.u8", TFM_GGUF_UINT8, a_u8, 3));
	CHECK_OK(tfm_gguf_set_arr(g, "a.i8", TFM_GGUF_INT8, a_i8, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.u16", TFM_GGUF_UINT16, a_u16, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.i16", TFM_GGUF_INT16, a_i16, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.u32", TFM_GGUF_UINT32, a_u32, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.i32", TFM_GGUF_INT32, a_i32, 3));
	CHECK_OK(tfm_gguf_set_arr(g, "a.u64", TFM_GGUF_UINT64, a_u64, 1));
	CHECK_OK(tfm_gguf_set_arr(g, "a.i64", TFM_GGUF_INT64, a_i64, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.f32", TFM_GGUF_FLOAT32, a_f32, 3));
	CHECK_OK(tfm_gguf_set_arr(g, "a.f64", TFM_GGUF_FLOAT64, a_f64, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.bool", TFM_GGUF_BOOL, a_bool, 2));
	CHECK_OK(tfm_gguf_set_arr(g, "a.empty", TFM_GGUF_INT32, NULL, 0));
	CHECK_ST(tfm_gguf_set_arr(g, "a.bad", TFM_GGUF_STRING, a_u8, 1), TFM_E_INVAL);
	const char *strs[3] = { "one", "", "three" };
	CHECK_OK(tfm_gguf_set_arr_str(g, "a.str", strs, NULL, 3));
	size_t lens[2] = { 2, 1 };
	const char *strs2[2] = { "x\0y", "z" };
	CHECK_OK(tfm_gguf_set_arr_str(g, "a.strn", strs2, lens, 2));
	CHECK_OK(tfm_gguf_set_arr_str(g, "a.str0", NULL, NULL, 0));
	/* nested: [[1,2,255], ["one","","three"], [[-9,0,9]]] */
	const struct tfm_gguf_val *inner3 = tfm_gguf_get_val(g, tfm_gguf_find(g, "a.i32"));
	CHECK_OK(tfm_gguf_set_arr_arr(g, "tmp.inner", &inner3, 1));
	const struct tfm_gguf_val *subs[3] = {
		tfm_gguf_get_val(g, tfm_gguf_find(g, "a.u8")),
		tfm_gguf_get_val(g, tfm_gguf_find(g, "a.str")),
		tfm_gguf_get_val(g, tfm_gguf_find(g, "tmp.inner")),
	};
	CHECK_OK(tfm_gguf_set_arr_arr(g, "a.nested", subs, 3));
	CHECK_OK(tfm_gguf_remove(g, "tmp.inner"));
	CHECK(tfm_gguf_find(g, "tmp.inner") == -1);
	const struct tfm_gguf_val *scalar = tfm_gguf_get_val(g, tfm_gguf_find(g, "k.u8"));
	CHECK_ST(tfm_gguf_set_arr_arr(g, "a.bad", &scalar, 1), TFM_E_INVAL);
	CHECK(tfm_gguf_find(g, "a.bad") == -1);
	CHECK_OK(tfm_gguf_remove(g, "a.bad")); /* removing a missing key is fine */
	/* replacing keeps the position */
	CHECK_OK(tfm_gguf_set_u8(g, "k.i8", 5));
	CHECK(tfm_gguf_find(g, "k.i8") == 1 && tfm_gguf_kv_type(g, 1) == TFM_GGUF_UINT8);
	CHECK_OK(tfm_gguf_set_i8(g, "k.i8", -100));
	int64_t n_kv = tfm_gguf_n_kv(g);
	CHECK(n_kv == 14 + 12 + 3 + 1);

	char *dir = t_tmpdir(), *path = t_path("%s/kv.gguf", dir);
	CHECK_OK(write_gguf(g, path));
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, path));
	CHECK(b.size > 24 && !memcmp(b.data, "GGUF\3\0\0\0", 8));
	CHECK_OK(tfm_gguf_parse(&r, b.data, b.size, path));
	if (!r)
		return;
	CHECK(tfm_gguf_version(r) == 3 && tfm_gguf_n_tensors(r) == 0);
	CHECK(tfm_gguf_n_kv(r) == n_kv);
	for (int64_t i = 0; i < n_kv && i < tfm_gguf_n_kv(r); i++)
		CHECK_MSG(!strcmp(tfm_gguf_key(r, i), tfm_gguf_key(g, i)) &&
			  tfm_gguf_kv_type(r, i) == tfm_gguf_kv_type(g, i), "key %lld", (long long)i);
	int64_t v;
	double d;
	const char *s;
	size_t len;
	CHECK_OK(tfm_gguf_get_int(r, "k.u8", &v)); CHECK(v == 250);
	CHECK_OK(tfm_gguf_get_int(r, "k.i8", &v)); CHECK(v == -100);
	CHECK_OK(tfm_gguf_get_int(r, "k.u16", &v)); CHECK(v == 65000);
	CHECK_OK(tfm_gguf_get_int(r, "k.i16", &v)); CHECK(v == -32000);
	CHECK_OK(tfm_gguf_get_int(r, "k.u32", &v)); CHECK(v == 4000000000ll);
	CHECK_OK(tfm_gguf_get_int(r, "k.i32", &v)); CHECK(v == -2000000000);
	CHECK_OK(tfm_gguf_get_int(r, "k.u64", &v)); CHECK(v == 1ll << 62);
	CHECK_OK(tfm_gguf_get_int(r, "k.i64", &v)); CHECK(v == -(1ll << 60));
	CHECK_OK(tfm_gguf_get_int(r, "k.bool", &v)); CHECK(v == 1);
	CHECK_ST(tfm_gguf_get_int(r, "k.big", &v), TFM_E_FORMAT);
	CHECK_OK(tfm_gguf_get_float(r, "k.f32", &d)); CHECK(d == (double)1e-5f);
	CHECK_OK(tfm_gguf_get_float(r, "k.f64", &d)); CHECK(d == 3.141592653589793);
	CHECK_OK(tfm_gguf_get_float(r, "k.i32", &d)); CHECK(d == -2e9);
	CHECK_OK(tfm_gguf_get_str(r, "k.str", &s, &len));
	CHECK(len == 6 && !strcmp(s, "héllo"));
	CHECK_OK(tfm_gguf_get_str(r, "k.strn", &s, &len));
	CHECK(len == 3 && !memcmp(s, "a\0b", 4));
	/* wrong type, missing key, defaults */
	CHECK_ST(tfm_gguf_get_int(r, "k.str", &v), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "k.str") && strstr(tfm_errmsg(), "string"));
	CHECK_ST(tfm_gguf_get_str(r, "k.u8", &s, &len), TFM_E_FORMAT);
	CHECK_ST(tfm_gguf_get_int(r, "no.such", &v), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "no.such") != NULL);
	CHECK_ST(tfm_gguf_get_float(r, "k.bool", &d), TFM_E_FORMAT);
	CHECK(tfm_gguf_get_int_or(r, "no.such", 77) == 77);
	CHECK(tfm_gguf_get_int_or(r, "k.u16", 77) == 65000);
	CHECK(tfm_gguf_get_float_or(r, "no.such", 0.25) == 0.25);
	CHECK(!strcmp(tfm_gguf_get_str_or(r, "no.such", "dflt"), "dflt"));
	CHECK(!strcmp(tfm_gguf_get_str_or(r, "k.str", "dflt"), "héllo"));
	/* numeric arrays: raw data and conversions */
	int et;
	int64_t n;
	const void *data;
	const struct { const char *key; int type; const void *p; int64_t n; size_t w; } arrs[] = {
		{ "a.u8", TFM_GGUF_UINT8, a_u8, 3, 1 }, { "a.i8", TFM_GGUF_INT8, a_i8, 2, 1 },
		{ "a.u16", TFM_GGUF_UINT16, a_u16, 2, 2 }, { "a.i16", TFM_GGUF_INT16, a_i16, 2, 2 },
		{ "a.u32", TFM_GGUF_UINT32, a_u32, 2, 4 }, { "a.i32", TFM_GGUF_INT32, a_i32, 3, 4 },
		{ "a.u64", TFM_GGUF_UINT64, a_u64, 1, 8 }, { "a.i64", TFM_GGUF_INT64, a_i64, 2, 8 },
		{ "a.f32", TFM_GGUF_FLOAT32, a_f32, 3, 4 }, { "a.f64", TFM_GGUF_FLOAT64, a_f64, 2, 8 },
		{ "a.bool", TFM_GGUF_BOOL, a_bool, 2, 1 }, { "a.empty", TFM_GGUF_INT32, NULL, 0, 4 },
	};
	for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
		CHECK_OK(tfm_gguf_get_arr(r, arrs[i].key, &et, &n, &data));
		CHECK_MSG(et == arrs[i].type && n == arrs[i].n &&
			  (!n || !memcmp(data, arrs[i].p, (size_t)n * arrs[i].w)), "%s", arrs[i].key);
	}
	float fa[3];
	int64_t ia[3];
	CHECK_OK(tfm_gguf_get_arr_f32(r, "a.f32", fa, 3));
	CHECK(fa[0] == 0.5f && fa[1] == -1.25f && fa[2] == 1e30f);
	CHECK_OK(tfm_gguf_get_arr_f32(r, "a.i32", fa, 3));
	CHECK(fa[0] == -9 && fa[2] == 9);
	CHECK_OK(tfm_gguf_get_arr_i64(r, "a.u32", ia, 2));
	CHECK(ia[0] == 9 && ia[1] == 4000000000ll);
	CHECK_OK(tfm_gguf_get_arr_i64(r, "a.i16", ia, 2));
	CHECK(ia[0] == -7 && ia[1] == 300);
	CHECK_ST(tfm_gguf_get_arr_i64(r, "a.f32", ia, 3), TFM_E_FORMAT);
	CHECK_ST(tfm_gguf_get_arr_f32(r, "a.f32", fa, 2), TFM_E_FORMAT);
	CHECK_ST(tfm_gguf_get_arr_f32(r, "a.str", fa, 3), TFM_E_FORMAT);
	CHECK_ST(tfm_gguf_get_arr(r, "k.u8", &et, &n, &data), TFM_E_FORMAT);
	/* string arrays */
	int64_t i_str = tfm_gguf_find(r, "a.str");
	CHECK(tfm_gguf_arr_type(r, i_str) == TFM_GGUF_STRING && tfm_gguf_arr_n(r, i_str) == 3);
	CHECK_OK(tfm_gguf_get_arr_str(r, "a.str", 0, &s, &len)); CHECK(len == 3 && !strcmp(s, "one"));
	CHECK_OK(tfm_gguf_get_arr_str(r, "a.str", 1, &s, &len)); CHECK(len == 0 && !strcmp(s, ""));
	CHECK_OK(tfm_gguf_get_arr_str(r, "a.str", 2, &s, &len)); CHECK(len == 5 && !strcmp(s, "three"));
	CHECK_ST(tfm_gguf_get_arr_str(r, "a.str", 3, &s, &len), TFM_E_INVAL);
	CHECK_OK(tfm_gguf_get_arr_str(r, "a.strn", 0, &s, &len)); CHECK(len == 2 && !memcmp(s, "x\0", 3));
	CHECK_OK(tfm_gguf_get_arr_str(r, "a.strn", 1, &s, &len)); CHECK(len == 1 && !strcmp(s, "z"));
	CHECK(tfm_gguf_arr_n(r, tfm_gguf_find(r, "a.str0")) == 0);
	/* the nested array */
	const struct tfm_gguf_val *nv = tfm_gguf_get_val(r, tfm_gguf_find(r, "a.nested"));
	CHECK_OK(tfm_gguf_val_arr(nv, &et, &n, &data));
	CHECK(et == TFM_GGUF_ARRAY && n == 3 && data == NULL);
	const struct tfm_gguf_val *e0 = tfm_gguf_arr_sub(nv, 0), *e1 = tfm_gguf_arr_sub(nv, 1),
		*e2 = tfm_gguf_arr_sub(nv, 2);
	CHECK(tfm_gguf_arr_sub(nv, 3) == NULL);
	CHECK_OK(tfm_gguf_val_arr(e0, &et, &n, &data));
	CHECK(et == TFM_GGUF_UINT8 && n == 3 && !memcmp(data, a_u8, 3));
	CHECK_OK(tfm_gguf_val_arr_str(e1, 2, &s, &len)); CHECK(!strcmp(s, "three"));
	CHECK_OK(tfm_gguf_val_arr(e2, &et, &n, &data)); CHECK(et == TFM_GGUF_ARRAY && n == 1);
	CHECK_OK(tfm_gguf_val_arr(tfm_gguf_arr_sub(e2, 0), &et, &n, &data));
	CHECK(et == TFM_GGUF_INT32 && n == 3 && !memcmp(data, a_i32, 12));
	/* copy every key into a fresh gguf: writing it gives the same bytes */
	struct tfm_gguf *c;
	CHECK_OK(tfm_gguf_new(&c));
	for (int64_t i = 0; i < tfm_gguf_n_kv(r); i++)
		CHECK_OK(tfm_gguf_copy_kv(c, r, i));
	char *path2 = t_path("%s/kv2.gguf", dir);
	CHECK_OK(write_gguf(c, path2));
	struct tfm_blob b2;
	CHECK_OK(tfm_blob_open(&b2, path2));
	CHECK(b2.size == b.size && !memcmp(b2.data, b.data, b.size));
	tfm_blob_close(&b2);
	tfm_gguf_free(c);
	tfm_gguf_free(r);
	tfm_blob_close(&b);
	tfm_gguf_free(g);
	free(path); free(path2); free(dir);
}

/* A whole file built by hand, byte by byte; the writer must produce the
 * same bytes and the reader must see the same contents. */
static void t_byte_exact(void)
{
	struct bb b = { 0 };
	bb_raw(&b, "GGUF", 4); bb_u32(&b, 3); bb_u64(&b, 2); bb_u64(&b, 2);
	bb_str(&b, "general.architecture"); bb_u32(&b, 8); bb_str(&b, "llama");
	bb_str(&b, "x.ids"); bb_u32(&b, 9); bb_u32(&b, 5); bb_u64(&b, 2); bb_u32(&b, 7); bb_u32(&b, (uint32_t)-1);
	bb_str(&b, "w"); bb_u32(&b, 2); bb_u64(&b, 3); bb_u64(&b, 2); bb_u32(&b, 0); bb_u64(&b, 0);
	bb_str(&b, "h"); bb_u32(&b, 1); bb_u64(&b, 1); bb_u32(&b, 1); bb_u64(&b, 32);
	bb_pad(&b, 32);
	size_t data_off = b.n;
	float w[6] = { 1, 2, 3, 4, 5, 6 };
	bb_raw(&b, w, 24); bb_pad(&b, 32);
	bb_u16(&b, 0x3c00); bb_pad(&b, 32);

	struct tfm_gguf *g;
	int64_t ne_w[2] = { 3, 2 }, ne_h[1] = { 1 };
	int32_t ids[2] = { 7, -1 };
	uint16_t h = 0x3c00;
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_str(g, "general.architecture", "llama"));
	CHECK_OK(tfm_gguf_set_arr(g, "x.ids", TFM_GGUF_INT32, ids, 2));
	CHECK_OK(tfm_gguf_add_tensor(g, "w", TFM_TYPE_F32, 2, ne_w, w, NULL, NULL));
	CHECK_OK(tfm_gguf_add_tensor(g, "h", TFM_TYPE_F16, 1, ne_h, &h, NULL, NULL));
	char *dir = t_tmpdir(), *path = t_path("%s/exact.gguf", dir);
	CHECK_OK(write_gguf(g, path));
	struct tfm_blob f;
	CHECK_OK(tfm_blob_open(&f, path));
	CHECK_MSG(f.size == b.n && !memcmp(f.data, b.p, b.n), "size %zu, want %zu", f.size, b.n);
	tfm_blob_close(&f);
	tfm_gguf_free(g);

	struct tfm_gguf *r;
	CHECK_OK(tfm_gguf_parse(&r, b.p, b.n, "hand.gguf"));
	if (r) {
		CHECK(tfm_gguf_data_offset(r) == data_off);
		CHECK(tfm_gguf_n_tensors(r) == 2);
		const struct tfm_gguf_tensor *t = tfm_gguf_find_tensor(r, "w");
		CHECK(t && t->n_dims == 2 && t->ne[0] == 3 && t->ne[1] == 2 && t->ne[2] == 1 &&
		      t->type == TFM_TYPE_F32 && t->nbytes == 24 && t->offset == 0 &&
		      t->data == b.p + data_off && !memcmp(t->data, w, 24));
		t = tfm_gguf_tensor(r, 1);
		CHECK(t && !strcmp(t->name, "h") && t->offset == 32 && t->nbytes == 2);
		CHECK(tfm_gguf_find_tensor(r, "nope") == NULL && tfm_gguf_tensor(r, 2) == NULL);
		CHECK(!strcmp(tfm_gguf_get_str_or(r, "general.architecture", ""), "llama"));
		tfm_gguf_free(r);
	}
	free(b.p); free(path); free(dir);
}

/* ---- tensors: alignment and producers ---- */

struct prod { int calls; int fail; };

/* Fill byte k of a tensor with (k * 7 + name[0]) & 0xff. */
static int produce(void *ctx, const struct tfm_gguf_tensor *t, void *buf)
{
	struct prod *p = ctx;
	p->calls++;
	if (p->fail)
		return tfm_seterr(TFM_E_IO, "producer failed");
	for (size_t k = 0; k < t->nbytes; k++)
		((uint8_t *)buf)[k] = (uint8_t)(k * 7 + (unsigned char)t->name[0]);
	return TFM_OK;
}

static void check_tensors(size_t align, int custom)
{
	struct tfm_gguf *g, *r;
	float f3[3] = { 1, 2, 3 };
	int8_t i5[5] = { 1, 2, 3, 4, 5 };
	int64_t ne3[1] = { 3 }, ne5[1] = { 5 }, neq[2] = { 64, 3 }, neb[3] = { 2, 3, 4 };
	struct prod p = { 0 };
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_str(g, "general.architecture", "test"));
	if (custom)
		CHECK_OK(tfm_gguf_set_u32(g, "general.alignment", (uint32_t)align));
	CHECK(tfm_gguf_alignment(g) == align);
	CHECK_OK(tfm_gguf_add_tensor(g, "f3", TFM_TYPE_F32, 1, ne3, f3, NULL, NULL));
	CHECK_OK(tfm_gguf_add_tensor(g, "q", TFM_TYPE_Q8_0, 2, neq, NULL, produce, &p));
	CHECK_OK(tfm_gguf_add_tensor(g, "i5", TFM_TYPE_I8, 1, ne5, i5, NULL, NULL));
	CHECK_OK(tfm_gguf_add_tensor(g, "b", TFM_TYPE_BF16, 3, neb, NULL, produce, &p));
	/* bad additions */
	CHECK_ST(tfm_gguf_add_tensor(g, "f3", TFM_TYPE_F32, 1, ne3, f3, NULL, NULL), TFM_E_INVAL);
	CHECK_ST(tfm_gguf_add_tensor(g, "x", TFM_TYPE_Q8_0, 1, ne3, f3, NULL, NULL), TFM_E_INVAL);
	CHECK_ST(tfm_gguf_add_tensor(g, "x", 4, 1, ne3, f3, NULL, NULL), TFM_E_INVAL);
	CHECK_ST(tfm_gguf_add_tensor(g, "x", TFM_TYPE_F32, 5, neb, f3, NULL, NULL), TFM_E_INVAL);
	CHECK_ST(tfm_gguf_add_tensor(g, "x", TFM_TYPE_F32, 1, ne3, NULL, NULL, NULL), TFM_E_INVAL);
	CHECK(tfm_gguf_n_tensors(g) == 4);

	char *dir = t_tmpdir(), *path = t_path("%s/t.gguf", dir);
	CHECK_OK(write_gguf(g, path));
	CHECK(p.calls == 2);
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, path));
	CHECK_OK(tfm_gguf_parse(&r, b.data, b.size, path));
	if (r) {
		size_t d0 = tfm_gguf_data_offset(r);
		CHECK(d0 % align == 0 && d0 < b.size);
		CHECK(b.size % align == 0);
		/* sizes 12, 6 * 34 = 204, 5, 24 * 2 = 48 bytes, each padded to the alignment */
		uint64_t want_off[4], o = 0;
		size_t sizes[4] = { 12, 204, 5, 48 };
		for (int i = 0; i < 4; i++) {
			want_off[i] = o;
			o = (o + sizes[i] + align - 1) / align * align;
		}
		int bad = 0;
		for (int i = 0; i < 4; i++) {
			const struct tfm_gguf_tensor *t = tfm_gguf_tensor(r, i);
			bad += !t || t->offset != want_off[i] || t->nbytes != sizes[i] ||
			       (uint8_t *)t->data != b.data + d0 + want_off[i];
		}
		CHECK_MSG(bad == 0, "%d tensors misplaced (alignment %zu)", bad, align);
		CHECK(!memcmp(tfm_gguf_find_tensor(r, "f3")->data, f3, 12));
		CHECK(!memcmp(tfm_gguf_find_tensor(r, "i5")->data, i5, 5));
		const struct tfm_gguf_tensor *q = tfm_gguf_find_tensor(r, "q");
		const struct tfm_gguf_tensor *bt = tfm_gguf_find_tensor(r, "b");
		CHECK(q->n_dims == 2 && q->ne[0] == 64 && q->ne[1] == 3 && q->type == TFM_TYPE_Q8_0);
		CHECK(bt->n_dims == 3 && bt->ne[2] == 4 && bt->ne[3] == 1 && bt->type == TFM_TYPE_BF16);
		bad = 0;
		for (size_t k = 0; k < q->nbytes; k++)
			bad += ((const uint8_t *)q->data)[k] != (uint8_t)(k * 7 + 'q');
		for (size_t k = 0; k < bt->nbytes; k++)
			bad += ((const uint8_t *)bt->data)[k] != (uint8_t)(k * 7 + 'b');
		CHECK_MSG(bad == 0, "%d produced bytes wrong", bad);
		/* padding is zero */
		const uint8_t *f3end = b.data + d0 + 12;
		bad = 0;
		for (size_t k = 0; k < want_off[1] - 12; k++)
			bad += f3end[k] != 0;
		CHECK(bad == 0);
		tfm_gguf_free(r);
	}
	tfm_blob_close(&b);
	/* a failing producer fails the write, naming the tensor */
	p.fail = 1;
	struct tfm_out *o;
	CHECK_OK(tfm_out_open(&o, path, 0));
	CHECK_ST(tfm_gguf_write(g, o), TFM_E_IO);
	CHECK(strstr(tfm_errmsg(), "tensor q") && strstr(tfm_errmsg(), "producer failed"));
	tfm_out_abort(o);
	/* an alignment readers would reject is refused */
	CHECK_OK(tfm_gguf_set_u64(g, "general.alignment", 64));
	CHECK_OK(tfm_out_open(&o, path, 0));
	CHECK_ST(tfm_gguf_write(g, o), TFM_E_INVAL);
	CHECK_OK(tfm_gguf_set_u32(g, "general.alignment", 24));
	CHECK_ST(tfm_gguf_write(g, o), TFM_E_INVAL);
	tfm_out_abort(o);
	tfm_gguf_free(g);
	free(path); free(dir);
}

static void t_tensors_align32(void) { check_tensors(32, 0); }
static void t_tensors_align64(void) { check_tensors(64, 1); }
static void t_tensors_align8(void) { check_tensors(8, 1); }

/* ---- corrupt input ---- */

/* A small file with knobs for breaking it: two tensors, four keys. */
struct small {
	uint32_t version;
	uint64_t n_tensors, n_kv;         /* as written in the header */
	uint64_t key_len;                 /* of the first key (0: the true length) */
	uint32_t kv_type;                 /* of the second key (4: uint32) */
	uint64_t arr_n;                   /* count of the string array */
	uint32_t arr_type;                /* element type of the string array */
	const char *key3, *tname2;        /* duplicates when set to an earlier name */
	uint32_t n_dims;                  /* of the first tensor */
	uint64_t ne0, ne1;                /* of the first tensor */
	uint32_t ttype;                   /* of the first tensor */
	uint64_t off2;                    /* of the second tensor */
	int align_type; uint32_t align;   /* general.alignment's type and value (-1: none) */
};

static struct small small_ok(void)
{
	return (struct small){ .version = 3, .n_tensors = 2, .n_kv = 4, .kv_type = 4, .arr_n = 2,
		.arr_type = 8, .key3 = "t.strs", .tname2 = "b", .n_dims = 2, .ne0 = 4, .ne1 = 2,
		.ttype = 0, .off2 = 32, .align_type = -1 };
}

static void build_small(struct bb *b, const struct small *s)
{
	b->n = 0;
	bb_raw(b, "GGUF", 4); bb_u32(b, s->version);
	bb_u64(b, s->n_tensors); bb_u64(b, s->n_kv);
	bb_u64(b, s->key_len ? s->key_len : 20); bb_raw(b, "general.architecture", 20);
	bb_u32(b, 8); bb_str(b, "test");
	bb_str(b, "t.n"); bb_u32(b, s->kv_type); bb_u32(b, 7);
	bb_str(b, s->key3); bb_u32(b, 9); bb_u32(b, s->arr_type); bb_u64(b, s->arr_n);
	bb_str(b, "a"); bb_str(b, "bc");
	if (s->align_type >= 0) {
		bb_str(b, "general.alignment"); bb_u32(b, (uint32_t)s->align_type); bb_u32(b, s->align);
	} else {
		bb_str(b, "t.pad"); bb_u32(b, 0); bb_u8(b, 1);
	}
	bb_str(b, "a"); bb_u32(b, s->n_dims); bb_u64(b, s->ne0);
	for (uint32_t d = 1; d < s->n_dims && d < 8; d++)
		bb_u64(b, d == 1 ? s->ne1 : 1);
	bb_u32(b, s->ttype); bb_u64(b, 0);
	bb_str(b, s->tname2); bb_u32(b, 1); bb_u64(b, 32); bb_u32(b, TFM_TYPE_Q8_0); bb_u64(b, s->off2);
	size_t a = s->align_type >= 0 && s->align ? s->align : 32;
	bb_pad(b, a);
	for (int k = 0; k < 32; k++)  /* tensor a: 8 f32 */
		bb_u8(b, (uint8_t)k);
	bb_pad(b, a);
	for (int k = 0; k < 34; k++)  /* tensor b: one q8_0 block */
		bb_u8(b, (uint8_t)k);
}

/* The status of parsing small with one knob changed; the message must name
 * the file. */
static int small_st(const struct small *s)
{
	struct bb b = { 0 };
	struct tfm_gguf *g = NULL;
	build_small(&b, s);
	int st = parse_n(b.p, b.n, &g);
	if (st)
		CHECK_MSG(!strncmp(tfm_errmsg(), "t.gguf: ", 8), "message: %s", tfm_errmsg());
	free(b.p);
	return st;
}

static void t_corrupt_truncated(void)
{
	struct small s = small_ok();
	struct bb b = { 0 };
	struct tfm_gguf *g = NULL;
	build_small(&b, &s);
	CHECK_OK(parse_n(b.p, b.n, &g));
	/* every proper prefix fails cleanly */
	int bad = 0;
	for (size_t n = 0; n < b.n; n++) {
		int st = parse_n(b.p, n, &g);
		if (st != TFM_E_FORMAT || !strstr(tfm_errmsg(), "t.gguf")) {
			bad++;
			fprintf(stderr, "prefix %zu: %s (%s)\n", n, tfm_strstatus(st), tfm_errmsg());
		}
	}
	CHECK_MSG(bad == 0, "%d of %zu prefixes did not fail with a format error", bad, b.n);
	free(b.p);
}

static void t_corrupt_header(void)
{
	struct small s;
	uint8_t junk[32] = "GGUX\3\0\0\0";
	struct tfm_gguf *g;
	CHECK_ST(parse_n(junk, sizeof junk, &g), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "magic") != NULL);
	CHECK(!tfm_gguf_is_gguf(junk, sizeof junk) && tfm_gguf_is_gguf("GGUF", 4) &&
	      !tfm_gguf_is_gguf("GGU", 3));
	s = small_ok(); s.version = 2; CHECK_OK(small_st(&s));
	s.version = 1; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "version 1") != NULL);
	s.version = 4; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s.version = 0x03000000; CHECK_ST(small_st(&s), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "big-endian") != NULL);
	s = small_ok(); s.n_kv = 1ull << 60; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.n_kv = UINT64_MAX; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.n_tensors = 1ull << 60; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.n_tensors = 3; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.n_kv = 5; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.n_kv = 3; CHECK_ST(small_st(&s), TFM_E_FORMAT);
}

static void t_corrupt_kv(void)
{
	struct small s;
	s = small_ok(); s.key_len = 1ull << 63; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.key_len = UINT64_MAX; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.key_len = 100000; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.kv_type = 13; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "t.n") && strstr(tfm_errmsg(), "invalid value type 13"));
	s = small_ok(); s.kv_type = 0xffffffffu; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.arr_n = 1ull << 60; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "t.strs") != NULL);
	s = small_ok(); s.arr_n = UINT64_MAX; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.arr_type = 13; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	/* as uint64 elements the strings' bytes mostly still fit: n = 2 of 8 bytes */
	s = small_ok(); s.arr_type = 12; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.key3 = "t.n"; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "duplicate key t.n") != NULL);
	/* keys are sanitised in messages */
	s = small_ok(); s.key3 = "bad\n\x01key"; s.arr_type = 99; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "bad\\x0a\\x01key") && !strchr(tfm_errmsg(), '\n'));
	s = small_ok(); s.key3 = "t.x\x1b[31m"; s.arr_type = 99; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "t.x\\x1b[31m") && !strchr(tfm_errmsg(), '\x1b'));
	s = small_ok(); s.align_type = 4; s.align = 64; s.off2 = 64; CHECK_OK(small_st(&s));
	s.off2 = 32; CHECK_ST(small_st(&s), TFM_E_FORMAT); /* not a multiple of 64 */
	s = small_ok(); s.align_type = 4; s.align = 0; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.align_type = 4; s.align = 48; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "power of two") != NULL);
	s = small_ok(); s.align_type = 5; s.align = 32; CHECK_ST(small_st(&s), TFM_E_FORMAT);
}

static void t_corrupt_tensor(void)
{
	struct small s;
	s = small_ok(); s.n_dims = 0; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.n_dims = 5; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "tensor a") && strstr(tfm_errmsg(), "5 dimensions"));
	s = small_ok(); s.n_dims = 0xffffffffu; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ne0 = 1ull << 40; s.ne1 = 1ull << 40; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ne0 = UINT64_MAX; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ne0 = 1ull << 62; s.ne1 = 1; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ne0 = 5; CHECK_ST(small_st(&s), TFM_E_FORMAT); /* overlaps b */
	CHECK(strstr(tfm_errmsg(), "overlaps") != NULL);
	s = small_ok(); s.ne0 = 0; CHECK_OK(small_st(&s));              /* an empty tensor is fine */
	s = small_ok(); s.ttype = 4; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "invalid tensor type id 4") != NULL);
	s = small_ok(); s.ttype = 31; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ttype = 40; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ttype = 0xffffffffu; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.ttype = TFM_TYPE_Q8_0; CHECK_ST(small_st(&s), TFM_E_FORMAT); /* 4 % 32 */
	/* a type tfm cannot compute still parses (8 elements of q4_K: no; i8: yes) */
	s = small_ok(); s.ttype = TFM_TYPE_I8; CHECK_OK(small_st(&s));
	s = small_ok(); s.off2 = 64; CHECK_ST(small_st(&s), TFM_E_FORMAT); /* past the end */
	CHECK(strstr(tfm_errmsg(), "tensor b") && strstr(tfm_errmsg(), "past the end"));
	s = small_ok(); s.off2 = 1ull << 63; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.off2 = UINT64_MAX - 31; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	s = small_ok(); s.off2 = 33; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "alignment") != NULL);
	s = small_ok(); s.off2 = 0; CHECK_ST(small_st(&s), TFM_E_FORMAT); /* overlap */
	s = small_ok(); s.tname2 = "a"; CHECK_ST(small_st(&s), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "duplicate tensor a") != NULL);
}

/* Arrays of arrays nested past the limit, and a long chain of sub-arrays. */
static void t_corrupt_nesting(void)
{
	struct bb b = { 0 };
	struct tfm_gguf *g;
	for (int depth = 1; depth <= 12; depth++) {
		b.n = 0;
		bb_raw(&b, "GGUF", 4); bb_u32(&b, 3); bb_u64(&b, 0); bb_u64(&b, 1);
		bb_str(&b, "deep"); bb_u32(&b, 9);
		for (int d = 1; d < depth; d++) {
			bb_u32(&b, 9); bb_u64(&b, 1);
		}
		bb_u32(&b, 4); bb_u64(&b, 1); bb_u32(&b, 42);
		int st = parse_n(b.p, b.n, &g);
		CHECK_MSG(depth <= 8 ? st == TFM_OK : st == TFM_E_FORMAT, "depth %d: %s", depth,
			  tfm_strstatus(st));
	}
	/* an array of 2^40 empty arrays cannot fit */
	b.n = 0;
	bb_raw(&b, "GGUF", 4); bb_u32(&b, 3); bb_u64(&b, 0); bb_u64(&b, 1);
	bb_str(&b, "many"); bb_u32(&b, 9); bb_u32(&b, 9); bb_u64(&b, 1ull << 40);
	for (int k = 0; k < 10; k++) {
		bb_u32(&b, 0); bb_u64(&b, 0);
	}
	CHECK_ST(parse_n(b.p, b.n, &g), TFM_E_FORMAT);
	free(b.p);
}

/* Random byte changes to a valid file: each parse succeeds or fails with
 * a status, never crashes (run under SANITIZE=1 to see over-reads). */
static void t_corrupt_random(void)
{
	struct small s = small_ok();
	struct bb b = { 0 };
	build_small(&b, &s);
	uint8_t *c = malloc(b.n);
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	int bad = 0, ok = 0;
	for (int it = 0; it < 5000; it++) {
		memcpy(c, b.p, b.n);
		int flips = 1 + it % 4;
		for (int k = 0; k < flips; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			size_t pos = (size_t)(rng >> 33) % b.n;
			/* mostly inside the header and infos, where the structure is */
			if (it % 2)
				pos %= 200;
			c[pos] = (uint8_t)(rng >> 20);
		}
		struct tfm_gguf *g = NULL;
		int st = tfm_gguf_parse(&g, c, b.n, "t.gguf");
		if (st == TFM_OK) {
			ok++;
			unsigned sum = 0;
			for (int64_t i = 0; i < tfm_gguf_n_tensors(g); i++) {
				const struct tfm_gguf_tensor *t = tfm_gguf_tensor(g, i);
				for (size_t k = 0; k < t->nbytes; k++)
					sum += ((const uint8_t *)t->data)[k];
			}
			for (int64_t i = 0; i < tfm_gguf_n_kv(g); i++)
				sum += (unsigned)strlen(tfm_gguf_key(g, i));
			(void)sum;
			tfm_gguf_free(g);
		} else if (st != TFM_E_FORMAT && st != TFM_E_UNSUPPORTED) {
			bad++;
		}
	}
	CHECK_MSG(bad == 0, "%d unexpected statuses", bad);
	CHECK(ok > 0); /* some changes only touch data bytes */
	free(c);
	free(b.p);
}

/* One block of every known type round-trips, computable or not. */
static void t_all_types(void)
{
	struct tfm_gguf *g, *r = NULL;
	static uint8_t zeros[2 * 292]; /* two blocks of the largest type, q8_K */
	char name[16];
	int n = 0;
	CHECK_OK(tfm_gguf_new(&g));
	for (int id = 0; id < TFM_TYPE_COUNT; id++) {
		const struct tfm_type_info *ti = tfm_type_info(id);
		if (!ti)
			continue;
		int64_t ne[2] = { ti->blck, 2 };
		snprintf(name, sizeof name, "t%d", id);
		CHECK_OK(tfm_gguf_add_tensor(g, name, id, 2, ne, zeros, NULL, NULL));
		n++;
	}
	char *dir = t_tmpdir(), *path = t_path("%s/all.gguf", dir);
	CHECK_OK(write_gguf(g, path));
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, path));
	CHECK_OK(tfm_gguf_parse(&r, b.data, b.size, path));
	if (r) {
		int bad = 0;
		CHECK(tfm_gguf_n_tensors(r) == n);
		for (int64_t i = 0; i < tfm_gguf_n_tensors(r); i++) {
			const struct tfm_gguf_tensor *t = tfm_gguf_tensor(r, i);
			const struct tfm_type_info *ti = tfm_type_info(t->type);
			snprintf(name, sizeof name, "t%d", t->type);
			bad += !ti || strcmp(t->name, name) || t->nbytes != 2 * ti->size ||
			       t->ne[0] != ti->blck || t->ne[1] != 2;
		}
		CHECK_MSG(bad == 0, "%d tensors wrong", bad);
		tfm_gguf_free(r);
	}
	tfm_blob_close(&b);
	tfm_gguf_free(g);
	free(path); free(dir);
}

/* A zstd-compressed GGUF reads like the plain one (tfm_blob_open). */
static void t_zstd_input(void)
{
	struct tfm_gguf *g, *r = NULL;
	float x[4] = { 1, 2, 3, 4 };
	int64_t ne[1] = { 4 };
	CHECK_OK(tfm_gguf_new(&g));
	CHECK_OK(tfm_gguf_set_str(g, "general.architecture", "test"));
	CHECK_OK(tfm_gguf_add_tensor(g, "x", TFM_TYPE_F32, 1, ne, x, NULL, NULL));
	char *dir = t_tmpdir(), *path = t_path("%s/z.gguf.zst", dir);
	struct tfm_out *o;
	CHECK_OK(tfm_out_open(&o, path, 1));
	CHECK_OK(tfm_gguf_write(g, o));
	CHECK_OK(tfm_out_commit(o));
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, path));
	CHECK_OK(tfm_gguf_parse(&r, b.data, b.size, path));
	if (r) {
		const struct tfm_gguf_tensor *t = tfm_gguf_find_tensor(r, "x");
		CHECK(t && !memcmp(t->data, x, 16));
		tfm_gguf_free(r);
	}
	tfm_blob_close(&b);
	/* the probe knows it from the first bytes, compressed or not */
	CHECK(tfm_gguf_probe(path) == 1);
	char *plain = t_path("%s/p.gguf", dir), *txt = t_path("%s/t.txt", dir);
	CHECK_OK(tfm_out_open(&o, plain, 0));
	CHECK_OK(tfm_gguf_write(g, o));
	CHECK_OK(tfm_out_commit(o));
	CHECK(tfm_gguf_probe(plain) == 1);
	CHECK(t_write_file(txt, "not a model", 11) == 0);
	CHECK(tfm_gguf_probe(txt) == 0);
	CHECK(tfm_gguf_probe("-") == 1); /* stdin: read whole, GGUF or nothing */
	CHECK(tfm_gguf_probe("/nonexistent/x.gguf") == TFM_E_OPEN);
	tfm_gguf_free(g);
	free(path); free(plain); free(txt); free(dir);
}

/* ---- llama.cpp's vocab-only files ---- */

static void t_vocab_files(void)
{
	/* Expected values read with the Python gguf package (gguf 0.19.0, PyPI):
	 * GGUFReader(path).fields: 22 keys (25 fields less the 3 header ones),
	 * no tensors; contents() of the keys below.  The file is 723869 bytes and
	 * ends before the padded data offset (723872). */
	char *p = t_path("%s/tokenizers/llama.cpp-vocab/ggml-vocab-llama-spm.gguf", t_shared());
	struct tfm_blob b;
	struct tfm_gguf *g = NULL;
	CHECK_OK(tfm_blob_open(&b, p));
	CHECK(b.size == 723869);
	CHECK_OK(tfm_gguf_parse(&g, b.data, b.size, p));
	if (g) {
		const char *s;
		size_t len;
		int64_t v;
		float sc[32000];
		CHECK(tfm_gguf_version(g) == 3);
		CHECK(tfm_gguf_n_kv(g) == 22 && tfm_gguf_n_tensors(g) == 0);
		CHECK(!strcmp(tfm_gguf_get_str_or(g, "general.architecture", ""), "llama"));
		CHECK(!strcmp(tfm_gguf_get_str_or(g, "general.name", ""), "llama-spm"));
		CHECK(!strcmp(tfm_gguf_get_str_or(g, "tokenizer.ggml.model", ""), "llama"));
		int64_t i = tfm_gguf_find(g, "tokenizer.ggml.tokens");
		CHECK(tfm_gguf_arr_type(g, i) == TFM_GGUF_STRING && tfm_gguf_arr_n(g, i) == 32000);
		CHECK_OK(tfm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 0, &s, &len));
		CHECK(!strcmp(s, "<unk>"));
		CHECK_OK(tfm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 1000, &s, &len));
		CHECK(!strcmp(s, "ied"));
		CHECK_OK(tfm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 31999, &s, &len));
		CHECK(!strcmp(s, "\xe7\xbb\x99") && len == 3); /* U+7ED9 */
		CHECK_OK(tfm_gguf_get_arr_f32(g, "tokenizer.ggml.scores", sc, 32000));
		CHECK(sc[1000] == -741.0f);
		CHECK_OK(tfm_gguf_get_int(g, "tokenizer.ggml.bos_token_id", &v)); CHECK(v == 1);
		CHECK_OK(tfm_gguf_get_int(g, "tokenizer.ggml.eos_token_id", &v)); CHECK(v == 2);
		CHECK_OK(tfm_gguf_get_int(g, "llama.context_length", &v)); CHECK(v == 4096);
		CHECK(tfm_gguf_get_int_or(g, "tokenizer.ggml.add_bos_token", 0) == 1);
		CHECK(tfm_gguf_get_float_or(g, "llama.attention.layer_norm_rms_epsilon", 0) ==
		      (double)1e-5f);
		int et;
		int64_t n;
		const void *d;
		CHECK_OK(tfm_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, &d));
		CHECK(et == TFM_GGUF_INT32 && n == 32000);
		CHECK(((const int32_t *)d)[3] == 6);
		tfm_gguf_free(g);
	}
	tfm_blob_close(&b);
	free(p);
	/* the other two: key counts, architecture and vocab size as above */
	static const struct { const char *f, *arch; int64_t n_kv, n_tok; } o[] = {
		{ "gpt-2", "gpt2", 16, 50257 }, { "bert-bge", "bert", 20, 30522 },
	};
	for (int k = 0; k < 2; k++) {
		p = t_path("%s/tokenizers/llama.cpp-vocab/ggml-vocab-%s.gguf", t_shared(), o[k].f);
		g = NULL;
		CHECK_OK(tfm_blob_open(&b, p));
		CHECK_OK(tfm_gguf_parse(&g, b.data, b.size, p));
		if (g) {
			CHECK(tfm_gguf_n_kv(g) == o[k].n_kv);
			CHECK(!strcmp(tfm_gguf_get_str_or(g, "general.architecture", ""), o[k].arch));
			CHECK(tfm_gguf_arr_n(g, tfm_gguf_find(g, "tokenizer.ggml.tokens")) == o[k].n_tok);
			tfm_gguf_free(g);
		}
		tfm_blob_close(&b);
		free(p);
	}
}

static const struct t_case t_cases[] = {
	{ "dtype_table", t_dtype_table },
	{ "dtype_plain", t_dtype_plain },
	{ "dtype_blocks", t_dtype_blocks },
	{ "kv_roundtrip", t_kv_roundtrip },
	{ "byte_exact", t_byte_exact },
	{ "tensors_align32", t_tensors_align32 },
	{ "tensors_align64", t_tensors_align64 },
	{ "tensors_align8", t_tensors_align8 },
	{ "corrupt_truncated", t_corrupt_truncated },
	{ "corrupt_header", t_corrupt_header },
	{ "corrupt_kv", t_corrupt_kv },
	{ "corrupt_tensor", t_corrupt_tensor },
	{ "corrupt_nesting", t_corrupt_nesting },
	{ "corrupt_random", t_corrupt_random },
	{ "all_types", t_all_types },
	{ "zstd_input", t_zstd_input },
	{ "vocab_files", t_vocab_files },
};

T_MAIN(t_cases)
