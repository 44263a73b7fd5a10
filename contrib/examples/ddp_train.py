#!/usr/bin/env python3
"""ddp_train.py - a small PyTorch DistributedDataParallel training under vigil.

A tiny model on random data, enough to show what vigil expects of a real
training:

  * the environment of torchrun (LOCAL_RANK, RANK, WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT); vigil's PyTorch mode wraps ``python3 ddp_train.py`` into
    the launcher, which sets them.  It also accepts the ``--local_rank=N``
    (torch.distributed.launch before torch 2) and ``--local-rank=N`` (since)
    argument that torch.distributed.launch, vigil's default launcher as in
    the platform manual, passes, so it runs under either launcher.  Run by
    hand without a launcher it trains alone (rank 0 of 1);
  * backend nccl when CUDA is available, gloo on CPU;
  * per iteration, the platform manual's timing line
    ``this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms.``
    where hardware time is the forward, backward and optimizer step timed
    with CUDA events (the wall clock on CPU) and e2e time the whole
    iteration on the wall clock, data and communication included; printed
    by local rank 0 only, one line per node and iteration;
  * a checkpoint on SIGUSR1 (vigil's checkpoint signal), then exit 0; on
    SIGTERM a checkpoint and exit 143; resume from the checkpoint at start.

Every rank must stop at the same iteration, whichever rank saw the signal
first: the ranks agree on it with an all-reduce of the pending signal at the
end of each iteration, and rank 0 saves (DDP keeps the replicas identical).
"""

import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

# The signal to act on, set by the handler and read at the end of an
# iteration: a collective cannot run inside a signal handler.
pending = 0


def on_signal(signum, frame):
    global pending
    print("signal %s" % signal.Signals(signum).name, flush=True)
    # SIGTERM wins over SIGUSR1: both save, but TERM means stop for good.
    if signum == signal.SIGTERM or not pending:
        pending = signum


def parse_args():
    p = argparse.ArgumentParser(description="A small DDP training for vigil.")
    p.add_argument("--iters", type=int, default=100, help="train until this iteration")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--ckpt-dir", default="ckpt_ddp", help="where the checkpoint lives")
    p.add_argument("--ckpt-every", type=int, default=0,
                   help="also save every N iterations (default 0: never)")
    p.add_argument("--sleep-ms", type=float, default=0.0,
                   help="extra time per iteration outside the hardware time, "
                        "to make iterations long enough to watch")
    # torch.distributed.launch passes one of these; LOCAL_RANK, which it
    # sets too, is what is read.
    p.add_argument("--local_rank", "--local-rank", type=int, default=None,
                   help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.local_rank is not None:
        os.environ.setdefault("LOCAL_RANK", str(args.local_rank))
    return args


def setup():
    """Join the process group from torchrun's environment, or alone."""
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend=backend, init_method="env://")
    return device, local_rank


def ckpt_path(args):
    return os.path.join(args.ckpt_dir, "ddp_train.pt")


def save(args, model, opt, iteration):
    """Rank 0 writes a temporary file and renames it over the checkpoint:
    a crash midway leaves the previous checkpoint whole."""
    if dist.get_rank() == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        tmp = ckpt_path(args) + ".tmp"
        with open(tmp, "wb") as f:
            torch.save({"iteration": iteration,
                        "model": model.module.state_dict(),
                        "optimizer": opt.state_dict()}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, ckpt_path(args))
        print("checkpoint saved at iteration %d" % iteration, flush=True)
    # Nobody exits before the checkpoint is on disk.
    dist.barrier()


def load(args, model, opt, device):
    path = ckpt_path(args)
    if not os.path.exists(path):
        return 0
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    if dist.get_rank() == 0:
        print("resumed from iteration %d" % state["iteration"], flush=True)
    return int(state["iteration"])


def main():
    args = parse_args()
    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    device, local_rank = setup()
    rank, world = dist.get_rank(), dist.get_world_size()
    print("ready %d" % os.getpid(), flush=True)
    print("rank %d of %d restart %s" % (rank, world,
          os.environ.get("VIGIL_RESTART_COUNT", "0")), flush=True)

    torch.manual_seed(1234 + rank)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    start = load(args, model, opt, device)
    use_events = device.type == "cuda"
    if use_events:
        ev_start = torch.cuda.Event(enable_timing=True)
        ev_end = torch.cuda.Event(enable_timing=True)

    status = 0
    for it in range(start + 1, args.iters + 1):
        t0 = time.perf_counter()
        x = torch.randn(args.batch_size, 32, device=device)
        y = x.sum(dim=1, keepdim=True)
        if args.sleep_ms > 0:
            time.sleep(args.sleep_ms / 1000.0)

        if use_events:
            ev_start.record()
        else:
            h0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        if use_events:
            ev_end.record()
            ev_end.synchronize()
            hw_ms = ev_start.elapsed_time(ev_end)
        else:
            hw_ms = (time.perf_counter() - h0) * 1000.0

        # The same decision on every rank: the highest pending signal
        # (SIGTERM 15 > SIGUSR1 10) anywhere.
        flag = torch.tensor([pending], dtype=torch.int32, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        e2e_ms = (time.perf_counter() - t0) * 1000.0
        if local_rank == 0:
            print("this iteration hardware time is %.3f and e2e time is %s ms."
                  % (hw_ms, repr(e2e_ms)), flush=True)

        agreed = int(flag.item())
        if agreed:
            save(args, model, opt, it)
            status = 0 if agreed == signal.SIGUSR1 else 128 + agreed
            break
        if args.ckpt_every and it % args.ckpt_every == 0:
            save(args, model, opt, it)
    else:
        if rank == 0:
            print("done", flush=True)

    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
