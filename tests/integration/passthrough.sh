#!/bin/bash
# The training's output through the agent when it streams: a fast
# line-by-line writer's pipe is left to fill for a moment before it is
# read (pace.h), and a pseudo-terminal's stream is held for a moment and
# written in larger pieces (node.c).  Neither may lose, reorder or cut a
# byte, nor keep a line waiting once the training pauses: the last lines
# of a burst reach the reader within a fraction of a second, not at the
# training's next write.  On a pipe and on a pty, alone and under mpirun.
. "$(dirname "$0")/lib.sh"

lines=${PASSTHROUGH_LINES:-200000}

# The training: LINES lines, one write() each, a timing line in 20; then
# "mark <ns>" (when it was written, CLOCK_MONOTONIC) after the burst, a
# pause of 2 s, "end".
cat > "$SCRATCH/writer.py" <<'PY'
import os, sys, time
n = int(sys.argv[1])
for i in range(n):
    if i % 20 == 0:
        line = "[default0]:this iteration hardware time is %d.%03d and e2e time is %d.%03d ms.\n" % (2000 + i % 400, i % 1000, 3000 + i % 600, i % 997)
    else:
        line = "[default0]:step %d/100000 | loss %d.%04d | tokens/s %d\n" % (i, i % 4, i % 10000, 100000 + i % 50000)
    os.write(1, line.encode())
os.write(1, b"mark %d\n" % time.monotonic_ns())
time.sleep(2)
os.write(1, b"end\n")
PY

# The reader: stdin (a pipe) or a pty it makes for the command it runs;
# checks that every line came whole and in order, and prints how long the
# mark took to arrive, in ms (from its write to the read that got it).
cat > "$SCRATCH/reader.py" <<'PY'
import os, pty, re, subprocess, sys, time, tty
n = int(sys.argv[1])
if sys.argv[2] == "pipe":
    fd = 0
else:
    m, s = pty.openpty()
    tty.setraw(s)
    p = subprocess.Popen(sys.argv[3:], stdout=s)
    os.close(s)
    fd = m
# Read as fast as it comes, each chunk with the time it was read; look at
# the lines only at the end, so that this reader never lags the writer.
chunks, times = [], []
while True:
    try:
        b = os.read(fd, 1 << 16)
    except OSError:
        break
    if not b:
        break
    chunks.append(b)
    times.append(time.monotonic_ns())
if sys.argv[2] != "pipe":
    p.wait()
data = b"".join(chunks)
ends, total = [], 0
for c in chunks:
    total += len(c)
    ends.append(total)
want, delay, bad, end = 0, None, 0, False
step = re.compile(rb"^\[default0\]:(?:step (\d+)/|this iteration hardware time is (\d+)\.(\d+) and)")
at = 0
for l in data.split(b"\n"):
    at += len(l) + 1
    if l.startswith(b"mark "):
        # the time its newline was read
        k = next(i for i, e in enumerate(ends) if e >= at)
        delay = (times[k] - int(l.split()[1])) / 1e6
        continue
    if l == b"end":
        end = True
        continue
    if not l.startswith(b"[default0]:"):
        continue  # the agent's own lines (mpirun merges them in)
    m = step.match(l)
    if not m or (m.group(1) is not None and int(m.group(1)) != want) or \
       (m.group(2) is not None and want % 20 != 0):
        bad += 1
    want += 1
print("lines %d bad %d end %d delay %.1f" % (want, bad, end, delay if delay is not None else -1))
PY

# check WHAT RESULT: every line, whole and in order, the end, the mark in time
check() {
	local what=$1 res=$2 got bad end delay
	read -r _ got _ bad _ end _ delay <<<"$res"
	expect_eq "$what: every line" "$lines" "$got"
	expect_eq "$what: none cut or out of order" 0 "$bad"
	expect_eq "$what: the last line" 1 "$end"
	# held or left to fill for 1 ms at most; 2 s would mean it waited
	# for the training's next write
	if awk -v d="$delay" 'BEGIN { exit !(d >= 0 && d < 500) }'; then
		pass "$what: the burst's last line in $delay ms"
	else
		fail "$what: the burst's last line after $delay ms (a line held until the next write?)"
	fi
}

