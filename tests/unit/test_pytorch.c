/* test_pytorch.c: PyTorch zip checkpoints and the restricted unpickler:
 * hand-assembled pickles (checked with CPython's unpickler when written),
 * goldens pickled by CPython's pickle module, torch's stored and aligned zip
 * layout read in place, other zips through libarchive, malicious pickles. */
#include "t.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

/* A uint16_t of tensor data, which need not be 2-byte aligned. */
static uint16_t u16_at(const void *p, size_t i)
{
	uint16_t v;
	memcpy(&v, (const char *)p + 2 * i, 2);
	return v;
}

static const char CONFIG[] = "{\"model_type\":\"llama\",\"hidden_size\":3,\"num_hidden_layers\":1}";

static void put(const char *dir, const char *name, const void *d, size_t n)
{
	char *p = t_path("%s/%s", dir, name);
	CHECK(!t_write_file(p, d, n));
	free(p);
}

struct pkb {
	uint8_t b[4096];
	size_t n;
};

static void op(struct pkb *p, int o) { p->b[p->n++] = (uint8_t)o; }

/* SHORT_BINUNICODE (0x8c) len, bytes */
static void ustr(struct pkb *p, const char *s)
{
	op(p, 0x8c);
	op(p, (int)strlen(s));
	memcpy(p->b + p->n, s, strlen(s));
	p->n += strlen(s);
}

/* BININT1 (0x4b 'K') for 0..255 */
static void int1(struct pkb *p, int v) { op(p, 'K'); op(p, v); }

/* GLOBAL (0x63 'c') "module\nname\n" */
static void glob(struct pkb *p, const char *mod, const char *name)
{
	op(p, 'c');
	p->n += (size_t)sprintf((char *)p->b + p->n, "%s\n%s\n", mod, name);
}

/* The argument tuple of _rebuild_tensor_v2: (BINPERSID ('storage',
 * torch.<stype>, skey, 'cpu', numel), offset, size, stride, False,
 * OrderedDict()) */
static void tensor_args(struct pkb *p, const char *stype, const char *skey, int numel,
			int offset, int nd, const int *size, const int *stride)
{
	op(p, '(');                      /* MARK: the argument tuple */
	op(p, '(');                      /* MARK: the persistent id tuple */
	ustr(p, "storage");
	glob(p, "torch", stype);
	ustr(p, skey);
	ustr(p, "cpu");
	int1(p, numel);
	op(p, 't');                      /* TUPLE */
	op(p, 'Q');                      /* BINPERSID */
	int1(p, offset);                 /* storage_offset */
	op(p, '(');
	for (int i = 0; i < nd; i++)
		int1(p, size[i]);
	op(p, 't');                      /* size tuple */
	op(p, '(');
	for (int i = 0; i < nd; i++)
		int1(p, stride[i]);
	op(p, 't');                      /* stride tuple */
	op(p, 0x89);                     /* NEWFALSE: requires_grad */
	glob(p, "collections", "OrderedDict");
	op(p, ')');                      /* EMPTY_TUPLE */
	op(p, 'R');                      /* REDUCE: backward_hooks = OrderedDict() */
	op(p, 't');                      /* TUPLE: the arguments */
}

/* key: torch._utils._rebuild_tensor_v2(args) */
static void tensor_entry(struct pkb *p, const char *key, const char *stype, const char *skey,
			 int numel, int offset, int nd, const int *size, const int *stride)
{
	ustr(p, key);
	glob(p, "torch._utils", "_rebuild_tensor_v2");
	tensor_args(p, stype, skey, numel, offset, nd, size, stride);
	op(p, 'R');                      /* REDUCE: the tensor */
	op(p, 'q');                      /* BINPUT (memoize it, as torch does) */
	op(p, (int)(p->n & 0x7f));
}

/* {"a.weight": f32 [2,3] from storage "0" (6 floats),
 *  "b.bias": f16 [3] from storage "1" (5 halves) at offset 2} */
