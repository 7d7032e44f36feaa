"""The monitor's samples of a whole campaign as the report plots them, read in two streamed passes.

A campaign of a million runs holds thirty million samples; a plot shows about a point per pixel. So each
plotted source is reduced here, once, to what the plot draws: the mean of time and of value per equal-width
time bucket (MAX_POINTS buckets over the source's time range), or every sample when it has no more than
MAX_POINTS. The first pass finds the time ranges (and so the time unit and the buckets); the second fills
the buckets in run order and closes each as soon as no later run can reach it, so memory holds the buckets
of a few runs, never the campaign. Means are exact sums (math.fsum) over the same values in any order, so the
points are the ones the plot's own downsampling (report.plot.lines.downsample) made from all samples."""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from boardlab.store import Store

# The plot's points per line (report.plot.MAX_SERIES_POINTS, about one per pixel at 800 px): a test keeps
# the two equal. analysis does not import report.
MAX_POINTS = 700
CLOSE_EVERY = 256  # runs read between two closes of the finished buckets
SPAN_FOR_MINUTES_S = 600  # a campaign longer than 10 minutes is plotted in minutes

# (title, which sources, divisor of their values, y-axis label): the monitor section's figures
GROUPS: tuple[tuple[str, Callable[[str], bool], float, str], ...] = (
    (
        "CPU load",
        lambda s: s == "worker.cpu_pct" or (s.startswith("cpu") and s.endswith(".busy_pct")),
        1.0,
        "CPU [%]",
    ),
    ("CPU frequency", lambda s: s.startswith("freq.") and s.endswith("_khz"), 1000.0, "frequency [MHz]"),
    ("Temperature", lambda s: s.startswith("temp.") and s.endswith("_mc"), 1000.0, "temperature [°C]"),
    ("Worker memory", lambda s: s == "worker.rss_kib", 1024.0, "resident set [MiB]"),
)

Point = tuple[float, float | None]


@dataclass(frozen=True)
class MonitorSeries:
    """Every plotted monitor source of a campaign, as the plot draws it: time since the first run started
    in `time_unit` ("s", or "min" past 10 minutes), value divided by its group's divisor. `sources` counts
    every source sampled (plotted or not); an empty campaign has none and no monitor section."""

    time_unit: str
    lines: dict[str, list[Point]] = field(default_factory=dict)
    sources: int = 0

    def __bool__(self) -> bool:
        return self.sources > 0


def scale_of(source: str) -> float | None:
    """The divisor of a source's values in its figure, or None when no figure shows it."""
    return next((scale for _, pred, scale, _ in GROUPS if pred(source)), None)


@dataclass
class _Range:
    count: int = 0
    lo: float = float("inf")
    hi: float = float("-inf")


def _first_pass(extents: Iterator, t0: float) -> tuple[dict[str, _Range], array, float, float]:
    """Per source: samples and time range; per run in read order: its earliest sample; the overall range.
    Times are seconds since `t0`, the first run's start; `extents` gives (run id, start unix s, source,
    samples, first t_ns, last t_ns), each run's samples ascending, the samples themselves not read."""
    ranges: dict[str, _Range] = {}
    run_min = array("d")
    last_run = None
    for run_id, started, source, count, first_ns, last_ns in extents:
        start = started - t0
        r = ranges.setdefault(source, _Range())
        first, last = start + first_ns / 1e9, start + last_ns / 1e9
        r.count += count
        r.lo, r.hi = min(r.lo, first), max(r.hi, last)
        if run_id != last_run:
            run_min.append(first)
            last_run = run_id
        else:
            run_min[-1] = min(run_min[-1], first)
    lo = min((r.lo for r in ranges.values()), default=0.0)
    hi = max((r.hi for r in ranges.values()), default=0.0)
    return ranges, run_min, lo, hi


