/*
 * incident.c - a job's incidents and a health check's, into the node
 * ledger (incident.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/incident.h"
#include "check/ledger.h"
#include "check/lemon.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"

/* Incidents one job keeps: a job that loses a whole rack says so in a few
 * hundred; beyond, they are counted and dropped. */
#define JOB_MAX 512

struct incident_job {
	const struct config *cfg;
	char job[64];
	struct ledger_record *v;
	size_t n, written, dropped;
	bool said;                 /* a failure to write was logged */
};

struct incident_job *
incident_job_new(const struct config *cfg, const char *job)
{
	struct incident_job *j;

	if (!cfg->ledger.dir)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->cfg = cfg;
	snprintf(j->job, sizeof(j->job), "%s", job ? job : "");
	return j;
}

void
incident_job_free(struct incident_job *j)
{
	if (!j)
		return;
	free(j->v);
	free(j);
}

/* Keep R, unless the job has one like it already (a fault repeated by
 * every inspection, a node lost twice). */
static void
keep(struct incident_job *j, struct ledger_record *r)
{
	/* a rank that never said its name ("rank 7") has none to record under */
	if (strlen(r->node) > LEDGER_NODE_MAX || util_hostname_check(r->node, NULL, 0) < 0)
		return;
	for (size_t i = 0; i < j->n; i++) {
		const struct ledger_record *o = &j->v[i];

		if (o->kind == r->kind && strcmp(o->node, r->node) == 0 &&
		    strcmp(o->check, r->check) == 0 && strcmp(o->device, r->device) == 0)
			return;
	}
	if (j->n >= JOB_MAX) {
		j->dropped++;
		return;
	}
	if (!j->v && !(j->v = calloc(JOB_MAX, sizeof(*j->v)))) {
		j->dropped++;
		return;
	}
	r->time = util_wall_s();
	snprintf(r->job, sizeof(r->job), "%s", j->job);
	j->v[j->n++] = *r;
}

void
incident_job_event(struct incident_job *j, const char *node, const char *kind,
                   const char *severity, const char *message, const cJSON *details)
{
	struct ledger_record r;

	if (j && lemon_from_event(&j->cfg->ledger, node, kind, severity, message, details, &r))
		keep(j, &r);
}

void
incident_job_gather(struct incident_job *j, const struct gather *g)
{
	for (int k = 0; j && k < g->n; k++) {
		const struct gather_node *gn = &g->nodes[k];
		struct ledger_record r = { .kind = CONFIG_LEDGER_PRECHECK, .uid = -1 };

		snprintf(r.node, sizeof(r.node), "%s", gn->node ? gn->node : "");
		if (!gn->arrived && gn->error) {
			snprintf(r.check, sizeof(r.check), "precheck");
			snprintf(r.evidence, sizeof(r.evidence), "%s", gn->error);
			keep(j, &r);
		}
		for (size_t i = 0; gn->arrived && i < gn->report.n; i++) {
			const struct check_result *cr = &gn->report.results[i];

			/* the ledger's own verdict is no new incident */
			if (cr->verdict != VERDICT_FAIL || strcmp(cr->name, "ledger") == 0)
				continue;
			snprintf(r.check, sizeof(r.check), "%s", cr->name);
			snprintf(r.evidence, sizeof(r.evidence), "%s", cr->reason);
			if (lemon_counts(&j->cfg->ledger, &r))
				keep(j, &r);
		}
	}
}

static int
cmp_node(const void *a, const void *b)
{
	const struct ledger_record *x = a, *y = b;

	return strcmp(x->node, y->node);
}

int
incident_job_commit(struct incident_job *j)
{
	struct ledger *l = NULL;
	char why[400] = "", w[400];
	size_t n, done = 0, ok = 0;
	int rc;

	if (!j || j->written == j->n)
		return 0;
	n = j->n - j->written;
	/* one file per node: a node's reader lists only its own */
	if (n > 1)  /* qsort() of no array is undefined */
		qsort(j->v + j->written, n, sizeof(*j->v), cmp_node);
	rc = ledger_open(j->cfg->ledger.dir, true, &l, why, sizeof(why));
	while (l && done < n) {
		struct ledger_record *first = &j->v[j->written + done];
		size_t k = 1;
		int r;

		while (done + k < n && strcmp(first[k].node, first->node) == 0)
			k++;
		/* one node's failure is no reason to lose the others' */
		r = ledger_append(l, first, k, w, sizeof(w));
		if (r < 0 && rc == 0) {
			rc = r;
			memcpy(why, w, sizeof(why));
		}
		ok += r < 0 ? 0 : k;
		done += k;
	}
	ledger_close(l);
	j->written = j->n;
	if (rc < 0 && !j->said) {
		LOG_WARN("cannot record this job's incidents in the node ledger: %s", why);
		j->said = true;
	}
	if (j->dropped > 0)
		LOG_WARN("%zu more incidents of this job were not recorded in the node ledger",
		         j->dropped);
	j->dropped = 0;
	return rc < 0 ? rc : (int)ok;
}

