/*
 * finish.h - the coordinator's end of a job (finish.c), for run.c, which
 * routes the messages that lead there, and takeover.c, whose successor
 * ends the job the same way.
 */
#ifndef VIGIL_FINISH_H
#define VIGIL_FINISH_H

#include <stdbool.h>

#include <cJSON.h>

struct job;

/* A node's note said what it uses (USAGE, its rank SRC): into the
 * metrics and the ranges. */
void finish_take_usage(struct job *j, int src, const cJSON *usage, double now);

/* The ranges so far as a "usage" event, every few minutes while notes
 * come; FORCE: now (the end). */
void finish_usage_event(struct job *j, double now, bool force);

/* The job's status is known (STATE): the requeue and end hooks, then the drain. */
void finish_end_hooks(struct job *j, const char *state);

/* Every result is in and the last reduction done (or given up): the
 * files, the FINAL messages, the end hooks. */
void finish_conclude(struct job *j);

/* After every input to the coordinator: has it moved to the end? */
void finish_coordinator_check(struct job *j);

/* The node's attempt (the launch's or a restart's) to performance detection. */
void finish_perf_attempt(struct job *j);

#endif
