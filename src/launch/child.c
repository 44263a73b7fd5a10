/*
 * child.c - the training: one child process in its own process group.
 *
 * Between fork() and exec() the child runs only async-signal-safe calls:
 * the agent may have threads (the MPI library's), and one of them may have
 * held a lock of the C library's allocator at the fork.  Everything that
 * allocates (the PATH lookup, the /bin/sh argument vector) is prepared in
 * the parent.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "launch/child.h"
#include "lib/sig.h"
#include "lib/util.h"
#include "proc/spawn.h"
#include "sys/hwmon.h"

extern char **environ;

/*
 * The pty's window size.  Programs that wrap or truncate to the terminal
 * width (progress bars, rich text) would otherwise see 0x0 and guess; wide,
 * because the lines go to logs, not to a screen.
 */
#define PTY_ROWS 50
#define PTY_COLS 200

/* glibc's execvp() default when the environment has no PATH. */
#define DEFAULT_PATH "/bin:/usr/bin"

/* A process the notice signal went to at the last look (child_signal()). */
struct noted {
	pid_t pid;
	unsigned long long start;   /* with the pid: the same process */
	int pidfd;
	bool sent;                  /* reached by this delivery already */
};

struct child {
	pid_t pid;
	int out_fd;
	int err_fd;
	bool exited;
	int status;
	struct hwmon *proc;     /* "/" for /proc, opened on first use; NULL until then */
	bool proc_failed;       /* it could not be opened: signal the group only */
	char *cgroup;           /* the training's own cgroup directory (absolute), or NULL */
	int notice_sig;         /* child_opts.notice_signal */
	struct noted *noted;    /* its targets at the last look */
	size_t nnoted;
};

static const struct child_sys real_sys = { fork, kill, waitpid };
static struct child_sys sys = { fork, kill, waitpid };

void
child_set_sys(const struct child_sys *s)
{
	sys = real_sys;
	if (!s)
		return;
	if (s->fork)
		sys.fork = s->fork;
	if (s->kill)
		sys.kill = s->kill;
	if (s->waitpid)
		sys.waitpid = s->waitpid;
}

/* ---- preparing exec ------------------------------------------------- */

static void
free_strv(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/*
 * The paths exec tries, in order: FILE itself when it holds a slash, else
 * FILE in each directory of the PATH found in ENVP (an empty entry is the
 * current directory).  glibc's execvpe() would search the agent's own PATH,
 * not the child's.  NULL-terminated; NULL with errno set on failure.
 */
static char **
exec_candidates(const char *file, char *const *envp)
{
	const char *path = DEFAULT_PATH, *p;
	size_t n = 1, i = 0, flen = strlen(file);
	char **v;

	if (strchr(file, '/')) {
		v = calloc(2, sizeof(*v));
		if (!v || !(v[0] = strdup(file))) {
			free(v);
			return NULL;
		}
		return v;
	}
	for (char *const *e = envp; *e; e++) {
		if (strncmp(*e, "PATH=", 5) == 0) {
			path = *e + 5;
			break;
		}
	}
	for (p = path; *p; p++)
		n += *p == ':';
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (p = path;; ) {
		const char *end = strchrnul(p, ':'), *dir = p;
		size_t dlen = (size_t)(end - p);

		if (dlen == 0) {
			dir = ".";
			dlen = 1;
		}
		v[i] = malloc(dlen + 1 + flen + 1);
		if (!v[i]) {
			free_strv(v);
			return NULL;
		}
		memcpy(v[i], dir, dlen);
		v[i][dlen] = '/';
		memcpy(v[i] + dlen + 1, file, flen + 1);
		i++;
		if (!*end)
			break;
		p = end + 1;
	}
	return v;
}

/*
 * The argument vector for a file exec refuses with ENOEXEC (a script with
 * no #! line), run by /bin/sh as execvp() does: "/bin/sh", the file, then
 * ARGV[1..].  Slot 1 is filled in by the child.
 */
static char **
sh_argv(char *const *argv)
{
	static char sh[] = "/bin/sh";
	size_t argc = 0;
	char **v;

	while (argv[argc])
		argc++;
	v = calloc(argc + 2, sizeof(*v));
	if (!v)
		return NULL;
	v[0] = sh;
	for (size_t i = 1; i < argc; i++)
		v[i + 1] = argv[i];
	return v;
}

/* ---- descriptors ---------------------------------------------------- */

static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/*
 * A pseudo-terminal for the child's stdout: the master (ours) and the
 * slave, both close-on-exec.  Raw mode (cfmakeraw) turns off output
 * processing, so "\n" is not sent as "\r\n" and every byte passes
 * unchanged.  The slave is opened here, not in the child, so the master
 * never reads EIO before the child has it; O_NOCTTY keeps it from becoming
 * anyone's controlling terminal.
 */
static int
open_pty(int *master, int *slave)
{
	struct winsize ws = { .ws_row = PTY_ROWS, .ws_col = PTY_COLS };
	struct termios t;
	char name[128];
	int m, s = -1, rc;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0)
		goto fail;
	rc = ptsname_r(m, name, sizeof(name));
	if (rc != 0) {
		errno = rc;
		goto fail;
	}
	s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0 || tcgetattr(s, &t) < 0)
		goto fail;
	cfmakeraw(&t);
	if (tcsetattr(s, TCSANOW, &t) < 0 || ioctl(s, TIOCSWINSZ, &ws) < 0)
		goto fail;
	*master = m;
	*slave = s;
	return 0;
