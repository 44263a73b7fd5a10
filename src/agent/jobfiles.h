/*
 * jobfiles.h - the files a job writes (agent-private: job.h).
 *
 * The coordinator's event log (--events, JSON lines); and what vigil
 * decided, written for the batch script before the agents part: the
 * report (--report), the exclude list (--exclude-file) and the state file
 * (--state), by the coordinator; and REPORT.NODE, a node's own record of
 * why it ends when the coordinator's word may never come.  A file that
 * cannot be written is logged, never fatal.
 */
#ifndef VIGIL_JOBFILES_H
#define VIGIL_JOBFILES_H

#include <cJSON.h>

#include "agent/job.h"

/* The event log, on the coordinator's node (none without --events); one
 * that cannot be opened is said, and the job goes on without it. */
void jobfiles_open_events(struct job *j);

/* An event for the log (coord_ops.event); takes DETAILS.  Without a log,
 * nothing; an event the log cannot take is counted and said once. */
void jobfiles_event(void *arg, const char *node, int rank, const char *kind,
                    const char *severity, const char *message, cJSON *details);

/* The log closed, and what it could not take said. */
void jobfiles_close_events(struct job *j);

/*
 * This node's record (REPORT.NODE; none without --report): it ends, or is
 * about to, with CODE in STATE (include/vigil.h) for WHY.  Replaced as the
 * story goes on.
 */
void jobfiles_record(struct job *j, int code, const char *state, const char *why);

/* The coordinator's word came after all: the record goes, the report stands. */
void jobfiles_unrecord(struct job *j);

/* The coordinator's report (--report) as it stands at NOW. */
void jobfiles_report(struct job *j, double now);

/* Earlier requeues of this job: Slurm's count, else the state file's. */
int jobfiles_resumes(const struct run_opts *o);

/* The coordinator's files at the end (report, metrics, exclude list, state),
 * before FINAL lets the others go. */
void jobfiles_write(struct job *j, double now);

/* The coordinator's metrics file (--metrics), in STATE: rewritten when due, or now
 * with FORCE; the spares' gauges with --spares.  J->perf is not NULL. */
void jobfiles_metrics(struct job *j, const char *state, bool force, double now);

#endif
