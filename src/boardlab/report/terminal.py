"""The tables every report format shares (cells, comparisons, verdicts) and their aligned text rendering.

`cell_table` and `comparison_table` build rows of formatted strings once; HTML and Markdown lay the same
rows out, and `render_text` prints a compact subset for a terminal (`boardlab report --format text`, and
the end of `boardlab run`). Numbers keep 3-4 significant digits; each row is shown in a unit scaled to its
median (ns -> µs -> ms -> s, bytes -> KiB -> MiB), named in the row's unit column.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from boardlab.report.analysis import CampaignAnalysis, CellAnalysis, ComparisonAnalysis
from boardlab.report.svg import CONFOUNDED_MARK, VERDICT_MARKS, fmt_num

# Units that have larger siblings: (factor to the base unit, label), ascending.
_TIME_NS = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))
_BYTES = ((1.0, "B"), (1024.0, "KiB"), (1024.0**2, "MiB"), (1024.0**3, "GiB"))
_UNIT_LADDERS = {
    "ns": (1.0, _TIME_NS),
    "us": (1e3, _TIME_NS),
    "µs": (1e3, _TIME_NS),
    "ms": (1e6, _TIME_NS),
    "s": (1e9, _TIME_NS),
    "b": (1.0, _BYTES),
    "bytes": (1.0, _BYTES),
    "kib": (1024.0, _BYTES),
    "mib": (1024.0**2, _BYTES),
}


def display_unit(unit: str, reference: float | None) -> tuple[float, str]:
    """(divisor, label) that shows `reference` (in `unit`) with 1-3 integer digits where the unit allows."""
    ladder = _UNIT_LADDERS.get((unit or "").lower())
    if ladder is None or reference is None or not math.isfinite(reference) or reference == 0:
        return 1.0, unit or ""
    base, steps = ladder
    in_base = abs(reference) * base
    factor, label = steps[0]
    for f, lab in steps:
        if in_base >= f:
            factor, label = f, lab
    return factor / base, label


def fmt_p(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "–"
    return f"{p:.3f}" if p >= 0.001 else fmt_num(p, 2)


def fmt_ratio(r: float | None) -> str:
    return "–" if r is None else fmt_num(r, 4 if 0.1 <= r < 10 else 3)


def fmt_interval(lo: float, hi: float, divisor: float = 1.0, sig: int = 4) -> str:
    return f"[{fmt_num(lo / divisor, sig)}, {fmt_num(hi / divisor, sig)}]"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x * 100:.{digits}f}"


def fmt_time(unix_s: float | None) -> str:
    if unix_s is None:
        return "–"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix_s))


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "–"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def verdict_text(kind: str | None, confounded: bool = False) -> str:
    if kind is None:
        return "no verdict"
    text = f"{VERDICT_MARKS.get(kind, '')} {kind.replace('_', ' ')}".strip()
    return f"{text} {CONFOUNDED_MARK} confounded" if confounded else text


def params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


@dataclass
class Table:
    """Formatted rows; `numeric` right-aligns a column; `row_classes` are hints for HTML (e.g. "flagged")."""

    headers: tuple[str, ...]
    numeric: tuple[bool, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    row_classes: list[str] = field(default_factory=list)


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


def cell_table(analysis: CampaignAnalysis) -> Table:
    t = Table(
        CELL_HEADERS,
        (False, False, False, True, True, False, True, True, True, True, True, True, True, False, False),
    )
    for c in analysis.cells:
        t.rows.append(cell_row(c))
        flagged = c.summary is not None and c.summary.drift is not None and c.summary.drift.flagged
        t.row_classes.append("flagged" if flagged else ("nodata" if c.summary is None else ""))
    return t


COMPARISON_HEADERS = (
    "workload",
    "condition",
    "baseline",
    "n base/cond [runs]",
    "median baseline → condition [unit]",
    "ratio cond/base (95% CI) [×]",
    "cost ratio, > 1 worse (95% CI) [×]",
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
    why = list(c.verdict.reasons)
    if c.n_blocks is not None:
        why.append(f"paired design: Wilcoxon signed-rank over {c.n_blocks} blocks")
    if c.confounding is not None:
        why.extend(f"note: {n}" for n in c.confounding.notes)
    why.extend(c.warnings)
    return (
        ca.label,
        ca.condition,
        ca.baseline,
        f"{c.n_baseline}/{c.n_condition}",
        f"{fmt_num(c.baseline_median / div, 4)} → {fmt_num(c.condition_median / div, 4)} {unit}",
        ratio,
        cost,
        fmt_p(c.p_value),
        fmt_p(c.p_adjusted),
        verdict_text(c.verdict.kind, c.verdict.confounded),
        "; ".join(why),
    )


def comparison_table(analysis: CampaignAnalysis) -> Table:
    t = Table(COMPARISON_HEADERS, (False, False, False, True, True, True, True, True, True, False, False))
    for ca in analysis.comparisons:
        t.rows.append(comparison_row(ca))
        kind = ca.comparison.verdict.kind if ca.comparison else "none"
        confounded = " confounded" if ca.comparison and ca.comparison.verdict.confounded else ""
        t.row_classes.append(f"v-{kind}{confounded}")
    return t


def verdict_lines(analysis: CampaignAnalysis) -> list[str]:
    """One sentence per comparison: what changed, by how much, how sure; slowdowns and speedups first."""
    rank = {"slowdown": 0, "speedup": 1, "inconclusive": 2, "no_change": 3, "insufficient": 4}
    items = []
    for ca in analysis.comparisons:
        c = ca.comparison
        what = f"{ca.label}: {ca.condition} vs {ca.baseline}"
        if c is None:
            items.append((5, f"no verdict — {what}: {ca.reason}"))
            continue
        ci = ""
        if c.cost_ratio_ci is not None:
            ci = f" {fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=3)}"
        line = (
            f"{verdict_text(c.verdict.kind, c.verdict.confounded)} — {what}: cost ratio "
            f"{fmt_ratio(c.cost_ratio)}×{ci}, adjusted p = {fmt_p(c.p_adjusted)}"
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


# --- text ------------------------------------------------------------------------------------------------------


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def aligned(headers: tuple[str, ...], rows: list[tuple[str, ...]], numeric: tuple[bool, ...]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(headers), line(tuple("-" * w for w in widths))] + [line(r) for r in rows]


def render_text(analysis: CampaignAnalysis, *, label_width: int = 52) -> str:
    """A compact summary for a terminal: one line per cell and per comparison, then the warnings."""
    counts = run_counts(analysis)
    out = [
        f"campaign {analysis.name!r} (id {analysis.campaign_id}): {analysis.status}, board {analysis.board_label}, "
        f"{counts['valid']}/{counts['runs']} runs valid, {counts['invalid']} invalid, {counts['failed']} failed",
        "",
    ]
    rows = []
    for c in analysis.cells:
        s = c.summary
        name = _clip(f"{c.label} @ {c.condition}", label_width)
        if s is None:
            rows.append((name, str(len(c.values)), "–", "", "–", "–", "–", _clip(c.summary_reason or "", 50)))
            continue
        div, unit = display_unit(c.unit, s.median)
        ci = fmt_interval(s.median_ci.low, s.median_ci.high, div) if s.median_ci else "–"
        rows.append(
            (
                name,
                str(s.n),
                fmt_num(s.median / div, 4),
                unit,
                ci,
                fmt_pct(s.cv),
                drift_text(c),
                "; ".join(_clip(w, 50) for w in s.warnings[:1]),
            )
        )
    out += aligned(
        ("cell", "n", "median", "unit", "95% CI", "CV %", "drift ρ, p", "note"),
        rows,
        (False, True, True, False, True, True, False, False),
    )
    if analysis.comparisons:
        out.append("")
        rows = []
        for ca in analysis.comparisons:
            c = ca.comparison
            name = _clip(f"{ca.label}: {ca.condition} vs {ca.baseline}", label_width + 16)
            if c is None:
                rows.append((name, "–", "–", "–", f"no verdict: {ca.reason}"))
                continue
            ci = fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=3) if c.cost_ratio_ci else "–"
            rows.append(
                (
                    name,
                    fmt_ratio(c.cost_ratio),
                    ci,
                    fmt_p(c.p_adjusted),
                    verdict_text(c.verdict.kind, c.verdict.confounded),
                )
            )
        out += aligned(
            ("comparison", "cost ×", "95% CI", "p adj", "verdict"), rows, (False, True, True, True, False)
        )
        if analysis.delta is not None:
            out.append(
                f"threshold delta = {analysis.delta.delta:.1%} (A/A, {analysis.delta.n_ratios} ratios); "
                "cost ratio > 1 means the condition is worse"
            )
    warns = analysis.warnings
    if warns:
        out.append("")
        out.append("environment: " + ", ".join(f"{w.get('name')} {w.get('status')}" for w in warns))
    return "\n".join(out) + "\n"
