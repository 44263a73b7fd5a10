/*
 * test_timed.c - timed_run() and timed_exec(): results, deadlines, killing.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../proc.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/timed.h"

/* Gone: no such process, or a zombie nobody reaps (an orphan whose new
 * parent does not wait, as PID 1 in some containers). */
static int
process_gone(pid_t pid)
{
	char path[64], stat[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	stat[n] = '\0';
	p = strrchr(stat, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

/* Wait up to a second for PID to go: SIGKILL takes effect asynchronously. */
static int
process_gone_soon(pid_t pid)
{
	for (int i = 0; i < 100; i++) {
		if (process_gone(pid))
			return 1;
		usleep(10000);
	}
	return 0;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- timed_run ------------------------------------------------------ */

static int
fn_hello(void *arg, int fd)
{
	(void)arg;
	return write_all(fd, "hello 42", 8) < 0 ? 1 : 0;
}

static void
test_run_result(void **state)
{
	char buf[64];
	int status = -1;
	ssize_t n;

	(void)state;
	n = timed_run(fn_hello, NULL, 5, buf, sizeof(buf), &status);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "hello 42", 8);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int
fn_status(void *arg, int fd)
{
	(void)fd;
	return *(int *)arg;
}

static void
test_run_exit_status(void **state)
{
	int code = 7, status = -1;
	char buf[8];

	(void)state;
	assert_int_equal(timed_run(fn_status, &code, 5, buf, sizeof(buf), &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);

	/* status may be NULL */
	code = 0;
	assert_int_equal(timed_run(fn_status, &code, 5, buf, sizeof(buf), NULL), 0);
}

static int
fn_sleep_forever(void *arg, int fd)
{
	int report = *(int *)arg;
	pid_t self = getpid();

	(void)fd;
	if (write_all(report, &self, sizeof(self)) < 0)
		return 1;
	for (;;)
		pause();
}

static void
test_run_timeout(void **state)
{
	int report[2], status = 12345;
	char buf[16];
	double t0, elapsed;
	pid_t child = 0;
	ssize_t n;

	(void)state;
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	t0 = now();
	n = timed_run(fn_sleep_forever, &report[1], 0.3, buf, sizeof(buf), &status);
	elapsed = now() - t0;
	assert_int_equal(n, -ETIMEDOUT);
	assert_true(elapsed >= 0.29);
	assert_true(elapsed < 0.8);
	assert_int_equal(status, 12345);  /* untouched on timeout */

	assert_int_equal(read(report[0], &child, sizeof(child)), (ssize_t)sizeof(child));
	assert_true(child > 0);
	/* killed and reaped by timed_run itself, not left as a zombie */
	assert_int_equal(kill(child, 0), -1);
	assert_int_equal(errno, ESRCH);
	close(report[0]);
	close(report[1]);
}

/* The child reports, for 0, 1 and 2, whether each is /dev/null. */
static int
fn_stdio(void *arg, int fd)
{
	struct stat null, st;
	char ans[3];

	(void)arg;
	if (stat("/dev/null", &null) < 0)
		return 1;
	for (int i = 0; i < 3; i++)
		ans[i] = fstat(i, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == null.st_rdev
		         ? 'n' : 'x';
	return write_all(fd, ans, sizeof(ans)) < 0 ? 1 : 0;
}

/*
 * A child writes only to its result pipe: its 0, 1 and 2 are /dev/null,
 * so one stuck in the kernel holds none of the caller's (slurmd waits for
 * a HealthCheckProgram's output to reach EOF), also when the caller
 * itself started with them closed.
 */
static void
test_run_stdio_is_null(void **state)
{
	char buf[8];
	int saved;

	(void)state;
	assert_int_equal(timed_run(fn_stdio, NULL, 5, buf, sizeof(buf), NULL), 3);
	assert_memory_equal(buf, "nnn", 3);
	/* the caller's stdout closed: the result pipe may land on 1 */
	saved = dup(STDOUT_FILENO);
	assert_true(saved > 2);
	close(STDOUT_FILENO);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(timed_run(fn_stdio, NULL, 5, buf, sizeof(buf), NULL), 3);
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	assert_memory_equal(buf, "nnn", 3);
}

static int
fn_flood(void *arg, int fd)
{
	char chunk[8192];

	(void)arg;
	memset(chunk, 'x', sizeof(chunk));
	/* 1 MiB: far beyond the pipe's buffer, so the parent must drain */
	for (int i = 0; i < 128; i++) {
		if (write_all(fd, chunk, sizeof(chunk)) < 0)
			return 1;
	}
	return 0;
}

static void
test_run_truncates(void **state)
{
	char buf[101];
	int status = -1;
	double t0 = now();
	ssize_t n;

	(void)state;
	memset(buf, 0, sizeof(buf));
	n = timed_run(fn_flood, NULL, 10, buf, 100, &status);
	assert_int_equal(n, 100);
	assert_int_equal(buf[99], 'x');
	assert_int_equal(buf[100], '\0');  /* nothing written past MAX */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(now() - t0 < 5);
}

static void
test_run_bad_timeout(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(timed_run(fn_hello, NULL, 0, buf, sizeof(buf), NULL), -EINVAL);
	assert_int_equal(timed_run(fn_hello, NULL, -1, buf, sizeof(buf), NULL), -EINVAL);
}

/* ---- timed_exec ----------------------------------------------------- */

static void
test_exec_status_and_output(void **state)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"echo hi; exit 3", NULL };
	char *argv_err[] = { (char *)"sh", (char *)"-c", (char *)"echo oops >&2; exit 1", NULL };
	char buf[64];

	(void)state;
	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "hi\n");
	/* stderr is captured too */
	assert_int_equal(timed_exec(argv_err, 5, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "oops\n");
}

static void
test_exec_signal_status(void **state)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"kill -TERM $$", NULL };
	char buf[64];

	(void)state;
	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), 128 + SIGTERM);
}

