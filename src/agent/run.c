/*
 * run.c - `vigil run` on every node: the wiring of one job, from the
 * pre-check to the exit status.
 *
 * The modules that do the work: node.c (this node's training, output,
 * signals, heartbeats, inspection), coord.c (rank 0's decisions: the
 * plan, stop, checkpoint, restart, the end), jobperf.c (timing
 * reductions and alerts), msg.c (what the agents say to each other).
 * This file owns the MPI peer, the loop and the signal descriptor, routes
 * each message once to the module it is for, and writes the job's files
 * at the end (report, exclude list, state).
 *
 * The job's phases here are the agent's, not the coordinator's:
 *
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
 *
 * Every wait is the loop's: a phase that waits on peers has a timer that
 * ends it, so a hung or lost node costs a timeout, never a hang, and
 * signals are served in every phase.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/node.h"
#include "agent/run.h"
#include "agent/watch.h"
#include "check/check.h"
#include "check/gather.h"
#include "comm/msg.h"
#include "comm/nudge.h"
#include "comm/peer.h"
#include "launch/child.h"
#include "lib/events.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/sig.h"
#include "lib/util.h"
#include "perf/jobperf.h"
#include "perf/usage.h"
#include "prep/hooks.h"
#include "prep/prep.h"
#include "prep/stage.h"
#include "proc/slurm.h"
#include "sys/topo.h"

extern char **environ;

#define PLAN_EXTRA_S 30      /* beyond the gather's timeout, a node waits this for the plan */
#define FINAL_REDUCE_MS 2000 /* the coordinator's last reduction, at most */
#define DRAIN_MS 5000        /* output, FINAL messages and reductions, at most */
#define IDLE_POLL_MS 80      /* how often an idle agent looks at MPI */
#define DUE_POLL_MS 5        /* ... when a message is due soon */
#define BUSY_POLL_MS 2       /* ... with messages in flight */
#define NUDGE_WINDOW_S 0.1   /* ... for this long after a nudge */
#define FINE_POLL_US 200     /* ... while the job's last reduction runs (before_poll()) */
#define FINE_POLL_S 0.1      /* ... for at most this long of it */
#define END_TIME_EVERY_S 60  /* how often the coordinator asks Slurm for the end time */
#define END_TIME_TIMEOUT_S 2 /* ... and how long it waits for the answer */
#define KILL_AFTER_S 5       /* beyond the grace: the training's KILL and its end */
#define ORPHAN_EXTRA_S 20    /* beyond that: how long an orphan waits for the successor */

enum phase { PH_GATHER, PH_PLAN, PH_DRYRUN, PH_RUN, PH_FINAL, PH_DRAIN, PH_HOLD, PH_EXIT,
             PH_PREP, PH_HOOKS };

struct job {
	const struct run_opts *o;
	const struct config *cfg;
	struct peer *p;
	int rank, size;
	char name[256];
	char job_id[64];
	struct loop *loop;
	int sigfd;
	struct nudge *nudge;         /* wake-ups beside messages; NULL without */
	char nudge_at[64];           /* where this agent's nudges arrive */
	bool look_now;               /* a message to itself waits in MPI */
	double nudged_until;         /* look at MPI often until then: a message is on its way */
	sigset_t oldmask;
	struct events *ev;
	bool said_events;
	int events_lost;             /* events the log could not take (a full disk) */
	double t0;                   /* the agent's start, on the loop's clock */
	enum phase phase;
	struct loop_timer *phase_timer;  /* ends the current phase if peers are late */

	char cgdir[4096];            /* a cgroup v2 directory delegated to us, or "" */
	char self[4096];             /* this program, for `vigil stage` */

	/* discovery and the gather */
	const char *vendor;
	struct slot *slots;
	size_t nslots;
	char *payload;
	struct peer_gather *pg;
	struct peer_bcast *bcast;    /* the plan, broadcast (send_plan()) */
	struct deferred {            /* what came while the plan was on its way */
		int src, tag;
		char *text;
	} *deferred;
	int ndeferred;
	char *description;           /* --dry-run */

	struct node *node;
	struct prep *prep;           /* staging and hooks (prep.h), NULL without them */
	struct coord *coord;         /* rank 0, or the successor after a takeover */
	struct jobperf *perf;
	struct usage *usage;         /* coordinator: what the trainings and boards use */
	double usage_next;           /* coordinator: the next "usage" event */
	char *perf_tick;             /* the encoded "perf" command */
	double next_end_time;        /* coordinator: next look at Slurm's end time; < 0 never */
	bool said_end_time;

	/* every other node: the watch on the coordinator (watch.c) */
	struct watch *watch;
	struct loop_timer *watch_timer;
	struct loop_timer *fine_timer;   /* wakes the loop for the next look at a reduction */
	char *plan_text;             /* the plan as it came, for a successor */
	char **early;                /* successor: results before the takeover, by rank */
	char lost_why[512];          /* why this node lost its coordinator */
	bool record;                 /* a record of this node's own is in place */

	int exit_code;
	bool clean;                  /* MPI_Finalize is safe */
	double hold;
};

static double
now_s(const struct job *j)
{
	return (double)loop_now(j->loop) / 1000.0;
}

/* ---- phases ------------------------------------------------------------------ */

static void enter(struct job *j, enum phase ph, long deadline_ms, loop_timer_fn *late);

/* The job ends here for this agent, with CODE. */
static void
leave(struct job *j, int code, bool clean)
{
	j->exit_code = code;
	j->clean = j->clean && clean;
	enter(j, PH_EXIT, -1, NULL);
}

/* ---- outputs: events, lines, files ------------------------------------------------- */

static void
job_event(void *arg, const char *node, int rank, const char *kind, const char *severity,
          const char *message, cJSON *details)
{
	struct job *j = arg;
	cJSON *e;
	int rc;

	if (!j->ev) {
		cJSON_Delete(details);
		return;
	}
	e = events_make(node, rank, kind, severity, message, details);
	if (!e)
		return;
	rc = events_write(j->ev, e);
	if (rc < 0)
		j->events_lost++;
	if (rc < 0 && !j->said_events) {
		LOG_ERR("cannot write the %s event to %s: %s; the log keeps whole events only, "
		        "and this one is not in it", kind, j->o->events, strerror(-rc));
		j->said_events = true;
	}
	cJSON_Delete(e);
}

