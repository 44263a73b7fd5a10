#!/bin/bash
# Resilience on one machine, 3 or 4 agents under mpirun: checkpoint on the
# batch system's signal, a hung (stopped) node lost by heartbeat, the time
# limit, fault restart, inspection faults on per-node sysfs trees (a NIC
# down, a board gone), elastic start, resumes exhausted, hold on failure.
# The network faults proper (a NIC of a real namespace going down) are in
# testbed_faults.sh.
. "$(dirname "$0")/lib.sh"

ck="$SCRATCH/ck"
# (background runs call mpirun itself, so that $! is mpirun)
MPI="${MPIRUN:-mpirun} --oversubscribe --bind-to none"
mpi() { $MPI "$@"; }

# 1. The batch system's checkpoint signal (Slurm --signal, forwarded by
#    mpirun to every agent): every training saves exactly once, the job
#    exits 81 for the requeue.
log="$SCRATCH/usr1.out"
$MPI -np 3 "$VIGIL" run --precheck off --resume --report "$SCRATCH/usr1.json" -- \
	"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.usr1" >"$log" 2>&1 &
pid=$!
wait_ready "$log" 3 || fail "usr1: not ready"
kill -USR1 "$pid"
wait "$pid"; rc=$?
expect_eq "checkpoint signal: requeue code" 81 "$rc"
expect_eq "every training got SIGUSR1 once" 3 "$(grep -c '^signal SIGUSR1$' "$log")"
expect_eq "every training saved" 3 "$(grep -c '^checkpoint saved at iteration' "$log")"
expect_eq "report" "stopped 81" "$(report "$SCRATCH/usr1.json" 'r["state"], r["exit_code"]')"
no_leftovers "after the checkpoint signal" "$ck.usr1"

# 2. A hung node (its agent stopped): lost by heartbeat within the timeout,
#    the others checkpoint, requeue, the node is named for --exclude.
log="$SCRATCH/stop.out"
start=$(date +%s%N)
$MPI -np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" run --precheck off --resume --heartbeat 0.5 \
	--heartbeat-timeout 1.5 --grace 3 --exclude-file "$SCRATCH/exclude" --report "$SCRATCH/stop.json" \
	--events "$SCRATCH/stop.jsonl" --tag-output -- "$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.stop" : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" run --precheck off --resume --heartbeat 0.5 \
	--heartbeat-timeout 1.5 --grace 3 --tag-output -- "$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.stop" : \
	-np 1 env VIGIL_NODE_NAME=n2 "$VIGIL" run --precheck off --resume --heartbeat 0.5 \
	--heartbeat-timeout 1.5 --grace 3 --tag-output -- "$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.stop" \
	>"$log" 2>&1 &
pid=$!
wait_ready "$log" 3 || fail "stop: not ready"
agent=$(agent_of n2 "$ck.stop")
t0=$(date +%s%N)
kill -STOP "$agent"
# (the stopped agent is left stopped: mpirun's SIGKILL ends it, and its
# training with it)
wait "$pid"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -KILL "$agent" 2>/dev/null
expect_eq "lost node: requeue code" 81 "$rc"
if [ "$ms" -lt 15000 ]; then pass "lost node: job ended ${ms} ms after the stop"; else fail "lost node took ${ms} ms"; fi
expect_eq "lost node in the exclude list" n2 "$(cat "$SCRATCH/exclude")"
# (the lost node's agent, continued by mpirun's teardown, passes mpirun's
# SIGTERM on later as the checkpoint signal too (--resume): only the
# healthy nodes' count here, once each)
expect_eq "n0 got the checkpoint signal once" 1 "$(grep -c '^\[n0:0\] signal SIGUSR1$' "$log")"
expect_eq "n1 got the checkpoint signal once" 1 "$(grep -c '^\[n1:1\] signal SIGUSR1$' "$log")"
lost_ms=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
lost = [e for e in ev if e["kind"] == "node_lost"]
print(lost[0]["node"], round(lost[0]["details"]["silent_s"], 1) <= 2.5)' "$SCRATCH/stop.jsonl")
expect_eq "node_lost event for n2 within 2.5 s of silence" "n2 True" "$lost_ms"
expect_eq "report names n2" "error 81 ['n2']" "$(report "$SCRATCH/stop.json" 'r["state"], r["exit_code"], r["faulty_nodes"]')"
sleep 1
no_leftovers "after the lost node" "$ck.stop"

