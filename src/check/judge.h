/*
 * judge.h - the rules of the health checks: facts in, verdicts out.
 *
 * The second half of every check (LBNL NHC's "evaluate"): pure functions
 * that compare facts (facts.h) with the configuration's expectations and
 * say what is wrong, each problem as one finding with a one-line reason,
 * through one reporting function, judge_say() (NHC's single `die`).  They
 * read no file, fork nothing and keep no state, so the pre-check
 * (check.c) and the periodic inspection (inspect.c) share them, and with
 * them their wording, and a unit test sets the facts and calls the rule.
 *
 * Where the two differ they differ by a rule, not by wording: the
 * inspection judges error counters against the baseline it took when the
 * training started (judge_aer() with a baseline, judge_ib_counters()),
 * and its rules warn where the pre-check fails on memory pressure (the
 * training itself uses the memory) and on the agent's own trouble
 * (judge_rules.mem_low, .probe_trouble).
 *
 * A new source of facts (a vendor's board health, say) plugs in the same
 * way: a gather function fills a struct of its own, a judge function takes
 * it (plus judge_rules, or a rules struct of its own) and calls
 * judge_say() for each problem with its own WHAT ("board") and DEVICE;
 * the pre-check lists it as a check of its own (check.c's table) and the
 * inspection calls it in inspect_run().  The sink decides what a finding
 * becomes: a "problems" entry and the check's reason, or an entry of the
 * inspection's list (judge_to_list()).
 */
#ifndef VIGIL_JUDGE_H
#define VIGIL_JUDGE_H

#include <stdbool.h>
#include <stddef.h>

#include "check/facts.h"
#include "conf/config.h"
#include "lib/verdict.h"
#include "sys/hwmon.h"

/* F (lib/verdict.h) lives only for the call: the sink copies what it keeps. */
typedef void judge_sink_fn(void *arg, const struct finding *f);

/* Where findings go: SINK(ARG, finding), called once per problem, in order. */
struct judge {
	judge_sink_fn *sink;
	void *arg;
};

/*
 * The one reporting function: fill a finding (finding_vset(): the reason
 * at most 255 bytes, one line) and hand it to the sink.  VERDICT_PASS is
 * dropped.
 */
