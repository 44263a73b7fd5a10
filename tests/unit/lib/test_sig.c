/*
 * test_sig.c - signals as descriptors (signalfd and self-pipe), the
 * child's restored signal state, names.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/sig.h"

/* ---- fixtures: each test starts and ends with the signal state saved
 * here, whatever it blocked or installed ------------------------------- */

struct saved {
	sigset_t mask;
	struct sigaction act[NSIG];
};

static int
setup(void **state)
{
	struct saved *s = calloc(1, sizeof(*s));

	if (!s || sigprocmask(SIG_SETMASK, NULL, &s->mask) < 0)
		return -1;
	for (int i = 1; i < NSIG; i++)
		(void)sigaction(i, NULL, &s->act[i]);  /* EINVAL for 32/33: unused */
	*state = s;
	return 0;
}

static int
teardown(void **state)
{
	struct saved *s = *state;
	sigset_t handled;
	struct timespec zero = { 0, 0 };

	/* Discard what a test left pending, then restore. */
	sig_handled_set(&handled);
	while (sigtimedwait(&handled, NULL, &zero) > 0)
		;
	for (int i = 1; i < NSIG; i++)
		if (i != SIGKILL && i != SIGSTOP)
			(void)sigaction(i, &s->act[i], NULL);
	(void)sigprocmask(SIG_SETMASK, &s->mask, NULL);
	free(s);
	return 0;
}

/* ---- the handled set, blocking -------------------------------------- */

static void
test_handled_set(void **state)
{
	static const int in[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
	                          SIGUSR2, SIGCHLD, SIGALRM, SIGCONT };
	static const int out[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
	                           SIGKILL, SIGSTOP, SIGPIPE, SIGTRAP };
	sigset_t set;

	(void)state;
	sig_handled_set(&set);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		assert_int_equal(sigismember(&set, in[i]), 1);
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
		assert_int_equal(sigismember(&set, out[i]), 0);
}

static void
test_block_saves_old(void **state)
{
	sigset_t before, old, now, handled;

	(void)state;
	sigemptyset(&before);
	sigaddset(&before, SIGWINCH);
	assert_int_equal(sigprocmask(SIG_SETMASK, &before, NULL), 0);
	assert_int_equal(sig_block(&old), 0);
	assert_int_equal(sigismember(&old, SIGWINCH), 1);
	assert_int_equal(sigismember(&old, SIGTERM), 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &now), 0);
	sig_handled_set(&handled);
	for (int i = 1; i < NSIG; i++)
		if (sigismember(&handled, i) == 1)
			assert_int_equal(sigismember(&now, i), 1);
	assert_int_equal(sigismember(&now, SIGWINCH), 1);
	assert_int_equal(sigismember(&now, SIGSEGV), 0);
}

/* ---- reading signals ------------------------------------------------- */

static void
assert_fd_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

	assert_true(fl >= 0 && (fl & O_NONBLOCK));
	assert_true(fdfl >= 0 && (fdfl & FD_CLOEXEC));
}

/* The next signal other than SIGCHLD (the self-pipe also hears about
 * children that other tests left behind). */
static int
read_skip_chld(int fd, pid_t *pid)
{
	int sig;

	do
		sig = sig_fd_read(fd, pid);
	while (sig == SIGCHLD);
	return sig;
}

/* Read FD: nothing, then our own raise(), then a signal sent by another
 * process with its pid, then SIGTERM and SIGUSR1 both pending. */
static void
exercise_fd(int fd)
{
	pid_t pid = -1, kid;
	int st, got[2];

	assert_fd_flags(fd);
	assert_int_equal(read_skip_chld(fd, &pid), 0);

	assert_int_equal(raise(SIGUSR1), 0);
	pid = -1;
	assert_int_equal(read_skip_chld(fd, &pid), SIGUSR1);
	assert_int_equal(pid, getpid());
	assert_int_equal(read_skip_chld(fd, NULL), 0);

	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0)
		_exit(kill(getppid(), SIGUSR2) == 0 ? 0 : 1);
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid = -1;
	assert_int_equal(read_skip_chld(fd, &pid), SIGUSR2);
	assert_int_equal(pid, kid);

	assert_int_equal(kill(getpid(), SIGTERM), 0);
	assert_int_equal(kill(getpid(), SIGHUP), 0);
	got[0] = read_skip_chld(fd, NULL);
	got[1] = read_skip_chld(fd, NULL);
	assert_true((got[0] == SIGTERM && got[1] == SIGHUP) ||
	            (got[0] == SIGHUP && got[1] == SIGTERM));
	assert_int_equal(read_skip_chld(fd, NULL), 0);
}

static void
test_signalfd(void **state)
{
	sigset_t old;
	int fd;

	(void)state;
	assert_int_equal(sig_block(&old), 0);
	fd = sig_fd_open();
	assert_true(fd >= 0);
	exercise_fd(fd);
	sig_fd_close(fd);
	assert_int_equal(sig_fd_read(-1, NULL), -EBADF);
}