# 2a. The same with --min-nodes 2: the training goes on on n0 and n1 and
#     finishes; vigil decided the job succeeded, and mpirun says so too
#     (the coordinator ends the job with MPI_Abort(0): a rank that leaves
#     without MPI_Finalize would otherwise make it exit 1), killing the
#     stopped agent on its way.
log="$SCRATCH/elastic-stop.out"
args=""
for i in 0 1 2; do
	args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --precheck off --min-nodes 2 --heartbeat 0.5 --heartbeat-timeout 1.5 --grace 5 --report $SCRATCH/elastic-stop.json --exclude-file $SCRATCH/elastic-stop.excl --tag-output -- sh -c 'exec $SIM --iters 200 --iter-ms 50 --ckpt-dir $ck.es\$RANK'"
done
eval "timeout -k 5 90 $MPI $args" >"$log" 2>&1 &
pid=$!
wait_ready "$log" 3 || fail "elastic stop: not ready"
agent=$(agent_of n2 "$ck.es")
kill -STOP "$agent"
wait "$pid"; rc=$?
kill -KILL "$agent" 2>/dev/null
expect_eq "elastic stop: mpirun returns vigil's status" 0 "$rc"
expect_match "elastic stop: vigil said so" 'succeeded on 2 of 3 nodes' "$(cat "$log")"
expect_eq "elastic stop: report" "succeeded 0" "$(report "$SCRATCH/elastic-stop.json" 'r["state"], r["exit_code"]')"
expect_eq "elastic stop: n2 in the exclude list" n2 "$(cat "$SCRATCH/elastic-stop.excl")"
expect_no_match "elastic stop: no 'exiting improperly'" 'exiting improperly' "$(cat "$log")"
expect_no_match "elastic stop: every node said it was done" 'did not say they were done' "$(cat "$log")"
expect_eq "elastic stop: n0 and n1 finished" 2 "$(grep -cE '^\[n[01]:[01]\] done$' "$log")"
sleep 1
no_leftovers "after the elastic stop" "$ck.es"

# 2b. A job of two nodes whose coordinator's agent stops: n1 loses it and,
#     with nobody else to ask, takes over at once: its training saves
#     once, it writes the report naming n0 (its record gives way to it) and
#     ends as soon as its training has, with the requeue code.
log="$SCRATCH/two.out"
$MPI -np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" run --precheck off --resume --heartbeat 0.5 \
	--heartbeat-timeout 1.5 --grace 10 --report "$SCRATCH/two.json" --tag-output -- \
	"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.two" : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" run --precheck off --resume --heartbeat 0.5 \
	--heartbeat-timeout 1.5 --grace 10 --report "$SCRATCH/two.json" --tag-output -- \
	"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.two" >"$log" 2>&1 &
pid=$!
wait_ready "$log" 2 || fail "two nodes: not ready"
agent=$(agent_of n0 "$ck.two")
t0=$(date +%s%N)
kill -STOP "$agent"
wait_for "$SCRATCH/two.json" . 15 || fail "two nodes: no report from n1"
expect_eq "two nodes, coordinator stopped: n1's report names n0" "error 81 ['n0']" \
	"$(report "$SCRATCH/two.json" 'r["state"], r["exit_code"], r["faulty_nodes"]')"
