/*
 * jobperf.h - performance detection in `vigil run` (the platform's
 * 性能检测): every node's timing lines reduced across nodes in lock step,
 * and, on the coordinator, the policy, the alerts, the summary line, the
 * metrics file and the report's performance section.
 *
 * Reductions run in lock step: the coordinator starts one every
 * --perf-interval once its previous one completed (so every node had
 * joined it), sooner (down to a quarter of it) while iterations come
 * faster than a reduction holds them one by one, and tells the others
 * (ops->tick, a "perf" command); a node starts one per tick it was told
 * of, in order, after its previous one.  Every node thus starts the same
 * reductions; a stalled node only holds the next one back; at the end
 * FINAL says how many there were, so each node can finish them before
 * MPI_Finalize.  A reduction holds 64 groups of iterations: single
 * iterations while they fit, else groups of a power of two of them, so
 * that one reduction always catches up, at any rate the training prints.
 *
 * Each attempt of the training (jobperf_set_attempt()) has reductions of
 * its own.  The first attempt's are collectives over MPI_COMM_WORLD; a
 * restart's are among the coordinator and the attempt's members only
 * (peer_reduce_start_among()), so that a node lost before it is never
 * waited for; what was in flight is given up, and the iterations not yet
 * reported are reported among the survivors.  The first reduction of
 * every attempt only agrees on where the others are.
 *
 * An alert that should change the job (--perf-action reschedule) is
 * handed back through ops->alert: the coordinator decides (coord.c).
 */
#ifndef VIGIL_JOBPERF_H
#define VIGIL_JOBPERF_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "conf/run_opts.h"

struct jobperf;
struct peer;

struct jobperf_ops {
	/* Coordinator: a reduction starts; tell every live node.  Returns 0 or -errno. */
	int (*tick)(void *arg);
	/* Coordinator: an alert about RANK (MESSAGE: one line), after it was announced. */
	void (*alert)(void *arg, int rank, const char *message);
	/* Coordinator: RANK's node name (O(1)). */
	const char *(*host)(void *arg, int rank);
	/* Coordinator: an event (as coord_ops.event) and a line for people. */
	void (*event)(void *arg, const char *node, int rank, const char *kind,
	              const char *severity, const char *message, cJSON *details);
	void (*say)(void *arg, const char *line);
	void *arg;
};

/*
 * Detection for RANK of SIZE, at time NOW (seconds, the loop's clock).
 * The coordinator (rank 0) also keeps the policy and history.  NULL with
 * errno on failure.
 */
struct jobperf *jobperf_new(const struct run_opts *o, struct peer *p, int rank, int size,
                            const struct jobperf_ops *ops, double now);

/*
 * Free.  A reduction still in flight cannot be cancelled: its buffers
 * are left to MPI until the process exits (then MPI_Finalize must not be
 * called).  NULL is a no-op.
 */
void jobperf_free(struct jobperf *jp);

/* A line of the training's output: timing lines feed this node's iterations. */
void jobperf_line(struct jobperf *jp, const char *line, size_t len);

/* Whether this node has timing lines to contribute in this attempt. */
void jobperf_set_trains(struct jobperf *jp, bool trains);

/* What an attempt of the training is, for jobperf_set_attempt(). */
struct jobperf_attempt {
	int attempt;          /* 0, then 1.. after restarts (node_attempt()) */
	const int *members;   /* the ranks it runs on, in plan order (node_members()) */
	int nmembers;
	const int *procs;     /* Horovod mode: the MPI processes the inner mpirun places on
	                       * each member (its slots, -map-by slot), else NULL */
	bool trains;          /* this node runs a training (node_trains()) */
};

/*
 * An attempt starts (at the launch, and at every restart, before its
 * training prints): a new attempt number moves the reductions among the
 * coordinator and the members (the attempt's own), counted afresh, and
 * its processes are new; the iterations go on from where each node was.
 * In Horovod mode, every timing line tagged by the inner mpirun
 * ([1,P]<stdout>:, its --tag-output) is counted for the rank that runs
 * process P, as if that node had printed it.  Every node calls it with
 * the same attempt, in the same order with respect to the ticks.
 * Returns 0 or -ENOMEM.
 */
