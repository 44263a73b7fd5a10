#!/bin/bash
# bench_run.sh - figures for `vigil run`, each a ratio to a baseline
# measured in the same run (these machines are shared and noisy):
#
#   pass-through   the training's throughput through the agent against the
#                  same path without the agent (the training writing
#                  straight to the same reader), bulk (`head -c BYTES
#                  /dev/zero`) and line by line (bench_writer: a training's
#                  log, one write per line, launcher prefixes, one timing
#                  line in 20):
#                    pipe:   vigil run -- T | cat      vs  T | cat
#                    pty:    vigil run -- T            vs  T
#                            (stdout on a pseudo-terminal, drained)
#                    mpirun: mpirun -np 2 vigil run -- T
#                                                      vs  mpirun -np 2 T
#                            marginal throughput (from two sizes) and the
#                            fixed cost apart
#                  goal >= 0.9.  For reference, the same path with `cat`
#                  doing the agent's job (one relay hop, the training on a
#                  pipe): T | cat | cat, sh -c 'T | cat', mpirun -np 2 sh
#                  -c 'T | cat'.  Line by line, also what the agent adds
#                  per line, in us; and under mpirun a second line with
#                  VIGIL_PTY=0 (mpirun gives each rank's stdout a pty, so
#                  the agent gives the training one too: that row takes
#                  the training off it).  Through a pty the training line-buffers
#                  (what the agent keeps, see vigil(1) PERFORMANCE) and
#                  pays a pty's cost per line whoever reads it; through
#                  cat it writes into a pipe.
#   signal         latency from kill() to the training's handler, through
#                  the agent vs kill() straight to the training; goal:
#                  under 1 ms added (median)
#   idle CPU       each agent's CPU time while a child sleeps for IDLE_S
#                  seconds (default 60) under mpirun -np 2, as a share of
#                  one core, the coordinator's agent (rank 0) apart from
#                  the other; goal under 0.1 % each
#
# Usage: tests/bench/bench_run.sh [VIGIL]    (default ./vigil)
# Env: BYTES (default 1 GiB), LINES (1000000), REPS (5), SIGNALS (200),
# IDLE_S (60), WRITER (bench_writer, default beside VIGIL in tests/bench),
# ONLY (passthrough, signal or idle: that part alone)
set -euo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
bytes=${BYTES:-1073741824}
lines=${LINES:-1000000}
writer=${WRITER:-$(dirname "$vigil")/tests/bench/bench_writer}
only=${ONLY:-}
reps=${REPS:-5}
signals=${SIGNALS:-200}
idle_s=${IDLE_S:-60}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ns() { date +%s%N; }
med() { printf '%s\n' "$@" | median; }

echo "# vigil run benchmarks ($(nproc) cores, $(date -u +%Y-%m-%d))"

# --- pass-through ------------------------------------------------------------
# ptyrun CMD...: CMD with stdout on a fresh raw pseudo-terminal, drained
# as a terminal would be; prints nothing, exits with CMD's status
ptyrun() {
	python3 -c '
import os, pty, subprocess, sys, tty
m, s = pty.openpty()
tty.setraw(s)
p = subprocess.Popen(sys.argv[1:], stdout=s, stderr=subprocess.DEVNULL)
os.close(s)
try:
    while os.read(m, 1 << 16):
        pass
except OSError:
    pass
sys.exit(p.wait())' "$@"
}
# ms CMD...: wall time of CMD in ms
ms() { local t0; t0=$(ns); "$@" >/dev/null 2>&1 || true; echo $(( ($(ns) - t0) / 1000000 )); }
run1() { "$vigil" run --mode single --precheck off "$@"; }
mpi2() { timeout -k 5 300 "$mpirun" --oversubscribe --bind-to none -np 2 "$@"; }

