"""From a plan to cells and an ordered schedule of runs.

Order matters because these machines drift: interleaving cells in rounds (a seeded shuffle per round)
or counterbalancing them (ABBA: forward, then reversed) keeps drift from posing as an effect
(docs/method.md "Comparing a condition with its baseline").
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from boardlab.errors import InputError
from boardlab.model.campaign import Cell, Plan, ScheduledRun, WorkloadEntry
from boardlab.model.workload import WorkloadSpec

MAX_CELLS = 10_000  # far beyond a campaign that finishes in a day, and expanded in well under a second


def build_cells(plan: Plan, catalog: dict[str, WorkloadSpec]) -> list[Cell]:
    """Every workload parameter combination (lists expand) crossed with every condition that applies to it
    (a condition's `workloads`, else all), in plan order, duplicates dropped (linear time: a dict keeps the
    order). Raises InputError above MAX_CELLS."""
    if plan.sweep is not None:  # its conditions are not known before the board expands them
        raise ValueError(
            f"{plan.source_name}: the plan's [sweep] is not expanded (campaign.plan.expand_sweep)"
        )
    total = 0
    for entry in plan.workloads:
        combos = math.prod(len(v) if isinstance(v, list) else 1 for v in entry.params.values())
        total += combos * sum(1 for c in plan.conditions if _applies(c, entry.name))
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
        tail = next((m.tail for m in spec.metrics if m.name == metric), False)  # as its spec declares
        for combo in itertools.product(*values):
            params = tuple(zip(keys, combo, strict=True))
            for cond in plan.conditions:
                if _applies(cond, entry.name):
                    cells.setdefault(
                        Cell(
                            workload=entry.name, params=params, condition=cond.name, metric=metric, tail=tail
                        )
                    )
    return list(cells)


def entry_of(plan: Plan, cell: Cell) -> WorkloadEntry | None:
    """The plan entry that produced the cell: the first whose parameters expand into the cell's, as
    build_cells keeps the first of equal cells. Its repetitions, thresholds and precision are the cell's."""
    for entry in plan.workloads:
        if entry.name != cell.workload or [k for k, _ in cell.params] != sorted(entry.params):
            continue
        listed = {k: v if isinstance(v, list) else [v] for k, v in entry.params.items()}
        if all(v in listed[k] for k, v in cell.params):
            return entry
    return None


def compare_baseline(plan: Plan, cell: Cell) -> tuple[str, Any, Cell] | None:
    """(parameter, its first value, the cell compared with) when the cell's own entry (`entry_of`) compares a
    parameter and the cell is at one of its other values: the baseline is the cell at the first value of that
    entry's list, same workload, condition and other parameters. None otherwise: another entry of the same
    workload does not pair this entry's cells."""
    entry = entry_of(plan, cell)
    param = entry.compare if entry is not None else None
    values = entry.params.get(param) if entry is not None and param else None
    if param is None or not isinstance(values, list) or len(values) < 2:
        return None
    if cell.params_dict.get(param) not in values[1:]:
        return None
    params = tuple((k, values[0] if k == param else v) for k, v in cell.params)
    return param, values[0], Cell(cell.workload, params, cell.condition, cell.metric, cell.tail)


def _applies(condition, workload: str) -> bool:
    return not condition.workloads or workload in condition.workloads


ALLOCATION_CAP = 3  # the reference cell gets at most 3 x its conditions' runs (docs/method.md "Allocation")
AA_RUNS = 10  # the A/A control's 5 + 5 labelled reference runs


def reference_runs(n: int, k: int) -> int:
    """Runs of a reference cell shared by `k` comparisons whose other cells get `n`: Dunnett's square-root
    rule n sqrt(k) (Dunnett 1955, section 5: the many-to-one design's optimum allocation), at least the A/A
    control's 10 when k > 1, capped at ALLOCATION_CAP x n. One comparison (k <= 1) keeps n."""
    if k <= 1:
        return n
    return min(ALLOCATION_CAP * n, max(math.ceil(round(math.sqrt(k) * n, 9)), AA_RUNS))


def compared_with(plan: Plan, cells: Sequence[Cell]) -> dict[Cell, list[str]]:
    """Each cell -> the keys of the cells among `cells` it is compared with: its condition's baseline cell
    (same workload and parameters), and the cell its own entry's `compare` parameter pairs it with
    (`compare_baseline`)."""
    keys = {c.key for c in cells}
    bases = {c.name: c.baseline for c in plan.conditions}
    out = {}
    for cell in cells:
        base = bases.get(cell.condition)
        pair = compare_baseline(plan, cell)
        refs = (
            Cell(cell.workload, cell.params, base, cell.metric).key if base else None,
            pair[2].key if pair else None,
        )
        out[cell] = [r for r in refs if r is not None and r in keys]
    return out


