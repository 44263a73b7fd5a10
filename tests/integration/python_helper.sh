#!/bin/bash
# The Python helper, contrib/python/vigil_timing.py: its unit tests (on a
# fake device; one more on a real CUDA device when PyTorch has one), and
# the lines it prints on this machine's CPU.
. "$(dirname "$0")/lib.sh"

PYDIR="$TESTS_SRCDIR/../contrib/python"
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 not found"
	exit 77
fi
# No __pycache__ in the source tree: distcheck makes it read-only.
export PYTHONDONTWRITEBYTECODE=1

out=$(cd "$SCRATCH" && python3 -B -m unittest discover -s "$PYDIR" -p 'test_vigil_timing.py' -v 2>&1); rc=$?
printf '%s\n' "$out" | tail -n 4
expect_eq "unit tests pass" 0 "$rc"
expect_match "every test ran" '^Ran (1[5-9]|[2-9][0-9]) tests' "$out"
expect_no_match "no failure" '^(FAIL|ERROR):' "$out"

# A training loop as a user writes it, on the CPU: one line per
# iteration, in the manual's format, on stdout.
cat > "$SCRATCH/loop.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from vigil_timing import IterationTimer

timer = IterationTimer(device="cpu")
for i in range(3):
    with timer.iteration():
        sum(range(20000))
        with timer.device_section():
            sum(range(20000))
timer = IterationTimer(device="cpu", every=2)
for i in range(4):
    timer.start()
    timer.stop()
PY
out=$(cd "$SCRATCH" && python3 -B loop.py "$PYDIR"); rc=$?
expect_eq "loop exit" 0 "$rc"
expect_eq "one line per measured iteration" 5 "$(printf '%s\n' "$out" | grep -c .)"
expect_eq "every line in the manual's format" 5 "$(printf '%s\n' "$out" |
	grep -Ec '^this iteration hardware time is [0-9]+\.[0-9]{3} and e2e time is [0-9]+(\.[0-9]+)?(e-[0-9]+)? ms\.$')"
# hardware time (a part of the iteration) never above e2e time
bad=$(printf '%s\n' "$out" | awk '{ if ($6 + 0 > $11 + 0.001) print }')
expect_eq "hardware time within e2e time" "" "$bad"
expect_eq "nothing written into the source tree" "" \
	"$(find "$PYDIR" -name '__pycache__' -o -name '*.pyc' 2>/dev/null)"

finish
