#!/bin/bash
# bench_nudge_flood.sh - what a flood of datagrams at the nudge sockets
# costs the agents, against the same agents left alone, in one run.
#
# Two agents under mpirun on this machine (the loopback, as the tests tell
# Open MPI), their training asleep.  Each agent's CPU time (utime+stime
# from /proc) is read over PHASE seconds (default 5) of each phase:
#   quiet     nothing sent
#   stranger  a flood from 127.0.0.2, an address of no agent, as fast as
#             one process per agent can send (any host that can reach the
#             node could do this)
#   forged    as root: a flood forged with a raw socket to come from the
#             other agent's nudge address and port (what passes the
#             filter: the busy windows are what it can cost)
# and printed as percent of a core, with the ratio to the quiet phase.
# The acceptance for vigil: a flood costs at most what a steady stream of
# nudges costs (one busy window at a time), not a read per datagram.
#
# Usage: tests/bench/bench_nudge_flood.sh [VIGIL]   (default ./vigil)
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
export VIGIL="$vigil" TOPO_DIR="$here/../data/topo" TESTS_SRCDIR="$here/.."
. "$here/../integration/lib.sh"
phase=${PHASE:-5}
tck=$(getconf CLK_TCK)

cat > "$SCRATCH/flood.py" <<'PY'
# flood.py MODE SRC_PORT DST_PORT SECONDS: datagrams to 127.0.0.1:DST_PORT,
# from 127.0.0.2 (stranger) or forged from 127.0.0.1:SRC_PORT (forged).
import socket, struct, sys, time
mode, sport, dport, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if mode == "stranger":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.2", 0))
    pkt, to = b"!", ("127.0.0.1", dport)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src = dst = socket.inet_aton("127.0.0.1")
    udp = struct.pack("!HHHH", sport, dport, 9, 0) + b"!"   # checksum 0: none (IPv4)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
    pkt, to = ip + udp, ("127.0.0.1", 0)
n, end = 0, time.monotonic() + secs
while time.monotonic() < end:
    for _ in range(256):
        try:
            s.sendto(pkt, to)
            n += 1
        except (BlockingIOError, ConnectionRefusedError):
            pass
print(n)
PY

cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

cd "$SCRATCH" || exit 1
timeout -k 10 $((phase * 3 + 60)) ${MPIRUN:-mpirun} --oversubscribe --bind-to none -np 2 \
	"$VIGIL" run -v --precheck off -- sleep $((phase * 3 + 8)) >/dev/null 2>"$SCRATCH/err" &
job=$!
# the agents: the vigil processes holding a UDP socket (their nudge
# socket; the keepers close it), found the same way for any version
declare -A port
pids=""
for _ in $(seq 300); do
	socks=$(ss -Hunap 2>/dev/null | grep '"vigil",pid=')
	[ "$(printf '%s\n' "$socks" | grep -c .)" = 2 ] && break
	sleep 0.1
done
sleep 2   # past the start: the plan, the launch
while read -r p pt; do
	port[$p]=$pt
	pids="$pids $p"
done < <(printf '%s\n' "$socks" | sed -n 's/.*:\([0-9]*\) .*"vigil",pid=\([0-9]*\),.*/\2 \1/p')
if [ "${#port[@]}" != 2 ]; then
	echo "the two agents' nudge sockets were not found" >&2
	exit 1
fi
set -- $pids
a=$1 b=$2
echo "# nudge flood: 2 agents ($(nproc) cores, $(date -u +%Y-%m-%d)), $phase s a phase; $VIGIL"
echo "# agents $a (port ${port[$a]}), $b (port ${port[$b]})"

# measure NAME CMD...: CPU of both agents while CMD runs (or PHASE s)
measure() {
	local name=$1 c0a c0b c1a c1b sent=""
	shift
	c0a=$(cpu "$a"); c0b=$(cpu "$b")
	if [ $# -gt 0 ]; then
		"$@" > "$SCRATCH/sent" 2>&1
		sent=$(awk '{ s += $1 } END { print s + 0 }' "$SCRATCH/sent")
	else
		sleep "$phase"
	fi
	c1a=$(cpu "$a"); c1b=$(cpu "$b")
	awk -v n="$name" -v a=$((c1a - c0a)) -v b=$((c1b - c0b)) -v t="$tck" -v s="$phase" \
		-v sent="${sent:-0}" 'BEGIN {
		pa = 100 * a / t / s; pb = 100 * b / t / s
		printf "%-9s agent A %6.2f %%  agent B %6.2f %% of a core", n, pa, pb
		if (sent > 0) printf "   (%.0f datagrams/s)", sent / s
		printf "\n"
		print pa, pb > "/dev/stderr"
	}' 2>"$SCRATCH/pct.$name"
}
flood_both() {
	local other
	python3 "$SCRATCH/flood.py" "$1" "${port[$b]}" "${port[$a]}" "$phase" &
	other=$!
	python3 "$SCRATCH/flood.py" "$1" "${port[$a]}" "${port[$b]}" "$phase"
	wait "$other"
}

measure quiet
measure stranger flood_both stranger
[ "$(id -u)" = 0 ] && measure forged flood_both forged
for n in stranger forged; do
	[ -s "$SCRATCH/pct.$n" ] || continue
	read -r qa qb < "$SCRATCH/pct.quiet"
	read -r fa fb < "$SCRATCH/pct.$n"
	awk -v n="$n" -v qa="$qa" -v qb="$qb" -v fa="$fa" -v fb="$fb" 'BEGIN {
		q = (qa + qb) / 2; f = (fa + fb) / 2
		printf "ratio %-8s %.1fx the quiet CPU (%.2f %% vs %.2f %% of a core, mean of 2)\n",
		       n, (q > 0 ? f / q : 0), f, q }'
done
wait "$job"
grep -h 'info: nudges:' "$SCRATCH/err" | sed 's/^/# /'
exit 0
