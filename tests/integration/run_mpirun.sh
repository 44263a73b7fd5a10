#!/bin/bash
# vigil run under mpirun with 4 ranks: the distributed environment, one
# node's crash stopping every node, a command that is not found, signals
# through mpirun, output options, and the dry run.
. "$(dirname "$0")/lib.sh"

np=4
vrun() { run_mpi -np "$np" "$VIGIL" run --precheck off "$@"; }

# PyTorch mode: the manual's variables, the same master everywhere.
out=$(vrun --mode pytorch -- sh -c 'echo "env $RANK $WORLD_SIZE $SLOTS $MASTER_ADDR:$MASTER_PORT"' 2>"$SCRATCH/err"); rc=$?
expect_eq "pytorch env exit" 0 "$rc"
expect_eq "one line per node" "0 1 2 3" "$(printf '%s\n' "$out" | awk '/^env /{print $2}' | sort -n | tr '\n' ' ' | sed 's/ $//')"
expect_eq "WORLD_SIZE and SLOTS" "4 1" "$(printf '%s\n' "$out" | awk '/^env /{print $3, $4}' | sort -u)"
expect_eq "one master for all" 1 "$(printf '%s\n' "$out" | awk '/^env /{print $5}' | sort -u | wc -l)"
expect_match "master port chosen" ':[0-9]+$' "$(printf '%s\n' "$out" | awk '/^env /{print $5}' | head -1)"
expect_eq "banner once, from the coordinator" 1 "$(grep -c '^vigil: pytorch training on 4 nodes' "$SCRATCH/err")"

# One node's training crashes (2 s in, once the others have their
# handlers): every node's training is stopped, the job
# exits with that node's status, the report names it.
ck="$SCRATCH/ck"
start=$(date +%s)
out=$(vrun --mode pytorch --grace 5 --report "$SCRATCH/report.json" --events "$SCRATCH/ev.jsonl" -- \
	sh -c "if [ \"\$RANK\" = 2 ]; then exec $SIM --iters 100000 --iter-ms 20 --crash-at 100 --crash-code 7 --ckpt-dir $ck.\$RANK; else exec $SIM --iters 100000 --iter-ms 20 --ckpt-dir $ck.\$RANK; fi" \
	2>"$SCRATCH/err"); rc=$?
elapsed=$(( $(date +%s) - start ))
expect_eq "crash status is the job's" 7 "$rc"
if [ "$elapsed" -lt 30 ]; then pass "crash ended the job in ${elapsed}s"; else fail "crash took ${elapsed}s"; fi
expect_eq "the three other trainings got SIGTERM" 3 "$(printf '%s\n' "$out" | grep -c '^signal SIGTERM$')"
summary=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["state"], r["exit_code"], r["first_failure"]["rank"], r["first_failure"]["exit_code"],
      sorted(n["exit_code"] for n in r["nodes"]))' "$SCRATCH/report.json")
expect_eq "report names rank 2" "error 7 2 7 [7, 143, 143, 143]" "$summary"
expect_match "job event" '"kind":"job".*"exit_code":7' "$(tail -n 1 "$SCRATCH/ev.jsonl")"
no_leftovers "after the crash" "$ck."

# A command that is not found: 127, and one message for all nodes.
out=$(vrun -- no-such-command-vigil 2>&1); rc=$?
expect_eq "missing command under mpirun is 127" 127 "$rc"
expect_eq "one message from the coordinator" 1 "$(printf "%s\n" "$out" | grep -c "cannot run .no-such-command-vigil.")"
expect_match "it counts the nodes" "command not found \(on 4 of 4 nodes\)" "$out"

# SIGUSR1 to mpirun reaches every training exactly once, then each saves
# its checkpoint and exits 0: the job succeeds.
log="$SCRATCH/usr1.out"
# (mpirun itself in the background, so that $! is mpirun)
"${MPIRUN:-mpirun}" --oversubscribe --bind-to none -np "$np" "$VIGIL" run --precheck off --mode pytorch -- \
	"$SIM" --iters 100000 --iter-ms 20 --fork 1 --ckpt-dir "$ck.usr1" >"$log" 2>&1 &
