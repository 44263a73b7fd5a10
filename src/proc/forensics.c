/*
 * forensics.c - the processes of a hung training, read from /proc and
 * by gdb, under a deadline (forensics.h).
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "lib/util.h"
#include "proc/forensics.h"
#include "proc/spawn.h"

#define GDB_OUT_MAX (64 * 1024)   /* what one gdb may print that is read */
#define FIELD_MAX 200             /* a string kept from /proc or gdb */

struct look {
	pid_t pid;
	char state;
	unsigned long long ticks0, ticks1;
	cJSON *o;
	/* gdb */
	pid_t gdb;
	int fd;
	char *out;
	size_t len;
	bool fd_was_open;     /* gdb had not finished when it was ended */
};

static const char *
root(const struct forensics_opts *o)
{
	return o && o->proc_root ? o->proc_root : "/proc";
}

/* /proc/PID/NAME into BUF (NUL-terminated); bytes read, or a negative errno. */
static ssize_t
read_proc(const struct forensics_opts *o, pid_t pid, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n, got = 0;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%d/%s", root(o), (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while ((size_t)got + 1 < len && (n = read(fd, buf + got, len - 1 - (size_t)got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			(void)close(fd);
			return rc;
		}
		got += n;
	}
	buf[got] = '\0';
	(void)close(fd);
	return got;
}

/* stat: comm, state, ppid, CPU ticks, threads.  Returns 0 or a negative errno. */
static int
read_stat(const struct forensics_opts *o, pid_t pid, char *comm, size_t clen, char *state,
          int *ppid, unsigned long long *ticks, long *threads)
{
	char buf[1024], *open_p, *close_p;
	unsigned long long ut = 0, st = 0;
	ssize_t n = read_proc(o, pid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p)
		return -EINVAL;
	snprintf(comm, clen, "%.*s", (int)(close_p - open_p - 1), open_p + 1);
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice num_threads */
	if (sscanf(close_p + 2, "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d "
	           "%*d %ld", state, ppid, &ut, &st, threads) != 5)
		return -EINVAL;
	*ticks = ut + st;
	return 0;
}

/* RANK and LOCAL_RANK from the environment (never for a D-state process). */
static void
read_ranks(const struct forensics_opts *o, struct look *l)
{
	static char env[64 * 1024];
	ssize_t n = read_proc(o, l->pid, "environ", env, sizeof(env));
	long rank = -1, local = -1;

	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(env + i) + 1) {
		if (strncmp(env + i, "RANK=", 5) == 0)
			rank = strtol(env + i + 5, NULL, 10);
		else if (strncmp(env + i, "LOCAL_RANK=", 11) == 0)
			local = strtol(env + i + 11, NULL, 10);
	}
	/* RANK alone is the node's rank vigil gives the launcher: a rank only with LOCAL_RANK */
	if (local >= 0 && rank >= 0) {
		cJSON_AddNumberToObject(l->o, "train_rank", (double)rank);
		cJSON_AddNumberToObject(l->o, "local_rank", (double)local);
	}
}

static void
read_kstack(const struct forensics_opts *o, struct look *l)
{
	char buf[4096], *save = NULL, *line;
	ssize_t n = read_proc(o, l->pid, "stack", buf, sizeof(buf));
	cJSON *arr;
	int k = 0;

	if (n < 0) {
		cJSON_AddStringToObject(l->o, "kernel_stack_error", strerror((int)-n));
		return;
	}
	arr = cJSON_AddArrayToObject(l->o, "kernel_stack");
	for (line = strtok_r(buf, "\n", &save); arr && line && k < FORENSICS_KSTACK;
	     line = strtok_r(NULL, "\n", &save), k++) {
		/* "[<0>] pipe_read+0x2f1/0x4b0": the function and its offset */
		char *f = strstr(line, "] ");

		cJSON_AddItemToArray(arr, cJSON_CreateString(f ? f + 2 : line));
	}
}

/* The first look at PID: NULL when it is gone. */
static cJSON *
look_at(const struct forensics_opts *o, struct look *l)
{
	char comm[64], wchan[128];
	int ppid = 0;
	long threads = 0;
	ssize_t n;

	if (read_stat(o, l->pid, comm, sizeof(comm), &l->state, &ppid, &l->ticks0, &threads) < 0)
		return NULL;
	l->o = cJSON_CreateObject();
	if (!l->o)
		return NULL;
	cJSON_AddNumberToObject(l->o, "pid", l->pid);
	cJSON_AddNumberToObject(l->o, "ppid", ppid);
	cJSON_AddStringToObject(l->o, "comm", comm);
	cJSON_AddStringToObject(l->o, "state", (char[]){ l->state, '\0' });
	cJSON_AddNumberToObject(l->o, "threads", (double)threads);
	n = read_proc(o, l->pid, "wchan", wchan, sizeof(wchan));
	cJSON_AddStringToObject(l->o, "wchan", n > 0 && strcmp(wchan, "0") ? wchan : "");
	read_kstack(o, l);
	if (l->state != 'D')
		read_ranks(o, l);
	return l->o;
}