wait "$pid"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -KILL "$agent" 2>/dev/null
expect_eq "two nodes, coordinator stopped: requeue code" 81 "$rc"
# (lost after 3 s, saved at once; the grace, 10 s, is not waited for)
if [ "$ms" -lt 9000 ]; then pass "two nodes: job ended ${ms} ms after the stop"
else fail "two nodes: job ended ${ms} ms after the stop"; fi
expect_eq "two nodes: n1 got the checkpoint signal once" 1 "$(grep -c '^\[n1:1\] signal SIGUSR1$' "$log")"
expect_match "two nodes: n1 took over" 'n1 \(rank 1\) takes over as the coordinator' "$(cat "$log")"
expect_eq "two nodes: the report stands, no record" no "$([ -e "$SCRATCH/two.json.n1" ] && echo yes || echo no)"
no_leftovers "after the two-node stop" "$ck.two"

# 3. The time limit: checkpoint --ckpt-lead seconds before it, state expired.
#    Timed by vigil's own events: the limit counts from vigil's start, and
#    mpirun's own start and end (seconds on a loaded machine) are not vigil's.
log="$SCRATCH/limit.out"
mpi -np 2 "$VIGIL" run --precheck off --resume --time-limit 6s --ckpt-lead 3 --report "$SCRATCH/limit.json" \
	--events "$SCRATCH/limit.jsonl" -- "$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.limit" >"$log" 2>&1; rc=$?
expect_eq "time limit: expired code" 83 "$rc"
expect_eq "report: expired" "expired 83" "$(report "$SCRATCH/limit.json" 'r["state"], r["exit_code"]')"
expect_eq "both saved" 2 "$(grep -c '^checkpoint saved at iteration' "$log")"
launch=$(event_us "$SCRATCH/limit.jsonl" launch)
ckpt=$(event_us "$SCRATCH/limit.jsonl" checkpoint)
ended=$(event_us "$SCRATCH/limit.jsonl" job)
ms=$(( (${ckpt:-0} - ${launch:-0}) / 1000 ))
# (vigil starts before the training: the signal comes at most 3 s after the launch)
if [ "$ms" -ge 1500 ] && [ "$ms" -le 3100 ]; then pass "checkpointed ~3 s in (${ms} ms after the launch)"
else fail "time limit: checkpoint ${ms} ms after the launch"; fi
ms=$(( (${ended:-0} - ${ckpt:-0}) / 1000 ))
# (the limit itself is 3 s after the signal: the job must not wait for it)
if [ "$ms" -ge 0 ] && [ "$ms" -lt 2000 ]; then pass "time limit: ended ${ms} ms after the save was asked"
else fail "time limit: ended ${ms} ms after the checkpoint"; fi
# SLURM_JOB_END_TIME stands in for --time-limit
end=$(( $(date +%s) + 5 ))
SLURM_JOB_END_TIME=$end mpi -np 2 "$VIGIL" run --precheck off --resume --ckpt-lead 3 -- \
	"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.limit2" >/dev/null 2>&1; rc=$?
expect_eq "SLURM_JOB_END_TIME: expired code" 83 "$rc"

# 4. Resumes exhausted: do not requeue.
log="$SCRATCH/max.out"
SLURM_RESTART_COUNT=2 $MPI -np 2 "$VIGIL" run --precheck off --resume --max-resumes 2 -- \
	"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.max" >"$log" 2>&1 &
pid=$!
wait_ready "$log" 2; kill -USR1 "$pid"; wait "$pid"; rc=$?
expect_eq "resumes exhausted: do-not-requeue code" 82 "$rc"
# the state file counts where Slurm does not
printf '{"resumes": 0}\n' > "$SCRATCH/state.json"
$MPI -np 2 "$VIGIL" run --precheck off --resume --max-resumes 1 --state "$SCRATCH/state.json" -- \
	"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$ck.max2" >"$log.2" 2>&1 &
