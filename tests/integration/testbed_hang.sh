#!/bin/bash
# A hung PyTorch DDP training (Debian's python3-torch, gloo on the CPU,
# one worker per node) on the multi-node test bed (tests/testbed), with
# --hang-timeout 5: one worker stopped (SIGSTOP), one rank asleep forever
# in its loop, one rank blocked reading a FIFO nobody writes: each is
# detected within the bound, its rank and node named, every rank's state
# and stack in the forensics file, the --on-hang policy's exit status, and
# nothing of the training left behind.  A checkpoint that takes longer
# than the timeout (the file open under --ckpt-dir) and a training that
# slows down 2x raise no alarm.  Needs root; skips (77) without it or
# without torch.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/tb.sh"

tb_require
need_torch
export TB_TIMEOUT=150 PYTHONDONTWRITEBYTECODE=1
TRAIN="$TESTS_SRCDIR/integration/hang_train.py"
CASES=${CASES:-stop sleep fifo save slow}
# detection: the timeout, a heartbeat, and room for a loaded machine
BOUND_MS=${BOUND_MS:-11000}
CASE_NODES=3
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/testbed/cases.sh"

# hang_case NAME "VIGIL-OPTIONS" TRAIN-ARGS...: the job on 3 nodes, waited for;
# $rc its status, $log, $ev, $rep, $excl, $ck as start_case sets them
hang_case() {
	local name=$1 opts=$2
	shift 2
	ck="$SCRATCH/ck.$name"; mkdir -p "$ck"
	log="$SCRATCH/$name.out"; ev="$SCRATCH/$name.jsonl"; rep="$SCRATCH/$name.json"
	excl="$SCRATCH/$name.exclude"
	tb_mpirun -np 3 "$VIGIL" run --mode pytorch --tag-output --heartbeat 1 \
		--heartbeat-timeout 20 --grace 3 --hang-timeout 5 --events "$ev" --report "$rep" \
		--exclude-file "$excl" --ckpt-dir "$ck" $opts -- env GLOO_SOCKET_IFNAME=eth0 "$PY" "$TRAIN" \
		--ckpt-dir "$ck" "$@" >"$log" 2>&1
	rc=$?
}
# hang_ms: from the fault the training printed to the first hang event
hang_ms() {
	local t0
	t0=$(sed -n 's/^\[[^]]*\] fault [a-z]* at \([0-9.]*\)$/\1/p' "$log" | head -n 1)
	[ -n "$t0" ] && event_after_ms "$ev" hang "$(python3 -c "print(int($t0 * 1000))")"
}
# forensics EXPR: EXPR of the forensics file f (Python)
forensics() { report "$rep.hang.json" "$1" 2>/dev/null; }
# ranks_seen: the training ranks in the forensics file, with a state and a kernel stack or wchan
ranks_seen() {
	forensics '" ".join(sorted(str(p["train_rank"]) + p["state"] for n in r["nodes"] for p in n["processes"] if "train_rank" in p and (p.get("kernel_stack") or p.get("wchan") or p["state"] == "T")))'
}
check_hang() {  # NAME SUSPECT STATE-OF-SUSPECT-RANK SUSPECT-RANK
	local name=$1 ms
	ms=$(hang_ms)
	if [ -n "$ms" ] && [ "$ms" -le "$BOUND_MS" ]; then pass "$name: hang event ${ms} ms after the fault"
	else fail "$name: hang event after '${ms}' ms (bound $BOUND_MS)"; fi
	expect_eq "$name: the suspect" "$2" "$(report "$rep" 'r["hang"]["suspect"]["node"]' 2>/dev/null)"
	expect_match "$name: every rank in the forensics file" "^0[A-Z] 1[A-Z] 2[A-Z]$" "$(ranks_seen)"
	expect_match "$name: the suspect's rank" "(^| )$4$3( |$)" "$(ranks_seen)"
	expect_match "$name: the summary names it" "$2 rank $4" "$(report "$rep" 'r["hang"]["summary"]' 2>/dev/null)"
	if bed_empty; then pass "$name: nothing of the training left"; else fail "$name: left behind: $(for k in 1 2 3; do tb_pids n$k; done)"; fi
}

tb_up 3 || { fail "test bed"; finish; }

