#!/bin/bash
# Fault injection on the multi-node test bed (tests/testbed): three real
# nodes (network and UTS namespaces, each with its hostname, a management
# NIC eth0 for MPI and a fabric NIC eth1), vigil run --resume with
# --heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1.  Each case
# asserts the outcome, the events, the exit code and the timing.  Needs
# root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
export TB_TIMEOUT=90
tb_up 3 || { fail "test bed"; finish; }

hb="--heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1 --tag-output"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

# 1. The fabric NIC of node 2 goes down: fault event naming n2 and eth1
#    within one inspection interval (+ messaging), every training saves once,
#    requeue, n2 excluded.
start_case fabric --nic eth1
t0=$(date +%s%3N)
tb_exec n2 ip link set eth1 down
wait "$job"; rc=$?
expect_eq "fabric NIC down: requeue" 81 "$rc"
expect_match "fault event names n2 and eth1" '"kind":"fault".*"node":"n2".*eth1|"node":"n2".*"kind":"fault".*eth1' "$(cat "$ev")"
d=$(event_after_ms "$ev" fault "$t0")
if [ -n "$d" ] && [ "$d" -le 2000 ]; then pass "fault seen after ${d} ms"; else fail "fault seen after ${d:-never} ms"; fi
expect_eq "every training got SIGUSR1 once" "1 1 1" "$(saved n1) $(saved n2) $(saved n3)"
expect_eq "three checkpoint files" 3 "$(find "$ck" -mindepth 2 -type f | wc -l)"
expect_eq "n2 in the exclude list" n2 "$(cat "$SCRATCH/fabric.exclude")"
bed_empty && pass "fabric: nothing left" || fail "fabric: processes left"
tb_exec n2 ip link set eth1 up

# 2. The management NIC of node 2 goes down: mpirun notices nothing; the
#    heartbeat does.  The others checkpoint, the report and the requeue
#    decision are written, and the test ends within a bound.
start_case mgmt
t0=$(date +%s%3N)
tb_exec n2 ip link set eth0 down
for ((i = 0; i < 300; i++)); do [ -s "$rep" ] && break; sleep 0.1; done
d=$(event_after_ms "$ev" node_lost "$t0")
if [ -n "$d" ] && [ "$d" -le 2500 ]; then pass "mgmt: n2 lost after ${d} ms"; else fail "mgmt: lost after ${d:-never} ms"; fi
expect_eq "mgmt: report says requeue, names n2" "81 ['n2']" "$(report "$rep" 'r["exit_code"], r["faulty_nodes"]')"
expect_eq "mgmt: the two reachable trainings saved" "1 1" "$(saved n1) $(saved n3)"
# mpirun may hang on the lost node: the batch script bounds this wait
( sleep 20; kill -TERM "$job" 2>/dev/null; sleep 5; kill -KILL "$job" 2>/dev/null ) & guard=$!
wait "$job"
kill "$guard" 2>/dev/null
tb_exec n2 ip link set eth0 up
tb_down >/dev/null 2>&1; tb_up 3 || { fail "test bed again"; finish; }
pass "mgmt: ended and cleaned up"

# 3. SIGSTOP of node 2's agent: lost within the heartbeat timeout, the
#    others checkpoint, the job ends; nothing hangs.
start_case stop
agent=$(pid_in n2 vigil)
t0=$(date +%s%3N)
kill -STOP "$agent"
( sleep 40; kill -KILL "$job" 2>/dev/null ) & guard=$!
wait "$job"; rc=$?
kill "$guard" 2>/dev/null
d=$(event_after_ms "$ev" node_lost "$t0")
if [ -n "$d" ] && [ "$d" -le 2000 ]; then pass "stopped agent lost after ${d} ms"; else fail "lost after ${d:-never} ms"; fi
expect_eq "stopped agent: requeue" 81 "$(report "$rep" 'r["exit_code"]')"
# (the stopped agent, continued and sent SIGTERM by mpirun's teardown,
# has its training save too under --resume: only the others count here)
expect_eq "stopped agent: the others saved once" "1 1" "$(saved n1) $(saved n3)"
kill -KILL "$agent" 2>/dev/null
bed_empty && pass "stop: nothing left" || { fail "stop: processes left"; tb_down; tb_up 3; }

