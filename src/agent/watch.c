/*
 * watch.c - the coordinator's silence, the successors in line and their
 * majority (watch.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>

#include "agent/stall.h"
#include "agent/watch.h"

/* The coordinator's silence that ends the job: this many node timeouts.
 * It is also each successor's turn: long enough for the one before it,
 * which lost the coordinator up to a heartbeat sooner or later and counts
 * the same votes, to take over and be heard doing so. */
#define COORD_TIMEOUT_FACTOR 2

struct watch {
	struct watch_opts o;
	int leader;             /* where messages go; -1 once lost, until a successor is known */
	double heard;           /* the coordinator's last word */
	double last_check;      /* this node's last watch_tick() */
	bool lost;
	double lost_at;
	double ready_at;        /* in line: lost, with a majority, since then; < 0 not yet */
	int line[WATCH_LINE_MAX];
	double line_heard[WATCH_LINE_MAX];  /* each successor's last word; < 0 none */
	int nline;
	int place;              /* 1.. in line, 0 not */
	bool *voted;            /* in line: who lost the coordinator */
	int votes;
	bool decided;           /* took over, follows a successor, or gave up */
	bool cut_off;           /* this node's own link is down: its vote is void */
	bool following;         /* trains again under the leader: its silence counts */
	bool followed;          /* ... did once (its silence is watch_silent()'s) */
	double leader_heard;    /* ... its last word */
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
	w->leader = o->coordinator;
	w->heard = w->last_check = now;
	w->ready_at = -1;
	/* The ranks after the coordinator's, wrapping around: the same line
	 * on every node, without a word exchanged. */
	for (int i = 1; i < o->size && w->nline < WATCH_LINE_MAX; i++) {
		w->line[w->nline] = (o->coordinator + i) % o->size;
		w->line_heard[w->nline] = -1;
		if (w->line[w->nline] == o->self)
			w->place = w->nline + 1;
		w->nline++;
	}
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

/* RANK's place in line, 0-based, or -1. */
static int
in_line(const struct watch *w, int rank)
{
	for (int i = 0; i < w->nline; i++)
		if (w->line[i] == rank)
			return i;
	return -1;
}

void
watch_heard(struct watch *w, int rank, double now)
{
	int i = in_line(w, rank);

	if (!w->lost && rank == w->o.coordinator)
		w->heard = now;
	if (w->following && rank == w->leader)
		w->leader_heard = now;
	if (i >= 0 && rank != w->o.self)
		w->line_heard[i] = now;
}

/* Count RANK once. */
static void
count(struct watch *w, int rank)
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

/* More than half of the job's ranks lost the coordinator; in a job of two,
 * the one left (there is nobody else to ask), unless its own link is down. */
static bool
majority(const struct watch *w)
{
	int votes = w->votes - (w->cut_off && w->voted && w->voted[w->o.self] ? 1 : 0);

	return 2 * votes > w->o.size || (w->o.size == 2 && votes >= 1);
}

void
watch_cut_off(struct watch *w, bool cut_off)
{
	w->cut_off = cut_off;
}

void
watch_vote(struct watch *w, int rank, double now)
{
	watch_heard(w, rank, now);
	if (w->place > 0 && rank != w->o.coordinator)
		count(w, rank);
}

enum watch_action
watch_leader(struct watch *w, int rank, double now)
{
	watch_heard(w, rank, now);
	if (rank == w->o.coordinator || rank == w->o.self || in_line(w, rank) < 0)
		return WATCH_NONE;
	/* a successor took over: the nodes that still see each other decided */
	w->leader = rank;
	w->decided = true;
	if (w->lost)
		return WATCH_NONE;
	w->lost = true;
	w->lost_at = now;
	return WATCH_LOST;
}

/* Every successor before this one in line said nothing since the watch began. */
static bool
before_silent(const struct watch *w)
{
	for (int i = 0; i < w->place - 1; i++)
		if (w->line_heard[i] >= 0)
			return false;
	return true;
}

double
watch_alone_at(const struct watch *w)
{
	if (!w->lost)
		return -1;
	return w->lost_at + w->o.vote_wait_s +
	       w->nline * COORD_TIMEOUT_FACTOR * w->o.heartbeat_timeout_s;
}

/* After the loss: this node's turn, or nobody's in time. */
static enum watch_action
after_loss(struct watch *w, double now)
{
	double turn = COORD_TIMEOUT_FACTOR * w->o.heartbeat_timeout_s;

	if (w->place > 0 && w->ready_at < 0 && majority(w))
		w->ready_at = now;
	if (w->ready_at >= 0 && majority(w) && now >= w->ready_at + (w->place - 1) * turn &&
	    before_silent(w)) {
		w->decided = true;
		w->leader = w->o.self;
		return WATCH_TAKE_OVER;
	}
	if (now >= watch_alone_at(w)) {
		w->decided = true;
		return WATCH_ALONE;
	}
	return WATCH_NONE;
}

enum watch_action
watch_tick(struct watch *w, double now)
{
	/* silence is judged only when this node was on time itself (stall.h) */
	bool late = stall_late(w->last_check, now, w->o.heartbeat_s, w->o.heartbeat_timeout_s);

	w->last_check = now;
	if (w->o.self == w->o.coordinator)
		return WATCH_NONE;
	if (w->following) {
		if (late)
			w->leader_heard = now;  /* as for the coordinator: a fresh timeout */
		if (late || now - w->leader_heard < COORD_TIMEOUT_FACTOR * w->o.heartbeat_timeout_s)
			return WATCH_NONE;
		w->following = false;
		return WATCH_LEADER_LOST;
	}
	if (!w->lost) {
		if (late) {
			w->heard = now;  /* late ourselves: the coordinator gets a fresh timeout */
			return WATCH_NONE;
		}
		if (now - w->heard < COORD_TIMEOUT_FACTOR * w->o.heartbeat_timeout_s)
			return WATCH_NONE;
		w->lost = true;
		w->lost_at = now;
		w->leader = -1;
		if (w->place > 0)
			count(w, w->o.self);
		return WATCH_LOST;
	}
	/* late: what came meanwhile was read first, and is judged next time */
	if (w->decided || late)
		return WATCH_NONE;
	return after_loss(w, now);
}

void
watch_follow(struct watch *w, double now)
{
	if (!w->lost || w->leader < 0 || w->leader == w->o.self)
		return;
	w->following = w->followed = true;
	w->leader_heard = now;
}

int
watch_coordinator(const struct watch *w)
{
	return w->leader;
}

int
watch_line(const struct watch *w, int *out)
{
	for (int i = 0; i < w->nline; i++)
		out[i] = w->line[i];
	return w->nline;
}

int
watch_place(const struct watch *w)
{
	return w->place;
}

int
watch_passed(const struct watch *w, int *out)
{
	int n = 0;

	out[n++] = w->o.coordinator;
	for (int i = 0; i < w->place - 1 && n < WATCH_LINE_MAX; i++)
		out[n++] = w->line[i];
	return n;
}

int
watch_unheard(const struct watch *w, int *out)
{
	int n = 0;

	out[n++] = w->o.coordinator;
	for (int i = 0; i < w->nline; i++)
		if (w->line[i] != w->o.self && w->line_heard[i] < 0)
			out[n++] = w->line[i];
	return n;
}

bool
watch_lost(const struct watch *w)
{
	return w->lost;
}

double
watch_silent(const struct watch *w, double now)
{
	return now - (w->followed ? w->leader_heard : w->heard);
}

int
watch_votes(const struct watch *w)
{
	return w->votes;
}
