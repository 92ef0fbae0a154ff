/* jinja.c: the public face of the template interpreter: parse a source
 * once, render it against JSON contexts with limits, and the chat-request
 * context apply_chat_template builds. */
#include "jinja-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEF_OUTPUT (16u << 20)
#define DEF_MEMORY ((size_t)512 << 20)
#define DEF_DEPTH 1000
#define DEF_STEPS 20000000ull
#define PARSE_MEMORY ((size_t)256 << 20)

int tfm_jinja_parse(struct tfm_jinja **out, const char *src, size_t len)
{
	struct tfm_jinja *t = tfm_calloc(1, sizeof *t);
	struct jtok *toks;
	size_t ntoks, n;
	int st;
	*out = NULL;
	if (!t)
		return TFM_E_NOMEM;
	t->a.limit = PARSE_MEMORY;
	char *s = jx_normalize(&t->a, src, len, &n);
	if (!s) {
		st = TFM_E_NOMEM;
		goto fail;
	}
	if ((st = jx_lex(&t->a, s, n, &toks, &ntoks)) || (st = jx_parse(&t->a, toks, ntoks, &t->root)))
		goto fail;
	*out = t;
	return TFM_OK;
fail:
	tfm_jinja_free(t);
	return st;
}

void tfm_jinja_free(struct tfm_jinja *t)
{
	if (!t)
		return;
	ja_free(&t->a);
	free(t);
}

/* A JSON value as a template value; strings stay in the JSON. */
static int from_json(struct jrt *r, const json_t *j, struct jv *out, int depth)
{
	int st;
	if (depth > 1000)
		return tfm_seterr(TFM_E_FORMAT, "context nested too deeply");
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		struct jdict *d = jd_new(&r->a, json_object_size(j));
		const char *k;
		json_t *v;
		if (!d)
			return TFM_E_FORMAT;
		json_object_foreach((json_t *)j, k, v) {
			struct jv x;
			if ((st = from_json(r, v, &x, depth + 1)))
				return st;
			d->k[d->n] = jv_str(k, strlen(k));
			d->v[d->n++] = x;
		}
		memset(out, 0, sizeof *out);
		out->t = JT_DICT;
		out->d = d;
		return TFM_OK;
	}
	case JSON_ARRAY: {
		struct jlist *l = jl_new(&r->a, json_array_size(j));
		if (!l)
			return TFM_E_FORMAT;
		for (size_t i = 0; i < json_array_size(j); i++)
			if ((st = from_json(r, json_array_get(j, i), &l->v[l->n++], depth + 1)))
				return st;
		*out = jv_list(l);
		return TFM_OK;
	}
	case JSON_STRING:
		*out = jv_str(json_string_value(j), json_string_length(j));
		return TFM_OK;
	case JSON_INTEGER:
		*out = jv_int((int64_t)json_integer_value(j));
		return TFM_OK;
	case JSON_REAL:
		*out = jv_float(json_real_value(j));
		return TFM_OK;
	case JSON_TRUE:
		*out = jv_bool(1);
		return TFM_OK;
	case JSON_FALSE:
		*out = jv_bool(0);
		return TFM_OK;
	default:
		*out = jv_none();
		return TFM_OK;
	}
}

static int set_clock(struct jrt *r, const char *now)
{
	if (!now) {
		time_t t = time(NULL);
		localtime_r(&t, &r->now);
		return TFM_OK;
	}
	struct tm tm = { 0 };
	int n = 0;
	if (sscanf(now, "%d-%d-%d %d:%d:%d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec, &n) != 6 || now[n] || tm.tm_mon < 1 || tm.tm_mon > 12 ||
	    tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return tfm_seterr(TFM_E_INVAL, "'%s': the clock is not YYYY-MM-DD HH:MM:SS", now);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_isdst = -1;
	/* mktime fills in the weekday and the day of the year */
	struct tm norm = tm;
	if (mktime(&norm) == (time_t)-1)
		return tfm_seterr(TFM_E_INVAL, "'%s': not a time this system can represent", now);
	r->now = tm;
	r->now.tm_wday = norm.tm_wday;
	r->now.tm_yday = norm.tm_yday;
	r->now.tm_isdst = norm.tm_isdst;
	return TFM_OK;
}

int tfm_jinja_render(const struct tfm_jinja *t, const json_t *ctx, const struct tfm_jinja_opts *o,
		     char **out, size_t *len)
{
	static const struct tfm_jinja_opts none = { 0 };
	struct jrt r = { 0 };
	int st;
	*out = NULL;
	*len = 0;
	if (!o)
		o = &none;
	if (ctx && !json_is_object(ctx))
		return tfm_seterr(TFM_E_INVAL, "the template context must be a JSON object");
	r.o = o;
	r.max_output = o->max_output ? o->max_output : DEF_OUTPUT;
	r.a.limit = o->max_memory ? o->max_memory : DEF_MEMORY;
	r.max_depth = o->max_depth > 0 ? o->max_depth : DEF_DEPTH;
	r.max_steps = o->max_steps ? o->max_steps : DEF_STEPS;
	if ((st = set_clock(&r, o->now)))
		return st;
	struct jscope *root = ja_alloc(&r.a, sizeof *root);
	struct jv cv;
	if (!root) {
		st = TFM_E_NOMEM;
		goto done;
	}
	if (ctx) {
		if ((st = from_json(&r, ctx, &cv, 0)))
			goto done;
		root->vars = cv.d;
	} else if (!(root->vars = jd_new(&r.a, 0))) {
		st = TFM_E_NOMEM;
		goto done;
	}
	struct jbuf b = { .a = &r.a, .max = r.max_output };
	r.out = &b;
	r.root = root;
	if ((st = jr_run(&r, t->root, root))) {
		if (!r.raised && r.err_line)
			tfm_adderr(st, "template line %d", r.err_line);
		goto done;
	}
	if (!(*out = tfm_malloc(b.n + 1))) {
		st = TFM_E_NOMEM;
		goto done;
	}
	if (b.n)
		memcpy(*out, b.p, b.n);
	(*out)[b.n] = 0;
	*len = b.n;
done:
	ja_free(&r.a);
	return st;
}

int tfm_jinja_render_chat(const struct tfm_jinja *t, const json_t *req, const struct tfm_jinja_opts *o,
			  char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!json_is_object(req))
		return tfm_seterr(TFM_E_FORMAT, "a chat request is a JSON object");
	if (!json_is_array(json_object_get(req, "messages")))
		return tfm_seterr(TFM_E_FORMAT, "the chat request has no \"messages\" array");
	json_t *ctx = json_copy((json_t *)req);
	if (!ctx)
		return tfm_seterr(TFM_E_NOMEM, "out of memory");
	int st = TFM_OK;
	/* transformers passes these always, None when not given */
	static const char *const defaults[] = { "tools", "documents", NULL };
	for (int i = 0; defaults[i] && !st; i++)
		if (!json_object_get(ctx, defaults[i]) && json_object_set_new(ctx, defaults[i], json_null()))
			st = tfm_seterr(TFM_E_NOMEM, "out of memory");
	if (!st && !json_object_get(ctx, "add_generation_prompt") &&
	    json_object_set_new(ctx, "add_generation_prompt", json_false()))
		st = tfm_seterr(TFM_E_NOMEM, "out of memory");
	if (!st)
		st = tfm_jinja_render(t, ctx, o, out, len);
	json_decref(ctx);
	return st;
}
