# tb.sh - a multi-node test bed on one machine for vigil's tests (sourced
# by bash scripts; needs root, iproute2 and util-linux's unshare).
#
# Each simulated node is a network namespace with its own hostname and two
# NICs, as on a cluster: eth0 on a management bridge, which carries mpirun's
# and the agents' MPI traffic, and eth1 on a second bridge standing in for
# the training fabric.  Both bridges live in a "switch" namespace and mpirun
# runs in a "head" namespace on the management bridge, so mpirun and its
# daemons talk only over the test bed's own links: nothing is added to the
# host's network namespace and no packet leaves the test bed.
#
#   namespace       NICs                    addresses
#   PREFIX-switch   br-mgmt, br-fab, ports  none
#   PREFIX-head     eth0 on br-mgmt         10.213.0.254/24
#   PREFIX-nK       eth0 on br-mgmt         10.213.0.K/24
#                   eth1 on br-fab          10.213.1.K/24
#
# Open MPI starts its daemons on node nK through rsh-agent (next to this
# file), which runs them under `ip netns exec PREFIX-nK unshare --uts` with
# hostname nK.  `ip netns exec` mounts a fresh /sys for the namespace, so
# /sys/class/net on a node lists that node's NICs alone, and `ip link set
# eth1 down` there is a real NIC fault seen by that node only.  Everything
# else (files, /tmp, processes) is shared with the host.
#
# Functions (NODE is nK or K for node K, or head, or switch):
#
#   tb_usable          0 when this machine can host a test bed: root, and
#                      network and UTS namespaces that work.  Tests exit 77
#                      (skip) otherwise.
#   tb_up N            build a test bed of N nodes n1..nN (1 <= N <= 200),
#                      write the hostfile "nK slots=1" and install an
#                      EXIT/INT/TERM trap that runs tb_down (an EXIT trap set
#                      before tb_up still runs after it; one set after tb_up
#                      replaces it).  Returns non-zero, with nothing left
#                      behind, when the test bed cannot be built.
#   tb_down            kill every process left in the test bed's namespaces
#                      (`ip netns pids`), then delete the namespaces, which
#                      takes their links with them.  Idempotent; returns
#                      non-zero if a process or namespace could not be removed.
#   tb_mpirun ARGS...  mpirun ARGS in the head namespace, one rank per node:
#                      --hostfile, the rsh agent, --map-by ppr:1:node,
#                      --oversubscribe, --bind-to none (every node sees every
#                      core of the machine), and TCP on the management
#                      subnet only.  Bounded by TB_TIMEOUT seconds (default
#                      60), then killed; returns mpirun's status (124 when
#                      it timed out, 137 when it then ignored SIGTERM, as
#                      Open MPI 4.1 can).  Callers pass -np and the command.
#   tb_exec NODE CMD...  CMD inside NODE's namespaces, with NODE's hostname.
#   tb_pids NODE       the pids of the processes inside NODE's namespace.
#   tb_ns NODE         the name of NODE's network namespace.
#
# Variables set by tb_up: TB_PREFIX (vtb<pid of the test>, unique among
# running test beds), TB_NODES (N), TB_DIR (scratch directory: hostfile and
# agent), TB_HOSTFILE.  MPIRUN names mpirun if set.

TB_MGMT_NET=10.213.0
TB_FAB_NET=10.213.1
TB_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TB_PREFIX=""
TB_NODES=0
TB_DIR=""
TB_HOSTFILE=""
_tb_saved_exit=""

tb_usable() {
	local ns="vtb$$-probe" ok=1
	[ "$(id -u)" = 0 ] || return 1
	command -v ip >/dev/null && command -v unshare >/dev/null || return 1
	ip netns add "$ns" 2>/dev/null || return 1
	ip netns exec "$ns" unshare --uts sh -c 'hostname probe' 2>/dev/null || ok=0
	ip netns del "$ns" 2>/dev/null || ok=0
	[ "$ok" = 1 ]
}

# tb_require: skip the test (77, which the CI script counts as a failure)
# unless the test bed can be built here.
tb_require() {
	if ! tb_usable; then
		echo "skip: the test bed needs root and working network namespaces"
		exit 77
	fi
	unset VIGIL_NODE_NAME
}

# _tb_node NODE: print the node's short name (nK, head or switch); fails
# on anything that is not a node of this test bed.
_tb_node() {
	local n=${1#n}
	case $1 in
	head | switch) echo "$1"; return 0 ;;
	esac
	if [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le "$TB_NODES" ]; then
		echo "n$n"
		return 0
	fi
	echo "tb: no node '$1' in this test bed (n1..n$TB_NODES, head, switch)" >&2
	return 1
}

tb_ns() {
	local node
	node=$(_tb_node "$1") || return 2
	echo "$TB_PREFIX-$node"
}

tb_pids() {
	local ns
	ns=$(tb_ns "$1") || return 2
	ip netns pids "$ns"
}

tb_exec() {
	local node
	node=$(_tb_node "$1") || return 2
	shift
	ip netns exec "$TB_PREFIX-$node" unshare --uts \
		sh -c 'hostname "$0" && exec "$@"' "$node" "$@"
}

# _tb_namespaces: every namespace of this test bed, including ones a failed
# tb_up left half built.
_tb_namespaces() {
	[ -n "$TB_PREFIX" ] || return 0
	ip netns list 2>/dev/null | awk -v p="$TB_PREFIX-" 'index($1, p) == 1 { print $1 }'
}

