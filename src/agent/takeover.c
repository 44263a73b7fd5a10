/*
 * takeover.c - the coordinator lost, on every other node: the watch on
 * it (watch.c decides, this file acts), the orphan that saves or stops
 * its training on its own, writes a record of why and then votes, and
 * the successor that takes over as the coordinator when a majority lost
 * it too, with the results that reached it early.
 *
 * The order of an orphan's acts is the point: a node cut off from
 * everyone finds out only when MPI tries to reach a node it never spoke
 * to, and Open MPI then aborts the agent ("Unable to connect to the
 * peer", pml_ob1_sendreq.c), whose keeper takes the training down with
 * it.  So the training gets its checkpoint signal first, the record is
 * written, and MPI waits (the node is held) until the training ended or
 * had its grace, but for a successor that took over and so reached this
 * node; the record says what is tried before it is tried, and what came
 * of it after.
 */
#include "autoconf.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/finish.h"
#include "agent/job.h"
#include "agent/jobfiles.h"
#include "agent/node.h"
#include "agent/survey.h"
#include "agent/takeover.h"
#include "agent/watch.h"
#include "comm/msg.h"
#include "comm/peer.h"
#include "lib/log.h"
#include "lib/loop.h"

#define KILL_AFTER_S 5       /* beyond the grace: the training's KILL and its end */
#define ORPHAN_EXTRA_S 20    /* beyond the watch's own end: the orphan's last deadline */

/* Whether a training whose coordinator is lost saves: a requeue or a
 * spare's restart (coord_adopt()) resumes from what it saves. */
static bool
saves(const struct job *j)
{
	return j->o->resume || j->o->spares > 0;
}

static int
orphan_code(const struct job *j)
{
	if (j->cancelled)
		return 128 + SIGTERM;  /* a cancelled job is not requeued */
	return j->o->resume ? VIGIL_EXIT_REQUEUE : VIGIL_EXIT_INTERNAL;
}

/* This node's record: why it lost the coordinator, then WHAT (printf). */
static void __attribute__((format(printf, 2, 3)))
record(struct job *j, const char *what, ...)
{
	char why[1400], more[800];
	va_list ap;

	va_start(ap, what);
	vsnprintf(more, sizeof(more), what, ap);
	va_end(ap);
	snprintf(why, sizeof(why), "%s; %s", j->lost_why, more);
	jobfiles_record(j, orphan_code(j), VIGIL_STATE_ERROR, why);
}

/* "n1 (rank 0), n2 (rank 1)" for the NR ranks in R. */
static void
names(const struct job *j, const int *r, int nr, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < nr; i++) {
		int w = snprintf(buf + used, len - used, "%s%s (rank %d)", i ? ", " : "",
		                 node_host(j->node, r[i]), r[i]);

		if (w < 0 || used + (size_t)w >= len)
			break;
		used += (size_t)w;
	}
}

/* The orphan's end: the record stands, the agent goes. */
static void
orphan_end(struct job *j)
{
	j->exit_code = orphan_code(j);
	j->clean = false;
	job_drain(j);
}

static long
on_orphan_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_ERR("%s; no successor took over, so this node ends on its own (it may be the one "
	        "cut off)", j->lost_why);
	record(j, "no successor took over, so this node ends on its own (it may be the one cut "
	       "off)");
	orphan_end(j);
	return LOOP_NOMORE;
}

/* A copy of this node's result for the successors in line that may take over. */
static void
keep_own(struct job *j)
{
	if (j->result_text && watch_place(j->watch) > 0)
		takeover_keep_early(j, j->rank, j->result_text);
}

/*
 * The training ended (or had its grace): MPI may be tried now.  To the
 * successor that took over, this node's result; while none is known, its
 * vote and result to every successor in line but itself.
 */
