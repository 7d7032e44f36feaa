"""The board's headline figures for the summary card at the top of a report: what a reader came for.

Every workload's primary metric under the reference condition (the one others are compared against), one
figure per parameter set, with the 95% order-statistic CI of its median; a working-set sweep gives one figure
per cache level of the board (the largest size that fits it) and one for DRAM (the largest size measured); and
composites that workloads declare (`WorkloadSpec.composite`, e.g. SciMark's, as the campaign stored them:
`CampaignAnalysis.workloads`) when every member was measured,
with a bootstrap CI resampling each member's runs.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.analysis.format import fmt_size, params_text, varying_keys

if TYPE_CHECKING:
    from boardlab.analysis.core import CampaignAnalysis, CellAnalysis

COMPOSITE_RESAMPLES = 2000


@dataclass(frozen=True)
class Headline:
    label: str  # the workload with the parameters that vary among its figures, or the composite's name
    metric: str
    unit: str
    median: float
    ci_low: float | None  # 95%
    ci_high: float | None
    condition: str
    n_runs: int
    cell_ids: tuple[int, ...]


def _levels(inventory: dict) -> list[tuple[str, float]]:
    """(name, size in bytes) of each data cache level of the board, smallest first (L1, L2, L3)."""
    sizes: dict[int, float] = {}
    for c in inventory.get("caches") or []:
        if not isinstance(c, dict) or c.get("type") not in ("Data", "Unified") or not c.get("size_kib"):
            continue
        level = int(c["level"])
        sizes[level] = max(sizes.get(level, 0.0), float(c["size_kib"]) * 1024)
    return [(f"L{lvl}", size) for lvl, size in sorted(sizes.items())]


def _of(label: str, c: CellAnalysis) -> Headline:
    s = c.summary
    assert s is not None
    ci = s.median_ci
    return Headline(
        label,
        c.metric,
        c.unit,
        s.median,
        ci.low if ci else None,
        ci.high if ci else None,
        c.condition,
        s.n,
        (c.cell_id,),
    )


def _reference_cells(a: CampaignAnalysis) -> list[CellAnalysis]:
    ref = [c for c in a.cells if c.baseline is None and c.summary is not None]
    if (
        len({c.condition for c in ref}) > 1
    ):  # several reference conditions: the first is the board's own state
        first = next(c.condition for c in a.cells if c.baseline is None)
        ref = [c for c in ref if c.condition == first]
    return ref


def _sweep(workload: str, cells: list[CellAnalysis], levels) -> list[Headline]:
    rest = [k for k in varying_keys(c.params for c in cells) if k != "size_bytes"]
    groups: dict[str, list[CellAnalysis]] = {}
    for c in cells:
        groups.setdefault(params_text({k: c.params.get(k) for k in rest}), []).append(c)
    out = []
    for label, members in groups.items():
        members.sort(key=lambda c: c.params["size_bytes"])
        picks: list[tuple[str, CellAnalysis]] = []
        below = 0.0
        for name, size in levels:  # the largest working set that fits this level and not the one before
            fit = [c for c in members if below < c.params["size_bytes"] <= size]
            if fit:
                picks.append((f"{name} ({fmt_size(int(fit[-1].params['size_bytes']))})", fit[-1]))
            below = size
        beyond = [c for c in members if c.params["size_bytes"] > below]
        if beyond:  # larger than every cache (or no cache sizes known): the largest measured
            big = beyond[-1]
            picks.append(
                (f"{'DRAM' if levels else 'largest'} ({fmt_size(int(big.params['size_bytes']))})", big)
            )
        seen: set[int] = set()
        for what, c in picks:
            if c.cell_id not in seen:
                seen.add(c.cell_id)
                out.append(_of(f"{workload}" + (f" ({label})" if label else "") + f" {what}", c))
    return out


def composite(name: str, cells: Sequence[CellAnalysis], *, seed: int = 0) -> Headline:
    """The arithmetic mean of the members' medians, with a percentile bootstrap CI that resamples each
    member's runs (runs are the unit, docs/method.md); no CI when a member has too few runs for its own."""
    rng = random.Random(seed)
    point = statistics.fmean(c.summary.median for c in cells)  # type: ignore[union-attr]
    values = [list(c.values) for c in cells]
    lo = hi = None
    if all(c.summary.median_ci is not None for c in cells):  # type: ignore[union-attr]
        boot = sorted(
            statistics.fmean(statistics.median(rng.choices(v, k=len(v))) for v in values)
            for _ in range(COMPOSITE_RESAMPLES)
        )
        lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
    units = {c.unit for c in cells}
    return Headline(
        name,
        "mean of " + ", ".join(sorted({c.metric for c in cells})),
        units.pop() if len(units) == 1 else "mixed units",
        point,
        lo,
        hi,
        cells[0].condition,
        min(len(v) for v in values),
        tuple(c.cell_id for c in cells),
    )


def headlines(a: CampaignAnalysis) -> list[Headline]:
    ref = _reference_cells(a)
    levels = _levels(a.inventory or {})
    out: list[Headline] = []
    # composites first: one per declared composite and parameter set, when every member was measured
    members_of: dict[str, set[str]] = {}
    for spec in a.workloads.catalog().values():
        if spec.composite:
            members_of.setdefault(spec.composite, set()).add(spec.name)
    for name, members in sorted(members_of.items()):
        by_params: dict[str, dict[str, CellAnalysis]] = {}
        for c in ref:
            if c.workload in members:
                by_params.setdefault(params_text(c.params), {})[c.workload] = c
        for params, got in by_params.items():
            if set(got) == members:
                h = composite(name, [got[w] for w in sorted(got)])
                out.append(
                    Headline(f"{name}" + (f" ({params})" if params else ""), *list(h.__dict__.values())[1:])
                )
    by_workload: dict[str, list[CellAnalysis]] = {}
    for c in ref:
        by_workload.setdefault(c.workload, []).append(c)
    for workload, cells in by_workload.items():
        sized = [c for c in cells if isinstance(c.params.get("size_bytes"), int | float)]
        if len({c.params["size_bytes"] for c in sized}) >= 2:
            out += _sweep(workload, sized, levels)
            continue
        varying = varying_keys(c.params for c in cells)
        for c in cells:
            shown = params_text({k: c.params.get(k) for k in varying})
            out.append(_of(f"{workload}" + (f" ({shown})" if shown else ""), c))
    return out


__all__ = ["Headline", "composite", "headlines"]
