#!/bin/bash
# Performance detection that keeps up and degrades per node, under mpirun:
# 100 iterations a second for 15 s reported in full (and a slow node found
# in them), one stray tagged line, a node 3 times slower among 2 named, a
# node whose two processes print without a tag (two lines per iteration).
. "$(dirname "$0")/lib.sh"

# stream.py N RATE: N timing lines at RATE a second (0: flat out), on a
# fixed schedule; e2e 100 ms, times $SLOW on the node $SLOW_RANK from
# iteration $SLOW_FROM on; a line tagged [rank9]: after iteration $STRAY
# on node 1; $PROCS processes printing the same lines (no tag).
cat > "$SCRATCH/stream.py" <<'PY'
#!/usr/bin/env python3
import os, sys, time
n, rate = int(sys.argv[1]), float(sys.argv[2])
rank = int(os.environ.get("RANK", "0"))
slow = float(os.environ.get("SLOW", "1"))
slow_rank = int(os.environ.get("SLOW_RANK", "-1"))
slow_from = int(os.environ.get("SLOW_FROM", "1"))
stray = int(os.environ.get("STRAY", "0"))
procs = int(os.environ.get("PROCS_" + str(rank), "1"))
for p in range(procs - 1):
    if os.fork() == 0:
        break
else:
    p = -1
t0 = time.monotonic()
for i in range(1, n + 1):
    e = 100.0 * (slow if rank == slow_rank and i >= slow_from else 1)
    print(f"this iteration hardware time is {e * 0.7:.3f} and e2e time is {e:.3f} ms.")
    if rank == 1 and i == stray and p == -1:
        print(f"[rank9]:this iteration hardware time is 1.0 and e2e time is 1.0 ms.")
    if rate > 0:
        d = t0 + i / rate - time.monotonic()
        if d > 0:
            time.sleep(d)
if p == -1:
    try:
        while os.wait():
            pass
    except ChildProcessError:
        pass
PY
chmod +x "$SCRATCH/stream.py"

# vrun NODES N RATE ARGS...: NODES agents n0.. running stream.py (as a
# command of its own, which PyTorch mode runs as it is, with RANK set)
vrun() {
	local nodes=$1 n=$2 rate=$3 args="" i
	shift 3
	for ((i = 0; i < nodes; i++)); do
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --precheck off $* -- $SCRATCH/stream.py $n $rate"
	done
	timeout -k 5 120 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none $args
}

# perf_summary FILE: iterations, detail, every node's median, alerts
perf_summary() {
	python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["performance"]
d = p.get("detail", {})
print(p["iterations"], d.get("max_group", "-"), d.get("not_compared", "-"),
      " ".join("%s:%.0f:%d" % (n["node"], n["median_e2e_ms"], n["samples"]) for n in p["nodes"]),
      sorted((a["kind"], a["node"]) for a in p["alerts"]))' "$1"
}

# 100 iterations a second for 15 s: every one reported, one by one (the
# reductions come sooner than --perf-interval while they would not fit),
# and n1, 50% slower from iteration 1000, is named.
out=$(SLOW=1.5 SLOW_RANK=1 SLOW_FROM=1000 vrun 2 1500 100 --report "$SCRATCH/fast.json" \
	--straggler-pct 20 --perf-window 20 --summary-interval 5 2>&1); rc=$?
expect_eq "100/s: exit" 0 "$rc"
expect_eq "100/s: 1500 of 1500 iterations, one by one, all compared" \
	"1500 1 0 n0:100:1500 n1:100:1500 [('straggler', 'n1')]" "$(perf_summary "$SCRATCH/fast.json")"
expect_match "100/s: the straggler named after iteration 1000" \
	'performance alert: n1 e2e 150 ms is 50% above n0.s 100 ms for 20 iterations' "$out"
expect_match "100/s: the last summary at 1500" '^vigil: iter 1500  e2e ' "$out"

# Flat out: 20000 iterations as fast as Python prints them, all counted;
# the report says how many were compared as one.
vrun 2 20000 0 --report "$SCRATCH/flat.json" --summary-interval 0 >/dev/null 2>&1
flat=$(perf_summary "$SCRATCH/flat.json")
expect_match "flat out: 20000 of 20000 iterations, in groups" '^20000 [0-9]+ 0 n0:100:20000 n1:100:20000 \[\]$' "$flat"

# One stray line with a tag of its own on n1 after iteration 5: it does
# not freeze the count (which stayed at 1 before), nor the alert.
STRAY=5 SLOW=3 SLOW_RANK=0 SLOW_FROM=20 vrun 2 60 50 --report "$SCRATCH/stray.json" \
	--straggler-pct 50 --perf-window 5 --summary-interval 0 >/dev/null 2>&1
expect_match "a stray tagged line: every iteration counted, n0 named" \
	"^60 1 0 n0:[0-9]+:60 n1:100:60 \\[\\('straggler', 'n0'\\)\\]$" "$(perf_summary "$SCRATCH/stray.json")"

# Two nodes, n1 three times slower: named (against the median of both it
# is only 50% above, which a 60% threshold would miss), n0 never.
out=$(SLOW=3 SLOW_RANK=1 vrun 2 30 50 --report "$SCRATCH/two.json" --straggler-pct 60 \
	--perf-window 5 --summary-interval 0 2>&1)
expect_eq "2 nodes: the slow one named, once" \
	"vigil: performance alert: n1 e2e 300 ms is 200% above n0's 100 ms for 5 iterations" \
	"$(printf '%s\n' "$out" | grep 'performance alert')"
expect_match "2 nodes: report" "^30 1 0 n0:100:30 n1:30[0-9]:30 \\[\\('straggler', 'n1'\\)\\]$" \
	"$(perf_summary "$SCRATCH/two.json")"

# n1 runs two processes that print without a tag: two lines per
# iteration.  Its statistics stay (they went empty before), and the
# iterations are the training's, not its lines.
PROCS_1=2 vrun 3 200 50 --report "$SCRATCH/double.json" --summary-interval 0 >/dev/null 2>&1
double=$(perf_summary "$SCRATCH/double.json")
expect_match "two lines per iteration: 200 iterations, n1's times kept" \
	'^200 1 [0-9]+ n0:100:[0-9]+ n1:100:[0-9]+ n2:100:[0-9]+ \[\]$' "$double"
n1=$(printf '%s\n' "$double" | sed -n 's/.* n1:100:\([0-9]*\).*/\1/p')
expect_eq "two lines per iteration: n1 compared on most iterations" 1 "$(( ${n1:-0} >= 150 ))"

finish
