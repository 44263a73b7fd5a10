/*
 * usage.h - what the training and its boards use, on the coordinator.
 *
 * Every inspection interval each node sends, in a note (msg_note.usage),
 * what its training uses and what its boards' vendor library says:
 *
 *   {"cpu_seconds": 1234.5,        user + system time of the training's processes
 *    "memory_bytes": 3221225472,   their resident memory now
 *    "processes": 9,
 *    "boards": [vhealth_usage_to_json()'s entries: {"index", "utilization",
 *               "memory_used_bytes", "memory_total_bytes",
 *               "temperature_celsius", "power_watts"}]}
 *
 * (any of them may be missing).  The coordinator puts the values into the
 * --metrics file (metrics.h) and keeps their range over the job: the
 * lowest and highest value seen, with the node (and board) that had it.
 * The ranges go into the event log as a "usage" event now and then and at
 * the end, for `vigil report`.  The training's CPU use is in cores: the
 * rise of its CPU seconds between two notes of a node over the time
 * between them.
 *
 * The cost of a note is that node's boards; the summary has the same size
 * for ten nodes as for ten thousand.  Values out of range (a utilisation
 * above 1, a negative size) are ignored, so a confused node cannot bend
 * the ranges.
 */
#ifndef VIGIL_USAGE_H
#define VIGIL_USAGE_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

struct usage;
struct metrics;

/* For a job of NRANKS nodes.  NULL with errno set. */
struct usage *usage_new(int nranks);

/* NULL is a no-op. */
void usage_free(struct usage *u);

/*
 * Node RANK, named NODE, sent V at NOW (seconds, any steady clock): the
 * values go into M (NULL: no metrics file) and the ranges.  Returns 0,
 * -EINVAL when RANK is out of range or V not an object (nothing taken),
 * or -ENOMEM.
 */
int usage_take(struct usage *u, struct metrics *m, int rank, const char *node, const cJSON *v,
               double now);

/* Notes taken since the last usage_summary(). */
bool usage_changed(const struct usage *u);

/*
 * The ranges so far, for the "usage" event's details:
 *   {"notes": N, "nodes": K (nodes heard from),
 *    "training_cpu_cores":        {"min", "min_node", "max", "max_node"},
 *    "training_memory_bytes":     {...},
 *    "board_utilization":         {"min", "min_node", "min_board", "max", ...},
 *    "board_memory_used_bytes":   {...},
 *    "board_temperature_celsius": {...},
 *    "board_power_watts":         {...}}
 * a range nothing was seen for left out.  Clears usage_changed().  NULL on
 * ENOMEM.
 */
cJSON *usage_summary(struct usage *u);

/*
 * One line for people from a summary (usage_summary(), or the details of a
 * "usage" event read back): "training 0.93-1.02 CPU cores, 118-131 MiB;
 * boards 7-93% busy, 1.0-40.0 GiB, 40-61 C, 88.0-612.3 W (max on n2 board
 * 0)", the parts seen only.  Into BUF of LEN bytes; "" when D has no
 * range.  Returns BUF.
 */
char *usage_describe(const cJSON *d, char *buf, size_t len);

#endif