static void
job_say(void *arg, const char *line)
{
	(void)arg;
	log_say("%s\n", line);
}

/* Write TEXT to PATH for the batch script; say so when it cannot be. */
static void
write_file(const char *what, const char *path, const char *text)
{
	int rc = util_write_atomic_str(path, text, 0644);

	if (rc < 0)
		LOG_ERR("cannot write the %s %s: %s", what, path, strerror(-rc));
}

/* ---- records: what an agent says when it ends without the coordinator's word ---- */

/* REPORT.NODE, beside the report; none without --report. */
static int
record_path(const struct job *j, char *buf, size_t len)
{
	int w;

	if (!j->o->report)
		return -ENOENT;
	w = snprintf(buf, len, "%s.%s", j->o->report, j->name);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/*
 * This node's own record: why it ends (or is about to) with CODE, for the
 * batch script when no report comes (the coordinator is gone, or mpirun
 * ended the job first).  Replaced as the story goes on; removed when the
 * coordinator's FINAL comes after all.
 */
static void
write_record(struct job *j, int code, const char *state, const char *why)
{
	char path[4400], ts[32];
	cJSON *r = cJSON_CreateObject();
	char *text;

	if (!r || record_path(j, path, sizeof(path)) < 0) {
		cJSON_Delete(r);
		return;
	}
	events_timestamp(ts, sizeof(ts));
	cJSON_AddStringToObject(r, "state", state);
	cJSON_AddNumberToObject(r, "exit_code", code);
	cJSON_AddStringToObject(r, "node", j->name);
	cJSON_AddNumberToObject(r, "rank", j->rank);
	cJSON_AddStringToObject(r, "time", ts);
	cJSON_AddStringToObject(r, "reason", why);
	if (j->node)
		cJSON_AddStringToObject(r, "coordinator", node_host(j->node, 0));
	cJSON_AddBoolToObject(r, "resume", j->o->resume);
	text = json_print(r, true);
	cJSON_Delete(r);
	if (text) {
		write_file("record", path, text);
		j->record = true;
	}
	free(text);
}

static void
remove_record(struct job *j)
{
	char path[4400];

	if (j->record && record_path(j, path, sizeof(path)) == 0)
		(void)unlink(path);  /* the report stands; a stale record only misleads */
	j->record = false;
}

/* The rank this node's messages go to: the coordinator, or its successor. */
static int
coord_rank(const struct job *j)
{
	return j->watch ? watch_coordinator(j->watch) : 0;
}

static void
write_report(struct job *j, double now)
{
	cJSON *r = coord_report(j->coord, now), *cmd, *perf;
	char ts[32];
	char *text;

	if (!r) {
		LOG_ERR("cannot write the report %s: out of memory", j->o->report);
		return;
	}
	events_timestamp(ts, sizeof(ts));
	cJSON_AddStringToObject(r, "mode", mode_name(j->o->mode));
	cmd = cJSON_AddArrayToObject(r, "command");
	for (int i = 0; cmd && j->o->cmd[i]; i++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(j->o->cmd[i]));
	cJSON_AddStringToObject(r, "ended", ts);
	perf = j->perf ? jobperf_report(j->perf) : NULL;
	if (perf)
		cJSON_AddItemToObject(r, "performance", perf);
	perf = j->usage ? usage_summary(j->usage) : NULL;
	if (perf)
		cJSON_AddItemToObject(r, "usage", perf);
	perf = prep_report(j->prep);
	if (perf)
		cJSON_AddItemToObject(r, "staging", perf);
	/* a reader (the batch script) never sees half a report */
	text = json_print(r, true);
	cJSON_Delete(r);
	if (text)
		write_file("report", j->o->report, text);
	else
		LOG_ERR("cannot write the report %s: out of memory", j->o->report);
	free(text);
}

/* Earlier requeues of this job: Slurm's count, else the state file's. */
static int
resumes_so_far(const struct run_opts *o)
{
	const char *env = getenv("SLURM_RESTART_COUNT");
	char buf[256];
	FILE *f;
	int n = 0;

	if (env && *env)
		return atoi(env);
	if (!o->state_file || !(f = fopen(o->state_file, "r")))
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		cJSON *st = cJSON_Parse(buf);

		n = (int)json_int(st, "resumes", 0, 1000000, 0);
		cJSON_Delete(st);
	}
	fclose(f);
	return n;
}

/* The coordinator's files, before FINAL lets the others go: if mpirun then
 * crashes or hangs, what vigil decided is already written. */
static void
write_job_files(struct job *j, double now)
{
	int code = coord_exit_code(j->coord);

	if (j->o->report)
		write_report(j, now);
	if (j->perf)
		jobperf_metrics(j->perf, coord_state(j->coord), (unsigned)coord_up(j->coord),
		                (unsigned)coord_nlost(j->coord), true, now);
	if (j->o->exclude_file) {
		/* for sbatch --exclude: the nodes to avoid next time, one a line */
		char *list = coord_exclude_list(j->coord);

		if (list)
			write_file("exclude list", j->o->exclude_file, list);
		free(list);
	}
	if (code == VIGIL_EXIT_REQUEUE && j->o->state_file) {
		char st[64];

		snprintf(st, sizeof(st), "{\"resumes\": %d}\n", resumes_so_far(j->o) + 1);
		write_file("state file", j->o->state_file, st);
	}
}

/* ---- what the trainings and boards use ------------------------------------------- */

/* How often the coordinator records the ranges so far in the event log. */
#define USAGE_EVENT_S 300

/* A node's note said what it uses: into the metrics and the ranges. */
static void
take_usage(struct job *j, int src, const cJSON *u, double now)
{
	const char *node = coord_host(j->coord, src);

	if (!j->usage && !(j->usage = usage_new(j->size)))
		return;
	if (usage_take(j->usage, j->perf ? jobperf_metrics_store(j->perf) : NULL, src,
	               node ? node : "?", u, now) == -EINVAL)
		LOG_WARN("ignoring the usage rank %d sent: not an object", src);
}

/* The ranges so far as a "usage" event: every USAGE_EVENT_S while notes
 * come, and at the end (FORCE). */
