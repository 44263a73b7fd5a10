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
# Needs root; skips (77) without it or without torch.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
	echo "SKIP: Debian's python3-torch not found"
	exit 77
fi
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
	tb_mpirun -np 4 "$VIGIL" run --mode pytorch --spares 1 --nic eth1 --inspect-interval 1 \
		--heartbeat 0.5 --heartbeat-timeout 5 --grace 20 --report "$rep" \
		--exclude-file "$excl" "$@" -- env GLOO_SOCKET_IFNAME=eth1 "$PY" "$TRAIN" \
		--iters "$iters" --iter-ms 100 --ckpt "$ck" >"$log" 2>&1 &
	job=$!
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
expect_eq "nic: the job ends 0" 0 "$rc"
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

# 2. The fabric NIC of n1, the coordinator's node, goes down.
spare_case coord 150
wait_started 0 3 || fail "coord: attempt 0 did not start"
wait_steps 60 || fail "coord: no iterations"
tb_exec n1 ip link set eth1 down
wait "$job"; rc=$?
tb_exec n1 ip link set eth1 up
expect_eq "coord: the job ends 0" 0 "$rc"
expect_eq "coord: again on n4 n2 n3, n4 as RANK 0" "n2:1/3 n3:2/3 n4:0/3" "$(started 1)"
expect_eq "coord: MASTER_ADDR is n4's" "10.213.0.4" \
	"$(sed -n 's/.*start rank [0-9] world 3 master \([0-9.]*\) host .* attempt 1$/\1/p' "$log" | sort -u)"
expect_eq "coord: report" "succeeded ['n1'] ['n4']" "$(report "$rep" 'r["state"], r["faulty_nodes"], r["spares"]["used"]')"

# 3. Two faults, one spare, --resume: the spare is used, then the requeue.
spare_case twice 100000 --resume
wait_started 0 3 || fail "twice: attempt 0 did not start"
wait_steps 30 || fail "twice: no iterations"
tb_exec n2 ip link set eth1 down
wait_started 1 3 || fail "twice: attempt 1 did not start"
tb_exec n3 ip link set eth1 down
wait "$job"; rc=$?
tb_exec n2 ip link set eth1 up
tb_exec n3 ip link set eth1 up
expect_eq "twice: the second fault requeues" 81 "$rc"
expect_eq "twice: n2 and n3 excluded" "n2 n3" "$(sort "$excl" | paste -sd' ')"

# 4. --min-nodes 2: n2 fails (n4 takes its place), then n3 (no spare
#    left: the job goes on with two nodes), then n2's NIC comes back: the
#    job grows back to three, n2 as RANK 2, and ends 0.
spare_case grow 400 --min-nodes 2
wait_started 0 3 || fail "grow: attempt 0 did not start"
wait_steps 30 || fail "grow: no iterations"
tb_exec n2 ip link set eth1 down
wait_started 1 3 || fail "grow: attempt 1 did not start"
tb_exec n3 ip link set eth1 down
wait_started 2 2 || fail "grow: attempt 2 did not start"
expect_eq "grow: on n1 and n4 after the second fault" "n1:0/2 n4:1/2" "$(started 2)"
tb_exec n2 ip link set eth1 up
wait "$job"; rc=$?
tb_exec n3 ip link set eth1 up
expect_eq "grow: the job ends 0" 0 "$rc"
expect_eq "grow: back on three nodes, n2 as RANK 2" "n1:0/3 n2:2/3 n4:1/3" "$(started 3)"
expect_eq "grow: the attempts' sizes" "[3, 3, 2]" "$(report "$rep" '[a["world_size"] for a in r["attempts"]]')"
expect_match "grow: why it grew" "n2 \\(rank 1\\): nic eth1 passes again: the job grows back from 2 to 3 nodes" \
	"$(report "$rep" 'r["attempts"][2]["ended_by"]')"
expect_eq "grow: n3 excluded" n3 "$(cat "$excl")"

tb_down || fail "test bed left something behind"
finish
