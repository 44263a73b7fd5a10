#!/bin/bash
# Performance detection in vigil run, 4 nodes under mpirun, with synthetic
# timing streams of known values: the reductions, the slow node, alerts in
# both directions and their windows, the summary line, the notifier, the
# metrics file, the report, the reschedule action, and a stalled node
# that must not stall the others.
. "$(dirname "$0")/lib.sh"

# stream: the training of node $RANK prints N timing lines (the manual's
# format), e2e 1000+10*RANK ms, hardware time 500+i ms; node 3 takes
# 1500 ms from iteration 4 on; node 1 prints only 8 lines.
cat > "$SCRATCH/stream.sh" <<'SH'
#!/bin/sh
n=10
[ "$RANK" = 1 ] && n=8
i=1
while [ $i -le $n ]; do
	e2e=$((1000 + 10 * RANK))
	[ "$RANK" = 3 ] && [ $i -ge 4 ] && e2e=1500
	[ "$RANK" = 2 ] && [ -n "$STALL" ] && [ $i = 6 ] && { echo "r2 stalls"; sleep "$STALL"; echo "r2 resumed"; }
	printf 'this iteration hardware time is %d and e2e time is %d ms.\n' $((500 + i)) $e2e
	i=$((i + 1))
	sleep "${PACE:-0.02}"
done
[ "$RANK" = 0 ] && echo "r0 finished"
exit 0
SH
chmod +x "$SCRATCH/stream.sh"
printf '#!/bin/sh\ncat >> "%s/notify.out"\n' "$SCRATCH" > "$SCRATCH/notify.sh"
chmod +x "$SCRATCH/notify.sh"

# vrun ARGS...: 4 agents n0..n3 running stream.sh
vrun() {
	local args="" i
	for i in 0 1 2 3; do
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --precheck off --perf-interval 0.1 $* -- $SCRATCH/stream.sh"
	done
	run_mpi $args
}

# Reductions, the slow node, both alerts, the summary, notifier, metrics.
out=$(vrun --straggler-pct 20 --perf-threshold 0.45 --perf-window 3 --summary-interval 0.001 \
	--notify "$SCRATCH/notify.sh" --metrics "$SCRATCH/m.prom" \
	--report "$SCRATCH/r.json" --events "$SCRATCH/ev.jsonl" 2>&1); rc=$?
expect_eq "perf job exit" 0 "$rc"
expect_match "summary of iteration 8" \
	'^vigil: iter 8  e2e 113[23] ms \(min 1000 n0, max 1500 n3\)  hw/e2e 0\.46 \(min 0\.34 n3\)$' "$out"
expect_eq "one straggler alert, at iteration 6, naming n3" \
	"vigil: performance alert: n3 e2e 1500 ms is 49% above the median 1010 ms of the other nodes for 3 iterations" \
	"$(printf '%s\n' "$out" | grep 'performance alert: n3')"
expect_eq "one ratio alert" 1 "$(printf '%s\n' "$out" | grep -c 'performance alert: hw/e2e')"
expect_match "the ratio alert names the max node" 'hw/e2e 0\.50 above 0\.45 for 3 iterations \(max on n0\)' "$out"
# The medians come from a sketch of constant size, within 1% of the exact ones.
summary=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
p = r["performance"]
exact = [1000, 1010, 1020, 1500]
print(p["iterations"], p["slowest_node"],
      all(abs(n["median_e2e_ms"] / e - 1) <= 0.01 for n, e in zip(p["nodes"], exact)),
      len(p["nodes"]), p["detail"],
      sorted((a["kind"], a["iter"], a["node"]) for a in p["alerts"]))' "$SCRATCH/r.json")
expect_eq "report: 8 iterations everywhere, medians, n3 slowest, alerts, full detail" \
	"8 n3 True 4 {'series_groups_per_point': 1, 'max_group': 1, 'approximated': 0, 'not_compared': 0} [('ratio', 3, 'n0'), ('straggler', 6, 'n3')]" "$summary"
