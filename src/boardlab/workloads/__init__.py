"""The workload catalog: native kernels declared by boardlab-kern, plus Python-run workloads.

A workload module exports `SPEC` (or, for the native family, specs built from `boardlab-kern --list`).
"""

from __future__ import annotations

from boardlab.model.workload import WorkloadSpec


def all_workloads() -> list[WorkloadSpec]:
    """Every workload boardlab knows, supported or not (unsupported ones carry their reason)."""
    from boardlab.workloads import kern

    return list(kern.specs())


def find_workload(name: str) -> WorkloadSpec | None:
    return next((w for w in all_workloads() if w.name == name), None)
