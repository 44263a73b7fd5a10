#!/bin/bash
# The platform manual's data preparation, lifecycle scripts, batch tasks
# and kept worker output, on the multi-node test bed (tests/testbed): three
# real nodes under mpirun, each with its own hostname and its own staging
# directory (stage.%n; the nodes share the host's files).
#   1. --stage: every node copies the dataset itself, the training finds it
#      in $VIGIL_STAGE_ds, read-only; a second job reuses the copies.
#   2. a node whose disk the copy would fill past --stage-max-use (a 2 MiB
#      tmpfs) fails its pre-check with that reason: no-go, or with
#      --min-nodes 2 the others train.
#   3. hooks: pre-check and pre-launch on every node (one failing on n3 is
#      n3's pre-check failure; warn only warns), end hooks with the job's
#      state, coordinator-only ones once, a time limit.
#   4. --resume and a fault: the checkpoint hooks on every node, the
#      requeue hook with 81.
#   5. --output coordinator with rank 0's node left out: the lowest healthy
#      rank's stdout is shown, the other's kept in its log.
#   6. --dry-run with a node left out: that node runs nothing.
#   7. --batch: sub-task 1's command in its algorithm directory, its output
#      in OUTPUT/NAME-1.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
export TB_TIMEOUT=60
tb_up 3 || { fail "test bed"; finish; }
small=""
cleanup_platform() {
	[ -n "$small" ] && umount "$small" 2>/dev/null
	tb_down
	chmod -R u+w "$SCRATCH" 2>/dev/null
	rm -rf "$SCRATCH"
}
trap cleanup_platform EXIT

# vigil run on the 3 nodes; tb_mpirun bounds mpirun (timeout -k, and
# mpirun-bounded's SIGKILL), so a deadlocked one cannot hang the test
beat=(--heartbeat 0.5 --heartbeat-timeout 3)  # vigil's own options
run3() { tb_mpirun -np 3 "$VIGIL" run "${beat[@]}" "$@"; }

