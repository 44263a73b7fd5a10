/*
 * stuck.h - work in a child that may outlive its deadline in the kernel,
 * marked so that a later run finds it still there.
 *
 * A probe of a hard NFS mount whose server is gone waits in the kernel,
 * uninterruptibly: SIGKILL takes effect only when the call returns, which
 * may be never.  A health check that ran every few minutes would start one
 * more such process each time.  Instead, each probe carries a mark, and
 * the next run looks for a live, marked process on the same path before
 * it starts another: the path is then reported as still stuck.
 *
 * The mark: the process is named STUCK_COMM (ps shows it) and holds a
 * memfd named "vigil-probe:KEY" (ls -l /proc/PID/fd shows the key; a key
 * longer than STUCK_KEY_MAX is named by a hash).  A process counts only
 * when it is this program (the same executable file) and belongs to this
 * effective user: no other user can make vigil believe a path stuck, as
 * another user cannot start a process of root's running vigil.  No state
 * is kept in files: a mark goes with its process.
 */
#ifndef VIGIL_STUCK_H
#define VIGIL_STUCK_H

#include <stddef.h>
#include <sys/types.h>

#define STUCK_COMM "vigil-probe"

/* Longest key written out in a mark; a longer one is named by its hash. */
#define STUCK_KEY_MAX 200

/*
 * In the child, before the work on KEY: the mark.  Returns 0, or a
 * negative errno (no memfd: the work is not marked, and runs anyway).
 * The memfd stays open for the life of the process.  Async-signal-safe.
 */
int stuck_mark(const char *key);

/* A marked process found again. */
struct stuck {
	pid_t pid;      /* 0: none */
	double age_s;   /* since it started */
};

/*
 * For each of the N KEYS, the oldest live process (not a zombie) of this
 * program and this effective user marked with it and at least MIN_AGE_S
 * old (younger ones may be the work of a run still in progress): OUT[i]
 * (pid 0 when there is none).  The caller's own process is never one.
 * Reads /proc: about one small read per process of the node.  Returns 0,
 * or a negative errno when /proc cannot be read (OUT then all 0).
 */
int stuck_find(const char *const *keys, size_t n, double min_age_s, struct stuck *out);

#endif
