#!/bin/bash
# bench_resilience.sh - resilience figures on one machine, 4 agents under
# mpirun, each node with its own sysfs tree (tests/integration/lib.sh),
# with --heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1:
#
#   hung node     SIGSTOP of one agent -> the coordinator's node_lost event
#                 (goal <= 2 s; ULFM's detector defaults to 10 s, Minder
#                 averages 3.6 s)
#   NIC down      the fabric NIC of one node goes down -> the fault event
#                 (goal <= 2 s)
#   fan-out       the coordinator's checkpoint event -> the last training's
#                 checkpoint-signal handler (goal <= 100 ms)
#   false alarms  FALSE_ALARM_S seconds (default 600) of a healthy 4-node
#                 job with both cores saturated by other processes: fault
#                 and node_lost events (goal 0)
#
# Usage: tests/bench/bench_resilience.sh [VIGIL]   (default ./vigil)
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
export VIGIL="$vigil" TOPO_DIR="$here/../data/topo" TESTS_SRCDIR="$here/.."
. "$here/../integration/lib.sh"
falarm_s=${FALARM_S:-${FALSE_ALARM_S:-600}}
MPI="${MPIRUN:-mpirun} --oversubscribe --bind-to none"
hb="--heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1"

# job NAME EXTRA... : 4 agents n0..n3 on their own roots, in the background
job() {
	local name=$1 args="" i
	shift
	for i in 0 1 2 3; do
		rm -rf "$SCRATCH/$name$i"; make_root "$SCRATCH/$name$i"
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --resume $hb --grace 5 \
--sysfs-root $SCRATCH/$name$i $(pascal_flags) --events $SCRATCH/$name.jsonl $* -- \
$SIM --iters 1000000 --iter-ms 100 --ckpt-dir $SCRATCH/ck.$name --signal-log $SCRATCH/$name.sig"
	done
	$MPI $args >"$SCRATCH/$name.out" 2>&1 &
	JOB=$!
	for i in $(seq 1 400); do
		[ "$(grep -c '^ready ' "$SCRATCH/$name.out")" -ge 4 ] && return 0
		sleep 0.05
	done
	echo "$name: trainings not ready" >&2
	return 1
}

ms_now() { date +%s%3N; }

# event_ms FILE KIND: epoch ms of the first event of KIND
event_ms() { echo $(( $(event_us "$1" "$2") / 1000 )); }

echo "# vigil resilience figures ($(nproc) cores, $(date -u +%Y-%m-%d)); $hb"

# hung node
job hung || exit 1
agent=$(for p in $(pgrep -x vigil); do
	tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx VIGIL_NODE_NAME=n2 && echo "$p"; done | head -1)
t0=$(ms_now); kill -STOP "$agent"
wait "$JOB"
kill -KILL "$agent" 2>/dev/null
t1=$(event_ms "$SCRATCH/hung.jsonl" node_lost)
echo "hung node: lost after $(( t1 - t0 )) ms (goal <= 2000)"
ck=$(event_ms "$SCRATCH/hung.jsonl" checkpoint)
last=$(awk '$1 == "SIGUSR1" {print substr($2, 1, length($2) - 6)}' "$SCRATCH/hung.sig" | sort -n | tail -1)
echo "checkpoint fan-out (after a lost node): $(( last - ck )) ms from the decision to the last training's handler (goal <= 100)"

# NIC down
job nic || exit 1
t0=$(ms_now); echo down > "$SCRATCH/nic2/sys/class/net/eth1/operstate"
wait "$JOB"
t1=$(event_ms "$SCRATCH/nic.jsonl" fault)
echo "NIC down: fault after $(( t1 - t0 )) ms (goal <= 2000)"
ck=$(event_ms "$SCRATCH/nic.jsonl" checkpoint)
last=$(awk '$1 == "SIGUSR1" {print substr($2, 1, length($2) - 6)}' "$SCRATCH/nic.sig" | sort -n | tail -1)
echo "checkpoint fan-out (after a fault): $(( last - ck )) ms (goal <= 100)"

# false alarms under load
yes > /dev/null & h1=$!
yes > /dev/null & h2=$!
job calm --time-limit "$falarm_s" --ckpt-lead 1 || exit 1
wait "$JOB"; rc=$?
kill $h1 $h2
alarms=$(grep -cE '"kind":"(fault|node_lost)"' "$SCRATCH/calm.jsonl")
echo "false alarms: $alarms fault/node_lost events in ${falarm_s} s on 4 nodes with both cores saturated (goal 0; job exit $rc, 83 = expired as planned)"
