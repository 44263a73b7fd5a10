/*
 * hangjob.h - a hung training in `vigil run`, at the coordinator: the
 * hang rule (hang.h) fed by every node's heartbeats, the forensics asked
 * of every node and gathered, grouped and written (the "hang" events, the
 * report's "hang" section, a forensics file of its own), then --on-hang
 * (coord_hang()).  The report's section is kept in j->hang_report.  Agent-private (job.h); each function is a no-op on a
 * node that is not the coordinator.
 *
 * The forensics file: REPORT.hang.json beside --report, else
 * EVENTS.hang.json beside --events, else vigil-hang.JOB.json in the
 * working directory, written whole like the report.
 */
#ifndef VIGIL_HANGJOB_H
#define VIGIL_HANGJOB_H

#include <cJSON.h>

#include "agent/job.h"
#include "comm/msg.h"

/* Forensics from every node are awaited this much beyond their own budget (s). */
#define HANGJOB_WAIT_S 5.0

/* An attempt of the training starts at NOW (the launch, a restart). */
void hangjob_attempt(struct job *j, double now);

/* RANK's heartbeat B at NOW. */
void hangjob_beat(struct job *j, int rank, const struct msg_heartbeat *b, double now);

/* RANK's forensics F (a note's) at NOW; F is borrowed. */
void hangjob_forensics(struct job *j, int rank, const cJSON *f, double now);

/* The loop's turn at NOW: the rule, the wait for the forensics.  Returns
 * how soon (ms) to come back, or -1 for no wish of its own. */
long hangjob_tick(struct job *j, double now);

void hangjob_free(struct job *j);

#endif
