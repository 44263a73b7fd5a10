"""Tests of vigil_timing: run with ``python3 -m unittest test_vigil_timing``.

They run on any CPU: the accelerator paths are driven through a fake
torch-like module whose events read a fake device clock.  When PyTorch with
a CUDA device is present, one more test times real kernels.
"""

import io
import os
import re
import sys
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vigil_timing  # noqa: E402
from vigil_timing import IterationTimer, detect_device, format_line  # noqa: E402

MANUAL = "this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms."
# The same to the nanosecond, as the wall clock (integer ns) gives it.
MEASURED = "this iteration hardware time is 2201.521 and e2e time is 3317.794921 ms."
START_NS, END_NS = 1000000000000, 1003317794921

# vigil's parser (src/perf/progress.c) in regex form, for the lines printed here.
LINE = re.compile(r"^this iteration hardware time is ([0-9.]+) and e2e time is ([0-9.eE+-]+) ms\.$")


class FakeClock(object):
    """A wall clock that reads the values it is given: integer nanoseconds,
    as the timer's clock."""

    def __init__(self, *ns):
        self.values = list(ns)

    def __call__(self):
        return self.values.pop(0)


class FakeDevice(object):
    """The device's own clock (ms), advanced by the test."""

    def __init__(self):
        self.now = 0.0
        self.synced = 0


def fake_torch(cuda=True, mlu=False, hardware_time=False):
    """A torch-like module: torch.cuda / torch.mlu with Event and
    is_available().  Events record the fake device clock; MLU events may
    also have hardware_time() in microseconds, as torch_mlu's do."""
    dev = FakeDevice()

    class Event(object):
        def __init__(self, enable_timing=False):
            assert enable_timing, "timing events are needed"
            self.t = None

        def record(self, stream=None):
            self.t = dev.now

        def synchronize(self):
            dev.synced += 1

        def elapsed_time(self, end):
            assert self.t is not None and end.t is not None, "event not recorded"
            return end.t - self.t

    class MluEvent(Event):
        def hardware_time(self, end):
            # busy time: the fake device is busy 2/3 of its timeline
            return (end.t - self.t) * 1000.0 * 2 / 3

    torch = types.SimpleNamespace(device_clock=dev)
    if cuda:
        torch.cuda = types.SimpleNamespace(Event=Event, is_available=lambda: True)
    if mlu:
        torch.mlu = types.SimpleNamespace(Event=MluEvent if hardware_time else Event,
                                          is_available=lambda: True)
    return torch


class FormatTest(unittest.TestCase):
    def test_manual_line(self):
        self.assertEqual(format_line(2201.521, 3317.794921875), MANUAL)

    def test_rounding_and_floor(self):
        self.assertEqual(format_line(1.0005, 2.5),
                         "this iteration hardware time is 1.000 and e2e time is 2.5 ms.")
        # a clock step backwards never prints a negative time
        self.assertEqual(format_line(-0.0001, 1.0),
                         "this iteration hardware time is 0.000 and e2e time is 1.0 ms.")


class CpuTest(unittest.TestCase):
    def test_section_is_hardware_time(self):
        out = io.StringIO()
        # start, section in, section out, stop
        clock = FakeClock(START_NS, 1000500000000, 1002701521000, END_NS)
        t = IterationTimer(device="cpu", file=out, clock=clock)
        with t.iteration():
            with t.device_section():
                pass
        self.assertEqual(out.getvalue(), MEASURED + "\n")
        self.assertEqual(t.last, (2201.521, 3317.794921))

    def test_sections_add_up(self):
        out = io.StringIO()
        clock = FakeClock(0, 250000000, 500000000, 1000000000, 1500000000, 2000000000)
        t = IterationTimer(device="cpu", file=out, clock=clock)
        t.start()
        with t.device_section():
            pass
        with t.device_section():
            pass
        self.assertEqual(t.stop(), (750.0, 2000.0))
        self.assertEqual(out.getvalue(),
                         "this iteration hardware time is 750.000 and e2e time is 2000.0 ms.\n")

    def test_without_sections_the_whole_iteration(self):
        out = io.StringIO()
        t = IterationTimer(device="cpu", file=out, clock=FakeClock(10000000000, 10125000000))
        t.start()
        self.assertEqual(t.stop(), (125.0, 125.0))

    def test_decorator_and_every(self):
        out = io.StringIO()
        clock = FakeClock(0, 100000000, 1000000000, 1300000000)  # iterations 1 and 3 read it
        t = IterationTimer(device="cpu", file=out, every=2, clock=clock)
        calls = []

        @t
        def step(i):
            calls.append(i)
            return i * 2

        self.assertEqual([step(i) for i in range(4)], [0, 2, 4, 6])
        self.assertEqual(calls, [0, 1, 2, 3])
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        for line in lines:
            self.assertRegex(line, LINE)
        self.assertEqual(float(LINE.match(lines[1]).group(2)), 300.0)

    def test_real_clock(self):
        out = io.StringIO()
        t = IterationTimer(device="cpu", file=out)
        with t.iteration():
            with t.device_section():
                sum(range(10000))
        m = LINE.match(out.getvalue().strip())
        self.assertIsNotNone(m, out.getvalue())
        hw, e2e = float(m.group(1)), float(m.group(2))
        self.assertGreaterEqual(e2e, 0.0)
        self.assertLessEqual(hw, e2e + 0.0005)

    def test_misuse(self):
        t = IterationTimer(device="cpu", file=io.StringIO())
        with self.assertRaises(RuntimeError):
            t.stop()
        t.start()
        with self.assertRaises(RuntimeError):
            t.start()
        with self.assertRaises(ValueError):
            IterationTimer(device="tpu")
        with self.assertRaises(ValueError):
            IterationTimer(device="cpu", every=0)

    def test_failed_iteration_prints_nothing(self):
        out = io.StringIO()
        t = IterationTimer(device="cpu", file=out, clock=FakeClock(0, 100000000, 200000000, 1000000000, 2000000000))
        with self.assertRaises(KeyError):
            with t.iteration():
                with t.device_section():
                    raise KeyError("batch")
        self.assertEqual(out.getvalue(), "")
        with t.iteration():  # the next one is fine
            pass
        self.assertEqual(out.getvalue(),
                         "this iteration hardware time is 1000.000 and e2e time is 1000.0 ms.\n")

    def test_section_outside_iteration_is_harmless(self):
        t = IterationTimer(device="cpu", file=io.StringIO())
        with t.device_section():
            pass
        self.assertIsNone(t.last)


