/* config-keys.h: the keys of transformers' configuration classes
 * (config-keys.c, generated) and the honour-or-refuse check over them
 * (config-check.c).  Private to lib/spec. */
#ifndef TFM_CONFIG_KEYS_H
#define TFM_CONFIG_KEYS_H

#include <jansson.h>

struct tfm_cfg_key {
	const char *key;
	const char *dflt; /* the class default, as JSON text */
};
struct tfm_cfg_keys {
	const char *type;
	const struct tfm_cfg_key *keys; /* ends with { NULL, NULL } */
};
extern const struct tfm_cfg_key tfm_cfg_common[];  /* PretrainedConfig's own */
extern const struct tfm_cfg_keys tfm_cfg_keys[];   /* per model type */

/* The keys a preset read, recorded by the presets-impl.h getters while
 * tfm_cfg_track(c) is in force for the top-level config c. */
void tfm_cfg_track(const json_t *c);
void tfm_cfg_mark(const json_t *c, const char *key);
/* After the preset ran: every key of c that the preset did not read must be
 * either without effect on the forward pass (metadata, training, generation
 * defaults) or at transformers' class default for `type`; otherwise
 * TFM_E_UNSUPPORTED naming the key and its value.  Ends the tracking. */
int tfm_cfg_check(const json_t *c, const char *type);
/* Whether the last tracked preset read key (for the tests). */
int tfm_cfg_was_read(const char *key);
/* The type's table (NULL for a type without one). */
const struct tfm_cfg_key *tfm_cfg_table(const char *type);
/* 1 when key is known to leave the forward pass unchanged (with why). */
int tfm_cfg_inert(const char *key, const char **why);

#endif