static void
release(struct job *j)
{
	int line[WATCH_LINE_MAX], to[WATCH_LINE_MAX], n = 0, leader = watch_coordinator(j->watch);
	struct msg m = { .kind = MSG_SUSPECT };
	char who[600], *vote;
	int nline = watch_line(j->watch, line);

	j->held = false;
	keep_own(j);
	if (leader >= 0 && leader != j->rank)
		to[n++] = leader;
	for (int i = 0; leader < 0 && i < nline; i++)
		if (line[i] != j->rank)
			to[n++] = line[i];
	if (n == 0) {
		/* the first in line in a job of two, or the successor itself */
		record(j, "the training %s; this node is next in line itself", j->result_text ?
		       "ended" : "had its grace");
		return;
	}
	names(j, to, n, who, sizeof(who));
	record(j, "the training %s; telling %s over MPI now: if this record says no more, that "
	       "failed, and this node may be the one cut off", j->result_text ? "ended" :
	       "had its grace", who);
	m.u.suspect.node = j->name;
	m.u.suspect.coordinator = 0;
	m.u.suspect.silent = watch_silent(j->watch, job_now(j));
	vote = msg_encode(&m);
	for (int i = 0; i < n; i++) {
		if (leader < 0 && vote)
			(void)job_send(j, to[i], MSG_SUSPECT, vote);
		if (j->result_text)
			(void)job_send(j, to[i], MSG_RESULT, j->result_text);
	}
	free(vote);
	record(j, "the training %s; told %s, and waits for %s", j->result_text ? "ended" :
	       "had its grace", who, leader < 0 ? "one of them to take over" : "its word");
}

/* The coordinator fell silent here (or a successor took over first): this
 * node's training saves or stops on its own before anything else. */
static void
coordinator_lost(struct job *j, double now)
{
	struct msg_command c = { .command = saves(j) ? MSG_CMD_CHECKPOINT : MSG_CMD_STOP };
	int leader = watch_coordinator(j->watch);
	double backstop = watch_alone_at(j->watch) - now + j->o->grace_s + KILL_AFTER_S +
	                  ORPHAN_EXTRA_S;

	if (leader >= 0)
		snprintf(j->lost_why, sizeof(j->lost_why), "%s (rank %d) took over as the "
		         "coordinator: the coordinator %s (rank 0) fell silent", node_host(j->node,
		         leader), leader, node_host(j->node, 0));
	else
		snprintf(j->lost_why, sizeof(j->lost_why), "the coordinator %s (rank 0) fell silent: "
		         "no word from it for %.1f s", node_host(j->node, 0),
		         watch_silent(j->watch, now));
	LOG_ERR("%s: the training %s", j->lost_why, saves(j) ? "saves and stops" : "stops");
	job_step(j, PE_ORPHAN, (long)(backstop * 1000), on_orphan_late);
	/* The checkpoint signal first: MPI may cost this agent its life.  A
	 * result it sends at once (no training to stop) releases the node. */
	c.reason = j->lost_why;
	j->held = true;
	j->held_until = now + j->o->grace_s + KILL_AFTER_S + j->o->heartbeat_timeout_s;
	node_command(j->node, &c);
	if (!j->held)
		return;
	if (node_waiting(j->node)) {
		release(j);  /* its training had ended before */
		return;
	}
	record(j, "the training was told to %s; this node tells the next in line over MPI once "
	       "it has", saves(j) ? "save and stop" : "stop");
}