void judge_say(struct judge *j, enum verdict v, const char *what, const char *device,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Make J's sink append each finding to L (finding_add()). */
void judge_to_list(struct judge *j, struct finding_list *l);

/* The configuration's expectations, as the judges take them: plain values, copyable. */
struct judge_rules {
	int slots_expected;            /* -1: any number */
	enum verdict pcie_degraded;
	long long aer_correctable_max; /* -1: off */
	bool driver_required;
	struct config_version driver_version[FACTS_NVENDORS]; /* by enum slot_vendor */
	long long mem_min_free_mb;     /* 0: off */
	long long shm_min_mb;
	bool memlock_unlimited;
	long long nofile_min;
	long long nic_min_speed_mbps;
	long long ib_min_rate_gbps;
	double timeout_s;              /* the deadline blocking work ran under, for messages */
	enum verdict mem_low;          /* a NUMA node below the minimum (pre-check: FAIL) */
	enum verdict probe_trouble;    /* the agent could not look: no fork, a probe that
	                                * died (pre-check: FAIL) */
};

/* The pre-check's rules from CFG. */
void judge_rules_init(struct judge_rules *r, const struct config *cfg);

/* --- slots --------------------------------------------------------------- */

/* Fewer slots than expected: "found 2 slots, expected 3". */
void judge_slot_count(struct judge *j, size_t nslots, const struct judge_rules *r);

/* The slot's PCI device is there: "slot 1 (0000:5e:00.0) is missing from
 * the PCI bus".  Returns whether the rest of its facts count. */
bool judge_slot_present(struct judge *j, const struct facts_slot *s);

/* No driver bound, when the rules require one. */
void judge_slot_driver(struct judge *j, const struct facts_slot *s, const struct judge_rules *r);

/*
 * Whether PCI's link runs below its maximum speed or width; BUF (LEN > 0)
 * gets what falls short, "8 GT/s of 16 GT/s, x8 of x16", or "".  A value
 * sysfs does not give is never a degradation.
 */
bool judge_pcie_degraded(const struct hwmon_pci *pci, char *buf, size_t len);

/* A degraded link, with the rules' verdict: "slot 0 (...) PCIe link degraded: x8 of x16". */
void judge_pcie_link(struct judge *j, const struct facts_slot *s, const struct judge_rules *r);

/* AER counts; -1 in a field: unknown. */
struct judge_aer {
	long long correctable, nonfatal, fatal;
};

/*
 * The slot's AER errors: any fatal one fails, any non-fatal one warns,
 * correctable ones warn above r->aer_correctable_max.  Without BASE the
 * counts since boot are judged ("slot 1 (...) has 1 fatal PCIe AER
 * error"); with BASE, only what was added since ("slot 1 (...) has 2 new
 * fatal PCIe AER errors (1 -> 3)").  An unknown count says nothing.
 */
void judge_aer(struct judge *j, const struct facts_slot *s, const struct judge_aer *base,
               const struct judge_rules *r);

/* The required driver version of VENDOR's slots (r->driver_version):
 * "nvidia driver 535.104.05 is below the required 550.54.15". */
void judge_driver_version(struct judge *j, enum slot_vendor vendor,
                          const struct facts_driver *d, const struct judge_rules *r);

/*
 * A vendor library's answer about NBOARDS slots of its vendor (NAME:
 * "NVML"): a library that does not answer in time or fails warns, one that
 * sees fewer boards than there are slots fails.  Not installed says
 * nothing: the driver's own files still tell the version.
 */
void judge_library(struct judge *j, const char *name, const struct facts_library *lib,
                   size_t nboards, const struct judge_rules *r);

/*
 * Compare two versions part by part ("535.104.05" < "550.54.15"): runs of
 * digits as numbers, runs of letters as text, anything else separates.
 * Returns <0, 0, >0.
 */
int judge_version_cmp(const char *a, const char *b);

/* --- memory, storage, limits --------------------------------------------- */

/*
 * Free memory per NUMA node below r->mem_min_free_mb (r->mem_low):
 * "NUMA node 1 has 500 MB free, below 1024 MB".  Memoryless nodes are
 * skipped.  Unreadable: r->mem_low with a minimum, else a warning.
 */
void judge_memory(struct judge *j, const struct facts_memory *m, const struct judge_rules *r);

/*
 * The N storage paths CFG[i] with their probes F[i]: every path that timed
 * out is named in one finding ("/a, /b timed out after 10 s"), then each
 * other problem on its own: missing, not a directory, below the free space
 * or inodes, not writable.  A path too long for a reason keeps its end.
 */
void judge_paths(struct judge *j, const struct config_path *cfg, const struct facts_path *f,
                 size_t n, const struct judge_rules *r);

/* /dev/shm below r->shm_min_mb, or unreadable while a minimum is set. */
void judge_shm(struct judge *j, const struct facts_shm *s, const struct judge_rules *r);

/* RLIMIT_MEMLOCK and RLIMIT_NOFILE against the rules. */
void judge_limits(struct judge *j, const struct facts_limits *l, const struct judge_rules *r);

/* --- network ------------------------------------------------------------- */

/* Whether NIC's operational state counts as up: "up", or "unknown" with
 * carrier (drivers without operstate support). */
bool judge_nic_oper_up(const struct hwmon_nic *nic);

/* A required interface present, up and with carrier ("eth0 is down
 * (operstate down, no carrier)").  Returns whether it is. */
bool judge_nic_link(struct judge *j, const struct facts_nic *n);

/* A required interface's speed against r->nic_min_speed_mbps (only when up). */
void judge_nic_speed(struct judge *j, const struct facts_nic *n, const struct judge_rules *r);

/*
 * An InfiniBand device present with every port ACTIVE and LinkUp: a
 * listed device fails, another only warns (a missing listed device
 * fails).  Returns the number of active ports.
 */
size_t judge_ib_state(struct judge *j, const struct facts_ib *d);

/* The active ports of a listed device against r->ib_min_rate_gbps. */
void judge_ib_rate(struct judge *j, const struct facts_ib *d, const struct judge_rules *r);

/*
 * A port's counters against BASE (the baseline: a port's counters when
 * the training started; -1 fields are unknown): link_downed risen fails,
 * symbol_error risen warns.  Port NOW of device DEV.
 */
void judge_ib_counters(struct judge *j, const char *dev, const struct hwmon_ib_port *now,
                       const struct hwmon_ib_port *base);

#endif
