/*
 * series.h - every node's e2e time over the job's iterations, kept by the
 * coordinator in bounded memory for the end of the job: the event log's
 * "series" events and the report's "e2e_series" (`vigil report --plot`
 * draws them).
 *
 * The reductions hand the coordinator groups of iterations (jobperf.h:
 * single iterations while the training prints slowly enough, else groups
 * of a power of two), with every node's e2e time for the group.  The
 * series keeps one point per group, up to CAP points; when it is full,
 * neighbours are merged pairwise (CAP/2 points, each holding twice as
 * many groups as before) and from then on each new point gathers as many
 * groups as the merged ones hold.  So every point holds the same number
 * of groups (the last one perhaps fewer, while it fills), a long job
 * keeps its shape, and the memory is CAP points per node, fixed at the
 * start.  A merged point covers the iterations of both halves and its
 * value is their mean weighted by the iterations each node had a value
 * for; a node without a value for a group (lost, left out of an attempt)
 * has none there, and the group does not count for it.
 *
 * Costs: perf_series_add() is O(nodes), merges included (amortised: a
 * merge of CAP points per node comes once every CAP/2 points).
 */
#ifndef VIGIL_SERIES_H
#define VIGIL_SERIES_H

#include <stddef.h>

#include <cJSON.h>

/* Points kept per node: at most SERIES_CAP_MAX, fewer when many nodes
 * share SERIES_POINTS_MAX, never fewer than SERIES_CAP_MIN. */
#define SERIES_CAP_MAX 512
#define SERIES_CAP_MIN 16
#define SERIES_POINTS_MAX (1u << 20)

struct perf_series;

/* The points kept per node for a job of NODES nodes (even, within the bounds above). */
size_t perf_series_cap(int nodes);

/* A series for NODES nodes, CAP points each (even, >= 2).  NULL with errno. */
struct perf_series *perf_series_new(int nodes, size_t cap);

/* NULL is a no-op. */
void perf_series_free(struct perf_series *s);

/*
 * The group of iterations FIRST..LAST (1-based, FIRST <= LAST), E2E[r]
 * each node's e2e time for it in ms (not finite or <= 0: none).  Groups
 * come in order; one that does not start after the last is dropped.
 */
void perf_series_add(struct perf_series *s, size_t first, size_t last, const double *e2e);

/* Points kept (every node has this many slots; some may hold no value). */
size_t perf_series_len(const struct perf_series *s);

/* Groups each full point holds (1 until the first merge, then 2, 4, ...). */
size_t perf_series_stride(const struct perf_series *s);

/*
 * Point K: the iterations it covers in *FIRST..*LAST, and NODE's e2e
 * there (ms; NaN where the node had none).
 */
double perf_series_point(const struct perf_series *s, int node, size_t k, size_t *first,
                         size_t *last);

/*
 * NODE's points as a JSON array of [first, last, e2e_ms] (points where it
 * had no value left out), caller owns.  NULL on ENOMEM.
 */
cJSON *perf_series_json(const struct perf_series *s, int node);

#endif