# A dataset of 3.2 MiB: a large file, small ones, a subdirectory, a link.
SRC=$SCRATCH/data
mkdir -p "$SRC/sub"
head -c 2097152 /dev/urandom >"$SRC/large"
for i in $(seq 1 10); do head -c $((i * 20000)) /dev/urandom >"$SRC/sub/f$i"; done
ln -s sub/f1 "$SRC/first"
size=$(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
CHECK='diff -r "$VIGIL_STAGE_ds" '"$SRC"' >/dev/null && echo "data ok $(hostname) $RANK $WORLD_SIZE"; '
CHECK+='test -z "$(find "$VIGIL_STAGE_ds" ! -type l -perm /222)" && echo "sealed $(hostname)"; '
CHECK+='case "$VIGIL_STAGE_ds" in '"$SCRATCH"'/stage.$(hostname)/ds-*/data) echo "local $(hostname)";; esac'

# 1. Every node stages; the copies are complete, read-only and local.
rep=$SCRATCH/stage1.json
# (--stage-max-use 100: however full the machine's disk, never refused here)
out=$(run3 --stage ds="$SRC" --stage-dir "$SCRATCH/stage.%n" --stage-max-use 100 --report "$rep" \
	-- sh -c "$CHECK" 2>"$SCRATCH/stage1.err"); rc=$?
expect_eq "staging: exit" 0 "$rc"
expect_eq "staging: every node's copy is the dataset" "data ok n1 0 3,data ok n2 1 3,data ok n3 2 3" \
	"$(printf '%s\n' "$out" | grep '^data ok' | sort | paste -sd,)"
expect_eq "staging: read-only everywhere" 3 "$(printf '%s\n' "$out" | grep -c '^sealed')"
expect_eq "staging: each node's own directory" 3 "$(printf '%s\n' "$out" | grep -c '^local')"
expect_match "staging: the coordinator's summary" 'vigil: staged on 3 nodes in [0-9.]+ s' "$(cat "$SCRATCH/stage1.err")"
expect_eq "staging: the report counts every node's copy" "3 $((3 * size))" \
	"$(report "$rep" 'len(r["staging"]["nodes"]), int(r["staging"]["copied_bytes"])')"
# a second job finds the copies intact and copies nothing
rep=$SCRATCH/stage2.json
out=$(run3 --stage ds="$SRC" --stage-dir "$SCRATCH/stage.%n" --stage-max-use 100 --report "$rep" \
	-- sh -c "$CHECK" 2>/dev/null); rc=$?
expect_eq "reuse: exit" 0 "$rc"
expect_eq "reuse: the data is there" 3 "$(printf '%s\n' "$out" | grep -c '^data ok')"
expect_eq "reuse: nothing copied" "0 $size" \
	"$(report "$rep" 'int(r["staging"]["copied_bytes"]), int(r["staging"]["data_bytes"])')"

# 2. n2's staging directory is a 2 MiB file system: the copy would fill it.
small=$SCRATCH/stage.n2small
mkdir -p "$small"
mount -t tmpfs -o size=2m,mode=0700 vigil-test "$small" || fail "mount a small tmpfs"
out=$(run3 --stage ds="$SRC" --stage-dir "$SCRATCH/stage.%nsmall" --stage-max-use 100 \
	-- sh -c "$CHECK" 2>&1); rc=$?
expect_eq "full disk: no-go" 80 "$rc"
expect_match "full disk: n2's pre-check says why" \
	'n2 \(rank 1\): stage: ds: staging needs 3\.[0-9] MiB more on .*/stage\.n2small, which would then be [0-9]+% full, above the maximum of 100%' "$out"
out=$(run3 --min-nodes 2 --stage ds="$SRC" --stage-dir "$SCRATCH/stage.%nsmall" --stage-max-use 100 \
	-- sh -c "$CHECK" 2>/dev/null); rc=$?
expect_eq "full disk, --min-nodes 2: exit" 0 "$rc"
expect_eq "full disk, --min-nodes 2: n1 and n3 train" "data ok n1 0 2,data ok n3 1 2" \
	"$(printf '%s\n' "$out" | grep '^data ok' | sort | paste -sd,)"
umount "$small" && small=""

# 3. Hooks.  A pre-launch hook failing on n3 is n3's pre-check failure.
out=$(run3 --hook 'pre-check=echo checking $VIGIL_NODE' \
	--hook 'pre-launch=test $(hostname) != n3 || { echo no scratch space; exit 5; }' \
	-- sh -c 'echo trained' 2>&1); rc=$?
expect_eq "failing hook: no-go" 80 "$rc"
expect_eq "failing hook: pre-check hooks on every node" 3 "$(printf '%s\n' "$out" | grep -c '^\[hook pre-check n[123]:[012]\] checking n[123]$')"
expect_match "failing hook: its output, tagged" '^\[hook pre-launch n3:2\] no scratch space$' "$out"
expect_match "failing hook: n3's pre-check failure" \
	"n3 \(rank 2\): hooks: pre-launch hook 'test .*' failed with status 5: no scratch space" "$out"
expect_no_match "failing hook: nothing trained" '^trained' "$out"
out=$(run3 --hook 'pre-launch:warn=test $(hostname) != n3' \
	--hook 'end=echo end $VIGIL_JOB_STATE $VIGIL_JOB_EXIT_CODE' \
	--hook 'end:coordinator=echo once on $(hostname)' -- sh -c 'echo trained' 2>&1); rc=$?
expect_eq "warning hook: the job runs" 0 "$rc"
expect_eq "warning hook: on every node" 3 "$(printf '%s\n' "$out" | grep -c '^trained')"
expect_eq "end hooks: every node, with the job's state" 3 \
	"$(printf '%s\n' "$out" | grep -c '^\[hook end n[123]:[012]\] end succeeded 0$')"
expect_eq "end hooks: the coordinator's once" "[hook end n1:0] once on n1" \
	"$(printf '%s\n' "$out" | grep 'once on')"
t0=$(date +%s%N)
out=$(run3 --hook 'pre-check:1s=sleep 20' -- true 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "hook past its limit: no-go" 80 "$rc"
expect_match "hook past its limit: said" "pre-check hook 'sleep 20' did not end within 1 s" "$out"
if [ "$ms" -lt 15000 ]; then pass "hook past its limit: killed after 1 s (${ms} ms in all)"
else fail "hook past its limit: ${ms} ms"; fi
rep=$SCRATCH/endfail.json
out=$(run3 --hook 'end:coordinator=echo upload failed; exit 9' --report "$rep" -- true 2>&1); rc=$?
expect_eq "failing end hook: the job succeeded, the agent says 80" "80 succeeded" \
	"$rc $(report "$rep" 'r["state"]')"
expect_match "failing end hook: why" "end hook 'echo upload failed; exit 9' failed with status 9: upload failed" "$out"

# 4. --resume and a fault on n2: checkpoint hooks everywhere, the requeue hook once.
ck=$SCRATCH/ck; mkdir -p "$ck"
log=$SCRATCH/resume.out
run3 --resume --nic eth1 --inspect-interval 1 --grace 5 \
	--hook 'checkpoint=echo saving because $VIGIL_CKPT_REASON' \
	--hook 'requeue:coordinator=echo requeue $VIGIL_JOB_EXIT_CODE $VIGIL_JOB_STATE' \
	-- sh -c "exec $SIM --iters 1000000 --iter-ms 20 --ckpt-dir $ck/\$(hostname)" >"$log" 2>&1 &
job=$!
for ((i = 0; i < 400; i++)); do [ "$(grep -c '^ready ' "$log")" -ge 3 ] && break; sleep 0.05; done
[ "$i" -lt 400 ] || fail "resume: trainings not ready"
tb_exec n2 ip link set eth1 down
wait "$job"; rc=$?
tb_exec n2 ip link set eth1 up
expect_eq "fault: requeue" 81 "$rc"
expect_eq "fault: the checkpoint hook on every node" 3 \
	"$(grep -c '^\[hook checkpoint n[123]:[012]\] saving because n2 (rank 1): nic eth1' "$log")"
expect_eq "fault: the requeue hook, once, with 81" "[hook requeue n1:0] requeue 81 error" \
	"$(grep '^\[hook requeue' "$log")"

# 5. rank 0's node (n1) left out by the pre-check: n2's stdout is shown,
#    n3's kept in its log.
tb_exec n1 ip link set eth1 down
out=$(run3 --nic eth1 --min-nodes 2 --output coordinator --node-logs "$SCRATCH/logs" \
	-- sh -c 'echo "line from $(hostname) rank $RANK"' 2>/dev/null); rc=$?
expect_eq "hidden output: exit" 0 "$rc"
expect_eq "hidden output: the lowest healthy rank's stdout" "line from n2 rank 0" \
	"$(printf '%s\n' "$out" | grep '^line from')"
expect_eq "hidden output: n3's in its log" "line from n3 rank 1" "$(cat "$SCRATCH/logs/n3.out" 2>&1)"

# 6. --dry-run with n1 left out: it runs nothing, the others train as two.
out=$(run3 --dry-run --nic eth1 --min-nodes 2 -- python3 train.py 2>&1); rc=$?
expect_eq "dry run, a node left out: exit" 0 "$rc"
expect_match "dry run: n1 runs nothing" '^left out: not ready at the pre-check' \
	"$(printf '%s\n' "$out" | grep -A1 '^== n1 ' | tail -1)"
expect_eq "dry run: n2 and n3 as node ranks 0 and 1 of 2" "--node_rank=0,--node_rank=1" \
	"$(printf '%s\n' "$out" | grep -o -- '--nnodes=2 --node_rank=[01]' | cut -d' ' -f2 | paste -sd,)"
tb_exec n1 ip link set eth1 up

# 7. A batch of two sub-tasks; this run is sub-task 1.
for t in A B; do
	mkdir -p "$SCRATCH/alg$t"
	printf '%s\n' 'echo "'$t' $RANK $WORLD_SIZE $(pwd)" >"$VIGIL_OUTPUT_DIR/$(hostname)"' >"$SCRATCH/alg$t/train.sh"
done
cat >"$SCRATCH/sweep.json" <<EOF
{"name": "sweep", "tasks": [
  {"command": ["sh", "train.sh"], "algorithm": "$SCRATCH/algA"},
  {"command": ["sh", "train.sh"], "algorithm": "$SCRATCH/algB"}]}
EOF
run3 --batch "$SCRATCH/sweep.json" --batch-index 1 --output-dir "$SCRATCH/out" >/dev/null 2>&1; rc=$?
expect_eq "batch: exit" 0 "$rc"
expect_eq "batch: sub-task 1 on every node, in its algorithm directory" \
	"B 0 3 $SCRATCH/algB,B 1 3 $SCRATCH/algB,B 2 3 $SCRATCH/algB" \
	"$(cat "$SCRATCH"/out/sweep-1/n1 "$SCRATCH"/out/sweep-1/n2 "$SCRATCH"/out/sweep-1/n3 2>&1 | paste -sd,)"
expect_eq "batch: nothing of sub-task 0" no "$(test -e "$SCRATCH/out/sweep-0" && echo yes || echo no)"

finish
