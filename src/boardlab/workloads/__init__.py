"""The workload catalog: native kernels declared by boardlab-kern, plus Python-run workloads.

A Python-run workload is one module exporting `SPEC` (a WorkloadSpec with runner "python"), an optional
`supported() -> str | None`, and `run(params, iterations=None) -> dict` (the schema-1 result body), run in a
fresh `python -m boardlab.worker` process. Importing the module does nothing else (heavy imports inside
`run`). One line per module below.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from boardlab.model.workload import WorkloadSpec

# workload name -> module (one line per Python-run workload)
PYTHON_WORKLOADS: dict[str, str] = {
    "ai.inference": "boardlab.workloads.ai_inference",
    "rt.cyclictest": "boardlab.workloads.rt_cyclictest",
    "io.net_zeroloss": "boardlab.workloads.net_zeroloss",
    "stream.knee": "boardlab.workloads.stream_knee",
    "io.dma": "boardlab.workloads.io_dma",
    "svc.scenario": "boardlab.workloads.services",
}


def python_workload_modules() -> dict[str, ModuleType]:
    return {name: importlib.import_module(mod) for name, mod in PYTHON_WORKLOADS.items()}


def all_workloads() -> list[WorkloadSpec]:
    """Every workload boardlab knows, supported or not (unsupported ones carry their reason)."""
    import dataclasses

    from boardlab.workloads import kern

    specs = list(kern.specs())
    for module in python_workload_modules().values():
        reason = module.supported() if hasattr(module, "supported") else None
        specs.append(dataclasses.replace(module.SPEC, unsupported_reason=reason) if reason else module.SPEC)
    return specs


def find_workload(name: str) -> WorkloadSpec | None:
    return next((w for w in all_workloads() if w.name == name), None)
