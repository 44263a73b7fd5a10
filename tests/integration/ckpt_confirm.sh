#!/bin/bash
# What shows that a training saved after the checkpoint signal
# (--ckpt-confirm, vigil(1) RUN): a line of its output, a file it renamed
# into place, or by default its exit status 0 after the signal.  One agent
# (a world of one) under --resume gets SIGUSR1 as from the batch system;
# each case asserts the status (81 either way: the job is requeued from
# whatever checkpoint exists), what vigil says, the report's "checkpoint"
# section and the checkpoint event.
. "$(dirname "$0")/lib.sh"

export VIGIL_NODE_NAME=nodeA

# case NAME CONFIRM TRAINING...: run, signal once ready, set $rc, $log, $rep, $ev
case_run() {
	local name=$1 confirm=$2 pid
	shift 2
	log="$SCRATCH/$name.out"; rep="$SCRATCH/$name.json"; ev="$SCRATCH/$name.jsonl"
	timeout -k 5 60 "$VIGIL" run --precheck off --resume --grace 3 $confirm \
		--report "$rep" --events "$ev" -- "$@" >"$log" 2>&1 &
	pid=$!
	wait_for "$log" '^(ready|started)' 20 || fail "$name: the training did not start"
	kill -USR1 "$(pgrep -P "$pid" -x vigil)"  # the agent, not timeout(1)
	wait "$pid"; rc=$?
}
confirmed() { report "$rep" 'r["checkpoint"]["confirmed"], [x["node"] for x in r["checkpoint"]["not_confirmed"]]'; }
sim() { echo "$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$SCRATCH/ck.$1"; }

# 1. output:REGEX that the training prints when it saved
case_run out-yes "--ckpt-confirm output:^checkpoint.saved.at" $(sim out-yes)
expect_eq "output matches: requeue" 81 "$rc"
expect_eq "output matches: stopped" "stopped 81" "$(report "$rep" 'r["state"], r["exit_code"]')"
expect_eq "output matches: confirmed" "['nodeA'] []" "$(confirmed)"
expect_eq "output matches: nothing said" 0 "$(grep -c 'not confirmed' "$log")"

# 2. output:REGEX that never comes
case_run out-no "--ckpt-confirm output:^never-printed" $(sim out-no)
expect_eq "output missing: still requeue" 81 "$rc"
expect_eq "output missing: an error, not stopped" "error 81" "$(report "$rep" 'r["state"], r["exit_code"]')"
expect_eq "output missing: not confirmed" "[] ['nodeA']" "$(confirmed)"
expect_match "output missing: said, with the node" 'checkpoint not confirmed on nodeA \(rank 0\)' "$(cat "$log")"
expect_match "output missing: the report says why" '.' "$(report "$rep" 'r["checkpoint"]["not_confirmed"][0]["why"]')"
expect_eq "output missing: the event" "warning False" \
	"$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["kind"] == "checkpoint" and "confirmed" in e.get("details", {}):
        print(e["severity"], e["details"]["confirmed"])' "$ev")"

# 3. file:PATH that the training renames its checkpoint to
case_run file-yes "--ckpt-confirm file:$SCRATCH/ck.file-yes/train_sim-rank0.json" $(sim file-yes)
expect_eq "file renamed: confirmed" "['nodeA'] []" "$(confirmed)"
case_run file-no "--ckpt-confirm file:$SCRATCH/ck.file-no/elsewhere.json" $(sim file-no)
expect_eq "file not there: not confirmed" "[] ['nodeA']" "$(confirmed)"

# 4. The default: exit status 0 after the signal; a training without a
#    handler dies of it, which is no save.
case_run default-yes "" $(sim default-yes)
expect_eq "default, saved and exited 0: confirmed" "['nodeA'] []" "$(confirmed)"
case_run default-no "" sh -c 'echo started; exec sleep 100'
expect_eq "default, killed by the signal: requeue" 81 "$rc"
expect_eq "default, killed by the signal: an error" "error 81" "$(report "$rep" 'r["state"], r["exit_code"]')"
expect_eq "default, killed by the signal: not confirmed" "[] ['nodeA']" "$(confirmed)"
expect_match "default, killed by the signal: why" 'SIGUSR1' \
	"$(report "$rep" 'r["checkpoint"]["not_confirmed"][0]["why"]')"

# 4b. The same rule when a lost node asked for the checkpoint: three
#     agents under mpirun, n2's stopped; the others' trainings die of the
#     signal (no save): requeue, and an error, as it is with a save.
unset VIGIL_NODE_NAME
log="$SCRATCH/lost.out"; rep="$SCRATCH/lost.json"
args=()
for i in 0 1 2; do
	[ "$i" -eq 0 ] || args+=(:)
	args+=(-np 1 env VIGIL_NODE_NAME="n$i" "$VIGIL" run --precheck off --resume --heartbeat 0.5
	       --heartbeat-timeout 1.5 --grace 3 --report "$rep" --tag-output --
	       sh -c 'echo started; exec sleep 100 # lost-unconfirmed')
done
timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none "${args[@]}" >"$log" 2>&1 &
pid=$!
for ((i = 0; i < 400; i++)); do [ "$(grep -c '\] started$' "$log")" -ge 3 ] && break; sleep 0.05; done
agent=$(agent_of n2 lost-unconfirmed)
kill -STOP "$agent"
wait "$pid"; rc=$?
kill -KILL "$agent" 2>/dev/null
expect_eq "lost node, save not confirmed: requeue" 81 "$rc"
expect_eq "lost node, save not confirmed: an error, n0 and n1 named" "error 81 ['n0', 'n1']" \
	"$(report "$rep" 'r["state"], r["exit_code"], [x["node"] for x in r["checkpoint"]["not_confirmed"]]')"
no_leftovers "after the lost node" lost-unconfirmed

# 5. Refused forms: a clear message and the usage status
"$VIGIL" run --precheck off --ckpt-confirm bogus:x -- true >"$SCRATCH/bad.out" 2>&1; rc=$?
expect_eq "unknown form: usage status" 64 "$rc"
expect_match "unknown form: says which forms" 'file:PATH.*output:REGEX|output:REGEX.*file:PATH' "$(cat "$SCRATCH/bad.out")"
"$VIGIL" run --precheck off --ckpt-confirm 'output:(' -- true >"$SCRATCH/bad2.out" 2>&1; rc=$?
expect_eq "bad regex: usage status" 64 "$rc"
finish
