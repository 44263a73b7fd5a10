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
# Medians of REPS rounds (default 5), each round running the baseline
# and vigil one after the other.  Machines here are shared and noisy, so
# only the ratios are worth comparing across runs.
#
# Usage: tests/bench/bench_check.sh [VIGIL]   (default ./vigil)
# Env: GATHER (bench_mpi_gather, default beside VIGIL in tests/bench),
# REPS, RANKS (default "1 2 4 8 16 32 64")
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

# ms CMD...: wall time of one run of CMD, in ms, or nothing when it fails
# or outlives 120 s (Open MPI 4.1's mpirun can hang at the end of a job of
# many short processes): said, and left out of the median.
ms() {
	local t0 t1
	t0=$(date +%s%N)
	if ! timeout -k 10 120 "$@" >/dev/null 2>&1; then
		echo "bench_check: failed or timed out: $*" >&2
		return
	fi
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000000 ))
}

# median MS...: the median of the times given, "-" if none
median() {
	[ "$#" -gt 0 ] || { printf -- -; return; }
	printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%.0f", a[int((NR+1)/2)]}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") printf "-"; else printf "%.2f", a / b }'; }

# Each round runs the baseline and the cases being compared one after the
# other, so that a spell of load elsewhere on the machine falls on all of
# them alike, not on whichever ran in it.
echo "# vigil check wall time, median of $reps runs, alternating ($(nproc) cores, $(date -u +%Y-%m-%d))"
printf '%-34s %10s %12s %8s %14s\n' "case" "vigil ms" "baseline ms" "ratio" "mpirun true ms"
b=() v=()
for ((i = 0; i < reps; i++)); do
	b+=($(ms /bin/true)); v+=($(ms "$vigil" check))
done
printf '%-34s %10s %12s %8s %14s\n' "alone (vs true)" "$(median "${v[@]}")" "$(median "${b[@]}")" \
	"$(ratio "$(median "${v[@]}")" "$(median "${b[@]}")")" -
mpi=("$mpirun" --oversubscribe --bind-to none)
for n in $ranks; do
	t=() b=() v=() j=()
	for ((i = 0; i < reps; i++)); do
		t+=($(ms "${mpi[@]}" -np "$n" true))
		b+=($(ms "${mpi[@]}" -np "$n" "$gather"))
		v+=($(ms "${mpi[@]}" -np "$n" "$vigil" check))
		j+=($(ms "${mpi[@]}" -np "$n" "$vigil" run --precheck off --summary-interval 0 -- true))
	done
	tm=$(median "${t[@]}"); bm=$(median "${b[@]}"); vm=$(median "${v[@]}"); jm=$(median "${j[@]}")
	printf '%-34s %10s %12s %8s %14s\n' "mpirun -np $n (vs MPI init+gather)" "$vm" "$bm" \
		"$(ratio "$vm" "$bm")" "$tm"
	printf '%-34s %10s %12s %8s %14s\n' "  vigil run, a job of true" "$jm" "$bm" "$(ratio "$jm" "$bm")" -
done
