"""vigil_timing - per-iteration timing lines for vigil's performance detection.

A training prints, once per iteration, the line of the platform manual::

    this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms.

and ``vigil run`` reads it from the training's output, reduces it across
nodes, and reports slow nodes and poor hardware utilisation.  This module
measures both times and prints that line:

* e2e time: the wall clock (``time.perf_counter_ns``) from ``start()`` to
  ``stop()``: the whole iteration, data loading and communication included;
* hardware time: what the accelerator spent, from device events --
  ``torch.cuda.Event(enable_timing=True)`` on NVIDIA (and AMD ROCm builds of
  PyTorch), ``torch.mlu.Event`` on Cambricon MLUs with ``torch_mlu`` --
  between the iteration's start and stop, or summed over the
  ``device_section()`` blocks of the iteration when there are any.  On a
  machine without an accelerator (``device="cpu"``), the time inside
  ``device_section()`` blocks measured with the wall clock stands in for
  it (the whole iteration when there are none), so scripts and tests run
  anywhere.

On MLUs the events' own ``hardware_time()`` is used: the time the device
was busy.  CUDA events measure the device's timeline between two points,
idle gaps included: there, put ``device_section()`` around the forward,
backward and optimizer step so the ratio of hardware to e2e time means
something.

Usage::

    from vigil_timing import IterationTimer

    timer = IterationTimer()              # device="auto"
    for batch in loader:
        with timer.iteration():
            with timer.device_section():
                loss = model(batch.to(dev)).sum()
                loss.backward()
                opt.step()

or ``timer.start()`` / ``timer.stop()``, or ``@timer`` on a function that runs
one iteration.  Every process prints its own lines (vigil attributes them
by the launcher's output prefix), flushed at once.

Measuring waits for the device at the end of each iteration (the end event
is synchronised), which costs a little overlap between iterations; with
``every=N`` only every N-th iteration is measured and printed.

Python 3.6+ standard library; PyTorch only when an accelerator is used.
"""

import contextlib
import functools
import importlib
import sys
import time

__all__ = ["IterationTimer", "format_line", "detect_device"]

DEVICES = ("auto", "cpu", "cuda", "mlu")


def _perf_counter_ns():
    return time.perf_counter_ns()


if not hasattr(time, "perf_counter_ns"):  # Python before 3.7
    def _perf_counter_ns():  # noqa: F811
        return int(time.perf_counter() * 1e9)


def format_line(hw_ms, e2e_ms):
    """The manual's line: hardware time with three decimals, e2e time as
    Python writes the float (``3317.794921875``)."""
    return "this iteration hardware time is %.3f and e2e time is %r ms." % (
        max(float(hw_ms), 0.0), float(e2e_ms))