/* ---- gdb ------------------------------------------------------------------------ */

static const char *
find_gdb(const struct forensics_opts *o)
{
	static const char *const where[] = { "/usr/bin/gdb", "/bin/gdb" };

	if (o && o->gdb_path)
		return access(o->gdb_path, X_OK) == 0 ? o->gdb_path : NULL;
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/* Whether gdb may attach: a process that runs or sleeps (see forensics.h). */
static bool
attachable(char state)
{
	return state == 'R' || state == 'S';
}

/*
 * The Python stack of every thread of an interpreter, read from the
 * interpreter's own thread states rather than by unwinding the C stack
 * (as py-bt does): a rank that waits inside a library whose symbols gdb
 * was not asked to read (libtorch: a collective's wait) has a C stack
 * gdb cannot walk up to the interpreter, but its thread state still
 * points at the frame that called the library.  Needs the interpreter's
 * gdb support (Debian: python3-dbg); without it the command fails alone.
 * The main thread first; each thread after it starts with a
 * "vigil-py: thread N" line.  Python 3.11 and 3.12 keep the frame in
 * cframe, 3.13 in the thread state itself.
 */
static const char PY_STACKS[] =
	"python exec(\"\"\"\\n"
	"def vigil_py():\\n"
	"    try:\\n"
	"        r = gdb.parse_and_eval('_PyRuntime')\\n"
	"        t = r['interpreters']['head']['threads']['head']\\n"
	"        main = int(r['main_thread'])\\n"
	"        PyFramePtr\\n"
	"    except Exception as e:\\n"
	"        print('vigil-py: no interpreter: %s' % e)\\n"
	"        return\\n"
	"    ts = []\\n"
	"    while int(t) != 0 and len(ts) < 64:\\n"
	"        ts.append(t)\\n"
	"        t = t['next']\\n"
	"    ts.sort(key=lambda t: int(t['thread_id']) != main)\\n"
	"    for i, t in enumerate(ts):\\n"
	"        if i:\\n"
	"            print('vigil-py: thread %d' % int(t['thread_id']))\\n"
	"        try:\\n"
	"            f = t['cframe']['current_frame']\\n"
	"        except Exception:\\n"
	"            f = t['current_frame']\\n"
	"        k = 0\\n"
	"        while int(f) != 0 and k < 64:\\n"
	"            try:\\n"
	"                PyFramePtr(f).print_traceback()\\n"
	"            except Exception as e:\\n"
	"                print('vigil-py: frame: %s' % e)\\n"
	"            f = f['previous']\\n"
	"            k += 1\\n"
	"vigil_py()\\n"
	"\"\"\")";

/*
 * gdb on L->pid, its output into a pipe.  Only the C library's symbols
 * are loaded (a training's libraries, libtorch above all, take gdb many
 * seconds to read): the frames that say where a process waits are
 * there, and in the interpreter; frame arguments are left out (a
 * Python frame's would print whole dictionaries).  Then PY_STACKS.
 */
static void
start_gdb(const char *gdb, struct look *l)
{
	char pid[24];
	int p[2];
	pid_t child;

	snprintf(pid, sizeof(pid), "%d", (int)l->pid);
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	child = spawn_fork(NULL);
	if (child < 0) {
		(void)close(p[0]);
		(void)close(p[1]);
		return;
	}
	if (child == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0)
			(void)dup2(null, STDIN_FILENO);
		(void)dup2(p[1], STDOUT_FILENO);
		(void)dup2(p[1], STDERR_FILENO);
		spawn_child_ready(NULL);
		execl(gdb, "gdb", "-nx", "-batch", "-p", pid,
		      "-iex", "set auto-solib-add off", "-iex", "set pagination off",
		      "-iex", "set print frame-arguments none",
		      "-ex", "sharedlibrary libc\\.so|libpthread|libpython",
		      "-ex", "bt 40", "-ex", PY_STACKS, (char *)NULL);
		_exit(127);
	}
	(void)close(p[1]);
	l->gdb = child;
	l->fd = p[0];
	(void)fcntl(l->fd, F_SETFL, O_NONBLOCK);
	l->out = malloc(GDB_OUT_MAX + 1);
	if (!l->out) {
		(void)close(l->fd);
		l->fd = -1;
	}
}

