/*
 * prep.h - the platform's lifecycle around the training in `vigil run`:
 * each node's preparation before the gather (the pre-check hooks, the
 * pre-check itself, the data staging, the pre-launch hooks), its progress
 * at the coordinator, and the hooks of the job's later phases
 * (checkpoint, requeue, end).
 *
 * The preparation runs on every node at once, each node copying from the
 * sources itself (never through the coordinator):
 *
 *   node:        pre-check hooks -> pre-check -> staging -> pre-launch hooks
 *                -> PREP "done" to the coordinator -> waits for "go"
 *   coordinator: the same on its own node; every node's progress (bytes,
 *                files, ETA) in lines for people; once every node is done
 *                (or silent past the timeout) "go" to all
 *
 * Then every node starts the gather as it does without a preparation, its
 * payload amended (prep_amend_payload()) with a "stage" and a "hooks"
 * check: a staging that failed (the disk would fill past the site's
 * maximum, a source that cannot be read) or a failing pre-check or
 * pre-launch hook is that node's pre-check failure, so the coordinator's
 * go/no-go (and --min-nodes) treats it as any other.  The point-to-point
 * messages of the preparation all end before any gather message is sent
 * (a node sends nothing after "done"), so the two never meet (peer.h).
 *
 * The staging itself is a `vigil stage --progress` child of the agent
 * (stage.h) watched by the loop; its lines are the progress.  Once staged,
 * the agent holds a shared lock on each copy until it exits, so that no
 * cleaning removes a copy a job trains on, and marks it used at the end.
 *
 * Everything runs from the agent's loop; nothing here blocks or calls MPI.
 */
#ifndef VIGIL_PREP_H
#define VIGIL_PREP_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include <cJSON.h>

#include "comm/msg.h"
#include "conf/config.h"
#include "conf/run_opts.h"

struct loop;
struct prep;

struct prep_ops {
	/* A message to RANK.  0 or a negative errno. */
	int (*send)(void *arg, int rank, enum msg_kind kind, const char *text);
	/* Run this node's pre-check; returns the gather payload (owned by the
	 * caller), or NULL when the agent cannot go on. */
	const char *(*precheck)(void *arg);
	/* Node: the coordinator said go (OK), or fell silent (!OK).
	 * Coordinator: every node is ready, "go" was sent.  Then the gather. */
	void (*go)(void *arg, bool ok);
	/* The later phases' hooks are over (prep_end()). */
	void (*ended)(void *arg);
	/* A line for people, and an event (the coordinator's), as the agent has them. */
	void (*say)(void *arg, const char *line);
	void (*event)(void *arg, const char *node, int rank, const char *kind,
	              const char *severity, const char *message, cJSON *details);
	void *arg;
};

struct prep_opts {
	const struct run_opts *run;   /* borrowed */
	const struct config *cfg;     /* borrowed */
	const char *node;             /* copied */
	int rank, size;
	const char *job_id;           /* copied */
	const sigset_t *sigmask;      /* restored in hooks and the staging; borrowed */
	const char *self;             /* this program's path, for `vigil stage`; copied */
};

/*
 * Whether the job has anything here: staging (--stage) or any hook.
 * Without it, run.c needs no prep at all.
 */
bool prep_needed(const struct run_opts *o, const struct config *cfg);

/* NULL with errno on failure. */
struct prep *prep_new(const struct prep_opts *o, struct loop *l, const struct prep_ops *ops);

/* Kill what still runs (hooks, staging), release the copies' locks.  NULL is a no-op. */
void prep_free(struct prep *p);

/* Whether there is a preparation before the gather (staging, pre-check or
 * pre-launch hooks, on any node: every node answers alike; never for
 * --dry-run). */
bool prep_before_gather(const struct prep *p);

/* Begin the preparation on this node.  0 or -ENOMEM. */
int prep_start(struct prep *p, double now);

/*
 * A PREP message from SRC.  The coordinator's first one (sent when its
 * preparation starts, and with every keepalive) carries the job's id
 * (VIGIL_JOB_ID): the other nodes wait for it before their hooks run, so
 * that every node's hooks see one id.
 */
void prep_message(struct prep *p, int src, const struct msg_prep *m, double now);

/* The job's id, as the coordinator's plan says it, for the hooks that
 * start from now on.  P NULL: a no-op.  0 or -ENOMEM. */
int prep_set_job_id(struct prep *p, const char *job_id);

/*
 * The gather payload (survey.c's) with this node's "stage" and "hooks"
 * checks added to its report.  malloc'd; NULL with errno.
 */
char *prep_amend_payload(const struct prep *p, const char *payload);

/* The coordinator's "staging" section of the report; NULL when nothing was staged. */
cJSON *prep_report(const struct prep *p);

/* The training is told to save (the checkpoint hooks; REASON may be NULL). */
void prep_checkpoint(struct prep *p, const char *reason);

/*
 * The job ended with STATE and CODE: the requeue hooks (CODE 81), then the
 * end hooks.  Returns 1 when hooks run (ops->ended() follows), 0 when
 * there are none, or a negative errno.
 */
int prep_end(struct prep *p, const char *state, int code);

/* Hooks still running (checkpoint or end). */
bool prep_busy(const struct prep *p);

/* How long what runs may still take (s): the deadline for waiting on it. */
double prep_time_left(const struct prep *p);

/* CODE, or 80 when it is 0 and a hook of a later phase failed with on_failure fail. */
int prep_exit_code(const struct prep *p, int code);

/*
 * For --dry-run: what the preparation would do on this node (the staging's
 * copies and variables, the hooks), into F.  COORDINATOR: this node
 * coordinates.
 */
void prep_describe(FILE *f, const struct run_opts *o, const struct config *cfg, bool coordinator);

/*
 * Before MPI starts (no threads yet): VIGIL_STAGE_NAME for each --stage,
 * the local copy's path.  0, or -EINVAL with the message in WHY.
 */
int prep_setenv(const struct run_opts *o, char *why, size_t whylen);

#endif