static void
usage_event(struct job *j, double now, bool force)
{
	cJSON *d;
	char line[512];
	const char *node;

	if (!j->usage || !usage_changed(j->usage) || (!force && now < j->usage_next))
		return;
	j->usage_next = now + USAGE_EVENT_S;
	d = usage_summary(j->usage);
	if (!d)
		return;
	usage_describe(d, line, sizeof(line));
	node = coord_host(j->coord, j->rank);
	job_event(j, node ? node : "?", j->rank, VIGIL_EVENT_USAGE, VIGIL_SEVERITY_INFO, line, d);
}

/* ---- the coordinator's end of the job --------------------------------------------- */

static void drain(struct job *j);

static long
on_hooks_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_WARN("the end hooks did not end in time: leaving them");
	drain(j);
	return LOOP_NOMORE;
}

/* The job's status is known: the requeue and end hooks (prep.h), then the drain. */
static void
end_hooks(struct job *j, const char *state)
{
	int rc = j->prep ? prep_end(j->prep, state, j->exit_code) : 0;

	if (rc <= 0) {
		if (rc < 0)
			LOG_ERR("cannot run the end hooks: out of memory");
		j->exit_code = prep_exit_code(j->prep, j->exit_code);  /* a checkpoint hook's */
		drain(j);
		return;
	}
	enter(j, PH_HOOKS, (long)((prep_time_left(j->prep) + 5) * 1000), on_hooks_late);
}

/* Every result is in and the last reduction done (or given up): the end. */
static void
conclude(struct job *j)
{
	double now = now_s(j);

	if (j->perf && j->o->summary_s > 0)
		jobperf_summary(j->perf);
	usage_event(j, now, true);
	write_job_files(j, now);
	remove_record(j);  /* the report speaks for this node too */
	coord_finish(j->coord, j->perf ? jobperf_cycles(j->perf) : 0, now);
	j->exit_code = coord_exit_code(j->coord);
	j->hold = coord_hold(j->coord);
	j->clean = j->clean && coord_finalize_safe(j->coord);
	end_hooks(j, coord_state(j->coord));
}

static long
on_final_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_WARN("the last timing reduction did not complete within %d ms", FINAL_REDUCE_MS);
	conclude(j);
	return LOOP_NOMORE;
}

/*
 * The node's attempt (the launch's, or a restart's) to performance
 * detection: its reductions among the attempt's members, and in Horovod
 * mode the inner mpirun's processes counted for the members that run
 * them (their slots, -map-by slot).
 */
static void
perf_attempt(struct job *j)
{
	struct jobperf_attempt a = { .attempt = node_attempt(j->node), .trains = node_trains(j->node) };
	int *procs = NULL;

	if (!j->perf)
		return;
	a.nmembers = node_members(j->node, &a.members);
	if (j->o->mode == MODE_HOROVOD) {
		procs = calloc(a.nmembers > 0 ? (size_t)a.nmembers : 1, sizeof(*procs));
		for (int i = 0; procs && i < a.nmembers; i++)
			procs[i] = node_member_slots(j->node, i);
		a.procs = procs;
	}
	if ((j->o->mode == MODE_HOROVOD && !procs) || jobperf_set_attempt(j->perf, &a) < 0) {
		LOG_WARN("performance detection cannot follow attempt %d: out of memory",
		         a.attempt);
		jobperf_set_trains(j->perf, a.trains);
	}
	free(procs);
}

/*
 * Whether the last reduction would wait for a lost node: the first
 * attempt's are collectives over every rank, a restart's are among its
 * members only (jobperf_set_attempt()).
 */
static bool
final_waits_on_lost(const struct job *j)
{
	const int *members;
	int n;

	if (coord_nlost(j->coord) == 0)
		return false;
	if (!j->node || node_attempt(j->node) == 0)
		return true;
	n = node_members(j->node, &members);
	for (int i = 0; i < n; i++)
		if (coord_lost(j->coord, members[i]))
			return true;
	return false;
}

/* The coordinator reached FINISHING: one more reduction for the last iterations. */
static void
finishing(struct job *j)
{
	/* A lost node would never join it. */
	if (!j->perf || jobperf_broken(j->perf) || final_waits_on_lost(j)) {
		conclude(j);
		return;
	}
	jobperf_final(j->perf);
	enter(j, PH_FINAL, FINAL_REDUCE_MS, on_final_late);
}

/* After every input: has the coordinator moved to the end? */
static void
coordinator_check(struct job *j)
{
	if (j->phase != PH_RUN || !j->coord)
		return;
	if (coord_phase(j->coord) == COORD_FINISHING)
		finishing(j);
}

/* ---- messages --------------------------------------------------------------------- */

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

	return send_to(j, coord_rank(j), kind, text);
}

static int
coord_send(void *arg, int rank, enum msg_kind kind, const char *text)
{
	return send_to(arg, rank, kind, text);
}

/* Nudges arrived: the loop looks at MPI now, and often for a while, since
 * a datagram may overtake the message it announces (a connection MPI opens
 * on first use, a sender that progresses its queue a little later). */
static void
on_nudge(struct loop *l, int fd, short revents, void *arg)
{
	struct job *j = arg;

	(void)l;
	(void)fd;
	(void)revents;
	if (nudge_drain(j->nudge) > 0)
		j->nudged_until = now_s(j) + NUDGE_WINDOW_S;
}

/* This agent's nudge socket (nudge.h); without one, MPI is looked at on
 * the loop's schedule alone. */
static void
open_nudge(struct job *j)
{
	int rc;

	if (j->size < 2 || !peer_is_mpi(j->p) || j->o->no_nudge)
		return;
	rc = nudge_open(j->size, &j->nudge);
	if (rc == 0 && (rc = loop_add_fd(j->loop, nudge_fd(j->nudge), POLLIN, on_nudge, j)) == 0)
		rc = nudge_self(j->nudge, j->name, j->nudge_at, sizeof(j->nudge_at));
	if (rc < 0) {
		LOG_INFO("no nudges between agents (%s): MPI is looked at every %d ms",
		         strerror(-rc), IDLE_POLL_MS);
		if (j->nudge)
			(void)loop_del_fd(j->loop, nudge_fd(j->nudge));
		nudge_free(j->nudge);
		j->nudge = NULL;
	}
}

