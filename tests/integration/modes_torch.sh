#!/bin/bash
# PyTorch mode with Debian's torch (python3-torch, gloo on the CPU): a
# 2-node DDP training under mpirun trains to the end and its timing lines
# are reduced; SIGUSR1 to mpirun makes every worker save while the torch
# launcher survives, and with --grace 5 the save is confirmed; a second
# run resumes.  Scripts of both kinds with no flag: one that declares
# --local_rank gets torch.distributed.launch, one written for torchrun
# (a DDP training reading LOCAL_RANK only) torch.distributed.run, and the
# launch line says which and why; made to take launch, the latter fails
# and vigil's last line names --torch-launcher.
# Then a launcher laid out as torch >= 2 does it, workers in sessions of
# their own: the checkpoint signal reaches every worker, and nothing of
# the training outlives a stop.
. "$(dirname "$0")/lib.sh"

need_torch
DDP="$TESTS_SRCDIR/../contrib/examples/ddp_train.py"
export PYTHONDONTWRITEBYTECODE=1
# Two agents, two distinct node names: the reductions name both.
vmpi() {
	timeout -k 5 150 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none \
		-np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" run --precheck off "$@" : \
		-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" run --precheck off "$@"
}
ck="$SCRATCH/ckpt"
# bg_mpirun LOG MPIRUN-ARGS...: mpirun under timeout, in the background;
# TPID is timeout's pid (wait for it), MPI_PID mpirun's (signal it).
bg_mpirun() {
	local log=$1 i
	shift
	timeout -k 5 150 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none "$@" >"$log" 2>&1 &
	TPID=$!
	MPI_PID=
	for i in $(seq 1 200); do
		MPI_PID=$(pgrep -P "$TPID" | head -n 1)
		[ -n "$MPI_PID" ] && break
		sleep 0.05
	done
}

# To the end, every iteration's timing line reduced across both nodes.
out=$(vmpi --mode pytorch --events "$SCRATCH/ev.jsonl" --metrics "$SCRATCH/m.prom" -- \
	$PY "$DDP" --iters 6 --ckpt-dir "$ck.end" 2>"$SCRATCH/err"); rc=$?
expect_eq "DDP to the end: exit" 0 "$rc"
expect_match "two processes in one DDP job" '^rank 1 of 2 restart 0$' "$out"
expect_match "it finished" '^done$' "$out"
expect_eq "one timing line per node and iteration" 12 \
	"$(printf '%s\n' "$out" | grep -oE 'this iteration hardware time is [0-9.]+ and e2e time is [0-9.e-]+ ms\.' | wc -l)"
expect_match "timings reduced across both nodes" '"kind":"perf".*"node_e2e":\{"n0":[0-9.]+,"n1":[0-9.]+\}' \
	"$(grep '"kind":"perf"' "$SCRATCH/ev.jsonl" | tail -n 1)"
expect_match "metrics count the iterations" '^vigil_iterations_total [1-6]$' "$(cat "$SCRATCH/m.prom" 2>&1)"
if grep -q 'NoneType' "$SCRATCH/err"; then fail "torch's launcher failed to start (PET_REDIRECTS/PET_TEE)"; fi

# SIGUSR1 to mpirun: both workers save at the same iteration and exit 0;
# torch's launcher, which has no handler for it, is spared and exits 0.
log="$SCRATCH/usr1.out"
bg_mpirun "$log" -np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" run --precheck off --mode pytorch -- \
	$PY "$DDP" --iters 100000 --sleep-ms 50 --ckpt-dir "$ck" : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" run --precheck off --mode pytorch -- \
	$PY "$DDP" --iters 100000 --sleep-ms 50 --ckpt-dir "$ck"
