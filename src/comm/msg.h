/*
 * msg.h - the agents' messages while a job runs: typed structs, and their
 * encoding on the wire (one JSON object each, valid UTF-8).
 *
 * Every message is encoded and decoded here and nowhere else: a receiver
 * decodes once, with every member's type and range checked, and routes
 * the typed message.  A malformed message (a bug, or a different vigil
 * version on one node) is refused as a whole: -EINVAL, never half a
 * value taken for a default.
 *
 * The kinds double as the MPI tags the messages travel with (peer.h
 * carries any tag in PEER_TAG_MIN..PEER_TAG_MAX and knows nothing of
 * their meaning).
 *
 *   PLAN       coordinator -> node  go/no-go, the nodes, the members, master
 *   RESULT     node -> coordinator  how this node's training ended
 *   COMMAND    coordinator -> node  stop, checkpoint, restart, perf (a reduction)
 *   FINAL      coordinator -> node  the job's end: status, whether to finalize
 *   HEARTBEAT  either way           still here
 *   NOTE       node -> coordinator  inspection findings, a checkpoint signal
 *   SUSPECT    node -> successor    the coordinator fell silent here
 *   PREP       node -> coordinator  the preparation (hooks, staging): progress, done
 *              coordinator -> node  still here, or go on to the gather
 *   BYE        node -> coordinator  done with a job that lost a node: the
 *                                   coordinator may end it (peer_abort())
 *
 * No I/O, no MPI.  Strings in a decoded message are owned by it and freed
 * by msg_clear() (they are const only so that a message built for
 * msg_encode() can borrow string literals); such a message borrows its
 * strings and arrays and is not cleared.
 */
#ifndef VIGIL_MSG_H
#define VIGIL_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/verdict.h"

enum msg_kind {
	MSG_PLAN = 10,
	MSG_RESULT = 11,
	MSG_COMMAND = 12,
	MSG_FINAL = 13,
	MSG_HEARTBEAT = 14,
	MSG_NOTE = 15,
	MSG_SUSPECT = 16,
	MSG_PREP = 17,
	MSG_BYE = 18,
};

#define MSG_KIND_MIN MSG_PLAN
#define MSG_KIND_MAX MSG_BYE

/* The largest rank a message may name (MPI's int, with room to spare). */
#define MSG_RANK_MAX (1 << 24)

/* A node as the plan describes it. */
struct msg_node {
	const char *host;        /* its name (hostfiles, TF_CONFIG) */
	const char *addr;        /* the address others reach it by (MASTER_ADDR) */
	int slots;         /* accelerators; 0 on a CPU node */
};

struct msg_plan {
	bool go;
	int exit_code;     /* no-go: the job's status */
	const char *message;     /* no-go: why; may be NULL */
	const char *master_addr; /* go: MASTER_ADDR */
	int master_port;
	const char *job;         /* one name for the job's files, the same on every node */
	bool finalize;     /* false: a node never reported, nobody may MPI_Finalize */
	const char *nudge;       /* where the coordinator's nudges arrive (nudge.h), or NULL */
	struct msg_node *nodes;  /* every rank, by rank */
	int nnodes;
	int *members;      /* ranks that run the training, in node-rank order */
	int nmembers;
	int *spares;       /* ranks that wait as healthy spares (--spares): a
	                    * successor that takes over needs them */
	int nspares;
	long bcast;        /* > 0: only a header; the whole plan, this many bytes,
	                    * follows as a broadcast (peer_bcast_start()) */
};

struct msg_result {
	const char *node;
	int attempt;       /* which attempt this result ends (0, then restarts) */
	bool idle;         /* this node ran no training in this attempt */
	double seconds;    /* since the agent started */
	int exit_code;     /* the training's status (128+N for a signal) or a vigil code */
	int signal;        /* the signal that ended the training, or 0 */
	int agent_signal;  /* TERM/INT/HUP/QUIT the agent received, or 0 */
	bool cancelled;    /* ... a SIGTERM from the batch system cancelling the job */
	const char *error;       /* could not start: why; NULL when it started */
	bool ckpt;               /* the checkpoint signal was sent in this attempt */
	bool ckpt_confirmed;     /* ... and the training gave the evidence of a save */
	const char *ckpt_why;    /* the verdict's reason (ckpt.h); NULL without ckpt */
	const char *hint;        /* a fix vigil knows for how the training failed
	                          * (mode_failure_hint()); NULL */
	const char **tail;       /* the training's last stderr lines, oldest first */
	int ntail;
	double output_lost;      /* bytes of the training's output this node could not pass
	                          * on so far (its reader went away); 0 */
};

struct cJSON;