def comparisons_per_reference(plan: Plan, cells: Sequence[Cell]) -> dict[str, int]:
    """For each reference cell's key, how many cells are compared with it (`compared_with`)."""
    out: dict[str, int] = {}
    for refs in compared_with(plan, cells).values():
        for ref in refs:
            out[ref] = out.get(ref, 0) + 1
    return out


def cell_repetitions(plan: Plan, cells: Sequence[Cell]) -> dict[str, int]:
    """Each cell's runs under the fixed rule: its workload entry's `repetitions`, else [runs] repetitions
    (the first entry that expands into the cell decides, as in build_cells); a reference cell shared by
    several comparisons gets `reference_runs` of that unless the plan says baseline_allocation = "equal"
    or pairs runs by block (order = "abba": a block needs one run of each cell)."""

    fixed = plan.runs.repetitions
    assert fixed is not None  # the fixed rule: every caller's plan gives [runs] repetitions
    out = {}
    for cell in cells:
        entry = entry_of(plan, cell)
        out[cell.key] = (entry.repetitions if entry else None) or fixed
    if plan.runs.baseline_allocation == "sqrt" and plan.runs.order != "abba":
        for key, k in comparisons_per_reference(plan, cells).items():
            out[key] = reference_runs(out[key], k)
    return out


def order_round(cells: Sequence[Cell], order: str, seed: int, round_no: int) -> list[Cell]:
    if order == "interleave":
        shuffled = list(cells)
        random.Random(f"{seed}:{round_no}").shuffle(shuffled)
        return shuffled
    if order == "abba":
        return list(cells) if round_no % 2 == 1 else list(reversed(cells))
    return list(cells)


def schedule(
    cells: Sequence[Cell],
    order: str,
    seed: int,
    rounds: Iterable[int],
    references: Collection[str] = frozenset(),
    repetitions: Mapping[str, int] | None = None,
) -> list[ScheduledRun]:
    """Runs for the given rounds (1-based). Without `repetitions`, each cell's repetition r in round r. With
    them (a cell's count; a cell not in it runs in every round), a cell of n runs among R = the most any
    cell has is spread evenly over the R rounds, its repetition j in round ceil(j R / n): a reference cell
    given more runs by the allocation and its conditions then share the campaign's whole span, so drift
    reaches both arms alike. The runs of the cells whose keys are in `references` carry their A/A label
    (`aa_label`)."""
    rounds = list(rounds)
    runs: list[ScheduledRun] = []
    reps = repetitions or {}
    most = max(reps.values(), default=0)
    spread = {
        cell.key: {math.ceil(round(j * most / reps[cell.key], 9)): j for j in range(1, reps[cell.key] + 1)}
        for cell in cells
        if cell.key in reps and reps[cell.key] > 0
    }

    def repetition(cell: Cell, r: int) -> int | None:
        """The cell's repetition in round r, or None when it has none there."""
        placed = spread.get(cell.key)
        return r if placed is None else placed.get(r)

    def run(cell: Cell, j: int, r: int) -> ScheduledRun:
        arm = aa_label(j) if cell.key in references else None
        return ScheduledRun(seq=len(runs), cell=cell, repetition=j, block=r, aa_arm=arm)

    if order == "sequential":
        for cell in cells:
            for r in rounds:
                if (j := repetition(cell, r)) is not None:
                    runs.append(run(cell, j, r))
        return runs
    for r in rounds:
        for cell in order_round(cells, order, seed, r):
            if (j := repetition(cell, r)) is not None:
                runs.append(run(cell, j, r))
    return runs


def aa_label(repetition: int) -> str:
    """The A/A control's label of a reference cell's repetition (docs/method.md "A/A control"): A1 and A2
    alternately, fixed by the repetition number before the first run (pre-registered), so the two halves
    are interleaved with each other and with every other cell, and a resumed or extended campaign labels
    the same way."""
    return "A1" if repetition % 2 else "A2"


def reference_keys(plan: Plan, cells: Sequence[Cell]) -> frozenset[str]:
    """Keys of the cells another cell is compared with: every cell under a condition named as some
    condition's baseline, and the cells at the first value of an entry's `compare` parameter that a cell of
    that entry is compared with (`compare_baseline`). Their runs are the ones labelled A1/A2."""
    bases = {c.baseline for c in plan.conditions if c.baseline}
    present = {c.key for c in cells}
    keys = {c.key for c in cells if c.condition in bases}
    for cell in cells:
        pair = compare_baseline(plan, cell)
        if pair is not None and pair[2].key in present:
            keys.add(pair[2].key)
    return frozenset(keys)
