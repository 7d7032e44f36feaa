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

from boardlab.report import study_governor, study_services
from boardlab.report.analysis import CampaignAnalysis, CellAnalysis, ComparisonAnalysis
from boardlab.report.escape import term
from boardlab.report.studies import TAIL_MIN_SAMPLES, AiCell, RtCell, pct_name, samples_needed
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
    cell_classes: list[dict[int, str]] = field(default_factory=list)  # per row: column -> HTML class


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
    why = list(c.verdict.reasons)
    if ca.unstable:
        why.insert(0, f"UNSTABLE: {ca.unstable}")
    if c.n_blocks is not None:
        why.append(f"paired design: Wilcoxon signed-rank over {c.n_blocks} blocks")
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


def comparison_table(analysis: CampaignAnalysis) -> Table:
    t = Table(
        COMPARISON_HEADERS,
        (False, False, False, True, True, True, True, True, True, True, True, False, False),
    )
    for ca in tuple(analysis.comparisons) + tuple(analysis.tail_comparisons):
        t.rows.append(comparison_row(ca))
        kind = ca.comparison.verdict.kind if ca.comparison else "none"
        confounded = " confounded" if ca.comparison and ca.comparison.verdict.confounded else ""
        t.row_classes.append(f"v-{kind}{confounded}")
    return t


def verdict_lines(analysis: CampaignAnalysis) -> list[str]:
    """One sentence per comparison: what changed, by how much, how sure; slowdowns and speedups first."""
    rank = {"slowdown": 0, "speedup": 1, "inconclusive": 2, "no_change": 3, "insufficient": 4}
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


# --- the two studies: real-time latency and AI inference ---------------------------------------------------------


def unit_label(unit: str) -> str:
    return "µs" if unit == "us" else unit


def fmt_value(x: float | None) -> str:
    """A measured value: whole numbers as they are (cyclictest's integer microseconds), others with 4 digits."""
    if x is None:
        return "–"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    text = fmt_num(x, 4)
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def _first_seen(items) -> list:
    out: list = []
    for it in items:
        if it not in out:
            out.append(it)
    return out


def varying_keys(param_sets) -> list[str]:
    """Parameter names whose values differ between the given parameter dicts, in first-seen order."""
    import json

    sets = list(param_sets)
    keys = _first_seen(k for p in sets for k in p)
    return [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in sets}) > 1]


def rt_groups(
    analysis: CampaignAnalysis,
) -> list[tuple[dict, list[str], list[str], dict[tuple[str, str], RtCell]]]:
    """rt.cyclictest cells laid out as the interference study's figure: per parameter set, (params, loads, modes,
    (load, mode) -> cell); loads and modes in the campaign's condition order (the unloaded one first)."""
    import json

    order = {c: i for i, c in enumerate(analysis.conditions)}
    by_params: dict[str, list[RtCell]] = {}
    for c in analysis.rt_cells:
        by_params.setdefault(json.dumps(c.params, sort_keys=True), []).append(c)
    out = []
    for cells in by_params.values():
        cells = sorted(cells, key=lambda c: order.get(c.condition, len(order)))
        loads = _first_seen(c.load for c in cells)
        modes = _first_seen(c.mode for c in cells)
        out.append((cells[0].params, loads, modes, {(c.load, c.mode): c for c in cells}))
    return out


def ordered_rt_cells(analysis: CampaignAnalysis) -> list[RtCell]:
    """Per parameter set, load by load, one row per isolation mode."""
    return [
        grid[(load, mode)]
        for _, loads, modes, grid in rt_groups(analysis)
        for load in loads
        for mode in modes
        if (load, mode) in grid
    ]


RT_PERCENTILE_NAMES = ("p50", "p90", "p99", "p99.9", "p99.99")


