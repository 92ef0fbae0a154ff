/* test_core.c: status/error text, number parsing, half conversions, blob
 * input (file, zstd), atomic output, the thread pool. */
#include "t.h"

#include <stdatomic.h>
#include <unistd.h>

static void t_errors(void)
{
	CHECK(tfm_seterr(TFM_E_FORMAT, "%s: bad magic", "x.gguf") == TFM_E_FORMAT);
	CHECK(!strcmp(tfm_errmsg(), "x.gguf: bad magic"));
	tfm_adderr(TFM_E_FORMAT, "ctx");
	CHECK(!strcmp(tfm_errmsg(), "ctx: x.gguf: bad magic"));
	CHECK(tfm_exit_code(TFM_E_FORMAT) == 65);
	CHECK(tfm_exit_code(TFM_E_UNSUPPORTED) == 65);
	CHECK(tfm_exit_code(TFM_E_OPEN) == 66);
	CHECK(tfm_exit_code(TFM_E_CREATE) == 73);
	CHECK(tfm_exit_code(TFM_E_DEVICE) == 69);
	CHECK(tfm_exit_code(TFM_E_INVAL) == 64);
}

static void t_parse(void)
{
	int64_t v;
	double d;
	CHECK_OK(tfm_parse_i64("42", 0, 100, &v));
	CHECK(v == 42);
	CHECK_ST(tfm_parse_i64("101", 0, 100, &v), TFM_E_INVAL);
	CHECK_ST(tfm_parse_i64("4x", 0, 100, &v), TFM_E_INVAL);
	CHECK_ST(tfm_parse_i64("", 0, 100, &v), TFM_E_INVAL);
	CHECK_OK(tfm_parse_f64("0.5", 0, 1, &d));
	CHECK(d == 0.5);
	CHECK_ST(tfm_parse_f64("nan", 0, 1, &d), TFM_E_INVAL);
}

static void t_half(void)
{
	/* known encodings */
	CHECK(tfm_f32_to_f16(1.0f) == 0x3c00);
	CHECK(tfm_f32_to_f16(-2.0f) == 0xc000);
	CHECK(tfm_f32_to_f16(65504.0f) == 0x7bff);
	CHECK(tfm_f32_to_f16(65520.0f) == 0x7c00);
	CHECK(tfm_f32_to_f16(5.9604645e-8f) == 0x0001);
	CHECK(tfm_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00); /* tie to even */
	CHECK(tfm_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);
	CHECK(tfm_f16_to_f32(0x3555) == 0.333251953125f);
	CHECK(tfm_f16_to_f32(0x0001) == 5.9604645e-8f);
	CHECK(isinf(tfm_f16_to_f32(0x7c00)));
	CHECK(isnan(tfm_f16_to_f32(0x7e00)));
	/* every finite half round-trips */
	int bad = 0;
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00)
			continue;
		if (tfm_f32_to_f16(tfm_f16_to_f32((uint16_t)h)) != h)
			bad++;
	}
	CHECK_MSG(bad == 0, "%d halves did not round-trip", bad);
	CHECK(tfm_f32_to_bf16(1.0f) == 0x3f80);
	CHECK(tfm_bf16_to_f32(0x3f80) == 1.0f);
	CHECK(tfm_f32_to_bf16(1.00390625f) == 0x3f80); /* tie to even */
	CHECK(tfm_f32_to_bf16(1.01171875f) == 0x3f82);
}

static void t_blob_and_out(void)
{
	char *dir = t_tmpdir();
	char *p = t_path("%s/a.bin", dir), *pz = t_path("%s/a.bin.zst", dir);
	struct tfm_out *o;
	CHECK_OK(tfm_out_open(&o, p, 0));
	CHECK_OK(tfm_out_write(o, "hello ", 6));
	CHECK_OK(tfm_out_printf(o, "%s %d", "world", 7));
	/* nothing at the final path before commit */
	CHECK(access(p, F_OK) != 0);
	CHECK_OK(tfm_out_commit(o));
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, p));
	CHECK(b.size == 13 && !memcmp(b.data, "hello world 7", 13));
	tfm_blob_close(&b);

	/* zstd output, transparently decompressed on input */
	CHECK_OK(tfm_out_open(&o, pz, 1));
	static char big[3 << 20];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 7 % 251);
	CHECK_OK(tfm_out_write(o, big, sizeof big));
	CHECK_OK(tfm_out_commit(o));
	CHECK_OK(tfm_blob_open(&b, pz));
	CHECK(b.size == sizeof big && !memcmp(b.data, big, sizeof big));
	tfm_blob_close(&b);

	/* abort leaves nothing behind */
	char *pa = t_path("%s/aborted", dir);
	CHECK_OK(tfm_out_open(&o, pa, 0));
	tfm_out_write(o, "x", 1);
	tfm_out_abort(o);
	CHECK(access(pa, F_OK) != 0);

	/* peeking: the first bytes as tfm_blob_open gives them, zstd or not */
	uint8_t head[16];
	size_t got;
	CHECK_OK(tfm_input_peek(p, head, 5, &got));
	CHECK(got == 5 && !memcmp(head, "hello", 5));
	CHECK_OK(tfm_input_peek(p, head, 16, &got));
	CHECK(got == 13 && !memcmp(head, "hello world 7", 13)); /* shorter input */
	CHECK_OK(tfm_input_peek(pz, head, 16, &got));
	CHECK(got == 16 && !memcmp(head, big, 16));
	CHECK_ST(tfm_input_peek("-", head, 4, &got), TFM_E_INVAL);
	/* a pipe can be read once: refused, its bytes left for the reader */
	int fds[2];
	CHECK(pipe(fds) == 0);
	CHECK(write(fds[1], "GGUF", 4) == 4);
	char *pp = t_path("/proc/self/fd/%d", fds[0]);
	CHECK_ST(tfm_input_peek(pp, head, 4, &got), TFM_E_INVAL);
	CHECK(tfm_gguf_probe(pp) == 1); /* read it whole, as a GGUF */
	CHECK(read(fds[0], head, 4) == 4 && !memcmp(head, "GGUF", 4));
	close(fds[0]), close(fds[1]), free(pp);
	CHECK_ST(tfm_input_peek("/nonexistent/file", head, 4, &got), TFM_E_OPEN);
	CHECK_ST(tfm_input_peek(dir, head, 4, &got), TFM_E_OPEN);
	CHECK_ST(tfm_blob_open(&b, "/nonexistent/file"), TFM_E_OPEN);
	CHECK_ST(tfm_blob_open(&b, dir), TFM_E_OPEN);
	free(p), free(pz), free(pa), free(dir);
}

