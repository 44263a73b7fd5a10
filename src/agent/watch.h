/*
 * watch.h - every node's watch on its coordinator, and the choice of a
 * successor when the coordinator falls silent.
 *
 * The coordinator sends every node a heartbeat (coord.c); any message
 * from it counts.  A node that hears nothing from it for twice
 * --heartbeat-timeout (the coordinator's silence ends the job, so it gets
 * more slack than a node) has lost it, unless the node was itself late
 * (its own checks further apart than the stall limit: then the silence
 * may be messages it has not read, and the coordinator gets a fresh
 * timeout).
 *
 * A node that lost its coordinator acts on its own (run.c): its training
 * saves (--resume) or stops, it writes a record of why, and it tells the
 * successor, the lowest rank after the coordinator's.  The successor takes
 * over (writes the report and the exclude list naming the coordinator's
 * node) only when a majority of the job's ranks, itself included, lost
 * the coordinator too: the nodes that still see each other decide, and a
 * node that is itself cut off never names a healthy coordinator.
 *
 * A pure state machine like coord.c: time is an argument, nothing here
 * does I/O, and tests/unit/test_watch.c drives it with a fake clock.
 */
#ifndef VIGIL_WATCH_H
#define VIGIL_WATCH_H

#include <stdbool.h>

struct watch;

enum watch_action {
	WATCH_NONE,
	WATCH_LOST,       /* the coordinator fell silent here: act on your own */
	WATCH_TAKE_OVER,  /* this node is the successor, and a majority agrees */
	WATCH_ALONE,      /* the successor heard no majority in time: this node
	                   * may be the one cut off */
};

struct watch_opts {
	int self;                   /* this rank */
	int size;                   /* ranks in the job */
	int coordinator;            /* the coordinator's rank */
	double heartbeat_s;
	double heartbeat_timeout_s; /* the coordinator is lost after twice this */
};

/* A watch from NOW.  NULL with errno (EINVAL for a bad rank or size). */
struct watch *watch_new(const struct watch_opts *o, double now);
void watch_free(struct watch *w);  /* NULL is a no-op */

/* Any message from RANK. */
void watch_heard(struct watch *w, int rank, double now);

/*
 * RANK says the coordinator fell silent there (a SUSPECT message).
 * Counted on the successor only (elsewhere it changes nothing); returns
 * WATCH_TAKE_OVER once the majority is reached after this node lost the
 * coordinator too.
 */
enum watch_action watch_suspect(struct watch *w, int rank, double now);

/*
 * What is due at NOW: WATCH_LOST once when the coordinator is lost;
 * on the successor, WATCH_TAKE_OVER when its own loss completes the
 * majority, or WATCH_ALONE once when the majority did not come within
 * --heartbeat-timeout of its own loss.  Call every heartbeat_s / 2.
 */
enum watch_action watch_tick(struct watch *w, double now);

/* Where a node's messages go: the coordinator, or the successor once it is lost. */
int watch_coordinator(const struct watch *w);

/* The rank that takes over: the lowest after the coordinator's (-1 alone). */
int watch_successor(const struct watch *w);

bool watch_lost(const struct watch *w);

/* Seconds since the coordinator was last heard. */
double watch_silent(const struct watch *w, double now);

/* Ranks that said the coordinator fell silent (this one included). */
int watch_votes(const struct watch *w);

#endif
