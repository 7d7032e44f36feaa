"""What one run produced, as the runner hands it to the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# how a run's invalid_reason begins when its condition's load did not run (the runner writes it, the report
# counts it per condition)
LOAD_DID_NOT_RUN = "the load did not run"


@dataclass(frozen=True)
class MetricResult:
    name: str
    unit: str
    higher_is_better: bool
    values: tuple[float, ...]  # per measured iteration; empty for a single-value metric
    median: float | None
    min: float | None = None
    p90: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class Histogram:
    """A latency histogram as a worker kept it: bucket i counts values in [i*w, (i+1)*w)."""

    name: str
    bucket_width: float
    unit: str
    counts: tuple[int, ...]
    overflow: int  # samples beyond the last bucket
    total: int  # all samples, overflow included


@dataclass(frozen=True)
class RunEnergy:
    """One run's energy from one power source, clipped to the worker's exact start and end."""

    source: str
    method: str  # counter | trapezoid
    start_ns: int  # CLOCK_MONOTONIC
    end_ns: int
    energy_j: float
    power_avg_w: float
    power_peak_w: float
    quantization_j: float  # +- bound from the source's update interval at the two edges
    samples: int
    update_interval_s: float | None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateResult:
    waited_s: float
    timed_out: bool
    detail: str  # what the gate waited for, or why it gave up


@dataclass(frozen=True)
class RunResult:
    cell_key: str
    repetition: int
    attempt: int
    seq: int
    started_unix_s: float
    wall_ns: int
    cpu: int | None  # the CPU the worker was pinned to
    exit_code: int
    ok: bool  # the worker finished and verified its result
    valid: bool  # ok, and nothing invalidated it (throttling, swapping, a policy change)
    invalid_reason: str | None
    value: float | None  # the run's summary value: median over iterations of the cell's metric
    metrics: tuple[MetricResult, ...]
    iterations_ns: tuple[int, ...]
    warmup_iterations: int | None
    warmup_capped: bool | None
    rusage: dict[str, int]  # from wait4: the worker's own rusage, not the parent's
    gate: GateResult
    condition_state: dict[str, Any]
    monitor: dict[str, Any]  # summary of the monitor's series for this run
    series: tuple[tuple[str, int, float], ...] = field(default=())  # (source, t_ns since start, value)
    histograms: tuple[Histogram, ...] = field(default=())
    error: str | None = None
    worker_json: str | None = None  # the worker's raw result, kept for re-analysis
    energy: tuple[RunEnergy, ...] = field(default=())  # per power source (boardlab.energy)
    aa_arm: str | None = None  # "A1" / "A2": the schedule's A/A label of a reference cell's run
