/*
 * watch.c - the coordinator's silence, and the successor's majority.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>

#include "agent/stall.h"
#include "agent/watch.h"

/* The coordinator's silence that ends the job: this many node timeouts. */
#define COORD_TIMEOUT_FACTOR 2

struct watch {
	struct watch_opts o;
	int coordinator;        /* where messages go now */
	double heard;           /* the coordinator's last word */
	double last_check;      /* this node's last watch_tick() */
	bool lost;
	double lost_at;
	bool *voted;            /* the successor: who lost the coordinator */
	int votes;
	bool decided;           /* the successor took over or gave up */
};

struct watch *
watch_new(const struct watch_opts *o, double now)
{
	struct watch *w;

	if (!o || o->size < 1 || o->self < 0 || o->self >= o->size || o->coordinator < 0 ||
	    o->coordinator >= o->size) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->o = *o;
	w->coordinator = o->coordinator;
	w->heard = w->last_check = now;
	return w;
}

void
watch_free(struct watch *w)
{
	if (!w)
		return;
	free(w->voted);
	free(w);
}

int
watch_successor(const struct watch *w)
{
	/* The lowest rank after the coordinator's, wrapping around: the same
	 * on every node, without a word exchanged. */
	if (w->o.size < 2)
		return -1;
	return (w->o.coordinator + 1) % w->o.size;
}

void
watch_heard(struct watch *w, int rank, double now)
{
	if (!w->lost && rank == w->o.coordinator)
		w->heard = now;
}

/* Count RANK once. */
static void
vote(struct watch *w, int rank)
{
	if (!w->voted) {
		w->voted = calloc((size_t)w->o.size, sizeof(*w->voted));
		if (!w->voted)
			return;  /* no count without memory: no takeover, the safe side */
	}
	if (rank >= 0 && rank < w->o.size && !w->voted[rank]) {
		w->voted[rank] = true;
		w->votes++;
	}
}

/* The successor, once it lost the coordinator too: a majority of all ranks agree. */
static enum watch_action
majority(struct watch *w)
{
	if (w->decided || !w->lost || w->o.self != watch_successor(w) || 2 * w->votes <= w->o.size)
		return WATCH_NONE;
	w->decided = true;
	return WATCH_TAKE_OVER;
}

enum watch_action
watch_suspect(struct watch *w, int rank, double now)
{
	(void)now;
	if (w->o.self != watch_successor(w) || rank == w->o.coordinator)
		return WATCH_NONE;
	vote(w, rank);
	return majority(w);
}

enum watch_action
watch_tick(struct watch *w, double now)
{
	/* silence is judged only when this node was on time itself (stall.h) */
	bool late = stall_late(w->last_check, now, w->o.heartbeat_s, w->o.heartbeat_timeout_s);
	enum watch_action a;

	w->last_check = now;
	if (w->o.self == w->o.coordinator)
		return WATCH_NONE;
	if (!w->lost) {
		if (late) {
			w->heard = now;  /* late ourselves: the coordinator gets a fresh timeout */
			return WATCH_NONE;
		}
		if (now - w->heard < COORD_TIMEOUT_FACTOR * w->o.heartbeat_timeout_s)
			return WATCH_NONE;
		w->lost = true;
		w->lost_at = now;
		if (watch_successor(w) >= 0)
			w->coordinator = watch_successor(w);
		if (w->o.self == watch_successor(w))
			vote(w, w->o.self);
		return WATCH_LOST;
	}
	a = majority(w);
	if (a != WATCH_NONE || w->decided || w->o.self != watch_successor(w))
		return a;
	if (now - w->lost_at >= w->o.heartbeat_timeout_s) {
		w->decided = true;
		return WATCH_ALONE;
	}
	return WATCH_NONE;
}

int
watch_coordinator(const struct watch *w)
{
	return w->coordinator;
}

bool
watch_lost(const struct watch *w)
{
	return w->lost;
}

double
watch_silent(const struct watch *w, double now)
{
	return now - w->heard;
}

int
watch_votes(const struct watch *w)
{
	return w->votes;
}
