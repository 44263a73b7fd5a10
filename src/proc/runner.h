/*
 * runner.h - a helper program beside the agent's loop (a lifecycle hook,
 * the data staging): its output read line by line from the loop, its exit
 * status, a deadline.  Nothing waits: the loop learns of each step.
 *
 * The program's exit status does not come from waitpid() in the agent,
 * where child_reap()'s waitpid(-1) could take it first: a small keeper
 * process (the runner's group leader) forks the program, waits for it and
 * writes the wait status into a pipe the loop reads.  Whoever reaps the
 * keeper, the status is not lost.
 *
 * The keeper leads a process group of its own in the agent's session
 * (spawn.h), so child.c counts it as one of the agent's helpers, never as
 * part of the training; the deadline kills the whole group.  Both the
 * keeper and the program die with the agent (PR_SET_PDEATHSIG).
 */
#ifndef VIGIL_RUNNER_H
#define VIGIL_RUNNER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct loop;
struct runner;

/* The program ran past its deadline and was killed. */
#define RUNNER_TIMEOUT (-ETIMEDOUT)

struct runner_ops {
	/* One line of the program's output (stdout and stderr interleaved
	 * as written), without its newline; at most RUNNER_LINE_MAX bytes. */
	void (*line)(void *arg, const char *line, size_t len);
	/* The program ended and its output reached EOF (or was given up a
	 * second after the exit; what it left in its group is then killed):
	 * STATUS as runner_status().  Called once; the callback may free the
	 * runner. */
	void (*done)(void *arg, int status);
	void *arg;
};

#define RUNNER_LINE_MAX 4096

struct runner_opts {
	const char *path;        /* absolute path of the program (execve(), no PATH search) */
	char *const *argv;
	char *const *envp;       /* the program's whole environment; NULL: the agent's */
	const char *cwd;         /* NULL: the agent's */
	double timeout_s;        /* <= 0: none */
	const sigset_t *sigmask; /* restored in the program (sig_block()'s old mask); NULL: none */
};

/*
 * Start O->path under a keeper, watched by L.  OPS is copied.  Returns 0
 * with *OUT set (free with runner_free()), or a negative errno when the
 * pipes or the fork failed.  A program that cannot be executed ends with
 * status 127 (not found) or 126.  Call from the agent's main thread.
 */
int runner_start(struct loop *l, const struct runner_opts *o, const struct runner_ops *ops,
                 struct runner **out);

/* The keeper's pid (the group's id). */
pid_t runner_pid(const struct runner *r);

/* Whether done() was called. */
bool runner_finished(const struct runner *r);

/*
 * The status once finished: the exit code (0..255), 128+N for signal N,
 * RUNNER_TIMEOUT past the deadline, -EPROTO when the keeper died without
 * a word (killed from outside).
 */
int runner_status(const struct runner *r);

/* SIGKILL to the whole group now; done() follows from the loop. */
void runner_kill(struct runner *r);

/* Kill what is left (SIGKILL to the group), unregister, free.  Never
 * calls OPS.  NULL is a no-op. */
void runner_free(struct runner *r);

#endif
