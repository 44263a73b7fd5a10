/*
 * perf.h - performance detection: per-iteration timings of every node,
 * reduced across nodes, and the policy that turns them into alerts.
 *
 * Pure logic, no MPI (peer.c moves the buffers built here) and no I/O.
 *
 * On each node, timing lines from the node's local processes become
 * iterations (perf_node).  Periodically every node packs the iterations
 * after the last one reported (the base) into a fixed number of slots, one
 * per group of consecutive iterations (perf_layout: every node derives the
 * same groups from the previous result, so the slots line up); the slots
 * of all nodes are combined element-wise (perf_combine, the reduction's
 * operator); the result says, for every group every node has reached, the
 * min, mean and max of hardware time, e2e time and their ratio over the
 * nodes, with the ranks holding the extremes (perf_unpack).  The policy
 * (perf_policy) watches those groups, and each node's e2e time for the
 * straggler test.
 *
 * Groups are single iterations while the training is slow enough for the
 * slots to hold every iteration of one --perf-interval; faster, a group
 * spans a power of two of iterations, so that one reduction always catches
 * up with the slowest node whatever the rate (the report says how large
 * groups became).  Memory is bounded everywhere: a node holds a ring of a
 * fixed number of slots, which hold several iterations each when the node
 * runs far ahead of the others; the policy and the medians hold a fixed
 * amount per node.
 */
#ifndef VIGIL_PERF_H
#define VIGIL_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf/progress.h"

/* ---- one node's iterations ------------------------------------------- */

struct perf_node;

/* Sums over some iterations of one node: the values are SUM / LINES. */
struct perf_sum {
	double hw, e2e;        /* sums of hardware and e2e times (ms) */
	double lines;          /* timing lines summed (fractional when a slot
	                        * holding several iterations is split) */
};

/*
 * SLOTS: how many groups of iterations beyond the last one reported the
 * node holds (> 0; rounded up to a power of two).  A node that runs further ahead than that merges
 * neighbouring iterations (perf_node_grain() doubles) instead of dropping
 * any.  NULL with errno on failure.
 */
struct perf_node *perf_node_new(size_t slots);
void perf_node_free(struct perf_node *n);

/*
 * A timing line.  Lines with the same key are successive iterations of one
 * local process (progress.h: the launcher's tag, "" without one); a node's
 * iteration i is complete once every process still printing reached it,
 * and its values are the means over its lines.
 *
 * Processes are lined up by what they print, not trusted to start
 * together: a process that appears while others are at iteration L joins
 * at L (a process of a synchronous job printing the same iteration a
 * moment later); one that falls more than PERF_KEY_LAG iterations behind
 * the leading process stops holding the node back (a stray line with a tag
 * of its own, a process that stopped printing), and rejoins at the
 * leader's iteration when it prints again.
 */
void perf_node_add(struct perf_node *n, const struct progress_line *l);

/* Iterations a process may fall behind the leading one before it is passed over. */
#define PERF_KEY_LAG 16

/* Iterations complete on this node (0: none yet). */
size_t perf_node_done(const struct perf_node *n);

/* Timing lines taken. */
uint64_t perf_node_lines(const struct perf_node *n);

/* Iterations per slot now (1, or a power of two once the node ran far ahead). */
size_t perf_node_grain(const struct perf_node *n);

/*
 * Sums of iterations FIRST..LAST (1-based, inclusive) into *OUT.  Exact
 * while the grain is 1, or the range starts and ends on slot boundaries;
 * else a slot that straddles an end counts for its share.  Returns true
 * when any line was summed.
 */
bool perf_node_sum(const struct perf_node *n, size_t first, size_t last, struct perf_sum *out);

/* Forget iterations <= ITER (reported everywhere). */
void perf_node_forget(struct perf_node *n, size_t iter);

/*
 * A new attempt of the training (fault restart, elastic restart): its
 * processes are new, so their keys are forgotten; its iterations follow
 * the node's last one.
 */
void perf_node_restart(struct perf_node *n);