class AcceleratorTest(unittest.TestCase):
    """The CUDA and MLU paths, on the fake torch."""

    def test_cuda_events(self):
        torch = fake_torch(cuda=True)
        dev = torch.device_clock
        out = io.StringIO()
        t = IterationTimer(device="cuda", torch=torch, file=out,
                           clock=FakeClock(START_NS, END_NS))
        t.start()
        dev.now += 2201.521  # the device runs the iteration's kernels
        t.stop()
        self.assertEqual(out.getvalue(), MEASURED + "\n")
        self.assertEqual(dev.synced, 1)

    def test_cuda_sections(self):
        torch = fake_torch(cuda=True)
        dev = torch.device_clock
        out = io.StringIO()
        t = IterationTimer(device="cuda", torch=torch, file=out,
                           clock=FakeClock(0, 1000000000))
        with t.iteration():
            dev.now += 100.0           # idle: data loading, not counted
            with t.device_section():
                dev.now += 300.0
            dev.now += 50.0
            with t.device_section():
                dev.now += 200.25
        self.assertEqual(t.last, (500.25, 1000.0))
        self.assertEqual(out.getvalue(),
                         "this iteration hardware time is 500.250 and e2e time is 1000.0 ms.\n")
        # events are reused, not allocated per iteration
        pool = len(t._pool)
        t.clock = FakeClock(2000000000, 3000000000)
        with t.iteration():
            with t.device_section():
                dev.now += 1.0
        self.assertEqual(len(t._pool), pool)

    def test_mlu_hardware_time(self):
        torch = fake_torch(cuda=False, mlu=True, hardware_time=True)
        dev = torch.device_clock
        out = io.StringIO()
        t = IterationTimer(device="mlu", torch=torch, file=out,
                           clock=FakeClock(START_NS, END_NS))
        t.start()
        dev.now += 2201.521 * 1.5  # busy 2/3 of it: hardware_time() gives 2201.521 ms in us
        t.stop()
        self.assertEqual(out.getvalue(), MEASURED + "\n")

    def test_mlu_without_hardware_time(self):
        torch = fake_torch(cuda=False, mlu=True, hardware_time=False)
        t = IterationTimer(device="mlu", torch=torch, file=io.StringIO(),
                           clock=FakeClock(0, 500000000))
        t.start()
        torch.device_clock.now += 400.0
        self.assertEqual(t.stop(), (400.0, 500.0))

    def test_auto(self):
        self.assertEqual(detect_device(fake_torch(cuda=True, mlu=True)), "mlu")
        self.assertEqual(detect_device(fake_torch(cuda=True)), "cuda")
        none = fake_torch(cuda=False)
        self.assertEqual(detect_device(none), "cpu")
        broken = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: 1 / 0))
        self.assertEqual(detect_device(broken), "cpu")
        self.assertEqual(IterationTimer(torch=fake_torch(cuda=True)).device, "cuda")
        self.assertEqual(IterationTimer(torch=none).device, "cpu")

    def test_auto_without_torch(self):
        saved = vigil_timing._import_torch
        vigil_timing._import_torch = lambda: None
        try:
            self.assertEqual(IterationTimer().device, "cpu")
            with self.assertRaises(RuntimeError):
                IterationTimer(device="cuda")
        finally:
            vigil_timing._import_torch = saved


def _real_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


@unittest.skipUnless(_real_cuda(), "needs PyTorch and a CUDA device")
class RealCudaTest(unittest.TestCase):
    def test_matmul(self):
        import torch
        a = torch.randn(2048, 2048, device="cuda")
        out = io.StringIO()
        t = IterationTimer(device="cuda", file=out)
        for _ in range(3):
            with t.iteration():
                with t.device_section():
                    for _ in range(10):
                        a = (a @ a).clamp_(-1, 1)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 3)
        for line in lines:
            m = LINE.match(line)
            self.assertIsNotNone(m, line)
            hw, e2e = float(m.group(1)), float(m.group(2))
            self.assertGreater(hw, 0.0)
            self.assertLessEqual(hw, e2e * 1.05 + 0.5)


if __name__ == "__main__":
    unittest.main()
