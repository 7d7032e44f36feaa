"""From a plan to cells and an ordered schedule of runs.

Order matters because these machines drift: interleaving cells in rounds (a seeded shuffle per round)
or counterbalancing them (ABBA: forward, then reversed) keeps drift from posing as an effect
(METHOD.md "Comparing a condition with its baseline").
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Sequence

from boardlab.errors import InputError
from boardlab.model.campaign import Cell, Plan, ScheduledRun
from boardlab.model.workload import WorkloadSpec

MAX_CELLS = 10_000  # far beyond a campaign that finishes in a day, and expanded in well under a second


def build_cells(plan: Plan, catalog: dict[str, WorkloadSpec]) -> list[Cell]:
    """Every workload parameter combination (lists expand) crossed with every condition, in plan order,
    duplicates dropped (linear time: a dict keeps the order). Raises InputError above MAX_CELLS."""
    total = 0
    for entry in plan.workloads:
        combos = math.prod(len(v) if isinstance(v, list) else 1 for v in entry.params.values())
        total += combos * len(plan.conditions)
    if total > MAX_CELLS:
        raise InputError(
            f"{plan.source_name}: the plan's matrix has {total} cells (parameter combinations x conditions); "
            f"at most {MAX_CELLS} are allowed: split the plan or list fewer parameter values"
        )
    cells: dict[Cell, None] = {}
    for entry in plan.workloads:
        spec = catalog[entry.name]
        keys = sorted(entry.params)
        values = [v if isinstance(v, list) else [v] for v in (entry.params[k] for k in keys)]
        metric = entry.metric or spec.primary_metric.name
        for combo in itertools.product(*values):
            params = tuple(zip(keys, combo, strict=True))
            for cond in plan.conditions:
                cells.setdefault(Cell(workload=entry.name, params=params, condition=cond.name, metric=metric))
    return list(cells)


def order_round(cells: Sequence[Cell], order: str, seed: int, round_no: int) -> list[Cell]:
    if order == "interleave":
        shuffled = list(cells)
        random.Random(f"{seed}:{round_no}").shuffle(shuffled)
        return shuffled
    if order == "abba":
        return list(cells) if round_no % 2 == 1 else list(reversed(cells))
    return list(cells)


def schedule(cells: Sequence[Cell], order: str, seed: int, rounds: Iterable[int]) -> list[ScheduledRun]:
    """Runs for the given rounds (1-based): in round r, each cell's repetition r."""
    rounds = list(rounds)
    runs: list[ScheduledRun] = []
    if order == "sequential":
        for cell in cells:
            for r in rounds:
                runs.append(ScheduledRun(seq=len(runs), cell=cell, repetition=r, block=r))
        return runs
    for r in rounds:
        for cell in order_round(cells, order, seed, r):
            runs.append(ScheduledRun(seq=len(runs), cell=cell, repetition=r, block=r))
    return runs
