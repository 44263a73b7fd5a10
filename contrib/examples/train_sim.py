#!/usr/bin/env python3
"""train_sim.py - a simulated resumable training, for vigil's demos and tests.

Python 3 standard library only; runs on any CPU.  It behaves like a
training job as vigil sees one:

  * prints ``ready <pid>`` once every process of its group handles signals,
    then ``rank R of W restart K`` (from RANK, WORLD_SIZE and
    VIGIL_RESTART_COUNT);
  * resumes from its checkpoint in --ckpt-dir (``resumed from iteration N``);
  * runs until iteration --iters, each iteration --iter-ms long, printing the
    platform manual's timing line
    ``this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms.``
    then ``done``, and exits 0;
  * echoes every signal it receives (``signal SIGUSR1``); the checkpoint
    signal saves a checkpoint (``checkpoint saved at iteration N``) and exits
    0, SIGTERM saves one and exits 143, SIGINT saves one and exits 130;
  * injects faults on request: a crash, a hang, slow iterations, forked
    grandchildren, floods of output.

The iteration in a checkpoint is the number of iterations completed; a
resumed run continues with the next one and stops at --iters as a fresh run
would.  See contrib/examples/README.md for every option.
"""

import argparse
import json
import os
import random
import signal
import struct
import sys
import time

# Signals echoed as "signal NAME"; what they do besides is decided in
# on_signal().  SIGCONT is left out: stopping and continuing a node is a
# fault test of its own and should not add lines to the output.
ECHOED = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGTERM")


def write_fd(fd, data):
    """Straight to the descriptor, one write() per line: lines of the
    processes sharing the pipe do not interleave (up to PIPE_BUF bytes are
    written at once), and there is no Python buffer that a signal handler
    could find half-written."""
    while data:
        n = os.write(fd, data)
        data = data[n:]


def say(text):
    write_fd(1, (text + "\n").encode())


def err(text):
    write_fd(2, (text + "\n").encode())


def signal_number(name):
    """SIGUSR1, USR1 or 10 -> the signal number."""
    if name.isdigit():
        return int(name)
    name = name.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    try:
        return int(getattr(signal.Signals, name))
    except AttributeError:
        raise argparse.ArgumentTypeError("unknown signal: %s" % name)


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="A simulated resumable training for vigil's demos and tests.")
    p.add_argument("--iters", type=int, default=10,
                   help="train until this iteration (default 10)")
    p.add_argument("--iter-ms", type=float, default=100.0,
                   help="length of one iteration in milliseconds (default 100)")
    p.add_argument("--hw-ratio", type=float, default=0.7,
                   help="hardware time as a fraction of e2e time (default 0.7)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the timing noise (default: from the pid)")
    p.add_argument("--ckpt-dir", default="ckpt",
                   help="where checkpoints live (default ./ckpt)")
    p.add_argument("--ckpt-signal", type=signal_number, default=signal.SIGUSR1,
                   help="the signal that saves a checkpoint (default SIGUSR1)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--exit-on-ckpt", dest="exit_on_ckpt", action="store_true",
                   default=True,
                   help="exit 0 after the checkpoint signal's save (default)")
    g.add_argument("--no-exit-on-ckpt", dest="exit_on_ckpt", action="store_false",
                   help="keep training after the checkpoint signal's save")
    p.add_argument("--ckpt-every", type=int, default=0, metavar="N",
                   help="also save a checkpoint every N iterations (default 0: never)")
    p.add_argument("--ignore-term", action="store_true",
                   help="echo SIGTERM and carry on (to test escalation to SIGKILL)")
    p.add_argument("--crash-at", type=int, default=0, metavar="N",
                   help="crash in iteration N (default 0: never)")
    p.add_argument("--crash-code", type=int, default=1,
                   help="exit status of the crash (default 1)")
    p.add_argument("--crash-times", type=int, default=0, metavar="K",
                   help="crash only while VIGIL_RESTART_COUNT < K (default 0: always)")
    p.add_argument("--hang-at", type=int, default=0, metavar="N",
                   help="hang in iteration N: no progress, signals only echoed")
    p.add_argument("--slow-from", type=int, default=0, metavar="N",
                   help="from iteration N on, e2e time grows by --slow-factor "
                        "while hardware time stays (default 0: never)")
    p.add_argument("--slow-factor", type=float, default=3.0,
                   help="e2e slowdown of --slow-from (default 3)")
    p.add_argument("--fork", type=int, default=0, metavar="N",
                   help="start N grandchildren in the same process group")
    p.add_argument("--spam", type=int, default=0, metavar="BYTES",
                   help="write BYTES bytes of '#' lines to stdout at start")
    p.add_argument("--spam-line", type=int, default=100, metavar="BYTES",
                   help="length of a --spam line, newline included "
                        "(default 100; 0: one line without newline)")
    p.add_argument("--stderr-lines", type=int, default=0, metavar="N",
                   help="write N lines to stderr at start")
    p.add_argument("--signal-log", default=None, metavar="FILE",
                   help="append 'NAME EPOCH_NS' to FILE for every signal received "
                        "(for measuring delivery latency)")
    a = p.parse_args(argv)
    for name in ("iters", "crash_at", "hang_at", "fork", "spam", "spam_line",
                 "stderr_lines", "ckpt_every", "slow_from", "crash_times"):
        if getattr(a, name) < 0:
            p.error("--%s must not be negative" % name.replace("_", "-"))
    if a.iter_ms < 0 or a.hw_ratio < 0 or a.slow_factor <= 0:
        p.error("--iter-ms and --hw-ratio must not be negative, --slow-factor must be positive")
    return a