static void take_plan(struct job *j, const struct msg_plan *plan);

static void
take_final(struct job *j, const struct msg_final *f)
{
	if (j->phase != PH_RUN)
		return;
	j->exit_code = f->exit_code;
	j->clean = j->clean && f->finalize;
	j->hold = f->hold;
	remove_record(j);
	if (j->perf)
		jobperf_set_due(j->perf, f->cycles);
	end_hooks(j, f->state);
}

static void watch_act(struct job *j, enum watch_action a, double now);

/* The successor, before it takes over: the results that reach it early.  A
 * node that lost the coordinator sooner sends its result here before this
 * node lost it too; only such a node sends one here, so each is kept. */
static void
keep_early(struct job *j, int src, const char *text)
{
	if (!j->watch || j->rank != watch_successor(j->watch))
		return;
	if (!j->early)
		j->early = calloc((size_t)j->size, sizeof(*j->early));
	if (j->early && src >= 0 && src < j->size && !j->early[src])
		j->early[src] = strdup(text);
}

static void
defer(struct job *j, int src, int tag, const char *text)
{
	struct deferred *d = realloc(j->deferred, (size_t)(j->ndeferred + 1) * sizeof(*d));

	if (!d || !(d[j->ndeferred].text = strdup(text))) {
		if (d)
			j->deferred = d;
		LOG_ERR("out of memory: a message from rank %d is lost", src);
		return;
	}
	j->deferred = d;
	d[j->ndeferred].src = src;
	d[j->ndeferred].tag = tag;
	j->ndeferred++;
}

static void route(struct job *j, int src, int tag, const char *text);

/* The node runs: what came before the plan, in the order it came. */
static void
replay_deferred(struct job *j)
{
	struct deferred *d = j->deferred;
	int n = j->ndeferred;

	j->deferred = NULL;
	j->ndeferred = 0;
	for (int i = 0; i < n; i++) {
		if (j->phase != PH_EXIT)
			route(j, d[i].src, d[i].tag, d[i].text);
		free(d[i].text);
	}
	free(d);
}

/* One message, decoded once, to the module it is for. */
static void
route(struct job *j, int src, int tag, const char *text)
{
	struct msg m;
	double now = now_s(j);
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
		defer(j, src, tag, text);
		msg_clear(&m);
		return;
	}
	if (j->coord)
		coord_heard(j->coord, src, now);
	if (j->watch)
		watch_heard(j->watch, src, now);
	switch (m.kind) {
	case MSG_PLAN:
		if (j->phase == PH_PLAN && src == 0 && !j->bcast) {
			if (m.u.plan.bcast > 0) {
				/* the header: the plan itself comes as a broadcast */
				if (peer_bcast_start(j->p, NULL, (size_t)m.u.plan.bcast, &j->bcast) < 0) {
					LOG_ERR("cannot take part in the plan's broadcast");
					leave(j, VIGIL_EXIT_INTERNAL, false);
				}
				break;
			}
			j->plan_text = strdup(text);  /* for a successor; none is fine */
			take_plan(j, &m.u.plan);
		}
		break;
	case MSG_RESULT:
		if (j->coord)
			coord_result(j->coord, src, &m.u.result, now);
		else
			keep_early(j, src, text);
		break;
	case MSG_NOTE:
		if (j->coord)
			coord_note(j->coord, src, &m.u.note, now);
		if (j->coord && m.u.note.usage)
			take_usage(j, src, m.u.note.usage, now);
		break;
	case MSG_COMMAND:
		if (src != coord_rank(j))
			break;
		if (m.u.command.command == MSG_CMD_PERF) {
			if (j->perf && j->rank != 0)
				jobperf_ticked(j->perf);
		} else if (j->node && j->phase == PH_RUN) {
			if (m.u.command.command == MSG_CMD_CHECKPOINT)
				prep_checkpoint(j->prep, m.u.command.reason);
			node_command(j->node, &m.u.command);
			if (m.u.command.command == MSG_CMD_RESTART)
				perf_attempt(j);
		}
		break;
	case MSG_FINAL:
		if (src == coord_rank(j))
			take_final(j, &m.u.final);
		break;
	case MSG_SUSPECT:
		if (j->watch)
			watch_act(j, watch_suspect(j->watch, src, now), now);
		break;
	case MSG_PREP:
		if (j->phase == PH_PREP)
			prep_message(j->prep, src, &m.u.prep, now);
		break;
	case MSG_HEARTBEAT:
		break;
	}
	msg_clear(&m);
}

/* Every message that has arrived, then what is due on the coordinator. */
static int
route_all(struct job *j)
{
	int src, tag, rc;
	char *text;

	j->look_now = false;
	/* not once a gather began: its messages are not ours to take (peer.h) */
	while (j->phase != PH_EXIT && j->phase != PH_GATHER && j->phase != PH_DRYRUN &&
	       (rc = peer_poll(j->p, &src, &tag, &text)) == 1) {
		j->nudged_until = 0;  /* what a nudge announced has come */
		route(j, src, tag, text);
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

static void gather_progress(struct job *j);
static void bcast_progress(struct job *j);
static void recheck_end_time(struct job *j, double now);

static long
before_poll(struct loop *l, void *arg)
{
	struct job *j = arg;
	double now = now_s(j);
	long wait = -1, w;

	(void)l;
	if (j->bcast)
		bcast_progress(j);
	/* While a gather runs, no point-to-point message is due, and looking
	 * for one would take the gather's (peer.h). */
	if (j->phase == PH_GATHER || j->phase == PH_DRYRUN)
		gather_progress(j);
	/* Messages first: the coordinator judges silence only after reading
	 * what has arrived. */
	else if (j->phase != PH_EXIT && route_all(j) < 0) {
		LOG_ERR("MPI failed while the job ran");
		leave(j, VIGIL_EXIT_INTERNAL, false);
	}
	if (j->phase == PH_RUN && j->coord) {
		double next;

		recheck_end_time(j, now);
		next = coord_tick(j->coord, now);

		coordinator_check(j);
		if (next >= 0)
			wait = next <= now ? 0 : (long)((next - now) * 1000) + 1;
	}
	if (j->perf && (j->phase == PH_RUN || j->phase == PH_FINAL || j->phase == PH_DRAIN)) {
		w = jobperf_cycle(j->perf, now, j->phase == PH_RUN);
		if (w >= 0 && (wait < 0 || w < wait))
			wait = w;
		if (j->coord && j->phase == PH_RUN)
			jobperf_metrics(j->perf, VIGIL_STATE_RUNNING, (unsigned)coord_up(j->coord),
			                (unsigned)coord_nlost(j->coord), false, now);
		if (j->coord && j->phase == PH_RUN)
			usage_event(j, now, false);
	}
	if (j->phase != PH_EXIT)
		fine_poll(j, now);
	if (j->phase == PH_FINAL && jobperf_idle(j->perf)) {
		loop_del_timer(j->loop, j->phase_timer);
		j->phase_timer = NULL;
		conclude(j);
	}
	if (j->phase == PH_DRAIN)
		drain(j);
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
			leave(j, 128 + sig, false);
			continue;
		}
		if (stopper && j->phase == PH_HOLD) {
			enter(j, PH_EXIT, -1, NULL);
			continue;
		}
		if (stopper && j->phase == PH_HOOKS) {
			drain(j);  /* the hooks are killed on the way out */
			continue;
		}
		if (sig == SIGCHLD && !j->node)
			(void)child_reap(NULL);  /* hooks and staging keepers (runner.h) */
		if (sig == SIGTERM && j->phase == PH_RUN)
			write_record(j, j->o->resume ? VIGIL_EXIT_REQUEUE : 128 + sig,
			             VIGIL_STATE_STOPPED, j->o->resume ?
			             "SIGTERM: mpirun or the batch system ends the job; the training was "
			             "told to save first (--resume)" :
			             "SIGTERM: mpirun or the batch system ends the job");
		if (j->node)
			node_signal(j->node, sig);
	}
}

