/*
 * report_cost.h - where a job's time went, attempt by attempt and across
 * the chain of its attempts (ETTR): the arithmetic behind the "time"
 * section of `vigil report`, its JSON "chain", its --metrics and the
 * timeline of --plot.  Pure: the dates come from the event log
 * (report.c), nothing is read here.
 *
 * An attempt is one run of vigil (the events up to a "job" event).  Its
 * wall time, from the agent's start (Slurm's start of the allocation when
 * the account has it) to its "job" event, is cut at the dates the log
 * gives, taken in time order:
 *   launch       the allocation's start to the agent's (the batch script,
 *                mpirun starting the agents)
 *   pre-check    start to the go/no-go ("verdict")
 *   staging      the verdict to the last node's "stage" event
 *   start        then to the start of the first iteration (the launch,
 *                the training's imports and set-up)
 *   iterations   the first iteration's start to the last one's end, split
 *                by the "account" event into productive (each iteration at
 *                the nodes' median pace), straggler (the slowest node's
 *                excess over the median) and other (what the iterations'
 *                e2e times do not cover)
 *   detection    the last iteration's end to a fault, hang, lost node or
 *                failed training that came after it
 *   checkpoint   the checkpoint signal to the last training's exit (or the
 *                stop)
 *   stop         the rest, to the "job" event: the grace, the stop, the
 *                report
 * and redone: the iterations of the attempt before that a resume did
 * again (all of them when it ended without a confirmed checkpoint and
 * did not succeed), at
 * that attempt's median pace, taken from this attempt's productive time.
 * The chain adds the gaps between attempts (requeue delay, queue wait;
 * the batch script too when Slurm's start is unknown), each split at the
 * next allocation's eligible time when Slurm gave it: the requeue delay
 * (Slurm holds a requeued job back, 120 s by default) before it, the
 * wait in the queue after it, and its ETTR = productive time / elapsed time, from
 * the first attempt's start to the last one's end.  An attempt's start
 * below is its allocation's when known.
 */
#ifndef VIGIL_REPORT_COST_H
#define VIGIL_REPORT_COST_H

#include <stdbool.h>
#include <stddef.h>

enum cost_cause {
	COST_LAUNCH, COST_PRECHECK, COST_STAGING, COST_START, COST_PRODUCTIVE, COST_STRAGGLER,
	COST_DETECTION, COST_CHECKPOINT, COST_STOP, COST_REDONE, COST_OTHER,
	COST_GAP,     /* between attempts: in the chain only */
	COST_N,
	COST_ITER = COST_N  /* a stretch of iterations, before it is split */
};

/* "launch", "precheck", "staging", "start", "productive", "straggler", "detection",
 * "checkpoint", "stop", "redone", "other", "between_attempts". */
extern const char *const cost_names[COST_N];

/* An attempt's dates (seconds since the epoch; NAN: the log has none);
 * ALLOC is Slurm's start of the allocation, ELIGIBLE when the job became
 * eligible to start (after a requeue, once Slurm's requeue delay had
 * passed), when the account has them. */
struct cost_marks {
	double alloc, eligible, start, verdict, staged, it_first_end, it_first_ms, it_last_end;
	double fault, ckpt, exit_last, stop, end;
	double iterations, median_ms, max_ms;   /* the "account"; NAN without one */
	bool saved;             /* a checkpoint was confirmed on every node told to save,
	                         * or the training ran to its end */
};

/* A stretch of an attempt, for the timeline. */
struct cost_seg {
	double from, to;
	enum cost_cause cause;  /* COST_ITER for the iterations */
};

#define COST_SEGS 12

struct cost_attempt {
	struct cost_marks m;
	double secs[COST_N];    /* the split; secs[COST_GAP]: the gap before it */
	double requeue_s;       /* the gap before it, to its allocation's eligible time */
	double queue_s;         /* and from then to its allocation's start (both NAN:
	                         * not known, 0 for the first attempt) */
	double wall;
	double redone_iters;
	struct cost_seg segs[COST_SEGS];
	size_t nsegs;
	char state[16];         /* how it ended: the "job" event's state, "running", "?" */
};

/* Split A->m into A's secs, wall and segs (redone and the gap are 0). */
void cost_split(struct cost_attempt *a);

/* The chain's totals, from attempts already split. */
struct cost_chain {
	double t0;                              /* the first attempt's start */
	double elapsed, secs[COST_N], ettr;     /* ettr NAN when nothing elapsed */
	double requeue_s, queue_s;              /* the gaps split; NAN when one is not */
};

/*
 * Join A[0..N) in order: each attempt's redone time and the gap before it
 * (0 for the first), then the chain's totals in *OUT.
 */
void cost_chain(struct cost_attempt *a, size_t n, struct cost_chain *out);

#endif
