"""The monitor's samples of a whole campaign as the report plots them, reduced by the store where it can.

A campaign of a million runs holds thirty million samples; a plot shows about a point per pixel. So each
plotted source is reduced here, once, to what the plot draws: the mean of time and of value per time bucket,
or every sample when the source has no more than MAX_POINTS. The buckets are MAX_POINTS equal parts of one
time range shared by every source, from the first run's start to the last run's start plus the latest sample
time of any run (store.series_grid). The database sums, per source and bucket, the rows (a run's samples of a
source) that lie in one bucket, from each row's summary (store schema 10); the few rows that span two buckets
or have no summary are read sample by sample here. Memory holds the buckets, never the campaign. The points
are the means of all samples per bucket (report.plot.lines.downsample over the same range), up to the rounding
of sums taken in another order.

Every step is the standard library and SQL: the board that made the campaign can draw its report."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from boardlab.store import Store

# The plot's points per line (report.plot.MAX_SERIES_POINTS, about one per pixel at 800 px): a test keeps
# the two equal. analysis does not import report.
MAX_POINTS = 700
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


class _Sums:
    """Per source and bucket: samples, sum of times (s since the first run's start), sum of values."""

    def __init__(self) -> None:
        self.by_source: dict[str, dict[int, list[float]]] = {}

    def add(self, source: str, k: int, n: int, sx: float, sy: float) -> None:
        acc = self.by_source.setdefault(source, {}).setdefault(k, [0, 0.0, 0.0])
        acc[0], acc[1], acc[2] = acc[0] + n, acc[1] + sx, acc[2] + sy

    def count(self, source: str) -> int:
        return int(sum(a[0] for a in self.by_source.get(source, {}).values()))

    def points(self, source: str, div: float, scale: float) -> list[Point]:
        """Per bucket in time order: (mean time / div, mean value / scale)."""
        sums = self.by_source[source]
        return [(sx / n / div, sy / n / scale) for n, sx, sy in (sums[k] for k in sorted(sums))]


MANY_ROWS = 100_000  # rows read sample by sample past which they are streamed, not looked up by run


def monitor_series(store: Store, campaign_id: int) -> MonitorSeries:
    """Every monitor sample of the campaign on one time axis (each run's samples placed at the run's start
    time: the monitor's t_ns counts from it), as the monitor section plots them (module docstring)."""
    grid = store.series_grid(campaign_id)
    if grid is None:
        return MonitorSeries("s")
    t0, lo_s, hi_s = grid
    div, unit = (60.0, "min") if hi_s - lo_s > SPAN_FOR_MINUTES_S else (1.0, "s")
    lo, span = lo_s / div, (hi_s / div - lo_s / div) or 1.0

    def bucket(x: float) -> int:  # x in s since t0: as store.series_bucket_sums computes it
        return min(int((x / div - lo) / span * MAX_POINTS), MAX_POINTS - 1)

    sums, samples = _Sums(), _Sums()  # `samples`: every source's count, summed or not
    rest: array | None = array("q")  # runs with a row the database did not sum; None: too many, stream them
    for source, k, n, sx, sy, run_id in store.series_bucket_sums(campaign_id, t0, div, lo, span, MAX_POINTS):
        samples.add(source, 0, n, 0.0, 0.0)
        if run_id is None:  # a summed row group: its bucket is known (the store gives a run id otherwise)
            assert k is not None
            sums.add(source, k, n, sx, sy)
        elif rest is not None:
            rest.append(run_id)
            rest = rest if len(rest) <= MANY_ROWS else None
    counted = bool(samples.by_source)  # else a store before schema 10: nothing summed, every row read here
    runs = sorted(set(rest)) if rest is not None and counted else None
    for started, source, times, values, summarized in store.series_rows(campaign_id, runs):
        start = started - t0
        if summarized and bucket(start + times[0] / 1e9) == bucket(start + times[-1] / 1e9):
            continue  # the database summed this row
        if not counted:
            samples.add(source, 0, len(times), 0.0, 0.0)
        for t, v in zip(times, values, strict=True):
            x = start + t / 1e9
            sums.add(source, bucket(x), 1, x, v)
    lines: dict[str, list[Point]] = {}
    raw = [s for s in samples.by_source if scale_of(s) is not None and samples.count(s) <= MAX_POINTS]
    points: dict[str, list[tuple[float, float]]] = {s: [] for s in raw}
    if raw:  # a source with few samples is plotted sample by sample
        for started, source, times, values, _ in store.series_rows(campaign_id, None, raw):
            points[source].extend((started - t0 + t / 1e9, v) for t, v in zip(times, values, strict=True))
    for source in sorted(samples.by_source):
        scale = scale_of(source)
        if scale is None:
            continue
        if source in points:
            lines[source] = [(t / div, v / scale) for t, v in sorted(points[source], key=lambda p: p[0])]
        else:
            lines[source] = sums.points(source, div, scale)
    return MonitorSeries(unit, lines, len(samples.by_source))
