/*
 * spawn.c - fork with every signal blocked; the child's last steps
 * before exec.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "lib/sig.h"
#include "proc/spawn.h"

pid_t
spawn_fork(pid_t (*fork_fn)(void))
{
	sigset_t all, saved;
	pid_t pid;
	int rc, e;

	(void)sigfillset(&all);
	rc = pthread_sigmask(SIG_SETMASK, &all, &saved);
	if (rc > 0)
		return -rc;
	pid = fork_fn ? fork_fn() : fork();
	if (pid == 0) {
		/* Before anything that can fail, so that a kill(-pid) from
		 * the parent reaches every process the child starts. */
		(void)setpgid(0, 0);
		return 0;
	}
	e = errno;
	(void)pthread_sigmask(SIG_SETMASK, &saved, NULL);  /* saved is valid */
	if (pid < 0)
		return -e;
	/* EACCES: the child has exec'd already, after its own setpgid(). */
	(void)setpgid(pid, pid);
	return pid;
}

int
spawn_above_stdio(int fd)
{
	/* Our descriptors are all close-on-exec; dup2() then gives the
	 * program copies without the flag. */
	return fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

void
spawn_child_ready(const sigset_t *mask)
{
	int e = errno;

#ifdef CLOSE_RANGE_CLOEXEC
	/* Our own descriptors are close-on-exec; this catches the ones a
	 * library opened without the flag.  Old kernels refuse it: then
	 * nothing else is done. */
	(void)close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
	sig_child_restore(mask);
	errno = e;
}

void
spawn_close_others(int keep)
{
	long max = sysconf(_SC_OPEN_MAX);

#ifdef CLOSE_RANGE_CLOEXEC
	if ((keep <= 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
	    close_range((unsigned)keep + 1, ~0U, 0) == 0)
		return;
#endif
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++)
		if (fd != keep)
			(void)close(fd);
}
