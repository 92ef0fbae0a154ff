/* ckpt.h: a checkpoint read from any source format, in one neutral form:
 * the Hugging Face config (a jansson object), named tensors whose bytes stay
 * where they are (mmapped files) whenever possible, and the tokenizer files
 * found beside the weights.  Formats "bid" on their input (libarchive's
 * model): a Hugging Face directory or archive (.tar, .tar.gz, .tar.zst, .zip),
 * a lone .safetensors file, a PyTorch zip (restricted unpickler), a llama2.c
 * checkpoint (legacy 7-int header or 'ak42' v1). */
#ifndef TFM_CKPT_H
#define TFM_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Tensor names follow the source: Hugging Face names for HF checkpoints,
 * GGUF (llama.cpp) names for llama2.c ones (see naming below). */
enum tfm_ckpt_naming { TFM_NAMES_HF = 0, TFM_NAMES_GGUF = 1 };

struct tfm_ckpt_tensor {
	char *name;
	int type;          /* enum tfm_type: F32, F16, BF16 (others rejected) */
	int n_dims;
	int64_t ne[4];     /* ggml order: ne[0] innermost; torch [out,in] -> {in,out} */
	const void *data;  /* valid until tfm_ckpt_close */
	size_t nbytes;
};

struct tfm_ckpt_file {   /* a side file, e.g. "tokenizer.json" */
	char *name;          /* base name */
	uint8_t *data;
	size_t size;
};

struct tfm_ckpt {
	char *source;        /* the path given */
	const char *format;  /* "hf-dir", "hf-archive", "safetensors", "pytorch", "llama2c" */
	int naming;          /* enum tfm_ckpt_naming */
	json_t *config;      /* config.json; for llama2.c a synthesized llama config
	                        with "rope_interleaved": true */
	int64_t n_tensors;
	struct tfm_ckpt_tensor *tensors;
	int n_files;
	struct tfm_ckpt_file *files;  /* tokenizer.json, tokenizer.model, vocab.txt,
	                                 merges.txt, tokenizer_config.json,
	                                 special_tokens_map.json, generation_config.json,
	                                 and for llama2.c "tokenizer.bin" (--vocab) */
	size_t bytes_copied; /* bytes read into memory (archive members, PyTorch zips
	                        that are not stored with aligned data) rather than
	                        mapped from the input; 0 when all tensors are mapped */
	void *priv_;         /* format-private state (maps, buffers) */
};

struct tfm_ckpt_opts {
	const char *vocab;   /* llama2.c tokenizer.bin, or NULL */
	int config_only;     /* a config.json file, or a Hugging Face directory's config and
	                        side files (tokenizer), without weights */
};

/* Open any supported checkpoint; TFM_E_FORMAT / TFM_E_UNSUPPORTED with a
 * clear message otherwise. */
int tfm_ckpt_open(struct tfm_ckpt **out, const char *path, const struct tfm_ckpt_opts *o);
void tfm_ckpt_close(struct tfm_ckpt *c);
const struct tfm_ckpt_tensor *tfm_ckpt_find(const struct tfm_ckpt *c, const char *name);
const struct tfm_ckpt_file *tfm_ckpt_file(const struct tfm_ckpt *c, const char *name);

/* Individual readers, for tests and for formats that embed others. */
int tfm_safetensors_parse(struct tfm_ckpt *c, const uint8_t *data, size_t size, const char *name);
/* PyTorch pickle restricted to what a state dict needs; anything else (e.g.
 * GLOBAL os system, REDUCE of an unknown callable) is TFM_E_FORMAT with a
 * message naming the opcode or global. */
int tfm_pickle_check(const uint8_t *data, size_t size, const char *name);

#endif