def rt_percentile_table(analysis: CampaignAnalysis) -> Table:
    """Per rt.cyclictest cell: nearest-rank percentiles of the histogram merged over its valid runs (">= L"
    when in the overflow, never a number), min/avg/max over every sample, samples and overflow."""
    cells = ordered_rt_cells(analysis)
    units = {unit_label(c.unit) for c in cells}
    u = units.pop() if len(units) == 1 else "unit"
    varying = varying_keys(c.params for c in cells)
    headers = (
        "condition",
        *(("parameters",) if varying else ()),
        "runs [runs]",
        "samples [samples]",
        "overflow [samples]",
        f"min [{u}]",
        f"avg [{u}]",
        *(f"{name} [{u}]" for name in RT_PERCENTILE_NAMES),
        f"max [{u}]",
        *(("unit",) if u == "unit" else ()),
        "note",
    )
    numeric = tuple(h not in ("condition", "parameters", "unit", "note") for h in headers)
    t = Table(headers, numeric)
    for c in cells:
        pcts = [p.display() if p.n else "–" for p in c.percentiles] or ["–"] * len(RT_PERCENTILE_NAMES)
        row = (
            c.condition,
            *((params_text({k: c.params.get(k) for k in varying}),) if varying else ()),
            str(c.runs_merged),
            str(c.samples),
            str(c.overflow),
            fmt_value(c.min_value),
            fmt_value(c.avg_value),
            *pcts,
            fmt_value(c.max_value),
            *((unit_label(c.unit),) if u == "unit" else ()),
            "; ".join(c.notes),
        )
        t.rows.append(row)
        t.row_classes.append("nodata" if not c.samples else "")
        first_pct = headers.index(f"{RT_PERCENTILE_NAMES[0]} [{u}]")
        t.cell_classes.append({first_pct + i: "censored" for i, p in enumerate(c.percentiles) if p.censored})
    return t


def rt_short_sample_levels(analysis: CampaignAnalysis) -> str | None:
    """A sentence when some cell reports a level from fewer samples than nearest rank needs to tell it from
    the largest sample (p99.99: 10000)."""
    short = _first_seen(
        p.q for c in analysis.rt_cells for p in c.percentiles if p.n and p.n < samples_needed(p.q)
    )
    if not short:
        return None
    levels = ", ".join(f"{pct_name(q)} (needs {samples_needed(q)})" for q in short)
    return f"Too few samples in some cells for {levels}: nearest rank then gives the largest sample."


def _comparison_key(workload: str, params: dict, condition: str) -> str:
    import json

    return json.dumps([workload, params, condition], sort_keys=True)


def _by_cell(comparisons) -> dict[str, ComparisonAnalysis]:
    return {_comparison_key(ca.workload, ca.params, ca.condition): ca for ca in comparisons}


def ai_groups(analysis: CampaignAnalysis) -> list[tuple[str, list[AiCell]]]:
    """ai.inference cells per model (per parameter set): (panel title, cells in condition order)."""
    import json

    order = {c: i for i, c in enumerate(analysis.conditions)}
    varying = varying_keys(c.params for c in analysis.ai_cells)
    groups: dict[str, list[AiCell]] = {}
    titles: dict[str, str] = {}
    for c in analysis.ai_cells:
        key = json.dumps(c.params, sort_keys=True)
        groups.setdefault(key, []).append(c)
        if varying == ["model"] or not varying:
            titles[key] = c.model
        else:
            titles[key] = ", ".join(f"{k}={c.params.get(k)}" for k in varying)
    return [
        (titles[k], sorted(cells, key=lambda c: order.get(c.condition, len(order))))
        for k, cells in groups.items()
    ]


def _verdict_cells(ca: ComparisonAnalysis | None) -> tuple[str, str, str, str]:
    """(cost ratio with CI, verdict text, verdict kind for a CSS class, why there is none)."""
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


AI_VERDICT_COLUMNS = ("median verdict", "p99 verdict")


def ai_frames_note(analysis: CampaignAnalysis) -> str | None:
    """A caveat when runs have fewer frames than a p99 needs (docs/method.md: 100 samples)."""
    few = [
        c.frames_min
        for c in analysis.ai_cells
        if c.frames_min is not None and c.frames_min < TAIL_MIN_SAMPLES
    ]
    if not few:
        return None
    return (
        f"Runs of {min(few)}{'' if min(few) == max(few) else f'–{max(few)}'} frames: a per-run p99 needs at "
        f"least {TAIL_MIN_SAMPLES}, so the p99 column and the p99 verdict use the p99 of all runs' frames "
        "pooled, with a cluster bootstrap over runs (whole runs resampled)."
    )


