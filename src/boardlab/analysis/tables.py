"""The tables every report format shares (cells, comparisons) and the verdict sentences, as document tables.

`cell_table` and `comparison_table` build rows of formatted strings once; HTML, Markdown and text lay the same
rows out. Numbers come from `analysis.format`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import (
    VERDICT_RANK,
    Said,
    common_unit,
    display_unit,
    estimator_words,
    fmt_in,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_ratio,
    params_text,
    section_labels,
    test_words,
    varying_keys,
    verdict_text,
)
from boardlab.stats.text import p_is

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


def varying_by_workload(cells) -> dict[str, list[str]]:
    """Per workload, the parameters that vary among its cells: the ones a table's rows need to show."""
    by: dict[str, list[dict]] = {}
    for c in cells:
        by.setdefault(c.workload, []).append(c.params)
    return {w: varying_keys(ps) for w, ps in by.items()}


Units = dict[tuple[str, str], tuple[float, str]]  # (workload, metric) -> (divisor, unit label)


def metric_units(cells) -> Units:
    """The one unit each workload's metric is shown in, wherever its cells appear together (the cell and
    comparison tables, the summary card): chosen from the range of its cells' medians (`common_unit`)."""
    medians: dict[tuple[str, str], list[float]] = {}
    units: dict[tuple[str, str], str] = {}
    for c in cells:
        units[(c.workload, c.metric)] = c.unit
        if c.summary is not None:
            medians.setdefault((c.workload, c.metric), []).append(c.summary.median)
    return {k: common_unit(u, medians.get(k, ())) for k, u in units.items()}


def unit_of(
    units: Units, workload: str, metric: str, unit: str, reference: float | None
) -> tuple[float, str]:
    """A value's (divisor, label): its workload's metric's unit, else one scaled to `reference`."""
    return units.get((workload, metric)) or display_unit(unit, reference)


def run_times(cell: CellAnalysis) -> tuple[float | None, float | None, float] | None:
    """Medians over the valid runs of the worker's user and system CPU time and its wall time, in seconds
    (None where a run's rusage is missing: a store from before it was kept)."""
    user, system, wall = cell.runs.time_medians()
    if wall is None:  # no measured run
        return None
    return (
        None if user is None else user / 1e6,
        None if system is None else system / 1e6,
        wall / 1e9,
    )


def times_text(cell: CellAnalysis) -> str:
    """'user / system / wall' seconds per run, as the satellite-computer study reported them."""
    t = run_times(cell)
    if t is None:
        return "–"
    return " / ".join("–" if x is None else fmt_num(x, 3) if x >= 1 else f"{x:.3f}" for x in t)  # to the ms


CELL_HEADERS = (
    "workload",
    "parameters",
    "condition",
    "n [runs]",
    "invalid/failed [runs]",
    "unit",
    "median [unit]",
    "user / system / wall per run [s]",
    "95% CI order-stat. [unit]",
    "95% CI bootstrap [unit]",
    "CV [%]",
    "MAD [unit]",
    "p5 – p95 [unit]",
    "outliers mild/extreme [runs]",
    "drift ρ, p",
    "warnings",
)


def cell_row(cell: CellAnalysis, varying=None, units: Units | None = None) -> tuple[str, ...]:
    """`varying`: the parameters shown (those that vary among the workload's cells); None shows all set.
    `units`: each workload's metric's unit (`metric_units`); None scales the row to its own median."""
    s = cell.summary
    params = params_text(cell.params if varying is None else {k: cell.params.get(k) for k in varying})
    bad = f"{cell.n_invalid}/{cell.n_failed}"
    if s is None:
        return (
            cell.workload,
            params,
            cell.condition_text,
            str(cell.n_valid),
            bad,
            cell.unit,
            "–",
            times_text(cell),
            *(("–",) * 7),  # no summary: no median, CIs, CV or spread
            cell.summary_reason or "",
        )
    div, unit = unit_of(units or {}, cell.workload, cell.metric, cell.unit, s.median)
    ci = fmt_interval(s.median_ci.low, s.median_ci.high, div, whole=True) if s.median_ci else "–"
    boot = (
        fmt_interval(s.median_bootstrap_ci.low, s.median_bootstrap_ci.high, div, whole=True)
        if s.median_bootstrap_ci
        else "–"
    )
    o = s.outliers
    outliers = f"{o.low_mild + o.high_mild}/{o.low_extreme + o.high_extreme}"
    return (
        cell.workload,
        params,
        cell.condition_text,
        str(s.n),
        bad,
        unit,
        fmt_in(s.median, div),
        times_text(cell),
        ci,
        boot,
        fmt_pct(s.cv),
        fmt_in(s.mad, div, 3),
        f"{fmt_in(s.p5, div)} – {fmt_in(s.p95, div)}",
        outliers,
        drift_text(cell),
        "; ".join(s.warnings),
    )


def cell_table(analysis: CampaignAnalysis) -> doc.Table:
    t = Table(
        CELL_HEADERS,
        (
            False,
            False,
            False,
            True,
            True,
            False,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            False,
            False,
        ),
    )
    varying = varying_by_workload(analysis.cells)
    units = metric_units(analysis.cells)
    for c in analysis.cells:
        t.rows.append(cell_row(c, varying[c.workload], units))
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
    "p (test, how)",
    "p adjusted",
    "verdict",
    "why / confounders",
)


