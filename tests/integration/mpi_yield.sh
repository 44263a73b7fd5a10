#!/bin/bash
# The agents' own MPI does not give the core away at every look where
# mpirun places more processes than the machine has cores: Open MPI makes
# each look that finds nothing call sched_yield() there
# (mpi_yield_when_idle), and a command then waited behind every runnable
# process.  The calls are counted by a preloaded library (count_yield.c)
# in each agent; a run where the user asks for yielding shows that the
# count sees them.  The training never inherits the agent's setting.
. "$(dirname "$0")/lib.sh"

shim=${COUNT_YIELD:-}
[ -r "$shim" ] || { echo "FAIL: count_yield.so not built (make check builds it)" >&2; exit 1; }
# one agent more than the cores, so that mpirun counts the node oversubscribed
np=$(( $(nproc) + 1 ))

# run NAME [VAR=VALUE...]: a job of np agents, each training printing the
# setting it sees; the agents' counts in $SCRATCH/NAME.counts
run() {
	local name=$1
	shift
	rm -f "$SCRATCH/$name.counts"
	run_mpi -np "$np" env "$@" LD_PRELOAD="$shim" COUNT_YIELD_FILE="$SCRATCH/$name.counts" \
		"$VIGIL" run --precheck off -- \
		sh -c 'sleep 2; echo "setting ${OMPI_MCA_mpi_yield_when_idle-unset}"' \
		>"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err"
}

# agents NAME: the count of each agent (a vigil begun by exec), one a line
agents() { awk '$1 == "vigil" && $2 == 0 { print $3 }' "$SCRATCH/$1.counts" 2>/dev/null; }

run default; rc=$?
expect_eq "the job succeeds" 0 "$rc"
expect_eq "every agent counted" "$np" "$(agents default | wc -l)"
most=$(agents default | sort -n | tail -n 1)
if [ -n "$most" ] && [ "$most" -le 10 ]; then
	pass "no agent yields at its looks at MPI (at most $most calls)"
else
	fail "an agent called sched_yield ${most:-?} times"; cat "$SCRATCH/default.err" >&2
fi
expect_eq "the training does not inherit the agent's setting" \
	"$(printf 'setting unset\n%.0s' $(seq 1 "$np"))" "$(grep '^setting' "$SCRATCH/default.out")"

# The waits that block, at the end (the reductions' communicator before
# MPI_Finalize), give the core away between tries: with yielding off an
# MPI_Wait spins, and where ranks outnumber cores the ranks it waits for
# need that core (a check of 64 ranks on 2 cores took twice an MPI
# program's start).  The check's agents never call it.
rm -f "$SCRATCH/check.counts"
run_mpi -np "$np" env LD_PRELOAD="$shim" COUNT_YIELD_FILE="$SCRATCH/check.counts" \
	"$VIGIL" check >"$SCRATCH/check.out" 2>"$SCRATCH/check.err"; rc=$?
expect_eq "the check succeeds" 0 "$rc"
expect_eq "every checking agent counted" "$np" \
	"$(awk '$1 == "vigil" && $2 == 0' "$SCRATCH/check.counts" 2>/dev/null | wc -l)"
expect_eq "no checking agent spins in MPI_Wait" "" \
	"$(awk '$1 == "vigil" && $2 == 0 && $4 != 0 { print $4 }' "$SCRATCH/check.counts" 2>/dev/null)"

# The user's own setting is theirs: the agents yield, the training sees it.
run user OMPI_MCA_mpi_yield_when_idle=1; rc=$?
expect_eq "the job succeeds, yielding" 0 "$rc"
least=$(agents user | sort -n | head -n 1)
if [ -n "$least" ] && [ "$least" -gt 20 ]; then
	pass "with the user's setting every agent yields (at least $least calls): the count sees them"
else
	fail "with OMPI_MCA_mpi_yield_when_idle=1 an agent yielded only ${least:-?} times"
fi
expect_eq "the training sees the user's setting" \
	"$(printf 'setting 1\n%.0s' $(seq 1 "$np"))" "$(grep '^setting' "$SCRATCH/user.out")"

finish
