"""What a campaign prepares on the board before anything is stored, once per `Runner.run`: the board's
inventory and the worker's CPU, what a killed run left changed undone, the conditions and cells this board
can run (the rest said and skipped, or the plan refused), each workload prepared, the energy meter. The
runner reads it from here rather than growing attributes as it goes."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from boardlab.campaign.schedule import build_cells
from boardlab.campaign.support import BoardSupport, board_support, resolve_cpu
from boardlab.conditions import condition_kinds
from boardlab.conditions.base import ApplyContext
from boardlab.conditions.journal import RestoreJournal, SystemLock, failures
from boardlab.energy.meter import EnergyMeter
from boardlab.errors import InputError, MeasurementError
from boardlab.model.board import BoardInfo
from boardlab.model.campaign import Cell, ConditionSpec, Plan
from boardlab.model.workload import WorkloadSpec
from boardlab.platform import sampling
from boardlab.platform.sysroot import SysRoot

Note = Callable[[str], None]


@dataclass(frozen=True)
class Session:
    lock: SystemLock  # held for the whole campaign, checked before each run
    lock_waited_s: float  # for another boardlab's system settings
    info: BoardInfo
    cpu: int | None  # the worker's CPU (runs.cpu resolved), None: not pinned
    temp_limits_mc: dict[str, int]  # per zone, as the monitor names it
    kinds: dict  # condition kind name -> its module
    ctx: ApplyContext
    plan: Plan  # without the conditions this board cannot apply
    support: BoardSupport
    cells: tuple[Cell, ...]  # what this board runs
    energy: EnergyMeter

    @functools.cached_property
    def conditions(self) -> dict[str, ConditionSpec]:
        return {c.name: c for c in self.plan.conditions}


def prepare(
    plan: Plan, catalog: Mapping[str, WorkloadSpec], root: str, note: Note, lock: SystemLock, waited_s: float
) -> Session:
    """The session of a plan on the board at `root`, under the system lock already taken. InputError when
    the plan cannot run here (a refused unsupported part, no supported workload, a CPU it does not have),
    MeasurementError when a killed run left settings that cannot be restored."""
    from boardlab.platform.inventory import inventory

    info = inventory(root)
    cpu = resolve_cpu(plan.runs.cpu, tuple(info.online_cpus))
    for other in plan.runs.cpu_set or ():  # each CPU of a set is checked as the one CPU is
        resolve_cpu(other, tuple(info.online_cpus))
    limits = temperature_limits_mc(info.thermal_zones)
    sr = SysRoot(root)
    journal = _recover(sr, note)
    kinds = condition_kinds()
    online = tuple(info.online_cpus)
    ctx = ApplyContext(root=sr, journal=journal, info=info, worker_cpu=cpu, online_cpus=online)
    plan, support, cells = _runnable(plan, catalog, kinds, ctx, note)
    _prepare_workloads(catalog, cells, ctx, note)
    for condition in plan.conditions:  # those this board runs: their loads' models built, ...
        for kind_name, params in condition.all_parts:
            kinds[kind_name].prepare(params, ctx, note)
    energy = EnergyMeter(plan.energy, root, tuple(info.compatible))
    return Session(lock, waited_s, info, cpu, limits, kinds, ctx, plan, support, tuple(cells), energy)


def temperature_limits_mc(zones) -> dict[str, int]:
    """Each thermal zone's lowest throttling trip point minus the margin (docs/method.md "Invalid runs"),
    keyed the way the monitor names the zone in its summary (temp.<key>_mc_max), so the two meet."""
    from boardlab.platform.checks import THROTTLING_TRIPS, TRIP_MARGIN_MC

    limits = {}
    for zone in zones:
        trips = [t.temp_mc for t in zone.trips if t.type in THROTTLING_TRIPS and t.temp_mc is not None]
        if trips:
            limits[sampling.zone_key(zone.name, zone.type)] = min(trips) - TRIP_MARGIN_MC
    return limits


def over_temperature(summary: Mapping, max_temp_c: float | None, limits_mc: Mapping[str, int]) -> list[str]:
    """docs/method.md: a run above the temperature limit (the plan's max_temp_c, else the zone's lowest
    throttling trip point minus 5 C) is invalid and re-run; why, per zone over it."""
    out = []
    for key, value in summary.items():
        if not (key.startswith("temp.") and key.endswith("_mc_max")) or value is None:
            continue
        zone = key[len("temp.") : -len("_mc_max")]
        limit = max_temp_c * 1000 if max_temp_c is not None else limits_mc.get(zone)
        if limit is not None and value > limit:
            source = "max_temp_c" if max_temp_c is not None else "lowest trip point - 5 C"
            out.append(f"{zone} reached {value / 1000:.1f} C, over the limit {limit / 1000:.1f} C ({source})")
    return out


def _recover(sr: SysRoot, note: Note) -> RestoreJournal:
    """What a killed run left changed is undone before anything else (the restore journal)."""
    journal = RestoreJournal(sr)
    recovered = journal.recover()
    for restored in recovered:
        if not restored.failed:
            note(f"restored {restored.what}: {restored.detail}")
    if failures(recovered):  # a board left in an unknown state is not measured
        raise MeasurementError(
            "a killed run left settings that could not be restored: "
            + "; ".join(f"{r.what} ({r.detail}): {r.failed}" for r in failures(recovered))
        )
    return journal


def _runnable(plan: Plan, catalog, kinds, ctx: ApplyContext, note: Note):
    """(the plan without the conditions this board cannot apply, what is skipped, the cells it runs): each
    skipped part said, or the plan refused under unsupported = "fail"."""
    support = board_support(plan, catalog, build_cells(plan, catalog), kinds, ctx)
    if support.refusal:  # runs.unsupported = "fail": refused before anything is written
        raise InputError(support.refusal)
    for name, reason in support.conditions.items():  # the board lacks it: said, stored, not run
        note(f"skipping condition {name!r}: {reason}")
    for name, reason in support.workloads.items():
        note(f"skipping workload {name!r}: unsupported: {reason}")
    for key, reason in support.cells.items():
        note(f"skipping {key}: unsupported: {reason}")
    if support.conditions:
        kept = tuple(c for c in plan.conditions if c.name not in support.conditions)
        plan = dataclasses.replace(plan, conditions=kept)
    cells = [c for c in build_cells(plan, catalog) if c.key not in support.cells]
    cells = [c for c in cells if c.workload not in support.workloads]
    if not cells:
        raise InputError(f"{plan.source_name}: no workload of this plan is supported here")
    return plan, support, cells


def _prepare_workloads(
    catalog: Mapping[str, WorkloadSpec], cells: list[Cell], ctx: ApplyContext, note: Note
) -> None:
    """A workload's `prepare` hook runs once per parameter set, before anything is stored (e.g. build a
    model); the conditions' loads share `ctx.prepared`: a model measured and run as a load is built once."""
    from boardlab.workloads.params import prepare_once

    for cell in cells:
        prepare_once(catalog[cell.workload], cell.params, ctx.prepared, note)