def ai_table(analysis: CampaignAnalysis) -> Table:
    """Per model and condition: the median over runs of each run's per-frame p50/p90/p99, and the verdicts of
    the run medians (the primary comparison) and of the run p99s (`tail_comparisons`) against the baseline."""
    units = {c.unit for c in analysis.ai_cells}
    u = units.pop() if len(units) == 1 else "unit"
    headers = (
        "model",
        "condition",
        "n [runs]",
        "frames per run [frames]",
        f"p50 [{u}]",
        f"p90 [{u}]",
        f"p99 [{u}]",
        "median: cost ratio (90% decision interval) [×]",
        AI_VERDICT_COLUMNS[0],
        "p99: cost ratio (90% decision interval) [×]",
        AI_VERDICT_COLUMNS[1],
        *(("unit",) if u == "unit" else ()),
        "note",
    )
    numeric = (False, False, True, True, True, True, True, True, False, True, False) + (False,) * (
        len(headers) - 11
    )
    t = Table(headers, numeric)
    primary, tail = _by_cell(analysis.comparisons), _by_cell(analysis.tail_comparisons)
    for title, cells in ai_groups(analysis):
        for c in cells:
            key = _comparison_key(c.workload, c.params, c.condition)
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
            t.rows.append(
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
                    *((c.unit,) if u == "unit" else ()),
                    "; ".join(notes),
                )
            )
            t.row_classes.append("" if c.n_runs else "nodata")
            t.cell_classes.append({i: f"verdict v-{kind}" for i, kind in ((8, m_kind), (10, t_kind)) if kind})
    return t


# --- text ------------------------------------------------------------------------------------------------------


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def aligned(headers: tuple[str, ...], rows: list[tuple[str, ...]], numeric: tuple[bool, ...]) -> list[str]:
    rows = [tuple(term(c) for c in r) for r in rows]  # escaped before measuring, so columns stay aligned
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
                rows.append((name, "–", "–", "–", "–", "–", f"no verdict: {ca.reason}"))
                continue
            di = fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=3) if c.decision_ci else "–"
            ci = fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=3) if c.cost_ratio_ci else "–"
            rows.append(
                (
                    name,
                    fmt_ratio(c.cost_ratio),
                    di,
                    ci,
                    f"{c.delta:.0%}",
                    fmt_p(c.p_adjusted),
                    verdict_text(c.verdict.kind, c.verdict.confounded) + (" UNSTABLE" if ca.unstable else ""),
                )
            )
        out += aligned(
            ("comparison", "cost ×", "90% decision interval", "95% CI", "delta", "p adj", "verdict"),
            rows,
            (False, True, True, True, True, True, False),
        )
        out.append(
            "verdicts are decided on the 90% decision interval against delta; the 95% CI is shown, not decided "
            f"on; p adjusted by {analysis.family_text}; cost ratio > 1 means the condition is worse"
        )
        from boardlab.report.verdicts import aa_summary, aa_table

        out += ["", aa_summary(analysis)]
        t = aa_table(analysis)
        if t.rows:
            keep = [i for i, h in enumerate(t.headers) if h != "status"]
            out += aligned(
                tuple(t.headers[i] for i in keep),
                [tuple(r[i] for i in keep) for r in t.rows],
                tuple(t.numeric[i] for i in keep),
            )
            out += [f"  {r[0]} @{r[1]}: {r[-1]}" for r in t.rows if r[-1].startswith("UNSTABLE")]
    if analysis.rt_cells:
        t = rt_percentile_table(analysis)
        keep = [i for i, h in enumerate(t.headers) if h != "note"]
        out += [
            "",
            "real-time latency: nearest-rank percentiles of each cell's histogram, merged over its runs",
        ]
        out += aligned(
            tuple(t.headers[i] for i in keep),
            [tuple(r[i] for i in keep) for r in t.rows],
            tuple(t.numeric[i] for i in keep),
        )
        short = rt_short_sample_levels(analysis)
        if short:
            out.append(short)
    if analysis.ai_cells:
        t = ai_table(analysis)
        keep = [i for i, h in enumerate(t.headers) if h != "note" and "cost ratio" not in h]
        out += ["", "AI inference: per-frame latency, median over runs of each run's p50/p90/p99"]
        out += aligned(
            tuple(t.headers[i] for i in keep),
            [tuple(r[i] for i in keep) for r in t.rows],
            tuple(t.numeric[i] for i in keep),
        )
        note = ai_frames_note(analysis)
        if note:
            out.append(note)
    from boardlab.report.study_energy import energy_text  # study_energy imports this module

    out += energy_text(analysis)
    out += study_governor.text_lines(analysis)
    from boardlab.report.verdicts import build_note

    if build_note(analysis):
        out += ["", build_note(analysis)]
    out += study_services.text_lines(analysis.services_cells)
    warns = analysis.warnings
    if warns:
        out.append("")
        out.append("environment: " + ", ".join(f"{w.get('name')} {w.get('status')}" for w in warns))
    if analysis.stream:
        from boardlab.report.study_stream import terminal_lines

        out += terminal_lines(analysis.stream)
    return "\n".join(term(line) for line in out) + "\n"