/* The successor whose turn it is, with a majority: it coordinates the end. */
static void
take_over(struct job *j, double now)
{
	struct msg plan;
	struct coord_adoption a;
	const int *members;
	int n = node_members(j->node, &members), passed[WATCH_LINE_MAX], np;
	char why[1000], gone[300];

	if (!j->plan_text || msg_decode(MSG_PLAN, j->plan_text, j->size, &plan) < 0) {
		LOG_ERR("cannot take over as the coordinator: the plan is gone");
		return;
	}
	np = watch_passed(j->watch, passed);
	names(j, passed + 1, np - 1, gone, sizeof(gone));
	snprintf(why, sizeof(why), "%s; %d of %d nodes lost it%s%.300s%s", j->lost_why,
	         watch_votes(j->watch), j->size, np > 1 ? "; before this node in line, " : "",
	         gone, np > 1 ? (np > 2 ? " were silent too" : " was silent too") : "");
	/* the event log, on this node from now on (the same path on every node) */
	if (!j->ev)
		jobfiles_open_events(j);
	a = (struct coord_adoption){ .plan = &plan.u.plan, .members = members, .nmembers = n,
	                             .attempt = node_attempt(j->node), .lost = passed, .nlost = np,
	                             .why = why, .lost_at = now - watch_silent(j->watch, now) };
	j->coord = survey_new_coord(j, j->rank);
	if (!j->coord || coord_adopt(j->coord, &a, now) < 0) {
		LOG_ERR("cannot take over as the coordinator: out of memory");
		coord_free(j->coord);
		j->coord = NULL;
		msg_clear(&plan);
		return;
	}
	msg_clear(&plan);
	j->held = false;  /* a majority heard: the network works */
	keep_own(j);
	/* the orphan's deadline gives way to the coordinator's own */
	loop_del_timer(j->loop, j->phase_timer);
	j->phase_timer = NULL;
	for (int r = 0; j->early && r < j->size; r++) {
		struct msg m;

		if (j->early[r] && msg_decode(MSG_RESULT, j->early[r], j->size, &m) == 0) {
			coord_result(j->coord, r, &m.u.result, now);
			msg_clear(&m);
		}
	}
	finish_coordinator_check(j);
}

/* Nobody took over: this node ends on its own once its training has. */
static void
alone(struct job *j)
{
	int r[WATCH_LINE_MAX + 1], n = watch_unheard(j->watch, r);
	const char *link = node_link_down(j->node);
	char who[600];

	names(j, r, n, who, sizeof(who));
	if (link) {
		/* its own link is down: it names nobody, whatever the job's size */
		LOG_WARN("this node is cut off (%s): it names nobody and ends on its own", link);
		record(j, "this node is cut off itself (%s), and %s said nothing: it names nobody "
		       "and ends on its own", link, who);
	} else {
		LOG_WARN("nobody took over as the coordinator (no word from %s): this node ends on "
		         "its own (it may be the one cut off)", who);
		record(j, "nobody took over as the coordinator, and %s said nothing: this node ends "
		       "on its own (it may be the one cut off)", who);
	}
	j->alone = true;
	if (!j->held || node_waiting(j->node)) {
		orphan_end(j);
		return;
	}
	/* the training's grace and its KILL, not the orphan's later deadline */
	job_step(j, PE_ALONE, (long)((j->o->grace_s + KILL_AFTER_S) * 1000), on_orphan_late);
}

/* The successor this node trains under fell silent in its turn: no second
 * takeover, the training saves (or stops) and this node ends on its own. */
static void
leader_lost(struct job *j, double now)
{
	struct msg_command c = { .command = saves(j) ? MSG_CMD_CHECKPOINT : MSG_CMD_STOP };
	int leader = watch_coordinator(j->watch);

	snprintf(j->lost_why, sizeof(j->lost_why), "%s (rank %d), which took over as the "
	         "coordinator, fell silent in its turn: no word from it for %.1f s",
	         node_host(j->node, leader), leader, watch_silent(j->watch, now));
	LOG_ERR("%s: the training %s, and this node ends on its own", j->lost_why,
	        saves(j) ? "saves and stops" : "stops");
	record(j, "the training was told to %s, and this node ends on its own once it has",
	       saves(j) ? "save and stop" : "stop");
	j->alone = true;
	j->held = true;
	c.reason = j->lost_why;
	node_command(j->node, &c);
	if (node_waiting(j->node)) {
		orphan_end(j);
		return;
	}
	job_step(j, PE_ALONE, (long)((j->o->grace_s + KILL_AFTER_S) * 1000), on_orphan_late);
}

void
takeover_rejoin(struct job *j, double now)
{
	if (j->coord || !j->watch || !watch_lost(j->watch) || j->phase != PH_RUN ||
	    watch_coordinator(j->watch) < 0)
		return;
	loop_del_timer(j->loop, j->phase_timer);
	j->phase_timer = NULL;
	j->held = j->alone = false;
	jobfiles_unrecord(j);
	watch_follow(j->watch, now);
	LOG_INFO("%s: the training starts again under it", j->lost_why);
}