expect_eq "alert events" 2 "$(grep -c '"kind":"alert"' "$SCRATCH/ev.jsonl")"
expect_match "perf events carry each node's e2e" '"node_e2e":\{"n0":1000,"n1":1010,"n2":1020,"n3":1500\}' "$(grep '"iter":8' "$SCRATCH/ev.jsonl" | grep '"kind":"perf"')"
for ((i = 0; i < 40; i++)); do [ -s "$SCRATCH/notify.out" ] && break; sleep 0.05; done
expect_match "the notifier got the alert as JSON" '"kind":"straggler".*"node":"n3"' "$(cat "$SCRATCH/notify.out" 2>/dev/null)"
expect_match "metrics: iterations" '^vigil_iterations_total 8$' "$(cat "$SCRATCH/m.prom")"
expect_match "metrics: straggler alerts" '^vigil_alerts_total\{kind="straggler"\} 1$' "$(cat "$SCRATCH/m.prom")"
expect_match "metrics: node e2e" '^vigil_node_e2e_seconds\{node="n3"\} 1.5$' "$(cat "$SCRATCH/m.prom")"
# where the time went: per iteration the median across the nodes (1015
# ms) and the slowest's excess over it: 1030 - 1015 in iterations 1-3,
# 1500 - 1015 in 4-8: 3 * 15 + 5 * 485 = 2470 ms
expect_match "account: the median pace and the wait for n3" \
	'"iterations":8,"median_ms":8120,"max_ms":10590' "$(grep '"kind":"account"' "$SCRATCH/ev.jsonl")"
expect_match "metrics: productive and straggler time" \
	'part="productive"\} 8\.12 vigil_iteration_time_seconds_total\{part="straggler"\} 2\.47 ' \
	"$(tr '\n' ' ' <"$SCRATCH/m.prom")"

# Below the threshold (low device utilisation): n3's ratio from iteration
# 4 on is 0.34 < 0.4, so the alert fires at iteration 6, naming n3.
out=$(vrun --perf-compare below --perf-threshold 0.4 --perf-window 3 --summary-interval 0 2>&1)
expect_match "below: fires naming n3" 'performance alert: hw/e2e 0\.34 below 0\.40 for 3 iterations \(min on n3\)' "$out"
expect_eq "below: once" 1 "$(printf '%s\n' "$out" | grep -c 'performance alert')"
# A window longer than the condition lasts: no alert.
out=$(vrun --straggler-pct 20 --perf-window 6 --summary-interval 0 2>&1)
expect_eq "window of 6: no alert in 5 slow iterations" 0 "$(printf '%s\n' "$out" | grep -c 'performance alert')"

# reschedule: checkpoint and requeue away from the slow node.
out=$(PACE=0.3 vrun --resume --perf-action reschedule --straggler-pct 20 --perf-window 3 \
	--exclude-file "$SCRATCH/exclude" --summary-interval 0 2>&1); rc=$?
expect_eq "reschedule: requeue" 81 "$rc"
expect_eq "reschedule: n3 excluded" n3 "$(cat "$SCRATCH/exclude")"
out=$("$VIGIL" run --perf-action reschedule -- true 2>&1); rc=$?
expect_eq "reschedule without --resume is refused" 64 "$rc"

# A stalled node holds back only the reductions: the others' output flows,
# and once it resumes, every iteration is counted.
out=$(STALL=3 vrun --report "$SCRATCH/stall.json" --summary-interval 0 2>&1); rc=$?
expect_eq "stall: exit" 0 "$rc"
order=$(printf '%s\n' "$out" | grep -E '^(r0 finished|r2 resumed)$' | paste -sd,)
expect_eq "stall: node 0 finished while node 2 stalled" "r0 finished,r2 resumed" "$order"
expect_eq "stall: every iteration counted" 8 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["performance"]["iterations"])' "$SCRATCH/stall.json")"

finish
