"""A catalog workload running continuously beside the measured one (the interference study: an AI model beside
cyclictest).

Plan syntax:

    [[conditions]]
    name = "mobilenet-load"
    kind = "workload"
    [conditions.params]
    workload = "ai.inference"
    params = { model = "mobilenet_v1", runtime = "litert" }
    placement = "other"

    [[conditions]]
    name = "lu-load"
    kind = "workload"
    params = { workload = "scimark.lu", params = { size = "large" }, placement = "other" }

How the workload runs as a load is its own spec's `load_argv` hook: `ai.inference` declares the continuous
inference loop (`python -m boardlab.ai.loop`: one model, frames back to back until stopped); a native kernel
runs in boardlab-kern without warm-up, restarted whenever it ends, so it is a steady load; a workload without
the hook cannot be a load. Its `prepare` hook (building a missing model) runs in `check`, before anything is
stored. Everything else about the load (placement, warm-up, its CPU use, stopping it, the restore journal)
is the `command` kind's: this kind only turns a catalog workload into that command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.conditions.command import KIND as COMMAND
from boardlab.conditions.command import CommandParams


@dataclass(frozen=True)
class WorkloadParams(background.BackgroundParams):
    workload: str = param(
        "str",
        None,
        required=True,
        help="the catalog workload to run as a load: a kernel, or one that declares a load (ai.inference)",
    )
    params: Mapping[str, Any] = param(
        "table", None, help="that workload's parameters, checked against its own spec"
    )


def _spec(name: str):
    from boardlab.workloads import find_workload

    return find_workload(name)


def load_argv(workload: str, params: dict) -> list[str]:
    """The command that keeps `workload` running (its spec's `load_argv` hook)."""
    return _spec(workload).load_argv(params)


def _load_params(spec) -> tuple[str, ...]:
    return spec.load_params if spec.load_params is not None else tuple(p.name for p in spec.params)


class Workload(DeclaredKind[WorkloadParams]):
    name = "workload"
    summary = (
        "a catalog workload (a kernel, or the AI inference loop) running continuously beside the workload"
    )

    def refuse(self, p: WorkloadParams, params: dict) -> tuple[str | None, str] | None:
        spec = _spec(p.workload)
        if spec is None:
            return "workload", f"unknown workload {p.workload!r}; see `boardlab list`"
        if spec.load_argv is None:
            from boardlab.workloads import all_workloads

            can = sorted(w.name for w in all_workloads() if w.runner != "kern" and w.load_argv is not None)
            return (
                "workload",
                f"{spec.name} cannot run as a continuous load; kernels and {', '.join(can)} can",
            )
        valid = _load_params(spec)
        for key, value in p.params.items():
            if spec.param(key) is None or key not in valid:
                return "params", f"{spec.name} as a load has no parameter {key!r}; valid: {', '.join(valid)}"
            from boardlab.workloads.params import check_param_value

            reason = check_param_value(spec.param(key), value)
            if reason:
                return "params", f"{key}: {reason}"
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        p = self.typed(params)
        spec = _spec(p.workload)
        if not spec.supported:
            return f"unsupported: {spec.name}: {spec.unsupported_reason}"
        return COMMAND.check_params(_command(p), ctx)

    def prepare(self, params: dict, ctx: ApplyContext, note: Callable[[str], None]) -> None:
        """The load's own preparation (a missing model built), once per workload and parameters in the
        campaign (`ctx.prepared`, which its cells share)."""
        from boardlab.workloads.params import prepare_once

        p = self.typed(params)
        prepare_once(_spec(p.workload), p.params.items(), ctx.prepared, note)

    def applied(self, p: WorkloadParams, ctx: ApplyContext):
        return COMMAND.applied(_command(p), ctx)


def _command(p: WorkloadParams) -> CommandParams:
    """The `command` kind's parameters that keep the workload running, placed and warmed up as asked."""
    argv = load_argv(p.workload, dict(p.params))
    return CommandParams(argv=tuple(argv), restart=True, placement=p.placement, warmup_s=p.warmup_s)


KIND = Workload()
