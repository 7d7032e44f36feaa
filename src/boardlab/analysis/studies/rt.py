"""The real-time latency study (the interference study's first half): rt.cyclictest-like cells' histograms.

Applies to cells whose workload spec names a `sample_histogram` (wake-up latencies stored as histograms).
Per cell, over its valid runs only: each run's `max_latency_us`; the histograms `latency_us` /
`latency_us.cpuN` of every valid run merged bucket by bucket (`merge_histograms`), and from the merged
histogram the nearest-rank percentiles p50 ... p99.99 (`histogram_percentiles`: a percentile in the overflow
is only "at least the limit", never a number); min / avg / max from the runs' own metrics (covering every
sample). The section: max latency per run by load and isolation mode, the histograms on shared axes, and the
percentile table. Verdicts come from `analysis.core` (the primary metric and the p99 tail comparison).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.core import is_sample_histogram, metrics_by_name
from boardlab.analysis.format import (
    PERCENTILE_LEVELS,
    cell_label,
    first_seen,
    fmt_value,
    params_text,
    pct_name,
    samples_needed,
    unit_label,
    varying_keys,
)
from boardlab.model.campaign import DEFAULT_ISOLATION_MODE
from boardlab.stats.histogram import (
    HistogramPercentile,
    histogram_limit,
    histogram_percentiles,
    merge_histograms,
)

if TYPE_CHECKING:
    from boardlab.analysis.records import CampaignAnalysis, CellAnalysis, StudyContext
    from boardlab.model.facts import ConditionPart, WorkloadFacts
    from boardlab.store import Store

TITLE = "Real-time latency"
SHOWN_AS = "by load and mode in the Real-time latency section below"


def _mode(parts: Sequence[ConditionPart]) -> str:
    """The `mode` of the condition's isolation part (shared, pinned, isolated); without one, how the runner
    places every worker (`DEFAULT_ISOLATION_MODE`; a plan with `runs.cpu = "none"` pins none, and says so of
    a condition by giving it an isolation part)."""
    isolation = next((p for p in parts if p.kind == "isolation"), None)
    return str(isolation.params.get("mode", DEFAULT_ISOLATION_MODE)) if isolation else DEFAULT_ISOLATION_MODE


def _load(parts: Sequence[ConditionPart]) -> tuple[tuple[str, dict], ...]:
    """What the condition runs beside the measured task: each part that is not its isolation, as (what, its
    params), a workload part as its workload and that workload's params. Where a load is placed belongs to
    the mode (a shared CPU puts it on every CPU), so `placement` is not part of the load."""
    load = []
    for p in parts:
        if p.kind in ("isolation", "baseline"):
            continue
        if p.kind == "workload":
            load.append((str(p.params.get("workload")), dict(p.params.get("params") or {})))
        else:
            load.append((p.kind, {k: v for k, v in p.params.items() if k != "placement"}))
    return tuple(load)


def _load_labels(loads: Sequence[tuple[tuple[str, dict], ...]]) -> dict[str, str]:
    """Each load's label by its key (`_key`): "none" for no load, else its parts as cell labels showing only
    the parameters that vary between the loads of one workload (or kind) in the study, or all of them where
    that workload runs with one set (which model ran beside it)."""
    params_of: dict[str, list[dict]] = {}
    for load in loads:
        for what, params in load:
            params_of.setdefault(what, []).append(params)
    varying = {what: varying_keys(sets) or None for what, sets in params_of.items()}
    return {
        _key(load): " + ".join(cell_label(what, params, varying[what]) for what, params in load) or "none"
        for load in loads
    }


def _key(load: tuple[tuple[str, dict], ...]) -> str:
    return json.dumps(load, sort_keys=True)


@dataclass(frozen=True)
class RtCell:
    """One rt.cyclictest cell: run maxima, the merged histogram of its valid runs, and its percentiles."""

    cell_id: int
    workload: str
    params: dict
    condition: str
    load: str  # what ran beside it, from its condition's parts ("ai.inference (model=resnet18)"; `_layout`)
    mode: str  # its condition's isolation mode (shared, pinned, isolated); "" when laid out by name
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
        return cell_label(self.workload, self.params)


def _rt_cell(store: Store, cell: CellAnalysis, workloads: WorkloadFacts, load: str, mode: str) -> RtCell:
    histogram = workloads.spec_of(cell.workload).sample_histogram  # type: ignore[union-attr]
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
        m = metrics_by_name(store, r.run_id)
        top = (m.get("max_latency_us") or {}).get("median")
        if top is None and cell.metric == "max_latency_us":
            top = r.value
        if not r.valid:
            if top is not None:
                invalid.append(float(top))
            continue
        if top is not None:
            maxima.append(float(top))
        rows = [h for h in store.histograms(r.run_id) if is_sample_histogram(h["name"], histogram)]
        if rows:
            runs_merged += 1
        for h in rows:
            run_counts = json.loads(h["counts_json"])
            hists.append((run_counts, int(h["overflow"])))
            shape.add((float(h["bucket_width"]), len(run_counts), h["unit"]))
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
        percentiles = histogram_percentiles(counts, width, overflow, PERCENTILE_LEVELS)
    else:
        notes.append("no latency histogram stored for a valid run")
    if runs_merged < len(maxima):
        notes.append(f"{len(maxima) - runs_merged} valid run(s) without a histogram")
    notes += _percentile_notes(percentiles, unit, limit, sum(counts) + overflow)
    total_w = sum(w for _, w in weighted)
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


def _percentile_notes(
    percentiles: tuple[HistogramPercentile, ...], unit: str, limit: float | None, n: int
) -> list[str]:
    """What a reader must know of the merged histogram's percentiles: those in the overflow (only a bound is
    known), those from too few samples (nearest rank gives the largest)."""
    notes = []
    censored = [pct_name(p.q) for p in percentiles if p.censored]
    if censored:
        shown = "µs" if unit == "us" else unit
        notes.append(
            f"{', '.join(censored)} in the overflow: only '>= {limit:g} {shown}' is known (raise "
            "histogram_us)"
        )
    short = [p.q for p in percentiles if p.n and p.n < samples_needed(p.q)]
    if short:
        names = ", ".join(pct_name(q) for q in short)
        needs = " and ".join(str(samples_needed(q)) for q in short)
        notes.append(
            f"{names} from {n} samples, fewer than {needs}: nearest rank gives the largest sample "
            "(lengthen duration_s)"
        )
    return notes


def _is_rt(cell: CellAnalysis, workloads: WorkloadFacts) -> bool:
    spec = workloads.spec_of(cell.workload)
    return spec is not None and spec.sample_histogram is not None


def _layout(cells: Sequence[CellAnalysis]) -> list[tuple[str, str]]:
    """Each cell's (load, mode), read from its condition's parts as its plan declared them, when the
    campaign varies isolation and those tell its cells apart; else (its condition's name, ""): one box per
    condition."""
    parts = [c.facts.condition for c in cells]
    by_name = [(c.condition, "") for c in cells]
    if not any(p.kind == "isolation" for ps in parts for p in ps):
        return by_name
    loads = [_load(ps) for ps in parts]
    labels = _load_labels(loads)
    layout = [(labels[_key(load)], _mode(ps)) for load, ps in zip(loads, parts, strict=True)]
    places = {(json.dumps(c.params, sort_keys=True), *lm) for c, lm in zip(cells, layout, strict=True)}
    return layout if len(places) == len(cells) else by_name


def rt_cells(store: Store, cells: Sequence[CellAnalysis], workloads: WorkloadFacts) -> tuple[RtCell, ...]:
    mine = [c for c in cells if _is_rt(c, workloads)]
    return tuple(
        _rt_cell(store, c, workloads, load, mode) for c, (load, mode) in zip(mine, _layout(mine), strict=True)
    )


@dataclass(frozen=True)
class RtStudy:
    cells: tuple[RtCell, ...]


def applies(ctx: StudyContext) -> bool:
    return any(_is_rt(c, ctx.workloads) for c in ctx.cells)


def analyze(ctx: StudyContext) -> RtStudy:
    return RtStudy(rt_cells(ctx.store, ctx.cells, ctx.workloads))


def shows(study: RtStudy) -> list[int]:
    return [c.cell_id for c in study.cells]


# ---- the section -------------------------------------------------------------------------------------------


def rt_groups(
    analysis: CampaignAnalysis, cells: Sequence[RtCell]
) -> list[tuple[dict, list[str], list[str], dict[tuple[str, str], RtCell]]]:
    """The cells laid out as the interference study's figure: per parameter set, (params, loads, modes,
    (load, mode) -> cell); loads and modes in the campaign's condition order (the unloaded one first)."""
    order = {c: i for i, c in enumerate(analysis.conditions)}
    by_params: dict[str, list[RtCell]] = {}
    for c in cells:
        by_params.setdefault(json.dumps(c.params, sort_keys=True), []).append(c)
    out = []
    for group in by_params.values():
        group = sorted(group, key=lambda c: order.get(c.condition, len(order)))
        loads = first_seen(c.load for c in group)
        modes = first_seen(c.mode for c in group)
        out.append((group[0].params, loads, modes, {(c.load, c.mode): c for c in group}))
    return out


