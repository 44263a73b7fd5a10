/*
 * test_fanout.c - several jobs in children under one deadline: answers
 * come back whole, blocked jobs cost the deadline once and are killed,
 * short, long and dying answers are told apart.  A job blocks the way a
 * dead NFS server blocks a probe: it opens a FIFO nobody writes to.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../proc.h"
#include "../scratch.h"
#include "../fstree.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "proc/fanout.h"

static char dir[512];
static char fifo[600];

struct reply {
	int pid;
	int value;
};

/* Answers with its argument. */
static int
job_answer(void *arg, int fd)
{
	struct reply r = { (int)getpid(), *(int *)arg };

	return util_write_all(fd, &r, sizeof(r)) < 0;
}

/* Says who it is, then blocks opening the FIFO for reading. */
static int
job_block(void *arg, int fd)
{
	int pid = (int)getpid();

	(void)arg;
	if (util_write_all(fd, &pid, sizeof(pid)) < 0)
		return 1;
	(void)open(fifo, O_RDONLY);
	return 0;
}

/* Half an answer. */
static int
job_short(void *arg, int fd)
{
	(void)arg;
	return util_write_all(fd, "ab", 2) < 0;
}

/* More than was asked for: the rest is dropped and the job still ends. */
static int
job_chatty(void *arg, int fd)
{
	static char big[200000];
	struct reply r = { (int)getpid(), 7 };

	(void)arg;
	if (util_write_all(fd, &r, sizeof(r)) < 0)
		return 1;
	memset(big, 'x', sizeof(big));
	return util_write_all(fd, big, sizeof(big)) < 0;
}

static int
job_die(void *arg, int fd)
{
	(void)arg;
	(void)fd;
	raise(SIGKILL);
	return 0;
}

static void
set(struct fanout_job *j, timed_fn *fn, void *arg, struct reply *out)
{
	memset(out, 0, sizeof(*out));
	*j = (struct fanout_job){ .fn = fn, .arg = arg, .out = out, .size = sizeof(*out),
	                          .rc = 99, .len = 99 };
}

static int
group_setup(void **state)
{
	(void)state;
	if (make_scratch_dir(dir, sizeof(dir), "fanout") < 0)
		return -1;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	return mkfifo(fifo, 0600);
}

static int
group_teardown(void **state)
{
	(void)state;
	rm_rf(dir);
	return 0;
}

static void
test_answers(void **state)
{
	struct fanout_job jobs[5];
	struct reply out[5];
	int values[5] = { 10, 11, 12, 13, 14 };

	(void)state;
	for (int i = 0; i < 5; i++)
		set(&jobs[i], job_answer, &values[i], &out[i]);
	assert_int_equal(fanout_run(jobs, 5, 5), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(jobs[i].rc, 0);
		assert_int_equal(jobs[i].len, sizeof(struct reply));
		assert_int_equal(out[i].value, values[i]);
		assert_int_not_equal(out[i].pid, (int)getpid());
		/* each in a child of its own */
		for (int k = 0; k < i; k++)
			assert_int_not_equal(out[i].pid, out[k].pid);
	}
}

/*
 * Seven blocked jobs and two quick ones under a 1 s deadline: the whole
 * call takes about 1 s (one after the other would take 7), the quick
 * ones answer, the blocked ones time out and are gone afterwards.
 */
static void
test_blocked_at_once(void **state)
{
	struct fanout_job jobs[9];
	struct reply out[9];
	int values[2] = { 1, 2 };
	double t0, elapsed;

	(void)state;
	for (int i = 0; i < 9; i++)
		set(&jobs[i], i < 7 ? job_block : job_answer, i < 7 ? NULL : &values[i - 7], &out[i]);
	t0 = now();
	assert_int_equal(fanout_run(jobs, 9, 1), 0);
	elapsed = now() - t0;
	print_message("  9 jobs, 7 blocked, 1 s deadline: %.3f s\n", elapsed);
	assert_true(elapsed >= 0.9);
	assert_true(elapsed < 2.0);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(jobs[i].rc, -ETIMEDOUT);
		assert_int_equal(jobs[i].len, sizeof(int));  /* what came before it blocked */
		assert_true(out[i].pid > 0);
	}
	assert_int_equal(jobs[7].rc, 0);
	assert_int_equal(out[7].value, 1);
	assert_int_equal(jobs[8].rc, 0);
	assert_int_equal(out[8].value, 2);
	/* Killed, not left behind: orphans come to this process (subreaper). */
	reap_orphans();
	for (int i = 0; i < 7; i++) {
		errno = 0;
		assert_int_equal(kill(out[i].pid, 0), -1);
		assert_int_equal(errno, ESRCH);
	}
}

static void
test_short_long_dead(void **state)
{
	struct fanout_job jobs[4];
	struct reply out[4];
	int v = 5;

	(void)state;
	set(&jobs[0], job_short, NULL, &out[0]);
	set(&jobs[1], job_chatty, NULL, &out[1]);
	set(&jobs[2], job_die, NULL, &out[2]);
	set(&jobs[3], job_answer, &v, &out[3]);
	assert_int_equal(fanout_run(jobs, 4, 5), 0);
	assert_int_equal(jobs[0].rc, -EPROTO);
	assert_int_equal(jobs[0].len, 2);
	assert_memory_equal(&out[0], "ab", 2);
	assert_int_equal(jobs[1].rc, 0);
	assert_int_equal(out[1].value, 7);
	assert_int_equal(jobs[2].rc, -EPROTO);
	assert_int_equal(jobs[2].len, 0);
	assert_int_equal(jobs[3].rc, 0);
	assert_int_equal(out[3].value, 5);
}

/* One job runs straight under timed_run(), with the same outcomes. */
static void
test_one(void **state)
{
	struct fanout_job job;
	struct reply out;
	int v = 42;
	double t0;

	(void)state;
	set(&job, job_answer, &v, &out);
	assert_int_equal(fanout_run(&job, 1, 5), 0);
	assert_int_equal(job.rc, 0);
	assert_int_equal(out.value, 42);
	set(&job, job_short, NULL, &out);
	assert_int_equal(fanout_run(&job, 1, 5), 0);
	assert_int_equal(job.rc, -EPROTO);
	set(&job, job_block, NULL, &out);
	t0 = now();
	assert_int_equal(fanout_run(&job, 1, 0.5), 0);
	assert_true(now() - t0 < 1.5);
	assert_int_equal(job.rc, -ETIMEDOUT);
	reap_orphans();
}

static void
test_bad_timeout(void **state)
{
	const double bad[] = { 0, -1, NAN, INFINITY, 1e12 };
	struct fanout_job jobs[2];
	struct reply out[2];
	int v = 1;

	(void)state;
	assert_int_equal(fanout_run(NULL, 0, 1), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set(&jobs[0], job_answer, &v, &out[0]);
		set(&jobs[1], job_answer, &v, &out[1]);
		assert_int_equal(fanout_run(jobs, 2, bad[i]), -EINVAL);
		assert_int_equal(jobs[0].rc, -EINVAL);
		assert_int_equal(jobs[1].rc, -EINVAL);
		assert_int_equal(fanout_run(jobs, 1, bad[i]), -EINVAL);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_blocked_at_once),
		cmocka_unit_test(test_short_long_dead),
		cmocka_unit_test(test_one),
		cmocka_unit_test(test_bad_timeout),
	};

	/* Jobs killed after their helper is gone come here, not to init. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
