#!/bin/bash
# A hung PyTorch DDP training (Debian's python3-torch, gloo on the CPU)
# under contrib/slurm/vigil.sbatch on a real Slurm 22.05 cluster of three
# nodes (tests/slurm/cluster.sh), a two-node job with --hang-timeout 5
# (EXTRA) and the template's --resume: rank 1 sleeps forever inside its
# loop in the first run while rank 0 waits in the all-reduce.  vigil finds
# the hang, names n2 rank 1 with both Python stacks (the only rank outside
# the collective: among two, counting cannot tell), ends the run with 81
# without a checkpoint (--on-hang auto under --resume), the script
# requeues the job without n2, and the next run, on n1 and n3, trains to
# the end.  Needs root and torch; skips (77) without them, which the CI
# script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

sl_require
need_torch
sl_up 3 || { fail "cluster"; finish; }

W=$SL_SPOOL
TRAIN="$TESTS_SRCDIR/integration/hang_train.py"
sl_template "$W/hang.sbatch" \
	"env GLOO_SOCKET_IFNAME=eth0 PYTHONDONTWRITEBYTECODE=1 $PY $TRAIN --iters 80 --at 15 --fault sleep --rank 1 --once $W/once --ckpt-dir $W/ck" \
	"--hang-timeout 5 --heartbeat 1 --tag-output" \
	's/^#SBATCH --nodes=4$/#SBATCH --nodes=2/' 's/^#SBATCH --time=24:00:00$/#SBATCH --time=10/' ||
	fail "the template copy"
run=$W/run
id=$(sl_cmd env GRACE=3 VIGIL="$VIGIL" RUN_DIR="$run" sbatch --parsable --chdir="$W" "$W/hang.sbatch")
out=$W/train-$id.out

sl_wait_lines "$out" '^vigil\.sbatch: run 1 of job' 1 150 || fail "run 1 did not start"
t0=$(sed -n 's/^\[[^]]*\] fault sleep at \([0-9.]*\)$/\1/p' "$out" | head -n 1)
ms=$([ -n "$t0" ] && event_after_ms "$run/events.jsonl" hang "$(python3 -c "print(int($t0 * 1000))")")
echo "hang event ${ms:-never} ms after the fault"
if [ -n "$ms" ] && [ "$ms" -le 11000 ]; then pass "the hang found ${ms} ms after the fault"
else fail "the hang found after '${ms}' ms"; fi
expect_eq "run 0: 81, n2 the suspect" "81 n2" \
	"$(sl_json "$run/report.0.json" 'r["exit_code"], r["hang"]["suspect"]["node"]')"
expect_match "run 0: n2 rank 1 named, where it sleeps and where the other waits" \
	'n2 rank 1: not in the collective: .* at fault \(hang_train\.py:[0-9]+\).* at all_reduce \(distributed_c10d\.py:[0-9]+\)' \
	"$(sl_json "$run/report.0.json" 'r["hang"]["summary"]')"
expect_match "run 0: no checkpoint, said" 'no checkpoint was taken' "$(sl_json "$run/report.0.json" 'r["reason"]')"
expect_match "the script leaves n2 out" 'vigil\.sbatch: faulty nodes to leave out: n2$' "$(cat "$out")"
sl_wait_job "$id" 'COMPLETED|FAILED' 150 || fail "run 1 did not end"
expect_eq "run 1 on n1 and n3" "n[1,3]" "$(sl_job_field "$id" NodeList)"
expect_eq "run 1 trains to the end" "0 COMPLETED 2" \
	"$(sl_json "$run/report.1.json" 'r["exit_code"]') $(sl_job_field "$id" JobState) $(grep -cE '^(\[[^]]*\] )?done [01]$' "$out")"
finish