def ordered_cells(analysis: CampaignAnalysis, cells: Sequence[RtCell]) -> list[RtCell]:
    """Per parameter set, load by load, one row per isolation mode."""
    return [
        grid[(load, mode)]
        for _, loads, modes, grid in rt_groups(analysis, cells)
        for load in loads
        for mode in modes
        if (load, mode) in grid
    ]


def percentile_table(analysis: CampaignAnalysis, study: RtStudy) -> doc.Table:
    """Per cell: nearest-rank percentiles of the histogram merged over its valid runs (">= L" when in the
    overflow, never a number), min/avg/max over every sample, samples and overflow."""
    cells = ordered_cells(analysis, study.cells)
    units = {unit_label(c.unit) for c in cells}
    u = units.pop() if len(units) == 1 else None
    varying = varying_keys(c.params for c in cells)
    names = [pct_name(q) for q in PERCENTILE_LEVELS]
    columns = (
        doc.Column("condition"),
        *((doc.Column("parameters"),) if varying else ()),
        doc.Column("runs", "runs", True),
        doc.Column("samples", "samples", True),
        doc.Column("overflow", "samples", True),
        doc.Column("min", u or "unit", True),
        doc.Column("avg", u or "unit", True),
        *(doc.Column(n, u or "unit", True) for n in names),
        doc.Column("max", u or "unit", True),
        *((doc.Column("unit"),) if u is None else ()),
        doc.Column("note"),
    )
    first_pct = [c.name for c in columns].index(names[0])
    rows, classes, cell_classes = [], [], []
    for c in cells:
        pcts = [p.display() if p.n else "–" for p in c.percentiles] or ["–"] * len(names)
        rows.append(
            (
                c.condition,
                *((params_text({k: c.params.get(k) for k in varying}),) if varying else ()),
                str(c.runs_merged),
                str(c.samples),
                str(c.overflow),
                fmt_value(c.min_value),
                fmt_value(c.avg_value),
                *pcts,
                fmt_value(c.max_value),
                *((unit_label(c.unit),) if u is None else ()),
                "; ".join(c.notes),
            )
        )
        classes.append("nodata" if not c.samples else "")
        cell_classes.append({first_pct + i: "censored" for i, p in enumerate(c.percentiles) if p.censored})
    return doc.Table(
        columns, tuple(rows), note_column="note", row_classes=tuple(classes), cell_classes=tuple(cell_classes)
    )


