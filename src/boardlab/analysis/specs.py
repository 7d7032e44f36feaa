"""The workload specs analysis reads (tails, histograms, roles), by workload name, cached per process.

Python-run workloads' specs come from their modules; native kernels' from `boardlab-kern --list --json`.
A report made where the kernels binary does not run still gets the Python workloads' specs.
"""

from __future__ import annotations

from functools import lru_cache

from boardlab.model.workload import WorkloadSpec


@lru_cache(maxsize=1)
def _catalog() -> dict[str, WorkloadSpec]:
    from boardlab.workloads import python_workload_modules

    out = {m.SPEC.name: m.SPEC for m in python_workload_modules().values()}
    try:
        from boardlab.workloads import kern

        for s in kern.specs():
            out.setdefault(s.name, s)
    except Exception:  # no runnable boardlab-kern here: the kernels' cells read as plain workloads
        pass
    return out


def spec_of(workload: str) -> WorkloadSpec | None:
    return _catalog().get(workload)


def has_role(workload: str, role: str) -> bool:
    spec = spec_of(workload)
    return spec is not None and role in spec.roles


def tail_samples(workload: str) -> bool:
    spec = spec_of(workload)
    return spec is not None and spec.tail_samples