run() { "$VIGIL" run --mode single --precheck off "$@"; }

res=$(run -- python3 "$SCRATCH/writer.py" "$lines" 2>"$SCRATCH/err.pipe" | python3 "$SCRATCH/reader.py" "$lines" pipe)
check "pipe" "$res"
res=$(python3 "$SCRATCH/reader.py" "$lines" pty "$VIGIL" run --mode single --precheck off -- \
	python3 "$SCRATCH/writer.py" "$lines" 2>"$SCRATCH/err.pty")
check "pty" "$res"

# The agent's own stdout, a pipe, grows to 1 MiB (a full 64 KiB pipe costs
# a wake-up per page its reader frees: bulk output passed at half speed
# with 16 cores).
cat > "$SCRATCH/pipesize.py" <<'PY'
import fcntl, os, subprocess, sys
r, w = os.pipe()
p = subprocess.Popen(sys.argv[1:], stdout=w, stderr=subprocess.DEVNULL)
os.close(w)
while os.read(r, 1 << 16):
    pass
print(p.wait(), fcntl.fcntl(r, 1032))       # F_GETPIPE_SZ
PY
expect_eq "the agent's stdout pipe grown to 1 MiB" "0 1048576" \
	"$(python3 "$SCRATCH/pipesize.py" "$VIGIL" run --mode single --precheck off -- true)"

# Under mpirun the agent's stdout is mpirun's pseudo-terminal: the
# training gets one too, and its stream is held; rank 0's training alone
# is shown (--output coordinator keeps the other's in its log).  Through
# sh, so that the PyTorch mode runs the script as it is.
res=$(cd "$SCRATCH" && timeout -k 10 120 $MPIRUN -np 2 "$VIGIL" run --precheck off --output coordinator \
	--summary-interval 0 -- sh -c 'exec python3 "$0" "$1"' "$SCRATCH/writer.py" "$lines" \
	2>"$SCRATCH/err.mpi" | python3 "$SCRATCH/reader.py" "$lines" pipe)
check "mpirun" "$res"

# A reader slower than the training: the agent's output fills (1 MiB), it
# stops reading the training (back-pressure) and reads again once there is
# room, whether that room was made by a write on its reader's readiness or
# by the release of held output.  A pty's stream and a pipe's, lines and a
# long run of bytes without any; every byte arrives, none twice, and the
# job ends well within its limit.
cat > "$SCRATCH/slow.py" <<'PY'
import os, sys, time
n = 0
while True:
    b = os.read(0, 16384)
    if not b:
        break
    n += len(b)
    time.sleep(0.002)
print(n)
PY
for pty in 1 0; do
	for what in lines bytes; do
		if [ "$what" = lines ]; then
			t="python3 $SCRATCH/writer.py 60000"
			want=$(python3 "$SCRATCH/writer.py" 60000 | wc -c)
		else
			t="head -c 8388608 /dev/zero"
			want=8388608
		fi
		got=$(VIGIL_PTY=$pty timeout -k 5 120 "$VIGIL" run --mode single --precheck off -- $t \
			2>/dev/null | python3 "$SCRATCH/slow.py"); rc=${PIPESTATUS[0]}
		# the writer's mark line differs in its digits only, not its length
		expect_eq "slow reader, VIGIL_PTY=$pty, $what: the job ended" 0 "$rc"
		expect_eq "slow reader, VIGIL_PTY=$pty, $what: every byte" "$want" "$got"
	done
done

# A reader that stops, then takes everything at once (through a pipe as
# large as the agent's queue): the agent stops reading the training with
# its queue full, and the write that empties the queue in one go must
# start the reading again.
cat > "$SCRATCH/pause.py" <<'PY'
import fcntl, os, sys, time
fcntl.fcntl(0, 1031, 1 << 20)   # F_SETPIPE_SZ
n = 0
for pause in (0.5, 0.5, 0.5):
    time.sleep(pause)
    while True:
        try:
            b = os.read(0, 1 << 20)
        except BlockingIOError:
            break
        if not b:
            print(n)
            sys.exit(0)
        n += len(b)
        if len(b) < 65536:
            break
while True:
    b = os.read(0, 1 << 20)
    if not b:
        break
    n += len(b)
