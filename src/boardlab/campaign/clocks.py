"""Measured clocks against claimed ones (`boardlab info --clocks`, and a campaign's `[runs] measure_clock`):
the clock a core runs at, measured by boardlab-kern's `clock.chain` (a verified chain of dependent one-cycle
adds, pinned to that core), set against what the kernel claims for it: its cpufreq policy's current
frequency (scaling_cur_freq, read before and after) or, without cpufreq, /proc/cpuinfo's MHz. A gap over 5%
is flagged: firmware that caps the clock below what cpufreq reports, a host boosting a virtual machine past
its nominal rate, or throttling that cpufreq does not show. sbc-bench's question, asked with boardlab's
kernel and verification.

A core's clock is the fastest of the kernel's iterations: nothing makes a dependent add chain run faster than
one add per cycle, while an interrupt, a preemption or a host's steal only slows an iteration; the median is
kept beside it, and a large spread between the two says the clock moved (or the core was shared) during
the measurement. Each operating point the platform layer knows is listed (a policy's available
frequencies); the current one is measured (each other one needs its frequency set: `governor sweep` and the
`governor` condition do that, with `[runs] measure_clock`)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from boardlab.errors import MeasurementError

GAP = 0.05  # a measured clock more than 5% from the claimed one is flagged
ITERATIONS = 20
WARMUP_MS = 50  # lets a governor raise the clock before the measured iterations
RUN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ClockPoint:
    cpu: int
    policy: str | None  # cpufreq policy, None without cpufreq
    claimed_mhz: float | None
    claimed_source: str  # "scaling_cur_freq" | "/proc/cpuinfo" | "none"
    measured_mhz: float | None  # the fastest iteration's adds per microsecond
    median_mhz: float | None
    gap: float | None  # measured / claimed - 1
    flagged: bool
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def measure_cpu(
    cpu: int, *, iterations: int = ITERATIONS, warmup_ms: float = WARMUP_MS
) -> tuple[float, float]:
    """(fastest, median) MHz of boardlab-kern's clock.chain pinned to `cpu`; MeasurementError when it fails
    (its verification included: a wrong chain is no clock)."""
    from boardlab.model.worker_result import WorkerResultError, read_worker_result
    from boardlab.platform.spawn import collect, spawn
    from boardlab.workloads.kern import kern_argv

    argv = kern_argv("clock.chain", {}, "--iterations", str(iterations), "--warmup-max-ms", f"{warmup_ms:g}",
                     "--json")  # fmt: skip
    proc = spawn(argv, cpus={cpu}, self_reaping=True)
    out, err, code, _, killed = collect(proc, RUN_TIMEOUT_S)
    try:
        doc = read_worker_result(out.decode(errors="replace"))
    except WorkerResultError as exc:
        raise MeasurementError(
            f"clock.chain on CPU {cpu}: {exc} (exit {code}): {err.decode()[-300:]}"
        ) from None
    mhz = doc.metric("mhz")
    if killed or not doc.ok or mhz is None or not mhz.values:
        why = "; ".join(doc.errors) or doc.reason or f"exit {code}"
        raise MeasurementError(f"clock.chain on CPU {cpu}: {why}")
    return max(mhz.values), statistics.median(mhz.values)


def _point(
    cpu: int, policy: str | None, claimed: float | None, source: str, measured, note: str = ""
) -> ClockPoint:
    fastest, median = measured if measured is not None else (None, None)
    gap = fastest / claimed - 1 if fastest is not None and claimed else None
    return ClockPoint(
        cpu, policy, claimed, source, fastest, median, gap, gap is not None and abs(gap) > GAP, note
    )


def opps(root) -> dict[str, tuple[int, ...]]:
    """Each cpufreq policy's operating points (available frequencies, kHz): what the kernel claims."""
    from boardlab.platform import cpufreq

    return {p.name: p.frequencies_khz for p in cpufreq.read_policies(root)}


def clock_points(root, *, measure: bool, measure_cpu=measure_cpu) -> list[ClockPoint]:
    """Per online CPU, the claimed clock and (`measure`) the measured one; unmeasured points say why."""
    from boardlab.platform import cpufreq
    from boardlab.platform.cpu import cpuinfo_mhz, online_cpus

    policy_of = {cpu: p.name for p in cpufreq.read_policies(root) for cpu in p.cpus}
    by_cpuinfo = cpuinfo_mhz(root)
    out = []
    for cpu in online_cpus(root):
        policy = policy_of.get(cpu)
        before = cpufreq.current_frequency_khz(root, policy) if policy else None
        measured = measure_cpu(cpu) if measure else None
        if policy is not None:
            after = cpufreq.current_frequency_khz(root, policy) if measure else before
            note = "" if before == after else f"scaling_cur_freq moved from {before} to {after} kHz meanwhile"
            claimed = before / 1000 if before and before == after else None
            out.append(_point(cpu, policy, claimed, "scaling_cur_freq", measured, note))
        elif cpu in by_cpuinfo:
            out.append(_point(cpu, None, by_cpuinfo[cpu], "/proc/cpuinfo", measured))
        else:
            out.append(
                _point(cpu, None, None, "none", measured, "neither cpufreq nor /proc/cpuinfo claims a clock")
            )
    return out
