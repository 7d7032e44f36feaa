"""`governor sweep --sim SOC --db FILE`: the snoop sweep on the simulator, stored as a campaign that
`boardlab report` reads like a board's (heatmaps, labels, tree), and marked simulated wherever it shows.

The campaign is built by the code a board's sweep goes through: the simulator writes its sysfs tree, the
platform layer takes the inventory from it, `sweep.expand` gives the OPP grid and `sweep.plan_toml` the
plan, whose cells `build_cells` lays out. Only the runs differ: each run's ns/access and counters come from
the memory-latency model (`governor.model`) with run-to-run noise, as `sweep.simulate` draws them. The
board is labelled "(simulated)", the campaign's name says so, and its environment carries `simulated`,
which the report's header and the governor section turn into a banner in every format.
"""

from __future__ import annotations

import json
import math
import random
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from boardlab.governor import model, policies, sweep
from boardlab.governor.opp import ClusterSpec, SocSpec

if TYPE_CHECKING:
    from boardlab.model.run import RunResult

ITERATIONS = 5  # per run, as the snoop-sweep preset's
ACCESSES_PER_ITERATION = 1_000_000  # what a simulated iteration "runs": its time is this many accesses
IDLE_LOAD_PCT = 2.0  # the idle cluster's housekeeping, as `sweep.simulate` draws it


@dataclass(frozen=True)
class Written:
    campaign_id: int
    conditions: int
    cells: int
    runs: int
    grid: sweep.Grid


def simulated_note(soc: SocSpec) -> str:
    """The banner every rendering of the campaign shows."""
    return (
        f"Simulated: every figure of this campaign comes from boardlab's memory-latency model of the "
        f"{soc.model}, not from a measurement of a board (`boardlab governor sweep --sim {soc.name}`; the "
        "model's constants and where it departs from the governor study are in docs/governor.md)."
    )


def write(store, soc: SocSpec, *, this_policy: str | None, sizes, repetitions: int, seed: int = 1) -> Written:
    """Writes one campaign (the task on `this_policy`, default the LITTLE cluster as the preset's `auto`)."""
    from boardlab import __version__
    from boardlab.campaign import facts
    from boardlab.campaign.plan import parse_plan
    from boardlab.campaign.runner import board_fingerprint, plan_hash
    from boardlab.campaign.schedule import build_cells
    from boardlab.governor.sim import SimBoard
    from boardlab.platform.inventory import inventory
    from boardlab.platform.sysroot import SysRoot
    from boardlab.workloads import all_workloads

    with tempfile.TemporaryDirectory(prefix="boardlab-sim-") as tree:
        SimBoard(soc, tree)
        info = inventory(SysRoot(tree))
        facts_doc = facts.document(all_workloads(), tree)  # what the simulated board's power sources allow
        # the scratch tree is gone after this: its paths in the inventory's reasons name the simulator instead
        inv = json.loads(json.dumps(info.to_dict(), default=str).replace(tree, f"<simulator {soc.name}>"))
    grids = sweep.expand(info, this_policy)
    grid = grids[0] if this_policy else sweep.auto_grid(grids)
    text = _plan_text(soc, grid, sizes, repetitions)
    catalog = {w.name: w for w in all_workloads()}
    plan = parse_plan(text, f"governor sweep --sim {soc.name}", catalog)
    cells = build_cells(plan, catalog)
    units = {}
    for cell in cells:
        metric = next(m for m in catalog[cell.workload].metrics if m.name == cell.metric)
        units[cell.key] = (metric.unit, metric.higher_is_better)
    inv["simulated"] = soc.name
    note = simulated_note(soc)
    environment = {
        "simulated": {"soc": soc.name, "model": soc.model, "note": note},
        "capabilities": inv.get("capabilities"),
        "checks": [{"name": "simulated", "status": "WARN", "detail": note}],
        "worker_cpu": plan.runs.cpu,
    }
    label = soc.model if "simulated" in soc.model else f"{soc.model} (simulated)"
    board_id = store.upsert_board(board_fingerprint(inv), label, inv)
    campaign_id = store.create_campaign(
        name=plan.name, plan_hash=plan_hash(plan), plan_source=plan.source_name, plan_text=plan.source,
        board_id=board_id, boardlab_version=__version__, kern_version=None, root=f"simulator:{soc.name}",
        environment=environment,
    )  # fmt: skip
    facts.save(store, campaign_id, facts_doc)
    facts.store_cell_facts(store, campaign_id, plan, cells)
    conditions = {c.name: c for c in plan.conditions}
    ids = store.ensure_cells(campaign_id, cells, conditions, units)
    rng = random.Random(seed)
    made: list[
        tuple[int, RunResult]
    ] = []  # (cell id, run), stored in one transaction: a commit per simulated run was its cost
    t0 = time.time()
    for rep in range(1, repetitions + 1):  # interleaved, as the preset orders its runs
        for cell in cells:
            n = len(made)
            run = _run(soc, grid, cell, conditions[cell.condition], rep, n + 1, t0 + n * 1e-3, rng)
            made.append((ids[cell.key], run))
    store.record_runs(campaign_id, made)
    runs = len(made)
    store.set_campaign_status(campaign_id, "complete", notes={"simulated": note})
    return Written(campaign_id, len(plan.conditions), len(cells), runs, grid)


