"""What one run produced, as the runner hands it to the store."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# how a run's invalid_reason begins when its condition's load did not run (the runner writes it, the report
# counts it per condition)
LOAD_DID_NOT_RUN = "the load did not run"
# how each reason of a run's invalid_reason (the runner joins several with "; ") begins, and the kind a report
# counts it under
INVALID_KINDS = (
    ("throttled", "throttled"),
    ("swapped", "swapped"),
    ("the cpufreq governor changed", "governor changed"),
    (LOAD_DID_NOT_RUN, "load did not run"),
)


def invalid_kinds(reason: str) -> tuple[str, ...]:
    """The kind of each reason in a run's invalid_reason: "throttled", "swapped", "governor changed", "load
    did not run", "over the temperature limit", "load ended early", else the reason itself."""
    out = []
    for part in reason.split("; "):
        kind = next((k for prefix, k in INVALID_KINDS if part.startswith(prefix)), None)
        if kind is None and ", over the limit " in part:
            kind = "over the temperature limit"
        elif kind is None and part.endswith(" ended before the workload did"):
            kind = "load ended early"
        out.append(kind or part)
    return tuple(out)


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


@dataclass(frozen=True)
class RunColumns:
    """The six numbers the analysis reads of every run, derived once from the run's monitor summary and its
    rusage (`run_columns`): the store keeps them as columns of `runs` (store migration 9), so a report reads
    numbers instead of parsing two JSON objects per run. None = not recorded.

    `mean_freq_khz`: mean of the monitored CPUs' mean frequencies; `max_temp_mc`: highest temperature of any
    zone, in millidegrees Celsius; `throttled`: whether a throttle event was seen; `worker_cpu_pct`: the
    workload's mean CPU use, % of one CPU; `user_us` and `system_us`: the worker's own CPU time (wait4)."""

    mean_freq_khz: float | None
    max_temp_mc: float | None
    throttled: bool | None
    worker_cpu_pct: float | None
    user_us: int | None
    system_us: int | None


_INT64 = 2**63


def _finite(v: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (a bool, text, null, an infinity): what a
    monitor summary that boardlab did not write holds there is not a measurement."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return f if math.isfinite(f) else None


def _count(v: Any) -> int | None:
    """A JSON integer (rusage microseconds) that fits the store's 64-bit column; None for anything else."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -_INT64 <= v < _INT64 else None


def run_columns(monitor: dict[str, Any], rusage: dict[str, Any]) -> RunColumns:
    """The run's summary columns, the same for a run being stored, a store's migration and an ingest of an
    older file. `throttled` keeps the meaning it had as a raw JSON value (the analysis counts a run as
    throttled when the value is truthy, and as unrecorded when it is absent or null): a bool of it."""
    freqs = [f for k, v in monitor.items() if k.startswith("freq.") and k.endswith("_khz_mean")
             if (f := _finite(v)) is not None]  # fmt: skip
    temps = [t for k, v in monitor.items() if k.startswith("temp.") and k.endswith("_mc_max")
             if (t := _finite(v)) is not None]  # fmt: skip
    throttled = monitor.get("throttled")
    return RunColumns(
        mean_freq_khz=_finite(sum(freqs) / len(freqs)) if freqs else None,
        max_temp_mc=max(temps) if temps else None,
        throttled=None if throttled is None else bool(throttled),
        worker_cpu_pct=_finite(monitor.get("worker.cpu_pct_mean")),
        user_us=_count(rusage.get("utime_us")),
        system_us=_count(rusage.get("stime_us")),
    )