/*
 * What the last reduction said about every node (perf_header), so that
 * this node lines up with them: a node that starts printing late starts at
 * the iterations the others reached; a node that prints a whole multiple
 * of the others' lines per iteration (several processes without a tag)
 * counts that many lines as one iteration from then on; a node that
 * stopped printing for a long while has no say in how far everyone is
 * until it prints again (then it rejoins at the others' iteration).
 */
struct perf_header;
void perf_node_observe(struct perf_node *n, const struct perf_header *h);

/* Whether the node has a say in how far everyone is (it printed, and not long ago). */
bool perf_node_says(const struct perf_node *n);

/* Lines counted as one iteration (1 unless perf_node_observe() found more). */
unsigned perf_node_scale(const struct perf_node *n);

/* ---- the layout: which iterations each slot holds -------------------- */

/*
 * Slots hold consecutive groups of iterations from BASE + 1 on: up to
 * TARGET (iterations every node had completed at the previous reduction,
 * so all of them are complete now) and beyond it, groups ending on
 * multiples of STRIDE.  Every node computes the same layout from the same
 * results, so slots line up across nodes.
 */
struct perf_layout {
	size_t base;           /* the last iteration reported */
	size_t target;         /* >= base: complete on every node already */
	size_t stride;         /* a power of two */
	size_t slots;          /* groups in a reduction (> 0) */
	size_t growth;         /* how far TARGET moved per reduction, lately */
};

/* A fresh layout of SLOTS groups after iteration BASE, one iteration each. */
void perf_layout_init(struct perf_layout *l, size_t slots, size_t base);

/* The last iteration of group K (0-based, < slots) into ENDS[K], for every K. */
void perf_layout_ends(const struct perf_layout *l, size_t *ends);

/*
 * The layout for the next reduction, from the result of this one (header
 * H, new base NEW_BASE): the stride is the least power of two that lets
 * the slots reach past where the slowest node is expected by then.
 */
void perf_layout_next(struct perf_layout *l, const struct perf_header *h, size_t new_base);

/* ---- the reduction's buffer ------------------------------------------ */

/*
 * Slot 0 is a header (struct perf_header); slot k holds group k-1, one
 * field per enum perf_field, as doubles, so the buffer is an array of
 * MPI_DOUBLE and the operator works element-wise on slots.
 */
enum perf_field {
	PERF_COUNT,            /* nodes that have this group */
	PERF_HW_SUM, PERF_HW_MIN, PERF_HW_MAX,
	PERF_E2E_SUM, PERF_E2E_MIN, PERF_E2E_MAX,
	PERF_R_SUM, PERF_R_MIN, PERF_R_MAX,        /* ratio hw/e2e */
	PERF_E2E_MIN_RANK, PERF_E2E_MAX_RANK,
	PERF_R_MIN_RANK, PERF_R_MAX_RANK,
	PERF_FIELDS
};

/* What every node said about itself, combined (the header slot). */
struct perf_header {
	size_t min_done;       /* the fewest iterations done, over nodes with a say */
	int says;              /* nodes with a say */
	size_t max_done;       /* the most iterations done, over nodes with a say */
	double sum_done;       /* iterations done, summed over nodes with a say */
	size_t max_grain;      /* the largest perf_node_grain() */
	size_t max_base;       /* the furthest base (to agree on one after a restart) */
	double approx;         /* iterations some node packed from merged slots */
};

/* Doubles in a buffer of W slots (header included). */
size_t perf_buffer_len(size_t w);

/*
 * Fill BUF (perf_buffer_len(L->slots) doubles) with this node's groups
 * as laid out by L, as rank RANK, and E2E (L->slots doubles; NULL: none)
 * with its mean e2e per group (NaN where it has none).  N NULL, or a node
 * without a say: contributes nothing to the groups and does not hold back
 * the count, but its base and grain still count.  BASE is the node's own
 * base (L->base, except in the first reduction after a restart).
 */
void perf_pack(const struct perf_node *n, const struct perf_layout *l, size_t base, int rank,
               double *buf, double *e2e);

