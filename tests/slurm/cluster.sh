# shellcheck shell=bash
# cluster.sh - a real Slurm cluster on one machine, for vigil's tests
# (sourced by bash scripts, after tests/testbed/tb.sh; needs root, Debian's
# slurm-wlm and munge).  tests/slurm/README.md explains how it works.
#
# On a test bed of N nodes (tb.sh): slurmctld and a munged in the head
# namespace, one slurmd in each node's namespace, all run from Debian's
# packages with a slurm.conf, a munge key and a munged socket made for the
# test in a scratch directory.  Nothing is read from or written to the
# host's /etc/slurm, /etc/munge or /run/munge: each slurmd runs in a mount
# namespace of its own where the scratch directory's etc/ is mounted over
# /etc/slurm (slurmd, and whatever it starts, finds slurm.conf where a real
# node has it) and a copy of /etc/default with the test's files over
# /etc/default (contrib/slurm/vigil-healthcheck reads its settings there).
#
#   sl_usable          0 when this machine can host the cluster: tb_usable,
#                      and slurmctld, slurmd, munged, the client commands.
#   sl_require         exit 77 (skip), saying why, unless root and
#                      sl_usable.
#   sl_up N [LINE...]  a test bed of N nodes n1..nN (tb_up), then munged,
#                      slurmctld and the slurmds, with LINEs appended to
#                      slurm.conf (HealthCheckProgram=..., RequeueExit=...);
#                      waits until every node is idle.  Installs an EXIT
#                      trap that runs sl_down (an EXIT trap set before
#                      sl_up still runs after it).  Returns non-zero, with
#                      the daemons' logs on stderr and nothing left behind,
#                      when the cluster does not come up.
#   sl_down            cancel every job, stop the daemons it started (by
#                      PID: TERM, then KILL), tb_down, remove the scratch
#                      directory.  Idempotent.
#   sl_cmd CMD...      a Slurm client command (sbatch, salloc, squeue,
#                      scontrol, scancel, sinfo) in the head namespace,
#                      bounded by SL_CMD_TIMEOUT seconds (default 30), with
#                      the caller's environment (sbatch passes it to the
#                      job) less the Open MPI settings lib.sh makes for
#                      single-host runs (loopback only).
#   sl_node_exec NODE CMD...   CMD in the namespaces of NODE's slurmd
#                      (network, hostname, mounts: /etc/slurm and
#                      /etc/default as slurmd and its jobs see them).
#   sl_template DEST TRAIN EXTRA [SED...]   contrib/slurm/vigil.sbatch as a
#                      user adapts it: the TRAIN=(...) and EXTRA=(...)
#                      lines set to TRAIN and EXTRA (the words inside the
#                      parentheses), each sed expression SED applied (to
#                      #SBATCH lines); fails if any other line differs.
#   sl_job_field JOBID FIELD   one field of `scontrol show job` (JobState,
#                      Reason, Restarts, NodeList, ExcNodeList, ...).
#   sl_node_field NODE FIELD   one field of `scontrol show node` (State,
#                      Reason); Reason is the whole rest of its line; State
#                      without the NOT_RESPONDING flag (slurmctld's ping timing).
#   sl_wait_job JOBID REGEX SECONDS   until the job's JobState matches
#                      REGEX (an anchored ERE); 1 after SECONDS.
#   sl_wait_node NODE REGEX SECONDS   the same for a node's State.
#   sl_wait_lines FILE REGEX N SECONDS   until N lines of FILE match the
#                      ERE REGEX (a job's output); 1 after SECONDS.
#   sl_log NAME        a daemon's log: slurmctld, munged, or a node (n1).
#
# For vigil's jobs:
#   sl_json FILE EXPR  a Python expression over r, the JSON in FILE (a
#                      report of vigil run), a tuple's items separated by
#                      spaces: sl_json report.0.json 'r["exit_code"], r["state"]'
#   sl_resumed OUT     "SAVED = RESUMED": the iterations train_sim.py saved
#                      at and resumed from in job output OUT, each list
#                      sorted, comma-separated.
#
# Variables: SL_DIR (scratch directory, 0755: munged wants its socket's
# directory open to all), SL_CONF (slurm.conf), SL_DEFAULT (the nodes'
# /etc/default), SL_SPOOL (a directory for jobs' files), SL_TIMEOUT
# (seconds each daemon may live, default 900; they run under `timeout
# -k`), SL_CRED_EXPIRE (Slurm's credential lifetime, which is also the
# requeue delay; default 10), SL_ETC_DEFAULT (set before sl_up: a
# directory whose files are added to the nodes' /etc/default before
# slurmd starts, such as vigil-healthcheck's settings).