fail:
	rc = -errno;
	if (s >= 0)
		(void)close(s);
	(void)close(m);
	return rc;
}

/* ---- the child side ------------------------------------------------- */

struct spawn {
	int cg_fd;              /* the training's cgroup.procs, write end; -1: none */
	const struct child_opts *o;
	char *const *envp;
	char **cand;
	char **shargv;
	bool searched;  /* argv[0] looked up in PATH */
	int in, out, err, errfd;
	pid_t parent;
};

/* Try each candidate as execvp() does; returns only on failure, errno set. */
static void
exec_search(const struct spawn *sp)
{
	bool denied = false;
	int e = ENOENT;

	for (char **c = sp->cand; *c; c++) {
		(void)execve(*c, sp->o->argv, sp->envp);
		e = errno;
		switch (e) {
		case ENOEXEC:
			sp->shargv[1] = *c;
			(void)execve(sp->shargv[0], sp->shargv, sp->envp);
			return;
		case EACCES:
			denied = true;
			continue;
		case ENOENT:
		case ENOTDIR:
		case ESTALE:
		case ENODEV:
		case ETIMEDOUT:
			/* As execvp(): a PATH entry that is missing, not a
			 * directory or unreachable is skipped. */
			continue;
		default:
			return;
		}
	}
	if (denied)
		e = EACCES;
	else if (sp->searched)
		e = ENOENT;
	errno = e;
}

/*
 * The keeper.  The agent's child is not the training itself but a small
 * process that forks it and stays its parent: a child subreaper, so every
 * orphan of the training comes to it, and the one process that outlives
 * the agent long enough to end the training when the agent dies.
 * PR_SET_PDEATHSIG alone cannot: it is not inherited by the training's
 * own children, so a worker torch >= 2 put in a session of its own, or a
 * daemon, would survive an agent that mpirun killed with SIGKILL.
 *
 * It runs between fork and exit only async-signal-safe calls and raw
 * system calls (the agent may have had threads: see the top of this
 * file), with every signal blocked: the agent's signals to the training's
 * group never act on it.  It reads its own wakeups with sigtimedwait():
 * SIGCHLD for a child's end, and SIGCHLD again as its parent-death signal.
 * When the training ends, it ends the same way (the exit status, or the
 * same signal), so the agent sees the training's status; when the agent
 * is gone, it kills every process below itself and exits.
 */

/* A decimal number at S (after blanks); advances *S. */
static long
scan_long(const char **s)
{
	long v = 0;
	bool neg = false;

	while (**s == ' ')
		(*s)++;
	if (**s == '-') {
		neg = true;
		(*s)++;
	}
	while (**s >= '0' && **s <= '9')
		v = v * 10 + (*(*s)++ - '0');
	return neg ? -v : v;
}

/* "/proc/N/stat" into BUF without the stdio (not async-signal-safe). */
static void
stat_path(char *buf, const char *pid)
{
	static const char pre[] = "/proc/", post[] = "/stat";
	size_t o = 0;

	for (size_t i = 0; pre[i]; i++)
		buf[o++] = pre[i];
	for (size_t i = 0; pid[i] && i < 16; i++)
		buf[o++] = pid[i];
	for (size_t i = 0; i <= sizeof(post) - 1; i++)
		buf[o++] = post[i];
}

/* SIGKILL to every process whose parent is SELF, found in /proc; returns
 * how many. */