# 4. SIGKILL of node 2's training with --restart 2: it starts again on
#    every node; the third crash ends the job with error.
ck="$SCRATCH/ck.restart"; log="$SCRATCH/restart.out"; rep="$SCRATCH/restart.json"
tb_mpirun -np 3 "$VIGIL" run $hb --restart 2 --grace 3 --report "$rep" -- \
	sh -c "exec $SIM --iters 1000000 --iter-ms 20 --ckpt-dir $ck/\$(hostname)" >"$log" 2>&1 &
job=$!
for attempt in 1 2 3; do
	wait_ready "$log" $((3 * attempt)) || fail "restart: attempt $attempt not ready"
	pkill -KILL -f -- "--ckpt-dir $ck/n2" 2>/dev/null || kill -KILL "$(pid_in n2 python3)"
done
wait "$job"; rc=$?
expect_eq "third crash: the training's status (SIGKILL)" 137 "$rc"
expect_eq "three attempts on every node" 9 "$(ready_count "$log")"
expect_eq "report: error, 2 restarts" "error 2" "$(report "$rep" 'r["state"], r["restarts"]')"
bed_empty && pass "restart: nothing left" || fail "restart: processes left"

# 5. SIGUSR1 to mpirun: every training gets the checkpoint signal once.
start_case usr1
kill -USR1 "$(pgrep -f "^[^ ]*mpirun .*--report $SCRATCH/usr1.json" | head -1)"
wait "$job"; rc=$?
expect_eq "SIGUSR1: requeue" 81 "$rc"
expect_eq "SIGUSR1 once per training" "1 1 1" "$(saved n1) $(saved n2) $(saved n3)"

# 6. --time-limit 20s --ckpt-lead 5: checkpoint at about 15 s, expired.
t0=$(date +%s%3N)
start_case limit --time-limit 20s --ckpt-lead 5
wait "$job"; rc=$?
expect_eq "time limit: expired" 83 "$rc"
expect_eq "time limit: state" expired "$(report "$rep" 'r["state"]')"
d=$(event_after_ms "$ev" checkpoint "$t0")
if [ -n "$d" ] && [ "$d" -ge 14000 ] && [ "$d" -le 17500 ]; then pass "checkpoint at ${d} ms"
else fail "checkpoint at ${d:-never} ms"; fi

# 7. A slot's PCI device disappears from node 3's sysfs (a fake root per
#    node, read by its agent) mid-run: fault, requeue, n3 excluded.
for k in 1 2 3; do make_root "$SCRATCH/root.n$k"; done
cat > "$SCRATCH/agent.sh" <<SH
#!/bin/sh
# each node's agent reads its own fake sysfs tree
exec "$VIGIL" run --sysfs-root "$SCRATCH/root.\$(hostname)" "\$@"
SH
chmod +x "$SCRATCH/agent.sh"
ck="$SCRATCH/ck.board"; log="$SCRATCH/board.out"; ev="$SCRATCH/board.jsonl"
tb_mpirun -np 3 "$SCRATCH/agent.sh" --resume $hb --grace 5 --events "$ev" $(pascal_flags) \
	--exclude-file "$SCRATCH/board.exclude" -- \
	sh -c "exec $SIM --iters 1000000 --iter-ms 20 --ckpt-dir $ck/\$(hostname)" >"$log" 2>&1 &
job=$!
wait_ready "$log" 3 || fail "board: trainings not ready"
rm -rf "$SCRATCH/root.n3/sys/bus/pci/devices/0000:04:00.0"
wait "$job"; rc=$?
expect_eq "board gone: requeue" 81 "$rc"
expect_eq "board gone: n3 excluded" n3 "$(cat "$SCRATCH/board.exclude")"
expect_match "board gone: fault event" '"kind":"fault".*0000:04:00.0' "$(cat "$ev")"

# 8. --min-nodes 2, one of three nodes fails the pre-check (its fabric NIC
#    down): the training runs on the other two with WORLD_SIZE 2.
tb_exec n3 ip link set eth1 down
out=$(tb_mpirun -np 3 "$VIGIL" run --min-nodes 2 --nic eth1 -- sh -c 'echo "env $(hostname) $RANK $WORLD_SIZE"' 2>"$SCRATCH/elastic.err"); rc=$?
expect_eq "elastic: exit" 0 "$rc"
expect_eq "elastic: n1 and n2 with WORLD_SIZE 2" "env n1 0 2,env n2 1 2" "$(printf '%s\n' "$out" | grep '^env' | sort | paste -sd,)"
tb_exec n3 ip link set eth1 up

tb_down || fail "test bed left something behind"
finish
