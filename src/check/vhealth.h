/*
 * vhealth.h - board health from the vendors' own signals: the findings
 * that NVML, ROCm SMI and CNDev give about each accelerator, for the
 * pre-check, `vigil check` and the inspection of a running job alike.
 *
 * Gather, then judge (as LBNL NHC does):
 *  - vhealth_gather() asks each library whose boards the node has, each in
 *    a child process under the check timeout (NVML can hang on a wedged
 *    GPU), and returns plain facts;
 *  - vhealth_judge() compares facts with the configuration
 *    (cfg->boards, "check.boards" in vigil.conf(5)) and, for a running job,
 *    with a baseline, and lists findings.  It is pure: tests call it with
 *    facts alone.
 * For a running job, vhealth_monitor keeps one child process that holds
 * the libraries open, waits in nvmlEventSetWait for XID and double-bit
 * ECC events in one thread, and sends fresh facts every interval from
 * another; the agent reads them from a descriptor its poll loop watches
 * (see vhealth_monitor_start()).
 *
 * Which findings there are, with their source, is listed in vigil(1),
 * BOARD CHECKS.  The libraries describe the live system only: with
 * another sysfs root (LIVE false: hwmon_is_live()) a library is asked only
 * when the configuration names its path, which is how tests and a site's
 * dry runs reach a library of their choosing.  A node whose slots include
 * no board of a vendor never asks that vendor's library, so a missing
 * library on such a node is not an event.
 */
#ifndef VIGIL_VHEALTH_H
#define VIGIL_VHEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <cJSON.h>

#include "conf/config.h"
#include "lib/verdict.h"
#include "sys/topo.h"
#include "sys/vendor.h"

/*
 * The findings (struct finding, lib/verdict.h) are:
 *   what      "board" (lost, library, a call that failed), "xid", "ecc",
 *             "retired-pages", "row-remap", "recovery", "throttle",
 *             "temperature", "nvlink", "ras", "health", "events" (XID
 *             events not watched)
 *   device    the board's PCI bus id "0000:3b:00.0" (with "/nvlink3" or
 *             "/umc" for a link or RAS block), or the library's name when
 *             the library itself is the problem; "nvml:3" (the library's
 *             index) only for a board NVML can name in no way
 *   evidence  one line, e.g. "XID 79 (GPU has fallen off the bus)"
 */

/* What the libraries said.  Large (the boards of three libraries): use
 * vhealth_facts_new(). */
struct vhealth_facts {
	bool asked[VENDOR_NKINDS];   /* the node has boards of this vendor */
	int rc[VENDOR_NKINDS];       /* 0 answered; -ENOENT not installed; -ETIMEDOUT; -EIO,
	                              * -ENOSYS, -EPERM: see lib[].error */
	struct vendor_facts lib[VENDOR_NKINDS];
};

/* A zeroed vhealth_facts (nothing asked), or NULL with errno set.  free() it. */
struct vhealth_facts *vhealth_facts_new(void);

/* The library for a slot's vendor: NVIDIA -> NVML, AMD -> ROCm SMI, ... */
enum vendor_kind vhealth_vendor_of(enum slot_vendor v);

/*
 * Ask the library of every vendor among SLOTS (none when
 * cfg->boards.enabled is false; with LIVE false, only those whose path
 * cfg->boards names), each in a child process under
 * cfg->check_timeout_s; the child's standard output and error go to
 * /dev/null (ROCm SMI prints there).  Fills OUT (reset first).  Returns 0,
 * or a negative errno when a child cannot be started; a library that fails
 * is a fact (out->rc).  Blocks up to three timeouts; forks.
 */
int vhealth_gather(const struct config *cfg, const struct slot *slots, size_t nslots, bool live,
                   struct vhealth_facts *out);

/*
 * Judge NOW against RULES.  SLOTS are what the node should have: a slot no
 * library board matches (by PCI bus id, else by order within the vendor)
 * is lost.  BASE (NULL for the pre-check and `vigil check`) is the facts
 * at the start of the job: with it, counters are judged by how much they
 * rose (ECC correctable, NVLink errors) and an NVLink active then but not
 * now is down; without it, counts are judged as they are.
 *
 * Findings, per board in slot order: lost, calls that failed (a warning
 * naming them and NVML's words), recovery action, reset required, ECC
 * uncorrectable, ECC correctable, retired pages pending, row remapping
 * pending/failed, throttle, temperature, NVLink, RAS blocks, CNDev
 * health; then the libraries that did not answer, or answered with a call
 * that failed on the way (a warning).  *OUT
 * (NULL when *N is 0) belongs to the caller: free().  Returns 0 or
 * -ENOMEM.  Pure: no I/O, no logging.
 */
int vhealth_judge(const struct config_boards *rules, const struct slot *slots, size_t nslots,
                  const struct vhealth_facts *now, const struct vhealth_facts *base,
                  struct finding **out, size_t *n);

