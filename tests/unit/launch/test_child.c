/*
 * test_child.c - the training child: spawning, output through a pty or
 * pipes, exec errors, exit codes, process groups and signals, reaping,
 * dying with the agent, the system-call seam.  Real processes throughout,
 * every wait bounded.
 */
#include "autoconf.h"

#include "../vigil_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "launch/child.h"
#include "lib/sig.h"
#include "sys/hwmon.h"

#define WAIT_MS 5000  /* the most any single wait in these tests may take */

static char tmpdir[PATH_MAX];

/* The process groups a test started, killed in teardown so that a failed
 * test leaves nothing running. */
static pid_t groups[32];
static size_t n_groups;

static void
remember_group(pid_t pgid)
{
	if (n_groups < sizeof(groups) / sizeof(groups[0]))
		groups[n_groups++] = pgid;
}

static int
spawn(const struct child_opts *o, struct child **c)
{
	int rc = child_spawn(o, c);

	if (rc == 0)
		remember_group(child_pid(*c));
	return rc;
}

/* ---- helpers --------------------------------------------------------- */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
nap(void)
{
	struct timespec ts = { 0, 2000000 };  /* 2 ms */

	nanosleep(&ts, NULL);
}

static void
path_in_tmp(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", tmpdir, name);

	assert_true(n > 0 && (size_t)n < size);
}

static void
write_file(const char *name, const void *data, size_t len, mode_t mode)
{
	char path[PATH_MAX];
	int fd;

	path_in_tmp(path, sizeof(path), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);  /* whatever the umask */
}

/* Running, or a zombie nobody has reaped yet, counts as there. */
static bool
process_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

/* Dead (zombie or gone) within the bounded wait. */
static bool
process_dies(pid_t pid)
{
	int64_t end = now_ms() + WAIT_MS;

	while (!process_gone(pid)) {
		if (now_ms() > end)
			return false;
		nap();
	}
	return true;
}

/* Our children in state Z, from /proc. */
static int
count_zombies(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[512], *p, state;
		long ppid;
		ssize_t len;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %c %ld", &state, &ppid) == 2 &&
		    state == 'Z' && ppid == (long)getpid())
			n++;
	}
	closedir(d);
	return n;
}

/* No child of ours left, running or zombie, after reaping what exits
 * within the bounded wait. */
static void
assert_no_children(void)
{
	int64_t end = now_ms() + WAIT_MS;

	for (;;) {
		assert_true(child_reap(NULL) >= 0);
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			break;
		assert_true(now_ms() < end);
		nap();
	}
	assert_int_equal(count_zombies(), 0);
}

/* What came out of one descriptor. */
struct stream {
	char buf[1 << 18];
	size_t len;
	int eof_errno;  /* 0: read() returned 0; EIO: a pty master's end */
	bool done;
};

static void
read_some(int fd, struct stream *s)
{
	ssize_t n;

	n = read(fd, s->buf + s->len, sizeof(s->buf) - s->len);
	if (n > 0) {
		s->len += (size_t)n;
		assert_true(s->len < sizeof(s->buf));
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	assert_true(n == 0 || errno == EIO);
	s->eof_errno = n == 0 ? 0 : EIO;
	s->done = true;
}

/*
 * Read the child's stdout and stderr together until both end (so it never
 * blocks on a full one), or until OUT holds UNTIL (NULL: to the end).
 */
static void
read_output(struct child *c, struct stream *out, struct stream *err,
            const char *until)
{
	int64_t end = now_ms() + WAIT_MS;

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	while (!out->done || !err->done) {
		struct pollfd pfd[2] = {
			{ .fd = out->done ? -1 : child_stdout_fd(c), .events = POLLIN },
			{ .fd = err->done ? -1 : child_stderr_fd(c), .events = POLLIN },
		};
		int left = (int)(end - now_ms());

		assert_true(left > 0);
		assert_true(poll(pfd, 2, left) >= 0 || errno == EINTR);
		if (pfd[0].revents)
			read_some(pfd[0].fd, out);
		if (pfd[1].revents)
			read_some(pfd[1].fd, err);
		if (until && out->len >= strlen(until) &&
		    memmem(out->buf, out->len, until, strlen(until)))
			return;
	}
}

/* Reap until the main child has gone; its exit code. */
static int
wait_exit(struct child *c)
{
	int64_t end = now_ms() + WAIT_MS;

	for (;;) {
		assert_true(child_reap(c) >= 0);
		if (child_exited(c))
			return child_exit_code(child_wait_status(c));
		assert_true(now_ms() < end);
		nap();
	}
}

/* The parent of PID from /proc, or -1. */
static pid_t
getppid_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && sscanf(p + 1, " %*c %d", &ppid) != 1)
		ppid = -1;
	fclose(f);
	return ppid;
}

static void
spawn_sh(const char *script, bool pty, struct child **c)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	struct child_opts o = { .argv = argv, .pty_stdout = pty };

	assert_int_equal(spawn(&o, c), 0);
	assert_non_null(*c);
}

/* Run a shell script to its end: exit code, stdout, stderr. */
static int
run_sh(const char *script, bool pty, struct stream *out, struct stream *err)
{
	struct child *c;
	int code;

	spawn_sh(script, pty, &c);
	read_output(c, out, err, NULL);
	code = wait_exit(c);
	child_free(c);
	return code;
}

static void
assert_stream(const struct stream *s, const char *want)
{
	size_t len = strlen(want);

	if (s->len != len || memcmp(s->buf, want, len) != 0)
		fail_msg("got %zu bytes \"%.*s\", want \"%s\"", s->len,
		         (int)s->len, s->buf, want);
}

