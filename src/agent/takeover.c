/*
 * takeover.c - the coordinator lost, on every other node: the watch on
 * it (watch.c decides, this file acts), the orphan that saves or stops
 * its training on its own and writes a record of why, and the successor
 * that takes over as the coordinator when a majority lost it too, with
 * the results that reached it early.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vigil.h"
#include "agent/coord.h"
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
#define ORPHAN_EXTRA_S 20    /* beyond that: how long an orphan waits for the successor */

static long
on_orphan_late(struct loop *l, void *arg)
{
	struct job *j = arg;
	int code = j->o->resume ? VIGIL_EXIT_REQUEUE : VIGIL_EXIT_INTERNAL;
	char why[700];

	(void)l;
	j->phase_timer = NULL;
	snprintf(why, sizeof(why), "%s; no successor took over, so this node ends on its own "
	         "(it may be the one cut off)", j->lost_why);
	LOG_ERR("%s", why);
	jobfiles_record(j, code, VIGIL_STATE_ERROR, why);
	j->exit_code = code;
	j->clean = false;
	job_drain(j);
	return LOOP_NOMORE;
}

/* The coordinator fell silent here: this node's training saves or stops on its own. */
static void
coordinator_lost(struct job *j, double now)
{
	int s = watch_successor(j->watch);
	struct msg m = { .kind = MSG_SUSPECT };
	struct msg_command c = { .command = j->o->resume ? MSG_CMD_CHECKPOINT : MSG_CMD_STOP };
	char *text;

	snprintf(j->lost_why, sizeof(j->lost_why), "the coordinator %s (rank 0) fell silent: no "
	         "word from it for %.1f s", node_host(j->node, 0), watch_silent(j->watch, now));
	LOG_ERR("%s: the training %s", j->lost_why, j->o->resume ? "saves and stops" : "stops");
	jobfiles_record(j, j->o->resume ? VIGIL_EXIT_REQUEUE : VIGIL_EXIT_INTERNAL,
	             VIGIL_STATE_ERROR, j->lost_why);
	if (s >= 0 && s != j->rank) {
		m.u.suspect.node = j->name;
		m.u.suspect.coordinator = 0;
		m.u.suspect.silent = watch_silent(j->watch, now);
		text = msg_encode(&m);
		if (text)
			(void)peer_send(j->p, s, MSG_SUSPECT, text);
		free(text);
	}
	c.reason = j->lost_why;
	node_command(j->node, &c);
	/* the training's grace, its KILL, and the successor's verdict */
	job_step(j, PE_ORPHAN, (long)((j->o->grace_s + KILL_AFTER_S + ORPHAN_EXTRA_S +
	                               j->o->heartbeat_timeout_s) * 1000), on_orphan_late);
}

/* The successor: a majority lost the coordinator; this node coordinates the end. */
static void
take_over(struct job *j, double now)
{
	struct msg plan;
	const int *members;
	int n = node_members(j->node, &members);
	char why[700];

	if (!j->plan_text || msg_decode(MSG_PLAN, j->plan_text, j->size, &plan) < 0) {
		LOG_ERR("cannot take over as the coordinator: the plan is gone");
		return;
	}
	snprintf(why, sizeof(why), "%s; %d of %d nodes lost it", j->lost_why,
	         watch_votes(j->watch), j->size);
	j->coord = survey_new_coord(j, j->rank);
	if (!j->coord || coord_adopt(j->coord, &plan.u.plan, members, n, 0, why, now) < 0) {
		LOG_ERR("cannot take over as the coordinator: out of memory");
		coord_free(j->coord);
		j->coord = NULL;
		msg_clear(&plan);
		return;
	}
	msg_clear(&plan);
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
	job_coordinator_check(j);
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
		LOG_WARN("as the successor, this node heard from no majority of the nodes: it "
		         "takes nothing over (it may be the one cut off)");
		/* Nobody will coordinate the end (a job of two nodes never has a
		 * majority without its coordinator): this node ends once its
		 * training had its grace, not at the orphan's later deadline. */
		job_step(j, PE_ALONE, (long)((j->o->grace_s + KILL_AFTER_S) * 1000), on_orphan_late);
		break;
	case WATCH_NONE:
		break;
	}
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
	while (j->phase == PH_RUN && !j->coord && (a = watch_tick(j->watch, now)) != WATCH_NONE)
		takeover_act(j, a, now);
	return (long)(j->o->heartbeat_s * 500);
}

int
takeover_watch(struct job *j)
{
	struct watch_opts wo = {
		.self = j->rank, .size = j->size, .coordinator = 0,
		.heartbeat_s = j->o->heartbeat_s, .heartbeat_timeout_s = j->o->heartbeat_timeout_s,
	};

	if (j->rank == 0 || j->size < 2)
		return 0;
	j->watch = watch_new(&wo, job_now(j));
	if (!j->watch)
		return -ENOMEM;
	j->watch_timer = loop_add_timer(j->loop, (long)(j->o->heartbeat_s * 500), on_watch, j);
	return j->watch_timer ? 0 : -ENOMEM;
}

/* Only a node that lost the coordinator sooner sends its result to the
 * successor before this node lost it too: so each is kept. */
void
takeover_keep_early(struct job *j, int src, const char *text)
{
	if (!j->watch || j->rank != watch_successor(j->watch))
		return;
	if (!j->early)
		j->early = calloc((size_t)j->size, sizeof(*j->early));
	if (j->early && src >= 0 && src < j->size && !j->early[src])
		j->early[src] = strdup(text);
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
}
