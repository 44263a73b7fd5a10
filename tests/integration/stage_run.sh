#!/bin/bash
# `vigil run --stage` under mpirun, as users met it: a mode that cannot
# run on the job's nodes is refused before anything is staged; the
# pre-check hooks run before the staging and do not see VIGIL_STAGE_NAME,
# the pre-launch hooks and the training do; the coordinator's summary says
# what was reused only when something was.
. "$(dirname "$0")/lib.sh"

# vjob NP ARGS...: NP agents, each named for its rank, bounded.
vjob() { local np=$1; shift; run_named "$np" 60 "$@"; }
cleanup_stage() { chmod -R u+w "$SCRATCH" 2>/dev/null; rm -rf "$SCRATCH"; }
trap cleanup_stage EXIT

SRC=$SCRATCH/data
mkdir -p "$SRC"
head -c 200000 /dev/urandom >"$SRC/x"
ST=(--stage ds="$SRC" --stage-dir "$SCRATCH/stage.%n" --stage-max-use 100)

# single mode on 2 nodes: refused at once, nothing staged, said once
out=$(vjob 2 --mode single "${ST[@]}" -- /bin/true 2>&1); rc=$?
expect_eq "single on 2 nodes: usage" 64 "$rc"
expect_match "single on 2 nodes: why and the fix" 'vigil run: single mode runs on one node; got 2 .*start one agent \(mpirun -np 1\), or choose another --mode' "$out"
expect_eq "single on 2 nodes: said once" 1 "$(printf '%s\n' "$out" | grep -c 'single mode runs on one node')"
expect_eq "single on 2 nodes: nothing staged" "" "$(ls -d "$SCRATCH"/stage.* 2>/dev/null)"

# the variables where they are true
show='echo "said $VIGIL_HOOK [${VIGIL_STAGE_ds-unset}]"'
out=$(vjob 2 "${ST[@]}" --hook "pre-check=$show" --hook "pre-launch=$show" --hook "end=$show" \
	-- sh -c 'echo "trained [$VIGIL_STAGE_ds]"' 2>&1); rc=$?
expect_eq "hooks: exit" 0 "$rc"
expect_eq "pre-check hooks: no VIGIL_STAGE_ds before the staging" 2 \
	"$(printf '%s\n' "$out" | grep -c 'said pre-check \[unset\]')"
expect_eq "pre-launch hooks: the copy" 2 \
	"$(printf '%s\n' "$out" | grep -Ec "said pre-launch \[$SCRATCH/stage.n[01]/ds-[0-9a-f]{16}/data\]")"
expect_eq "end hooks: the copy" 2 \
	"$(printf '%s\n' "$out" | grep -Ec "said end \[$SCRATCH/stage.n[01]/ds-[0-9a-f]{16}/data\]")"
expect_eq "the training: the copy" 2 \
	"$(printf '%s\n' "$out" | grep -Ec "^trained \[$SCRATCH/stage.n[01]/ds-[0-9a-f]{16}/data\]")"
# the first staging copied everything: nothing reused, and not said
expect_match "summary: all copied" 'vigil: staged on 2 nodes in [0-9.]+ s: 195 KiB of data on each node, 391 KiB copied in all, ' "$out"
expect_no_match "summary: no reuse claimed" 'reused' "$out"

# again: every copy reused
out=$(vjob 2 "${ST[@]}" -- /bin/true 2>&1); rc=$?
expect_eq "again: exit" 0 "$rc"
expect_match "again: every copy reused" 'vigil: staged on 2 nodes in [0-9.]+ s: 195 KiB of data on each node, nothing copied \(every copy reused\)' "$out"

finish