/* Read what every gdb prints until each has closed its end or DEADLINE passes. */
static void
collect_gdb(struct look *v, size_t n, int64_t deadline)
{
	struct pollfd *pf = calloc(n ? n : 1, sizeof(*pf));
	size_t *at = calloc(n ? n : 1, sizeof(*at));

	if (!pf || !at)
		goto out;
	for (;;) {
		size_t k = 0;
		int64_t left = deadline - util_now_ns();

		for (size_t i = 0; i < n; i++)
			if (v[i].fd >= 0) {
				pf[k] = (struct pollfd){ .fd = v[i].fd, .events = POLLIN };
				at[k++] = i;
			}
		if (k == 0 || left <= 0)
			break;
		if (poll(pf, k, (int)((left + 999999) / 1000000)) < 0 && errno != EINTR)
			break;
		for (size_t j = 0; j < k; j++) {
			struct look *l = &v[at[j]];
			char scratch[4096];
			ssize_t r;

			if (!pf[j].revents)
				continue;
			if (l->len < GDB_OUT_MAX)
				r = read(l->fd, l->out + l->len, GDB_OUT_MAX - l->len);
			else
				r = read(l->fd, scratch, sizeof(scratch));
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				(void)close(l->fd);
				l->fd = -1;
			} else if (l->len < GDB_OUT_MAX) {
				l->len += (size_t)r;
			}
		}
	}
out:
	free(pf);
	free(at);
}

/* A gdb that did not finish is killed with its group; reaped when it can be now. */
static void
end_gdb(struct look *l)
{
	cJSON *stack, *py;
	int st;

	if (!l->gdb)
		return;
	l->fd_was_open = l->fd >= 0;
	if (l->fd >= 0) {
		(void)kill(-l->gdb, SIGKILL);  /* ESRCH: gone already */
		/* gdb attaches to running or sleeping processes only; killed
		 * in the middle of an attach, it can leave its stop behind, and
		 * a process stopped by the look would be a hang of our own. */
		(void)kill(l->pid, SIGCONT);
		(void)close(l->fd);
		l->fd = -1;
	}
	/* Not reaped here, it is reaped with the agent's other children. */
	(void)waitpid(l->gdb, &st, WNOHANG);
	if (l->fd_was_open) {
		cJSON_AddStringToObject(l->o, "stack_error", "gdb did not finish within the budget");
	} else if (l->out) {
		l->out[l->len] = '\0';
		stack = cJSON_CreateArray();
		py = cJSON_CreateArray();
		forensics_parse_gdb(l->out, stack, py, FORENSICS_FRAMES);
		if (cJSON_GetArraySize(stack) > 0)
			cJSON_AddItemToObject(l->o, "stack", stack);
		else {
			char why[FIELD_MAX + 40];
			const char *last = l->len ? strrchr(l->out, '\n') : NULL;

			/* its last word says why: "ptrace: Operation not permitted." */
			while (last && last > l->out && last[1] == '\0') {
				*(char *)last = '\0';
				last = strrchr(l->out, '\n');
			}
			snprintf(why, sizeof(why), "gdb printed no frames: %.*s", FIELD_MAX,
			         last ? last + 1 : l->out);
			cJSON_Delete(stack);
			cJSON_AddStringToObject(l->o, "stack_error", why);
		}
		if (cJSON_GetArraySize(py) > 0)
			cJSON_AddItemToObject(l->o, "py_stack", py);
		else
			cJSON_Delete(py);
	}
	free(l->out);
	l->out = NULL;
}

/* "#3  0x00007f in read (fd=3, ...) at ...": "read". */
static void
frame_name(const char *line, char *buf, size_t len)
{
	const char *p = line, *e;

	while (*p == '#' || (*p >= '0' && *p <= '9'))
		p++;
	while (*p == ' ')
		p++;
	if (strncmp(p, "0x", 2) == 0) {
		const char *in = strstr(p, " in ");

		p = in ? in + 4 : p;
	}
	for (e = p; *e && *e != ' ' && *e != '('; e++)
		;
	snprintf(buf, len, "%.*s", (int)(e - p), p);
}

