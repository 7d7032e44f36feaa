"""The HTML report: one self-contained file (inline CSS and SVG; no JavaScript, network or external fonts).

`render_html(analysis, series=...)` lays out what `analysis.analyze` computed; it computes nothing
statistical. Every string that comes from a plan or a board goes through `html.escape`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence

from boardlab.analysis.core import CampaignAnalysis, CellAnalysis
from boardlab.analysis.format import (
    display_unit,
    fmt_duration,
    fmt_interval,
    fmt_p,
    fmt_ratio,
    fmt_time,
    params_text,
    verdict_text,
)
from boardlab.analysis.tables import cell_table, comparison_table, run_counts
from boardlab.report import plot as svg
from boardlab.report.render import html_sections, html_table

# monitor source -> [(seconds since the campaign's first run started, value)], as campaign_series gives
Series = Mapping[str, Sequence[tuple[float, float | None]]]

MAX_BOXES_PER_PLOT = 40  # beyond this a boxplot is a wall; the table and curves carry those cells
MAX_DRIFT_PLOTS = 12  # flagged cells are always shown, the others fill up to this
MAX_SERIES_POINTS = 700  # per line: about one point per pixel at 800 px


def esc(s: object) -> str:
    return html.escape("" if s is None else str(s), quote=True)


def with_gaps(points: Sequence[tuple[float, float | None]]) -> list[tuple[float, float | None]]:
    """Breaks (None) where the samples pause for longer than the plot can ignore: between runs, when the gap
    is wider than about 5 px at 800 px and than 5 sampling intervals."""
    pts = [p for p in points if p[1] is not None]
    if len(pts) < 3:
        return pts
    steps = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False))
    limit = max(5 * steps[len(steps) // 2], (pts[-1][0] - pts[0][0]) / 150)
    out: list[tuple[float, float | None]] = [pts[0]]
    for a, b in zip(pts, pts[1:], strict=False):
        if b[0] - a[0] > limit:
            out.append(((a[0] + b[0]) / 2, None))
        out.append(b)
    return out


# --- sections --------------------------------------------------------------------------------------------------

CSS = """
:root{color-scheme:light}
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#222;background:#fff;margin:0 auto;
 max-width:1400px;padding:12px 24px 40px;line-height:1.45;font-size:14px}
h1{font-size:24px;margin:10px 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #ddd;
 padding-bottom:3px}h3{font-size:15px;margin:16px 0 6px}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:1px 16px;margin:8px 0}
