/* config-json.h: parse a config.json as transformers writes it (bare
 * Infinity / -Infinity / NaN read as the strings of those names). */
#ifndef TFM_FORMAT_CONFIG_JSON_H
#define TFM_FORMAT_CONFIG_JSON_H

#include <jansson.h>
#include <stddef.h>

/* The JSON value of the n bytes at d, or NULL with e set. */
json_t *tfm_config_json(const void *d, size_t n, json_error_t *e);

#endif
