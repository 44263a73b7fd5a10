#!/bin/bash
# contrib/examples/train_sim.py on its own, without vigil: the fake job the
# other integration tests and the demos rely on.  Its output format, the
# checkpoint signal and resume, crashes, hangs, SIGTERM, grandchildren in
# its process group, and output floods.
. "$(dirname "$0")/lib.sh"

SIM="$TESTS_SRCDIR/../contrib/examples/train_sim.py"
TIMING='^this iteration hardware time is [0-9]+\.[0-9]{3} and e2e time is [0-9]+\.[0-9]+ ms\.$'

# Processes (and groups) started in the background, killed if still there.
started=()
cleanup() {
	local p
	for p in "${started[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	cleanup_scratch
}
trap cleanup EXIT

# wait_for FILE REGEX [COUNT] [SECONDS]: until FILE has COUNT lines matching.
wait_for() {
	local file=$1 re=$2 count=${3:-1} limit=${4:-15} i n
	for ((i = 0; i < limit * 20; i++)); do
		n=$(grep -Ec -- "$re" "$file" 2>/dev/null)
		[ "${n:-0}" -ge "$count" ] && return 0
		sleep 0.05
	done
	return 1
}

# gone PID: not running (a zombie waiting for its reaper counts as gone).
gone() {
	local st
	kill -0 "$1" 2>/dev/null || return 0
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	case $st in Z*|"") return 0 ;; esac
	return 1
}

# in_group PGID: the live processes of a process group.
in_group() {
	ps -e -o pid=,pgid=,stat= | awk -v g="$1" '$2 == g && $3 !~ /^Z/ { print $1 }'
}

# wait_exit PID [SECONDS]: the exit status of our background child PID in
# $rc, or "timeout" (and the process killed) when it does not end in time.
wait_exit() {
	local pid=$1 limit=${2:-15} i
	for ((i = 0; i < limit * 20; i++)); do
		if gone "$pid"; then
			# (bash would report a killed job on stderr)
			wait "$pid" 2>/dev/null; rc=$?
			return 0
		fi
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rc=timeout
	return 1
}

# count REGEX FILE
count() { grep -Ec -- "$1" "$2"; }

expect_eq "simulator is executable" yes "$([ -x "$SIM" ] && echo yes)"

# A plain run: ready, identity, timing lines in the manual's format, done.
c="$SCRATCH/c"
out=$(RANK=3 WORLD_SIZE=4 VIGIL_RESTART_COUNT=2 timeout -k 5 60 "$SIM" \
	--iters 3 --iter-ms 20 --hw-ratio 0.5 --ckpt-dir "$c"); rc=$?
expect_eq "plain run exit" 0 "$rc"
expect_match "first line is ready and a pid" '^ready [0-9]+$' "$(printf '%s\n' "$out" | sed -n 1p)"
expect_eq "identity from the environment" "rank 3 of 4 restart 2" "$(printf '%s\n' "$out" | sed -n 2p)"
expect_eq "three timing lines" 3 "$(printf '%s\n' "$out" | grep -Ec "$TIMING")"
expect_eq "last line" done "$(printf '%s\n' "$out" | tail -n 1)"
expect_eq "nothing else" 6 "$(printf '%s\n' "$out" | wc -l)"
# Hardware time is 0.5 of 20 ms within the noise, e2e at least 20 ms.
ratios=$(printf '%s\n' "$out" | grep -E "$TIMING" | awk '{
	ok = ($6 >= 9.7 && $6 <= 10.3 && $11 >= 19.9 && $6 < $11)
	printf "%s", ok ? "y" : "n" }')
expect_eq "hardware and e2e times" yyy "$ratios"
expect_eq "no checkpoint without a reason" no "$([ -e "$c" ] && echo yes || echo no)"

# The checkpoint signal: saved at the iterations completed, exit 0.
log="$SCRATCH/usr1.out"
"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$c" >"$log" 2>&1 &
pid=$!; started+=("$pid")
wait_for "$log" "$TIMING" 3 || fail "no timing lines before SIGUSR1"
kill -USR1 "$pid"
wait_exit "$pid"
expect_eq "SIGUSR1 exit" 0 "$rc"
expect_eq "SIGUSR1 echoed" 1 "$(count '^signal SIGUSR1$' "$log")"
saved=$(sed -n 's/^checkpoint saved at iteration \([0-9]*\)$/\1/p' "$log")
expect_eq "checkpoint at the iterations completed" "$(count "$TIMING" "$log")" "$saved"
expect_eq "checkpoint file" "$saved" "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["iteration"])' "$c/train_sim-rank0.json")"
expect_eq "no temporary file left" "train_sim-rank0.json" "$(ls "$c")"
expect_eq "no done after the checkpoint" 0 "$(count '^done$' "$log")"

