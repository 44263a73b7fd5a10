#!/bin/bash
# ledger_concurrency.sh - the node ledger under many writers at once.
# 50 writer processes (ledger_writer, each record its own file) record
# incidents against 8 overlapping nodes, as root and, with root, half of
# them as another user through the sticky spool, while readers (`vigil
# nodes --json`) and a compactor (`vigil nodes --compact`) run in loops
# beside them.  One writer is killed with SIGKILL between the write of its
# temporary file and its rename (the test hook stops it there); a second
# round kills 20 writers at random moments.
#   - nothing lost: every record a writer saw in place is read back, once;
#     the only others are the record a killed writer was writing;
#   - nothing torn: every reader exits 0 with whole JSON, and no file or
#     line is ever skipped as unreadable;
#   - the stopped writer's record is nowhere; its temporary file stays for
#     compaction to remove once it is an hour old.
#
# On a local file system, not on NFS.  The ledger is meant for NFS, and
# this test would export it from Debian's nfs-kernel-server in a network
# namespace and mount it in the writers' namespaces; but that needs the
# kernel's NFS server and client, and the machine this test was written on
# has neither: its kernel (a container's, 6.18) lists no nfs or nfsd in
# /proc/filesystems and has no modules to load (modprobe nfsd: "Module
# nfsd not found"), and no FUSE NFS client is packaged for Debian 12.  The
# test says at start what it finds.  What the ledger relies on is what
# NFS promises too: rename() within one directory is atomic, and a file
# opened after another client closed it shows all that client wrote
# (close-to-open); nothing relies on O_APPEND or on locks.
# Needs: ledger_writer ($LEDGER_WRITER), python3.
. "$(dirname "$0")/lib.sh"

writer=${LEDGER_WRITER:?LEDGER_WRITER must name tests/integration/ledger_writer}
if grep -qw nfs /proc/filesystems && grep -qw nfsd /proc/filesystems; then
	echo "nfs: this kernel has NFS; this test still runs on a local file system"
else
	echo "nfs: not in this kernel ($(modprobe -n nfsd 2>&1 | head -n 1)):" \
		"the ledger is tested on a local file system"
fi

chmod 755 "$SCRATCH"
D=$SCRATCH/ledger
mkdir -m 755 "$D"
NODES="n1 n2 n3 n4 n5 n6 n7 n8"
as_other=
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	as_other="setpriv --reuid=65534 --regid=65534 --clear-groups"
	# the build tree may sit in a directory only root can enter
	cp "$writer" "$SCRATCH/ledger_writer" && chmod 755 "$SCRATCH/ledger_writer" &&
		writer=$SCRATCH/ledger_writer
fi
# the spool as the first root writer makes it: sticky, open to every user
"$VIGIL" nodes --dir "$D" --quarantine n0 --why setup >/dev/null ||
	fail "the first record"
"$VIGIL" nodes --dir "$D" --forgive n0 >/dev/null

stop=$SCRATCH/stop
bad=$SCRATCH/bad
# a reader, beside the writers until $stop exists
reader_loop() {
	local i=0 out=$SCRATCH/read.out err=$SCRATCH/read.err
	while [ ! -e "$stop" ]; do
		i=$((i + 1))
		if ! "$VIGIL" nodes --dir "$D" --json --incidents >"$out" 2>"$err"; then
			echo "reader $i: exit status $?: $(cat "$err")" >>"$bad"
		elif [ -s "$err" ]; then
			echo "reader $i said: $(cat "$err")" >>"$bad"
		elif ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$out" 2>>"$bad"; then
			echo "reader $i: not JSON" >>"$bad"
		fi
		echo "$i" >"$SCRATCH/reads"
	done
}
# a compactor, beside them too
compactor_loop() {
	local i=0
	while [ ! -e "$stop" ]; do
		i=$((i + 1))
		"$VIGIL" nodes --dir "$D" --compact 2>>"$bad" || echo "compactor $i failed" >>"$bad"
		echo "$i" >"$SCRATCH/compactions"
	done
}
side_loops() {
	reader_loop &
	compactor_loop &
	wait
}

# rotated K: the node list starting at its K-th node (overlapping writers)
rotated() {
	local k=$(($1 % 8)) a
	read -ra a <<<"$NODES"
	echo "${a[@]:k}" "${a[@]:0:k}"
}

# check_round NAME: what the writers saw in place against what is read
check_round() {
	"$VIGIL" nodes --dir "$D" --json --incidents --kind fault >"$SCRATCH/final.json" \
		2>"$SCRATCH/final.err" || fail "$1: the final read"
	expect_eq "$1: the final read skipped nothing" "" "$(cat "$SCRATCH/final.err")"
	cat "$SCRATCH"/w.*.out 2>/dev/null | sort >"$SCRATCH/wrote"
	python3 - "$SCRATCH/final.json" "$SCRATCH/wrote" "$SCRATCH/killed" <<'EOF' >"$SCRATCH/verdict" 2>&1
import collections, json, sys
doc = json.load(open(sys.argv[1]))
read = collections.Counter()
for node in doc["nodes"]:
    for r in node["records"]:
        w, _, k = r["evidence"].removeprefix("writer ").partition(" record ")
        read[(int(w), int(k))] += 1
wrote = set()
last = collections.defaultdict(lambda: -1)
for line in open(sys.argv[2]):
    _, w, k = line.split()
    wrote.add((int(w), int(k)))
    last[int(w)] = max(last[int(w)], int(k))
killed = {int(x) for x in open(sys.argv[3]).read().split()}
lost = sorted(wrote - set(read))
twice = sorted(x for x, n in read.items() if n > 1)
# a killed writer may have put its last record in place before it said so
extra = sorted(x for x in set(read) - wrote if not (x[0] in killed and x[1] == last[x[0]] + 1))
print(len(wrote), len(read), lost[:5], twice[:5], extra[:5])
EOF
	read -r nwrote nread rest <"$SCRATCH/verdict" || true
	echo "$1: $nwrote records in place, $nread read back"
	expect_eq "$1: nothing lost, nothing twice, nothing unknown" "[] [] []" "$rest"
	[ "${nwrote:-0}" -gt 0 ] || fail "$1: no writer wrote"
}