void
forensics_parse_gdb(const char *text, cJSON *out, cJSON *py, int max)
{
	const char *line = text;
	int k = 0, kp = 0;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[FIELD_MAX + 1];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len > FIELD_MAX ? FIELD_MAX : len), line);
		if (buf[0] == '#' && buf[1] >= '0' && buf[1] <= '9' && k < max) {
			char name[FIELD_MAX];

			frame_name(buf, name, sizeof(name));
			cJSON_AddItemToArray(out, cJSON_CreateString(name[0] ? name : "??"));
			k++;
		} else if (py && kp < FORENSICS_PY_FRAMES &&
		           strncmp(buf, "vigil-py: thread ", 17) == 0) {
			cJSON_AddItemToArray(py, cJSON_CreateString(buf + 10));
			kp++;
		} else if (py && kp < FORENSICS_PY_FRAMES && strstr(buf, "File \"") &&
		           strstr(buf, ", line ")) {
			const char *b = buf;

			while (*b == ' ')
				b++;
			cJSON_AddItemToArray(py, cJSON_CreateString(b));
			kp++;
		}
		line = end ? end + 1 : NULL;
	}
}

/* ---- a save in progress ------------------------------------------------------------ */

bool
forensics_open_under(const pid_t *pids, size_t n, const char *dir, const char *proc_root)
{
	size_t dlen = dir ? strlen(dir) : 0;

	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	if (dlen == 0 || dir[0] != '/')
		return false;
	for (size_t i = 0; i < n && i < FORENSICS_PROCS; i++) {
		char path[PATH_MAX], link[PATH_MAX];
		DIR *d;
		struct dirent *e;
		bool found = false;

		snprintf(path, sizeof(path), "%s/%d/fd", proc_root ? proc_root : "/proc", (int)pids[i]);
		d = opendir(path);
		if (!d)
			continue;  /* gone, or not ours to read */
		while (!found && (e = readdir(d))) {
			ssize_t len;

			if (e->d_name[0] == '.')
				continue;
			len = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
			if (len <= 0)
				continue;
			link[len] = '\0';
			found = (size_t)len > dlen && strncmp(link, dir, dlen) == 0 && link[dlen] == '/';
		}
		closedir(d);
		if (found)
			return true;
	}
	return false;
}

/* ---- the gathering ---------------------------------------------------------------- */

cJSON *
forensics_gather(const pid_t *pids, size_t n, const struct forensics_opts *o)
{
	double budget = o && o->budget_s > 0 ? o->budget_s : FORENSICS_BUDGET_S;
	int64_t t0 = util_now_ns(), deadline = t0 + (int64_t)(budget * 1e9);
	const char *gdb = o && o->gdb ? find_gdb(o) : NULL;
	size_t take = n > FORENSICS_PROCS ? FORENSICS_PROCS : n;
	struct look *v = calloc(take ? take : 1, sizeof(*v));
	cJSON *out = cJSON_CreateObject(), *arr = out ? cJSON_AddArrayToObject(out, "processes") : NULL;
	long hz = sysconf(_SC_CLK_TCK);

	if (!v || !arr) {
		free(v);
		cJSON_Delete(out);
		return NULL;
	}
	bool ranks = false;

	for (size_t i = 0; i < take; i++) {
		v[i].pid = pids[i];
		v[i].fd = -1;
		if (look_at(o, &v[i]))
			ranks = ranks || cJSON_GetObjectItemCaseSensitive(v[i].o, "train_rank");
	}
	/* gdb costs a core for a second or two per process: the ranks'
	 * stacks are the ones that tell, the launchers' only when there are
	 * no ranks to look at */
	for (size_t i = 0; gdb && i < take; i++)
		if (v[i].o && attachable(v[i].state) &&
		    (!ranks || cJSON_GetObjectItemCaseSensitive(v[i].o, "train_rank")))
			start_gdb(gdb, &v[i]);
	collect_gdb(v, take, deadline);
	for (size_t i = 0; i < take; i++) {
		char comm[64], state;
		int ppid;
		long threads;

		if (!v[i].o)
			continue;
		end_gdb(&v[i]);
		/* the second look: CPU time used while it was looked at */
		if (read_stat(o, v[i].pid, comm, sizeof(comm), &state, &ppid, &v[i].ticks1,
		              &threads) < 0)
			v[i].ticks1 = v[i].ticks0;
		cJSON_AddNumberToObject(v[i].o, "cpu_s", hz > 0 ? (double)(v[i].ticks1 - v[i].ticks0) /
		                        (double)hz : 0);
		cJSON_AddNumberToObject(v[i].o, "cpu_total_s", hz > 0 ? (double)v[i].ticks1 /
		                        (double)hz : 0);
		cJSON_AddItemToArray(arr, v[i].o);
	}
	free(v);
	if (n > take)
		cJSON_AddNumberToObject(out, "left_out", (double)(n - take));
	cJSON_AddNumberToObject(out, "seconds", (double)(util_now_ns() - t0) / 1e9);
	cJSON_AddStringToObject(out, "gdb", !(o && o->gdb) ? "off" : gdb ? "used" : "not installed");
	return out;
}