pid=$!
wait_ready "$log.2" 2; kill -USR1 "$pid"; wait "$pid"; rc=$?
expect_eq "first resume: requeue" 81 "$rc"
expect_match "state file counts it" '"resumes": 1' "$(cat "$SCRATCH/state.json")"

# 5. Fault restart: node 1's training crashes every time; with --restart 2
#    it runs three times everywhere, then the job ends with its status.
#    Node 1 crashes once the other two said which attempt they run (a
#    training ended before it printed a word would say nothing).
log="$SCRATCH/restart.out"
started='[ $(grep -c "^rank [02] of 3 restart $VIGIL_RESTART_COUNT\$" '"$log"') -ge 2 ]'
mpi -np 3 "$VIGIL" run --precheck off --restart 2 --grace 2 --report "$SCRATCH/restart.json" -- \
	sh -c "if [ \"\$RANK\" = 1 ]; then for i in \$(seq 400); do $started && break; sleep 0.05; done; exec $SIM --iters 100000 --iter-ms 10 --crash-at 5 --crash-code 9 --ckpt-dir $ck.rs\$RANK; else exec $SIM --iters 100000 --iter-ms 10 --ckpt-dir $ck.rs\$RANK; fi" \
	>"$log" 2>&1; rc=$?
expect_eq "restarts exhausted: the crash's status" 9 "$rc"
expect_eq "three attempts on every node" "0 0 0 1 1 1 2 2 2" "$(sed -n 's/^rank [0-9] of 3 restart \([0-9]\)$/\1/p' "$log" | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "report lists the attempts" "error 9 2 2" "$(report "$SCRATCH/restart.json" 'r["state"], r["exit_code"], r["restarts"], len(r["attempts"])')"
out=$("$VIGIL" run --resume --restart 1 -- true 2>&1); rc=$?
expect_eq "--resume with --restart is refused" 64 "$rc"
expect_match "and says why" 'exclude each other' "$out"

# 6. Inspection on per-node sysfs trees: the fabric NIC of n2 goes down
#    during training -> fault event, every node checkpoints, requeue, n2
#    excluded.  Then a board falls off the bus on n1.
for fault in nic board; do
	for i in 0 1 2; do rm -rf "$SCRATCH/r$fault$i"; make_root "$SCRATCH/r$fault$i"; done
	log="$SCRATCH/insp-$fault.out"
	args=""
	for i in 0 1 2; do
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --resume --inspect-interval 1 --grace 3 --sysfs-root $SCRATCH/r$fault$i $(pascal_flags) --exclude-file $SCRATCH/excl-$fault --events $SCRATCH/insp-$fault.jsonl -- $SIM --iters 100000 --iter-ms 20 --ckpt-dir $ck.insp$fault"
	done
	$MPI $args >"$log" 2>&1 &
	pid=$!
	wait_ready "$log" 3 || fail "inspection $fault: not ready"
	t0=$(date +%s%N)
	if [ $fault = nic ]; then
		echo down > "$SCRATCH/rnic2/sys/class/net/eth1/operstate"; bad=n2
	else
		rm -rf "$SCRATCH/rboard1/sys/bus/pci/devices/0000:07:00.0"; bad=n1
	fi
	wait "$pid"; rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "inspection $fault: requeue" 81 "$rc"
	expect_eq "inspection $fault: $bad excluded" "$bad" "$(cat "$SCRATCH/excl-$fault")"
	expect_eq "inspection $fault: every training saved once" 3 "$(grep -c '^checkpoint saved at iteration' "$log")"
	expect_match "inspection $fault: fault event names node and device" \
		"\"kind\":\"fault\".*\"node\":\"$bad\"|\"node\":\"$bad\".*\"kind\":\"fault\"" "$(cat "$SCRATCH/insp-$fault.jsonl")"
	if [ "$ms" -lt 10000 ]; then pass "inspection $fault: ended ${ms} ms after the fault"; else fail "inspection $fault: ${ms} ms"; fi
done

