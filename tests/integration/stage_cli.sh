#!/bin/bash
# `vigil stage` by itself: what a site runs to pre-stage data, and what
# `vigil run --stage` runs on every node.  A copy, its reuse, the lines for
# programs (--progress), the retention (--clean), bad input; every plan
# before any copying, --verify content, missing parents of --dir, a
# source that keeps changing, a disk that fills (root: a 1 MiB tmpfs).
. "$(dirname "$0")/lib.sh"

# bounded, as everything a test starts
vstage() { timeout -k 5 60 "$VIGIL" stage "$@"; }
small="" writer=""
cleanup_stage() {
	[ -n "$writer" ] && kill "$writer" 2>/dev/null
	[ -n "$small" ] && umount "$small" 2>/dev/null
	chmod -R u+w "$SCRATCH" 2>/dev/null
	rm -rf "$SCRATCH"
}
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
expect_match "a directory others may write: why" 'open is writable by others \(mode 0777\): use a directory of your own' "$out"

out=$(vstage --dir "$D" --max-use 100 ds="$SRC" ds="$SRC/a" 2>&1); rc=$?
expect_eq "a name twice: usage" 64 "$rc"
expect_match "a name twice: why" "dataset ds given twice .*each dataset needs a name of its own" "$out"
out=$(vstage --dir "$D" --verify bytes ds="$SRC" 2>&1); rc=$?
expect_eq "bad --verify: usage" 64 "$rc"
expect_match "bad --verify: the words" "--verify needs quick or content" "$out"

# Missing parents of the staging directory are made, private to the user.
out=$(vstage --dir "$SCRATCH/p/q/stage" --max-use 100 ds="$SRC" 2>&1); rc=$?
expect_eq "missing parents: exit" 0 "$rc"
expect_eq "missing parents: made private" 700 "$(stat -c %a "$SCRATCH/p")"

# Two datasets: both plans come before anything is copied, so that the
# totals (and the time left) cover the whole staging from the start.
mkdir -p "$SCRATCH/two"
head -c 5000 /dev/urandom >"$SCRATCH/two/z"
out=$(vstage --dir "$D" --max-use 100 --progress one="$SRC" two="$SCRATCH/two" 2>&1); rc=$?
expect_eq "two datasets: exit" 0 "$rc"
expect_eq "two datasets: the plans first" "plan,plan" \
	"$(printf '%s\n' "$out" | cut -d' ' -f1 | head -2 | paste -sd,)"
expect_eq "two datasets: one plan each" 2 "$(printf '%s\n' "$out" | grep -c '^plan ')"

# A same-size rewrite in the same second: the quick check keeps the old
# copy, --verify content copies it again.
copy=$(vstage --dir "$D" --max-use 100 two="$SCRATCH/two" | sed -n 's/^two: \([^ ]*\) .*/\1/p')
t=$(stat -c %y "$SCRATCH/two/z")
head -c 5000 /dev/urandom >"$SCRATCH/two/z"
touch -d "$t" "$SCRATCH/two/z"
out=$(vstage --dir "$D" --max-use 100 two="$SCRATCH/two" 2>&1)
expect_match "same size, same second: reused" "^two: .*; reused\)" "$out"
out=$(vstage --dir "$D" --max-use 100 --verify content two="$SCRATCH/two" 2>&1); rc=$?
expect_eq "--verify content: exit" 0 "$rc"
expect_match "--verify content: copied again" "^two: .*1 copied" "$out"
expect_eq "--verify content: the new bytes" 0 "$(cmp -s "$SCRATCH/two/z" "$copy/z"; echo $?)"

# A source something keeps writing to: copied again a few times, then
# refused with the reason, never staged torn with 0.
# The writer appends to the large file, so that every round's copy of it
# lasts tens of ms, time enough for a loaded machine to run the writer.
mkdir -p "$SCRATCH/busy"
head -c 50000000 /dev/zero >"$SCRATCH/busy/data"
( while :; do echo x >>"$SCRATCH/busy/data"; done ) &
writer=$!
out=$(vstage --dir "$D" --max-use 100 busy="$SCRATCH/busy" 2>&1); rc=$?
kill "$writer"; wait "$writer" 2>/dev/null; writer=""
expect_eq "a changing source: failure" 84 "$rc"
expect_match "a changing source: why" "vigil stage: busy: the source .*/busy changed while it was copied, 3 times in a row" "$out"

# A disk that fills during the copy: small files the size check counts by
# their bytes, each taking a page of a 1 MiB tmpfs.  The partial copy is
# removed, the message names the dataset and the fix.
if [ "$(id -u)" = 0 ]; then
	small=$SCRATCH/small
	mkdir -p "$small" "$SCRATCH/many"
	for i in $(seq 1 400); do printf '%0100d' "$i" >"$SCRATCH/many/f$i"; done
	if timeout -k 5 20 mount -t tmpfs -o size=1m,mode=0700 tmpfs "$small"; then
		out=$(vstage --dir "$small/stage" --max-use 100 many="$SCRATCH/many" 2>&1); rc=$?
		expect_eq "disk full: unhealthy" 80 "$rc"
		expect_match "disk full: the dataset and the fix" "vigil stage: many: the file system of $small/stage is full .*the partial copy was removed; free space there, or stage to another directory" "$out"
		expect_eq "disk full: nothing left of the copy" "" "$(find "$small/stage" -path '*/data*' | head -3)"
		expect_eq "disk full: the room given back" 1 "$(df -k --output=used "$small" | awk 'NR == 2 { print ($1 < 100) }')"
		umount "$small" && small=""
	else
		fail "disk full: cannot mount a tmpfs"
	fi
else
	echo "skip: disk full (needs root for a small tmpfs)"
fi

finish
