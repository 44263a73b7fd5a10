/*
 * notify.c - fire-and-forget notifier for alerts.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/notify.h"
#include "proc/spawn.h"
#include "proc/trust.h"

/* Between fork() and exec(): async-signal-safe calls only (the agent may
 * have threads, the MPI library's). */
static void __attribute__((noreturn))
exec_notifier(const char *cmd, int in, int null)
{
	/* An agent started with 0, 1 or 2 closed may have got the pipe or
	 * /dev/null there: move both above 2 before dup2() onto 0 and 1 can
	 * close one of them. */
	in = spawn_above_stdio(in);
	null = spawn_above_stdio(null);
	if (in < 0 || null < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
		_exit(126);
	spawn_child_ready(NULL);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

int
notify_check(const char *cmd, char *why, size_t whylen)
{
	char what[PATH_MAX + 200];
	int rc = trust_command(cmd, what, sizeof(what));

	if (rc < 0)
		snprintf(why, whylen, "%s; %s", what, TRUST_FIX);
	return rc;
}

int
notify_spawn(const char *cmd, const char *json, pid_t *pid)
{
	int fds[2] = { -1, -1 }, null = -1, rc = 0;
	size_t len, off = 0;
	pid_t child;

	if (!cmd || !*cmd || !json)
		return -EINVAL;
	len = strlen(json);
	if (len > NOTIFY_JSON_MAX)
		return -EMSGSIZE;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	/* Fill the pipe now, so the agent never waits on a notifier that is
	 * slow to read (or never reads).  Non-blocking in case the pipe is
	 * smaller than promised: then we give up rather than hang. */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fds[1], json + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = errno == EAGAIN ? -EMSGSIZE : -errno;
			goto out;
		}
		off += (size_t)w;
	}
	/* Closed before fork: the notifier never holds the write end, so it
	 * reads EOF after the JSON. */
	(void)close(fds[1]);
	fds[1] = -1;
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0) {
		rc = -errno;
		goto out;
	}
	/* In a group of its own: kill(-pid) reaches every process the
	 * shell starts. */
	child = spawn_fork(NULL);
	if (child < 0) {
		rc = child;
		goto out;
	}
	if (child == 0)
		exec_notifier(cmd, fds[0], null);
	*pid = child;
out:
	if (fds[0] >= 0)
		(void)close(fds[0]);
	if (fds[1] >= 0)
		(void)close(fds[1]);
	if (null >= 0)
		(void)close(null);
	return rc;
}
