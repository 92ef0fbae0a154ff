/* fuzz_jinja.c: a chat template from untrusted bytes (a tokenizer_config.json
 * or chat_template.jinja carries one), parsed and rendered against a fixed
 * conversation as tfm-run --chat and tfm-tok --template render it: system,
 * user, assistant with a tool call, tool result; tools and documents;
 * with and without the generation prompt.  The limits are smaller than the
 * defaults so that a run stays short; hitting one is a refusal. */
#include "fuzz.h"
#include "chat/jinja.h"

#include <stdlib.h>
#include <string.h>

static json_t *req[2];

static void init_request(void)
{
	json_error_t err;
	static const char src[] =
		"{\"messages\": ["
		"{\"role\": \"system\", \"content\": \"Be terse.\"},"
		"{\"role\": \"user\", \"content\": \"What is 2+2? \\u00e9\\u4e2d\"},"
		"{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"type\": \"function\","
		" \"function\": {\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 2}}}]},"
		"{\"role\": \"tool\", \"name\": \"add\", \"content\": \"4\"},"
		"{\"role\": \"assistant\", \"content\": \"4.\"},"
		"{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"And 3+3?\"}]}],"
		" \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"add\","
		" \"description\": \"Add.\", \"parameters\": {\"type\": \"object\", \"properties\":"
		" {\"a\": {\"type\": \"number\"}, \"b\": {\"type\": \"number\"}}}}}],"
		" \"documents\": [{\"title\": \"t\", \"text\": \"d\"}],"
		" \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"enable_thinking\": false}";
	for (int i = 0; i < 2; i++) {
		req[i] = json_loads(src, 0, &err);
		FUZZ_ASSERT(req[i] != NULL);
		json_object_set_new(req[i], "add_generation_prompt", json_boolean(i));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++) {
		fuzz_init();
		init_request();
	}
	struct tfm_jinja *t = NULL;
	int st = tfm_jinja_parse(&t, (const char *)data, size);
	fuzz_check_status(st);
	if (st) {
		FUZZ_ASSERT(t == NULL);
		return 0;
	}
	struct tfm_jinja_opts o = {.now = "2026-11-24 12:00:00", .max_output = 1 << 20,
				   .max_memory = 64 << 20, .max_depth = 200, .max_steps = 200000};
	for (int i = 0; i < 2; i++) {
		char *out = NULL;
		size_t len = 0;
		st = tfm_jinja_render_chat(t, req[i], &o, &out, &len);
		fuzz_check_status(st);
		if (!st) {
			FUZZ_ASSERT(out != NULL && out[len] == 0 && len <= o.max_output);
			fuzz_touch(out, len + 1);
		} else {
			FUZZ_ASSERT(out == NULL);
		}
		free(out);
	}
	tfm_jinja_free(t);
	return 0;
}
