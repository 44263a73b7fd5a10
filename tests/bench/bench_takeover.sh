#!/bin/bash
# bench_takeover.sh - how long a job takes to end when its coordinator's
# agent is lost, against a job that loses another node, on one machine:
# 3 agents (mpirun under timeout -k), --resume, --heartbeat 0.5 --heartbeat-timeout 1.5,
# contrib/examples/train_sim.py, ROUNDS times each way (default 3),
# alternating:
#
#   coordinator   SIGSTOP of rank 0's agent: every other node loses it
#                 (twice the timeout), saves, and rank 1 takes over and
#                 ends the job (81)
#   node          SIGSTOP of rank 2's agent: the coordinator loses it
#                 (the timeout) and ends the job (81): the baseline
#
# For each: milliseconds from the stop to mpirun's end; medians, and the
# ratio coordinator / node.  The coordinator's loss takes one timeout more
# to be seen (1.5 s) and the orphans' votes; what the end adds beyond that
# is the figure to watch.
# Usage: tests/bench/bench_takeover.sh [VIGIL]   (default ./vigil)
# Env: ROUNDS.
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
export VIGIL="$vigil" TOPO_DIR="$here/../data/topo" TESTS_SRCDIR="$here/.."
. "$here/../integration/lib.sh"
rounds=${ROUNDS:-3}
MPI="${MPIRUN:-mpirun} --oversubscribe --bind-to none"

# one VICTIM: ms from the stop of node VICTIM's agent to mpirun's end
one() {
	local victim=$1 args="" i pid agent t0 rc ck="$SCRATCH/ck.$RANDOM"
	for i in 0 1 2; do
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --precheck off --resume \
--heartbeat 0.5 --heartbeat-timeout 1.5 --grace 10 --report $SCRATCH/r.json --tag-output -- \
$SIM --iters 100000 --iter-ms 20 --ckpt-dir $ck"
	done
	timeout -k 5 60 $MPI $args >"$SCRATCH/out" 2>&1 &
	pid=$!
	wait_ready "$SCRATCH/out" 3 || { echo "bench_takeover: not ready" >&2; kill "$pid"; wait "$pid"; return 1; }
	agent=$(agent_of "n$victim" "$ck")
	t0=$(date +%s%N)
	kill -STOP "$agent"
	wait "$pid"; rc=$?
	kill -CONT "$agent" 2>/dev/null
	[ "$rc" = 81 ] || { echo "bench_takeover: status $rc, not 81" >&2; return 1; }
	echo $(( ($(date +%s%N) - t0) / 1000000 ))
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "# the end of a job after a lost agent ($(nproc) cores, $(date -u +%Y-%m-%d)), 3 agents, $rounds rounds"
: >"$SCRATCH/coord.ms"; : >"$SCRATCH/node.ms"
for ((k = 0; k < rounds; k++)); do
	one 0 >>"$SCRATCH/coord.ms" || exit 1
	one 2 >>"$SCRATCH/node.ms" || exit 1
done
c=$(median <"$SCRATCH/coord.ms"); n=$(median <"$SCRATCH/node.ms")
echo "coordinator lost: stop to the end $c ms (median of $(paste -sd' ' "$SCRATCH/coord.ms"))"
echo "node lost:        stop to the end $n ms (median of $(paste -sd' ' "$SCRATCH/node.ms"))"
echo "ratio coordinator / node: $(awk -v c="$c" -v n="$n" 'BEGIN {printf "%.2f", c / n}')"
