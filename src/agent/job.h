/*
 * job.h - one agent's job, private to the files of `vigil run` in agent/:
 * run.c (the agent's phases and the routing of messages), survey.c (this
 * node's survey, the gather and the plan), takeover.c (the coordinator
 * lost: the watch, the orphan, the successor), finish.c (the
 * coordinator's end of the job) and jobfiles.c (the files the job
 * writes).
 *
 * struct job is the state they share; the functions below are run.c's,
 * the services the other three call back into.  Everything runs on the
 * agent's one loop: none of it may block.
 */
#ifndef VIGIL_JOB_H
#define VIGIL_JOB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "agent/phase.h"
#include "comm/msg.h"
#include "conf/config.h"
#include "conf/run_opts.h"
#include "lib/loop.h"

struct job {
	const struct run_opts *o;
	const struct config *cfg;
	struct peer *p;
	int rank, size;
	char name[256];
	char job_id[64];
	struct loop *loop;
	int sigfd;
	struct nudge *nudge;         /* wake-ups beside messages; NULL without */
	char nudge_at[64];           /* where this agent's nudges arrive */
	bool look_now;               /* a message to itself waits in MPI */
	double nudged_until;         /* look at MPI often until then: a message is on its way */
	sigset_t oldmask;
	struct events *ev;
	bool said_events;
	int events_lost;             /* events the log could not take (a full disk) */
	double t0;                   /* the agent's start, on the loop's clock */
	double alloc_start;          /* coordinator: Slurm's start of this allocation (s since
	                              * the epoch), 0: unknown (job_ask_alloc_start()) */
	double alloc_eligible;       /* and when the job became eligible to start, 0: unknown */
	enum phase phase;            /* changed by job_step() only */
	struct loop_timer *phase_timer;  /* ends the current phase if peers are late */

	char cgdir[4096];            /* a cgroup v2 directory delegated to us, or "" */
	char self[4096];             /* this program, for `vigil stage` */

	/* discovery and the gather (survey.c) */
	const char *vendor;
	struct slot *slots;
	size_t nslots;
	char *payload;
	struct peer_gather *pg;
	struct peer_bcast *bcast;    /* the plan, broadcast (send_plan()) */
	struct deferred {            /* what came while the plan was on its way */
		int src, tag;
		char *text;
	} *deferred;
	int ndeferred;
	char *description;           /* --dry-run */

	struct node *node;
	struct prep *prep;           /* staging and hooks (prep.h), NULL without them */
	struct coord *coord;         /* rank 0, or the successor after a takeover */
	struct incident_job *incidents; /* coordinator: for the site's node ledger */
	struct jobperf *perf;
	struct hangjob *hang;        /* coordinator: a hung training (hangjob.h); NULL */
	cJSON *hang_report;          /* ... the report's "hang" section (the last hang), NULL */
	struct usage *usage;         /* coordinator: what the trainings and boards use */
	double usage_next;           /* coordinator: the next "usage" event */
	char *perf_tick;             /* the encoded "perf" command */
	double next_end_time;        /* coordinator: next look at Slurm's end time; < 0 never */
	bool said_end_time;
	bool asked_cancel;           /* asked Slurm whether a SIGTERM was a cancel */
	bool cancelled;              /* ... and it was (scancel) */

	/* every other node: the watch on the coordinator (takeover.c, watch.c) */
	struct watch *watch;
	struct loop_timer *watch_timer;
	struct loop_timer *fine_timer;   /* wakes the loop for the next look at a reduction */
	char *plan_text;             /* the plan as it came, for a successor */
	char **early;                /* in line: results before the takeover, by rank */
	char lost_why[512];          /* why this node lost its coordinator */
	char *result_text;           /* this node's last RESULT, for a successor */
	bool held;                   /* lost the coordinator, its training saves: no MPI yet,
	                              * but to a successor that took over and reached it */
	double held_until;           /* ... at most until then */
	bool alone;                  /* nobody took over: ends once its training has */
	bool record;                 /* a record of this node's own is in place (jobfiles.c) */

	int exit_code;
	bool clean;                  /* MPI_Finalize is safe */
	/* Not clean, and the coordinator decided the status: it ends the job
	 * with MPI_Abort(exit_code) (peer_abort()), once the nodes it told
	 * said BYE, so that mpirun returns that status and not its own 1 for
	 * ranks that leave without MPI_Finalize.  The others say BYE and
	 * wait for it (ABORT_WAIT_S at most). */
	bool abort_end;              /* coordinator */
	int byes_due, byes;          /* coordinator: nodes told, BYEs heard */
	bool bye;                    /* another node: say BYE, wait for the abort */
	double hold;
};

/* ---- run.c: the phases --------------------------------------------------------- */

/* The loop's clock, in seconds. */
double job_now(const struct job *j);

/*
 * The phase moved by EV, through the table (phase.h), the move logged; an
 * EV the phase has no row for changes nothing.  The old phase's timer
 * goes; DEADLINE_MS >= 0 arms LATE (HOLD: its own default) to end the new
 * one.  EXIT stops the loop.
 */
void job_step(struct job *j, enum phase_event ev, long deadline_ms, loop_timer_fn *late);

/* The job ends here for this agent, with CODE (CLEAN: MPI_Finalize is safe). */
void job_leave(struct job *j, int code, bool clean);

/* The node's side, performance detection, and off it goes (or --dry-run's gather). */
void job_launch(struct job *j);

/* The job is over for this agent: output, messages and reductions, bounded. */
void job_drain(struct job *j);

/*
 * The coordinator decided the job's status and a node is lost (no rank
 * may MPI_Finalize): on the way out, once the TOLD nodes it gave the end
 * said BYE, it ends the job at mpirun with MPI_Abort(exit_code).
 */
void job_abort_at_end(struct job *j, int told);

/* The coordinator: its time limit looked at again when it is due (and at NOW). */
void job_recheck_end_time(struct job *j, double now);

/* Coordinator of a Slurm job, at the launch: when Slurm started this
 * allocation, for the account (blocks END_TIME_TIMEOUT_S at most). */
void job_ask_alloc_start(struct job *j);

/* This node's side, before the plan: it records signals from the start. */
int job_new_node(struct job *j);

/* ---- run.c: messages, events, lines ---------------------------------------------- */

/* A message to RANK, and a nudge so that it reads it now (coord_ops.send). */
int job_send(void *arg, int rank, enum msg_kind kind, const char *text);

/* The rank this node's messages go to: the coordinator, or its successor. */
int job_coord_rank(const struct job *j);

/* One message, decoded once, to the module it is for. */
void job_route(struct job *j, int src, int tag, const char *text);

/* Every message that has arrived.  Returns peer_poll()'s last answer (< 0: MPI failed). */
int job_route_all(struct job *j);

/* A line for the people watching (coord_ops.say). */
void job_say(void *arg, const char *line);

#endif