struct msg_note {
	const char *node;
	int signal;        /* the batch system's checkpoint signal reached this node; 0 */
	struct finding *findings;  /* inspection findings (lib/verdict.h); decoded, a
	                            * string longer than its field is cut there */
	int nfindings;
	/* What the node's training and boards use now, NULL: not in this
	 * note.  An object {"cpu_seconds", "memory_bytes", "processes",
	 * "boards": [vhealth_usage_to_json()'s entries]}, read by usage.h;
	 * decoded, it belongs to the message. */
	struct cJSON *usage;
	/* The training's processes as a hang left them (forensics.h: an
	 * object {"processes": [...], "tail": [lines], ...}), NULL: not in
	 * this note.  Decoded, it belongs to the message. */
	struct cJSON *forensics;
};

/*
 * A node's heartbeat may say how its training progresses (hang.h); one
 * without (PROGRESS false) says nothing of it.
 */
struct msg_heartbeat {
	bool progress;     /* the fields below are set */
	bool trains;       /* the node runs a training in this attempt */
	bool saving;       /* a save shows (the checkpoint signal is out, a file of
	                    * --ckpt-dir is open in the training) */
	double lines;      /* timing lines in this attempt */
	double iters;      /* iterations its slowest process printed in this attempt */
	double quiet_s;    /* since its last timing line; < 0: none in this attempt */
	double out_quiet_s;/* since its training last wrote anything; < 0: never */
	double e2e_ms;     /* median e2e time of its recent iterations; 0: none */
};

enum msg_command_kind {
	MSG_CMD_STOP,
	MSG_CMD_CHECKPOINT,
	MSG_CMD_RESTART,
	MSG_CMD_PERF,      /* the coordinator started a timing reduction: join it */
	MSG_CMD_FORENSICS, /* the training is hung: gather its processes' state (hang.h) */
};

struct msg_command {
	enum msg_command_kind command;
	const char *reason;      /* stop, checkpoint: why (may be NULL) */
	/* restart: the next attempt */
	int attempt;
	const char *master_addr;
	int master_port;
	int *members;
	int nmembers;
};

struct msg_final {
	int exit_code;
	const char *state;       /* the job state (include/vigil.h) */
	bool finalize;     /* every peer is alive: MPI_Finalize is safe */
	bool abort;        /* not: the coordinator ends the job with MPI_Abort once the
	                    * nodes it told said BYE */
	double hold;       /* keep the allocation this long (seconds); 0 */
	int cycles;        /* timing reductions the coordinator started */
};

/* A node lost its coordinator (see run.c: the successor). */
struct msg_suspect {
	const char *node;
	int coordinator;   /* the rank that fell silent */
	double silent;     /* seconds without a word from it */
};

/*
 * The preparation before the gather (prep.h): a node's progress and its
 * end (DONE, with OK or the ERROR that fails its pre-check), or from the
 * coordinator, GO (every node is ready: gather now) or a keepalive.
 */
struct msg_prep {
	const char *node;        /* node -> coordinator */
	const char *step;        /* "hooks", "staging", "done"; NULL from the coordinator */
	bool ok;                 /* done: the preparation passed */
	const char *error;       /* done, not ok: why (one line); NULL */
	double copied_bytes, copied_files;   /* staging so far */
	double copy_bytes, copy_files;       /* what the staging has to copy */
	double data_bytes, data_files;       /* the datasets' whole size */
	double seconds;          /* the staging's time so far */
	bool go;                 /* coordinator -> node: start the gather */
	const char *job;         /* coordinator -> node: the job's id (VIGIL_JOB_ID); NULL */
};

struct msg {
	enum msg_kind kind;
	union {
		struct msg_plan plan;
		struct msg_result result;
		struct msg_command command;
		struct msg_final final;
		struct msg_note note;
		struct msg_suspect suspect;
		struct msg_prep prep;
		struct msg_heartbeat heartbeat;
	} u;  /* BYE carries nothing */
};

/* "plan", "result", ...; "?" for another value. */
const char *msg_kind_name(enum msg_kind kind);
const char *msg_command_name(enum msg_command_kind c);

/*
 * Encode M as a NUL-terminated JSON text (malloc'd, valid UTF-8: bytes of
 * a training's stderr that are not become U+FFFD).  NULL with errno
 * ENOMEM, or EINVAL for a kind this module does not know.
 */
char *msg_encode(const struct msg *m);

/*
 * Decode TEXT as a message of KIND.  Ranks named (members) must be below
 * NRANKS.  Returns 0 with *OUT filled (release with msg_clear()),
 * -EINVAL for a text that is not such a message (nothing is left to
 * release), or -ENOMEM.
 */
int msg_decode(enum msg_kind kind, const char *text, int nranks, struct msg *out);

/* Release what msg_decode() allocated; the message is zeroed. */
void msg_clear(struct msg *m);

#endif
