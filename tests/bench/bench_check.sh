#!/bin/bash
# bench_check.sh - wall time of `vigil check`, alone and gathered under
# mpirun, each as a ratio to a baseline measured in the same run:
#   alone:        vigil check            vs  /bin/true (a process start)
#   gathered, N:  mpirun -np N vigil check  vs  mpirun -np N bench_mpi_gather
#                 (an MPI program that initialises, gathers one report per
#                 rank at rank 0 and finalises: the least any gathered
#                 check pays; `mpirun -np N true` starts no MPI and is
#                 shown beside it for reference)
#   a job, N:     mpirun -np N vigil run --precheck off -- true  vs the same
#                 MPI program: what a job of N agents costs beyond MPI's own
#                 start and end (gather, plan, launch, results, FINAL)
# Medians of REPS runs (default 5).  Machines here are shared and noisy,
# so only the ratios are worth comparing across runs.
#
# Usage: tests/bench/bench_check.sh [VIGIL]   (default ./vigil)
# Env: GATHER (bench_mpi_gather, default beside VIGIL in tests/bench)
set -euo pipefail

vigil=$(realpath "${1:-./vigil}")
gather=${GATHER:-$(dirname "$vigil")/tests/bench/bench_mpi_gather}
[ -x "$gather" ] || { echo "bench_check: $gather not built (make bench builds it)" >&2; exit 2; }
reps=${REPS:-5}
ranks=${RANKS:-"1 2 4 8 16 32 64"}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo

# median_ms CMD...: median wall time of REPS runs, in milliseconds; a run
# that fails or outlives 120 s (Open MPI 4.1's mpirun can hang at the end
# of a job of many short processes) is said and left out, "-" if all are.
median_ms() {
	local i t0 t1 times=()
	for ((i = 0; i < reps; i++)); do
		t0=$(date +%s%N)
		if ! timeout -k 10 120 "$@" >/dev/null 2>&1; then
			echo "bench_check: failed or timed out: $*" >&2
			continue
		fi
		t1=$(date +%s%N)
		times+=($(( (t1 - t0) / 1000 )))
	done
	[ "${#times[@]}" -gt 0 ] || { printf -- -; return; }
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") printf "-"; else printf "%.2f", a / b }'; }

echo "# vigil check wall time, median of $reps runs ($(nproc) cores, $(date -u +%Y-%m-%d))"
printf '%-34s %10s %12s %8s %14s\n' "case" "vigil ms" "baseline ms" "ratio" "mpirun true ms"
b=$(median_ms /bin/true)
v=$(median_ms "$vigil" check)
printf '%-34s %10s %12s %8s %14s\n' "alone (vs true)" "$v" "$b" "$(ratio "$v" "$b")" -
for n in $ranks; do
	t=$(median_ms "$mpirun" --oversubscribe --bind-to none -np "$n" true)
	b=$(median_ms "$mpirun" --oversubscribe --bind-to none -np "$n" "$gather")
	v=$(median_ms "$mpirun" --oversubscribe --bind-to none -np "$n" "$vigil" check)
	printf '%-34s %10s %12s %8s %14s\n' "mpirun -np $n (vs MPI init+gather)" "$v" "$b" \
		"$(ratio "$v" "$b")" "$t"
	j=$(median_ms "$mpirun" --oversubscribe --bind-to none -np "$n" "$vigil" run --precheck off \
		--summary-interval 0 -- true)
	printf '%-34s %10s %12s %8s %14s\n' "  vigil run, a job of true" "$j" "$b" "$(ratio "$j" "$b")" -
done