static void state_dict_pickle(struct pkb *p, const int *a_stride)
{
	static const int asz[2] = { 2, 3 }, bsz[1] = { 3 }, bst[1] = { 1 };
	p->n = 0;
	op(p, 0x80); op(p, 2);           /* PROTO 2 */
	glob(p, "collections", "OrderedDict");
	op(p, 'q'); op(p, 0);            /* BINPUT 0 */
	op(p, ')');                      /* EMPTY_TUPLE */
	op(p, 'R');                      /* REDUCE: OrderedDict() */
	op(p, 'q'); op(p, 1);            /* BINPUT 1 */
	op(p, '(');                      /* MARK: the items */
	tensor_entry(p, "a.weight", "FloatStorage", "0", 6, 0, 2, asz, a_stride);
	tensor_entry(p, "b.bias", "HalfStorage", "1", 5, 2, 1, bsz, bst);
	op(p, 'u');                      /* SETITEMS */
	op(p, '}');                      /* EMPTY_DICT: state for BUILD (_metadata) */
	op(p, 'b');                      /* BUILD */
	op(p, '.');                      /* STOP */
}

static const float PA[6] = { 1.5f, -2, 3, 4, 5, -6.25f };
static const uint16_t PB[5] = { 0x1111, 0x2222, 0x3c00, 0x4000, 0xbc00 }; /* -, -, 1, 2, -1 */

static int write_zip(const char *path, const struct pkb *pkl, int stored)
{
	struct { const char *name; const void *d; size_t n; } m[] = {
		{ "archive/data.pkl", pkl->b, pkl->n },
		{ "archive/byteorder", "little", 6 },
		{ "archive/data/0", PA, sizeof PA },
		{ "archive/data/1", PB, sizeof PB },
		{ "archive/version", "3\n", 2 },
	};
	struct archive *a = archive_write_new();
	archive_write_set_format_zip(a);
	if (stored)  /* torch writes its zips uncompressed */
		archive_write_zip_set_compression_store(a);
	if (archive_write_open_filename(a, path) != ARCHIVE_OK)
		return -1;
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, (la_int64_t)m[i].n);
		archive_write_header(a, e);
		archive_write_data(a, m[i].d, m[i].n);
		archive_entry_free(e);
	}
	int r = archive_write_close(a);
	archive_write_free(a);
	return r == ARCHIVE_OK ? 0 : -1;
}

static void check_pt(struct tfm_ckpt *c)
{
	const struct tfm_ckpt_tensor *a = tfm_ckpt_find(c, "a.weight"),
		*b = tfm_ckpt_find(c, "b.bias");
	CHECK(c->n_tensors == 2 && a && b);
	if (!a || !b)
		return;
	CHECK(a->type == TFM_TYPE_F32 && a->n_dims == 2 && a->ne[0] == 3 && a->ne[1] == 2);
	CHECK(!memcmp(a->data, PA, sizeof PA));
	CHECK(b->type == TFM_TYPE_F16 && b->n_dims == 1 && b->ne[0] == 3 && b->nbytes == 6);
	const void *h = b->data;  /* elements 2..4 of the storage */
	CHECK(tfm_f16_to_f32(u16_at(h, 0)) == 1.0f && tfm_f16_to_f32(u16_at(h, 1)) == 2.0f &&
	      tfm_f16_to_f32(u16_at(h, 2)) == -1.0f);
}

/* A zip written the way torch writes them: stored entries, each one's data
 * aligned to 64 bytes by padding in the local header's extra field. */