pipe_direct() { "$@" | cat > /dev/null; }
pipe_vigil() { run1 -- "$@" 2>/dev/null | cat > /dev/null; }
pipe_cat() { "$@" | cat | cat > /dev/null; }
pty_direct() { ptyrun "$@"; }
pty_vigil() { ptyrun "$vigil" run --mode single --precheck off -- "$@"; }
pty_cat() { ptyrun sh -c '"$@" | cat' sh "$@"; }
mpi_direct() { mpi2 "$@"; }
mpi_vigil() { mpi2 env ${vigil_env:-} "$vigil" run --precheck off --summary-interval 0 -- "$@"; }
mpi_cat() { mpi2 sh -c '"$@" | cat' sh "$@"; }

# pair NAME MB PATH -- T...: medians of interleaved runs of PATH_direct,
# PATH_vigil and PATH_cat, one line
pair() {
	local name=$1 mb=$2 path=$3 d=() m=() c=() i
	shift 4
	for ((i = 0; i < reps; i++)); do
		d+=("$(ms "${path}_direct" "$@")"); m+=("$(ms "${path}_vigil" "$@")")
		c+=("$(ms "${path}_cat" "$@")")
	done
	awk -v n="$name" -v mb="$mb" -v d="$(med "${d[@]}")" -v m="$(med "${m[@]}")" \
	    -v c="$(med "${c[@]}")" -v lines="${per_line:-0}" 'BEGIN {
		printf "pass-through %s: vigil %.0f MB/s, without vigil %.0f MB/s, ratio %.2f (goal >= 0.9); ",
		       n, mb / m * 1e3, mb / d * 1e3, d / m
		printf "cat as the relay %.0f MB/s (vigil %.2f of it)", mb / c * 1e3, c / m
		if (lines > 0)
			printf "; vigil adds %.2f us a line", (m - d) * 1e3 / lines
		printf "\n" }'
}