/* ---- the coordinator's silence (every other node) ----------------------------------- */

static struct coord *new_coord(struct job *j, int self);

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
	write_record(j, code, VIGIL_STATE_ERROR, why);
	j->exit_code = code;
	j->clean = false;
	drain(j);
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
	write_record(j, j->o->resume ? VIGIL_EXIT_REQUEUE : VIGIL_EXIT_INTERNAL,
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
	enter(j, PH_RUN, (long)((j->o->grace_s + KILL_AFTER_S + ORPHAN_EXTRA_S +
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
	j->coord = new_coord(j, j->rank);
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
	coordinator_check(j);
}

static void
watch_act(struct job *j, enum watch_action a, double now)
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
		enter(j, PH_RUN, (long)((j->o->grace_s + KILL_AFTER_S) * 1000), on_orphan_late);
		break;
	case WATCH_NONE:
		break;
	}
}

static long
on_watch(struct loop *l, void *arg)
{
	struct job *j = arg;
	double now = now_s(j);
	enum watch_action a;

	(void)l;
	if (j->phase != PH_RUN || j->coord) {
		j->watch_timer = NULL;
		return LOOP_NOMORE;
	}
	/* what has arrived first: silence is judged on what was read */
	if (route_all(j) < 0)
		return (long)(j->o->heartbeat_s * 500);
	while (j->phase == PH_RUN && !j->coord && (a = watch_tick(j->watch, now)) != WATCH_NONE)
		watch_act(j, a, now);
	return (long)(j->o->heartbeat_s * 500);
}

/* Every other node watches the coordinator from the launch on. */
static int
start_watch(struct job *j)
{
	struct watch_opts wo = {
		.self = j->rank, .size = j->size, .coordinator = 0,
		.heartbeat_s = j->o->heartbeat_s, .heartbeat_timeout_s = j->o->heartbeat_timeout_s,
	};

	if (j->rank == 0 || j->size < 2)
		return 0;
	j->watch = watch_new(&wo, now_s(j));
	if (!j->watch)
		return -ENOMEM;
	j->watch_timer = loop_add_timer(j->loop, (long)(j->o->heartbeat_s * 500), on_watch, j);
	return j->watch_timer ? 0 : -ENOMEM;
}

/* ---- the end of the job on every node ------------------------------------------------ */

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
	j->phase = PH_DRAIN;  /* done waiting: go on as if drained */
	if (j->hold > 0)
		enter(j, PH_HOLD, (long)(j->hold * 1000), NULL);
	else
		enter(j, PH_EXIT, -1, NULL);
	return LOOP_NOMORE;
}

/*
 * The job is over for this agent: its training's output reaches our own,
 * the FINAL messages leave, the reductions the coordinator started are
 * finished (MPI_Finalize waits for them otherwise), a notifier started
 * for the last alert finishes; bounded by DRAIN_MS.
 */
static void
drain(struct job *j)
{
	if (j->phase != PH_DRAIN) {
		if (j->node)
			node_quiet(j->node);
		enter(j, PH_DRAIN, DRAIN_MS, on_drain_late);
	}
	if ((j->node && node_output_pending(j->node)) || (j->coord && peer_busy(j->p)) ||
	    (j->perf && j->clean && !jobperf_idle(j->perf)) ||
	    (j->perf && j->rank == 0 && jobperf_notifying(j->perf)))
		return;
	loop_del_timer(j->loop, j->phase_timer);
	j->phase_timer = NULL;
	if (j->hold > 0)
		enter(j, PH_HOLD, (long)(j->hold * 1000), NULL);
	else
		enter(j, PH_EXIT, -1, NULL);
}

static long
on_hold_over(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	enter(j, PH_EXIT, -1, NULL);
	return LOOP_NOMORE;
}

/* Change phase; DEADLINE_MS >= 0 arms LATE (or the default) to end it. */
static void
enter(struct job *j, enum phase ph, long deadline_ms, loop_timer_fn *late)
{
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
			j->phase = ph = PH_EXIT;
		}
	}
	if (ph == PH_EXIT)
		loop_stop(j->loop);
}

/* ---- start-up: what this node is ------------------------------------------------------ */

/*
 * A port free on this node now, for MASTER_PORT, as torchrun picks one:
 * bind to port 0 and let the kernel choose.  The socket is closed at once
 * (vigil keeps no port of its own); the training binds it moments later.
 */
static int
free_port(void *arg)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -errno;

	(void)arg;
	if (fd < 0)
		return port;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	else
		port = -errno;
	close(fd);
	return port;
}

