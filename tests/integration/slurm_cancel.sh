#!/bin/bash
# A plain `scancel` of a resumable job, on a real Slurm 22.05 cluster of two
# nodes (tests/slurm/cluster.sh): contrib/slurm/vigil.sbatch without its
# `#SBATCH --signal` line.  scancel sends SIGTERM to every process of the
# job, the trainings included; vigil must not answer it as a checkpoint
# request (81, requeue): it asks Slurm, finds the job cancelled, stops the
# trainings without the checkpoint signal and ends with 143, "stopped",
# with a reason that names the cancel, and the job stays CANCELLED, not
# requeued.  Three cancels:
#   - while the trainings run (run 0 of a job);
#   - as the job starts, before the trainings are ready (pre-check,
#     launch);
#   - in run 1 of a job that `scancel --signal=USR1 --batch` checkpointed
#     and requeued first (every rank saved, run 1 resumed), so that the
#     cancel is told apart from a requeue by the restart count.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 2 || { fail "cluster"; finish; }

W=$SL_SPOOL
sl_template "$W/train.sbatch" "$SIM --iters 1000000 --iter-ms 50 --ckpt-dir \$CKPT" "" \
	's/^#SBATCH --nodes=4$/#SBATCH --nodes=2/' 's/^#SBATCH --time=24:00:00$/#SBATCH --time=10/' \
	'/^#SBATCH --signal=/d' || fail "the template copy"
expect_no_match "no --signal line" '^#SBATCH --signal' "$(cat "$W/train.sbatch")"

# submit NAME: a job with its own checkpoints and run directory; its id
submit() {
	sl_cmd env GRACE=5 MAX_RESUMES=3 VIGIL="$VIGIL" RUN_DIR="$W/$1" CKPT="$W/$1/ckpt" \
		sbatch --parsable --chdir="$W" "$W/train.sbatch"
}

# cancelled WHAT ID RUN DIR: scancel ID (in run RUN, reports in DIR) ended it, for good
cancelled() {
	local what=$1 id=$2 run=$3 dir=$4 out=$W/train-$2.out this
	sl_wait_job "$id" 'CANCELLED|COMPLETED|FAILED|TIMEOUT' 60 || fail "$what: the job did not end"
	# a requeued job starts again cred_expire + 1 s (11 s) after its end
	sleep 14
	expect_eq "$what: CANCELLED, not requeued" "CANCELLED $run" \
		"$(sl_job_field "$id" JobState) $(sl_job_field "$id" Restarts)"
	expect_no_match "$what: no run $((run + 1))" "vigil\\.sbatch: run $((run + 1)) of job" \
		"$(cat "$out")"
	this=$(sed -n "/^vigil\\.sbatch: run $run of job/,\$p" "$out")
	grep -E '^(vigil|vigil\.sbatch|signal|checkpoint saved)' <<<"$this" | sed "s/^/  $what | /"
	expect_no_match "$what: not requeued by the script" 'requeued and held|requeue wanted' "$this"
	expect_match "$what: the script says so" \
		'vigil\.sbatch: the job was cancelled \(scancel\): not requeued' "$this"
	if [ -s "$dir/report.$run.json" ]; then
		expect_eq "$what: vigil's report: 143, stopped" "143 stopped" \
			"$(sl_json "$dir/report.$run.json" 'r["exit_code"], r["state"]')"
		expect_match "$what: the report's reason names the cancel" 'cancelled \(scancel\)' \
			"$(sl_json "$dir/report.$run.json" 'r.get("reason", "")')"
	fi
}

# 1. While the trainings run.
id=$(submit a)
out=$W/train-$id.out
sl_wait_lines "$out" '^ready ' 2 60 || fail "a: trainings not ready"
sl_cmd scancel "$id"
cancelled "a (training)" "$id" 0 "$W/a"
[ -s "$W/a/report.0.json" ] || fail "a: no report"
expect_eq "a: no checkpoint signal reached a training" 0 "$(grep -c '^signal SIGUSR1$' "$out")"
expect_no_match "a: no false reason" 'killed by SIGUSR1' "$(cat "$out")"

# 2. As the job starts: the pre-check, the launch.
id=$(submit b)
out=$W/train-$id.out
sl_wait_lines "$out" '^vigil\.sbatch: run 0 of job' 1 60 || fail "b: the job did not start"
sl_cmd scancel "$id"
cancelled "b (start)" "$id" 0 "$W/b"
expect_eq "b: no checkpoint signal reached a training" 0 "$(grep -c '^signal SIGUSR1$' "$out")"

# 3. Checkpointed and requeued on request, then cancelled in run 1.
id=$(submit c)
out=$W/train-$id.out
sl_wait_lines "$out" '^ready ' 2 60 || fail "c: run 0: trainings not ready"
sl_cmd scancel --signal=USR1 --batch "$id"
sl_wait_lines "$out" '^vigil\.sbatch: run 1 of job' 1 90 || fail "c: run 1 did not start"
expect_eq "c: run 0: 81, stopped" "81 stopped" \
	"$(sl_json "$W/c/report.0.json" 'r["exit_code"], r["state"]')"
expect_eq "c: run 0: both trainings saved" 2 "$(grep -c '^checkpoint saved at iteration' "$out")"
expect_match "c: run 0: the script requeued the job" 'vigil\.sbatch: job [0-9]+ requeued and held' \
	"$(cat "$out")"
sl_wait_lines "$out" '^resumed from iteration' 2 60 || fail "c: run 1: not resumed"
expect_match "c: run 1 resumes from the checkpoints" '^([0-9]+,[0-9]+) = \1$' "$(sl_resumed "$out")"
sl_wait_lines "$out" '^ready ' 4 60 || fail "c: run 1: trainings not ready"
sl_cmd scancel "$id"
cancelled "c (run 1)" "$id" 1 "$W/c"
[ -s "$W/c/report.1.json" ] || fail "c: run 1: no report"
expect_eq "c: the checkpoint signal reached the trainings in run 0 only" 2 \
	"$(grep -c '^signal SIGUSR1$' "$out")"

sl_down || fail "the cluster left something behind"
finish
