"""Declarative specs of workloads: their parameters (typed, ranged) and metrics (with units)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

# "list" is a list of strings (a command's argv); "table" a TOML table checked by its owner (stress-ng
# options)
ParamType = Literal["int", "float", "str", "enum", "bool", "list", "table"]


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a workload or a condition kind. `words` are names accepted in place of a value of
    the type (a frequency_khz of "max", policies = "all"); `required` parameters have no default."""

    name: str
    type: ParamType
    default: str | int | float | bool | None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    unit: str | None = None
    help: str = ""
    words: tuple[str, ...] = ()
    required: bool = False

    def to_dict(self) -> dict:
        return {**asdict(self), "choices": list(self.choices), "words": list(self.words)}


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str
    higher_is_better: bool
    kind: str = "rate"  # rate | time | value | mean, as boardlab-kern declares them
    phase: str | None = None
    help: str = ""
    # p99 and above, or a maximum: a verdict on it is held to the tail threshold (docs/method.md), declared
    # here because a name ("p99", "max") says it only by convention
    tail: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LaunchOptions:
    """How the plan's [runs] asks a measured run to go: what a `measured_argv` hook turns into flags."""

    iterations: int
    warmup_max_iterations: int = 0
    warmup_max_ms: float = 0.0
    warmup_cv: float = 0.0
    counters: tuple[str, ...] = ()  # boardlab-kern counter items; a Python worker has none


@dataclass(frozen=True)
class DirectExecution:
    """One execution of a program the runner started itself (a `DirectLaunch`): what a launcher worker would
    have measured of it, without the launcher."""

    wall_ns: int  # from just before its spawn to the moment it exited (its pidfd became readable)
    exit_code: int  # negative: the signal that ended it (as subprocess reports it)
    rusage: Mapping[str, int]  # wait4's, of the program alone: utime_us, stime_us, maxrss_kib, ...
    stderr: str  # the end of its stderr (its last bytes kept), for the error of a failed run
    timed_out: bool  # killed with its process group at the timeout
    start_error: str | None = None  # why it could not be started (then nothing else is set)

    @classmethod
    def not_started(cls, why: str) -> DirectExecution:
        """A program that could not be started (`why` as strerror says it): exit code 127, as a shell's."""
        return cls(0, 127, {}, "", False, why)


@dataclass(frozen=True)
class DirectLaunch:
    """A run the runner may make itself, with no worker process between it and the program: one execution of
    `argv` (its own process group, pinned, stdout to /dev/null, stderr's end kept), killed with its group
    after `timeout_s`; `before`, if given, is executed the same way first, outside the run's timing and
    monitoring, and the program only if it succeeds (a prepare_each). `result` turns the executions made, in
    that order, into the body of the worker result that the workload's worker would have printed for them,
    under `workload` with `params`."""

    workload: str
    argv: tuple[str, ...]
    timeout_s: float
    params: Mapping[str, Any]
    result: Callable[[tuple[DirectExecution, ...]], dict] = field(compare=False, repr=False)
    before: tuple[str, ...] = ()


# A workload's hooks take its coerced parameters (name -> value, as its spec declares them).
MeasuredArgv = Callable[[Mapping, LaunchOptions], list[str]]
Direct = Callable[[Mapping], "DirectLaunch | None"]
LoadArgv = Callable[[Mapping], list[str]]
Prepare = Callable[[Mapping, Callable[[str], None]], None]
CellUnsupported = Callable[[Mapping], "str | None"]


