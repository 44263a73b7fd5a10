#!/bin/bash
# The multi-node test bed (tests/testbed/tb.sh) itself: three nodes with
# their own hostnames and NICs, mpirun across them, vigil check and vigil
# run across them, a fabric NIC fault on one node, and nothing left behind
# on any exit path.  Needs root and working network and UTS namespaces;
# skips (77) without them.  Prints how long each step took.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip: the test bed needs root"
	exit 77
fi
if ! tb_usable; then
	echo "skip: network or UTS namespaces (ip netns, unshare) are unusable here"
	exit 77
fi

# The node name must come from each node's hostname.
unset VIGIL_NODE_NAME
export TB_TIMEOUT=60

# timed LABEL CMD...: run CMD in this shell, print how long it took on the
# test's stdout (fd 3), even when CMD's output is captured.
exec 3>&1
timed() {
	local label=$1 t0=$EPOCHREALTIME rc
	shift
	"$@"; rc=$?
	awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="$label" \
		'BEGIN { printf "time: %s %.3f s\n", n, b - a }' >&3
	return $rc
}

# alive PID: the process exists and is not a zombie.
alive() {
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# bed_pids: every process inside the test bed's namespaces.
bed_pids() {
	local n
	for n in switch head $(seq 1 "$TB_NODES"); do tb_pids "$n"; done | sort -n | tr '\n' ' '
}

# bed_quiet WHAT: once mpirun has returned, nothing of the job is left in
# the test bed (its daemons may take a moment to go).
bed_quiet() {
	local i left
	for ((i = 0; i < 50; i++)); do
		left=$(bed_pids)
		[ -z "$left" ] && break
		sleep 0.1
	done
	expect_eq "$1: nothing left in the test bed" "" "$left"
}

# bed_namespaces PREFIX: the namespaces of the test bed PREFIX.
bed_namespaces() {
	ip netns list | awk -v p="$1-" 'index($1, p) == 1 { print $1 }' | sort | tr '\n' ' '
}

# sorted TEXT: the lines of TEXT sorted, on one line.
sorted() {
	printf '%s\n' "$1" | sort | tr '\n' ' ' | sed 's/ $//'
}

# ---- building the test bed
timed tb_up tb_up 3 || { fail "tb_up 3"; finish; }
prefix=$TB_PREFIX
expect_eq "namespaces" "$prefix-head $prefix-n1 $prefix-n2 $prefix-n3 $prefix-switch " \
	"$(bed_namespaces "$prefix")"
expect_eq "hostfile" "n1 slots=1 n2 slots=1 n3 slots=1" "$(tr '\n' ' ' < "$TB_HOSTFILE" | sed 's/ $//')"
# Each node sees its own NICs in /sys and has its addresses.
for k in 1 2 3; do
	expect_eq "n$k: hostname and NICs in /sys" "n$k eth0 eth1 lo up up" \
		"$(tb_exec n$k timeout 10 sh -c 'echo $(hostname) $(ls /sys/class/net) $(cat /sys/class/net/eth0/operstate /sys/class/net/eth1/operstate)')"
	expect_eq "n$k: addresses" "10.213.0.$k/24 10.213.1.$k/24" \
		"$(tb_exec n$k timeout 10 ip -4 -o addr show scope global | awk '{ print $4 }' | sort | tr '\n' ' ' | sed 's/ $//')"
done
expect_eq "the switch has no address" "" \
	"$(tb_exec switch timeout 10 ip -4 -o addr show scope global)"

# ---- (1) mpirun starts one rank on each node
out=$(timed "mpirun hostname" tb_mpirun -np 3 hostname 2>"$SCRATCH/err"); rc=$?
expect_eq "mpirun hostname exit" 0 "$rc"
expect_eq "one rank on each node" "n1 n2 n3" "$(sorted "$out")"
[ "$rc" = 0 ] || cat "$SCRATCH/err" >&2
bed_quiet "mpirun hostname"

# ---- (2) vigil check across the nodes
out=$(timed "vigil check" tb_mpirun -np 3 "$VIGIL" check 2>"$SCRATCH/err"); rc=$?
expect_eq "check exit" 0 "$rc"
expect_match "check: all healthy" '^vigil: all 3 nodes healthy' "$out"
bed_quiet "check"

# eth1 exists on the nodes, whatever the host has.
out=$(timed "vigil check --nic eth1" tb_mpirun -np 3 "$VIGIL" check --nic eth1 2>"$SCRATCH/err"); rc=$?
expect_eq "check --nic eth1 exit" 0 "$rc"
expect_match "check --nic eth1: all healthy" '^vigil: all 3 nodes healthy' "$out"
bed_quiet "check --nic eth1"

# A fabric NIC fault on n2 alone.
tb_exec n2 timeout 10 ip link set eth1 down
expect_eq "n2 eth1 down" down "$(tb_exec n2 timeout 10 cat /sys/class/net/eth1/operstate)"
expect_eq "n1 eth1 still up" up "$(tb_exec n1 timeout 10 cat /sys/class/net/eth1/operstate)"
out=$(timed "vigil check --nic eth1, n2 eth1 down" tb_mpirun -np 3 "$VIGIL" check --nic eth1 2>"$SCRATCH/err"); rc=$?
err=$(cat "$SCRATCH/err")
expect_eq "check with n2's eth1 down: exit" 80 "$rc"
expect_match "coordinator names n2 and its NIC" '^vigil: n2 \(rank 1\): nics: .*eth1' "$out"
expect_match "summary" '^vigil: 1 of 3 nodes unhealthy$' "$out"
expect_no_match "healthy nodes not named" '^vigil: n[13] ' "$out"
expect_match "n2 prints its own error" 'vigil\[n2:1:[0-9]+\] error: nics: .*eth1' "$err"
bed_quiet "check with a fault"
tb_exec n2 timeout 10 ip link set eth1 up

# ---- (3) vigil run starts the command on every node
out=$(timed "vigil run --precheck off -- hostname" tb_mpirun -np 3 "$VIGIL" run --precheck off -- hostname 2>"$SCRATCH/err"); rc=$?
expect_eq "run exit" 0 "$rc"
expect_eq "run: the command ran on each node" "n1 n2 n3" \
	"$(sorted "$(printf '%s\n' "$out" | grep -v '^vigil: ')")"
[ "$rc" = 0 ] || cat "$SCRATCH/err" >&2
bed_quiet "run"

# ---- (4) tb_down removes everything, including processes left behind
tb_exec n3 sleep 60 &
for ((i = 0; i < 50; i++)); do
	[ -n "$(tb_pids n3)" ] && break
	sleep 0.1
done
left=$(bed_pids)
expect_match "a process left in n3" '[0-9]' "$left"
timed tb_down tb_down; rc=$?
expect_eq "tb_down exit" 0 "$rc"
expect_eq "no namespace left" "" "$(bed_namespaces "$prefix")"
still=""
for p in $left; do alive "$p" && still="$still $p"; done
expect_eq "no process of the test bed left" "" "$still"
expect_eq "tb_down again" 0 "$(tb_down; echo $?)"

# ---- tb_up's trap cleans up when a test ends without tb_down: a test that
# builds a test bed, leaves a process in it, then exits or is terminated.
# CHILD PATH writes PATH.prefix and PATH.pids.
tbsh="${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"
child='
. "$1"
tb_up 2 || exit 9
echo "$TB_PREFIX" > "$2.prefix"
tb_exec n1 sleep 60 &
for ((i = 0; i < 50; i++)); do
	[ -n "$(tb_pids n1)" ] && break
	sleep 0.1
done
tb_pids n1 > "$2.pids"
[ "$3" = exit ] && exit 3
wait $!'

# cleaned_up WHAT PATH: nothing is left of the child's test bed.
cleaned_up() {
	local p q
	p=$(cat "$2.prefix" 2>/dev/null)
	expect_match "$1: a test bed was built" '^vtb[0-9]+$' "$p"
	expect_match "$1: a process was left in it" '^[0-9]+$' "$(cat "$2.pids" 2>/dev/null)"
	expect_eq "$1: no namespace left" "" "$(bed_namespaces "$p")"
	for q in $(cat "$2.pids" 2>/dev/null); do
		alive "$q" && fail "$1: process $q left"
	done
}

timeout 30 bash -c "$child" sh "$tbsh" "$SCRATCH/exit" exit; rc=$?
expect_eq "exit path: the test's own status" 3 "$rc"
cleaned_up "exit path" "$SCRATCH/exit"

bash -c "$child" sh "$tbsh" "$SCRATCH/term" wait &
pid=$!
wait_for "$SCRATCH/term.pids" '[0-9]' 10 || fail "TERM path: the test bed did not come up"
kill -TERM "$pid"
t0=$SECONDS
while kill -0 "$pid" 2>/dev/null && ((SECONDS - t0 < 20)); do sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	fail "TERM path: the test did not end"
	kill -KILL "$pid"
fi
wait "$pid"; rc=$?
expect_eq "TERM path: status" 143 "$rc"
cleaned_up "TERM path" "$SCRATCH/term"

# Whatever failed above, leave nothing of those test beds behind.
for p in $(cat "$SCRATCH"/*.prefix 2>/dev/null); do
	(TB_PREFIX=$p; TB_DIR=""; tb_down)
done

finish
