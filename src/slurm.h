/*
 * slurm.h - marking this node in Slurm: `vigil check --drain/--undrain`.
 *
 * Runs scontrol (found in PATH, or $VIGIL_SCONTROL) under a timeout; the
 * node keeps running if slurmctld does not answer.
 */
#ifndef VIGIL_SLURM_H
#define VIGIL_SLURM_H

#include <stddef.h>

/* The prefix that marks a drain reason as vigil's own. */
#define SLURM_REASON_PREFIX "vigil:"

/*
 * Slurm's name for this node: $SLURMD_NODENAME, else the short hostname.
 * Writes into BUF; returns 0 or a negative errno.
 */
int slurm_node_name(char *buf, size_t len);

/*
 * scontrol update NodeName=NODE State=DRAIN Reason="vigil: REASON".
 * REASON is one line; quotes and newlines are replaced, and the reason
 * with its prefix is cut to 200 bytes.  Returns 0, or a negative errno
 * (-ETIMEDOUT, -ENOENT when scontrol is missing, -EINVAL for a node name
 * that is empty or has spaces), or scontrol's non-zero exit status; ERR
 * gets scontrol's message (or what went wrong) on one line.
 */
int slurm_drain(const char *node, const char *reason, double timeout_s,
                char *err, size_t errlen);

/*
 * Resume NODE (State=RESUME) only if it is drained (DRAIN/DRAINED/DRAINING)
 * with a reason that starts with "vigil:", so that a drain set by an
 * administrator or another health check stays.  Returns 1 when resumed, 0
 * when left alone, or a negative errno / scontrol status as slurm_drain()
 * (-EPROTO when `scontrol show node` printed no State=).
 */
int slurm_undrain(const char *node, double timeout_s, char *err, size_t errlen);

#endif