static uint32_t crc32_ref(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

static void le16(uint8_t *p, size_t *o, unsigned v) { p[(*o)++] = v & 255; p[(*o)++] = v >> 8; }
static void le32(uint8_t *p, size_t *o, uint32_t v) { le16(p, o, v & 0xffff); le16(p, o, v >> 16); }

static int write_torch_zip(const char *path, const struct pkb *pkl)
{
	struct { const char *name; const void *d; size_t n; } m[] = {
		{ "archive/data.pkl", pkl->b, pkl->n },
		{ "archive/byteorder", "little", 6 },
		{ "archive/data/0", PA, sizeof PA },
		{ "archive/data/1", PB, sizeof PB },
		{ "archive/version", "3\n", 2 },
	};
	enum { NM = sizeof m / sizeof m[0] };
	static uint8_t z[16384];
	size_t o = 0, loff[NM];
	for (int i = 0; i < NM; i++) {
		size_t nl = strlen(m[i].name), el = 4 + (64 - (o + 30 + nl + 4) % 64) % 64;
		uint32_t crc = crc32_ref(m[i].d, m[i].n);
		loff[i] = o;
		le32(z, &o, 0x04034b50u);             /* local file header */
		le16(z, &o, 20);                      /* version needed */
		le16(z, &o, 0);                       /* flags */
		le16(z, &o, 0);                       /* method: stored */
		le16(z, &o, 0);                       /* time */
		le16(z, &o, 0x21);                    /* date: 1980-01-01 */
		le32(z, &o, crc);
		le32(z, &o, (uint32_t)m[i].n);        /* compressed size */
		le32(z, &o, (uint32_t)m[i].n);        /* size */
		le16(z, &o, (unsigned)nl);
		le16(z, &o, (unsigned)el);
		memcpy(z + o, m[i].name, nl);
		o += nl;
		le16(z, &o, 0x4246);                  /* "FB": padding, as torch */
		le16(z, &o, (unsigned)(el - 4));
		memset(z + o, 'Z', el - 4);
		o += el - 4;
		memcpy(z + o, m[i].d, m[i].n);        /* data, 64-byte aligned */
		o += m[i].n;
	}
	size_t cd = o;
	for (int i = 0; i < NM; i++) {
		size_t nl = strlen(m[i].name);
		le32(z, &o, 0x02014b50u);             /* central directory entry */
		le16(z, &o, 20);                      /* made by */
		le16(z, &o, 20);                      /* needed */
		le16(z, &o, 0);
		le16(z, &o, 0);
		le16(z, &o, 0);
		le16(z, &o, 0x21);
		le32(z, &o, crc32_ref(m[i].d, m[i].n));
		le32(z, &o, (uint32_t)m[i].n);
		le32(z, &o, (uint32_t)m[i].n);
		le16(z, &o, (unsigned)nl);
		le16(z, &o, 0);                       /* extra */
		le16(z, &o, 0);                       /* comment */
		le16(z, &o, 0);                       /* disk */
		le16(z, &o, 0);                       /* internal attributes */
		le32(z, &o, 0);                       /* external attributes */
		le32(z, &o, (uint32_t)loff[i]);
		memcpy(z + o, m[i].name, nl);
		o += nl;
	}
	size_t cdsize = o - cd;
	le32(z, &o, 0x06054b50u);                     /* end of central directory */
	le16(z, &o, 0);
	le16(z, &o, 0);
	le16(z, &o, NM);
	le16(z, &o, NM);
	le32(z, &o, (uint32_t)cdsize);
	le32(z, &o, (uint32_t)cd);
	le16(z, &o, 0);
	return t_write_file(path, z, o);
}

/* torch's layout is read in place (nothing copied); other zips are copied */
static void t_pytorch_inplace(void)
{
	static const int contig[2] = { 3, 1 };
	char *tmp = t_tmpdir(), *p = t_path("%s/torch.pt", tmp);
	struct pkb pk;
	struct tfm_ckpt *c;
	state_dict_pickle(&pk, contig);
	CHECK(!write_torch_zip(p, &pk));
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c) {
		check_pt(c);
		CHECK(c->bytes_copied == 0);
		const struct tfm_ckpt_tensor *a = tfm_ckpt_find(c, "a.weight");
		CHECK(a && ((uintptr_t)a->data & 63) == 0);  /* the mapped, aligned record */
	}
	tfm_ckpt_close(c);
	/* the same file through libarchive's reader gives the same members */
	struct tfm_blob b;
	CHECK_OK(tfm_blob_open(&b, p));
	struct archive *ar = archive_read_new();
	archive_read_support_format_zip(ar);
	CHECK(archive_read_open_memory(ar, b.data, b.size) == ARCHIVE_OK);
	struct archive_entry *e;
	int nent = 0;
	uint8_t buf[256];
	while (archive_read_next_header(ar, &e) == ARCHIVE_OK) {
		la_ssize_t r = archive_read_data(ar, buf, sizeof buf);
		if (!strcmp(archive_entry_pathname(e), "archive/data/0"))
			CHECK(r == sizeof PA && !memcmp(buf, PA, sizeof PA));
		nent++;
	}
	CHECK(nent == 5);
	archive_read_free(ar);
	tfm_blob_close(&b);
	/* a deflated zip cannot be mapped: its storages are copied */
	CHECK(!write_zip(p, &pk, 0));
	CHECK_OK(tfm_ckpt_open(&c, p, NULL));
	if (c) {
		check_pt(c);
		CHECK(c->bytes_copied >= sizeof PA + sizeof PB);
	}
	tfm_ckpt_close(c);
	free(p);
	free(tmp);
}

