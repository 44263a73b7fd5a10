#!/bin/bash
# bench_fanout.sh - how fast a decision of the coordinator reaches every
# node, at NP agents (default 16) under one mpirun, ROUNDS times (default 5):
#
#   fan-out   a fabric NIC goes down on one node -> the coordinator's
#             checkpoint decision (its event) -> each training's checkpoint
#             handler; every node's delay is one sample (NP per round).
#             With nudges (the default) and with --no-nudge (MPI read every
#             80 ms when idle), alternating in the same run.
#   baseline  mpirun's own fan-out of SIGUSR1 to NP trainings without vigil
#             (kill -USR1 mpirun -> each handler), the same trainings.
#
#   job end   the last training's exit -> mpirun's own exit, a job of
#             END_NP agents (default 4) whose trainings exit together,
#             against the same trainings under mpirun alone and against
#             an MPI program (bench_mpi_gather --end) whose ranks finalise
#             as they end, what any MPI agent pays; medians of ROUNDS.
#             Goal: within 100 ms of the last training.
#
# Prints the median, p99 and largest delay of each, and the p99s' ratio to
# the baseline's.  Goal: p99 <= 20 ms at 16 ranks.
# Usage: tests/bench/bench_fanout.sh [VIGIL]   (default ./vigil)
# Env: NP, ROUNDS, END_NP, ONLY (fanout or end: that part alone),
# END_ARGS (more options for vigil in the job-end part, e.g. a --config
# that turns the board checks off on a node with GPUs)
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
export VIGIL="$vigil" TOPO_DIR="$here/../data/topo" TESTS_SRCDIR="$here/.."
. "$here/../integration/lib.sh"
np=${NP:-16}
rounds=${ROUNDS:-5}
MPI="${MPIRUN:-mpirun} --oversubscribe --bind-to none"
hb="--heartbeat 1 --heartbeat-timeout 10 --inspect-interval 1"

# wait_ready OUT N: N trainings printed "ready"
wait_ready() {
	for _ in $(seq 1 1200); do
		[ "$(grep -c '^ready ' "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.05
	done
	echo "bench_fanout: trainings not ready ($1)" >&2
	return 1
}

# delays SIGLOG T0_US: each handler's delay after T0 in ms, one a line
# (the signal log's times are epoch nanoseconds)
delays() {
	awk -v t0="$2" '$1 == "SIGUSR1" { printf "%.3f\n", ($2 / 1000 - t0) / 1000 }' "$1"
}

# round_vigil NAME EXTRA: one job of NP agents, node n1's fabric NIC down
round_vigil() {
	local name=$1 args="" i t0
	shift
	for ((i = 0; i < np; i++)); do
		rm -rf "$SCRATCH/$name$i"; make_root "$SCRATCH/$name$i"
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --resume $hb $* --grace 5 \
--sysfs-root $SCRATCH/$name$i $(pascal_flags) --events $SCRATCH/$name.jsonl -- \
$SIM --iters 1000000 --iter-ms 200 --ckpt-dir $SCRATCH/ck.$name.$i --signal-log $SCRATCH/$name.sig.$i"
	done
	rm -f "$SCRATCH/$name.jsonl" "$SCRATCH/$name.sig".*
	timeout -k 10 180 $MPI $args >"$SCRATCH/$name.out" 2>&1 &
	local job=$!
	wait_ready "$SCRATCH/$name.out" "$np" || { kill "$job"; wait "$job"; return 1; }
	sleep 1
	echo down > "$SCRATCH/${name}1/sys/class/net/eth1/operstate"
	wait "$job"
	t0=$(event_us "$SCRATCH/$name.jsonl" checkpoint)
	for ((i = 0; i < np; i++)); do
		delays "$SCRATCH/$name.sig.$i" "$t0" | sed "s/^/n$i /"
	done | tee -a "$SCRATCH/$name.bynode" | cut -d' ' -f2
}

# round_mpirun: the same trainings under mpirun alone, SIGUSR1 to mpirun
round_mpirun() {
	rm -f "$SCRATCH/base.sig"
	timeout -k 10 120 $MPI -np "$np" $SIM --iters 1000000 --iter-ms 200 \
		--ckpt-dir "$SCRATCH/ck.base" --signal-log "$SCRATCH/base.sig" >"$SCRATCH/base.out" 2>&1 &
	local job=$!
	wait_ready "$SCRATCH/base.out" "$np" || { kill "$job"; wait "$job"; return 1; }
	sleep 1
	local t0 mpirun
	mpirun=$(pgrep -P "$job" | head -1)   # under timeout
	t0=$(date +%s%6N)
	kill -USR1 "$mpirun"
	sleep 2
	kill -TERM "$job" 2>/dev/null; wait "$job"
	delays "$SCRATCH/base.sig" "$t0"
}

# stats NAME FILE: median and p99 of the samples
stats() {
	sort -n "$2" | awk -v name="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { printf "%s: no samples\n", name; exit 1 }
		m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.99 + 0.999)]; if (p == "") p = v[NR]
		printf "%s: median %.1f ms, p99 %.1f ms, max %.1f ms (%d samples)\n", name, m, p, v[NR], NR
		print m, p > "/dev/stderr" }'
}

