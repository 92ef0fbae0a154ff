/* tfm-inspect: print a model's variant spec, parameter counts (total,
 * active, per part), KV-cache bytes and FLOPs per token, and optionally its
 * tensors.  Input: a GGUF file, a checkpoint tfm_ckpt_open reads (Hugging
 * Face directory or archive, safetensors, PyTorch, llama2.c), a bare
 * config.json, or "-" (GGUF or config.json on stdin).  Options and glue only. */
#include "format/config-json.h"
#include "format/convert.h"
#include "common.h"

#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: tfm-inspect [-hTVv] [-c CTX] [-F FORMAT] [-k K[,V]] [--set KEY=VALUE]\n"
	"                   INPUT ...\n";

static const char options_help[] =
	"\n"
	"  -c, --ctx CTX           context for the KV-cache size and attention FLOPs\n"
	"  -F, --format FORMAT     table (default), json or tsv\n"
	"  -h, --help              print this help and exit\n"
	"  -k, --kv-type K[,V]     types of the K and V caches (default f32, as tfm-run)\n"
	"      --set KEY=VALUE     change a spec knob before counting\n"
	"  -T, --tensors           list the tensors first: name, type, shape, bytes\n"
	"  -V, --version           print the version and exit\n"
	"  -v, --verbose           the parts of the count, FLOPs and the whole spec\n";

enum { FMT_TABLE, FMT_JSON, FMT_TSV };

struct opts {
	int fmt;
	int tensors;
	int verbose;        /* -v: parts of the count and the whole spec */
	int64_t ctx;        /* 0: the model's training context */
	int k_type, v_type; /* enum tfm_type */
	const char *sets[64];  /* --set, in order */
	int n_sets;
};

/* What one input yields: a spec, and tensors when weights are present. */
struct input {
	const char *path;
	const char *format;         /* "gguf", "config", or the ckpt format */
	struct tfm_spec spec;
	struct tfm_blob blob;
	int have_blob;
	struct tfm_gguf *gguf;
	struct tfm_ckpt *ckpt;
	json_t *config;
};

static int looks_like_json(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
		i++;
	return i < n && p[i] == '{';
}

static int config_from_bytes(struct input *in, const uint8_t *p, size_t n)
{
	json_error_t err;
	in->config = tfm_config_json(p, n, &err);
	if (!in->config)
		return tfm_seterr(TFM_E_FORMAT, "%s: line %d: %s", in->path, err.line, err.text);
	in->format = "config";
	return tfm_spec_from_config(&in->spec, in->config);
}

