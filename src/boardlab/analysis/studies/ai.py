"""The per-frame latency study (the interference study's second half): AI inference's frames per run.

Applies to cells whose workload spec says `tail_samples` and stores each sample of its primary metric per run
(no histogram): each run's per-frame p50 / p90 / p99 of the primary metric (the median, p90 and p99 of its
frames, as the worker stored them) and their median over the runs; the p99 is the pooled p99 of all runs'
frames when a run has fewer than 100 frames (its own "p99" would be its slowest frame). The section: one
panel per model, one box per condition, and a table with the median and the p99 verdicts side by side (the
verdicts themselves come from `analysis.core`: the primary comparison and the tail comparison).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.core import metrics_by_name
from boardlab.analysis.format import (
    cell_label,
    fmt_interval,
    fmt_num,
    fmt_ratio,
    params_text,
    varying_keys,
    verdict_text,
)
from boardlab.stats.tails import TAIL_MIN_SAMPLES

if TYPE_CHECKING:
    from boardlab.analysis.records import CampaignAnalysis, CellAnalysis, ComparisonAnalysis, StudyContext
    from boardlab.model.facts import WorkloadFacts
    from boardlab.store import Store

TITLE = "AI inference"
SHOWN_AS = "per model in the AI inference section below"


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
    # How `p99` was obtained: per-run p99s need >= 100 frames in every run (docs/method.md), else the p99 of
    # all runs' frames pooled (the cluster-bootstrap rule of `stats.tails`).
    p99_rule: str = "per-run"

    @property
    def model(self) -> str:
        return str(self.params.get("model", self.workload))

    @property
    def label(self) -> str:
        return cell_label(self.workload, self.params)


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
        m = metrics_by_name(store, r.run_id).get(cell.metric)
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
        samples = store.run_values(r.run_id, cell.metric)
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


def _is_frames(cell: CellAnalysis, workloads: WorkloadFacts) -> bool:
    spec = workloads.spec_of(cell.workload)
    return spec is not None and spec.tail_samples and spec.sample_histogram is None


@dataclass(frozen=True)
class AiStudy:
    cells: tuple[AiCell, ...]


def applies(ctx: StudyContext) -> bool:
    return any(_is_frames(c, ctx.workloads) for c in ctx.cells)


def analyze(ctx: StudyContext) -> AiStudy:
    return AiStudy(tuple(_ai_cell(ctx.store, c) for c in ctx.cells if _is_frames(c, ctx.workloads)))


def shows(study: AiStudy) -> list[int]:
    return [c.cell_id for c in study.cells]


# ---- the section -------------------------------------------------------------------------------------------


def groups(analysis: CampaignAnalysis, study: AiStudy) -> list[tuple[str, list[AiCell]]]:
    """Cells per model (per parameter set): (panel title, cells in condition order)."""
    order = {c: i for i, c in enumerate(analysis.conditions)}
    varying = varying_keys(c.params for c in study.cells)
    by: dict[str, list[AiCell]] = {}
    titles: dict[str, str] = {}
    for c in study.cells:
        key = json.dumps(c.params, sort_keys=True)
        by.setdefault(key, []).append(c)
        # a panel is named by its model, and by what else varies between panels after it in brackets
        # ("mobilenet_v1 (delegate=xnnpack)"), never by a varying parameter alone
        others = params_text({k: c.params.get(k) for k in varying if k != "model"})
        titles[key] = f"{c.model} ({others})" if others else c.model
    return [
        (titles[k], sorted(cells, key=lambda c: order.get(c.condition, len(order))))
        for k, cells in by.items()
    ]


def _key(workload: str, params: dict, condition: str) -> str:
    return json.dumps([workload, params, condition], sort_keys=True)


def _verdict_cells(ca: ComparisonAnalysis | None) -> tuple[str, str, str, str]:
    """(cost ratio with its decision interval, verdict text, verdict kind for a CSS class, why there is
    none)."""
    if ca is None:
        return "–", "–", "", ""
    c = ca.comparison
    if c is None:
        return "–", "no verdict", "none", ca.reason or ""
    ratio = fmt_ratio(c.cost_ratio)
    if c.decision_ci is not None:
        ratio += f" {fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=3)}"
    kind = c.verdict.kind + (" confounded" if c.verdict.confounded else "")
    text = verdict_text(c.verdict.kind, c.verdict.confounded) + (" (unstable)" if ca.unstable else "")
    return ratio, text, kind, ""


def frames_note(study: AiStudy) -> str | None:
    """A caveat when runs have fewer frames than a p99 needs (docs/method.md: 100 samples)."""
    few = [c.frames_min for c in study.cells if c.frames_min is not None and c.frames_min < TAIL_MIN_SAMPLES]
    if not few:
        return None
    return (
        f"Runs of {min(few)}{'' if min(few) == max(few) else f'–{max(few)}'} frames: a per-run p99 needs at "
        f"least {TAIL_MIN_SAMPLES}, so the p99 column and the p99 verdict use the p99 of all runs' frames "
        "pooled, with a cluster bootstrap over runs (whole runs resampled)."
    )


def table(analysis: CampaignAnalysis, study: AiStudy) -> doc.Table:
    """Per model and condition: the median over runs of each run's per-frame p50/p90/p99, and the verdicts of
    the run medians (the primary comparison) and of the run p99s (the tail comparison) against the
    baseline."""
    units = {c.unit for c in study.cells}
    u = units.pop() if len(units) == 1 else None
    columns = (
        doc.Column("model"),
        doc.Column("condition"),
        doc.Column("n", "runs", True),
        doc.Column("frames per run", "frames", True),
        doc.Column("p50", u or "unit", True),
        doc.Column("p90", u or "unit", True),
        doc.Column("p99", u or "unit", True),
        doc.Column("median: cost ratio (90% decision interval)", "×", True),
        doc.Column("median verdict"),
        doc.Column("p99: cost ratio (90% decision interval)", "×", True),
        doc.Column("p99 verdict"),
        *((doc.Column("unit"),) if u is None else ()),
        doc.Column("note"),
    )
    primary = {_key(ca.workload, ca.params, ca.condition): ca for ca in analysis.comparisons}
    tail = {_key(ca.workload, ca.params, ca.condition): ca for ca in analysis.tail_comparisons}
    rows, classes, cell_classes = [], [], []
    for title, cells in groups(analysis, study):
        for c in cells:
            key = _key(c.workload, c.params, c.condition)
            m_ratio, m_verdict, m_kind, m_why = _verdict_cells(primary.get(key))
            t_ratio, t_verdict, t_kind, t_why = _verdict_cells(tail.get(key))
            frames = "–"
            if c.frames_min is not None:
                frames = (
                    str(c.frames_min) if c.frames_min == c.frames_max else f"{c.frames_min}–{c.frames_max}"
                )
            notes = []
            if m_why:
                notes.append(f"median: {m_why}")
            if t_why and t_why != m_why:
                notes.append(f"p99: {t_why}")
            rows.append(
                (
                    title,
                    c.condition,
                    str(c.n_runs),
                    frames,
                    fmt_num(c.p50, 4),
                    fmt_num(c.p90, 4),
                    fmt_num(c.p99, 4),
                    m_ratio,
                    m_verdict,
                    t_ratio,
                    t_verdict,
                    *((c.unit,) if u is None else ()),
                    "; ".join(notes),
                )
            )
            classes.append("" if c.n_runs else "nodata")
            cell_classes.append({i: f"verdict v-{kind}" for i, kind in ((8, m_kind), (10, t_kind)) if kind})
    keep = tuple(c.header for c in columns if c.name != "note" and "cost ratio" not in c.name)
    return doc.Table(
        columns,
        tuple(rows),
        note_column="note",
        text_columns=keep,
        row_classes=tuple(classes),
        cell_classes=tuple(cell_classes),
    )


def sections(analysis: CampaignAnalysis, study: AiStudy) -> list[doc.Section]:
    units = {c.unit for c in study.cells}
    u = units.pop() if len(units) == 1 else "unit"
    panels = tuple(
        doc.Figure(
            doc.GroupedBoxplotSpec(
                groups=[(c.condition, [doc.Box(c.condition, c.values, c.invalid_values)]) for c in cells],
                series=[""],
                title=title,
                unit=f"per-frame latency [{u}]",
                x_label="condition",
                width=600,
                height=360,
                seed=i,
            )
        )
        for i, (title, cells) in enumerate(groups(analysis, study))
    )
    note = frames_note(study)
    tail = (
        "The p99 verdict: per-run p99s when every run has at least 100 frames, otherwise the p99 of all "
        "runs' frames pooled with a cluster bootstrap over runs; decided on its 90% decision interval "
        f"against the tail threshold, in the report's one correction family ({analysis.adjusted_text})."
    )
    return [
        doc.section(
            TITLE,
            doc.Prose(
                "ai.inference cells (the interference study): one panel per model, one box per condition; "
                "each dot is a run (a fresh process) at its median per-frame latency, hollow when the run "
                "did not count. Frame 0, the first inference, is not in these figures.",
                small=True,
                formats=doc.HTML,
            ),
            doc.Multiples(panels),
            doc.Prose(
                "p50, p90, p99: the median over the valid runs of each run's own per-frame percentile. "
                "Median verdict: the runs' median latencies against the baseline (the primary comparison, as "
                f"in the Verdicts table). {tail} Cost ratio > 1 = slower than the baseline."
                + (f" {note}" if note else ""),
                small=True,
                formats=doc.RICH,
            ),
            doc.Prose(
                "AI inference: per-frame latency, median over runs of each run's p50/p90/p99",
                formats=frozenset({"text"}),
            ),
            table(analysis, study),
            doc.Prose(note, formats=frozenset({"text"})) if note else None,
            anchor="ai",
        )
    ]