static void t_pytorch(void)
{
	char *tmp = t_tmpdir(), *p = t_path("%s/pytorch_model.bin", tmp);
	static const int contig[2] = { 3, 1 }, transposed[2] = { 1, 2 };
	struct pkb pk;
	struct tfm_ckpt *c;
	state_dict_pickle(&pk, contig);
	CHECK_OK(tfm_pickle_check(pk.b, pk.n, "data.pkl"));
	for (int stored = 0; stored < 2; stored++) {
		CHECK(!write_zip(p, &pk, stored));
		CHECK_OK(tfm_ckpt_open(&c, p, NULL));
		if (c) {
			CHECK(!strcmp(c->format, "pytorch"));
			check_pt(c);
		}
		tfm_ckpt_close(c);
	}
	/* the same .bin inside a Hugging Face directory */
	put(tmp, "config.json", CONFIG, strlen(CONFIG));
	CHECK_OK(tfm_ckpt_open(&c, tmp, NULL));
	if (c) {
		CHECK(!strcmp(c->format, "hf-dir") && json_is_object(c->config));
		check_pt(c);
	}
	tfm_ckpt_close(c);

	/* a float8 weight is unsupported, by name; an int64 buffer is skipped */
	{
		static const int sz[1] = { 3 }, sd[1] = { 1 };
		struct pkb q;
		q.n = 0;
		op(&q, 0x80); op(&q, 2);
		op(&q, '}');
		op(&q, '(');
		tensor_entry(&q, "embeddings.position_ids", "LongStorage", "0", 3, 0, 1, sz, sd);
		tensor_entry(&q, "a.weight", "FloatStorage", "0", 6, 0, 2,
			     (const int[2]){ 2, 3 }, contig);
		op(&q, 'u');
		op(&q, '.');
		CHECK(!write_zip(p, &q, 1));
		CHECK_OK(tfm_ckpt_open(&c, p, NULL));
		if (c)
			CHECK(c->n_tensors == 1 && tfm_ckpt_find(c, "a.weight"));
		tfm_ckpt_close(c);
		q.n = 0;
		op(&q, 0x80); op(&q, 2);
		op(&q, '}');
		tensor_entry(&q, "q.weight", "Float8_e4m3fnStorage", "0", 3, 0, 1, sz, sd);
		op(&q, 's');
		op(&q, '.');
		CHECK(!write_zip(p, &q, 1));
		CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_UNSUPPORTED);
		CHECK(strstr(tfm_errmsg(), "q.weight") && strstr(tfm_errmsg(), "Float8_e4m3fn"));
	}
	/* a sharded pytorch_model.bin.index.json */
	{
		char *sd = t_path("%s/binshards", tmp), *sp = t_path("%s/pytorch_model-00001-of-00001.bin", sd);
		mkdir(sd, 0755);
		state_dict_pickle(&pk, contig);
		CHECK(!write_zip(sp, &pk, 1));
		put(sd, "config.json", CONFIG, strlen(CONFIG));
		static const char ix[] = "{\"weight_map\":{"
			"\"a.weight\":\"pytorch_model-00001-of-00001.bin\","
			"\"b.bias\":\"pytorch_model-00001-of-00001.bin\"}}";
		put(sd, "pytorch_model.bin.index.json", ix, strlen(ix));
		CHECK_OK(tfm_ckpt_open(&c, sd, NULL));
		if (c)
			check_pt(c);
		tfm_ckpt_close(c);
		free(sp);
		free(sd);
	}
	/* a transposed (non-contiguous) view */
	state_dict_pickle(&pk, transposed);
	CHECK(!write_zip(p, &pk, 1));
	CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_UNSUPPORTED);
	CHECK(strstr(tfm_errmsg(), "contiguous") && strstr(tfm_errmsg(), "a.weight"));

	/* a tensor running past its storage: b.bias at offset 2 with 5 elements
	 * needs 7 of the 5 written */
	state_dict_pickle(&pk, contig);
	uint8_t *q = memmem(pk.b, pk.n, "\x4b\x02(\x4b\x03t", 6);  /* offset 2, size (3,) */
	CHECK(q != NULL);
	if (q) {
		q[4] = 5;
		CHECK(!write_zip(p, &pk, 1));
		CHECK_ST(tfm_ckpt_open(&c, p, NULL), TFM_E_FORMAT);
		CHECK(strstr(tfm_errmsg(), "b.bias") != NULL);
	}
	free(p);
	free(tmp);
}

