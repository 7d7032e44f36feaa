"""How many runs (docs/method.md "How many runs"): predict from a pilot, then stop on precision, never on p.

Hoefler & Belli (2015) section 4.2.2: recompute the nonparametric CI as runs arrive and stop once it is
narrow enough. Stopping on significance instead inflated the false-positive rate from 0.038 to 0.172 in
research/anchors-methodology.md section 8 (scenario B), so no function here looks at a p-value.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from boardlab.stats._validate import as_values
from boardlab.stats.compare import compare
from boardlab.stats.summary import Interval, median_ci_order_statistic

RUN_CAP = 50
PILOT_RUNS = 10
Z_95 = 1.96
# Target CI half-widths per workload class (docs/method.md "How many runs"), by workload-name prefix.
CLASS_HALF_WIDTH = {
    "compute": 0.01,
    "memory": 0.02,
    "io": 0.03,
    "compression": 0.02,
    "ai": 0.03,
    "other": 0.02,
}
CLASS_BY_PREFIX = {
    "scimark": "compute",
    "mibench": "compute",
    "crypto": "compute",
    "noop": "compute",
    "mem": "memory",
    "io": "io",
    "fio": "io",
    "compress": "compression",
    "ai": "ai",
}


def workload_class(workload: str) -> str:
    """'scimark.fft' -> 'compute': the class whose half-width target applies (CLASS_HALF_WIDTH)."""
    return CLASS_BY_PREFIX.get(workload.split(".")[0], "other")


MEDIAN_SE_FACTOR = 1.2533  # sqrt(pi/2): asymptotic SE of the median = 1.2533 sigma / sqrt(n) for normal data


@dataclass(frozen=True)
class RunPrediction:
    """Predicted runs per arm for a target relative half-width (`half_width` 0.01 = +-1%) at a given CV."""

    runs_per_arm: int
    cv: float
    half_width: float
    cap: int
    exceeds_cap: bool
    warning: str | None


def predict_runs(
    cv: float, half_width: float, *, cap: int = RUN_CAP, comparison: bool = True
) -> RunPrediction:
    """n = ceil(2 (1.96 x 1.2533 x CV / h)^2) runs per arm for a ratio of two medians (without the factor 2
    for a single cell's median).

    Method: docs/method.md; the median's asymptotic standard error 1.2533 sigma / sqrt(n) (Kendall & Stuart
    vol. 1, 10.10) at 95%; a ratio of two independent medians has twice the variance of one. `cv` and
    `half_width` are fractions (0.02 = 2%). Warns, naming the choices, when the prediction exceeds `cap`.
    """
    if cv < 0 or half_width <= 0:
        raise ValueError(f"need cv >= 0 and half_width > 0, got cv={cv}, half_width={half_width}")
    factor = 2.0 if comparison else 1.0
    # round() guards against float noise pushing an exact integer up by one (e.g. 12.000000000000002).
    raw = factor * (Z_95 * MEDIAN_SE_FACTOR * cv / half_width) ** 2
    runs = max(1, math.ceil(round(raw, 9)))
    exceeds = runs > cap
    warning = None
    if exceeds:
        warning = (
            f"a +-{half_width:.1%} CI at CV {cv:.1%} needs about {runs} runs per arm, more than the cap of "
            f"{cap}: accept a wider target (+-{Z_95 * MEDIAN_SE_FACTOR * cv * math.sqrt(factor / cap):.1%} "
            f"at {cap} runs), reduce the noise (isolate the CPU, fix the frequency), or raise the cap"
        )
    return RunPrediction(runs, cv, half_width, cap, exceeds, warning)


@dataclass(frozen=True)
class StopDecision:
    """Whether to stop adding runs to a cell or comparison, and why.

    `ci` is the CI the decision used (of the cell median, or of the cost ratio for a comparison);
    `relative_half_width` its half-width over the estimate (0.01 = +-1%); None while no CI exists.
    """

    stop: bool
    reason: str
    n: int
    ci: Interval | None
    relative_half_width: float | None


def should_stop(
    values: Sequence[float],
    half_width_target: float,
    *,
    delta: float | None = None,
    cap: int = RUN_CAP,
    baseline: Sequence[float] | None = None,
    higher_is_better: bool = False,
    min_runs: int = PILOT_RUNS,
    seed: int = 0,
    resamples: int = 2000,
) -> StopDecision:
    """Stop when the CI's relative half-width is at most `half_width_target`, when the CI already decides the
    verdict against `delta`, or at `cap` runs; never on a p-value.

    Method: docs/method.md "How many runs"; Hoefler & Belli (2015) 4.2.2. For one cell (`values` only) the CI
    is the order-statistic CI of the median, and its half-width is taken relative to the median. For a
    comparison, pass the baseline runs as `baseline` (and `values` are the condition's runs): the CI is the
    verdict's 95% CI of the cost ratio (`compare.compare`), half-width relative to the cost ratio, and with
    `delta` the 90% decision interval (the verdict's) "decides" when it lies wholly
    above 1 + delta, wholly below 1 - delta, or wholly inside [1 - delta, 1 + delta]. Never stops before
    `min_runs` (the 10-run pilot) unless `cap` is smaller; `n` is the smaller arm.
    """
    cond = as_values(values, what="values", positive=baseline is not None)
    if half_width_target <= 0:
        raise ValueError(f"half_width_target must be positive, got {half_width_target}")
    if delta is not None and baseline is None:
        raise ValueError("delta decides a comparison: pass the baseline runs as baseline=")
    base = as_values(baseline, what="baseline", positive=True) if baseline is not None else None
    n = min(len(cond), len(base)) if base is not None else len(cond)

    ci: Interval | None = None
    decision: Interval | None = None  # the 90% decision interval the verdict uses (one-sided tests at 5%)
    center = None
    if base is not None:
        if len(base) >= 2 and len(cond) >= 2:
            # the verdict's own intervals (compare: Yuen's trimmed t), so "decided" means what the verdict
            # says
            c = compare(
                base,
                cond,
                higher_is_better=higher_is_better,
                delta=delta or 0.0,
                seed=seed,
                resamples=resamples,
                calibrate=False,  # only the intervals decide a stop, never a p-value: no permutation drawn
            )
            ci, decision, center = c.cost_ratio_ci, c.decision_ci, c.cost_ratio
    elif cond:
        ci = median_ci_order_statistic(cond)
        center = statistics.median(cond)
    rel = ci.relative_half_width(center) if ci is not None and center is not None else None

    if n >= cap:
        return StopDecision(
            True, f"reached the cap of {cap} runs per arm; report the verdict at the cap", n, ci, rel
        )
    if n < min_runs:
        return StopDecision(False, f"pilot not complete: {n} of {min_runs} runs", n, ci, rel)
    if ci is None or rel is None:
        return StopDecision(False, "no CI yet: add runs", n, ci, rel)
    if rel <= half_width_target:
        return StopDecision(
            True, f"CI half-width {rel:.2%} is within the target {half_width_target:.2%}", n, ci, rel
        )
    if delta is not None and decision is not None:
        upper, lower = 1.0 + delta, 1.0 - delta
        if decision.low > upper or decision.high < lower:
            return StopDecision(
                True,
                f"the 90% decision interval lies wholly beyond 1 +- delta ({delta:.1%}): decided",
                n,
                ci,
                rel,
            )
        if decision.low >= lower and decision.high <= upper:
            return StopDecision(
                True,
                f"the 90% decision interval lies wholly inside 1 +- delta ({delta:.1%}): decided",
                n,
                ci,
                rel,
            )
    return StopDecision(
        False, f"CI half-width {rel:.2%} is above the target {half_width_target:.2%}: add runs", n, ci, rel
    )