/* ---- the health check ------------------------------------------------------- */

/* Whether RS has a health check incident of CHECK since SINCE. */
static bool
recorded(const struct ledger_records *rs, const char *check, double since)
{
	for (size_t i = rs->n; i-- > 0 && rs->v[i].time >= since;)
		if (rs->v[i].kind == CONFIG_LEDGER_HEALTHCHECK && strcmp(rs->v[i].check, check) == 0)
			return true;
	return false;
}

/* The records to add: new failures; and a forgiveness when FORGIVE. */
static int
after_records(const struct config_ledger *lc, const char *node, const struct check_report *rep,
              const struct ledger_records *rs, bool record, bool forgive, double now,
              struct ledger_records *out)
{
	int rc = 0;

	for (size_t i = 0; record && rc == 0 && i < rep->n; i++) {
		const struct check_result *cr = &rep->results[i];
		struct ledger_record r = { .kind = CONFIG_LEDGER_HEALTHCHECK, .time = now, .uid = -1 };

		if (cr->verdict != VERDICT_FAIL || strcmp(cr->name, "ledger") == 0 ||
		    recorded(rs, cr->name, now - lc->repeat_s))
			continue;
		snprintf(r.node, sizeof(r.node), "%s", node);
		snprintf(r.check, sizeof(r.check), "%s", cr->name);
		snprintf(r.evidence, sizeof(r.evidence), "%s", cr->reason);
		if (lemon_counts(lc, &r))
			rc = ledger_records_add(out, &r);
	}
	if (forgive && rc == 0) {
		struct ledger_record r = { .kind = LEDGER_KIND_FORGIVE, .time = now, .uid = -1 };

		snprintf(r.node, sizeof(r.node), "%s", node);
		snprintf(r.evidence, sizeof(r.evidence), "every check passed after the quarantine");
		rc = ledger_records_add(out, &r);
	}
	return rc;
}

/* The "ledger" result of REP, or NULL. */
static struct check_result *
ledger_result(struct check_report *rep)
{
	for (size_t i = 0; i < rep->n; i++)
		if (strcmp(rep->results[i].name, "ledger") == 0)
			return &rep->results[i];
	return NULL;
}

void
incident_after_check(const struct config *cfg, const char *node, struct check_report *report,
                     bool record, double now)
{
	const struct config_ledger *lc = &cfg->ledger;
	struct check_result *lr = ledger_result(report);
	struct ledger_records rs = { 0 }, add = { 0 };
	struct ledger *l = NULL;
	char why[400] = "";
	bool forgive;
	int rc;

	if (!lc->dir || !node)
		return;
	if (now <= 0)
		now = util_wall_s();
	rc = ledger_open(lc->dir, true, &l, why, sizeof(why));
	forgive = rc == 0 && lr && ledger_trusted(l) && !check_report_first(report, VERDICT_FAIL) &&
	          strcmp(json_str(lr->details, "state", ""), "probation") == 0;
	if (rc == 0 && (record || forgive))
		rc = ledger_read_node(l, node, now - lc->retention_s, &rs, why, sizeof(why));
	if (rc == 0)
		rc = after_records(lc, node, report, &rs, record, forgive, now, &add);
	if (rc == 0 && add.n > 0)
		rc = ledger_append(l, add.v, add.n, why, sizeof(why));
	if (rc == 0 && forgive) {
		snprintf(lr->reason, sizeof(lr->reason), "forgiven: every check passed after the "
		         "quarantine");
		cJSON_AddTrueToObject(lr->details, "forgiven");
	}
	if (rc == 0 && ledger_trusted(l))
		rc = ledger_compact_node(l, node, now - lc->retention_s, now, why, sizeof(why));
	if (rc == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	if (rc < 0)
		LOG_WARN("node ledger %s: %s", lc->dir, why);
	ledger_records_free(&rs);
	ledger_records_free(&add);
	ledger_close(l);
}