def _hook():
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class WorkloadSpec:
    """One workload: `runner` says which worker executes it ("kern" = boardlab-kern).

    Hooks, declared by the workload's own module so that no other module names it (docs/extending.md):
    `measured_argv` launches one measured run (the worker process the runner spawns and pins);
    `direct`, where it gives a `DirectLaunch` for a cell's parameters, lets the runner start the measured
    program itself instead (no worker, so no interpreter start-up per run): the `program` workload's;
    `load_argv` launches it as a continuous load beside another workload (the `workload` condition kind;
    None = it cannot be a load) and `load_params` names the parameters it takes there (None = all);
    `prepare` runs once in boardlab before the campaign stores anything (build a model, check a file).
    `cell_unsupported` takes a cell's parameters (as the plan gives them) and says why this board cannot run
    the workload with them (None: it can), e.g. power at rest without a power sensor: such a cell is skipped
    with its reason like an unsupported condition, never run to fail.
    `tail_samples`: its per-sample p99 is a verdict metric too (a tail comparison beside the median's)."""

    name: str
    family: str
    summary: str
    runner: str
    params: tuple[ParamSpec, ...] = ()
    metrics: tuple[MetricSpec, ...] = ()
    unsupported_reason: str | None = None
    phases: tuple[str, ...] = field(default=())
    measured_argv: MeasuredArgv | None = _hook()
    direct: Direct | None = _hook()
    load_argv: LoadArgv | None = _hook()
    load_params: tuple[str, ...] | None = None
    prepare: Prepare | None = _hook()
    cell_unsupported: CellUnsupported | None = _hook()
    # ---- what analysis needs to know of the results (set in the workload's own module) ----
    # The per-sample p99 is a verdict metric: a tail comparison of its own beside the median's.
    tail_samples: bool = False
    # A per-run p99 the worker computes over all its samples, and the metric counting those samples; without
    # it the tail uses the run's stored samples of the primary metric (run_values).
    tail_metric: str | None = None
    tail_count_metric: str | None = None
    # Histograms (this name, or name.*) holding the run's samples, e.g. wake-up latencies per CPU.
    sample_histogram: str | None = None
    # What its results show, for studies that gather them: "io-throughput", "network", "pipeline", "dma",
    # "compute", "rate-search", "services".
    roles: tuple[str, ...] = ()
    # A throughput against block size curve: (block-size parameter, throughput metric, factor to bit/s).
    throughput_curve: tuple[str, str, float] | None = None
    # A headline figure shared with other workloads: the arithmetic mean of the primary metrics of every
    # workload naming the same composite (SciMark 2.0's composite: the mean of its five kernels' MFLOPS).
    composite: str | None = None
    # The longest a run may take by its own bound (a program's timeout_s x its executions per run): the
    # runner's default timeout is never shorter than it plus start-up.
    run_timeout_s: float | None = None
    # The worker only starts the measured program and waits for it: the monitor's per-process figures leave
    # the worker's own CPU time and memory out and keep its descendants' (docs/monitoring.md).
    launcher: bool = False

    @property
    def supported(self) -> bool:
        return self.unsupported_reason is None

    @property
    def primary_metric(self) -> MetricSpec:
        return self.metrics[0]

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "family": self.family,
            "summary": self.summary,
            "runner": self.runner,
            "supported": self.supported,
            "reason": self.unsupported_reason,
            "params": [p.to_dict() for p in self.params],
            "metrics": [m.to_dict() for m in self.metrics],
            "phases": list(self.phases),
            "tail_samples": self.tail_samples,
            "can_be_load": self.load_argv is not None,
        }


@runtime_checkable
class PythonWorkload(Protocol):
    """What a module named in `workloads.PYTHON_WORKLOADS` provides (the contract of a Python-run workload;
    a native kernel is described by boardlab-kern's catalog instead). `python -m boardlab.pyrun` calls `run`
    in a fresh process per run.

    Optional, read with `getattr`: `supported() -> str | None` (why it cannot run on this machine),
    `from_plan(entry, error, base, catalog)` for the plan entries of its own kind (`kind = "program"`) and
    `check(params)`, the setup a run makes before it measures, raising InputError where it cannot be made
    (`python -m boardlab.pyrun NAME --check`, which a `prepare` hook runs before the campaign)."""

    SPEC: WorkloadSpec  # its declaration, runner "python"; its hooks (load, preparation) are in it too

    def run(self, params: dict, iterations: int | None = None) -> dict:
        """One run: the body of its worker result (`model.worker_result.build_worker_result`)."""
        ...
