#!/bin/bash
# Hot spares (--spares 1) on the multi-node test bed (tests/testbed): four
# nodes, three training a real PyTorch DDP job (Debian's python3-torch,
# gloo over the fabric NIC eth1, CPU) that saves on the checkpoint signal
# and resumes from its checkpoint, the fourth waiting as a spare.
#   1. n2's fabric NIC goes down: the trainings save, and the job runs
#      again on n1, n4 and n3, n4 as RANK 1, WORLD_SIZE 3, from the saved
#      step, and ends 0; n2 is in the report and the exclude list, the
#      report times the recovery.
#   2. The same on n1, the coordinator's node: n4 is RANK 0 and
#      MASTER_ADDR.
#   3. Two faults, one spare, --resume: the second requeues (81), both
#      nodes excluded.
#   4. Two faults, one spare, --min-nodes 2: the job shrinks to two nodes,
#      and grows back to three when the first failed node passes again.
#   5. No spare, --restart 1: the restart after a NIC fault that crashed
#      every training leaves the faulty node out.
#   6. The coordinator's agent on n1 is stopped for good (a hung node):
#      the others lose it, n2 takes over, and the training runs again on
#      n2, n3 and n4, n4 as RANK 0 and MASTER_ADDR; the job ends 0 and n1
#      is named.
#   7. The same, then the successor's agent (n2) too: n3 and n4 save and
#      end on their own, 81 (--resume).
# Needs root; skips (77) without it or without torch.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

tb_require
need_torch
export TB_TIMEOUT=150 PYTHONDONTWRITEBYTECODE=1
TRAIN="$TESTS_SRCDIR/integration/spares_train.py"
tb_up 4 || { fail "test bed"; finish; }

# spare_case NAME ITERS OPTIONS...: the job in the background ($job), its
# files $log $rep $excl $ck; the fabric (eth1) is checked and inspected
spare_case() {
	local name=$1 iters=$2
	shift 2
	ck="$SCRATCH/$name.ckpt.json"; log="$SCRATCH/$name.out"; rep="$SCRATCH/$name.json"
	excl="$SCRATCH/$name.exclude"
	tb_mpirun -np 4 "$VIGIL" run --mode pytorch --spares "${SPARES:-1}" --nic eth1 \
		--inspect-interval "${INSPECT:-1}" \
		--heartbeat 0.5 --heartbeat-timeout 5 --grace 20 --report "$rep" \
		--exclude-file "$excl" "$@" -- env GLOO_SOCKET_IFNAME=eth1 "$PY" "$TRAIN" \
		--iters "$iters" --iter-ms 100 --ckpt "$ck" >"$log" 2>&1 &
	job=$!
}
# want CASE: CASE is among $CASES (default: every case)
want() { [[ " ${CASES:-nic coord twice grow restart lost lost2} " == *" $1 "* ]]; }
# ended NAME WANT: the job's status is WANT, else the end of its output, for the log
ended() {
	expect_eq "$1: the job ends $2" "$2" "$rc"
	[ "$rc" = "$2" ] || { echo "--- $1: the end of its output"; tail -n 60 "$log"; } >&2
}
# started ATTEMPT: the nodes that started attempt ATTEMPT, "host:rank/world" sorted
started() {
	sed -n "s/.*start rank \([0-9]*\) world \([0-9]*\) master [0-9.]* host \([a-z0-9]*\) attempt $1\$/\3:\1\/\2/p" \
		"$log" | sort | paste -sd' '
}
# wait_started ATTEMPT N: until N trainings started attempt ATTEMPT (60 s at most)
wait_started() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(started "$1" | wc -w)" -ge "$2" ] && return 0
		kill -0 "$job" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# wait_steps N: until the job printed N timing lines
