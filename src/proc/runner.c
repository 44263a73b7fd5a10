/*
 * runner.c - a helper program under a keeper, watched by the loop.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/linebuf.h"
#include "lib/loop.h"
#include "proc/runner.h"
#include "proc/spawn.h"

extern char **environ;

/* After the exit, how long output may still come (a background process
 * of the program holding the pipe is not waited for). */
#define DRAIN_MS 1000

struct runner {
	struct loop *loop;
	struct runner_ops ops;
	pid_t pid;
	int out, status_fd;          /* read ends; -1 once closed */
	unsigned char st[sizeof(int)];
	size_t stlen;
	bool have_status, timed_out, finished;
	int status;
	struct linebuf *lb;
	struct loop_timer *deadline, *drain;
};

/* ---- the keeper and the program (after fork: async-signal-safe only) ---- */

static void __attribute__((noreturn))
run_program(const struct runner_opts *o, int outfd, int nullfd)
{
	char *const *envp = o->envp ? o->envp : environ;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(nullfd, 0) < 0 || dup2(outfd, 1) < 0 || dup2(outfd, 2) < 0)
		_exit(126);
	if (o->cwd && chdir(o->cwd) < 0)
		_exit(127);
	spawn_child_ready(o->sigmask);
	execve(o->path, o->argv, envp);
	_exit(errno == ENOENT ? 127 : 126);
}

static void __attribute__((noreturn))
keeper(const struct runner_opts *o, pid_t agent, int outfd, int stfd, int nullfd)
{
	int st = 0;
	pid_t pid, r;

	/* the keeper dies with the agent, and the program with the keeper */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != agent)
		_exit(126);
	pid = fork();
	if (pid == 0)
		run_program(o, outfd, nullfd);
	if (pid < 0)
		st = 126 << 8;
	else
		while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
			;
	(void)write(stfd, &st, sizeof(st));  /* the agent reads it; nobody else can */
	_exit(0);
}

/* ---- the agent's side ----------------------------------------------------- */

static void
finish(struct runner *r)
{
	int st;

	if (r->finished || r->out >= 0 || r->status_fd >= 0)
		return;
	r->finished = true;
	loop_del_timer(r->loop, r->deadline);
	loop_del_timer(r->loop, r->drain);
	r->deadline = r->drain = NULL;
	if (r->timed_out) {
		r->status = RUNNER_TIMEOUT;
	} else if (!r->have_status) {
		r->status = -EPROTO;
	} else {
		memcpy(&st, r->st, sizeof(st));
		r->status = WIFEXITED(st) ? WEXITSTATUS(st) :
		            WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -EPROTO;
	}
	/* Nothing the program left behind in its group outlives it (a hook is
	 * bounded in time); then the keeper, unless someone reaped it. */
	(void)kill(-r->pid, SIGKILL);
	(void)waitpid(r->pid, NULL, WNOHANG);
	if (r->ops.done)
		r->ops.done(r->ops.arg, r->status);
}

static void
on_line(const char *line, size_t len, bool truncated, void *arg)
{
	struct runner *r = arg;

	(void)truncated;
	if (r->ops.line)
		r->ops.line(r->ops.arg, line, len);
}

static void
close_out(struct runner *r)
{
	if (r->out < 0)
		return;
	loop_del_fd(r->loop, r->out);
	(void)close(r->out);  /* a read end: nothing to lose */
	r->out = -1;
	linebuf_flush(r->lb, on_line, r);
}

static long
on_drain(struct loop *l, void *arg)
{
	struct runner *r = arg;

	(void)l;
	r->drain = NULL;
	close_out(r);
	finish(r);
	return LOOP_NOMORE;
}

