/*
 * hang.h - the hang rule: a training whose iterations stop on every node
 * (no timing line anywhere) for longer than the hang timeout is hung.
 *
 * Two halves, both pure (time comes in as an argument, nothing is read
 * or sent here), so that every decision is unit-tested with a fake clock
 * (tests/unit/agent/test_hang.c):
 *
 *  - on every node, hang_local follows this node's training: how many
 *    iterations each of its processes printed (timing lines, told apart
 *    by the launcher's prefix), when the last one came, the median e2e
 *    time of the recent ones, when the training last wrote anything; and
 *    fills the progress part of each heartbeat (msg_heartbeat);
 *
 *  - at the coordinator, struct hang takes each heartbeat in O(1): it
 *    keeps the last time any node printed a timing line (the heartbeat
 *    says how long ago, so the heartbeat's own period does not delay it),
 *    the last sign of a save, and the last output.  hang_check() is O(1)
 *    but when the rule fires, O(N) then (is every node's word newer than
 *    the deadline? who is behind?).
 *
 * The timeout: the larger of the floor (--hang-timeout, default 30 s)
 * and HANG_MULT times the median e2e time of the recent iterations, so
 * that it follows the training.  Before an attempt's first iteration
 * (the start, after a restart) the allowance is HANG_FIRST_MULT times
 * that.  Before the job's first timing line anywhere there is no rule on
 * iterations at all (a training may print none): the output-silence rule
 * (--hang-silence, off by default) is for such a training, and judges the
 * time since any node's training last wrote anything.  A save is not a
 * hang: while any node shows one (vigil's checkpoint signal is out, or a
 * process of the training holds a file of --ckpt-dir open), the clock
 * starts again at every heartbeat that says so.
 *
 * Nobody is judged on silence the coordinator could not hear: the rule
 * fires only once every training node's latest heartbeat came after the
 * deadline (a node that sends none is the heartbeat rule's, stall.h).
 *
 * The suspect: a node HANG_BEHIND or more iterations behind the furthest
 * when all stopped, when it is the only one; otherwise nobody (the
 * forensics may still single one out, see hang_group()).
 */
#ifndef VIGIL_HANG_H
#define VIGIL_HANG_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "comm/msg.h"
#include "conf/run_opts.h"

#define HANG_MULT 10.0        /* the timeout: this many median e2e times ... */
#define HANG_FIRST_MULT 10.0  /* ... and this many timeouts before an attempt's first iteration */
#define HANG_BEHIND 2         /* iterations behind the furthest node to be the suspect */
#define HANG_KEYS 32          /* processes per node told apart (more share the last) */
#define HANG_E2E_RING 15      /* recent e2e times a node's median is taken over */

/* The timeout for a training whose recent median e2e time is MEDIAN_S (0: unknown). */
double hang_timeout(double floor_s, double median_s);

/* ---- every node: its own training ------------------------------------------------ */

struct hang_local;

/* NULL with errno on failure. */
struct hang_local *hang_local_new(void);
void hang_local_free(struct hang_local *l);  /* NULL is a no-op */

/* A new attempt starts at NOW: the iterations are counted afresh. */
void hang_local_attempt(struct hang_local *l, double now);

/* A timing line of the process KEY ("" without a prefix) with E2E_MS, at NOW. */
void hang_local_line(struct hang_local *l, const char *key, double e2e_ms, double now);

/* The training wrote something at NOW (any byte of stdout or stderr). */
void hang_local_output(struct hang_local *l, double now);

/*
 * The progress part of a heartbeat at NOW into B: TRAINS (this node runs
 * a training) and SAVING (a save shows) as the caller knows them.
 */
void hang_local_fill(const struct hang_local *l, double now, bool trains, bool saving,
                     struct msg_heartbeat *b);

/* ---- the coordinator ------------------------------------------------------------- */

struct hang_opts {
	int size;            /* ranks in the job */
	double floor_s;      /* --hang-timeout; 0: no rule on iterations */
	double silence_s;    /* --hang-silence; 0: no rule on output */
};

enum hang_kind {
	HANG_NONE,
	HANG_ITERATIONS,     /* no timing line anywhere for the timeout */
	HANG_SILENCE,        /* no output anywhere for --hang-silence */
};

struct hang_finding {
	enum hang_kind kind;
	double silent_s;     /* since the last iteration (or output) anywhere */
	double timeout_s;    /* the allowance that was passed */
	bool first;          /* ... before the attempt's first iteration */
	int suspect;         /* the one node behind the others, or -1 */
	double suspect_iters, max_iters;  /* its iterations and the furthest node's */
	int furthest;        /* a rank with the most iterations, or -1 */
};

struct hang;

/* NULL with errno on failure (a size below 1). */
struct hang *hang_new(const struct hang_opts *o, double now);
void hang_free(struct hang *h);  /* NULL is a no-op */

/* Whether either rule is on. */
bool hang_enabled(const struct hang *h);

/* An attempt of the training starts at NOW (the launch, a restart). */
void hang_attempt(struct hang *h, double now);

/* RANK's heartbeat B arrived at NOW.  O(1). */
void hang_beat(struct hang *h, int rank, const struct msg_heartbeat *b, double now);

/*
 * Whether the training is hung at NOW; F says how.  Fires once, then not
 * again until some node makes progress (a timing line, or output for the
 * silence rule) after it.  O(1) unless it fires.
 */
enum hang_kind hang_check(struct hang *h, double now, struct hang_finding *f);

/* The timeout in force now (s): the iteration rule's, or the silence's; 0: off. */
double hang_current_timeout(const struct hang *h);

/* "no timing line from any node for 12.0 s (timeout 10.0 s)": into BUF. */
void hang_describe(const struct hang_finding *f, char *buf, size_t len);

/* ---- the coordinator: every node's forensics, grouped ----------------------------- */

/*
 * Group the training's processes of every node by what they wait in.
 * NODES is an array of {"node", "rank", "processes": [forensics_gather()'s
 * process objects]} (one per node that answered).  Returns
 * {"groups": [{"signature", "count", "members": ["n3 rank 5", ...]}],
 *  "odd": [{"node", "rank" (the agent's), "train_rank"?, "pid", "state",
 *           "why"}], "summary": "n3 rank 5: stopped (T); 7 ranks wait in ...",
 *  "unread": N}, the groups largest first.  A process is odd when it is
 * stopped (T), in uninterruptible sleep (D) or a zombie, when it is
 * alone in a group while another group holds most of the ranks, or
 * when it is the only one outside a collective every other rank waits
 * in.  The N processes whose stack gdb was asked for and did not give
 * are never odd and not counted against the others.  SUSPECT_NODE is
 * set to the agent rank of the only node with odd processes, or -1 when
 * none or several.  NULL on ENOMEM.
 */
cJSON *hang_group(const cJSON *nodes, int *suspect_node);

/*
 * What --on-hang O->on_hang comes to: RUN_ON_HANG_AUTO resolved (requeue
 * with --resume, restart with --restart, else alert: a training that
 * said neither how to resume nor how often to restart may lose
 * everything when stopped, and a long evaluation that prints no timing
 * line must not cost that; told, its user or the site decides).
 */
enum run_on_hang hang_policy(const struct run_opts *o);

/*
 * Whether vigil arms Python's faulthandler in the training's environment
 * (PYTHONFAULTHANDLER): hang detection is on and a hang ends the
 * training (stop, requeue), so that a training whose Python stacks gdb
 * could not read dumps them itself when it is ended (node.c).
 */
bool hang_arms_faulthandler(const struct run_opts *o);

#endif
