# lib.sh - shared helpers for vigil's integration tests (sourced).
#
# Environment from tests/Makefile.inc: VIGIL (the binary), TOPO_DIR,
# TESTS_SRCDIR, MPIRUN.  Each test makes its own scratch directory and
# removes it on exit.

set -u
# The trainings' output as the defaults make it, whatever the caller's
# shell sets (unbuffered Python splits a line in two writes).
unset PYTHONUNBUFFERED

: "${VIGIL:?VIGIL must name the vigil binary}"
: "${TOPO_DIR:?TOPO_DIR must name tests/data/topo}"

# Two Tesla P100 boards at these PCI addresses (LLNL Pascal node).
PASCAL="$TOPO_DIR/mpibind-cts1-pascal.xml"
PASCAL_GPUS="0000:04:00.0 0000:07:00.0"

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/vigil-it.XXXXXX")
TORCH_TMP=""
cleanup_scratch() { rm -rf "$SCRATCH" ${TORCH_TMP:+"$TORCH_TMP"}; }
trap cleanup_scratch EXIT

# Open MPI refuses root unless told; CI runs as root.
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Keep Open MPI to this host's shared memory and loopback, quietly.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo \
       OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_rmaps_base_oversubscribe=1

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected [$2], got [$3]"; fi
}

# expect_match WHAT REGEX TEXT
expect_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then pass "$1"
	else fail "$1: [$3] does not match /$2/"; fi
}

# expect_no_match WHAT REGEX TEXT
expect_no_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then fail "$1: [$3] matches /$2/"
	else pass "$1"; fi
}

# finish: exit 1 if anything failed.
finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures failure(s)" >&2
		exit 1
	fi
	exit 0
}

# make_root DIR: a healthy node's /sys, /proc and /dev/shm for the Pascal
# topology: both GPUs present at full PCIe gen3 x16 with the nvidia driver
# bound and no AER errors, NVIDIA driver 535.104.05, eth1 up at 100 Gb/s,
# mlx5_0 port 1 active at 100 Gb/s, two NUMA nodes with 60 GB free each.
make_root() {
	local r=$1 id d n
	mkdir -p "$r/sys/bus/pci/drivers/nvidia" "$r/proc/driver/nvidia" "$r/dev/shm"
	for id in $PASCAL_GPUS; do
		d="$r/sys/bus/pci/devices/$id"
		mkdir -p "$d"
		echo "8.0 GT/s PCIe" > "$d/current_link_speed"
		echo "8.0 GT/s PCIe" > "$d/max_link_speed"
		echo 16 > "$d/current_link_width"
		echo 16 > "$d/max_link_width"
		printf 'RxErr 0\nBadTLP 0\nTOTAL_ERR_COR 0\n' > "$d/aer_dev_correctable"
		printf 'Undefined 0\nTOTAL_ERR_NONFATAL 0\n' > "$d/aer_dev_nonfatal"
		printf 'Undefined 0\nTOTAL_ERR_FATAL 0\n' > "$d/aer_dev_fatal"
		ln -s ../../../bus/pci/drivers/nvidia "$d/driver"
	done
	printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n' \
		> "$r/proc/driver/nvidia/version"
	d="$r/sys/class/net/eth1"
	mkdir -p "$d"
	echo up > "$d/operstate"; echo 1 > "$d/carrier"; echo 100000 > "$d/speed"
	d="$r/sys/class/infiniband/mlx5_0/ports/1"
	mkdir -p "$d/counters"
	echo "4: ACTIVE" > "$d/state"; echo "5: LinkUp" > "$d/phys_state"
	echo "100 Gb/sec (4X EDR)" > "$d/rate"
	echo 0 > "$d/counters/link_downed"; echo 0 > "$d/counters/symbol_error"
	for n in 0 1; do
		d="$r/sys/devices/system/node/node$n"
		mkdir -p "$d"
		printf 'Node %s MemTotal:       65536000 kB\nNode %s MemFree:        62914560 kB\nNode %s MemUsed:         2621440 kB\n' \
			"$n" "$n" "$n" > "$d/meminfo"
	done
}

# The flags that describe the Pascal node to `vigil check`.
pascal_flags() {
	echo "--topology $PASCAL --slots 2 --nic eth1 --ib mlx5_0"
}