# A restart resumes after that iteration and stops at --iters.
out=$(timeout -k 5 60 "$SIM" --iters $((saved + 2)) --iter-ms 10 --ckpt-dir "$c"); rc=$?
expect_eq "resume exit" 0 "$rc"
expect_eq "resume line" "resumed from iteration $saved" "$(printf '%s\n' "$out" | grep '^resumed')"
expect_eq "two iterations left" 2 "$(printf '%s\n' "$out" | grep -Ec "$TIMING")"
# Another rank has no checkpoint of its own.
out=$(RANK=1 timeout -k 5 60 "$SIM" --iters 1 --iter-ms 1 --ckpt-dir "$c")
expect_no_match "rank 1 starts afresh" '^resumed' "$out"

# --no-exit-on-ckpt: save and carry on to the end.
log="$SCRATCH/cont.out"
"$SIM" --iters 40 --iter-ms 20 --no-exit-on-ckpt --ckpt-dir "$SCRATCH/c2" >"$log" 2>&1 &
pid=$!; started+=("$pid")
wait_for "$log" "$TIMING" 2 || fail "no timing lines before SIGUSR1 (carry on)"
kill -USR1 "$pid"
wait_exit "$pid"
expect_eq "carry on exit" 0 "$rc"
expect_eq "carry on saved" 1 "$(count '^checkpoint saved at iteration [0-9]+$' "$log")"
expect_eq "carry on finished" "40 1" "$(count "$TIMING" "$log") $(count '^done$' "$log")"

# Another checkpoint signal; SIGUSR1 is then only echoed.
log="$SCRATCH/usr2.out"
"$SIM" --iters 100000 --iter-ms 20 --ckpt-signal USR2 --ckpt-dir "$SCRATCH/c3" >"$log" 2>&1 &
pid=$!; started+=("$pid")
wait_for "$log" "$TIMING" 1 || fail "no timing lines before SIGUSR2"
kill -USR1 "$pid"
wait_for "$log" '^signal SIGUSR1$' || fail "SIGUSR1 not echoed"
kill -USR2 "$pid"
wait_exit "$pid"
expect_eq "--ckpt-signal USR2 exit" 0 "$rc"
expect_eq "only SIGUSR2 saves" "signal SIGUSR1|signal SIGUSR2|checkpoint saved at iteration N" \
	"$(grep -Ev "$TIMING|^ready|^rank" "$log" | sed 's/iteration [0-9]*$/iteration N/' | paste -sd'|')"

# A crash at iteration 3: its status, a traceback on stderr, two iterations.
out=$(timeout -k 5 60 "$SIM" --iters 10 --iter-ms 1 --crash-at 3 --crash-code 42 \
	--ckpt-dir "$SCRATCH/c4" 2>"$SCRATCH/crash.err"); rc=$?
expect_eq "crash exit" 42 "$rc"
expect_eq "iterations before the crash" 2 "$(printf '%s\n' "$out" | grep -Ec "$TIMING")"
expect_match "traceback on stderr" '^Traceback' "$(cat "$SCRATCH/crash.err")"
expect_match "crash names the iteration" 'simulated crash at iteration 3' "$(cat "$SCRATCH/crash.err")"
out=$(timeout -k 5 60 "$SIM" --iters 10 --iter-ms 1 --crash-at 3 --ckpt-dir "$SCRATCH/c4" 2>/dev/null); rc=$?
expect_eq "default crash code" 1 "$rc"
out=$(VIGIL_RESTART_COUNT=1 timeout -k 5 60 "$SIM" --iters 10 --iter-ms 1 --crash-at 3 --crash-times 1 \
	--ckpt-dir "$SCRATCH/c4" 2>&1); rc=$?
expect_eq "no crash after --crash-times restarts" 0 "$rc"
# With --ckpt-every the restart resumes from the last periodic checkpoint.
out=$(timeout -k 5 60 "$SIM" --iters 10 --iter-ms 1 --crash-at 8 --ckpt-every 3 \
	--ckpt-dir "$SCRATCH/c5" 2>/dev/null); rc=$?
