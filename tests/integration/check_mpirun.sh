#!/bin/bash
# vigil check gathered across nodes under mpirun: rank 0 coordinates,
# prints one consolidated result, and exits non-zero if any node failed.
# Node differences come from mpirun's MPMD form, each rank with its own
# sysfs root and VIGIL_NODE_NAME.
. "$(dirname "$0")/lib.sh"

for i in 0 1 2 3; do make_root "$SCRATCH/n$i"; done
cfg="$SCRATCH/vigil.json"
printf '{"check": {"gather_timeout": 20}}\n' > "$cfg"

# mpmd_args ARGS...: one app context per node n0..n3, each with its root.
mpmd() {
	local sep="" i
	for i in 0 1 2 3; do
		printf '%s -np 1 env VIGIL_NODE_NAME=n%d %s check --config %s --sysfs-root %s %s %s' \
			"$sep" "$i" "$VIGIL" "$cfg" "$SCRATCH/n$i" "$(pascal_flags)" "$*"
		sep=" :"
	done
}

# All healthy: one short line from the coordinator, exit 0.
out=$(run_mpi $(mpmd) 2>"$SCRATCH/err"); rc=$?
expect_eq "all healthy exit" 0 "$rc"
expect_eq "one line" 1 "$(printf '%s\n' "$out" | wc -l)"
expect_match "summary names nodes, slots, model, driver" \
	'^vigil: all 4 nodes healthy \(2 slots each: .*P100.*; driver 535\.104\.05\)$' "$out"

# The same node everywhere (no MPMD): 4 ranks on the live machine.
out=$(run_mpi -np 4 "$VIGIL" check 2>"$SCRATCH/err"); rc=$?
expect_eq "live 4 ranks exit" 0 "$rc"
expect_match "live 4 ranks summary" '^vigil: all 4 nodes healthy' "$out"

# Two unhealthy nodes: n1 loses its fabric NIC, n3 a board.
echo down > "$SCRATCH/n1/sys/class/net/eth1/operstate"
rm -rf "$SCRATCH/n3/sys/bus/pci/devices/0000:04:00.0"
ev="$SCRATCH/events.jsonl"
out=$(run_mpi $(mpmd --events "$ev") 2>"$SCRATCH/err"); rc=$?
err=$(cat "$SCRATCH/err")
expect_eq "two unhealthy exit" 80 "$rc"
expect_eq "coordinator lines" 3 "$(printf '%s\n' "$out" | grep -c '^vigil: ')"
expect_match "n1 named with its NIC" '^vigil: n1 \(rank 1\): nics: .*eth1' "$out"
expect_match "n3 named with its board" '^vigil: n3 \(rank 3\): slots: .*0000:04:00\.0' "$out"
expect_match "summary" '^vigil: 2 of 4 nodes unhealthy$' "$out"
expect_no_match "healthy nodes not named" '^vigil: n[02] ' "$out"
# every node prints its own errors, prefixed with node and rank
expect_match "n1 prints its own error" 'vigil\[n1:1:[0-9]+\] error: nics: ' "$err"
expect_match "n3 prints its own error" 'vigil\[n3:3:[0-9]+\] error: slots: ' "$err"
expect_no_match "healthy nodes print nothing" 'vigil\[n[02]:' "$err"
# the coordinator wrote every node's events, the verdict last
summary=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
last = ev[-1]
print(len(ev), sorted({e["node"] for e in ev if e["kind"] == "check"}),
      last["kind"], last["details"]["failed_nodes"])' "$ev")
expect_eq "events from every node" "25 ['n0', 'n1', 'n2', 'n3'] verdict ['n1', 'n3']" "$summary"

# --json on the coordinator: the whole picture for scripts.
out=$(run_mpi $(mpmd --json) 2>/dev/null)
summary=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["verdict"], d["nodes_total"], [n["node"] + ":" + n["verdict"] for n in d["nodes"]])')
expect_eq "json consolidated" "fail 4 ['n0:pass', 'n1:fail', 'n2:pass', 'n3:fail']" "$summary"

# Inconsistent driver on one node: named by the coordinator.
for i in 1 3; do rm -rf "$SCRATCH/n$i"; make_root "$SCRATCH/n$i"; done
sed -i 's/535\.104\.05/550.54.15/' "$SCRATCH/n2/proc/driver/nvidia/version"
out=$(run_mpi $(mpmd) 2>/dev/null); rc=$?
expect_eq "driver mismatch exit" 80 "$rc"
expect_match "driver mismatch names n2" '^vigil: n2 \(rank 2\): consistency: driver version "550\.54\.15" differs from "535\.104\.05" on 3 other nodes$' "$out"

# A node that joins the job but never answers: named after the gather
# timeout, and nobody hangs.
printf '{"check": {"gather_timeout": 3}}\n' > "$cfg"
start=$(date +%s)
out=$(timeout -k 5 60 "${MPIRUN:-mpirun}" "${MPI_FLAGS[@]}" \
	-np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" check --config "$cfg" --sysfs-root "$SCRATCH/n0" $(pascal_flags) : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" check --config "$cfg" --sysfs-root "$SCRATCH/n1" $(pascal_flags) : \
	-np 1 "$HANG_PEER" 100 2>/dev/null); rc=$?
elapsed=$(( $(date +%s) - start ))
expect_match "hung node named" '^vigil: rank 2 \(rank 2\): no report within 3 s$' "$out"
expect_match "summary with hung node" '^vigil: 1 of 3 nodes unhealthy$' "$out"
# every agent leaves after the coordinator's word: mpirun ends with vigil's
# status (Open MPI 4.1's mpirun crashed or hung when agents left on their own)
if [ "${MPIRUN##*/}" = mpiexec.hydra ] && [ "$rc" = 9 ]; then
	# Hydra ends the hung peer (not a vigil) with SIGKILL once the
	# agents left, and has reported that status rather than theirs in
	# about one run in two here: said, not failed on (vigil said 80 above)
	echo "NOTE: mpiexec.hydra returned 9 (the hung peer's SIGKILL), not vigil's 80" >&2
	pass "hung node: vigil's status through mpiexec.hydra (its peer's SIGKILL)"
else
	expect_eq "hung node: vigil's status through mpirun" 80 "$rc"
fi
if [ "$elapsed" -lt 30 ]; then pass "hung node: ended in ${elapsed}s"; else fail "hung node: took ${elapsed}s"; fi

finish