def short_sample_levels(study: RtStudy) -> str | None:
    """A sentence when some cell reports a level from fewer samples than nearest rank needs to tell it from
    the largest sample (p99.99: 10000)."""
    short = first_seen(p.q for c in study.cells for p in c.percentiles if p.n and p.n < samples_needed(p.q))
    if not short:
        return None
    levels = ", ".join(f"{pct_name(q)} (needs {samples_needed(q)})" for q in short)
    return f"Too few samples in some cells for {levels}: nearest rank then gives the largest sample."


def _boxplots(analysis: CampaignAnalysis, study: RtStudy) -> list[doc.Block]:
    units = {unit_label(c.unit) for c in study.cells}
    u = units.pop() if len(units) == 1 else "unit of the histogram"
    groups_all = rt_groups(analysis, study.cells)
    out: list[doc.Block] = []
    if len(groups_all) == 1 and groups_all[0][0]:
        out.append(doc.Prose(f"Parameters: {params_text(groups_all[0][0])}.", small=True, formats=doc.HTML))
    for i, (params, loads, modes, grid) in enumerate(groups_all):
        groups = [
            (
                load,
                [
                    doc.Box(c.condition, c.max_values, c.invalid_max_values)
                    if (c := grid.get((load, mode)))
                    else None
                    for mode in modes
                ],
            )
            for load in loads
        ]
        workload = next(iter(grid.values())).workload
        title = workload + (f" ({params_text(params)})" if len(groups_all) > 1 and params else "")
        x_label = (
            "load (one box per isolation mode)"
            if len(modes) > 1
            else ("load" if modes != [""] else "condition")
        )
        out.append(
            doc.Figure(
                doc.GroupedBoxplotSpec(
                    groups=groups,
                    series=modes,
                    title=f"{title}: max latency per run, lower is better",
                    unit=f"max latency [{u}]",
                    x_label=x_label,
                    height=400,
                    seed=i,
                )
            )
        )
    return out


