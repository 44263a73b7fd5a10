#!/bin/bash
# A hot spare against the requeue, on a real Slurm 22.05 cluster of three
# nodes (tests/slurm/cluster.sh), the same job and training in the same
# run (tests/slurm/spare_job.sh: contrib/slurm/vigil.sbatch, the probe
# training of the suite, rank 1 crashing at iteration 12):
#   spare:   --nodes=3, --spares 1: the job completes in its first Slurm
#            run (no requeue), the training started again inside it with
#            the spare as RANK 1 of the same WORLD_SIZE 2, from the saved
#            iteration; the report names the failed node and the spare,
#            the exclude file the failed node;
#   requeue: --nodes=2, no spare: requeued once (81), the failed node
#            excluded, completed in the second run.
# The spare loses less time from the crash to the first iteration after
# it than the requeue, whose time holds the cluster's requeue delay
# (SL_CRED_EXPIRE + 1 s): tests/bench/bench_spares.sh measures by how
# much.  Needs root; skips (77) without it, which the CI script counts as
# a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 3 || { fail "cluster"; finish; }
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/spare_job.sh"

sp_job spare 1 || fail "spare: job $sp_id did not end"
spare_id=$sp_id spare_probe=$sp_probe spare_run=$sp_run
expect_eq "spare: completed in its first run" "COMPLETED 0" \
	"$(sl_job_field "$spare_id" JobState) $(sl_job_field "$spare_id" Restarts)"
rep=$spare_run/report.0.json
expect_eq "spare: vigil's report" "0 succeeded" "$(sl_json "$rep" 'r["exit_code"], r["state"]')"
expect_eq "spare: the recovery, failed node and spare" "n2 n3 1" \
	"$(sl_json "$rep" 'r["spares"]["recoveries"][0]["failed_node"], r["spares"]["recoveries"][0]["spare_node"], r["spares"]["recoveries"][0]["training_rank"]')"
# the attempts before a restart: one, of WORLD_SIZE 2 (the one after it
# has ranks 0 and 1 again: below)
expect_eq "spare: one restart, from a world of 2" "1 [2]" \
	"$(sl_json "$rep" 'r["restarts"], [a["world_size"] for a in r["attempts"]]')"
expect_eq "spare: n2 excluded" n2 "$(cat "$spare_run/exclude.0" 2>/dev/null)"
# the probe's own record: the restart's ranks, and where it resumed
expect_eq "spare: both ranks ran again" "truth.0.r1.0 truth.0.r1.1" \
	"$(cd "$spare_probe" && ls truth.0.r1.* 2>/dev/null | paste -sd' ')"
expect_eq "spare: resumed from the saved iteration" 12 \
	"$(awk '$1 == "iter" { print $2; exit }' "$spare_probe/truth.0.r1.0" 2>/dev/null)"
spare_lost=$(sp_lost spare "$spare_probe") || fail "spare: the probe's record"

sp_job requeue 1 || fail "requeue: job $sp_id did not end"
expect_eq "requeue: completed in its second run" "COMPLETED 1" \
	"$(sl_job_field "$sp_id" JobState) $(sl_job_field "$sp_id" Restarts)"
expect_eq "requeue: 81, then succeeded" "81 0" \
	"$(sl_json "$sp_run/report.0.json" 'r["exit_code"]') $(sl_json "$sp_run/report.1.json" 'r["exit_code"]')"
expect_eq "requeue: n2 excluded" n2 "$(cat "$sp_run/exclude.0" 2>/dev/null)"
requeue_lost=$(sp_lost requeue "$sp_probe") || fail "requeue: the probe's record"

echo "lost from the crash to the first iteration after it, to the training's start, own start (s):"
echo "  spare:   $spare_lost"
echo "  requeue: $requeue_lost"
got=$(python3 -c "
import sys
s, q = [float(x.split()[0]) for x in sys.argv[1:3]]
print('ok' if 0 < s < q and q >= ${SL_CRED_EXPIRE:-10} + 1 else 'spare %.3f s, requeue %.3f s' % (s, q))
" "${spare_lost:-0 0 0}" "${requeue_lost:-0 0 0}")
expect_eq "the spare loses less time than the requeue and its delay" ok "$got"

sl_down || fail "the cluster left something behind"
finish
