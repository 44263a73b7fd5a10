#!/bin/bash
# bench_hang.sh - how fast vigil finds a hung PyTorch DDP training (3 nodes
# of the network-namespace test bed, gloo on the CPU, one worker each,
# 100 ms iterations): one rank falls asleep inside its loop while the
# others wait in the all-reduce, ROUNDS times (default 3) for each rule:
#
#   default   no --hang-timeout: the 30 s floor (10 x the median e2e time
#             is 1 s here), heartbeats every 5 s (the default)
#   short     --hang-timeout 5, heartbeats every second
#
# For each: ms from the fault (the rank prints the time) to the first
# "hang" event (detected), and to the forensics file (its modification
# time, every node's processes and stacks in it); the ratio of PyTorch's
# own process-group timeout for gloo (30 minutes unless the training sets
# another: torch.distributed's default_pg_timeout, torch 1.13 to 2.x) and
# of a fixed 180 s step timeout to vigil's detection.
#
# SOAK_S > 0 adds a soak: a training of that many seconds with both cores
# loaded (two busy loops at nice 0) and a 10 s save every 60 s (its file
# open under --ckpt-dir), default rule: it must raise no hang event.
# Needs root (the test bed).  Usage: tests/bench/bench_hang.sh [VIGIL]
# Env: ROUNDS, ONLY (default, short or soak), SOAK_S.
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
export VIGIL="$vigil" TOPO_DIR="$here/../data/topo" TESTS_SRCDIR="$here/.."
. "$here/../integration/lib.sh"
. "$here/../testbed/tb.sh"
tb_require
CASE_NODES=3
. "$here/../testbed/cases.sh"
rounds=${ROUNDS:-3}
PY=/usr/bin/python3
TRAIN="$here/../integration/hang_train.py"
export TB_TIMEOUT=300 PYTHONDONTWRITEBYTECODE=1
PG_TIMEOUT_S=1800
STEP_TIMEOUT_S=180

# job NAME VIGIL-OPTIONS -- TRAIN-ARGS: one job on the 3 nodes
job() {
	local name=$1 opts=$2
	shift 2
	ck="$SCRATCH/ck.$name"; mkdir -p "$ck"
	log="$SCRATCH/$name.out"; ev="$SCRATCH/$name.jsonl"; rep="$SCRATCH/$name.json"
	tb_mpirun -np 3 "$VIGIL" run --mode pytorch --tag-output --grace 3 --on-hang stop \
		--events "$ev" --report "$rep" --ckpt-dir "$ck" $opts -- \
		env GLOO_SOCKET_IFNAME=eth0 "$PY" "$TRAIN" --ckpt-dir "$ck" "$@" >"$log" 2>&1
}
# fault_ms: when the fault was printed (epoch ms)
fault_ms() {
	sed -n 's/^\[[^]]*\] fault [a-z]* at \([0-9.]*\)$/\1/p' "$log" | head -n 1 |
		python3 -c 'import sys; print(int(float(sys.stdin.read()) * 1000))'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }

rule() {  # NAME OPTIONS: ROUNDS hangs; one line of figures
	local name=$1 opts=$2 i t0 det file det_all="" file_all=""
	for ((i = 1; i <= rounds; i++)); do
		job "$name$i" "$opts" --fault sleep --rank 1 --iters 100000 --at 30
		t0=$(fault_ms) || continue
		det=$(event_after_ms "$ev" hang "$t0")
		file=$(python3 -c 'import os, sys; print(int(os.path.getmtime(sys.argv[1]) * 1000) - int(sys.argv[2]))' \
			"$rep.hang.json" "$t0" 2>/dev/null)
		echo "  $name round $i: hang event after ${det:-?} ms, forensics file after ${file} ms," \
			"$(report "$rep" 'r["hang"]["summary"]' 2>/dev/null)"
		det_all+="$det "
		file_all+="$file "
	done
	det=$(printf '%s\n' $det_all | median)
	file=$(printf '%s\n' $file_all | median)
	printf '%-8s median: hang event %6s ms, forensics file %6s ms; PyTorch gloo timeout %d s: x%s; fixed %d s step timeout: x%s\n' \
		"$name" "$det" "$file" "$PG_TIMEOUT_S" \
		"$(python3 -c "print('%.0f' % ($PG_TIMEOUT_S * 1000 / $det))" 2>/dev/null)" \
		"$STEP_TIMEOUT_S" "$(python3 -c "print('%.1f' % ($STEP_TIMEOUT_S * 1000 / $det))" 2>/dev/null)"
}

soak() {
	local s=${SOAK_S:-0} p1 p2
	[ "$s" -gt 0 ] || return 0
	nice -n 0 sh -c 'while :; do :; done' & p1=$!
	nice -n 0 sh -c 'while :; do :; done' & p2=$!
	# 100 ms iterations: a save (10 s) every 600 iterations, about a minute
	TB_TIMEOUT=$((s * 3 + 120)) job soak "" --iters $((s * 10)) --save-every 600 --save-s 10
	rc=$?
	kill "$p1" "$p2"; wait "$p1" "$p2" 2>/dev/null
	echo "soak ${s} s, both cores loaded, a 10 s save every 600 iterations: exit $rc," \
		"$(grep -c '"kind":"hang"' "$ev") hang events, $(grep -c '^\[[^]]*\] saved at' "$log") saves," \
		"$(grep -c 'this iteration hardware time' "$log") timing lines"
	[ "$rc" -eq 0 ] || grep -v "this iteration" "$log" | tail -n 40
}

tb_up 3 || exit 1
case ${ONLY:-all} in
default) rule default "" ;;
short) rule short "--hang-timeout 5 --heartbeat 1" ;;
soak) soak ;;
*) rule short "--hang-timeout 5 --heartbeat 1"; rule default ""; soak ;;
esac
tb_down