if [ "${ONLY:-fanout}" = fanout ]; then
echo "# vigil checkpoint fan-out ($(nproc) cores, $(date -u +%Y-%m-%d)), $np agents, $rounds rounds"
: >"$SCRATCH/s.nudge"; : >"$SCRATCH/s.poll"; : >"$SCRATCH/s.base"
for ((r = 0; r < rounds; r++)); do
	round_vigil nudge >>"$SCRATCH/s.nudge" || exit 1
	round_vigil poll --no-nudge >>"$SCRATCH/s.poll" || exit 1
	round_mpirun >>"$SCRATCH/s.base" || exit 1
done
stats "mpirun's own SIGUSR1 fan-out (baseline)" "$SCRATCH/s.base" 2>"$SCRATCH/b.mp"
stats "coordinator's checkpoint, nudged" "$SCRATCH/s.nudge" 2>"$SCRATCH/n.mp"
stats "coordinator's checkpoint, --no-nudge" "$SCRATCH/s.poll" 2>"$SCRATCH/p.mp"
read -r bm bp <"$SCRATCH/b.mp"; read -r nm np99 <"$SCRATCH/n.mp"; read -r pm pp <"$SCRATCH/p.mp"
awk -v bp="$bp" -v np="$np99" -v pp="$pp" 'BEGIN {
	printf "p99 against the baseline: nudged %.1fx, --no-nudge %.1fx; nudged p99 %.1f ms (goal <= 20)\n",
		np / (bp > 0.1 ? bp : 0.1), pp / (bp > 0.1 ? bp : 0.1), np }'
# VERBOSE=1: each node's delays, round after round
if [ -n "${VERBOSE:-}" ]; then
	paste "$SCRATCH/nudge.bynode" "$SCRATCH/poll.bynode"
fi
fi
[ "${ONLY:-end}" = end ] || exit 0
[ "${ONLY:-}" = end ] && echo "# vigil job end ($(nproc) cores, $(date -u +%Y-%m-%d)), ${END_NP:-4} agents, $rounds rounds"
# --- job end --------------------------------------------------------------
# jobend CMD...: ms from the last training's exit (its "date" line) to
# mpirun's exit
jobend() {
	local f="$SCRATCH/end.times" t1 last
	rm -f "$f"
	timeout -k 10 120 $MPI -np "${END_NP:-4}" "$@" sh -c "sleep 1; date +%s%N >> $f" \
		>/dev/null 2>&1
	t1=$(date +%s%N)
	last=$(sort -n "$f" | tail -n 1)
	echo $(( (t1 - last) / 1000000 ))
}
: >"$SCRATCH/e.vigil"; : >"$SCRATCH/e.base"
gather=${GATHER:-$(dirname "$vigil")/tests/bench/bench_mpi_gather}
: >"$SCRATCH/e.mpi"
for ((r = 0; r < rounds; r++)); do
	jobend "$VIGIL" run --precheck off --summary-interval 0 ${END_ARGS:-} -- >>"$SCRATCH/e.vigil"
	jobend >>"$SCRATCH/e.base"
	if [ -x "$gather" ]; then
		rm -f "$SCRATCH/end.times"
		timeout -k 10 120 $MPI -np "${END_NP:-4}" "$gather" --end "$SCRATCH/end.times" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(( (t1 - $(sort -n "$SCRATCH/end.times" | tail -n 1)) / 1000000 )) >>"$SCRATCH/e.mpi"
	fi
done
med_of() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : -1)}'; }
awk -v v="$(med_of "$SCRATCH/e.vigil")" -v b="$(med_of "$SCRATCH/e.base")" \
    -v m="$(med_of "$SCRATCH/e.mpi")" -v n="${END_NP:-4}" 'BEGIN {
	printf "job end after the last training, %d agents: vigil %d ms, mpirun alone %d ms, ", n, v, b
	printf "an MPI program finalising %d ms (median; goal <= 100)\n", m }'

