#!/usr/bin/env python3
"""ettr_probe.py - a training that writes down its own time, for the test of
where a job's time went (slurm_ettr.sh) and the benchmark of a spare
against a requeue (tests/bench/bench_spares.sh).

Stdlib only.  Run on every node of a job (RANK, WORLD_SIZE from vigil's
PyTorch mode; the attempt from SLURM_RESTART_COUNT, and ".rN" after it
for vigil's restart N within it, as with a spare): it resumes from the
checkpoint in DIR (the iteration rank 0 saved), then runs iterations of
ITER_MS each until iteration ITERS, in step with the other ranks (each
iteration ends when every rank computed it, told through files in DIR: a
collective, whose wait is part of the iteration; a rank that crashed
leaves the others waiting, as a collective does), and
prints vigil's timing line for each.  Rank CRASH_RANK crashes at the start
of iteration CRASH_AT in attempt 0 (not after a restart).  SIGUSR1 saves (rank 0 writes the
checkpoint) and exits 0.

Its ground truth, one line each, by its own clock (seconds since the
epoch), in DIR/truth.ATTEMPT.RANK:
  start T | iter N START END | signal T | ckpt N T | crash N T | exit T

usage: ettr_probe.py DIR ITERS ITER_MS CRASH_RANK CRASH_AT
"""

import os
import signal
import sys
import time


def main():
    d, iters, iter_ms, crash_rank, crash_at = sys.argv[1], int(sys.argv[2]), \
        float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    restart = int(os.environ.get("VIGIL_RESTART_COUNT", "0"))
    attempt = "%d" % int(os.environ.get("SLURM_RESTART_COUNT", "0"))
    if restart:
        attempt += ".r%d" % restart
    truth = open(os.path.join(d, "truth.%s.%d" % (attempt, rank)), "a", buffering=1)
    truth.write("start %.6f\n" % time.time())
    ckpt = os.path.join(d, "ckpt")
    done = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
    state = {"done": done}

    def on_usr1(signum, frame):
        truth.write("signal %.6f\n" % time.time())
        if rank == 0:
            with open(ckpt + ".tmp", "w") as f:
                f.write("%d\n" % state["done"])
            os.rename(ckpt + ".tmp", ckpt)
        truth.write("ckpt %d %.6f\n" % (state["done"], time.time()))
        print("checkpoint saved at iteration %d" % state["done"], flush=True)
        truth.write("exit %.6f\n" % time.time())
        os._exit(0)

    signal.signal(signal.SIGUSR1, on_usr1)
    print("ready %d" % os.getpid(), flush=True)

    def progress(r):
        try:
            return int(open(os.path.join(d, "progress.%s.%d" % (attempt, r))).read())
        except (OSError, ValueError):
            return done

    for it in range(done + 1, iters + 1):
        t0 = time.time()
        if attempt == "0" and rank == crash_rank and it == crash_at:
            truth.write("crash %d %.6f\n" % (it, t0))
            print("RuntimeError: simulated crash at iteration %d" % it, flush=True)
            os._exit(1)
        time.sleep(iter_ms / 1000)  # the computation
        tmp = os.path.join(d, "progress.%s.%d.tmp" % (attempt, rank))
        with open(tmp, "w") as f:
            f.write("%d" % it)
        os.rename(tmp, tmp[:-4])
        while any(progress(r) < it for r in range(world)):
            time.sleep(0.002)  # the collective: it ends when every rank is there
        t1 = time.time()
        ms = (t1 - t0) * 1000
        print("this iteration hardware time is %.3f and e2e time is %.3f ms." % (ms * 0.7, ms),
              flush=True)
        truth.write("iter %d %.6f %.6f\n" % (it, t0, t1))
        state["done"] = it
    print("done", flush=True)
    truth.write("exit %.6f\n" % time.time())


if __name__ == "__main__":
    main()
