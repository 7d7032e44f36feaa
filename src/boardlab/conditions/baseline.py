"""The baseline: the workload alone, with nothing applied around it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from boardlab.conditions.base import validate_params
from boardlab.model.workload import ParamSpec

PARAMS: tuple[ParamSpec, ...] = ()  # the workload alone: nothing to set


@dataclass(frozen=True)
class Baseline:
    name: str = "baseline"
    summary: str = "the workload alone; what every other condition is compared with"
    params: tuple[ParamSpec, ...] = PARAMS

    def validate(self, params: dict) -> tuple[str | None, str] | None:
        return validate_params(self.params, params)

    def check(self, params: dict, ctx) -> str | None:
        return None

    def apply(self, params: dict, ctx):
        """Nothing to apply; the state recorded with each run is empty."""
        return contextlib.nullcontext({})


KIND = Baseline()