/* ---- in a child of its own ---------------------------------------------------------- */

struct forensics_run {
	pid_t pid;
	int fd;
	char *buf;
	size_t len, cap;
	bool too_big;
};

/* The child: the look, its JSON on FD, then _exit(). */
_Noreturn static void
run_child(int fd, pid_t parent, const pid_t *pids, size_t n, const struct forensics_opts *o)
{
	cJSON *f;
	char *text;
	size_t len, off = 0;

	spawn_close_others(fd);
	spawn_child_ready(NULL);
	/* Die with the agent; and if it died before the line above, the
	 * parent is already someone else. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	(void)signal(SIGPIPE, SIG_IGN);
	f = forensics_gather(pids, n, o);
	text = f ? cJSON_PrintUnformatted(f) : NULL;
	if (!text)
		_exit(2);
	len = strlen(text);
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		off += (size_t)w;
	}
	_exit(0);
}

int
forensics_start(const pid_t *pids, size_t n, const struct forensics_opts *o,
                struct forensics_run **out)
{
	struct forensics_run *r = calloc(1, sizeof(*r));
	pid_t parent = getpid();
	int fds[2], rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		rc = -errno;
		free(r);
		return rc;
	}
	r->pid = spawn_fork(NULL);
	if (r->pid == 0)
		run_child(fds[1], parent, pids, n, o);
	(void)close(fds[1]);
	if (r->pid < 0) {
		rc = (int)r->pid;
		(void)close(fds[0]);
		free(r);
		return rc;
	}
	r->fd = fds[0];
	(void)fcntl(r->fd, F_SETFL, O_NONBLOCK);
	*out = r;
	return 0;
}

int
forensics_run_fd(const struct forensics_run *r)
{
	return r ? r->fd : -1;
}

static cJSON *
run_failed(const char *why)
{
	cJSON *f = cJSON_CreateObject();

	cJSON_AddStringToObject(f, "error", why);
	cJSON_AddArrayToObject(f, "processes");
	return f;
}

/*
 * The child's end: reaped, what it wrote into a result.  Its exit status
 * does not say whether it succeeded: the agent's reaping of the
 * training's orphans (child_reap(): waitpid(-1)) may take it first.  A
 * result that parses whole does: the child writes it last.
 */
static cJSON *
run_result(struct forensics_run *r)
{
	cJSON *f = NULL;

	while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
		;
	r->pid = -1;
	if (r->too_big)
		return run_failed("the forensics were larger than vigil keeps");
	if (r->buf) {
		r->buf[r->len] = '\0';
		f = cJSON_Parse(r->buf);
	}
	return f ? f : run_failed("the process that looked at the training failed");
}

int
forensics_run_read(struct forensics_run *r, cJSON **out)
{
	char chunk[16384];
	ssize_t got;

	*out = NULL;
	for (;;) {
		got = read(r->fd, chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (got <= 0)
			break;
		if (r->len + (size_t)got + 1 > FORENSICS_OUT_MAX) {
			r->too_big = true;
			continue;  /* read on to the end, keep nothing more */
		}
		if (r->len + (size_t)got + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 65536;
			char *nb;

			while (cap < r->len + (size_t)got + 1)
				cap *= 2;
			if (!(nb = realloc(r->buf, cap))) {
				r->too_big = true;
				continue;
			}
			r->buf = nb;
			r->cap = cap;
		}
		memcpy(r->buf + r->len, chunk, (size_t)got);
		r->len += (size_t)got;
	}
	*out = run_result(r);
	return 1;
}

void
forensics_run_free(struct forensics_run *r)
{
	cJSON *f;

	if (!r)
		return;
	/* At its end the child is gone, and may have been reaped by
	 * someone else (run_result()): its pid is not signalled then. */
	if (r->pid > 0 && forensics_run_read(r, &f) == 1)
		cJSON_Delete(f);
	if (r->pid > 0) {
		(void)kill(r->pid, SIGKILL);
		while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (r->fd >= 0)
		(void)close(r->fd);
	free(r->buf);
	free(r);
}
