#!/bin/bash
# Failover on the multi-node test bed (tests/testbed) beyond one lost
# coordinator: the coordinator and its first successor hung at once (five
# nodes: the next in line takes over and names both, and writes the event
# log from then on); a job of two nodes whose coordinator hangs (the
# survivor writes the report and the exclude list, and ends as soon as
# its training has); and a node cut off from everyone that is not the
# successor (its training saves before MPI is tried, and its record says
# so).  vigil run --resume with --heartbeat 0.5 --heartbeat-timeout 1.5.
# Needs root; skips (77) without it, which the CI script counts as a
# failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
export TB_TIMEOUT=90
hb="--heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1 --tag-output"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

kinds() {  # the kinds of the events in FILE, in order, one line
	python3 -c 'import json,sys
print(" ".join(json.loads(l)["kind"] + ":" + json.loads(l)["node"] for l in open(sys.argv[1])))' "$1"
}
# stop_job: mpirun waits on the stopped agents: end it
stop_job() {
	local p
	for p in "$@"; do kill -KILL "$p" 2>/dev/null; done
	( sleep 20; kill -TERM "$job" 2>/dev/null; sleep 5; kill -KILL "$job" 2>/dev/null ) &
	local guard=$!
	wait "$job"
	kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
}

# 1. The coordinator (n1) and its first successor (n2) hang together: n3,
#    next in line, hears n4 and n5 (3 of 5), waits n2's turn, takes over,
#    and names n1 and n2 in the report, the exclude list and the event
#    log, which it appends to from then on.
tb_up 5 || { fail "test bed"; finish; }
CASE_NODES=5 start_case twohung
a1=$(pid_in n1 vigil); a2=$(pid_in n2 vigil)
kill -STOP "$a1" "$a2"
if wait_for "$rep" . 30; then pass "two hung: a report"; else fail "two hung: no report"; fi
expect_eq "two hung: n1 and n2 named" "81 ['n1', 'n2']" \
	"$(report "$rep" 'r["exit_code"], r["faulty_nodes"]' 2>/dev/null)"
expect_eq "two hung: the exclude list" "n1 n2" "$(paste -sd' ' "$excl" 2>/dev/null)"
expect_match "two hung: n3 took over" 'n3 \(rank 2\) takes over as the coordinator' "$(cat "$log")"
expect_match "two hung: the successor's events" \
	'node_lost:n1 node_lost:n2 checkpoint:n3 .*job:n3' "$(kinds "$ev")"
expect_eq "two hung: n3, n4, n5 saved once" "1 1 1" "$(saved n3) $(saved n4) $(saved n5)"
stop_job "$a1" "$a2"
tb_down >/dev/null 2>&1

# 2. Two nodes, the coordinator hangs: n2 has nobody to ask; it names n1
#    in the report and the exclude list, and ends once its training has
#    (not the grace, 10 s, after it).
tb_up 2 || { fail "test bed"; finish; }
CASE_NODES=2 CASE_GRACE=10 start_case pair
a1=$(pid_in n1 vigil)
t0=$(date +%s%3N)
kill -STOP "$a1"
if wait_for "$rep" . 20; then pass "pair: a report"; else fail "pair: no report"; fi
expect_eq "pair: n1 named" "81 ['n1']" "$(report "$rep" 'r["exit_code"], r["faulty_nodes"]' 2>/dev/null)"
expect_eq "pair: the exclude list" n1 "$(cat "$excl" 2>/dev/null)"
expect_eq "pair: n2 saved once" 1 "$(saved n2)"
for ((i = 0; i < 200; i++)); do [ -z "$(pid_in n2 vigil)" ] && break; sleep 0.1; done
ms=$(( $(date +%s%3N) - t0 ))
if [ -z "$(pid_in n2 vigil)" ] && [ "$ms" -lt 9000 ]; then pass "pair: n2 ended after ${ms} ms"
else fail "pair: n2 still there after ${ms} ms"; fi
expect_no_match "pair: nobody says no successor took over" 'no successor took over' "$(cat "$log")"
expect_match "pair: the successor's events" 'node_lost:n1 checkpoint:n2 .*job:n2' "$(kinds "$ev")"
stop_job "$a1"
tb_down >/dev/null 2>&1

# 3. n3, not the successor, is cut off (its management NIC down): the
#    coordinator names n3; n3's training saves before its agent tries MPI
#    (which Open MPI may abort it for), and its record says so.
tb_up 3 || { fail "test bed"; finish; }
CASE_NODES=3 start_case cutoff
tb_exec n3 ip link set eth0 down
if wait_for "$rep" . 20; then pass "cut off: a report"; else fail "cut off: no report"; fi
expect_eq "cut off: n3 named" "81 ['n3']" "$(report "$rep" 'r["exit_code"], r["faulty_nodes"]' 2>/dev/null)"
wait_for "$rep.n3" . 20
for ((i = 0; i < 100; i++)); do [ -n "$(find "$ck/n3" -type f 2>/dev/null)" ] && break; sleep 0.1; done
# (its output cannot reach mpirun: the checkpoint file is the evidence)
expect_eq "cut off: n3's training saved" 1 "$(find "$ck/n3" -type f 2>/dev/null | wc -l)"
sleep 3  # the agent tried MPI, or gave up: the record is what it left
echo "n3's record: $(report "$rep.n3" 'r["reason"]' 2>/dev/null)"
expect_eq "cut off: n3's record" "81 error" "$(report "$rep.n3" 'r["exit_code"], r["state"]' 2>/dev/null)"
expect_match "cut off: the record says what happened" \
	'fell silent.*(telling|told) n2 \(rank 1\).*|fell silent.*may be the one cut off' \
	"$(report "$rep.n3" 'r["reason"]' 2>/dev/null)"
stop_job
tb_exec n3 ip link set eth0 up
tb_down || fail "test bed left something behind"
finish
