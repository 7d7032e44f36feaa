"""The governor study's report section: the snoop sweep as heatmaps (this cluster's frequency x the other's,
one per pattern and size, colored by the slowdown against the other cluster at its maximum, marked where
the stored labels say slow), the stored decision tree, and the policies' time / energy / EDP side by side
(a governor-eval campaign). Collected from the store once (`collect`); `sections` lays it out. Applies when
a cell's condition is a sweep cell of the governor lab (`governor.store_io.sweep_frequencies` of its
condition's parts) or a policy.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.format import fmt_size as _size
from boardlab.analysis.format import fmt_spec, fmt_value

if TYPE_CHECKING:
    from boardlab.model.facts import WorkloadFacts

TITLE = "Governor study"
POLICY_KINDS = ("governor", "governor-daemon")
NO_ENERGY = (
    "energy unsupported in this campaign: no energy_j per run (the board has no power sensors boardlab "
    "reads, or energy was not measured); EDP needs it"
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
    simulated: str | None = None  # the simulator's SoC when the campaign is `governor sweep --sim --db`


def collect(
    store, campaign_id: int, cells, workloads: WorkloadFacts, simulated: str | None = None
) -> GovernorStudy | None:
    """None when the campaign is neither a snoop sweep nor a governor comparison."""
    from boardlab.governor import store_io

    maps: dict[tuple, dict] = {}
    for c in cells:
        parsed = store_io.sweep_frequencies(c.facts.condition)
        pattern = workloads.cell_param(c.workload, c.params, "pattern")
        if parsed is None or c.summary is None or "size_bytes" not in c.params or pattern is None:
            continue
        this, tk, other, ok = parsed
        key = (this, other, pattern, int(c.params["size_bytes"]))
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
        )
        # sizes as numbers (4 KiB, 16 KiB, ... 1 MiB), not as text: the order a reader scans the heatmaps in
        for (this, other, pattern, size), m in sorted(
            maps.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2], kv[0][3])
        )
    )
    policies, energy_seen = _policies(store, campaign_id, cells)
    tree = store_io.load_artifact(store, campaign_id, store_io.TREE)
    if not sweeps and not policies and tree is None:
        return None
    summary = None
    if labels:
        n = [x for x in labels.get("cells", ()) if x.get("p_one_sided") is not None]
        summary = {"tests": len(n), "slow": sum(x["label"] == "slow" for x in n),
                   "alpha": labels.get("alpha"), "min_effect": labels.get("min_effect"),
                   "correction": labels.get("correction")}  # fmt: skip
    return GovernorStudy(sweeps, tree, summary, policies, None if energy_seen or not policies else NO_ENERGY,
                         simulated)  # fmt: skip


def _policies(store, campaign_id: int, cells) -> tuple[tuple[PolicyRow, ...], bool]:
    from boardlab.governor.store_io import sweep_frequencies

    # a condition of one part, of a policy kind
    governed = {
        c.key for c in cells if len(c.facts.condition) == 1 and c.facts.condition[0].kind in POLICY_KINDS
    }
    energy: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for c in cells:  # only the policy cells' runs are read: a campaign without them reads none
        if c.key not in governed:
            continue  # (sweep cells too are collected here, and left out below)
        metrics = store.cell_metrics(c.cell_id)  # the valid runs' metrics, one query for the cell
        for p in c.runs:
            if not p.valid:
                continue
            joules = (metrics.get(p.run_id, {}).get("energy_j") or {}).get("median")
            if joules is not None:
                energy.setdefault(c.key, []).append(float(joules))
            wall.setdefault(c.key, []).append(p.wall_ns / 1e9)
    rows = []
    for c in cells:
        if c.key not in governed or sweep_frequencies(c.facts.condition) is not None:
            continue  # a sweep cell (fixed frequencies) is in the heatmaps, not among the policies
        e = statistics.median(energy[c.key]) if energy.get(c.key) else None
        t = statistics.median(wall[c.key]) if wall.get(c.key) else None
        rows.append(PolicyRow(c.label, c.condition, c.metric, c.unit, c.summary.median if c.summary else None,
                              e, e * t if e is not None and t is not None else None))  # fmt: skip
    return tuple(rows), bool(energy)


# ---- words shared by the renderers -------------------------------------------------------------------------


def _mhz(khz: int | None) -> str:
    return "-" if khz is None else fmt_value(khz / 1000)


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
    return ([f"{pad}if {node['feature']} <= {fmt_value(node['threshold_value'])} ({node['unit']}):"]
            + tree_lines(node["le"], pad + "  ") + [f"{pad}else:"]
            + tree_lines(node["gt"], pad + "  "))  # fmt: skip


def policy_table(g: GovernorStudy) -> tuple[list[str], list[list[str]]]:
    head = ["workload", "policy", "median", "unit", "energy_j", "edp_j_s"]
    rows = [
        [r.workload, r.policy, fmt_spec(r.median), r.unit, fmt_spec(r.energy_j), fmt_spec(r.edp_j_s)]
        for r in g.policies
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
    return [
        f"labels: {s['slow']} of {s['tests']} cells slow (one-sided Welch t-test vs the other cluster at its "
        f"maximum, {s['correction']}-corrected alpha {s['alpha']}, minimum effect {100 * s['min_effect']:g}%)"
    ]


# ---- the section -------------------------------------------------------------------------------------------


def applies(ctx) -> bool:
    return True  # `collect` says None when the campaign is neither a sweep nor a governor comparison


def analyze(ctx) -> GovernorStudy | None:
    simulated = (ctx.environment.get("simulated") or {}).get("soc")
    return collect(ctx.store, ctx.campaign_id, ctx.cells, ctx.workloads, simulated)


def _heatmap(s: SweepMap, simulated: str | None) -> doc.Figure:
    rows = [f"{s.this_policy} {_mhz(t)} MHz" for t in s.this_khz]
    cols = [f"{_mhz(o)}" for o in s.other_khz] or ["-"]
    cells = {}
    for i, t in enumerate(s.this_khz):
        for j, o in enumerate(s.other_khz or (None,)):
            r = s.ratio(t, o) if o is not None else None
            ns = s.median_ns.get((t, o))
            cells[(i, j)] = doc.HeatCell(
                r, "slowdown" if s.slow.get((t, o)) else None, False,
                f"{fmt_spec(ns)} ns/access" + (f", x{r:.3f}" if r is not None else ""),
            )  # fmt: skip
    title = f"{s.this_policy} {s.pattern} {_size(s.size_bytes)} (columns: {s.other_policy or '-'} MHz)"
    if simulated:
        title = f"simulated {simulated}: {title}"
    return doc.Figure(doc.HeatmapSpec(rows=rows, cols=cols, cells=cells, title=title, limit=2.0))


def sections(analysis, g: GovernorStudy) -> list[doc.Section]:
    blocks: list[doc.Block | None] = []
    if g.simulated:
        blocks.append(doc.Prose(f"Simulated ({g.simulated}): the sweep below is the model's, not a board's.",
                                strong=True, bold=("Simulated",)))  # fmt: skip
    if g.sweeps:
        blocks.append(
            doc.Prose(
                "The snoop sweep: median ns/access of mem.latency pinned to one cluster, at each frequency "
                "of that cluster (rows) x each of the other cluster (columns), as a ratio to the same row "
                "with the other cluster at its maximum; ▲ marks a cell labelled slow.",
                small=True,
                formats=doc.HTML,
            )
        )
    blocks.append(
        doc.Items(tuple(sweep_lines(s) for s in g.sweeps) + tuple(_labels_summary(g)))
        if g.sweeps or g.labels
        else None
    )
    blocks += [_heatmap(s, g.simulated) for s in g.sweeps]
    tree = _tree_summary(g)
    if tree:
        blocks += [doc.Prose(tree[0]), doc.Preformatted("\n".join(x.rstrip() for x in tree[1:]))]
    if g.policies:
        head, rows = policy_table(g)
        numeric = (False, False, True, False, True, True)
        blocks.append(
            doc.Table(
                tuple(doc.Column(h, numeric=n) for h, n in zip(head, numeric, strict=True)),
                tuple(map(tuple, rows)),
            )
        )
    if g.energy_reason:
        blocks.append(doc.Prose(g.energy_reason, small=True))
    return [doc.section(TITLE, *blocks, anchor="governor")]
