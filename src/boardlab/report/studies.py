"""The two studies' extra numbers (the interference study): real-time latency histograms and AI per-frame percentiles.

`rt_cells` and `ai_cells` read what `rt.cyclictest` and `ai.inference` runs stored beyond their primary
value, per cell and over the cell's valid runs only, and return frozen records for the renderers:

- real-time latency: each run's `max_latency_us`; the histograms `latency_us` / `latency_us.cpuN` of every
  valid run merged bucket by bucket (`merge_histograms`), and from the merged histogram the nearest-rank
  percentiles p50 ... p99.99 (`histogram_percentiles`: a percentile in the overflow is only "at least the
  limit", never a number); min / avg / max from the runs' own metrics (cyclictest's, covering every sample);
- AI inference: each run's per-frame p50 / p90 / p99 of `latency_ms` (the median, p90 and p99 of its frames,
  as the worker stored them) and their median over the runs; the p99 is the pooled p99 of all runs' frames
  when a run has fewer than 100 frames (its own "p99" would be its slowest frame).

Nothing here compares conditions: verdicts come from `analysis` (the primary metric, and for AI the per-run
p99 in `tail_comparisons`).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.stats.histogram import (
    HistogramPercentile,
    histogram_limit,
    histogram_percentiles,
    merge_histograms,
)

if TYPE_CHECKING:  # analysis imports this module
    from boardlab.report.analysis import CellAnalysis
    from boardlab.store import Store

RT_WORKLOAD = "rt.cyclictest"
AI_WORKLOAD = "ai.inference"
RT_LEVELS = (50, 90, 99, 99.9, 99.99)
RT_HISTOGRAM = "latency_us"  # the measuring threads' histograms: latency_us or latency_us.cpuN[.tK]
AI_METRIC = "latency_ms"
TAIL_MIN_SAMPLES = 100  # docs/method.md: a p99 needs at least 100 samples


def split_condition(condition: str) -> tuple[str, str]:
    """'mobilenet_v1/isolated' -> ('mobilenet_v1', 'isolated'): the rt-isolation preset's load and mode."""
    load, sep, mode = condition.rpartition("/")
    return (load, mode) if sep and load and mode else (condition, "")


def pct_name(q: float) -> str:
    """99.9 -> 'p99.9': a level as reports print it."""
    return f"p{q:g}"


def samples_needed(q: float) -> int:
    """The sample count from which the nearest-rank q-th percentile is no longer the largest sample."""
    from fractions import Fraction

    rest = 100 - Fraction(repr(float(q)))
    return -(-100 // rest) if rest > 0 else 1  # ceil(100 / rest)


@dataclass(frozen=True)
class RtCell:
    """One rt.cyclictest cell: run maxima, the merged histogram of its valid runs, and its percentiles."""

    cell_id: int
    workload: str
    params: dict
    condition: str
    load: str
    mode: str
    max_values: tuple[float, ...]  # each valid run's max_latency_us, in run order
    invalid_max_values: tuple[float, ...]  # runs that did not count (shown hollow)
    runs_merged: int  # valid runs whose histograms are in `counts`
    unit: str
    bucket_width: float | None
    counts: tuple[int, ...]  # merged histogram, bucket i = [i*w, (i+1)*w)
    overflow: int  # merged samples at or beyond `limit`
    limit: float | None  # len(counts) * bucket_width
    percentiles: tuple[HistogramPercentile, ...]  # nearest rank, RT_LEVELS, from the merged histogram
    min_value: float | None  # smallest min_latency_us over the valid runs
    avg_value: float | None  # avg_latency_us weighted by each run's samples
    max_value: float | None  # largest max_latency_us over the valid runs
    notes: tuple[str, ...] = ()

    @property
    def samples(self) -> int:
        return sum(self.counts) + self.overflow

    @property
    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.workload} ({params})" if params else self.workload


@dataclass(frozen=True)
class AiCell:
    """One ai.inference cell: each valid run's per-frame latency summary, and their medians over runs."""

    cell_id: int
    workload: str
    params: dict
    condition: str
    unit: str
    values: tuple[float, ...]  # each valid run's median per-frame latency, in run order
    invalid_values: tuple[float, ...]
    p50: float | None  # median over the valid runs of each run's per-frame p50 (its median)
    p90: float | None
    p99: float | None
    n_runs: int  # valid runs with the latency summary
    frames_min: int | None  # steady-state frames per run (latency_ms values), fewest and most
    frames_max: int | None
    # How `p99` was obtained: per-run p99s need >= 100 frames in every run (docs/method.md), else the p99 of all
    # runs' frames pooled (the cluster-bootstrap rule of `stats.tails`).
    p99_rule: str = "per-run"

    @property
    def model(self) -> str:
        return str(self.params.get("model", self.workload))

    @property
    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.workload} ({params})" if params else self.workload


def _metrics(store: Store, run_id: int) -> dict[str, dict]:
    return {row["metric"]: dict(row) for row in store.run_metrics(run_id)}


def _is_rt_histogram(name: str) -> bool:
    return name == RT_HISTOGRAM or name.startswith(RT_HISTOGRAM + ".")


