/*
 * timed.c - work in a child process under a deadline.
 *
 * The child's only channel back is a pipe; the parent polls it with what
 * is left of the deadline, so a child stuck in the kernel (a dead NFS
 * server, an unanswered RPC) costs the caller the timeout and no more.
 * A timed_run() child writes nowhere else: its 0, 1 and 2 are /dev/null.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"
#include "proc/spawn.h"
#include "proc/timed.h"

/* After SIGKILL, how often and how long to look for the child's exit. */
#define REAP_TRIES 20
#define REAP_PAUSE_NS 1000000L  /* 1 ms: 20 ms in all */

static void
pause_ns(long ns)
{
	struct timespec ts = { 0, ns };

	/* A signal cutting the pause short only makes the next try earlier. */
	(void)nanosleep(&ts, NULL);
}

/* waitpid(PID, WNOHANG) across EINTR: 1 when reaped, 0 when still there,
 * or a negative errno. */
static int
try_reap(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r == pid;
}

/*
 * Kill the child (its whole process group when GROUP) and reap it if that
 * takes no more than a few milliseconds.  A process in uninterruptible
 * sleep dies only when the kernel call returns; it then stays a zombie
 * until the agent's SIGCHLD handling collects it.
 */
static void
kill_child(pid_t pid, bool group)
{
	int status;

	if (group)
		(void)kill(-pid, SIGKILL);  /* ESRCH: the group is already gone */
	(void)kill(pid, SIGKILL);           /* in case setpgid() never happened */
	for (int i = 0; i < REAP_TRIES; i++) {
		if (try_reap(pid, &status) != 0)
			return;
		pause_ns(REAP_PAUSE_NS);
	}
}

/*
 * Read the child's output from FD into BUF (the first MAX bytes, the rest
 * drained and dropped, so the child never blocks on a full pipe), then reap
 * it, all before DEADLINE.  Returns 0 or a negative errno, and in *LENP the
 * number of bytes kept, also on failure; on timeout the child (or its
 * group) is killed.
 */
static int
collect(pid_t pid, int fd, int64_t deadline, bool group, char *buf, size_t max,
        size_t *lenp, int *status)
{
	size_t len = 0;
	long nap = 100000;  /* 0.1 ms, doubling: see the reaping below */
	int st = 0, rc;

	*lenp = 0;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char scratch[4096];
		int64_t left = deadline - util_now_ns();
		int ms;
		ssize_t n;

		if (left <= 0)
			goto timeout;
		/* Round up, or the last poll returns just before the deadline
		 * and spins with a zero timeout. */
		ms = left / 1000000 >= INT_MAX ? INT_MAX : (int)((left + 999999) / 1000000);
		rc = poll(&pfd, 1, ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			goto fail;
		if (rc == 0)
			continue;  /* the top of the loop sees the deadline */
		if (len < max)
			n = read(fd, buf + len, max - len);
		else
			n = read(fd, scratch, sizeof(scratch));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		if (len < max) {
			len += (size_t)n;
			*lenp = len;
		}
	}

	/*
	 * EOF: the child has closed its end, which almost always means it has
	 * exited.  Still, waitpid() without WNOHANG could block if it closed
	 * the pipe and then hung, so poll for its exit up to the deadline.
	 */
	for (;;) {
		int64_t left;

		/* An error here (ECHILD: reaped elsewhere) means the pid is no
		 * longer ours to kill. */
		rc = try_reap(pid, &st);
		if (rc < 0)
			return rc;
		if (rc == 1)
			break;
		left = deadline - util_now_ns();
		if (left <= 0)
			goto timeout;
		pause_ns(nap < left ? nap : (long)left);
		if (nap < 10000000)
			nap *= 2;
	}
	if (status)
		*status = st;
	return 0;

timeout:
	kill_child(pid, group);
	return -ETIMEDOUT;
fail:
	rc = -errno;
	kill_child(pid, group);
	return rc;
}

/*
 * In the child: 0, 1 and 2 onto /dev/null, OUT (the result pipe) moved
 * above them first.  A child stuck in the kernel (a dead NFS mount) outlives
 * its SIGKILL; holding its parent's stdout or stderr, it would keep the
 * reader of the parent's output (slurmd, for a HealthCheckProgram) waiting
 * for an EOF that comes only when the kernel call returns.  Returns the
 * result pipe's descriptor, or -1.  Async-signal-safe.
 */
