/*
 * sig.c - signals as readable descriptors: a signalfd, or a self-pipe.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/signalfd.h>
#endif

#include "lib/sig.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const int handled[] = {
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM, SIGCONT,
};

void
sig_handled_set(sigset_t *set)
{
	(void)sigemptyset(set);
	for (size_t i = 0; i < NELEM(handled); i++)
		(void)sigaddset(set, handled[i]);
}

int
sig_block(sigset_t *old)
{
	sigset_t set;
	int rc;

	sig_handled_set(&set);
	/* pthread_sigmask returns the error instead of setting errno. */
	rc = pthread_sigmask(SIG_BLOCK, &set, old);
	return -rc;
}

/* ---- the self-pipe -------------------------------------------------- */

/*
 * One record per signal: a write of this size to a pipe is atomic, so
 * records never interleave and the reader gets whole ones.
 */
struct pipe_msg {
	int sig;
	pid_t pid;
};

static int pipe_rd = -1, pipe_wr = -1;
static struct sigaction pipe_old[NELEM(handled)];

static void
pipe_handler(int sig, siginfo_t *si, void *uctx)
{
	struct pipe_msg m = { sig, 0 };
	int saved = errno;

	(void)uctx;
	/*
	 * si_pid is only meaningful for signals a process sent and for
	 * SIGCHLD; for timers the same bytes hold the timer id.
	 */
	if (si && (si->si_code == SI_USER || si->si_code == SI_QUEUE ||
#ifdef SI_TKILL
	           si->si_code == SI_TKILL ||
#endif
	           sig == SIGCHLD))
		m.pid = si->si_pid;
	/*
	 * A full pipe means thousands of unread signals: dropping one more
	 * is what the kernel does with a signal already pending.
	 */
	(void)!write(pipe_wr, &m, sizeof(m));
	errno = saved;
}

static int
cloexec_nonblock_pipe(int fds[2])
{
#ifdef __linux__
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
#else
	int rc;

	/* Without pipe2 a fork() in another thread may inherit the pipe
	 * before the flags are set; the agent forks from this thread only. */
	if (pipe(fds) < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		int fl = fcntl(fds[i], F_GETFL);

		if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) < 0 ||
		    fcntl(fds[i], F_SETFD, FD_CLOEXEC) < 0) {
			rc = -errno;
			(void)close(fds[0]);
			(void)close(fds[1]);
			return rc;
		}
	}
#endif
	return 0;
}

static void
pipe_restore_handlers(size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)sigaction(handled[i], &pipe_old[i], NULL);  /* valid: saved by us */
}

int
sig_pipe_open(void)
{
	struct sigaction sa;
	sigset_t set;
	int fds[2], rc;
	size_t i;

	if (pipe_rd >= 0)
		return -EBUSY;
	rc = cloexec_nonblock_pipe(fds);
	if (rc < 0)
		return rc;
	/* Set before any handler can run. */
	pipe_wr = fds[1];

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = pipe_handler;
	/* SA_RESTART spares reads and writes elsewhere the EINTR; poll()
	 * still returns it, which is what wakes the loop. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	(void)sigfillset(&sa.sa_mask);
	for (i = 0; i < NELEM(handled); i++) {
		if (sigaction(handled[i], &sa, &pipe_old[i]) < 0) {
			rc = -errno;
			goto fail;
		}
	}
	/*
	 * Signals that came while blocked are pending: unblocking runs the
	 * handler for each, so none is lost between sig_block() and here.
	 */
	sig_handled_set(&set);
	rc = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	if (rc > 0) {
		rc = -rc;
		goto fail;
	}
	pipe_rd = fds[0];
	return pipe_rd;

fail:
	pipe_restore_handlers(i);
	pipe_wr = -1;
	(void)close(fds[0]);
	(void)close(fds[1]);
	return rc;
}

static void
pipe_close(void)
{
	sigset_t set;

	sig_handled_set(&set);
	/* Blocked again first, so no handler runs on a closed pipe. */
	(void)pthread_sigmask(SIG_BLOCK, &set, NULL);  /* valid set: cannot fail */
	pipe_restore_handlers(NELEM(handled));
	(void)close(pipe_rd);
	(void)close(pipe_wr);
	pipe_rd = pipe_wr = -1;
}

static int
pipe_read(int fd, pid_t *pid)
{
	struct pipe_msg m;
	ssize_t n;

	do
		n = read(fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n != (ssize_t)sizeof(m))
		return -EIO;  /* writes are whole records; we hold the write end */
	if (pid)
		*pid = m.pid;
	return m.sig;
}

/* ---- the descriptor ------------------------------------------------- */

int
sig_fd_open(void)
{
#ifdef __linux__
	sigset_t set;
	int fd;

	sig_handled_set(&set);
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd >= 0)
		return fd;
	/* Kernels may be built without signalfd (CONFIG_SIGNALFD=n), and
	 * seccomp filters may refuse it the same way. */
	if (errno != ENOSYS)
		return -errno;
