/*
 * child.h - the training: one child process in its own process group, and
 * every process it starts.
 *
 * The agent alone decides what reaches the training: the child runs in a
 * new process group (so mpirun's signals to the agent's group do not reach
 * it), and the child dies with the agent (PR_SET_PDEATHSIG).  The agent
 * should be a child subreaper (child_set_subreaper()) so orphaned
 * descendants are reparented to it, not to the MPI daemon: that is what
 * lets it find them again.
 *
 * The training is more than the group: torch >= 2 starts each worker with
 * start_new_session=True, daemons call setsid(), and launchers die and
 * leave their workers behind.  Its processes are found in /proc (through
 * hwmon's processes section): the main child's descendants while it runs,
 * and the descendants of the agent that are not its own helpers (a
 * helper, forked through spawn.c, leads its own group in the agent's
 * session; an orphan the agent adopted from the training does not, or
 * is in the training's group).  Nothing outside the agent's tree is ever
 * signalled, so a reused pid cannot point a signal at a stranger.
 *
 * Calls that tests need to redirect go through struct child_sys.
 */
#ifndef VIGIL_CHILD_H
#define VIGIL_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct child;

struct child_opts {
	char *const *argv;      /* argv[0] looked up in the child's PATH (from envp) */
	char *const *envp;      /* the child's whole environment (NULL: the agent's) */
	const sigset_t *sigmask;/* the mask to restore in the child (sig_block()'s old mask;
	                         * NULL: nothing blocked) */
	bool pty_stdout;        /* stdout on a pseudo-terminal in raw mode: the program
	                         * line-buffers as on a terminal, and bytes pass unchanged */
	const char *cwd;        /* NULL: the agent's */
	const char *cgroup;     /* a cgroup v2 directory delegated to the agent
	                         * (child_cgroup_find()), NULL: none.  The training
	                         * then runs in a cgroup of its own below it, which
	                         * child_kill_tree() empties with cgroup.kill and
	                         * child_free() removes. */
	int notice_signal;      /* the notice that must arrive quickest (the checkpoint
	                         * signal): its targets are noted at every look at /proc
	                         * (child_usage(), child_signal()), 0: none */
};

/*
 * Start the child.  Returns 0 once exec succeeded; -ENOENT when the
 * program is not found, -EACCES (or another errno) when it cannot be
 * executed (the child's errno from exec, passed back through a
 * close-on-exec pipe); another negative errno if fork or the pipes failed.
 * On failure *out is NULL and nothing is left running.
 *
 * The lookup is execvp()'s, but with the PATH of envp (default
 * "/bin:/usr/bin"): an argv[0] holding a slash is used as is, relative to
 * cwd; a file without a #! line runs under /bin/sh.  An error changing to
 * cwd is returned the same way as an exec error (-ENOENT for a missing
 * directory).
 *
 * The child gets stdin from /dev/null, stdout on the pty slave or a pipe,
 * stderr on a pipe, and no other descriptor: every descriptor above 2 is
 * made close-on-exec in the child (where close_range() exists), so sockets
 * an MPI library left inheritable do not reach the training.  The pty is
 * not the child's controlling terminal (the child stays in the agent's
 * session and is not its leader), so the line discipline sends it no
 * SIGHUP, SIGINT or job-control signals; only the agent signals it.
 *
 * PR_SET_PDEATHSIG fires when the thread that forked exits, not the
 * process: call this from the agent's main thread.  Blocks only until the
 * child has exec'd.
 */
int child_spawn(const struct child_opts *o, struct child **out);

pid_t child_pid(const struct child *c);

/*
 * Read ends of the child's stdout (pty master or pipe) and stderr (pipe),
 * non-blocking and close-on-exec; -1 once closed with child_close_fd().
 * A pty master reads EIO when the child side is gone: treat EIO as EOF.
 */
int child_stdout_fd(const struct child *c);
int child_stderr_fd(const struct child *c);
void child_close_fd(struct child *c, int fd);

/*
 * Deliver SIG to the training.  Returns 0 when it reached at least one
 * process, -ESRCH when nothing of the training is left, or another
 * negative errno.
 *
 * A stop signal (TERM, INT, HUP, QUIT, KILL, and STOP, CONT) goes to the
 * whole training: kill(-pgid) as a shell would, also after the main child
 * has been reaped (helpers it left in the group), and to each process of
 * the training outside the group (workers in sessions of their own,
 * adopted orphans).
 *
 * Any other signal, the checkpoint signal above all, is a notice that the
 * training must act on without dying of it: it goes to each process of the
 * training that catches (or ignores) it, and to each one with no children
 * in the training (a worker without a handler is the training's own
 * business: it dies, and the checkpoint is not confirmed).  A launcher
 * that has children and does not catch it is skipped, so that it does not
 * die of it (torchrun, DeepSpeed's launcher, a bash -c wrapper): its
 * workers get the signal themselves.  The processes below an MPI launcher
 * that catches it (mpirun, mpiexec, which forward it to every rank) are
 * left to that launcher, so that no rank gets it twice.  When /proc cannot
 * be read, the group gets it, as a stop signal would.
 *
 * The notice signal of child_opts (the checkpoint signal) goes first, at
 * once, to the targets the last look at /proc noted that still run (held
 * by pidfd, so that a pid another process took since is never signalled);
 * the look child_signal() then makes adds those that came since.  Reading
 * /proc takes a millisecond or more on a busy node: the training need not
 * wait for it.
 */
