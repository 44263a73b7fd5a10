/*
 * spawn.h - the one fork-to-exec prologue that child.c (the training),
 * timed.c (checks under a deadline) and notify.c (alert commands) share.
 *
 * Across fork() every signal is blocked, as posix_spawn() does: the child
 * must not run one of the agent's handlers (a self-pipe handler would
 * write into the agent's own pipe) before it has put every signal back to
 * its default.  The child gets a process group of its own, so that the
 * agent can signal it and everything it starts with kill(-pid).
 *
 * In the child, between spawn_fork() and exec(), only async-signal-safe
 * calls may run: the agent may have threads (the MPI library's), and one
 * of them may have held an allocator lock at the fork.
 */
#ifndef VIGIL_SPAWN_H
#define VIGIL_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/*
 * fork() with every signal blocked.  FORK_FN replaces fork() (a test
 * seam; NULL: fork).  In the parent: the caller's mask is back, the child
 * is made the leader of a new process group (setpgid on both sides, so the
 * group exists whichever runs first) and its pid is returned.  In the
 * child: returns 0 with every signal still blocked, in its own group; the
 * child sets up its descriptors, then calls spawn_child_ready().  A
 * negative errno when fork() failed.
 */
pid_t spawn_fork(pid_t (*fork_fn)(void));

/*
 * In the child: FD itself when above the standard descriptors, else a
 * close-on-exec copy at 3 or higher, so that dup2() onto 0, 1 or 2
 * cannot close it.
 * An agent started with 0, 1 or 2 closed gets its pipes there.  Returns
 * the new descriptor, or -1 with errno set.  Async-signal-safe.
 */
int spawn_above_stdio(int fd);

/*
 * In the child, once 0, 1 and 2 are in place and just before exec() (or
 * the work of a child that does not exec): every descriptor above 2 made
 * close-on-exec (close_range(), where the kernel has it: sockets an MPI
 * library opened without the flag never reach the program), every signal
 * back to its default disposition and the mask set to *MASK (NULL: none
 * blocked).  Async-signal-safe; errno is preserved.
 */
void spawn_child_ready(const sigset_t *mask);

/*
 * In a child that does not exec (a worker of the agent's that lives on):
 * close every descriptor but 0, 1, 2 and KEEP.  Close-on-exec does
 * nothing for such a child, and a write end of the agent's pipes it held
 * would keep a reader from ever seeing EOF.
 */
void spawn_close_others(int keep);

#endif