# MPICH's launcher (MPIRUN=mpiexec.hydra, the MPICH leg of
# tests/run-all.sh) or Open MPI's mpirun.
if "${MPIRUN:-mpirun}" --version 2>&1 | grep -q HYDRA; then MPI_HYDRA=1; else MPI_HYDRA=; fi

# The flags these tests need on one machine, for "${MPIRUN:-mpirun}"
# "${MPI_FLAGS[@]}" under timeout (Hydra runs more ranks than cores,
# unbound, by itself); run_mpi: mpirun with them, ended after
# MPI_LIMIT seconds (300) so that a hang fails one test.
if [ -n "$MPI_HYDRA" ]; then MPI_FLAGS=(); else MPI_FLAGS=(--oversubscribe --bind-to none); fi
# need_torch: PY, Debian's interpreter, with torch.distributed (python3-torch),
# or the test skips (77, which the CI script counts as a failure)
need_torch() {
	PY=/usr/bin/python3
	if ! "$PY" -c 'import torch.distributed' 2>/dev/null; then
		echo "SKIP: Debian's python3-torch not found"
		exit 77
	fi
	# torch's launcher leaves a torchelastic_* directory behind when it
	# is stopped: in a directory of the test's own, removed with the
	# scratch directory (0755, as /tmp is open: the cluster's munged
	# makes its socket below it)
	TORCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/vigil-torch.XXXXXX") && chmod 0755 "$TORCH_TMP" &&
		export TMPDIR=$TORCH_TMP
}

run_mpi() { timeout -k 5 "${MPI_LIMIT:-300}" "${MPIRUN:-mpirun}" "${MPI_FLAGS[@]}" "$@"; }

# run_named NP SECONDS ARGS...: NP agents of `vigil run ARGS` under mpirun,
# each named for its rank (VIGIL_NODE_NAME=nRANK), bounded by SECONDS.
run_named() {
	local np=$1 secs=$2 args=() i
	shift 2
	for ((i = 0; i < np; i++)); do
		[ "$i" -eq 0 ] || args+=(:)
		args+=(-np 1 env VIGIL_NODE_NAME="n$i" "$VIGIL" run "$@")
	done
	timeout -k 5 "$secs" "${MPIRUN:-mpirun}" --oversubscribe --bind-to none "${args[@]}"
}

# The simulated training shipped in contrib/examples.
SIM="${TESTS_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/../contrib/examples/train_sim.py"

# report FILE EXPR: a Python expression over the JSON in FILE (as r)
report() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ready_count LOG: how many trainings printed "ready" (tagged or not);
# wait_ready LOG N: until N did (20 s at most)
ready_count() { local n; n=$(grep -c -E '^(\[[^]]*\] )?ready ' "$1" 2>/dev/null); echo "${n:-0}"; }
wait_ready() {
	local i
	for ((i = 0; i < 400; i++)); do [ "$(ready_count "$1")" -ge "$2" ] && return 0; sleep 0.05; done
	return 1
}

# agent_of NAME MARKER: the agent named NAME (VIGIL_NODE_NAME) among the
# vigil processes whose command line holds MARKER; not its keeper (a vigil
# too, between the agent and the training)
agent_of() {
	pgrep -x vigil | while read -r p; do
		grep -qaF -- "$2" "/proc/$p/cmdline" 2>/dev/null &&
		tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "VIGIL_NODE_NAME=$1" &&
		pp=$(ps -o ppid= -p "$p" 2>/dev/null) && [ -n "$pp" ] &&
		[ "$(ps -o comm= -p "$pp" 2>/dev/null)" != vigil ] && echo "$p"; done | head -1
}

# wait_for FILE REGEX SECONDS: until a line of FILE matches, bounded.
wait_for() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# no_leftovers WHAT MARKER: no process whose command line holds MARKER is
# left, zombie or not.
no_leftovers() {
	local left
	left=$(pgrep -f -- "$2" || true)
	if [ -z "$left" ]; then pass "$1: nothing left running"
	else fail "$1: left running: $(ps -o pid,stat,args -p "$(echo $left | tr ' ' ,)" 2>/dev/null)"
		kill -KILL $left 2>/dev/null; fi
}

# event_us FILE KIND: epoch microseconds of the first event of KIND in the
# event log FILE (benchmarks time their faults by it)
event_us() {
	python3 - "$1" "$2" <<'PY'
import datetime, json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == sys.argv[2]:
        t = datetime.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        print(int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1e6))
        break
PY
}