static void t_grow(void)
{
	int32_t *v = NULL;
	int64_t cap = 0;
	CHECK_OK(tfm_grow((void **)&v, &cap, 1, sizeof *v));
	CHECK(cap == 16);
	v[0] = 7;
	CHECK_OK(tfm_grow((void **)&v, &cap, 100, sizeof *v));
	CHECK(cap == 128 && v[0] == 7);
	int zero = 1;
	for (int i = 1; i < 128; i++)
		zero &= v[i] == 0;
	CHECK(zero); /* new elements are zeroed */
	CHECK_OK(tfm_grow((void **)&v, &cap, 50, sizeof *v)); /* no shrink */
	CHECK(cap == 128);
	/* a count whose bytes overflow size_t is refused, nothing changed */
	CHECK_ST(tfm_grow((void **)&v, &cap, (int64_t)1 << 62, 16), TFM_E_NOMEM);
	CHECK(cap == 128 && v[0] == 7);
	free(v);
}

static atomic_int hits[1000];
static void bump(void *ctx, int i, int n) { atomic_fetch_add(&hits[i], 1); }

static void t_pool(void)
{
	struct tfm_pool *p;
	CHECK_OK(tfm_pool_new(&p, 3));
	for (int r = 0; r < 50; r++)
		tfm_pool_run(p, bump, NULL, 1000);
	int bad = 0;
	for (int i = 0; i < 1000; i++)
		bad += hits[i] != 50;
	CHECK(bad == 0);
	tfm_pool_free(p);
}

/* Sizes for --mem-limit, the limit's sources and the expansion cap. */
static void t_limits(void)
{
	int64_t v;
	CHECK_OK(tfm_mem_parse_size("8G", &v));
	CHECK(v == 8LL << 30);
	CHECK_OK(tfm_mem_parse_size("1.5MiB", &v));
	CHECK(v == 3LL << 19);
	CHECK_OK(tfm_mem_parse_size("100k", &v));
	CHECK(v == 102400);
	CHECK_OK(tfm_mem_parse_size("123", &v));
	CHECK(v == 123);
	CHECK_OK(tfm_mem_parse_size("none", &v));
	CHECK(v == 0);
	const char *bad[] = { "", "-1", "8X", "G", "nan", "inf", "1e30", "8GG" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_ST(tfm_mem_parse_size(bad[i], &v), TFM_E_INVAL);
	const char *src;
	setenv("TFM_MEM_LIMIT", "2M", 1);
	CHECK(tfm_mem_limit(&src) == 2 << 20 && !strcmp(src, "TFM_MEM_LIMIT"));
	CHECK_OK(tfm_mem_check(2 << 20, "x"));
	CHECK_ST(tfm_mem_check((2 << 20) + 1, "a test of %d", 1), TFM_E_NOMEM);
	CHECK(strstr(tfm_errmsg(), "a test of 1 needs 2.0 MiB, more than the TFM_MEM_LIMIT of 2.0 MiB"));
	CHECK_OK(tfm_mem_set_limit("none"));
	CHECK(tfm_mem_limit(&src) == 0 && !strcmp(src, "--mem-limit"));
	CHECK_OK(tfm_mem_check(1e30, "anything"));
	unsetenv("TFM_MEM_LIMIT");
	CHECK(tfm_expand_cap(1) == 256LL << 20);          /* the floor */
	CHECK(tfm_expand_cap(1LL << 30) == 1000LL << 30); /* 1000x */
	CHECK_ST(tfm_expand_check(1LL << 30, 1001LL << 30, "f"), TFM_E_FORMAT);
	setenv("TFM_EXPAND_RATIO", "0", 1);
	CHECK(tfm_expand_cap(1) == INT64_MAX);
	CHECK_OK(tfm_expand_check(1, 1LL << 40, "f"));
	unsetenv("TFM_EXPAND_RATIO");
}

static const struct t_case t_cases[] = {
	{ "errors", t_errors }, { "parse", t_parse }, { "half", t_half },
	{ "blob_and_out", t_blob_and_out }, { "grow", t_grow }, { "pool", t_pool },
	{ "limits", t_limits },
};
T_MAIN(t_cases)