void
takeover_act(struct job *j, enum watch_action a, double now)
{
	switch (a) {
	case WATCH_LOST:
		coordinator_lost(j, now);
		break;
	case WATCH_TAKE_OVER:
		take_over(j, now);
		break;
	case WATCH_ALONE:
		alone(j);
		break;
	case WATCH_LEADER_LOST:
		leader_lost(j, now);
		break;
	case WATCH_NONE:
		break;
	}
}

int
takeover_send(struct job *j, enum msg_kind kind, const char *text)
{
	int leader = watch_coordinator(j->watch), line[WATCH_LINE_MAX], nline;

	if (kind == MSG_RESULT) {
		if (j->alone) {
			orphan_end(j);  /* the training ended: nobody to tell */
			return 0;
		}
		if (j->held) {
			release(j);
			return 0;
		}
		keep_own(j);
		if (leader >= 0)
			return job_send(j, leader, kind, text);
		/* released already (its grace ran out first): whoever takes over needs it */
		nline = watch_line(j->watch, line);
		for (int i = 0; i < nline; i++)
			if (line[i] != j->rank)
				(void)job_send(j, line[i], kind, text);
		return 0;
	}
	/* Heartbeats and notes: nobody to take them yet.  A successor that
	 * took over reached this node, so MPI to it works even while the
	 * training saves, and it must hear this node is alive. */
	if (leader < 0)
		return 0;
	return job_send(j, leader, kind, text);
}

static long
on_watch(struct loop *l, void *arg)
{
	struct job *j = arg;
	double now = job_now(j);
	enum watch_action a;

	(void)l;
	if (j->phase != PH_RUN || j->coord) {
		j->watch_timer = NULL;
		return LOOP_NOMORE;
	}
	/* what has arrived first: silence is judged on what was read */
	if (job_route_all(j) < 0)
		return (long)(j->o->heartbeat_s * 500);
	watch_cut_off(j->watch, node_link_down(j->node) != NULL);
	while (j->phase == PH_RUN && !j->coord && (a = watch_tick(j->watch, now)) != WATCH_NONE)
		takeover_act(j, a, now);
	/* a training that outlived its grace and its KILL does not hold MPI back */
	if (j->held && j->phase == PH_RUN && !j->coord && now >= j->held_until)
		release(j);
	return (long)(j->o->heartbeat_s * 500);
}

int
takeover_watch(struct job *j)
{
	struct watch_opts wo = {
		.self = j->rank, .size = j->size, .coordinator = 0,
		.heartbeat_s = j->o->heartbeat_s, .heartbeat_timeout_s = j->o->heartbeat_timeout_s,
		/* each node votes once its training saved: the grace, the KILL, its end */
		.vote_wait_s = j->o->grace_s + KILL_AFTER_S + j->o->heartbeat_timeout_s,
	};

	if (j->rank == 0 || j->size < 2)
		return 0;
	j->watch = watch_new(&wo, job_now(j));
	if (!j->watch)
		return -ENOMEM;
	j->watch_timer = loop_add_timer(j->loop, (long)(j->o->heartbeat_s * 500), on_watch, j);
	return j->watch_timer ? 0 : -ENOMEM;
}

/* Only a node that lost the coordinator sends its result to the successors
 * in line: each keeps it, whichever takes over. */
void
takeover_keep_early(struct job *j, int src, const char *text)
{
	if (!j->watch || watch_place(j->watch) == 0)
		return;
	if (!j->early)
		j->early = calloc((size_t)j->size, sizeof(*j->early));
	if (!j->early || src < 0 || src >= j->size)
		return;
	free(j->early[src]);
	j->early[src] = strdup(text);  /* the latest: a restart's result follows an earlier one */
}

void
takeover_free(struct job *j)
{
	watch_free(j->watch);
	j->watch = NULL;
	for (int r = 0; j->early && r < j->size; r++)
		free(j->early[r]);
	free(j->early);
	j->early = NULL;
	free(j->result_text);
	j->result_text = NULL;
}
