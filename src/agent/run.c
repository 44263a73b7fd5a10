/*
 * run.c - `vigil run` on every node: the agent's phases, from the
 * pre-check to the exit status, and the routing of every message.
 *
 * The modules that do the work: node.c (this node's training, output,
 * signals, heartbeats, inspection), coord.c (rank 0's decisions: the
 * plan, stop, checkpoint, restart, the end), jobperf.c (timing
 * reductions and alerts), msg.c (what the agents say to each other).
 * Beside this file, with the job's state in job.h: survey.c (this node's
 * survey, the gather, the plan), takeover.c (the coordinator lost),
 * finish.c (the coordinator's end of the job) and jobfiles.c (the event
 * log, report, exclude list, state file, records).
 * This file owns the MPI peer, the loop and the signal descriptor, moves
 * the agent through its phases and routes each message once to the module
 * it is for.
 *
 * The job's phases here are the agent's, not the coordinator's; each
 * change goes through job_step() and the table in phase.c, which names
 * the events between them and logs each move at debug level (-v):
 *
 *   START   set up, before the survey
 *   PREP    before the gather, with staging or hooks (prep.h): each node's
 *           pre-check hooks, pre-check, staging and pre-launch hooks, and
 *           the coordinator's go once every node is done
 *   GATHER  every node's pre-check report goes to the coordinator
 *   PLAN    the coordinator plans; the others wait for the plan
 *   DRYRUN  --dry-run: every node's description goes to the coordinator
 *   RUN     the training runs (coord.c's phases live inside this one)
 *   FINAL   the coordinator's last timing reduction (bounded)
 *   HOOKS   the requeue and end hooks, with the job's status (bounded)
 *   DRAIN   output flushed, messages and reductions completed (bounded)
 *   HOLD    --hold-on-failure keeps the allocation (SIGTERM ends it)
 *   EXIT    the loop stops; the agent ends with its status
 *
 * Every wait is the loop's: a phase that waits on peers has a timer that
 * ends it, so a hung or lost node costs a timeout, never a hang, and
 * signals are served in every phase.
 */
#include "autoconf.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/finish.h"
#include "agent/hangjob.h"
#include "agent/job.h"
#include "agent/jobfiles.h"
#include "agent/node.h"
#include "check/incident.h"
#include "agent/run.h"
#include "agent/survey.h"
#include "agent/takeover.h"
#include "agent/watch.h"
#include "comm/msg.h"
#include "comm/nudge.h"
#include "comm/peer.h"
#include "launch/child.h"
#include "launch/modes.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/sig.h"
#include "lib/util.h"
#include "perf/jobperf.h"
#include "perf/usage.h"
#include "prep/prep.h"
#include "proc/slurm.h"

#define DRAIN_MS 5000        /* output, FINAL messages and reductions, at most */
#define IDLE_POLL_MS 80      /* how often an idle agent looks at MPI */
#define DUE_POLL_MS 5        /* ... when a message is due soon */
#define BUSY_POLL_MS 2       /* ... with messages in flight */
#define NUDGE_WINDOW_S 0.1   /* ... for this long after a nudge */
#define FINE_POLL_US 200     /* ... while the job's last reduction runs (before_poll()) */
#define FINE_POLL_S 0.1      /* ... for at most this long of it */
#define END_TIME_EVERY_S 60  /* how often the coordinator asks Slurm for the end time */
#define END_TIME_TIMEOUT_S 2 /* ... and how long it waits for the answer */

double
job_now(const struct job *j)
{
	return (double)loop_now(j->loop) / 1000.0;
}

/* ---- phases ------------------------------------------------------------------ */

static long
on_hold_over(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	job_step(j, PE_RELEASE, -1, NULL);
	return LOOP_NOMORE;
}

void
job_step(struct job *j, enum phase_event ev, long deadline_ms, loop_timer_fn *late)
{
	enum phase ph = j->phase;

	if (phase_step(&ph, ev) < 0)
		return;  /* no row for it here: refused, and logged (phase.h) */
	loop_del_timer(j->loop, j->phase_timer);
	j->phase_timer = NULL;
	j->phase = ph;
	if (ph == PH_HOLD && !late)
		late = on_hold_over;
	if (deadline_ms >= 0 && late) {
		j->phase_timer = loop_add_timer(j->loop, deadline_ms, late, j);
		if (!j->phase_timer) {
			LOG_ERR("out of memory");
			j->clean = false;
			j->exit_code = VIGIL_EXIT_INTERNAL;
			(void)phase_step(&j->phase, PE_LEAVE);
		}
	}
	if (j->phase == PH_EXIT)
		loop_stop(j->loop);
}

