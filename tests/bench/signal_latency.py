#!/usr/bin/env python3
"""signal_latency.py VIGIL N - median latency from kill() to the
training's SIGUSR1 handler, straight to the training vs through
`vigil run`, N signals each.  Both sides read CLOCK_MONOTONIC."""
import os
import signal
import subprocess
import sys
import time

RECEIVER = r"""
import os, signal, sys, time
def on(sig, frame):
    os.write(1, b"%d\n" % time.monotonic_ns())
signal.signal(signal.SIGUSR1, on)
os.write(1, b"ready\n")
while True:
    signal.pause()
"""


def measure(argv, target_of, n):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdout.readline().strip() == b"ready"
    target = target_of(p)
    lat = []
    for _ in range(n):
        t0 = time.monotonic_ns()
        os.kill(target, signal.SIGUSR1)
        t1 = int(p.stdout.readline())
        lat.append((t1 - t0) / 1e3)
        time.sleep(0.002)
    p.terminate()
    p.wait()
    lat.sort()
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99) - 1]


def main():
    vigil, n = sys.argv[1], int(sys.argv[2])
    recv = [sys.executable, "-c", RECEIVER]
    direct = measure(recv, lambda p: p.pid, n)
    through = measure([vigil, "run", "--mode", "single", "--precheck", "off", "--"] + recv,
                      lambda p: p.pid, n)
    print("signal: direct median %.0f us (p99 %.0f), through vigil median %.0f us (p99 %.0f), "
          "added %.3f ms (goal < 1 ms)" % (direct[0], direct[1], through[0], through[1],
                                           (through[0] - direct[0]) / 1e3))


if __name__ == "__main__":
    main()
