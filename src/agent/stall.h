/*
 * stall.h - the one rule for "this agent was late itself, so nobody is
 * blamed": the coordinator's heartbeat scan (coord.c) and every node's
 * watch on its coordinator (watch.c) judge silence only when they were on
 * time.
 *
 * An agent that was stopped (SIGSTOP), swapped out or starved of CPU
 * looks at its peers late; the silence it then sees may be messages it
 * has not read yet.  So a check that comes further after the one before
 * than the stall limit, the smaller of twice the heartbeat interval and
 * half the heartbeat timeout, gives every peer a fresh timeout instead of
 * a verdict.  Pure arithmetic: no clock, no I/O.
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

#endif
