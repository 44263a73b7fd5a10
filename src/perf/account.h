/*
 * account.h - where an attempt's iteration time went, kept by the
 * coordinator for the "account" event at the end of the job (what
 * `vigil report` splits an attempt's wall time with, report.h).
 *
 * Per group of iterations, every node's e2e time: the median across the
 * nodes is the pace of the typical node (productive time), the slowest
 * node's value minus the median is the time the job waited for it
 * (straggler time), each counted once per iteration of the group.  The
 * coordinator's own timing lines, as they come, date the iterations: the
 * first one's end and the last one's, on the real-time clock.
 *
 * Costs: perf_account_group() is O(nodes) (a selection, no sort);
 * perf_account_line() is O(1).  Pure: no clock is read here.
 */
#ifndef VIGIL_ACCOUNT_H
#define VIGIL_ACCOUNT_H

#include <stddef.h>

#include <cJSON.h>

struct perf_account {
	size_t iterations;      /* counted in the groups */
	double median_ms;       /* sum over iterations of the nodes' median e2e */
	double max_ms;          /* sum over iterations of the slowest node's e2e */
	double first_line;      /* real time (s) of the coordinator's first timing line; NAN: none */
	double first_line_ms;   /* its e2e time */
	double last_line;       /* real time (s) of its last timing line; NAN: none */
};

void perf_account_init(struct perf_account *a);

/*
 * The group of WIDTH iterations; E2E[0..N) every node's e2e time (ms; not
 * finite or <= 0: none).  SCRATCH holds N doubles (reordered freely).
 */
void perf_account_group(struct perf_account *a, size_t width, const double *e2e, size_t n,
                        double *scratch);

/* One of the coordinator's own timing lines, of E2E_MS, at real time NOW (s). */
void perf_account_line(struct perf_account *a, double now, double e2e_ms);

/*
 * The account as the event's details: iterations, median_ms, max_ms,
 * first_iteration_end and last_iteration_end (seconds since the epoch,
 * absent when unknown), first_iteration_ms.  NULL on ENOMEM.
 */
cJSON *perf_account_json(const struct perf_account *a);

/* Median of V[0..N) in O(N) expected, reordering V; NAN when N is 0. */
double perf_account_median(double *v, size_t n);

#endif
