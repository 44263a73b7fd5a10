/*
 * inspect.h - periodic fault inspection while training runs (the
 * platform's 故障巡检): the checks that make sense on a running node,
 * compared with what the node looked like when the training started.
 *
 * Gathers through facts.c (hwmon only, and statvfs for the checkpoint
 * directory, under a short timeout), so a run never blocks the agent's
 * loop for long, and judges with the pre-check's rules and words
 * (judge.h).  No MPI, no hwloc.
 */
#ifndef VIGIL_INSPECT_H
#define VIGIL_INSPECT_H

#include <stddef.h>

#include "conf/config.h"
#include "lib/verdict.h"
#include "sys/topo.h"

struct inspect;

/*
 * Start inspecting: open the sysfs root of CFG and record the baseline
 * (AER and InfiniBand error counters, which matter only when they rise).
 * SLOTS are the node's slots (copied).  CKPT_DIR (may be NULL) is the
 * checkpoint directory whose free space is watched against a minimum:
 * cfg->ckpt_min_free_mb ("check.storage.ckpt_min_free_mb" in vigil.conf(5)), or
 * CKPT_MIN_FREE_MB when that is positive (a command-line override; 0
 * takes the configuration's).  Returns 0 or a negative errno.
 *
 * What is needed of CFG (sysfs root, required NICs and InfiniBand
 * devices, thresholds) is copied: CFG may go away after this returns.
 * The InfiniBand counters are watched on every port present now.  A
 * counter unreadable now gets its baseline when it first reads, and one
 * that falls (cleared by a driver reload or `perfquery -R`) starts again
 * from the lower value.  -ENOENT/-ENOTDIR when the sysfs root is unusable,
 * -EINVAL for a NULL CFG or OUT.
 */
int inspect_new(const struct config *cfg, const struct slot *slots, size_t nslots,
                const char *ckpt_dir, long long ckpt_min_free_mb, struct inspect **out);

/*
 * Inspect now.  *FINDINGS (array of *N, owned by the caller, free()) lists
 * every current problem, in the pre-check's words: a slot's PCI device
 * missing, the PCIe link below its maximum (cfg->pcie_degraded), AER
 * counters risen since the baseline (fatal: fail, non-fatal: warn,
 * correctable past cfg->aer_correctable_max more: warn), a required NIC
 * not up or without carrier, a required InfiniBand port not
 * ACTIVE/LinkUp, link_downed risen (fail) or symbol_error risen (warn) on
 * any InfiniBand port, a NUMA node's free memory below
 * cfg->mem_min_free_mb (warn), the checkpoint directory missing, below
 * its minimum or not answering (fail; the agent unable to probe it:
 * warn).  Returns 0 or a negative errno.
 * Fast: for use from a loop timer.
 *
 * Counters are compared with the baseline, so a rise is reported on every
 * run after it happened.  Findings come in this order: slots (gone, PCIe,
 * AER), NICs, InfiniBand ports, InfiniBand counters, memory, checkpoint
 * directory; *FINDINGS is NULL when *N is 0.  Evidence never names the
 * node: the caller adds it.  Nothing here logs.
 *
 * With a checkpoint directory, each run forks a probe child that
 * statvfs()es it under min(cfg->check_timeout_s, 2 s); a child stuck past
 * the deadline in an uninterruptible call is killed and left for the
 * agent's SIGCHLD reaping.
 */
int inspect_run(struct inspect *in, struct finding **findings, size_t *n);

/* inspect_free(NULL) is a no-op. */
void inspect_free(struct inspect *in);

#endif