def _plan_text(soc: SocSpec, grid: sweep.Grid, sizes, repetitions: int) -> str:
    text = sweep.plan_toml(grid, sizes=sizes, repetitions=repetitions, compare=False)
    name = f'name = "snoop-sweep-{grid.this_policy}"'
    assert text.startswith(name)
    head = f"# Simulated on boardlab's model of the {soc.model}: no board ran this plan.\n"
    return head + text.replace(name, f'name = "snoop-sweep-{grid.this_policy}-simulated-{soc.name}"', 1)


def _frequencies(soc: SocSpec, grid: sweep.Grid, condition) -> tuple[int, int | None]:
    """(this cluster's, other cluster's) kHz under a sweep condition, or under the implied baseline: the
    simulator's stock ondemand, which runs the busy cluster at its top and the idle one at its load target."""
    from boardlab.governor.store_io import sweep_frequencies
    from boardlab.model.facts import ConditionPart

    parsed = sweep_frequencies(ConditionPart(kind, params) for kind, params in condition.all_parts)
    if parsed is not None:
        return parsed[1], parsed[3]
    this = soc.cluster(grid.this_policy)
    other = soc.cluster(grid.other_policy) if grid.other_policy else None
    return max(this.khz), _ondemand_idle_khz(other) if other else None


def _ondemand_idle_khz(c: ClusterSpec) -> int:
    lo, hi = min(c.khz), max(c.khz)
    return policies.resolve(c.khz, lo + IDLE_LOAD_PCT * (hi - lo) / 100, "C", lo, hi)


def _run(soc: SocSpec, grid: sweep.Grid, cell, condition, rep: int, seq: int, started: float, rng):
    from boardlab.model.run import GateResult, MetricResult, RunResult

    params = dict(cell.params)
    this_khz, other_khz = _frequencies(soc, grid, condition)
    bus = max(soc.devfreq_hz) if soc.devfreq_hz else None
    # the plan `_plan_text` writes names every cell's pattern and size (sweep.plan_toml): no default applies
    a = model.chase(soc, soc.cluster(grid.this_policy), this_khz, other_khz, params["pattern"],
                    int(params["size_bytes"]), bus)  # fmt: skip
    cv = 0.01  # run-to-run noise, as `sweep.simulate` draws it
    run_factor = math.exp(rng.gauss(0, cv))
    ns = tuple(a.ns_per_access * run_factor * math.exp(rng.gauss(0, cv / 2)) for _ in range(ITERATIONS))
    median = sorted(ns)[len(ns) // 2]
    metrics = [MetricResult("ns_per_access", "ns", False, ns, median, min(ns))]
    if soc.cci:
        cci = a.cci_congestion * math.exp(rng.gauss(0, 2 * cv))
        metrics.append(MetricResult("cci_congestion", "stall cycles per read", False, (cci,), cci, cci))
    mem = a.memory_access * math.exp(rng.gauss(0, 2 * cv))
    metrics.append(MetricResult("memory_access", "bus accesses per cycle", False, (mem,), mem, mem))
    iterations = tuple(round(x * ACCESSES_PER_ITERATION) for x in ns)
    freqs = {grid.this_policy: this_khz} | ({grid.other_policy: other_khz} if grid.other_policy else {})
    state: dict[str, object] = {
        "simulated": soc.name,
        "governor": "userspace" if condition.kind != "baseline" else "ondemand",
        "policies": {p: {"frequency_khz": k} for p, k in freqs.items()},
    }
    if grid.bus_device:
        state = {"parts": [dict(state, kind="governor"), {"kind": "devfreq", "device": grid.bus_device,
                                                            "cur_hz": bus}]}  # fmt: skip
    return RunResult(
        cell_key=cell.key, repetition=rep, attempt=1, seq=seq, started_unix_s=started,
        wall_ns=sum(iterations), cpu=sweep.worker_cpu(grid), exit_code=0, ok=True, valid=True,
        invalid_reason=None, value=median, metrics=tuple(metrics), iterations_ns=iterations,
        warmup_iterations=0, warmup_capped=False, rusage={},
        gate=GateResult(0.0, False, "simulated: no gate"), condition_state=state, monitor={},
        worker_json=json.dumps({"simulated": soc.name}),
    )  # fmt: skip
