#!/bin/bash
# contrib/slurm/vigil-healthcheck as the HealthCheckProgram of a real Slurm
# 22.05 cluster (tests/slurm/cluster.sh: slurmctld and two slurmds on the
# test bed's nodes), run by slurmd every 2 s with nothing in its
# environment but SLURMD_NODENAME.  Its settings come from the node's
# /etc/default/vigil-healthcheck; vigil checks the fabric NIC eth1.
#   - a node whose eth1 goes down is drained with a "vigil:" reason, and
#     resumed once eth1 is up again;
#   - a node an administrator drained keeps that drain and its reason
#     through a failing and then a passing check;
#   - the settings file is refused when others may write it.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require

# The wrapper as shipped; vigil behind a shim that counts its runs.
hc=$SCRATCH/vigil-healthcheck
cp "$TESTS_SRCDIR/../contrib/slurm/vigil-healthcheck" "$hc" && chmod 755 "$hc"
runs=$SCRATCH/runs.log
cat >"$SCRATCH/vigil-counted" <<SH
#!/bin/sh
"$VIGIL" "\$@"
rc=\$?
echo "\$SLURMD_NODENAME \$rc" >>"$runs"
exit \$rc
SH
chmod 755 "$SCRATCH/vigil-counted"
echo '{"check": {"nics": {"required": ["eth1"]}}}' >"$SCRATCH/vigil.json"
mkdir "$SCRATCH/default"
cat >"$SCRATCH/default/vigil-healthcheck" <<SH
# vigil-healthcheck's settings (a test cluster)
VIGIL=$SCRATCH/vigil-counted
VIGIL_CONFIG=$SCRATCH/vigil.json
SH
chmod 644 "$SCRATCH/default/vigil-healthcheck"
export SL_ETC_DEFAULT=$SCRATCH/default

sl_up 2 "HealthCheckProgram=$hc" "HealthCheckInterval=2" || { fail "cluster"; finish; }

# count NODE RC: runs of the check on NODE that ended with RC
count() {
	local n
	n=$(grep -c "^$1 $2\$" "$runs" 2>/dev/null)
	echo "${n:-0}"
}
# more_runs NODE RC N: wait (30 s at most) for N more such runs than now
more_runs() {
	local want i
	want=$(($(count "$1" "$2") + $3))
	for ((i = 0; i < 120; i++)); do
		[ "$(count "$1" "$2")" -ge "$want" ] && return 0
		sleep 0.25
	done
	return 1
}

# Healthy nodes: the check runs, passes, changes nothing.
more_runs n1 0 2 && more_runs n2 0 2 && pass "slurmd runs the check on both nodes" ||
	fail "the check did not run: $(cat "$runs" 2>/dev/null) $(sl_log n1 | grep health_check | tail -3)"
expect_eq "healthy nodes stay idle" "IDLE IDLE" "$(sl_node_field n1 State) $(sl_node_field n2 State)"

# 1. n2's fabric NIC goes down: drained with vigil's reason.
tb_exec n2 ip link set eth1 down
if sl_wait_node n2 'IDLE\+DRAIN|DRAINED|DRAINING' 20; then pass "n2 drained"; else fail "n2 not drained"; fi
expect_match "n2's reason is vigil's, naming eth1" '^vigil: nics: .*eth1' "$(sl_node_field n2 Reason)"
expect_eq "n1 untouched" IDLE "$(sl_node_field n1 State)"
expect_match "slurmd logged the failed check" 'health_check failed: rc:80 output:vigil: nics: .*eth1' \
	"$(sl_log n2)"

# ... and resumed once it is back.
tb_exec n2 ip link set eth1 up
if sl_wait_node n2 IDLE 20; then pass "n2 resumed when healthy"; else fail "n2 not resumed"; fi

# 2. An administrator drains n1 for maintenance; then n1 fails the check,
#    then passes it.  The drain and its reason stay.
sl_cmd scontrol update NodeName=n1 State=DRAIN Reason="admin: replace DIMM B3"
tb_exec n1 ip link set eth1 down
more_runs n1 80 2 || fail "n1's failing check did not run twice"
expect_match "failing check: the administrator's drain stays" '^(IDLE\+DRAIN|DRAINED)$' \
	"$(sl_node_field n1 State)"
expect_match "failing check: the administrator's reason stays" '^admin: replace DIMM B3 ' \
	"$(sl_node_field n1 Reason)"
tb_exec n1 ip link set eth1 up
more_runs n1 0 2 || fail "n1's passing check did not run twice"
expect_match "passing check: still drained" '^(IDLE\+DRAIN|DRAINED)$' "$(sl_node_field n1 State)"
expect_match "passing check: the administrator's reason" '^admin: replace DIMM B3 ' \
	"$(sl_node_field n1 Reason)"
# the administrator puts it back
sl_cmd scontrol update NodeName=n1 State=RESUME
more_runs n1 0 1
expect_eq "resumed by the administrator, stays up" IDLE "$(sl_node_field n1 State)"

# 3. The wrapper as slurmd runs it (no environment but SLURMD_NODENAME), on
#    the node: its settings must be root's alone.
out=$(sl_node_exec n2 env -i SLURMD_NODENAME=n2 "$hc" 2>&1); rc=$?
expect_eq "wrapper by hand, healthy" "0 " "$rc $out"
cp -p "$SL_DEFAULT/vigil-healthcheck" "$SCRATCH/settings.keep"
chmod 664 "$SL_DEFAULT/vigil-healthcheck"
out=$(sl_node_exec n2 env -i SLURMD_NODENAME=n2 "$hc" 2>&1); rc=$?
expect_eq "group-writable settings refused" 78 "$rc"
expect_match "and said so" 'vigil-healthcheck: /etc/default/vigil-healthcheck must be a file of root' "$out"
cp -p "$SCRATCH/settings.keep" "$SL_DEFAULT/vigil-healthcheck"

sl_down || fail "the cluster left something behind"
finish
