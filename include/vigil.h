/*
 * vigil.h - public interface of vigil: its version, exit codes and the
 * event schema.
 *
 * Batch scripts and site tooling read these; they are stable across minor
 * releases.  doc/vigil.1 lists the same values.
 */
#ifndef VIGIL_H
#define VIGIL_H

/* VIGIL_VERSION, "0.1.0": configure writes it from the package's version. */
#include "vigil_version.h"

/*
 * Exit status.
 *
 * When vigil supervises a training it exits with the training's own status,
 * 128+N when the training died of signal N, and 126/127 when the command
 * could not be executed (the shell's convention).  The agent's own outcomes
 * use the codes below, chosen outside 0..2, 126..165 and the common
 * application range so that Slurm's RequeueExit / RequeueExitHold can name
 * them without catching a training's own failure.
 */
enum vigil_exit {
	VIGIL_EXIT_OK = 0,
	VIGIL_EXIT_USAGE = 64,      /* bad command line (sysexits EX_USAGE) */
	VIGIL_EXIT_CONFIG = 78,     /* bad configuration file (EX_CONFIG) */
	VIGIL_EXIT_UNHEALTHY = 80,  /* a check failed: node unhealthy, pre-check no-go */
	VIGIL_EXIT_REQUEUE = 81,    /* checkpointed after a fault or signal: requeue me */
	VIGIL_EXIT_NO_REQUEUE = 82, /* fault, but resumes exhausted: do not requeue */
	VIGIL_EXIT_EXPIRED = 83,    /* the time limit was reached (state "expired") */
	VIGIL_EXIT_INTERNAL = 84,   /* the agent itself failed (MPI, system error) */
};

/*
 * Events are JSON lines (one object per line, UTF-8), written with
 * `--events FILE`.  Every event carries these members:
 *
 *   "time"     string  UTC, RFC 3339 with milliseconds: "2026-11-20T23:35:08.123Z"
 *   "node"     string  node name (hostname, or VIGIL_NODE_NAME)
 *   "rank"     number  MPI rank of the agent that observed it (0 when alone)
 *   "kind"     string  one of the VIGIL_EVENT_* kinds below
 *   "severity" string  "info", "warning" or "error"
 *   "message"  string  one human-readable line
 *   "details"  object  kind-specific members, documented in vigil.1
 *
 * The coordinator writes the events of every node, so "node" and "rank"
 * name the node the event is about, not the writer.
 */
#define VIGIL_EVENT_CHECK       "check"       /* one check on one node */
#define VIGIL_EVENT_CONSISTENCY "consistency" /* nodes disagree (slots, driver) */
#define VIGIL_EVENT_NODE_LOST   "node_lost"   /* a node did not report in time */
#define VIGIL_EVENT_VERDICT     "verdict"     /* the job-wide go/no-go */
#define VIGIL_EVENT_LAUNCH      "launch"      /* a node started its training */
#define VIGIL_EVENT_EXIT        "exit"        /* a node's training ended */
#define VIGIL_EVENT_STOP        "stop"        /* the coordinator stops every training */
#define VIGIL_EVENT_FAULT       "fault"       /* the inspection found a problem on a node */
#define VIGIL_EVENT_CHECKPOINT  "checkpoint"  /* every training is told to save */
#define VIGIL_EVENT_RESTART     "restart"     /* the training starts again (restart, elastic) */
#define VIGIL_EVENT_PERF        "perf"        /* periodic timing summary across nodes */
#define VIGIL_EVENT_ALERT       "alert"       /* a performance alert: ratio or straggler */
#define VIGIL_EVENT_SERIES      "series"      /* at the end: a node's e2e time over the iterations */
#define VIGIL_EVENT_JOB         "job"         /* the job ended: state and status */
#define VIGIL_EVENT_HANG        "hang"        /* the training hung: detected, then its forensics */
#define VIGIL_EVENT_STALL       "stall"       /* an agent was late (stopped, starved): nobody blamed */
#define VIGIL_EVENT_USAGE       "usage"       /* what the trainings and boards used so far: ranges */
#define VIGIL_EVENT_STAGE       "stage"       /* a node's data staging ended (or its preparation failed) */
#define VIGIL_EVENT_ACCOUNT     "account"     /* at the end: where the iteration time went */

/*
 * Job states, as training platforms name them; the final report and the
 * "job" event carry one.  ("queued" belongs to the batch system.)
 */
#define VIGIL_STATE_RUNNING   "running"
#define VIGIL_STATE_SUCCEEDED "succeeded"
#define VIGIL_STATE_ERROR     "error"
#define VIGIL_STATE_STOPPED   "stopped"  /* ended by a signal to the agents (cancel) */
#define VIGIL_STATE_EXPIRED   "expired"  /* ended by the time limit */

#define VIGIL_SEVERITY_INFO    "info"
#define VIGIL_SEVERITY_WARNING "warning"
#define VIGIL_SEVERITY_ERROR   "error"

#endif /* VIGIL_H */
