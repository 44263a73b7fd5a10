#!/bin/bash
# `vigil stage` by itself: what a site runs to pre-stage data, and what
# `vigil run --stage` runs on every node.  A copy, its reuse, the lines for
# programs (--progress), the retention (--clean), bad input.
. "$(dirname "$0")/lib.sh"

# bounded, as everything a test starts
vstage() { timeout -k 5 60 "$VIGIL" stage "$@"; }
cleanup_stage() { chmod -R u+w "$SCRATCH" 2>/dev/null; rm -rf "$SCRATCH"; }
trap cleanup_stage EXIT

SRC=$SCRATCH/data
mkdir -p "$SRC/a"
head -c 300000 /dev/urandom >"$SRC/a/x"
head -c 1000 /dev/urandom >"$SRC/y"
D=$SCRATCH/stage

out=$(vstage --dir "$D" --max-use 100 ds="$SRC" 2>&1); rc=$?
expect_eq "stage: exit" 0 "$rc"
expect_match "stage: where the copy is" "^ds: $D/ds-[0-9a-f]{16}/data \\(2 files, 294 KiB; 2 copied" "$out"
copy=$(printf '%s\n' "$out" | sed -n 's/^ds: \([^ ]*\) .*/\1/p')
expect_eq "stage: the same bytes" 0 "$(diff -r "$SRC" "$copy" >/dev/null; echo $?)"
expect_eq "stage: read-only" "" "$(find "$copy" -perm /222)"
out=$(vstage --dir "$D" --max-use 100 --progress ds="$SRC" 2>&1); rc=$?
expect_eq "again: exit" 0 "$rc"
expect_eq "again: reused, for programs" "plan ds 301000 2 0 0,ready ds 1 $copy" "$(printf '%s\n' "$out" | paste -sd,)"

# unused for 8 days: --clean removes it, with a retention of 7
touch -d '8 days ago' "${copy%/data}/used"
out=$(vstage --dir "$D" --clean --retention 7d 2>&1); rc=$?
expect_eq "clean: exit" 0 "$rc"
expect_eq "clean: said" "1 expired copy removed from $D" "$out"
expect_eq "clean: gone" no "$(test -e "$copy" && echo yes || echo no)"

# bad input: a clear message and 64
out=$(vstage --dir "$D" 2>&1); rc=$?
expect_eq "nothing to stage: usage" "64" "$rc"
expect_match "nothing to stage: says how" 'give NAME=SOURCE' "$out"
out=$(vstage --dir "$D" my-data="$SRC" 2>&1); rc=$?
expect_eq "bad name: usage" 64 "$rc"
expect_match "bad name: why" "letters, digits and '_' only" "$out"
out=$(vstage --dir "$D" --jobs 0 ds="$SRC" 2>&1); rc=$?
expect_eq "bad --jobs: usage" 64 "$rc"
out=$(vstage --dir relative ds="$SRC" 2>&1); rc=$?
expect_eq "relative --dir: usage" 64 "$rc"
out=$(vstage --dir "$D" ds="$SCRATCH/none" 2>&1); rc=$?
expect_eq "missing source: failure" 84 "$rc"
expect_match "missing source: named" "vigil stage: ds: cannot read the source $SCRATCH/none" "$out"
out=$(vstage --progress --dir "$D" ds="$SCRATCH/none" 2>&1); rc=$?
expect_match "missing source, for programs: an error line" "^error ds: cannot read the source" "$out"
mkdir -m 777 "$SCRATCH/open"
chmod 777 "$SCRATCH/open"
out=$(vstage --dir "$SCRATCH/open" ds="$SRC" 2>&1); rc=$?
expect_eq "a directory others may write: refused" 84 "$rc"
expect_match "a directory others may write: why" 'is writable by others: use a directory of your own' "$out"

finish