void
job_leave(struct job *j, int code, bool clean)
{
	j->exit_code = code;
	j->clean = j->clean && clean;
	job_step(j, PE_LEAVE, -1, NULL);
}

/* ---- outputs: lines ------------------------------------------------------------------ */

void
job_say(void *arg, const char *line)
{
	(void)arg;
	log_say("%s\n", line);
}

/* ---- messages --------------------------------------------------------------------- */

int
job_coord_rank(const struct job *j)
{
	return j->watch ? watch_coordinator(j->watch) : 0;
}

/* A message to RANK, and a nudge so that it reads it now, not at its next
 * look at MPI; heartbeats are not waited for and go alone.  The message is
 * pushed out first: the nudge must not wake a receiver before there is
 * anything to read, or it looks, finds nothing, and reads the message only
 * at a later look, which a loaded machine may hold up for many ms. */
static int
send_to(struct job *j, int rank, enum msg_kind kind, const char *text)
{
	int rc = peer_send(j->p, rank, kind, text);

	if (rc == 0 && rank == j->rank) {
		j->look_now = true;  /* the coordinator's own node: no loop wakes for it */
	} else if (rc == 0 && j->nudge && kind != MSG_HEARTBEAT) {
		(void)peer_push(j->p);
		(void)nudge_send(j->nudge, rank);
	}
	return rc;
}

static int
node_send(void *arg, enum msg_kind kind, const char *text)
{
	struct job *j = arg;

	if (kind == MSG_RESULT) {
		/* kept: a successor may need it after the coordinator is lost */
		char *copy = strdup(text);

		if (copy) {
			free(j->result_text);
			j->result_text = copy;
		}
	}
	if (j->watch && watch_lost(j->watch) && !j->coord)
		return takeover_send(j, kind, text);
	return send_to(j, job_coord_rank(j), kind, text);
}

int
job_send(void *arg, int rank, enum msg_kind kind, const char *text)
{
	return send_to(arg, rank, kind, text);
}

/* A nudge from another agent: the loop looks at MPI now, and often for a
 * while, since a datagram may overtake the message it announces (a
 * connection MPI opens on first use, a sender that progresses its queue a
 * little later).  The socket is not read meanwhile (nudge.h). */
static void
on_nudge(void *arg)
{
	struct job *j = arg;

	j->nudged_until = job_now(j) + NUDGE_WINDOW_S;
}

/* This agent's nudge socket (nudge.h), on the address its MPI uses;
 * without one, MPI is looked at on the loop's schedule alone. */
static void
open_nudge(struct job *j)
{
	int rc;

	if (j->size < 2 || !peer_is_mpi(j->p) || j->o->no_nudge)
		return;
	rc = nudge_open(j->size, j->name, &j->nudge);
	if (rc == 0)
		rc = nudge_watch(j->nudge, j->loop, (long)(NUDGE_WINDOW_S * 1000), on_nudge, j);
	if (rc == 0)
		rc = nudge_self(j->nudge, j->name, j->nudge_at, sizeof(j->nudge_at));
	if (rc < 0) {
		LOG_INFO("no nudges between agents (%s): MPI is looked at every %d ms",
		         strerror(-rc), IDLE_POLL_MS);
		nudge_free(j->nudge);
		j->nudge = NULL;
	}
}

static void
take_final(struct job *j, const struct msg_final *f)
{
	if (j->phase != PH_RUN)
		return;
	j->exit_code = f->exit_code;
	j->clean = j->clean && f->finalize;
	j->bye = f->abort;  /* a node was lost: the coordinator ends the job */
	j->hold = f->hold;
	jobfiles_unrecord(j);
	if (j->perf)
		jobperf_set_due(j->perf, f->cycles);
	finish_end_hooks(j, f->state);
}

