/*
 * test_progress.c - timing lines: number formats, launcher prefixes and
 * their keys, and everything that must not parse.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <float.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf/progress.h"

#define TEXT "this iteration hardware time is "

/* Parse the string S (its length, not strlen, when given) or fail. */
static struct progress_line
parse_ok_n(const char *s, size_t len)
{
	struct progress_line l;

	memset(&l, 0x5a, sizeof(l));
	if (!progress_parse(s, len, &l))
		fail_msg("not parsed: \"%.*s\"", (int)(len < 200 ? len : 200), s);
	assert_non_null(memchr(l.key, '\0', sizeof(l.key)));
	/* the agent hands the parser only the lines that hold the mark */
	assert_non_null(memmem(s, len, PROGRESS_MARK, PROGRESS_MARK_LEN));
	return l;
}

static struct progress_line
parse_ok(const char *s)
{
	return parse_ok_n(s, strlen(s));
}

static void
assert_rejected_n(const char *s, size_t len)
{
	struct progress_line l;

	memset(&l, 0x5a, sizeof(l));
	if (progress_parse(s, len, &l))
		fail_msg("parsed: \"%.*s\"", (int)(len < 200 ? len : 200), s);
}

static void
assert_rejected(const char *s)
{
	assert_rejected_n(s, strlen(s));
}

static void
assert_times(const char *s, double hw, double e2e)
{
	struct progress_line l = parse_ok(s);

	if (l.hw_ms != hw || l.e2e_ms != e2e)
		fail_msg("\"%s\": %.17g and %.17g, expected %.17g and %.17g",
		         s, l.hw_ms, l.e2e_ms, hw, e2e);
}

static void
assert_key(const char *s, const char *key)
{
	struct progress_line l = parse_ok(s);

	assert_string_equal(l.key, key);
}

/* ---- accepted lines -------------------------------------------------- */

static void
test_manual_line(void **state)
{
	struct progress_line l;

	(void)state;
	l = parse_ok("this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms.");
	assert_true(l.hw_ms == 2201.521);
	assert_true(l.e2e_ms == 3317.794921875);
	assert_string_equal(l.key, "");
}

static void
test_number_formats(void **state)
{
	(void)state;
	assert_times(TEXT "2201 and e2e time is 3317 ms.", 2201.0, 3317.0);
	assert_times(TEXT "0 and e2e time is 1 ms", 0.0, 1.0);
	assert_times(TEXT "2.2e3 and e2e time is 3.5E+3 ms.", 2200.0, 3500.0);
	assert_times(TEXT "25e-1 and e2e time is 1e2 ms.", 2.5, 100.0);
	assert_times(TEXT ".5 and e2e time is 7. ms.", 0.5, 7.0);
	assert_times(TEXT "0.000123 and e2e time is 00012.50 ms.", 0.000123, 12.5);
	/* More digits than a double holds: still the nearest value or next to it */
	{
		struct progress_line l = parse_ok(
			TEXT "3.14159265358979323846264338327950288 and e2e time is "
			"123456789012345678901234567890 ms.");

		assert_true(l.hw_ms > 3.1415926535897 && l.hw_ms < 3.1415926535898);
		assert_true(l.e2e_ms > 1.2345678901234e29 && l.e2e_ms < 1.2345678901235e29);
	}
	/* Near the ends of the range: finite, positive, close to the text */
	{
		struct progress_line l = parse_ok(
			TEXT "1.7976931348623e308 and e2e time is 1e-300 ms.");

		assert_true(l.hw_ms > 1.7976931348622e308 && l.hw_ms <= DBL_MAX);
		assert_true(l.e2e_ms > 0.999999999999e-300 && l.e2e_ms < 1.000000000001e-300);
	}
}