/*
 * Judge one NVML event: an XID in rules->xid_fail fails, another XID gets
 * rules->xid_other, a double-bit ECC event rules->ecc_uncorrectable, a lost
 * GPU rules->lost.  Returns true with *OUT filled, false when the verdict
 * is "pass".
 */
bool vhealth_judge_event(const struct config_boards *rules, const struct vendor_event *ev,
                         struct finding *out);

/* "GPU has fallen off the bus" for 79; NULL for an XID without a name here. */
const char *vhealth_xid_name(unsigned long long xid);

/*
 * The facts as JSON, for `vigil check --json` details and the inspection's
 * notes: {"nvml": {"library", "available", "version", "count", "error",
 * "boards": [{"index", "pci_bus_id", "name", ...every known fact...}]},
 * "rocm_smi": ..., "cndev": ...}, only the libraries asked; a fact the
 * library did not give is left out.  NULL on allocation failure.
 */
cJSON *vhealth_facts_to_json(const struct vhealth_facts *f);

/*
 * Resource use per board, for the metrics and the coordinator:
 * [{"vendor", "index", "pci_bus_id", "utilization" (0..1),
 *   "memory_used_bytes", "memory_total_bytes", "temperature_celsius",
 *   "power_watts"}, ...], a value the library did not give left out.
 * "index" is the slot index when a slot matches, else the library's.
 * NULL on allocation failure.
 */
cJSON *vhealth_usage_to_json(const struct vhealth_facts *f, const struct slot *slots,
                             size_t nslots);

/* ---- the running job ------------------------------------------------- */

struct vhealth_monitor;

/*
 * Start watching the boards of SLOTS: fork one child that opens the
 * libraries once, registers every NVIDIA board for XID and double-bit ECC
 * events, sends the facts of every library at once and then every
 * INTERVAL_S seconds, and sends each event as it comes, from a thread of
 * its own, so that no reading delays it.
 *
 * How it fits a single-threaded poll loop: the child's threads block in
 * nvmlEventSetWait (no polling of the driver) and in the readings, and
 * write whole messages to a pipe.  The agent adds
 * vhealth_monitor_fd() to its loop (readable: call vhealth_monitor_take())
 * or simply calls vhealth_monitor_take() from its inspection timer: the
 * descriptor is non-blocking and take() never waits.  A wedged board can
 * hang only the child; the agent sees its facts go stale.  The child dies
 * with the agent (PR_SET_PDEATHSIG) and when its pipe closes.
 *
 * RULES and SLOTS are copied; LIVE as for vhealth_gather().  Returns 0
 * with *OUT set; -ENOENT when no library is to be asked (no slots of a
 * vendor, checks disabled, or not live and no path configured: no event); another negative errno when the child cannot be started.  The
 * child is forked from the caller: start the monitor before MPI starts
 * threads, or accept that the child runs library code after fork() in a
 * threaded process (glibc makes malloc usable there; the check's timed
 * children do the same).
 */
int vhealth_monitor_start(const struct config_boards *rules, double timeout_s,
                          const struct slot *slots, size_t nslots, bool live, double interval_s,
                          struct vhealth_monitor **out);

/* The descriptor to watch for reading. */
int vhealth_monitor_fd(const struct vhealth_monitor *m);

/* The child's pid.  It leads a process group of its own, as the agent's
 * helpers do, so child.c never counts it among the training's processes. */
pid_t vhealth_monitor_pid(const struct vhealth_monitor *m);

/*
 * Read what the child sent (never blocks) and judge: the events seen so
 * far (each XID of a board once), the latest facts against the first ones
 * (the baseline), a library whose facts are older than twice the
 * interval plus the timeout (rules->unresponsive: "NVML has not answered
 * for 75 s"), and XID events that are not watched (a warning, "events" on
 * "nvml", or on the first board that refused them when others did not,
 * with NVML's words: registration refused, or a later wait failed; from
 * then on XIDs are known only by what the readings of every interval
 * show).  *OUT (NULL when *N is 0) belongs to the caller: free().
 * Returns 0, or -ENOMEM.  Findings repeat on every call while they hold,
 * as the inspection's do.  Safe in a loop callback.
 */
int vhealth_monitor_take(struct vhealth_monitor *m, struct finding **out, size_t *n);

/* The latest facts, NULL before the first arrive.  Owned by M. */
const struct vhealth_facts *vhealth_monitor_facts(const struct vhealth_monitor *m);

/* Whether the child has said it watches NVML events (false without NVML).
 * ERR (may be NULL) gets why events are not watched (on some boards, when
 * true), "" when they are on every board. */
bool vhealth_monitor_events(const struct vhealth_monitor *m, const char **err);

/*
 * Once each time the child says that XID events are not watched, or no
 * longer (vhealth_monitor_take() must have read it): NVML's reason, for
 * the agent's log; NULL otherwise.  Owned by M, valid until M changes.
 */
const char *vhealth_monitor_events_news(struct vhealth_monitor *m);

/* Stop the child (SIGKILL, reaped if it goes at once) and free.  NULL is a no-op. */
void vhealth_monitor_free(struct vhealth_monitor *m);

#endif
