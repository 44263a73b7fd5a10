#!/bin/bash
# bench_sweep.sh - how often Open MPI's mpirun misbehaves at the end of a
# health-check sweep with a hung peer, on a loaded machine.
#
# Each run: mpirun with 3 ranks of `vigil check` and 1 rank that joins MPI
# and never answers (tests/integration/hang_peer), while LOAD busy loops
# keep every core saturated.  vigil's coordinator names the hung rank
# after the gather timeout (3 s) and exits 80.  What counts is what mpirun
# then does: its status (80 expected; 139 a segfault; 124 a hang that
# timeout -k ended), the time it took, whether vigil's verdict was
# printed, and whether mpirun printed something that contradicts it.
#
# Usage: tests/bench/bench_sweep.sh VIGIL HANG_PEER
# Env:   RUNS (default 20), LOAD (busy loops, default: the number of cores),
#        MPIRUN (default mpirun)
set -uo pipefail

vigil=$(realpath "${1:?usage: $0 VIGIL HANG_PEER}")
hang=$(realpath "${2:?usage: $0 VIGIL HANG_PEER}")
runs=${RUNS:-20}
load=${LOAD:-$(nproc)}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo

scratch=$(mktemp -d "${TMPDIR:-/tmp}/vigil-sweep.XXXXXX")
loaders=()
cleanup() {
	[ "${#loaders[@]}" -gt 0 ] && kill "${loaders[@]}" 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT
printf '{"check": {"gather_timeout": 3}}\n' > "$scratch/cfg.json"
for ((i = 0; i < load; i++)); do
	( while :; do :; done ) &
	loaders+=($!)
done

declare -A status
ok=0 verdict=0 noise=0 total_ms=0 worst_ms=0
for ((r = 1; r <= runs; r++)); do
	t0=$(date +%s%N)
	timeout -k 5 60 "$mpirun" --oversubscribe --bind-to none \
		-np 3 "$vigil" check --config "$scratch/cfg.json" : -np 1 "$hang" 100 \
		>"$scratch/out" 2>"$scratch/err"
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	total_ms=$((total_ms + ms))
	[ "$ms" -gt "$worst_ms" ] && worst_ms=$ms
	status[$rc]=$(( ${status[$rc]:-0} + 1 ))
	[ "$rc" = 80 ] && ok=$((ok + 1))
	grep -q 'vigil: 1 of 4 nodes unhealthy' "$scratch/out" && verdict=$((verdict + 1))
	# mpirun's own banners: anything but vigil's lines and its log lines
	if grep -qvE '^(vigil|vigil\[)' "$scratch/err" "$scratch/out" 2>/dev/null &&
	   grep -qE 'mpirun|MPI_ABORT|Primary job|exited on signal' "$scratch/err"; then
		noise=$((noise + 1))
	fi
	printf 'run %2d: mpirun %3d in %5d ms\n' "$r" "$rc" "$ms"
	# whatever a hung mpirun left behind
	pkill -KILL -f -- "$hang 100" 2>/dev/null
done

echo "# sweep with a hung peer: $runs runs, $load busy loops on $(nproc) cores ($(date -u +%Y-%m-%d))"
for rc in "${!status[@]}"; do
	case $rc in
	80) what="vigil's status" ;;
	139) what="mpirun segfault" ;;
	124 | 137) what="mpirun hung, killed by timeout" ;;
	*) what="other" ;;
	esac
	printf '  mpirun status %3d: %3d runs (%s)\n' "$rc" "${status[$rc]}" "$what"
done
printf '  vigil status kept: %d of %d; verdict printed: %d of %d; mpirun banners: %d of %d\n' \
	"$ok" "$runs" "$verdict" "$runs" "$noise" "$runs"
printf '  time: mean %d ms, worst %d ms\n' $((total_ms / runs)) "$worst_ms"