/* A state dict pickled by CPython's own pickle module (protocol 2, as
 * torch.save uses) with stand-ins for torch's globals, a persistent_id
 * returning ('storage', torch.FloatStorage, key, 'cpu', numel) and tensors
 * reducing to torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
 * False, OrderedDict()), as Tensor.__reduce_ex__ does.  It holds a.weight
 * (storage "0", [2,3]), b.bias (storage "1", offset 2, [3]), tied.weight
 * (storage "0" again) and _metadata set with BUILD.  Python's memo makes it
 * reuse objects with BINGET where the hand-made pickle above does not. */
static const uint8_t cpython_pickle[] = {
	0x80, 0x02, 0x63, 0x63, 0x6f, 0x6c, 0x6c, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x0a, 0x4f,
	0x72, 0x64, 0x65, 0x72, 0x65, 0x64, 0x44, 0x69, 0x63, 0x74, 0x0a, 0x71, 0x00, 0x29, 0x52, 0x71,
	0x01, 0x28, 0x58, 0x08, 0x00, 0x00, 0x00, 0x61, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x71,
	0x02, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2e, 0x5f, 0x75, 0x74, 0x69, 0x6c, 0x73, 0x0a, 0x5f,
	0x72, 0x65, 0x62, 0x75, 0x69, 0x6c, 0x64, 0x5f, 0x74, 0x65, 0x6e, 0x73, 0x6f, 0x72, 0x5f, 0x76,
	0x32, 0x0a, 0x71, 0x03, 0x28, 0x28, 0x58, 0x07, 0x00, 0x00, 0x00, 0x73, 0x74, 0x6f, 0x72, 0x61,
	0x67, 0x65, 0x71, 0x04, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x46, 0x6c, 0x6f, 0x61, 0x74,
	0x53, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x0a, 0x71, 0x05, 0x58, 0x01, 0x00, 0x00, 0x00, 0x30,
	0x71, 0x06, 0x58, 0x03, 0x00, 0x00, 0x00, 0x63, 0x70, 0x75, 0x71, 0x07, 0x4b, 0x06, 0x74, 0x71,
	0x08, 0x51, 0x4b, 0x00, 0x4b, 0x02, 0x4b, 0x03, 0x86, 0x71, 0x09, 0x4b, 0x03, 0x4b, 0x01, 0x86,
	0x71, 0x0a, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x0b, 0x74, 0x71, 0x0c, 0x52, 0x71, 0x0d, 0x58,
	0x06, 0x00, 0x00, 0x00, 0x62, 0x2e, 0x62, 0x69, 0x61, 0x73, 0x71, 0x0e, 0x68, 0x03, 0x28, 0x28,
	0x68, 0x04, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x48, 0x61, 0x6c, 0x66, 0x53, 0x74, 0x6f,
	0x72, 0x61, 0x67, 0x65, 0x0a, 0x71, 0x0f, 0x58, 0x01, 0x00, 0x00, 0x00, 0x31, 0x71, 0x10, 0x68,
	0x07, 0x4b, 0x05, 0x74, 0x71, 0x11, 0x51, 0x4b, 0x02, 0x4b, 0x03, 0x85, 0x71, 0x12, 0x4b, 0x01,
	0x85, 0x71, 0x13, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x14, 0x74, 0x71, 0x15, 0x52, 0x71, 0x16,
	0x58, 0x0b, 0x00, 0x00, 0x00, 0x74, 0x69, 0x65, 0x64, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74,
	0x71, 0x17, 0x68, 0x03, 0x28, 0x28, 0x68, 0x04, 0x68, 0x05, 0x68, 0x06, 0x68, 0x07, 0x4b, 0x06,
	0x74, 0x71, 0x18, 0x51, 0x4b, 0x00, 0x68, 0x09, 0x68, 0x0a, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71,
	0x19, 0x74, 0x71, 0x1a, 0x52, 0x71, 0x1b, 0x75, 0x7d, 0x71, 0x1c, 0x58, 0x09, 0x00, 0x00, 0x00,
	0x5f, 0x6d, 0x65, 0x74, 0x61, 0x64, 0x61, 0x74, 0x61, 0x71, 0x1d, 0x68, 0x00, 0x29, 0x52, 0x71,
	0x1e, 0x28, 0x58, 0x00, 0x00, 0x00, 0x00, 0x71, 0x1f, 0x7d, 0x71, 0x20, 0x58, 0x07, 0x00, 0x00,
	0x00, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x71, 0x21, 0x4b, 0x01, 0x73, 0x58, 0x01, 0x00,
	0x00, 0x00, 0x61, 0x71, 0x22, 0x7d, 0x71, 0x23, 0x68, 0x21, 0x4b, 0x01, 0x73, 0x75, 0x73, 0x62,
	0x2e,
};

