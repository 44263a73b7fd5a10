#!/usr/bin/env python3
"""hang_train.py - a PyTorch DDP training (gloo, CPU) that hangs on purpose,
for vigil's hang detection tests (testbed_hang.sh, bench_hang.sh).

Every rank prints the platform's timing line per iteration (vigil_timing)
and all-reduces a tensor, so that one rank that stops holds every other
one in the collective.  At iteration --at, rank --rank does --fault:

  stop    SIGSTOP to itself (a stopped worker)
  sleep   sleeps forever inside its loop (a deadlock)
  fifo    opens --fifo for reading, which nobody writes (a stuck file system)
  save    (rank 0) writes a checkpoint under --ckpt-dir for --save-s seconds
  slow    every rank's iterations take twice as long from then on

It prints "fault KIND at EPOCH" first.  With --once FILE the fault
happens only when FILE does not exist yet (it is made), so that a
restarted training runs through.
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "contrib", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from vigil_timing import IterationTimer  # noqa: E402


def fault(args, rank):
    if args.once:
        if os.path.exists(args.once):
            return
        open(args.once, "w").close()
    print("fault %s at %.3f" % (args.fault, time.time()), flush=True)
    if args.fault == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    elif args.fault == "sleep":
        while True:
            time.sleep(3600)
    elif args.fault == "fifo":
        if not os.path.exists(args.fifo):
            os.mkfifo(args.fifo, 0o600)
        with open(args.fifo) as f:
            f.read()
    elif args.fault == "save":
        save(args)


def save(args):
    """A checkpoint that takes --save-s, its file open under --ckpt-dir."""
    os.makedirs(args.ckpt_dir, exist_ok=True)
    with open(os.path.join(args.ckpt_dir, "ckpt.pt"), "wb") as f:
        end = time.time() + args.save_s
        while time.time() < end:
            f.write(b"\0" * 4096)
            f.flush()
            time.sleep(0.2)
    print("saved at %.3f" % time.time(), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=60)
    p.add_argument("--iter-ms", type=float, default=100)
    p.add_argument("--fault", default="none",
                   choices=["none", "stop", "sleep", "fifo", "save", "slow"])
    p.add_argument("--at", type=int, default=15)
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--fifo", default="/tmp/hang_train.fifo")
    p.add_argument("--ckpt-dir", default="ckpt_hang")
    p.add_argument("--save-s", type=float, default=12)
    p.add_argument("--once", default="")
    p.add_argument("--save-every", type=int, default=0,
                   help="rank 0 also saves for --save-s every N iterations (a soak)")
    p.add_argument("--local_rank", "--local-rank", type=int, default=None)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(1024)
    timer = IterationTimer(device="cpu")
    print("ready %d" % rank, flush=True)
    slow = 1.0
    for i in range(args.iters):
        if i == args.at and args.fault == "slow":
            slow = 2.0
            print("fault slow at %.3f" % time.time(), flush=True)
        elif i == args.at and rank == (0 if args.fault == "save" else args.rank) \
                and args.fault != "none":
            fault(args, rank)
        if args.save_every and i and i % args.save_every == 0 and rank == 0:
            save(args)
        with timer.iteration():
            time.sleep(args.iter_ms / 1000.0 * slow)
            dist.all_reduce(t)
    dist.barrier()
    print("done %d" % rank, flush=True)
    # the group torn down before the interpreter exits: left to the exit,
    # gloo's threads may abort a rank whose peers went first (SIGABRT,
    # "terminate called without an active exception") though it was done
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
