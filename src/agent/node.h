/*
 * node.h - one node's side of `vigil run`: this node's training, its
 * output, its signals, its heartbeats to the coordinator and its periodic
 * inspection.
 *
 * The node builds its launch from the coordinator's plan (modes.c),
 * starts the training in its own process group (child.c), passes its
 * stdout and stderr through byte for byte, one stream each (stream.h),
 * while scanning a copy line by line (the stderr tail for the report, and
 * the lines that may be timing lines through ops->line), forwards
 * signals, obeys the coordinator's commands (stop, checkpoint, restart)
 * and reports how the training ended (one RESULT per attempt).
 * Everything runs from the agent's loop: a slow reader of our output
 * slows the training (back-pressure), never the loop.
 *
 * Its lifecycle is a table of transitions (node.c), each logged by name
 * at debug level: the training (idle, running, stopping, draining,
 * reported), its checkpoint (unasked, saving, judged) and the watch
 * (unwatched, watching, quiet).
 *
 * Messages leave through ops->send; MPI is not called here.  Owns the
 * child, the streams and its timers; the loop and the configuration are
 * borrowed.
 */
#ifndef VIGIL_NODE_H
#define VIGIL_NODE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "comm/msg.h"
#include "conf/config.h"
#include "conf/run_opts.h"
#include "sys/topo.h"

struct loop;
struct node;

struct node_ops {
	/* A message of KIND to the coordinator.  Returns 0 or a negative errno. */
	int (*send)(void *arg, enum msg_kind kind, const char *text);
	/* The lines the training writes (stdout and stderr) that end like a
	 * timing line (progress_tail()), for the timing lines. */
	void (*line)(void *arg, const char *line, size_t len);
	void *arg;
};

struct node_opts {
	const struct run_opts *run;   /* borrowed */
	const struct config *cfg;     /* borrowed; the inspection copies what it needs */
	const char *name;             /* this node's name (copied) */
	int rank;
	double start;                 /* the agent's start, on the loop's clock (s) */
	const sigset_t *sigmask;      /* restored in the training (sig_block()'s old mask) */
	bool heartbeat;               /* send heartbeats (not on the coordinator's own node) */
	const char *vendor;           /* the slots' vendor, NULL on a CPU node */
	const struct slot *slots;     /* this node's slots (copied for the inspection) */
	size_t nslots;
	const char *cgroup;           /* a cgroup v2 directory delegated to the agent
	                               * (child_cgroup_find()), NULL: none */
};

/* NULL with errno on failure.  Starts nothing yet. */
struct node *node_new(const struct node_opts *o, struct loop *l, const struct node_ops *ops);

/*
 * Kill what is left of the training (its group), restore the outputs'
 * blocking mode, free.  Never blocks.  NULL is a no-op.
 */
void node_free(struct node *n);

/*
 * Take the coordinator's plan (copied): the nodes, the members, master
 * address and port.  Returns 0, or -ENOMEM.
 */
int node_take_plan(struct node *n, const struct msg_plan *plan);

/*
 * Start this node's part of the current attempt: the training when this
 * node is a member (else an idle result), and, once, the heartbeat and
 * inspection timers.  A training that cannot start is a result with the
 * reason (127/126 for exec, 64 for a launch the mode refuses, 84 for a
 * file that cannot be written).  Returns 0, or a negative errno when the
 * agent itself cannot go on (out of memory).
 */
int node_launch(struct node *n);

/* --dry-run: this node's environment, files and command, for people.  malloc'd. */
char *node_describe(struct node *n);

/* A command from the coordinator (stop, checkpoint, restart; perf is not for the node). */
void node_command(struct node *n, const struct msg_command *c);

/* A signal the agent received (from the signalfd). */
void node_signal(struct node *n, int sig);

/*
 * The batch system cancels the job (scancel): SIGTERM then stops the
 * training (TERM, grace, KILL) without the checkpoint signal, even under
 * --resume, and this node's result says so.
 */
void node_cancel(struct node *n);

/* This attempt's result is sent: the coordinator's next word (FINAL,
 * restart) is due soon. */
bool node_waiting(const struct node *n);

/* The evidence of a required NIC or InfiniBand port of this node's own
 * that its last inspection found failing ("eth1 is down (...)"), or NULL. */
const char *node_link_down(const struct node *n);

/* This node trains in the current attempt (it has timing lines to contribute). */
bool node_trains(const struct node *n);

/* The current attempt (0, then 1.. after restarts). */
int node_attempt(const struct node *n);

/* RANK's host name from the plan, or "?". */
const char *node_host(const struct node *n, int rank);

/* The current attempt's members (ranks, owned by N); returns how many. */
int node_members(const struct node *n, const int **members);

/*
 * The slots of the current attempt's member I (1 on a CPU node): the
 * processes an inner mpirun (Horovod mode) places on it, -map-by slot.
 */
int node_member_slots(const struct node *n, int i);

/*
 * The job is over for this node (FINAL came): no more heartbeats or
 * inspections.  Whatever is left of the training is killed.
 */
void node_quiet(struct node *n);

/*
 * The progress part of a heartbeat (hang.h): this node's iterations,
 * its training's silence, a save in progress.  The coordinator's own
 * node has no heartbeat: the coordinator asks here.
 */
void node_progress(struct node *n, struct msg_heartbeat *b);

/*
 * The training looks hung (a "forensics" command): every process of it
 * looked at by a child of the agent's (forensics_start(): the loop goes
 * on, heartbeats included; FORENSICS_BUDGET_S, then the look is ended)
 * and sent to the coordinator in a note, with the last stderr lines.
 * A command while a look is under way is answered by that look.
 */
void node_forensics(struct node *n);

/* Output still waiting for a slow reader of ours. */
bool node_output_pending(const struct node *n);

/*
 * Say (once) what was lost of the training's output when the reader of
 * ours went away, and how much; nothing when nothing was.
 */
void node_output_summary(struct node *n);

#endif
