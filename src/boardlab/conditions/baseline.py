"""The baseline: the workload alone, with nothing applied around it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from boardlab.conditions.base import DeclaredKind


@dataclass(frozen=True)
class BaselineParams:
    """The workload alone: nothing to set."""


class Baseline(DeclaredKind[BaselineParams]):
    name = "baseline"
    summary = "the workload alone; what every other condition is compared with"

    def check(self, params: dict, ctx) -> str | None:
        return None

    def apply(self, params: dict, ctx):
        """Nothing to apply; the state recorded with each run is empty."""
        return contextlib.nullcontext({})


KIND = Baseline()
