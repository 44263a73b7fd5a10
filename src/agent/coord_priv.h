/*
 * coord_priv.h - the coordinator's records, shared by its state machine
 * (coord.c) and the rendering of what it says at the end: the last lines
 * and the report (coord_report.c).  Included by those two files only.
 */
#ifndef VIGIL_COORD_PRIV_H
#define VIGIL_COORD_PRIV_H

#include <stdbool.h>

#include <cJSON.h>

#include "agent/coord.h"

/* Nodes named in a line for people before "(+N more)". */
#define NAMES_IN_LINE 8

/* One rank as the coordinator knows it. */
struct cnode {
	char *host;          /* from its pre-check report */
	char *addr;          /* MASTER_ADDR when it is the first member */
	int slots;
	double last_seen;    /* when it was last heard from */
	bool member;         /* runs a training in this attempt */
	bool spare;          /* waits, healthy, to take a failed member's seat (--spares) */
	bool faulty;         /* to avoid next time (sbatch --exclude) */
	bool lost;           /* silent past the timeout, or never reported */
	bool reported;       /* counted for this attempt: its result is in, or it is lost */
	bool have_result;    /* its result for this attempt arrived */
	/* the result */
	bool idle;
	int exit_code, signal, agent_signal;
	bool cancelled;      /* its agent saw the batch system cancel the job */
	double seconds;
	char *error;         /* could not start: why */
	bool ckpt, ckpt_confirmed;  /* the checkpoint signal was sent; a save was seen */
	char *ckpt_why;
	char *hint;          /* a fix vigil knows for its training's failure; NULL */
	char **tail;         /* last stderr lines, kept for failures only */
	int ntail;
	double output_lost;  /* bytes of its training's output it could not pass on */
};

struct coord {
	struct coord_opts o;
	struct coord_ops ops;
	struct cnode *nodes;
	int n;
	enum coord_phase phase;
	double t0;

	int nreported;       /* ranks reported or lost, this attempt */
	int nresults;        /* results that arrived, this attempt */
	int nlost;
	int ntails;          /* failed nodes whose tail is kept */
	bool never_arrived;  /* a rank sent no pre-check report: MPI_Finalize unsafe */
	bool isolated;       /* it named itself the node cut off */
	bool started;        /* the plan started the training (or a successor adopted it) */

	/* how the current attempt ends */
	int first_fail;      /* the rank whose training failed first, or -1 */
	int end_code;        /* 81 requeue, 83 expired, 84 lost, 80 no-go; 0 */
	char end_reason[512];
	bool restart_wanted; /* start again once every result is in */
	bool hang_stop;      /* this attempt was stopped as hung (coord_hang()) */
	bool cancelled;      /* the batch system cancelled the job (coord_cancel()) */
	int restarts;
	cJSON *attempts;     /* what ended each earlier attempt */

	/* deadlines, on the caller's clock; < 0: none */
	double next_scan, last_scan;
	double heard_any;    /* the last message from any other rank (stall.h: deaf) */
	double judge_from;   /* silence counts from here at the earliest, after deafness */
	double next_beat;
	double lost_deadline;
	double limit_end;
	bool limit_fired;

	/* hot spares (--spares): seat[i] is the rank whose training is RANK i
	 * in this attempt, in the order of the plan's members */
	int *seat;
	int nseats;
	int spare_from;      /* no spare below this rank is left (take_spare()) */
	int spare_restarts;  /* restarts that put a spare in, not counted by --restart */
	double fault_at;     /* when the fault a spare is taken for was seen; < 0 */
	double restarted_at; /* when the attempt with a spare started; < 0 */
	cJSON *recoveries;   /* each spare put in: who, for whom, how long it took */
	int recovery_from;   /* the first of this attempt's recoveries (first iteration due) */
	int timed_rank;      /* the spare whose first iteration ends the recovery's time */

	/* the plan handed to the caller */
	struct msg_node *plan_nodes;
	int *plan_members;
	int *plan_spares;
	char *master_addr;
	int master_port;
	char plan_message[512];
};

/* A line for people (ops->say), formatted; no trailing newline. */
void coord_say(struct coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An event about RANK's node (ops->event); takes DETAILS. */
void coord_emit(struct coord *c, int rank, const char *kind, const char *severity,
                const char *msg, cJSON *details);

/* The report's "spares" section (--spares): used, waiting, each recovery. */
void coord_spares_json(const struct coord *c, cJSON *report);

/*
 * coord_report.c: what the coordinator says as the job ends, in STATE with
 * exit status CODE at NOW: one line for a failure to start shared by many
 * nodes, the checkpoints not confirmed, the line (and the "job" event)
 * that says how the job ended, and with --hold-on-failure where to look.
 */
void coord_say_end(struct coord *c, const char *state, int code, double now);

#endif