def _rt_cell(store: Store, cell: CellAnalysis) -> RtCell:
    notes: list[str] = []
    maxima: list[float] = []
    invalid: list[float] = []
    mins: list[float] = []
    weighted: list[tuple[float, float]] = []
    hists: list[tuple[list[int], int]] = []
    shape: set[tuple[float, int, str]] = set()
    runs_merged = 0
    for r in cell.runs:
        if not r.ok:
            continue
        m = _metrics(store, r.run_id)
        top = (m.get("max_latency_us") or {}).get("median")
        if top is None and cell.metric == "max_latency_us":
            top = r.value
        if not r.valid:
            if top is not None:
                invalid.append(float(top))
            continue
        if top is not None:
            maxima.append(float(top))
        rows = [h for h in store.histograms(r.run_id) if _is_rt_histogram(h["name"])]
        if rows:
            runs_merged += 1
        for h in rows:
            counts = json.loads(h["counts_json"])
            hists.append((counts, int(h["overflow"])))
            shape.add((float(h["bucket_width"]), len(counts), h["unit"]))
        low = (m.get("min_latency_us") or {}).get("median")
        if low is not None:
            mins.append(float(low))
        avg = (m.get("avg_latency_us") or {}).get("median")
        n = (m.get("samples") or {}).get("median")
        if n is None:
            n = sum(sum(json.loads(h["counts_json"])) + int(h["overflow"]) for h in rows)
        if avg is not None and n:
            weighted.append((float(avg), float(n)))
    counts: list[int] = []
    overflow = 0
    width: float | None = None
    unit = "us"
    limit: float | None = None
    percentiles: tuple[HistogramPercentile, ...] = ()
    if len(shape) > 1:
        notes.append(
            "the runs' histograms differ in bucket width, length or unit: not merged "
            f"({'; '.join(f'{w:g} {u} x {n}' for w, n, u in sorted(shape))})"
        )
    elif shape:
        width, _, unit = next(iter(shape))
        counts, overflow = merge_histograms(hists)
        limit = histogram_limit(counts, width)
        percentiles = histogram_percentiles(counts, width, overflow, RT_LEVELS)
    else:
        notes.append("no latency histogram stored for a valid run")
    if runs_merged < len(maxima):
        notes.append(f"{len(maxima) - runs_merged} valid run(s) without a histogram")
    n = sum(counts) + overflow
    censored = [pct_name(p.q) for p in percentiles if p.censored]
    if censored:
        shown = "µs" if unit == "us" else unit
        notes.append(
            f"{', '.join(censored)} in the overflow: only '>= {limit:g} {shown}' is known (raise histogram_us)"
        )
    short = [p.q for p in percentiles if p.n and p.n < samples_needed(p.q)]
    if short:
        names = ", ".join(pct_name(q) for q in short)
        needs = " and ".join(str(samples_needed(q)) for q in short)
        notes.append(
            f"{names} from {n} samples, fewer than {needs}: nearest rank gives the largest sample "
            "(lengthen duration_s)"
        )
    total_w = sum(w for _, w in weighted)
    load, mode = split_condition(cell.condition)
    return RtCell(
        cell_id=cell.cell_id,
        workload=cell.workload,
        params=cell.params,
        condition=cell.condition,
        load=load,
        mode=mode,
        max_values=tuple(maxima),
        invalid_max_values=tuple(invalid),
        runs_merged=runs_merged,
        unit=unit,
        bucket_width=width,
        counts=tuple(counts),
        overflow=overflow,
        limit=limit,
        percentiles=percentiles,
        min_value=min(mins) if mins else None,
        avg_value=sum(a * w for a, w in weighted) / total_w if total_w else None,
        max_value=max(maxima) if maxima else None,
        notes=tuple(notes),
    )


def rt_cells(store: Store, cells: Sequence[CellAnalysis]) -> tuple[RtCell, ...]:
    return tuple(_rt_cell(store, c) for c in cells if c.workload == RT_WORKLOAD)


def _ai_cell(store: Store, cell: CellAnalysis) -> AiCell:
    values: list[float] = []
    invalid: list[float] = []
    p50s: list[float] = []
    p90s: list[float] = []
    p99s: list[float] = []
    frames: list[int] = []
    pooled: list[list[float]] = []
    unit = "ms"
    for r in cell.runs:
        if not r.ok:
            continue
        m = _metrics(store, r.run_id).get(AI_METRIC)
        if m is None:
            continue
        unit = m["unit"]
        median = m["median"]
        if not r.valid:
            if median is not None:
                invalid.append(float(median))
            continue
        if median is None:
            continue
        values.append(float(median))
        p50s.append(float(median))
        if m["p90"] is not None:
            p90s.append(float(m["p90"]))
        if m["p99"] is not None:
            p99s.append(float(m["p99"]))
        samples = store.run_values(r.run_id, AI_METRIC)
        frames.append(len(samples))
        if samples:
            pooled.append(samples)
    counted = [f for f in frames if f]
    p99 = statistics.median(p99s) if p99s else None
    rule = "per-run"
    if pooled and min(len(x) for x in pooled) < TAIL_MIN_SAMPLES:
        from boardlab.stats import pooled_quantile

        p99, rule = pooled_quantile(pooled, 0.99), "pooled"
    return AiCell(
        cell_id=cell.cell_id,
        workload=cell.workload,
        params=cell.params,
        condition=cell.condition,
        unit=unit,
        values=tuple(values),
        invalid_values=tuple(invalid),
        p50=statistics.median(p50s) if p50s else None,
        p90=statistics.median(p90s) if p90s else None,
        p99=p99,
        n_runs=len(values),
        frames_min=min(counted) if counted else None,
        frames_max=max(counted) if counted else None,
        p99_rule=rule,
    )


def ai_cells(store: Store, cells: Sequence[CellAnalysis]) -> tuple[AiCell, ...]:
    return tuple(_ai_cell(store, c) for c in cells if c.workload == AI_WORKLOAD)
