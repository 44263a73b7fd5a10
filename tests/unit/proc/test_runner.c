/*
 * test_runner.c - a helper program beside the loop: its lines, its exit
 * status whoever reaps the keeper, its deadline.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/loop.h"
#include "proc/runner.h"

struct seen {
	char lines[8][128];
	int nlines;
	bool done;
	int status;
};

static void
on_line(void *arg, const char *line, size_t len)
{
	struct seen *s = arg;

	if (s->nlines < 8)
		snprintf(s->lines[s->nlines++], sizeof(s->lines[0]), "%.*s", (int)len, line);
}

static void
on_done(void *arg, int status)
{
	struct seen *s = arg;

	s->done = true;
	s->status = status;
}

/* Run SCRIPT with sh under TIMEOUT_S; with GREEDY, reap every child in
 * every turn as child_reap() does.  Returns how long it took (ms). */
static long
run(const char *script, double timeout_s, bool greedy, struct seen *s)
{
	static char sh[] = "/bin/sh", c[] = "-c";
	char copy[512];
	char *argv[] = { sh, c, copy, NULL };
	struct runner_opts o = { .path = "/bin/sh", .argv = argv, .timeout_s = timeout_s };
	struct runner_ops ops = { on_line, on_done, s };
	struct loop *l = loop_new();
	struct runner *r = NULL;
	uint64_t t0;

	snprintf(copy, sizeof(copy), "%s", script);
	memset(s, 0, sizeof(*s));
	assert_non_null(l);
	t0 = loop_now(l);
	assert_int_equal(runner_start(l, &o, &ops, &r), 0);
	assert_true(runner_pid(r) > 0);
	while (!s->done) {
		assert_true(loop_run_once(l, 50) >= 0);
		while (greedy && waitpid(-1, NULL, WNOHANG) > 0)
			;
		assert_true(loop_now(l) - t0 < 10000);
	}
	assert_true(runner_finished(r));
	assert_int_equal(runner_status(r), s->status);
	t0 = loop_now(l) - t0;
	runner_free(r);
	loop_free(l);
	return (long)t0;
}

static void
test_lines_and_status(void **state)
{
	struct seen s;

	(void)state;
	run("echo one; echo two >&2; printf 'three'; exit 3", 5, false, &s);
	assert_int_equal(s.status, 3);
	assert_int_equal(s.nlines, 3);
	assert_string_equal(s.lines[0], "one");
	assert_string_equal(s.lines[1], "two");
	assert_string_equal(s.lines[2], "three");  /* the unterminated last line */
	run("true", 5, false, &s);
	assert_int_equal(s.status, 0);
	assert_int_equal(s.nlines, 0);
}

/* The keeper reaped by someone else's waitpid(-1): the status still comes. */
static void
test_status_survives_greedy_reaper(void **state)
{
	struct seen s;

	(void)state;
	for (int i = 0; i < 5; i++) {
		run("sleep 0.05; exit 7", 5, true, &s);
		assert_int_equal(s.status, 7);
	}
	run("kill -TERM $$", 5, true, &s);
	assert_int_equal(s.status, 128 + SIGTERM);
}

/* Past the deadline the whole group is killed: its background child too. */
static void
test_deadline(void **state)
{
	struct seen s;
	long ms;

	(void)state;
	ms = run("sleep 30 & echo started; wait", 0.3, false, &s);
	assert_int_equal(s.status, RUNNER_TIMEOUT);
	assert_string_equal(s.lines[0], "started");
	assert_true(ms >= 250 && ms < 3000);
}

/* A program that leaves a process holding the output is not waited for. */
static void
test_output_held(void **state)
{
	struct seen s;
	long ms;

	(void)state;
	ms = run("(sleep 5 &) ; echo bye; exit 0", 10, false, &s);
	assert_int_equal(s.status, 0);
	assert_string_equal(s.lines[0], "bye");
	assert_true(ms < 3000);
}

static void
test_not_found(void **state)
{
	struct seen s;

	(void)state;
	run("exec /nonexistent/program", 5, false, &s);
	assert_int_equal(s.status, 127);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_and_status),
		cmocka_unit_test(test_status_survives_greedy_reaper),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_output_held),
		cmocka_unit_test(test_not_found),
	};

	/* a background sleep left by a test is reparented to init, not to us */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
