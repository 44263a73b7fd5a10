/*
 * stall.h - the rules for "nobody is blamed for the checker's own
 * trouble": the coordinator's heartbeat scan (coord.c) and every node's
 * watch on its coordinator (watch.c) judge silence only when they were on
 * time, and the coordinator names a silent node only while it can still
 * hear the others.
 *
 * Late: an agent that was stopped (SIGSTOP), swapped out or starved of
 * CPU looks at its peers late; the silence it then sees may be messages
 * it has not read yet.  So a check that comes further after the one
 * before than the stall limit, the smaller of twice the heartbeat
 * interval and half the heartbeat timeout, gives every peer a fresh
 * timeout instead of a verdict.
 *
 * Deaf: a coordinator whose own network fails (a flapping management
 * link) hears nobody, and every node it hears from is spread over the
 * heartbeat interval, so the nodes cross the timeout one by one.  Two
 * rules keep such an outage from being blamed on anyone but the
 * coordinator, at any point of the heartbeat cycle:
 *
 *  - a gap of more than the deaf limit (one and a half heartbeat
 *    intervals) in what the coordinator hears from all the other ranks
 *    together, once it ends, gives every node a fresh timeout from then,
 *    lengthened by the gap: the messages the outage held back (TCP
 *    retransmits them with a backoff of up to about as long) come late;
 *
 *  - a silent node is named only by a quorum: the coordinator and the
 *    nodes it heard within the deaf limit are at least as many as the
 *    other live ranks (a tie goes to the coordinator's side, so in a job
 *    of two the coordinator names the node it cannot hear).  When every
 *    other live rank is either heard or silent and there is no quorum,
 *    the coordinator is the one cut off (or in the smaller part of a
 *    split): it names itself, nobody else.
 *
 * With a timeout of at least three heartbeat intervals (the defaults are
 * 5 s and 30 s), no node a coordinator's outage hides is named, wherever
 * in the heartbeat cycle the outage starts (tests/unit/agent/test_coord.c
 * drives this at every tenth of the interval).
 *
 * Pure arithmetic: no clock, no I/O.
 */
#ifndef VIGIL_STALL_H
#define VIGIL_STALL_H

#include <stdbool.h>

/* The gap between two checks beyond which the checker was late (s). */
double stall_limit(double heartbeat_s, double heartbeat_timeout_s);

/*
 * Whether a check at NOW, the one before it at LAST (< 0: none yet), was
 * late: NOW - LAST > stall_limit().  Times on one clock, in seconds.
 */
bool stall_late(double last, double now, double heartbeat_s, double heartbeat_timeout_s);

/* The gap in what the coordinator hears from every other rank together
 * beyond which it was deaf: one and a half heartbeat intervals (s). */
double stall_deaf_limit(double heartbeat_s);

/*
 * A message from another rank reaches the coordinator at NOW; the one
 * before it, from any other rank, came at LAST (< 0: none yet).  When the
 * gap was longer than stall_deaf_limit(), the time from which silence
 * counts again: NOW plus the gap.  Otherwise a negative value.
 */
double stall_deaf_until(double last, double now, double heartbeat_s);

enum stall_verdict {
	STALL_WAIT,   /* nobody is named yet */
	STALL_NAME,   /* the silent nodes are named: the coordinator has a quorum */
	STALL_SELF,   /* the coordinator is the one cut off: it names itself */
};

/*
 * The coordinator's verdict on SILENT nodes past their timeout, with
 * HEARD nodes heard within the deaf limit, out of LIVE other ranks not
 * yet lost (the ones neither heard nor silent are in between).  Pure.
 */
enum stall_verdict stall_judge(int live, int heard, int silent);

#endif
