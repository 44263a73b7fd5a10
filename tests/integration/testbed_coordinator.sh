#!/bin/bash
# The coordinator's own troubles, and agents that die, on the multi-node
# test bed (tests/testbed): three nodes, rank 0 (the coordinator) on n1,
# vigil run --resume with fast heartbeats.  Each case asserts who is
# blamed, which trainings save (exactly once), the status, what is
# written (report, exclude list, records REPORT.NODE) and that nothing of
# the job is left on any node.  Needs root; skips (77) without it, which
# the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
export TB_TIMEOUT=90
tb_up 3 || { fail "test bed"; finish; }
hb="--heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1 --tag-output"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

# gone NODE COMM SECONDS: NODE has no COMM process within SECONDS
gone() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do [ -z "$(pid_in "$1" "$2")" ] && return 0; sleep 0.1; done
	return 1
}
# end_job SECONDS: wait for mpirun, killing it after SECONDS (a node it
# cannot reach may hang it; the batch script bounds that wait the same way)
end_job() {
	( sleep "$1"; kill -TERM "$job" 2>/dev/null; sleep 5; kill -KILL "$job" 2>/dev/null ) &
	local guard=$!
	wait "$job"; rc=$?
	kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
}
# report_within NAME MS: the report is written within MS of $t0 (epoch ms)
report_within() {
	local i ms
	for ((i = 0; i < 300; i++)); do [ -s "$rep" ] && break; sleep 0.1; done
	ms=$(( $(date +%s%3N) - t0 ))
	if [ -s "$rep" ] && [ "$ms" -le "$2" ]; then pass "$1: report after ${ms} ms"
	else fail "$1: no report within ${ms} ms"; fi
}
clean_bed() {
	if bed_empty; then pass "$1: nothing left"
	else fail "$1: processes left"; tb_down >/dev/null 2>&1; tb_up 3 || finish; fi
}

# 1. The coordinator is stopped for 2.5 s (a stall: swap, a starved CPU),
#    under the nodes' 2 x 2 s patience for it: nobody is blamed, the job
#    goes on, and ends as the batch system asks (SIGUSR1, once each).
hb="--heartbeat 0.5 --heartbeat-timeout 2 --inspect-interval 1 --tag-output"
start_case pause
coord=$(pid_in n1 vigil)
sleep 1
kill -STOP "$coord"; sleep 2.5; kill -CONT "$coord"
sleep 4
kill -USR1 "$(pgrep -f "^[^ ]*mpirun .*--report $rep" | head -1)"
end_job 40
expect_eq "pause: requeue on the signal" 81 "$rc"
expect_eq "pause: nobody lost, nobody faulty" "stopped []" "$(report "$rep" 'r["state"], r["faulty_nodes"]')"
expect_eq "pause: no node_lost event" 0 "$(grep -c '"kind":"node_lost"' "$ev")"
expect_match "pause: the stall is on record" '"kind":"stall".*stalled for' "$(cat "$ev")"
expect_eq "pause: every training saved once" "1 1 1" "$(saved n1) $(saved n2) $(saved n3)"
clean_bed pause
hb="--heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1 --tag-output"

# 2. The coordinator's agent is stopped for good: every other node saves
#    on its own after twice the timeout, the successor (n2) takes over with
#    n3's word and writes the report and exclude list naming n1.
start_case stop
coord=$(pid_in n1 vigil)
t0=$(date +%s%3N)
kill -STOP "$coord"
report_within "coordinator stopped" 15000
expect_eq "coordinator stopped: requeue, n1 named" "error 81 ['n1']" \
	"$(report "$rep" 'r["state"], r["exit_code"], r["faulty_nodes"]')"
expect_match "coordinator stopped: why" 'coordinator n1 \(rank 0\) fell silent.*2 of 3 nodes' \
	"$(report "$rep" 'r["reason"]')"