void
job_route(struct job *j, int src, int tag, const char *text)
{
	struct msg m;
	double now = job_now(j);
	int rc;

	if (tag < MSG_KIND_MIN || tag > MSG_KIND_MAX)
		return;
	rc = msg_decode((enum msg_kind)tag, text, j->size, &m);
	if (rc < 0) {
		LOG_WARN("ignoring a malformed %s from rank %d%s", msg_kind_name((enum msg_kind)tag),
		         src, rc == -ENOMEM ? " (out of memory)" : "");
		return;
	}
	if (j->bcast && j->phase == PH_PLAN && m.kind != MSG_PLAN) {
		/* The plan comes as a broadcast, beside the point-to-point
		 * messages: a command (a reduction's "perf", a checkpoint) may
		 * overtake it.  Kept, in order, until the node runs. */
		survey_defer(j, src, tag, text);
		msg_clear(&m);
		return;
	}
	if (j->coord)
		coord_heard(j->coord, src, now);
	if (j->watch)
		watch_heard(j->watch, src, now);
	/* a successor in line that speaks as the coordinator took over (watch.h) */
	if (j->watch && !j->coord && j->phase == PH_RUN && (m.kind == MSG_HEARTBEAT ||
	    m.kind == MSG_COMMAND || m.kind == MSG_FINAL))
		takeover_act(j, watch_leader(j->watch, src, now), now);
	switch (m.kind) {
	case MSG_PLAN:
		if (j->phase == PH_PLAN && src == 0 && !j->bcast)
			survey_plan(j, text, &m.u.plan);
		break;
	case MSG_RESULT:
		if (j->coord)
			coord_result(j->coord, src, &m.u.result, now);
		else
			takeover_keep_early(j, src, text);
		break;
	case MSG_NOTE:
		if (j->coord)
			coord_note(j->coord, src, &m.u.note, now);
		if (j->coord && m.u.note.usage)
			finish_take_usage(j, src, m.u.note.usage, now);
		if (j->coord && m.u.note.forensics)
			hangjob_forensics(j, src, m.u.note.forensics, now);
		break;
	case MSG_COMMAND:
		if (src != job_coord_rank(j))
			break;
		if (m.u.command.command == MSG_CMD_PERF) {
			if (j->perf && j->rank != 0)
				jobperf_ticked(j->perf);
		} else if (j->node && j->phase == PH_RUN) {
			if (m.u.command.command == MSG_CMD_CHECKPOINT)
				prep_checkpoint(j->prep, m.u.command.reason);
			if (m.u.command.command == MSG_CMD_RESTART) {
				free(j->result_text);  /* the last attempt's, no longer this one's */
				j->result_text = NULL;
				takeover_rejoin(j, now);  /* from a successor that took over */
			}
			node_command(j->node, &m.u.command);
			if (m.u.command.command == MSG_CMD_RESTART) {
				finish_perf_attempt(j);
				hangjob_attempt(j, job_now(j));
			}
		}
		break;
	case MSG_FINAL:
		if (src == job_coord_rank(j))
			take_final(j, &m.u.final);
		break;
	case MSG_SUSPECT:
		/* a vote, judged at the watch's next tick (takeover.c) */
		if (j->watch)
			watch_vote(j->watch, src, now);
		break;
	case MSG_PREP:
		if (j->phase == PH_PREP)
			prep_message(j->prep, src, &m.u.prep, now);
		break;
	case MSG_BYE:
		if (j->abort_end)
			j->byes++;  /* (the rest are waited for on the way out) */
		break;
	case MSG_HEARTBEAT:
		if (j->coord && m.u.heartbeat.progress)
			coord_progress(j->coord, src, m.u.heartbeat.iters, now);
		if (j->coord)
			hangjob_beat(j, src, &m.u.heartbeat, now);
		break;
	}
	msg_clear(&m);
}

int
job_route_all(struct job *j)
{
	int src, tag, rc = 0;
	char *text;

	j->look_now = false;
	/* not once a gather began: its messages are not ours to take (peer.h) */
	while (j->phase != PH_EXIT && j->phase != PH_GATHER && j->phase != PH_DRYRUN &&
	       (rc = peer_poll(j->p, &src, &tag, &text)) == 1) {
		j->nudged_until = 0;  /* what a nudge announced has come */
		nudge_resume(j->nudge);
		job_route(j, src, tag, text);
		free(text);
	}
	return rc;
}

/* ---- the loop's hook: MPI progress ------------------------------------------------- */

static long
on_fine(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->fine_timer = NULL;  /* before_poll() arms the next */
	return LOOP_NOMORE;
}

/*
 * A reduction at the end of the job, once this node's training is over:
 * each step of a non-blocking collective waits for the next look at MPI
 * of every rank it involves (a binomial reduce and broadcast: 4 steps at
 * 4 ranks, 8 at 16), and at DUE_POLL_MS a look the last reduction alone
 * held the job's end 50 ms at 4 agents and 110 ms at 16 on a 16-core
 * node.  Looked at every FINE_POLL_US instead, for the first FINE_POLL_S
 * of each such reduction: long enough for the steps of 10,000 ranks, and
 * a node whose training ended early while the others go on spends no
 * more than that each reduction on it (a reduction that waits on a slow
 * node is not worth a core's tenth).
 */
