"""`governor simulate`: the policies x traces comparison of the governor simulator as one document (heatmaps
of run time and EDP relative to ondemand, and the table), laid out by the report's renderers: a
self-contained HTML page for `--html`, the text the command prints."""

from __future__ import annotations

from boardlab.analysis import document as doc
from boardlab.analysis.document import HeatCell
from boardlab.analysis.format import fmt_spec

COLUMNS = (
    doc.Column("trace"),
    doc.Column("policy"),
    doc.Column("time_s", numeric=True),
    doc.Column("energy_j", numeric=True),
    doc.Column("edp_j_s", numeric=True),
    doc.Column("time / ondemand", numeric=True),
    doc.Column("EDP / ondemand", numeric=True),
    doc.Column("verdict"),
)


def _heatmap(rows: list[dict], traces: list[str], policies: list[str], key: str, what: str) -> doc.Figure:
    """Traces x policies colored by one ratio to ondemand; an unsupported policy's cell says why."""
    cells = {}
    for i, t in enumerate(traces):
        for j, p in enumerate(policies):
            r = next((x for x in rows if x["trace"] == t and x["policy"] == p), None)
            ratio = r.get(key) if r else None
            tip = (
                r.get("unsupported")
                if r and "unsupported" in r
                else (f"{what} x{ratio:.3f}" if ratio else "")
            )
            cells[(i, j)] = HeatCell(ratio, None, False, tip or "")
    return doc.Figure(
        doc.HeatmapSpec(
            rows=traces,
            cols=policies,
            cells=cells,
            title=f"{what} relative to ondemand",
            width=1000,
            limit=2.0,
        )
    )


def _row(r: dict) -> tuple[str, ...]:
    if "unsupported" in r:
        return (r["trace"], r["policy"], "", "", "", "", "", "unsupported: " + r["unsupported"])
    return (r["trace"], r["policy"], f"{r['time_s']:.3f}", f"{r['energy_j']:.3f}", f"{r['edp_j_s']:.4f}",
            fmt_spec(r.get("time_ratio_vs_ondemand"), ".3f"), fmt_spec(r.get("edp_ratio_vs_ondemand"), ".3f"),
            r.get("verdict", ""))  # fmt: skip


def simulation_document(res: dict) -> doc.Document:
    """The comparison `governor.evaluate.compare` returned (with the anti-snoop rule the command used)."""
    rows = res["rows"]
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    prose = doc.Prose(
        f"{res['source']}; daemon sampling {res['sampling_ms']:g} ms; anti-snoop rule: "
        f"{res.get('anti_snoop_rule', '-')}. Ratios are against the in-kernel ondemand governor of the same "
        "trace (< 1 is better); energy is the OPP tables' Energy Model plus the simulator's leakage term, "
        "EDP = energy x run time.",
        small=True,
    )
    # the model's known limit, said where its figures are read: docs/governor.md documents it with the figures
    disagreement = doc.Prose(
        "Where the model disagrees with the study: for memory-bound work on the big cluster it ranks "
        "performance above anti-snoop on EDP, the study found the opposite; the model leaves out what an "
        'idle cluster held at its top OPP costs. See docs/governor.md, "Where the model disagrees with the '
        'study", in the boardlab repository.',
        small=True,
    )
    body = doc.section(
        "",
        prose,
        disagreement,
        _heatmap(rows, traces, policies, "time_ratio_vs_ondemand", "run time"),
        _heatmap(rows, traces, policies, "edp_ratio_vs_ondemand", "EDP"),
        doc.Table(COLUMNS, tuple(_row(r) for r in rows)),
    )
    return doc.Document(f"Governor policies on the simulator: {res['soc']}", (body,))


def simulation_html(res: dict) -> str:
    """`governor simulate --html`: the document as one self-contained page."""
    from boardlab.report.html import page
    from boardlab.report.render import render_document

    return page(
        f"boardlab governor simulate: {res['soc']}", render_document(simulation_document(res), "html")
    )


def simulation_text(res: dict) -> str:
    """What `governor simulate` prints: the document's text (the table, no heatmaps)."""
    from boardlab.report.render import render_document

    return render_document(simulation_document(res), "text")
