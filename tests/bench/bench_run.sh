#!/bin/bash
# bench_run.sh - figures for `vigil run`, each a ratio to a baseline
# measured in the same run (these machines are shared and noisy):
#
#   pass-through   bytes/s of `vigil run -- head -c N /dev/zero > /dev/null`
#                  vs `head -c N /dev/zero | cat > /dev/null` (one relay
#                  hop each); goal >= 0.9
#   signal         latency from kill() to the training's handler, through
#                  the agent vs kill() straight to the training; goal:
#                  under 1 ms added (median)
#   idle CPU       the agent's CPU time while a child sleeps for IDLE_S
#                  seconds (default 60) under mpirun -np 2, as a share of
#                  one core; goal under 0.1 %
#
# Usage: tests/bench/bench_run.sh [VIGIL]    (default ./vigil)
# Env: BYTES (default 2 GiB), REPS (5), SIGNALS (200), IDLE_S (60)
set -euo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
bytes=${BYTES:-2147483648}
reps=${REPS:-5}
signals=${SIGNALS:-200}
idle_s=${IDLE_S:-60}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
run1() { "$vigil" run --mode single --precheck off "$@"; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ns() { date +%s%N; }

echo "# vigil run benchmarks ($(nproc) cores, $(date -u +%Y-%m-%d))"

# --- pass-through throughput -------------------------------------------
base=() ; mine=()
for ((i = 0; i < reps; i++)); do
	t0=$(ns); head -c "$bytes" /dev/zero | cat > /dev/null; t1=$(ns)
	base+=($((t1 - t0)))
	t0=$(ns); run1 -- head -c "$bytes" /dev/zero > /dev/null 2>&1; t1=$(ns)
	mine+=($((t1 - t0)))
done
b=$(printf '%s\n' "${base[@]}" | median)
m=$(printf '%s\n' "${mine[@]}" | median)
awk -v n="$bytes" -v b="$b" -v m="$m" 'BEGIN {
	printf "pass-through: vigil %.0f MB/s, cat %.0f MB/s, ratio %.2f (goal >= 0.9)\n",
	       n / m * 1e3, n / b * 1e3, b / m }'

# --- signal latency ------------------------------------------------------
python3 "$here/signal_latency.py" "$vigil" "$signals"

# --- idle CPU --------------------------------------------------------------
log=$(mktemp)
"$mpirun" --oversubscribe --bind-to none -np 2 "$vigil" run --precheck off --mode pytorch -- sleep "$idle_s" >"$log" 2>&1 &
mpi=$!
sleep 2
pids=$(pgrep -f -- "$vigil run --precheck off --mode pytorch -- sleep $idle_s" | grep -v "^$mpi\$" || true)
ticks() {  # utime + stime of the given pids, in clock ticks
	local t=0 p
	for p in $pids; do
		[ -r /proc/$p/stat ] && t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat)))
	done
	echo $t
}
t0=$(ticks); s0=$(ns)
sleep $((idle_s - 4))
t1=$(ticks); s1=$(ns)
wait "$mpi" || true
rm -f "$log"
hz=$(getconf CLK_TCK)
awk -v t=$((t1 - t0)) -v hz="$hz" -v s=$((s1 - s0)) -v n="$(echo $pids | wc -w)" 'BEGIN {
	cpu = t / hz / n; wall = s / 1e9;
	printf "idle CPU: %.3f s of CPU per agent over %.0f s of a sleeping child: %.3f %% of one core (goal < 0.1 %%)\n",
	       cpu, wall, 100 * cpu / wall }'