static int
kill_children(pid_t self)
{
	char dents[4096], path[40], stat[512];
	int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	long got;

	if (dir < 0)
		return 0;
	while ((got = syscall(SYS_getdents64, dir, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < got; ) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			unsigned short reclen;
			const char *name = dents + off + 19, *p;
			ssize_t len;
			int fd;

			memcpy(&reclen, dents + off + 16, sizeof(reclen));
			off += reclen;
			if (name[0] < '1' || name[0] > '9')
				continue;
			stat_path(path, name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			len = read(fd, stat, sizeof(stat) - 1);
			(void)close(fd);
			if (len <= 0)
				continue;
			stat[len] = '\0';
			p = strrchr(stat, ')');
			if (!p || !p[1] || !p[2])
				continue;
			p += 3;                 /* ") S " */
			if (scan_long(&p) == self) {
				p = name;
				if (kill((pid_t)scan_long(&p), SIGKILL) == 0)
					n++;
			}
		}
	}
	(void)close(dir);
	return n;
}

/* The agent is gone: nothing below the keeper may outlive it. */
static void __attribute__((noreturn))
keeper_cleanup(void)
{
	const struct timespec pause = { 0, 2000000 };   /* 2 ms */
	pid_t self = getpid();

	for (int round = 0; round < 2500; round++) {
		(void)kill_children(self);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			break;
		(void)nanosleep(&pause, NULL);  /* orphans of the killed come to us */
	}
	/* as the training would have ended without a keeper */
	(void)kill(getpid(), SIGKILL);
	_exit(128 + SIGKILL);
}

/* Ends the keeper as the training ended. */
static void __attribute__((noreturn))
keeper_relay(int status)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct rlimit nocore = { 0, 0 };
	sigset_t one;
	int sig;

	if (!WIFSIGNALED(status))
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
	sig = WTERMSIG(status);
	/* the training dumped core if it was to; the keeper does not */
	(void)setrlimit(RLIMIT_CORE, &nocore);
	(void)sigaction(sig, &dfl, NULL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	(void)sigprocmask(SIG_UNBLOCK, &one, NULL);
	(void)kill(getpid(), sig);
	_exit(128 + sig);
}

static void __attribute__((noreturn))
keeper_loop(pid_t training, pid_t agent)
{
	const struct timespec tick = { 1, 0 };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t chld;
	int st;
	pid_t r;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		/* The tick is a safety net: the parent-death signal is sent
		 * once, and a wakeup could be lost to a race with the loop. */
		(void)sigtimedwait(&chld, NULL, &tick);
		if (getppid() != agent)
			keeper_cleanup();
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			if (r == training)
				keeper_relay(st);
		}
		/* (SIGCHLD's disposition is the default: children are kept for waitpid.) */
		(void)sigaction(SIGCHLD, &dfl, NULL);
	}
}