tb_down() {
	local all ns i rc=0
	local -a pids=()
	all=$(_tb_namespaces)
	if [ -n "$all" ]; then
		# Killed processes leave the namespace at once (zombies are not
		# listed), but one may be forking as we look: look again.
		for ((i = 0; i < 50; i++)); do
			pids=()
			for ns in $all; do
				mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$ns" 2>/dev/null)
			done
			[ "${#pids[@]}" -gt 0 ] || break
			kill -KILL "${pids[@]}" 2>/dev/null
			sleep 0.1
		done
		if [ "${#pids[@]}" -gt 0 ]; then
			echo "tb: processes left in the test bed: ${pids[*]}" >&2
			rc=1
		fi
		for ns in $all; do
			ip netns del "$ns" || rc=1
		done
	fi
	if [ -n "$TB_DIR" ]; then
		rm -rf "$TB_DIR"
		TB_DIR=""
	fi
	return $rc
}

_tb_on_exit() {
	tb_down
	eval "$_tb_saved_exit"
}

_tb_install_traps() {
	local cur
	local -a words
	# `trap -p EXIT` prints "trap -- 'COMMAND' EXIT", quoted for eval.
	cur=$(trap -p EXIT)
	if [ -n "$cur" ]; then
		eval "words=($cur)"
		[ "${words[2]}" = _tb_on_exit ] || _tb_saved_exit=${words[2]}
	fi
	trap _tb_on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# _tb_plug NODE K NIC BRIDGE NET: a veth pair from NODE's NIC (address
# NET.K/24) to a port of BRIDGE in the switch; both ends are created in
# their namespaces, never in the host's.
_tb_plug() {
	local ns="$TB_PREFIX-$1" sw="$TB_PREFIX-switch" port="$1-$3"
	ip link add "$3" netns "$ns" type veth peer name "$port" netns "$sw" &&
		ip -n "$sw" link set "$port" master "$4" up &&
		ip -n "$ns" addr add "$5.$2/24" dev "$3" &&
		ip -n "$ns" link set "$3" up
}

_tb_build() {
	local sw="$TB_PREFIX-switch" k
	ip netns add "$sw" || return 1
	ip -n "$sw" link set lo up || return 1
	for k in br-mgmt br-fab; do
		ip -n "$sw" link add "$k" type bridge &&
			ip -n "$sw" link set "$k" up || return 1
	done
	ip netns add "$TB_PREFIX-head" &&
		ip -n "$TB_PREFIX-head" link set lo up &&
		_tb_plug head 254 eth0 br-mgmt "$TB_MGMT_NET" || return 1
	for ((k = 1; k <= TB_NODES; k++)); do
		ip netns add "$TB_PREFIX-n$k" &&
			ip -n "$TB_PREFIX-n$k" link set lo up &&
			_tb_plug "n$k" "$k" eth0 br-mgmt "$TB_MGMT_NET" &&
			_tb_plug "n$k" "$k" eth1 br-fab "$TB_FAB_NET" || return 1
		echo "n$k slots=1" >> "$TB_HOSTFILE"
	done
}

tb_up() {
	local n=${1:-}
	if ! [[ $n =~ ^[1-9][0-9]*$ ]] || [ "$n" -gt 200 ]; then
		echo "tb: tb_up N: N must be 1..200, not '$n'" >&2
		return 2
	fi
	# A test bed with this prefix can only be left over from a dead
	# process that had this pid.
	TB_PREFIX="vtb$$"
	tb_down || return 1
	TB_NODES=$n
	TB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vtb.XXXXXX") || return 1
	TB_HOSTFILE="$TB_DIR/hostfile"
	# A copy, executable whatever the source tree's modes.
	cp "$TB_SRCDIR/rsh-agent" "$TB_DIR/rsh-agent" &&
		chmod 755 "$TB_DIR/rsh-agent" || { tb_down; return 1; }
	_tb_install_traps
	if ! _tb_build; then
		echo "tb: cannot build a test bed of $n nodes" >&2
		tb_down
		return 1
	fi
}

tb_mpirun() {
	# Open MPI settings from the caller's environment that would take MPI
	# off the management subnet do not apply here.  The test bed needs
	# root, so Open MPI must be told that root is fine.  mpirun starts
	# every daemon itself (no tree spawn), so that a node's fault cannot
	# keep another node's daemon from starting.
	env -u OMPI_MCA_btl -u OMPI_MCA_btl_tcp_if_include \
		-u OMPI_MCA_btl_tcp_if_exclude -u OMPI_MCA_oob_tcp_if_include \
		-u OMPI_MCA_oob_tcp_if_exclude -u OMPI_MCA_plm_rsh_agent \
		TB_PREFIX="$TB_PREFIX" \
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout -k 5 "${TB_TIMEOUT:-60}" \
		ip netns exec "$TB_PREFIX-head" unshare --uts \
		sh -c 'hostname head && exec "$@"' sh \
		"${MPIRUN:-mpirun}" --hostfile "$TB_HOSTFILE" \
		--mca plm_rsh_agent "$TB_DIR/rsh-agent" \
		--mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include "$TB_MGMT_NET.0/24" \
		--mca btl_tcp_if_include "$TB_MGMT_NET.0/24" \
		--mca btl self,tcp \
		--map-by ppr:1:node --oversubscribe --bind-to none \
		"$@"
}
