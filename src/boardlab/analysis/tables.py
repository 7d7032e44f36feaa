"""The tables every report format shares (cells, comparisons) and the verdict sentences, as document tables.

`cell_table` and `comparison_table` build rows of formatted strings once; HTML, Markdown and text lay the same
rows out. Numbers come from `analysis.format`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import (
    VERDICT_RANK,
    display_unit,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_ratio,
    params_text,
    verdict_text,
)

if TYPE_CHECKING:
    from boardlab.analysis.core import CampaignAnalysis, CellAnalysis, ComparisonAnalysis


class Table:
    """Rows being built; `done()` freezes them into a document table (columns from bracketed headers)."""

    def __init__(self, headers: tuple[str, ...], numeric: tuple[bool, ...]):
        self.headers, self.numeric = headers, numeric
        self.rows: list[tuple[str, ...]] = []
        self.row_classes: list[str] = []
        self.cell_classes: list[dict[int, str]] = []

    def done(self, **kw) -> doc.Table:
        columns = []
        for h, n in zip(self.headers, self.numeric, strict=True):
            name, sep, unit = h.rpartition(" [")
            columns.append(
                doc.Column(name, unit[:-1], n) if sep and unit.endswith("]") else doc.Column(h, None, n)
            )
        return doc.Table(
            tuple(columns), tuple(self.rows), row_classes=tuple(self.row_classes),
            cell_classes=tuple(self.cell_classes), **kw,
        )  # fmt: skip


def drift_text(cell: CellAnalysis) -> str:
    s = cell.summary
    if s is None or s.drift is None:
        return "–"
    flag = " DRIFT" if s.drift.flagged else ""
    return f"{s.drift.rho:+.2f}, {fmt_p(s.drift.p_value)}{flag}"


CELL_HEADERS = (
    "workload",
    "parameters",
    "condition",
    "n [runs]",
    "invalid/failed [runs]",
    "unit",
    "median [unit]",
    "95% CI order-stat. [unit]",
    "95% CI bootstrap [unit]",
    "CV [%]",
    "MAD [unit]",
    "p5 – p95 [unit]",
    "outliers mild/extreme [runs]",
    "drift ρ, p",
    "warnings",
)


def cell_row(cell: CellAnalysis) -> tuple[str, ...]:
    s = cell.summary
    bad = f"{cell.n_invalid}/{cell.n_failed}"
    if s is None:
        return (
            cell.workload,
            params_text(cell.params),
            cell.condition,
            str(len(cell.values)),
            bad,
            cell.unit,
            "–",
            "–",
            "–",
            "–",
            "–",
            "–",
            "–",
            "–",
            cell.summary_reason or "",
        )
    div, unit = display_unit(cell.unit, s.median)
    ci = fmt_interval(s.median_ci.low, s.median_ci.high, div) if s.median_ci else "–"
    boot = (
        fmt_interval(s.median_bootstrap_ci.low, s.median_bootstrap_ci.high, div)
        if s.median_bootstrap_ci
        else "–"
    )
    o = s.outliers
    outliers = f"{o.low_mild + o.high_mild}/{o.low_extreme + o.high_extreme}"
    return (
        cell.workload,
        params_text(cell.params),
        cell.condition,
        str(s.n),
        bad,
        unit,
        fmt_num(s.median / div, 4),
        ci,
        boot,
        fmt_pct(s.cv),
        fmt_num(s.mad / div, 3),
        f"{fmt_num(s.p5 / div, 4)} – {fmt_num(s.p95 / div, 4)}",
        outliers,
        drift_text(cell),
        "; ".join(s.warnings),
    )


def cell_table(analysis: CampaignAnalysis) -> doc.Table:
    t = Table(
        CELL_HEADERS,
        (False, False, False, True, True, False, True, True, True, True, True, True, True, False, False),
    )
    for c in analysis.cells:
        t.rows.append(cell_row(c))
        flagged = c.summary is not None and c.summary.drift is not None and c.summary.drift.flagged
        t.row_classes.append("flagged" if flagged else ("nodata" if c.summary is None else ""))
    return t.done(note_column="warnings")


COMPARISON_HEADERS = (
    "workload",
    "condition",
    "baseline",
    "n base/cond [runs]",
    "median baseline → condition [unit]",
    "ratio cond/base (95% CI) [×]",
    "cost ratio, > 1 worse (95% CI) [×]",
    "90% decision interval [×]",
    "threshold delta",
    "p rank test",
    "p adjusted",
    "verdict",
    "why / confounders",
)


def comparison_row(ca: ComparisonAnalysis) -> tuple[str, ...]:
    c = ca.comparison
    if c is None:
        return (
            ca.label,
            ca.condition,
            ca.baseline,
            "–",
            "–",
            "–",
            "–",
            "–",
            "–",
            "–",
            "–",
            "no verdict",
            ca.reason or "",
        )
    div, unit = display_unit(ca.unit, c.baseline_median)
    ratio = fmt_ratio(c.ratio)
    if c.ratio_ci:
        ratio += f" {fmt_interval(c.ratio_ci.low, c.ratio_ci.high, sig=4)}"
    cost = "= ratio"  # lower is better: the ratio is already the cost
    if c.higher_is_better:
        cost = fmt_ratio(c.cost_ratio)
        if c.cost_ratio_ci is not None:
            cost += f" {fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=4)}"
    why = list(c.verdict.reasons) + [f"FLAGGED {f}" for f in c.verdict.flags]
    if ca.unstable:
        why.insert(0, f"UNSTABLE: {ca.unstable}")
    if c.n_blocks is not None:
        why.append(f"paired design: {c.test.name} over {c.n_blocks} blocks")
    if c.confounding is not None:
        why.extend(f"note: {n}" for n in c.confounding.notes)
    why.extend(c.warnings)
    return (
        ca.label + (f" [{ca.metric}]" if "p99" in ca.metric else ""),
        ca.condition,
        ca.baseline,
        f"{c.n_baseline}/{c.n_condition}",
        f"{fmt_num(c.baseline_median / div, 4)} → {fmt_num(c.condition_median / div, 4)} {unit}",
        ratio,
        cost,
        fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=4) if c.decision_ci else "–",
        f"{c.delta:.1%}",
        fmt_p(c.p_value),
        fmt_p(c.p_adjusted),
        verdict_text(c.verdict.kind, c.verdict.confounded) + (" (unstable)" if ca.unstable else ""),
        "; ".join(why),
    )


def comparison_table(analysis: CampaignAnalysis) -> doc.Table:
    t = Table(
        COMPARISON_HEADERS,
        (False, False, False, True, True, True, True, True, True, True, True, False, False),
    )
    for ca in tuple(analysis.comparisons) + tuple(analysis.tail_comparisons):
        t.rows.append(comparison_row(ca))
        kind = ca.comparison.verdict.kind if ca.comparison else "none"
        confounded = " confounded" if ca.comparison and ca.comparison.verdict.confounded else ""
        t.row_classes.append(f"v-{kind}{confounded}")
    return t.done(note_column="why / confounders")


def verdict_lines(analysis: CampaignAnalysis) -> list[str]:
    """One sentence per comparison: what changed, by how much, how sure; slowdowns and speedups first."""
    rank = VERDICT_RANK
    items = []
    for ca in tuple(analysis.comparisons) + tuple(analysis.tail_comparisons):
        c = ca.comparison
        metric = f" [{ca.metric}]" if ca in analysis.tail_comparisons else ""
        what = f"{ca.label}{metric}: {ca.condition} vs {ca.baseline}"
        if c is None:
            items.append((5, f"no verdict — {what}: {ca.reason}"))
            continue
        di = ""
        if c.decision_ci is not None:
            di = f", 90% decision interval {fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=3)}"
        ci = ""
        if c.cost_ratio_ci is not None:
            ci = f" (95% CI {fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=3)})"
        line = (
            f"{verdict_text(c.verdict.kind, c.verdict.confounded)}"
            + (" [UNSTABLE: see the A/A control]" if ca.unstable else "")
            + f" — {what}: cost ratio {fmt_ratio(c.cost_ratio)}×{di}{ci}, delta {c.delta:.1%}, "
            f"adjusted p = {fmt_p(c.p_adjusted)}"
        )
        items.append((rank.get(c.verdict.kind, 5), line))
    return [line for _, line in sorted(items, key=lambda t: t[0])]


def run_counts(analysis: CampaignAnalysis) -> dict[str, int | None]:
    runs = sum(len(c.runs) for c in analysis.cells)
    reruns = analysis.notes.get("reruns")
    return {
        "runs": runs,
        "valid": sum(len(c.values) for c in analysis.cells),
        "invalid": sum(c.n_invalid for c in analysis.cells),
        "failed": sum(c.n_failed for c in analysis.cells),
        "reruns": int(reruns) if isinstance(reruns, int | float) else None,
    }
