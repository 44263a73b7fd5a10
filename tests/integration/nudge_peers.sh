#!/bin/bash
# The nudge socket under mpirun: each agent binds the address its MPI is
# told to use (the loopback, OMPI_MCA_btl_tcp_if_include=lo, 127.0.0.1),
# the agents' own nudges still arrive, and datagrams from anywhere else,
# another loopback address (127.0.0.2) or another port of the agents'
# own address, are dropped and counted: none opens a busy window (-v says
# how many each agent took and dropped).
. "$(dirname "$0")/lib.sh"

cat > "$SCRATCH/send.py" <<'PY'
import socket, sys, time
src, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
for _ in range(n):
    s.sendto(b"!", ("127.0.0.1", port))
    time.sleep(0.01)
PY

(cd "$SCRATCH" && timeout -k 10 120 $MPIRUN -np 2 "$VIGIL" run -v --precheck off \
	-- sh -c 'sleep 4') >/dev/null 2>"$SCRATCH/err" &
job=$!
ports=""
for _ in $(seq 300); do
	ports=$(sed -n 's/.*info: nudges arrive at 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$SCRATCH/err")
	[ "$(printf '%s\n' "$ports" | grep -c .)" = 2 ] && break
	sleep 0.1
done
expect_eq "both agents bound to the loopback MPI is told to use" 2 \
	"$(printf '%s\n' "$ports" | grep -c .)"
for p in $ports; do
	python3 "$SCRATCH/send.py" 127.0.0.2 "$p" 5
	python3 "$SCRATCH/send.py" 127.0.0.1 "$p" 3
done
wait "$job"; rc=$?
err=$(cat "$SCRATCH/err")
expect_eq "job exit" 0 "$rc"
expect_match "a stranger's datagram: said once" \
	"info: a nudge datagram from 127\\.0\\.0\\.[12]:[0-9]+ dropped: not from this job's agents" "$err"
expect_eq "every stranger's datagram dropped, on both agents" "8 8" \
	"$(sed -n 's/.*info: nudges: .* \([0-9]*\) datagrams* from elsewhere dropped/\1/p' "$SCRATCH/err" | paste -sd' ')"
taken=$(sed -n 's/.*info: nudges: \([0-9]*\) from this job.*/\1/p' "$SCRATCH/err" |
	awk '{ s += $1 } END { print s + 0 }')
expect_eq "the agents' own nudges still taken" 1 "$(( ${taken:-0} > 0 ))"

finish