/* xorshift32: the same numbers on every run */
static uint32_t
rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* What strtod() reads in the C locale, for numbers of every shape. */
static void
test_numbers_as_strtod(void **state)
{
	uint32_t x = 12345;
	char num[64], line[160];

	(void)state;
	for (int i = 0; i < 20000; i++) {
		int ints = (int)(rnd(&x) % 12), fracs = (int)(rnd(&x) % 14), n = 0;
		struct progress_line l;
		double want, diff;

		for (int k = 0; k < ints; k++)
			num[n++] = (char)('0' + rnd(&x) % 10);
		if (fracs > 0 || ints == 0) {
			num[n++] = '.';
			for (int k = 0; k < (fracs ? fracs : 1); k++)
				num[n++] = (char)('0' + rnd(&x) % 10);
		}
		if (rnd(&x) % 4 == 0)
			n += snprintf(num + n, sizeof(num) - (size_t)n, "e%s%u",
			              rnd(&x) % 2 ? "-" : "", (unsigned)(rnd(&x) % 40));
		num[n] = '\0';
		want = strtod(num, NULL);
		snprintf(line, sizeof(line), TEXT "%s and e2e time is 1 ms.", num);
		l = parse_ok(line);
		/* Exact for what trainings print; a few ulps for long mantissas */
		if (n <= 15 && !strchr(num, 'e')) {
			if (l.hw_ms != want)
				fail_msg("\"%s\": %.17g, strtod %.17g", num, l.hw_ms, want);
		} else {
			diff = l.hw_ms > want ? l.hw_ms - want : want - l.hw_ms;
			if (diff > 4e-16 * want)
				fail_msg("\"%s\": %.17g, strtod %.17g", num, l.hw_ms, want);
		}
	}
}

static void
test_blanks_around(void **state)
{
	(void)state;
	assert_times(TEXT "1.5 and e2e time is 2.5 ms.\r", 1.5, 2.5);
	assert_times(TEXT "1.5 and e2e time is 2.5 ms\r", 1.5, 2.5);
	assert_times(TEXT "1.5 and e2e time is 2.5 ms.   \t", 1.5, 2.5);
	assert_times("   " TEXT "1.5 and e2e time is 2.5 ms.", 1.5, 2.5);
	assert_times("\t" TEXT "1.5 and e2e time is 2.5 ms", 1.5, 2.5);
}

static void
test_launcher_keys(void **state)
{
	(void)state;
	/* torchrun */
	assert_key("[default3]:" TEXT "1 and e2e time is 2 ms.", "default3");
	assert_key("[rank12]: " TEXT "1 and e2e time is 2 ms.", "rank12");
	/* vigil --tag-output */
	assert_key("[n1:0] " TEXT "1 and e2e time is 2 ms.", "n1:0");
	assert_key("[gpu-07.cluster:15] " TEXT "1 and e2e time is 2 ms.", "gpu-07.cluster:15");
	/* Open MPI --tag-output */
	assert_key("[1,3]<stdout>:" TEXT "1 and e2e time is 2 ms.", "1,3");
	assert_key("[1,3]<stderr>: " TEXT "1 and e2e time is 2 ms.", "1,3");
	/* Nested launchers: each local process keeps its own key */
	assert_key("[1,3]<stdout>:[default0]:" TEXT "1 and e2e time is 2 ms.", "1,3/default0");
	assert_key("[1,3]<stdout>:[default1]:" TEXT "1 and e2e time is 2 ms.", "1,3/default1");
	/* Tags, then a logger's decoration */
	assert_key("[default5]:2026-11-20 12:00:01 INFO " TEXT "1 and e2e time is 2 ms.",
	           "default5");
}

