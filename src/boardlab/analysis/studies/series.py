"""Per-second series of any workload, over time: one figure per metric and cell, a line per series label
(e.g. one per service) at the median across the cell's valid runs, with whiskers from the smallest to the
largest run at each second. Metrics of one unit (RSS and PSS) are drawn side by side.

A workload gives its series in its worker result: a top-level "series" list of
{"metric", "label", "unit", "points": [[seconds since its start, value], ...]} (docs/extending.md,
"Per-second series"). Runs are the unit (docs/method.md): a second's spread is the spread across runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from boardlab.analysis import document as doc
from boardlab.analysis.format import cell_label, display_unit, fmt_value, varying_keys
from boardlab.model.worker_result import SeriesSamples, may_hold_series, stored_worker_result

TITLE = "Per-second series"
SHOWN_AS = "over time in the per-second series section below"


@dataclass(frozen=True)
class Band:
    """One series label of one metric across a cell's runs: per second, the median, smallest and largest."""

    metric: str
    label: str
    unit: str
    seconds: tuple[float, ...]
    median: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    n_runs: int
    stopped_s: float | None = None  # the median second its label stopped at, in the runs where it stopped


@dataclass(frozen=True)
class CellSeries:
    cell_id: int
    workload: str
    params: dict
    condition: str
    bands: tuple[Band, ...]


@dataclass(frozen=True)
class SeriesStudy:
    cells: tuple[CellSeries, ...]


def _run_series(worker_json: str | None) -> tuple[SeriesSamples, ...]:
    if not may_hold_series(worker_json):  # most results have none: not read at all
        return ()
    result = stored_worker_result(worker_json)
    return result.series if result else ()


MEMORY = ("rss_bytes", "pss_bytes")  # read only while a process lives: where they end, it has stopped


def _stops(series: Sequence[SeriesSamples]) -> dict[str, float]:
    """The second each label of one run stopped at, for a label that stopped more than a second before the
    run's last sample: the end of its memory series where it has one (a stopped process's CPU still reads
    as 0 until it is reaped: a drop that is no drop), else the end of its samples."""
    ends: dict[str, float] = {}
    memory: dict[str, float] = {}
    for s in series:
        last = max((t for t, v in s.points if v is not None), default=None)
        if last is not None:
            ends[s.label] = max(ends.get(s.label, last), last)
            if s.metric in MEMORY:
                memory[s.label] = max(memory.get(s.label, last), last)
    run_end = max(ends.values(), default=0.0)
    return {k: t for k, t in {**ends, **memory}.items() if t < run_end - 1}


def bands(runs: Sequence[Sequence[SeriesSamples]]) -> tuple[Band, ...]:
    """Per (metric, label): each run's samples binned to whole seconds, then across runs per second. A label
    that stopped in a run (`_stops`) has no samples after its stop there."""
    per: dict[tuple[str, str], dict] = {}
    for series in runs:
        stops = _stops(series)
        for s in series:
            e = per.setdefault((s.metric, s.label), {"unit": s.unit, "runs": [], "stops": []})
            stop = stops.get(s.label)
            by_second: dict[int, float] = {}
            for t, v in s.points:
                if v is not None and (stop is None or t <= stop + 1):  # the interval it stopped in counts
                    by_second[round(t)] = v
            e["runs"].append(by_second)
            if stop is not None:
                e["stops"].append(stop)
    out = []
    for (metric, label), e in per.items():
        seconds = sorted({t for r in e["runs"] for t in r})
        at = [[r[t] for r in e["runs"] if t in r] for t in seconds]
        out.append(
            Band(
                metric,
                label,
                e["unit"],
                tuple(float(t) for t in seconds),
                tuple(statistics.median(v) for v in at),
                tuple(min(v) for v in at),
                tuple(max(v) for v in at),
                len(e["runs"]),
                statistics.median(e["stops"]) if e["stops"] else None,
            )
        )
    return tuple(out)


def applies(ctx) -> bool:
    return bool(ctx.cells)  # whether any run has series is known only after reading them (analyze)


def analyze(ctx) -> SeriesStudy | None:
    by_cell: dict[int, list[tuple[SeriesSamples, ...]]] = {}
    # streamed, and only the valid runs whose result names "series" are read (the database filters)
    for cell_id, worker_json in ctx.store.iter_worker_series(ctx.campaign_id):
        if series := _run_series(worker_json):
            by_cell.setdefault(cell_id, []).append(series)
    cells = tuple(
        CellSeries(c.cell_id, c.workload, dict(c.params), c.condition, bands(by_cell[c.cell_id]))
        for c in ctx.cells
        if c.cell_id in by_cell
    )
    return SeriesStudy(cells) if cells else None


def _figure(title: str, group: list[Band], width: int) -> doc.Figure:
    div, unit = display_unit(group[0].unit, max((max(b.median) for b in group if b.median), default=None))
    lines = [
        doc.Line(
            b.label if b.stopped_s is None else f"{b.label} (stopped at {fmt_value(b.stopped_s)} s)",
            [(t, m / div) for t, m in zip(b.seconds, b.median, strict=True)],
            errors=[(lo / div, hi / div) for lo, hi in zip(b.low, b.high, strict=True)],
            markers=len(b.seconds) <= 60,
        )
        for b in group
    ]
    return doc.Figure(
        doc.LinePlotSpec(
            lines=lines,
            title=title,
            x_label="seconds since the run started",
            y_label=f"{group[0].metric} [{unit}]",
            y_zero=True,
            width=width,
            height=280,
        )
    )


def figures(cell: CellSeries, name: str) -> list[doc.Block]:
    """A figure per metric; metrics that share a unit (RSS, PSS) side by side."""
    by_metric: dict[str, list[Band]] = {}
    for b in cell.bands:
        by_metric.setdefault(b.metric, []).append(b)
    by_unit: dict[str, list[str]] = {}
    for metric, group in by_metric.items():
        by_unit.setdefault(group[0].unit, []).append(metric)
    out: list[doc.Block] = []
    for metrics in by_unit.values():
        width = 800 if len(metrics) == 1 else 396
        figs = [
            _figure(f"{name}: {m} per second (median across {by_metric[m][0].n_runs} runs, min–max)",
                    by_metric[m], width)
            for m in metrics
        ]  # fmt: skip
        out.append(figs[0] if len(figs) == 1 else doc.Multiples(tuple(figs)))
    return out


def shows(study: SeriesStudy) -> list[int]:
    return []  # the cells keep their run-value boxplots: this adds their course over time


def sections(analysis, study: SeriesStudy) -> list[doc.Section]:
    varying = varying_keys(c.params for c in study.cells)
    blocks: list[doc.Block] = [
        doc.Prose(
            "Samples a workload takes every second of a run, per cell: the line is the median across the "
            "cell's valid runs at each second, the whiskers the smallest and largest run there. A line that "
            "ends early is a process that stopped (its legend says when), not a fall to zero.",
            small=True,
        )
    ]
    for c in study.cells:
        blocks += figures(
            c, f"{cell_label(c.workload, c.params, varying)} @ {analysis.condition_text(c.condition)}"
        )
    return [doc.section(TITLE, *blocks, formats=doc.HTML, anchor="series")]