for c in $CASES; do
	case $c in
	stop)
		# a worker stopped: --resume, so --on-hang auto requeues without a
		# checkpoint, n2 excluded
		hang_case stop "--resume --state $SCRATCH/stop.state" --fault stop --rank 1
		expect_eq "stop: requeue" 81 "$rc"
		check_hang stop n2 T 1
		expect_eq "stop: the exclude list" n2 "$(cat "$excl" 2>/dev/null)"
		expect_match "stop: no checkpoint, said" 'no checkpoint was taken' \
			"$(report "$rep" 'r["reason"]' 2>/dev/null)"
		# gdb does not attach to a stopped process: faulthandler's dump
		# gives its Python stack, and only its (not the launchers')
		expect_match "stop: the stopped rank's stack, from faulthandler" \
			'\[n2:1\]   File "[^"]*hang_train\.py", line [0-9]+ in fault' "$(cat "$log")"
		expect_eq "stop: one faulthandler dump, the stopped rank's" 1 "$(grep -c 'Fatal Python error: Aborted' "$log")"
		expect_match "stop: a gdb stack of a waiting rank" '[a-z_]' \
			"$(forensics '" ".join(p["stack"][0] for n in r["nodes"] for p in n["processes"] if p.get("train_rank") == 0 and "stack" in p)')"
		;;
	sleep)
		hang_case sleep "--on-hang stop" --fault sleep --rank 1
		expect_eq "sleep: stopped" 84 "$rc"
		check_hang sleep n2 S 1
		expect_match "sleep: alone in its loop" 'n2 rank 1: alone' \
			"$(report "$rep" 'r["hang"]["summary"]' 2>/dev/null)"
		# the Python stacks, read by gdb from each interpreter: the
		# sleeper in its own function, the others in the collective
		expect_match "sleep: the sleeper's Python stack" '^File "[^"]*hang_train\.py", line [0-9]+, in fault$' \
			"$(forensics '[p["py_stack"][0] for n in r["nodes"] for p in n["processes"] if p.get("train_rank") == 1][0]')"
		expect_eq "sleep: the others' Python stacks, in all_reduce" "0 all_reduce|2 all_reduce" \
			"$(forensics '"|".join("%d %s" % (p["train_rank"], p["py_stack"][0].rsplit(" ", 1)[1]) for n in sorted(r["nodes"], key=lambda n: n["node"]) for p in n["processes"] if p.get("train_rank") in (0, 2))')"
		expect_match "sleep: the verdict says where" 'n2 rank 1: alone: .* at fault \(hang_train\.py:[0-9]+\).* at all_reduce \(distributed_c10d\.py:[0-9]+\)' \
			"$(report "$rep" 'r["hang"]["summary"]' 2>/dev/null)"
		;;
	fifo)
		# the restart runs through (the fault happens once)
		hang_case fifo "--restart 1" --fault fifo --rank 2 --fifo "$SCRATCH/fifo" \
			--once "$SCRATCH/fifo.once"
		expect_eq "fifo: restarted, then to the end" 0 "$rc"
		[ "$rc" = 0 ] || { echo "--- fifo: the end of its output"; tail -n 40 "$log"; } >&2
		check_hang fifo n3 S 2
		expect_match "fifo: waits in the FIFO" 'fifo|pipe|wait_for_partner' \
			"$(forensics '" ".join(p["wchan"] for n in r["nodes"] for p in n["processes"] if p.get("train_rank") == 2)')"
		expect_eq "fifo: one restart" 1 "$(report "$rep" 'r["restarts"]' 2>/dev/null)"
		;;
	save)
		hang_case save "" --fault save --save-s 12
		expect_eq "long save: to the end" 0 "$rc"
		expect_match "long save: it saved" 'saved at' "$(cat "$log")"
		expect_eq "long save: no hang event" 0 "$(grep -c '"kind":"hang"' "$ev")"
		;;
	slow)
		hang_case slow "" --fault slow --iters 80
		expect_eq "2x slower: to the end" 0 "$rc"
		expect_eq "2x slower: no hang event" 0 "$(grep -c '"kind":"hang"' "$ev")"
		;;
	esac
	[ "${KEEP:-}" ] && cp "$log" "$ev" "$rep" "$rep.hang.json" /tmp/ 2>/dev/null
done
tb_down || fail "test bed left something behind"
finish