int jobperf_set_attempt(struct jobperf *jp, const struct jobperf_attempt *a);

/* A node: the coordinator started a reduction (a "perf" command). */
void jobperf_ticked(struct jobperf *jp);

/*
 * A node, at the end: the coordinator started CYCLES reductions in this
 * attempt (jobperf_cycles()); one begun beyond that is given up.
 */
void jobperf_set_due(struct jobperf *jp, int cycles);

/*
 * Once per loop turn: finish the reduction in flight, start the next one
 * due.  On the coordinator, TICKING says whether the job still runs (new
 * reductions start every --perf-interval).  Returns how soon (ms) it
 * wants to run again, or -1 for no wish of its own.
 */
long jobperf_cycle(struct jobperf *jp, double now, bool ticking);

/*
 * Coordinator, at the end: one more reduction now, for the last
 * iterations, and another after it while every node has some left.
 */
void jobperf_final(struct jobperf *jp);

/* Nothing in flight and every reduction due started: MPI_Finalize may come. */
bool jobperf_idle(const struct jobperf *jp);

/* How long the reduction in flight has been (s, on NOW's clock); -1 with
 * none in flight. */
double jobperf_reduction_age(const struct jobperf *jp, double now);

/* Reductions the coordinator started in this attempt (for FINAL). */
int jobperf_cycles(const struct jobperf *jp);

/* Detection gave up (MPI refused a reduction): MPI's state is not to be trusted. */
bool jobperf_broken(const struct jobperf *jp);

/* Coordinator: the one-line summary and its event (when there is something to say). */
void jobperf_summary(struct jobperf *jp);

/*
 * Coordinator, at the end: a "series" event per node with timings, its
 * e2e time over the job's iterations (series.h: one point per group of
 * iterations, bounded, merged pairwise), for `vigil report --plot`.
 */
void jobperf_series(struct jobperf *jp);

/*
 * Coordinator, at the end: the "account" event (account.h: iterations,
 * time at the median pace and waiting for the slowest node, the dates of
 * the first and last iterations), with CHAIN (NULL: none), the key that
 * joins the attempts of one job across requeues, and STARTED, when the
 * agent started (seconds since the epoch), ALLOC_START, when Slurm
 * started the allocation, and ALLOC_ELIGIBLE, when the job became
 * eligible to start (each 0: unknown), for `vigil report`.
 */
void jobperf_account(struct jobperf *jp, const char *chain, double started, double alloc_start,
                     double alloc_eligible);

/*
 * Coordinator: rewrite the --metrics file (unless FORCE, at most once a
 * second, and no sooner than jobperf_metrics_gap() of the last write's
 * duration) with the job's STATE and its nodes UP and LOST.
 */
void jobperf_metrics(struct jobperf *jp, const char *state, unsigned up, unsigned lost,
                     bool force, double now);

/* Whether jobperf_metrics(JP, ..., FORCE, NOW) would rewrite the file. */
bool jobperf_metrics_due(const struct jobperf *jp, bool force, double now);

/*
 * The seconds from one rewrite of the --metrics file to the next after
 * a write that took TOOK_S: 20 times that, so that the writes take at
 * most 5% of the coordinator's time however many nodes the file lists,
 * and never less than a second.
 */
double jobperf_metrics_gap(double took_s);

/*
 * Coordinator: a --notify command started for an alert is still running
 * (the end of the job lets it finish, within a bound; jobperf_free()
 * stops what is left).
 */
bool jobperf_notifying(const struct jobperf *jp);

/* Coordinator: the report's "performance" object (caller owns); NULL on ENOMEM. */
cJSON *jobperf_report(const struct jobperf *jp);

/* Coordinator: the --metrics file's values, for others to set theirs
 * (usage.h); NULL without --metrics.  Written with jobperf_metrics(). */
struct metrics *jobperf_metrics_store(struct jobperf *jp);

#endif