/*
 * Discover and pre-check this node; the payload for the coordinator:
 * gather_payload() plus the launch facts {"addr", "slots", "vendor"}.
 */
static char *
survey(struct job *j)
{
	struct check_report report = { 0 };
	struct topo *t = NULL;
	char error[512] = "", addr[256];
	char *base, *text = NULL;
	cJSON *o;
	int rc;

	rc = topo_load(j->o->topology, &t);
	if (rc == 0)
		rc = topo_slots(t, &j->slots, &j->nslots);
	topo_free(t);
	if (rc < 0) {
		snprintf(error, sizeof(error), "slots: discovery failed: %s", strerror(-rc));
	} else {
		if (j->nslots > 0)
			j->vendor = slot_vendor_name(j->slots[0].vendor);
		if (j->o->precheck) {
			struct check_ctx ctx = {
				.cfg = j->cfg, .slots = j->slots, .nslots = j->nslots, .all = true,
			};

			rc = check_run(&ctx, &report);
			if (rc < 0)
				snprintf(error, sizeof(error), "cannot run the pre-check on %s: %s",
				         j->cfg->sysfs_root, strerror(-rc));
		}
	}
	base = gather_payload(j->name, j->rank, &report, error[0] ? error : NULL);
	check_report_free(&report);
	o = base ? cJSON_Parse(base) : NULL;
	free(base);
	if (!o)
		return NULL;
	util_local_address(j->name, false, addr, sizeof(addr));
	cJSON_AddStringToObject(o, "addr", addr);
	cJSON_AddNumberToObject(o, "slots", (double)j->nslots);
	if (j->nudge)
		cJSON_AddStringToObject(o, "nudge", j->nudge_at);
	if (j->vendor)
		cJSON_AddStringToObject(o, "vendor", j->vendor);
	text = json_print(o, false);
	cJSON_Delete(o);
	return text;
}

/* ---- start-up: the gather and the plan ---------------------------------------------- */

static void plan(struct job *j, bool complete);
static void dry_run_done(struct job *j, bool complete);
static long on_plan_late(struct loop *l, void *arg);

/* A phase's gather (GATHER or DRYRUN) is complete or timed out. */
static void
gather_end(struct job *j, bool complete)
{
	if (j->phase == PH_DRYRUN) {
		dry_run_done(j, complete);
		return;
	}
	if (j->rank == 0) {
		plan(j, complete);
		return;
	}
	if (!complete) {
		LOG_ERR("the coordinator did not take this node's report within %.0f s",
		        j->cfg->gather_timeout_s);
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	enter(j, PH_PLAN, (long)((j->cfg->gather_timeout_s + PLAN_EXTRA_S) * 1000), on_plan_late);
}

static long
on_gather_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	gather_end(j, false);
	return LOOP_NOMORE;
}

static void
gather_progress(struct job *j)
{
	int rc = peer_gather_progress(j->pg);

	if (rc < 0) {
		LOG_ERR("MPI error while gathering reports");
		leave(j, VIGIL_EXIT_INTERNAL, false);
	} else if (rc == 1) {
		loop_del_timer(j->loop, j->phase_timer);
		j->phase_timer = NULL;
		gather_end(j, true);
	}
}

/* Start gathering TEXT at the coordinator, in phase PH, within the gather timeout. */
static int
start_gather(struct job *j, enum phase ph, const char *text)
{
	peer_gather_free(j->pg);
	j->pg = NULL;
	if (peer_gather_start(j->p, text, &j->pg) < 0)
		return -ENOMEM;
	enter(j, ph, (long)(j->cfg->gather_timeout_s * 1000), on_gather_late);
	return 0;
}

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

	coord_alert(j->coord, rank, message, now_s(j));
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

