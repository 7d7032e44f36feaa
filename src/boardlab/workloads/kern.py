"""Native kernels: their specs come from `boardlab-kern --list --json`, so C stays the single source."""

from __future__ import annotations

from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec


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
    )


def specs() -> list[WorkloadSpec]:
    from boardlab.native import kernel_catalog

    return [_spec(e) for e in kernel_catalog()["kernels"]]
