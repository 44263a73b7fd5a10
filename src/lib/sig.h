/*
 * sig.h - signals as readable descriptors.
 *
 * The agent blocks the asynchronous signals it handles before MPI_Init
 * (so threads the MPI library starts inherit the mask) and reads them from
 * a signalfd in its poll loop.  Synchronous signals (SEGV, BUS, FPE, ILL,
 * ABRT) are never blocked.
 */
#ifndef VIGIL_SIG_H
#define VIGIL_SIG_H

#include <signal.h>
#include <stdbool.h>

/* TERM, INT, HUP, QUIT, USR1, USR2, CHLD, ALRM, CONT. */
void sig_handled_set(sigset_t *set);

/*
 * Block the handled set in this thread, saving the previous mask in *OLD
 * (for children to restore).  Returns 0 or a negative errno.
 */
int sig_block(sigset_t *old);

/*
 * A non-blocking, close-on-exec descriptor that becomes readable when a
 * handled signal is pending: a signalfd, or where that is unavailable a
 * self-pipe fed by a handler that saves and restores errno.  Call after
 * sig_block().  Returns the fd or a negative errno.
 */
int sig_fd_open(void);

/*
 * The self-pipe form that sig_fd_open() falls back to (where the kernel
 * lacks signalfd), also usable directly: it installs handlers for the
 * handled set and unblocks that set in the calling thread only, so the
 * handlers run there and nowhere else (threads created after sig_block()
 * keep the set blocked); poll() in that thread may then fail with EINTR.
 * One at a time: -EBUSY while one is open.  Returns the read end or a
 * negative errno.
 */
int sig_pipe_open(void);

/*
 * Take one pending signal: returns its number, 0 when none is pending, or
 * a negative errno.  *PID (may be NULL) gets the sender's pid when known.
 */
int sig_fd_read(int fd, pid_t *pid);

/*
 * Close a descriptor from sig_fd_open() or sig_pipe_open(); for the
 * self-pipe, the handled set is blocked again in the calling thread and the
 * previous handlers are restored.  A negative FD is a no-op.
 */
void sig_fd_close(int fd);

/*
 * In a child between fork() and exec(): every signal back to its default
 * disposition (including the ones the C library reserves) and the signal
 * mask set to *MASK (NULL: nothing blocked), so the program starts as if we
 * were not there.  Dispositions are reset before the mask changes, so a
 * signal pending in the child never runs one of the agent's handlers.
 * Async-signal-safe; errno is preserved.
 */
void sig_child_restore(const sigset_t *mask);

/*
 * "TERM", "SIGTERM" or "15" to 15; names in any case, "SIG<n>" as
 * sig_name() writes it, and the aliases IOT, CLD and POLL are accepted.
 * Numbers are plain decimal from 1 to NSIG-1.  Returns 0 or -EINVAL.
 */
int sig_parse(const char *s, int *out);

/*
 * "SIGTERM" for 15; "SIG<n>" for others without a name.  Static storage:
 * the string for a signal number stays valid; for a number outside 1 to
 * NSIG-1 it is overwritten by the next such call.
 */
const char *sig_name(int sig);

#endif