static void
test_exec_missing(void **state)
{
	char *argv[] = { (char *)"vigil-test-no-such-program", NULL };
	char *argv_abs[] = { (char *)"/nonexistent/vigil/prog", NULL };
	char buf[64];

	(void)state;
	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(timed_exec(argv_abs, 5, buf, sizeof(buf)), -ENOENT);
}

/* A scratch directory for programs the tests write. */
static int
setup_dir(void **state)
{
	char *dir = malloc(PATH_MAX);

	if (!dir)
		return -1;
	if (make_scratch_dir(dir, PATH_MAX, "timed") < 0) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

static int
teardown_dir(void **state)
{
	char *dir = *state, path[PATH_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/prog", dir);
	(void)unlink(path);
	rc = rmdir(dir);
	free(dir);
	return rc;
}

static void
test_exec_not_executable(void **state)
{
	char path[PATH_MAX], buf[64];
	char *argv[] = { path, NULL };
	int fd;

	snprintf(path, sizeof(path), "%s/prog", (char *)*state);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
	close(fd);
	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), -EACCES);
	/* the same file, executable, runs */
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), 0);
}

static void
test_exec_timeout(void **state)
{
	char *argv[] = { (char *)"sleep", (char *)"100", NULL };
	char buf[64];
	double t0 = now(), elapsed;

	(void)state;
	assert_int_equal(timed_exec(argv, 0.3, buf, sizeof(buf)), -ETIMEDOUT);
	elapsed = now() - t0;
	assert_true(elapsed >= 0.29);
	assert_true(elapsed < 0.8);
}

static void
test_exec_timeout_kills_group(void **state)
{
	/* The shell's child holds the pipe too; only a group kill ends it. */
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"sleep 100 & echo $!; wait", NULL };
	char buf[64];
	double t0 = now(), elapsed;
	long grandchild;

	(void)state;
	assert_int_equal(timed_exec(argv, 0.3, buf, sizeof(buf)), -ETIMEDOUT);
	elapsed = now() - t0;
	assert_true(elapsed < 0.8);
	/* what was printed before the deadline is kept */
	grandchild = strtol(buf, NULL, 10);
	assert_true(grandchild > 1);
	assert_true(process_gone_soon((pid_t)grandchild));
	reap_orphans();
}

static void
test_exec_truncates(void **state)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"yes | head -c 300000", NULL };
	char buf[64];

	(void)state;
	assert_int_equal(timed_exec(argv, 10, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, "y\ny\ny\n", 6);
}

static void
test_exec_stdin_is_null(void **state)
{
	char *argv[] = { (char *)"readlink", (char *)"/proc/self/fd/0", NULL };
	char buf[64];

	(void)state;
	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/dev/null\n");
}

/* Value of the "NAME:\t<hex>" line of /proc/PID/status text. */
static unsigned long long
status_mask(const char *text, const char *name)
{
	const char *p = strstr(text, name);

	if (!p)
		return ~0ULL;
	return strtoull(p + strlen(name), NULL, 16);
}

static void
test_exec_resets_signals(void **state)
{
	char *argv[] = { (char *)"cat", (char *)"/proc/self/status", NULL };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int;
	sigset_t block, old_mask;
	char buf[4096];

	(void)state;
	/* as the agent does for its signalfd, plus an ignored signal */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGCHLD);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old_mask), 0);
	assert_int_equal(sigaction(SIGINT, &ign, &old_int), 0);

	assert_int_equal(timed_exec(argv, 5, buf, sizeof(buf)), 0);

	assert_int_equal(sigprocmask(SIG_SETMASK, &old_mask, NULL), 0);
	assert_int_equal(sigaction(SIGINT, &old_int, NULL), 0);
	assert_non_null(strstr(buf, "SigBlk:"));
	assert_int_equal(status_mask(buf, "SigBlk:"), 0);
	assert_int_equal(status_mask(buf, "SigIgn:"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_result),
		cmocka_unit_test(test_run_exit_status),
		cmocka_unit_test(test_run_timeout),
		cmocka_unit_test(test_run_truncates),
		cmocka_unit_test(test_run_stdio_is_null),
		cmocka_unit_test(test_run_bad_timeout),
		cmocka_unit_test(test_exec_status_and_output),
		cmocka_unit_test(test_exec_signal_status),
		cmocka_unit_test(test_exec_missing),
		cmocka_unit_test_setup_teardown(test_exec_not_executable, setup_dir, teardown_dir),
		cmocka_unit_test(test_exec_timeout),
		cmocka_unit_test(test_exec_timeout_kills_group),
		cmocka_unit_test(test_exec_truncates),
		cmocka_unit_test(test_exec_stdin_is_null),
		cmocka_unit_test(test_exec_resets_signals),
	};

	/* Orphans of the process groups the tests kill come back here. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