class _Buckets:
    """One source's time buckets in the plot's unit, closed (averaged) once no later sample can reach them."""

    def __init__(self, r: _Range, time_div: float, scale: float):
        self.lo, self.div, self.scale = r.lo / time_div, time_div, scale
        self.span = (r.hi / time_div - self.lo) or 1.0
        self.open: dict[int, tuple[list[float], list[float]]] = {}
        self.points: list[Point] = []
        self.closed = 0  # every bucket below this one is closed: no later sample falls there

    def index(self, x: float) -> int:
        return min(int((x - self.lo) / self.span * MAX_POINTS), MAX_POINTS - 1)

    def add(self, start: float, times: array, values: array) -> None:
        div, scale, lo, span = self.div, self.scale, self.lo, self.span
        xs = [(start + t / 1e9) / div for t in times]
        ys = [v / scale for v in values]
        k0 = min(int((xs[0] - lo) / span * MAX_POINTS), MAX_POINTS - 1)  # self.index, inlined: per run
        k1 = min(int((xs[-1] - lo) / span * MAX_POINTS), MAX_POINTS - 1)
        if k0 == k1:  # a run's samples usually fall in one bucket
            bx, by = self.open.setdefault(k0, ([], []))
            bx.extend(xs)
            by.extend(ys)
            return
        for x, y in zip(xs, ys, strict=True):
            bx, by = self.open.setdefault(self.index(x), ([], []))
            bx.append(x)
            by.append(y)

    def close_before(self, x: float) -> None:
        """Closes every bucket below the one `x` falls in (no later sample is earlier than `x`)."""
        k = self.index(x / self.div) if x != float("inf") else MAX_POINTS
        if k <= self.closed:  # most runs start in the bucket of the run before: nothing to close
            return
        self.closed = k
        for done in sorted(b for b in self.open if b < k):
            bx, by = self.open.pop(done)
            self.points.append((statistics.fmean(bx), statistics.fmean(by)))


def monitor_series(store: Store, campaign_id: int) -> MonitorSeries:
    """Every monitor sample of the campaign on one time axis (each run's samples placed at the run's start
    time: the monitor's t_ns counts from it), as the monitor section plots them (module docstring)."""
    span = store.run_start_range(campaign_id)
    if span is None:
        return MonitorSeries("s")
    t0 = span[0]

    ranges, run_min, lo, hi = _first_pass(store.campaign_series_extents(campaign_id), t0)
    time_div, unit = (60.0, "min") if hi - lo > SPAN_FOR_MINUTES_S else (1.0, "s")
    later = array("d", [float("inf")]) * (len(run_min) + 1)  # later[i]: earliest sample of runs i and after
    for i in range(len(run_min) - 1, -1, -1):
        later[i] = min(run_min[i], later[i + 1])
    buckets: dict[str, _Buckets] = {}
    raw: dict[str, list[tuple[float, float]]] = {}
    for source, r in ranges.items():
        scale = scale_of(source)
        if scale is not None and r.count > MAX_POINTS:
            buckets[source] = _Buckets(r, time_div, scale)
        elif scale is not None:
            raw[source] = []
    i, last_run = -1, None
    for run_id, started, source, times, values in store.campaign_series(campaign_id):
        if not times:
            continue
        if run_id != last_run:
            # Closing a bucket later than possible changes no point (no later sample reaches it), so the
            # buckets are closed every CLOSE_EVERY runs: memory holds that many runs' buckets at most.
            if i >= 0 and (i + 1) % CLOSE_EVERY == 0:
                for b in buckets.values():
                    b.close_before(later[i + 1])
            i, last_run = i + 1, run_id
        start = started - t0
        if (bucket := buckets.get(source)) is not None:
            bucket.add(start, times, values)
        elif source in raw:
            raw[source].extend((start + t / 1e9, v) for t, v in zip(times, values, strict=True))
    lines: dict[str, list[Point]] = {}
    for source in ranges:
        if source in buckets:
            buckets[source].close_before(float("inf"))
            lines[source] = buckets[source].points
        elif source in raw:
            scale = scale_of(source) or 1.0
            lines[source] = [(t / time_div, v / scale) for t, v in sorted(raw[source], key=lambda p: p[0])]
    return MonitorSeries(unit, lines, len(ranges))