def comparison_row(
    ca: ComparisonAnalysis, said: Said, label: str | None = None, units: Units | None = None
) -> tuple[str, ...]:
    """`said`: a condition's name as the reader reads it (`CampaignAnalysis.condition_text`); `label`: the
    workload as the table shows it (only the parameters that vary among its rows); `units`: as
    `cell_row`'s."""
    c = ca.comparison
    label = ca.label if label is None else label
    if c is None:
        return (
            label,
            said(ca.condition),
            said(ca.baseline),
            *(("–",) * 8),  # no comparison: no ratio, CIs, p or threshold
            "no verdict",
            ca.reason or "",
        )
    return comparison_cells(ca, c, said, label, "; ".join(comparison_why(ca)), units)


def comparison_why(ca: ComparisonAnalysis) -> list[str]:
    """The reasons and notes of one comparison's row, one sentence each."""
    c = ca.comparison
    if c is None:
        return [ca.reason] if ca.reason else []
    why = list(c.verdict.reasons) + [f"FLAGGED {f}" for f in c.verdict.flags]
    why.append(f"ratio of the {estimator_words(c)}; the medians are shown for reading")
    if ca.unstable:
        why.insert(0, f"UNSTABLE: {ca.unstable}")
    if c.n_blocks is not None:
        why.append(f"paired design: {c.test.name} over {c.n_blocks} blocks")
    if c.confounding is not None:
        why.extend(f"note: {n}" for n in c.confounding.notes)
    why.extend(c.warnings)
    return why


def comparison_cells(
    ca: ComparisonAnalysis, c, said: Said, label: str, why: str, units: Units | None = None
) -> tuple[str, ...]:
    div, unit = unit_of(units or {}, ca.workload, ca.metric, ca.unit, c.baseline_median)
    ratio = fmt_ratio(c.ratio)
    if c.ratio_ci:
        ratio += f" {fmt_interval(c.ratio_ci.low, c.ratio_ci.high, sig=4)}"
    cost = "= ratio"  # lower is better: the ratio is already the cost
    if c.higher_is_better:
        cost = fmt_ratio(c.cost_ratio)
        if c.cost_ratio_ci is not None:
            cost += f" {fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=4)}"
    return (
        label + (f" [{ca.metric}]" if ca.tail else ""),
        said(ca.condition),
        said(ca.baseline),
        f"{c.n_baseline}/{c.n_condition}",
        f"{fmt_in(c.baseline_median, div)} → {fmt_in(c.condition_median, div)} {unit}",
        ratio,
        cost,
        fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=4) if c.decision_ci else "–",
        f"{c.delta:.1%}",
        f"{fmt_p(c.p_value)} ({test_words(c, short=True)})",
        fmt_p(c.p_adjusted),
        verdict_text(c.verdict.kind, c.verdict.confounded) + (" (unstable)" if ca.unstable else ""),
        why,
    )


def comparison_table(analysis: CampaignAnalysis) -> doc.Table:
    t = Table(
        COMPARISON_HEADERS,
        (False, False, False, True, True, True, True, True, True, True, True, False, False),
    )
    rows = tuple(analysis.comparisons) + tuple(analysis.tail_comparisons)
    whys, notes = doc.table_notes([comparison_why(ca) for ca in rows])
    units = metric_units(analysis.cells)
    for ca, label, why in zip(rows, comparison_labels(rows), whys, strict=True):
        row = comparison_row(ca, analysis.condition_text, label, units)
        t.rows.append((*row[:-1], why))
        kind = ca.comparison.verdict.kind if ca.comparison else "none"
        confounded = " confounded" if ca.comparison and ca.comparison.verdict.confounded else ""
        t.row_classes.append(f"v-{kind}{confounded}")
    return t.done(note_column="why / confounders", notes=notes)


def comparison_labels(comparisons) -> list[str]:
    """The label of each comparison within one table: its workload with the parameters that vary there."""
    return section_labels((ca.workload, ca.params) for ca in comparisons)


def verdict_lines(analysis: CampaignAnalysis) -> list[str]:
    """One sentence per comparison: what changed, by how much, how sure; slowdowns and speedups first."""
    rank = VERDICT_RANK
    items = []
    everything = tuple(analysis.comparisons) + tuple(analysis.tail_comparisons)
    said = analysis.condition_text
    for ca, label in zip(everything, comparison_labels(everything), strict=True):
        c = ca.comparison
        metric = f" [{ca.metric}]" if ca.tail else ""
        what = f"{label}{metric}: {said(ca.condition)} vs {said(ca.baseline)}"
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
            f"adjusted p {p_is(c.p_adjusted)}"
        )
        items.append((rank.get(c.verdict.kind, 5), line))
    return [line for _, line in sorted(items, key=lambda t: t[0])]


def run_counts(analysis: CampaignAnalysis) -> dict[str, int | None]:
    runs = sum(len(c.runs) for c in analysis.cells)
    reruns = analysis.notes.get("reruns")
    return {
        "runs": runs,
        "valid": sum(c.n_valid for c in analysis.cells),
        "invalid": sum(c.n_invalid for c in analysis.cells),
        "failed": sum(c.n_failed for c in analysis.cells),
        "reruns": int(reruns) if isinstance(reruns, int | float) else None,
    }


def invalid_text(analysis: CampaignAnalysis) -> str:
    """The invalid runs by reason ("2 over the temperature limit, 1 throttled"); a run invalid for two
    reasons counts under both."""
    from collections import Counter

    from boardlab.model.run import invalid_kinds

    kinds: Counter[str] = Counter()
    for c in analysis.cells:
        for reason, k in c.runs.invalid_reason.counts():
            if reason != "failed":  # a failed run is counted as failed, not invalid
                for kind in invalid_kinds(reason):
                    kinds[kind] += k
    return ", ".join(f"{k} {kind}" for kind, k in kinds.most_common())
