"""Native kernels: their specs come from `boardlab-kern --list --json`, so C stays the single source.

This module also builds boardlab-kern's command line (`kern_argv`) for a measured run (the spec's
`measured_argv` hook), a continuous load (`load_argv`) and a rate search's trials (workloads/ratesearch.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from boardlab.model.workload import LaunchOptions, MetricSpec, ParamSpec, WorkloadSpec

# a kernel as a load: many iterations, so that it restarts rarely; the condition's stop ends it anyway
LOAD_ITERATIONS = 100000


def kern_argv(kernel: str, params: Mapping, *flags: str) -> list[str]:
    """`boardlab-kern KERNEL --param k=v ... FLAGS`."""
    from boardlab.native import kern_path

    argv = [str(kern_path()), kernel]
    for key, value in params.items():
        argv += ["--param", f"{key}={value}"]
    return argv + list(flags)


def measured_argv(kernel: str, params: Mapping, options: LaunchOptions) -> list[str]:
    """One measured run: the plan's iterations and warm-up rule, its counters, a JSON result."""
    flags = ["--counters", ",".join(options.counters)] if options.counters else []
    return kern_argv(kernel, params, *flags, "--iterations", str(options.iterations),
                     "--warmup-max-iterations", str(options.warmup_max_iterations),
                     "--warmup-max-ms", f"{options.warmup_max_ms:g}",
                     "--warmup-cv", f"{options.warmup_cv:g}", "--json")  # fmt: skip


def load_argv(kernel: str, params: Mapping) -> list[str]:
    """A steady load: no warm-up, iterations enough that the restart (the command kind's) is rare."""
    return kern_argv(kernel, params, "--iterations", str(LOAD_ITERATIONS), "--warmup-max-iterations", "0")


# What analysis needs to know of a kernel's results (WorkloadSpec's analysis fields), one line per kernel that
# needs more than the defaults: the C descriptor declares parameters and metrics, not how studies read them.
ANALYSIS_FIELDS: dict[str, dict] = {
    "io.storage": {"roles": ("io-throughput",), "throughput_curve": ("bs", "bandwidth_mb_s", 8e6)},
    "io.net": {
        "roles": ("io-throughput", "network"),
        "throughput_curve": ("msg_bytes", "goodput_bit_s", 1.0),
    },
    "stream.pipeline": {
        "roles": ("io-throughput", "pipeline"),
        "throughput_curve": ("block_bytes", "goodput_bit_s", 1.0),
    },
    **{f"scimark.{k}": {"composite": "SciMark composite"} for k in ("fft", "sor", "mc", "sparse", "lu")},
    "compute.gemm": {"roles": ("compute",)},
    "compute.linpack": {"roles": ("compute",)},
}

# The kernels' tail metrics (p99 and above: `MetricSpec.tail`), declared beside their analysis fields for the
# same reason: the C descriptor says how a metric is measured, not which threshold judges it.
TAIL_METRICS: dict[str, tuple[str, ...]] = {
    "io.storage": ("latency_p99_ns", "latency_p999_ns"),
    "io.net": ("latency_p99_ns", "latency_p999_ns"),
    "svc.pub": ("lag_p99_ns",),
    "svc.sub": ("latency_p99_ns",),
    "svc.nmea": ("lag_p99_ns",),
    "svc.load": ("corrected_p99_ns", "service_p99_ns"),
}


def _spec(entry: dict) -> WorkloadSpec:
    params = tuple(
        ParamSpec(
            name=p["name"],
            type=p["type"],
            default=p.get("default"),
            min=p.get("min"),
            max=p.get("max"),
            choices=tuple(p.get("choices", ())),
            unit=p.get("unit"),
            help=p.get("help") or "",
        )
        for p in entry["params"]
    )
    metrics = tuple(
        MetricSpec(
            name=m["name"],
            unit=m["unit"],
            higher_is_better=m["higher_is_better"],
            kind=m["kind"],
            phase=m.get("phase"),
            help=m.get("help") or "",
            tail=m["name"] in TAIL_METRICS.get(entry["name"], ()),
        )
        for m in entry["metrics"]
    )
    return WorkloadSpec(
        name=entry["name"],
        family=entry["family"],
        summary=entry["summary"],
        runner="kern",
        params=params,
        metrics=metrics,
        unsupported_reason=None if entry["supported"] else entry["reason"],
        phases=tuple(entry.get("phases", ())),
        **ANALYSIS_FIELDS.get(entry["name"], {}),
        measured_argv=functools.partial(measured_argv, entry["name"]),
        load_argv=functools.partial(load_argv, entry["name"]),
    )


def specs() -> list[WorkloadSpec]:
    from boardlab.native import kernel_catalog

    return [_spec(e) for e in kernel_catalog()["kernels"]]
