/*
 * jobfiles.c - the files the job writes: the coordinator's event log, and
 * what the job leaves behind for the batch script, the coordinator's
 * report, exclude list and state file, and a node's own record when it
 * ends without the coordinator's word.  Each of those is written whole
 * (util_write_atomic_str()): a reader never sees half of one.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "vigil.h"
#include "agent/coord.h"
#include "agent/job.h"
#include "agent/jobfiles.h"
#include "agent/node.h"
#include "check/incident.h"
#include "launch/modes.h"
#include "lib/events.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "perf/jobperf.h"
#include "perf/metrics.h"
#include "perf/usage.h"
#include "prep/prep.h"

/* ---- the event log (--events, the coordinator's) ---------------------------------- */

void
jobfiles_open_events(struct job *j)
{
	char why[160] = "";
	int rc;

	if (!j->o->events)
		return;
	rc = events_open_why(j->o->events, &j->ev, why, sizeof(why));
	if (rc < 0)
		LOG_ERR("cannot open the event log %s: %s", j->o->events, why[0] ? why : strerror(-rc));
}

void
jobfiles_event(void *arg, const char *node, int rank, const char *kind, const char *severity,
               const char *message, cJSON *details)
{
	struct job *j = arg;
	cJSON *e;
	int rc;

	incident_job_event(j->incidents, node, kind, severity, message, details);
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

void
jobfiles_close_events(struct job *j)
{
	int rc;

	if (!j->ev)
		return;
	rc = events_close(j->ev);
	if (rc < 0)
		LOG_ERR("cannot write events to %s: %s", j->o->events, strerror(-rc));
	if (j->events_lost > 0)
		LOG_ERR("%d event%s could not be written to %s", j->events_lost,
		        j->events_lost == 1 ? "" : "s", j->o->events);
	j->ev = NULL;
}

/* ---- the files for the batch script ------------------------------------------------- */

/* Write TEXT to PATH for the batch script; say so when it cannot be. */
static void
write_file(const char *what, const char *path, const char *text)
{
	int rc = util_write_atomic_str(path, text, 0644);

	if (rc < 0)
		LOG_ERR("cannot write the %s %s: %s", what, path, strerror(-rc));
}

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
void
jobfiles_record(struct job *j, int code, const char *state, const char *why)
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

void
jobfiles_unrecord(struct job *j)
{
	char path[4400];

	if (j->record && record_path(j, path, sizeof(path)) == 0)
		(void)unlink(path);  /* the report stands; a stale record only misleads */
	j->record = false;
}

void
jobfiles_report(struct job *j, double now)
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
	if (j->hang_report)  /* kept by hangjob.c */
		cJSON_AddItemToObject(r, "hang", cJSON_Duplicate(j->hang_report, true));
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
int
jobfiles_resumes(const struct run_opts *o)
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

void
jobfiles_metrics(struct job *j, const char *state, bool force, double now)
{
	struct metrics *m = jobperf_metrics_store(j->perf);

	/* called at every turn of the loop: the spares are counted (O(N))
	 * only when the file is rewritten */
	if (!jobperf_metrics_due(j->perf, force, now))
		return;
	if (m && j->o->spares > 0) {
		int used, waiting;
		double took;

		waiting = coord_spares(j->coord, &used, &took);
		metrics_set_spares(m, (unsigned)waiting, (unsigned)used, took);
	}
	jobperf_metrics(j->perf, state, (unsigned)coord_up(j->coord),
	                (unsigned)coord_nlost(j->coord), force, now);
}

/* The coordinator's files, before FINAL lets the others go: if mpirun then
 * crashes or hangs, what vigil decided is already written. */
void
jobfiles_write(struct job *j, double now)
{
	int code = coord_exit_code(j->coord);

	if (j->o->report)
		jobfiles_report(j, now);
	(void)incident_job_commit(j->incidents);  /* logged */
	if (j->perf)
		jobfiles_metrics(j, coord_state(j->coord), true, now);
	if (j->o->exclude_file) {
		/* for sbatch --exclude: the nodes to avoid next time, one a line */
		char *list = coord_exclude_list(j->coord);

		if (list)
			write_file("exclude list", j->o->exclude_file, list);
		free(list);
	}
	if (code == VIGIL_EXIT_REQUEUE && j->o->state_file) {
		char st[64];

		snprintf(st, sizeof(st), "{\"resumes\": %d}\n", jobfiles_resumes(j->o) + 1);
		write_file("state file", j->o->state_file, st);
	}
}
