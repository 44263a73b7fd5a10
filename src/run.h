/*
 * run.h - `vigil run`: launch and supervise the training on every node.
 *
 * The wiring of one job: pre-check and go/no-go at the coordinator, the
 * mode's environment, the child, the output pass-through, signals, and
 * the end of the job, all around one poll loop that never blocks on a peer.
 */
#ifndef VIGIL_RUN_H
#define VIGIL_RUN_H

#include <stdbool.h>

#include "config.h"
#include "modes.h"
#include "verdict.h"

struct run_forward {
	int from, to;          /* a signal to the agent, and what the training gets */
};

struct run_opts {
	const char *node;      /* this node's name (hostname or VIGIL_NODE_NAME) */
	enum mode mode;        /* default pytorch */
	bool precheck;         /* default true */
	enum verdict precheck_level; /* no-go at this verdict or worse: FAIL (default) or WARN */
	const char *topology;
	const char *events;
	const char *report;
	const char *run_dir;   /* hostfiles; default $TMPDIR/vigil.<job> */
	const char *hostfile;
	const char *mpich_hostfile;
	const char *master_addr;
	int master_port;       /* 0: a free port on the coordinator */
	int ps;
	int tf_port;
	double grace_s;        /* TERM to KILL; default 30 */
	struct run_forward forward[8];
	int nforward;
	bool tag_output;
	bool output_all;       /* false: stdout from the coordinator only */
	bool dry_run;
	bool verbose;
	char **cmd;            /* after `--`, through cmdline_check() */
};

void run_opts_init(struct run_opts *o);

/*
 * Run the job.  CFG is the pre-check's configuration.  ARGC/ARGV go to
 * MPI_Init.  Returns the process exit status: the job's status on every
 * node (the training's own, 128+N for a signal, 126/127 when it could not
 * be executed, or a vigil code from include/vigil.h).
 */
int run_job(const struct run_opts *o, const struct config *cfg, int *argc, char ***argv);

#endif
