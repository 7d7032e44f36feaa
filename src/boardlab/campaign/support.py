"""What of a plan this board can run: conditions (each kind's `check`), workloads (their spec) and cells
(a workload's `cell_unsupported` hook, for parameters this board cannot honour, such as power at rest
without a power sensor). One answer for the runner, which skips what it cannot run, and for the dry-run,
which lists it and counts no run of it (docs/method.md "What a board cannot run"). Also the worker's CPU
(`resolve_cpu`), which the runner pins and a condition's check reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from boardlab.errors import InputError
from boardlab.model.campaign import Cell, Plan
from boardlab.model.workload import WorkloadSpec

SKIP_HINT = '[runs] unsupported = "skip" runs the rest of the plan'


@dataclass(frozen=True)
class BoardSupport:
    """Everything skipped here, each with its reason; `refusal` when the plan says unsupported = "fail"
    and something is unsupported: the run stops there, before its first run."""

    conditions: dict[str, str] = field(default_factory=dict)  # condition name -> reason
    workloads: dict[str, str] = field(default_factory=dict)  # workload name -> reason
    cells: dict[str, str] = field(default_factory=dict)  # cell key -> reason
    refusal: str | None = None

    def runnable(self, cells: list[Cell]) -> list[Cell]:
        return [
            c
            for c in cells
            if c.condition not in self.conditions
            and c.workload not in self.workloads
            and c.key not in self.cells
        ]


def check_conditions(plan: Plan, kinds: dict, ctx) -> tuple[dict[str, str], str | None]:
    """(condition -> why this board lacks it, the refusal under unsupported = "fail"). A check that fails for
    another reason (a CPU that does not exist, a governor the policy does not offer) is a plan error:
    raised."""
    skipped: dict[str, str] = {}
    refusal = None
    for c in plan.conditions:
        for kind_name, params in c.all_parts:
            reason = kinds[kind_name].check(params, ctx)
            if not reason:
                continue
            part = f" {kind_name}" if c.parts else ""
            where = f"{plan.source_name}: conditions[{c.index}] ({c.name}){part}: {reason}"
            if not reason.startswith("unsupported:"):
                raise InputError(where)
            skipped[c.name] = reason
            if plan.runs.unsupported != "skip" and refusal is None:
                refusal = f"{where}; {SKIP_HINT}"
            break
    return skipped, refusal


def unsupported_cells(plan: Plan, catalog: dict[str, WorkloadSpec], cells: list[Cell]) -> dict[str, str]:
    """Cell key -> why, for cells whose workload says it cannot run with these parameters here."""
    out: dict[str, str] = {}
    asked: dict[tuple, str | None] = {}
    for cell in cells:
        hook = catalog[cell.workload].cell_unsupported
        if hook is None:
            continue
        if (cell.workload, cell.params) not in asked:
            asked[(cell.workload, cell.params)] = hook(cell.params_dict)
        reason = asked[(cell.workload, cell.params)]
        if reason:
            out[cell.key] = reason
    return out


def board_support(
    plan: Plan, catalog: dict[str, WorkloadSpec], cells: list[Cell], kinds: dict, ctx
) -> BoardSupport:
    from boardlab.campaign.plan import unsupported_workloads

    conditions, refusal = check_conditions(plan, kinds, ctx)
    workloads = unsupported_workloads(plan, catalog)  # only under unsupported = "skip" (else refused on load)
    rest = [c for c in cells if c.condition not in conditions and c.workload not in workloads]
    by_cell = unsupported_cells(plan, catalog, rest)
    if by_cell and refusal is None and plan.runs.unsupported != "skip":
        key, reason = next(iter(by_cell.items()))
        refusal = f"{plan.source_name}: {key}: unsupported here: {reason}; {SKIP_HINT}"
    return BoardSupport(conditions, workloads, by_cell, refusal)


def board_context(plan: Plan, root: str):
    """The context a condition's `check` reads (the board's inventory, the worker's CPU), as the runner
    builds it; nothing is written (the journal is only named)."""
    from boardlab.conditions.base import ApplyContext
    from boardlab.conditions.journal import RestoreJournal
    from boardlab.platform.inventory import inventory
    from boardlab.platform.sysroot import SysRoot

    sr = SysRoot(root)
    info = inventory(root)
    # the board's CPUs, not this process's affinity: a --root tree may describe another machine, and the
    # dry-run judges the plan on that board (the runner checks the affinity when it pins)
    cpu = resolve_cpu(plan.runs.cpu, tuple(info.online_cpus), set(info.online_cpus))
    return ApplyContext(
        root=sr, journal=RestoreJournal(sr), info=info, worker_cpu=cpu, online_cpus=tuple(info.online_cpus)
    )


def resolve_cpu(
    requested: int | None, online: tuple[int, ...], allowed: set[int] | None = None
) -> int | None:
    """The worker's CPU: -1 = "auto" (the last online CPU, away from CPU 0's housekeeping), None = unpinned.
    `allowed` (default: this process's affinity) matters when --root is a simulator or another board's tree:
    its CPUs need not exist here, and pinning to one would fail at the first run."""
    if requested is None:
        return None
    allowed = os.sched_getaffinity(0) if allowed is None else allowed
    if requested == -1:
        usable = [c for c in online if c in allowed]
        return usable[-1] if usable else None
    if requested not in online:
        raise InputError(
            f"runs.cpu = {requested}: no such online CPU; online CPUs: {', '.join(map(str, online))}"
        )
    if requested not in allowed:
        raise InputError(
            f"runs.cpu = {requested}: this process cannot run on CPU {requested} (it may use "
            f"{', '.join(map(str, sorted(allowed)))}); the tree under --root describes another machine: "
            "give one of those CPUs in the plan's [runs] cpu"
        )
    return requested