#endif
	return sig_pipe_open();
}

int
sig_fd_read(int fd, pid_t *pid)
{
	if (fd < 0)
		return -EBADF;
	if (fd == pipe_rd)
		return pipe_read(fd, pid);
#ifdef __linux__
	{
		struct signalfd_siginfo si;
		ssize_t n;

		do
			n = read(fd, &si, sizeof(si));
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		if (n != (ssize_t)sizeof(si))
			return -EIO;  /* the kernel returns whole records */
		/* The kernel fills ssi_pid only where the sender is known
		 * (kill, sigqueue, SIGCHLD); zero otherwise. */
		if (pid)
			*pid = (pid_t)si.ssi_pid;
		return (int)si.ssi_signo;
	}
#else
	return -EBADF;
#endif
}

void
sig_fd_close(int fd)
{
	if (fd < 0)
		return;
	if (fd == pipe_rd) {
		pipe_close();
		return;
	}
	(void)close(fd);  /* nothing to do about an error from close */
}

/* ---- the child ------------------------------------------------------ */

/*
 * SIG_DFL for a signal the C library will not let us touch.  glibc keeps
 * two real-time signals (32 and 33) for its threads and refuses them in
 * sigaction(), but an "ignore" inherited on them would pass on to the
 * program, so set them through the system call.  All zeros is SIG_DFL, no
 * flags and an empty mask in the kernel's struct on every architecture
 * where rt_sigaction takes four arguments; the buffer is larger than any
 * of them.
 */
static void
raw_default(int sig)
{
#if defined(__linux__) && defined(SYS_rt_sigaction) && !defined(__sparc__) && !defined(__alpha__)
	unsigned long ksa[8] = { 0 };

	(void)syscall(SYS_rt_sigaction, sig, ksa, NULL, (size_t)(NSIG / 8));
#else
	(void)sig;
#endif
}

void
sig_child_restore(const sigset_t *mask)
{
	struct sigaction dfl;
	sigset_t none;
	int saved = errno;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	(void)sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sigaction(sig, &dfl, NULL) < 0 && errno == EINVAL)
			raw_default(sig);
	}
	if (!mask) {
		(void)sigemptyset(&none);
		mask = &none;
	}
	/* sigprocmask, not pthread_sigmask: only the former is on POSIX's
	 * async-signal-safe list; after fork() there is one thread anyway. */
	(void)sigprocmask(SIG_SETMASK, mask, NULL);
	errno = saved;
}

/* ---- names ---------------------------------------------------------- */

static const char *const names[NSIG] = {
	[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
	[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
	[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
	[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
	[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
	[SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT", [SIGSTOP] = "SIGSTOP",
	[SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",
	[SIGURG] = "SIGURG", [SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ",
	[SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGSYS] = "SIGSYS",
#ifdef SIGSTKFLT
	[SIGSTKFLT] = "SIGSTKFLT",
#endif
#ifdef SIGWINCH
	[SIGWINCH] = "SIGWINCH",
#endif
#ifdef SIGIO
	[SIGIO] = "SIGIO",
#endif
#ifdef SIGPWR
	[SIGPWR] = "SIGPWR",
#endif
};

static const struct {
	const char *name;
	int sig;
} aliases[] = {
	{ "IOT", SIGABRT },
	{ "CLD", SIGCHLD },
#ifdef SIGPOLL
	{ "POLL", SIGPOLL },
#endif
};

int
sig_parse(const char *s, int *out)
{
	int n = 0;

	if (!s)
		return -EINVAL;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	if (*s >= '0' && *s <= '9') {
		/* Digits only: strtol would take signs and leading blanks. */
		for (; *s; s++) {
			if (*s < '0' || *s > '9')
				return -EINVAL;
			n = n * 10 + (*s - '0');
			if (n >= NSIG)
				return -EINVAL;
		}
		if (n == 0)
			return -EINVAL;
		*out = n;
		return 0;
	}
	for (int i = 1; i < NSIG; i++) {
		if (names[i] && strcasecmp(s, names[i] + 3) == 0) {
			*out = i;
			return 0;
		}
	}
	for (size_t i = 0; i < NELEM(aliases); i++) {
		if (strcasecmp(s, aliases[i].name) == 0) {
			*out = aliases[i].sig;
			return 0;
		}
	}
	return -EINVAL;
}

const char *
sig_name(int sig)
{
	/* One slot per number, so names of different signals can be used
	 * together; each is rewritten with the same bytes. */
	static char unnamed[NSIG][8];
	static char other[16];

	if (sig > 0 && sig < NSIG) {
		if (names[sig])
			return names[sig];
		snprintf(unnamed[sig], sizeof(unnamed[sig]), "SIG%d", sig);
		return unnamed[sig];
	}
	snprintf(other, sizeof(other), "SIG%d", sig);
	return other;
}
