"""What a plan will do before it does it: cells, runs, comparisons, an estimated duration and whether a
verdict is reachable at all (docs/method.md "Comparing ...": reachability is checked when a plan is loaded).

Used by `boardlab run` (a warning before the first run) and `boardlab run --dry-run` (the whole summary,
nothing run, nothing written).
"""

from __future__ import annotations

import sqlite3
import statistics
from dataclasses import dataclass
from pathlib import Path

from boardlab.campaign.schedule import build_cells
from boardlab.model.campaign import Cell, Plan
from boardlab.model.workload import WorkloadSpec
from boardlab.stats.reach import Reachability, reachability


@dataclass(frozen=True)
class PlanSummary:
    cells: int
    runs: int  # the fixed count, or the pilot's runs under the precision rule
    runs_max: int  # the cap's runs under the precision rule, else = runs
    comparisons: int  # every comparison the report will give a verdict: medians and tails
    runs_per_arm: int
    reach: Reachability
    estimated_duration_s: float | None  # from earlier runs of the same cells in the database
    estimate_basis: str
    skipped_workloads: dict[str, str] | None = None  # unsupported here, skipped (runs.unsupported = "skip")

    def to_dict(self) -> dict:
        return {
            "schema": 1,
            "cells": self.cells,
            "runs": self.runs,
            "runs_max": self.runs_max,
            "comparisons": self.comparisons,
            "correction": self.reach.method,
            "runs_per_arm": self.runs_per_arm,
            "verdict_reachable": self.reach.reachable,
            "repetitions_needed": self.reach.repetitions_needed,
            "smallest_adjusted_p": self.reach.smallest_adjusted_p,
            "message": self.reach.message,
            "estimated_duration_s": self.estimated_duration_s,
            "estimate_basis": self.estimate_basis,
            "skipped_workloads": self.skipped_workloads or {},
        }


def count_comparisons(plan: Plan, cells: list[Cell]) -> int:
    """The comparisons `analysis.analyze` will make of these cells: each condition against its baseline and
    each value of a `compare` parameter against its first, plus a tail comparison for workloads whose spec
    says `tail_samples`."""
    from boardlab.analysis.specs import tail_samples

    keys = {c.key for c in cells}
    bases = {c.name: c.baseline for c in plan.conditions}
    n = 0
    for cell in cells:
        pairs = 0
        base = bases.get(cell.condition)
        if base:
            ref = Cell(cell.workload, cell.params, base, cell.metric)
            pairs += ref.key in keys
        for entry in plan.workloads:
            values = entry.params.get(entry.compare) if entry.compare else None
            if (
                entry.name == cell.workload
                and isinstance(values, list)
                and cell.params_dict.get(entry.compare) in values[1:]
            ):
                pairs += 1
        n += pairs * (2 if tail_samples(cell.workload) else 1)
    return n


def _estimate(db: str | None, cells: list[Cell], runs_per_cell: int) -> tuple[float | None, str]:
    """Median wall time (plus the gate's wait) of earlier valid runs of the same cell keys, per cell."""
    if not db or not Path(db).is_file():
        return None, "no earlier runs (no database yet)"
    try:
        conn = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT c.key, r.wall_ns, r.gate_waited_s FROM runs r JOIN cells c ON c.id = r.cell_id "
                "WHERE r.ok = 1"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return None, f"the database could not be read for an estimate ({exc})"
    by_key: dict[str, list[float]] = {}
    for key, wall_ns, gate_s in rows:
        by_key.setdefault(key, []).append(wall_ns / 1e9 + (gate_s or 0.0))
    known = [c for c in cells if c.key in by_key]
    if not known:
        return None, "no earlier runs of these cells in the database"
    per_cell = {c.key: statistics.median(by_key[c.key]) for c in known}
    mean_known = statistics.mean(per_cell.values())
    total = sum(per_cell.get(c.key, mean_known) for c in cells) * runs_per_cell
    basis = f"median run time of earlier runs of {len(known)} of {len(cells)} cells in {db}"
    if len(known) < len(cells):
        basis += " (the others at their mean)"
    return total, basis


def summarize_plan(plan: Plan, catalog: dict[str, WorkloadSpec], *, db: str | None = None) -> PlanSummary:
    from boardlab.campaign.plan import unsupported_workloads

    skipped = unsupported_workloads(plan, catalog)  # the runner skips these (runs.unsupported = "skip")
    cells = [c for c in build_cells(plan, catalog) if c.workload not in skipped]
    policy = plan.runs
    per_arm = policy.repetitions if policy.precision is None else policy.pilot
    per_arm_max = per_arm if policy.precision is None else policy.cap
    comparisons = count_comparisons(plan, cells)
    reach = reachability(
        per_arm_max if policy.precision is not None else per_arm, comparisons, paired=policy.order == "abba"
    )
    duration, basis = _estimate(db, cells, per_arm)
    return PlanSummary(
        cells=len(cells),
        runs=len(cells) * per_arm,
        runs_max=len(cells) * per_arm_max,
        comparisons=comparisons,
        runs_per_arm=per_arm,
        reach=reach,
        estimated_duration_s=duration,
        estimate_basis=basis,
        skipped_workloads=skipped,
    )
