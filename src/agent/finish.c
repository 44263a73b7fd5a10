/*
 * finish.c - the coordinator's end of a job of `vigil run`: what the
 * trainings and boards used, the last timing reduction, the report and
 * the end hooks, then the drain; and each node's attempts as performance
 * detection follows them.  run.c routes the messages that lead here.
 */
#include "autoconf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/finish.h"
#include "agent/job.h"
#include "agent/jobfiles.h"
#include "agent/node.h"
#include "launch/modes.h"
#include "lib/log.h"
#include "lib/loop.h"
#include "lib/util.h"
#include "perf/jobperf.h"
#include "perf/usage.h"
#include "prep/prep.h"

#define FINAL_REDUCE_MS 2000 /* the coordinator's last reduction, at most */

/* How often the coordinator records the ranges so far in the event log. */
#define USAGE_EVENT_S 300

/* A node's note said what it uses: into the metrics and the ranges. */
void
finish_take_usage(struct job *j, int src, const cJSON *u, double now)
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
void
finish_usage_event(struct job *j, double now, bool force)
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
	jobfiles_event(j, node ? node : "?", j->rank, VIGIL_EVENT_USAGE, VIGIL_SEVERITY_INFO, line, d);
}

static long
on_hooks_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_WARN("the end hooks did not end in time: leaving them");
	job_drain(j);
	return LOOP_NOMORE;
}

/* The job's status is known: the requeue and end hooks (prep.h), then the drain. */
void
finish_end_hooks(struct job *j, const char *state)
{
	int rc = j->prep ? prep_end(j->prep, state, j->exit_code) : 0;

	if (rc <= 0) {
		if (rc < 0)
			LOG_ERR("cannot run the end hooks: out of memory");
		j->exit_code = prep_exit_code(j->prep, j->exit_code);  /* a checkpoint hook's */
		job_drain(j);
		return;
	}
	job_step(j, PE_HOOKS, (long)((prep_time_left(j->prep) + 5) * 1000), on_hooks_late);
}

/*
 * What joins this attempt to the others of the same job in the event log
 * (`vigil report`'s chain): Slurm's job id, which a requeue keeps, else
 * the --state file, which counts the resumes of a chain elsewhere; NULL:
 * this attempt stands alone.  In BUF.
 */
static const char *
chain_key(const struct job *j, char *buf, size_t len)
{
	if (getenv("SLURM_JOB_ID") && j->job_id[0])
		snprintf(buf, len, "slurm:%s", j->job_id);
	else if (j->o->state_file)
		snprintf(buf, len, "state:%s", j->o->state_file);
	else
		return NULL;
	return buf;
}

/* Every result is in and the last reduction done (or given up): the end. */
void
finish_conclude(struct job *j)
{
	double now = job_now(j);
	char chain[PATH_MAX + 16];
	int told;

	if (j->perf && j->o->summary_s > 0)
		jobperf_summary(j->perf);
	if (j->perf) {
		jobperf_series(j->perf);
		jobperf_account(j->perf, chain_key(j, chain, sizeof(chain)),
		                util_wall_s() - (now - j->t0), j->alloc_start, j->alloc_eligible);
	}
	finish_usage_event(j, now, true);
	jobfiles_write(j, now);
	jobfiles_unrecord(j);  /* the report speaks for this node too */
	told = coord_finish(j->coord, j->perf ? jobperf_cycles(j->perf) : 0, now);
	j->exit_code = coord_exit_code(j->coord);
	j->hold = coord_hold(j->coord);
	j->clean = j->clean && coord_finalize_safe(j->coord);
	if (coord_abort_end(j->coord))
		job_abort_at_end(j, told);
	finish_end_hooks(j, coord_state(j->coord));
}

static long
on_final_late(struct loop *l, void *arg)
{
	struct job *j = arg;

	(void)l;
	j->phase_timer = NULL;
	LOG_WARN("the last timing reduction did not complete within %d ms", FINAL_REDUCE_MS);
	finish_conclude(j);
	return LOOP_NOMORE;
}

/*
 * The node's attempt (the launch's, or a restart's) to performance
 * detection: its reductions among the attempt's members, and in Horovod
 * mode the inner mpirun's processes counted for the members that run
 * them (their slots, -map-by slot).
 */
void
finish_perf_attempt(struct job *j)
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
	/* rank 0, the reductions' root in every attempt, lost (a successor took over) */
	if (!j->node || node_attempt(j->node) == 0 || coord_lost(j->coord, 0))
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
		finish_conclude(j);
		return;
	}
	jobperf_final(j->perf);
	job_step(j, PE_FINAL, FINAL_REDUCE_MS, on_final_late);
}

void
finish_coordinator_check(struct job *j)
{
	if (j->phase != PH_RUN || !j->coord)
		return;
	if (coord_phase(j->coord) == COORD_FINISHING)
		finishing(j);
}