static void
test_self_pipe(void **state)
{
	struct saved *s = *state;
	struct sigaction act;
	sigset_t old, now;
	int fd;

	assert_int_equal(sig_block(&old), 0);
	/* Pending before the pipe exists: must come through it. */
	assert_int_equal(raise(SIGQUIT), 0);
	fd = sig_pipe_open();
	assert_true(fd >= 0);
	assert_int_equal(sig_pipe_open(), -EBUSY);
	assert_int_equal(read_skip_chld(fd, NULL), SIGQUIT);
	exercise_fd(fd);

	sig_fd_close(fd);
	/* Closed: the set is blocked again and the old handlers are back. */
	assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &now), 0);
	assert_int_equal(sigismember(&now, SIGTERM), 1);
	assert_int_equal(sigismember(&now, SIGCHLD), 1);
	assert_int_equal(sigaction(SIGTERM, NULL, &act), 0);
	assert_true(act.sa_handler == s->act[SIGTERM].sa_handler);
	assert_int_equal(sigaction(SIGUSR1, NULL, &act), 0);
	assert_true(act.sa_handler == s->act[SIGUSR1].sa_handler);
	/* And a new one can be opened. */
	fd = sig_pipe_open();
	assert_true(fd >= 0);
	sig_fd_close(fd);
}

/* ---- the child's signal state ---------------------------------------- */

/* The hex mask after NAME in /proc/self/status, or UINT64_MAX. */
static uint64_t
status_mask(const char *name)
{
	char line[256];
	uint64_t v = UINT64_MAX;
	size_t len = strlen(name);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, len) == 0)
			v = strtoull(line + len, NULL, 16);
	fclose(f);
	return v;
}

/*
 * In a forked child: ignore signals (one glibc reserves among them), block
 * everything, restore with a mask holding SIGUSR1 only; exit 0 when
 * /proc shows nothing ignored and exactly SIGUSR1 blocked.
 */
static int
restore_in_child(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	unsigned long ksa[8] = { (unsigned long)SIG_IGN };
	sigset_t all, want;
	uint64_t ignored;

	if (sigaction(SIGINT, &ign, NULL) < 0 || sigaction(SIGPIPE, &ign, NULL) < 0)
		return 2;
	if (syscall(SYS_rt_sigaction, 32, ksa, NULL, (size_t)(NSIG / 8)) < 0)
		return 3;
	/* Others may come ignored from whoever started us. */
	ignored = (1ULL << (SIGINT - 1)) | (1ULL << (SIGPIPE - 1)) | (1ULL << 31);
	if ((status_mask("SigIgn:") & ignored) != ignored)
		return 4;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	sigemptyset(&want);
	sigaddset(&want, SIGUSR1);
	errno = 1234;
	sig_child_restore(&want);
	if (errno != 1234)
		return 5;
	if (status_mask("SigIgn:") != 0)
		return 6;
	if (status_mask("SigBlk:") != 1ULL << (SIGUSR1 - 1))
		return 7;
	sig_child_restore(NULL);
	if (status_mask("SigBlk:") != 0)
		return 8;
	return 0;
}

static void
test_child_restore(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(restore_in_child());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- names ----------------------------------------------------------- */

static void
test_parse_valid(void **state)
{
	static const struct {
		const char *s;
		int sig;
	} ok[] = {
		{ "TERM", SIGTERM }, { "SIGTERM", SIGTERM }, { "term", SIGTERM },
		{ "SigTerm", SIGTERM }, { "15", 15 }, { "9", SIGKILL },
		{ "KILL", SIGKILL }, { "usr1", SIGUSR1 }, { "HUP", SIGHUP },
		{ "CHLD", SIGCHLD }, { "CLD", SIGCHLD }, { "IOT", SIGABRT },
		{ "WINCH", SIGWINCH }, { "SIG34", 34 }, { "1", 1 },
		{ "064", 64 },
	};
	int v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = -1;
		assert_int_equal(sig_parse(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].sig);
	}
}

static void
test_parse_invalid(void **state)
{
	static const char *const bad[] = {
		"", "0", "00", "SIG0", "65", "-1", "+15", " 15", "15 ", "15x",
		"TERMX", "SIG", "SIGSIGTERM", "99999999999999999999", "TERM ",
		"SIG-1", "SIGRTMIN", "0x0f",
	};
	char big[16];
	int v = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sig_parse(bad[i], &v), -EINVAL);
		assert_int_equal(v, 12345);
	}
	snprintf(big, sizeof(big), "%d", NSIG);
	assert_int_equal(sig_parse(big, &v), -EINVAL);
	assert_int_equal(sig_parse(NULL, &v), -EINVAL);
	assert_int_equal(v, 12345);
}

static void
test_names(void **state)
{
	const char *a, *b;

	(void)state;
	assert_string_equal(sig_name(SIGTERM), "SIGTERM");
	assert_string_equal(sig_name(SIGKILL), "SIGKILL");
	assert_string_equal(sig_name(SIGCHLD), "SIGCHLD");
	assert_string_equal(sig_name(SIGUSR2), "SIGUSR2");
	/* Unnamed numbers: each keeps its own string. */
	a = sig_name(34);
	b = sig_name(40);
	assert_string_equal(a, "SIG34");
	assert_string_equal(b, "SIG40");
	assert_string_equal(sig_name(0), "SIG0");
	assert_string_equal(sig_name(-3), "SIG-3");
	/* Every number round-trips. */
	for (int i = 1; i < NSIG; i++) {
		int v = 0;

		assert_int_equal(sig_parse(sig_name(i), &v), 0);
		assert_int_equal(v, i);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handled_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_saves_old, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signalfd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_pipe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_child_restore, setup, teardown),
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
