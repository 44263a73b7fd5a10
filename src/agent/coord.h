/*
 * coord.h - the coordinator of `vigil run`: one record per rank and the
 * job's phase, driven by what the nodes report and by time.
 *
 * A state machine with no I/O of its own: time comes in as an argument
 * (the loop's clock, in seconds), messages go out through ops->send, and
 * events and lines for people through ops->event and ops->say.  Nothing
 * here calls MPI, reads a clock or touches a file, so every decision
 * (go/no-go, stop, checkpoint, restart, elastic, requeue, lost node, time
 * limit, exit status) is unit-tested with a fake clock (tests/unit/
 * test_coord.c).
 *
 * The phases, and the events that move between them (the table in
 * coord.c is the whole truth; coord_next() reads it, and each move is
 * logged by name at debug level):
 *
 *   PLANNING --go--------> RUNNING          the plan starts the training
 *   PLANNING --no-go-----> DONE             ... or refuses to
 *   PLANNING --adopt-----> RUNNING          a successor takes over (and at
 *                                           once checkpoints or stops)
 *   RUNNING --checkpoint--> CHECKPOINTING   a fault with --resume, the batch
 *                                           system's signal, the time limit,
 *                                           a lost node (elastic), reschedule
 *   RUNNING --stop--------> STOPPING        a training failed, the time limit
 *   CHECKPOINTING --stop--> STOPPING          without --resume, a lost node
 *   any of those --reported--> FINISHING    every rank reported (or is lost)
 *   CHECKPOINTING, STOPPING --again--> RESTARTING   ... and the training
 *                                           starts again
 *   RESTARTING --restarted--> RUNNING       (--restart, elastic --min-nodes,
 *                                           a spare in a failed node's seat,
 *                                           a shrunk job grown back)
 *   RESTARTING --exhausted--> FINISHING     too few nodes left
 *   FINISHING --finished--> DONE            FINAL sent to every live rank
 *
 * Hot spares (--spares K): the last K ranks wait; the training's ranks
 * are seats, RANK i the i-th member of the plan or the restart, so that
 * a spare takes a failed node's seat and the world size stays.
 *
 * Cost: every input is O(1) but for those that address every rank
 * (commands, the heartbeat scan, the report, a spare's recovery), which
 * are O(N); memory is
 * O(N) in the number of ranks with a small constant (the stderr tail is
 * kept only for nodes whose training failed).
 */
#ifndef VIGIL_COORD_H
#define VIGIL_COORD_H

#include <stdbool.h>

#include <cJSON.h>

#include "check/gather.h"
#include "comm/msg.h"
#include "lib/verdict.h"

struct coord;

enum coord_phase {
	COORD_PLANNING,       /* from coord_new() until the plan or the takeover */
	COORD_RUNNING,
	COORD_CHECKPOINTING,
	COORD_STOPPING,
	COORD_RESTARTING,
	COORD_FINISHING,
	COORD_DONE,
};

enum coord_event {
	COORD_EV_GO,          /* the plan starts the training */
	COORD_EV_NOGO,        /* the plan refuses to */
	COORD_EV_ADOPT,       /* a successor takes over from the plan */
	COORD_EV_CHECKPOINT,  /* every healthy training saves */
	COORD_EV_STOP,        /* every training ends */
	COORD_EV_REPORTED,    /* every rank reported or is lost: the job ends */
	COORD_EV_AGAIN,       /* every rank reported or is lost: start again */
	COORD_EV_RESTARTED,
	COORD_EV_EXHAUSTED,   /* too few nodes to start again */
	COORD_EV_FINISHED,    /* FINAL went out */
};

/* "running", "no-go", ...; "?" for a value out of range. */
const char *coord_phase_name(enum coord_phase p);
const char *coord_event_name(enum coord_event ev);

/* The phase EV leads to from FROM, or -1: the table has no such row, and
 * the event changes nothing there.  Pure (for tests and tools). */
int coord_next(enum coord_phase from, enum coord_event ev);

struct coord_opts {
	int size;                   /* ranks in the job */
	int self;                   /* the coordinator's rank */
	bool precheck;              /* no-go on pre-check verdicts */
	enum verdict precheck_level;/* ... at this verdict or worse */
	bool verbose;               /* the pre-check's summary lists warnings too */
	bool resume;                /* checkpoint and requeue on faults, signals, time */
	int restart_max;            /* fault restart: attempts after the first */
	int min_nodes;              /* elastic: go on with at least this many; 0 off */
	int spares;                 /* hot spares: the last this many ranks wait (--spares) */
	int max_resumes;            /* -1: no limit */
	int resumes_done;           /* earlier requeues of this job */
	bool perf_reschedule;       /* a performance alert checkpoints and requeues */
	double grace_s;             /* checkpoint/stop to KILL on the nodes */
	double heartbeat_s;         /* how often nodes send heartbeats */
	double heartbeat_timeout_s; /* a node silent this long is lost */
	double ckpt_lead_s;         /* with --resume: checkpoint this long before the limit */
	double hold_s;              /* --hold-on-failure */
	const char *master_addr;    /* --master-addr, or NULL: the first member's address */
	int master_port;            /* --master-port, or 0: ops->free_port() */
	const char *job_id;         /* for messages about the allocation (SLURM_JOB_ID); NULL */
	bool unique_hosts;          /* hostfile modes: ranks sharing a host name are a no-go
	                             * (VIGIL_EXIT_USAGE); otherwise a warning */
};