static void
test_other_prefixes(void **state)
{
	(void)state;
	/* A logger: parsed, prefix ignored */
	assert_key("2026-11-20 12:00:01 INFO " TEXT "1 and e2e time is 2 ms.", "");
	assert_key("2026-11-20 12:00:01,123 - trainer - INFO - " TEXT
	           "1 and e2e time is 2 ms.", "");
	/* Brackets that are not a launcher's: a time, a level */
	assert_key("[12:00:01] " TEXT "1 and e2e time is 2 ms.", "");
	assert_key("[INFO] " TEXT "1 and e2e time is 2 ms.", "");
	assert_key("[1,3]<stdin>:" TEXT "1 and e2e time is 2 ms.", "");
	assert_key("[default 3]:" TEXT "1 and e2e time is 2 ms.", "");
	assert_key("[]:" TEXT "1 and e2e time is 2 ms.", "");
	/* A tag not at the start of the line is decoration too */
	assert_key("INFO [default3]:" TEXT "1 and e2e time is 2 ms.", "");
}

static void
test_long_keys(void **state)
{
	static const char a[] = "[node-with-a-very-long-name-0001.cluster.example.org:3] "
	                        TEXT "1 and e2e time is 2 ms.";
	static const char b[] = "[node-with-a-very-long-name-0001.cluster.example.org:4] "
	                        TEXT "1 and e2e time is 2 ms.";
	static const char exact[] = "abcdefghijklmnopqrstuvwxyz01234";
	struct progress_line la, la2, lb;
	char line[256];

	(void)state;
	la = parse_ok(a);
	la2 = parse_ok(a);
	lb = parse_ok(b);
	assert_int_equal(strlen(la.key), sizeof(la.key) - 1);
	/* The start of the name is kept, so a person can still read it */
	assert_memory_equal(la.key, "node-with-a-very-long-", 22);
	assert_string_equal(la.key, la2.key);
	assert_string_not_equal(la.key, lb.key);

	/* Exactly 31 bytes: kept as it is */
	assert_int_equal(strlen(exact), sizeof(la.key) - 1);
	snprintf(line, sizeof(line), "[%s]:" TEXT "1 and e2e time is 2 ms.", exact);
	assert_key(line, exact);
}

static void
test_invalid_utf8_around(void **state)
{
	(void)state;
	assert_times("\xff\xfe\xc3(\x80 " TEXT "3 and e2e time is 4 ms.", 3.0, 4.0);
	assert_key("[default3]:\xc0\xaf\xed\xa0\x80 " TEXT "3 and e2e time is 4 ms.",
	           "default3");
	/* Invalid bytes after the text break the line's shape: not parsed */
	assert_rejected(TEXT "3 and e2e time is 4 ms.\xff");
}

static void
test_nul_before_text(void **state)
{
	static const char line[] = "junk\0more junk\0" TEXT "3 and e2e time is 4 ms.";
	struct progress_line l;

	(void)state;
	l = parse_ok_n(line, sizeof(line) - 1);
	assert_true(l.hw_ms == 3.0 && l.e2e_ms == 4.0);
}

static void
test_text_twice(void **state)
{
	(void)state;
	/* An echo of an earlier, broken one: the line's own timing counts */
	assert_times(TEXT "oops " TEXT "5 and e2e time is 6 ms.", 5.0, 6.0);
	assert_key("[default3]:" TEXT "7 and " TEXT "5 and e2e time is 6 ms.", "default3");
	assert_times("[default3]:" TEXT "7 and " TEXT "5 and e2e time is 6 ms.", 5.0, 6.0);
}

/* ---- rejected lines -------------------------------------------------- */

static void
test_missing_parts(void **state)
{
	(void)state;
	assert_rejected("");
	assert_rejected(TEXT);
	assert_rejected(TEXT "1");
	assert_rejected(TEXT "1 and e2e time is ");
	assert_rejected(TEXT "1 and e2e time is 2");
	assert_rejected(TEXT "1 and e2e time is 2 m");
	assert_rejected(TEXT "and e2e time is 2 ms.");
	assert_rejected(TEXT "1 e2e time is 2 ms.");
	assert_rejected("iteration hardware time is 1 and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is ms.");
}