int child_signal(struct child *c, int sig);

/* SIG to every process of the training, whatever it handles: the group and each process outside it. */
int child_signal_all(struct child *c, int sig);

/*
 * SIGKILL to every process of the training, again until none is left
 * (what forks while it is being killed is caught by a later round;
 * bounded, never sleeps more than a few ms in all).  Returns the number of
 * processes still alive (0: none; zombies do not count: they are left for
 * child_reap()), or a negative errno when /proc cannot be read (the group
 * got SIGKILL anyway).  Call it before the agent exits, whatever ended the
 * job: nothing of the training may outlive the agent.
 */
int child_kill_tree(struct child *c);

/*
 * The pids of the training's living processes (the main child first while
 * it runs), into *pids (array of *n, NULL when 0; free()).  Returns 0 or
 * a negative errno.
 */
int child_descendants(struct child *c, pid_t **pids, size_t *n);

/* What the training's processes use, those child_descendants() lists. */
struct child_usage {
	size_t nprocs;
	double cpu_s;           /* user + system seconds: theirs and their reaped
	                         * children's (a counter that falls only when the agent
	                         * reaps a process of the training) */
	double rss_bytes;       /* resident set sizes added up (a page shared by two
	                         * processes counts twice) */
};

/* The training's use now, from one read of /proc, which also notes the
 * notice signal's targets (child_signal()).  Returns 0 or a negative errno
 * (-ENOTSUP without /proc). */
int child_usage(struct child *c, struct child_usage *out);

/* ---- the pure part of finding the training's processes, for tests ---- */

struct child_proc {
	pid_t pid, ppid, pgid, sid;
	bool zombie;
	bool handles;           /* catches or ignores the signal in question */
	bool mpi_launcher;      /* mpirun, mpiexec, ...: forwards signals to its ranks */
	unsigned long long cpu_ticks;   /* utime + stime + cutime + cstime */
	long long rss_pages;
	unsigned long long start_ticks; /* with the pid: which process it is */
};

/*
 * Which of PROCS (N of them, sorted by pid) belong to the training whose
 * main child is MAIN (alive or not: MAIN_ALIVE), started by the agent
 * AGENT in session AGENT_SID.  A process belongs when its chain of parents
 * reaches AGENT through a child of AGENT that is MAIN (while it lives),
 * is in MAIN's group, or is not one of the agent's own helpers (which lead
 * their own group in the agent's session).  Sets MEMBER[i]; returns the
 * count.
 */
size_t child_tree_members(const struct child_proc *procs, size_t n, pid_t agent, pid_t agent_sid,
                          pid_t main, bool main_alive, bool *member);

/*
 * Of the members, those a notice signal goes to (child_signal()'s rule):
 * not a zombie, not below an MPI launcher that handles it, and handling it
 * or without member children.  Sets TARGET[i]; returns the count.
 */
size_t child_notice_targets(const struct child_proc *procs, size_t n, const bool *member,
                            bool *target);

/*
 * Reap without blocking: waitpid(-1, WNOHANG) until nothing is left to
 * reap, so orphaned descendants are reaped too (SIGCHLD coalesces).
 * Records the main child's wait status when it goes (C may be NULL: reap
 * only).  Returns the number reaped, or a negative errno other than ECHILD.
 * Any child of the agent is reaped, so other code waiting for its own
 * children by pid must not run while this is used.
 */
int child_reap(struct child *c);

bool child_exited(const struct child *c);
int child_wait_status(const struct child *c); /* valid once child_exited() */

/*
 * The shell's view of a wait status: the exit code, or 128+N for signal N;
 * -EINVAL for a status that is neither (a stopped child's).
 */
int child_exit_code(int wait_status);

/*
 * SIGKILL the group if the main child has not been reaped, and every other
 * process of the training, close the descriptors, remove the training's
 * cgroup, free.  NULL is a no-op.  Blocks at most 20 ms (for the cgroup to
 * empty): the killed are left for child_reap(NULL) (or the agent's exit)
 * to collect.
 */
void child_free(struct child *c);

/*
 * The agent's own cgroup v2 directory ("/sys/fs/cgroup/..."), into DIR
 * (LEN bytes), when it was delegated to the agent (hwmon_cgroup2_delegated():
 * owned by the user, or marked by systemd's Delegate=yes), for
 * child_opts.cgroup.  Returns 0, -ENOENT when there is none (no cgroup v2,
 * or not delegated: the process tree is followed alone), or another
 * negative errno.
 */
int child_cgroup_find(char *dir, size_t len);

/* The training's own cgroup ("/sys/fs/cgroup/.../vigil-training.PID.N"), or NULL when it has none. */
const char *child_cgroup(const struct child *c);

/* prctl(PR_SET_CHILD_SUBREAPER).  Returns 0 or a negative errno. */
int child_set_subreaper(void);

/* The system calls child.c makes that tests may replace. */
struct child_sys {
	pid_t (*fork)(void);
	int (*kill)(pid_t pid, int sig);
	pid_t (*waitpid)(pid_t pid, int *status, int options);
};

/* Replace the calls (NULL restores the real ones; so does a NULL member). */
void child_set_sys(const struct child_sys *sys);

#endif
