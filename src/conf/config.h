/*
 * config.h - vigil's configuration: expected values and thresholds.
 *
 * A configuration starts from config_init()'s defaults, is overlaid by a
 * JSON file (--config FILE, format in doc/vigil.conf.5), and then by
 * command-line flags, which the commands (cmd_*.c) write into the struct
 * directly.  The "run" section holds `vigil run`'s options as the site
 * sets them; they are checked here, against the table in opts.h, and laid
 * under the command line by opts_run_apply_config().
 *
 * The struct owns every string and array in it; config_free() releases
 * them.  Sizes are in the unit their name says; 0 (or an empty list)
 * switches a threshold off unless noted.
 */
#ifndef VIGIL_CONFIG_H
#define VIGIL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/verdict.h"

struct config_path {
	char *path;                /* a directory that must be usable */
	long long min_free_mb;     /* free space for unprivileged users */
	long long min_free_inodes;
	bool writable;             /* default true: a file can be created there */
};

struct opts_run;
struct cJSON;

/* "hooks": the lifecycle scripts of `vigil run` (生命周期脚本), by phase. */
enum config_hook_phase {
	CONFIG_HOOK_PRECHECK,    /* before the pre-check */
	CONFIG_HOOK_PRELAUNCH,   /* after the staging, before the launch */
	CONFIG_HOOK_CHECKPOINT,  /* the training is told to save */
	CONFIG_HOOK_REQUEUE,     /* the job ends to be requeued (81) */
	CONFIG_HOOK_END,         /* the job ended, with its state and status */
};
#define CONFIG_HOOK_NPHASES 5

/* "pre-check", "pre-launch", "checkpoint", "requeue", "end", by phase. */
extern const char *const config_hook_phase_names[CONFIG_HOOK_NPHASES];

struct config_hook {
	int phase;                 /* enum config_hook_phase */
	char *command;             /* run with /bin/sh -c */
	bool coordinator;          /* on the coordinator only; default: on every node */
	bool warn;                 /* a failure warns; default: it fails (vigil.conf(5)) */
	double timeout_s;          /* 0: vigil run's --hook-timeout */
};

/* One value of the "run" section, or one of "run.limits" (opts.h). */
struct config_setting {
	const struct opts_run *opt; /* the option, a row of opts_run_table */
	char *text;                /* a string value as given; NULL for a number or boolean */
	double num;                /* a number (true: 1), and always a limit's value (seconds
	                            * for durations) */
};

/* A required version: exactly VERSION, or with MINIMUM, VERSION or later. */
struct config_version {
	char version[64];          /* "550.54.15"; "" when nothing is required */
	bool minimum;              /* written ">=550.54.15" */
};

/* The vendors of "check.slots.driver_version", in the order of enum slot_vendor. */
#define CONFIG_NVENDORS 3

/*
 * "check.boards": what the vendors' libraries say about each board (see
 * vhealth.h).  A verdict of VERDICT_PASS switches a finding off.
 */
struct config_boards {
	bool enabled;              /* ask the libraries (live system only); default true */
	char *nvml_library;        /* absolute paths; NULL: the default names */
	char *rocm_smi_library;
	char *cndev_library;
	enum verdict lost;         /* fallen off the bus, or not seen by the library; FAIL */
	enum verdict unresponsive; /* a library that does not answer in time; WARN */
	int *xid_fail;             /* XIDs that fail (default: those that need a reset) */
	size_t nxid_fail;
	enum verdict xid_other;    /* any other XID; WARN */
	enum verdict ecc_uncorrectable;     /* uncorrectable ECC errors; FAIL */
	long long ecc_correctable_max;      /* correctable errors above this warn; -1 off */
	long long ecc_correctable_rise;     /* while running: a rise above this warns; -1 off */
	enum verdict retired_pages_pending; /* FAIL */
	enum verdict row_remap_pending;     /* FAIL */
	enum verdict row_remap_failure;     /* FAIL */
	enum verdict recovery_action;       /* the driver asks for a reset, reboot, drain; FAIL */
	enum verdict throttle;              /* thermal, power-brake or HW slowdown; WARN */
	enum verdict temperature;           /* within the margin of the slowdown point; WARN */
	long long temperature_margin_c;     /* default 5 */
	long long nvlink_expected;          /* active NVLinks per board; -1: not checked */
	enum verdict nvlink_down;           /* FAIL */
	long long nvlink_errors_rise;       /* while running: a rise above this warns; -1 off */
	enum verdict health;                /* CNDev health state not good; FAIL */
};

