#!/bin/bash
# A sweep of a real Slurm 22.05 cluster (tests/slurm/cluster.sh) with
# `vigil check` under mpirun inside an allocation, as doc/slurm.md shows
# it: `salloc -N 3 --exclusive mpirun --map-by ppr:1:node vigil check ...`.
# mpirun runs where salloc does (the head node) and starts its daemons on
# the three nodes through Slurm (Open MPI's plm/slurm: srun); one agent per
# node.  Node n3's fabric NIC is down: the sweep names n3 alone and exits
# 80, and --drain drains n3 from n3 itself.  The scontrol that vigil runs
# there is a wrapper that lists its open descriptors first: none of the
# agent's MPI sockets reach it.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 3 || { fail "cluster"; finish; }

# scontrol, after noting what it was given: its descriptors, its node
cat >"$SCRATCH/scontrol" <<SH
#!/bin/sh
ls -l /proc/\$\$/fd/ >"$SCRATCH/fds.\$(hostname).\$\$"
exec scontrol "\$@"
SH
chmod 755 "$SCRATCH/scontrol"

tb_exec n3 ip link set eth1 down
out=$(SL_CMD_TIMEOUT=90 sl_cmd env VIGIL_SCONTROL="$SCRATCH/scontrol" \
	salloc -N 3 --exclusive mpirun --map-by ppr:1:node \
	"$VIGIL" check --nic eth1 --drain --events "$SCRATCH/sweep.jsonl" 2>&1)
rc=$?
expect_eq "the sweep fails" 80 "$rc"
expect_match "n3 named, with eth1" '^vigil: n3 \(rank 2\): nics: .*eth1' "$out"
expect_match "one of three unhealthy" '^vigil: 1 of 3 nodes unhealthy' "$out"
expect_no_match "n1 and n2 are healthy" '^vigil: n[12] ' "$out"
expect_eq "every node reported" 3 "$(python3 -c '
import json, sys
print(len({json.loads(l)["node"] for l in open(sys.argv[1])}))' "$SCRATCH/sweep.jsonl")"
expect_match "n3 drained from n3" 'IDLE\+DRAIN|DRAINED' "$(sl_node_field n3 State)"
expect_match "with vigil's reason" '^vigil: nics: .*eth1' "$(sl_node_field n3 Reason)"
expect_eq "n1 and n2 not drained" "IDLE IDLE" "$(sl_node_field n1 State) $(sl_node_field n2 State)"

# The agent on n3 ran scontrol twice (show, update), with 0, 1, 2 and no socket.
fds=$(cat "$SCRATCH"/fds.n3.* 2>/dev/null)
expect_eq "scontrol ran twice on n3, nowhere else" "2 2" \
	"$(ls "$SCRATCH"/fds.* 2>/dev/null | wc -l) $(ls "$SCRATCH"/fds.n3.* 2>/dev/null | wc -l)"
expect_match "scontrol got stdin, stdout, stderr" ' 2 -> ' "$fds"
expect_no_match "no MPI socket reached scontrol" 'socket:' "$fds"

sl_down || fail "the cluster left something behind"
finish
