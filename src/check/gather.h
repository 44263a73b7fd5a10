/*
 * gather.h - the coordinator's view of every node's check report.
 *
 * Pure data handling, no MPI: nodes' reports travel as the JSON payload
 * built by gather_payload(); the coordinator adds each one (or notes that
 * it never came), compares the nodes with each other, and renders one
 * consolidated result as text, JSON and events.
 */
#ifndef VIGIL_GATHER_H
#define VIGIL_GATHER_H

#include <stdbool.h>
#include <stdio.h>
#include <cJSON.h>

#include "check/check.h"
#include "lib/events.h"

struct gather_node {
	int rank;
	char *node;                /* name the node gave; "rank N" if none arrived */
	bool arrived;              /* a well-formed report arrived in time */
	char *error;               /* why there is no usable report, or NULL */
	struct check_report report;/* the node's checks, plus "consistency" if added */
};

struct gather {
	struct gather_node *nodes; /* indexed by rank */
	int n;
};

/*
 * The payload a node sends: {"node": NODE, "rank": RANK, "report": {...}}
 * or, when it could not run its checks, {"node", "rank", "error": ERROR}.
 * Returns a malloc'd string or NULL on allocation failure.
 */
char *gather_payload(const char *node, int rank, const struct check_report *r,
                     const char *error);

/* Prepare for N ranks.  Returns 0 or -ENOMEM. */
int gather_init(struct gather *g, int n);

/*
 * Record what RANK sent: PAYLOAD, or NULL when nothing arrived within
 * TIMEOUT_S (used in the message).  A malformed payload is recorded as an
 * error for that node.  Returns 0 or -ENOMEM.
 */
int gather_add(struct gather *g, int rank, const char *payload, double timeout_s);

/*
 * Compare slot count, slot models and driver version across the nodes that
 * reported.  The most common value is the reference (ties go to the value
 * of the lowest rank); each node that differs gets a failing "consistency"
 * result naming its value and the reference.
 */
void gather_consistency(struct gather *g);

/* A node's verdict: FAIL if it has no usable report. */
enum verdict gather_node_verdict(const struct gather_node *n);

/* Number of nodes whose verdict is FAIL. */
int gather_failed(const struct gather *g);

/*
 * Text for people: one line per failing node,
 *   "vigil: NODE (rank R): CHECK: REASON"  (+ " (and K more)")
 * then "vigil: F of N nodes unhealthy", or, when all pass, one line
 *   "vigil: all N nodes healthy (S slots each: MODELS; driver D)".
 * With VERBOSE, warnings get lines too.
 */
void gather_print(FILE *f, const struct gather *g, bool verbose);

/*
 * {"verdict": "pass|warn|fail", "nodes_total": N, "nodes_failed": F,
 *  "nodes": [{"node", "rank", "verdict", "error"?, "report"?}, ...]}
 */
cJSON *gather_to_json(const struct gather *g);

/*
 * One "check" event per check per node, a "node_lost" event per node that
 * did not report, "consistency" events, then one "verdict" event.
 * Returns 0 or the first negative errno.
 */
int gather_write_events(const struct gather *g, struct events *ev);

void gather_free(struct gather *g);

#endif