expect_eq "periodic checkpoints before the crash" "1 6" "$rc $(printf '%s\n' "$out" | sed -n 's/^checkpoint saved at iteration //p' | tail -n 1)"
out=$(timeout -k 5 60 "$SIM" --iters 10 --iter-ms 1 --ckpt-dir "$SCRATCH/c5"); rc=$?
expect_match "restart after crash resumes" '^resumed from iteration 6$' "$out"

# SIGTERM: checkpoint and 143.
log="$SCRATCH/term.out"
"$SIM" --iters 100000 --iter-ms 20 --ckpt-dir "$SCRATCH/c6" >"$log" 2>&1 &
pid=$!; started+=("$pid")
wait_for "$log" "$TIMING" 1 || fail "no timing lines before SIGTERM"
kill -TERM "$pid"
wait_exit "$pid"
expect_eq "SIGTERM exit" 143 "$rc"
expect_eq "SIGTERM saves" 1 "$(count '^checkpoint saved at iteration [0-9]+$' "$log")"

# --ignore-term: echoed, ignored, training goes on; SIGKILL ends it.
log="$SCRATCH/ignore.out"
"$SIM" --iters 100000 --iter-ms 20 --ignore-term --ckpt-dir "$SCRATCH/c7" >"$log" 2>&1 &
pid=$!; started+=("$pid")
wait_for "$log" "$TIMING" 1 || fail "no timing lines before ignored SIGTERM"
kill -TERM "$pid"
wait_for "$log" '^ignored SIGTERM$' || fail "SIGTERM not reported as ignored"
n=$(count "$TIMING" "$log")
wait_for "$log" "$TIMING" $((n + 3)) || fail "no progress after the ignored SIGTERM"
expect_eq "alive after SIGTERM" running "$(gone "$pid" && echo gone || echo running)"
kill -KILL "$pid"
wait_exit "$pid"
expect_eq "SIGKILL ends it" 137 "$rc"
expect_eq "nothing saved on ignored SIGTERM" 0 "$(count '^checkpoint saved' "$log")"

# --hang-at: no progress, signals echoed but not acted on.
log="$SCRATCH/hang.out"
"$SIM" --iters 100000 --iter-ms 10 --hang-at 3 --ckpt-dir "$SCRATCH/c8" >"$log" 2>&1 &
pid=$!; started+=("$pid")
wait_for "$log" '^simulated hang at iteration 3' || fail "no hang"
kill -USR1 "$pid"
kill -TERM "$pid"
wait_for "$log" '^signal SIGTERM$' || fail "hung simulator does not echo"
sleep 0.3
expect_eq "hung simulator survives TERM and USR1" running "$(gone "$pid" && echo gone || echo running)"
expect_eq "hung simulator echoed SIGUSR1" 1 "$(count '^signal SIGUSR1$' "$log")"
expect_eq "hang: two iterations, no checkpoint" "2 0" "$(count "$TIMING" "$log") $(count '^checkpoint' "$log")"
kill -KILL "$pid"
wait_exit "$pid"

# --fork: grandchildren in the same group get a group signal; they go when
# the simulator goes.  setsid gives it a group of its own to signal.
log="$SCRATCH/fork.out"
setsid "$SIM" --iters 100000 --iter-ms 20 --fork 2 --ckpt-dir "$SCRATCH/c9" >"$log" 2>&1 &
started+=("$!")
wait_for "$log" '^ready [0-9]+$' || fail "no ready (fork)"
wait_for "$log" '^grandchild [0-9]+ started$' 2 || fail "grandchildren did not start"
pgid=$(sed -n 's/^ready //p' "$log")
started+=("$pgid")
gkids=$(sed -n 's/^grandchild \([0-9]*\) started$/\1/p' "$log" | sort | tr '\n' ' ')
expect_eq "simulator leads its group" "$pgid" "$(ps -o pgid= -p "$pgid" | tr -d ' ')"
for g in $gkids; do
	expect_eq "grandchild $g in the group" "$pgid" "$(ps -o pgid= -p "$g" | tr -d ' ')"
