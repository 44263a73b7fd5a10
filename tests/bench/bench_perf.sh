#!/bin/bash
# bench_perf.sh - the agents' CPU time for performance detection: 4 nodes
# under mpirun, each training printing the timing line 10 times a second
# for ITERS iterations (default 300), every reduction and policy running
# (--straggler-pct, --perf-threshold, a summary every second).  Reported
# per 1000 iterations, next to the same job's CPU time with the timing
# lines replaced by ordinary lines of the same length (the baseline:
# everything but the detection), and as the share detection adds to the
# agents' CPU time (goal < 5 %).  CPU time is each agent's from
# /proc/PID/schedstat (nanoseconds), read until it exits; REPS (default
# 3) jobs of each kind, interleaved, medians.
#
# Usage: tests/bench/bench_perf.sh [VIGIL]   (default ./vigil)
set -euo pipefail

vigil=$(realpath "${1:-./vigil}")
iters=${ITERS:-300}
reps=${REPS:-3}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat > "$dir/train.sh" <<SH
#!/bin/sh
i=0
while [ \$i -lt $iters ]; do
	if [ "\$MODE" = timing ]; then
		echo "this iteration hardware time is 70.\$i and e2e time is 100.\$RANK ms."
	else
		echo "an ordinary line of output of about the same length: \$i \$RANK ....."
	fi
	i=\$((i + 1))
	sleep 0.1
done
SH
chmod +x "$dir/train.sh"

# cpu_of MODE: total CPU seconds of the 4 agents over the job
cpu_of() {
	local log="$dir/$1.log" pids p ns=0
	MODE=$1 timeout -k 5 300 "$mpirun" --oversubscribe --bind-to none -np 4 "$vigil" run --precheck off \
		--straggler-pct 20 --perf-threshold 0.9 --summary-interval 1 -- "$dir/train.sh" >"$log" 2>&1 &
	local mpi=$!
	sleep 1
	pids=$(pgrep -f -- "$vigil run --precheck off --straggler-pct" | while read -r p; do
		# the agents, not their keepers (a vigil whose parent is a vigil)
		[ "$(ps -o comm= -p "$(ps -o ppid= -p "$p")" 2>/dev/null)" != vigil ] && echo "$p"; done)
	# sample until the agents are gone; keep the last reading of each
	declare -A last
	while kill -0 "$mpi" 2>/dev/null; do
		for p in $pids; do
			[ -r /proc/$p/schedstat ] && last[$p]=$(cut -d' ' -f1 /proc/$p/schedstat 2>/dev/null || echo "${last[$p]:-0}")
		done
		sleep 0.1
	done
	wait "$mpi" || true
	for p in $pids; do ns=$((ns + ${last[$p]:-0})); done
	awk -v t="$ns" 'BEGIN {printf "%.4f", t / 1e9}'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bs=() ws=()
for ((i = 0; i < reps; i++)); do
	bs+=("$(cpu_of plain)")
	ws+=("$(cpu_of timing)")
done
base=$(printf '%s\n' "${bs[@]}" | median)
with=$(printf '%s\n' "${ws[@]}" | median)
awk -v b="$base" -v w="$with" -v n="$iters" 'BEGIN {
	printf "perf detection: 4 agents used %.3f s of CPU for %d iterations at 10/s (%.3f s per 1000 iterations, all 4 agents); with ordinary lines instead: %.3f s (%.3f s per 1000); the detection adds %.3f s per 1000 iterations, %.1f %% of the agents'"'"' CPU (goal < 5 %%)\n",
	       w, n, w * 1000 / n, b, b * 1000 / n, (w - b) * 1000 / n, 100 * (w - b) / b }'
