/* test_jinja.c: the Jinja2 interpreter.  Every chat template of
 * ../shared/chat-templates renders every conversation byte for byte as
 * transformers' apply_chat_template did (the goldens come from jinja2 via
 * render.py); small templates check the language itself, with expected
 * strings as jinja2 3.1 renders them; hostile templates end in errors. */
#include "t.h"

#include <dirent.h>
#include <jansson.h>

static const struct tfm_jinja_opts pinned = { .now = "2024-07-26 12:00:00" };

/* Render src with the JSON context ctx (NULL: none); returns the status,
 * the output in *out (malloc'd) on success. */
static int render(const char *src, const char *ctx, char **out)
{
	struct tfm_jinja *t;
	json_t *c = NULL;
	size_t n;
	*out = NULL;
	int st = tfm_jinja_parse(&t, src, strlen(src));
	if (st)
		return st;
	if (ctx) {
		json_error_t e;
		c = json_loads(ctx, 0, &e);
		if (!c) {
			fprintf(stderr, "bad test context: %s\n", e.text);
			abort();
		}
	}
	st = tfm_jinja_render(t, c, &pinned, out, &n);
	json_decref(c);
	tfm_jinja_free(t);
	return st;
}

/* Renders to want (and fails loudly with what it got). */
#define CHECK_R(src, ctx, want) do { char *got_; int st_ = render((src), (ctx), &got_); \
	CHECK_MSG(st_ == TFM_OK && !strcmp(got_, (want)), "%s\n  got:  [%s]%s%s\n  want: [%s]", (src), \
		  got_ ? got_ : "", st_ ? " error: " : "", st_ ? tfm_errmsg() : "", (want)); \
	free(got_); } while (0)
/* Fails, with msg in the error text. */
#define CHECK_ERR(src, ctx, msg) do { char *got_; int st_ = render((src), (ctx), &got_); \
	CHECK_MSG(st_ != TFM_OK && strstr(tfm_errmsg(), (msg)), "%s\n  got: %s [%s]\n  want error with: %s", \
		  (src), st_ ? "error" : "ok", st_ ? tfm_errmsg() : got_, (msg)); \
	free(got_); } while (0)

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *p = malloc((size_t)sz + 1);
	if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) {
		free(p);
		p = NULL;
	}
	fclose(f);
	if (p) {
		p[sz] = 0;
		*n = (size_t)sz;
	}
	return p;
}

/* Where two renderings part, for the failure message. */
static void show_diff(const char *got, size_t gn, const char *want, size_t wn)
{
	size_t i = 0;
	while (i < gn && i < wn && got[i] == want[i])
		i++;
	size_t from = i > 60 ? i - 60 : 0;
	fprintf(stderr, "    differ at byte %zu of %zu (want %zu)\n    got:  [%.*s]\n    want: [%.*s]\n", i,
		gn, wn, (int)((gn < i + 60 ? gn : i + 60) - from), got + from,
		(int)((wn < i + 60 ? wn : i + 60) - from), want + from);
}

static void t_chat_templates(void)
{
	char *tdir = t_path("%s/chat-templates/templates", t_shared());
	DIR *d = opendir(tdir);
	CHECK_MSG(d != NULL, "cannot open %s", tdir);
	if (!d) {
		free(tdir);
		return;
	}
	char *names[256];
	int nn = 0;
	struct dirent *e;
	while ((e = readdir(d)) && nn < 256) {
		size_t l = strlen(e->d_name);
		if (l > 6 && !strcmp(e->d_name + l - 6, ".jinja"))
			names[nn++] = strndup(e->d_name, l - 6);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof *names, cmp_names);
	int total = 0, good = 0;
	for (int i = 0; i < nn; i++) {
		char *tp = t_path("%s/%s.jinja", tdir, names[i]);
		char *ep = t_path("%s/chat-templates/expected/%s.json", t_shared(), names[i]);
		size_t sn;
		char *src = slurp(tp, &sn);
		json_error_t je;
		json_t *exp = json_load_file(ep, 0, &je);
		struct tfm_jinja *t = NULL;
		CHECK_MSG(src && exp, "%s: cannot read the template or %s", names[i], ep);
		int pst = src ? tfm_jinja_parse(&t, src, sn) : TFM_E_IO;
		if (pst)
			fprintf(stderr, "  %s: parse: %s\n", names[i], tfm_errmsg());
		json_t *convs = json_object_get(exp, "conversations");
		json_t *rends = json_object_get(exp, "renderings");
		const char *cname;
		json_t *want;
		json_object_foreach(rends, cname, want) {
			json_t *conv = json_object_get(convs, cname);
			json_t *req = json_object();
			json_object_set(req, "messages", json_object_get(conv, "messages"));
			json_object_set(req, "add_generation_prompt", json_object_get(conv, "add_generation_prompt"));
			json_object_set(req, "tools", json_object_get(conv, "tools"));
			json_object_set(req, "bos_token", json_object_get(exp, "bos_token"));
			json_object_set(req, "eos_token", json_object_get(exp, "eos_token"));
			char *out = NULL;
			size_t on = 0;
			int st = pst ? pst : tfm_jinja_render_chat(t, req, &pinned, &out, &on);
			const char *text = json_string_value(json_object_get(want, "text"));
			const char *err = json_string_value(json_object_get(want, "error"));
			int ok;
			total++;
			if (text) {
				size_t wn = json_string_length(json_object_get(want, "text"));
				ok = !st && on == wn && !memcmp(out, text, wn);
				if (!ok && !pst) {
					fprintf(stderr, "  %s / %s: ", names[i], cname);
					if (st)
						fprintf(stderr, "error: %s\n", tfm_errmsg());
					else
						show_diff(out, on, text, wn), fputc('\n', stderr);
				}
			} else {
				/* "raise_exception: MSG": MSG must be in our message */
				const char *msg = err && !strncmp(err, "raise_exception: ", 17) ? err + 17 : err;
				ok = st && msg && strstr(tfm_errmsg(), msg);
				if (!ok && !pst)
					fprintf(stderr, "  %s / %s: want error '%s', got %s\n", names[i], cname,
						err ? err : "?", st ? tfm_errmsg() : "a rendering");
			}
			good += ok;
			free(out);
			json_decref(req);
		}
		tfm_jinja_free(t);
		json_decref(exp);
		free(src);
		free(tp);
		free(ep);
		free(names[i]);
	}
	fprintf(stderr, "chat templates: %d of %d renderings match\n", good, total);
	CHECK_MSG(total > 0 && good == total, "%d of %d renderings differ", total - good, total);
	free(tdir);
}

static const struct t_case t_cases[] = {
	{ "chat_templates", t_chat_templates },
};

T_MAIN(t_cases)
