/*
 * timed.h - run work that may block forever (a stale NFS mount, a hung
 * scontrol) in a child process, under a deadline.
 *
 * The parent never blocks past the deadline: on timeout it SIGKILLs the
 * child and reaps it if it can without waiting (a process stuck in an
 * uninterruptible NFS call may outlive the kill; it is reaped later).
 */
#ifndef VIGIL_TIMED_H
#define VIGIL_TIMED_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Work done in the child: write a result of at most the parent's MAX bytes
 * to FD and return an exit status (0..255) for the child.
 */
typedef int timed_fn(void *arg, int fd);

/*
 * Fork, run FN(ARG, fd) in the child, read what it writes into BUF (up to
 * MAX bytes) until it closes the pipe, all within TIMEOUT_S seconds.
 * Returns the number of bytes read and sets *status to the child's wait
 * status (status may be NULL); -ETIMEDOUT when the deadline passed; -EINVAL
 * when TIMEOUT_S is not a positive number; another negative errno if the
 * fork or pipe failed.  Output past MAX is read and dropped, so a child that
 * writes more does not block.  The child's standard input, output and
 * error are /dev/null (and so are those of every process it forks): a
 * child stuck in the kernel past the deadline holds none of the caller's.
 */
ssize_t timed_run(timed_fn *fn, void *arg, double timeout_s,
                  char *buf, size_t max, int *status);

/*
 * Execute ARGV (argv[0] looked up in PATH) with stdin from /dev/null,
 * capturing stdout+stderr into BUF (NUL-terminated, truncated to MAX-1),
 * within TIMEOUT_S.  Returns the exit status (0..255), 128+N for a signal,
 * -ETIMEDOUT, -ENOENT when the program is not found, -EACCES when it is not
 * executable, or another negative errno.  The program runs in a process
 * group of its own, with signals unblocked and at their defaults; on
 * timeout the whole group is killed.  BUF holds what was read by then
 * whatever the result.
 */
int timed_exec(char *const argv[], double timeout_s, char *buf, size_t max);

#endif