done
kill -USR2 -- "-$pgid"
wait_for "$log" '^grandchild [0-9]+ signal SIGUSR2$' 2 || fail "grandchildren did not echo SIGUSR2"
wait_for "$log" '^signal SIGUSR2$' || fail "simulator did not echo SIGUSR2"
expect_eq "each grandchild echoed" "$gkids" \
	"$(sed -n 's/^grandchild \([0-9]*\) signal SIGUSR2$/\1/p' "$log" | sort | tr '\n' ' ')"
kill -USR1 -- "-$pgid"
wait_for "$log" '^grandchild [0-9]+ signal SIGUSR1$' 2 || fail "grandchildren did not echo SIGUSR1"
wait_for "$log" '^checkpoint saved at iteration [0-9]+$' || fail "no checkpoint (fork)"
left=""
for g in $pgid $gkids; do
	for ((i = 0; i < 200; i++)); do gone "$g" && break; sleep 0.05; done
	gone "$g" || left="$left $g"
done
expect_eq "simulator and grandchildren gone after SIGUSR1" "" "$left"

# "ready" means the whole group handles signals: one sent at once reaches
# every grandchild, even one still setting up.  SIGTERM to the group then
# ends the grandchildren too, each echoing it.
log="$SCRATCH/fork2.out"
setsid "$SIM" --iters 100000 --iter-ms 20 --fork 3 --ckpt-dir "$SCRATCH/c10" >"$log" 2>&1 &
started+=("$!")
wait_for "$log" '^ready [0-9]+$' || fail "no ready (TERM)"
pgid=$(sed -n 's/^ready //p' "$log")
started+=("$pgid")
kill -USR2 -- "-$pgid"
wait_for "$log" '^grandchild [0-9]+ signal SIGUSR2$' 3 || fail "a grandchild missed a signal sent right after ready"
expect_eq "grandchildren started" 3 "$(count '^grandchild [0-9]+ started$' "$log")"
kill -TERM -- "-$pgid"
wait_for "$log" '^grandchild [0-9]+ signal SIGTERM$' 3 || fail "grandchildren did not echo SIGTERM"
for ((i = 0; i < 200; i++)); do
	[ -z "$(in_group "$pgid")" ] && break
	sleep 0.05
done
expect_eq "group empty after SIGTERM" "" "$(in_group "$pgid")"
expect_eq "simulator saved on SIGTERM" 1 "$(count '^checkpoint saved' "$log")"

# --spam: exactly that many bytes, in lines of --spam-line bytes.
"$SIM" --iters 0 --spam 1000000 --ckpt-dir "$SCRATCH/c11" >"$SCRATCH/spam.out"; rc=$?
expect_eq "spam exit" 0 "$rc"
expect_eq "spam bytes" 1000000 "$(grep '^#' "$SCRATCH/spam.out" | wc -c)"
expect_eq "spam lines of 100 bytes" "10000 0" \
	"$(count '^#' "$SCRATCH/spam.out") $(grep '^#' "$SCRATCH/spam.out" | awk 'length($0) != 99' | wc -l)"
expect_eq "spam between identity and done" "rank 0 of 1 restart 0|done" \
	"$(grep -v '^#' "$SCRATCH/spam.out" | sed -n '2p;$p' | paste -sd'|')"
"$SIM" --iters 0 --spam 1050 --spam-line 500 --ckpt-dir "$SCRATCH/c11" >"$SCRATCH/spam.out"
expect_eq "spam with a short last line" "1050 3" \
	"$(grep '^#' "$SCRATCH/spam.out" | wc -c) $(count '^#' "$SCRATCH/spam.out")"
"$SIM" --iters 0 --spam 1000000 --spam-line 0 --ckpt-dir "$SCRATCH/c11" >"$SCRATCH/spam.out"
expect_eq "one spam line without newline" 1000000 "$(tr -cd '#' <"$SCRATCH/spam.out" | wc -c)"
expect_eq "the next output continues it" 1 "$(grep -c '^#*done$' "$SCRATCH/spam.out")"

# --stderr-lines: that many lines on stderr, none on stdout.
out=$("$SIM" --iters 0 --stderr-lines 7 --ckpt-dir "$SCRATCH/c11" 2>"$SCRATCH/err.out")
expect_eq "stderr lines" 7 "$(count '^stderr line [0-9]+ of 7$' "$SCRATCH/err.out")"
expect_no_match "stdout has none" '^stderr' "$out"

finish
