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

# Under mpirun the agent's stdout is mpirun's pseudo-terminal: the
# training gets one too, and its stream is held; rank 0's training alone
# is shown (--output coordinator keeps the other's in its log).  Through
# sh, so that the PyTorch mode runs the script as it is.
res=$(cd "$SCRATCH" && timeout -k 10 120 $MPIRUN -np 2 "$VIGIL" run --precheck off --output coordinator \
	--summary-interval 0 -- sh -c 'exec python3 "$0" "$1"' "$SCRATCH/writer.py" "$lines" \
	2>"$SCRATCH/err.mpi" | python3 "$SCRATCH/reader.py" "$lines" pipe)
check "mpirun" "$res"

# Timing lines were read from the stream: the reduction saw every iteration.
out=$(run --report "$SCRATCH/r.json" -- python3 "$SCRATCH/writer.py" 20000 2>/dev/null >/dev/null; \
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["performance"]["iterations"])' "$SCRATCH/r.json" 2>&1)
expect_eq "every timing line counted" 1000 "$out"
finish