/*
 * "ledger": the site's node ledger (check/ledger.h), a directory where
 * jobs and health checks record incidents against nodes, and the rules
 * (check/lemon.h) that quarantine a node that keeps failing.
 */
enum config_ledger_kind {
	CONFIG_LEDGER_PRECHECK,     /* a job's pre-check failed on the node */
	CONFIG_LEDGER_FAULT,        /* the inspection found a fault while a job ran */
	CONFIG_LEDGER_LOST,         /* the node was lost (no heartbeat) */
	CONFIG_LEDGER_HANG,         /* the node was named as a hung training's odd one out */
	CONFIG_LEDGER_STRAGGLER,    /* a straggler alert named the node */
	CONFIG_LEDGER_HEALTHCHECK,  /* `vigil check` (HealthCheckProgram) failed */
	CONFIG_LEDGER_BOARD,        /* a board's fault: XID, ECC, fallen off the bus, ... */
};
#define CONFIG_LEDGER_NKINDS 7

/* "precheck", "fault", "lost", "hang", "straggler", "healthcheck", "board". */
extern const char *const config_ledger_kind_names[CONFIG_LEDGER_NKINDS];

/* What the incidents of one rule must have in common. */
enum config_ledger_same {
	CONFIG_LEDGER_SAME_NONE,    /* nothing */
	CONFIG_LEDGER_SAME_CHECK,   /* the check ("nic", "xid", "storage") */
	CONFIG_LEDGER_SAME_DEVICE,  /* the device: the same board or NIC */
};

/* COUNT incidents of KINDS within WITHIN_S make a node a lemon. */
struct config_ledger_rule {
	int count;
	double within_s;
	unsigned kinds;            /* bits 1 << enum config_ledger_kind */
	int same;                  /* enum config_ledger_same */
};

struct config_ledger {
	char *dir;                 /* absolute path; NULL: no ledger (the default) */
	struct config_ledger_rule *rules;  /* default: 3 hardware incidents in 7 days,
	                                    * or 2 of the same board in 7 days */
	size_t nrules;
	double backoff_initial_s;  /* the first quarantine; default 1 h */
	double backoff_max_s;      /* each next one doubles, up to this; default 7 d */
	double backoff_reset_s;    /* this long after a quarantine ended, the next
	                            * starts at backoff_initial_s again; default 30 d */
	double retention_s;        /* incidents older than this expire; default 180 d */
	double repeat_s;           /* a health check failure that lasts is recorded
	                            * again after this; default 1 d */
	int *app_xids;             /* XIDs the application causes: never counted
	                            * against a node (default 13, 31, 43, 45) */
	size_t napp_xids;
};

struct config {
	/* where sysfs and procfs are read from: "<root>/sys", "<root>/proc" */
	char *sysfs_root;          /* default "/" */

	/* "check.slots" */
	int slots_expected;        /* -1: not set (no minimum) */
	enum verdict pcie_degraded;/* verdict for a link below its maximum; default WARN */
	long long aer_correctable_max; /* correctable AER errors above this warn; -1: off (default) */
	/* any non-fatal AER error warns, any fatal one fails */
	bool driver_required;      /* a slot's vendor driver must be loaded; default true */

	/* "check.memory" */
	long long mem_min_free_mb; /* per NUMA node */

	/* "check.storage" */
	struct config_path *paths;
	size_t npaths;
	long long shm_min_mb;      /* size of <root>/dev/shm */