static void
on_status(struct loop *l, int fd, short revents, void *arg)
{
	struct runner *r = arg;
	ssize_t got;

	(void)revents;
	got = read(fd, r->st + r->stlen, sizeof(r->st) - r->stlen);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got > 0) {
		r->stlen += (size_t)got;
		if (r->stlen < sizeof(r->st))
			return;
		r->have_status = true;
	}
	loop_del_fd(l, fd);
	(void)close(fd);
	r->status_fd = -1;
	if (r->out >= 0 && !r->drain)
		r->drain = loop_add_timer(l, DRAIN_MS, on_drain, r);
	finish(r);
}

static void
on_out(struct loop *l, int fd, short revents, void *arg)
{
	struct runner *r = arg;
	char buf[16384];
	ssize_t got;

	(void)l;
	(void)revents;
	got = read(fd, buf, sizeof(buf));
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got > 0) {
		linebuf_feed(r->lb, buf, (size_t)got, on_line, r);
		return;
	}
	close_out(r);
	finish(r);
}

static long
on_deadline(struct loop *l, void *arg)
{
	struct runner *r = arg;

	(void)l;
	r->deadline = NULL;
	r->timed_out = true;
	(void)kill(-r->pid, SIGKILL);
	return LOOP_NOMORE;
}

static void
close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			(void)close(p[i]);
}

int
runner_start(struct loop *l, const struct runner_opts *o, const struct runner_ops *ops,
             struct runner **out)
{
	int outp[2] = { -1, -1 }, stp[2] = { -1, -1 }, nullfd = -1, rc;
	pid_t agent = getpid(), pid;
	struct runner *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r || !(r->lb = linebuf_new(RUNNER_LINE_MAX))) {
		free(r);
		return -ENOMEM;
	}
	r->loop = l;
	r->ops = *ops;
	r->out = r->status_fd = -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0 ||
	    (nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = -errno;
		goto fail;
	}
	pid = spawn_fork(NULL);
	if (pid == 0) {
		/* above the standard descriptors, so that dup2() cannot close them */
		int w = spawn_above_stdio(outp[1]), n = spawn_above_stdio(nullfd);

		if (w < 0 || n < 0)
			_exit(126);
		keeper(o, agent, w, stp[1], n);
	}
	if (pid < 0) {
		rc = (int)pid;
		goto fail;
	}
	r->pid = pid;
	(void)close(outp[1]);
	(void)close(stp[1]);
	(void)close(nullfd);
	r->out = outp[0];
	r->status_fd = stp[0];
	(void)fcntl(r->out, F_SETFL, O_NONBLOCK);
	(void)fcntl(r->status_fd, F_SETFL, O_NONBLOCK);
	if (loop_add_fd(l, r->out, POLLIN, on_out, r) < 0 ||
	    loop_add_fd(l, r->status_fd, POLLIN, on_status, r) < 0 ||
	    (o->timeout_s > 0 && !(r->deadline = loop_add_timer(l, (long)(o->timeout_s * 1000),
	                                                         on_deadline, r)))) {
		runner_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
fail:
	close_pair(outp);
	close_pair(stp);
	if (nullfd >= 0)
		(void)close(nullfd);
	linebuf_free(r->lb);
	free(r);
	return rc;
}

pid_t
runner_pid(const struct runner *r)
{
	return r->pid;
}

bool
runner_finished(const struct runner *r)
{
	return r->finished;
}

int
runner_status(const struct runner *r)
{
	return r->status;
}

void
runner_kill(struct runner *r)
{
	if (r && !r->finished)
		(void)kill(-r->pid, SIGKILL);
}

void
runner_free(struct runner *r)
{
	if (!r)
		return;
	if (!r->finished) {
		(void)kill(-r->pid, SIGKILL);
		(void)waitpid(r->pid, NULL, WNOHANG);
	}
	loop_del_timer(r->loop, r->deadline);
	loop_del_timer(r->loop, r->drain);
	if (r->out >= 0) {
		loop_del_fd(r->loop, r->out);
		(void)close(r->out);
	}
	if (r->status_fd >= 0) {
		loop_del_fd(r->loop, r->status_fd);
		(void)close(r->status_fd);
	}
	linebuf_free(r->lb);
	free(r);
}
