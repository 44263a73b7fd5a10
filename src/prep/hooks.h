/*
 * hooks.h - lifecycle scripts (the platform's 生命周期脚本): the site's
 * ("hooks" in vigil.conf) and the job's (--hook), run at the job's phases
 * on every node or on the coordinator only, each bounded in time, its
 * output tagged, its failure failing or warning as configured.
 *
 * The hooks of one phase run one after another, in order (the site's
 * first), as `/bin/sh -c COMMAND` under runner.h: children watched by the
 * agent's loop, never waited for in a blocking call.  A phase asked for
 * while another runs waits its turn.
 *
 * Each hook gets the agent's environment and VIGIL_HOOK (the phase),
 * VIGIL_NODE, VIGIL_RANK (the agent's MPI rank), VIGIL_JOB_ID, and what
 * the phase adds (hooks_run()'s EXTRA: VIGIL_JOB_STATE and
 * VIGIL_JOB_EXIT_CODE at the end, VIGIL_CKPT_REASON at a checkpoint).
 * The staging's variables (VIGIL_STAGE_NAME, set in the agent's
 * environment before MPI starts) are left out until hooks_set_staged():
 * a hook sees a copy's path only once the copy is there.
 */
#ifndef VIGIL_HOOKS_H
#define VIGIL_HOOKS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "conf/config.h"

#define HOOKS_MAX 64            /* the site's and the job's together */

struct loop;
struct hooks;

/*
 * "PHASE[:ATTR]...=COMMAND" (--hook): ATTR is "all" or "coordinator",
 * "fail" or "warn", or a timeout such as 90s or 5m.  Fills H (its command
 * is a copy, freed with hooks_spec_free()).  0, or -EINVAL with the
 * reason in WHY; as root also -EPERM, -EACCES or -ELOOP when COMMAND runs
 * a file another user could change (proc/trust.h), WHY naming it.
 */
int hooks_parse_spec(const char *text, struct config_hook *h, char *why, size_t whylen);
void hooks_spec_free(struct config_hook *h);

/* What one phase's run came to. */
struct hooks_result {
	int phase;              /* enum config_hook_phase */
	int ran;                /* hooks that ran on this node */
	int failed;             /* ... that failed, with on_failure fail */
	int warned;             /* ... that failed, with on_failure warn */
	double seconds;
	char why[400];          /* the first failure: "pre-launch hook 'CMD' failed with status 3: LAST LINE" */
};

struct hooks_ops {
	/* One line of a hook's output, tagged for people ("[hook PHASE NODE:RANK] LINE"). */
	void (*say)(void *arg, const char *line);
	/* A phase's hooks are over (also when it had none).  R is valid during the call. */
	void (*done)(void *arg, const struct hooks_result *r);
	void *arg;
};

struct hooks_opts {
	const struct config_hook *site;   /* the configuration's, copied */
	size_t nsite;
	const char *const *specs;         /* --hook texts, already checked */
	size_t nspecs;
	double timeout_s;                 /* for a hook without its own; > 0 */
	bool coordinator;                 /* this agent coordinates: its hooks include those */
	const char *node;                 /* VIGIL_NODE; copied */
	int rank;
	const char *job_id;               /* VIGIL_JOB_ID; copied */
	const sigset_t *sigmask;          /* restored in the hooks; borrowed */
	const char *const *stage_names;   /* the datasets staged (--stage NAME); borrowed */
	size_t nstage_names;
};

/* NULL with errno (ENOMEM; EINVAL for a spec that does not parse). */
struct hooks *hooks_new(const struct hooks_opts *o, struct loop *l, const struct hooks_ops *ops);

/* Kill every hook still running (its whole group); NULL is a no-op. */
void hooks_free(struct hooks *hs);

/*
 * VIGIL_JOB_ID for the phases that start from now on: the job's id once
 * the coordinator has said it (one id on every node).  0 or -ENOMEM (the
 * old id stays).
 */
int hooks_set_job_id(struct hooks *hs, const char *job_id);

/* The staging is complete: the hooks of the phases that start from now
 * on see VIGIL_STAGE_NAME. */
void hooks_set_staged(struct hooks *hs);

/* Whether any hook of PHASE runs on this node. */
bool hooks_any(const struct hooks *hs, int phase);

/* Whether the job has a hook of PHASE on any node (the same answer on
 * every node: what the nodes must agree on, such as whether there is a
 * phase to wait for). */
bool hooks_declared(const struct hooks *hs, int phase);

/*
 * Run PHASE's hooks, after any phase already running.  EXTRA (may be
 * NULL): "NAME=VALUE" strings for the hooks' environment, copied.
 * ops->done() follows from the loop, or at once for a phase without
 * hooks.  Returns 0 or -ENOMEM.
 */
int hooks_run(struct hooks *hs, int phase, const char *const *extra, size_t nextra);

/* Some phase runs or waits its turn. */
bool hooks_busy(const struct hooks *hs);

/* The latest deadline of what runs or waits, in seconds from now (0 when idle). */
double hooks_time_left(const struct hooks *hs);

/* For --dry-run: the hooks of this node, one line each, into F. */
void hooks_describe(const struct hooks *hs, FILE *f);

#endif
