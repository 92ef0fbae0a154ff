/* convert.h: any checkpoint to a GGUF.  The result is an in-memory GGUF
 * whose tensors are produced on demand from the source (converted to the
 * requested dtype, Q/K permuted for llama.cpp's rope layout where needed),
 * so tfm-convert streams it to a file and tfm_model_open uses it directly. */
#ifndef TFM_CONVERT_H
#define TFM_CONVERT_H

struct tfm_gguf;
struct tfm_convert;

struct tfm_convert_opts {
	const char *vocab;   /* llama2.c tokenizer.bin */
	int dtype;           /* enum tfm_type for 2-D weights: -1 keeps the source */
	int config_only;     /* INPUT is a config.json file or a directory without weights:
			      * the keys, no tensors (tfm-convert --random adds them) */
	int64_t n_head_kv;   /* > 0: mean-pool each group of K/V heads into one, down to
			      * this many KV heads (the GQA paper's conversion of an MHA
			      * checkpoint); 0: as the source */
};

/* Open path (any checkpoint or GGUF) and build the output GGUF. */
int tfm_convert_open(struct tfm_convert **cv, const char *path, const struct tfm_convert_opts *o);
struct tfm_gguf *tfm_convert_gguf(struct tfm_convert *cv);
/* Materialise every tensor in memory (buffers owned by cv), so that
 * tfm_convert_gguf then returns a GGUF whose tensors all have data != NULL:
 * this is how tfm_model_open runs a checkpoint without writing a file. */
int tfm_convert_load(struct tfm_convert *cv);
void tfm_convert_close(struct tfm_convert *cv);

#endif
