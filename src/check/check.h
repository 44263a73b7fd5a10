/*
 * check.h - the node health checks (the platform's pre-check, and
 * `vigil check`).
 *
 * Facts are gathered once (facts.h: hwmon for sysfs/procfs under a root,
 * libnuma, statvfs, getrlimit, the vendors' libraries), then each check
 * renders its part of them as details and has the judges (judge.h, shared
 * with the inspection) evaluate them against the configuration: a name, a
 * verdict, a one-line reason and details.  The checks, in order: "ledger"
 * (the node's verdict from the site's node ledger, lemon.h, when there is
 * one), "slots", "boards" (the vendors' libraries, vhealth.h), "memory",
 * "storage", "limits", "nics".
 *
 * Nothing here calls MPI or hwloc: the slots come in from topo.
 */
#ifndef VIGIL_CHECK_H
#define VIGIL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <cJSON.h>

#include "conf/config.h"
#include "lib/verdict.h"
#include "sys/topo.h"

struct check_result {
	char name[32];        /* "ledger", "slots", "boards", "memory", "storage", "limits", "nics" */
	enum verdict verdict;
	char reason[256];     /* one line, no newline: "eth1 is down (operstate down)" */
	cJSON *details;       /* owned; a JSON object with the facts, never NULL after a run */
};

/* What the coordinator compares across nodes. */
struct check_facts {
	int nslots;
	char models[256];     /* distinct slot models, sorted, joined with ", "; "" if none */
	char driver[64];      /* driver version of the slots' vendor, "" if none/unknown */
};

struct check_report {
	struct check_result *results;
	size_t n;
	struct check_facts facts;
};

struct check_ctx {
	const struct config *cfg;
	const struct slot *slots;  /* from topo_slots() */
	size_t nslots;
	bool all;                  /* run every check; else stop after the first failure */
	const char *node;          /* this node's name in the site's ledger (cfg->ledger):
	                            * its verdict first, as the check "ledger"; NULL: none */
	double now;                /* the ledger's clock, seconds since the epoch; 0: now */
};

/*
 * Run the checks: gather the node's facts once (facts_gather()), then
 * judge them (judge.h), after the node's verdict from the ledger when
 * ctx->node and cfg->ledger.dir are set.  Fills OUT (release with check_report_free()).  A
 * check that cannot read what it needs reports that as its verdict; only
 * an unusable sysfs root (-ENOENT, -ENOTDIR) or allocation failure makes
 * this return a negative errno.  Work that may block runs in children,
 * all at once, under one deadline of cfg->check_timeout_s: each storage
 * path's probe, and each vendor library query (NVML, CNDev; only when the
 * sysfs root is this system's "/"), so the whole run takes about
 * check_timeout_s at most (plus a second's grace), however many paths are
 * blocked, and every path that timed out is named.  Forks; call before
 * MPI starts transports that dislike fork, or accept Open MPI's warning.
 *
 * With ctx->all false the report ends with the first failing check.
 * Every problem a check found is listed in its details under "problems";
 * the reason is the first of the worst, followed by "(+N more)" when there
 * are others.  A passing check's reason is a one-line summary.
 */
int check_run(const struct check_ctx *ctx, struct check_report *out);

/* The worst verdict in the report; VERDICT_PASS when empty. */
enum verdict check_report_verdict(const struct check_report *r);

/*
 * The first failing (or, if none, the first warning, or if none the first
 * passing) result, provided its verdict is at least V; NULL otherwise:
 * with VERDICT_FAIL, the first failure or NULL.
 */
const struct check_result *check_report_first(const struct check_report *r, enum verdict v);

/*
 * Wire and report format:
 * {"facts": {"nslots": N, "models": "...", "driver": "..."},
 *  "checks": [{"name", "verdict", "reason", "details"}, ...]}
 * to_json returns NULL on allocation failure; from_json returns 0 or
 * -EINVAL for a document of another shape.
 */
cJSON *check_report_to_json(const struct check_report *r);
int check_report_from_json(const cJSON *json, struct check_report *out);

void check_report_free(struct check_report *r);

#endif
