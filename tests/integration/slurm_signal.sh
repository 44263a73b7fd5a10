#!/bin/bash
# contrib/slurm/vigil.sbatch on a real Slurm 22.05 cluster of two nodes
# (tests/slurm/cluster.sh), with Slurm requeueing on 81 (RequeueExit=81 in
# slurm.conf, REQUEUE_BY=slurm in the script), checkpointed by Slurm's own
# warning before the time limit: `#SBATCH --signal=B:USR1@10` with a time
# limit of one minute.  slurmctld 22.05 looks at time limits every 30 s and
# sends the signal when the job is within 10 + 30 s of its end, so it comes
# 20 to 50 s into the run.  The trap passes it on, every training saves,
# vigil ends the run with 81, Slurm requeues the job, and the next run
# resumes from the checkpoints; a last `scancel --signal=USR1 --batch`
# with no resumes left (MAX_RESUMES=1) ends it with 82, which Slurm does
# not requeue.  Needs root; skips (77) without it, which the CI script
# counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 2 RequeueExit=81 || { fail "cluster"; finish; }

W=$SL_SPOOL
ck=$W/ckpt
sl_template "$W/train.sbatch" "$SIM --iters 1000000 --iter-ms 50 --ckpt-dir $ck" "" \
	's/^#SBATCH --nodes=4$/#SBATCH --nodes=2/' 's/^#SBATCH --time=24:00:00$/#SBATCH --time=1/' \
	's/^#SBATCH --signal=B:USR1@300$/#SBATCH --signal=B:USR1@10/' || fail "the template copy"
grep -q '^#SBATCH --signal=B:USR1@10$' "$W/train.sbatch" || fail "no --signal line in the copy"
id=$(sl_cmd env GRACE=5 CKPT_LEAD=8 MAX_RESUMES=1 REQUEUE_BY=slurm VIGIL="$VIGIL" \
	RUN_DIR="$W/run" sbatch --parsable --chdir="$W" "$W/train.sbatch")
out=$W/train-$id.out

sl_wait_lines "$out" '^ready ' 2 60 || fail "run 0: trainings not ready"
t0=$(date +%s)
# Slurm's signal, not anyone else's: nothing is sent by this test.
sl_wait_lines "$out" '^vigil\.sbatch: SIGUSR1: passing it to mpirun' 1 70 ||
	fail "run 0: Slurm's warning signal did not come"
echo "the warning signal came $(($(date +%s) - t0)) s after the trainings started"
sl_wait_lines "$out" '^vigil\.sbatch: run 1 of job' 1 90 || fail "run 1 did not start"
expect_eq "run 0: 81, stopped" "81 stopped" "$(sl_json "$W/run/report.0.json" 'r["exit_code"], r["state"]')"
expect_eq "run 0: both trainings saved" 2 "$(grep -c '^checkpoint saved at iteration' "$out")"
expect_match "run 0: RequeueExit=81 requeues, the script does not" \
	'vigil\.sbatch: exit 81: RequeueExit=81 in slurm\.conf requeues the job' "$(cat "$out")"
expect_no_match "run 0: no requeue by the script" 'requeued and held' "$(cat "$out")"
expect_eq "requeued once, by Slurm" 1 "$(sl_job_field "$id" Restarts)"
expect_no_match "run 0 did not reach the time limit" 'TIMEOUT|DUE TO TIME LIMIT' "$(cat "$out")"

sl_wait_lines "$out" '^resumed from iteration' 2 60 || fail "run 1: not resumed"
expect_match "run 1 resumes from the checkpoints" '^([0-9]+,[0-9]+) = \1$' "$(sl_resumed "$out")"
sl_wait_lines "$out" '^ready ' 4 60 || fail "run 1: trainings not ready"

# No resumes left: 82, which RequeueExit=81 does not requeue.
sl_cmd scancel --signal=USR1 --batch "$id"
sl_wait_job "$id" 'FAILED|COMPLETED|CANCELLED|TIMEOUT' 60 || fail "run 1 did not end"
expect_eq "run 1: 82" 82 "$(sl_json "$W/run/report.1.json" 'r["exit_code"]')"
expect_eq "the job's exit code" 82:0 "$(sl_job_field "$id" ExitCode)"
sleep 3
expect_eq "not requeued again" "1 FAILED" "$(sl_job_field "$id" Restarts) $(sl_job_field "$id" JobState)"

sl_down || fail "the cluster left something behind"
finish
