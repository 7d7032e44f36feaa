"""The energy section of every report: sources, idle power, per-cell energy / EDP / efficiency with
bootstrap CIs over runs, power traces per condition and energy and EDP boxplots.

`energy_study` reads the store once (called from analysis.analyze); `energy_html`, `energy_markdown` and
`energy_text` render it. A campaign without a power source gets one line saying why, never zeros.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from boardlab.energy import integrate
from boardlab.energy.efficiency import FIGURES, Efficiency, Estimate, cell_estimates, efficiency_kind
from boardlab.energy.results import SourceRow, campaign_energy
from boardlab.report.svg import fmt_num

MAX_TRACES = 8  # lines per power-trace plot


@dataclass(frozen=True)
class EnergyCell:
    cell_id: int
    label: str
    condition: str
    baseline: str | None  # the condition this cell is compared with
    unit: str
    efficiency: Efficiency
    estimates: dict[str, Estimate | None]
    energies_j: tuple[float, ...]  # each valid run's energy, in run order
    edps_js: tuple[float, ...]
    quantization_j: float  # the largest bound of its runs
    n_runs: int
    warnings: tuple[str, ...]  # distinct, with how many runs gave each


@dataclass(frozen=True)
class EnergyStudy:
    reason: str | None  # "unsupported: ..." when nothing was measured
    primary: str | None
    sources: tuple[SourceRow, ...]
    idle: tuple[tuple[str, int, float], ...]  # (source, idle windows, median idle power W)
    cells: tuple[EnergyCell, ...] = ()
    traces: dict[str, list[tuple[str, list[tuple[float, float]]]]] = field(default_factory=dict)
    agreement: tuple[tuple[str, dict[str, float], float], ...] = ()  # (cell, source -> median J, spread)
    # (condition, baseline, workloads, geometric mean of energy ratios, of EDP ratios): per governor, say
    by_condition: tuple[tuple[str, str, int, float, float], ...] = ()


def energy_study(store, campaign_id: int, cells) -> EnergyStudy:
    ce = campaign_energy(store, campaign_id)
    idle = tuple(
        (src, len(ws), statistics.median(w.power_w for w in ws)) for src, ws in sorted(ce.idle.items()) if ws
    )
    study = EnergyStudy(ce.reason, ce.primary, ce.sources, idle)
    if ce.primary is None:
        return study
    out, traces, agree = [], {}, []
    for i, cell in enumerate(cells):
        valid = [r for r in cell.runs if r.valid and ce.run(r.run_id) is not None]
        if not valid:
            continue
        rows = [ce.run(r.run_id) for r in valid]
        figs = [r.figures for r in rows]
        warns: dict[str, tuple[int, str]] = {}  # kind -> (runs, first message)
        for r in rows:
            for w in r.warnings:
                kind = "short" if "update intervals" in w else "aliased" if "aliased" in w else w
                n, first = warns.get(kind, (0, w))
                warns[kind] = (n + 1, first)
        out.append(
            EnergyCell(
                cell_id=cell.cell_id,
                label=cell.label,
                condition=cell.condition,
                baseline=cell.baseline,
                unit=cell.unit,
                efficiency=efficiency_kind(cell.unit, cell.higher_is_better),
                estimates=cell_estimates(figs, seed=1000 * i),
                energies_j=tuple(f.energy_j for f in figs),
                edps_js=tuple(f.edp_js for f in figs),
                quantization_j=max(r.quantization_j for r in rows),
                n_runs=len(rows),
                warnings=tuple(f"{n} of {len(rows)} runs, e.g. {w}" for n, w in warns.values()),
            )
        )
        # the power trace of the cell's median-energy run
        mid = sorted(zip(figs, valid, strict=True), key=lambda p: p[0].energy_j)[len(figs) // 2][1]
        src = f"energy.{ce.primary}.power_w"
        pts = [(row["t_ns"] / 1e9, row["value"]) for row in store.series(mid.run_id) if row["source"] == src]
        if pts and len(traces.setdefault(cell.condition, [])) < MAX_TRACES:
            traces[cell.condition].append((cell.label, pts))
        others = {s.name for s in ce.supported}
        if len(others) > 1:
            per = {}
            for name in sorted(others):
                vals = [ce.run(r.run_id, name).energy_j for r in valid if ce.run(r.run_id, name) is not None]
                if vals:
                    per[name] = statistics.median(vals)
            scopes = {s.name: s.spec.get("scope") for s in ce.supported}
            same = [n for n in per if scopes.get(n) == scopes.get(ce.primary)]
            spread = integrate.agreement({n: per[n] for n in same})
            if len(same) > 1 and spread is not None:
                agree.append((f"{cell.label} @ {cell.condition}", {n: per[n] for n in same}, spread))
    return EnergyStudy(
        ce.reason, ce.primary, ce.sources, idle, tuple(out), traces, tuple(agree), _by_condition(out)
    )


def _by_condition(cells: list[EnergyCell]) -> tuple[tuple[str, str, int, float, float], ...]:
    """Energy and EDP of each condition against its baseline: per workload the ratio of medians, then the
    geometric mean over workloads (the andesite study's governors side by side)."""
    med = {(c.label, c.condition): c for c in cells}
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for c in cells:
        base = med.get((c.label, c.baseline)) if c.baseline else None
        if base is None:
            continue
        e, b = c.estimates["energy_j"], base.estimates["energy_j"]
        d, bd = c.estimates["edp_js"], base.estimates["edp_js"]
        if e and b and d and bd and min(e.median, b.median, d.median, bd.median) > 0:
            groups.setdefault((c.condition, c.baseline), []).append(
                (e.median / b.median, d.median / bd.median)
            )
    out = []
    for (cond, base), ratios in groups.items():
        ge = math.exp(statistics.fmean(math.log(r) for r, _ in ratios))
        gd = math.exp(statistics.fmean(math.log(r) for _, r in ratios))
        out.append((cond, base, len(ratios), ge, gd))
    return tuple(out)


def condition_rows(study: EnergyStudy) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    headers = ("condition", "against", "workloads", "energy ratio", "EDP ratio")
    rows = [(c, b, str(n), f"{fmt_num(e, 3)}x", f"{fmt_num(d, 3)}x") for c, b, n, e, d in study.by_condition]
    return headers, rows


# ---- shared formatting ----


def _est(e: Estimate | None, sig: int = 4) -> str:
    return "–" if e is None else fmt_num(e.median, sig)


def _ci(e: Estimate | None) -> str:
    if e is None or e.ci_low is None:
        return "–"
    return f"[{fmt_num(e.ci_low, 3)}, {fmt_num(e.ci_high, 3)}]"


def efficiency_rows(study: EnergyStudy) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    headers = (
        "cell",
        "n",
        "energy_j",
        "95% CI",
        "power_avg_w",
        "power_idle_w",
        "energy_dynamic_j",
        "95% CI",
        "edp_js",
        "95% CI",
        "ed2p_js2",
        "efficiency (total W)",
        "efficiency (dynamic W)",
        "unit",
        "± quantization_j",
    )
    rows = []
    for c in study.cells:
        e = c.estimates
        rows.append(
            (
                f"{c.label} @ {c.condition}",
                str(c.n_runs),
                _est(e["energy_j"]),
                _ci(e["energy_j"]),
                _est(e["power_avg_w"]),
                _est(e["power_idle_w"]),
                _est(e["energy_dynamic_j"]),
                _ci(e["energy_dynamic_j"]),
                _est(e["edp_js"]),
                _ci(e["edp_js"]),
                _est(e["ed2p_js2"]),
                f"{_est(e['efficiency_total'])} {_ci(e['efficiency_total'])}",
                f"{_est(e['efficiency_dynamic'])} {_ci(e['efficiency_dynamic'])}",
                c.efficiency.unit,
                fmt_num(c.quantization_j, 2),
            )
        )
    return headers, rows


def source_rows(study: EnergyStudy) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    headers = ("source", "kind", "scope", "unit", "update_interval_s", "resolution", "measured", "note")
    rows = []
    for s in study.sources:
        if not s.supported:
            rows.append((s.name, "–", "–", "–", "–", "–", "–", s.reason or ""))
            continue
        sp = s.spec
        res = (
            "–"
            if sp.get("resolution") is None
            else f"{fmt_num(sp['resolution'], 3)} {sp.get('resolution_unit')}"
        )
        note = "; ".join(
            x for x in (("primary" if s.primary else ""), sp.get("label") or "", sp.get("note") or "") if x
        )
        rows.append(
            (
                s.name,
                sp.get("kind", ""),
                sp.get("scope", ""),
                sp.get("unit", ""),
                "unknown" if sp.get("update_interval_s") is None else fmt_num(sp["update_interval_s"], 3),
                res,
                "measured" if sp.get("measured") else "estimated",
                note,
            )
        )
    return headers, rows


METHOD = (
    "Energy per run: the primary source's counter growth, or the trapezoid of its power samples, clipped to "
    "the worker's exact start and end with interpolation at both edges; ± quantization = ½ update interval × "
    "peak power at each edge. Idle power: gated idle windows before and after each block of runs, "
    "interpolated to each run; dynamic energy = energy − idle power × run time. EDP = energy × run time, "
    "ED²P = energy × run time². Efficiency from the metric's unit: GFLOPS/W for FLOP rates, nJ/bit for data "
    "rates, J per operation for other rates, perf/W otherwise, J/run for lower-is-better metrics; with total "
    "and with dynamic (above idle) watts. Medians over valid runs, 95% bootstrap CIs resampling whole runs."
)


BY_CONDITION = (
    "Energy and EDP of each condition against its baseline: the ratio of the cells' medians per workload, "
    "geometric mean over workloads (below 1 = less energy)."
)


def _idle_text(study: EnergyStudy) -> str:
    return "; ".join(f"{src}: {fmt_num(w, 4)} W (median of {n} idle windows)" for src, n, w in study.idle)


# ---- HTML ----


def energy_html(a) -> list[str]:
    import html as _h

    from boardlab.report import svg

    study: EnergyStudy | None = getattr(a, "energy", None)
    if study is None:
        return []
    out = ["<h2>Energy</h2>"]
    if study.reason:
        out.append(f"<p><b>Energy: {_h.escape(study.reason)}</b></p>")
    out += _html_table(*source_rows(study))
    if study.primary is None:
        return out
    out.append(f'<p class="small">{_h.escape(METHOD)}</p>')
    if study.idle:
        out.append(f"<p>Idle power: {_h.escape(_idle_text(study))}</p>")
    out.append("<h3>Energy, EDP and efficiency per cell</h3>")
    out += _html_table(*efficiency_rows(study))
    if study.by_condition:
        out.append(f'<h3>Per condition</h3><p class="small">{_h.escape(BY_CONDITION)}</p>')
        out += _html_table(*condition_rows(study))
    boxes_e = [svg.Box(f"{c.label} @ {c.condition}", c.energies_j, note=f"n={c.n_runs}") for c in study.cells]
    boxes_d = [svg.Box(f"{c.label} @ {c.condition}", c.edps_js, note=f"n={c.n_runs}") for c in study.cells]
    if boxes_e:
        out.append(svg.boxplot(boxes_e, title=f"Energy per run ({study.primary})", unit="J"))
        out.append(svg.boxplot(boxes_d, title="Energy-delay product per run", unit="J*s"))
    for cond, lines in study.traces.items():
        out.append(
            svg.line_plot(
                [svg.Line(label, pts, markers=False) for label, pts in lines],
                title=f"Power during a median run: {cond}",
                x_label="time since the worker started [s]",
                y_label=f"power [W] ({study.primary})",
                y_zero=True,
                height=260,
            )
        )
    if study.agreement:
        out.append("<h3>Agreement of sources of the same scope</h3>")
        out += _html_table(*agreement_rows(study))
    warns = [(f"{c.label} @ {c.condition}", w) for c in study.cells for w in c.warnings]
    if warns:
        out.append("<h3>Energy warnings</h3><ul>")
        out += [f"<li>{_h.escape(cell)}: {_h.escape(w)}</li>" for cell, w in warns]
        out.append("</ul>")
    return out


def agreement_rows(study: EnergyStudy) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    rows = [
        (cell, ", ".join(f"{n} {fmt_num(v, 4)} J" for n, v in per.items()), f"{spread * 100:.1f}%")
        for cell, per, spread in study.agreement
    ]
    return ("cell", "median energy per source", "spread"), rows


def _html_table(headers, rows) -> list[str]:
    import html as _h

    head = "".join(f"<th>{_h.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_h.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return [f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>']


# ---- Markdown and text ----


def _md_table(headers, rows) -> list[str]:
    def cell(v) -> str:
        return str(v).replace("|", "\\|")

    out = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return out


def energy_markdown(a) -> list[str]:
    study: EnergyStudy | None = getattr(a, "energy", None)
    if study is None:
        return []
    out = ["", "## Energy", ""]
    if study.reason:
        out += [f"**Energy: {study.reason}**", ""]
    out += _md_table(*source_rows(study))
    if study.primary is None:
        return out
    out += ["", METHOD, ""]
    if study.idle:
        out += [f"Idle power: {_idle_text(study)}", ""]
    out += _md_table(*efficiency_rows(study))
    if study.by_condition:
        out += ["", BY_CONDITION, ""] + _md_table(*condition_rows(study))
    if study.agreement:
        out += ["", "Agreement of sources of the same scope:", ""] + _md_table(*agreement_rows(study))
    warns = [f"- {c.label} @ {c.condition}: {w}" for c in study.cells for w in c.warnings]
    if warns:
        out += ["", "Energy warnings:", ""] + warns
    return out


def energy_text(a) -> list[str]:
    study: EnergyStudy | None = getattr(a, "energy", None)
    if study is None:
        return []
    if study.primary is None:
        return ["", f"energy: {study.reason}"]
    from boardlab.report.terminal import aligned

    out = [
        "",
        f"energy ({study.primary}): median over runs [95% bootstrap CI]; efficiency with total / dynamic W",
    ]
    if study.idle:
        out.append(f"idle power: {_idle_text(study)}")
    rows = []
    for c in study.cells:
        e = c.estimates
        rows.append(
            (
                f"{c.label} @ {c.condition}"[:52],
                str(c.n_runs),
                f"{_est(e['energy_j'])} {_ci(e['energy_j'])}",
                _est(e["power_avg_w"]),
                _est(e["power_idle_w"]),
                _est(e["energy_dynamic_j"]),
                _est(e["edp_js"]),
                f"{_est(e['efficiency_total'])} / {_est(e['efficiency_dynamic'])} {c.efficiency.unit}",
            )
        )
    out += aligned(
        ("cell", "n", "energy_j", "power_avg_w", "power_idle_w", "energy_dynamic_j", "edp_js", "efficiency"),
        rows,
        (False, True, True, True, True, True, True, False),
    )
    if study.by_condition:
        out.append("per condition: energy and EDP against the baseline (geometric mean over workloads)")
        out += aligned(*condition_rows(study), (False, False, True, True, True))
    n_warn = sum(len(c.warnings) for c in study.cells)
    if n_warn:
        out.append(f"{n_warn} energy warnings (short runs, aliasing): see the Markdown or HTML report")
    return out


__all__ = ["FIGURES", "EnergyStudy", "energy_html", "energy_markdown", "energy_study", "energy_text"]
