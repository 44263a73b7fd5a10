#!/bin/bash
# The time-limit checkpoint without a --signal line, on a real Slurm 22.05
# cluster of two nodes (tests/slurm/cluster.sh): contrib/slurm/vigil.sbatch
# with its `#SBATCH --signal` line deleted, as the template says to do to
# end a job at its time limit, a limit of one minute and CKPT_LEAD=40.
# Slurm 22.05 sets no SLURM_JOB_END_TIME, so vigil must ask Slurm for the
# job's end time (slurm_end_time()): 40 s before it, about 20 s into the
# run, every training saves and vigil ends the job with 83 ("expired"),
# which is not requeued; Slurm's own time limit (TIMEOUT: SIGTERM, no
# checkpoint, no report) never comes.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 2 || { fail "cluster"; finish; }

W=$SL_SPOOL
sl_template "$W/train.sbatch" "$SIM --iters 1000000 --iter-ms 50 --ckpt-dir $W/ckpt" "" \
	's/^#SBATCH --nodes=4$/#SBATCH --nodes=2/' 's/^#SBATCH --time=24:00:00$/#SBATCH --time=1/' \
	'/^#SBATCH --signal=/d' || fail "the template copy"
expect_no_match "no --signal line" '^#SBATCH --signal' "$(cat "$W/train.sbatch")"
id=$(sl_cmd env GRACE=5 CKPT_LEAD=40 MAX_RESUMES=1 VIGIL="$VIGIL" RUN_DIR="$W/run" \
	sbatch --parsable --chdir="$W" "$W/train.sbatch")
out=$W/train-$id.out

sl_wait_lines "$out" '^ready ' 2 60 || fail "trainings not ready"
t0=$(date +%s)
# Slurm ends the job at the limit, 60 s in, or up to 30 s after.
sl_wait_job "$id" 'COMPLETED|FAILED|TIMEOUT|CANCELLED' 120 || fail "the job did not end"
echo "the job ended $(($(date +%s) - t0)) s after the trainings started, $(sl_job_field "$id" JobState)"
expect_eq "vigil ended it: 83, expired" "83 expired" "$(sl_json "$W/run/report.0.json" 'r["exit_code"], r["state"]' 2>&1)"
expect_eq "the job's state and exit code" "FAILED 83:0" \
	"$(sl_job_field "$id" JobState) $(sl_job_field "$id" ExitCode)"
expect_eq "both trainings saved on the checkpoint signal" 2 "$(grep -c '^signal SIGUSR1$' "$out")"
expect_match "the script says so" 'vigil\.sbatch: the time limit was reached \(83, expired\): not requeued' \
	"$(cat "$out")"
sleep 3
expect_eq "not requeued" 0 "$(sl_job_field "$id" Restarts)"

sl_down || fail "the cluster left something behind"
finish