/* The same state dict pickled with protocol 4 (FRAME, STACK_GLOBAL,
 * SHORT_BINUNICODE, MEMOIZE), as torch.save(..., pickle_protocol=4) writes,
 * and with tied.weight saved as "_orig_mod.tied.weight" (torch.compile). */
static const uint8_t cpython_pickle4[] = {
	0x80, 0x04, 0x95, 0x4e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x8c, 0x0b, 0x63, 0x6f, 0x6c,
	0x6c, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x94, 0x8c, 0x0b, 0x4f, 0x72, 0x64, 0x65, 0x72,
	0x65, 0x64, 0x44, 0x69, 0x63, 0x74, 0x94, 0x93, 0x94, 0x29, 0x52, 0x94, 0x28, 0x8c, 0x08, 0x61,
	0x2e, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x94, 0x8c, 0x0c, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2e,
	0x5f, 0x75, 0x74, 0x69, 0x6c, 0x73, 0x94, 0x8c, 0x12, 0x5f, 0x72, 0x65, 0x62, 0x75, 0x69, 0x6c,
	0x64, 0x5f, 0x74, 0x65, 0x6e, 0x73, 0x6f, 0x72, 0x5f, 0x76, 0x32, 0x94, 0x93, 0x94, 0x28, 0x28,
	0x8c, 0x07, 0x73, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x94, 0x8c, 0x05, 0x74, 0x6f, 0x72, 0x63,
	0x68, 0x94, 0x8c, 0x0c, 0x46, 0x6c, 0x6f, 0x61, 0x74, 0x53, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65,
	0x94, 0x93, 0x94, 0x8c, 0x01, 0x30, 0x94, 0x8c, 0x03, 0x63, 0x70, 0x75, 0x94, 0x4b, 0x06, 0x74,
	0x94, 0x51, 0x4b, 0x00, 0x4b, 0x02, 0x4b, 0x03, 0x86, 0x94, 0x4b, 0x03, 0x4b, 0x01, 0x86, 0x94,
	0x89, 0x68, 0x02, 0x29, 0x52, 0x94, 0x74, 0x94, 0x52, 0x94, 0x8c, 0x06, 0x62, 0x2e, 0x62, 0x69,
	0x61, 0x73, 0x94, 0x68, 0x07, 0x28, 0x28, 0x68, 0x08, 0x68, 0x09, 0x8c, 0x0b, 0x48, 0x61, 0x6c,
	0x66, 0x53, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x94, 0x93, 0x94, 0x8c, 0x01, 0x31, 0x94, 0x68,
	0x0d, 0x4b, 0x05, 0x74, 0x94, 0x51, 0x4b, 0x02, 0x4b, 0x03, 0x85, 0x94, 0x4b, 0x01, 0x85, 0x94,
	0x89, 0x68, 0x02, 0x29, 0x52, 0x94, 0x74, 0x94, 0x52, 0x94, 0x8c, 0x15, 0x5f, 0x6f, 0x72, 0x69,
	0x67, 0x5f, 0x6d, 0x6f, 0x64, 0x2e, 0x74, 0x69, 0x65, 0x64, 0x2e, 0x77, 0x65, 0x69, 0x67, 0x68,
	0x74, 0x94, 0x68, 0x07, 0x28, 0x28, 0x68, 0x08, 0x68, 0x0b, 0x68, 0x0c, 0x68, 0x0d, 0x4b, 0x06,
	0x74, 0x94, 0x51, 0x4b, 0x00, 0x68, 0x0f, 0x68, 0x10, 0x89, 0x68, 0x02, 0x29, 0x52, 0x94, 0x74,
	0x94, 0x52, 0x94, 0x75, 0x7d, 0x94, 0x8c, 0x09, 0x5f, 0x6d, 0x65, 0x74, 0x61, 0x64, 0x61, 0x74,
	0x61, 0x94, 0x68, 0x02, 0x29, 0x52, 0x94, 0x28, 0x8c, 0x00, 0x94, 0x7d, 0x94, 0x8c, 0x07, 0x76,
	0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x94, 0x4b, 0x01, 0x73, 0x8c, 0x01, 0x61, 0x94, 0x7d, 0x94,
	0x68, 0x28, 0x4b, 0x01, 0x73, 0x75, 0x73, 0x62, 0x2e,
};

