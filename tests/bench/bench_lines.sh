#!/bin/bash
# bench_lines.sh - how many of a streaming training's lines come out of
# `mpirun -np 2` broken (another rank's output inside them), with vigil
# and without, alternating in the same run.  Each rank writes LINES
# lines (default 20,000) of 72 bytes, one write a line (two with SPLIT=1:
# the text, then the newline, as an unbuffered print() does), as fast as
# it can, or one every PACE seconds; a line is whole when it comes out
# exactly as written.  vigil writes whole lines; mpirun still forwards
# each rank's stream in pieces of its own (see vigil(1), PERFORMANCE).
#
# Usage: tests/bench/bench_lines.sh [VIGIL]   (default ./vigil)
# Env: REPS (default 3), LINES, PACE (default 0), SPLIT (default 0)
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
reps=${REPS:-3}
export LINES=${LINES:-20000} PACE=${PACE:-0} SPLIT=${SPLIT:-0}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
writer=$(mktemp)
trap 'rm -f "$writer"' EXIT
cat > "$writer" <<'PY'
import os, sys, time
r = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("RANK", "?")
pace = float(os.environ["PACE"])
split = os.environ["SPLIT"] == "1"
for i in range(int(os.environ["LINES"])):
    if split:  # print() unbuffered: the text, then the newline
        sys.stdout.write("%s %06d %s end" % (r, i, "x" * 60))
        sys.stdout.flush()
        sys.stdout.write("\n")
    else:
        sys.stdout.write("%s %06d %s end\n" % (r, i, "x" * 60))
    sys.stdout.flush()
    if pace:
        time.sleep(pace)
PY
mpi2() { timeout -k 5 300 "$mpirun" --oversubscribe --bind-to none -np 2 "$@" 2>/dev/null; }
broken() { echo $((2 * LINES - $(grep -Ec '^[01] [0-9]{6} x{60} end$'))); }

echo "# lines broken of $((2 * LINES)), mpirun -np 2, pace ${PACE}s, split $SPLIT ($(nproc) cores, $(date -u +%Y-%m-%d))"
for ((i = 0; i < reps; i++)); do
	d=$(mpi2 python3 "$writer" | broken)
	v=$(mpi2 "$vigil" run --precheck off --summary-interval 0 -- \
		sh -c 'exec python3 "$0"' "$writer" | broken)
	echo "without vigil $d, with vigil $v"
done