print(n)
PY
for pty in 1 0; do
	got=$(VIGIL_PTY=$pty timeout -k 5 60 "$VIGIL" run --mode single --precheck off -- \
		head -c 16777216 /dev/zero 2>/dev/null | python3 "$SCRATCH/pause.py"); rc=${PIPESTATUS[0]}
	expect_eq "paused reader, VIGIL_PTY=$pty: the job ended" 0 "$rc"
	expect_eq "paused reader, VIGIL_PTY=$pty: every byte" 16777216 "$got"
done

# The same, the agent's stdout a pty drained as fast as it comes: a write
# of held output may then empty the whole queue at once, while the reading
# is stopped for want of room; it must start again (a hang before, in about
# one run in six).
cat > "$SCRATCH/ptycount.py" <<'PY'
import os, pty, subprocess, sys, tty
m, s = pty.openpty()
tty.setraw(s)
p = subprocess.Popen(sys.argv[1:], stdout=s, stderr=subprocess.DEVNULL)
os.close(s)
n = 0
try:
    while True:
        b = os.read(m, 1 << 16)
        if not b:
            break
        n += len(b)
except OSError:
    pass
print(n, p.wait())
PY
ended=0
for i in $(seq 1 16); do
	res=$(timeout -k 5 30 python3 "$SCRATCH/ptycount.py" "$VIGIL" run --mode single --precheck off -- \
		head -c 67108864 /dev/zero)
	[ "$res" = "67108864 0" ] && ended=$((ended + 1))
done
expect_eq "pty to a fast pty: every run ended with every byte" 16 "$ended"

# Lines written in two pieces: torch's launcher runs its workers
# unbuffered, so a print is its text, then its newline, in two writes.
# Two ranks printing at the same moment, under mpirun: every line comes
# out whole (the agent keeps a line begun until its end, 20 ms at most;
# without it, mpirun put one rank's line inside the other's).  A line
# whose end does not come (a prompt) still goes out within that time.
cat > "$SCRATCH/halves.py" <<'PY'
import os, sys, time
rank = os.environ["VIGIL_NODE_RANK"]
for i in range(30):
    time.sleep(0.02 - time.time() % 0.02)
    os.write(1, b"rank %s line %d" % (rank.encode(), i))
    time.sleep(0.002)
    os.write(1, b"\n")
PY
res=$(timeout -k 10 120 $MPIRUN -np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" run --precheck off \
	--summary-interval 0 -- sh -c 'exec python3 "$0"' "$SCRATCH/halves.py" : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" run --precheck off --summary-interval 0 -- \
	sh -c 'exec python3 "$0"' "$SCRATCH/halves.py" 2>"$SCRATCH/err.halves")
expect_eq "lines in two writes, two ranks: every line whole" 60 \
	"$(printf '%s\n' "$res" | grep -cE '^rank [01] line [0-9]+$')"
expect_eq "lines in two writes, two ranks: nothing else" 0 \
	"$(printf '%s\n' "$res" | grep -c 'rank.*rank')"
cat > "$SCRATCH/prompt.py" <<'PY'
import os, time
# the reader: what came up to the prompt, and how long after its write
buf = b""
while b"prompt> " not in buf:
    b = os.read(0, 64)
    if not b:
        break
    buf += b
now = time.time()
stamp, _, rest = buf.partition(b"\n")
print(repr(rest), int((now - float(stamp)) * 1000))
PY
res=$(timeout -k 5 60 "$VIGIL" run --mode single --precheck off -- \
	python3 -c 'import os,sys,time; os.write(1, b"%f\n" % time.time()); os.write(1, b"prompt> "); time.sleep(2); os.write(1, b"x\n")' \
	2>/dev/null | python3 "$SCRATCH/prompt.py")
expect_match "a line whose end does not come goes out in time" "^b'prompt> ' ([0-9]|[1-9][0-9]|[1-9][0-9][0-9])\$" "$res"

# Timing lines were read from the stream: the reduction saw every iteration.
out=$(run --report "$SCRATCH/r.json" -- python3 "$SCRATCH/writer.py" 20000 2>/dev/null >/dev/null; \
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["performance"]["iterations"])' "$SCRATCH/r.json" 2>&1)
expect_eq "every timing line counted" 1000 "$out"
finish
