/*
 * metrics.h - the job's state and performance as a Prometheus text file,
 * for node_exporter's textfile collector
 * (--collector.textfile.directory; the file must end in ".prom").
 *
 * The coordinator keeps one struct metrics, updates it from its loop as
 * iterations complete and alerts fire, and rewrites the file now and
 * then.  The file holds gauges and counters in the text exposition format
 * (`# HELP`, `# TYPE`, `name{label="value"} number`):
 *
 *   vigil_job_state{state="running|succeeded|error|stopped|expired"}  1 for the current one
 *   vigil_iterations_total                  iterations complete on every node
 *   vigil_iteration_time_seconds_total{part="productive|straggler"}  this attempt's
 *                                           iteration time (account.h)
 *   vigil_iteration_e2e_seconds{stat="min|mean|max"}  the last iteration, across nodes
 *   vigil_iteration_hw_seconds{stat="min|mean|max"}
 *   vigil_iteration_hw_e2e_ratio{stat="min|mean|max"}
 *   vigil_node_e2e_seconds{node="n1"}       each node's last e2e time
 *   vigil_alerts_total{kind="ratio|straggler"}
 *   vigil_nodes{state="up|lost"}
 *   vigil_spares{state="waiting|used"}     with --spares only
 *   vigil_recovery_seconds                 fault to first iteration, the last
 *                                          recovery with a spare
 *
 * and, per node and board (the slot index), what the vendor's library
 * says, and per node what the training uses (in base units):
 *
 *   vigil_board_utilization_ratio{node="n1",board="0"}    0..1
 *   vigil_board_memory_used_bytes{node,board}
 *   vigil_board_memory_total_bytes{node,board}
 *   vigil_board_temperature_celsius{node,board}
 *   vigil_board_power_watts{node,board}
 *   vigil_training_cpu_seconds_total{node="n1"}          user + system
 *   vigil_training_memory_bytes{node="n1"}               resident
 *
 * A family nothing was set for yet is left out, and so is a sample whose
 * value is NaN (a board whose library does not give its power) (no made-up zeros for
 * timings), except the job state, the iteration and alert counters and the
 * node counts, which start at 0.  Label values are escaped as the format
 * requires (backslash, double quote, newline).  Pure bookkeeping until
 * metrics_write(); nothing here may block but that call's file I/O.
 */
#ifndef VIGIL_METRICS_H
#define VIGIL_METRICS_H

#include <stdint.h>
#include <stdio.h>

struct metrics;

/* Across nodes, for one iteration. */
struct metrics_stats {
	double min, mean, max;
};

/* NULL with errno set (ENOMEM). */
struct metrics *metrics_new(void);

/* Hot spares (--spares): WAITING and USED, and RECOVERY_S from the fault
 * to the first iteration of the last recovery (NAN: none yet). */
void metrics_set_spares(struct metrics *m, unsigned waiting, unsigned used, double recovery_s);

/* The # HELP and # TYPE lines of family NAME onto FP. */
void metrics_put_family(FILE *fp, const char *name, const char *type, const char *help);

/* S as a label value of the text format onto FP: backslash, double quote
 * and newline escaped (also for the files `vigil report --metrics` writes). */
void metrics_put_label(FILE *fp, const char *s);

/* NULL is a no-op. */
void metrics_free(struct metrics *m);

/*
 * The job's state: one of the VIGIL_STATE_* names of <vigil.h>.  Returns 0,
 * or -EINVAL for another name (the state is then unchanged).
 */
int metrics_set_state(struct metrics *m, const char *state);

/* Iterations complete everywhere so far. */
void metrics_set_iterations(struct metrics *m, uint64_t done);

/* The attempt's iteration time so far (account.h): at the median pace and
 * the slowest node's excess over it, in seconds. */
void metrics_set_account(struct metrics *m, double productive_s, double straggler_s);

/* The last complete iteration's hardware and e2e times (ms) and ratio. */
void metrics_set_iteration(struct metrics *m, const struct metrics_stats *hw,
                           const struct metrics_stats *e2e,
                           const struct metrics_stats *ratio);

/*
 * Node NODE's e2e time (ms) in the last iteration.  Nodes keep the order in
 * which any setter first named them; finding a node costs the same however
 * many the job has (a hash index).  Returns 0 or -ENOMEM.
 */
int metrics_set_node_e2e(struct metrics *m, const char *node, double ms);

/*
 * Count one alert of KIND ("ratio", "straggler"; another kind gets its own
 * label value).  Returns 0 or -ENOMEM.
 */
int metrics_add_alert(struct metrics *m, const char *kind);

/* Nodes still reporting, and nodes lost. */
void metrics_set_nodes(struct metrics *m, unsigned up, unsigned lost);

/* One board's use, as its vendor's library reports it; NAN for a value
 * the library does not give. */
struct metrics_board {
	double utilization;          /* busy fraction of the last sample, 0..1 */
	double memory_used_bytes;
	double memory_total_bytes;
	double temperature_celsius;
	double power_watts;
};

/* A metrics_board with every value NAN. */
void metrics_board_init(struct metrics_board *b);

/*
 * Board BOARD (the slot index, >= 0) of NODE.  A node's boards keep the
 * order in which they were first set.  Returns 0, -EINVAL for a negative BOARD, or
 * -ENOMEM.
 */
int metrics_set_board(struct metrics *m, const char *node, int board,
                      const struct metrics_board *b);

/*
 * The boards of NODE from the array vhealth_usage_to_json() builds on that
 * node ([{"index", "utilization", "memory_used_bytes", ...}], a value left
 * out when unknown), as it arrives in the node's note: an entry without a
 * valid "index", or a value of the wrong type or range, is skipped.
 * Returns the number of boards set, -EINVAL when USAGE is not an array,
 * or -ENOMEM.
 */
struct cJSON;
int metrics_set_boards_json(struct metrics *m, const char *node, const struct cJSON *usage);

/*
 * The training's use on NODE: CPU_SECONDS, user plus system time of its
 * processes so far (a counter: a fall reads as a reset), and MEMORY_BYTES
 * resident now.  NAN leaves a value out.  Returns 0 or -ENOMEM.
 */
int metrics_set_training_usage(struct metrics *m, const char *node, double cpu_seconds,
                               double memory_bytes);

/*
 * Replace PATH with the current values, atomically: the text goes to a
 * temporary file in PATH's directory (named ".BASENAME.XXXXXX", which the
 * textfile collector ignores), is synced and renamed over PATH, so a
 * reader sees either the previous file or the new one, whole.  The file is
 * mode 0644 (node_exporter usually runs as another user).  Returns 0 or a
 * negative errno; on failure PATH is unchanged and no temporary file is
 * left.  Blocking file I/O: fine in a loop callback for a local file.
 */
int metrics_write(const struct metrics *m, const char *path);

#endif
