/*
 * incident.h - what jobs and health checks record in the site's node
 * ledger (ledger.h): a job's coordinator collects the incidents its
 * events and its pre-check name and writes them when the job ends;
 * `vigil check` records its failures, forgives a node whose quarantine
 * is over once every check passes, and compacts its node's records.
 *
 * Both log what goes wrong once (a warning: the ledger is a record of
 * the job, never a reason to fail it) and do nothing at all when the
 * configuration has no ledger.
 */
#ifndef VIGIL_INCIDENT_H
#define VIGIL_INCIDENT_H

#include <stdbool.h>

#include <cJSON.h>

#include "check/check.h"
#include "check/gather.h"
#include "conf/config.h"

struct incident_job;

/*
 * A collector for the job JOB (an id for people: SLURM_JOB_ID; may be
 * NULL), or NULL when CFG has no ledger (every function below takes
 * NULL and does nothing).  CFG is borrowed and must outlive it.
 */
struct incident_job *incident_job_new(const struct config *cfg, const char *job);
void incident_job_free(struct incident_job *j);

/*
 * One event of the job (as coord.h's and jobperf.h's ops->event give
 * it; DETAILS borrowed): kept when it is an incident against NODE
 * (lemon_from_event()), once per node, kind, check and device.  O(1) but
 * for that look-up, over at most a few hundred kept incidents.
 */
void incident_job_event(struct incident_job *j, const char *node, const char *kind,
                        const char *severity, const char *message, const cJSON *details);

/* The pre-check's failures in G: one "precheck" incident per failing
 * check of a node, the ledger's own verdict aside. */
void incident_job_gather(struct incident_job *j, const struct gather *g);

/*
 * Write what was kept and not yet written, one file per node.  Returns
 * the number of incidents written, or a negative errno (logged).  May
 * be called again: each incident is written once.
 */
int incident_job_commit(struct incident_job *j);

/*
 * After `vigil check` on NODE (REPORT as check_run() made it, with NODE
 * as ctx->node), at time NOW (0: the wall clock):
 *   - with RECORD, each failing check but the ledger's becomes a
 *     "healthcheck" incident, unless the same check was recorded for the
 *     node within ledger.repeat (a failure that lasts is one incident a
 *     day, not one every HealthCheckInterval);
 *   - a node on probation whose checks all passed is forgiven (by root
 *     or the ledger's owner only), and the "ledger" result says so;
 *   - root or the ledger's owner compacts the node's records.
 */
void incident_after_check(const struct config *cfg, const char *node,
                          struct check_report *report, bool record, double now);

#endif