# mpi_pair NAME MB1 MB3 -- T1... -- T3...: marginal throughput from two sizes
mpi_pair() {
	local name=$1 mb1=$2 mb3=$3 d1=() d3=() m1=() m3=() c1=() c3=() i t1=() t3=() k
	shift 4
	for ((k = 0; k < $#; k++)); do [ "${@:k+1:1}" = -- ] && break; done
	t1=("${@:1:k}"); t3=("${@:k+2}")
	for ((i = 0; i < reps; i++)); do
		d1+=("$(ms mpi_direct "${t1[@]}")"); m1+=("$(ms mpi_vigil "${t1[@]}")"); c1+=("$(ms mpi_cat "${t1[@]}")")
		d3+=("$(ms mpi_direct "${t3[@]}")"); m3+=("$(ms mpi_vigil "${t3[@]}")"); c3+=("$(ms mpi_cat "${t3[@]}")")
	done
	awk -v n="$name" -v mb="$(( mb3 - mb1 ))" -v mb1="$mb1" -v d1="$(med "${d1[@]}")" \
	    -v d3="$(med "${d3[@]}")" -v m1="$(med "${m1[@]}")" -v m3="$(med "${m3[@]}")" \
	    -v c1="$(med "${c1[@]}")" -v c3="$(med "${c3[@]}")" -v lines="${per_line:-0}" 'BEGIN {
		ds = (d3 - d1) / mb; vs = (m3 - m1) / mb; cs = (c3 - c1) / mb
		printf "pass-through %s: marginal vigil %.0f MB/s, without vigil %.0f MB/s, ratio %.2f (goal >= 0.9); ",
		       n, 1e3 / vs, 1e3 / ds, ds / vs
		printf "fixed: vigil %.2f s, without %.2f s; cat as the relay %.0f MB/s (vigil %.2f of it)",
		       (m1 - vs * mb1) / 1e3, (d1 - ds * mb1) / 1e3, 1e3 / cs, cs / vs
		if (lines > 0)
			printf "; vigil adds %.2f us a line", ((m3 - m1) - (d3 - d1)) * 1e3 / lines
		printf "\n" }'
}

if [ -z "$only" ] || [ "$only" = passthrough ]; then
	[ -x "$writer" ] || { echo "bench_run: $writer not built (make bench builds it)" >&2; exit 2; }
	lmb=$(( $("$writer" "$lines" | wc -c) / 1000000 ))
	bmb=$(( bytes / 1000000 ))
	pair "bulk, pipe" "$bmb" pipe -- head -c "$bytes" /dev/zero
	per_line=$lines pair "line by line, pipe" "$lmb" pipe -- "$writer" "$lines"
	pair "bulk, pty" "$bmb" pty -- head -c "$bytes" /dev/zero
	per_line=$lines pair "line by line, pty" "$lmb" pty -- "$writer" "$lines"
	mpi_pair "bulk, mpirun -np 2" $((bmb / 4)) $((3 * bmb / 4)) -- \
		head -c $((bytes / 4)) /dev/zero -- head -c $((3 * bytes / 4)) /dev/zero
	# 2 ranks, each writing the difference of the two sizes: 2 * lines
	per_line=$((2 * lines)) mpi_pair "line by line, mpirun -np 2" \
		$((lmb / 2)) $((3 * lmb / 2)) -- "$writer" $((lines / 2)) -- "$writer" $((3 * lines / 2))
	per_line=$((2 * lines)) vigil_env=VIGIL_PTY=0 mpi_pair \
		"line by line, mpirun -np 2, VIGIL_PTY=0" \
		$((lmb / 2)) $((3 * lmb / 2)) -- "$writer" $((lines / 2)) -- "$writer" $((3 * lines / 2))
fi

# --- signal latency ------------------------------------------------------
if [ -z "$only" ] || [ "$only" = signal ]; then
	python3 "$here/signal_latency.py" "$vigil" "$signals"
fi
[ -z "$only" ] || [ "$only" = idle ] || exit 0

# --- idle CPU --------------------------------------------------------------
# Each agent apart, by its rank (mpirun's children; their own children,
# such as the training's keeper, are not counted): the coordinator's
# agent does more than the others, and an average over every vigil
# process would hide it.
log=$(mktemp)
"$mpirun" --oversubscribe --bind-to none -np 2 "$vigil" run --precheck off --mode pytorch -- sleep "$idle_s" >"$log" 2>&1 &
mpi=$!
sleep 2
coord= others=
for p in $(pgrep -P "$mpi" || true); do
	[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$vigil" ] || continue
	case $(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep '^OMPI_COMM_WORLD_RANK=') in
	OMPI_COMM_WORLD_RANK=0) coord=$p ;;
	OMPI_COMM_WORLD_RANK=*) others="$others $p" ;;
	esac
done
[ -n "$coord" ] || { echo "bench_run: the coordinator's agent not found under mpirun $mpi" >&2; exit 2; }
ticks() {  # utime + stime of the given pids, in clock ticks
	local t=0 p
	for p in "$@"; do
		[ -r /proc/$p/stat ] && t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat)))
	done
	echo $t
}
# shellcheck disable=SC2086
c0=$(ticks $coord); o0=$(ticks $others); s0=$(ns)
sleep $((idle_s - 4))
# shellcheck disable=SC2086
c1=$(ticks $coord); o1=$(ticks $others); s1=$(ns)
wait "$mpi" || true
rm -f "$log"
hz=$(getconf CLK_TCK)
awk -v c=$((c1 - c0)) -v o=$((o1 - o0)) -v hz="$hz" -v s=$((s1 - s0)) \
    -v n="$(echo $others | wc -w)" 'BEGIN {
	wall = s / 1e9; cpu = c / hz; ocpu = n ? o / hz / n : 0
	printf "idle CPU: the coordinator'"'"'s agent %.3f s of CPU over %.0f s of a sleeping child: %.3f %% of one core (goal < 0.1 %%)\n",
	       cpu, wall, 100 * cpu / wall
	printf "idle CPU: each other agent %.3f s: %.3f %% of one core (goal < 0.1 %%)\n",
	       ocpu, 100 * ocpu / wall }'