static void __attribute__((noreturn))
run_child(const struct spawn *sp)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int in, out, err, errfd, e;
	pid_t keeper, training;

	/* spawn_fork() made us a group leader, with every signal blocked
	 * until spawn_child_ready(). */
	if (prctl(PR_SET_PDEATHSIG, SIGCHLD) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 ||
	    sigaction(SIGCHLD, &dfl, NULL) < 0)
		goto fail;
	/* The agent may have died before prctl(): then nothing tells us, but
	 * we were reparented and getppid() no longer names it. */
	if (getppid() != sp->parent)
		_exit(127);

	errfd = spawn_above_stdio(sp->errfd);
	if (errfd < 0)
		_exit(126);
	in = spawn_above_stdio(sp->in);
	out = spawn_above_stdio(sp->out);
	err = spawn_above_stdio(sp->err);
	if (in < 0 || out < 0 || err < 0 || dup2(in, STDIN_FILENO) < 0 ||
	    dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
		goto fail_errfd;
	if (sp->o->cwd && chdir(sp->o->cwd) < 0)
		goto fail_errfd;
	/* Into the training's cgroup before anything of the training exists:
	 * what it starts is born there.  A refusal (controllers enabled
	 * above) leaves it where it is; the parent sees that and goes on
	 * without one. */
	if (sp->cg_fd >= 0)
		(void)!write(sp->cg_fd, "0", 1);
	keeper = getpid();
	training = fork();
	if (training < 0)
		goto fail_errfd;
	if (training == 0) {
		/* The training dies with its keeper. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			goto fail_errfd;
		if (getppid() != keeper)
			_exit(127);
		spawn_child_ready(sp->o->sigmask);
		exec_search(sp);
		goto fail_errfd;
	}
	/* The keeper holds none of the training's pipes: their EOF and the
	 * exec error must come from the training alone. */
	if (dup2(in, STDOUT_FILENO) < 0 || dup2(in, STDERR_FILENO) < 0)
		_exit(126);
#ifdef CLOSE_RANGE_CLOEXEC
	/* Nor any of the agent's: a pipe whose EOF the agent waits for (a
	 * check's, a notifier's) must not stay open here. */
	(void)close_range(3, ~0U, 0);
#else
	(void)close(errfd);
	(void)close(out);
	(void)close(err);
#endif
	keeper_loop(training, sp->parent);
fail_errfd:
	e = errno;
	/* The parent reads this only if exec failed: the pipe is
	 * close-on-exec, so a successful exec leaves it empty. */
	(void)!write(errfd, &e, sizeof(e));
	_exit(e == ENOENT ? 127 : 126);
fail:
	errfd = sp->errfd;
	goto fail_errfd;
}

/* ---- the parent side ------------------------------------------------ */

/* Read the child's exec errno: 0 when exec succeeded (EOF), the errno, or
 * a negative errno when the pipe itself failed. */
static int
read_exec_errno(int fd)
{
	int e = 0;
	ssize_t got = util_read_all(fd, &e, sizeof(e));

	if (got <= 0)
		return (int)got;  /* 0: EOF, exec succeeded */
	if ((size_t)got < sizeof(e) || e <= 0)
		return -EIO;  /* one write of sizeof(e) is atomic: cannot happen */
	return e;
}

static void
reap_failed(pid_t pid)
{
	int st;

	/* The child is past exec or _exit()ing: this wait is short. */
	while (sys.waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* ---- the training's cgroup --------------------------------------------- */

/*
 * A new cgroup PARENT/vigil-training.PID.N and its cgroup.procs opened for
 * writing (*FD), for the keeper to move itself in.  Returns the path, or
 * NULL (and *FD -1) when it cannot be made: the training then runs
 * without, followed through the process tree alone.
 */
static char *
cgroup_make(const char *parent, int *fd)
{
	static unsigned serial;
	char path[PATH_MAX], procs[PATH_MAX + 16];

	*fd = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/vigil-training.%d.%u", parent, (int)getpid(),
	                     serial++) >= sizeof(path) ||
	    mkdir(path, 0755) < 0)
		return NULL;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	*fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (*fd < 0) {
		(void)rmdir(path);
		return NULL;
	}
	return strdup(path);
}

/* "/a/b" under hwmon's root "/": "a/b". */
static const char *
rel(const char *abs)
{
	while (*abs == '/')
		abs++;
	return abs;
}

static bool
open_proc(struct child *c)
{
	if (!c->proc && !c->proc_failed && hwmon_open(NULL, &c->proc) < 0)
		c->proc_failed = true;
	return c->proc != NULL;
}

/* Whether the keeper PID went into the cgroup at PATH. */
static bool
cgroup_holds(struct child *c, const char *path, pid_t pid)
{
	int *pids = NULL;
	size_t n = 0;
	bool in = false;

	if (open_proc(c) && hwmon_cgroup_procs(c->proc, rel(path), &pids, &n) == 0)
		for (size_t i = 0; i < n && !in; i++)
			in = pids[i] == pid;
	free(pids);
	return in;
}

/* Everything in the training's cgroup killed at once (cgroup.kill,
 * Linux >= 5.14), or one by one from cgroup.procs. */
static void
cgroup_kill(struct child *c)
{
	char path[PATH_MAX];
	int *pids = NULL;
	size_t n = 0;
	int fd;

	if (!c->cgroup)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.kill", c->cgroup);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		bool done = write(fd, "1", 1) == 1;

		(void)close(fd);
		if (done)
			return;
	}
	if (open_proc(c) && hwmon_cgroup_procs(c->proc, rel(c->cgroup), &pids, &n) == 0)
		for (size_t i = 0; i < n; i++)
			(void)sys.kill(pids[i], SIGKILL);
	free(pids);
}

int
child_cgroup_find(char *dir, size_t len)
{
	char rel_dir[PATH_MAX];
	struct hwmon *h;
	int rc = hwmon_open(NULL, &h);

	if (rc < 0)
		return rc;
	rc = hwmon_cgroup2_self(h, rel_dir, sizeof(rel_dir));
	if (rc == 0)
		rc = hwmon_cgroup2_delegated(h, rel_dir);
	hwmon_free(h);
	if (rc == -EPERM)
		rc = -ENOENT;
	if (rc == 0 && (size_t)snprintf(dir, len, "/%s", rel_dir) >= len)
		rc = -EOVERFLOW;
	return rc;
}

const char *
child_cgroup(const struct child *c)
{
	return c->cgroup;
}

/*
 * The child's channels: ERRP reports a failed exec, OUTP carries its
 * stdout (a pty when O asks), ERROUT its stderr; stdin is /dev/null.  The
 * parent's ends are close-on-exec and non-blocking; SP gets the child's.
 * On error the caller closes what was opened.
 */
