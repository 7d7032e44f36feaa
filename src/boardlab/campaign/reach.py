"""What a plan will do before it does it: cells, runs, comparisons, an estimated duration and whether a
verdict is reachable at all (docs/method.md "Comparing ...": reachability is checked when a plan is loaded).

Used by `boardlab run` (a warning before the first run) and `boardlab run --dry-run` (the whole summary,
nothing run, nothing written).
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

from boardlab.campaign.schedule import build_cells, cell_repetitions, compared_with, entry_of
from boardlab.model.campaign import Cell, Gates, Plan
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
    skipped_conditions: dict[str, str] | None = None  # this board lacks them: listed, their runs not counted
    skipped_cells: dict[str, str] | None = None  # a workload's parameters this board cannot honour
    refused: str | None = None  # unsupported = "fail" and something is: the run stops before its first run
    allocation: dict | None = None  # the reference cells' runs (campaign.advice.allocation)
    power: dict | None = None  # repetitions_for_power and its duration (campaign.advice.advice_dict)

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
            "reachability_test": self.reach.test,
            "repetitions_needed": self.reach.repetitions_needed,
            "smallest_adjusted_p": self.reach.smallest_adjusted_p,
            "message": self.reach.message,
            "estimated_duration_s": self.estimated_duration_s,
            "estimate_basis": self.estimate_basis,
            "skipped_workloads": self.skipped_workloads or {},
            "skipped_conditions": self.skipped_conditions or {},
            "skipped_cells": self.skipped_cells or {},
            "refused": self.refused,
            "allocation": self.allocation or {},
            **(self.power or {"repetitions_for_power": None, "power": []}),
        }


def count_comparisons(plan: Plan, cells: list[Cell], catalog: dict[str, WorkloadSpec]) -> int:
    """The comparisons the analysis will make of these cells: each condition against its baseline and each
    value of an entry's `compare` parameter against its first in that entry (`schedule.compared_with`), plus a
    tail comparison for a workload whose spec says `tail_samples` (its per-sample p99 is a verdict metric
    too)."""
    n = 0
    for cell, refs in compared_with(plan, cells).items():
        spec = catalog.get(cell.workload)
        n += len(refs) * (2 if spec is not None and spec.tail_samples else 1)
    return n


def _compared_keys(plan: Plan, cells: list[Cell]) -> set[str]:
    """Keys of the cells on either side of a comparison (`schedule.compared_with`)."""
    out = set()
    for cell, refs in compared_with(plan, cells).items():
        if refs:
            out |= {cell.key, *refs}
    return out


def gate_wait_bounds(gates: Gates) -> tuple[float, float]:
    """(least, most) seconds the runner's gate (campaign.runner `_gate`) waits before a run under `gates`:
    the cooldown, then an idle window at least when the idle gate is on; at most the timeout past the start
    plus the window (idle) or the half-second poll (temperature) that was running when it ran out."""
    least = gates.cooldown_s + (gates.idle_window_s if gates.idle else 0.0)
    if not (gates.idle or gates.temperature):
        return least, least
    tail = max(gates.idle_window_s if gates.idle else 0.0, 0.5 if gates.temperature else 0.0)
    return least, max(least, gates.cooldown_s + gates.timeout_s + tail)


def _estimate(
    db: str | None, cells: list[Cell], runs_per_cell: dict[str, int], gates: Gates
) -> tuple[float | None, str]:
    """Median wall time plus the gate's wait of earlier valid runs of the same cell keys, per cell; each
    earlier wait taken within what this plan's gate can wait (`gate_wait_bounds`), not as long as a gate with
    another timeout made it wait (`run --gate-timeout`)."""
    from boardlab.campaign.advice import read_earlier

    earlier, why = read_earlier(db)
    if earlier is None:
        return None, why or ""
    rows = earlier.run_times
    least, most = gate_wait_bounds(gates)
    by_key: dict[str, list[float]] = {}
    for key, wall_ns, gate_s in rows:
        by_key.setdefault(key, []).append(wall_ns / 1e9 + min(max(gate_s or 0.0, least), most))
    known = [c for c in cells if c.key in by_key]
    if not known:
        return None, "no earlier runs of these cells in the database"
    per_cell = {c.key: statistics.median(by_key[c.key]) for c in known}
    mean_known = statistics.mean(per_cell.values())
    total = sum(per_cell.get(c.key, mean_known) * runs_per_cell[c.key] for c in cells)
    waits = (
        f"each gate's wait taken at most {most:g} s ([gates] timeout_s {gates.timeout_s:g})"
        if most > least
        else f"each gate's wait taken as {least:g} s (no idle or temperature gate)"
    )
    basis = f"median run time of earlier runs of {len(known)} of {len(cells)} cells in {db}, {waits}"
    if len(known) < len(cells):
        basis += " (the others at their mean)"
    return total, basis


def repetitions_fix(plan: Plan, cells: list[Cell], n: int, flag: int | None = None) -> str:
    """How the user gets `n` runs per arm in every compared cell, for the dry-run's advice: `--repetitions n`
    sets [runs] repetitions, but a plan entry's own `repetitions` decides its cells' runs and no flag changes
    it, so the entries that give fewer are named to be edited; `flag` is the --repetitions the user gave."""
    if plan.runs.precision is not None:
        return f"--repetitions {n}"
    compared = _compared_keys(plan, cells)
    own: dict[str, int] = {}
    short = False
    for cell in cells:
        entry = entry_of(plan, cell) if cell.key in compared else None
        if entry is not None and entry.repetitions is not None:
            if entry.repetitions < n:
                own[cell.workload] = entry.repetitions
        elif cell.key in compared and (plan.runs.repetitions or 0) < n:
            short = True
    parts = []
    if short:
        parts.append(f"--repetitions {n}" + (f" instead of the {flag} given" if flag is not None else ""))
    if own:
        names = ", ".join(f"{w} (repetitions = {r})" for w, r in own.items())
        parts.append(
            f"repetitions = {n} in the plan's [[workloads]] entries of {names}, which --repetitions "
            "does not change"
        )
    return " and ".join(parts) or f"the plan already gives {n} runs per arm"


def summarize_plan(
    plan: Plan,
    catalog: dict[str, WorkloadSpec],
    *,
    db: str | None = None,
    root: str = "/",
    repetitions_flag: int | None = None,
) -> PlanSummary:
    from boardlab.campaign.support import board_context, board_support
    from boardlab.conditions import condition_kinds

    all_cells = build_cells(plan, catalog)
    support = board_support(plan, catalog, all_cells, condition_kinds(), board_context(plan, root))
    cells = support.runnable(all_cells)  # what the runner will run here: the rest is listed, not counted
    policy = plan.runs
    if policy.precision is None:  # a workload may give its own repetitions: the fewest compared decide
        assert policy.repetitions is not None  # a plan without precision has repetitions (or 5)
        per_cell = cell_repetitions(plan, cells)
        compared = _compared_keys(plan, cells)
        per_arm = min((per_cell[k] for k in compared), default=policy.repetitions)
        runs = sum(per_cell.values())
        runs_max = runs
    else:
        per_arm = policy.pilot
        per_cell = {c.key: policy.pilot for c in cells}
        runs, runs_max = len(cells) * policy.pilot, len(cells) * policy.cap
    comparisons = count_comparisons(plan, cells, catalog)
    planned = policy.cap if policy.precision is not None else per_arm

    def fix(n: int) -> str:
        return repetitions_fix(plan, cells, n, repetitions_flag)

    reach = reachability(planned, comparisons, paired=policy.order == "abba", fix=fix)
    reach = _tails_reach(plan, cells, catalog, planned, comparisons, reach, fix)
    reach = _none_runnable(reach, comparisons, count_comparisons(plan, all_cells, catalog), support)
    duration, basis = _estimate(db, cells, per_cell, plan.gates)
    allocation, power = _advice(plan, cells, comparisons, db, fix)
    return PlanSummary(
        cells=len(cells),
        runs=runs,
        runs_max=runs_max,
        comparisons=comparisons,
        runs_per_arm=per_arm,
        reach=reach,
        estimated_duration_s=duration,
        estimate_basis=basis,
        skipped_workloads=support.workloads,
        skipped_conditions=support.conditions,
        skipped_cells=support.cells,
        refused=support.refusal,
        allocation=allocation,
        power=power,
    )


def _tails_reach(
    plan: Plan,
    cells: list[Cell],
    catalog: dict[str, WorkloadSpec],
    per_arm: int,
    family: int,
    reach: Reachability,
    fix,
) -> Reachability:
    """The medians' reachability, or the pooled tails' where theirs is worse: a workload whose tail comes
    from its runs' samples (`tail_samples` without a worker-computed `tail_metric`, e.g. 90 frames of AI
    inference) gets a permutation test over whole runs whose smallest p is fixed by the run counts."""
    from boardlab.campaign.schedule import comparisons_per_reference, reference_runs

    pooled = [c for c in _compared_keys_cells(plan, cells) if _pooled_tail(catalog.get(c.workload))]
    if not pooled or not reach.reachable:
        return reach
    shares = comparisons_per_reference(plan, cells)
    sqrt_rule = plan.runs.baseline_allocation == "sqrt" and plan.runs.order != "abba"
    k = max((shares.get(c.key, 0) for c in pooled), default=1) if sqrt_rule else 1
    tails = reachability(
        per_arm,
        family,
        test_kind="pooled-tail",
        baseline_runs=lambda n: reference_runs(n, k),
        what="pooled-p99 comparison (runs of fewer than 100 samples)",
        fix=fix,
    )
    return reach if tails.reachable else tails


def _pooled_tail(spec: WorkloadSpec | None) -> bool:
    return spec is not None and spec.tail_samples and not spec.tail_metric


def _compared_keys_cells(plan: Plan, cells: list[Cell]) -> list[Cell]:
    keys = _compared_keys(plan, cells)
    return [c for c in cells if c.key in keys]


def _none_runnable(reach: Reachability, runnable: int, planned: int, support) -> Reachability:
    """A plan whose comparisons all fall on what this board cannot run reaches no verdict here; the plan
    itself is not wrong (it may reach one on a board that has what it needs)."""
    if support.refusal:
        why = 'the run stops before its first run (unsupported here, and [runs] unsupported = "fail")'
    elif runnable == 0 and planned > 0:
        why = f"none of its {planned} comparisons can run on this board: what they compare is skipped here"
    else:
        return reach
    return dataclasses.replace(reach, reachable=False, message=f"no verdict is reachable here: {why}")


def _advice(plan: Plan, cells: list[Cell], comparisons: int, db: str | None, fix) -> tuple[dict, dict]:
    """The allocation and the repetitions for 80% power with the plan's duration at that count and how to
    get there (`repetitions_fix`)."""
    from boardlab.campaign import advice

    reps = plan.runs.repetitions or plan.runs.pilot  # under the precision rule: the pilot's
    fixed = dataclasses.replace(plan, runs=dataclasses.replace(plan.runs, repetitions=reps, precision=None))
    alloc = advice.allocation(plan, cells, cell_repetitions(fixed, cells))
    compared = _compared_keys(plan, cells)
    pairs = advice.power_advice(plan, cells, compared, comparisons, advice.earlier_values(db))
    if not pairs:
        return alloc, advice.advice_dict(pairs, (None, ""))
    n = pairs[0][1].runs_per_arm
    # every compared cell at n runs per arm (an entry's own repetitions included), the others as planned
    at_n = dataclasses.replace(
        plan,
        runs=dataclasses.replace(plan.runs, repetitions=n, precision=None),
        workloads=tuple(dataclasses.replace(w, repetitions=None) for w in plan.workloads),
    )
    runs_at_n, planned = cell_repetitions(at_n, cells), cell_repetitions(fixed, cells)
    per_cell = {k: runs_at_n[k] if k in compared else planned[k] for k in planned}
    out = advice.advice_dict(pairs, _estimate(db, cells, per_cell, plan.gates))
    return alloc, {**out, "repetitions_for_power_how": fix(n)}