static void t_pytorch_cpython(void)
{
	char *tmp = t_tmpdir(), *p = t_path("%s/m.pt", tmp);
	for (int proto = 2; proto <= 4; proto += 2) {
		struct pkb pk;
		pk.n = proto == 2 ? sizeof cpython_pickle : sizeof cpython_pickle4;
		memcpy(pk.b, proto == 2 ? cpython_pickle : cpython_pickle4, pk.n);
		CHECK_OK(tfm_pickle_check(pk.b, pk.n, "data.pkl"));
		CHECK(!write_zip(p, &pk, 1));
		struct tfm_ckpt *c;
		CHECK_OK(tfm_ckpt_open(&c, p, NULL));
		if (c) {
			CHECK(c->n_tensors == 3);
			const struct tfm_ckpt_tensor *a = tfm_ckpt_find(c, "a.weight"),
				*t = tfm_ckpt_find(c, "tied.weight"), *b = tfm_ckpt_find(c, "b.bias");
			CHECK(a && t && b && a->data == t->data && t->ne[0] == 3 && t->ne[1] == 2);
			CHECK(t && !memcmp(t->data, PA, sizeof PA));
			CHECK(b && b->ne[0] == 3 && tfm_f16_to_f32(u16_at(b->data, 0)) == 1.0f);
		}
		tfm_ckpt_close(c);
	}
	free(p);
	free(tmp);
}

/* Parameters: _rebuild_parameter(tensor, True, OrderedDict()) and
 * _rebuild_from_type_v2(_rebuild_tensor_v2, Parameter, args, {}) */
static void t_pickle_parameter(void)
{
	static const int asz[2] = { 2, 3 }, ast[2] = { 3, 1 }, bsz[1] = { 3 }, bst[1] = { 1 };
	struct pkb p;
	p.n = 0;
	op(&p, 0x80); op(&p, 2);
	op(&p, '}');                     /* EMPTY_DICT */
	op(&p, '(');                     /* MARK */
	ustr(&p, "a.weight");
	glob(&p, "torch._utils", "_rebuild_parameter");
	op(&p, '(');
	glob(&p, "torch._utils", "_rebuild_tensor_v2");
	tensor_args(&p, "FloatStorage", "0", 6, 0, 2, asz, ast);
	op(&p, 'R');                     /* the tensor */
	op(&p, 0x88);                    /* NEWTRUE: requires_grad */
	glob(&p, "collections", "OrderedDict");
	op(&p, ')');
	op(&p, 'R');
	op(&p, 't');
	op(&p, 'R');                     /* the parameter */
	ustr(&p, "b.bias");
	glob(&p, "torch._tensor", "_rebuild_from_type_v2");
	op(&p, '(');
	glob(&p, "torch._utils", "_rebuild_tensor_v2");  /* func */
	glob(&p, "torch.nn.parameter", "Parameter");     /* new_type */
	tensor_args(&p, "HalfStorage", "1", 5, 2, 1, bsz, bst);
	op(&p, '}');                     /* state */
	op(&p, 't');
	op(&p, 'R');
	op(&p, 'u');                     /* SETITEMS */
	op(&p, '.');
	char *tmp = t_tmpdir(), *path = t_path("%s/param.pt", tmp);
	CHECK(!write_zip(path, &p, 1));
	struct tfm_ckpt *c;
	CHECK_OK(tfm_ckpt_open(&c, path, NULL));
	if (c)
		check_pt(c);
	tfm_ckpt_close(c);
	free(path);
	free(tmp);
}