class Training:
    def __init__(self, args):
        self.args = args
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.world = int(os.environ.get("WORLD_SIZE", "1") or 1)
        self.restart = int(os.environ.get("VIGIL_RESTART_COUNT", "0") or 0)
        self.ckpt_path = os.path.join(args.ckpt_dir, "train_sim-rank%d.json" % self.rank)
        self.completed = 0
        self.hanging = False
        self.rng = random.Random(args.seed if args.seed is not None else os.getpid())
        self.handled = sorted({getattr(signal, n) for n in ECHOED} | {args.ckpt_signal})

    # -- checkpoints -------------------------------------------------------

    def load(self):
        try:
            with open(self.ckpt_path) as f:
                state = json.load(f)
        except FileNotFoundError:
            return
        self.completed = int(state["iteration"])
        say("resumed from iteration %d" % self.completed)

    def save(self):
        """Write a temporary file, fsync it, rename it over the checkpoint and
        fsync the directory: a crash at any point leaves the old checkpoint
        or the new one, never a torn file."""
        # Handlers save too: hold signals off so one save never runs inside
        # another.  Signals that arrive meanwhile are handled afterwards.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, self.handled)
        try:
            os.makedirs(self.args.ckpt_dir, exist_ok=True)
            tmp = "%s.tmp.%d" % (self.ckpt_path, os.getpid())
            state = {"iteration": self.completed, "rank": self.rank,
                     "world_size": self.world, "restart": self.restart,
                     "time": time.time()}
            with open(tmp, "w") as f:
                json.dump(state, f)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, self.ckpt_path)
            dfd = os.open(self.args.ckpt_dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
            say("checkpoint saved at iteration %d" % self.completed)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    # -- signals -----------------------------------------------------------

    def on_signal(self, signum, frame):
        if self.args.signal_log:
            fd = os.open(self.args.signal_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            write_fd(fd, ("%s %d\n" % (signal_name(signum), time.time_ns())).encode())
            os.close(fd)
        say("signal %s" % signal_name(signum))
        if self.hanging:
            # A training stuck in a collective never reaches its own
            # checkpoint code: the echo shows the signal arrived, nothing
            # else happens, and only SIGKILL ends it.
            return
        if signum == self.args.ckpt_signal:
            self.save()
            if self.args.exit_on_ckpt:
                sys.exit(0)
        elif signum == signal.SIGTERM:
            if self.args.ignore_term:
                say("ignored SIGTERM")
                return
            self.save()
            sys.exit(128 + signal.SIGTERM)
        elif signum == signal.SIGINT:
            self.save()
            sys.exit(128 + signal.SIGINT)

    def install_handlers(self):
        for signum in self.handled:
            signal.signal(signum, self.on_signal)

    # -- grandchildren -----------------------------------------------------

    def grandchild(self, mask):
        """Runs in a forked child: echo signals, exit on SIGTERM or when the
        parent is gone (it polls: a reaper, vigil or init, becomes the
        parent).  os._exit only: the parent's stack, inherited by the fork,
        must not unwind here."""
        parent = os.getppid()
        me = os.getpid()

        def on_signal(signum, frame):
            say("grandchild %d signal %s" % (me, signal_name(signum)))
            if signum == signal.SIGTERM:
                os._exit(128 + signal.SIGTERM)

        try:
            for signum in self.handled:
                signal.signal(signum, on_signal)
            say("grandchild %d started" % me)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            while os.getppid() == parent:
                time.sleep(0.05)
        finally:
            os._exit(0)

    def fork_grandchildren(self):
        # Signals stay blocked from before fork() until each grandchild has
        # its own handlers, so a group signal sent right after "ready" is
        # echoed by every process instead of killing a grandchild or running
        # the parent's handler in it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, self.handled)
        for _ in range(self.args.fork):
            if os.fork() == 0:
                self.grandchild(mask)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    # -- output ------------------------------------------------------------

    def spam(self):
        total, line = self.args.spam, self.args.spam_line
        if total == 0:
            return
        if line == 0:
            chunk = b"#" * 65536
            left = total
            while left:
                n = min(left, len(chunk))
                write_fd(1, chunk[:n])
                left -= n
            return
        # Whole lines, many per write; a last shorter line if TOTAL is not
        # a multiple of LINE.  Every line ends with a newline.
        full = b"#" * (line - 1) + b"\n"
        block = full * max(1, 65536 // line)
        left = total
        while left >= len(block):
            write_fd(1, block)
            left -= len(block)
        while left >= line:
            write_fd(1, full)
            left -= line
        if left:
            write_fd(1, b"#" * (left - 1) + b"\n")

    def timing_line(self, e2e_ms, hw_ms):
        # e2e as a float32 printed in full, like a framework's timer tensor
        # (3317.794921875); hardware time with three decimals.
        e2e32 = struct.unpack("f", struct.pack("f", e2e_ms))[0]
        return ("this iteration hardware time is %.3f and e2e time is %r ms."
                % (hw_ms, e2e32))

    # -- the loop ----------------------------------------------------------

    def crash(self, it):
        err("Traceback (most recent call last):")
        err('  File "%s", line 1, in train_step' % os.path.abspath(__file__))
        err("RuntimeError: simulated crash at iteration %d (rank %d)" % (it, self.rank))
        sys.exit(self.args.crash_code)

    def hang(self, it):
        err("simulated hang at iteration %d (rank %d)" % (it, self.rank))
        self.hanging = True
        while True:
            time.sleep(3600)

    def run(self):
        a = self.args
        self.install_handlers()
        if a.fork:
            self.fork_grandchildren()
        say("ready %d" % os.getpid())
        say("rank %d of %d restart %d" % (self.rank, self.world, self.restart))
        self.spam()
        for i in range(a.stderr_lines):
            err("stderr line %d of %d" % (i + 1, a.stderr_lines))
        self.load()
        for it in range(self.completed + 1, a.iters + 1):
            if it == a.crash_at and (a.crash_times == 0 or self.restart < a.crash_times):
                self.crash(it)
            if it == a.hang_at:
                self.hang(it)
            slow = a.slow_factor if a.slow_from and it >= a.slow_from else 1.0
            t0 = time.monotonic()
            # time.sleep resumes after a handler that returns (PEP 475), so
            # an echoed signal does not shorten the iteration.
            time.sleep(a.iter_ms * slow / 1000.0)
            e2e = (time.monotonic() - t0) * 1000.0
            noise = 1.0 + self.rng.uniform(-0.02, 0.02)
            hw = min(a.iter_ms * a.hw_ratio * noise, e2e)
            # The iteration counts as completed once its line is out: a
            # checkpoint signal must not fall between the two.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, self.handled)
            self.completed = it
            say(self.timing_line(e2e, hw))
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            if a.ckpt_every and it % a.ckpt_every == 0:
                self.save()
        say("done")
        return 0


def main(argv):
    args = parse_args(argv)
    return Training(args).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