static void
test_wrong_words(void **state)
{
	(void)state;
	assert_rejected("this iteration software time is 1 and e2e time is 2 ms.");
	assert_rejected("This iteration hardware time is 1 and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and E2E time is 2 ms.");
	assert_rejected(TEXT "1 or e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is 2 s.");
	assert_rejected(TEXT "1 and e2e time is 2ms.");
	assert_rejected(TEXT "1 and e2e time is 2 ms. and more");
	assert_rejected(TEXT "1 and e2e time is 2 ms..");
	assert_rejected(TEXT " 1 and e2e time is 2 ms.");
	assert_rejected(TEXT "1  and e2e time is 2 ms.");
}

static void
test_bad_numbers(void **state)
{
	(void)state;
	assert_rejected(TEXT "-1 and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is -2 ms.");
	assert_rejected(TEXT "-0 and e2e time is 2 ms.");
	assert_rejected(TEXT "+1 and e2e time is 2 ms.");
	assert_rejected(TEXT "nan and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is nan ms.");
	assert_rejected(TEXT "inf and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is infinity ms.");
	assert_rejected(TEXT "0x10 and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is 0x1p4 ms.");
	assert_rejected(TEXT "1e999 and e2e time is 2 ms.");
	assert_rejected(TEXT "1 and e2e time is 2e99999999999999999999 ms.");
	assert_rejected(TEXT "1 and e2e time is 1.8e308 ms.");
	assert_rejected(TEXT "1,5 and e2e time is 2 ms.");
	assert_rejected(TEXT "1.2.3 and e2e time is 2 ms.");
	assert_rejected(TEXT "1e and e2e time is 2 ms.");
	assert_rejected(TEXT "1e+ and e2e time is 2 ms.");
	assert_rejected(TEXT ". and e2e time is 2 ms.");
}

static void
test_e2e_zero(void **state)
{
	(void)state;
	assert_rejected(TEXT "1 and e2e time is 0 ms.");
	assert_rejected(TEXT "1 and e2e time is 0.000 ms.");
	assert_rejected(TEXT "1 and e2e time is 0e5 ms.");
	/* Positive on paper, 0 as a double */
	assert_rejected(TEXT "1 and e2e time is 1e-400 ms.");
}

/* progress_tail(): where " ms" starts when the line ends like a timing line. */
static void
assert_tail(const char *line, long at)
{
	const char *ms = progress_tail(line, strlen(line));

	if (at < 0) {
		if (ms)
			fail_msg("\"%s\": tail at %ld, expected none", line, (long)(ms - line));
		return;
	}
	if (ms != line + at)
		fail_msg("\"%s\": tail at %ld, expected %ld", line, ms ? (long)(ms - line) : -1L, at);
}

static void
test_tail(void **state)
{
	static const char t[] = TEXT "1 and e2e time is 1";  /* the shortest, before " ms" */
	long n = (long)sizeof(t) - 1;

	(void)state;
	assert_int_equal(n + 3, PROGRESS_SHORTEST);
	assert_tail(TEXT "1 and e2e time is 1 ms", n);
	assert_tail(TEXT "1 and e2e time is 1 ms.", n);
	assert_tail(TEXT "1 and e2e time is 1 ms\r", n);
	assert_tail(TEXT "1 and e2e time is 1 ms. \t\r", n);
	assert_tail(TEXT "1 and e2e time is 1 ms   ", n);
	/* anything else after " ms", or no blank before it */
	assert_tail(TEXT "1 and e2e time is 1 msx", -1);
	assert_tail(TEXT "1 and e2e time is 1 ms..", -1);
	assert_tail(TEXT "1 and e2e time is 1ms.", -1);
	assert_tail(TEXT "1 and e2e time is 1 mS", -1);
	assert_tail(TEXT "1 and e2e time is 1 ms.x", -1);
	/* too short to be a timing line, whatever its end */
	assert_tail("1 ms", -1);
	assert_tail(TEXT "1 and e2e time 1 ms", -1);
	assert_tail("", -1);
	/* only the end is looked at: a line that is no timing line may pass */
	assert_tail("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ms", 53);
}

