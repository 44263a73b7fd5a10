#!/bin/bash
# vigil run on one node without mpirun (a world of one): exit status,
# run-command rules, signal forwarding to the whole training group, the
# grace before KILL, reaping, byte-exact output, the report.
. "$(dirname "$0")/lib.sh"

# (background runs call "$VIGIL" directly, so that $! is the agent)
run() { "$VIGIL" run --mode single --precheck off "$@"; }
ck="$SCRATCH/ckpt"

# A training that runs to its end: its output, its status.
out=$(run -- "$SIM" --iters 3 --iter-ms 5 --ckpt-dir "$ck" 2>"$SCRATCH/err"); rc=$?
expect_eq "success exit" 0 "$rc"
expect_match "ready line passed through" '^ready [0-9]+$' "$out"
expect_eq "three timing lines" 3 "$(printf '%s\n' "$out" | grep -cE '^this iteration hardware time is [0-9.]+ and e2e time is [0-9.]+ ms\.$')"
expect_match "done" '^done$' "$out"
expect_match "coordinator summary" 'vigil: job succeeded on 1 node' "$(cat "$SCRATCH/err")"

# The training's own status, and 128+N for a signal.
run -- "$SIM" --iters 10 --iter-ms 5 --crash-at 2 --crash-code 3 --ckpt-dir "$ck.2" >/dev/null 2>&1; rc=$?
expect_eq "crash status passes through" 3 "$rc"
run -- sh -c 'kill -SEGV $$' >/dev/null 2>&1; rc=$?
expect_eq "death by SIGSEGV is 139" 139 "$rc"

# Not found, not executable: 127, 126, one clear message.
out=$(run -- no-such-command-vigil --flag 2>&1); rc=$?
expect_eq "missing command is 127" 127 "$rc"
expect_eq "one message" 1 "$(printf '%s\n' "$out" | grep -c "cannot run 'no-such-command-vigil': command not found")"
printf 'echo hi\n' > "$SCRATCH/noexec.sh"; chmod 644 "$SCRATCH/noexec.sh"
out=$(run -- "$SCRATCH/noexec.sh" 2>&1); rc=$?
expect_eq "not executable is 126" 126 "$rc"
expect_match "not executable message" "cannot run '.*noexec.sh': Permission denied" "$out"

# The manual's run-command rules.
out=$(run -- FOO=1 python3 train.py 2>&1); rc=$?
expect_eq "KEY=VALUE rejected" 64 "$rc"
expect_match "KEY=VALUE: the env form is shown" '-- env FOO=1 python3 train.py' "$out"
out=$(run -- "python3 train.py && python3 evaluate.py" 2>&1); rc=$?
expect_eq "a && b rejected" 64 "$rc"
expect_match "a && b: the bash -c form is shown" 'bash -c "python3 train.py && python3 evaluate.py"' "$out"
out=$(run -- "python3 train.py | tee log" 2>&1); rc=$?
expect_eq "pipe rejected" 64 "$rc"
out=$(run 2>&1); rc=$?
expect_eq "no command is a usage error" 64 "$rc"

# A checkpoint signal to the agent reaches the training and every process
# of its group (here two grandchildren), exactly once each.
log="$SCRATCH/sig.out"
"$VIGIL" run --mode single --precheck off -- "$SIM" --iters 100000 --iter-ms 10 --fork 2 --ckpt-dir "$ck.3" >"$log" 2>&1 &
agent=$!
if wait_for "$log" '^ready ' 10; then pass "signal test: training ready"; else fail "signal test: no ready line"; fi
kill -USR1 "$agent"
wait "$agent"; rc=$?
expect_eq "checkpoint then exit 0" 0 "$rc"
expect_eq "training got SIGUSR1 once" 1 "$(grep -c '^signal SIGUSR1$' "$log")"
expect_eq "each grandchild got it once" 2 "$(grep -c '^grandchild [0-9]* signal SIGUSR1$' "$log")"
expect_match "checkpoint written" '^checkpoint saved at iteration [0-9]+$' "$(cat "$log")"
no_leftovers "after the checkpoint signal" "$ck.3"

# SIGTERM to the agent: to the training's group; a training that ignores
# it is killed after the grace, and nothing is left behind.
log="$SCRATCH/term.out"
start=$(date +%s%N)
"$VIGIL" run --mode single --precheck off --grace 1 -- "$SIM" --iters 100000 --iter-ms 10 --ignore-term --fork 1 --ckpt-dir "$ck.4" >"$log" 2>&1 &
agent=$!
wait_for "$log" '^ready ' 10
kill -TERM "$agent"
wait "$agent"; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "killed after the grace: 128+KILL" 137 "$rc"
expect_eq "SIGTERM reached the training once" 1 "$(grep -c '^signal SIGTERM$' "$log")"
if [ "$ms" -lt 6000 ]; then pass "grace honoured (${ms} ms)"; else fail "took ${ms} ms"; fi
no_leftovers "after the grace" "$ck.4"

