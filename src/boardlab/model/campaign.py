"""Plans, cells and runs: the records a campaign is made of."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from boardlab.model.workload import WorkloadSpec

Order = Literal["interleave", "abba", "sequential"]


@dataclass(frozen=True)
class Gates:
    """Waits before each run (docs/method.md "Before and around each run")."""

    idle: bool = True
    idle_threshold_pct: float = 5.0  # other load, % of all CPUs, over the window
    idle_window_s: float = 2.0
    temperature: bool = True
    temperature_delta_c: float = 2.0  # back within this of the session's start temperature
    timeout_s: float = 30.0  # the gate gives up (and records it) after this long
    cooldown_s: float = 0.0  # a fixed pause before each run


# How the runner places each worker when no condition part says otherwise: on its CPU (`runs.cpu`), loads kept
# off it. The isolation kind's default, and what the real-time study reads a condition without one as.
DEFAULT_ISOLATION_MODE = "pinned"


@dataclass(frozen=True)
class RunPolicy:
    repetitions: int | None = 5  # a fixed count per cell ...
    precision: float | None = None  # ... or a target relative CI half-width of the median (0.01 = 1%)
    pilot: int = 10  # runs per cell before the precision rule is applied
    cap: int = 50  # most runs per cell under the precision rule
    iterations: int = 10  # measured iterations inside each run
    warmup_max_iterations: int = 300  # docs/method.md's warm-up caps; 0 turns warm-up off
    warmup_max_ms: float = 2000.0
    warmup_cv: float = 0.02
    order: Order = "interleave"
    cpu: int | None = None  # the worker's CPU; None = no pinning
    # `cpu = [2, 3]`: the worker pinned to this set (`cpu` is then its last: the measured CPU of a "same" load
    # and the monitor); None: pinned to `cpu` alone
    cpu_set: tuple[int, ...] | None = None
    # measure the worker CPU's clock (boardlab-kern clock.chain) before each run, under its condition, and
    # record it beside scaling_cur_freq in the run's state (campaign.clocks)
    measure_clock: bool = False
    drop_caches: bool = False
    max_reruns: int = 3  # re-runs of an invalid run (throttled, swapped, policy changed)
    unsupported: str = "fail"  # a condition this board cannot do: "fail" the plan, or "skip" it and say so
    counters: tuple[str, ...] = ()  # hardware counters per run (platform.perf.COUNTER_NAMES), as metrics
    # precision = "auto": each workload's class target (1% compute, 2-3% memory, I/O, compression, AI)
    precision_auto: bool = False
    # a run whose SoC temperature exceeds this is invalid and re-run; None = each zone's throttling trip
    # point minus 5 C (docs/method.md "Before and around each run")
    max_temp_c: float | None = None
    timeout_s: float | None = None  # a run taking longer is killed and failed; None: derived (runner)
    # the shared reference cell of k comparisons gets ceil(sqrt(k) n) runs, capped (Dunnett's rule;
    # campaign.schedule.reference_runs); "equal": every cell n
    baseline_allocation: str = "sqrt"


@dataclass(frozen=True)
class EnergyPolicy:
    """The plan's [energy] table: power sources beyond the board's own, and the idle windows."""

    enabled: bool = True  # measure energy with every source found (false: none, and the report says so)
    primary: str | None = None  # the source efficiency uses; None = the widest scope found
    idle_window_s: float = 3.0  # idle power measured for this long, after the idle gate ...
    block_runs: int = 0  # ... before and after each block of this many runs (0 = one round of the schedule)
    min_interval_s: float = 0.01  # never sample a source faster than this
    meter_command: tuple[str, ...] = ()  # a command printing "<unix_time_s> <watts>" lines
    meter_command_scope: str = "wall"
    meter_command_interval_s: float = 1.0
    meter_serial: str | None = None  # a UM24C/UM25C-class USB meter's serial port
    meter_serial_scope: str = "board"
    meter_serial_interval_s: float = 0.5


@dataclass(frozen=True)
class ConditionSpec:
    """A named condition: one kind with its params, or several `parts` applied together (a stressor on the
    other CPUs while the worker's CPU is isolated, say). `kind` is "a+b" for a combined condition."""

    name: str  # unique label in the plan, e.g. "baseline", "memcpy-same"
    kind: str  # "baseline", "stressor", "governor", ...
    params: dict[str, Any] = field(default_factory=dict)
    baseline: str | None = None  # the condition this one is compared with (None for a baseline)
    parts: tuple[tuple[str, dict[str, Any]], ...] = ()  # (kind, params) of each part; () = ((kind, params),)
    index: int | None = None  # its position in the plan's [[conditions]]; None for the implied baseline
    workloads: tuple[str, ...] = ()  # the workloads it applies to; () = every workload of the plan

    @property
    def is_baseline(self) -> bool:
        return self.kind == "baseline"

    @property
    def all_parts(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        return self.parts or ((self.kind, self.params),)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "params": self.params,
            "baseline": self.baseline,
            "parts": [{"kind": k, "params": p} for k, p in self.all_parts],
            "workloads": list(self.workloads),
        }


@dataclass(frozen=True)
class WorkloadEntry:
    name: str
    params: dict[str, Any]  # a list value expands into one cell per value
    metric: str | None = None  # the primary metric; None = the workload's first
    compare: str | None = None  # a listed parameter whose first value is the baseline of the others
    threshold: float | None = None  # practical threshold delta (0.02 = 2%); None = the default
    tail_threshold: float | None = None  # the same for p99 and above; None = the default (10%)
    precision: float | None = None  # this workload's CI half-width target under the precision rule
    repetitions: int | None = None  # its cells' runs under the fixed rule; None = [runs] repetitions


@dataclass(frozen=True)
class SweepRequest:
    """A plan's [sweep] table as parsed: what to expand from the board (`campaign.plan.expand_sweep`), and the
    [runs] `cpu` as the plan gave it, which the board's grid checks."""

    kind: str  # "opp-grid"
    cluster: str = "auto"  # a cpufreq policy, or auto
    bus_hz: str | int = "record"  # "record", "max", "min" or a frequency
    cpu_given: int | str | None = None


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    seed: int
    runs: RunPolicy
    gates: Gates
    workloads: tuple[WorkloadEntry, ...]
    conditions: tuple[ConditionSpec, ...]
    source: str  # the plan's text, stored with the campaign
    source_name: str  # file path or "preset:NAME"
    energy: EnergyPolicy = field(default_factory=EnergyPolicy)
    notes: tuple[str, ...] = ()  # the grid `expand_sweep` found on the board, for the CLI to say
    declared: tuple[WorkloadSpec, ...] = ()  # the workloads it declares itself (kind = "program")
    # a [sweep] not yet expanded from a board: `conditions` is empty until `campaign.plan.expand_sweep`
    sweep: SweepRequest | None = None


@dataclass(frozen=True)
class Cell:
    """One workload with fixed parameters under one condition, judged on `metric`; `tail`: its metric spec
    declares it a tail (`MetricSpec.tail`), which its cell facts keep for analysis."""

    workload: str
    params: tuple[tuple[str, Any], ...]  # sorted, so that equal cells compare equal
    condition: str
    metric: str
    tail: bool = field(default=False, compare=False)  # follows from `metric`: not part of the identity

    @property
    def key(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.workload}[{params}]@{self.condition}"

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def params_json(self) -> str:
        return json.dumps(self.params_dict, sort_keys=True)


@dataclass(frozen=True)
class ScheduledRun:
    seq: int  # position in the schedule
    cell: Cell
    repetition: int  # 1-based, per cell
    block: int  # the round (interleave) or block (abba) it belongs to
    aa_arm: str | None = None  # "A1" / "A2" for a reference cell's runs (the A/A control), else None


@dataclass(frozen=True)
class CommitIdentity:
    """What a campaign measured, for CI (`run --commit auto|SHA --branch NAME`): the source's commit hash,
    its `git describe --always --dirty` name and the branch; each may be unknown (None)."""

    sha: str | None
    describe: str | None = None
    branch: str | None = None

    def words(self) -> str:
        """'v1.4-3-gabc1234 (main)', or the hash's first 12 digits where no describe name is known."""
        name = self.describe or (self.sha[:12] if self.sha else "")
        return f"{name} ({self.branch})" if self.branch and name else name or self.branch or ""

    def run_args(self) -> list[str]:
        """The `boardlab run` arguments that give a campaign on a board this identity (a fleet run)."""
        out = [f"--commit={self.sha}"] if self.sha else []
        out += [f"--commit-describe={self.describe}"] if self.describe and self.sha else []
        return out + ([f"--branch={self.branch}"] if self.branch else [])
