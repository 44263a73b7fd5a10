#!/bin/bash
# Hooks of the coordinator alone before the gather (pre-check, pre-launch
# with the "coordinator" attribute): every node agrees that there is a
# preparation to wait for, the hook runs on rank 0 only and the job
# starts, whatever else the job has (staging, --precheck off, a hook of
# every node beside it).
. "$(dirname "$0")/lib.sh"

# vjob NP ARGS...: NP agents, each named for its rank, bounded.
vjob() { local np=$1; shift; run_named "$np" 30 "$@"; }
# ran OUT: "PHASE RANK" of each hook line, sorted, comma-separated.
ran() { printf '%s\n' "$1" | sed -n 's/^\[hook \([a-z-]*\) n[0-9]*:\([0-9]*\)\] said .*/\1 \2/p' | sort | paste -sd, -; }

SRC=$SCRATCH/data
mkdir -p "$SRC"
head -c 10000 /dev/urandom >"$SRC/x"

check() {  # WHAT EXPECTED-HOOKS NP ARGS...
	local what=$1 want=$2 np=$3 out rc t0 ms
	shift 3
	t0=$(date +%s%N)
	out=$(vjob "$np" "$@" -- sh -c 'echo "trained $RANK"' 2>&1); rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "$what: exit" 0 "$rc"
	expect_eq "$what: the hooks ran where they belong" "$want" "$(ran "$out")"
	expect_eq "$what: every node trained" "$np" "$(printf '%s\n' "$out" | grep -c '^trained ')"
	expect_no_match "$what: no node waited" 'said nothing of its preparation|no plan from the coordinator' "$out"
	if [ "$ms" -lt 15000 ]; then pass "$what: ${ms} ms"; else fail "$what: took ${ms} ms"; fi
}

check "pre-launch of the coordinator, 2 nodes" "pre-launch 0" 2 \
	--hook 'pre-launch:coordinator=echo said hi'
check "pre-check of the coordinator, 3 nodes" "pre-check 0" 3 \
	--hook 'pre-check:coordinator=echo said hi'
check "pre-check of the coordinator, --precheck off" "pre-check 0" 2 --precheck off \
	--hook 'pre-check:coordinator=echo said hi'
check "the coordinator's and every node's" "pre-check 0,pre-launch 0,pre-launch 1,pre-launch 2" 3 \
	--hook 'pre-check:coordinator=echo said hi' --hook 'pre-launch=echo said hello'
check "the coordinator's pre-launch with staging" "pre-launch 0" 2 \
	--stage ds="$SRC" --stage-dir "$SCRATCH/stage.%n" --stage-max-use 100 \
	--hook 'pre-launch:coordinator=echo said hi'

# A job refused at the pre-check has no end: no end hook runs (vigil(1)).
out=$(vjob 2 --hook 'pre-check:coordinator=false' --hook 'end=echo said end' -- \
	sh -c 'echo "trained $RANK"' 2>&1); rc=$?
expect_eq "refused at the pre-check: exit" 80 "$rc"
expect_eq "refused at the pre-check: no training" 0 "$(printf '%s\n' "$out" | grep -c '^trained ')"
expect_eq "refused at the pre-check: no end hook" "" "$(ran "$out")"
out=$(vjob 2 --hook 'end=echo said end' -- true 2>&1)
expect_eq "a job that ran: the end hook on every node" "end 0,end 1" "$(ran "$out")"

finish