SL_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! declare -F tb_up >/dev/null; then
	# shellcheck source=../testbed/tb.sh
	. "$SL_SRCDIR/../testbed/tb.sh"
fi
# slurmctld, slurmd and munged are in /usr/sbin.
case ":$PATH:" in
*:/usr/sbin:*) ;;
*) PATH=$PATH:/usr/sbin ;;
esac
SL_DIR=""
SL_CONF=""
SL_DEFAULT=""
SL_SPOOL=""
SL_PIDS=()
SL_NAMES=()
_sl_saved_exit=""

sl_usable() {
	local c
	for c in slurmctld slurmd munged sbatch salloc srun squeue scontrol scancel sinfo \
		nsenter timeout; do
		command -v "$c" >/dev/null 2>&1 || return 1
	done
	tb_usable
}

sl_require() {
	if [ "$(id -u)" != 0 ] || ! sl_usable; then
		echo "skip: the Slurm cluster needs root, network namespaces, slurm-wlm and munge"
		exit 77
	fi
}

sl_json() {
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(*v) if isinstance(v, tuple) else print(v)' "$1" "$2"
}

sl_resumed() {
	local saved resumed
	saved=$(sed -n 's/^checkpoint saved at iteration //p' "$1" | sort -n | paste -sd,)
	resumed=$(sed -n 's/^resumed from iteration //p' "$1" | sort -n | paste -sd,)
	echo "$saved = $resumed"
}

sl_log() {
	# the daemon's log file, then what it printed
	case $1 in
	slurmctld | munged) cat "$SL_DIR/log/$1.log" "$SL_DIR/log/$1.out" 2>/dev/null ;;
	*) cat "$SL_DIR/log/slurmd.$1.log" "$SL_DIR/log/$1.out" 2>/dev/null ;;
	esac
}

