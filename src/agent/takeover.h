/*
 * takeover.h - when the coordinator falls silent (agent-private: job.h).
 *
 * Every node but the coordinator's watches it from the launch on
 * (watch.h says when it is lost).  A node that lost it saves (--resume)
 * or stops its training on its own, writes its record, and once the
 * training ended tells the successors in line; it ends when a successor
 * that took over says so, or on its own when none did in time.  The
 * successor whose turn it is, with a majority, becomes the coordinator
 * from the plan it kept and the results that reached it early, and
 * appends to the event log from then on.
 */
#ifndef VIGIL_TAKEOVER_H
#define VIGIL_TAKEOVER_H

#include "agent/job.h"
#include "agent/watch.h"
#include "comm/msg.h"

/* The watch from the launch on (not on the coordinator's node, nor alone).
 * Returns 0 or -ENOMEM. */
int takeover_watch(struct job *j);

/* What the watch decided at NOW, done: the orphan's part, the takeover, or
 * the successor's giving up. */
void takeover_act(struct job *j, enum watch_action a, double now);

/*
 * A message of KIND from this node's side (node.c) once the coordinator is
 * lost: held while the training saves; a result releases the node (its
 * vote and result go to the successors in line, or to the one that took
 * over); heartbeats and notes go only to a successor that took over.
 * Returns 0 or a negative errno.
 */
int takeover_send(struct job *j, enum msg_kind kind, const char *text);

/*
 * The successor that took over starts the training again with this node
 * (a spare took the lost coordinator's seat): the orphan's deadline and
 * record give way, and from NOW the successor is watched as the
 * coordinator was (watch_follow()).  A no-op unless this node lost the
 * coordinator and follows a successor.
 */
void takeover_rejoin(struct job *j, double now);

/* A successor in line, before it takes over: a result from SRC that
 * reached it early (TEXT, a RESULT message), kept for the takeover. */
void takeover_keep_early(struct job *j, int src, const char *text);

/* The watch and the early results go (the job's end). */
void takeover_free(struct job *j);

#endif
