#!/bin/bash
# The coordinator's own management link flaps, on the multi-node test bed
# (tests/testbed): four nodes, rank 0 (the coordinator) on n1, vigil run
# --resume with --heartbeat 0.5 --heartbeat-timeout 1.5.  n1's eth0 goes
# down for 2.5 s, 3 s and 5 s, each time at another point of the
# coordinator's heartbeat cycle (counted from the launch event, when the
# cycle starts).  The nodes' heartbeats are spread over the cycle, so they
# cross the timeout one by one while the coordinator hears nobody; however
# the outage falls, only n1 may be named: no healthy node in a node_lost
# event, in the report's faulty nodes, among its lost nodes, or in the
# exclude list, and n1 names itself.  Needs root; skips (77) without it,
# which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
export TB_TIMEOUT=60
tb_up 4 || { fail "test bed"; finish; }
hb="--heartbeat 0.5 --heartbeat-timeout 1.5 --inspect-interval 1 --tag-output"
CASE_NODES=4
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

# sleep_to_phase EVENTS PHASE: sleep until PHASE (0..1) of the 0.5 s cycle
# that began with the launch event, at least 1 s from now
sleep_to_phase() {
	python3 - "$1" "$2" <<'PY'
import datetime, json, sys, time
t0 = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == "launch":
        t = datetime.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        t0 = t.replace(tzinfo=datetime.timezone.utc).timestamp()
        break
if t0 is None:
    sys.exit(1)
period, phase = 0.5, float(sys.argv[2])
now = time.time() + 1
k = int((now - t0) / period) + 1
time.sleep(t0 + (k + phase) * period - time.time())
PY
}

# lost_names FILE: every node a node_lost event names, on one line
lost_names() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["kind"] == "node_lost": print(e["node"])' "$1" | sort -u | paste -sd' '
}

# flap NAME SECONDS PHASE
flap() {
	local name=$1 down=$2 phase=$3 guard
	start_case "$name"
	sleep_to_phase "$ev" "$phase" || fail "$name: no launch event"
	tb_exec n1 ip link set eth0 down
	sleep "$down"
	tb_exec n1 ip link set eth0 up
	( sleep 40; kill -TERM "$job" 2>/dev/null; sleep 5; kill -KILL "$job" 2>/dev/null ) &
	guard=$!
	wait "$job"
	kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
	bed_empty || true  # what every agent wrote, once the last of them is gone
	expect_match "$name: n1 names itself" '^n1' "$(lost_names "$ev")"
	expect_eq "$name: no healthy node in a node_lost event" n1 "$(lost_names "$ev")"
	if [ -s "$rep" ]; then
		expect_eq "$name: the report names only n1" "['n1']" "$(report "$rep" 'r["faulty_nodes"]')"
		expect_eq "$name: no healthy node lost in the report" "[]" \
			"$(report "$rep" '[n["node"] for n in r["nodes"] if n["state"] == "lost" and n["node"] != "n1"]')"
	else
		fail "$name: no report"
	fi
	expect_eq "$name: the exclude list" n1 "$(cat "$excl" 2>/dev/null)"
	tb_down >/dev/null 2>&1
	tb_up 4 || { fail "test bed again"; finish; }
}

flap down2.5 2.5 0.0
flap down3 3 0.35
flap down5 5 0.7
flap down2.5b 2.5 0.85

tb_down || fail "test bed left something behind"
finish