static void t_pickle_malicious(void)
{
	struct pkb p;
	/* GLOBAL os system; SHORT_BINUNICODE 'echo'; TUPLE1; REDUCE; STOP */
	p.n = 0;
	op(&p, 0x80); op(&p, 2);
	glob(&p, "os", "system");
	ustr(&p, "echo pwned");
	op(&p, 0x85);
	op(&p, 'R');
	op(&p, '.');
	CHECK_ST(tfm_pickle_check(p.b, p.n, "evil.pkl"), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "forbidden global os.system") != NULL);

	/* builtins.eval through STACK_GLOBAL */
	p.n = 0;
	op(&p, 0x80); op(&p, 4);
	ustr(&p, "builtins");
	ustr(&p, "eval");
	op(&p, 0x93);                    /* STACK_GLOBAL */
	ustr(&p, "1+1");
	op(&p, 0x85);
	op(&p, 'R');
	op(&p, '.');
	CHECK_ST(tfm_pickle_check(p.b, p.n, "evil.pkl"), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "builtins.eval") != NULL);

	/* INST 'posix' 'system' with a MARKed argument */
	p.n = 0;
	op(&p, '(');
	ustr(&p, "id");
	op(&p, 'i');
	p.n += (size_t)sprintf((char *)p.b + p.n, "posix\nsystem\n");
	op(&p, '.');
	CHECK_ST(tfm_pickle_check(p.b, p.n, "evil.pkl"), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "INST") != NULL);

	/* an allowed global that is not callable: REDUCE of torch.FloatStorage */
	p.n = 0;
	glob(&p, "torch", "FloatStorage");
	op(&p, ')');
	op(&p, 'R');
	op(&p, '.');
	CHECK_ST(tfm_pickle_check(p.b, p.n, "x.pkl"), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "not callable") != NULL);

	/* unknown opcode; truncation; stack underflow */
	static const uint8_t unk[] = { 0x80, 2, 0xff, '.' }, trunc[] = { 0x80, 2, 'X', 9, 0 },
		under[] = { 's', '.' };
	CHECK_ST(tfm_pickle_check(unk, sizeof unk, "x.pkl"), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "0xff") != NULL);
	CHECK_ST(tfm_pickle_check(trunc, sizeof trunc, "x.pkl"), TFM_E_FORMAT);
	CHECK_ST(tfm_pickle_check(under, sizeof under, "x.pkl"), TFM_E_FORMAT);

	/* the malicious pickle inside a PyTorch zip fails to open */
	p.n = 0;
	op(&p, 0x80); op(&p, 2);
	glob(&p, "os", "system");
	ustr(&p, "echo pwned");
	op(&p, 0x85);
	op(&p, 'R');
	op(&p, '.');
	char *tmp = t_tmpdir(), *path = t_path("%s/evil.pt", tmp);
	CHECK(!write_zip(path, &p, 1));
	struct tfm_ckpt *c;
	CHECK_ST(tfm_ckpt_open(&c, path, NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "os.system") != NULL);
	/* the project's test inputs, made with Python's pickle.dumps of an
	 * object reducing to os.system (tests/data/README) */
	CHECK_ST(tfm_ckpt_open(&c, "tests/data/evil-pickle.bin", NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "forbidden global posix.system") != NULL);
	CHECK_ST(tfm_ckpt_open(&c, "tests/data/hf-evil", NULL), TFM_E_FORMAT);
	CHECK(strstr(tfm_errmsg(), "forbidden global posix.system") != NULL);
	free(path);
	free(tmp);
}

static const struct t_case t_cases[] = {
	{ "pytorch", t_pytorch },
	{ "pytorch_inplace", t_pytorch_inplace },
	{ "pytorch_cpython", t_pytorch_cpython },
	{ "pickle_parameter", t_pickle_parameter },
	{ "pickle_malicious", t_pickle_malicious },
};

T_MAIN(t_cases)
