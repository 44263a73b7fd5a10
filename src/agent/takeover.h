/*
 * takeover.h - when the coordinator falls silent (agent-private: job.h).
 *
 * Every node but the coordinator's watches it from the launch on
 * (watch.h says when it is lost).  A node that lost it saves (--resume)
 * or stops its training on its own, writes its record, tells the
 * successor, and ends when no successor takes over in time.  The
 * successor, once a majority lost the coordinator, becomes the
 * coordinator from the plan it kept and the results that reached it
 * early.
 */
#ifndef VIGIL_TAKEOVER_H
#define VIGIL_TAKEOVER_H

#include "agent/job.h"
#include "agent/watch.h"

/* The watch from the launch on (not on the coordinator's node, nor alone).
 * Returns 0 or -ENOMEM. */
int takeover_watch(struct job *j);

/* What the watch decided at NOW, done: the orphan's part, the takeover, or
 * the successor's giving up. */
void takeover_act(struct job *j, enum watch_action a, double now);

/* The successor, before it takes over: a result from SRC that reached it
 * early (TEXT, a RESULT message), kept for the takeover. */
void takeover_keep_early(struct job *j, int src, const char *text);

/* The watch and the early results go (the job's end). */
void takeover_free(struct job *j);

#endif
