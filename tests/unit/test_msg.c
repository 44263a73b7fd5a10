/*
 * test_msg.c - the agents' messages on the wire: the preparation's PREP
 * (progress, done, go) round trip and its refusals.
 */
#include "autoconf.h"

#include "vigil_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

static void
test_prep_round_trip(void **state)
{
	struct msg m = { .kind = MSG_PREP }, d;
	char *text;

	(void)state;
	m.u.prep.node = "n3";
	m.u.prep.step = "done";
	m.u.prep.ok = false;
	m.u.prep.error = "stage: ds: staging needs 2.0 GiB more";
	m.u.prep.copied_bytes = 1e9;
	m.u.prep.copy_bytes = 3e9;
	m.u.prep.data_files = 12;
	m.u.prep.seconds = 4.5;
	text = msg_encode(&m);
	assert_non_null(text);
	assert_int_equal(msg_decode(MSG_PREP, text, 4, &d), 0);
	assert_string_equal(d.u.prep.node, "n3");
	assert_string_equal(d.u.prep.step, "done");
	assert_false(d.u.prep.ok);
	assert_string_equal(d.u.prep.error, "stage: ds: staging needs 2.0 GiB more");
	assert_true(d.u.prep.copied_bytes == 1e9 && d.u.prep.copy_bytes == 3e9);
	assert_true(d.u.prep.data_files == 12 && d.u.prep.seconds == 4.5);
	assert_false(d.u.prep.go);
	msg_clear(&d);
	free(text);
	assert_string_equal(msg_kind_name(MSG_PREP), "prep");
}

static void
test_prep_go(void **state)
{
	struct msg m = { .kind = MSG_PREP }, d;
	char *text;

	(void)state;
	m.u.prep.go = true;
	text = msg_encode(&m);
	assert_string_equal(text, "{\"go\":true}");
	assert_int_equal(msg_decode(MSG_PREP, text, 2, &d), 0);
	assert_true(d.u.prep.go);
	assert_null(d.u.prep.node);
	msg_clear(&d);
	free(text);
}

static void
test_prep_refused(void **state)
{
	static const char *const bad[] = {
		"{}",
		"{\"go\": 1}",
		"{\"node\": \"n\", \"step\": \"later\", \"ok\": true, \"copied_bytes\": 0, "
		"\"copied_files\": 0, \"copy_bytes\": 0, \"copy_files\": 0, \"data_bytes\": 0, "
		"\"data_files\": 0, \"seconds\": 0}",
		"{\"node\": \"n\", \"step\": \"done\", \"ok\": true, \"copied_bytes\": -1, "
		"\"copied_files\": 0, \"copy_bytes\": 0, \"copy_files\": 0, \"data_bytes\": 0, "
		"\"data_files\": 0, \"seconds\": 0}",
		"{\"node\": \"n\", \"step\": \"done\", \"ok\": true}",
		"{\"node\": 3, \"step\": \"done\", \"ok\": true}",
	};
	struct msg d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(msg_decode(MSG_PREP, bad[i], 2, &d), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prep_round_trip),
		cmocka_unit_test(test_prep_go),
		cmocka_unit_test(test_prep_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