	/* "check.limits" */
	bool memlock_unlimited;    /* RLIMIT_MEMLOCK must be unlimited (RDMA) */
	long long nofile_min;      /* RLIMIT_NOFILE soft limit at least this */

	/* "check.nics" */
	char **nics;               /* interfaces that must exist, be up, have carrier */
	size_t nnics;
	long long nic_min_speed_mbps;
	char **ib_devices;         /* InfiniBand devices whose every port must be ACTIVE/LinkUp */
	size_t nib_devices;
	long long ib_min_rate_gbps;

	/* "check.boards" */
	struct config_boards boards;

	/* "check" */
	double check_timeout_s;    /* what may block (storage probes, vendor libraries) runs at once,
	                            * cut off after this; default 10 */
	double gather_timeout_s;   /* coordinator waits this long for every node's report; default 60 */

	/* "run": `vigil run`'s options for every job of the site */
	struct config_setting *run;
	size_t nrun;
	/* "run.limits": the most a user may ask for (max_resumes, grace, ...) */
	struct config_setting *run_limits;
	size_t nrun_limits;

	char *origin;              /* the file last loaded (NULL: none), for messages */
	/* "check.slots.driver_version": per vendor (nvidia, amd, cambricon) */
	struct config_version driver_version[CONFIG_NVENDORS];

	/* "hooks", in the order given (the site's; a job adds its own with --hook) */
	struct config_hook *hooks;
	size_t nhooks;

	/* "check.storage.ckpt_min_free_mb": free space the checkpoint directory
	 * (vigil run --ckpt-dir) keeps while training runs, watched by the
	 * inspection */
	long long ckpt_min_free_mb;

	/* "ledger": the node ledger and its rules */
	struct config_ledger ledger;
};

/* Fill with defaults.  Never fails. */
void config_init(struct config *cfg);

/*
 * Overlay the JSON document in FILE, which must be a regular file: a FIFO
 * or a device is refused at once (opened without blocking), never waited
 * on.  Unknown keys, wrong types, out-of-range values and strings or keys
 * holding a NUL character (\u0000) are errors.  On error returns a negative errno
 * (-ENOENT, -EACCES, -EINVAL, ...) and writes one line to ERR naming the
 * file, the key (e.g. "check.nics.min_speed_mbps") and the problem, for
 * example:
 *   "cfg.json: check.slots.expected: expected a non-negative integer, got \"8\""
 * CFG may be partly updated on error; the caller exits.
 */
int config_load_file(struct config *cfg, const char *file, char *err, size_t errlen);

/* As config_load_file on a buffer (need not be NUL-terminated); ORIGIN names it in messages. */
int config_load_buffer(struct config *cfg, const char *buf, size_t len,
                       const char *origin, char *err, size_t errlen);

/*
 * BUF (LEN bytes) as a JSON object, parsed as the configuration is, for
 * another file a user writes (a batch file): 0 with *OUT (cJSON_Delete()),
 * or -EINVAL (-ENOMEM) with one line in ERR naming ORIGIN and where the
 * text goes wrong, e.g. "b.json: line 3, column 7: malformed JSON near
 * \"]}\"", a document that is not an object, or a string holding \u0000.
 */
int config_parse_json(const char *buf, size_t len, const char *origin, struct cJSON **out,
                      char *err, size_t errlen);

/* Append to a string list (used by flags such as --nic); returns 0 or -ENOMEM. */
int config_list_add(char ***list, size_t *n, const char *value);

/*
 * A deep copy of SRC into DST (for a module that outlives the
 * configuration).  Returns 0 or -ENOMEM (DST then owns nothing).
 * Release with config_boards_free(), which leaves DST empty.
 */
int config_boards_copy(struct config_boards *dst, const struct config_boards *src);
void config_boards_free(struct config_boards *b);

/* Release everything CFG owns; CFG may be reused after config_init(). */
void config_free(struct config *cfg);

#endif