expect_eq "coordinator stopped: n1 excluded" n1 "$(cat "$SCRATCH/stop.exclude")"
expect_eq "coordinator stopped: n2 and n3 saved once" "1 1" "$(saved n2) $(saved n3)"
expect_eq "coordinator stopped: their checkpoints" 2 "$(find "$ck/n2" "$ck/n3" -type f | wc -l)"
expect_match "coordinator stopped: n2 took over" 'n2 \(rank 1\) takes over as the coordinator' "$(cat "$log")"
end_job 30
kill -KILL "$coord" 2>/dev/null
# (n3's word that it is done goes to n2, which took over, not to n1)
expect_no_match "coordinator stopped: every node said it was done" 'did not say they were done' \
	"$(cat "$log")"
clean_bed "coordinator stopped"

# 2b. The same, with the successor late to notice (its agent stalls for
#    1.5 s just before the coordinator's timeout, as on a loaded machine):
#    n3 loses the coordinator first, saves, and its result reaches n2
#    before n2 lost the coordinator itself.  n2 keeps it: n3 is not
#    blamed, and the report does not wait for n3's 20 s deadline.
start_case late
coord=$(pid_in n1 vigil); succ=$(pid_in n2 vigil)
t0=$(date +%s%3N)
kill -STOP "$coord"; sleep 2; kill -STOP "$succ"; sleep 1.5; kill -CONT "$succ"
report_within "successor late" 15000
expect_eq "successor late: requeue, only n1 named" "81 ['n1']" \
	"$(report "$rep" 'r["exit_code"], r["faulty_nodes"]')"
expect_eq "successor late: n2 and n3 saved once" "1 1" "$(saved n2) $(saved n3)"
end_job 30
kill -KILL "$coord" 2>/dev/null
clean_bed "successor late"

# 3. The coordinator's management NIC goes down: it hears nobody, names
#    itself and saves its own training; n2 and n3, a majority, name it too.
#    Nobody healthy is blamed.
start_case coordnet
tb_exec n1 ip link set eth0 down
for ((i = 0; i < 300; i++)); do [ -s "$rep" ] && break; sleep 0.1; done
sleep 8  # both the cut-off coordinator and the successor have written
expect_eq "coordinator cut off: requeue, only n1 named" "81 ['n1']" \
	"$(report "$rep" 'r["exit_code"], r["faulty_nodes"]')"
expect_eq "coordinator cut off: n1 excluded" n1 "$(cat "$SCRATCH/coordnet.exclude")"
expect_eq "coordinator cut off: every training saved" 3 "$(find "$ck" -mindepth 2 -type f | wc -l)"
expect_eq "coordinator cut off: n2 and n3 saved once" "1 1" "$(saved n2) $(saved n3)"
if gone n1 vigil 30; then pass "coordinator cut off: its agent ended on its own"
else fail "coordinator cut off: its agent still runs"; fi
end_job 20
tb_exec n1 ip link set eth0 up
tb_down >/dev/null 2>&1; tb_up 3 || { fail "test bed again"; finish; }

# 4. n2, the successor, is cut off (its management NIC down): the
#    coordinator names n2; n2 fences itself (its training saves, it takes
#    nothing over, its record says it may be the one cut off, it ends).
start_case succnet
tb_exec n2 ip link set eth0 down
for ((i = 0; i < 300; i++)); do [ -s "$rep" ] && break; sleep 0.1; done
expect_eq "successor cut off: requeue, only n2 named" "81 ['n2']" \
	"$(report "$rep" 'r["exit_code"], r["faulty_nodes"]')"
if gone n2 vigil 45; then pass "successor cut off: its agent ended on its own"
else fail "successor cut off: its agent still runs"; fi
expect_eq "successor cut off: its training saved" 1 "$(find "$ck/n2" -type f | wc -l)"
expect_eq "successor cut off: its record" "81 error" "$(report "$rep.n2" 'r["exit_code"], r["state"]')"
expect_match "successor cut off: the record says why" 'fell silent.*may be the one cut off' \
	"$(report "$rep.n2" 'r["reason"]')"
