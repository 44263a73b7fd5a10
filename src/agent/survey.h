/*
 * survey.h - from the start to the plan (agent-private: job.h).
 *
 * Each node surveys itself once (slots, pre-check: the payload), the
 * payloads are gathered at the coordinator (GATHER), which makes the
 * coordinator and plans (go or no-go) while the others wait for the plan
 * (PLAN); a plan that goes leads to job_launch().  --dry-run gathers every
 * node's description instead (DRYRUN).  Every wait has a timer: a lost
 * node costs the gather timeout, never a hang.
 */
#ifndef VIGIL_SURVEY_H
#define VIGIL_SURVEY_H

#include <stdbool.h>

#include "agent/job.h"
#include "comm/msg.h"

struct coord;

/* This node's pre-check, once (prep_ops.precheck): its payload, owned by J;
 * NULL on failure. */
const char *survey_precheck(void *arg);

/* The pre-check and the gather, with what the preparation adds to the
 * payload.  Returns 0, or -ENOMEM. */
int survey_gather(struct job *j);

/* The preparation's go (prep_ops.go): the gather, or the end when !OK. */
void survey_prep_go(void *arg, bool ok);

/* While GATHER or DRYRUN: the gather's progress, and its end. */
void survey_gather_progress(struct job *j);

/* A coordinator for this job with rank SELF (0, or the successor's), from
 * the options; NULL on ENOMEM. */
struct coord *survey_new_coord(struct job *j, int self);

/* A node in PLAN: the coordinator's plan message P (TEXT as it came), the
 * plan itself or the header of its broadcast. */
void survey_plan(struct job *j, const char *text, const struct msg_plan *p);

/* While the plan's broadcast runs: its progress; a node takes the plan. */
void survey_bcast_progress(struct job *j);

/* A message from SRC that overtook the plan's broadcast: kept, in order,
 * and routed once the node runs. */
void survey_defer(struct job *j, int src, int tag, const char *text);

/* --dry-run, once the plan came: this node's description to the coordinator. */
void survey_dry_run(struct job *j);

/* What the survey, the gather and the plan hold goes (the job's end). */
void survey_free(struct job *j);

#endif