/* The node's side, performance detection, and off it goes. */
static void
launch(struct job *j)
{
	struct jobperf_ops po = { tick_send, perf_alert, perf_host, job_event, job_say, j };
	struct msg m = { .kind = MSG_COMMAND };
	int rc;

	if (j->o->dry_run) {
		j->description = node_describe(j->node);
		if (!j->description || start_gather(j, PH_DRYRUN, j->description) < 0)
			leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	m.u.command.command = MSG_CMD_PERF;
	j->perf_tick = msg_encode(&m);
	j->perf = jobperf_new(j->o, j->p, j->rank, j->size, &po, now_s(j));
	if (!j->perf || !j->perf_tick) {
		LOG_ERR("out of memory");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	enter(j, PH_RUN, -1, NULL);
	rc = start_watch(j);
	if (rc == 0)
		rc = node_launch(j->node);
	if (rc < 0) {
		LOG_ERR("cannot start this node's part of the job: %s", strerror(-rc));
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	perf_attempt(j);
}

/* A node: the coordinator's plan came. */
static void
take_plan(struct job *j, const struct msg_plan *p)
{
	if (!p->finalize)
		j->clean = false;
	if (!p->go) {
		leave(j, p->exit_code, j->clean);
		return;
	}
	if (node_take_plan(j->node, p) < 0) {
		LOG_ERR("out of memory");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	if (j->nudge && p->nudge)
		(void)nudge_set(j->nudge, coord_rank(j), p->nudge);
	launch(j);
}

/* The plan's broadcast: the coordinator lets its buffer go, a node takes the plan. */
static void
bcast_progress(struct job *j)
{
	const char *text;
	struct msg m;
	size_t len;
	int rc = peer_bcast_test(j->bcast);

	if (rc == 0)
		return;
	if (rc < 0) {
		LOG_ERR("MPI error in the plan's broadcast");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	text = peer_bcast_data(j->bcast);
	len = peer_bcast_len(j->bcast);
	if (j->rank != 0 && j->phase == PH_PLAN) {
		/* the coordinator sends the plan's text with its NUL */
		if (len == 0 || text[len - 1] != '\0' ||
		    msg_decode(MSG_PLAN, text, j->size, &m) < 0 || m.u.plan.bcast) {
			LOG_ERR("the plan's broadcast is malformed");
			leave(j, VIGIL_EXIT_INTERNAL, false);
		} else {
			j->plan_text = strdup(text);  /* for a successor; none is fine */
			peer_bcast_free(j->bcast);
			j->bcast = NULL;
			take_plan(j, &m.u.plan);
			msg_clear(&m);
			replay_deferred(j);
			return;
		}
	}
	peer_bcast_free(j->bcast);
	j->bcast = NULL;
}

static long
on_plan_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_ERR("no plan from the coordinator");
	leave(j, VIGIL_EXIT_INTERNAL, false);
	return LOOP_NOMORE;
}

/* The coordinator's record of each rank's address and slots, from its payload. */
static int
take_payloads(struct job *j, struct gather *g)
{
	int rc = gather_init(g, j->size);

	for (int r = 0; rc == 0 && r < j->size; r++) {
		const char *payload = peer_gather_get(j->pg, r);
		cJSON *info = payload ? cJSON_Parse(payload) : NULL;

		rc = gather_add(g, r, payload, j->cfg->gather_timeout_s);
		if (rc == 0)
			rc = coord_set_node(j->coord, r, json_str(info, "addr", NULL),
			                    (int)json_int(info, "slots", 0, 1000000, 0));
		if (rc == 0 && j->nudge && r != j->rank)
			(void)nudge_set(j->nudge, r, json_str(info, "nudge", NULL));
		cJSON_Delete(info);
	}
	if (rc == 0)
		gather_consistency(g);
	return rc;
}

static struct coord *
new_coord(struct job *j, int self)
{
	struct coord_opts co = {
		.size = j->size, .self = self,
		/* staging and hook failures are pre-check failures, even with --precheck off */
		.precheck = j->o->precheck || prep_before_gather(j->prep),
		.precheck_level = j->o->precheck_level, .verbose = j->o->verbose,
		.resume = j->o->resume, .restart_max = j->o->restart_max,
		.min_nodes = j->o->min_nodes, .max_resumes = j->o->max_resumes,
		.resumes_done = resumes_so_far(j->o), .perf_reschedule = j->o->perf_reschedule,
		.grace_s = j->o->grace_s, .heartbeat_s = j->o->heartbeat_s,
		.heartbeat_timeout_s = j->o->heartbeat_timeout_s, .ckpt_lead_s = j->o->ckpt_lead_s,
		.hold_s = j->o->hold_s, .master_addr = j->o->master_addr,
		.master_port = j->o->master_port, .job_id = getenv("SLURM_JOB_ID"),
		.unique_hosts = j->o->mode == MODE_DEEPSPEED || j->o->mode == MODE_HOROVOD,
	};
	struct coord_ops ops = { coord_send, job_event, job_say, free_port, j };

	return coord_new(&co, &ops, j->t0);
}

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
		*left = j->o->time_limit_s - (now_s(j) - j->t0);
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

/* The coordinator, every END_TIME_EVERY_S: the end time again, in case it
 * moved, or went (TimeLimit=UNLIMITED); when Slurm does not answer, the
 * deadline it gave last stands. */
static void
recheck_end_time(struct job *j, double now)
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

/*
 * The plan to every node that reported.  It names every node, so its size
 * grows with the job: when every rank reported (all are waiting for it),
 * each gets a small header and the plan follows as one broadcast, a tree
 * in which the coordinator sends O(log N) copies instead of N.  A rank that
 * never reported might hold back its part of the tree: then the plan goes
 * to each reporting node in turn, from one buffer.
 */
static void
send_plan(struct job *j, const struct msg_plan *p, const char *text, bool complete)
{
	struct msg h = { .kind = MSG_PLAN };
	size_t len = strlen(text) + 1;
	char *head = NULL;

	/* (and only once a broadcast cannot cross the making of the
	 * reductions' communicator: peer_world_ready()) */
	if (complete && p->go && j->size > 1 && peer_world_ready(j->p)) {
		h.u.plan.go = true;
		h.u.plan.job = p->job;
		h.u.plan.finalize = p->finalize;
		h.u.plan.bcast = (long)len;
		head = msg_encode(&h);
	}
	for (int r = 1; r < j->size; r++)
		if (peer_gather_get(j->pg, r))
			(void)peer_send(j->p, r, MSG_PLAN, head ? head : text);
	if (head && peer_bcast_start(j->p, text, len, &j->bcast) < 0) {
		LOG_ERR("cannot broadcast the plan: the nodes will give up waiting for it");
		j->clean = false;
	}
	free(head);
}

/* The coordinator: go or no-go, the plan to every node that reported. */
static void
plan(struct job *j, bool complete)
{
	struct gather g = { 0 };
	struct msg m = { .kind = MSG_PLAN };
	double now = now_s(j);
	char *text = NULL;
	int rc;

	j->coord = new_coord(j, 0);
	rc = j->coord ? take_payloads(j, &g) : -ENOMEM;
	if (rc == 0 && j->o->precheck && j->ev && (rc = gather_write_events(&g, j->ev)) < 0) {
		LOG_ERR("cannot write events to %s: %s", j->o->events, strerror(-rc));
		rc = 0;
	}
	if (rc == 0)
		rc = coord_plan(j->coord, &g, now, &m.u.plan);
	gather_free(&g);
	if (rc < 0) {
		LOG_ERR("out of memory");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	/* one name for this job's files, the same on every node */
	m.u.plan.job = j->job_id;
	m.u.plan.finalize = m.u.plan.finalize && complete;
	m.u.plan.nudge = j->nudge ? j->nudge_at : NULL;
	text = msg_encode(&m);
	if (text)
		send_plan(j, &m.u.plan, text, complete);
	free(text);
	if (!complete)
		j->clean = false;
	if (!m.u.plan.go) {
		if (j->o->report)
			write_report(j, now);
		leave(j, m.u.plan.exit_code, j->clean);
		return;
	}
	if (!j->o->dry_run) {
		log_say("vigil: %s training on %d node%s, master %s:%d: %s\n", mode_name(j->o->mode),
		        m.u.plan.nmembers, j->size == 1 ? "" : "s", m.u.plan.master_addr,
		        m.u.plan.master_port, j->o->cmd[0]);
		job_event(j, j->name, 0, VIGIL_EVENT_LAUNCH, VIGIL_SEVERITY_INFO,
		          "starting the training", NULL);
	}
	j->next_end_time = now;  /* the time limit now, then as it moves */
	recheck_end_time(j, now);
	if (node_take_plan(j->node, &m.u.plan) < 0) {
		LOG_ERR("out of memory");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	launch(j);
}

/* --dry-run: every node's description arrived (or not); the coordinator prints them. */
static void
dry_run_done(struct job *j, bool complete)
{
	int code = VIGIL_EXIT_OK;

	if (!complete) {
		LOG_ERR("the dry run could not gather every node's description");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	if (j->rank == 0)
		for (int r = 0; r < j->size; r++)
			log_say("%s", peer_gather_get(j->pg, r));
	if (strstr(j->description, "\nerror: "))
		code = VIGIL_EXIT_USAGE;
	leave(j, code, true);
}

/* ---- the preparation (prep.h) -------------------------------------------------------- */

static int new_node(struct job *j);

/* This node's pre-check, once: its payload for the gather. */
static const char *
prep_precheck(void *arg)
{
	struct job *j = arg;

	if (!j->payload) {
		j->payload = survey(j);
		if (!j->payload || new_node(j) < 0)
			return NULL;
	}
	return j->payload;
}

/* The pre-check and the gather, with what the preparation adds to the payload. */
static int
gather_now(struct job *j)
{
	char *amended;
	int rc;

	if (!prep_precheck(j))
		return -ENOMEM;
	if (!j->prep)
		return start_gather(j, PH_GATHER, j->payload);
	amended = prep_amend_payload(j->prep, j->payload);
	if (!amended)
		return -ENOMEM;
	rc = start_gather(j, PH_GATHER, amended);
	free(amended);  /* the gather keeps a copy */
	return rc;
}

static void
prep_go(void *arg, bool ok)
{
	struct job *j = arg;

	if (!ok) {
		LOG_ERR("the preparation ended without the coordinator");
		leave(j, VIGIL_EXIT_INTERNAL, false);
		return;
	}
	if (gather_now(j) < 0) {
		LOG_ERR("cannot send this node's report: out of memory");
		leave(j, VIGIL_EXIT_INTERNAL, false);
	}
}

static void
prep_ended(void *arg)
{
	struct job *j = arg;

	if (j->phase != PH_HOOKS)
		return;
	j->exit_code = prep_exit_code(j->prep, j->exit_code);
	drain(j);
}

/* Staging or hooks: the prep, and when it has work before the gather, its phase. */
static int
begin(struct job *j)
{
	struct prep_opts po = {
		.run = j->o, .cfg = j->cfg, .node = j->name, .rank = j->rank, .size = j->size,
		.job_id = j->job_id, .sigmask = &j->oldmask, .self = j->self,
	};
	struct prep_ops ops = { coord_send, prep_precheck, prep_go, prep_ended, job_say,
	                        job_event, j };
	ssize_t n = readlink("/proc/self/exe", j->self, sizeof(j->self) - 1);

	j->self[n > 0 ? n : 0] = '\0';
	if (!prep_needed(j->o, j->cfg))
		return gather_now(j);
	j->prep = prep_new(&po, j->loop, &ops);
	if (!j->prep)
		return -ENOMEM;
	if (!prep_before_gather(j->prep))
		return gather_now(j);
	enter(j, PH_PREP, -1, NULL);
	return prep_start(j->prep, now_s(j));
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
	j->t0 = now_s(j);
	if (j->rank == 0 && j->o->events) {
		char why[160] = "";

		rc = events_open_why(j->o->events, &j->ev, why, sizeof(why));
		if (rc < 0)
			LOG_ERR("cannot open the event log %s: %s", j->o->events,
			        why[0] ? why : strerror(-rc));
	}
	snprintf(j->job_id, sizeof(j->job_id), "%s",
	         getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
	if (!j->job_id[0])
		snprintf(j->job_id, sizeof(j->job_id), "%ld", (long)getpid());
	return 0;
}

/* This node's side, before the plan: it records signals from the start. */
static int
new_node(struct job *j)
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

static void
tear_down(struct job *j)
{
	int rc;

	if (j->node)
		node_output_summary(j->node);
	if (j->ev) {
		rc = events_close(j->ev);
		if (rc < 0)
			LOG_ERR("cannot write events to %s: %s", j->o->events, strerror(-rc));
		if (j->events_lost > 0)
			LOG_ERR("%d event%s could not be written to %s", j->events_lost,
			        j->events_lost == 1 ? "" : "s", j->o->events);
	}
	node_free(j->node);
	prep_free(j->prep);
	if (j->perf && !jobperf_idle(j->perf))
		j->clean = false;  /* MPI may still write its buffers */
	jobperf_free(j->perf);
	usage_free(j->usage);
	coord_free(j->coord);
	watch_free(j->watch);
	free(j->plan_text);
	for (int r = 0; j->early && r < j->size; r++)
		free(j->early[r]);
	free(j->early);
	free(j->perf_tick);
	free(j->payload);
	free(j->description);
	peer_gather_free(j->pg);
	for (int i = 0; i < j->ndeferred; i++)
		free(j->deferred[i].text);
	free(j->deferred);
	if (j->bcast)
		j->clean = false;  /* MPI may still write its buffer */
	peer_bcast_free(j->bcast);
	topo_slots_free(j->slots, j->nslots);
	if (j->sigfd >= 0)
		sig_fd_close(j->sigfd);
	nudge_free(j->nudge);
	loop_free(j->loop);
	if (j->p)
		peer_finalize(j->p, j->clean);
}

int
run_job(const struct run_opts *o, const struct config *cfg, int *argc, char ***argv)
{
	struct job job = { .o = o, .cfg = cfg, .sigfd = -1, .clean = true,
	                   .exit_code = VIGIL_EXIT_INTERNAL };
	struct job *j = &job;
	int rc;

	snprintf(j->name, sizeof(j->name), "%s", o->node ? o->node : "?");
	log_set_identity(j->name, -1);
	/* --verbose: each phase change of the agent and the coordinator too
	 * (fsm.h), logged at debug level */
	if (o->verbose)
		log_set_level(LOG_LEVEL_DEBUG);
	rc = set_up(j, argc, argv);
	if (rc != 0) {
		j->clean = false;
		tear_down(j);
		return rc;
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
			leave(j, VIGIL_EXIT_INTERNAL, false);
		}
	}
	rc = j->exit_code;
	tear_down(j);
	return rc;
}