wait_for "$log" 'this iteration hardware time' 120 || fail "DDP never started: $(tail -5 "$log")"
sleep 0.5
kill -USR1 "$MPI_PID"
wait "$TPID"; rc=$?
expect_eq "checkpointed DDP job exit" 0 "$rc"
expect_eq "every worker got SIGUSR1 once" 2 "$(grep -c '^signal SIGUSR1$' "$log")"
expect_eq "one checkpoint, at the iteration both agreed on" 1 "$(grep -c '^checkpoint saved at iteration [0-9]*$' "$log")"
saved=$(sed -n 's/^checkpoint saved at iteration \([0-9]*\)$/\1/p' "$log")
if grep -qE 'exitcode *: *-10|Signals.SIGUSR1' "$log"; then fail "the torch launcher died of SIGUSR1"; else pass "the torch launcher survived SIGUSR1"; fi

# The second run resumes where the first saved.
out=$(vmpi --mode pytorch -- $PY "$DDP" --iters $((saved + 2)) --ckpt-dir "$ck" 2>&1); rc=$?
expect_eq "resumed run exit" 0 "$rc"
expect_match "it resumed from the checkpoint" "^resumed from iteration $saved\$" "$out"
expect_eq "and ran the two iterations left" 4 "$(printf '%s\n' "$out" | grep -o 'this iteration hardware time' | wc -l)"

# --resume --grace 5: torch's launcher looks at its workers every 5 s
# unless told otherwise (PET_MONITOR_INTERVAL), and exits only once it has
# seen them go.  Workers that save and exit 0 on the checkpoint signal
# just after one of those looks (5.15 s after they started, when the
# launcher's loop began) left it 4.85 s of waiting, and the grace ran out:
# "checkpoint not confirmed".  vigil tells it to look often enough.
# (--inspect-interval 1: the look at /proc that spares the launcher the
# signal comes after the workers exist.)
cat > "$SCRATCH/saver.py" <<'PY'
import os, signal, sys, time
t0 = time.time()
def on(sig, frame):
    print("worker %s saved" % os.environ["RANK"], flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, on)
print("worker %s started %.3f" % (os.environ["RANK"], t0), flush=True)
while True:
    time.sleep(0.05)
PY
log="$SCRATCH/grace.out"
gargs=(run --precheck off --mode pytorch --resume --state "$SCRATCH/grace.state" --grace 5
       --inspect-interval 1 -- $PY "$SCRATCH/saver.py")
bg_mpirun "$log" -np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" "${gargs[@]}" : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" "${gargs[@]}"
for i in $(seq 1 1800); do [ "$(grep -c '^worker [01] started' "$log")" -ge 2 ] && break; sleep 0.05; done
t0=$(sed -n 's/^worker [01] started \([0-9.]*\)$/\1/p' "$log" | sort -n | head -n 1)
if [ -n "$t0" ]; then
	$PY -c "import time; time.sleep(max(0, $t0 + 5.15 - time.time()))"
else
	fail "--grace 5: the workers never started: $(tail -5 "$log")"
fi
kill -USR1 "$MPI_PID"
wait "$TPID"; rc=$?
expect_eq "--grace 5: requeue after the checkpoint" 81 "$rc"
expect_eq "--grace 5: both workers saved" 2 "$(grep -c '^worker [01] saved$' "$log")"
expect_no_match "--grace 5: the checkpoint is confirmed" 'checkpoint not confirmed|did not exit within' "$(cat "$log")"

# Both kinds of script, with no flag: --torch-launcher auto reads each.
# One written for the manual's launcher reads --local_rank (and fails
# without it): it gets torch.distributed.launch, which passes it.
cat > "$SCRATCH/legacy.py" <<'PY'
import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--local_rank", type=int, required=True)
a = p.parse_args()
print("legacy local_rank %d LOCAL_RANK %s RANK %s WORLD_SIZE %s" % (a.local_rank,
      os.environ["LOCAL_RANK"], os.environ["RANK"], os.environ["WORLD_SIZE"]), flush=True)
