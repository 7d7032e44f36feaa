"""The snoop sweep (preset `snoop-sweep`): mem.latency (random, sequential and stride 64 B; 4 KiB - 256 MiB)
pinned to one cluster, at every OPP of that cluster crossed with every OPP of the other.

`expand` turns a board's cpufreq policies into the grid; `plan_toml` writes it as a campaign plan (one
`governor` condition per frequency pair, per-policy userspace frequencies); `simulate` measures the same
grid on the simulator. Both give `SweepCell`s for `label`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from boardlab.governor import model
from boardlab.governor.opp import SocSpec
from boardlab.model.board import BoardInfo
from boardlab.platform import cpufreq

SWEEP_SCHEMA = 1
WORKLOAD = (
    "mem.latency"  # the kernel the sweep runs: its plan names it here, and store_io reads back its runs
)
PATTERNS = ("random", "seq", "stride")
# The study's stride pattern: 16 elements of its 4-byte chain apart, 64 B, one access per cache line.
STRIDE_BYTES = 64
SIZES_BYTES = tuple(4096 * 4**k for k in range(9))  # 4 KiB, 16 KiB, ... 256 MiB
REPETITIONS = 10  # the authors' nr_iter_2 = 10 outer repeats (research notes 1.4)


class Unsupported(Exception):
    """The board cannot run this part (the reason is the message)."""


@dataclass(frozen=True)
class Grid:
    this_policy: str
    this_cpus: tuple[int, ...]
    this_khz: tuple[int, ...]
    other_policy: str | None
    other_khz: tuple[int, ...]  # () on a single-cluster board
    bus_device: str | None = None  # the memory controller's devfreq device, where the board exposes one
    bus_hz: tuple[int, ...] = ()

    def pairs(self) -> list[tuple[int, int | None]]:
        return [(t, o) for t in self.this_khz for o in (self.other_khz or (None,))]


def expand(info: BoardInfo, this_policy: str | None = None) -> list[Grid]:
    """One grid per cluster (or only `this_policy`'s); Unsupported without cpufreq or userspace."""
    missing = cpufreq.missing_reason(info)
    if missing:
        raise Unsupported(missing)
    policies = info.cpufreq_policies
    names = [p.name for p in policies]
    if this_policy is not None and this_policy not in names:
        raise ValueError(f"no cpufreq policy {this_policy!r} on this board; policies: {', '.join(names)}")
    for p in policies:
        if "userspace" not in p.governors:
            raise Unsupported(f"{p.name} offers no userspace governor (available: {', '.join(p.governors)})")
        if not p.frequencies_khz:
            raise Unsupported(f"{p.name} publishes no frequency table (scaling_available_frequencies)")
    memory = [d for d in info.devfreq if d.kind == "memory"]
    bus = memory[0] if memory else None
    grids = []
    for p in policies:
        if this_policy is not None and p.name != this_policy:
            continue
        others = [q for q in policies if q.name != p.name]
        # big.LITTLE has two clusters; with more, the sweep varies the first other and leaves the rest alone.
        other = others[0] if others else None
        grids.append(
            Grid(
                this_policy=p.name,
                this_cpus=tuple(p.related_cpus or p.cpus),
                this_khz=tuple(sorted(p.frequencies_khz)),
                other_policy=other.name if other else None,
                other_khz=tuple(sorted(other.frequencies_khz)) if other else (),
                bus_device=bus.name if bus else None,
                bus_hz=tuple(bus.frequencies_hz) if bus else (),
            )
        )
    return grids


def auto_grid(grids: Sequence[Grid]) -> Grid:
    """The grid a plan's `cluster = "auto"` sweeps: the task on the LITTLE cluster (the lowest top frequency,
    the first policy on a tie), as in the study's first sweep (an A7 task, the A15 swept)."""
    return min(grids, key=lambda g: max(g.this_khz))


def worker_cpu(grid: Grid) -> int:
    """The CPU the task is pinned to: the cluster's last, as the study did (CPU 3, an A7; CPU 7, an A15)."""
    return max(grid.this_cpus)


def check_bus(grid: Grid, bus_hz: int | str) -> str | None:
    """Why `bus_hz` cannot be the sweep's memory-bus setting on this board, or None."""
    if isinstance(bus_hz, str) and bus_hz not in ("record", "max", "min"):
        return f"expected a frequency in Hz, max, min or record, found {bus_hz!r}"
    if bus_hz == "record":
        return None
    if not grid.bus_device:
        return "this board exposes no memory-controller devfreq to fix (use record)"
    if isinstance(bus_hz, int) and bus_hz not in grid.bus_hz:
        return f"{grid.bus_device} offers {', '.join(map(str, grid.bus_hz))} Hz"
    return None


def condition_tables(grid: Grid, bus_hz: int | str = "record") -> list[dict]:
    """The sweep's conditions as plan tables (`[[conditions]]`), one per frequency pair: what `plan_toml`
    writes and what a plan's `[sweep]` table expands to. Per-policy userspace frequencies through the
    governor condition; where the board has a memory-controller devfreq, a devfreq part fixes it at `bus_hz`
    (or records it)."""
    tables: list[dict[str, Any]] = []
    for this_khz, other_khz in grid.pairs():
        freqs: dict[str, int | None] = {grid.this_policy: this_khz}
        if grid.other_policy:
            freqs[grid.other_policy] = other_khz
        gov = {"governor": "userspace", "policies": list(freqs), "frequencies_khz": freqs}
        name = cell_name(grid.this_policy, this_khz, grid.other_policy, other_khz)
        if grid.bus_device:
            bus = {"device": grid.bus_device, "frequency_hz": bus_hz}
            tables.append({"name": name, "parts": [{"kind": "governor", "params": gov},
                                                   {"kind": "devfreq", "params": bus}]})  # fmt: skip
        else:
            tables.append({"name": name, "kind": "governor", "params": gov})
    return tables


def _inline(value) -> str:
    """A TOML inline value (the plan tables hold strings, integers, lists and tables only)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML inline form for {type(value).__name__}")


def plan_toml(
    grid: Grid,
    *,
    sizes: Sequence[int] = SIZES_BYTES,
    patterns: Sequence[str] = PATTERNS,
    repetitions: int = REPETITIONS,
    bus_hz: int | str = "record",
    compare: bool = True,
) -> str:
    """A campaign plan for one grid: the worker pinned to the cluster's last CPU (as the study did).
    `compare=False` compares no cell with the baseline (`baseline = ""`): the labels' t-tests against the
    other cluster at its maximum are the sweep's comparison, and a report of thousands of cells skips the
    bootstrap of each against the board's stock governor."""
    cpu = worker_cpu(grid)
    lines = [
        f'name = "snoop-sweep-{grid.this_policy}"',
        f"description = \"The governor study's snoop sweep: mem.latency pinned to CPU {cpu} "
        f"({grid.this_policy}) at every OPP of {grid.this_policy} x every OPP of "
        f'{grid.other_policy or "(no other cluster)"}"',
        "seed = 1",
        "",
        "[runs]",
        f"repetitions = {repetitions}",
        "iterations = 5",
        'order = "interleave"',
        f"cpu = {cpu}",
        "# the counters the tree learns from; where the board cannot count them each run says why",
        'counters = ["memory_access", "cci_congestion"]',
    ]
    chained = [p for p in patterns if p != "stride"]
    if chained:
        lines += [
            "",
            "[[workloads]]",
            f'name = "{WORKLOAD}"',
            f"params = {_inline({'pattern': chained, 'size_bytes': list(sizes)})}",
        ]
    if "stride" in patterns:  # its own entry: stride_bytes means nothing to the other patterns
        lines += [
            "",
            "[[workloads]]",
            f'name = "{WORKLOAD}"',
            "params = "
            f"{_inline({'pattern': 'stride', 'stride_bytes': STRIDE_BYTES, 'size_bytes': list(sizes)})}",
        ]
    for table in condition_tables(grid, bus_hz):
        lines += ["", "[[conditions]]"] + [f"{k} = {_inline(v)}" for k, v in table.items()]
        lines += [] if compare else ['baseline = ""']
    return "\n".join(lines) + "\n"


def cell_name(this_policy: str, this_khz: int, other_policy: str | None, other_khz: int | None) -> str:
    name = f"{this_policy}@{this_khz}"
    return name if other_policy is None else f"{name}+{other_policy}@{other_khz}"


@dataclass(frozen=True)
class SweepCell:
    pattern: str
    size_bytes: int
    this_policy: str
    this_khz: int
    other_policy: str | None
    other_khz: int | None
    ns_per_access: tuple[float, ...]  # one summary value per run
    cci_congestion: tuple[float, ...]  # per run; () where the counters were unsupported
    memory_access: tuple[float, ...]
    load_pct: tuple[float, ...]  # of the other (idle) cluster
    bus_hz: int | None

    @property
    def key(self) -> tuple:
        return (self.pattern, self.size_bytes, self.this_policy, self.this_khz, self.other_khz)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d: dict) -> SweepCell:
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**fields)


