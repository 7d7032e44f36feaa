"""Drift check: does a cell's value trend with run order? (docs/method.md "Per cell".)"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from boardlab.stats._memo import digest, remembered
from boardlab.stats._special import rank_average
from boardlab.stats._validate import as_values
from boardlab.stats.hypothesis import Ranking, spearman, spearman_of_ranks
from boardlab.stats.text import p_is

DRIFT_ALPHA = 0.01  # research/anchors-methodology.md section 9.3: flag at p < 0.01


@dataclass(frozen=True)
class DriftCheck:
    """Spearman rank correlation of the run values against run order.

    `rho` > 0 means values grow over the session (for times: the board gets slower). `flagged` is
    p_value < alpha; `message` then tells the user what to do.
    """

    rho: float
    p_value: float
    method: Literal["exact-permutation", "t-approximation"]
    n: int
    alpha: float
    flagged: bool
    message: str | None


def drift_reason(n: int) -> str | None:
    """Why no drift check exists for n runs, or None when one can be computed."""
    if n < 3:
        return f"a drift check needs at least 3 runs (have {n})"
    return None


def drift_check(
    values: Sequence[float], order: Sequence[float] | None = None, *, alpha: float = DRIFT_ALPHA
) -> DriftCheck | None:
    """Spearman's rho of `values` against `order` (run index or start time; default: the given order).

    Method: Spearman rank correlation with a two-sided p-value (`hypothesis.spearman`: exact permutation
    distribution up to 8 runs, t-approximation above; Kendall & Stuart vol. 2, 31.19), flagged at
    p < `alpha` (0.01, research/anchors-methodology.md section 9.3). Run order should not explain a cell's
    values when runs are interleaved and gated; when it does, the board drifted (heating, background load,
    frequency state) during the session. Returns None when undefined: fewer than 3 runs, or constant
    values (no trend to test). A pure function of its inputs, remembered (`_memo`): a report asks it of a
    cell's runs for the cell's summary and again for each comparison's flags.
    """
    key = digest("drift", values, order, alpha)
    return remembered(key, lambda: _drift_check(values, order, alpha))


def drift_of_ranked(
    values: list[float], value_ranks: Ranking, order: Sequence[float] | None, alpha: float
) -> DriftCheck | None:
    """`drift_check` of checked values that the caller has ranked (`rank_average`), remembered alike."""
    key = digest("drift", values, order, alpha)
    return remembered(key, lambda: _drift_check(values, order, alpha, value_ranks))


def _drift_check(
    values: Sequence[float], order: Sequence[float] | None, alpha: float, value_ranks: Ranking | None = None
) -> DriftCheck | None:
    order_values = array("q", range(len(values))) if order is None else order
    if len(order_values) != len(values):
        raise ValueError(f"order has {len(order_values)} entries for {len(values)} values")
    if value_ranks is None or len(values) < 3:
        result = spearman(order_values, values)
    else:
        # a run table's seqs (an integer column) come back a column of doubles: no list of floats made
        result = spearman_of_ranks(rank_average(as_values(order_values, what="x")), value_ranks)
    if result is None:
        return None
    flagged = result.p_value < alpha
    message = None
    if flagged:
        trend = "rise" if result.rho > 0 else "fall"
        message = (
            f"values {trend} with run order (Spearman rho = {result.rho:+.2f}, p {p_is(result.p_value)}): "
            "the board drifted during the session. Interleave the arms (ABBA blocks or a seeded shuffle), "
            "keep the idle/thermal gate on, and check the per-run frequency and temperature records."
        )
    return DriftCheck(result.rho, result.p_value, result.method, result.n, alpha, flagged, message)
