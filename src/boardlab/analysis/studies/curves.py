"""Curves: workloads swept over a working-set size (`size_bytes`), such as memory latency or bandwidth
against size, drawn as one line per pattern (and per condition or other parameter) on a log2 size axis.

Applies when some workload has summarized cells at two or more sizes: decided from the cells' parameters, so
any sweep over `size_bytes` gets its curves without naming the workload. The cells keep their rows in the cell
table; the generic run-value boxplots point here instead of drawing one box per size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import metric_words, params_text

if TYPE_CHECKING:
    from boardlab.analysis.records import CampaignAnalysis, CellAnalysis, StudyContext

TITLE = "Memory-latency curves"
SHOWN_AS = "as curves by working-set size below and in the cell table"
SIZE_PARAM = "size_bytes"


@dataclass(frozen=True)
class CurvePoint:
    size_bytes: float
    median: float
    ci_low: float | None  # 95% order-statistic CI of the median
    ci_high: float | None
    cell_id: int


@dataclass(frozen=True)
class Curve:
    label: str  # the other parameters (and the condition when there are several)
    points: tuple[CurvePoint, ...]  # ascending size


@dataclass(frozen=True)
class CurveGroup:
    workload: str
    metric: str
    unit: str
    curves: tuple[Curve, ...]


@dataclass(frozen=True)
class CurvesStudy:
    groups: tuple[CurveGroup, ...]


def _swept(cells) -> dict[str, list[CellAnalysis]]:
    by_workload: dict[str, list[CellAnalysis]] = {}
    for c in cells:
        if isinstance(c.params.get(SIZE_PARAM), int | float) and c.summary is not None:
            by_workload.setdefault(c.workload, []).append(c)
    return {w: cs for w, cs in by_workload.items() if len({c.params[SIZE_PARAM] for c in cs}) >= 2}


def applies(ctx: StudyContext) -> bool:
    return bool(_swept(ctx.cells))


def analyze(ctx: StudyContext) -> CurvesStudy:
    groups = []
    for workload, cells in _swept(ctx.cells).items():
        multi = len({c.condition for c in cells}) > 1
        lines: dict[str, list[CellAnalysis]] = {}
        for c in cells:
            rest = {k: v for k, v in c.params.items() if k != SIZE_PARAM}
            label = params_text(rest) or workload
            if multi:
                label += f" @ {c.condition_text}"
            lines.setdefault(label, []).append(c)
        curves = []
        for label, members in lines.items():
            members.sort(key=lambda c: c.params[SIZE_PARAM])
            curves.append(
                Curve(
                    label,
                    tuple(
                        CurvePoint(
                            float(c.params[SIZE_PARAM]),
                            s.median,
                            s.median_ci.low if s.median_ci else None,
                            s.median_ci.high if s.median_ci else None,
                            c.cell_id,
                        )
                        for c in members
                        if (s := c.summary) is not None  # every swept cell has one (_swept)
                    ),
                )
            )
        groups.append(CurveGroup(workload, cells[0].metric, cells[0].unit, tuple(curves)))
    return CurvesStudy(tuple(groups))


def shows(study: CurvesStudy) -> list[int]:
    return [p.cell_id for g in study.groups for c in g.curves for p in c.points]


def sections(analysis: CampaignAnalysis, study: CurvesStudy) -> list[doc.Section]:
    figures = []
    for g in study.groups:
        metric = metric_words(g.metric, g.unit) or g.metric
        lines = [
            doc.Line(
                c.label,
                [(p.size_bytes, p.median) for p in c.points],
                errors=[
                    (p.ci_low, p.ci_high) if p.ci_low is not None and p.ci_high is not None else None
                    for p in c.points
                ],
            )
            for c in g.curves
        ]
        figures.append(
            doc.Figure(
                doc.LinePlotSpec(
                    lines=lines,
                    title=f"{g.workload}: {metric} by working-set size",
                    x_label="working-set size (log2 scale)",
                    y_label=f"{metric} [{g.unit}]",
                    x_kind="log2",
                    y_kind="auto",
                    x_format="bytes",
                    height=360,
                )
            )
        )
    return [
        doc.section(
            TITLE,
            *figures,
            doc.Prose(
                "Points: median of the runs; bars: 95% order-statistic CI.", small=True, formats=doc.HTML
            ),
            formats=doc.HTML,
            anchor="curves",
        )
    ]
