"""`governor simulate --html`: the policies x traces comparison of the governor simulator as one
self-contained page (heatmaps of run time and EDP relative to ondemand, and the table)."""

from __future__ import annotations

from html import escape

from boardlab.analysis.document import HeatCell
from boardlab.analysis.format import fmt_spec


def simulation_html(res: dict) -> str:
    """`governor simulate --html`: the policies x traces comparison as one self-contained page: run time and
    EDP relative to ondemand as heatmaps, and the table of time, energy and EDP."""
    from boardlab.report.html import CSS
    from boardlab.report.plot import heatmap

    rows = res["rows"]
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    body = [
        f"<h1>Governor policies on the simulator: {escape(res['soc'])}</h1>",
        f'<p class="small">{escape(res["source"])}; daemon sampling {res["sampling_ms"]:g} ms; anti-snoop '
        f"rule: {escape(str(res.get('anti_snoop_rule', '-')))}. Ratios are against the in-kernel ondemand "
        "governor of the same trace (&lt; 1 is better); energy is the OPP tables' Energy Model plus the "
        "simulator's leakage term, EDP = energy x run time.</p>",
    ]
    for key, what in (("time_ratio_vs_ondemand", "run time"), ("edp_ratio_vs_ondemand", "EDP")):
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
        body.append(
            heatmap(traces, policies, cells, title=f"{what} relative to ondemand", width=1000, limit=2.0)
        )
    head = [
        "trace",
        "policy",
        "time_s",
        "energy_j",
        "edp_j_s",
        "time / ondemand",
        "EDP / ondemand",
        "verdict",
    ]
    body.append("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>")
    for r in rows:
        if "unsupported" in r:
            cols = [r["trace"], r["policy"], "unsupported: " + r["unsupported"], "", "", "", "", ""]
        else:
            cols = [r["trace"], r["policy"], f"{r['time_s']:.3f}", f"{r['energy_j']:.3f}", f"{r['edp_j_s']:.4f}",
                    fmt_spec(r.get("time_ratio_vs_ondemand"), ".3f"), fmt_spec(r.get("edp_ratio_vs_ondemand"), ".3f"),
                    r.get("verdict", "")]  # fmt: skip
        body.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cols) + "</tr>")
    body.append("</table>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>boardlab governor simulate: {escape(res['soc'])}</title><style>{CSS}</style></head>\n"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
