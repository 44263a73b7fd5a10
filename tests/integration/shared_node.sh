#!/bin/bash
# vigil as root on a node other users share: what another user (nobody)
# plants cannot redirect what vigil writes, a full disk leaves whole event
# lines, a reader that goes away costs output (counted), not the job.
#   - the default run directory is new, random, 0700 and gone at the end;
#     a --run-dir of another user, or a link, is refused (64);
#   - the report written over a link nobody planted at its path replaces
#     the link and never writes through it; modes 0644 at most;
#   - an event log nobody planted as a link or a file is refused;
#   - a tiny tmpfs filled up: every line of the event log is a whole
#     event, and `vigil report` reads it;
#   - `vigil run ... | head -c 10`: the training runs to its end, the job
#     succeeds, the report counts the bytes not passed on.
# Needs root (runuser, mount); skips (77) without it, which the CI script
# counts as a failure.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "skip: needs root, runuser and the user nobody"
	exit 77
fi
run() { timeout -k 5 60 "$VIGIL" run --mode single --precheck off "$@"; }
as_nobody() { runuser -u nobody -- "$@"; }
chmod 0755 "$SCRATCH"
SHARED="$SCRATCH/shared"
mkdir -m 1777 "$SHARED"
small=""
cleanup_node() { [ -n "$small" ] && umount "$small" 2>/dev/null; cleanup_scratch; }
trap cleanup_node EXIT

# 1. The run directory.
out=$(TMPDIR="$SHARED" run --mode deepspeed --dry-run -- deepspeed t.py 2>&1); rc=$?
expect_eq "run dir: dry run" 0 "$rc"
rd=$(printf '%s\n' "$out" | sed -n 's|^file: \(.*\)/hostfile$|\1|p' | head -1)
expect_match "run dir: a new random name in TMPDIR" "^$SHARED/vigil\\.[A-Za-z0-9]{6}$" "$rd"
expect_eq "run dir: gone at the end" no "$(test -e "$rd" && echo yes || echo no)"
TMPDIR="$SHARED" run --mode deepspeed -- sh -c 'stat -c "%a %U" "${VIGIL_HOSTFILE%/*}"; cat "$VIGIL_HOSTFILE"' \
	>"$SCRATCH/rd.out" 2>/dev/null
expect_eq "run dir: private while the job runs" "700 root" "$(head -1 "$SCRATCH/rd.out")"
expect_match "run dir: the hostfile in it" 'slots=' "$(cat "$SCRATCH/rd.out")"
as_nobody mkdir "$SHARED/theirs"
out=$(run --mode deepspeed --run-dir "$SHARED/theirs" --dry-run -- deepspeed t.py 2>&1); rc=$?
expect_eq "run dir of another user: refused" 64 "$rc"
expect_match "run dir of another user: why" "theirs" "$out"
as_nobody ln -s "$SCRATCH" "$SHARED/link"
out=$(run --mode deepspeed --run-dir "$SHARED/link" --dry-run -- deepspeed t.py 2>&1); rc=$?
expect_eq "run dir a link: refused" 64 "$rc"

# 2. The report over a link that nobody planted: replaced, not followed.
echo "precious" > "$SCRATCH/victim"
as_nobody ln -s "$SCRATCH/victim" "$SHARED/report.json"
(umask 0; run --report "$SHARED/report.json" -- true 2>/dev/null); rc=$?
expect_eq "planted report link: job exit" 0 "$rc"
expect_eq "planted report link: the target untouched" precious "$(cat "$SCRATCH/victim")"
expect_eq "planted report link: a regular file of root now, 644 under umask 0" "regular file root 644" \
	"$(stat -c '%F %U %a' "$SHARED/report.json")"

# 3. An event log planted by nobody, as a link or as a file of theirs.
# (in a sticky directory the kernel's fs.protected_symlinks may refuse it
# first; elsewhere, vigil does)
as_nobody ln -s "$SCRATCH/victim" "$SHARED/events.jsonl"
out=$(run --events "$SHARED/events.jsonl" -- true 2>&1)
expect_match "planted events link: refused" \
	"cannot open the event log .*(symbolic link of another user|Permission denied)" "$out"
mkdir -m 0755 "$SCRATCH/open"
ln -s "$SCRATCH/victim" "$SCRATCH/open/events.jsonl"
chown -h nobody "$SCRATCH/open/events.jsonl"
out=$(run --events "$SCRATCH/open/events.jsonl" -- true 2>&1)
expect_match "a link of another user outside a sticky directory: refused by vigil" \
	"symbolic link of another user" "$out"
expect_eq "planted events link: the target untouched" precious "$(cat "$SCRATCH/victim")"
as_nobody touch "$SHARED/theirs.jsonl"
out=$(run --events "$SHARED/theirs.jsonl" -- true 2>&1)
expect_match "events file of another user: refused" "a file of another user" "$out"
expect_eq "events file of another user: left empty" 0 "$(stat -c %s "$SHARED/theirs.jsonl")"

# 4. A full disk: whole lines only, and the reader copes.
small="$SCRATCH/small"
mkdir "$small"
if mount -t tmpfs -o size=64k tmpfs "$small"; then
	ev="$small/events.jsonl"
	run --events "$ev" -- true >/dev/null 2>&1
	# every page taken but what is left of the log's last one; then jobs
	# until their events no longer fit, one of them cut short by ENOSPC
	head -c 1000000 /dev/zero > "$small/filler" 2>/dev/null
	before=$(stat -c %s "$ev")
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		run --events "$ev" -- sh -c 'exit 3' >/dev/null 2>"$SCRATCH/full.err"
	done
	expect_match "full disk: said" "cannot write" "$(cat "$SCRATCH/full.err")"
	expect_eq "full disk: the log grew to the end of its page" 1 \
		"$(( $(stat -c %s "$ev") > before ))"
	bad=$(python3 -c '
import json, sys
bad = 0
for line in open(sys.argv[1], encoding="utf-8"):
    try:
        json.loads(line)
    except ValueError:
        bad += 1
print(bad)' "$ev")
	expect_eq "full disk: every line a whole event" 0 "$bad"
	"$VIGIL" report "$ev" >/dev/null 2>&1; rc=$?
	expect_eq "full disk: vigil report reads the log" 0 "$rc"
	umount "$small" && small=""
else
	fail "full disk: cannot mount a tmpfs"
fi

# 5. A reader that goes away.  More than the agent's stdout pipe holds (it
# grows it to 1 MiB): some of it is written after the reader has gone,
# however fast the agent writes.
run --report "$SCRATCH/pipe.json" -- sh -c "yes | head -c 4194304; touch $SCRATCH/ran-to-the-end" \
	2>"$SCRATCH/pipe.err" | head -c 10 >/dev/null
rc=${PIPESTATUS[0]}
expect_eq "closed pipe: the job's status, not SIGPIPE" 0 "$rc"
expect_eq "closed pipe: the training ran to its end" yes "$(test -e "$SCRATCH/ran-to-the-end" && echo yes || echo no)"
lost=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["output_lost_bytes"] > 0)' "$SCRATCH/pipe.json")
expect_eq "closed pipe: the report counts what was lost" True "$lost"
expect_match "closed pipe: said once" "could not be passed on" "$(cat "$SCRATCH/pipe.err")"

finish