.meta dt{color:#555}.meta dd{margin:0}
.banner{background:#fff4d6;border-left:5px solid #e69f00;padding:6px 10px;margin:10px 0}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
table.verdicts td{white-space:nowrap}
th,td{padding:3px 6px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f2f2f2;font-weight:600}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;max-width:100%}
.status{display:inline-block;min-width:42px;text-align:center;font-weight:700;border-radius:3px;padding:0 5px}
.st-OK{background:#e3f1e6;color:#1b5e20}.st-WARN{background:#fff1c7;color:#7a4f00}
.st-FAIL{background:#b2182b;color:#fff}
tr.flagged td{background:#fdecea}tr.note td{color:#555;font-size:12px;border-bottom:1px solid #e4e4e4}
tr:has(+ tr.note) td{border-bottom:none}tr.nodata td{color:#888}
td.verdict{white-space:nowrap}tr.v-slowdown td.verdict{color:#b2182b;font-weight:700}
tr.v-speedup td.verdict{color:#2166ac;font-weight:700}
tr.confounded td.verdict{text-decoration:underline wavy #e69f00}
td.v-slowdown{color:#b2182b;font-weight:700}td.v-speedup{color:#2166ac;font-weight:700}
td.confounded{text-decoration:underline wavy #e69f00}td.censored{color:#b2182b;font-weight:600}
.small{color:#555;font-size:12.5px}
svg.plot{max-width:100%;height:auto;display:block;margin:6px 0}
.multiples{display:flex;flex-wrap:wrap;gap:8px}.multiples svg.plot{margin:0}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
details{margin:6px 0}summary{cursor:pointer;color:#333}
@media print{body{max-width:none;padding:0;font-size:11px}h2{break-after:avoid}svg.plot,tr{break-inside:avoid}
 .scroll{overflow:visible}}
"""


def _table_html(table, *, note_column: str | None = None) -> str:
    return html_table(table)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _header(a: CampaignAnalysis) -> list[str]:
    counts = run_counts(a)
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
    rows = [
        ("campaign", f"{a.campaign_id} — plan {a.plan_source}, order {a.order}"),
        ("status", a.status),
        ("board", f"{a.board_label}" + (f" — {'; '.join(str(b) for b in board_bits)}" if board_bits else "")),
        ("boardlab", a.boardlab_version),
        ("when", f"{fmt_time(a.started_unix_s)} → {fmt_time(a.finished_unix_s)} ({fmt_duration(duration)})"),
        (
            "runs",
            f"{counts['runs']} stored: {counts['valid']} valid, {counts['invalid']} invalid, "
            f"{counts['failed']} failed; {reruns} re-runs",
        ),
        (
            "cells",
            f"{_count(len(a.cells), 'cell')}, {_count(len(a.conditions), 'condition')}, "
            f"{_count(len(a.comparisons), 'comparison')}",
        ),
        ("monitor cost", monitor),
    ]
    out = [f"<h1>boardlab report: {esc(a.name)}</h1>", '<dl class="meta">']
    out += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows]
    out.append("</dl>")
    if a.status != "complete":
        out.append(
            f'<p class="banner">This campaign is <b>{esc(a.status)}</b>: the report covers the '
            f"{counts['runs']} runs stored so far.</p>"
        )
    return out


def _verdicts(a: CampaignAnalysis) -> list[str]:
    everything = tuple(a.comparisons) + tuple(a.tail_comparisons)
    if not everything:
        return []
    rank = {"slowdown": 0, "speedup": 1, "inconclusive": 2, "no_change": 3, "insufficient": 4}
    ordered = sorted(
        everything, key=lambda ca: rank.get(ca.comparison.verdict.kind, 5) if ca.comparison else 6
    )
    counts: dict[str, int] = {}
    for ca in everything:
        kind = ca.comparison.verdict.kind if ca.comparison else "no verdict"
        counts[kind] = counts.get(kind, 0) + 1
    tally = ", ".join(
        f"{n} {k.replace('_', ' ')}" for k, n in sorted(counts.items(), key=lambda kv: rank.get(kv[0], 5))
    )
    confounded = sum(1 for ca in a.comparisons if ca.comparison and ca.comparison.verdict.confounded)
    out = [
        "<h2>Verdicts</h2>",
        f"<p>{len(everything)} comparisons: {esc(tally)}"
        + (f"; {confounded} confounded ⚠" if confounded else "")
        + ".</p>",
        '<div class="scroll"><table class="verdicts"><thead><tr><th>verdict</th><th>workload</th>'
        "<th>condition vs baseline</th><th>cost ratio [×]</th><th>90% decision interval [×]</th>"
        "<th>95% CI (shown, not decided on) [×]</th><th>delta</th><th>p adjusted</th></tr></thead>"
        "<tbody>",
    ]
    for ca in ordered:
        c = ca.comparison
        what = f"{ca.condition} vs {ca.baseline}"
        if c is None:
            out.append(
                f'<tr class="v-none"><td class="verdict">no verdict</td><td>{esc(ca.label)}</td>'
                f'<td>{esc(what)}</td><td colspan="5">{esc(ca.reason)}</td></tr>'
            )
            continue
        ci = c.cost_ratio_ci
        di = c.decision_ci
        klass = f"v-{c.verdict.kind}" + (" confounded" if c.verdict.confounded else "")
        text = verdict_text(c.verdict.kind, c.verdict.confounded) + (" (unstable)" if ca.unstable else "")
        metric = f" [{ca.metric}]" if "p99" in ca.metric else ""
        out.append(
            f'<tr class="{klass}"><td class="verdict">{esc(text)}</td>'
            f"<td>{esc(ca.label + metric)}</td><td>{esc(what)}</td>"
            f'<td class="num">{esc(fmt_ratio(c.cost_ratio))}</td>'
            f'<td class="num"><b>{esc(fmt_interval(di.low, di.high, sig=3) if di else "–")}</b></td>'
            f'<td class="num">{esc(fmt_interval(ci.low, ci.high, sig=3) if ci else "–")}</td>'
            f'<td class="num">{esc(f"{c.delta:.1%}")}</td>'
            f'<td class="num">{esc(fmt_p(c.p_adjusted))}</td></tr>'
        )
    out.append("</tbody></table></div>")
    from boardlab.analysis.verdicts import method_note

    out.append(
        f'<p class="small">{esc(method_note(a))} ⚠ marks arms that ran at a different frequency or '
        "temperature (see the comparison table for why); (unstable) marks a workload whose A/A control "
        "failed (see below).</p>"
    )
    return out


def _environment(a: CampaignAnalysis) -> list[str]:
    out = ["<h2>Environment</h2>"]
    checks = [c for c in a.environment.get("checks") or [] if isinstance(c, dict)]
    bad = [c for c in checks if c.get("status") != "OK"]
    if bad:
        out.append(
            "<table><thead><tr><th>status</th><th>check</th><th>finding</th><th>fix</th></tr></thead><tbody>"
        )
        for c in sorted(bad, key=lambda c: c.get("status") != "FAIL"):
            st = esc(c.get("status"))
            out.append(
                f'<tr><td><span class="status st-{st}">{st}</span></td><td>{esc(c.get("name"))}</td>'
                f"<td>{esc(c.get('detail'))}</td><td>{esc(c.get('fix') or '')}</td></tr>"
            )
        out.append("</tbody></table>")
    elif checks:
        out.append("<p>Every environment check passed.</p>")
    else:
        out.append("<p>No environment checks were recorded.</p>")
    ok = [c for c in checks if c.get("status") == "OK"]
    if ok:
        out.append(f"<details><summary>{_count(len(ok), 'check')} OK</summary><table><tbody>")
        out += [f"<tr><td>{esc(c.get('name'))}</td><td>{esc(c.get('detail'))}</td></tr>" for c in ok]
        out.append("</tbody></table></details>")
    caps = a.environment.get("capabilities") or {}
    missing = [(k, v) for k, v in caps.items() if isinstance(v, dict) and not v.get("supported")]
    if missing:
        out.append("<h3>Unsupported here</h3><table><tbody>")
        out += [
            f"<tr><td>{esc(k)}</td><td>{esc(v.get('reason') or 'no reason recorded')}</td></tr>"
            for k, v in missing
        ]
        out.append("</tbody></table>")
    skipped_w = a.environment.get("skipped_workloads") or {}
    if skipped_w:
        out.append("<h3>Workloads skipped on this board</h3><table><tbody>")
        out += [f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in skipped_w.items()]
        out.append("</tbody></table>")
    skipped = a.environment.get("skipped_conditions") or {}
    if skipped:
        out.append("<h3>Conditions skipped on this board</h3><table><tbody>")
        out += [f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in skipped.items()]
        out.append("</tbody></table>")
    return out


def _aa(a: CampaignAnalysis) -> list[str]:
    from boardlab.analysis.verdicts import aa_note, aa_summary, aa_table

    out = ["<h2>A/A control</h2>", f"<p>{esc(aa_summary(a))}</p>"]
    t = aa_table(a)
    if t.rows:
        out.append(_table_html(t, note_column="status"))
    out.append(f'<p class="small">{esc(aa_note(a))}</p>')
    return out


def _box_label(cell: CellAnalysis, varying: Sequence[str], multi_condition: bool) -> str:
    params = ", ".join(f"{k}={cell.params.get(k)}" for k in varying)
    if multi_condition or not params:
        return f"{params} @ {cell.condition}" if params else cell.condition
    return params


def _varying_params(cells: Sequence[CellAnalysis]) -> list[str]:
    keys: list[str] = []
    for c in cells:
        for k in c.params:
            if k not in keys:
                keys.append(k)
    return [k for k in keys if len({json.dumps(c.params.get(k), sort_keys=True) for c in cells}) > 1]


def _boxplots(a: CampaignAnalysis) -> list[str]:
    groups: dict[tuple[str, str], list[CellAnalysis]] = {}
    for c in a.cells:
        groups.setdefault((c.workload, c.metric), []).append(c)
    if not groups:
        return []
    shown = a.shown_by_studies
    out = [
        "<h2>Run values per workload</h2>",
        '<p class="small">One row per condition or parameter value; every run is a dot (hollow: invalid, '
        "not counted), box = quartiles, thick line = median, whiskers = 1.5 IQR.</p>",
    ]
    for i, ((workload, metric), cells) in enumerate(groups.items()):
        where = next((shown[c.cell_id] for c in cells if c.cell_id in shown), None)
        if where is not None and all(c.cell_id in shown for c in cells):
            out.append(f'<p class="small">{esc(workload)}: {len(cells)} cells, shown {esc(where)}.</p>')
            continue
        if len(cells) > MAX_BOXES_PER_PLOT:
            out.append(
                f"<h3>{esc(workload)}</h3><p>{len(cells)} cells: see the curves and the cell table.</p>"
            )
            continue
        varying = _varying_params(cells)
        multi = len({c.condition for c in cells}) > 1
        boxes = []
        for c in cells:
            excluded = tuple(r.value for r in c.runs if r.value is not None and not r.valid)
            boxes.append(
                svg.Box(_box_label(c, varying, multi), c.values, excluded, note=f"n={len(c.values)}")
            )
        unit = cells[0].unit
        direction = "higher is better" if cells[0].higher_is_better else "lower is better"
        fixed = {k: v for k, v in cells[0].params.items() if k not in varying}
        title = f"{workload}" + (f" ({params_text(fixed)})" if fixed else "") + f": {metric}, {direction}"
        out.append(svg.boxplot(boxes, title=title, unit=f"{metric} [{unit}]", seed=i))
    return out


def _heatmap_position(ca) -> tuple[str, str]:
    """(row, column): the workload without the compared parameter, and the condition or compared value."""
    for k, v in ca.params.items():
        tag = f"{k}={v}"
        if ca.condition == tag or ca.condition.startswith(tag + " @"):
            rest = {p: q for p, q in ca.params.items() if p != k}
            return (f"{ca.workload} ({params_text(rest)})" if rest else ca.workload), ca.condition
    return ca.label, ca.condition


def _heatmap(a: CampaignAnalysis) -> list[str]:
    if not a.comparisons:
        return []
    rows: list[str] = []
    cols: list[str] = []
    cells: dict[tuple[int, int], svg.HeatCell] = {}
    for ca in a.comparisons:
        r, c = _heatmap_position(ca)
        if r not in rows:
            rows.append(r)
        if c not in cols:
            cols.append(c)
        comp = ca.comparison
        key = (rows.index(r), cols.index(c))
        if comp is None:
            cells[key] = svg.HeatCell(None, None, tooltip=f"no comparison: {ca.reason}")
            continue
        ci = comp.cost_ratio_ci
        tip = (
            f"{ca.label}: {ca.condition} vs {ca.baseline}; cost ratio {svg.fmt_num(comp.cost_ratio, 4)}"
            + (f" [{svg.fmt_num(ci.low, 4)}, {svg.fmt_num(ci.high, 4)}]" if ci else "")
            + f"; adjusted p {fmt_p(comp.p_adjusted)}; {comp.verdict.reasons[0] if comp.verdict.reasons else ''}"
        )
        cells[key] = svg.HeatCell(comp.cost_ratio, comp.verdict.kind, comp.verdict.confounded, tip)
    return [
        "<h2>Slowdown heatmap</h2>",
        svg.heatmap(rows, cols, cells, title="Cost ratio against the baseline (workload × condition)"),
    ]


def _drift(a: CampaignAnalysis) -> list[str]:
    checked = [c for c in a.cells if c.summary is not None and c.summary.drift is not None]
    if not checked:
        return []
    checked.sort(key=lambda c: (not c.summary.drift.flagged, c.summary.drift.p_value))
    flagged = sum(1 for c in checked if c.summary.drift.flagged)
    shown = checked[: max(MAX_DRIFT_PLOTS, flagged)]
    out = [
        "<h2>Run-order drift</h2>",
        f'<p class="small">Each cell\'s run values against their position in the campaign (Spearman ρ, '
        f"flagged at p &lt; {checked[0].summary.drift.alpha:g}, red frame). {flagged} of {len(checked)} cells "
        "flagged"
        + (f"; the {len(shown)} lowest p-values shown" if len(shown) < len(checked) else "")
        + ".</p>",
        '<div class="multiples">',
    ]
    for c in shown:
        d = c.summary.drift
        div, unit = display_unit(c.unit, c.summary.median)
        valid = [(float(r.seq), r.value / div) for r in c.runs if r.valid and r.value is not None]
        invalid = [(float(r.seq), r.value / div) for r in c.runs if not r.valid and r.value is not None]
        lines = [svg.Line("valid runs", valid, color=1 if d.flagged else 0)]
        if invalid:
            lines.append(svg.Line("invalid runs", [(x, y) for x, y in invalid], color=7))
        flag = "  DRIFT" if d.flagged else ""
        # Small multiples: parameter values without their names, so the title fits 272 px.
        short = f"{c.workload} ({', '.join(str(v) for v in c.params.values())})" if c.params else c.workload
        out.append(
            svg.line_plot(
                lines,
                title=short,
                subtitle=f"ρ = {d.rho:+.2f}, p = {fmt_p(d.p_value)}{flag} · {c.condition}",
                x_label="run sequence in the campaign",
                y_label=unit,
                width=272,
                height=190,
                legend=False,
                frame="#b2182b" if d.flagged else "#dddddd",
                title_size=11,
            )
        )
    out.append("</div>")
    return out


def _series_lines(series: Series, sources: Iterable[str], scale: float, time_div: float) -> list[svg.Line]:
    lines = []
    for source in sources:
        pts = [(t / time_div, v / scale) for t, v in series[source] if v is not None]
        lines.append(svg.Line(source, with_gaps(svg.downsample(pts, MAX_SERIES_POINTS)), markers=False))
    return lines


def _monitor(series: Series | None) -> list[str]:
    if not series:
        return []
    times = [t for pts in series.values() for t, _ in pts]
    span = max(times) - min(times) if times else 0
    time_div, time_unit = (60.0, "min") if span > 600 else (1.0, "s")
    x_label = f"time since the first run started [{time_unit}]"

    def pick(pred) -> list[str]:
        return sorted((s for s in series if pred(s)), key=lambda s: (len(s), s))

    groups = [
        (
            "CPU load",
            pick(lambda s: s == "worker.cpu_pct" or (s.startswith("cpu") and s.endswith(".busy_pct"))),
            1.0,
            "CPU [%]",
        ),
        (
            "CPU frequency",
            pick(lambda s: s.startswith("freq.") and s.endswith("_khz")),
            1000.0,
            "frequency [MHz]",
        ),
        (
            "Temperature",
            pick(lambda s: s.startswith("temp.") and s.endswith("_mc")),
            1000.0,
            "temperature [°C]",
        ),
        ("Worker memory", pick(lambda s: s == "worker.rss_kib"), 1024.0, "resident set [MiB]"),
    ]
    out = [
        "<h2>Monitor</h2>",
        '<p class="small">Samples of every run on one time axis (runs placed at their start times; gaps are '
        "gates and set-up between runs). worker.cpu_pct is the worker's own CPU use; cpuN.busy_pct the load "
        "of each CPU.</p>",
    ]
    for title, sources, scale, y_label in groups:
        if not sources:
            continue
        out.append(
            svg.line_plot(
                _series_lines(series, sources, scale, time_div),
                title=title,
                x_label=x_label,
                y_label=y_label,
                y_zero=title == "CPU load",
                height=260,
            )
        )
    return out


def _tables(a: CampaignAnalysis) -> list[str]:
    out = [
        "<h2>Cells</h2>",
        '<p class="small">Per cell, over its valid runs (one value per run: the median of its iterations). '
        "Values in the unit of the row. CI: 95% distribution-free order-statistic CI of the median, and a "
        "percentile bootstrap CI resampling runs. Outliers beyond Tukey's fences are counted, never dropped. "
        "Red rows: drift with run order.</p>",
        _table_html(cell_table(a), note_column="warnings"),
    ]
    if a.comparisons:
        family = next((ca.comparison.family_size for ca in a.comparisons if ca.comparison), 0)
        out += [
            "<h2>Comparisons</h2>",
            f'<p class="small">Ratio = median(condition) / median(baseline) with a 95% bootstrap CI (shown) and '
            "the 90% decision interval of the cost ratio (decided on); rank test: Mann-Whitney U (Wilcoxon "
            f"signed-rank for ABBA blocks; a cluster bootstrap for pooled tails); p adjusted by {a.family_text}"
            f" ({family} comparisons).</p>",
            _table_html(comparison_table(a), note_column="why / confounders"),
        ]
    return out


def _footer(a: CampaignAnalysis) -> list[str]:
    from boardlab.analysis.verdicts import build_note

    note = build_note(a)
    return ([f'<p class="small">{esc(note)}.</p>'] if note else []) + [
        "<h2>Plan</h2>",
        f"<details><summary>plan as stored ({esc(a.plan_source)})</summary><pre>{esc(a.plan_text)}</pre></details>",
        f'<p class="small">boardlab {esc(a.boardlab_version)}; method: docs/method.md in the boardlab repository (one run = one fresh worker '
        "process; iterations are never pooled).</p>",
    ]


def render_html(analysis: CampaignAnalysis, series: Series | None = None) -> str:
    """The whole report as one HTML document. `series` (from `campaign_series`) adds the monitor plots."""
    a = analysis
    parts: list[str] = []
    for section in (
        _header(a),
        _verdicts(a),
        _environment(a),
        _aa(a),
        _boxplots(a),
        _heatmap(a),
        html_sections(a.study_sections()),
        _drift(a),
        _monitor(series),
        _tables(a),
        _footer(a),
    ):
        parts.extend(section)
    body = "\n".join(parts)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>boardlab report: {esc(a.name)}</title><style>{CSS}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )
