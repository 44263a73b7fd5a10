#!/bin/bash
# Performance detection after an elastic restart, under mpirun: of three
# nodes, n2's agent stops dead (SIGSTOP: lost, it never joins another
# reduction); with --min-nodes 2 the others save, start again on two
# nodes, resume and finish.  Detection goes on among them: the report
# counts the training's iterations through the end (it stopped at the
# loss before), n1, slow from iteration 100 on, is named after the
# restart, and the reductions never waited for n2.
. "$(dirname "$0")/lib.sh"

ck="$SCRATCH/ck"
log="$SCRATCH/elastic.out"

args=""
for i in 0 1 2; do
	slow=""
	[ $i = 1 ] && slow="--slow-from 100 --slow-factor 2"
	args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --precheck off --min-nodes 2
		--heartbeat 0.5 --heartbeat-timeout 1.5 --grace 5 --perf-interval 0.5 --straggler-pct 50
		--perf-window 10 --summary-interval 0 --report $SCRATCH/r.json --events $SCRATCH/ev.jsonl
		-- $SIM --iters 160 --iter-ms 40 --ckpt-dir $ck.$i $slow"
done
timeout -k 5 120 ${MPIRUN:-mpirun} --oversubscribe --bind-to none $args >"$log" 2>&1 &
pid=$!
wait_ready "$log" 3 || fail "not ready"
for ((i = 0; i < 200; i++)); do
	[ "$(grep -c '^this iteration' "$log")" -ge 60 ] && break
	sleep 0.05
done
agent=$(agent_of n2 "$ck")
[ -n "$agent" ] && kill -STOP "$agent"
wait "$pid"
kill -KILL "$agent" 2>/dev/null

expect_match "the training started again on 2 nodes" 'starting the training again \(attempt 1\) on 2 nodes' "$(cat "$log")"
expect_eq "both resumed from their checkpoint" 2 "$(grep -c '^resumed from iteration' "$log")"
saved=$(sed -n 's/^checkpoint saved at iteration \([0-9]*\).*/\1/p' "$log" | sort -n | head -1)
perf=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["performance"]
print(p["iterations"], sorted((a["kind"], a["node"]) for a in p["alerts"]),
      sorted(n["node"] for n in p["nodes"]))' "$SCRATCH/r.json" 2>&1)
# Lines, not the training's own numbers: those saved before the loss
# (up to the checkpoint) and those after the restart, 160 in all when the
# checkpoint came right at the loss; a few printed after the checkpoint
# on a node count too, so at least 150.
iters=${perf%% *}
echo "# report: $perf"
expect_eq "iterations counted past the restart (saved at ${saved:-?})" 1 "$(( ${iters:-0} >= 150 ))"
expect_match "n1 named after the restart, n2 not blamed" "\\[\\('straggler', 'n1'\\)\\] \\['n0', 'n1', 'n2'\\]$" "$perf"
expect_match "the alert came after the restart" '"kind":"straggler"' "$(sed -n '/"kind":"restart"/,$p' "$SCRATCH/ev.jsonl")"
no_leftovers "elastic" "$ck"

finish
