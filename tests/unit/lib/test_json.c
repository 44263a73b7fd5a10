/*
 * test_json.c - checked member access and UTF-8-safe printing.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"

static void
test_strict_getters(void **state)
{
	cJSON *o = cJSON_Parse("{\"s\":\"x\",\"n\":2.5,\"i\":7,\"b\":true,\"big\":1e300,"
	                       "\"neg\":-3,\"str_n\":\"5\"}");
	const char *s = NULL;
	double d = 0;
	long long i = 0;
	bool b = false;

	(void)state;
	assert_non_null(o);
	assert_int_equal(json_get_str(o, "s", &s), 0);
	assert_string_equal(s, "x");
	assert_int_equal(json_get_str(o, "n", &s), -EINVAL);
	assert_int_equal(json_get_str(o, "absent", &s), -ENOENT);
	assert_int_equal(json_get_num(o, "n", 0, 10, &d), 0);
	assert_true(d == 2.5);
	assert_int_equal(json_get_num(o, "big", 0, 1e9, &d), -EINVAL);
	assert_int_equal(json_get_num(o, "str_n", 0, 10, &d), -EINVAL);
	assert_int_equal(json_get_int(o, "i", 0, 10, &i), 0);
	assert_int_equal(i, 7);
	assert_int_equal(json_get_int(o, "n", 0, 10, &i), -EINVAL);   /* a fraction */
	assert_int_equal(json_get_int(o, "neg", 0, 10, &i), -EINVAL); /* out of range */
	assert_int_equal(json_get_int(o, "big", 0, 1LL << 53, &i), -EINVAL);
	assert_int_equal(json_get_bool(o, "b", &b), 0);
	assert_true(b);
	assert_int_equal(json_get_bool(o, "i", &b), -EINVAL);
	assert_int_equal(json_get_str(NULL, "s", &s), -ENOENT);
	cJSON_Delete(o);
}

static void
test_lenient_getters(void **state)
{
	cJSON *o = cJSON_Parse("{\"s\":3,\"n\":\"2\",\"i\":5}");

	(void)state;
	assert_string_equal(json_str(o, "s", "dflt"), "dflt");
	assert_true(json_num(o, "n", 0, 10, -1) == -1);
	assert_int_equal(json_int(o, "i", 0, 4, 99), 99);
	assert_int_equal(json_int(o, "i", 0, 9, 99), 5);
	assert_false(json_bool(o, "x", false));
	cJSON_Delete(o);
}

static void
test_print_is_valid_utf8(void **state)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	(void)state;
	cJSON_AddStringToObject(o, "node", "caf\xc3\xa9");
	cJSON_AddStringToObject(o, "tail", "bad \xff\xfe bytes\n");
	text = json_print(o, false);
	assert_non_null(text);
	assert_true(util_utf8_valid(text, strlen(text)));
	assert_string_equal(text, "{\"node\":\"caf\xc3\xa9\",\"tail\":\"bad \xef\xbf\xbd\xef\xbf\xbd bytes\\n\"}");
	/* still JSON */
	cJSON_Delete(o);
	o = cJSON_Parse(text);
	assert_non_null(o);
	assert_string_equal(json_str(o, "node", ""), "caf\xc3\xa9");
	free(text);
	cJSON_Delete(o);
}

/* Depth past cJSON's limit found where it begins; brackets in strings
 * (escaped quotes too) do not count. */
static void
test_too_deep(void **state)
{
	char buf[2 * JSON_NESTING_LIMIT + 64];
	size_t n = 0;

	(void)state;
	assert_int_equal(json_too_deep("[[{}]]", 6), 6);
	assert_int_equal(json_too_deep("\"[[[\"", 5), 5);
	for (int i = 0; i < JSON_NESTING_LIMIT; i++)
		buf[n++] = '[';
	assert_int_equal(json_too_deep(buf, n), n);  /* at the limit */
	memcpy(buf + n, "\"\\\"[\"", 5);            /* "\"[" */
	assert_int_equal(json_too_deep(buf, n + 5), n + 5);
	buf[n + 5] = '{';
	assert_int_equal(json_too_deep(buf, n + 6), n + 5);
	/* what cJSON says of the same texts */
	memcpy(buf + n, "]", 1);
	assert_null(cJSON_ParseWithLength(buf, n + 1));  /* unbalanced, not deep */
	n = 0;
	for (int i = 0; i < JSON_NESTING_LIMIT; i++)
		buf[n++] = '[';
	for (int i = 0; i < JSON_NESTING_LIMIT; i++)
		buf[n++] = ']';
	{
		cJSON *ok = cJSON_ParseWithLength(buf, n);

		assert_non_null(ok);
		cJSON_Delete(ok);
	}
	memmove(buf + 1, buf, n);
	buf[0] = '[';
	buf[n + 1] = ']';
	assert_null(cJSON_ParseWithLength(buf, n + 2));
	assert_int_equal(json_too_deep(buf, n + 2), JSON_NESTING_LIMIT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strict_getters),
		cmocka_unit_test(test_lenient_getters),
		cmocka_unit_test(test_print_is_valid_utf8),
		cmocka_unit_test(test_too_deep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