static int
open_channels(const struct child_opts *o, struct spawn *sp, int errp[2], int outp[2],
              int errout[2])
{
	int rc;

	if (pipe2(errp, O_CLOEXEC) < 0 || pipe2(errout, O_CLOEXEC) < 0)
		return -errno;
	if (o->pty_stdout)
		rc = open_pty(&outp[0], &outp[1]);
	else
		rc = pipe2(outp, O_CLOEXEC) < 0 ? -errno : 0;
	if (rc == 0)
		rc = set_nonblock(outp[0]);
	if (rc == 0)
		rc = set_nonblock(errout[0]);
	if (rc < 0)
		return rc;
	sp->in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (sp->in < 0)
		return -errno;
	sp->out = outp[1];
	sp->err = errout[1];
	sp->errfd = errp[1];
	return 0;
}

int
child_spawn(const struct child_opts *o, struct child **out)
{
	int errp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errout[2] = { -1, -1 };
	struct child *c = NULL;
	char *cgpath = NULL;
	struct spawn sp;
	pid_t pid;
	int rc, e;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!o || !o->argv || !o->argv[0])
		return -EINVAL;
	if (!o->argv[0][0])
		return -ENOENT;
	memset(&sp, 0, sizeof(sp));
	sp.o = o;
	sp.envp = o->envp ? o->envp : environ;
	sp.in = -1;
	sp.cg_fd = -1;
	c = calloc(1, sizeof(*c));
	sp.cand = sp.envp ? exec_candidates(o->argv[0], sp.envp) : NULL;
	sp.shargv = sh_argv(o->argv);
	sp.searched = !strchr(o->argv[0], '/');
	if (!c || !sp.cand || !sp.shargv) {
		rc = -ENOMEM;
		goto out;
	}
	c->pid = -1;
	c->out_fd = c->err_fd = -1;

	rc = open_channels(o, &sp, errp, outp, errout);
	if (rc < 0)
		goto out;
	sp.parent = getpid();
	if (o->cgroup)
		cgpath = cgroup_make(o->cgroup, &sp.cg_fd);

	pid = spawn_fork(sys.fork);
	if (pid == 0)
		run_child(&sp);
	if (sp.cg_fd >= 0)
		(void)close(sp.cg_fd);
	if (pid < 0) {
		rc = pid;
		goto out;
	}

	/* Our copies of the child's ends closed, or EOF would never come. */
	(void)close(errp[1]);
	(void)close(outp[1]);
	(void)close(errout[1]);
	(void)close(sp.in);
	errp[1] = outp[1] = errout[1] = sp.in = -1;

	e = read_exec_errno(errp[0]);
	if (e != 0) {
		if (e < 0)  /* cannot tell whether it runs: make sure it does not */
			(void)sys.kill(-pid, SIGKILL);
		reap_failed(pid);
		rc = e > 0 ? -e : e;
		goto out;
	}
	c->pid = pid;
	c->notice_sig = o->notice_signal;
	c->out_fd = outp[0];
	c->err_fd = errout[0];
	outp[0] = errout[0] = -1;
	if (cgpath && cgroup_holds(c, cgpath, pid)) {
		c->cgroup = cgpath;
		cgpath = NULL;
	}
	*out = c;
	c = NULL;
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (errp[i] >= 0)
			(void)close(errp[i]);
		if (outp[i] >= 0)
			(void)close(outp[i]);
		if (errout[i] >= 0)
			(void)close(errout[i]);
	}
	if (sp.in >= 0)
		(void)close(sp.in);
	if (cgpath) {
		(void)rmdir(cgpath);    /* unused: EBUSY cannot be (nothing moved in) */
		free(cgpath);
	}
	free_strv(sp.cand);
	free(sp.shargv);
	free(c);
	return rc;
}

pid_t
child_pid(const struct child *c)
{
	return c->pid;
}

int
child_stdout_fd(const struct child *c)
{
	return c->out_fd;
}

int
child_stderr_fd(const struct child *c)
{
	return c->err_fd;
}

void
child_close_fd(struct child *c, int fd)
{
	if (fd < 0)
		return;
	if (fd == c->out_fd)
		c->out_fd = -1;
	else if (fd == c->err_fd)
		c->err_fd = -1;
	else
		return;
	(void)close(fd);  /* read ends: nothing to flush, nothing to report */
}

/* ---- the training's processes ------------------------------------------ */

