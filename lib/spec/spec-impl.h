/* spec-impl.h: private to lib/spec.  The knob table: one row per spec field,
 * shared by --set parsing, the tfm.* GGUF keys and the JSON dump, so the three
 * always agree on names, types and ranges. */
#ifndef TFM_SPEC_IMPL_H
#define TFM_SPEC_IMPL_H

#include <stddef.h>

#include "tfm.h"

enum knob_type {
	KT_I64,    /* int64_t */
	KT_INT,    /* int, a number */
	KT_I32,    /* int32_t */
	KT_BOOL,   /* int, 0 or 1 */
	KT_ENUM,   /* int, by name */
	KT_F32,    /* float */
	KT_F64,    /* double */
	KT_STR,    /* char[32] */
	KT_F32ARR, /* float[TFM_MAX_ROPE_FACTORS], n_rope_factors long */
	KT_U8ARR,  /* uint8_t[TFM_MAX_LAYERS], tfm_spec_n_layers long */
};

struct tfm_spec_knob {
	const char *key;            /* "attn.window" (GGUF: "tfm.attn.window") */
	int type;                   /* enum knob_type */
	size_t off;                 /* offsetof(struct tfm_spec, field) */
	const char *const *names;   /* KT_ENUM (and layer.kind): value names */
	double lo, hi;              /* accepted range for --set */
};

extern const struct tfm_spec_knob tfm_spec_knobs_[];
extern const int tfm_spec_n_knobs_;
const struct tfm_spec_knob *tfm_spec_knob_find_(const char *key);

#endif