def simulate(
    soc: SocSpec,
    *,
    sizes: Sequence[int] = SIZES_BYTES,
    patterns: Sequence[str] = PATTERNS,
    repetitions: int = REPETITIONS,
    cv: float = 0.01,
    seed: int = 1,
    this_policy: str | None = None,
) -> list[SweepCell]:
    """The sweep on the simulator: each run's ns/access and counters with run-to-run noise (lognormal,
    `cv`)."""
    rng = random.Random(seed)
    bus = max(soc.devfreq_hz) if soc.devfreq_hz else None
    cells = []
    for this in soc.clusters:
        if this_policy is not None and this.policy != this_policy:
            continue
        others = [c for c in soc.clusters if c is not this]
        other = others[0] if others else None
        for pattern in patterns:
            for size in sizes:
                for tk in this.khz:
                    for ok in other.khz if other else (None,):
                        a = model.chase(soc, this, tk, ok, pattern, size, bus)
                        ns, cci, mem, load = [], [], [], []
                        for _ in range(repetitions):
                            ns.append(a.ns_per_access * math.exp(rng.gauss(0, cv)))
                            cci.append(a.cci_congestion * math.exp(rng.gauss(0, 2 * cv)))
                            mem.append(a.memory_access * math.exp(rng.gauss(0, 2 * cv)))
                            load.append(max(0.0, rng.gauss(2.0, 0.5)))  # the idle cluster's housekeeping
                        cells.append(
                            SweepCell(
                                pattern, size, this.policy, tk, other.policy if other else None, ok,
                                tuple(ns), tuple(cci) if soc.cci else (), tuple(mem), tuple(load), bus,
                            )
                        )  # fmt: skip
    return cells


def true_slow(soc: SocSpec, cell: SweepCell, min_effect: float) -> bool:
    """The simulator's ground truth: the noise-free slowdown against the other cluster at its maximum."""
    this = soc.cluster(cell.this_policy)
    if cell.other_policy is None:
        return False
    top = max(soc.cluster(cell.other_policy).khz)
    a = model.chase(soc, this, cell.this_khz, cell.other_khz, cell.pattern, cell.size_bytes, cell.bus_hz)
    b = model.chase(soc, this, cell.this_khz, top, cell.pattern, cell.size_bytes, cell.bus_hz)
    return a.ns_per_access > b.ns_per_access * (1 + min_effect)