mpi=$!
for i in $(seq 1 200); do [ "$(grep -c '^ready ' "$log")" -ge 4 ] && break; sleep 0.05; done
expect_eq "four trainings ready" 4 "$(grep -c '^ready ' "$log")"
kill -USR1 "$mpi"
wait "$mpi"; rc=$?
expect_eq "checkpointed job exit" 0 "$rc"
expect_eq "SIGUSR1 once per training" 4 "$(grep -c '^signal SIGUSR1$' "$log")"
expect_eq "and once per grandchild" 4 "$(grep -c '^grandchild [0-9]* signal SIGUSR1$' "$log")"
expect_eq "four checkpoints" 4 "$(grep -c '^checkpoint saved at iteration' "$log")"
no_leftovers "after SIGUSR1" "$ck.usr1"

# SIGTERM to one agent: its training ignores it and is killed after the
# grace; the coordinator then stops the other nodes; the job is "stopped".
log="$SCRATCH/term.out"
"${MPIRUN:-mpirun}" --oversubscribe --bind-to none -np "$np" "$VIGIL" run --precheck off --mode pytorch \
	--grace 2 --report "$SCRATCH/term.json" -- "$SIM" --iters 100000 --iter-ms 20 --ignore-term \
	--ckpt-dir "$ck.term" >"$log" 2>&1 &
mpi=$!
for i in $(seq 1 200); do [ "$(grep -c '^ready ' "$log")" -ge 4 ] && break; sleep 0.05; done
agent=$(pgrep -f -- "vigil run .*--ckpt-dir $ck.term" | while read -r p; do
	[ "$(ps -o comm= -p "$p")" = vigil ] && echo "$p"; done | sed -n 2p)
start=$(date +%s)
kill -TERM "$agent"
wait "$mpi"; rc=$?
elapsed=$(( $(date +%s) - start ))
expect_eq "ignored TERM: killed after the grace" 137 "$rc"
if [ "$elapsed" -lt 20 ]; then pass "stopped in ${elapsed}s"; else fail "stop took ${elapsed}s"; fi
summary=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["state"], r["exit_code"], sorted(n["exit_code"] for n in r["nodes"]))' "$SCRATCH/term.json")
expect_eq "report: stopped, every training killed after the grace" "stopped 137 [137, 137, 137, 137]" "$summary"
expect_eq "every training got TERM exactly once" 4 "$(grep -c '^signal SIGTERM$' "$log")"
no_leftovers "after the stop" "$ck.term"

# Byte-exact through the agents and mpirun's own forwarding (a terminal
# per rank): 100 MiB of every byte value, then a 1 MiB line without a
# newline, on each of 4 nodes; rank 0's stdout is compared.
python3 - "$SCRATCH/big.bin" <<'PY'
import sys
with open(sys.argv[1], "wb") as f:
    block = bytes(range(256)) * 4096
    for _ in range(100):
        f.write(block)
    f.write(b"x" * (1 << 20))
PY
vrun --output coordinator --node-logs "$SCRATCH/biglogs" -- cat "$SCRATCH/big.bin" > "$SCRATCH/big.out" 2>/dev/null; rc=$?
expect_eq "4 ranks of cat exit" 0 "$rc"
if cmp -s "$SCRATCH/big.bin" "$SCRATCH/big.out"; then pass "101 MiB byte-exact under mpirun"
else fail "differs: $(cmp "$SCRATCH/big.bin" "$SCRATCH/big.out" 2>&1 | head -1)"; fi
rm -rf "$SCRATCH"/big.* "$SCRATCH/biglogs"

# --output coordinator: stdout of rank 0 only; --tag-output prefixes.
out=$(vrun --output coordinator --node-logs "$SCRATCH/logs" -- sh -c 'echo "line from $RANK"' 2>/dev/null)
expect_eq "coordinator's stdout only" "line from 0" "$out"
expect_eq "the others' stdout kept in their node log" "line from 1,line from 2,line from 3" \
	"$(cat "$SCRATCH"/logs/*.out | sort | paste -sd, -)"
out=$(VIGIL_NODE_NAME=nodeX vrun --tag-output -- sh -c 'echo "hello $RANK"' 2>/dev/null)
expect_match "tagged lines" '^\[nodeX:2\] hello 2$' "$out"
expect_eq "four tagged lines" 4 "$(printf '%s\n' "$out" | grep -c '^\[nodeX:[0-3]\] hello [0-3]$')"

