/* fuzz.h: what the libFuzzer harnesses of tests/fuzz share.  Each
 * fuzz_NAME.c defines LLVMFuzzerTestOneInput (and may define
 * LLVMFuzzerInitialize); it is linked with -fsanitize=fuzzer for `make fuzz`
 * and with replay.c for `make check`, which feeds it every file under
 * tests/fuzz/regress/NAME/.  A harness returns 0 on any input the library
 * refuses; it aborts only when the library breaks a promise (a crash, a
 * token id out of range, an error without a status). */
#ifndef TFM_FUZZ_H
#define TFM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "tfm.h"
#include "model/model-impl.h"

struct tfm_ckpt;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Once per process: library logging off (every refusal would print);
 * with TFM_FUZZ_VERBOSE set, each status checked is printed instead. */
void fuzz_init(void);
/* abort() with a message when cond is false: a broken promise. */
#define FUZZ_ASSERT(cond) ((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))
void fuzz_fail(const char *file, int line, const char *what) __attribute__((noreturn));
/* A status the library may return: TFM_OK or one of enum tfm_status. */
void fuzz_check_status(int st);
/* Read every byte of [p, p + n) so that ASan checks the whole range. */
uint64_t fuzz_touch(const void *p, size_t n);
/* Every key, value and tensor of a GGUF, through the public getters. */
void fuzz_walk_gguf(const struct tfm_gguf *g);
/* Tokenize a few fixed strings and text of the input's own bytes, both
 * with and without special tokens; decode every id; check ids are in range. */
void fuzz_tokenizer(const struct tfm_tokenizer *t, const uint8_t *text, size_t len);
/* The tokenizer keys of g, when it has them, through fuzz_tokenizer. */
void fuzz_gguf_tokenizer(const struct tfm_gguf *g, const uint8_t *text, size_t len);
/* A model of spec s from named tensors: bind, make a context of 4
 * positions and evaluate one token (the executor on tiny shapes). */
void fuzz_model(const struct tfm_spec *s, const struct tfm_model_tensor *t, int64_t n);
/* A single-file checkpoint format from untrusted bytes: bid, parse with
 * a checkpoint named fuzz.bin of format fmt, the synthesized config through
 * tfm_spec_from_config, and when it all holds, fuzz_spec and fuzz_model on
 * the checkpoint's own tensors (the llama2.c and rwkv.cpp harnesses). */
void fuzz_ckpt_bytes(const uint8_t *data, size_t size, const char *fmt,
		     int (*bid)(const uint8_t *, size_t),
		     int (*parse)(struct tfm_ckpt *, const uint8_t *, size_t));
/* The spec's derived numbers: counts, KV bytes, JSON, a GGUF round trip. */
void fuzz_spec(const struct tfm_spec *s);
/* ../shared (or $TFM_SHARED); exits with a message when it is missing. */
const char *fuzz_shared(void);

#endif
