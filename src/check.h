/*
 * check.h - the node health checks (the platform's pre-check, and
 * `vigil check`).
 *
 * Each check gathers facts through hwmon (sysfs/procfs under a root),
 * libnuma, statvfs and getrlimit, then evaluates them against the
 * configuration: a name, a verdict, a one-line reason and details.  The
 * checks, in order: "slots", "memory", "storage", "limits", "nics".
 *
 * Nothing here calls MPI or hwloc: the slots come in from topo.
 */
#ifndef VIGIL_CHECK_H
#define VIGIL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <cJSON.h>

#include "config.h"
#include "topo.h"
#include "verdict.h"

struct check_result {
	char name[32];        /* "slots", "memory", "storage", "limits", "nics" */
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
};

/*
 * Run the checks.  Fills OUT (release with check_report_free()).  A check
 * that cannot read what it needs reports that as its verdict; only an
 * unusable sysfs root (-ENOENT, -ENOTDIR) or allocation failure makes this
 * return a negative errno.  Work that may block runs in a child under
 * cfg->check_timeout_s: each storage path's probe, and each vendor library
 * query (NVML, CNDev; only when the sysfs root is this system's "/"), so
 * the whole run blocks at most about (npaths + 2) * check_timeout_s.
 * Forks (for timed checks); call before MPI starts transports that dislike
 * fork, or accept Open MPI's warning.
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

/*
 * Rules the pre-check shares with the periodic inspection (inspect.c), so
 * both judge a link or an interface alike.
 *
 * check_pcie_degraded: whether PCI's link runs below its maximum speed or
 * width; BUF (LEN > 0) gets what falls short, "8 GT/s of 16 GT/s, x8 of
 * x16", or "".  A value sysfs does not give is never a degradation.
 *
 * check_nic_oper_up: whether NIC's operational state counts as up:
 * "up", or "unknown" with carrier (drivers without operstate support).
 */
struct hwmon_pci;
struct hwmon_nic;
bool check_pcie_degraded(const struct hwmon_pci *pci, char *buf, size_t len);
bool check_nic_oper_up(const struct hwmon_nic *nic);

/* What check_probe_dir() found. */
struct check_dir_probe {
	int err;              /* errno of open, fstat or fstatvfs on the path; 0 */
	bool not_dir;         /* the path is there but not a directory */
	int write_err;        /* errno creating a file there; 0 done; -1 not tried */
	unsigned long long bavail, frsize;  /* statvfs f_bavail; f_frsize (else f_bsize) */
	unsigned long long favail, files;   /* statvfs f_favail, f_files (0: not counted) */
	unsigned long flag;   /* statvfs f_flag: ST_RDONLY */
	long long free_mb;    /* bavail * frsize in MB, rounded down */
};

/*
 * Examine directory PATH in a child process under TIMEOUT_S seconds, for
 * the storage check and the inspection's checkpoint directory alike: open
 * it (O_PATH when searchable but not readable), fstat() and fstatvfs() it,
 * and with WRITABLE create and remove a file in it.  A dead NFS server
 * hangs the open or the statvfs; the deadline covers both.
 *
 * Returns 0 with the facts in *OUT (a missing or unusable path is a fact:
 * out->err, out->not_dir; the statvfs fields count only when both are
 * clear); -ETIMEDOUT when the child did not answer in time (it is killed,
 * and reaped by the agent's SIGCHLD handling if stuck in the kernel);
 * -EPROTO when it ended without a whole answer; another negative errno
 * when it could not be started (fork, pipe; -EINVAL for a TIMEOUT_S that
 * is not positive).  *OUT counts only on 0.  Nothing here logs.  Forks,
 * and blocks up to TIMEOUT_S: a loop callback passes a short one.
 */
int check_probe_dir(const char *path, bool writable, double timeout_s,
                    struct check_dir_probe *out);

#endif