def _import_torch():
    """torch, with torch_mlu loaded when installed (it adds torch.mlu), or
    None without PyTorch."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    try:
        importlib.import_module("torch_mlu")
    except ImportError:
        pass
    return torch


def _available(torch, name):
    backend = getattr(torch, name, None) if torch is not None else None
    try:
        return bool(backend is not None and backend.is_available())
    except Exception:  # a broken driver reads as no device
        return False


def detect_device(torch=None):
    """"mlu" when torch.mlu has a device, else "cuda" when torch.cuda has
    one, else "cpu".  TORCH: a torch-like module (default: import it)."""
    if torch is None:
        torch = _import_torch()
    if _available(torch, "mlu"):
        return "mlu"
    if _available(torch, "cuda"):
        return "cuda"
    return "cpu"


class IterationTimer(object):
    """Times iterations and prints the manual's line for each.

    device   "auto" (default), "cpu", "cuda" or "mlu"
    file     where lines go (default: sys.stdout at the time of printing)
    every    measure and print every N-th iteration only (default 1)
    torch    a torch-like module to use instead of importing torch (tests)
    clock    the wall clock in integer nanoseconds (default
             time.perf_counter_ns): differences of integers divided once
             keep the e2e time exact to the nanosecond
    """

    def __init__(self, device="auto", file=None, every=1, torch=None, clock=None):
        if device not in DEVICES:
            raise ValueError("device must be one of %s, not %r" % (", ".join(DEVICES), device))
        if int(every) < 1:
            raise ValueError("every must be at least 1")
        if device != "cpu" and torch is None:
            torch = _import_torch()
        if device == "auto":
            device = detect_device(torch) if torch is not None else "cpu"
        if device in ("cuda", "mlu") and not hasattr(getattr(torch, device, None), "Event"):
            raise RuntimeError("device %r needs PyTorch%s" % (
                device, " with torch_mlu" if device == "mlu" else ""))
        self.device = device
        self.file = file
        self.every = int(every)
        self.clock = clock or _perf_counter_ns
        self._backend = getattr(torch, device) if device != "cpu" else None
        self._pool = []          # event pairs, reused across iterations
        self._count = 0          # iterations started
        self._measuring = False
        self._running = False
        self._t0 = 0.0
        self._sections = []      # cpu: (start, end) clock pairs; else event pairs
        self._open = None        # the section in progress
        self.last = None         # (hw_ms, e2e_ms) of the last measured iteration

    # -- device events ---------------------------------------------------

    def _pair(self, i):
        while len(self._pool) <= i:
            self._pool.append((self._backend.Event(enable_timing=True),
                               self._backend.Event(enable_timing=True)))
        return self._pool[i]

    def _event_ms(self, begin, end):
        # torch_mlu's hardware_time() is in microseconds: the device's busy
        # time (cnrtNotifierDuration); elapsed_time() is milliseconds.
        if hasattr(begin, "hardware_time"):
            return begin.hardware_time(end) / 1000.0
        return begin.elapsed_time(end)

    # -- one iteration ---------------------------------------------------

    def start(self):
        """Begin an iteration."""
        if self._running:
            raise RuntimeError("start() twice without stop()")
        self._running = True
        self._count += 1
        self._measuring = (self._count - 1) % self.every == 0
        self._sections = []
        self._open = None
        if not self._measuring:
            return
        if self._backend is not None:
            self._pair(0)[0].record()
        self._t0 = self.clock()

    def stop(self):
        """End the iteration; print its line and return (hw_ms, e2e_ms), or
        None for an iteration that ``every`` skips."""
        if not self._running:
            raise RuntimeError("stop() without start()")
        if self._open is not None:
            raise RuntimeError("stop() inside a device_section()")
        self._running = False
        if not self._measuring:
            return None
        if self._backend is None:
            e2e_ms = (self.clock() - self._t0) / 1e6
            if self._sections:
                hw_ms = sum(b - a for a, b in self._sections) / 1e6
            else:
                hw_ms = e2e_ms
        else:
            if self._sections:
                pairs = self._sections
            else:
                first = self._pair(0)
                first[1].record()
                pairs = [first]
            # Wait for the device to pass the last end event: only then
            # are the timings known.
            pairs[-1][1].synchronize()
            e2e_ms = (self.clock() - self._t0) / 1e6
            hw_ms = sum(self._event_ms(a, b) for a, b in pairs)
        self.last = (hw_ms, e2e_ms)
        print(format_line(hw_ms, e2e_ms), file=self.file or sys.stdout, flush=True)
        return self.last

    @contextlib.contextmanager
    def iteration(self):
        """``with timer.iteration():`` - start() on entry, stop() on exit.
        An iteration whose body raises is abandoned: no line, and the next
        one starts clean."""
        self.start()
        try:
            yield self
        except BaseException:
            self._running = False
            self._open = None
            raise
        self.stop()

    @contextlib.contextmanager
    def device_section(self):
        """The device work of the iteration (several per iteration add
        up).  Outside an iteration it does nothing."""
        if not (self._running and self._measuring):
            yield self
            return
        if self._open is not None:
            raise RuntimeError("device_section() inside another")
        if self._backend is None:
            self._open = self.clock()
            try:
                yield self
            finally:
                self._sections.append((self._open, self.clock()))
                self._open = None
        else:
            # pair 0 marks the iteration; sections use the next ones
            pair = self._pair(len(self._sections) + 1)
            pair[0].record()
            self._open = pair
            try:
                yield self
            finally:
                pair[1].record()
                self._sections.append(pair)
                self._open = None

    def __call__(self, fn):
        """Decorator: each call of FN is one iteration."""
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            with self.iteration():
                return fn(*args, **kwargs)
        return timed