static void
fine_poll(struct job *j, double now)
{
	double age;

	if (j->fine_timer || !j->perf)
		return;
	if (!((j->coord && (j->phase == PH_FINAL || j->phase == PH_DRAIN)) ||
	      (j->node && node_waiting(j->node))))
		return;
	age = jobperf_reduction_age(j->perf, now);
	if (age >= 0 && age < FINE_POLL_S)
		j->fine_timer = loop_add_timer_us(j->loop, FINE_POLL_US, on_fine, j);
}

static long
before_poll(struct loop *l, void *arg)
{
	struct job *j = arg;
	double now = job_now(j);
	long wait = -1, w;

	(void)l;
	if (j->bcast)
		survey_bcast_progress(j);
	/* While a gather runs, no point-to-point message is due, and looking
	 * for one would take the gather's (peer.h). */
	if (j->phase == PH_GATHER || j->phase == PH_DRYRUN)
		survey_gather_progress(j);
	/* Messages first: the coordinator judges silence only after reading
	 * what has arrived. */
	else if (j->phase != PH_EXIT && job_route_all(j) < 0) {
		LOG_ERR("MPI failed while the job ran");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
	}
	if (j->phase == PH_RUN && j->coord) {
		double next;

		job_recheck_end_time(j, now);
		next = coord_tick(j->coord, now);
		w = hangjob_tick(j, now);

		finish_coordinator_check(j);
		if (next >= 0)
			wait = next <= now ? 0 : (long)((next - now) * 1000) + 1;
		if (w >= 0 && (wait < 0 || w < wait))
			wait = w;
	}
	if (j->perf && (j->phase == PH_RUN || j->phase == PH_FINAL || j->phase == PH_DRAIN)) {
		w = jobperf_cycle(j->perf, now, j->phase == PH_RUN);
		if (w >= 0 && (wait < 0 || w < wait))
			wait = w;
		if (j->coord && j->phase == PH_RUN)
			jobfiles_metrics(j, VIGIL_STATE_RUNNING, false, now);
		if (j->coord && j->phase == PH_RUN)
			finish_usage_event(j, now, false);
	}
	if (j->phase != PH_EXIT)
		fine_poll(j, now);
	if (j->phase == PH_FINAL && jobperf_idle(j->perf)) {
		loop_del_timer(j->loop, j->phase_timer);
		j->phase_timer = NULL;
		finish_conclude(j);
	}
	if (j->phase == PH_DRAIN)
		job_drain(j);
	/* A world of one gathers at once: a gather begun in this turn (the dry
	 * run's, after the plan) ends on the next, without waiting for poll. */
	if (!peer_is_mpi(j->p) && (j->phase == PH_GATHER || j->phase == PH_DRYRUN))
		return 0;
	if (j->phase == PH_EXIT || !peer_is_mpi(j->p))
		return wait;
	/* MPI is not a descriptor: look again soon, sooner with traffic in
	 * flight or when the next message is due (this node's result is
	 * sent; the coordinator's attempt is ending).  Each look runs Open
	 * MPI's progress engine (tens of us); 80 ms keeps an idle agent under
	 * 0.1% of a core while a command (checkpoint, stop) still reaches
	 * every node within 100 ms. */
	if (j->look_now)
		w = 0;
	else if (peer_busy(j->p) || now < j->nudged_until)
		w = BUSY_POLL_MS;
	else if ((j->node && node_waiting(j->node)) || (j->coord && coord_ending(j->coord)) ||
	         j->phase == PH_GATHER || j->phase == PH_DRYRUN || j->phase == PH_PLAN ||
	         j->phase == PH_FINAL || j->phase == PH_DRAIN)
		w = DUE_POLL_MS;  /* the reports, the plan, a result, FINAL: due any moment */
	else
		w = IDLE_POLL_MS;
	return wait < 0 || w < wait ? w : wait;
}

/* ---- signals ------------------------------------------------------------------------ */

/*
 * SIGTERM inside a Slurm job: was the job cancelled (scancel)?  Slurm
 * sends SIGTERM to every process of the job for a cancel, the time limit,
 * preemption and a requeue alike, and marks the job first; asked once,
 * within END_TIME_TIMEOUT_S (the agent's loop waits for the answer).
 * Without an answer the SIGTERM is not taken for a cancel.
 */