# 7. Elastic start: one of three nodes fails the pre-check; with
#    --min-nodes 2 the training runs on the other two (WORLD_SIZE 2).
for i in 0 1 2; do rm -rf "$SCRATCH/re$i"; make_root "$SCRATCH/re$i"; done
echo down > "$SCRATCH/re1/sys/class/net/eth1/operstate"
args=""
for i in 0 1 2; do
	args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --min-nodes 2 --sysfs-root $SCRATCH/re$i $(pascal_flags) -- sh -c 'echo \"env \$RANK \$WORLD_SIZE\"'"
done
out=$(eval mpi $args 2>"$SCRATCH/elastic.err"); rc=$?
expect_eq "elastic start exit" 0 "$rc"
expect_eq "two trainings with WORLD_SIZE 2" "env 0 2,env 1 2" "$(printf '%s\n' "$out" | grep '^env' | sort | paste -sd,)"
expect_match "elastic start said so" 'starting on the 2 healthy nodes' "$(cat "$SCRATCH/elastic.err")"
for i in 0 1 2; do args="${args//--min-nodes 2/--min-nodes 3 --report $SCRATCH/nogo.json}"; done
out=$(eval mpi $args 2>&1); rc=$?
expect_eq "below --min-nodes: no-go" 80 "$rc"
# the report: nothing trained; n1's pre-check failed, the others never started
expect_eq "no-go report" "error 80 0 not_started unhealthy not_started" \
	"$(report "$SCRATCH/nogo.json" 'r["state"], r["exit_code"], r["nodes_trained"], *[n["state"] for n in r["nodes"]]')"

# 7b. Elastic while running: with --min-nodes 2, the fabric NIC of n2 goes
#     down mid-run; every training saves, and the training starts again on
#     n0 and n1 only (WORLD_SIZE 2, VIGIL_RESTART_COUNT 1), resumes from its
#     checkpoint and finishes: the job succeeds.
for i in 0 1 2; do rm -rf "$SCRATCH/rl$i"; make_root "$SCRATCH/rl$i"; done
log="$SCRATCH/elastic-run.out"
args=""
for i in 0 1 2; do
	args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --min-nodes 2 --inspect-interval 1 --grace 5 --sysfs-root $SCRATCH/rl$i $(pascal_flags) --events $SCRATCH/elastic-run.jsonl -- sh -c 'exec $SIM --iters 60 --iter-ms 50 --ckpt-dir $ck.el\$RANK'"
done
eval "$MPI $args" >"$log" 2>&1 &
pid=$!
wait_ready "$log" 3 || fail "elastic run: not ready"
echo down > "$SCRATCH/rl2/sys/class/net/eth1/operstate"
wait "$pid"; rc=$?
expect_eq "elastic run: the job succeeds on the healthy nodes" 0 "$rc"
expect_eq "elastic run: every training saved" 3 "$(grep -c '^checkpoint saved at iteration' "$log")"
expect_eq "elastic run: restarted on two nodes" "rank 0 of 2 restart 1,rank 1 of 2 restart 1" \
	"$(grep '^rank [0-9] of 2 restart 1$' "$log" | sort | paste -sd,)"
expect_eq "elastic run: both resumed from their checkpoint" 2 "$(grep -c '^resumed from iteration' "$log")"
expect_match "elastic run: restart event" '"kind":"restart"' "$(cat "$SCRATCH/elastic-run.jsonl")"

# 8. Hold on failure: the allocation is kept, and the failed node named.
start=$(date +%s%N)
out=$(mpi -np 2 "$VIGIL" run --precheck off --hold-on-failure 3 -- sh -c 'exit 4' 2>&1); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "hold: the job's status" 4 "$rc"
expect_match "hold: says how to reach the node" 'holding the allocation for 3 s' "$out"
if [ "$ms" -ge 3000 ]; then pass "held ${ms} ms"; else fail "held only ${ms} ms"; fi

finish