static const struct child_proc *
find_proc(const struct child_proc *p, size_t n, pid_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].pid == pid)
			return &p[mid];
		if (p[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Deeper process trees than this are not followed (a loop in a snapshot
 * taken while processes come and go must not hang us). */
#define MAX_DEPTH 256

size_t
child_tree_members(const struct child_proc *p, size_t n, pid_t agent, pid_t agent_sid,
                   pid_t main, bool main_alive, bool *member)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		const struct child_proc *cur = &p[i];
		const struct child_proc *top = NULL;

		member[i] = false;
		for (int depth = 0; cur && depth < MAX_DEPTH; depth++) {
			if (cur->pid == agent)
				break;          /* the agent itself is not the training */
			if (cur->ppid == agent) {
				top = cur;
				break;
			}
			cur = find_proc(p, n, cur->ppid);
		}
		if (!top)
			continue;
		if (top->pid == main)
			member[i] = main_alive;   /* once reaped, the pid may be a new helper's */
		else if (top->pgid == main)
			member[i] = true;
		else
			member[i] = !(top->pid == top->pgid && top->sid == agent_sid);
		count += member[i];
	}
	return count;
}

size_t
child_notice_targets(const struct child_proc *p, size_t n, const bool *member, bool *target)
{
	bool *parent = calloc(n ? n : 1, sizeof(*parent));
	size_t count = 0;

	/* Without memory every member is a target: the signal still arrives. */
	for (size_t i = 0; i < n; i++) {
		const struct child_proc *up = member[i] ? find_proc(p, n, p[i].ppid) : NULL;

		if (up && parent)
			parent[up - p] = true;
	}
	for (size_t i = 0; i < n; i++) {
		const struct child_proc *up = &p[i];
		bool under_launcher = false;

		target[i] = false;
		if (!member[i] || p[i].zombie)
			continue;
		for (int depth = 0; depth < MAX_DEPTH; depth++) {
			up = find_proc(p, n, up->ppid);
			if (!up || !member[up - p])
				break;
			if (up->mpi_launcher && up->handles) {
				under_launcher = true;
				break;
			}
		}
		target[i] = !under_launcher && (p[i].handles || !parent || !parent[i]);
		count += target[i];
	}
	free(parent);
	return count;
}

static bool
is_mpi_launcher_comm(const char *comm)
{
	static const char *const names[] = {
		"mpirun", "mpiexec", "orterun", "prterun", "mpiexec.hydra", "mpirun.openmpi",
		"mpiexec.openmpi", "mpirun.mpich", "mpiexec.mpich", "horovodrun",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(comm, names[i]) == 0)
			return true;
	return false;
}

/* Whatever is in the training's cgroup belongs to it, where it came from. */
static void
cgroup_members(struct child *c, const struct child_proc *p, size_t n, bool *m)
{
	int *pids = NULL;
	size_t k = 0;

	if (!c->cgroup || hwmon_cgroup_procs(c->proc, rel(c->cgroup), &pids, &k) < 0)
		return;
	for (size_t i = 0; i < k; i++) {
		const struct child_proc *q = find_proc(p, n, pids[i]);

		if (q && q->pid != getpid())
			m[q - p] = true;
	}
	free(pids);
}

/* The training's processes now: *PROCS (sorted by pid) and *MEMBER, both
 * to free().  SIG > 0: each member's handles is set for it. */
static int
snapshot(struct child *c, int sig, struct child_proc **procs, bool **member, size_t *n)
{
	struct hwmon_proc *hp = NULL;
	struct child_proc *p;
	size_t np = 0;
	bool *m;
	int rc;

	*procs = NULL;
	*member = NULL;
	*n = 0;
	if (!open_proc(c))
		return -ENOTSUP;
	rc = hwmon_procs(c->proc, &hp, &np);
	if (rc < 0)
		return rc;
	p = calloc(np ? np : 1, sizeof(*p));
	m = calloc(np ? np : 1, sizeof(*m));
	if (!p || !m) {
		free(hp);
		free(p);
		free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < np; i++) {
		p[i].pid = hp[i].pid;
		p[i].ppid = hp[i].ppid;
		p[i].pgid = hp[i].pgid;
		p[i].sid = hp[i].sid;
		p[i].zombie = hp[i].state == 'Z';
		p[i].mpi_launcher = is_mpi_launcher_comm(hp[i].comm);
		p[i].cpu_ticks = hp[i].cpu_ticks;
		p[i].rss_pages = hp[i].rss_pages;
		p[i].start_ticks = hp[i].start_ticks;
	}
	free(hp);
	child_tree_members(p, np, getpid(), getsid(0), c->pid, !c->exited, m);
	cgroup_members(c, p, np, m);
	for (size_t i = 0; sig > 0 && sig <= 64 && i < np; i++) {
		unsigned long long caught = 0, ignored = 0;
		unsigned long long bit = 1ULL << (sig - 1);

		/* A process that is gone by now needs nothing.  The keeper
		 * acts on no signal (it blocks them all), whatever a tool such
		 * as valgrind may have installed in it. */
		if (m[i] && p[i].pid != c->pid &&
		    hwmon_proc_sigmasks(c->proc, p[i].pid, &caught, &ignored) == 0)
			p[i].handles = ((caught | ignored) & bit) != 0;
	}
	*procs = p;
	*member = m;
	*n = np;
	return 0;
}

