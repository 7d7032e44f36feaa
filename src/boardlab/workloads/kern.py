"""Native kernels: their specs come from `boardlab-kern --list --json`, so C stays the single source."""

from __future__ import annotations

from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

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
    )


def specs() -> list[WorkloadSpec]:
    from boardlab.native import kernel_catalog

    return [_spec(e) for e in kernel_catalog()["kernels"]]