# --dry-run: each node's environment, files and command, in rank order, nothing run.
# (a node name each: a hostfile names a host once, so agents sharing one are refused)
mpmd=
for i in 0 1 2 3; do
	mpmd="$mpmd${mpmd:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --precheck off --dry-run --mode deepspeed --run-dir $SCRATCH/rd -- deepspeed train.py"
done
out=$(timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none $mpmd 2>&1); rc=$?
expect_eq "dry run exit" 0 "$rc"
expect_eq "four node sections in order" "0 1 2 3" "$(printf '%s\n' "$out" | sed -n 's/^== .* (rank \([0-9]\), deepspeed mode)$/\1/p' | tr '\n' ' ' | sed 's/ $//')"
expect_match "hostfile shown" "file: $SCRATCH/rd/hostfile" "$out"
expect_match "command shown: DeepSpeed's no-SSH launch on each node" "command: deepspeed --hostfile=$SCRATCH/rd/hostfile --no_ssh --node_rank=[0-3] --master_addr=[^ ]+ --master_port=[0-9]+ train.py" "$out"
if [ -e "$SCRATCH/rd/hostfile" ]; then fail "dry run wrote a file"; else pass "dry run wrote nothing"; fi

# The pre-check's go/no-go: one node unhealthy, nothing starts, exit 80,
# and the coordinator names the node.
for i in 0 1 2 3; do make_root "$SCRATCH/root$i"; done
echo down > "$SCRATCH/root3/sys/class/net/eth1/operstate"
mpmd=""
for i in 0 1 2 3; do
	mpmd="$mpmd${mpmd:+ :} -np 1 env VIGIL_NODE_NAME=n$i $VIGIL run --sysfs-root $SCRATCH/root$i $(pascal_flags) -- touch $SCRATCH/started.$i"
done
out=$(run_mpi $mpmd 2>&1); rc=$?
expect_eq "no-go exit" 80 "$rc"
expect_match "no-go names the node" '^vigil: n3 \(rank 3\): nics: .*eth1' "$out"
expect_match "no-go says why" 'vigil: 1 of 4 nodes not ready' "$out"
if ls "$SCRATCH"/started.* >/dev/null 2>&1; then fail "a training started"; else pass "no training started"; fi

# A node that joins but never reports: no-go after the gather timeout,
# bounded, nothing hangs.
printf '{"check": {"gather_timeout": 3}}\n' > "$SCRATCH/short.json"
start=$(date +%s)
out=$(timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none \
	-np 1 "$VIGIL" run --config "$SCRATCH/short.json" --precheck off -- true : \
	-np 1 "$VIGIL" run --config "$SCRATCH/short.json" --precheck off -- true : \
	-np 1 "$HANG_PEER" 100 2>&1); rc=$?
elapsed=$(( $(date +%s) - start ))
expect_match "hung node named" 'rank 2 \(rank 2\): no report within 3 s' "$out"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then pass "hung node: no-go exit ($rc)"; else fail "hung node exit $rc"; fi
if [ "$elapsed" -lt 30 ]; then pass "hung node: ended in ${elapsed}s"; else fail "hung node: took ${elapsed}s"; fi

# Workers sharing the training's stdout (as torchrun's do) print whole
# lines: under mpirun the agent's stdout is a terminal and so is the
# training's, where Python writes each line at once (unbuffered Python on
# a pipe writes a print's text and its newline apart, and lines run into
# each other).
cat > "$SCRATCH/workers.py" <<'PY'
import subprocess, sys
w = "import sys\nfor i in range(300): print('worker %s line %d' % (sys.argv[1], i))"
procs = [subprocess.Popen([sys.executable, "-c", w, str(k)]) for k in range(3)]
sys.exit(max(p.wait() for p in procs))
PY
timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none -np 1 "$VIGIL" run --precheck off -- \
	/usr/bin/python3 "$SCRATCH/workers.py" >"$SCRATCH/workers.out" 2>/dev/null; rc=$?
out=$(tr -d '\r' <"$SCRATCH/workers.out")
expect_eq "workers sharing stdout: exit" 0 "$rc"
expect_eq "workers sharing stdout: 900 whole lines" 900 \
	"$(printf '%s\n' "$out" | grep -cxE 'worker [012] line [0-9]+')"

finish