static int input_open(struct input *in, const char *path)
{
	memset(in, 0, sizeof(*in));
	in->path = path;
	int st;
	if (strcmp(path, "-")) {
		if (tfm_path_is_dir(path))
			goto ckpt;
		/* checkpoints go straight to the reader, which reads (and
		 * decompresses) them once: the first bytes tell them apart */
		uint8_t head[4096];
		size_t got = 0, sp = 0;
		st = tfm_input_peek(path, head, sizeof head, &got);
		if (st && st != TFM_E_INVAL) /* INVAL: a pipe, read it whole below */
			return st;
		while (!st && sp < got && (head[sp] == ' ' || head[sp] == '\t' || head[sp] == '\n' ||
				    head[sp] == '\r'))
			sp++;
		if (!st && !tfm_gguf_is_gguf(head, got) && sp < got && head[sp] != '{')
			goto ckpt;
	}
	if ((st = tfm_blob_open(&in->blob, path)))
		return st;
	in->have_blob = 1;
	if (tfm_gguf_is_gguf(in->blob.data, in->blob.size)) {
		in->format = "gguf";
		if ((st = tfm_gguf_parse(&in->gguf, in->blob.data, in->blob.size, in->blob.name)))
			return st;
		return tfm_spec_from_gguf(&in->spec, in->gguf);
	}
	if (looks_like_json(in->blob.data, in->blob.size))
		return config_from_bytes(in, in->blob.data, in->blob.size);
	if (!strcmp(path, "-"))
		return tfm_seterr(TFM_E_FORMAT, "<stdin>: neither GGUF nor a config.json "
				  "(other checkpoints must be named by path)");
	tfm_blob_close(&in->blob);
	in->have_blob = 0;
ckpt:
	if ((st = tfm_ckpt_open(&in->ckpt, path, NULL)))
		return st;
	in->format = in->ckpt->format;
	if (!in->ckpt->config)
		return tfm_seterr(TFM_E_FORMAT, "%s: no config.json beside the weights", path);
	if ((st = tfm_spec_from_config(&in->spec, in->ckpt->config)))
		return st;
	/* An encoder's heads are the ones its tensors hold (BertForMaskedLM's
	 * config names no pooler but the file may have one, a masked-LM head
	 * or none): the spec is the one tfm-convert writes from these tensors,
	 * so that the directory counts as the GGUF made from it. */
	if (in->spec.family == TFM_FAMILY_ENCODER && in->ckpt->n_tensors > 0) {
		struct tfm_convert *cv;
		if ((st = tfm_convert_open(&cv, path, NULL)))
			return st;
		st = tfm_spec_from_gguf(&in->spec, tfm_convert_gguf(cv));
		tfm_convert_close(cv);
	}
	return st;
}

static void input_close(struct input *in)
{
	tfm_gguf_free(in->gguf);
	tfm_ckpt_close(in->ckpt);
	json_decref(in->config);
	if (in->have_blob)
		tfm_blob_close(&in->blob);
}

/* Tensors of the input, one at a time: 0 past the end. */
static int tensor_at(const struct input *in, int64_t i, const char **name, int *type,
		     int *n_dims, const int64_t **ne, size_t *nbytes)
{
	if (in->gguf && i < tfm_gguf_n_tensors(in->gguf)) {
		const struct tfm_gguf_tensor *t = tfm_gguf_tensor(in->gguf, i);
		*name = t->name, *type = t->type, *n_dims = t->n_dims, *ne = t->ne;
		*nbytes = t->nbytes;
		return 1;
	}
	if (in->ckpt && i < in->ckpt->n_tensors) {
		const struct tfm_ckpt_tensor *t = &in->ckpt->tensors[i];
		*name = t->name, *type = t->type, *n_dims = t->n_dims, *ne = t->ne;
		*nbytes = t->nbytes;
		return 1;
	}
	return 0;
}

static int64_t n_elems(int n_dims, const int64_t *ne)
{
	int64_t n = 1;
	for (int d = 0; d < n_dims; d++)
		n *= ne[d];
	return n;
}

/* 1234567 -> "1,234,567" */
static const char *commas(char *buf, int64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v < 0 ? -v : v), j = 0;
	if (v < 0)
		buf[j++] = '-';
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = tmp[i];
	}
	buf[j] = 0;
	return buf;
}

/* general.name, a config's _name_or_path, or "" */
static const char *model_name(const struct input *in)
{
	if (in->gguf)
		return tfm_gguf_get_str_or(in->gguf, "general.name", "");
	json_t *c = in->ckpt ? in->ckpt->config : in->config;
	const char *n = json_string_value(json_object_get(c, "_name_or_path"));
	return n ? n : "";
}

/* llama.cpp's name of general.file_type (LLAMA_FTYPE_*); for other inputs
 * the type most weight bytes have; "" for a config. */
