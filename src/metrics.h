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
 *   vigil_iteration_e2e_ms{stat="min|mean|max"}       the last iteration, across nodes
 *   vigil_iteration_hw_ms{stat="min|mean|max"}
 *   vigil_iteration_hw_e2e_ratio{stat="min|mean|max"}
 *   vigil_node_e2e_ms{node="n1"}            each node's last e2e time
 *   vigil_alerts_total{kind="ratio|straggler"}
 *   vigil_nodes{state="up|lost"}
 *
 * A family nothing was set for yet is left out (no made-up zeros for
 * timings), except the job state, the iteration and alert counters and the
 * node counts, which start at 0.  Label values are escaped as the format
 * requires (backslash, double quote, newline).  Pure bookkeeping until
 * metrics_write(); nothing here may block but that call's file I/O.
 */
#ifndef VIGIL_METRICS_H
#define VIGIL_METRICS_H

#include <stdint.h>

struct metrics;

/* Across nodes, for one iteration. */
struct metrics_stats {
	double min, mean, max;
};

/* NULL with errno set (ENOMEM). */
struct metrics *metrics_new(void);

/* NULL is a no-op. */
void metrics_free(struct metrics *m);

/*
 * The job's state: one of the VIGIL_STATE_* names of <vigil.h>.  Returns 0,
 * or -EINVAL for another name (the state is then unchanged).
 */
int metrics_set_state(struct metrics *m, const char *state);

/* Iterations complete everywhere so far. */
void metrics_set_iterations(struct metrics *m, uint64_t done);

/* The last complete iteration's hardware and e2e times (ms) and ratio. */
void metrics_set_iteration(struct metrics *m, const struct metrics_stats *hw,
                           const struct metrics_stats *e2e,
                           const struct metrics_stats *ratio);

/*
 * Node NODE's e2e time (ms) in the last iteration.  Nodes keep the order in
 * which they were first set.  Returns 0 or -ENOMEM.
 */
int metrics_set_node_e2e(struct metrics *m, const char *node, double ms);

/*
 * Count one alert of KIND ("ratio", "straggler"; another kind gets its own
 * label value).  Returns 0 or -ENOMEM.
 */
int metrics_add_alert(struct metrics *m, const char *kind);

/* Nodes still reporting, and nodes lost. */
void metrics_set_nodes(struct metrics *m, unsigned up, unsigned lost);

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
