/*
 * fanout.h - several pieces of work that may block (a storage path on a
 * dead NFS server, a vendor library on a wedged board), each in a child
 * process, all at once under one deadline: N blocked ones cost the
 * deadline once, not N times.
 */
#ifndef VIGIL_FANOUT_H
#define VIGIL_FANOUT_H

#include <stddef.h>

#include "proc/timed.h"

/*
 * One job: FN(ARG, fd) runs in a child and writes at most SIZE bytes to
 * fd, which land in OUT.  fanout_run() sets RC: 0 when SIZE bytes came
 * back; -ETIMEDOUT when the deadline passed first (the child is killed);
 * -EPROTO when it ended with fewer; another negative errno when it could
 * not be started.  LEN is how many bytes came back.  Only
 * async-signal-safe calls in FN: the agent may have threads (the MPI
 * library's).
 */
struct fanout_job {
	timed_fn *fn;
	void *arg;
	void *out;
	size_t size;
	int rc;
	size_t len;
};

/*
 * Run the N JOBS at once, each in a child, all under one deadline of
 * TIMEOUT_S.  The jobs are started by one helper child (the caller forks
 * once, through timed_run(), and the helper's process group holds them
 * all: should the helper itself not answer within a second past the
 * deadline, the group is killed whole); a job stuck in the kernel past
 * its SIGKILL is left to whoever reaps orphans (the agent as subreaper,
 * or init).  One job runs directly under timed_run().
 *
 * Returns 0 with every job's RC set, or a negative errno when none could
 * be run (-EINVAL for a TIMEOUT_S that is not positive; fork, pipe,
 * -ENOMEM), every RC then being it.  Nothing here logs.  Forks, and
 * blocks up to TIMEOUT_S: a loop callback passes a short one.
 */
int fanout_run(struct fanout_job *jobs, size_t n, double timeout_s);

#endif