static bool
job_cancelled(struct job *j)
{
	char why[512] = "";
	int rc;

	if (j->asked_cancel)
		return j->cancelled;
	j->asked_cancel = true;
	rc = slurm_cancelled(END_TIME_TIMEOUT_S, why, sizeof(why));
	if (rc < 0 && rc != -ENOENT)
		LOG_WARN("cannot tell whether the job was cancelled: %s", why);
	j->cancelled = rc == 1;
	return j->cancelled;
}

/* SIGTERM while the training runs: a cancel stops it, else (--resume) it
 * saves first; this node's record says which, should the coordinator's
 * word never come. */
static void
on_term(struct job *j)
{
	if (job_cancelled(j)) {
		LOG_INFO("got SIGTERM: Slurm cancelled the job; stopping the training "
		         "without a checkpoint");
		if (j->node)
			node_cancel(j->node);
		if (j->coord)
			coord_cancel(j->coord, job_now(j));
		jobfiles_record(j, 128 + SIGTERM, VIGIL_STATE_STOPPED,
		                "SIGTERM: the job was cancelled (scancel); the training was stopped "
		                "without a checkpoint, and the job is not requeued");
		return;
	}
	jobfiles_record(j, j->o->resume ? VIGIL_EXIT_REQUEUE : 128 + SIGTERM, VIGIL_STATE_STOPPED,
	                j->o->resume ?
	                "SIGTERM: mpirun or the batch system ends the job; the training was "
	                "told to save first (--resume)" :
	                "SIGTERM: mpirun or the batch system ends the job");
}

static void
on_signal(struct loop *l, int fd, short revents, void *arg)
{
	struct job *j = arg;
	int sig;

	(void)l;
	(void)revents;
	while ((sig = sig_fd_read(fd, NULL)) > 0) {
		bool stopper = sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;

		if (stopper && (j->phase == PH_GATHER || j->phase == PH_PLAN ||
		                j->phase == PH_PREP)) {
			/* Nothing runs yet: the agent just goes. */
			LOG_INFO("got %s before the training started", sig_name(sig));
			job_leave(j, 128 + sig, false);
			continue;
		}
		if (stopper && j->phase == PH_HOLD) {
			job_step(j, PE_RELEASE, -1, NULL);
			continue;
		}
		if (stopper && j->phase == PH_HOOKS) {
			job_drain(j);  /* the hooks are killed on the way out */
			continue;
		}
		if (sig == SIGCHLD && !j->node)
			(void)child_reap(NULL);  /* hooks and staging keepers (runner.h) */
		if (sig == SIGTERM && j->phase == PH_RUN)
			on_term(j);
		if (j->node)
			node_signal(j->node, sig);
	}
}

/* ---- the end of the job on every node ------------------------------------------------ */

/* Drained (or done waiting): the allocation is held, or the agent ends. */
static void
drained(struct job *j)
{
	if (j->hold > 0)
		job_step(j, PE_HOLD, (long)(j->hold * 1000), NULL);
	else
		job_step(j, PE_DRAINED, -1, NULL);
}

static long
on_drain_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	if (j->perf && !jobperf_idle(j->perf)) {
		LOG_WARN("a timing reduction did not complete: leaving without MPI_Finalize");
		j->clean = false;
	}
	if (peer_busy(j->p) && j->coord)
		LOG_WARN("not every node took the end of the job within %d ms", DRAIN_MS);
	drained(j);  /* done waiting: go on as if drained */
	return LOOP_NOMORE;
}

/*
 * The job is over for this agent: its training's output reaches our own,
 * the FINAL messages leave, the reductions the coordinator started are
 * finished (MPI_Finalize waits for them otherwise), a notifier started
 * for the last alert finishes; bounded by DRAIN_MS.
 */
void
job_drain(struct job *j)
{
	if (j->phase != PH_DRAIN) {
		if (j->node)
			node_quiet(j->node);
		job_step(j, PE_DRAIN, DRAIN_MS, on_drain_late);
	}
	if ((j->node && node_output_pending(j->node)) || (j->coord && peer_busy(j->p)) ||
	    (j->perf && j->clean && !jobperf_idle(j->perf)) ||
	    (j->perf && j->rank == 0 && jobperf_notifying(j->perf)))
		return;
	loop_del_timer(j->loop, j->phase_timer);
	j->phase_timer = NULL;
	drained(j);
}

/* ---- the launch: the node's side and performance detection ---------------------------- */

