/* config-json.c: config.json as transformers writes it.  Python's json
 * module writes the non-finite floats as bare Infinity, -Infinity and NaN
 * (mamba2's time_step_limit is [0.0, Infinity]), which JSON lacks and
 * jansson refuses; outside strings they become the strings "Infinity",
 * "-Infinity" and "NaN", which the presets' getters read as those numbers
 * (lib/spec/presets-impl.h). */
#include "format/config-json.h"

#include <stdlib.h>
#include <string.h>

/* d[i] (a quote inside a string) is escaped: an odd run of backslashes before it */
static int escaped(const char *d, size_t i)
{
	size_t b = 0;
	while (b < i && d[i - 1 - b] == '\\')
		b++;
	return b % 2;
}

/* config.json as Python's json module writes it: Infinity, -Infinity and
 * NaN outside strings (mamba2's time_step_limit is [0.0, Infinity]), which
 * JSON lacks; they become the strings "Infinity", "-Infinity", "NaN",
 * which the presets' getters read as those numbers.  A copy of *len
 * bytes, or NULL without memory. */
static char *nonfinite_as_strings(const char *d, size_t n, size_t *olen)
{
	/* each token (3 bytes at least) gains 2 quotes: room for all */
	char *o = malloc(n + 2 * (n / 3) + 1), *p = o;
	int in_str = 0;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		static const char *const w[] = {"-Infinity", "Infinity", "NaN"};
		size_t k = 3, len = 0;
		for (k = 0; !in_str && k < 3; k++)
			if (i + (len = strlen(w[k])) <= n && !memcmp(d + i, w[k], len))
				break;
		if (!in_str && k < 3) {
			*p++ = '"';
			memcpy(p, w[k], len);
			p += len;
			*p++ = '"';
			i += len - 1;
			continue;
		}
		if (d[i] == '"' && (!in_str || !escaped(d, i)))
			in_str = !in_str;
		*p++ = d[i];
	}
	*p = 0;
	*olen = (size_t)(p - o);
	return o;
}

json_t *tfm_config_json(const void *d, size_t n, json_error_t *e)
{
	size_t tn = 0;
	char *txt = nonfinite_as_strings((const char *)d, n, &tn);
	if (!txt) {
		memset(e, 0, sizeof *e);
		strcpy(e->text, "out of memory");
		return NULL;
	}
	json_t *j = json_loadb(txt, tn, 0, e);
	free(txt);
	return j;
}
