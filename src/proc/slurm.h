/*
 * slurm.h - this node and this job as Slurm sees them: `vigil check
 * --drain/--undrain` marks the node, and `vigil run` asks for the job's
 * end time.
 *
 * Runs scontrol and squeue (found in PATH, or $VIGIL_SCONTROL and
 * $VIGIL_SQUEUE) under a timeout, without a shell; the node and the job
 * keep running if slurmctld does not answer.  On SIGTERM, `vigil run`
 * also asks whether the job was cancelled.  Every function here that
 * talks to Slurm returns a negative errno on failure with ERR saying what
 * went wrong on one line, scontrol's or squeue's own message included:
 * -ETIMEDOUT (no answer in time), -ENOENT (the command is missing), -EIO
 * (it failed: slurmctld down, an unknown node or job), -EPROTO (its output
 * made no sense), -EINVAL (a bad node name or job id: nothing was run).
 */
#ifndef VIGIL_SLURM_H
#define VIGIL_SLURM_H

#include <stddef.h>
#include <time.h>

/* The prefix that marks a drain reason as vigil's own. */
#define SLURM_REASON_PREFIX "vigil:"

/*
 * Slurm's name for this node: $SLURMD_NODENAME, else the short hostname.
 * Writes into BUF; returns 0 or a negative errno.
 */
int slurm_node_name(char *buf, size_t len);

/*
 * Drain NODE with the reason "vigil: REASON", unless someone else has
 * marked it: reads the node's state and reason first (`scontrol show
 * node`), and leaves alone a node that is drained, down or failed with a
 * reason that is not vigil's (an administrator's maintenance, another
 * health check's finding), and one that vigil drained already for the
 * same reason.  REASON is one line; quotes and newlines are replaced, and
 * the reason with its prefix is cut to 200 bytes.  Returns 1 when it
 * drained the node (or replaced vigil's older reason), 0 when it left the
 * node as it was (ERR then says why), or a negative errno as above.
 * There is a moment between reading and draining in which an
 * administrator's drain can still be overwritten.
 */
int slurm_drain(const char *node, const char *reason, double timeout_s,
                char *err, size_t errlen);

/*
 * Resume NODE (State=RESUME) only if it is drained (DRAIN/DRAINED/DRAINING)
 * with a reason that starts with "vigil:", so that a drain set by an
 * administrator or another health check stays.  Returns 1 when resumed, 0
 * when left alone (ERR says why), or a negative errno as above.
 */
int slurm_undrain(const char *node, double timeout_s, char *err, size_t errlen);

/*
 * The bounds of a believable end time: no more than a day in the past (a
 * job past its limit is killed within minutes) and no more than ten years
 * ahead (a job without a limit has no end time at all).
 */
#define SLURM_END_PAST_MAX   (24L * 3600)
#define SLURM_END_FUTURE_MAX (3650L * 24 * 3600)

/*
 * Parse a job's end time as Slurm gives it: seconds since the epoch
 * (SLURM_JOB_END_TIME, or Slurm's commands under SLURM_TIME_FORMAT=%s) or
 * Slurm's standard local time "YYYY-MM-DDTHH:MM:SS"; surrounding white
 * space is ignored.  "Unknown", "N/A", "NONE", "None", "UNLIMITED" and
 * "INVALID" (any case) mean no end time.  NOW is the current time.
 * Returns 1 with *END set; 0 when there is no end time; -EINVAL when TEXT
 * is not a time; -ERANGE when it is absurd (overflows, or lies outside
 * the bounds above): ERR says which, so that the caller can say so and
 * carry on without a deadline instead of expiring at once.
 */
int slurm_end_time_parse(const char *text, time_t now, time_t *end,
                         char *err, size_t errlen);

/*
 * Ask Slurm for job JOBID's end time: `squeue -h -j JOBID -o %e` with
 * SLURM_TIME_FORMAT=%s (run through /usr/bin/env), under TIMEOUT_S.
 * This is the job's current limit: `scontrol update JobId=JOBID
 * TimeLimit=...` on the running job moves it.  JOBID is digits only.
 * Returns as slurm_end_time_parse(), or a negative errno as above.
 */
int slurm_job_end_time(const char *jobid, double timeout_s, time_t *end,
                       char *err, size_t errlen);

/*
 * When job JOBID's allocation started (this run of it, for a requeued
 * job), and when it became eligible to start: `squeue -h -j JOBID -O
 * StartTime,EligibleTime` with SLURM_TIME_FORMAT=%s.  A requeued job
 * becomes eligible once Slurm's requeue delay has passed; from then to
 * its start it waited in the queue.  JOBID is digits only.  Returns 0
 * with *START set, and *ELIGIBLE (0 when Slurm gave none, or one after
 * the start), or a negative errno as above (-EPROTO: the start is not a
 * time, or one in the future).
 */
int slurm_job_start_time(const char *jobid, double timeout_s, time_t *start, time_t *eligible,
                         char *err, size_t errlen);

/*
 * This job's end time, for `vigil run` inside a Slurm job: asked of Slurm
 * (slurm_job_end_time() for $SLURM_JOB_ID) when the job has an id, since
 * only Slurm knows a limit changed after the job started; else, or when
 * Slurm does not answer, $SLURM_JOB_END_TIME (Slurm 23.02 and later set
 * it; 22.05 does not).  *SOURCE (may be NULL) names where the answer came
 * from: "squeue", "SLURM_JOB_END_TIME" or NULL when neither had one.
 * Returns 1 with *END set, 0 when the job has no end time, -ENOENT when
 * this is no Slurm job (neither variable is set), or a negative errno
 * with ERR saying why neither source gave a time (both reasons when both
 * failed).  Blocks for TIMEOUT_S at most.
 */
int slurm_end_time(double timeout_s, time_t *end, const char **source,
                   char *err, size_t errlen);

/*
 * Whether a job that Slurm is ending was cancelled (scancel), from
 * squeue's fields `State|RestartCnt|PreemptTime|Reason` of that job
 * (SLURM_TIME_FORMAT=%s), one line; RESTARTS is the requeue count of the
 * run that asks ($SLURM_RESTART_COUNT).  While a job's processes get
 * SIGTERM its state reads COMPLETING whatever the cause (Slurm 22.05
 * shows the flag, not the base state), so a cancel is told from the
 * other ends by what they leave: the time limit has the reason
 * TimeLimit, a failed node NodeDown, preemption a preempt time, a
 * requeue a higher restart count.  A cancel is CANCELLED, or COMPLETING
 * with the reason None, no preempt time and the same restart count.
 * Returns 1 (cancelled), 0 (ending otherwise, or not ending: RUNNING
 * after `scancel --signal=TERM`), -EINVAL when TEXT is not that line.
 */
int slurm_cancel_parse(const char *text, long restarts);

/*
 * Was this job ($SLURM_JOB_ID, run $SLURM_RESTART_COUNT) cancelled?
 * Asks squeue under TIMEOUT_S.  Returns as slurm_cancel_parse(), -ENOENT
 * when this is no Slurm job, or a negative errno as above.
 */
int slurm_cancelled(double timeout_s, char *err, size_t errlen);

#endif
