"""The energy study, in every report: sources, idle power, per-cell energy / EDP / efficiency with
bootstrap CIs over runs, power traces per condition and energy and EDP boxplots.

Applies to every campaign: one without a power source gets one line saying why, never zeros.
`energy_study` reads the store once; `sections` lays it out.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from boardlab.analysis import document as doc
from boardlab.analysis.format import Said, cell_label, fmt_num
from boardlab.analysis.runs import VALID
from boardlab.analysis.tables import varying_by_workload
from boardlab.energy import integrate
from boardlab.energy.efficiency import Efficiency, Estimate, cell_estimates, efficiency_kind
from boardlab.energy.results import SourceRow, campaign_energy

TITLE = "Energy"
TEXT_ONLY = frozenset(
    {"text"}
)  # blocks the text report alone shows (the rich formats have tables of their own)
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
    out: list[EnergyCell] = []
    traces: dict[str, list] = {}
    agree: list[tuple[str, dict[str, float], float]] = []
    varying = varying_by_workload(cells)  # a label names what tells the section's cells apart
    for i, cell in enumerate(cells):
        valid = [i for i in cell.runs.select(cell.runs.run_id, VALID) if ce.run(i) is not None]
        if not valid:
            continue
        rows = [run for i in valid if (run := ce.run(i)) is not None]  # every valid one has a row
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
                label=cell_label(cell.workload, cell.params, varying[cell.workload]),
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
        pts = [(row["t_ns"] / 1e9, row["value"]) for row in store.series(mid) if row["source"] == src]
        if pts and len(traces.setdefault(cell.condition, [])) < MAX_TRACES:
            traces[cell.condition].append((out[-1].label, pts))
        others = {s.name for s in ce.supported}
        if len(others) > 1:
            per = {}
            for name in sorted(others):
                vals = [run.energy_j for i in valid if (run := ce.run(i, name)) is not None]
                if vals:
                    per[name] = statistics.median(vals)
            scopes = {s.name: s.spec.get("scope") for s in ce.supported}
            same = [n for n in per if scopes.get(n) == scopes.get(ce.primary)]
            spread = integrate.agreement({n: per[n] for n in same})
            if len(same) > 1 and spread is not None:
                agree.append((f"{out[-1].label} @ {cell.condition_text}", {n: per[n] for n in same}, spread))
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
            groups.setdefault((c.condition, base.condition), []).append(
                (e.median / b.median, d.median / bd.median)
            )
    out = []
    for (cond, against), ratios in groups.items():
        ge = math.exp(statistics.fmean(math.log(r) for r, _ in ratios))
        gd = math.exp(statistics.fmean(math.log(r) for _, r in ratios))
        out.append((cond, against, len(ratios), ge, gd))
    return tuple(out)


def _cell_name(c: EnergyCell, said: Said) -> str:
    """A cell as the study's tables and plots name it: its label at its condition."""
    return f"{c.label} @ {said(c.condition)}"


def condition_rows(study: EnergyStudy, said: Said) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    headers = ("condition", "against", "workloads", "energy ratio", "EDP ratio")
    rows: list[tuple[str, ...]] = [
        (said(c), said(b), str(n), f"{fmt_num(e, 3)}x", f"{fmt_num(d, 3)}x")
        for c, b, n, e, d in study.by_condition
    ]
    return headers, rows


# ---- shared formatting ----


def _est(e: Estimate | None, sig: int = 4) -> str:
    return "–" if e is None else fmt_num(e.median, sig)


def _ci(e: Estimate | None) -> str:
    if e is None or e.ci_low is None:
        return "–"
    return f"[{fmt_num(e.ci_low, 3)}, {fmt_num(e.ci_high, 3)}]"