/* ---- fixtures --------------------------------------------------------- */

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	/* Orphans of the tests' children come to us, as to the agent. */
	if (child_set_subreaper() < 0)
		return -1;
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_child.XXXXXX",
	         base && *base ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int
group_teardown(void **state)
{
	(void)state;
	return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Every test starts with the default output streams and no children. */
struct streams {
	struct stream out, err;
};

static int
setup(void **state)
{
	struct streams *s = malloc(sizeof(*s));

	*state = s;
	return s ? 0 : -1;
}

static int
teardown(void **state)
{
	child_set_sys(NULL);
	for (size_t i = 0; i < n_groups; i++)
		(void)kill(-groups[i], SIGKILL);  /* ESRCH: gone, as it should be */
	n_groups = 0;
	/* Their zombies, if any, are ours (we are their subreaper). */
	for (int i = 0; i < 100 && waitpid(-1, NULL, WNOHANG) >= 0; i++)
		nap();
	free(*state);
	return 0;
}

/* ---- output ----------------------------------------------------------- */

#define TTY_SCRIPT \
	"echo hi; if test -t 1; then echo tty; else echo notty; fi; " \
	"echo oops >&2; if test -t 2; then echo errtty >&2; fi"

static void
test_pipe_stdout(void **state)
{
	struct streams *s = *state;

	assert_int_equal(run_sh(TTY_SCRIPT, false, &s->out, &s->err), 0);
	assert_stream(&s->out, "hi\nnotty\n");
	assert_stream(&s->err, "oops\n");
	assert_int_equal(s->out.eof_errno, 0);
	assert_no_children();
}

static void
test_pty_stdout(void **state)
{
	struct streams *s = *state;
	struct winsize ws = { 0 };
	struct child *c;
	int fl;

	spawn_sh(TTY_SCRIPT, true, &c);
	fl = fcntl(child_stdout_fd(c), F_GETFL);
	assert_true(fl >= 0 && (fl & O_NONBLOCK));
	assert_true(fcntl(child_stdout_fd(c), F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(child_stderr_fd(c), F_GETFD) & FD_CLOEXEC);
	/* A size, so programs that format to the width have one. */
	assert_int_equal(ioctl(child_stdout_fd(c), TIOCGWINSZ, &ws), 0);
	assert_true(ws.ws_col >= 80 && ws.ws_row > 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	/* Raw mode: "\n" stays "\n", no "\r" added. */
	assert_stream(&s->out, "hi\ntty\n");
	assert_stream(&s->err, "oops\n");
	assert_int_equal(s->out.eof_errno, EIO);
	assert_int_equal(s->err.eof_errno, 0);
	assert_no_children();
}

static const unsigned char odd_bytes[] = {
	1, '\r', '\n', 0, 0xff, 'a', '\r', '\r', '\n', 0x03, 0x04, 0x1a, 0x7f,
	'l', 'a', 's', 't',
};
#define ODD_SCRIPT "printf '\\001\\r\\n\\000\\377a\\r\\r\\n\\003\\004\\032\\177last'"

static void
exact_bytes(struct streams *s, bool pty)
{
	enum { BIG = 200000 };
	unsigned char *big = malloc(BIG);
	char path[PATH_MAX], script[PATH_MAX + 16];

	assert_non_null(big);
	/* The control bytes a terminal would interpret, and a last line
	 * without a newline. */
	assert_int_equal(run_sh(ODD_SCRIPT, pty, &s->out, &s->err), 0);
	assert_int_equal(s->out.len, sizeof(odd_bytes));
	assert_memory_equal(s->out.buf, odd_bytes, sizeof(odd_bytes));
	assert_int_equal(s->err.len, 0);

	/* Every byte value, more than a pty or pipe buffer holds. */
	for (size_t i = 0; i < BIG; i++)
		big[i] = (unsigned char)(i * 7 + i / 256);
	write_file("big", big, BIG, 0644);
	path_in_tmp(path, sizeof(path), "big");
	snprintf(script, sizeof(script), "cat '%s'", path);
	assert_int_equal(run_sh(script, pty, &s->out, &s->err), 0);
	assert_int_equal(s->out.len, BIG);
	assert_memory_equal(s->out.buf, big, BIG);
	assert_int_equal(s->out.eof_errno, pty ? EIO : 0);
	free(big);
	assert_no_children();
}

static void
test_exact_bytes_pipe(void **state)
{
	exact_bytes(*state, false);
}

static void
test_exact_bytes_pty(void **state)
{
	exact_bytes(*state, true);
}

/* ---- exec and its errors -------------------------------------------- */

static int
spawn_argv(char *const *argv, char *const *envp, const char *cwd, struct child **c)
{
	struct child_opts o = { .argv = argv, .envp = envp, .cwd = cwd };

	static char sentinel;

	*c = (struct child *)&sentinel;  /* must be reset to NULL on failure */
	return spawn(&o, c);
}

static void
test_exec_errors(void **state)
{
	char plain[PATH_MAX], missing[PATH_MAX], pathvar[PATH_MAX + 8];
	char *no_such[] = { (char *)"vigil-test-no-such-program", NULL };
	char *by_path[] = { missing, NULL };
	char *not_exec[] = { plain, NULL };
	char *dir[] = { tmpdir, NULL };
	char *plain_name[] = { (char *)"plain", NULL };
	char *sh[] = { (char *)"sh", (char *)"-c", (char *)"exit 0", NULL };
	char *envp[] = { pathvar, NULL };
	char *empty[] = { (char *)"", NULL };
	char *none[] = { NULL };
	struct child_opts o = { .argv = none };
	struct child *c;

	(void)state;
	write_file("plain", "echo no\n", 8, 0644);
	path_in_tmp(plain, sizeof(plain), "plain");
	path_in_tmp(missing, sizeof(missing), "no/such/prog");
	snprintf(pathvar, sizeof(pathvar), "PATH=%s", tmpdir);

	assert_int_equal(spawn_argv(no_such, NULL, NULL, &c), -ENOENT);
	assert_null(c);
	assert_int_equal(spawn_argv(by_path, NULL, NULL, &c), -ENOENT);
	assert_null(c);
	assert_int_equal(spawn_argv(not_exec, NULL, NULL, &c), -EACCES);
	assert_null(c);
	assert_int_equal(spawn_argv(dir, NULL, NULL, &c), -EACCES);
	assert_null(c);
	/* Found in the child's PATH, but not executable. */
	assert_int_equal(spawn_argv(plain_name, envp, NULL, &c), -EACCES);
	assert_null(c);
	/* chdir() fails before exec. */
	assert_int_equal(spawn_argv(sh, NULL, missing, &c), -ENOENT);
	assert_null(c);
	assert_int_equal(spawn_argv(empty, NULL, NULL, &c), -ENOENT);
	assert_null(c);
	assert_int_equal(child_spawn(&o, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(child_spawn(NULL, &c), -EINVAL);

	/* child_spawn() reaped every failed child itself: none at all,
	 * not even a zombie, without our reaping. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void
test_envp_path(void **state)
{
	static const char prog[] = "#!/bin/sh\necho from-envp \"$@\" \"$FOO\"\n";
	static const char noexec[] = "#!/bin/sh\necho wrong\n";
	static const char noshebang[] = "echo noshebang \"$1\"\n";
	struct streams *s = *state;
	char bin[PATH_MAX], pathvar[3 * PATH_MAX + 32];
	char *envp[] = { pathvar, (char *)"FOO=bar", NULL };
	char *argv1[] = { (char *)"myprog", (char *)"a", NULL };
	char *argv2[] = { (char *)"noshebang", (char *)"x", NULL };
	char *argv3[] = { (char *)"env", NULL };
	char *env_only[] = { (char *)"FOO=bar", (char *)"PATH=/usr/bin:/bin", NULL };
	struct child *c;

	assert_int_equal(mkdir(strcat(strcpy(bin, tmpdir), "/bin"), 0755), 0);
	assert_int_equal(mkdir(strcat(strcpy(bin, tmpdir), "/noexec"), 0755), 0);
	write_file("bin/myprog", prog, strlen(prog), 0755);
	write_file("noexec/myprog", noexec, strlen(noexec), 0644);
	write_file("bin/noshebang", noshebang, strlen(noshebang), 0755);
	/* Only the child's PATH holds the program; an entry where it is not
	 * executable comes first and is passed over, as execvp() does. */
	snprintf(pathvar, sizeof(pathvar), "PATH=%s/nonexistent:%s/noexec:%s/bin",
	         tmpdir, tmpdir, tmpdir);
	assert_null(strstr(getenv("PATH") ? getenv("PATH") : "", tmpdir));

	assert_int_equal(spawn_argv(argv1, envp, NULL, &c), 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_stream(&s->out, "from-envp a bar\n");

	/* A script without #! runs under /bin/sh. */
	assert_int_equal(spawn_argv(argv2, envp, NULL, &c), 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_stream(&s->out, "noshebang x\n");

	/* An empty PATH entry is the current directory: the child's cwd. */
	snprintf(pathvar, sizeof(pathvar), "PATH=/nonexistent::");
	assert_int_equal(spawn_argv(argv1, envp, strcat(strcpy(bin, tmpdir), "/bin"), &c), 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_stream(&s->out, "from-envp a bar\n");

	/* The environment is exactly envp. */
	assert_int_equal(spawn_argv(argv3, env_only, NULL, &c), 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_stream(&s->out, "FOO=bar\nPATH=/usr/bin:/bin\n");
	assert_no_children();
}

static void
test_cwd_stdin_fds(void **state)
{
	static const char script[] =
		"pwd -P; readlink /proc/self/fd/0; "
		"if test -e /proc/$$/fd/9; then echo leaked; else echo closed; fi";
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	struct streams *s = *state;
	char real[PATH_MAX], want[2 * PATH_MAX];
	struct child *c;
	int fd, saved;

	/* An inheritable descriptor the agent did not mean to pass on. */
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	saved = fcntl(9, F_DUPFD_CLOEXEC, 10);  /* keep whatever is at 9 */
	assert_int_equal(dup2(fd, 9), 9);
	assert_int_equal(spawn_argv(argv, NULL, tmpdir, &c), 0);
	if (saved >= 0) {
		assert_int_equal(dup2(saved, 9), 9);
		close(saved);
	} else {
		close(9);
	}
	close(fd);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	assert_non_null(realpath(tmpdir, real));
	snprintf(want, sizeof(want), "%s\n/dev/null\nclosed\n", real);
	assert_stream(&s->out, want);

	/* child_close_fd() closes and forgets. */
	fd = child_stdout_fd(c);
	child_close_fd(c, fd);
	assert_int_equal(child_stdout_fd(c), -1);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_true(child_stderr_fd(c) >= 0);
	child_free(c);
	assert_no_children();
}

/* ---- exit codes ------------------------------------------------------- */

static void
test_exit_codes(void **state)
{
	struct streams *s = *state;

	assert_int_equal(run_sh("exit 3", false, &s->out, &s->err), 3);
	assert_int_equal(run_sh("kill -TERM $$", false, &s->out, &s->err), 128 + SIGTERM);
	assert_int_equal(child_exit_code(0), 0);
	assert_int_equal(child_exit_code(W_EXITCODE(255, 0)), 255);
	assert_int_equal(child_exit_code(SIGKILL), 128 + SIGKILL);
	assert_int_equal(child_exit_code(W_STOPCODE(SIGSTOP)), -EINVAL);
	assert_no_children();
}

/* ---- process group and signals --------------------------------------- */

static void
test_group_signal(void **state)
{
	static const char script[] =
		"( trap 'echo got > \"$0\"; exit 0' USR1; echo ready; "
		"while :; do sleep 0.01; done ) & wait";
	struct streams *s = *state;
	char marker[PATH_MAX];
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, marker, NULL };
	struct child_opts o = { .argv = argv };
	struct child *c;
	struct stat st;
	int64_t end;

	path_in_tmp(marker, sizeof(marker), "marker");
	assert_int_equal(spawn(&o, &c), 0);
	assert_int_equal(getpgid(child_pid(c)), child_pid(c));
	assert_true(getpgid(0) != child_pid(c));
	read_output(c, &s->out, &s->err, "ready\n");
	assert_int_equal(child_signal(c, SIGUSR1), 0);

	/* The grandchild's trap ran: the signal reached the worker. */
	end = now_ms() + WAIT_MS;
	while (stat(marker, &st) < 0 || st.st_size == 0) {
		assert_true(now_ms() < end);
		nap();
	}
	/* And the main child, a launcher without a handler for it, did not
	 * die of it: it ends when its worker does, as it would by itself. */
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_no_children();
}

/* child_signal_all(): every process, handler or not; a stop signal
 * reaches the whole group, the launcher included. */
static void
test_signal_all(void **state)
{
	static const char script[] = "( trap '' USR1; echo ready; while :; do sleep 0.01; done ) & wait";
	struct streams *s = *state;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	struct child_opts o = { .argv = argv };
	struct child *c;

	assert_int_equal(spawn(&o, &c), 0);
	read_output(c, &s->out, &s->err, "ready\n");
	assert_int_equal(child_signal_all(c, SIGUSR1), 0);
	assert_int_equal(wait_exit(c), 128 + SIGUSR1);
	/* the worker ignores it and is still there: the tree kill ends it */
	assert_int_equal(child_kill_tree(c), 0);
	child_free(c);
	assert_no_children();
}

/* Waits until FILE exists and is not empty. */
static void
wait_marker(const char *file)
{
	int64_t end = now_ms() + WAIT_MS;
	struct stat st;

	while (stat(file, &st) < 0 || st.st_size == 0) {
		if (now_ms() >= end)
			fail_msg("%s never written", file);
		nap();
	}
}

/*
 * The torch >= 2 layout: a launcher without a handler for the checkpoint
 * signal starts its workers in sessions of their own (setsid, as torch's
 * start_new_session=True does).  The checkpoint signal reaches every
 * worker, the launcher survives it, and nothing is left after the tree
 * kill.
 */
static void
test_new_sessions(void **state)
{
	static const char script[] =
		"for w in 1 2; do setsid sh -c 'trap \"echo saved > $0.$1; exit 0\" USR1; "
		"echo ready > $0.ready$1; while :; do sleep 0.01; done' \"$0\" $w & done; "
		"wait; echo launcher done";
	struct streams *s = *state;
	char marker[PATH_MAX], m1[PATH_MAX + 8], m2[PATH_MAX + 8];
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, marker, NULL };
	struct child_opts o = { .argv = argv };
	pid_t *pids = NULL;
	size_t n = 0, k;
	struct child *c;

	path_in_tmp(marker, sizeof(marker), "worker");
	assert_int_equal(spawn(&o, &c), 0);
	snprintf(m1, sizeof(m1), "%s.ready1", marker);
	snprintf(m2, sizeof(m2), "%s.ready2", marker);
	wait_marker(m1);
	wait_marker(m2);
	snprintf(m1, sizeof(m1), "%s.1", marker);
	snprintf(m2, sizeof(m2), "%s.2", marker);
	/* the launcher first, then both workers (in sessions of their own)
	 * and their sleeps */
	assert_int_equal(child_descendants(c, &pids, &n), 0);
	assert_true(n >= 3);
	assert_int_equal(pids[0], child_pid(c));
	k = 0;
	for (size_t i = 1; i < n; i++)
		k += getsid(pids[i]) == pids[i];
	assert_int_equal(k, 2);
	free(pids);

	assert_int_equal(child_signal(c, SIGUSR1), 0);
	wait_marker(m1);
	wait_marker(m2);
	/* both saved and exited 0; the launcher went on to its end */
	assert_int_equal(wait_exit(c), 0);
	read_output(c, &s->out, &s->err, "launcher done\n");
	assert_int_equal(child_kill_tree(c), 0);
	child_free(c);
	assert_no_children();
}

/*
 * A launcher that dies first leaves its workers (in their own sessions,
 * outside the group) to the agent, a subreaper: they are still the
 * training's, get its signals, and die with the tree kill.
 */
static void
test_orphans_adopted(void **state)
{
	static const char script[] =
		"setsid sh -c 'trap \"\" USR1; echo ready; exec sleep 30' & "
		"read x < /dev/null; sleep 0.2; exit 3";
	struct streams *s = *state;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	struct child_opts o = { .argv = argv };
	pid_t *pids = NULL;
	size_t n = 0;
	struct child *c;
	pid_t worker;

	assert_int_equal(spawn(&o, &c), 0);
	read_output(c, &s->out, &s->err, "ready\n");
	assert_int_equal(wait_exit(c), 3);
	assert_int_equal(child_descendants(c, &pids, &n), 0);
	assert_int_equal(n, 1);
	worker = pids[0];
	free(pids);
	assert_int_equal(getppid_of(worker), getpid());
	/* a group signal would miss it; a stop signal does not */
	assert_int_equal(child_signal(c, SIGTERM), 0);
	assert_int_equal(child_kill_tree(c), 0);
	child_free(c);
	assert_no_children();
	assert_true(process_gone(worker));
}

/*
 * What the training uses: the shell that spun and its sleeping child, CPU
 * and memory from one read of /proc.
 */
static void
test_usage(void **state)
{
	static const char script[] =
		"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30 & echo spun; wait";
	struct streams *s = *state;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	struct child_opts o = { .argv = argv };
	struct child_usage u;
	struct child *c;

	assert_int_equal(spawn(&o, &c), 0);
	read_output(c, &s->out, &s->err, "spun\n");
	assert_int_equal(child_usage(c, &u), 0);
	assert_true(u.nprocs >= 2);  /* the shell, the sleep (and a keeper) */
	assert_true(u.cpu_s > 0.02);   /* 200,000 turns of a shell loop */
	assert_true(u.cpu_s < 60);
	assert_true(u.rss_bytes > 4096 * 2);
	assert_int_equal(child_kill_tree(c), 0);
	(void)wait_exit(c);
	assert_int_equal(child_usage(c, &u), 0);
	assert_int_equal(u.nprocs, 0);
	child_free(c);
	assert_no_children();
}

/* Writes TEXT into PATH; 0 or -errno. */
static int
put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * A delegated cgroup v2 (here made by root and marked as systemd marks
 * Delegate=yes): the agent finds it, the training runs in a cgroup of its
 * own below it, a worker that left the process tree and the group is
 * still the training's, the tree kill empties the cgroup and child_free()
 * removes it.  As root only: delegating is root's to do.
 */
static void
test_cgroup_delegated(void **state)
{
	static const char script[] = "setsid sleep 30 & echo ready; wait";
	struct streams *s = *state;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, NULL };
	char own[PATH_MAX], test_cg[PATH_MAX + 32], found[PATH_MAX + 32], procs[PATH_MAX + 48], pid[32];
	char training_cg[PATH_MAX + 64];
	struct child_opts o = { .argv = argv };
	struct hwmon *h;
	struct child *c;
	pid_t *pids = NULL;
	size_t n = 0;

	if (geteuid() != 0) {
		skip();
		return;
	}
	assert_int_equal(hwmon_open(NULL, &h), 0);
	assert_int_equal(hwmon_cgroup2_self(h, own, sizeof(own)), 0);
	hwmon_free(h);
	snprintf(test_cg, sizeof(test_cg), "/%s/vigil-test.%d", own, (int)getpid());
	assert_int_equal(mkdir(test_cg, 0755), 0);
	assert_int_equal(setxattr(test_cg, "trusted.delegate", "1", 1, 0), 0);
	/* the agent (this test) moves into the delegated cgroup */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", test_cg);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	assert_int_equal(put_file(procs, pid), 0);

	assert_int_equal(child_cgroup_find(found, sizeof(found)), 0);
	assert_string_equal(found, test_cg);
	o.cgroup = found;
	assert_int_equal(spawn(&o, &c), 0);
	read_output(c, &s->out, &s->err, "ready\n");
	assert_non_null(child_cgroup(c));
	snprintf(training_cg, sizeof(training_cg), "%s", child_cgroup(c));
	assert_true(strncmp(training_cg, test_cg, strlen(test_cg)) == 0);
	/* the keeper, sh and the worker in its own session */
	assert_int_equal(child_descendants(c, &pids, &n), 0);
	assert_true(n >= 3);
	free(pids);
	assert_int_equal(child_kill_tree(c), 0);
	assert_int_equal(wait_exit(c), 128 + SIGKILL);
	child_free(c);
	assert_int_equal(access(training_cg, F_OK), -1);
	assert_no_children();

	/* back where it was, and the test cgroup gone */
	snprintf(procs, sizeof(procs), "/%s/cgroup.procs", own);
	assert_int_equal(put_file(procs, pid), 0);
	assert_int_equal(rmdir(test_cg), 0);
	/* the hierarchy's own root, or an undelegated cgroup: none found */
	if (child_cgroup_find(found, sizeof(found)) == 0)
		assert_string_equal(found, "/the agent's cgroup is delegated after all");
}

/* A process table: pid, ppid, pgid, sid, zombie, handles, launcher. */
#define P(pid, ppid, pgid, sid, z, h, l) { pid, ppid, pgid, sid, z, h, l, 0, 0, 0 }

/*
 * Who belongs to the training, and who gets a notice, on synthetic
 * process tables (the agent is 100 in session 1, the training's main
 * child 200).
 */
static void
test_tree_rules(void **state)
{
	static const struct child_proc t[] = {
		P(1, 0, 1, 1, false, false, false),             /* init */
		P(100, 1, 100, 1, false, false, false),         /* the agent */
		P(150, 100, 150, 1, false, false, false),       /* a helper of the agent (notify) */
		P(151, 150, 150, 1, false, false, false),       /* ... and its child */
		P(200, 100, 200, 1, false, false, false),       /* torchrun: no handler */
		P(201, 200, 201, 201, false, true, false),      /* worker, own session, handler */
		P(202, 200, 202, 202, false, true, false),      /* worker, own session, handler */
		P(203, 201, 201, 201, false, false, false),     /* data loader without handler */
		P(210, 200, 200, 1, true, false, false),        /* a zombie */
		P(300, 100, 300, 300, false, false, false),     /* orphan adopted: setsid daemon */
		P(301, 100, 200, 1, false, true, false),        /* orphan adopted, still in the group */
		P(400, 999, 400, 400, false, true, false),      /* a stranger */
		P(500, 1, 200, 1, false, true, false),          /* outside the agent's tree */
	};
	static const pid_t members[] = { 200, 201, 202, 203, 210, 300, 301 };
	static const pid_t notified[] = { 201, 202, 203, 300, 301 };
	const size_t n = sizeof(t) / sizeof(t[0]);
	bool m[sizeof(t) / sizeof(t[0])], tg[sizeof(t) / sizeof(t[0])];
	size_t k;

	(void)state;
	assert_int_equal(child_tree_members(t, n, 100, 1, 200, true, m), 7);
	for (size_t i = 0, j = 0; i < n; i++) {
		bool want = j < 7 && members[j] == t[i].pid;

		if (m[i] != want)
			fail_msg("pid %d: member %d, want %d", t[i].pid, m[i], want);
		j += want;
	}
	/* workers with handlers, leaves without one; torchrun and the
	 * zombie spared */
	assert_int_equal(child_notice_targets(t, n, m, tg), 5);
	for (size_t i = 0, j = 0; i < n; i++) {
		bool want = j < 5 && notified[j] == t[i].pid;

		if (tg[i] != want)
			fail_msg("pid %d: notified %d, want %d", t[i].pid, tg[i], want);
		j += want;
	}

	/* Once the main child is reaped its pid may be reused by a helper:
	 * not the training's; the group's leftovers still are. */
	k = child_tree_members(t, n, 100, 1, 200, false, m);
	assert_false(m[4]);
	assert_true(m[9]);
	assert_true(m[10]);
	assert_int_equal(k, 2);         /* 300, 301, and nothing under 200 */
}

/* Below an MPI launcher that handles the signal (it forwards it to every
 * rank), nobody is signalled twice: the launcher gets it alone. */
static void
test_tree_mpirun(void **state)
{
	static const struct child_proc t[] = {
		P(100, 1, 100, 1, false, false, false),
		P(200, 100, 200, 1, false, false, false),       /* bash -c wrapper */
		P(210, 200, 200, 1, false, true, true),         /* mpirun: forwards USR1 */
		P(211, 210, 211, 1, false, true, false),        /* rank */
		P(212, 210, 212, 1, false, false, false),       /* rank without handler */
		P(220, 200, 200, 1, false, false, true),        /* an mpirun that does not handle it */
		P(221, 220, 221, 1, false, true, false),
	};
	const size_t n = sizeof(t) / sizeof(t[0]);
	bool m[sizeof(t) / sizeof(t[0])], tg[sizeof(t) / sizeof(t[0])];

	(void)state;
	assert_int_equal(child_tree_members(t, n, 100, 1, 200, true, m), 6);
	assert_int_equal(child_notice_targets(t, n, m, tg), 2);
	assert_true(tg[2]);
	assert_true(tg[6]);
}

/* The hex mask after NAME in a /proc/PID/status text, or UINT64_MAX. */
static uint64_t
status_mask(const struct stream *s, const char *name)
{
	char text[8192], *p;
	size_t n = s->len < sizeof(text) - 1 ? s->len : sizeof(text) - 1;

	memcpy(text, s->buf, n);
	text[n] = '\0';
	p = strstr(text, name);
	return p ? strtoull(p + strlen(name), NULL, 16) : UINT64_MAX;
}

static void
test_signal_state(void **state)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_usr2, old_pipe;
	char *argv[] = { (char *)"cat", (char *)"/proc/self/status", NULL };
	struct streams *s = *state;
	sigset_t old, want;
	struct child_opts o = { .argv = argv, .sigmask = &old };
	struct child *c;

	/* As the agent: handled signals blocked, others ignored. */
	assert_int_equal(sig_block(&old), 0);
	assert_int_equal(sigaction(SIGUSR2, &ign, &old_usr2), 0);
	assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
	sigdelset(&old, SIGWINCH);

	assert_int_equal(spawn(&o, &c), 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_int_equal(status_mask(&s->out, "SigBlk:"), 0);
	assert_int_equal(status_mask(&s->out, "SigIgn:"), 0);

	/* The mask given is the one the program starts with. */
	sigemptyset(&want);
	sigaddset(&want, SIGWINCH);
	o.sigmask = &want;
	assert_int_equal(spawn(&o, &c), 0);
	read_output(c, &s->out, &s->err, NULL);
	assert_int_equal(wait_exit(c), 0);
	child_free(c);
	assert_int_equal(status_mask(&s->out, "SigBlk:"), 1ULL << (SIGWINCH - 1));

	assert_int_equal(sigaction(SIGUSR2, &old_usr2, NULL), 0);
	assert_int_equal(sigaction(SIGPIPE, &old_pipe, NULL), 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	assert_no_children();
}

/* ---- reaping ---------------------------------------------------------- */

static void
test_reap_orphans(void **state)
{
	struct streams *s = *state;
	struct child *c;
	long orphan;
	int reaped = 0, n;
	int64_t end;

	/* The main child exits at once, leaving a grandchild that the
	 * subreaper (us) inherits. */
	spawn_sh("sleep 0.2 & echo $!", false, &c);
	read_output(c, &s->out, &s->err, "\n");
	assert_int_equal(sscanf(s->out.buf, "%ld", &orphan), 1);
	assert_true(orphan > 0 && orphan != child_pid(c));

	end = now_ms() + WAIT_MS;
	while (!child_exited(c) || !process_gone((pid_t)orphan) ||
	       kill((pid_t)orphan, 0) == 0) {
		n = child_reap(c);
		assert_true(n >= 0);
		reaped += n;
		assert_true(now_ms() < end);
		nap();
	}
	assert_true(reaped >= 2);
	assert_int_equal(child_exit_code(child_wait_status(c)), 0);
	child_free(c);
	assert_int_equal(count_zombies(), 0);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* ---- dying with the agent --------------------------------------------- */

/*
 * A forked "agent" spawns a long sleep and reports its pid, then, told by
 * us, exits (KILL false) or is killed (KILL true): the sleep must die.
 */
static void
agent_goes(bool kill_it)
{
	int report[2], go[2], st;
	pid_t agent, training = 0;
	char dummy;

	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	agent = fork();
	assert_true(agent >= 0);
	if (agent == 0) {
		char *argv[] = { (char *)"sleep", (char *)"30", NULL };
		struct child_opts o = { .argv = argv };
		struct child *c;
		pid_t pid;

		close(report[0]);
		close(go[1]);
		if (child_spawn(&o, &c) < 0)
			_exit(1);
		pid = child_pid(c);
		if (write(report[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(2);
		(void)!read(go[0], &dummy, 1);  /* EOF: exit without cleanup */
		_exit(0);
	}
	close(report[1]);
	close(go[0]);
	assert_int_equal(read(report[0], &training, sizeof(training)), sizeof(training));
	close(report[0]);
	remember_group(training);
	assert_false(process_gone(training));

	if (kill_it)
		assert_int_equal(kill(agent, SIGKILL), 0);
	close(go[1]);
	assert_int_equal(waitpid(agent, &st, 0), agent);
	if (kill_it)
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	else
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	assert_true(process_dies(training));
	/* It was reparented to us (the subreaper): reap it, and see how it died. */
	assert_int_equal(waitpid(training, &st, 0), training);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_no_children();
}

static void
test_pdeathsig_exit(void **state)
{
	(void)state;
	agent_goes(false);
}

static void
test_pdeathsig_kill(void **state)
{
	(void)state;
	agent_goes(true);
}

/*
 * The agent is killed (as mpirun does at teardown) while its training has
 * a worker in a session of its own (torch >= 2): the worker, which no
 * parent-death signal covers, must die too.
 */
static void
test_agent_killed_sessions(void **state)
{
	int report[2], st;
	pid_t agent, worker = 0;
	char file[PATH_MAX];
	FILE *f;
	int64_t end;

	(void)state;
	path_in_tmp(file, sizeof(file), "worker.pid");
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	agent = fork();
	assert_true(agent >= 0);
	if (agent == 0) {
		char *argv[] = { (char *)"sh", (char *)"-c",
			(char *)"setsid sleep 30 & echo $! > \"$0.tmp\"; mv \"$0.tmp\" \"$0\"; wait",
			file, NULL };
		struct child_opts o = { .argv = argv };
		struct child *c;

		close(report[0]);
		if (child_spawn(&o, &c) < 0)
			_exit(1);
		(void)!write(report[1], "x", 1);
		pause();
		_exit(0);
	}
	close(report[1]);
	assert_int_equal(read(report[0], &st, 1), 1);
	close(report[0]);
	end = now_ms() + WAIT_MS;
	while (!(f = fopen(file, "r"))) {
		assert_true(now_ms() < end);
		nap();
	}
	assert_int_equal(fscanf(f, "%d", &worker), 1);
	fclose(f);
	while (getsid(worker) != worker) {      /* setsid(1) is on its way */
		assert_true(now_ms() < end);
		nap();
	}
	assert_int_equal(kill(agent, SIGKILL), 0);
	assert_int_equal(waitpid(agent, &st, 0), agent);
	assert_true(process_dies(worker));
	/* whatever came to us (the subreaper) on the way */
	while (waitpid(-1, &st, WNOHANG) > 0 || (errno != ECHILD && now_ms() < end + WAIT_MS))
		nap();
	assert_no_children();
}

/* ---- the notice signal's targets, noted -------------------------------- */

static pid_t killed[256];
static int nkilled;

/* kill(), remembering whom */
static int
counting_kill(pid_t pid, int sig)
{
	if (nkilled < (int)(sizeof(killed) / sizeof(killed[0])))
		killed[nkilled++] = pid;
	return kill(pid, sig);
}

/* Whether this kernel (and whatever runs us) opens pidfds. */
static bool
have_pidfds(void)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
#else
	return false;
#endif
}

static int
lines_in(const char *file)
{
	FILE *f = fopen(file, "r");
	int n = 0, ch;

	if (!f)
		return -1;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/*
 * Workers in sessions of their own, each counting the checkpoint signals
 * it gets.  With the signal noted (child_opts.notice_signal), the look at
 * /proc that child_usage() makes notes them, and child_signal() reaches
 * them through their pidfds: each gets it once, and kill() never goes to
 * them (the look child_signal() makes after skips them).  Without, kill()
 * does, each once too.
 */
static void
test_noted_targets(void **state)
{
	static const char script[] =
		"for w in 1 2; do setsid sh -c 'trap \"echo got >> $0.$1\" USR1; "
		"echo ready > $0.ready$1; while :; do sleep 0.01; done' \"$0\" $w & done; "
		"wait";
	struct child_sys counting = { .kill = counting_kill };
	char marker[PATH_MAX], m[2][PATH_MAX + 8];
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)script, marker, NULL };

	(void)state;
	for (int noted = 1; noted >= 0; noted--) {
		struct child_opts o = { .argv = argv, .notice_signal = noted ? SIGUSR1 : 0 };
		struct child_usage u;
		pid_t *pids = NULL, workers[2];
		size_t n = 0, k = 0;
		struct child *c;
		int to_workers = 0;

		path_in_tmp(marker, sizeof(marker), noted ? "noted" : "looked");
		assert_int_equal(spawn(&o, &c), 0);
		for (int w = 0; w < 2; w++) {
			snprintf(m[w], sizeof(m[w]), "%s.ready%d", marker, w + 1);
			wait_marker(m[w]);
			snprintf(m[w], sizeof(m[w]), "%s.%d", marker, w + 1);
		}
		assert_int_equal(child_descendants(c, &pids, &n), 0);
		for (size_t i = 0; i < n && k < 2; i++)
			if (getsid(pids[i]) == pids[i])
				workers[k++] = pids[i];
		free(pids);
		assert_int_equal(k, 2);
		/* the inspection's look, which notes the targets */
		assert_int_equal(child_usage(c, &u), 0);

		nkilled = 0;
		child_set_sys(&counting);
		assert_int_equal(child_signal(c, SIGUSR1), 0);
		child_set_sys(NULL);
		wait_marker(m[0]);
		wait_marker(m[1]);
		for (int i = 0; i < nkilled; i++)
			to_workers += killed[i] == workers[0] || killed[i] == workers[1];
		/* without pidfds (a kernel before 5.3, valgrind 3.19) nothing
		 * is noted, and the look finds them as before */
		assert_int_equal(to_workers, noted && have_pidfds() ? 0 : 2);
		/* once each, not once through the pidfd and again by kill() */
		(void)nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
		assert_int_equal(lines_in(m[0]), 1);
		assert_int_equal(lines_in(m[1]), 1);

		assert_true(child_kill_tree(c) >= 0);
		child_free(c);
		assert_no_children();
	}
}

/* ---- the seam ---------------------------------------------------------- */

static pid_t fake_pid;
static int fake_sig, fake_errno, fake_calls;
static pid_t fake_wait_for;

static int
fake_kill(pid_t pid, int sig)
{
	fake_pid = pid;
	fake_sig = sig;
	fake_calls++;
	if (fake_errno) {
		errno = fake_errno;
		return -1;
	}
	return 0;
}

/* Reports FAKE_WAIT_FOR as exited with status 7 once, then nothing; or
 * fails with FAKE_ERRNO. */
static pid_t
fake_waitpid(pid_t pid, int *status, int options)
{
	assert_int_equal(pid, -1);
	assert_true(options & WNOHANG);
	fake_calls++;
	if (fake_errno) {
		errno = fake_errno;
		return -1;
	}
	if (fake_wait_for) {
		pid = fake_wait_for;
		fake_wait_for = 0;
		*status = W_EXITCODE(7, 0);
		return pid;
	}
	return 0;
}

static void
test_seam(void **state)
{
	struct child_sys fake = { .kill = fake_kill, .waitpid = fake_waitpid };
	struct streams *s = *state;
	struct child *c;
	pid_t pid;
	int st;

	spawn_sh("echo up; exec sleep 30", false, &c);
	pid = child_pid(c);
	read_output(c, &s->out, &s->err, "up\n");
	child_set_sys(&fake);

	fake_errno = 0;
	fake_calls = 0;
	/* a notice goes to the training itself (a leaf without a handler),
	 * not to the group nor to the keeper above it */
	assert_int_equal(child_signal(c, SIGUSR1), 0);
	assert_int_equal(fake_calls, 1);
	assert_true(fake_pid > 0 && fake_pid != pid);
	assert_int_equal(fake_sig, SIGUSR1);
	fake_errno = ESRCH;
	assert_int_equal(child_signal(c, SIGTERM), -ESRCH);
	assert_int_equal(fake_pid, -pid);
	assert_int_equal(fake_sig, SIGTERM);

	fake_errno = EINVAL;
	assert_int_equal(child_reap(c), -EINVAL);
	assert_false(child_exited(c));
	fake_errno = 0;
	fake_wait_for = pid;
	assert_int_equal(child_reap(c), 1);
	assert_true(child_exited(c));
	assert_int_equal(child_exit_code(child_wait_status(c)), 7);

	/* The real calls again: the sleep is still there (the fakes did
	 * nothing to it) and dies of a real signal. */
	child_set_sys(NULL);
	assert_false(process_gone(pid));
	assert_int_equal(child_signal(c, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	child_free(c);
	assert_no_children();
}

static void
test_free_kills(void **state)
{
	struct streams *s = *state;
	struct child *c;
	pid_t pid;
	int st;
	int64_t t0;

	spawn_sh("echo up; sleep 30 & exec sleep 30", false, &c);
	pid = child_pid(c);
	read_output(c, &s->out, &s->err, "up\n");
	t0 = now_ms();
	child_free(c);
	assert_true(now_ms() - t0 < 1000);  /* it does not wait */
	child_free(NULL);
	/* The whole group dies: the main child and its background sleep. */
	assert_true(process_dies(pid));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_no_children();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exec_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipe_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pty_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exact_bytes_pipe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exact_bytes_pty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_envp_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cwd_stdin_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_noted_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_adopted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup_delegated, setup, teardown),
		cmocka_unit_test(test_tree_rules),
		cmocka_unit_test(test_tree_mpirun),
		cmocka_unit_test_setup_teardown(test_signal_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reap_orphans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pdeathsig_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pdeathsig_kill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_killed_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seam, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_kills, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