# _sl_pid NAME: the PID of daemon NAME (munged, slurmctld, n1, ...)
_sl_pid() {
	local i
	for ((i = 0; i < ${#SL_NAMES[@]}; i++)); do
		if [ "${SL_NAMES[i]}" = "$1" ]; then
			echo "${SL_PIDS[i]}"
			return 0
		fi
	done
	return 1
}

sl_cmd() {
	env -u OMPI_MCA_btl -u OMPI_MCA_btl_tcp_if_include \
		-u OMPI_MCA_oob_tcp_if_include -u OMPI_MCA_rmaps_base_oversubscribe \
		SLURM_CONF="$SL_CONF" timeout -k 5 "${SL_CMD_TIMEOUT:-30}" \
		ip netns exec "$TB_PREFIX-head" "$@"
}

sl_node_exec() {
	local pid
	if ! pid=$(_sl_pid "n${1#n}"); then
		echo "cluster: no slurmd on node '$1'" >&2
		return 2
	fi
	shift
	nsenter -t "$pid" -n -u -m "$@"
}

sl_template() {
	local dest=$1 train=$2 extra=$3 src e
	shift 3
	src=$SL_SRCDIR/../../contrib/slurm/vigil.sbatch
	local -a sed_args=(-e "s|^TRAIN=(.*|TRAIN=($train)|" -e "s|^EXTRA=(.*|EXTRA=($extra)|")
	for e in "$@"; do
		sed_args+=(-e "$e")
	done
	sed "${sed_args[@]}" "$src" >"$dest" || return 1
	# what a user may change, and nothing else
	if ! diff <(grep -Ev '^(TRAIN=|EXTRA=|#SBATCH)' "$src") \
		<(grep -Ev '^(TRAIN=|EXTRA=|#SBATCH)' "$dest") >&2; then
		echo "cluster: $dest differs from the template beyond its settings" >&2
		return 1
	fi
}

sl_job_field() {
	sl_cmd scontrol -o show job "$1" 2>/dev/null |
		tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

sl_node_field() {
	if [ "$2" = Reason ]; then
		# the reason has spaces: it runs to the end of its line
		sl_cmd scontrol show node "$1" 2>/dev/null |
			sed -n 's/^ *Reason=//p' | head -n 1
	elif [ "$2" = State ]; then
		# NOT_RESPONDING says when slurmctld last reached slurmd (late on
		# a loaded machine), not whether the node is drained or up
		sl_cmd scontrol -o show node "$1" 2>/dev/null |
			tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1 | sed 's/+NOT_RESPONDING//'
	else
		sl_cmd scontrol -o show node "$1" 2>/dev/null |
			tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
	fi
}

# _sl_wait WHAT REGEX SECONDS: until `WHAT` prints a line matching ^REGEX$
_sl_wait() {
	local i cur
	for ((i = 0; i < $3 * 4; i++)); do
		cur=$(eval "$1")
		if [[ $cur =~ ^($2)$ ]]; then
			return 0
		fi
		sleep 0.25
	done
	echo "cluster: waited $3 s for /$2/, last [$cur]" >&2
	return 1
}

sl_wait_job() {
	_sl_wait "sl_job_field $1 JobState" "$2" "$3"
}

sl_wait_lines() {
	local i n
	for ((i = 0; i < $4 * 4; i++)); do
		n=$(grep -Ec -- "$2" "$1" 2>/dev/null)
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.25
	done
	echo "cluster: waited $4 s for $3 lines /$2/ in $1, saw ${n:-0}" >&2
	return 1
}

sl_wait_node() {
	_sl_wait "sl_node_field $1 State" "$2" "$3"
}

# _sl_start NAME NS CMD...: CMD in namespace NS under `timeout -k`, in the
# background; its PID (ip, unshare and sh all exec) is remembered.
_sl_start() {
	local name=$1 ns=$2
	shift 2
	ip netns exec "$ns" "$@" >>"$SL_DIR/log/$name.out" 2>&1 </dev/null &
	SL_PIDS+=($!)
	SL_NAMES+=("$name")
}

# _sl_conf LINE...: slurm.conf for the test bed's nodes.
_sl_conf() {
	local k nodes addrs
	nodes="n[1-$TB_NODES]"
	addrs="$TB_MGMT_NET.[1-$TB_NODES]"
	if [ "$TB_NODES" = 1 ]; then
		nodes=n1
		addrs=$TB_MGMT_NET.1
	fi
	cat <<EOF
# slurm.conf for a test cluster on a vigil test bed ($TB_PREFIX)
ClusterName=vigiltest
SlurmctldHost=head($TB_MGMT_NET.254)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# The munged of this test.  cred_expire is also the requeue delay: a
# requeued job may start cred_expire + 1 s after it was requeued (120 s by
# default; at least 5).
AuthInfo=socket=$SL_DIR/run/munge.sock,cred_expire=${SL_CRED_EXPIRE:-10}
StateSaveLocation=$SL_DIR/state
SlurmdSpoolDir=$SL_DIR/spool/%n
SlurmctldPidFile=$SL_DIR/run/slurmctld.pid
SlurmdPidFile=$SL_DIR/run/slurmd.%n.pid
SlurmctldLogFile=$SL_DIR/log/slurmctld.log
SlurmdLogFile=$SL_DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
# Three slurmds share one kernel: no cgroups; processes tracked through
# /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SwitchType=switch/none
MpiDefault=none
# Short delays: the scheduler looks at pending jobs every 2 s (60 by
# default), ended jobs are kept 60 s (300), processes get KillWait = 5 s
# between SIGTERM and SIGKILL (30), a node that does not answer is down
# after 30 s (300).
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
MinJobAge=60
KillWait=5
SlurmdTimeout=30
SlurmctldTimeout=30
InactiveLimit=0
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$nodes NodeAddr=$addrs CPUs=1 RealMemory=100 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	for k in "$@"; do
		echo "$k"
	done
}

# slurmd 22.05 loads a cgroup plugin whatever the other plugins, and its
# default, autodetect, fails in a node's namespace: `ip netns exec` mounts
# a fresh /sys without /sys/fs/cgroup.  Naming cgroup/v1 skips the
# detection; with proctrack/linuxproc and task/none nothing calls it.
_sl_cgroup_conf() {
	echo "CgroupPlugin=cgroup/v1"
}

# _sl_default: the nodes' /etc/default, the host's regular files and
# whatever the test adds.
_sl_default() {
	local f
	mkdir -m 755 "$SL_DEFAULT" || return 1
	for f in /etc/default/*; do
		[ -f "$f" ] && ! [ -L "$f" ] && cp -p "$f" "$SL_DEFAULT/"
	done
	if [ -n "${SL_ETC_DEFAULT:-}" ]; then
		cp -p "$SL_ETC_DEFAULT"/* "$SL_DEFAULT/" || return 1
	fi
	return 0
}

_sl_on_exit() {
	sl_down
	eval "$_sl_saved_exit"
}

sl_up() {
	local n=${1:-} k ns lim
	shift
	lim=${SL_TIMEOUT:-900}
	tb_up "$n" || return 1
	# tb_up's trap runs tb_down, then the EXIT trap that was there
	# before; ours runs sl_down, which calls tb_down, then that trap.
	if [ "$_tb_saved_exit" != _sl_on_exit ]; then
		_sl_saved_exit=$_tb_saved_exit
	fi
	_tb_saved_exit=""
	trap _sl_on_exit EXIT
	SL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vsl.XXXXXX") || { sl_down; return 1; }
	chmod 755 "$SL_DIR"
	SL_CONF=$SL_DIR/etc/slurm.conf
	SL_DEFAULT=$SL_DIR/default
	SL_SPOOL=$SL_DIR/jobs
	mkdir -m 755 "$SL_DIR/etc" "$SL_DIR/run" "$SL_DIR/log" "$SL_DIR/state" \
		"$SL_DIR/spool" "$SL_SPOOL" &&
		mkdir -m 700 "$SL_DIR/munge" &&
		head -c 1024 /dev/urandom >"$SL_DIR/munge/munge.key" &&
		chmod 600 "$SL_DIR/munge/munge.key" &&
		_sl_conf "$@" >"$SL_CONF" && _sl_cgroup_conf >"$SL_DIR/etc/cgroup.conf" &&
		_sl_default || { sl_down; return 1; }
	for ((k = 1; k <= n; k++)); do
		mkdir -m 755 "$SL_DIR/spool/n$k" || { sl_down; return 1; }
	done

	_sl_start munged "$TB_PREFIX-head" timeout -k 5 "$lim" munged -F \
		--socket="$SL_DIR/run/munge.sock" --key-file="$SL_DIR/munge/munge.key" \
		--pid-file="$SL_DIR/run/munged.pid" --seed-file="$SL_DIR/munge/seed"
	if ! _sl_wait "[ -S '$SL_DIR/run/munge.sock' ] && echo up" up 10; then
		_sl_failed
		return 1
	fi
	_sl_start slurmctld "$TB_PREFIX-head" unshare --uts sh -c \
		'hostname head && exec "$@"' sh \
		env SLURM_CONF="$SL_CONF" timeout -k 5 "$lim" slurmctld -D -i
	for ((k = 1; k <= n; k++)); do
		ns="$TB_PREFIX-n$k"
		# `ip netns exec` gives each command a mount namespace of its
		# own, slave to the host's: these mounts stay in it.
		_sl_start "n$k" "$ns" unshare --uts sh -c \
			'hostname "$1" && mount --bind "$2" /etc/slurm &&
			 mount --bind "$3" /etc/default && shift 3 && exec "$@"' \
			sh "n$k" "$SL_DIR/etc" "$SL_DEFAULT" \
			env -u SLURM_CONF timeout -k 5 "$lim" slurmd -D
	done
	if ! _sl_wait "sl_cmd sinfo -h -o %t 2>/dev/null | sort -u | paste -sd,"\
		idle $((20 + 2 * n)); then
		_sl_failed
		return 1
	fi
}

_sl_failed() {
	local f
	echo "cluster: the Slurm cluster did not come up" >&2
	for f in "$SL_DIR"/log/*; do
		[ -f "$f" ] || continue
		echo "---- ${f##*/}" >&2
		tail -n 20 "$f" >&2
	done
	sl_down
}

sl_down() {
	local i k alive ctld rc=0
	if [ -n "$SL_DIR" ] && ctld=$(_sl_pid slurmctld) && kill -0 "$ctld" 2>/dev/null; then
		# Jobs first, while slurmctld can still tell the slurmds.
		SL_CMD_TIMEOUT=10 sl_cmd scancel --full --quiet --user=root >/dev/null 2>&1
		_sl_wait "sl_cmd squeue -h -o %i 2>/dev/null | wc -l" 0 10 2>/dev/null
	fi
	# Every daemon runs under timeout, whose TERM goes to the daemon's
	# whole process group.
	for ((k = ${#SL_PIDS[@]} - 1; k >= 0; k--)); do
		kill -TERM "${SL_PIDS[k]}" 2>/dev/null
	done
	for ((i = 0; i < 40; i++)); do
		alive=0
		for k in "${SL_PIDS[@]}"; do
			kill -0 "$k" 2>/dev/null && alive=1
		done
		[ "$alive" = 0 ] && break
		sleep 0.25
	done
	for k in "${SL_PIDS[@]}"; do
		kill -KILL "$k" 2>/dev/null
		wait "$k" 2>/dev/null
	done
	SL_PIDS=()
	SL_NAMES=()
	tb_down || rc=1
	if [ -n "$SL_DIR" ]; then
		rm -rf "$SL_DIR"
		SL_DIR=""
	fi
	return $rc
}