def _histograms(analysis: CampaignAnalysis, study: RtStudy) -> doc.Figure | None:
    """One histogram per cell, merged over its valid runs, on shared axes so the panels compare."""
    cells = ordered_cells(analysis, study.cells)
    if not any(c.counts and c.bucket_width for c in cells):
        return None
    varying = len({json.dumps(c.params, sort_keys=True) for c in cells}) > 1
    panels = []
    for c in cells:
        title = c.condition + (f" ({params_text(c.params)})" if varying else "")
        if not (c.counts and c.bucket_width):
            panels.append(doc.Histogram(title, (), 0.0, 0, None, missing="; ".join(c.notes)))
            continue
        p99 = next((p for p in c.percentiles if p.q == 99), None)
        markers = []
        if p99 is not None and p99.value is not None:
            markers.append(("p99", p99.value))
        if c.max_value is not None:
            markers.append(("max", c.max_value))
        panels.append(
            doc.Histogram(
                title,
                c.counts,
                c.bucket_width,
                c.overflow,
                c.limit,
                subtitle=f"{c.samples} samples, {c.runs_merged} runs, overflow {c.overflow}",
                markers=tuple(markers),
            )
        )
    return doc.Figure(doc.HistogramsSpec(panels=panels, unit=unit_label(cells[0].unit)))


def sections(analysis: CampaignAnalysis, study: RtStudy) -> list[doc.Section]:
    short = short_sample_levels(study)
    intro = doc.Prose(
        "rt.cyclictest cells (the interference study): each run measures wake-up latencies of a periodic "
        "real-time thread. The boxes show each run's largest latency (the primary metric) per load, one box "
        "per isolation mode; the verdicts on it, each condition against its baseline, are in the Verdicts "
        "and Comparisons tables.",
        small=True,
        formats=doc.HTML,
    )
    md_intro = doc.Prose(
        "Per rt.cyclictest cell: nearest-rank percentiles of the histogram merged over its valid runs (a "
        "percentile in the overflow shows only its bound, >= the histogram's limit); min, avg and max over "
        "every sample. Verdicts on the max latency are in the comparisons above."
        + (f" {short}" if short else ""),
        formats=frozenset({"md"}),
    )
    text_intro = doc.Prose(
        "real-time latency: nearest-rank percentiles of each cell's histogram, merged over its runs",
        formats=frozenset({"text"}),
    )
    table = percentile_table(analysis, study)
    hist = _histograms(analysis, study)
    out = [
        doc.section(TITLE, intro, md_intro, text_intro, *_boxplots(analysis, study), anchor="rt"),
    ]
    if hist is not None:
        out.append(doc.section("Latency histograms", hist, level=3, formats=doc.HTML))
    out.append(
        doc.section(
            "Percentiles",
            doc.Prose(
                "Nearest rank (Hyndman & Fan definition 1) on the merged histogram: the lower edge of the "
                "bucket that holds the ceil(q/100 × n)-th smallest sample. A percentile that falls into the "
                "overflow is shown as ≥ the limit: only that bound is known. min, avg and max are the "
                "probe's own, over every sample including the overflow." + (f" {short}" if short else ""),
                small=True,
                formats=doc.HTML,
            ),
            table,
            doc.Prose(short, formats=frozenset({"text"})) if short else None,
            level=3,
            anchor="rt-percentiles",
        )
    )
    return out
