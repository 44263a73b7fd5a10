/*
 * test_verdict.c - verdict names, and the one finding: how it is filled
 * (cut, one line, a long path's end kept) and the list that gathers them.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/verdict.h"

static void
set(struct finding *f, enum verdict v, const char *what, const char *device, const char *fmt,
    ...) __attribute__((format(printf, 5, 6)));

static void
set(struct finding *f, enum verdict v, const char *what, const char *device, const char *fmt,
    ...)
{
	va_list ap;

	va_start(ap, fmt);
	finding_vset(f, v, what, device, fmt, ap);
	va_end(ap);
}

static void
test_names(void **state)
{
	enum verdict v = VERDICT_PASS;

	(void)state;
	assert_string_equal(verdict_name(VERDICT_FAIL), "fail");
	assert_string_equal(verdict_name((enum verdict)7), "?");
	assert_int_equal(verdict_parse("warn", &v), 0);
	assert_int_equal(v, VERDICT_WARN);
	assert_int_equal(verdict_parse("bad", &v), -EINVAL);
}

static void
test_set(void **state)
{
	struct finding f;
	char path[200], want[80];

	(void)state;
	set(&f, VERDICT_FAIL, "nic", "eth1", "%s is down (%s)", "eth1", "no carrier");
	assert_string_equal(f.what, "nic");
	assert_string_equal(f.device, "eth1");
	assert_int_equal(f.verdict, VERDICT_FAIL);
	assert_string_equal(f.evidence, "eth1 is down (no carrier)");

	/* one line, whatever names and paths hold; NULL device: the node */
	set(&f, VERDICT_WARN, "sto\nrage", NULL, "/a\nb\x7f is missing");
	assert_string_equal(f.what, "sto?rage");
	assert_string_equal(f.device, "");
	assert_string_equal(f.evidence, "/a?b? is missing");
	set(&f, VERDICT_WARN, "storage", "/a\tb", "x");
	assert_string_equal(f.device, "/a?b");

	/* cut, never overrun: WHAT at 15 bytes, evidence at 255 */
	set(&f, VERDICT_WARN, "a-check-name-longer-than-fifteen", "d", "%0300d", 0);
	assert_string_equal(f.what, "a-check-name-lo");
	assert_int_equal(strlen(f.evidence), 255);

	/* a path too long keeps its end, which tells one run from another */
	snprintf(path, sizeof(path), "/lustre/%0150d/ckpt/run7", 0);
	set(&f, VERDICT_FAIL, "storage", path, "missing");
	snprintf(want, sizeof(want), "...%s", path + strlen(path) - 60);
	assert_string_equal(f.device, want);
	assert_int_equal(strlen(f.device), sizeof(f.device) - 1);
	assert_non_null(strstr(f.device, "/ckpt/run7"));
	/* one that just fits is whole */
	memset(path, 'p', 63);
	path[63] = '\0';
	set(&f, VERDICT_FAIL, "storage", path, "missing");
	assert_string_equal(f.device, path);
}

static void
test_list(void **state)
{
	struct finding_list l = { 0 };
	struct finding *v = NULL;
	size_t n = 1;

	(void)state;
	/* nothing found: no array */
	assert_int_equal(finding_list_end(&l, &v, &n), 0);
	assert_null(v);
	assert_int_equal(n, 0);

	/* PASS is no finding; the others keep their order, past the first growth */
	memset(&l, 0, sizeof(l));
	finding_add(&l, VERDICT_PASS, "slot", "0000:3b:00.0", "fine");
	for (int i = 0; i < 20; i++)
		finding_add(&l, i % 2 ? VERDICT_FAIL : VERDICT_WARN, "xid", "0000:3b:00.0",
		            "XID %d", i);
	assert_int_equal(finding_list_end(&l, &v, &n), 0);
	assert_int_equal(n, 20);
	assert_string_equal(v[0].evidence, "XID 0");
	assert_int_equal(v[0].verdict, VERDICT_WARN);
	assert_string_equal(v[19].evidence, "XID 19");
	assert_int_equal(v[19].verdict, VERDICT_FAIL);
	free(v);

	/* a list that ran out of memory takes no more and ends with the error */
	memset(&l, 0, sizeof(l));
	l.err = -ENOMEM;
	finding_add(&l, VERDICT_FAIL, "xid", "d", "XID 79");
	assert_int_equal(l.n, 0);
	assert_int_equal(finding_list_end(&l, &v, &n), -ENOMEM);
	assert_null(v);
	assert_int_equal(n, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