# A child that double-forks a daemon: the agent (a subreaper) reaps it.
run -- sh -c "sh -c 'sleep 30 # $SCRATCH/orphan-marker' & exit 0" >/dev/null 2>&1; rc=$?
expect_eq "exit of a child that left an orphan" 0 "$rc"
no_leftovers "orphan of the training" "$SCRATCH/orphan-marker"

# Output byte-exact: 100 MB of binary, then a 1 MB line with no newline.
python3 - "$SCRATCH/big.bin" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    block = bytes(range(256)) * 4096          # 1 MiB of every byte value
    for _ in range(100):
        f.write(block)
    f.write(b"x" * (1 << 20))                  # a final line with no newline
PY
run -- cat "$SCRATCH/big.bin" > "$SCRATCH/big.out" 2>"$SCRATCH/big.err"; rc=$?
expect_eq "cat exit" 0 "$rc"
if cmp -s "$SCRATCH/big.bin" "$SCRATCH/big.out"; then pass "101 MiB byte-exact through a pipe"
else fail "output differs: $(cmp "$SCRATCH/big.bin" "$SCRATCH/big.out" 2>&1 | head -1)"; fi
# The same through the pseudo-terminal the training gets under mpirun.
head -c 8388608 "$SCRATCH/big.bin" > "$SCRATCH/pty.bin"; printf 'tail without newline\r\n\r' >> "$SCRATCH/pty.bin"
VIGIL_PTY=1 run -- cat "$SCRATCH/pty.bin" > "$SCRATCH/pty.out" 2>/dev/null
if cmp -s "$SCRATCH/pty.bin" "$SCRATCH/pty.out"; then pass "8 MiB byte-exact through the pty"
else fail "pty output differs: $(cmp "$SCRATCH/pty.bin" "$SCRATCH/pty.out" 2>&1 | head -1)"; fi
out=$(VIGIL_PTY=1 run -- sh -c 'test -t 1 && echo tty || echo notty' 2>/dev/null); expect_eq "the training sees a terminal" tty "$out"
rm -f "$SCRATCH"/big.* "$SCRATCH"/pty.*

# Back-pressure: while nobody reads the agent's stdout, the training is
# held (its writes block), the agent's memory stays bounded, and signals
# are still served; when the reader comes back every byte arrives.
mkfifo "$SCRATCH/fifo"
"$VIGIL" run --mode single --precheck off -- "$SIM" --spam 200000000 --spam-line 1000 \
	--iters 1 --iter-ms 1 --ckpt-signal USR2 --ckpt-dir "$ck.bp" >"$SCRATCH/fifo" 2>"$SCRATCH/bp.err" &
agent=$!
exec 9<"$SCRATCH/fifo"          # a reader that does not read yet
# The signal goes to the agent once it runs the training (its handlers
# are set by then), and the training has had a second to fill the pipe.
for _ in $(seq 100); do pgrep -P "$agent" >/dev/null && break; sleep 0.1; done
sleep 1
rss=$(awk '/^VmRSS/ {print $2}' /proc/$agent/status)
kill -USR1 "$agent"
sleep 0.5
if kill -0 "$agent" 2>/dev/null; then pass "agent alive while output is held"; else fail "agent gone"; fi
cat <&9 > "$SCRATCH/bp.out"
exec 9<&-
wait "$agent"; rc=$?
expect_eq "held job ends well" 0 "$rc"
if [ "$rss" -lt 65536 ]; then pass "agent RSS bounded while held (${rss} kB)"; else fail "agent RSS ${rss} kB"; fi
# (the echo may land inside a spam line: the blocked write it interrupted
# resumes after it)
expect_eq "signal served while output was held" 1 "$(grep -c 'signal SIGUSR1' "$SCRATCH/bp.out")"
expect_eq "every spam byte arrived (999 '#' per 1000-byte line)" 199800000 "$(tr -cd '#' < "$SCRATCH/bp.out" | wc -c)"
rm -f "$SCRATCH/bp.out"

# The report names the failure.
run --report "$SCRATCH/report.json" -- "$SIM" --iters 10 --iter-ms 5 --crash-at 1 --crash-code 5 --stderr-lines 3 --ckpt-dir "$ck.5" >/dev/null 2>&1
summary=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
f = r["first_failure"]
print(r["state"], r["exit_code"], f["rank"], f["exit_code"], len(f["stderr_tail"]) > 0)' "$SCRATCH/report.json")
expect_eq "report" "error 5 0 5 True" "$summary"

# The report's stderr tail: the last 20 lines, a long one cut to 512
# bytes, the unterminated last one included; stdout's lines are not in it.
run --report "$SCRATCH/report.json" -- sh -c 'for i in $(seq 1 40); do echo "err $i" >&2; echo "out $i"; done
head -c 700 /dev/zero | tr "\0" x >&2; echo >&2; printf last >&2; exit 3' >/dev/null 2>&1
tail_summary=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["first_failure"]["stderr_tail"]
print(len(t), t[0], len(t[-2]), set(t[-2]), t[-1])' "$SCRATCH/report.json")
expect_eq "report: stderr tail" "20 err 23 512 {'x'} last" "$tail_summary"

finish
