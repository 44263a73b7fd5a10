/*
 * run_opts.h - the options of `vigil run`, as the command line and the
 * configuration's "run" section set them (opts_run.c), read by every part
 * of a job (run, node, jobperf, prep).
 */
#ifndef VIGIL_RUN_OPTS_H
#define VIGIL_RUN_OPTS_H

#include <stdbool.h>

#include "conf/config.h"
#include "launch/modes.h"
#include "lib/verdict.h"

/* Repeatable options (--stage, --hook): at most this many each. */
#define RUN_LIST_MAX 16

struct run_forward {
	int from, to;          /* a signal to the agent, and what the training gets */
};

/* --on-hang: what a hung training leads to (coord.h: enum coord_hang_policy). */
enum run_on_hang {
	RUN_ON_HANG_AUTO,      /* requeue with --resume, restart with --restart, else alert */
	RUN_ON_HANG_ALERT,
	RUN_ON_HANG_STOP,
	RUN_ON_HANG_RESTART,
	RUN_ON_HANG_REQUEUE,
};

struct run_opts {
	const char *node;      /* this node's name (hostname or VIGIL_NODE_NAME) */
	enum mode mode;        /* default pytorch */
	bool precheck;         /* default true */
	enum verdict precheck_level; /* no-go at this verdict or worse: FAIL (default) or WARN */
	const char *topology;
	const char *events;
	const char *report;
	const char *run_dir;   /* hostfiles (deepspeed, horovod); NULL: a private one (rundir.h) */
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
	bool no_nudge;         /* agents look at MPI on their schedule alone (nudge.h) */
	bool output_all;       /* false: stdout from the coordinator only */
	bool dry_run;
	bool verbose;
	char **cmd;            /* after `--`, through cmdline_check() */

	/* resilience (the platform's 断点续训, 故障巡检, 故障重启, 弹性训练) */
	bool resume;           /* checkpoint and requeue on faults, signals, time limit */
	int ckpt_signal;       /* default SIGUSR1 */
	double ckpt_lead_s;    /* checkpoint this long before the time limit; default 60 */
	double time_limit_s;   /* from the start; 0: none (SLURM_JOB_END_TIME may set one) */
	int max_resumes;       /* -1: no limit */
	const char *state_file;   /* counts requeues where SLURM_RESTART_COUNT is unset */
	const char *exclude_file; /* faulty nodes' hostnames, for sbatch --exclude */
	const char *ckpt_dir;  /* watched by the inspection (space left) */
	int restart_max;       /* fault restart: attempts after the first; 0: off */
	int min_nodes;         /* elastic: run on the healthy nodes if at least this many; 0: off */
	int spares;            /* hot spares: the last this many ranks wait; 0: none */
	double inspect_s;      /* inspection interval; 0: off; default 30 */
	double heartbeat_s;    /* default 5 */
	double heartbeat_timeout_s; /* default 30 */
	double hold_s;         /* keep the allocation after an abnormal end */
	double hang_timeout_s; /* the hang timeout's floor (hang.h); 0: off; default 30 */
	double hang_silence_s; /* no output anywhere this long is a hang; 0: off (default) */
	int on_hang;           /* enum run_on_hang; default RUN_ON_HANG_AUTO */

	/* performance detection (the platform's 性能检测) */
	double perf_threshold; /* on hardware/e2e; 0: no ratio alerts */
	bool perf_below;       /* alert below the threshold (default: above) */
	int perf_window;       /* consecutive iterations; default 5 */
	bool perf_reschedule;  /* act on an alert: checkpoint and requeue (default: alert only) */
	double straggler_pct;  /* a node this % slower than the median; 0: off */
	const char *notify;    /* command run on the coordinator per alert, JSON on stdin */
	const char *metrics;   /* Prometheus textfile */
	double summary_s;      /* one-line summary every this many seconds; default 60; 0 off */
	double perf_interval_s;/* reduction cadence; default 1 */

	/* launch modes (modes.h, ckpt.h) */
	enum mode_torch torch_launcher; /* --torch-launcher auto|launch|run; default (0)
	                                 * MODE_TORCH_AUTO: as the script declares */
	const char *ckpt_confirm;       /* --ckpt-confirm file:PATH|output:REGEX; NULL:
	                                 * exit status 0 after the signal is the save */

	/* the platform's data preparation, lifecycle scripts, batch tasks and
	 * kept output (prep.h, stage.h, hooks.h, batch.h, wlog.h) */
	const char *stage[RUN_LIST_MAX];  /* --stage NAME=SRC, as given (checked) */
	int nstage;
	const char *stage_dir;          /* the node's staging directory; default
	                                 * /var/tmp/vigil-stage.%u (expanded) */
	double stage_retention_s;       /* unused copies kept this long; default 7 days */
	int stage_max_use;              /* refuse to fill the disk past this %; default 90 */
	int stage_jobs;                 /* files copied at once per node; default 4 */
	bool stage_verify_content;      /* compare the bytes of what the quick check keeps */
	double stage_timeout_s;         /* 0: none */
	const char *hook[RUN_LIST_MAX]; /* --hook PHASE[:ATTR]...=COMMAND, as given (checked) */
	int nhook;
	double hook_timeout_s;          /* a hook without its own; default 300 */
	const char *batch;              /* --batch FILE: the sub-tasks */
	int batch_index;                /* --batch-index; -1: SLURM_ARRAY_TASK_ID */
	const char *output_dir;         /* --output-dir: VIGIL_OUTPUT_DIR (a batch task's
	                                 * OUTPUT/NAME-INDEX) */
	const char *workdir;            /* the training's working directory (a batch task's
	                                 * algorithm); NULL: the agent's */
	const char *node_logs;          /* --node-logs DIR: hidden stdout (--output
	                                 * coordinator) kept here; NULL: --run-dir's
	                                 * logs/, else vigil-logs.JOB in the cwd */
	int node_log_mb;                /* per node before rotating; default 64 */
};

/* O with every option at its default: each row's .def (opts.h), -1 for
 * the OPTS_UNSET counts, zero for the rest. */
void run_opts_init(struct run_opts *o);

#endif