def efficiency_rows(study: EnergyStudy, said: Said) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
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
    rows: list[tuple[str, ...]] = []
    for c in study.cells:
        e = c.estimates
        rows.append(
            (
                _cell_name(c, said),
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
    rows: list[tuple[str, ...]] = []
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


def agreement_rows(study: EnergyStudy) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    rows: list[tuple[str, ...]] = [
        (cell, ", ".join(f"{n} {fmt_num(v, 4)} J" for n, v in per.items()), f"{spread * 100:.1f}%")
        for cell, per, spread in study.agreement
    ]
    return ("cell", "median energy per source", "spread"), rows


def _table(headers, rows, **kw) -> doc.Table:
    return doc.Table(tuple(doc.Column(h) for h in headers), tuple(tuple(r) for r in rows), **kw)


def applies(ctx) -> bool:
    return True


def analyze(ctx) -> EnergyStudy:
    return energy_study(ctx.store, ctx.campaign_id, ctx.cells)


def _text_table(study: EnergyStudy, said: Said) -> doc.Table:
    """The cells' energy figures as the text report shows them: one table, estimates with their CIs."""
    return doc.Table(
        tuple(
            doc.Column(h, numeric=n)
            for h, n in zip(
                ("cell", "n", "energy_j", "power_avg_w", "power_idle_w", "energy_dynamic_j", "edp_js"),
                (False, True, True, True, True, True, True),
                strict=True,
            )
        )
        + (doc.Column("efficiency"),),
        tuple(
            (
                _cell_name(c, said),
                str(c.n_runs),
                f"{_est(c.estimates['energy_j'])} {_ci(c.estimates['energy_j'])}",
                _est(c.estimates["power_avg_w"]),
                _est(c.estimates["power_idle_w"]),
                _est(c.estimates["energy_dynamic_j"]),
                _est(c.estimates["edp_js"]),
                f"{_est(c.estimates['efficiency_total'])} / {_est(c.estimates['efficiency_dynamic'])} "
                f"{c.efficiency.unit}",
            )
            for c in study.cells
        ),
        formats=TEXT_ONLY,
    )


def _condition_section(study: EnergyStudy, said: Said) -> doc.Section:
    """Energy and EDP of each condition against the baseline."""
    headers, rows = condition_rows(study, said)
    return doc.section(
        "Per condition",
        doc.Prose(BY_CONDITION, small=True, formats=doc.RICH),
        doc.Prose(
            "per condition: energy and EDP against the baseline (geometric mean over workloads)",
            formats=TEXT_ONLY,
        ),
        doc.Table(
            tuple(
                doc.Column(h, numeric=n)
                for h, n in zip(headers, (False, False, True, True, True), strict=True)
            ),
            tuple(rows),
        ),
        level=3,
    )


def _plots(study: EnergyStudy, said: Said) -> list[doc.Block]:
    """Energy and EDP per run as boxplots, and the power trace of a median run under each condition."""
    figures: list[doc.Block] = []
    if study.cells:
        figures += [
            doc.Figure(
                doc.BoxplotSpec(
                    boxes=[
                        doc.Box(_cell_name(c, said), c.energies_j, note=f"n={c.n_runs}") for c in study.cells
                    ],
                    title=f"Energy per run ({study.primary})",
                    unit="J",
                )
            ),
            doc.Figure(
                doc.BoxplotSpec(
                    boxes=[
                        doc.Box(_cell_name(c, said), c.edps_js, note=f"n={c.n_runs}") for c in study.cells
                    ],
                    title="Energy-delay product per run",
                    unit="J*s",
                )
            ),
        ]
    for cond, lines in study.traces.items():
        figures.append(
            doc.Figure(
                doc.LinePlotSpec(
                    lines=[doc.Line(label, pts, markers=False) for label, pts in lines],
                    title=f"Power during a median run: {said(cond)}",
                    x_label="time since the worker started [s]",
                    y_label=f"power [W] ({study.primary})",
                    y_zero=True,
                    height=260,
                )
            )
        )
    return figures


def sections(analysis, study: EnergyStudy) -> list[doc.Section]:
    said = analysis.condition_text
    head: list[doc.Block | None] = [
        doc.Prose(f"Energy: {study.reason}", strong=True, formats=doc.RICH) if study.reason else None,
    ]
    sources = _table(*source_rows(study), formats=doc.RICH)
    head.append(sources if sources.rows else None)  # no table of no sources: the reason above says why
    if study.primary is None:
        head.append(doc.Prose(f"energy: {study.reason}", formats=TEXT_ONLY))
        return [doc.section(TITLE, *head, anchor="energy")]
    idle = f"Idle power: {_idle_text(study)}" if study.idle else None
    head += [
        doc.Prose(METHOD, small=True, formats=doc.RICH),
        doc.Prose(idle, formats=doc.RICH) if idle else None,
        doc.Prose(
            f"energy ({study.primary}): median over runs [95% bootstrap CI]; efficiency with "
            "total / dynamic W",
            formats=TEXT_ONLY,
        ),
        doc.Prose(f"idle power: {_idle_text(study)}", formats=TEXT_ONLY) if study.idle else None,
        _text_table(study, said),
    ]
    out = [doc.section(TITLE, *head, anchor="energy")]
    out.append(
        doc.section(
            "Energy, EDP and efficiency per cell",
            _table(*efficiency_rows(study, said)),
            level=3,
            formats=doc.RICH,
        )
    )
    if study.by_condition:
        out.append(_condition_section(study, said))
    figures = _plots(study, said)
    if figures:
        out.append(doc.section("Energy and power plots", *figures, level=3, formats=doc.HTML))
    if study.agreement:
        out.append(
            doc.section(
                "Agreement of sources of the same scope",
                _table(*agreement_rows(study)),
                level=3,
                formats=doc.RICH,
            )
        )
    warns = [f"{_cell_name(c, said)}: {w}" for c in study.cells for w in c.warnings]
    if warns:
        out.append(doc.section("Energy warnings", doc.Items(tuple(warns)), level=3, formats=doc.RICH))
        out[0] = doc.Section(
            out[0].title,
            out[0].blocks
            + (
                doc.Prose(
                    f"{len(warns)} energy warnings (short runs, aliasing): see the Markdown or HTML report",
                    formats=TEXT_ONLY,
                ),
            ),
            anchor=out[0].anchor,
        )
    return out