struct coord_ops {
	/* Send TEXT, a message of KIND, to RANK (the coordinator's own rank
	 * included).  Returns 0 or a negative errno (logged by the caller). */
	int (*send)(void *arg, int rank, enum msg_kind kind, const char *text);
	/* An event about NODE/RANK (kinds and severities: include/vigil.h);
	 * takes DETAILS (may be NULL). */
	void (*event)(void *arg, const char *node, int rank, const char *kind,
	              const char *severity, const char *message, cJSON *details);
	/* A line for the people watching the job (no trailing newline). */
	void (*say)(void *arg, const char *line);
	/* A TCP port free on the coordinator's node now, or a negative errno. */
	int (*free_port)(void *arg);
	void *arg;
};

/*
 * A coordinator for O->size ranks, at time NOW (the job's start for its
 * report).  O and OPS are copied (O's strings are borrowed and must
 * outlive C).  NULL with errno on allocation failure or a bad size.
 */
struct coord *coord_new(const struct coord_opts *o, const struct coord_ops *ops, double now);
void coord_free(struct coord *c);  /* NULL is a no-op */

/* ---- the plan ----------------------------------------------------------- */

/*
 * What RANK said of itself before the plan: the address other nodes
 * reach it by and its slot count (the host name comes from the gather).
 * Strings are copied.  Returns 0 or -ENOMEM.
 */
int coord_set_node(struct coord *c, int rank, const char *addr, int slots);

/*
 * Go or no-go from every node's pre-check report G: a node that sent
 * nothing, or whose verdict reaches the pre-check level, is left out;
 * elastic (--min-nodes) goes on with the rest when enough remain, else
 * the job does not start.  Ranks that share a host name (agents on one
 * host) are a no-go with VIGIL_EXIT_USAGE under O->unique_hosts (a
 * hostfile names each host once), a warning otherwise; finding them is
 * O(N log N).  Fills PLAN (its strings and arrays are owned
 * by C and valid until the next call or coord_free(); job and finalize
 * are left for the caller) and says once what was decided.  On go, the
 * coordinator is RUNNING from NOW, on no-go DONE.  Returns 0, or -ENOMEM
 * (the coordinator then stays PLANNING).
 */
int coord_plan(struct coord *c, const struct gather *g, double now, struct msg_plan *plan);

/* What a successor takes over with (coord_adopt()). */
struct coord_adoption {
	const struct msg_plan *plan; /* every rank's host, address and slots, the spares */
	const int *members;          /* the current attempt's members, in seat order */
	int nmembers;
	int attempt;                 /* ... which the trainings run */
	const int *lost;             /* the coordinator, then the successors before this one */
	int nlost;                   /* in line, silent too */
	const char *why;             /* why the coordinator is lost */
	double lost_at;              /* its last word, on the clock of NOW */
};

/*
 * A successor takes over (takeover.c): the job's coordinator fell silent
 * and a majority of the nodes agree (watch.h).  The records come from
 * A's plan and members.  A's lost ranks are lost and faulty, each with a
 * node_lost event: the first is the coordinator (A's why says why), the
 * others the successors before this one in line, silent too.  Every
 * training saves: with a healthy spare of the plan for each lost member
 * (--spares), the training then starts again with the spares in their
 * seats (the recovery timed from A's lost_at); else the job ends 81
 * (--resume), or every training stops (84).  The coordinator goes from
 * PLANNING through RUNNING to CHECKPOINTING or STOPPING, and runs as any
 * other from NOW.  Returns 0 or -ENOMEM.
 */
int coord_adopt(struct coord *c, const struct coord_adoption *a, double now);

/*
 * The job's time limit: absolute time END on the same clock as NOW, or a
 * negative value for none.  With --resume every node checkpoints
 * ckpt_lead_s before it, else the job is stopped at END.  May be called
 * again while the job runs (Slurm's end time moves when an administrator
 * changes the limit); a limit that already fired does not fire again.
 */
void coord_set_time_limit(struct coord *c, double end);

/* ---- what happens --------------------------------------------------------- */

/* Any message from RANK is a sign of life. */
void coord_heard(struct coord *c, int rank, double now);

/* RANK's training ended (or never started), as R says.  R is borrowed. */
void coord_result(struct coord *c, int rank, const struct msg_result *r, double now);

/*
 * The batch system cancelled the job (scancel; an agent's SIGTERM, and
 * Slurm said so): no checkpoint, no restart, no requeue.  A running job
 * stops (its trainings got SIGTERM from Slurm too); one that is already
 * checkpointing or stopping goes on.  Either way the job ends "stopped"
 * with 128 + SIGTERM and the reason names the cancel.
 */
void coord_cancel(struct coord *c, double now);

