/* jinja.h: a Jinja2 template interpreter for chat templates, as Hugging Face
 * transformers' apply_chat_template runs them (jinja2's immutable sandbox,
 * trim_blocks, lstrip_blocks, loop controls, its own tojson, raise_exception,
 * strftime_now).  A template is parsed once and rendered any number of times
 * against a JSON context; rendering is bounded in output, memory, nesting and
 * steps, so hostile templates end with an error instead of a crash. */
#ifndef TFM_JINJA_H
#define TFM_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct tfm_jinja; /* a parsed template: immutable, may be shared by threads */

/* Limits and the clock of a rendering; zeros give the defaults. */
struct tfm_jinja_opts {
	const char *now;    /* strftime_now's local time, "YYYY-MM-DD HH:MM:SS"; NULL: the clock */
	size_t max_output;  /* bytes of output, and of any captured block (16 MiB) */
	size_t max_memory;  /* bytes the rendering may allocate (512 MiB) */
	int max_depth;      /* levels of nested blocks, calls and expressions (1000;
			     * a level takes at most about 500 bytes of C stack) */
	uint64_t max_steps; /* loop iterations plus macro calls (20 million) */
};

/* Parse len bytes of template source (UTF-8).  A syntax error is
 * TFM_E_FORMAT with the line in the message. */
int tfm_jinja_parse(struct tfm_jinja **out, const char *src, size_t len);
void tfm_jinja_free(struct tfm_jinja *t);

/* Render with the members of the JSON object ctx as variables (NULL: none).
 * *out is malloc'd, NUL-terminated, and holds *len bytes (caller frees).
 * A template that calls raise_exception(msg) fails with TFM_E_FORMAT and the
 * message "raise_exception: msg"; other template errors are TFM_E_FORMAT
 * with the template line; a limit reached is TFM_E_FORMAT naming it. */
int tfm_jinja_render(const struct tfm_jinja *t, const json_t *ctx,
		     const struct tfm_jinja_opts *o, char **out, size_t *len);

/* A chat request rendered as apply_chat_template does: req holds messages,
 * and optionally add_generation_prompt (false), tools and documents (none),
 * bos_token, eos_token and any other variable the template reads
 * (enable_thinking, ...).  tools and documents are defined even when
 * absent, as transformers passes them. */
int tfm_jinja_render_chat(const struct tfm_jinja *t, const json_t *req,
			  const struct tfm_jinja_opts *o, char **out, size_t *len);

#endif
