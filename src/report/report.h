/*
 * report.h - what an event log (`--events`) says about a job, for people:
 * the library behind `vigil report EVENTS [--json] [--plot FILE.svg]`
 * (the command itself is cmd_report(), cmd.h).
 *
 * The log is read leniently: blank lines are skipped, a line that is not a
 * JSON object with a string "kind" is counted as malformed (the summary
 * says how many and where) and skipped, and kinds this version does not
 * know are ignored.  A torn line, half an event with the next event
 * written on after it (what a full disk leaves), is malformed too, but
 * the event glued to it is read, and when the half was a "job" event the
 * run it ended still ends there (state "?").  A requeued job appends to the log of its earlier
 * runs: every "job" event ends a run, and the report describes the last
 * run (the events after the previous "job" event), naming the earlier
 * runs' outcomes; a log whose last run has no "job" event yet describes a
 * job still running (or an agent that died).
 *
 * What the summary holds:
 *   the job's state, exit status and reason ("job" event), its time span;
 *   the pre-check's verdict and failed checks ("verdict", "check");
 *   every node with its last exit, or lost ("exit", "node_lost"), its
 *   faults and straggler alerts;
 *   faults, lost nodes, checkpoints, restarts and stops, in order;
 *   performance from the "perf" summaries and the nodes' "series":
 *   iterations, e2e time min / median / max (the median over every
 *   node's points: its "series" when the log has them, each point
 *   weighted by the iterations it covers, else the summaries' "node_e2e",
 *   else the summaries' means), hardware time, the hw/e2e ratio, the
 *   slowest node by median e2e (or, without per-node values, the node
 *   most often slowest), and the alerts ("alert");
 *   what the trainings and boards used, as ranges over the job (the last
 *   "usage" event).
 *
 * --json prints the same as one object:
 *   file, events, malformed_lines, malformed_at (the first line numbers),
 *   torn_lines, torn_at (the first line numbers),
 *   runs, earlier_runs [{state, exit_code, ended}],
 *   job {state, exit_code, reason, ended} (null while unfinished),
 *   first_event, last_event, seconds, precheck (verdict), checks_failed [],
 *   nodes [{node, rank, state ("exited", "lost", "unknown"), exit_code,
 *           signal, error, faults, straggler_alerts, slow, median_e2e_ms}],
 *   faults [], lost [], checkpoints [], restarts [], stops []
 *     (each {time, node?, rank?, severity?, message}),
 *   performance {summaries, iterations, e2e_ms {min, median, max},
 *                ratio {min, mean, max}, hw_mean_ms, slowest_node} or null,
 *   alerts [{time, kind, iter, node, rank, value, message}],
 *   usage: the last "usage" event's details (usage.h: the ranges of the
 *     training's CPU and memory and of the boards' use) or null,
 *   chain: where the time went (report_cost.h), or null: key, attempts
 *     [{state, started (the allocation's start when known, else
 *     agent_started), agent_started, allocation_started, ended (seconds
 *     since the epoch), seconds,
 *     gap_before_s, requeue_delay_s and queue_wait_s (the gap split at
 *     Slurm's eligible time of the attempt's allocation), iterations, redone_iterations, checkpoint_confirmed,
 *     split_s {launch, precheck, staging, start, productive, straggler, detection,
 *     checkpoint, stop, redone, other}}], elapsed_s, productive_s, ettr,
 *     requeue_delay_s, queue_wait_s (null when some gap is not split),
 *     seconds {the causes and between_attempts}, shares {the same / elapsed}.
 *     The chain is the runs of the log with the last run's key (the
 *     "account" event's: Slurm's job id, or the --state file); a run
 *     without one is a chain of its own.
 * Unknown figures are null.
 * --plot draws e2e time per node over iterations as SVG: one line with
 * hollow markers per node (or min / mean / max across nodes when the log
 * has no per-node values), from the same points as the medians; the
 * job's median as the summary prints it (report_fmt_ms()); a dashed
 * vertical line per alert, slow nodes (named by a straggler alert)
 * flagged in the legend.
 */
#ifndef VIGIL_REPORT_H
#define VIGIL_REPORT_H

#include <stdio.h>
#include <cJSON.h>

struct report;

/*
 * Read the event log at PATH ("-": standard input).  Returns 0, or a
 * negative errno when the file cannot be opened or read (malformed lines
 * are not errors), or -ENOMEM.  On failure *OUT is NULL.
 */
int report_load(const char *path, struct report **out);

/* As report_load() from FP, read to its end (the caller closes it); NAME
 * stands for the file in the summary. */
int report_load_stream(FILE *fp, const char *name, struct report **out);

/* NULL is a no-op. */
void report_free(struct report *r);

/* Lines that were not events. */
size_t report_malformed(const struct report *r);

/* Torn lines (among the malformed) from which an event was recovered;
 * the first line numbers in *LINES, how many of them in *NLINES (either
 * may be NULL). */
size_t report_torn(const struct report *r, const size_t **lines, size_t *nlines);

/* The summary for people.  Returns 0 or -EIO when writing failed. */
int report_print(const struct report *r, FILE *out);

/* The summary as one object (caller frees).  NULL on ENOMEM. */
cJSON *report_json(const struct report *r);

/*
 * The chain's time (report_cost.h) as a Prometheus text file: gauges
 * vigil_chain_info{key}, vigil_chain_attempts, vigil_chain_elapsed_seconds,
 * vigil_chain_ettr_ratio, vigil_chain_time_seconds{cause},
 * vigil_attempt_time_seconds{attempt,cause}, counters
 * vigil_chain_requeues_total and vigil_chain_iterations_total; nothing
 * without an attempt.  Returns 0 or -EIO when writing failed.
 */
int report_metrics(const struct report *r, FILE *out);

/* The SVG plot.  Returns 0 or -EIO when writing failed. */
int report_plot(const struct report *r, FILE *out);

#endif
