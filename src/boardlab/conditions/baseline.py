"""The baseline: the workload alone, with nothing applied around it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Baseline:
    name: str = "baseline"
    summary: str = "the workload alone; what every other condition is compared with"

    def validate(self, params: dict) -> tuple[str | None, str] | None:
        if params:
            return next(iter(params)), "the baseline takes no parameters"
        return None

    def check(self, params: dict, ctx) -> str | None:
        return None

    def apply(self, params: dict, ctx):
        """Nothing to apply; the state recorded with each run is empty."""
        return contextlib.nullcontext({})


KIND = Baseline()