/* RANK's inspection found N, or the batch system's signal reached it. */
void coord_note(struct coord *c, int rank, const struct msg_note *n, double now);

/*
 * Performance detection named RANK (MESSAGE says why): with
 * --perf-action reschedule, the job checkpoints and requeues away from
 * it.  Ignored once the job is past running.
 */
void coord_alert(struct coord *c, int rank, const char *message, double now);

/*
 * RANK's heartbeat says its training printed ITERS iterations in this
 * attempt: after a recovery with a spare (--spares), the spare's first
 * iteration times it, from the fault (in the report's recoveries).
 */
void coord_progress(struct coord *c, int rank, double iters, double now);

/* What --on-hang does about a hung training (hang.h). */
enum coord_hang_policy {
	COORD_HANG_ALERT,    /* the event and --notify only */
	COORD_HANG_STOP,     /* every training stops; the job ends 84 */
	COORD_HANG_RESTART,  /* every training stops and starts again (--restart counts it) */
	COORD_HANG_REQUEUE,  /* every training stops, without a checkpoint (a hung
	                      * collective cannot save); the job ends 81 */
};

/*
 * The training is hung (WHY says how; the hang event is the caller's):
 * POLICY, with the node of SUSPECT (-1: nobody) faulty when it stops or
 * requeues, so that the exclude list names it.  Only while RUNNING; the
 * trainings' ends that follow are not failures of their own.
 */
void coord_hang(struct coord *c, int suspect, enum coord_hang_policy policy, const char *why,
                double now);

/*
 * Run what is due at NOW: the heartbeat scan (a node silent for the
 * timeout is lost), the wait for the results of trainings told to end,
 * the time limit.  Returns the absolute time of the next deadline, or a
 * negative value when none is pending; call again then (or earlier).
 *
 * A coordinator that was itself late blames nobody: when the scans are
 * further apart than the stall limit (stall.h: twice the heartbeat
 * interval, or half the timeout if that is less; the agent was stopped,
 * swapped out, starved of CPU), every node is given a fresh timeout from
 * NOW instead of being judged on silence the coordinator could not hear.
 * Nor does a coordinator that could not hear (stall.h: deaf, no quorum):
 * after a gap in what it hears from everyone, silence counts again only
 * once what the gap held back has had time to come, and a silent node is
 * named only while the coordinator hears at least as many of the others
 * as it does not; a coordinator that hears too few names itself.
 */
double coord_tick(struct coord *c, double now);

/*
 * In FINISHING, once the last timing reduction is done (or given up):
 * the job's status is decided, FINAL goes to every live rank (telling how
 * many reductions CYCLES were started, so each can finish them before
 * MPI_Finalize), and the phase becomes DONE.  Returns how many ranks
 * FINAL went to (none when called again).
 */
int coord_finish(struct coord *c, int cycles, double now);

/* ---- what it knows ---------------------------------------------------------- */

enum coord_phase coord_phase(const struct coord *c);

/* succeeded, error, stopped or expired (include/vigil.h); "running" before DONE. */
const char *coord_state(const struct coord *c);

/* The job's exit status (valid in DONE; the status so far before). */
int coord_exit_code(const struct coord *c);

/* RANK's node name, or "?" (O(1)). */
const char *coord_host(const struct coord *c, int rank);

bool coord_lost(const struct coord *c, int rank);
bool coord_faulty(const struct coord *c, int rank);

/* Ranks that are not lost / lost. */
int coord_up(const struct coord *c);
int coord_nlost(const struct coord *c);

/*
 * Hot spares (--spares): how many wait healthy, into *USED how many took a
 * failed node's place, into *RECOVERY_S the seconds from the fault to the
 * first iteration of the last recovery (NAN: none timed yet).  O(N).
 */
int coord_spares(const struct coord *c, int *used, double *recovery_s);

/* Ranks that run a training in the current attempt. */
int coord_members(const struct coord *c);

/*
 * The attempt is ending (a phase past running, or a training's result is
 * in): the nodes' results and the last messages are due soon.
 */
bool coord_ending(const struct coord *c);

/* Every peer is known alive, so MPI_Finalize cannot wait on a lost one. */
bool coord_finalize_safe(const struct coord *c);

/*
 * Whether the job's end, not safe to finalize, is the coordinator's to
 * give mpirun (MPI_Abort with its status, run.c): a node was lost; not
 * when the coordinator named itself the node cut off, as the others
 * (mpirun --enable-recovery) go on without it.
 */
bool coord_abort_end(const struct coord *c);

/* How long to keep the allocation after the job (--hold-on-failure); 0. */
double coord_hold(const struct coord *c);

/*
 * The final report (the "--report FILE" document, without the
 * performance section and the end time, which the caller adds): state,
 * exit_code, reason, seconds, nodes with their outcome, faulty_nodes,
 * restarts, attempts, resumes, first_failure.  NULL on ENOMEM.
 */
cJSON *coord_report(const struct coord *c, double now);

/* The faulty nodes' names, one a line (for sbatch --exclude); malloc'd, "" if none. */
char *coord_exclude_list(const struct coord *c);

#endif