/* The header of a (combined) buffer. */
void perf_header_read(const double *buf, struct perf_header *h);

/*
 * The reduction's operator: combine IN into INOUT, LEN doubles (a whole
 * buffer or a part made of whole slots).  Commutative and associative;
 * ties on min/max go to the lower rank.
 */
void perf_combine(const double *in, double *inout, size_t len);

/* One group of consecutive iterations, over the nodes that have it. */
struct perf_iter {
	size_t slot;           /* its group in the layout (0-based) */
	size_t first, iter;    /* its first and last iteration */
	int nodes;
	double hw_min, hw_mean, hw_max;
	double e2e_min, e2e_mean, e2e_max;
	double r_min, r_mean, r_max;
	int e2e_min_rank, e2e_max_rank, r_min_rank, r_max_rank;
};

/*
 * Read a combined buffer laid out by L: the new base into *NEW_BASE (the
 * end of the last group every node with a say has completed), and those
 * groups that some node has into OUT (room for L->slots), their number
 * into *N.
 */
void perf_unpack(const double *buf, const struct perf_layout *l, size_t *new_base,
                 struct perf_iter *out, size_t *n);

/* ---- the policy ------------------------------------------------------ */

struct perf_policy_opts {
	double threshold;      /* on hw/e2e; 0: off */
	bool below;            /* alert when the ratio is below (default: above, as the manual) */
	int window;            /* consecutive iterations (>= 1) */
	double straggler_pct;  /* e2e above the other nodes' median by this %; 0: off */
};

struct perf_alert {
	char kind[16];         /* "ratio" or "straggler" */
	size_t iter;           /* the iteration that completed the window */
	int rank;              /* the node concerned */
	double value;          /* the ratio, or the % above the others */
	char message[256];     /* one line */
};

struct perf_policy;

struct perf_policy *perf_policy_new(const struct perf_policy_opts *o, int nranks);
void perf_policy_free(struct perf_policy *p);

/*
 * Feed one group of iterations (in order).  NODE_E2E: every rank's mean
 * e2e time over the group (NRANKS values, NaN for a node that has none),
 * or NULL when not known (then no straggler test).  NAMES: node names by
 * rank for messages (may be NULL).  Fills up to MAX alerts into OUT;
 * returns how many.  An alert fires once when its condition has held for
 * WINDOW consecutive iterations (a group counts for its iterations), and
 * again only after the condition cleared.
 *
 * A node is a straggler when its e2e time is STRAGGLER_PCT above the
 * median of the other nodes that have a value: among 2 nodes, above the
 * other one (the comparison with the fastest rank of NVIDIA's straggler
 * detection), among more, above a median its own value does not move.
 */
size_t perf_policy_feed(struct perf_policy *p, const struct perf_iter *it,
                        const double *node_e2e, const char *const *names,
                        struct perf_alert *out, size_t max);

/* ---- a node's median, in constant memory ------------------------------ */

/*
 * A histogram of PERF_SKETCH_BINS bins on a logarithmic scale, each
 * PERF_SKETCH_ALPHA wide relative to its value (the DDSketch idea): the
 * median of what was added is known within PERF_SKETCH_ALPHA of the true
 * one, as long as it does not fall in an edge bin.  The bins follow the
 * values: when a value falls outside, the window moves towards it and the
 * bins it leaves behind are merged into the edge bin (their counts, and so
 * the ranks of every value, are kept); it never moves past the median,
 * which is what keeps it exact.  About 530 bytes per node.
 */
#define PERF_SKETCH_BINS 128
#define PERF_SKETCH_ALPHA 0.01

struct perf_sketch {
	int32_t lo;            /* index of bins[0] */
	uint32_t bins[PERF_SKETCH_BINS];
	uint64_t n;
};

/* Add VALUE (> 0, finite) WEIGHT times (> 0). */
void perf_sketch_add(struct perf_sketch *s, double value, uint32_t weight);

/* The median of what was added; NaN when nothing was. */
double perf_sketch_median(const struct perf_sketch *s);

#endif
