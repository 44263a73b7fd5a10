/*
 * test_notify.c - the alert notifier: JSON on stdin, never waited for.
 */
#include "autoconf.h"

#include "../vigil_test.h"
#include "../scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/notify.h"

static const char alert[] =
	"{\"kind\":\"straggler\",\"iter\":120,\"node\":\"n3\",\"rank\":2,\"value\":48.5,"
	"\"message\":\"n3 (rank 2): e2e 48.5% above the median for 5 iterations\"}";

/* Room for what a command wrote to the output file (slurp()). */
#define OUT_SIZE (3 * NOTIFY_JSON_MAX)

struct fixture {
	char dir[64];
	char out[128];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (make_scratch_dir(f->dir, sizeof(f->dir), "notify") < 0)
		return -1;
	snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->out);
	rmdir(f->dir);
	free(f);
	return 0;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Spawn CMD with JSON, wait for it (the test is its parent); its status. */
static int
run_wait(const char *cmd, const char *json)
{
	pid_t pid = -1;
	int st;

	assert_int_equal(notify_spawn(cmd, json, &pid), 0);
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void
test_json_on_stdin(void **state)
{
	struct fixture *f = *state;
	char cmd[256];
	char *got;
	int st;

	snprintf(cmd, sizeof(cmd), "cat > '%s'", f->out);
	st = run_wait(cmd, alert);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	got = slurp(f->out, OUT_SIZE, NULL);
	assert_string_equal(got, alert);
	free(got);
}

/* Exactly the cap passes whole; one byte more is refused, nothing runs. */
static void
test_size_cap(void **state)
{
	struct fixture *f = *state;
	char *big = malloc(NOTIFY_JSON_MAX + 2);
	char cmd[256], *got;
	size_t len;
	pid_t pid = -1;
	int st;

	assert_non_null(big);
	memset(big, 'x', NOTIFY_JSON_MAX);
	big[NOTIFY_JSON_MAX] = '\0';
	snprintf(cmd, sizeof(cmd), "cat > '%s'", f->out);
	st = run_wait(cmd, big);
	assert_int_equal(WEXITSTATUS(st), 0);
	got = slurp(f->out, OUT_SIZE, &len);
	assert_int_equal(len, NOTIFY_JSON_MAX);
	assert_memory_equal(got, big, NOTIFY_JSON_MAX);
	free(got);

	big[NOTIFY_JSON_MAX] = 'x';
	big[NOTIFY_JSON_MAX + 1] = '\0';
	assert_int_equal(notify_spawn("true", big, &pid), -EMSGSIZE);
	assert_int_equal(pid, -1);
	assert_int_equal(waitpid(-1, &st, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	free(big);
}

/* A notifier that hangs costs the caller nothing and can be killed. */
static void
test_slow_notifier(void **state)
{
	pid_t pid = -1;
	double t0, dt;
	int st;

	(void)state;
	t0 = now_ms();
	assert_int_equal(notify_spawn("sleep 100", alert, &pid), 0);
	dt = now_ms() - t0;
	assert_true(dt < 100);
	/* its own group, so the whole of it can be killed */
	assert_int_equal(getpgid(pid), pid);
	assert_int_not_equal(getpgid(pid), getpgrp());
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0);  /* still running */
	assert_int_equal(kill(-pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

/* Whatever the command does, spawning succeeded; the status is the shell's. */
static void
test_failing_notifier(void **state)
{
	int st;

	(void)state;
	st = run_wait("exit 3", alert);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 3);
	st = run_wait("/nonexistent/vigil-notifier 2>/dev/null", alert);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 127);
	/* and the next one still works */
	st = run_wait("read x && [ \"$x\" = '{}' ]", "{}\n");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
test_bad_arguments(void **state)
{
	pid_t pid = -1;

	(void)state;
	assert_int_equal(notify_spawn("", alert, &pid), -EINVAL);
	assert_int_equal(notify_spawn(NULL, alert, &pid), -EINVAL);
	assert_int_equal(notify_spawn("true", NULL, &pid), -EINVAL);
	assert_int_equal(pid, -1);
}

/*
 * The agent blocks the signals it reads from a signalfd and may ignore
 * others; the notifier's programs start with none blocked or ignored.
 */
static void
test_signals_restored(void **state)
{
	struct fixture *f = *state;
	sigset_t set, old;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int;
	char cmd[256], *got;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1);
	assert_int_equal(sigprocmask(SIG_BLOCK, &set, &old), 0);
	assert_int_equal(sigaction(SIGINT, &ign, &old_int), 0);
	snprintf(cmd, sizeof(cmd), "grep -E '^Sig(Blk|Ign)' /proc/self/status > '%s'", f->out);
	(void)run_wait(cmd, alert);
	assert_int_equal(sigaction(SIGINT, &old_int, NULL), 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	got = slurp(f->out, OUT_SIZE, NULL);
	assert_string_equal(got, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
	free(got);
}

/* stdin a pipe, stdout /dev/null, stderr the agent's own. */
static void
test_descriptors(void **state)
{
	struct fixture *f = *state;
	char cmd[512], mine[256], want[512], *got;
	ssize_t n;
	int spare, probe;
	bool cloexec_works;

	n = readlink("/proc/self/fd/2", mine, sizeof(mine) - 1);
	assert_true(n > 0);
	mine[n] = '\0';

	/* a descriptor a library left inheritable must not reach it */
	spare = fcntl(STDIN_FILENO, F_DUPFD, 57);
	assert_true(spare >= 57);
	probe = fcntl(STDIN_FILENO, F_DUPFD, 90);
	assert_true(probe >= 90);
#ifdef CLOSE_RANGE_CLOEXEC
	cloexec_works = close_range((unsigned)probe, (unsigned)probe, CLOSE_RANGE_CLOEXEC) == 0;
#else
	cloexec_works = false;
#endif
	close(probe);

	snprintf(cmd, sizeof(cmd),
	         "i=$(readlink /proc/$$/fd/0); o=$(readlink /proc/$$/fd/1); "
	         "e=$(readlink /proc/$$/fd/2); "
	         "if [ -e /proc/$$/fd/%d ]; then x=leaked; else x=closed; fi; "
	         "printf '%%s|%%s|%%s|%%s' \"${i%%%%:*}\" \"$o\" \"$e\" \"$x\" > '%s'",
	         spare, f->out);
	(void)run_wait(cmd, alert);
	close(spare);
	got = slurp(f->out, OUT_SIZE, NULL);
	snprintf(want, sizeof(want), "pipe|/dev/null|%s|", mine);
	assert_memory_equal(got, want, strlen(want));
	/* kernels before 5.11 lack close_range(CLOSE_RANGE_CLOEXEC) */
	if (cloexec_works)
		assert_string_equal(got + strlen(want), "closed");
	free(got);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_json_on_stdin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_notifier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_notifier, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signals_restored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_descriptors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
