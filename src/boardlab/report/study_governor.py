"""The governor study's report section: the snoop sweep as heatmaps (this cluster's frequency x the other's,
one per pattern and size, colored by the slowdown against the other cluster at its maximum, marked where
the stored labels say slow), the stored decision tree, and the policies' time / energy / EDP side by side
(a governor-eval campaign). Collected from the store once (`collect`); rendered by html/markdown/terminal.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from html import escape

POLICY_KINDS = ("governor", "governor-daemon")
NO_ENERGY = (
    "energy unsupported in this campaign: no energy_j per run (the board has no power sensors boardlab reads, "
    "or energy was not measured); EDP needs it"
)


@dataclass(frozen=True)
class SweepMap:
    this_policy: str
    other_policy: str | None
    pattern: str
    size_bytes: int
    this_khz: tuple[int, ...]
    other_khz: tuple[int, ...]
    median_ns: dict  # (this_khz, other_khz) -> median ns/access over valid runs
    slow: dict  # (this_khz, other_khz) -> label from the stored labels, where there are labels

    def ratio(self, t: int, o: int) -> float | None:
        ref = self.median_ns.get((t, max(self.other_khz))) if self.other_khz else None
        v = self.median_ns.get((t, o))
        return None if ref is None or v is None else v / ref


@dataclass(frozen=True)
class PolicyRow:
    workload: str
    policy: str
    metric: str
    unit: str
    median: float | None
    energy_j: float | None
    edp_j_s: float | None  # median energy x median wall time of the runs


@dataclass(frozen=True)
class GovernorStudy:
    sweeps: tuple[SweepMap, ...]
    tree: dict | None
    labels: dict | None  # summary of the stored labels
    policies: tuple[PolicyRow, ...]
    energy_reason: str | None


def collect(store, campaign_id: int, cells) -> GovernorStudy | None:
    """None when the campaign is neither a snoop sweep nor a governor comparison."""
    from boardlab.governor import store_io

    maps: dict[tuple, dict] = {}
    for c in cells:
        parsed = store_io.parse_cell_name(c.condition)
        if c.workload != "mem.latency" or parsed is None or c.summary is None:
            continue
        this, tk, other, ok = parsed
        key = (this, other, c.params.get("pattern", "random"), int(c.params.get("size_bytes", 0)))
        maps.setdefault(key, {})[(tk, ok)] = c.summary.median
    labels = store_io.load_artifact(store, campaign_id, store_io.LABELS)
    slow: dict[tuple, bool] = {}
    for lab in (labels or {}).get("cells", ()):
        slow[(lab["this_policy"], lab["other_policy"], lab["pattern"], lab["size_bytes"], lab["this_khz"],
              lab["other_khz"])] = lab["label"] == "slow"  # fmt: skip
    sweeps = tuple(
        SweepMap(
            this,
            other,
            pattern,
            size,
            tuple(sorted({t for t, _ in m})),
            tuple(sorted({o for _, o in m if o is not None})),
            m,
            {
                (t, o): slow[(this, other, pattern, size, t, o)]
                for t, o in m
                if (this, other, pattern, size, t, o) in slow
            },
        )  # fmt: skip
        for (this, other, pattern, size), m in sorted(maps.items(), key=lambda kv: repr(kv[0]))
    )
    policies, energy_seen = _policies(store, campaign_id, cells)
    tree = store_io.load_artifact(store, campaign_id, store_io.TREE)
    if not sweeps and not policies and tree is None:
        return None
    summary = None
    if labels:
        n = [x for x in labels.get("cells", ()) if x.get("p_one_sided") is not None]
        summary = {"tests": len(n), "slow": sum(x["label"] == "slow" for x in n), "alpha": labels.get("alpha"),
                   "min_effect": labels.get("min_effect"), "correction": labels.get("correction")}  # fmt: skip
    return GovernorStudy(sweeps, tree, summary, policies, None if energy_seen or not policies else NO_ENERGY)


def _policies(store, campaign_id: int, cells) -> tuple[tuple[PolicyRow, ...], bool]:
    kinds = {r["condition"]: json.loads(r["condition_json"]).get("kind") for r in store.cells(campaign_id)}
    energy: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for r in store.runs(campaign_id):
        if kinds.get(r["condition"]) not in POLICY_KINDS or not r["valid"]:
            continue  # (sweep cells too are collected here, and left out below)
        m = {x["metric"]: x["median"] for x in store.run_metrics(r["id"])}
        if m.get("energy_j") is not None:
            energy.setdefault(r["cell_key"], []).append(float(m["energy_j"]))
        wall.setdefault(r["cell_key"], []).append(r["wall_ns"] / 1e9)
    from boardlab.governor.store_io import parse_cell_name

    rows = []
    for c in cells:
        if kinds.get(c.condition) not in POLICY_KINDS or parse_cell_name(c.condition) is not None:
            continue  # a sweep cell (fixed frequencies) is in the heatmaps, not among the policies
        e = statistics.median(energy[c.key]) if energy.get(c.key) else None
        t = statistics.median(wall[c.key]) if wall.get(c.key) else None
        rows.append(PolicyRow(c.label, c.condition, c.metric, c.unit, c.summary.median if c.summary else None, e,
                              e * t if e is not None and t is not None else None))  # fmt: skip
    return tuple(rows), bool(energy)


# ---- words shared by the renderers ---------------------------------------------------------------------------


def _mhz(khz: int | None) -> str:
    return "-" if khz is None else f"{khz / 1000:g}"


def _size(n: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def sweep_lines(s: SweepMap) -> str:
    ratios = [(r, t, o) for t in s.this_khz for o in s.other_khz if (r := s.ratio(t, o)) is not None]
    if not ratios:
        return f"{s.this_policy} {s.pattern} {_size(s.size_bytes)}: no cell with a summary"
    worst = max(ratios)
    n_slow = sum(s.slow.values())
    labelled = f"; {n_slow} of {len(s.slow)} cells labelled slow" if s.slow else ""
    return (
        f"{s.this_policy} {s.pattern} {_size(s.size_bytes)}: worst {100 * (worst[0] - 1):+.0f}% at "
        f"{s.this_policy} {_mhz(worst[1])} MHz with {s.other_policy} {_mhz(worst[2])} MHz "
        f"(vs {s.other_policy} at {_mhz(max(s.other_khz))} MHz){labelled}"
    )


def tree_lines(node: dict, pad: str = "") -> list[str]:
    if "leaf" in node:
        return [f"{pad}-> {node['leaf'].replace('_', ' ')}"]
    return ([f"{pad}if {node['feature']} <= {node['threshold_value']:g} ({node['unit']}):"]
            + tree_lines(node["le"], pad + "  ") + [f"{pad}else:"] + tree_lines(node["gt"], pad + "  "))  # fmt: skip


def _num(x: float | None, fmt: str = "{:.4g}") -> str:
    return "-" if x is None else fmt.format(x)


def policy_table(g: GovernorStudy) -> tuple[list[str], list[list[str]]]:
    head = ["workload", "policy", "median", "unit", "energy_j", "edp_j_s"]
    rows = [
        [r.workload, r.policy, _num(r.median), r.unit, _num(r.energy_j), _num(r.edp_j_s)] for r in g.policies
    ]
    return head, rows


def _tree_summary(g: GovernorStudy) -> list[str]:
    if g.tree is None:
        return []
    cv = g.tree.get("cross_validation") or {}
    acc = cv.get("accuracy")
    head = f"decision tree (depth {g.tree.get('depth')}), {cv.get('k')}-fold cross-validated accuracy " + (
        f"{100 * acc:.1f}%" if acc is not None else "-"
    )
    return [head, *tree_lines(g.tree["tree"], "  ")]


def _labels_summary(g: GovernorStudy) -> list[str]:
    if g.labels is None:
        return (
            ["no labels stored: run `boardlab governor label --db DB` for slow/not-slow marks"]
            if g.sweeps
            else []
        )
    s = g.labels
    return [f"labels: {s['slow']} of {s['tests']} cells slow (one-sided Welch t-test vs the other cluster at its "
            f"maximum, {s['correction']}-corrected alpha {s['alpha']}, minimum effect {100 * s['min_effect']:g}%)"]  # fmt: skip


# ---- renderers ------------------------------------------------------------------------------------------------


def text_lines(a) -> list[str]:
    g = getattr(a, "governor", None)
    if g is None:
        return []
    out = ["", "GOVERNOR STUDY"]
    out += [f"  {sweep_lines(s)}" for s in g.sweeps]
    out += [f"  {x}" for x in _labels_summary(g) + _tree_summary(g)]
    if g.policies:
        head, rows = policy_table(g)
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        out.append("  " + "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
        out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if g.energy_reason:
        out.append(f"  {g.energy_reason}")
    return out


def markdown_lines(a) -> list[str]:
    g = getattr(a, "governor", None)
    if g is None:
        return []
    out = ["", "## Governor study", ""]
    out += [f"- {sweep_lines(s)}" for s in g.sweeps]
    out += [f"- {x}" for x in _labels_summary(g)]
    tree = _tree_summary(g)
    if tree:
        out += ["", tree[0], "", "```", *[x.strip("\n") for x in tree[1:]], "```"]
    if g.policies:
        head, rows = policy_table(g)
        out += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    if g.energy_reason:
        out += ["", g.energy_reason]
    return out


def html_section(a) -> list[str]:
    from boardlab.report import svg

    g = getattr(a, "governor", None)
    if g is None:
        return []
    out = ["<h2>Governor study</h2>"]
    if g.sweeps:
        out.append(
            '<p class="small">The snoop sweep: median ns/access of mem.latency pinned to one cluster, at each '
            "frequency of that cluster (rows) x each of the other cluster (columns), as a ratio to the same row "
            "with the other cluster at its maximum; ▲ marks a cell labelled slow.</p>"
        )
        out += [f"<p>{escape(x)}</p>" for x in _labels_summary(g)]
    for s in g.sweeps:
        rows = [f"{s.this_policy} {_mhz(t)} MHz" for t in s.this_khz]
        cols = [f"{_mhz(o)}" for o in s.other_khz] or ["-"]
        cells = {}
        for i, t in enumerate(s.this_khz):
            for j, o in enumerate(s.other_khz or (None,)):
                r = s.ratio(t, o) if o is not None else None
                ns = s.median_ns.get((t, o))
                cells[(i, j)] = svg.HeatCell(
                    r, "slowdown" if s.slow.get((t, o)) else None, False,
                    f"{_num(ns)} ns/access" + (f", x{r:.3f}" if r is not None else ""),
                )  # fmt: skip
        title = f"{s.this_policy} {s.pattern} {_size(s.size_bytes)} (columns: {s.other_policy or '-'} MHz)"
        out.append(svg.heatmap(rows, cols, cells, title=title, limit=2.0))
    tree = _tree_summary(g)
    if tree:
        out += [f"<p>{escape(tree[0])}</p>", "<pre>" + escape("\n".join(tree[1:])) + "</pre>"]
    if g.policies:
        head, rows = policy_table(g)
        out.append("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows]
        out.append("</table>")
    if g.energy_reason:
        out.append(f'<p class="small">{escape(g.energy_reason)}</p>')
    return out


def simulation_html(res: dict) -> str:
    """`governor simulate --html`: the policies x traces comparison as one self-contained page: run time and
    EDP relative to ondemand as heatmaps, and the table of time, energy and EDP."""
    from boardlab.report import svg
    from boardlab.report.html import CSS

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
                cells[(i, j)] = svg.HeatCell(ratio, None, False, tip or "")
        body.append(
            svg.heatmap(traces, policies, cells, title=f"{what} relative to ondemand", width=1000, limit=2.0)
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
                    _num(r.get("time_ratio_vs_ondemand"), "{:.3f}"), _num(r.get("edp_ratio_vs_ondemand"), "{:.3f}"),
                    r.get("verdict", "")]  # fmt: skip
        body.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cols) + "</tr>")
    body.append("</table>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>boardlab governor simulate: {escape(res['soc'])}</title><style>{CSS}</style></head>\n"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