wait_steps() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(grep -c 'this iteration hardware time' "$log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# 1. The fabric NIC of n2 goes down.
if want nic; then
	t0=$(date +%s%3N)
	spare_case nic 150
	wait_started 0 3 || fail "nic: attempt 0 did not start"
	expect_eq "nic: n4 waits, the others train" "n1:0/3 n2:1/3 n3:2/3" "$(started 0)"
	wait_steps 3 || fail "nic: no iterations"
	echo "nic: mpirun to the first iteration of every rank $(( $(date +%s%3N) - t0 )) ms"
	wait_steps 60 || fail "nic: no iterations"
	lines=$(grep -c 'this iteration hardware time' "$log")
	tb_exec n2 ip link set eth1 down
	wait "$job"; rc=$?
	tb_exec n2 ip link set eth1 up
	ended nic 0
	expect_eq "nic: again on n1 n4 n3, n4 as RANK 1, WORLD_SIZE 3" "n1:0/3 n3:2/3 n4:1/3" "$(started 1)"
	saved=$(sed -n 's/.*saved at step \([0-9]*\)$/\1/p' "$log" | head -1)
	resumed=$(sed -n 's/.*resumed at step \([0-9]*\)$/\1/p' "$log" | sort -u | paste -sd' ')
	expect_eq "nic: resumed from the step saved (${saved:-none})" "${saved:-x}" "$resumed"
	expect_eq "nic: the step saved is the fault's (${lines} timing lines before it)" 1 \
		"$(( ${saved:-0} >= lines / 3 ))"
	expect_eq "nic: done at step 150 on three nodes" 3 "$(grep -c 'done rank [0-2] at step 150$' "$log")"
	expect_eq "nic: report" "succeeded ['n2'] ['n4'] n2 n4 1" "$(report "$rep" 'r["state"], r["faulty_nodes"], r["spares"]["used"], r["spares"]["recoveries"][0]["failed_node"], r["spares"]["recoveries"][0]["spare_node"], r["spares"]["recoveries"][0]["training_rank"]')"
	expect_eq "nic: n2 excluded" n2 "$(cat "$excl")"
	took=$(report "$rep" 'r["spares"]["recoveries"][0].get("first_iteration_s", -1)')
	restart=$(report "$rep" 'r["spares"]["recoveries"][0].get("restart_s", -1)')
	echo "nic: fault to restart ${restart} s, to the first iteration ${took} s"
	expect_eq "nic: the first iteration after the fault is timed" 1 "$(python3 -c "print(int(0 < $took < 60))")"
fi

# 2. The fabric NIC of n1, the coordinator's node, goes down.
if want coord; then
	spare_case coord 150
	wait_started 0 3 || fail "coord: attempt 0 did not start"
	wait_steps 60 || fail "coord: no iterations"
	tb_exec n1 ip link set eth1 down
	wait "$job"; rc=$?
	tb_exec n1 ip link set eth1 up
	ended coord 0
	expect_eq "coord: again on n4 n2 n3, n4 as RANK 0" "n2:1/3 n3:2/3 n4:0/3" "$(started 1)"
	expect_eq "coord: MASTER_ADDR is n4's" "10.213.0.4" \
		"$(sed -n 's/.*start rank [0-9] world 3 master \([0-9.]*\) host .* attempt 1$/\1/p' "$log" | sort -u)"
	expect_eq "coord: report" "succeeded ['n1'] ['n4']" "$(report "$rep" 'r["state"], r["faulty_nodes"], r["spares"]["used"]')"
fi

# 3. Two faults, one spare, --resume: the spare is used, then the requeue.
if want twice; then
	spare_case twice 100000 --resume
	wait_started 0 3 || fail "twice: attempt 0 did not start"
	wait_steps 30 || fail "twice: no iterations"
	tb_exec n2 ip link set eth1 down
	wait_started 1 3 || fail "twice: attempt 1 did not start"
	tb_exec n3 ip link set eth1 down
	wait "$job"; rc=$?
	tb_exec n2 ip link set eth1 up
	tb_exec n3 ip link set eth1 up
	ended twice 81
	expect_eq "twice: n2 and n3 excluded" "n2 n3" "$(sort "$excl" | paste -sd' ')"
fi

# 4. --min-nodes 2: n2 fails (n4 takes its place), then n3 (no spare
#    left: the job goes on with two nodes), then n2's NIC comes back: the
#    job grows back to three, n2 as RANK 2, and ends 0.
if want grow; then
	spare_case grow 400 --min-nodes 2
	wait_started 0 3 || fail "grow: attempt 0 did not start"
	wait_steps 30 || fail "grow: no iterations"
	tb_exec n2 ip link set eth1 down
	wait_started 1 3 || fail "grow: attempt 1 did not start"
	tb_exec n3 ip link set eth1 down
	wait_started 2 2 || fail "grow: attempt 2 did not start"
	expect_eq "grow: on n1 and n4 after the second fault" "n1:0/2 n4:1/2" "$(started 2)"
	# attempt 2 iterates before n2 comes back
	wait_steps $(( $(grep -c 'this iteration hardware time' "$log") + 10 )) ||
		fail "grow: no iterations in attempt 2"
	tb_exec n2 ip link set eth1 up
	wait "$job"; rc=$?
	tb_exec n3 ip link set eth1 up
	ended grow 0
	expect_eq "grow: back on three nodes, n2 as RANK 2" "n1:0/3 n2:2/3 n4:1/3" "$(started 3)"
	expect_eq "grow: the attempts' sizes" "[3, 3, 2]" "$(report "$rep" '[a["world_size"] for a in r["attempts"]]')"
	expect_match "grow: why it grew" "n2 \\(rank 1\\): nic eth1 passes again: the job grows back from 2 to 3 nodes" \
		"$(report "$rep" 'r["attempts"][2]["ended_by"]')"
	expect_eq "grow: n3 excluded" n3 "$(cat "$excl")"
fi

# 5. No spare, --restart 1, an inspection too rare to see it: n2's fabric
#    NIC goes down and every training's collective fails.  n2 inspects
#    before it reports its failure, so the restart leaves it out.
if want restart; then
	SPARES=0 INSPECT=3600 spare_case restart 150 --restart 1
	wait_started 0 4 || fail "restart: attempt 0 did not start"
	wait_steps 40 || fail "restart: no iterations"
	tb_exec n2 ip link set eth1 down
	wait_started 1 3 || fail "restart: attempt 1 did not start"
	expect_eq "restart: again without n2" "n1:0/3 n3:1/3 n4:2/3" "$(started 1)"
	wait "$job"; rc=$?
	tb_exec n2 ip link set eth1 up
	ended restart 0
	expect_eq "restart: n2 excluded" n2 "$(cat "$excl")"
fi

# 6. The coordinator's agent is stopped: lost altogether, not a fault it
#    reports.  Its training saves nothing (only RANK 0 writes, and it
#    gets no signal): the training starts again from the start.
if want lost; then
	spare_case lost 200
	wait_started 0 3 || fail "lost: attempt 0 did not start"
	wait_steps 40 || fail "lost: no iterations"
	coord=$(pid_in n1 vigil)
	t0=$(date +%s%3N)
	kill -STOP "$coord"
	wait_started 1 3 || fail "lost: attempt 1 did not start"
	echo "lost: the stop to attempt 1 started on every node $(( $(date +%s%3N) - t0 )) ms"
	wait "$job"; rc=$?
	kill -CONT "$coord" 2>/dev/null
	ended lost 0
	expect_match "lost: n2 took over" 'n2 \(rank 1\) takes over as the coordinator' "$(cat "$log")"
	expect_eq "lost: again on n2 n3 n4, n4 as RANK 0" "n2:1/3 n3:2/3 n4:0/3" "$(started 1)"
	expect_eq "lost: MASTER_ADDR is n4's" "10.213.0.4" \
		"$(sed -n 's/.*start rank [0-9] world 3 master \([0-9.]*\) host .* attempt 1$/\1/p' "$log" | sort -u)"
	expect_eq "lost: done at step 200 on three nodes" 3 "$(grep -c 'done rank [0-2] at step 200$' "$log")"
	expect_eq "lost: report" "succeeded ['n1'] ['n4'] n1 n4 0" "$(report "$rep" 'r["state"], r["faulty_nodes"], r["spares"]["used"], r["spares"]["recoveries"][0]["failed_node"], r["spares"]["recoveries"][0]["spare_node"], r["spares"]["recoveries"][0]["training_rank"]')"
	expect_eq "lost: n1 excluded" n1 "$(cat "$excl")"
	took=$(report "$rep" 'r["spares"]["recoveries"][0].get("first_iteration_s", -1)')
	echo "lost: the coordinator's last word to the spare's first iteration ${took} s"
	# (from its last word: the loss itself takes twice the 5 s timeout)
	expect_eq "lost: the recovery is timed from the coordinator's last word" 1 \
		"$(python3 -c "print(int(10 <= $took < 90))")"
fi

# 7. Then the successor's agent is stopped too, once the training runs
#    again under it: no second takeover, every node left saves and ends
#    on its own (81, --resume), its record saying why.
if want lost2; then
	spare_case lost2 100000 --resume
	wait_started 0 3 || fail "lost2: attempt 0 did not start"
	wait_steps 40 || fail "lost2: no iterations"
	coord=$(pid_in n1 vigil)
	kill -STOP "$coord"
	wait_started 1 3 || fail "lost2: attempt 1 did not start"
	wait_steps $(( $(grep -c 'this iteration hardware time' "$log") + 20 )) ||
		fail "lost2: no iterations in attempt 1"
	succ=$(pid_in n2 vigil)
	kill -STOP "$succ"
	wait "$job"; rc=$?
	kill -CONT "$coord" "$succ" 2>/dev/null
	ended lost2 81
	for n in n3 n4; do
		expect_match "lost2: $n's record" 'n2 \(rank 1\), which took over as the coordinator, fell silent in its turn' \
			"$(report "$rep.$n" 'r["reason"]' 2>/dev/null)"
	done
	expect_eq "lost2: n4, RANK 0 now, saved" 1 "$(grep -c 'saved at step' "$log")"
fi

tb_down || fail "test bed left something behind"
finish