# ---- round 1: 50 writers; writer 7 stopped between write and rename ------
# they write until the reader has read 5 times and the compactor compacted
# 3 times among them (LEDGER_STOP), 2000 records each at most
export LEDGER_GAP_MS=100 LEDGER_STOP=$SCRATCH/writers.stop
echo 0 >"$SCRATCH/reads"
echo 0 >"$SCRATCH/compactions"
side_loops &
side=$!
: >"$SCRATCH/killed"
pids=()
for w in $(seq 1 50); do
	run=
	if [ -n "$as_other" ] && [ $((w % 2)) = 0 ]; then
		run=$as_other
	fi
	if [ "$w" = 7 ]; then
		# not under timeout(1): its pid is the writer's, killed below
		# shellcheck disable=SC2046
		"$writer" "$D" "$w" 40 5 "$SCRATCH/paused" $(rotated "$w") \
			>"$SCRATCH/w.$w.out" 2>"$SCRATCH/w.$w.err" &
		paused=$!
	else
		# shellcheck disable=SC2046,SC2086
		$run timeout -k 5 300 "$writer" "$D" "$w" 2000 $(rotated "$w") \
			>"$SCRATCH/w.$w.out" 2>"$SCRATCH/w.$w.err" &
		pids+=($!)
	fi
done
for _ in $(seq 1 200); do
	[ -e "$SCRATCH/paused" ] && break
	sleep 0.05
done
if [ -e "$SCRATCH/paused" ]; then pass "writer 7 stopped between write and rename"
else fail "writer 7 never reached its rename"; fi
tmp_before=$(find "$D/spool" -name '.tmp~*' | wc -l)
kill -KILL "$paused"
for _ in $(seq 1 600); do
	[ "$(cat "$SCRATCH/reads")" -ge 5 ] && [ "$(cat "$SCRATCH/compactions")" -ge 3 ] && break
	sleep 0.1
done
touch "$LEDGER_STOP"
echo 7 >>"$SCRATCH/killed"
for p in "${pids[@]}"; do
	wait "$p" || fail "a writer failed: $(cat "$SCRATCH"/w.*.err)"
done
wait "$paused" 2>/dev/null
touch "$stop"
wait "$side"
expect_eq "round 1: writer 7 wrote records 0-4 only" "wrote 7 4" "$(tail -n 1 "$SCRATCH/w.7.out")"
echo "round 1: $(cat "$SCRATCH/w".[0-9]*.out | wc -l) records from 50 writers"
expect_match "round 1: its temporary file is left" '^[1-9]' "$tmp_before"
expect_eq "round 1: its record is nowhere" "" \
	"$("$VIGIL" nodes --dir "$D" --json --incidents | grep -o 'writer 7 record 5' | head -n 1)"
check_round "round 1"
expect_eq "round 1: readers and compactor never failed" "" "$(cat "$bad" 2>/dev/null)"
expect_match "round 1: readers ran beside the writers" '^([5-9]|[1-9][0-9]+)$' \
	"$(cat "$SCRATCH/reads")"
expect_match "round 1: and a compactor" '^([3-9]|[1-9][0-9]+)$' "$(cat "$SCRATCH/compactions")"
echo "round 1: $(cat "$SCRATCH/reads") reads, $(cat "$SCRATCH/compactions") compactions"
if [ -n "$as_other" ]; then
	expect_match "round 1: another user's records are in, as theirs" '"user":"(nobody|65534)"' \
		"$(cat "$SCRATCH/final.json")"
fi

# ---- round 2: 20 writers killed at random moments ----------------------------
rm -f "$stop" "$bad"
unset LEDGER_GAP_MS LEDGER_STOP
side_loops &
side=$!
pids=()
for w in $(seq 101 120); do
	# shellcheck disable=SC2046
	"$writer" "$D" "$w" 100000 $(rotated "$w") >"$SCRATCH/w.$w.out" 2>"$SCRATCH/w.$w.err" &
	pids+=($!)
done
for i in "${!pids[@]}"; do
	sleep "0.0$((RANDOM % 10))"
	kill -KILL "${pids[$i]}"
	echo $((101 + i)) >>"$SCRATCH/killed"
done
wait "${pids[@]}" 2>/dev/null
touch "$stop"
wait "$side"
check_round "round 2"
expect_eq "round 2: readers and compactor never failed" "" "$(cat "$bad" 2>/dev/null)"

# compaction leaves one file a node, every record in it
"$VIGIL" nodes --dir "$D" --compact || fail "the last compaction"
expect_eq "one store file a node" "8" "$(find "$D/store" -name 'c~*.rec' -path '*/n[1-8]/*' | wc -l)"
expect_eq "no record left in the spool" "0" "$(find "$D/spool" -name 'n*~*.rec' | wc -l)"
check_round "after compaction"
finish
