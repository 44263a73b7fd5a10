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
 * A node that lost its coordinator acts on its own (takeover.c): its
 * training saves (--resume) or stops, it writes a record of why, and then
 * it votes: it tells the successors in line, the first few ranks after
 * the coordinator's (watch_candidates()), that it lost the coordinator.
 * The first successor in line that lost the coordinator too and counts a
 * majority of the job's ranks (itself included) takes over: it writes
 * the report and the exclude list naming the coordinator's node.  A
 * successor further down the line takes over only when the ones before
 * it stayed silent, each for its turn (twice the timeout) since it lost
 * the coordinator; they are then named with the coordinator.  So the
 * nodes that still see each other decide, and a node that is itself cut
 * off never names anyone: it counts no majority.  In a job of two there
 * is no majority to count: the node that lost the coordinator takes over
 * alone (vigil(1), "The coordinator fails", says what that means when
 * the link between them fails).  A node that hears a successor act as
 * the coordinator (a heartbeat, a command, the end) follows it, and
 * loses the old coordinator then if it had not yet.  Nobody took over
 * when the votes had their time (the trainings' saves) and every
 * successor its turn: WATCH_ALONE, the node ends on its own.
 *
 * A pure state machine like coord.c: time is an argument, nothing here
 * does I/O, and tests/unit/agent/test_watch.c drives it with a fake
 * clock.  Memory: O(N) on the successors in line, O(1) elsewhere.
 */
#ifndef VIGIL_WATCH_H
#define VIGIL_WATCH_H

#include <stdbool.h>

/* The successors in line, at most: a takeover survives this many of them
 * failing with the coordinator. */
#define WATCH_LINE_MAX 4

struct watch;

enum watch_action {
	WATCH_NONE,
	WATCH_LOST,       /* the coordinator fell silent here, or a successor took
	                   * over: act on your own */
	WATCH_TAKE_OVER,  /* this node is the successor whose turn it is, and a
	                   * majority agrees */
	WATCH_ALONE,      /* nobody took over in time: this node may be the one cut off */
	WATCH_LEADER_LOST, /* the successor this node trains under fell silent too */
};

struct watch_opts {
	int self;                   /* this rank */
	int size;                   /* ranks in the job */
	int coordinator;            /* the coordinator's rank */
	double heartbeat_s;
	double heartbeat_timeout_s; /* the coordinator is lost after twice this */
	double vote_wait_s;         /* how long votes may take after the loss: each node
	                             * votes once its training saved */
};

/* A watch from NOW.  NULL with errno (EINVAL for a bad rank or size). */
struct watch *watch_new(const struct watch_opts *o, double now);
void watch_free(struct watch *w);  /* NULL is a no-op */

/* Any message from RANK: from the coordinator, a sign of its life; from a
 * successor in line, a sign of that one's. */
void watch_heard(struct watch *w, int rank, double now);

/* RANK says it lost the coordinator (a SUSPECT message): a vote, counted
 * on the successors in line (elsewhere only a sign of life). */
void watch_vote(struct watch *w, int rank, double now);

/*
 * Whether this node's own network link is down (its inspection found a
 * required NIC or InfiniBand port failing).  A node cut off by its own
 * link lost the coordinator through no fault of the coordinator's: its
 * own vote then counts for nothing, so in a job of two, where that vote
 * is the majority, it never takes over and names nobody.
 */
void watch_cut_off(struct watch *w, bool cut_off);

/*
 * RANK spoke as the coordinator (a heartbeat, a command, the end of the
 * job).  From a successor in line, once the coordinator is lost or about
 * to be: RANK took over, and this node follows it (watch_coordinator());
 * returns WATCH_LOST when this node had not lost the coordinator yet (it
 * acts as if it had), WATCH_NONE otherwise.
 */
enum watch_action watch_leader(struct watch *w, int rank, double now);

/*
 * This node trains again under the successor that took over (a spare took
 * the lost coordinator's seat, coord_adopt()): from NOW the successor's
 * silence is judged as the coordinator's was, and ends in
 * WATCH_LEADER_LOST.  There is no second takeover.  Only once a successor
 * is followed; a no-op elsewhere.
 */
void watch_follow(struct watch *w, double now);

/*
 * What is due at NOW: WATCH_LOST once when the coordinator is lost; then
 * WATCH_TAKE_OVER when this node's turn and a majority came, or
 * WATCH_ALONE once when nobody took over in time; WATCH_LEADER_LOST
 * once when the successor followed (watch_follow()) fell silent.  Call
 * every heartbeat_s / 2, after reading what has arrived.
 */
enum watch_action watch_tick(struct watch *w, double now);

/*
 * Where a node's messages go: the coordinator; once it is lost, the
 * successor that took over, or -1 while none is known.
 */
int watch_coordinator(const struct watch *w);

/*
 * The successors in line, in order: the first WATCH_LINE_MAX ranks after
 * the coordinator's, wrapping around, this node's own included.  Fills
 * OUT (WATCH_LINE_MAX entries) and returns how many (0 alone).
 */
int watch_line(const struct watch *w, int *out);

/* This node's place in line: 1 for the first successor, 0 when not in it. */
int watch_place(const struct watch *w);

/*
 * The ranks a node that took over names (coord_adopt()): the coordinator,
 * then the successors before this node in line, silent since it lost the
 * coordinator.  Fills OUT (WATCH_LINE_MAX entries) and returns how many.
 */
int watch_passed(const struct watch *w, int *out);

/*
 * The ranks this node heard nothing from: the coordinator since it was
 * lost, then every successor in line but this node that never spoke.
 * Fills OUT (WATCH_LINE_MAX + 1 entries) and returns how many.
 */
int watch_unheard(const struct watch *w, int *out);

bool watch_lost(const struct watch *w);

/* Seconds since the coordinator was last heard; once a successor was
 * followed (watch_follow()), since that one was. */
double watch_silent(const struct watch *w, double now);

/* Ranks that said they lost the coordinator, this one included (on the
 * successors in line; 0 elsewhere). */
int watch_votes(const struct watch *w);

/* When nobody took over gives way to WATCH_ALONE: the loss, the votes'
 * time, and each successor's turn (absolute, on the clock of NOW; < 0
 * before the loss). */
double watch_alone_at(const struct watch *w);

#endif