static bool
is_stop_signal(int sig)
{
	return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT ||
	       sig == SIGKILL || sig == SIGSTOP || sig == SIGCONT;
}

/* kill(), counting deliveries; a process gone meanwhile is not an error. */
static int
send_one(pid_t pid, int sig, int *delivered)
{
	if (sys.kill(pid, sig) == 0) {
		(*delivered)++;
		return 0;
	}
	return errno == ESRCH ? 0 : -errno;
}

/* ---- the notice signal's targets, noted ---------------------------------- */

static int
pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static int
pidfd_send_signal_(int pidfd, int sig)
{
#ifdef SYS_pidfd_send_signal
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
	(void)pidfd;
	(void)sig;
	errno = ENOSYS;
	return -1;
#endif
}

static void
forget_noted(struct child *c)
{
	for (size_t i = 0; i < c->nnoted; i++)
		(void)close(c->noted[i].pidfd);
	free(c->noted);
	c->noted = NULL;
	c->nnoted = 0;
}

/*
 * Note the targets T among P (a look at /proc made for the notice signal)
 * by pidfd.  A pidfd is opened by pid, so the process is read again once
 * it is held: only one that started when the look saw it is kept (the pid
 * may have been taken meanwhile).  Without pidfds (kernels before 5.3),
 * nothing is noted and every delivery waits for its look.
 */
static void
note_targets(struct child *c, const struct child_proc *p, const bool *t, size_t n)
{
	struct noted *v;
	size_t k = 0;

	forget_noted(c);
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		struct hwmon_proc now;
		int fd;

		if (!t[i] || p[i].zombie || (fd = pidfd_open_(p[i].pid)) < 0)
			continue;
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		if (hwmon_proc_stat(c->proc, p[i].pid, &now) < 0 ||
		    now.start_ticks != p[i].start_ticks) {
			(void)close(fd);
			continue;
		}
		v[k++] = (struct noted){ .pid = p[i].pid, .start = p[i].start_ticks, .pidfd = fd };
	}
	c->noted = v;
	c->nnoted = k;
	if (k == 0)
		forget_noted(c);
}

/* The noted targets that still run get SIG now; *DELIVERED counts them. */
static void
signal_noted(struct child *c, int sig, int *delivered)
{
	for (size_t i = 0; i < c->nnoted; i++) {
		c->noted[i].sent = pidfd_send_signal_(c->noted[i].pidfd, sig) == 0;
		*delivered += c->noted[i].sent;
	}
}

/* P was reached through its pidfd in this delivery already. */
static bool
sent_noted(const struct child *c, const struct child_proc *p)
{
	for (size_t i = 0; i < c->nnoted; i++)
		if (c->noted[i].sent && c->noted[i].pid == p->pid &&
		    c->noted[i].start == p->start_ticks)
			return true;
	return false;
}

/* SIG to the group and to each member outside it (NOTICE: to the notice
 * targets only, and not to the group). */
static int
deliver(struct child *c, int sig, bool notice)
{
	struct child_proc *p = NULL;
	bool *m = NULL, *t = NULL;
	bool noted = notice && sig == c->notice_sig;
	int delivered = 0, rc = 0;
	size_t n = 0;

	/* the targets known already, before the look at /proc */
	if (noted)
		signal_noted(c, sig, &delivered);
	if (snapshot(c, sig, &p, &m, &n) < 0)
		notice = noted = false;  /* no /proc: the group, as a shell would */
	if (!notice)
		rc = send_one(-c->pid, sig, &delivered);
	if (notice) {
		t = calloc(n ? n : 1, sizeof(*t));
		if (!t) {
			rc = -ENOMEM;
			goto out;
		}
		child_notice_targets(p, n, m, t);
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!m[i] || p[i].zombie)
			continue;
		if (noted && sent_noted(c, &p[i]))
			continue;
		if (notice ? t[i] : p[i].pgid != c->pid)
			rc = send_one(p[i].pid, sig, &delivered);
	}
	if (noted && rc == 0)
		note_targets(c, p, t, n);
out:
	free(p);
	free(m);
	free(t);
	if (rc < 0)
		return rc;
	return delivered > 0 ? 0 : -ESRCH;
}

int
child_signal(struct child *c, int sig)
{
	return deliver(c, sig, !is_stop_signal(sig));
}

int
child_signal_all(struct child *c, int sig)
{
	return deliver(c, sig, false);
}