static const char *file_type_name(const struct input *in)
{
	static const struct { int v; const char *name; } ft[] = {
		{0, "F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {7, "Q8_0"}, {8, "Q5_0"},
		{9, "Q5_1"}, {10, "Q2_K"}, {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"},
		{14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"},
		{19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"}, {23, "IQ3_XXS"},
		{24, "IQ1_S"}, {25, "IQ4_NL"}, {26, "IQ3_S"}, {27, "IQ3_M"}, {28, "IQ2_S"},
		{29, "IQ2_M"}, {30, "IQ4_XS"}, {31, "IQ1_M"}, {32, "BF16"}, {36, "TQ1_0"},
		{37, "TQ2_0"},
	};
	if (in->gguf && tfm_gguf_find(in->gguf, "general.file_type") >= 0) {
		int64_t v = tfm_gguf_get_int_or(in->gguf, "general.file_type", -1);
		for (size_t i = 0; i < sizeof ft / sizeof ft[0]; i++)
			if (ft[i].v == v)
				return ft[i].name;
		return "unknown";
	}
	double bytes[TFM_TYPE_COUNT] = { 0 };
	const char *name;
	int type, n_dims, best = -1;
	const int64_t *ne;
	size_t nb;
	for (int64_t i = 0; tensor_at(in, i, &name, &type, &n_dims, &ne, &nb); i++)
		if (n_dims >= 2 && type >= 0 && type < TFM_TYPE_COUNT)
			bytes[type] += (double)nb;
	for (int t = 0; t < TFM_TYPE_COUNT; t++)
		if (bytes[t] > 0 && (best < 0 || bytes[t] > bytes[best]))
			best = t;
	static char up[16];
	snprintf(up, sizeof up, "%s", best < 0 ? "" : tfm_type_name(best));
	for (char *c = up; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	return up;
}

/* What tokenizer the input carries: for a GGUF its model, size, special
 * ids and whether a chat template is present; for a checkpoint the
 * tokenizer files beside it. */
static json_t *tokenizer_json(const struct input *in)
{
	json_t *t = json_object();
	if (in->gguf) {
		const struct tfm_gguf *g = in->gguf;
		const char *m = tfm_gguf_get_str_or(g, "tokenizer.ggml.model", NULL);
		int64_t k = tfm_gguf_find(g, "tokenizer.ggml.tokens");
		json_object_set_new(t, "model", m ? json_string(m) : json_null());
		json_object_set_new(t, "n_tokens", json_integer(k >= 0 ? tfm_gguf_arr_n(g, k) : 0));
		static const char *ids[][2] = { { "bos", "bos" }, { "eos", "eos" }, { "unknown", "unk" },
						{ "padding", "pad" }, { "seperator", "sep" } };
		for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
			char key[64];
			snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", ids[i][0]);
			if (tfm_gguf_find(g, key) >= 0)
				json_object_set_new(t, ids[i][1],
						    json_integer(tfm_gguf_get_int_or(g, key, -1)));
		}
		json_object_set_new(t, "chat_template",
				    json_boolean(tfm_gguf_find(g, "tokenizer.chat_template") >= 0));
	} else if (in->ckpt) {
		static const char *files[] = { "tokenizer.json", "tokenizer.model", "vocab.json",
					       "vocab.txt", "tokenizer.bin" };
		json_t *f = json_array();
		for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
			for (int j = 0; j < in->ckpt->n_files; j++)
				if (!strcmp(in->ckpt->files[j].name, files[i]))
					json_array_append_new(f, json_string(files[i]));
		json_object_set_new(t, "files", f);
	}
	return t;
}

/* The report of one input as JSON (also the source of the table and tsv). */
/* NULL with *st set: TFM_E_NOMEM, or the counting's own status. */
static json_t *report(const struct input *in, const struct opts *o, int64_t *tensor_params,
		      int *st)
{
	const struct tfm_spec *s = &in->spec;
	double elem = cmd_kv_elem_bytes(o->k_type, o->v_type);
	char kvn[48];
	/* the context tfm-run uses by default: the training one, at most 4096 */
	int64_t ctx = o->ctx > 0 ? o->ctx
		      : s->n_ctx_train > 0 && s->n_ctx_train < 4096 ? s->n_ctx_train : 4096;
	struct tfm_counts c;
	*st = TFM_E_NOMEM;
	if ((*st = tfm_spec_count(s, elem, ctx, &c)))
		return NULL;
	*st = TFM_E_NOMEM;
	json_t *r = json_object();
	json_object_set_new(r, "input", json_string(in->path));
	json_object_set_new(r, "format", json_string(in->format));
	json_object_set_new(r, "name", json_string(model_name(in)));
	json_object_set_new(r, "arch", json_string(s->arch));
	json_object_set_new(r, "gguf_arch", json_string(s->gguf_arch));
	json_object_set_new(r, "file_type", json_string(file_type_name(in)));
	json_object_set_new(r, "ctx_train", json_integer(s->n_ctx_train));
	json_t *p = json_object();
	json_object_set_new(p, "total", json_integer(c.total));
	json_object_set_new(p, "active", json_integer(c.active));
	json_object_set_new(p, "embedding", json_integer(c.embedding));
	json_object_set_new(p, "non_embedding", json_integer(c.non_embedding));
	json_object_set_new(p, "attn", json_integer(c.attn));
	json_object_set_new(p, "ffn", json_integer(c.ffn));
	json_object_set_new(p, "norms", json_integer(c.norms));
	json_object_set_new(p, "embd", json_integer(c.embd));
	json_object_set_new(p, "head", json_integer(c.head));
	json_object_set_new(p, "ssm", json_integer(c.ssm));
	json_object_set_new(r, "params", p);
	json_object_set_new(r, "ctx", json_integer(ctx));
	json_object_set_new(r, "kv_type", json_string(cmd_kv_name(kvn, sizeof kvn, o->k_type,
								   o->v_type)));
	json_object_set_new(r, "kv_bytes_per_token", json_real(c.kv_bytes_per_token));
	json_object_set_new(r, "kv_bytes", json_real(tfm_spec_kv_bytes(s, elem, ctx)));
	if (s->family == TFM_FAMILY_ENCDEC) { /* the cross-attention's K and V of a source */
		json_object_set_new(r, "cross_kv_bytes_per_token",
				    json_real(tfm_spec_cross_kv_bytes(s, elem, 1)));
		json_object_set_new(r, "cross_kv_bytes", json_real(tfm_spec_cross_kv_bytes(s, elem, ctx)));
	}
	json_object_set_new(r, "state_bytes", json_real(c.state_bytes));
	json_object_set_new(r, "flops_per_token", json_real(c.flops_per_token));

	const char *name;
	int type, n_dims;
	const int64_t *ne;
	size_t nb;
	int64_t nt = 0, tp = 0;
	double bytes = 0;
	json_t *tl = o->tensors ? json_array() : NULL;
	/* what transformers counts of them: BART's final_logits_bias (output.bias)
	 * is a buffer; Marian's sinusoidal position tables are parameters made,
	 * not stored; RWKV v7's first layer has no value residual (the copies
	 * of its a0, a1, a2 that llama.cpp's loader wants there are not) */
	int encdec = s->family == TFM_FAMILY_ENCDEC;
	int64_t tp_counted = 0;
	if (encdec && s->pos_embd == TFM_POS_EMBD_SINUSOIDAL)
		tp_counted += 2 * (s->n_ctx_train + s->pos_offset) * s->n_embd;
	for (int64_t i = 0; tensor_at(in, i, &name, &type, &n_dims, &ne, &nb); i++) {
		nt++;
		tp += n_elems(n_dims, ne);
		int v7_copy = s->rwkv_version == 7 && !strncmp(name, "blk.0.time_mix_v", 16) &&
			      name[16] && strchr("012", name[16]) &&
			      !strcmp(name + 17, ".weight");
		if (!(encdec && s->head_bias && !strcmp(name, "output.bias")) && !v7_copy)
			tp_counted += n_elems(n_dims, ne);
		bytes += (double)nb;
		if (!tl)
			continue;
		json_t *t = json_object(), *sh = json_array();
		for (int d = 0; d < n_dims; d++)
			json_array_append_new(sh, json_integer(ne[d]));
		json_object_set_new(t, "name", json_string(name));
		json_object_set_new(t, "type", json_string(tfm_type_name(type)));
		json_object_set_new(t, "shape", sh);
		json_object_set_new(t, "bytes", json_integer((json_int_t)nb));
		json_array_append_new(tl, t);
	}
	*tensor_params = nt ? tp_counted : -1;
	if (nt) {
		json_object_set_new(r, "n_tensors", json_integer(nt));
		json_object_set_new(r, "tensor_params", json_integer(tp));
		json_object_set_new(r, "tensor_bytes", json_real(bytes));
	}
	if (tl)
		json_object_set_new(r, "tensors", tl);
	json_object_set_new(r, "tokenizer", tokenizer_json(in));
	json_object_set_new(r, "spec", tfm_spec_to_json(s));
	*st = TFM_OK;
	return r;
}

/* A JSON scalar as text. */
static void scalar(char *buf, size_t n, json_t *v)
{
	if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%.9g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%d", json_is_true(v));
	else if (json_is_array(v)) {
		size_t o = 0, i;
		json_t *e;
		buf[0] = 0;
		json_array_foreach(v, i, e) {
			char b[64];
			scalar(b, sizeof(b), e);
			o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s%s", i ? "," : "", b);
			if (o >= n)
				break;
		}
	} else
		snprintf(buf, n, "-");
}

static void print_tsv(json_t *r)
{
	const char *in = json_string_value(json_object_get(r, "input"));
	const char *k;
	json_t *v;
	char buf[4096];
	json_object_foreach(r, k, v) {
		if (!strcmp(k, "input") || !strcmp(k, "tensors"))
			continue;
		if (json_is_object(v)) {
			const char *k2;
			json_t *v2;
			json_object_foreach(v, k2, v2) {
				scalar(buf, sizeof(buf), v2);
				printf("%s\t%s.%s\t%s\n", in, k, k2, buf);
			}
		} else {
			scalar(buf, sizeof(buf), v);
			printf("%s\t%s\t%s\n", in, k, buf);
		}
	}
	size_t i;
	json_array_foreach(json_object_get(r, "tensors"), i, v) {
		char shape[128];
		scalar(shape, sizeof(shape), json_object_get(v, "shape"));
		printf("%s\ttensor\t%s\t%s\t%s\t%" JSON_INTEGER_FORMAT "\n", in,
		       json_string_value(json_object_get(v, "name")),
		       json_string_value(json_object_get(v, "type")), shape,
		       json_integer_value(json_object_get(v, "bytes")));
	}
}

static void print_tensors(json_t *r)
{
	char a[32];
	size_t i;
	json_t *v, *t = json_object_get(r, "tensors");
	if (!t)
		return;
	printf("tensors\n");
	json_array_foreach(t, i, v) {
		char shape[128];
		scalar(shape, sizeof(shape), json_object_get(v, "shape"));
		printf("  %-40s %-6s %-20s %s\n", json_string_value(json_object_get(v, "name")),
		       json_string_value(json_object_get(v, "type")), shape,
		       commas(a, json_integer_value(json_object_get(v, "bytes"))));
	}
}

/* The tokenizer line: "llama, 32,000 tokens; bos 1, eos 2; chat template". */
static void print_tokenizer(json_t *t)
{
	char a[32];
	json_t *f = json_object_get(t, "files");
	if (f) {
		size_t i;
		json_t *v;
		printf("tokenizer         %s", json_array_size(f) ? "" : "none");
		json_array_foreach(f, i, v)
			printf("%s%s", i ? ", " : "", json_string_value(v));
		printf("\n");
		return;
	}
	const char *m = json_string_value(json_object_get(t, "model"));
	if (!m) {
		printf("tokenizer         none\n");
		return;
	}
	printf("tokenizer         %s, %s tokens", m,
	       commas(a, json_integer_value(json_object_get(t, "n_tokens"))));
	static const char *ids[] = { "bos", "eos", "unk", "pad", "sep" };
	int n = 0;
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		json_t *v = json_object_get(t, ids[i]);
		if (v)
			printf("%s %s %" JSON_INTEGER_FORMAT, n++ ? "," : ";", ids[i],
			       json_integer_value(v));
	}
	printf("\nchat template     %s\n",
	       json_is_true(json_object_get(t, "chat_template")) ? "yes" : "no");
}

/* The summary; with verbose, the parts of the count and the whole spec. */
static void print_table(json_t *r, const struct opts *o)
{
	char a[32], b[32], buf[4096];
	json_t *p = json_object_get(r, "params");
#define PI(k) json_integer_value(json_object_get(p, k))
#define RD(k) json_real_value(json_object_get(r, k))
#define RS(k) json_string_value(json_object_get(r, k))
	if (o->tensors) /* -T: the tensor list first */
		print_tensors(r);
	printf("input             %s (%s)\n", RS("input"), RS("format"));
	if (*RS("name"))
		printf("name              %s\n", RS("name"));
	printf("arch              %s (gguf: %s)\n", RS("arch"), RS("gguf_arch"));
	if (*RS("file_type"))
		printf("file type         %s\n", RS("file_type"));
	printf("params            %s total, %s active per token\n", commas(a, PI("total")),
	       commas(b, PI("active")));
	if (o->verbose) {
		printf("  embedding       %s\n", commas(a, PI("embedding")));
		printf("  non-embedding   %s\n", commas(a, PI("non_embedding")));
		static const char *parts[] = { "attn", "ffn", "norms", "embd", "head", "ssm" };
		for (int i = 0; i < 6; i++)
			printf("  %-15s %s\n", parts[i], commas(a, PI(parts[i])));
	}
	json_int_t train = json_integer_value(json_object_get(r, "ctx_train"));
	if (train > 0)
		printf("training context  %s tokens\n", commas(a, train));
	printf("kv cache          %s bytes/token (%s); %s bytes at %s tokens\n",
	       commas(a, (int64_t)RD("kv_bytes_per_token")), RS("kv_type"),
	       commas(b, (int64_t)RD("kv_bytes")),
	       commas(buf, json_integer_value(json_object_get(r, "ctx"))));
	if (json_object_get(r, "cross_kv_bytes"))
		printf("cross-attn kv     %s bytes/source token (%s); %s bytes for %s source tokens\n",
		       commas(a, (int64_t)RD("cross_kv_bytes_per_token")), RS("kv_type"),
		       commas(b, (int64_t)RD("cross_kv_bytes")),
		       commas(buf, json_integer_value(json_object_get(r, "ctx"))));
	if (RD("state_bytes") > 0)
		printf("recurrent state   %s bytes (f32, included above)\n",
		       commas(a, (int64_t)RD("state_bytes")));
	print_tokenizer(json_object_get(r, "tokenizer"));
	if (!o->verbose)
		return;
	printf("flops/token       %.4g (forward, at %" JSON_INTEGER_FORMAT " tokens)\n",
	       RD("flops_per_token"), json_integer_value(json_object_get(r, "ctx")));
	if (json_object_get(r, "n_tensors"))
		printf("tensors           %" JSON_INTEGER_FORMAT ", %s parameters, %s bytes\n",
		       json_integer_value(json_object_get(r, "n_tensors")),
		       commas(a, json_integer_value(json_object_get(r, "tensor_params"))),
		       commas(b, (int64_t)RD("tensor_bytes")));
	printf("spec\n");
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(r, "spec"), k, v) {
		scalar(buf, sizeof(buf), v);
		printf("  %-28s %s\n", k, buf);
	}
#undef PI
#undef RD
#undef RS
}

static int inspect(const char *path, const struct opts *o)
{
	struct input in;
	int st = input_open(&in, path);
	for (int i = 0; !st && i < o->n_sets; i++)
		st = tfm_spec_set(&in.spec, o->sets[i]);
	json_t *r = NULL;
	int64_t tp = -1;
	if (!st)
		r = report(&in, o, &tp, &st);
	if (st) {
		if (!strstr(tfm_errmsg(), path) && strcmp(path, "-"))
			tfm_adderr(st, "%s", path);
		input_close(&in);
		return st;
	}
	int64_t total = json_integer_value(json_object_get(json_object_get(r, "params"), "total"));
	if (tp >= 0 && tp != total) {
		char a[32], b[32];
		fprintf(stderr, "%s: warning: %s: the tensors hold %s parameters, the spec counts %s\n",
			prog, path, commas(a, tp), commas(b, total));
	}
	if (o->fmt == FMT_JSON) {
		char *txt = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
		if (txt)
			puts(txt);
		free(txt);
	} else if (o->fmt == FMT_TSV) {
		print_tsv(r);
	} else {
		print_table(r, o);
	}
	json_decref(r);
	input_close(&in);
	return TFM_OK;
}

int main(int argc, char **argv)
{
	enum { OPT_SET = 256 };
	static const struct option longopts[] = {
		{ "ctx", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "kv-type", required_argument, NULL, 'k' },
		{ "tensors", no_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "set", required_argument, NULL, OPT_SET },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .fmt = FMT_TABLE, .k_type = TFM_TYPE_F32, .v_type = TFM_TYPE_F32 };
	cmd_init("tfm-inspect");
	int ch, rc;
	while ((ch = getopt_long(argc, argv, "c:F:hk:TVv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			if (cmd_opt_i64("-c", optarg, 1, INT64_C(1) << 40, &o.ctx))
				return 64;
			break;
		case 'F':
			if (!strcmp(optarg, "table"))
				o.fmt = FMT_TABLE;
			else if (!strcmp(optarg, "json"))
				o.fmt = FMT_JSON;
			else if (!strcmp(optarg, "tsv"))
				o.fmt = FMT_TSV;
			else
				return cmd_usage_error(usage, "-F: '%s': expected table, json or tsv", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			fputs(options_help, stdout);
			return cmd_close_stdout();
		case 'k':
			if ((rc = cmd_opt_kv_types(usage, optarg, 0, &o.k_type, &o.v_type)))
				return rc;
			break;
		case 'T':
			o.tensors = 1;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'V':
			cmd_version();
			return cmd_close_stdout();
		case OPT_SET:
			if (o.n_sets == (int)(sizeof(o.sets) / sizeof(o.sets[0])))
				return cmd_usage_error(usage, "--set: too many (at most 64)");
			o.sets[o.n_sets++] = optarg;
			break;
		default:
			fputs(usage, stderr);
			return 64;
		}
	}
	if (optind >= argc)
		return cmd_usage_error(usage, "no input");
	/* check every --set once up front, so a typo is a usage error */
	struct tfm_spec probe;
	json_t *pj = json_pack("{ss}", "model_type", "llama");
	if (pj && !tfm_spec_from_config(&probe, pj))
		for (int i = 0; i < o.n_sets; i++)
			if (tfm_spec_set(&probe, o.sets[i]) && strstr(tfm_errmsg(), "unknown key")) {
				json_decref(pj);
				return cmd_usage_error(usage, "%s", tfm_errmsg());
			}
	json_decref(pj);
	rc = 0;
	for (int i = optind; i < argc; i++) {
		int st = inspect(argv[i], &o);
		if (st) {
			int e = cmd_fail(st);
			if (!rc)
				rc = e;
		}
	}
	int rc2 = cmd_close_stdout();
	return rc ? rc : rc2;
}
