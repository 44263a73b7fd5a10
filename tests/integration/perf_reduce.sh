#!/bin/bash
# The cross-node reduction of iteration timings under mpirun -np 4
# (perf_reduce_prog.c): exact min/mean/max with the ranks holding the
# extremes, iterations reported only once every node has them, the
# straggler alert, a window large enough for MPI's segmented algorithms,
# a rank that never joins the reduction: the others keep testing without
# blocking and can still leave; and a rank lost for good: the others give
# up what it never joins and go on reducing among themselves.
. "$(dirname "$0")/lib.sh"

prog=${PERF_REDUCE_PROG:-$(dirname "$VIGIL")/tests/integration/perf_reduce_prog}

# The synthetic streams, computed here independently: rank r's iteration i
# has hw 600 + 10 r + i and e2e 1000 + 10 i ms (10% more on rank 3); rank
# 1 stops after 16.  Ties on an extreme go to the lowest rank.
expected=$(awk 'BEGIN {
	for (i = 1; i <= 16; i++) {
		hs = 0; es = 0; rs = 0
		for (r = 0; r < 4; r++) {
			hw[r] = 600 + 10 * r + i
			e[r] = 1000 + 10 * i
			if (r == 3) e[r] = e[r] * 11 / 10
			q[r] = hw[r] / e[r]
			hs += hw[r]; es += e[r]; rs += q[r]
		}
		hmin = hw[0]; hmax = hw[0]; emin = 0; emax = 0; qmin = 0; qmax = 0
		for (r = 1; r < 4; r++) {
			if (hw[r] < hmin) hmin = hw[r]
			if (hw[r] > hmax) hmax = hw[r]
			if (e[r] < e[emin]) emin = r
			if (e[r] > e[emax]) emax = r
			if (q[r] < q[qmin]) qmin = r
			if (q[r] > q[qmax]) qmax = r
		}
		printf "iter %d nodes 4 hw %.3f %.3f %.3f e2e %.3f/%d %.3f %.3f/%d r %.6f/%d %.6f %.6f/%d node_e2e %.1f %.1f %.1f %.1f\n",
			i, hmin, hs / 4, hmax, e[emin], emin, es / 4, e[emax], emax,
			q[qmin], qmin, rs / 4, q[qmax], qmax, e[0], e[1], e[2], e[3]
	}
}')

out=$(run_mpi -np 4 "$prog" reduce 2>"$SCRATCH/err"); rc=$?
expect_eq "reduce exit" 0 "$rc"
[ "$rc" = 0 ] || cat "$SCRATCH/err" >&2
expect_eq "iterations 1..16, exact, once each" "$expected" "$(printf '%s\n' "$out" | grep '^iter ')"
expect_eq "the slow node named once" \
	"alert straggler iter 3 rank 3: n3 e2e 1133 ms is 10% above the median 1030 ms of the other nodes for 3 iterations" \
	"$(printf '%s\n' "$out" | grep '^alert ')"
expect_match "the base stops where rank 1 stopped" '^final base 16$' "$out"
for r in 2 3; do
	expect_match "rank $r fed everything" "^rank $r fed 20 lines 20$" "$out"
done
expect_match "rank 0 fed two processes" '^rank 0 fed 20 lines 40$' "$out"
expect_match "rank 1 fed its 16" '^rank 1 fed 16 lines 16$' "$out"

out=$(run_mpi -np 4 "$prog" big 2>"$SCRATCH/err"); rc=$?
expect_eq "big exit" 0 "$rc"
expect_eq "a 2000-iteration window, exact" "big: 2000 iterations, base 2000, exact" "$out"

# A node that never starts its reduction.  The three others print what
# they saw after 2 s and leave without MPI_Finalize; the launcher then
# ends the job, and the sleeper with it.
t0=$(date +%s)
run_mpi -np 4 "$prog" stall 60 >"$SCRATCH/stall.out" 2>"$SCRATCH/stall.err" &
job=$!
for i in $(seq 1 300); do
	[ "$(grep -c 'no completion within 2 s' "$SCRATCH/stall.out" 2>/dev/null)" -ge 3 ] 2>/dev/null && break
	sleep 0.1
done
t1=$(date +%s)
stall=$(cat "$SCRATCH/stall.out")
for r in 0 1 2; do
	expect_match "rank $r saw no completion, never blocked" \
		"^rank $r: no completion within 2 s \\([0-9]+ tests, longest [0-9.]+ ms\\)$" "$stall"
done
expect_eq "three ranks reported" 3 "$(grep -c 'no completion' "$SCRATCH/stall.out")"
# Each test returned at once: the longest single test, and time to leave.
longest=$(sed -n 's/.*longest \([0-9.]*\) ms.*/\1/p' "$SCRATCH/stall.out" | sort -n | tail -1)
expect_eq "no test call took 200 ms" 1 "$(awk -v l="${longest:-999}" 'BEGIN { print (l < 200) }')"
expect_eq "reports within 20 s of the start" 1 "$(( t1 - t0 <= 20 ))"
# The launcher sees ranks leave without finalizing and ends the job;
# if it has not within 10 s, end it here.
for i in $(seq 1 100); do
	kill -0 "$job" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
	kill -TERM "$job" 2>/dev/null
	sleep 1
	kill -KILL "$job" 2>/dev/null
fi
wait "$job" 2>/dev/null
no_leftovers "stall" "$prog stall"

# Rank 3 lost after 5 reductions: the reduction it never joins is given
# up; among the 3 others, iterations 51..140 (those printed before the
# loss but not reported yet included) come exactly, over 3 nodes, the
# slow survivor named as the maximum, the lost rank's row empty.  The
# launcher ends the job when the survivors leave without MPI_Finalize.
out=$(timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none -np 4 "$prog" survive 20 2>"$SCRATCH/err")
expect_match "survivors: every iteration after the loss, exactly" \
	'^survive: base 140, reported through 140, exact, longest test [0-9.]+ ms$' "$out"
longest=$(printf '%s\n' "$out" | sed -n 's/.*longest test \([0-9.]*\) ms.*/\1/p')
expect_eq "survivors: no test call took 200 ms" 1 "$(awk -v l="${longest:-999}" 'BEGIN { print (l < 200) }')"
no_leftovers "survive" "$prog survive"

finish
