"""Scripted sensors for the energy tests: a power trace, a fake clock whose wait rewrites a fixture tree's
sensor files from the trace, and meter simulators (UM25C on a pty, a meter command) driven by the same trace.

The files are written as the kernel would present them: a power reading holds the value of the sensor's last
update (quantized to its update interval), an energy counter holds the integral up to its last update in
whole uJ, wrapping at its range.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Trace:
    """A periodic piecewise-constant power: segments of (seconds, watts), repeated from t = 0."""

    segments: tuple[tuple[float, float], ...]

    @property
    def period_s(self) -> float:
        return sum(d for d, _ in self.segments)

    @property
    def period_j(self) -> float:
        return math.fsum(d * w for d, w in self.segments)

    def power(self, t: float) -> float:
        x = t % self.period_s
        for d, w in self.segments:
            if x < d:
                return w
            x -= d
        return self.segments[-1][1]

    def energy(self, t: float) -> float:
        """Exact integral of the power from 0 to t, in J."""
        n, x = divmod(t, self.period_s)
        e = n * self.period_j
        for d, w in self.segments:
            step = min(d, x)
            e += step * w
            x -= step
            if x <= 0:
                break
        return e


def square(low_w: float, high_w: float, low_s: float, high_s: float) -> Trace:
    return Trace(((low_s, low_w), (high_s, high_w)))


def _write(path: str, value: int) -> None:
    """Replaces the file atomically: a reader sees the whole old or the whole new value, as a sysfs
    attribute reads, never an empty file in between."""
    tmp = f"{path}.new"
    with open(tmp, "w") as f:
        f.write(f"{value}\n")
    os.replace(tmp, path)


class PowerFile:
    """power*_input in uW (scale 1e6) or another integer unit, updated every `interval_s`."""

    def __init__(self, path, trace: Trace, interval_s: float, scale: float = 1e6):
        self.path, self.trace, self.interval_s, self.scale = str(path), trace, interval_s, scale

    def update(self, t: float) -> None:
        tq = math.floor(t / self.interval_s + 1e-9) * self.interval_s
        _write(self.path, round(self.trace.power(tq) * self.scale))


class VIFiles:
    """INA3221: inN_input (mV, fixed bus voltage) and currN_input (mA) = P / V."""

    def __init__(self, in_path, curr_path, trace: Trace, interval_s: float, bus_mv: int = 5000):
        self.in_path, self.curr_path = str(in_path), str(curr_path)
        self.trace, self.interval_s, self.bus_mv = trace, interval_s, bus_mv
        _write(self.in_path, bus_mv)

    def update(self, t: float) -> None:
        tq = math.floor(t / self.interval_s + 1e-9) * self.interval_s
        _write(self.curr_path, round(self.trace.power(tq) / (self.bus_mv / 1000) * 1000))


class CounterFile:
    """energy_uj / energy*_input: whole uJ of the integral up to the last update, modulo `max_range_uj`."""

    def __init__(self, path, trace: Trace, interval_s: float, max_range_uj: int | None, offset_uj: int = 0):
        self.path, self.trace, self.interval_s = str(path), trace, interval_s
        self.max_range_uj, self.offset_uj = max_range_uj, offset_uj

    def true_uj(self, t: float) -> int:
        tq = math.floor(t / self.interval_s + 1e-9) * self.interval_s
        return self.offset_uj + math.floor(self.trace.energy(tq) * 1e6)

    def update(self, t: float) -> None:
        v = self.true_uj(t)
        _write(self.path, v % self.max_range_uj if self.max_range_uj else v)


class TraceClock:
    """A fake CLOCK_MONOTONIC for the sampler: wait(s) advances time by s and rewrites every file."""

    def __init__(self, files, start_ns: int = 1_000_000_000_000):
        self.files = list(files)
        self.start_ns = start_ns
        self.t_ns = start_ns
        for f in self.files:
            f.update(0.0)

    @property
    def t_s(self) -> float:
        return (self.t_ns - self.start_ns) / 1e9

    def now_ns(self) -> int:
        return self.t_ns

    def wait(self, seconds: float, stop) -> bool:
        self.t_ns += max(1, round(seconds * 1e9))
        for f in self.files:
            f.update(self.t_s)
        return stop.is_set()


class LiveTrace:
    """The same files rewritten in real time by a thread (for campaigns, which run on the real clock)."""

    def __init__(self, files, period_s: float = 0.005):
        self.files = list(files)
        self.period_s = period_s
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def t_of(self, mono_ns: int) -> float:
        return mono_ns / 1e9 - self.t0

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic() - self.t0
            for f in self.files:
                f.update(t)
            self._stop.wait(self.period_s)

    def __enter__(self):
        for f in self.files:
            f.update(0.0)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class UM25CSimulator:
    """A UM25C on a pty: answers each 0xF0 with a 130-byte record of the trace's power at that moment
    (volts fixed, amps = P / V, rounded as the meter rounds)."""

    def __init__(self, trace: Trace, volts: float = 5.1, t0: float | None = None):
        import tty

        self.trace, self.volts = trace, volts
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.port = os.ttyname(self.slave)
        self.t0 = time.monotonic() if t0 is None else t0
        self.requests = 0
        self.sent: list[bytes] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def record_at(self, t: float):
        from boardlab.energy import um25c

        p = self.trace.power(t)
        return um25c.um25c_record(self.volts, p / self.volts)

    def _run(self) -> None:
        import select

        from boardlab.energy import um25c

        while not self._stop:
            r, _, _ = select.select([self.master], [], [], 0.05)
            if not r:
                continue
            try:
                data = os.read(self.master, 64)
            except OSError:
                return
            for b in data:
                if b == 0xF0:
                    self.requests += 1
                    out = um25c.encode(self.record_at(time.monotonic() - self.t0))
                    self.sent.append(out)
                    os.write(self.master, out)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self._thread.join()
        os.close(self.master)
        os.close(self.slave)


METER_SCRIPT = r"""
import sys, time
segments = [tuple(map(float, s.split(":"))) for s in sys.argv[1].split(",")]
interval = float(sys.argv[2]); t0 = float(sys.argv[3])
period = sum(d for d, _ in segments)
while True:
    t = time.time()
    x = (t - t0) % period
    for d, w in segments:
        if x < d:
            break
        x -= d
    print(f"{t:.6f}\t{w:.4f}", flush=True)
    time.sleep(interval)
"""


def meter_command(trace: Trace, interval_s: float, t0_unix: float) -> list[str]:
    """argv of a meter command printing "<unix_time_s>\t<watts>" lines of the trace (the line protocol)."""
    segs = ",".join(f"{d}:{w}" for d, w in trace.segments)
    return [sys.executable, "-c", METER_SCRIPT, segs, str(interval_s), repr(t0_unix)]


def copy_tree(name: str, dst: Path) -> Path:
    import shutil

    src = Path(__file__).parent / "fixtures" / "sysfs" / name
    out = dst / name
    shutil.copytree(src, out, symlinks=True)
    return out