static void
test_garbage(void **state)
{
	static const char bytes[] = "\x00\x01\xff\xfe\x80\x7f[[[]]]::<stdout>";

	(void)state;
	assert_rejected("hello world");
	assert_rejected("w");
	assert_rejected("wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww");
	assert_rejected("[default3]:");
	assert_rejected_n(bytes, sizeof(bytes) - 1);
}

static void
test_cut_line(void **state)
{
	static const char full[] = "[default3]:" TEXT "2201.521 and e2e time is 3317.79 ms.";
	size_t n = strlen(full);

	(void)state;
	parse_ok_n(full, n);
	/* Every cut but the one that drops only the final '.' */
	for (size_t cut = 0; cut < n - 1; cut++)
		assert_rejected_n(full, cut);
}

static void
test_nul_inside(void **state)
{
	static const char a[] = TEXT "1\0 and e2e time is 2 ms.";
	static const char b[] = "this iteration\0hardware time is 1 and e2e time is 2 ms.";
	static const char c[] = TEXT "1 and e2e time is 2 ms.\0";

	(void)state;
	assert_rejected_n(a, sizeof(a) - 1);
	assert_rejected_n(b, sizeof(b) - 1);
	assert_rejected_n(c, sizeof(c) - 1);
	/* The length counts, not the NUL: a stops short of the text here */
	assert_rejected(a);
}

static double
seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void
test_huge_line(void **state)
{
	static const char timing[] = TEXT "8 and e2e time is 9 ms.";
	const size_t n = 1 << 20;
	char *buf = malloc(n + sizeof(timing));
	struct progress_line l;
	struct timespec t0;

	(void)state;
	assert_non_null(buf);
	/* A tensor dumped on one line: refused at its last bytes */
	for (size_t i = 0; i < n; i++)
		buf[i] = "0123456789., -tensor([[ e+hardware time is]])"[i % 46];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(progress_parse(buf, n, &l));
	/* Milliseconds at most, well under a second even under valgrind */
	assert_true(seconds_since(&t0) < 1.0);

	/* Worst case: a megabyte of one number before " ms", walked once */
	memset(buf, '7', n);
	memcpy(buf + n - 3, " ms", 3);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(progress_parse(buf, n, &l));
	assert_true(seconds_since(&t0) < 1.0);

	/* A megabyte of tags: the key stays 31 bytes, hashed */
	for (size_t i = 0; i + 4 <= n; i += 4)
		memcpy(buf + i, "[a]:", 4);
	memcpy(buf + n, timing, sizeof(timing) - 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	l = parse_ok_n(buf, n + sizeof(timing) - 1);
	assert_true(seconds_since(&t0) < 1.0);
	assert_int_equal(strlen(l.key), sizeof(l.key) - 1);
	assert_memory_equal(l.key, "a/a/a/a/a/a/a/a/a/a/a/~", 23);

	/* A long line of decoration, then the text: still parses */
	memset(buf, 'x', n);
	l = parse_ok_n(buf, n + sizeof(timing) - 1);
	assert_true(l.hw_ms == 8.0 && l.e2e_ms == 9.0);
	assert_string_equal(l.key, "");
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manual_line),
		cmocka_unit_test(test_number_formats),
		cmocka_unit_test(test_numbers_as_strtod),
		cmocka_unit_test(test_blanks_around),
		cmocka_unit_test(test_launcher_keys),
		cmocka_unit_test(test_other_prefixes),
		cmocka_unit_test(test_long_keys),
		cmocka_unit_test(test_invalid_utf8_around),
		cmocka_unit_test(test_nul_before_text),
		cmocka_unit_test(test_text_twice),
		cmocka_unit_test(test_missing_parts),
		cmocka_unit_test(test_wrong_words),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_e2e_zero),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_cut_line),
		cmocka_unit_test(test_nul_inside),
		cmocka_unit_test(test_huge_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
