"""The whole report of a campaign as one document (`analysis.document`), the same for every format.

`build_document(analysis, series)` assembles: the header, the summary card of headline figures, the verdicts,
the environment, the A/A control, the run values, the slowdown heatmap, every applying study's sections
(`analysis.studies`, in registry order), run-order drift, the monitor, the cell and comparison tables and the
plan. A block's `formats` says where it shows: figures only in HTML; the text report is a compact summary
(compact tables, one line per cell and comparison). The renderers of `boardlab.report` only lay it out.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import (
    VERDICT_RANK,
    cell_label,
    display_unit,
    fmt_duration,
    fmt_in,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_ratio,
    fmt_time,
    metric_words,
    params_text,
    section_labels,
    varying_keys,
    verdict_text,
)
from boardlab.analysis.headline import Headline, headlines
from boardlab.analysis.monitor import GROUPS as MONITOR_GROUPS
from boardlab.analysis.monitor import MonitorSeries
from boardlab.analysis.runs import INVALID_VALUE, MEASURED
from boardlab.analysis.tables import (
    Units,
    cell_table,
    comparison_labels,
    comparison_table,
    drift_text,
    invalid_text,
    metric_units,
    run_counts,
    times_text,
    unit_of,
    varying_by_workload,
    verdict_lines,
)
from boardlab.analysis.verdicts import aa_note, aa_summary, aa_table, build_note, method_note
from boardlab.stats.text import p_is

if TYPE_CHECKING:
    from boardlab.analysis.core import CampaignAnalysis, CellAnalysis

# the monitor's samples as the plots draw them, as `monitor_series` gives them
Series = MonitorSeries

MAX_BOXES_PER_PLOT = 40  # beyond this a boxplot is a wall; the table and curves carry those cells
MAX_DRIFT_PLOTS = 12  # flagged cells are always shown, the others fill up to this
# A drift plot of a cell with more runs than this draws DRIFT_BINS bins of consecutive runs, not every run:
# a plot 272 px wide shows no more, and the report of a million runs stays small.
MAX_DRIFT_POINTS = 400
DRIFT_BINS = 200
MAX_CARDS = 16  # headline figures on the summary card
TEXT = frozenset({"text"})
MD = frozenset({"md"})
HTML_MD = doc.RICH


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# ---- header ------------------------------------------------------------------------------------------------


def header(a: CampaignAnalysis) -> doc.Section:
    counts = run_counts(a)
    why_invalid = f" ({invalid_text(a)})" if counts["invalid"] else ""
    duration = (a.finished_unix_s - a.started_unix_s) if a.finished_unix_s else None
    reruns = "–" if counts["reruns"] is None else str(counts["reruns"])
    inv = a.inventory or {}
    kernel = (inv.get("kernel") or {}).get("release") if isinstance(inv.get("kernel"), dict) else None
    cpus = inv.get("online_cpus")
    cpu_names = sorted(
        {str(c.get("name")) for c in inv.get("clusters") or [] if isinstance(c, dict) and c.get("name")}
    )
    virt = inv.get("virtualization") or {}
    board_bits = [b for b in (inv.get("model"), inv.get("machine")) if b]
    if cpus:
        board_bits.append(f"{len(cpus)} CPUs online" + (f" ({', '.join(cpu_names)})" if cpu_names else ""))
    if kernel:
        board_bits.append(f"Linux {kernel}")
    if isinstance(virt, dict) and virt.get("virtualized"):
        board_bits.append(f"virtualized ({virt.get('hypervisor') or 'unknown hypervisor'})")
    mon = a.monitor or {}
    cost = mon.get("cost_pct_of_core")
    monitor = (
        f"{cost:.2f}% of one core at {1 / mon['interval_s']:.3g} Hz"
        if isinstance(cost, int | float) and mon.get("interval_s")
        else "–"
    )
    pairs = (
        ("campaign", f"{a.campaign_id} — plan {a.plan_source}, order {a.order}"),
        ("status", a.status),
        ("board", f"{a.board_label}" + (f" — {'; '.join(str(b) for b in board_bits)}" if board_bits else "")),
        ("boardlab", a.boardlab_version),
        ("when", f"{fmt_time(a.started_unix_s)} → {fmt_time(a.finished_unix_s)} ({fmt_duration(duration)})"),
        (
            "runs",
            f"{counts['runs']} stored: {counts['valid']} valid, {counts['invalid']} invalid{why_invalid}, "
            f"{counts['failed']} failed; {reruns} re-runs",
        ),
        (
            "cells",
            f"{_count(len(a.cells), 'cell')}, {_count(len(a.conditions), 'condition')}, "
            f"{_count(len(a.comparisons), 'comparison')}",
        ),
        ("monitor cost", monitor),
    )
    note = build_note(a)
    blocks: list[doc.Block | None] = [
        doc.Prose(
            f"campaign {a.name!r} (id {a.campaign_id}): {a.status}, board {a.board_label}, "
            f"{counts['valid']}/{counts['runs']} runs valid, {counts['invalid']} invalid{why_invalid}, "
            f"{counts['failed']} failed",
            formats=TEXT,
        ),
        doc.Facts(pairs, formats=HTML_MD),
        doc.Facts((("native kernels", note.removeprefix("native kernels built with ")),), formats=MD)
        if note
        else None,
        doc.Prose(note, formats=TEXT) if note else None,
    ]
    simulated = (a.environment.get("simulated") or {}).get("note")
    if simulated:  # `governor sweep --sim --db`: a model's figures, said before any of them in every format
        blocks.insert(0, doc.Prose(simulated, banner=True, bold=("Simulated",)))
    if a.status != "complete":
        blocks.append(
            doc.Prose(
                f"This campaign is {a.status}: the report covers the {counts['runs']} runs stored so far.",
                banner=True,
                bold=(a.status,),
                formats=HTML_MD,
            )
        )
    blocks += [doc.Prose(line, strong=True) for line in load_failures(a)]
    return doc.section("", *blocks, level=0, anchor="header")


def load_failures(a: CampaignAnalysis) -> list[str]:
    """Per condition whose load did not run in some runs: how many, and the first reason (docs/method.md
    "Loads that did not run"). Those runs are invalid, so no summary or verdict uses them."""
    from boardlab.model.run import LOAD_DID_NOT_RUN

    per: dict[str, list] = {}  # condition -> [runs whose load did not run, runs, first reason]
    for c in a.cells:
        n = per.setdefault(c.condition, [0, 0, None])
        n[1] += len(c.runs)
        for why, k in c.runs.invalid_reason.counts():  # each distinct reason once, the first first
            at = why.find(LOAD_DID_NOT_RUN)
            if at >= 0:
                n[0] += k
                n[2] = n[2] or why[at:][:300]
    return [
        f"Condition {name!r}: {k} of {n} runs invalid because {reason}. No verdict uses those runs."
        for name, (k, n, reason) in per.items()
        if k
    ]


# ---- the summary card --------------------------------------------------------------------------------------


def _figure(h: Headline, units: Units) -> str:
    """'median unit [95% CI]' of a headline figure, in the unit its workload's cells are shown in elsewhere
    (the cell table's), else one scaled to its median."""
    workload = h.label.split(" ", 1)[0]
    div, unit = unit_of(units, workload, h.metric, h.unit, h.median)
    if h.ci_low is None or h.ci_high is None:
        return f"{fmt_in(h.median, div)} {unit} (no CI: {_count(h.n_runs, 'run')})"
    return f"{fmt_in(h.median, div)} {unit} [{fmt_in(h.ci_low, div)}, {fmt_in(h.ci_high, div)}]"


def _card_label(h: Headline) -> str:
    """A figure's label: the workload and its metric in words, unless the name only repeats the unit."""
    words = metric_words(h.metric, h.unit)
    return f"{h.label}: {words}" if words else h.label


def summary_card(a: CampaignAnalysis) -> doc.Section | None:
    figures = headlines(a)
    if not figures:
        return None
    shown = figures[:MAX_CARDS]
    more = len(figures) - len(shown)
    cond = shown[0].condition
    units = metric_units(a.cells)
    groups: dict[str, list[tuple[str, str]]] = {}
    for h in shown:
        groups.setdefault(_study_of(a, h), []).append((_card_label(h), _figure(h, units)))
    return doc.section(
        "Summary",
        doc.Prose(
            f"Headline figures under {cond}, by study: the median over runs of each workload's primary "
            "metric, with its 95% order-statistic CI (a composite: the mean of its members' medians, with a "
            "bootstrap CI over their runs)" + (f"; {more} more in the cell table" if more > 0 else "") + ".",
            small=True,
        ),
        *(doc.Facts(tuple(pairs), cards=True, title=title) for title, pairs in groups.items()),
        anchor="summary",
    )


def _study_of(a: CampaignAnalysis, h: Headline) -> str:
    """The group of a headline figure on the summary card: the study its cells belong to, else the family
    of its workload (the satellite-computer preset's scimark, mibench, crypto, ...)."""
    ids = set(h.cell_ids)
    study = next((r.title for r in a.studies if ids & set(r.covers or r.shows)), None)
    if study is not None:
        return study
    workloads = {c.workload for c in a.cells if c.cell_id in ids}
    families = {(spec.family if (spec := a.workloads.spec_of(w)) else w.split(".")[0]) for w in workloads}
    return f"{' + '.join(sorted(families))} workloads" if families else "workloads"


# ---- verdicts ----------------------------------------------------------------------------------------------


NO_COMPARISON = "No comparisons in this campaign: no cell has a baseline cell to be compared with."


def verdicts(a: CampaignAnalysis) -> doc.Section | None:
    everything = tuple(a.comparisons) + tuple(a.tail_comparisons)
    if not everything:  # said in every format, so no heading is left bare; no A/A control repeats it
        return doc.section("Verdicts", doc.Prose(NO_COMPARISON))
    ordered = sorted(
        everything, key=lambda ca: VERDICT_RANK.get(ca.comparison.verdict.kind, 5) if ca.comparison else 6
    )
    counts: dict[str, int] = {}
    for ca in everything:
        kind = ca.comparison.verdict.kind if ca.comparison else "no verdict"
        counts[kind] = counts.get(kind, 0) + 1
    tally = ", ".join(
        f"{n} {k.replace('_', ' ')}"
        for k, n in sorted(counts.items(), key=lambda kv: VERDICT_RANK.get(kv[0], 5))
    )
    confounded = sum(1 for ca in a.comparisons if ca.comparison and ca.comparison.verdict.confounded)
    rows, classes = [], []
    labels = section_labels((ca.workload, ca.params) for ca in ordered)
    for ca, label in zip(ordered, labels, strict=True):
        c = ca.comparison
        what = f"{a.condition_text(ca.condition)} vs {a.condition_text(ca.baseline)}"
        if c is None:
            rows.append(("no verdict", label, what, ca.reason or "", "", "", "", ""))
            classes.append("v-none")
            continue
        ci, di = c.cost_ratio_ci, c.decision_ci
        metric = f" [{ca.metric}]" if ca.tail else ""
        rows.append(
            (
                verdict_text(c.verdict.kind, c.verdict.confounded) + (" (unstable)" if ca.unstable else ""),
                label + metric,
                what,
                fmt_ratio(c.cost_ratio),
                fmt_interval(di.low, di.high, sig=3) if di else "–",
                fmt_interval(ci.low, ci.high, sig=3) if ci else "–",
                f"{c.delta:.1%}",
                fmt_p(c.p_adjusted),
            )
        )
        classes.append(f"v-{c.verdict.kind}" + (" confounded" if c.verdict.confounded else ""))
    table = doc.Table(
        (
            doc.Column("verdict"),
            doc.Column("workload"),
            doc.Column("condition vs baseline"),
            doc.Column("cost ratio", "×", True),
            doc.Column("90% decision interval", "×", True),
            doc.Column("95% CI (shown, not decided on)", "×", True),
            doc.Column("delta", None, True),
            doc.Column("p adjusted", None, True),
        ),
        tuple(rows),
        row_classes=tuple(classes),
        css="verdicts",
        emphasis_column="90% decision interval",
        formats=doc.HTML,
    )
    text_rows = []
    for ca, label in zip(a.comparisons, comparison_labels(a.comparisons), strict=True):
        c = ca.comparison
        name = f"{label}: {a.condition_text(ca.condition)} vs {a.condition_text(ca.baseline)}"  # whole: a label is never cut  # noqa: E501
        if c is None:
            text_rows.append((name, "–", "–", "–", "–", "–", f"no verdict: {ca.reason}"))
            continue
        di_text = fmt_interval(c.decision_ci.low, c.decision_ci.high, sig=3) if c.decision_ci else "–"
        ci_text = fmt_interval(c.cost_ratio_ci.low, c.cost_ratio_ci.high, sig=3) if c.cost_ratio_ci else "–"
        text_rows.append(
            (
                name,
                fmt_ratio(c.cost_ratio),
                di_text,
                ci_text,
                f"{c.delta:.0%}",
                fmt_p(c.p_adjusted),
                verdict_text(c.verdict.kind, c.verdict.confounded) + (" UNSTABLE" if ca.unstable else ""),
            )
        )
    text_table = doc.Table(
        tuple(
            doc.Column(h, numeric=n)
            for h, n in (
                ("comparison", False),
                ("cost ×", True),
                ("90% decision interval", True),
                ("95% CI", True),
                ("delta", True),
                ("p adj", True),
                ("verdict", False),
            )
        ),
        tuple(text_rows),
        formats=TEXT,
    )
    return doc.section(
        "Verdicts",
        doc.Prose(
            f"{len(everything)} comparisons: {tally}"
            + (f"; {confounded} confounded ⚠" if confounded else "")
            + ".",
            formats=doc.HTML,
        ),
        table,
        doc.Items(tuple(verdict_lines(a)), formats=MD),
        doc.Prose(method_note(a), formats=MD),
        doc.Prose(
            f"{method_note(a)} ⚠ marks arms that ran at a different frequency or temperature (see the "
            "comparison table for why); (unstable) marks a workload whose A/A control failed (see below).",
            small=True,
            formats=doc.HTML,
        ),
        text_table if text_rows else None,
        doc.Prose(
            "verdicts are decided on the 90% decision interval against delta; the 95% CI is shown, not "
            f"decided on; {a.adjusted_text}; cost ratio > 1 means the condition is worse",
            formats=TEXT,
        )
        if text_rows
        else None,
        anchor="verdicts",
    )


# ---- environment and the A/A control -----------------------------------------------------------------------


def _pairs_table(pairs, **kw) -> doc.Table:
    return doc.Table((doc.Column(""), doc.Column("")), tuple((str(k), str(v)) for k, v in pairs), **kw)


def environment(a: CampaignAnalysis) -> list[doc.Section]:
    checks = [c for c in a.environment.get("checks") or [] if isinstance(c, dict)]
    bad = sorted((c for c in checks if c.get("status") != "OK"), key=lambda c: c.get("status") != "FAIL")
    blocks: list[doc.Block | None] = []
    if bad:
        blocks.append(
            doc.Table(
                (doc.Column("status"), doc.Column("check"), doc.Column("finding"), doc.Column("fix")),
                tuple(
                    (str(c.get("status")), str(c.get("name")), str(c.get("detail")), str(c.get("fix") or ""))
                    for c in bad
                ),
                badge_column="status",
                formats=HTML_MD,
            )
        )
        blocks.append(
            doc.Prose(
                "environment: " + ", ".join(f"{w.get('name')} {w.get('status')}" for w in bad), formats=TEXT
            )
        )
    elif checks:
        blocks.append(doc.Prose("Every environment check passed.", formats=HTML_MD))
    else:
        blocks.append(doc.Prose("No environment checks were recorded.", formats=HTML_MD))
    ok = [c for c in checks if c.get("status") == "OK"]
    if ok:
        blocks.append(
            _pairs_table(
                ((c.get("name"), c.get("detail")) for c in ok),
                fold=f"{_count(len(ok), 'check')} OK",
                formats=doc.HTML,
            )
        )
    out = [doc.section("Environment", *blocks, anchor="environment")]
    caps = a.environment.get("capabilities") or {}
    missing = [
        (k, v.get("reason") or "no reason recorded")
        for k, v in caps.items()
        if isinstance(v, dict) and not v.get("supported")
    ]
    for title, pairs in (
        ("Unsupported here", missing),
        ("Workloads skipped on this board", list((a.environment.get("skipped_workloads") or {}).items())),
        ("Conditions skipped on this board", list((a.environment.get("skipped_conditions") or {}).items())),
        ("Cells skipped on this board", list((a.environment.get("skipped_cells") or {}).items())),
    ):
        if pairs:
            out.append(doc.section(title, _pairs_table(pairs), level=3, formats=HTML_MD))
    return out


def aa_control(a: CampaignAnalysis) -> doc.Section | None:
    """The A/A control; none without a comparison, where "Verdicts" already says there is nothing to judge."""
    if not a.aa_controls and not a.comparisons and not a.tail_comparisons:
        return None
    t = aa_table(a)
    unstable = tuple(f"  {r[0]} @{r[1]}: {r[-1]}" for r in t.rows if r[-1].startswith("UNSTABLE"))
    return doc.section(
        "A/A control",
        doc.Prose(aa_summary(a)),
        t if t.rows else None,
        doc.Items(unstable, formats=TEXT) if unstable else None,
        doc.Prose(aa_note(a), small=True, formats=HTML_MD),
        anchor="aa",
    )


# ---- run values, heatmap, drift, monitor (figures) ---------------------------------------------------------


def _box_label(cell: CellAnalysis, varying: Sequence[str], multi_condition: bool) -> str:
    params = params_text({k: cell.params.get(k) for k in varying})
    if multi_condition or not params:
        return f"{params} @ {cell.condition_text}" if params else cell.condition_text
    return params


def run_values(a: CampaignAnalysis) -> doc.Section | None:
    groups: dict[tuple[str, str], list[CellAnalysis]] = {}
    for c in a.cells:
        groups.setdefault((c.workload, c.metric), []).append(c)
    if not groups:
        return None
    shown = a.shown_by_studies
    blocks: list[doc.Block] = [
        doc.Prose(
            "One row per condition or parameter value; every run is a dot (hollow: invalid, not counted), "
            "box = quartiles, thick line = median, whiskers = 1.5 IQR.",
            small=True,
        )
    ]
    for i, ((workload, metric), cells) in enumerate(groups.items()):
        where = next((shown[c.cell_id] for c in cells if c.cell_id in shown), None)
        if where is not None and all(c.cell_id in shown for c in cells):
            blocks.append(doc.Prose(f"{workload}: {len(cells)} cells, shown {where}.", small=True))
            continue
        if len(cells) > MAX_BOXES_PER_PLOT:
            blocks.append(doc.Prose(f"{workload}: {len(cells)} cells: see the curves and the cell table."))
            continue
        varying = varying_keys(c.params for c in cells)  # only the parameters that vary within the plot
        multi = len({c.condition for c in cells}) > 1
        boxes = [
            doc.Box(
                _box_label(c, varying, multi),
                array("d", c.runs.values()),  # 8 bytes a run, not a tuple's 32
                array("d", c.runs.values(INVALID_VALUE)),
                note=f"n={c.n_valid}",
            )
            for c in cells
        ]
        direction = "higher is better" if cells[0].higher_is_better else "lower is better"
        fixed = {k: v for k, v in cells[0].params.items() if k not in varying}
        title = f"{workload}" + (f" ({params_text(fixed)})" if fixed else "") + f": {metric}, {direction}"
        blocks.append(
            doc.Figure(doc.BoxplotSpec(boxes=boxes, title=title, unit=f"{metric} [{cells[0].unit}]", seed=i))
        )
    return doc.section("Run values per workload", *blocks, formats=doc.HTML, anchor="run-values")


def _heatmap_position(ca, varying: Sequence[str]) -> tuple[str, str]:
    """(row, column): the workload with the parameters that vary among its rows, less the compared one, and
    the condition or compared value."""
    return cell_label(ca.workload, ca.params, [p for p in varying if p != ca.compared]), ca.condition


def heatmap(a: CampaignAnalysis) -> doc.Section | None:
    if not a.comparisons:
        return None
    rows: list[str] = []
    cols: list[str] = []
    cells: dict[tuple[int, int], doc.HeatCell] = {}
    varying = varying_by_workload(a.comparisons)
    for ca in a.comparisons:
        r, c = _heatmap_position(ca, varying[ca.workload])
        if r not in rows:
            rows.append(r)
        if c not in cols:
            cols.append(c)
        comp = ca.comparison
        key = (rows.index(r), cols.index(c))
        if comp is None:
            cells[key] = doc.HeatCell(None, None, tooltip=f"no comparison: {ca.reason}")
            continue
        ci = comp.cost_ratio_ci
        tip = (
            f"{r}: {a.condition_text(ca.condition)} vs {a.condition_text(ca.baseline)}; cost ratio "
            f"{fmt_num(comp.cost_ratio, 4)}"
            + (f" [{fmt_num(ci.low, 4)}, {fmt_num(ci.high, 4)}]" if ci else "")
            + f"; adjusted p {p_is(comp.p_adjusted)}; "
            f"{comp.verdict.reasons[0] if comp.verdict.reasons else ''}"
        )
        cells[key] = doc.HeatCell(comp.cost_ratio, comp.verdict.kind, comp.verdict.confounded, tip)
    figure = doc.Figure(
        doc.HeatmapSpec(
            rows=rows, cols=cols, cells=cells, title="Cost ratio against the baseline (workload × condition)"
        )
    )
    return doc.section("Slowdown heatmap", figure, formats=doc.HTML, anchor="heatmap")


def _binned(label: str, points: doc.Points, color: int) -> doc.Line:
    """Runs (sequence, value) in run order as a line: every run as a dot up to MAX_DRIFT_POINTS, else the
    median of each of DRIFT_BINS bins of consecutive runs (at their mean sequence), with a bar from the bin's
    lowest to its highest value."""
    if len(points) <= MAX_DRIFT_POINTS:
        return doc.Line(label, points, color=color)
    size = -(-len(points) // DRIFT_BINS)
    xs, medians, bars = [], [], []
    for i in range(0, len(points), size):
        ys = sorted(points.ys[i : i + size])
        xs.append(statistics.fmean(points.xs[i : i + size]))
        medians.append(statistics.median(ys))
        bars.append((ys[0], ys[-1]))
    return doc.Line(label, doc.Points(xs, medians), errors=bars, markers=False, color=color)


def drift(a: CampaignAnalysis) -> doc.Section | None:
    checked = [
        (c, c.summary, c.summary.drift)
        for c in a.cells
        if c.summary is not None and c.summary.drift is not None
    ]
    if not checked:
        return None
    checked.sort(key=lambda t: (not t[2].flagged, t[2].p_value))
    flagged = sum(1 for _, _, d in checked if d.flagged)
    shown = checked[: max(MAX_DRIFT_PLOTS, flagged)]
    varying = varying_by_workload(a.cells)
    figures = []
    binned = False
    for c, s, d in shown:
        div, unit = display_unit(c.unit, s.median)
        valid, invalid = (
            doc.Points(c.runs.seqs(rows), [v / div for v in c.runs.values(rows)])
            for rows in (MEASURED, INVALID_VALUE)
        )
        binned = binned or max(len(valid), len(invalid)) > MAX_DRIFT_POINTS
        lines = [_binned("valid runs", valid, 1 if d.flagged else 0)]
        if invalid:
            lines.append(_binned("invalid runs", invalid, 7))
        flag = "  DRIFT" if d.flagged else ""
        # Small multiples: the parameters that tell the workload's cells apart (a long title wraps).
        short = cell_label(c.workload, c.params, varying[c.workload])
        figures.append(
            doc.Figure(
                doc.LinePlotSpec(
                    lines=lines,
                    title=short,
                    subtitle=f"ρ = {d.rho:+.2f}, p {p_is(d.p_value)}{flag} · {c.condition_text}",
                    x_label="run sequence in the campaign",
                    y_label=unit,
                    width=272,
                    height=190,
                    legend=False,
                    frame="#b2182b" if d.flagged else "#dddddd",
                    title_size=11,
                )
            )
        )
    return doc.section(
        "Run-order drift",
        doc.Prose(
            f"Each cell's run values against their position in the campaign (Spearman ρ, flagged at p < "
            f"{checked[0][2].alpha:g}, red frame). {flagged} of {len(checked)} cells flagged"
            + (f"; the {len(shown)} lowest p-values shown" if len(shown) < len(checked) else "")
            + "."
            + (
                f" A cell of more than {MAX_DRIFT_POINTS} runs is drawn as {DRIFT_BINS} bins of consecutive "
                "runs: the line joins the bins' medians, a bar spans each bin's lowest to highest value."
                if binned
                else ""
            ),
            small=True,
        ),
        doc.Multiples(tuple(figures)),
        formats=doc.HTML,
        anchor="drift",
    )


def monitor(series: Series | None) -> doc.Section | None:
    if not series:
        return None

    def pick(pred) -> list[str]:
        return sorted((s for s in series.lines if pred(s)), key=lambda s: (len(s), s))

    figures = []
    for title, pred, _, y_label in MONITOR_GROUPS:
        sources = pick(pred)
        if not sources:
            continue
        # the points as plotted: time in the series' unit, values scaled (analysis.monitor)
        lines = [doc.Line(source, list(series.lines[source]), markers=False) for source in sources]
        figures.append(
            doc.Figure(
                doc.SeriesPlotSpec(
                    lines=lines,
                    title=title,
                    x_label=f"time since the first run started [{series.time_unit}]",
                    y_label=y_label,
                    y_zero=title == "CPU load",
                    height=260,
                )
            )
        )
    return doc.section(
        "Monitor",
        doc.Prose(
            "Samples of every run on one time axis (runs placed at their start times; gaps are gates and "
            "set-up between runs). worker.cpu_pct is the CPU use of the workload's processes (the worker and "
            "its children; a program's launcher left out); cpuN.busy_pct the load of each CPU.",
            small=True,
        ),
        *figures,
        formats=doc.HTML,
        anchor="monitor",
    )


# ---- tables and the plan -----------------------------------------------------------------------------------


def _text_cells(a: CampaignAnalysis) -> doc.Table:
    def clip(s: str, n: int) -> str:
        return s if len(s) <= n else s[: n - 1] + "…"

    rows = []
    varying = varying_by_workload(a.cells)
    units = metric_units(a.cells)
    for c in a.cells:
        s = c.summary
        name = f"{cell_label(c.workload, c.params, varying[c.workload])} @ {c.condition_text}"
        if s is None:
            rows.append(
                (
                    name,
                    str(c.n_valid),
                    "–",
                    "",
                    times_text(c),
                    "–",
                    "–",
                    "–",
                    clip(c.summary_reason or "", 50),
                )
            )
            continue
        div, unit = unit_of(units, c.workload, c.metric, c.unit, s.median)
        ci = fmt_interval(s.median_ci.low, s.median_ci.high, div, whole=True) if s.median_ci else "–"
        rows.append(
            (
                name,
                str(s.n),
                fmt_in(s.median, div),
                unit,
                times_text(c),
                ci,
                fmt_pct(s.cv),
                drift_text(c),
                "; ".join(clip(w, 44) for w in s.warnings[:1]),  # the whole warning: the md and HTML tables
            )
        )
    columns = tuple(
        doc.Column(h, numeric=n)
        for h, n in (
            ("cell", False),
            ("n", True),
            ("median", True),
            ("unit", False),
            ("user/sys/wall s", True),
            ("95% CI", True),
            ("CV %", True),
            ("drift ρ, p", False),
            ("note", False),
        )
    )
    return doc.Table(columns, tuple(rows), text_columns=tuple(c.header for c in columns), formats=TEXT)


def cells(a: CampaignAnalysis) -> doc.Section:
    return doc.section(
        "Cells",
        doc.Prose(
            "Per cell, over its valid runs (one value per run: the median of its iterations). Values in the "
            "unit of the row. CI: 95% distribution-free order-statistic CI of the median, and a percentile "
            "bootstrap CI resampling runs. Outliers beyond Tukey's fences are counted, never dropped. Red "
            "rows: drift with run order.",
            small=True,
            formats=doc.HTML,
        ),
        doc.Table(**{**_fields(cell_table(a)), "formats": HTML_MD}),
        _text_cells(a),
        anchor="cells",
    )


def _fields(t: doc.Table) -> dict:
    import dataclasses

    return {f.name: getattr(t, f.name) for f in dataclasses.fields(t)}


def comparisons(a: CampaignAnalysis) -> doc.Section | None:
    if not a.comparisons:
        return None
    return doc.section(
        "Comparisons",
        doc.Prose(
            "Ratio = condition / baseline of the runs' 20%-trimmed geometric means, tested by Yuen's trimmed "
            "t on log runs (per-block log ratios for ABBA blocks), with its 95% CI (shown) and the 90% "
            "decision interval of the cost ratio (decided on), both t intervals of that statistic. The "
            "p-value is the permutation p of the same statistic where a correction could use it, else "
            "Student's t's; a row says when another test decided (the exact rank test and median ratios for "
            "runs in two groups, a permutation over whole runs for pooled tails). The medians are shown for "
            f"reading. {a.adjusted_text[0].upper()}{a.adjusted_text[1:]}.",
            small=True,
            formats=doc.HTML,
        ),
        doc.Table(**{**_fields(comparison_table(a)), "formats": HTML_MD}),
        doc.Prose(
            "Cost ratio > 1 means the condition is worse (slower, or lower throughput). Verdicts are decided "
            f"on the 90% decision interval; the 95% CI is shown, not decided on; {a.adjusted_text}.",
            formats=MD,
        ),
        formats=HTML_MD,
        anchor="comparisons",
    )


def footer(a: CampaignAnalysis) -> doc.Section:
    note = build_note(a)
    return doc.section(
        "Plan",
        doc.Prose(f"{note}.", small=True, formats=doc.HTML) if note else None,
        doc.Preformatted(a.plan_text, summary=f"plan as stored ({a.plan_source})", formats=doc.HTML),
        doc.Prose(
            f"boardlab {a.boardlab_version}; method: docs/method.md in the boardlab repository (one "
            "run = one fresh worker process; iterations are never pooled).",
            small=True,
            formats=doc.HTML,
        ),
        formats=doc.HTML,
        anchor="plan",
    )


def build_document(a: CampaignAnalysis, series: Series | None = None) -> doc.Document:
    """The report of one campaign; `series` (from `monitor_series`) adds the monitor plots."""
    parts: list[doc.Section | list[doc.Section] | None] = [
        header(a),
        summary_card(a),
        verdicts(a),
        aa_control(a),
        environment(a),
        run_values(a),
        heatmap(a),
        a.study_sections(),
        drift(a),
        monitor(series),
        cells(a),
        comparisons(a),
        footer(a),
    ]
    sections: list[doc.Section] = []
    for p in parts:
        if isinstance(p, list):
            sections += p
        elif p is not None:
            sections.append(p)
    return doc.Document(f"boardlab report: {a.name}", tuple(sections))


__all__ = ["build_document"]