static int
quiet_stdio(int out)
{
	int null;

	out = spawn_above_stdio(out);
	if (out < 0)
		return -1;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -1;
	for (int fd = 0; fd <= 2; fd++)
		if (null != fd && dup2(null, fd) < 0)
			return -1;
	if (null > 2)
		(void)close(null);
	return out;
}

static int
check_timeout(double timeout_s, int64_t *deadline)
{
	if (!(timeout_s > 0) || !isfinite(timeout_s) || timeout_s > 1e9)
		return -EINVAL;
	*deadline = util_now_ns() + (int64_t)(timeout_s * 1e9);
	return 0;
}

ssize_t
timed_run(timed_fn *fn, void *arg, double timeout_s, char *buf, size_t max,
          int *status)
{
	int64_t deadline;
	size_t len;
	int fds[2];
	int rc;
	pid_t pid;

	rc = check_timeout(timeout_s, &deadline);
	if (rc < 0)
		return rc;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = spawn_fork(NULL);
	if (pid < 0) {
		(void)close(fds[0]);
		(void)close(fds[1]);
		return pid;
	}
	if (pid == 0) {
		int out;

		(void)close(fds[0]);
		out = quiet_stdio(fds[1]);
		if (out < 0)
			_exit(1);
		spawn_child_ready(NULL);
		/* A parent that gave up has closed its end: the write fails
		 * with EPIPE and the child ends instead of dying of SIGPIPE
		 * somewhere inside FN. */
		(void)signal(SIGPIPE, SIG_IGN);
		_exit(fn(arg, out) & 0xff);
	}
	(void)close(fds[1]);
	rc = collect(pid, fds[0], deadline, true, buf, max, &len, status);
	(void)close(fds[0]);
	return rc < 0 ? rc : (ssize_t)len;
}

static void __attribute__((noreturn))
exec_child(char *const argv[], int out, int errfd)
{
	int null, e;

	/* Only async-signal-safe calls from here: the agent may have threads
	 * (the MPI library's).  An agent started with 0, 1 or 2 closed gets
	 * its pipes there: each is moved above 2 before any dup2(). */
	errfd = spawn_above_stdio(errfd);
	if (errfd < 0)
		_exit(126);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0)
		goto fail;
	null = spawn_above_stdio(null);
	out = spawn_above_stdio(out);
	if (null < 0 || out < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0)
		goto fail;
	/* The program starts with no signal blocked, every one at its
	 * default, and none of the agent's descriptors. */
	spawn_child_ready(NULL);
	execvp(argv[0], argv);
fail:
	e = errno;
	/* The parent reads this only if exec failed: the pipe is
	 * close-on-exec, so a successful exec leaves it empty. */
	(void)!write(errfd, &e, sizeof(e));
	_exit(e == ENOENT ? 127 : 126);
}

int
timed_exec(char *const argv[], double timeout_s, char *buf, size_t max)
{
	int64_t deadline;
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int status = 0, e, rc;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (buf && max > 0)
		buf[0] = '\0';
	if (!argv || !argv[0])
		return -EINVAL;
	rc = check_timeout(timeout_s, &deadline);
	if (rc < 0)
		return rc;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	/* In a group of its own, so a timeout kills the program's own
	 * children with it. */
	pid = spawn_fork(NULL);
	if (pid < 0) {
		rc = pid;
		goto out;
	}
	if (pid == 0) {
		(void)close(out[0]);
		(void)close(errp[0]);
		exec_child(argv, out[1], errp[1]);
	}
	(void)close(out[1]);
	(void)close(errp[1]);
	out[1] = errp[1] = -1;

	rc = collect(pid, out[0], deadline, true, buf, max > 0 ? max - 1 : 0, &len, &status);
	if (max > 0)
		buf[len] = '\0';
	if (rc < 0)
		goto out;
	/*
	 * The child is reaped, so the error pipe's write end is closed: this
	 * read returns at once, with the errno of a failed exec or nothing.
	 */
	do
		n = read(errp[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(e))
		rc = -e;
	else if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	else
		rc = -ECHILD;
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			(void)close(out[i]);
		if (errp[i] >= 0)
			(void)close(errp[i]);
	}
	return rc;
}
