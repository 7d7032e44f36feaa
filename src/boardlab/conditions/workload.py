"""A catalog workload running continuously beside the measured one (the interference study: an AI model beside cyclictest).

Plan syntax:

    [[conditions]]
    name = "mobilenet-load"
    kind = "workload"
    params = { workload = "ai.inference", params = { model = "mobilenet_v1", runtime = "litert" }, placement = "other" }

    [[conditions]]
    name = "lu-load"
    kind = "workload"
    params = { workload = "scimark.lu", params = { size = "large" }, placement = "other" }

`ai.inference` runs as the continuous inference loop (`python -m boardlab.ai.loop`: one model, frames back to
back until stopped); a native kernel runs in boardlab-kern without warm-up, restarted whenever it ends, so
it is a steady load. Everything else about the load (placement, warm-up, its CPU use, stopping it, the
restore journal) is the `command` kind's: this kind only turns a catalog workload into that command.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, validate_params
from boardlab.conditions.command import KIND as COMMAND
from boardlab.model.workload import ParamSpec

# ai.inference parameters the loop takes, and its flag for each
_AI_FLAGS = {
    "model": "--model",
    "runtime": "--runtime",
    "precision": "--precision",
    "threads": "--threads",
    "spin": "--spin",
    "xnnpack": "--xnnpack",
    "delegate": "--delegate",
    "delegate_options": "--delegate-options",
    "models_dir": "--models-dir",
    "seed": "--seed",
}
_KERN_ITERATIONS = 100000  # many iterations, so a kernel restarts rarely; the stop ends it anyway
PARAMS = (
    ParamSpec(
        "workload",
        "str",
        None,
        required=True,
        help="the catalog workload to run as a load: a kernel or ai.inference (see `boardlab list`)",
    ),
    ParamSpec("params", "table", None, help="that workload's parameters, checked against its own spec"),
    *background.COMMON_PARAMS,
)


def _spec(name: str):
    from boardlab.workloads import find_workload

    return find_workload(name)


def load_argv(workload: str, params: dict) -> list[str]:
    """The command that keeps `workload` running."""
    if workload == "ai.inference":
        argv = [sys.executable, "-m", "boardlab.ai.loop"]
        for key, value in params.items():
            argv += [_AI_FLAGS[key], str(value)]
        return argv
    from boardlab.native import kern_path

    argv = [str(kern_path()), workload]
    for key, value in params.items():
        argv += ["--param", f"{key}={value}"]
    return argv + ["--iterations", str(_KERN_ITERATIONS), "--warmup-max-iterations", "0"]


@dataclass(frozen=True)
class Workload:
    name: str = "workload"
    summary: str = (
        "a catalog workload (a kernel, or the AI inference loop) running continuously beside the workload"
    )
    params: tuple[ParamSpec, ...] = PARAMS

    def validate(self, params: dict) -> tuple[str | None, str] | None:
        bad = validate_params(self.params, params)
        if bad:
            return bad
        spec = _spec(params["workload"])
        if spec is None:
            return "workload", f"unknown workload {params['workload']!r}; see `boardlab list`"
        if spec.runner == "python" and spec.name != "ai.inference":
            return "workload", f"{spec.name} cannot run as a continuous load; kernels and ai.inference can"
        for key, value in params.get("params", {}).items():
            if spec.param(key) is None or spec.name == "ai.inference" and key not in _AI_FLAGS:
                valid = (
                    ", ".join(_AI_FLAGS)
                    if spec.name == "ai.inference"
                    else ", ".join(p.name for p in spec.params)
                )
                return "params", f"{spec.name} as a load has no parameter {key!r}; valid: {valid}"
            from boardlab.workloads.params import check_param_value

            reason = check_param_value(spec.param(key), value)
            if reason:
                return "params", f"{key}: {reason}"
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        spec = _spec(params["workload"])
        if not spec.supported:
            return f"unsupported: {spec.name}: {spec.unsupported_reason}"
        if spec.name == "ai.inference":
            from boardlab.workloads import ai_inference
            from boardlab.workloads.params import coerce_params

            full = coerce_params(spec, [f"{k}={v}" for k, v in params.get("params", {}).items()])
            ai_inference.prepare(full, lambda message: None)  # builds a generated model that is missing
        return COMMAND.check(self._command(params), ctx)

    def _command(self, params: dict) -> dict:
        command = {"argv": load_argv(params["workload"], params.get("params", {})), "restart": True}
        for key in ("placement", "warmup_s"):
            if key in params:
                command[key] = params[key]
        return command

    def apply(self, params: dict, ctx: ApplyContext):
        return COMMAND.apply(self._command(params), ctx)


KIND = Workload()