static int
tick_send(void *arg)
{
	struct job *j = arg;

	for (int r = 1; r < j->size; r++)
		if (!coord_lost(j->coord, r))
			(void)send_to(j, r, MSG_COMMAND, j->perf_tick);
	return 0;
}

static void
perf_alert(void *arg, int rank, const char *message)
{
	struct job *j = arg;

	coord_alert(j->coord, rank, message, job_now(j));
}

static const char *
perf_host(void *arg, int rank)
{
	struct job *j = arg;

	return j->coord ? coord_host(j->coord, rank) : "?";
}

static void
line_to_perf(void *arg, const char *line, size_t len)
{
	struct job *j = arg;

	if (j->perf)
		jobperf_line(j->perf, line, len);
}

void
job_launch(struct job *j)
{
	struct jobperf_ops po = { tick_send, perf_alert, perf_host, jobfiles_event, job_say, j };
	struct msg m = { .kind = MSG_COMMAND };
	int rc;

	if (j->o->dry_run) {
		survey_dry_run(j);
		return;
	}
	m.u.command.command = MSG_CMD_PERF;
	j->perf_tick = msg_encode(&m);
	j->perf = jobperf_new(j->o, j->p, j->rank, j->size, &po, job_now(j));
	if (!j->perf || !j->perf_tick) {
		LOG_ERR("out of memory");
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	job_step(j, PE_LAUNCH, -1, NULL);
	rc = takeover_watch(j);
	if (rc == 0)
		rc = node_launch(j->node);
	if (rc < 0) {
		LOG_ERR("cannot start this node's part of the job: %s", strerror(-rc));
		job_leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	finish_perf_attempt(j);
	hangjob_attempt(j, job_now(j));
}

/* ---- the coordinator's time limit ----------------------------------------------------- */

/*
 * The job's time limit: --time-limit from the agent's start, else Slurm's
 * end time (asked of Slurm, so that a limit an administrator changes
 * while the job runs moves it).  Returns 1 with *LEFT the seconds until
 * it (<= 0: it has passed), 0 when the job has none (Slurm answered
 * UNLIMITED), < 0 when nobody could say.
 */
static int
time_left(struct job *j, double *left)
{
	const char *source = NULL;
	char why[512] = "";
	time_t end;
	int rc;

	if (j->o->time_limit_s > 0) {
		*left = j->o->time_limit_s - (job_now(j) - j->t0);
		return 1;
	}
	rc = slurm_end_time(END_TIME_TIMEOUT_S, &end, &source, why, sizeof(why));
	if (rc < 0 && rc != -ENOENT && !j->said_end_time) {
		LOG_WARN("no time limit from Slurm: %s", why);
		j->said_end_time = true;
	}
	if (rc == 1)
		*left = (double)end - util_wall_s();
	return rc;
}

void
job_ask_alloc_start(struct job *j)
{
	const char *id = getenv("SLURM_JOB_ID");
	char why[512] = "";
	time_t start, eligible;

	if (j->rank != 0 || !id || !*id)
		return;
	if (slurm_job_start_time(id, END_TIME_TIMEOUT_S, &start, &eligible, why, sizeof(why)) < 0) {
		LOG_WARN("no allocation start from Slurm (the gap before this attempt counts "
		         "the batch script's start too): %s", why);
		return;
	}
	j->alloc_start = (double)start;
	j->alloc_eligible = (double)eligible;
}

/* The coordinator, every END_TIME_EVERY_S: the end time again, in case it
 * moved, or went (TimeLimit=UNLIMITED); when Slurm does not answer, the
 * deadline it gave last stands. */
void
job_recheck_end_time(struct job *j, double now)
{
	double left = 0;
	int rc;

	if (j->next_end_time < 0 || now < j->next_end_time)
		return;
	rc = time_left(j, &left);
	if (rc == 1)  /* one already past ends the job now */
		coord_set_time_limit(j->coord, now + (left > 0 ? left : 0));
	else if (rc == 0)
		coord_set_time_limit(j->coord, -1);
	/* Slurm's limit can move while the job runs (scontrol update TimeLimit=) */
	j->next_end_time = j->o->time_limit_s <= 0 && getenv("SLURM_JOB_ID") ?
	                   now + END_TIME_EVERY_S : -1;
}

/* ---- the preparation (prep.h) -------------------------------------------------------- */

static void
prep_ended(void *arg)
{
	struct job *j = arg;

	if (j->phase != PH_HOOKS)
		return;
	j->exit_code = prep_exit_code(j->prep, j->exit_code);
	job_drain(j);
}

/* Staging or hooks: the prep, and when it has work before the gather, its phase. */
static int
begin(struct job *j)
{
	struct prep_opts po = {
		.run = j->o, .cfg = j->cfg, .node = j->name, .rank = j->rank, .size = j->size,
		.job_id = j->job_id, .sigmask = &j->oldmask, .self = j->self,
	};
	struct prep_ops ops = { job_send, survey_precheck, survey_prep_go, prep_ended, job_say,
	                        jobfiles_event, j };
	ssize_t n = readlink("/proc/self/exe", j->self, sizeof(j->self) - 1);

	j->self[n > 0 ? n : 0] = '\0';
	if (!prep_needed(j->o, j->cfg))
		return survey_gather(j);
	j->prep = prep_new(&po, j->loop, &ops);
	if (!j->prep)
		return -ENOMEM;
	if (!prep_before_gather(j->prep))
		return survey_gather(j);
	job_step(j, PE_PREP, -1, NULL);
	return prep_start(j->prep, job_now(j));
}

/* ---- the job ------------------------------------------------------------------------- */

/* Signals, MPI, the loop: everything the phases need. */
static int
set_up(struct job *j, int *argc, char ***argv)
{
	int rc;

	/* Before MPI_Init, so that the threads MPI starts inherit the mask
	 * and every handled signal waits in the signalfd for the loop. */
	rc = sig_block(&j->oldmask);
	if (rc == 0)
		rc = child_set_subreaper();
	if (rc < 0) {
		LOG_ERR("cannot set up signal handling: %s", strerror(-rc));
		return VIGIL_EXIT_INTERNAL;
	}
	/* The training gets a cgroup of its own where ours was delegated:
	 * nothing of it can then escape the end of the job. */
	if (child_cgroup_find(j->cgdir, sizeof(j->cgdir)) < 0)
		j->cgdir[0] = '\0';
	/* A reader of our output that goes away is lost output, counted and
	 * said, not a dead agent (and training): EPIPE instead of SIGPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	rc = peer_init(argc, argv, &j->p);
	if (rc < 0) {
		LOG_ERR("MPI initialisation failed");
		return VIGIL_EXIT_INTERNAL;
	}
	j->rank = peer_rank(j->p);
	j->size = peer_size(j->p);
	log_set_identity(j->name, peer_is_mpi(j->p) ? j->rank : -1);
	j->loop = loop_new();
	j->sigfd = sig_fd_open();
	if (!j->loop || j->sigfd < 0 || loop_add_fd(j->loop, j->sigfd, POLLIN, on_signal, j) < 0) {
		LOG_ERR("cannot set up the event loop");
		return VIGIL_EXIT_INTERNAL;
	}
	loop_set_before_poll(j->loop, before_poll, j);
	open_nudge(j);
	j->t0 = job_now(j);
	if (j->rank == 0)
		jobfiles_open_events(j);
	snprintf(j->job_id, sizeof(j->job_id), "%s",
	         getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
	if (!j->job_id[0])
		snprintf(j->job_id, sizeof(j->job_id), "%ld", (long)getpid());
	return 0;
}

int
job_new_node(struct job *j)
{
	struct node_opts no = {
		.run = j->o, .cfg = j->cfg, .name = j->name, .rank = j->rank, .start = j->t0,
		.sigmask = &j->oldmask, .heartbeat = j->rank != 0, .vendor = j->vendor,
		.slots = j->slots, .nslots = j->nslots, .cgroup = j->cgdir[0] ? j->cgdir : NULL,
	};
	struct node_ops ops = { node_send, line_to_perf, j };

	j->node = node_new(&no, j->loop, &ops);
	return j->node ? 0 : -ENOMEM;
}

/* The coordinator's abort: ABORT_WAIT_S for it, at most. */
#define ABORT_WAIT_S 15

void
job_abort_at_end(struct job *j, int told)
{
	if (!peer_is_mpi(j->p) || j->size < 2)
		return;
	j->abort_end = true;
	j->byes_due = told;
}

/* The coordinator: the BYEs of the nodes it told (DRAIN_MS at most), then
 * the job's end at mpirun with its status.  Does not return under MPI. */
static void
abort_job(struct job *j)
{
	double until = util_now_s() + DRAIN_MS / 1000.0;
	int src, tag, rc = 0;
	char *msg;

	while (j->byes < j->byes_due && util_now_s() < until && rc >= 0) {
		rc = peer_poll(j->p, &src, &tag, &msg);
		if (rc > 0) {
			j->byes += tag == MSG_BYE;
			free(msg);
		} else if (rc == 0) {
			(void)usleep(2000);
		}
	}
	if (j->byes < j->byes_due)
		LOG_WARN("%d of %d nodes did not say they were done within %d ms: ending the job",
		         j->byes_due - j->byes, j->byes_due, DRAIN_MS);
	LOG_INFO("ending the job at mpirun with status %d (MPI_Abort): a node was lost, so "
	         "no rank may MPI_Finalize", j->exit_code);
	peer_abort(j->p, j->exit_code);
	j->p = NULL;
}

/* Another node of such a job: BYE to the coordinator, LEADER (a successor
 * that took over, or rank 0), then its abort is waited for with the
 * signals' own actions back (mpirun's SIGTERM ends us). */
static void
await_abort(struct job *j, int leader)
{
	double until;
	int rc;

	if (peer_send(j->p, leader, MSG_BYE, "{}") < 0)
		return;
	(void)peer_push(j->p);
	until = util_now_s() + 2;
	while ((rc = peer_sent(j->p)) == 0 && util_now_s() < until)
		(void)usleep(2000);
	if (rc <= 0)
		return;
	(void)sigprocmask(SIG_SETMASK, &j->oldmask, NULL);
	until = util_now_s() + ABORT_WAIT_S;
	while (util_now_s() < until)
		(void)usleep(100000);
	LOG_WARN("the coordinator did not end the job within %d s: leaving", ABORT_WAIT_S);
}

static void
tear_down(struct job *j)
{
	int leader = job_coord_rank(j);  /* before the watch that knows it goes */

	if (j->node)
		node_output_summary(j->node);
	jobfiles_close_events(j);
	node_free(j->node);
	prep_free(j->prep);
	if (j->perf && !jobperf_idle(j->perf))
		j->clean = false;  /* MPI may still write its buffers */
	jobperf_free(j->perf);
	usage_free(j->usage);
	hangjob_free(j);
	coord_free(j->coord);
	incident_job_free(j->incidents);
	takeover_free(j);
	free(j->perf_tick);
	survey_free(j);
	if (j->sigfd >= 0)
		sig_fd_close(j->sigfd);
	nudge_free(j->nudge);
	loop_free(j->loop);
	if (j->p && !j->clean && j->abort_end)
		abort_job(j);
	else if (j->p && !j->clean && j->bye)
		await_abort(j, leader);
	if (j->p)
		peer_finalize(j->p, j->clean);
}

int
run_job(const struct run_opts *o, const struct config *cfg, int *argc, char ***argv)
{
	struct job job = { .o = o, .cfg = cfg, .sigfd = -1, .clean = true,
	                   .exit_code = VIGIL_EXIT_INTERNAL, .phase = PH_START };
	struct job *j = &job;
	char why[200];
	int rc;

	snprintf(j->name, sizeof(j->name), "%s", o->node ? o->node : "?");
	log_set_identity(j->name, -1);
	rc = set_up(j, argc, argv);
	if (rc != 0) {
		j->clean = false;
		tear_down(j);
		return rc;
	}
	/* A mode that cannot run on this many nodes is refused before any
	 * node stages or runs a hook for nothing; every rank decides alike,
	 * the coordinator says it. */
	if (mode_check_nodes(o->mode, o->ps, j->size, why, sizeof(why)) < 0) {
		if (j->rank == 0)
			fprintf(stderr, "vigil run: %s (one agent a node): %s\nTry `vigil run "
			        "--help'.\n", why, o->mode == MODE_SINGLE ?
			        "start one agent (mpirun -np 1), or choose another --mode" :
			        "start more agents, or give a smaller --ps");
		tear_down(j);
		return VIGIL_EXIT_USAGE;
	}
	/* Pre-check, gathered at the coordinator, which plans or refuses;
	 * with staging or hooks, this node's preparation first. */
	if (begin(j) < 0) {
		LOG_ERR("cannot send this node's report: out of memory");
		j->clean = false;
		tear_down(j);
		return VIGIL_EXIT_INTERNAL;
	}
	while (j->phase != PH_EXIT) {
		rc = loop_run_once(j->loop, -1);
		if (rc < 0) {
			LOG_ERR("poll: %s", strerror(-rc));
			job_leave(j, VIGIL_EXIT_INTERNAL, false);
		}
	}
	rc = j->exit_code;
	tear_down(j);
	return rc;
}
