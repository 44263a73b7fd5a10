#!/bin/bash
# A hung Python training on 2 nodes under mpirun (run_mpi: timeout -k)
# with a short heartbeat (every 0.5 s, a node lost after 2 s): every agent looks at its training in a child of
# its own, so the coordinator's loop goes on while gdb reads the stacks,
# which take longer than the heartbeat timeout allows a blocked loop.
# Each rank's Python stack is in the forensics file, no node is lost or
# stalled, and --on-hang stop ends the job with 84.
. "$(dirname "$0")/lib.sh"

cat > "$SCRATCH/t.py" <<'PY'
import os, time
def wait_for_peer():
    time.sleep(600)
for i in range(5):
    print("this iteration hardware time is 90 and e2e time is 100 ms.", flush=True)
    time.sleep(0.1)
wait_for_peer()
PY
ev="$SCRATCH/ev.jsonl"; rep="$SCRATCH/r.json"
MPI_LIMIT=90 run_mpi -np 2 "$VIGIL" run --mode pytorch --precheck off --heartbeat 0.5 \
	--heartbeat-timeout=2s --hang-timeout=2s --on-hang stop --events "$ev" --report "$rep" -- \
	/usr/bin/python3 "$SCRATCH/t.py" >"$SCRATCH/out" 2>&1; rc=$?
expect_eq "stopped as hung" 84 "$rc"
expect_eq "both ranks' Python stacks" "0 wait_for_peer|1 wait_for_peer" \
	"$(report "$rep.hang.json" '"|".join(sorted("%s %s" % (n["rank"], p["py_stack"][0].rsplit(" ", 1)[1]) for n in r["nodes"] for p in n["processes"] if p.get("py_stack")))' 2>/dev/null)"
report "$rep.hang.json" '"\n".join("node %s: %s s, %s" % (n["rank"], n.get("seconds"), n.get("error") or [p.get("stack_error") for p in n["processes"]]) for n in r["nodes"])' 2>&1
expect_eq "no node lost, no stall" 0 "$(grep -cE '"kind":"(lost|stall)"' "$ev")"
expect_eq "both nodes answered" 2 "$(report "$rep.hang.json" 'len(r["nodes"])' 2>/dev/null)"
finish