/* Living members of the snapshot. */
static size_t
count_alive(const struct child_proc *p, const bool *m, size_t n)
{
	size_t alive = 0;

	for (size_t i = 0; i < n; i++)
		alive += m[i] && !p[i].zombie;
	return alive;
}

int
child_kill_tree(struct child *c)
{
	const struct timespec pause = { 0, 1000000 };   /* 1 ms */
	size_t alive = 0;

	for (int round = 0; round < 5; round++) {
		struct child_proc *p;
		bool *m;
		size_t n;
		int rc;

		cgroup_kill(c);
		(void)child_signal_all(c, SIGKILL);   /* -ESRCH: nothing left */
		rc = snapshot(c, 0, &p, &m, &n);
		if (rc < 0)
			return rc;
		alive = count_alive(p, m, n);
		free(p);
		free(m);
		if (alive == 0)
			return 0;
		/* SIGKILL is delivered at once but acted on when the process
		 * next runs: give them a moment before looking again. */
		(void)nanosleep(&pause, NULL);
	}
	return (int)alive;
}

int
child_descendants(struct child *c, pid_t **pids, size_t *npids)
{
	struct child_proc *p;
	bool *m;
	size_t n, k = 0;
	pid_t *v;
	int rc;

	*pids = NULL;
	*npids = 0;
	rc = snapshot(c, 0, &p, &m, &n);
	if (rc < 0)
		return rc;
	v = calloc(count_alive(p, m, n) + 1, sizeof(*v));
	if (!v) {
		free(p);
		free(m);
		return -ENOMEM;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			/* the main child first */
			if (m[i] && !p[i].zombie && (p[i].pid == c->pid) == (pass == 0))
				v[k++] = p[i].pid;
		}
	}
	free(p);
	free(m);
	if (k == 0) {
		free(v);
		v = NULL;
	}
	*pids = v;
	*npids = k;
	return 0;
}

int
child_usage(struct child *c, struct child_usage *out)
{
	struct child_proc *p;
	unsigned long long ticks = 0;
	long long pages = 0, tck = sysconf(_SC_CLK_TCK), pagesz = sysconf(_SC_PAGESIZE);
	bool *m;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = snapshot(c, c->notice_sig, &p, &m, &n);
	if (rc < 0)
		return rc;
	if (c->notice_sig > 0) {
		bool *t = calloc(n ? n : 1, sizeof(*t));

		if (t) {
			child_notice_targets(p, n, m, t);
			note_targets(c, p, t, n);
		}
		free(t);
	}
	for (size_t i = 0; i < n; i++) {
		if (!m[i])
			continue;
		/* a zombie's time still counts until its parent reaps it and
		 * takes it over: the counter does not dip in between */
		ticks += p[i].cpu_ticks;
		if (p[i].zombie)
			continue;
		out->nprocs++;
		pages += p[i].rss_pages;
	}
	free(p);
	free(m);
	out->cpu_s = (double)ticks / (double)(tck > 0 ? tck : 100);
	out->rss_bytes = (double)pages * (double)(pagesz > 0 ? pagesz : 4096);
	return 0;
}

int
child_reap(struct child *c)
{
	int n = 0, st;
	pid_t r;

	for (;;) {
		r = sys.waitpid(-1, &st, WNOHANG);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			return -errno;
		}
		n++;
		if (c && r == c->pid && !c->exited) {
			c->exited = true;
			c->status = st;
		}
	}
	return n;
}

bool
child_exited(const struct child *c)
{
	return c->exited;
}

int
child_wait_status(const struct child *c)
{
	return c->status;
}

int
child_exit_code(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return -EINVAL;
}

void
child_free(struct child *c)
{
	if (!c)
		return;
	/* ESRCH: the group is already gone.  The rest of the training goes
	 * too, once (child_kill_tree() is the caller's to wait for it). */
	if (c->pid > 0 && !c->exited)
		(void)sys.kill(-c->pid, SIGKILL);
	if (c->pid > 0)
		(void)child_signal_all(c, SIGKILL);
	if (c->cgroup) {
		const struct timespec pause = { 0, 1000000 };   /* 1 ms */

		cgroup_kill(c);
		/* The killed leave the cgroup as they exit, within a few ms;
		 * one still busy leaves an empty cgroup behind. */
		for (int i = 0; i < 20 && rmdir(c->cgroup) < 0 && errno == EBUSY; i++)
			(void)nanosleep(&pause, NULL);
		free(c->cgroup);
	}
	child_close_fd(c, c->out_fd);
	child_close_fd(c, c->err_fd);
	forget_noted(c);
	hwmon_free(c->proc);
	free(c);
}

int
child_set_subreaper(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return -errno;
	return 0;
}
