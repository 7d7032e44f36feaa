"""The workload catalog: native kernels declared by boardlab-kern, plus Python-run workloads.

A Python-run workload is one module (the `PythonWorkload` protocol of boardlab.model.workload, the contract
this registry and the workloads share) exporting `SPEC` (a WorkloadSpec with runner "python"), an optional
`supported() -> str | None`, and `run(params, iterations=None) -> dict` (the body of a worker result,
boardlab.model.worker_result), run in a fresh `python -m boardlab.pyrun` process unless its SPEC declares
another `measured_argv`. Its other hooks (a continuous load, a preparation) are in its SPEC too. Importing
the module does nothing else (heavy imports inside `run`). One line per module below.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from collections.abc import Mapping
from typing import cast

from boardlab.model.workload import LaunchOptions, PythonWorkload, WorkloadSpec

# workload name -> module (one line per Python-run workload)
PYTHON_WORKLOADS: dict[str, str] = {
    "ai.inference": "boardlab.workloads.ai_inference",
    "rt.cyclictest": "boardlab.workloads.rt_cyclictest",
    "io.net_zeroloss": "boardlab.workloads.net_zeroloss",
    "stream.knee": "boardlab.workloads.stream_knee",
    "io.dma": "boardlab.workloads.io_dma",
    "svc.scenario": "boardlab.workloads.services",
    "program": "boardlab.workloads.program",  # a plan's kind = "program" entries (its from_plan)
}


def python_workload_modules() -> dict[str, PythonWorkload]:
    return {
        name: cast(PythonWorkload, importlib.import_module(mod)) for name, mod in PYTHON_WORKLOADS.items()
    }


def worker_argv(workload: str, params: Mapping, options: LaunchOptions) -> list[str]:
    """The default measured run of a Python-run workload: one fresh `python -m boardlab.pyrun`."""
    argv = [sys.executable, "-m", "boardlab.pyrun", workload]
    for key, value in params.items():
        argv += ["--param", f"{key}={value}"]
    return argv + ["--iterations", str(options.iterations), "--json"]


def _python_spec(module: PythonWorkload) -> WorkloadSpec:
    spec = module.SPEC
    reason = module.supported() if hasattr(module, "supported") else None
    return dataclasses.replace(
        spec,
        unsupported_reason=reason or spec.unsupported_reason,
        measured_argv=spec.measured_argv or functools.partial(worker_argv, spec.name),
    )


def all_workloads() -> list[WorkloadSpec]:
    """Every workload boardlab knows, supported or not (unsupported ones carry their reason), with the
    hooks that launch it filled in."""
    from boardlab.workloads import kern

    return [*kern.specs(), *(_python_spec(m) for m in python_workload_modules().values())]


def find_workload(name: str) -> WorkloadSpec | None:
    return next((w for w in all_workloads() if w.name == name), None)
