#!/usr/bin/env python3
"""spares_train.py - a PyTorch DDP training (gloo, CPU) that saves on the
checkpoint signal and resumes from its checkpoint, for vigil's hot spare
tests (testbed_spares.sh).

Every rank prints "start rank R world W master M host H attempt A" (A is
VIGIL_RESTART_COUNT), then per iteration the platform's timing line
(vigil_timing) around an all-reduce over the fabric (GLOO_SOCKET_IFNAME).
RANK 0 keeps the step reached in --ckpt (written whole, then renamed) on
SIGUSR1, and every rank reads it at the start ("resumed at step S").  A
collective that fails (a peer's fabric NIC went down) waits for the
checkpoint signal, which the agent sends once the inspection saw the
fault, and saves then; without one it exits 1.
"""

import argparse
import datetime
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "contrib", "python"))

asked = []
# first of all: a checkpoint signal while torch loads must not kill the training
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from vigil_timing import IterationTimer  # noqa: E402


def save(path, step, rank):
    if rank != 0:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step}, f)
    os.rename(tmp, path)
    print("saved at step %d" % step, flush=True)


def leave():
    """The group torn down before the interpreter exits: left to the exit,
    gloo's threads abort the process once its peers are gone ("terminate
    called without an active exception", SIGABRT) though the training
    saved or was done."""
    try:
        dist.destroy_process_group()
    except RuntimeError as e:
        print("destroy_process_group: %s" % str(e).splitlines()[0], flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--iter-ms", type=float, default=100)
    p.add_argument("--ckpt", required=True)
    p.add_argument("--timeout", type=float, default=5)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    step = 0
    if os.path.exists(args.ckpt):
        with open(args.ckpt) as f:
            step = json.load(f)["step"]
        print("resumed at step %d" % step, flush=True)
    print("start rank %d world %d master %s host %s attempt %s" % (
        rank, world, os.environ.get("MASTER_ADDR", "?"), socket.gethostname(),
        os.environ.get("VIGIL_RESTART_COUNT", "?")), flush=True)
    timer = IterationTimer(device="cpu")
    t = torch.ones(1)
    while step < args.iters and not asked:
        try:
            with timer.iteration():
                time.sleep(args.iter_ms / 1000.0)
                dist.all_reduce(t)
        except RuntimeError as e:
            print("collective failed at step %d: %s" % (step, str(e).splitlines()[0]),
                  flush=True)
            end = time.time() + 3 * args.timeout
            while not asked and time.time() < end:
                time.sleep(0.1)
            break
        step += 1
    if asked:
        save(args.ckpt, step, rank)
        leave()
        return 0
    if step < args.iters:
        return 1
    print("done rank %d at step %d" % (rank, step), flush=True)
    dist.barrier()  # every rank at the end before any leaves
    leave()
    return 0


if __name__ == "__main__":
    sys.exit(main())