expect_eq "successor cut off: the report still names only n2" "['n2']" "$(report "$rep" 'r["faulty_nodes"]')"
end_job 20
tb_exec n2 ip link set eth0 up
tb_down >/dev/null 2>&1; tb_up 3 || { fail "test bed again"; finish; }

# 5. An agent dies (SIGKILL, as the OOM killer does) under mpirun
#    --enable-recovery, which keeps the job alive: n3 is lost after the
#    heartbeat timeout, the others save, the report names n3.
MPIRUN_OPTS="--enable-recovery" start_case agentkill
kill -KILL "$(pid_in n3 vigil)"
end_job 40
expect_eq "agent killed (recovery): requeue, n3 named" "error 81 ['n3']" \
	"$(report "$rep" 'r["state"], r["exit_code"], r["faulty_nodes"]')"
expect_eq "agent killed (recovery): n1 and n2 saved once" "1 1" "$(saved n1) $(saved n2)"
expect_eq "agent killed (recovery): n3 excluded" n3 "$(cat "$SCRATCH/agentkill.exclude")"
clean_bed "agent killed (recovery)"

# 5b. The coordinator's own agent dies (SIGKILL) under --enable-recovery:
#    its training dies with it (the keeper), the others lose the
#    coordinator, n2 takes over with n3's word, both save once, and the
#    report and exclude list name n1.
MPIRUN_OPTS="--enable-recovery" start_case coordkill
t0=$(date +%s%3N)
kill -KILL "$(pid_in n1 vigil)"
report_within "coordinator killed" 15000
end_job 40
expect_eq "coordinator killed: requeue, n1 named" "error 81 ['n1']" \
	"$(report "$rep" 'r["state"], r["exit_code"], r["faulty_nodes"]')"
expect_eq "coordinator killed: n2 and n3 saved once" "1 1" "$(saved n2) $(saved n3)"
expect_eq "coordinator killed: n1 excluded" n1 "$(cat "$SCRATCH/coordkill.exclude")"
expect_match "coordinator killed: n2 took over" 'n2 \(rank 1\) takes over as the coordinator' "$(cat "$log")"
clean_bed "coordinator killed"

# 6. The same without recovery: mpirun ends the job (SIGTERM to every
#    agent, SIGKILL after odls_base_sigkill_timeout).  Under --resume each
#    agent first gives its training the checkpoint signal, and says why it
#    ended in its record when no report comes.
# (odls_base_sigkill_timeout is Open MPI's TERM-to-KILL delay for the
# agents; mpirun itself runs as every tb_mpirun does, under timeout -k and
# mpirun-bounded, so a deadlocked one is killed)
sigkill_after="--mca odls_base_sigkill_timeout 10"  # Open MPI's delay for the agents
MPIRUN_OPTS=$sigkill_after start_case teardown
kill -KILL "$(pid_in n3 vigil)"
end_job 40
expect_eq "teardown: n1 and n2 saved once" "1 1" "$(saved n1) $(saved n2)"
if [ -s "$rep" ]; then
	expect_eq "teardown: the report says requeue" 81 "$(report "$rep" 'r["exit_code"]')"
else
	expect_eq "teardown: the records say requeue" "81 81" \
		"$(report "$rep.n1" 'r["exit_code"]') $(report "$rep.n2" 'r["exit_code"]')"
fi
clean_bed teardown

# 7. Under --resume a crashed training is a fault: the others get the
#    checkpoint signal, not SIGTERM; n2 is excluded.
start_case crash
kill -KILL "$(pid_in n2 python3)"
end_job 40
expect_eq "crash: requeue" 81 "$rc"
expect_eq "crash: n1 and n3 saved once, nobody got TERM" "1 1 0" \
	"$(saved n1) $(saved n3) $(grep -c 'signal SIGTERM$' "$log")"
expect_eq "crash: n2 excluded" n2 "$(cat "$SCRATCH/crash.exclude")"
clean_bed crash

tb_down || fail "test bed left something behind"
finish
