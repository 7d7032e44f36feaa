"""Per-run energy from timestamped samples: pure functions, no I/O.

Two kinds of source (LISA's EnergyMeter makes the same split, ARM-software/lisa lisa/energy_meter.py):
- an energy counter (RAPL energy_uj, hwmon energy*_input): energy = the counter's growth between the run's
  start and end, unwrapped at the counter's range (powercap wraps at max_energy_range_uj; tools that ignore it
  report nonsense, hubblo-org/scaphandre#280, RRZE-HPC/likwid#646);
- a power reading (hwmon power*_input, V x I, a PMIC, a meter): the trapezoid of the samples.

Both are clipped to the worker's exact CLOCK_MONOTONIC start and end, interpolating linearly between the two
samples around each edge, instead of taking "the first reading after the run" (which adds up to a whole
update interval of someone else's energy). What remains uncertain is what the sensor did inside one update
interval at each edge: the quantization bound = 1/2 update interval x peak power at each edge, stored with
the value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

MIN_INTERVALS = 100  # a run shorter than this many update intervals gets a warning


@dataclass(frozen=True)
class Window:
    """Energy of one source over [start_ns, end_ns]."""

    energy_j: float
    duration_s: float
    power_avg_w: float
    power_peak_w: float
    quantization_j: float  # +- bound from the sensor's update interval at the two edges
    samples: int  # samples inside the window
    warnings: tuple[str, ...] = field(default=())


def unwrap_counter(values: Sequence[int], max_range: int | None) -> list[int]:
    """A counter's readings made monotonic: each decrease is one wrap at `max_range` (the counter counts
    0 .. max_range - 1 and restarts at 0). Exact in integers. Without a range a decrease is an error: the
    counter was reset under us."""
    out: list[int] = []
    offset = 0
    prev = None
    for v in values:
        if prev is not None and v < prev:
            if not max_range:
                raise ValueError(f"energy counter went back from {prev} to {v} and declares no range")
            offset += max_range
        out.append(v + offset)
        prev = v
    return out


def interpolate(ts: Sequence[int], ys: Sequence[float], t: int) -> float:
    """y at t, linear between the samples around it; the nearest sample beyond the ends (clamped)."""
    if t <= ts[0]:
        return float(ys[0])
    if t >= ts[-1]:
        return float(ys[-1])
    lo, hi = 0, len(ts) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ts[mid] <= t:
            lo = mid
        else:
            hi = mid
    if ts[hi] == ts[lo]:
        return float(ys[hi])
    return ys[lo] + (ys[hi] - ys[lo]) * (t - ts[lo]) / (ts[hi] - ts[lo])


def _edge_warnings(ts: Sequence[int], start_ns: int, end_ns: int) -> list[str]:
    out = []
    if ts[0] > start_ns:
        out.append(f"no sample before the start: the first {(ts[0] - start_ns) / 1e9:.3f} s extrapolated")
    if ts[-1] < end_ns:
        out.append(f"no sample after the end: the last {(end_ns - ts[-1]) / 1e9:.3f} s extrapolated")
    return out


def counter_window(
    ts: Sequence[int],
    counter_uj: Sequence[int],
    start_ns: int,
    end_ns: int,
    *,
    max_range_uj: int | None,
    update_interval_s: float | None,
) -> Window:
    """Energy from a cumulative counter in uJ, unwrapped, interpolated at the two edges."""
    if len(ts) < 2 or end_ns <= start_ns:
        raise ValueError("a counter window needs two samples and end > start")
    cum = unwrap_counter(counter_uj, max_range_uj)
    e0 = interpolate(ts, cum, start_ns)
    e1 = interpolate(ts, cum, end_ns)
    energy_j = (e1 - e0) / 1e6
    # peak power: the steepest growth between two samples that touch the window
    peak = 0.0
    for i in range(1, len(ts)):
        if ts[i] >= start_ns and ts[i - 1] <= end_ns and ts[i] > ts[i - 1]:
            peak = max(peak, (cum[i] - cum[i - 1]) / 1e6 / ((ts[i] - ts[i - 1]) / 1e9))
    inside = sum(1 for t in ts if start_ns <= t <= end_ns)
    return _window(ts, start_ns, end_ns, energy_j, peak, inside, update_interval_s)


def power_window(
    ts: Sequence[int],
    watts: Sequence[float],
    start_ns: int,
    end_ns: int,
    *,
    update_interval_s: float | None,
) -> Window:
    """Trapezoidal integral of power samples over [start_ns, end_ns], the edges interpolated."""
    if len(ts) < 1 or end_ns <= start_ns:
        raise ValueError("a power window needs a sample and end > start")
    if len(ts) == 1:
        ts, watts = [ts[0], ts[0] + 1], [watts[0], watts[0]]
    pts = [(start_ns, interpolate(ts, watts, start_ns))]
    pts += [(t, float(w)) for t, w in zip(ts, watts, strict=True) if start_ns < t < end_ns]
    pts.append((end_ns, interpolate(ts, watts, end_ns)))
    energy = 0.0
    for (t0, p0), (t1, p1) in zip(pts, pts[1:], strict=False):
        energy += (p0 + p1) / 2 * (t1 - t0) / 1e9
    peak = max(p for _, p in pts)
    return _window(ts, start_ns, end_ns, energy, peak, len(pts) - 2, update_interval_s)


def _window(
    ts: Sequence[int],
    start_ns: int,
    end_ns: int,
    energy_j: float,
    peak_w: float,
    samples: int,
    update_interval_s: float | None,
) -> Window:
    """A window from its energy and peak power, however they were read: the mean power over its duration,
    the quantization bound and the warnings about samples far from its edges."""
    dur = (end_ns - start_ns) / 1e9
    return Window(
        energy_j=energy_j,
        duration_s=dur,
        power_avg_w=energy_j / dur,
        power_peak_w=peak_w,
        quantization_j=(update_interval_s or 0.0) * peak_w,  # 2 edges x 1/2 update interval x peak power
        samples=samples,
        warnings=tuple(_edge_warnings(ts, start_ns, end_ns)),
    )


def short_run_warning(duration_s: float, update_interval_s: float | None, source: str) -> str | None:
    if not update_interval_s or duration_s >= MIN_INTERVALS * update_interval_s:
        return None
    return (
        f"{source}: the run lasts {duration_s:.3g} s, {int(duration_s / update_interval_s)} update intervals "
        f"of {update_interval_s:.3g} s (< {MIN_INTERVALS}): make the run longer (more iterations) for a "
        "precise energy"
    )


def nyquist_warning(sample_interval_s: float, load_period_s: float | None, source: str) -> str | None:
    """A load that repeats every T is aliased by a sampler slower than T/2 (Nyquist)."""
    if not load_period_s or sample_interval_s < load_period_s / 2:
        return None
    return (
        f"{source}: aliased: the load repeats every {load_period_s:.3g} s but the power is read every "
        f"{sample_interval_s:.3g} s (needs < {load_period_s / 2:.3g} s); use an energy counter or a "
        "faster meter"
    )


def aliasing_warning(watts: Sequence[float], resolution_w: float | None, source: str) -> str | None:
    """Aliasing seen in the samples themselves. The sampler reads at jittered instants, so a load that
    changes faster than the sampler shows as readings that jump between levels independently of each other
    (lag-1 autocorrelation near or below 0) instead of the smooth, correlated readings of a load the
    sampler follows. Flagged when the spread is also well above the sensor's resolution."""
    n = len(watts)
    if n < 8:
        return None
    mean = math.fsum(watts) / n
    var = math.fsum((w - mean) ** 2 for w in watts) / n
    sd = math.sqrt(var)
    floor = max(0.05 * abs(mean), 5 * (resolution_w or 0.0))
    if sd <= floor or var == 0:
        return None
    r1 = math.fsum((watts[i] - mean) * (watts[i + 1] - mean) for i in range(n - 1)) / (n * var)
    if r1 >= 0.5:
        return None
    return (
        f"{source}: aliased: the power changes faster than it is read (successive readings uncorrelated, "
        f"lag-1 autocorrelation {r1:.2f}, spread {sd:.3g} W around {mean:.3g} W); its energy may be wrong: "
        "use an energy counter or a faster meter"
    )


def agreement(energies_j: dict[str, float]) -> float | None:
    """Largest relative spread between sources measuring the same run: (max - min) / median."""
    vals = sorted(v for v in energies_j.values() if v is not None and math.isfinite(v))
    if len(vals) < 2:
        return None
    mid = vals[len(vals) // 2] if len(vals) % 2 else (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2
    return (vals[-1] - vals[0]) / mid if mid > 0 else None
