/*
 * child.h - the training: one child process in its own process group.
 *
 * The agent alone decides what reaches the training: the child runs in a
 * new process group (so mpirun's signals to the agent's group do not reach
 * it), signals go to the whole group (data loaders and helpers too), and
 * the child dies with the agent (PR_SET_PDEATHSIG).  The agent should be a
 * child subreaper (child_set_subreaper()) so orphaned grandchildren are
 * reaped here, not by the MPI daemon.
 *
 * Calls that tests need to redirect go through struct child_sys.
 */
#ifndef VIGIL_CHILD_H
#define VIGIL_CHILD_H

#include <signal.h>
#include <stdbool.h>
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
 * kill(-pgid, SIG), also after the main child has been reaped: helpers it
 * left in the group still get the signal.  Returns 0, or a negative errno
 * (-ESRCH: group gone).
 */
int child_signal(struct child *c, int sig);

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
 * SIGKILL the group if the main child has not been reaped, close the
 * descriptors, free.  NULL is a no-op.  Never blocks: the killed child is
 * left for child_reap(NULL) (or the agent's exit) to collect.
 */
void child_free(struct child *c);

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
