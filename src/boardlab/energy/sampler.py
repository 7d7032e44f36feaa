"""The energy sampler: one thread, off the measured CPU, reading each source at its own update interval.

It runs for the whole campaign, so every run and idle window has samples on both sides of its edges; the
runner asks for the samples around a window and the sampler drops what no window can need any more.
Readings of power sources are taken at jittered instants (+-25% of the interval): a periodic load that a
fixed-rate sampler would alias into a constant then shows up as uncorrelated readings, which
`integrate.aliasing_warning` flags.

The clock is a parameter: tests pass a fake clock whose wait rewrites the sensor files from a trace.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Sequence

from boardlab.energy.integrate import (
    Window,
    aliasing_warning,
    counter_window,
    power_window,
    short_run_warning,
)
from boardlab.energy.sources import Source

DEFAULT_INTERVAL_S = 0.1  # a source that declares no update interval
MIN_INTERVAL_S = 0.01  # never faster than 100 Hz: a 2 ms INA231 would otherwise cost a core's tenth
JITTER = 0.25


class SystemClock:
    def now_ns(self) -> int:
        return time.monotonic_ns()

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        """Sleeps; True when asked to stop."""
        return stop.wait(seconds)


class EnergySampler:
    def __init__(
        self,
        sources: Sequence[Source],
        *,
        clock=None,
        cpus: set[int] | None = None,
        min_interval_s: float = MIN_INTERVAL_S,
        seed: int = 0,
    ):
        self.sources = list(sources)
        self.clock = clock or SystemClock()
        self.cpus = cpus
        self.intervals = {
            s.spec.name: max(s.spec.update_interval_s or DEFAULT_INTERVAL_S, min_interval_s)
            for s in self.sources
        }
        self.samples: dict[str, list[tuple[int, float]]] = {s.spec.name: [] for s in self.sources}
        self.errors: dict[str, int] = {s.spec.name: 0 for s in self.sources}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rng = random.Random(seed)
        self.cpu_s = 0.0
        self.wall_s = 0.0

    # ---- running ----

    def start(self) -> None:
        for s in self.sources:
            s.open()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run_thread, name="boardlab-energy", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        for s in self.sources:
            s.close()

    def _run_thread(self) -> None:
        if self.cpus:
            try:
                os.sched_setaffinity(0, self.cpus)  # this thread only: off the measured CPU
            except OSError:
                pass
        self.run()

    def _sample(self, s: Source, now: int) -> None:
        name = s.spec.name
        if s.push:
            got = s.drain()  # type: ignore[attr-defined]
            if got:
                with self._lock:
                    self.samples[name].extend(got)
            return
        try:
            v = s.read()
        except OSError:
            v = None
        if v is None:
            self.errors[name] += 1
            return
        with self._lock:
            self.samples[name].append((now, v))

    def _next_delay(self, s: Source) -> float:
        iv = self.intervals[s.spec.name]
        if s.spec.kind == "power-reading" and not s.push:
            return iv * self._rng.uniform(1 - JITTER, 1 + JITTER)
        return iv

    def run(self, until_ns: int | None = None) -> None:
        """The sampling loop (in the sampler's thread, or synchronously in tests until `until_ns`)."""
        cpu0, wall0 = time.thread_time(), time.monotonic()
        now = self.clock.now_ns()
        due = {s.spec.name: now for s in self.sources}
        try:
            while True:
                now = self.clock.now_ns()
                for s in self.sources:
                    if due[s.spec.name] <= now:
                        self._sample(s, now)
                        due[s.spec.name] = now + round(self._next_delay(s) * 1e9)
                if until_ns is not None and now >= until_ns:
                    return
                wait_s = max(0.0, (min(due.values()) - self.clock.now_ns()) / 1e9)
                if self.clock.wait(wait_s, self._stop):
                    return
        finally:
            self.cpu_s += time.thread_time() - cpu0
            self.wall_s += time.monotonic() - wall0

    # ---- what the runner asks ----

    def wait_past(self, t_ns: int, timeout_s: float | None = None) -> None:
        """Blocks until every source has a sample after t_ns (the edge needs one on both sides)."""
        if self._thread is None:
            return
        limit = time.monotonic() + (timeout_s or 3 * max(self.intervals.values(), default=0) + 1.0)
        while time.monotonic() < limit:
            with self._lock:
                if all(v and v[-1][0] >= t_ns for v in self.samples.values()):
                    return
            time.sleep(min(self.intervals.values(), default=0.01) / 4)

    def around(self, name: str, start_ns: int, end_ns: int) -> list[tuple[int, float]]:
        """The samples inside [start, end] plus the nearest one on each side."""
        with self._lock:
            ss = self.samples[name]
            i0 = max(0, next((i for i, (t, _) in enumerate(ss) if t > start_ns), len(ss)) - 1)
            i1 = next((i for i, (t, _) in enumerate(ss) if t >= end_ns), len(ss) - 1)
            return list(ss[i0 : i1 + 1])

    def forget_before(self, t_ns: int) -> None:
        """Drops samples no later window can need (keeps the last one before t_ns)."""
        with self._lock:
            for ss in self.samples.values():
                i = next((i for i, (t, _) in enumerate(ss) if t >= t_ns), len(ss))
                if i > 1:
                    del ss[: i - 1]

    def window(
        self, s: Source, start_ns: int, end_ns: int
    ) -> tuple[Window | None, list[tuple[int, float]], str]:
        """(energy over the window, its samples, why there is none)."""
        spec = s.spec
        pts = self.around(spec.name, start_ns, end_ns)
        # the edge uncertainty: the sensor's update interval, or the sampler's when it reads more slowly
        interval = max(spec.update_interval_s or 0.0, self.intervals[spec.name])
        if spec.kind == "energy-counter":
            if len(pts) < 2:
                return None, pts, f"{spec.name}: fewer than 2 counter readings around the run"
            w = counter_window(
                [t for t, _ in pts],
                [int(v) for _, v in pts],
                start_ns,
                end_ns,
                max_range_uj=spec.max_range,
                update_interval_s=interval,
            )
        else:
            if not pts:
                return None, pts, f"{spec.name}: no power reading around the run"
            w = power_window(
                [t for t, _ in pts], [v for _, v in pts], start_ns, end_ns, update_interval_s=interval
            )
        warns = list(w.warnings)
        if spec.kind == "power-reading":
            inside = [v for t, v in pts if start_ns <= t <= end_ns]
            a = aliasing_warning(inside, spec.resolution, spec.name)
            if a:
                warns.append(a)
        short = short_run_warning(w.duration_s, interval, spec.name)
        if short:
            warns.append(short)
        from dataclasses import replace

        return replace(w, warnings=tuple(warns)), pts, ""


def power_series(kind: str, pts: list[tuple[int, float]], t0_ns: int) -> list[tuple[int, float]]:
    """Samples as (t_ns since t0, watts); a counter's power is its growth between two readings."""
    if kind == "power-reading":
        return [(t - t0_ns, float(v)) for t, v in pts]
    out = []
    for (ta, va), (tb, vb) in zip(pts, pts[1:], strict=False):
        if tb > ta and vb >= va:
            out.append(((ta + tb) // 2 - t0_ns, (vb - va) / 1e6 / ((tb - ta) / 1e9)))
    return out
