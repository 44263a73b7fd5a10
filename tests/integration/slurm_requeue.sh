#!/bin/bash
# contrib/slurm/vigil.sbatch on a real Slurm 22.05 cluster of two nodes
# (tests/slurm/cluster.sh), changed only where a user changes it (TRAIN,
# the #SBATCH lines) and with its documented variables (GRACE,
# MAX_RESUMES, VIGIL, RUN_DIR): a resumable training (train_sim.py), one
# agent per node under mpirun.
#   - `scancel --signal=USR1 --batch`: every training saves, vigil ends the
#     run with 81, the script requeues the job, and the next run resumes
#     each rank from its checkpoint;
#   - the same again with MAX_RESUMES=1: 82, said to come from the signal
#     (not "after a fault"), and the job is not requeued.
# Also measures Slurm's requeue delay (cred_expire + 1 s; cred_expire is
# 10 s here).  Needs root; skips (77) without it, which the CI script
# counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 2 || { fail "cluster"; finish; }

W=$SL_SPOOL
ck=$W/ckpt
sl_template "$W/train.sbatch" "$SIM --iters 1000000 --iter-ms 50 --ckpt-dir $ck" "" \
	's/^#SBATCH --nodes=4$/#SBATCH --nodes=2/' 's/^#SBATCH --time=24:00:00$/#SBATCH --time=10/' ||
	fail "the template copy"
id=$(sl_cmd env GRACE=5 MAX_RESUMES=1 VIGIL="$VIGIL" RUN_DIR="$W/run" \
	sbatch --parsable --chdir="$W" "$W/train.sbatch")
out=$W/train-$id.out

# Run 0: both trainings up, then the checkpoint signal to the batch shell.
sl_wait_lines "$out" '^ready ' 2 60 || fail "run 0: trainings not ready"
sl_cmd scancel --signal=USR1 --batch "$id"
sl_wait_lines "$out" '^vigil\.sbatch: run 1 of job' 1 90 || fail "run 1 did not start"
t1=$(date +%s)
expect_eq "run 0: 81, stopped" "81 stopped" "$(sl_json "$W/run/report.0.json" 'r["exit_code"], r["state"]')"
expect_match "run 0: the trap passed SIGUSR1 on" 'vigil\.sbatch: SIGUSR1: passing it to mpirun' "$(cat "$out")"
expect_eq "run 0: both trainings saved" 2 "$(grep -c '^checkpoint saved at iteration' "$out")"
expect_match "run 0: the script requeued the job" 'vigil\.sbatch: job [0-9]+ requeued and held' "$(cat "$out")"
expect_eq "requeued once" 1 "$(sl_job_field "$id" Restarts)"
ended=$(stat -c %Y "$W/run/report.0.json")
echo "requeue delay: $((t1 - ended)) s from vigil's report to the next run (cred_expire=10)"
if [ $((t1 - ended)) -ge 11 ]; then pass "the requeued job waited cred_expire + 1 s"
else fail "the requeued job started after $((t1 - ended)) s"; fi

# Run 1: both ranks resume where they saved.
sl_wait_lines "$out" '^resumed from iteration' 2 60 || fail "run 1: not resumed"
expect_match "run 1 resumes from the checkpoints" '^([0-9]+,[0-9]+) = \1$' "$(sl_resumed "$out")"
sl_wait_lines "$out" '^ready ' 4 60 || fail "run 1: trainings not ready"

# Run 1 is the last allowed: the signal again ends it with 82.
sl_cmd scancel --signal=USR1 --batch "$id"
sl_wait_job "$id" 'FAILED|COMPLETED|CANCELLED' 60 || fail "run 1 did not end"
expect_eq "run 1: 82, stopped" "82 stopped" "$(sl_json "$W/run/report.1.json" 'r["exit_code"], r["state"]')"
expect_eq "the job's exit code" 82:0 "$(sl_job_field "$id" ExitCode)"
expect_match "82 said to come from the signal" \
	'vigil\.sbatch: checkpointed on the checkpoint signal.*resumes are used up \(82\): not requeued' \
	"$(cat "$out")"
expect_no_match "82 not said to be a fault" 'after a fault' "$(cat "$out")"
sleep 3
expect_eq "not requeued again" "1 FAILED" "$(sl_job_field "$id" Restarts) $(sl_job_field "$id" JobState)"
expect_eq "four checkpoints in all" 4 "$(grep -c '^checkpoint saved at iteration' "$out")"

sl_down || fail "the cluster left something behind"
finish
