/*
 * job.h - the state of one `vigil run` job on one agent, shared by the
 * files that make up the command: run.c (this node: start-up, the
 * training, its output and signals, the loop), coord.c (the coordinator's
 * decisions, the report, the end of the job) and jobperf.c (performance
 * detection).  Private to them; nothing else includes it.
 */
#ifndef VIGIL_JOB_H
#define VIGIL_JOB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

#include "check.h"
#include "modes.h"
#include "perf.h"
#include "run.h"

struct child;
struct events;
struct inspect;
struct linebuf;
struct loop;
struct loop_timer;
struct metrics;
struct output;
struct peer;
struct peer_gather;
struct peer_reduce;
struct slot;

#define TAIL_LINES 20            /* stderr lines kept for the report */
#define TAIL_LINE_MAX 512
#define READ_CHUNK (128u << 10)  /* as cat reads; larger reads made the
                                    * producer wait longer on the pipe lock */
#define READS_PER_TURN 4         /* reads per wakeup before others get a turn */
#define OUTPUT_CAP (1u << 20)    /* bytes of output held while our reader is slow */
#define DRAIN_MS 2000            /* after the child exits, wait this long for EOF */
#define LOST_AFTER_STOP_S 15.0   /* beyond the grace: a node that still has not reported */
#define STOP_AFTER_CKPT_MS 5000  /* TERM to KILL once the checkpoint's grace is over */
#define PERF_WINDOW 64           /* iterations per reduction, and kept ahead of the slowest node */
#define PERF_HIST 4096           /* recent e2e times per node kept for the report's medians */
#define SCAN_LINE_MAX 4096       /* timing lines are short; longer lines are cut for scanning */

struct node_result {
	bool have;
	bool lost;                /* declared lost: no heartbeat within the timeout */
	bool idle;                /* this node ran no training (horovod off the coordinator) */
	char node[256];
	int exit_code;
	int signal;               /* the signal that ended the training, or 0 */
	int agent_signal;         /* a TERM/INT/HUP the agent received, or 0 */
	char error[512];          /* could not start: why */
	cJSON *tail;              /* last stderr lines */
	double seconds;
};

struct job {
	const struct run_opts *o;
	const struct config *cfg;
	struct peer *p;
	int rank, size;
	char node[256];
	struct loop *loop;
	int sigfd;
	sigset_t oldmask;
	struct events *ev;
	double t0;

	/* this node's training */
	struct mode_launch launch;
	struct child *child;
	struct output *out, *err;
	int cout, cerr;           /* the child's stdout/stderr read ends, -1 at EOF */
	bool exited;
	struct loop_timer *kill_timer, *drain_timer;
	bool stopping;
	int agent_signal;
	struct linebuf *errlines;
	char *tail[TAIL_LINES];
	int ntail, tailnext;
	bool result_sent;
	char start_error[512];
	int start_code;

	/* the coordinator's view */
	struct node_result *results;
	int nresults;
	bool job_stopping;
	int first_fail;
	struct loop_timer *lost_timer;

	/* what discovery found here */
	const char *vendor;       /* NULL on a CPU node */
	size_t nslots;
	struct slot *slots;

	/* resilience, on this node */
	cJSON *plan;              /* the coordinator's plan, updated by restarts */
	struct mode_node *mnodes;
	bool member;              /* runs a training in this attempt */
	int attempt;              /* 0, then 1.. after restarts (VIGIL_RESTART_COUNT) */
	bool ckpt_sent;
	struct inspect *insp;
	struct loop_timer *ckpt_timer;
	char **reported;          /* findings already sent: "what device verdict" */
	size_t nreported;

	/* resilience, at the coordinator */
	double *last_seen;        /* monotonic time of each rank's last message */
	bool *faulty;             /* nodes to avoid: faults, lost */
	bool *in_attempt;         /* ranks that run a training in this attempt */
	bool checkpointing;
	int end_code;             /* 81 or 83 once the job checkpoints to end; 84: a node lost */
	char end_reason[512];
	bool restarting;          /* start again when every result is in */
	int restarts;
	cJSON *attempts;          /* what ended each attempt, for the report */
	int resumes_done;         /* earlier requeues of this job */

	/* performance detection, on this node */
	struct linebuf *outlines; /* the training's stdout, scanned for timing lines */
	struct perf_node *perf;
	struct peer_reduce *red;  /* the reduction in flight, one at a time */
	size_t perf_base;         /* iterations complete on every node */
	double perf_last;         /* when the coordinator last started a reduction */
	int cycles_started;       /* reductions this node started */
	int cycles_due;           /* reductions the coordinator started (ticks) */
	bool perf_moving;         /* the last reduction found new iterations */
	double *red_buf, *red_gather;

	/* performance detection, at the coordinator */
	struct perf_policy *policy;
	struct perf_iter last_iter;
	bool have_iter;
	double summary_last;
	double *hist;             /* recent e2e per rank (PERF_HIST each), for medians */
	size_t *nhist;
	cJSON *alerts;            /* every alert, for the report */
	struct metrics *metrics;  /* --metrics */
	double metrics_last;
	pid_t notifiers[16];      /* --notify commands not yet known to be done */

	/* the end */
	bool finishing;           /* coordinator: every result is in */
	bool finished;
	int exit_code;
	bool clean;
	double hold;              /* --hold-on-failure: seconds to keep the allocation */
};

/* ---- run.c: shared helpers ---------------------------------------------- */

/* CLOCK_MONOTONIC in seconds. */
double job_now(void);

/* O's string (number) member KEY, or DFLT when absent or of another type. */
const char *job_str(const cJSON *o, const char *key, const char *dflt);
double job_num(const cJSON *o, const char *key, double dflt);

/* Append an event to --events (coordinator only; a no-op elsewhere); takes DETAILS. */
void job_event(struct job *j, const char *node, int rank, const char *kind,
               const char *severity, const char *message, cJSON *details);

/* A TCP port free on this node now, or a negative errno. */
int job_free_port(void);

/* ---- coord.c: the coordinator --------------------------------------------- */

/* Go or no-go from every node's pre-check report; the plan as JSON text. */
char *coord_plan(struct job *j, struct peer_gather *pg);

/* A node's RESULT and NOTE messages. */
void coord_take_result(struct job *j, int rank, const char *text);
void coord_take_note(struct job *j, int rank, const char *text);

/* Loop timers: lost nodes by heartbeat; the time limit. */
long coord_on_hbcheck(struct loop *l, void *arg);
long coord_on_time_limit(struct loop *l, void *arg);

/* Every healthy training saves, then the job ends with CODE (0: it starts again). */
void coord_checkpoint(struct job *j, const char *why, int code);

/* The job's state so far: succeeded, error, stopped, expired. */
const char *coord_state(const struct job *j);

/* RANK's node name, from the plan. */
const char *coord_host(const struct job *j, int rank);

/* ---- jobperf.c: performance detection --------------------------------------- */

/* Once per loop turn: finish the reduction in flight, start the next one. */
void jobperf_cycle(struct job *j);

/* Coordinator, at the end: one more reduction for the last iterations. */
void jobperf_final(struct job *j);

/* Before MPI_Finalize: finish the reductions started; false on timeout. */
bool jobperf_drain(struct job *j, double timeout_s);

/* Coordinator: the one-line summary and its event; the --metrics file. */
void jobperf_summary(struct job *j);
void jobperf_metrics(struct job *j, bool force);

/* The median of V[N] (sorts V). */
double jobperf_median(double *v, size_t n);

#endif
