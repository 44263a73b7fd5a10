/*
 * perf.h - performance detection: per-iteration timings of every node,
 * reduced across nodes, and the policy that turns them into alerts.
 *
 * Pure logic, no MPI (peer.c moves the buffers built here) and no I/O.
 *
 * On each node, timing lines from the node's local processes become
 * iterations (perf_node).  Periodically every node packs the iterations
 * after the last iteration known complete everywhere into a fixed window
 * of slots (perf_pack); the slots of all nodes are combined element-wise
 * (perf_combine, the reduction's operator); the result says, for every
 * iteration of the window that every node has reached, the min, mean and
 * max of hardware time, e2e time and their ratio, with the ranks holding
 * the extremes (perf_unpack).  The policy (perf_policy) watches those
 * iterations, and each node's e2e time for the straggler test.
 */
#ifndef VIGIL_PERF_H
#define VIGIL_PERF_H

#include <stdbool.h>
#include <stddef.h>

#include "progress.h"

/* ---- one node's iterations ------------------------------------------- */

struct perf_node;

/*
 * WINDOW: how many iterations beyond the last one complete everywhere a
 * node keeps (memory stays bounded however far ahead it runs; older
 * detail is dropped and counted).  NULL with errno on failure.
 */
struct perf_node *perf_node_new(size_t window);
void perf_node_free(struct perf_node *n);

/*
 * A timing line.  Lines with the same key are successive iterations of one
 * local process; a node's iteration i is complete once every key seen has
 * reached i, and its values are the means over the keys (documented
 * attribution: launcher prefix when present, else arrival order, all
 * prefix-less lines counting as one process).
 */
void perf_node_add(struct perf_node *n, const struct progress_line *l);

/* Iterations complete on this node (1-based count: 0 = none yet). */
size_t perf_node_done(const struct perf_node *n);

/*
 * Values of iteration ITER (1-based) on this node: 0, or -ENOENT when it is
 * not complete yet or was dropped.
 */
int perf_node_get(const struct perf_node *n, size_t iter, double *hw_ms, double *e2e_ms);

/* Forget iterations <= ITER (known complete everywhere and reported). */
void perf_node_forget(struct perf_node *n, size_t iter);

/* Iterations dropped because the node ran more than WINDOW ahead. */
size_t perf_node_dropped(const struct perf_node *n);

/* ---- the reduction's buffer ------------------------------------------ */

/*
 * One slot per iteration, as doubles, so the buffer is an array of
 * MPI_DOUBLE and the operator works element-wise on slots.  Slot 0 is a
 * header: PERF_COUNT holds the minimum over nodes of perf_node_done()
 * (HUGE_VAL from a node with nothing to contribute: no say), PERF_HW_SUM
 * the number of nodes contributing (perf_contributors()).
 */
enum perf_field {
	PERF_COUNT,            /* nodes that have this iteration */
	PERF_HW_SUM, PERF_HW_MIN, PERF_HW_MAX,
	PERF_E2E_SUM, PERF_E2E_MIN, PERF_E2E_MAX,
	PERF_R_SUM, PERF_R_MIN, PERF_R_MAX,        /* ratio hw/e2e */
	PERF_E2E_MIN_RANK, PERF_E2E_MAX_RANK,
	PERF_R_MIN_RANK, PERF_R_MAX_RANK,
	PERF_FIELDS
};

/* Doubles in a buffer for a window of W iterations (header included). */
size_t perf_buffer_len(size_t w);

/*
 * Fill BUF (perf_buffer_len(W) doubles) with this node's iterations
 * BASE+1 .. BASE+W (BASE: the last iteration complete everywhere, from the
 * previous reduction), as rank RANK.  Missing iterations have count 0.
 * N NULL: a node with no training, which contributes nothing (every
 * iteration missing) and does not hold back the count.
 */
void perf_pack(const struct perf_node *n, size_t base, size_t w, int rank, double *buf);

/*
 * In a combined buffer: how many nodes packed a perf_node (not NULL), the
 * NRANKS to give perf_unpack().
 */
int perf_contributors(const double *buf);

/*
 * The reduction's operator: combine IN into INOUT, LEN doubles (a whole
 * buffer or a part made of whole slots).  Commutative and associative;
 * ties on min/max go to the lower rank.
 */
void perf_combine(const double *in, double *inout, size_t len);

struct perf_iter {
	size_t iter;
	int nodes;
	double hw_min, hw_mean, hw_max;
	double e2e_min, e2e_mean, e2e_max;
	double r_min, r_mean, r_max;
	int e2e_min_rank, e2e_max_rank, r_min_rank, r_max_rank;
};

/*
 * Read a combined buffer: the new base (min over nodes of iterations done)
 * into *NEW_BASE, and the iterations BASE+1 .. *NEW_BASE (every one of
 * NRANKS nodes has them) into OUT (room for W), their number into *N.
 */
void perf_unpack(const double *buf, size_t base, size_t w, int nranks,
                 size_t *new_base, struct perf_iter *out, size_t *n);

/* ---- the policy ------------------------------------------------------ */

struct perf_policy_opts {
	double threshold;      /* on hw/e2e; 0: off */
	bool below;            /* alert when the ratio is below (default: above, as the manual) */
	int window;            /* consecutive iterations (>= 1) */
	double straggler_pct;  /* e2e above the nodes' median by this %; 0: off */
};

struct perf_alert {
	char kind[16];         /* "ratio" or "straggler" */
	size_t iter;           /* the iteration that completed the window */
	int rank;              /* the node concerned */
	double value;          /* the ratio, or the % above the median */
	char message[256];     /* one line */
};

struct perf_policy;

struct perf_policy *perf_policy_new(const struct perf_policy_opts *o, int nranks);
void perf_policy_free(struct perf_policy *p);

/*
 * Feed one complete iteration (in iteration order).  NODE_E2E: every
 * rank's e2e time of that iteration (NRANKS values), or NULL when not
 * known (then no straggler test).  NAMES: node names by rank for messages
 * (may be NULL).  Fills up to MAX alerts into OUT; returns how many.  An
 * alert fires once when its condition has held for WINDOW consecutive
 * iterations, and again only after the condition cleared.
 */
size_t perf_policy_feed(struct perf_policy *p, const struct perf_iter *it,
                        const double *node_e2e, const char *const *names,
                        struct perf_alert *out, size_t max);

#endif
