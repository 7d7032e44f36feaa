"""The practical threshold delta and the report's correction family (docs/method.md "Comparing ...").

delta is the smallest effect worth a verdict: a statement of what matters, set per workload by the plan's
`threshold` (and `tail_threshold` for p99 and above), with defaults of 2% for run-time and throughput and
10% for tail metrics (those the metric's spec declares a tail: `MetricSpec.tail`, kept in the cell's
facts). It is never estimated from the runs being compared: their sampling noise is already in the
confidence interval, and counting it twice made real effects read as "no change".
"""

from __future__ import annotations

from typing import Literal, Protocol

DEFAULT_DELTA = 0.02  # run-time and throughput
DEFAULT_TAIL_DELTA = 0.10  # p99 and above
HOLM_MAX_FAMILY = 50  # above this many comparisons, Benjamini-Hochberg (a sweep, exploratory)

FamilyMethod = Literal["holm", "bh"]


class Thresholds(Protocol):
    """What a cell's plan entry says of its thresholds (`model.facts.CellFacts`): fractions, None = default;
    `derived`: read from the stored plan by workload name, not stored with the cell; `tail`: its metric is a
    tail (None: not known, read as not a tail; the analysis resolves it before judging)."""

    @property
    def threshold(self) -> float | None: ...
    @property
    def tail_threshold(self) -> float | None: ...
    @property
    def derived(self) -> bool: ...
    @property
    def tail(self) -> bool | None: ...


def family_method(size: int) -> FamilyMethod:
    """Holm (1979) for a family of up to 50 comparisons, Benjamini & Hochberg (1995) above
    (docs/method.md)."""
    return "holm" if size <= HOLM_MAX_FAMILY else "bh"


def family_method_name(method: str) -> str:
    return {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}.get(method, method)


def threshold_of(cell: Thresholds, *, tail: bool = False) -> tuple[float, str]:
    """The practical threshold delta of a cell's metric, or of its tail (`tail`: a tail comparison), and where
    it comes from: the `threshold` (`tail_threshold` for tails) of the plan entry that produced the cell, else
    the default (2%, tails 10%)."""
    tail = tail or bool(cell.tail)
    key = "tail_threshold" if tail else "threshold"
    value = cell.tail_threshold if tail else cell.threshold
    if value is not None:
        how = (
            " of the workload's first entry that sets one: the campaign was stored without its "
            "cells' thresholds"
            if cell.derived
            else ""
        )
        return value, f"plan: {key} = {value:g}{how}"
    default = DEFAULT_TAIL_DELTA if tail else DEFAULT_DELTA
    return default, f"default for {'tail metrics' if tail else 'run-time and throughput'}"