PY
out=$(vmpi --mode pytorch -- $PY "$SCRATCH/legacy.py" 2>&1); rc=$?
expect_eq "script reading --local_rank: exit" 0 "$rc"
# (torch's warnings share the terminal: lines may run together)
expect_eq "script reading --local_rank: one line per process" 2 "$(printf '%s\n' "$out" | grep -o 'legacy local_rank 0 LOCAL_RANK 0 RANK [01] WORLD_SIZE 2' | wc -l)"
expect_match "the launch line says why launch" \
	"^vigil: pytorch training on 2 nodes, .*\(torch.distributed.launch: $SCRATCH/legacy.py declares a --local_rank option\)\$" "$out"
# The example's DDP training declares --local_rank and --local-rank: launch.
out=$(vmpi --mode pytorch -- $PY "$DDP" --iters 2 --ckpt-dir "$ck.auto" 2>&1); rc=$?
expect_eq "ddp_train.py with no flag: exit" 0 "$rc"
expect_match "ddp_train.py with no flag: torch.distributed.launch" 'torch.distributed.launch: .*ddp_train.py declares a --local_rank option' "$out"

# One written for torchrun, as pytorch/examples' ddp-tutorial-series
# multinode.py is: positional arguments and options of its own, no
# --local_rank, LOCAL_RANK read from the environment; a real DDP training
# (gloo on the CPU).  It gets torch.distributed.run.
cat > "$SCRATCH/multinode.py" <<'PY'
import argparse, os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main(total_epochs, save_every, batch_size):
    dist.init_process_group(backend="gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    global_rank = int(os.environ["RANK"])
    model = DDP(torch.nn.Linear(20, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for epoch in range(total_epochs):
        x, y = torch.randn(batch_size, 20), torch.randn(batch_size, 1)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print("multinode global %d local %d of %d: %d epochs" % (global_rank, local_rank,
          dist.get_world_size(), total_epochs), flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser(description="simple distributed training job")
    p.add_argument("total_epochs", type=int)
    p.add_argument("save_every", type=int)
    p.add_argument("--batch_size", default=32, type=int)
    a = p.parse_args()
    main(a.total_epochs, a.save_every, a.batch_size)
PY
out=$(vmpi --mode pytorch -- $PY "$SCRATCH/multinode.py" 3 1 2>&1); rc=$?
expect_eq "torchrun-style DDP script with no flag: exit" 0 "$rc"
expect_eq "torchrun-style DDP script: both processes trained to the end" \
	"global 0 local 0 of 2,global 1 local 0 of 2" \
	"$(printf '%s\n' "$out" | grep -o 'global [01] local 0 of 2' | sort | paste -sd, -)"
expect_match "the launch line says why run" \
	"^vigil: pytorch training on 2 nodes, .*\(torch.distributed.run: $SCRATCH/multinode.py declares no --local_rank option\)\$" "$out"

# One that reads LOCAL_RANK only and rejects unknown arguments: under
# torch.distributed.run (with no flag, and as the command the manual lets
# a user write, which vigil runs as given).
cat > "$SCRATCH/modern.py" <<'PY'
import argparse, os
argparse.ArgumentParser().parse_args()
print("modern LOCAL_RANK %s RANK %s WORLD_SIZE %s" % (os.environ["LOCAL_RANK"], os.environ["RANK"],
      os.environ["WORLD_SIZE"]), flush=True)
PY
out=$(vmpi --mode pytorch -- $PY "$SCRATCH/modern.py" 2>&1); rc=$?
expect_eq "script reading LOCAL_RANK, no flag: exit" 0 "$rc"
expect_eq "script reading LOCAL_RANK, no flag: one line per process" 2 "$(printf '%s\n' "$out" | grep -o 'modern LOCAL_RANK 0 RANK [01] WORLD_SIZE 2' | wc -l)"
# Made to take torch.distributed.launch, it fails on the argument, and
# vigil's last line names the fix.
out=$(vmpi --mode pytorch --torch-launcher launch -- $PY "$SCRATCH/modern.py" 2>&1); rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then pass "rejected --local_rank: exit $rc"; else fail "rejected --local_rank: exit $rc"; fi
expect_match "the final line names --torch-launcher run" \
	'^vigil: job error: .*--torch-launcher run' "$(grep '^vigil: job ' <<<"$out")"
out=$(vmpi --mode pytorch -- '/usr/bin/python3 -m torch.distributed.run --nproc_per_node ${SLOTS} --nnodes ${WORLD_SIZE} --node_rank ${RANK} --master_addr ${MASTER_ADDR} --master_port ${MASTER_PORT} '"$SCRATCH/modern.py" 2>&1); rc=$?
expect_eq "script reading LOCAL_RANK under run: exit" 0 "$rc"
expect_eq "script reading LOCAL_RANK under run: one line per process" 2 "$(printf '%s\n' "$out" | grep -o 'modern LOCAL_RANK 0 RANK [01] WORLD_SIZE 2' | wc -l)"
# The same script with vigil building the launch: --torch-launcher run
# starts torch.distributed.run, which passes no --local_rank.
out=$(vmpi --mode pytorch --torch-launcher run -- $PY "$SCRATCH/modern.py" 2>&1); rc=$?
expect_eq "--torch-launcher run: exit" 0 "$rc"
expect_eq "--torch-launcher run: one line per process" 2 "$(printf '%s\n' "$out" | grep -o 'modern LOCAL_RANK 0 RANK [01] WORLD_SIZE 2' | wc -l)"

# The torch >= 2 layout: a launcher without a SIGUSR1 handler starts its
# workers with start_new_session=True (as torch's SubprocessHandler does).
cat > "$SCRATCH/launcher" <<'PY'
#!/usr/bin/python3
import os, signal, subprocess, sys, time
worker = r'''
import os, signal, sys, time
def on(sig, frame):
    if sig == signal.SIGUSR1:
        print("worker %s saved" % os.environ["W"], flush=True)
        sys.exit(0)
signal.signal(signal.SIGUSR1, on)
if os.environ.get("STUBBORN"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("worker %s ready sid %d" % (os.environ["W"], os.getsid(0)), flush=True)
while True:
    time.sleep(0.05)
'''
procs = [subprocess.Popen([sys.executable, "-c", worker, sys.argv[1]], start_new_session=True,
                          env=dict(os.environ, W="%s.%d" % (os.environ["RANK"], i))) for i in range(2)]
if os.environ.get("STUBBORN"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.exit(max(p.wait() for p in procs))
PY
chmod +x "$SCRATCH/launcher"
marker="vigil-newsession-$$"
log="$SCRATCH/ns.out"
bg_mpirun "$log" -np 2 "$VIGIL" run --precheck off --mode pytorch -- "$SCRATCH/launcher" "$marker"
for i in $(seq 1 400); do [ "$(grep -c 'ready sid' "$log")" -ge 4 ] && break; sleep 0.05; done
expect_eq "four workers, each in a session of its own" 4 "$(grep -c 'ready sid' "$log")"
kill -USR1 "$MPI_PID"
wait "$TPID"; rc=$?
expect_eq "new-session workers: job exit" 0 "$rc"
expect_eq "every worker saved" "0.0 0.1 1.0 1.1" "$(sed -n 's/^worker \([0-9.]*\) saved$/\1/p' "$log" | sort | paste -sd' ' -)"
no_leftovers "after the checkpoint" "$marker"

# Stopped with SIGTERM, with workers and launcher ignoring it: after the
# grace, nothing of the training is left, outside the group included.
log="$SCRATCH/stop.out"
STUBBORN=1 bg_mpirun "$log" -np 2 -x STUBBORN "$VIGIL" run --precheck off --grace 2 --mode pytorch -- \
	"$SCRATCH/launcher" "$marker"
for i in $(seq 1 400); do [ "$(grep -c 'ready sid' "$log")" -ge 4 ] && break; sleep 0.05; done
expect_eq "four stubborn workers" 4 "$(grep -c 'ready sid' "$log")"
kill -TERM "$MPI_PID"
wait "$TPID"; rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then pass "stopped job exit $rc"; else fail "stopped job exit $rc"; fi
sleep 0.5
no_leftovers "after the stop" "$marker"

finish
