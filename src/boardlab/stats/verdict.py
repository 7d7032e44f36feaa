"""Verdict of a comparison and the confounder guard (docs/method.md "Comparing a condition with its
baseline").

The verdict works on the *cost ratio* (`compare.Comparison.cost_ratio`): how many times worse the condition
is than the baseline, > 1 meaning worse whatever the metric's direction. The interval it is decided on is the
*decision interval*: the two-sided 90% bootstrap CI of the cost ratio, because each side is a one-sided test
at alpha = 0.05 (and "inside" is the two one-sided tests of equivalence, TOST). Rule (docs/method.md;
research/anchors-methodology.md section 9.4):
- slowdown      adjusted p < alpha and the whole decision interval lies above 1 + delta;
- speedup       adjusted p < alpha and the whole decision interval lies below 1 - delta;
- no_change     the decision interval lies inside [1 - delta, 1 + delta] (equivalence; no p needed);
- inconclusive  anything else;
- insufficient  fewer than 5 runs in an arm: no verdict at all.
A verdict is tagged `confounded` when the arms differ in CPU frequency, temperature or throttling.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from boardlab.stats.summary import Interval
from boardlab.stats.text import p_is

MIN_RUNS_PER_ARM = 5
ALPHA = 0.05
FREQ_TOLERANCE = 0.02  # relative difference of the arms' median frequencies
TEMP_TOLERANCE_MC = 2000  # 2 degrees C, in millidegrees Celsius

VerdictKind = Literal["slowdown", "speedup", "no_change", "inconclusive", "insufficient"]


@dataclass(frozen=True)
class RunEnvironment:
    """Per-run values that can confound a comparison, from the run's monitor records; None = not recorded.

    `mean_freq_khz`: mean frequency of the measured CPU during the run; `max_temp_mc`: highest SoC
    temperature during the run, in millidegrees Celsius; `throttled`: whether any throttle event was seen.
    """

    mean_freq_khz: float | None = None
    max_temp_mc: float | None = None
    throttled: bool | None = None


@dataclass(frozen=True)
class Confounding:
    """Whether the arms ran in different frequency, thermal or throttling states, and what to do about it.

    Medians are over the runs of each arm that recorded the value (None when none did). `reasons` explain a
    `confounded` result; `notes` list confounders that could not be checked.
    """

    confounded: bool
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    baseline_median_freq_khz: float | None
    condition_median_freq_khz: float | None
    baseline_median_max_temp_mc: float | None
    condition_median_max_temp_mc: float | None
    baseline_throttled_runs: int
    condition_throttled_runs: int


@dataclass(frozen=True)
class Verdict:
    """The decision for one comparison. `reasons[0]` says why this kind; later entries add what to do and,
    when `confounded`, which confounders differ between the arms. `flags` name cells that misbehaved
    (bimodal runs, drift within the campaign, a different frequency or temperature than the reference), each
    with its reason (`stats.flags`); the analysis sets them, and they do not change the kind."""

    kind: VerdictKind
    confounded: bool
    reasons: tuple[str, ...]
    flags: tuple[str, ...] = ()


def _median_of(values: Sequence[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


@dataclass(frozen=True)
class ArmEnvironment:
    """What the confounder guard reads of one arm's runs: the medians of the runs that recorded each value
    (None when none did), how many runs throttled, and whether any run recorded throttling at all."""

    median_freq_khz: float | None
    median_max_temp_mc: float | None
    throttled_runs: int
    throttle_recorded: bool
    runs: int


@runtime_checkable
class SummarizesArm(Protocol):
    """Runs' environments that summarize themselves for the guard without a record per run (a column
    store of them: `analysis.runs.Environments`, where a 30,000-run arm's records took 0.04 s a pass)."""

    def arm_environment(self) -> ArmEnvironment: ...


def arm_environment(envs: Sequence[RunEnvironment]) -> ArmEnvironment:
    """The guard's view of one arm's per-run environments."""
    if isinstance(envs, SummarizesArm):
        return envs.arm_environment()
    return ArmEnvironment(
        _median_of([e.mean_freq_khz for e in envs]),
        _median_of([e.max_temp_mc for e in envs]),
        sum(1 for e in envs if e.throttled),
        any(e.throttled is not None for e in envs),
        len(envs),
    )


def check_confounders(
    baseline: Sequence[RunEnvironment],
    condition: Sequence[RunEnvironment],
    *,
    freq_tolerance: float = FREQ_TOLERANCE,
    temp_tolerance_mc: float = TEMP_TOLERANCE_MC,
) -> Confounding:
    """Compare the arms' per-run environments (research/anchors-methodology.md section 9.4, "attribution
    guard").

    Confounded when the median of the runs' mean frequency differs by more than `freq_tolerance` (2%) of the
    baseline's, when the median of the runs' maximum temperature differs by more than `temp_tolerance_mc`
    (2000 mC = 2 degrees C), or when one arm has throttled runs and the other none. Medians, not means, so
    that one odd run does not decide. Values an arm did not record are skipped and named in `notes`.
    """
    reasons: list[str] = []
    notes: list[str] = []
    b, c = arm_environment(baseline), arm_environment(condition)
    bf, cf = b.median_freq_khz, c.median_freq_khz
    if bf is None or cf is None:
        notes.append("CPU frequency was not recorded for both arms: a DVFS confounder cannot be ruled out")
    elif bf > 0 and abs(cf - bf) / bf > freq_tolerance:
        reasons.append(
            f"the CPU ran at a different frequency: median {bf / 1000:.0f} MHz in the baseline, "
            f"{cf / 1000:.0f} MHz under the condition ({(cf - bf) / bf:+.1%}). Part of the difference may be "
            "DVFS, not the condition itself: repeat with a fixed frequency (userspace governor at a "
            "sustainable frequency) to separate them"
        )
    bt, ct = b.median_max_temp_mc, c.median_max_temp_mc
    if bt is None or ct is None:
        notes.append("temperature was not recorded for both arms: a thermal confounder cannot be ruled out")
    elif abs(ct - bt) > temp_tolerance_mc:
        reasons.append(
            f"the board was at a different temperature: median maximum {bt / 1000:.1f} C in the baseline, "
            f"{ct / 1000:.1f} C under the condition. Heat can slow the board by itself: lengthen the "
            "cool-down gate, improve cooling, or check for throttling trip points near these temperatures"
        )
    b_thr, c_thr = b.throttled_runs, c.throttled_runs
    if not (b.throttle_recorded and c.throttle_recorded):
        notes.append("throttling was not recorded for both arms")
    elif (b_thr > 0) != (c_thr > 0):
        arm, count, total = ("baseline", b_thr, b.runs) if b_thr else ("condition", c_thr, c.runs)
        reasons.append(
            f"{count} of {total} {arm} runs throttled and none of the other arm's did. Throttled runs should "
            "be invalidated and re-run: check the cooling and the thermal gate, then re-run those runs"
        )
    return Confounding(
        confounded=bool(reasons),
        reasons=tuple(reasons),
        notes=tuple(notes),
        baseline_median_freq_khz=bf,
        condition_median_freq_khz=cf,
        baseline_median_max_temp_mc=bt,
        condition_median_max_temp_mc=ct,
        baseline_throttled_runs=b_thr,
        condition_throttled_runs=c_thr,
    )


def _why_not_significant(p_value: float | None, p_adjusted: float, family_size: int, alpha: float) -> str:
    """Why an interval clear of 1 +- delta is still not a verdict: the interval is each comparison's own,
    the test is corrected for the whole report (docs/method.md "Verdict")."""
    if family_size > 1 and p_value is not None and p_value < alpha <= p_adjusted:
        return (
            "the decision interval is this comparison's own; the test against a ratio of 1 (p "
            f"{p_is(p_value)}) is corrected for the report's {family_size} comparisons, and after that "
            f"correction it is not below {alpha}: the evidence is not strong enough for all {family_size} "
            "together. Add runs to this cell, or compare fewer cells"
        )
    return (
        "the decision interval is one-sided at 5% per side, the test against a ratio of 1 is two-sided: "
        "between the two, the runs are too few or too noisy for a verdict. Add runs to this cell"
    )


def decide(
    cost_ratio_ci: Interval | None,
    *,
    p_adjusted: float | None,
    delta: float,
    n_baseline: int,
    n_condition: int,
    alpha: float = ALPHA,
    confounding: Confounding | None = None,
    min_runs: int = MIN_RUNS_PER_ARM,
    p_value: float | None = None,
    family_size: int = 1,
) -> Verdict:
    """The verdict from the decision interval (the 90% CI) of the cost ratio, the adjusted p-value and the
    practical threshold delta.

    Method: the rule in this module's docstring (docs/method.md; criterion.rs `compare_to_threshold`;
    Hoefler & Belli 2015 rule 7). `p_adjusted` is the comparison's p-value after the report's multiple-testing
    correction (Holm, or Benjamini-Hochberg for sweeps). Never decided on the p-value alone.
    """
    if delta < 0:
        raise ValueError(f"delta must be >= 0, got {delta}")
    tags = tuple(confounding.reasons) if confounding and confounding.confounded else ()
    confounded = bool(tags)

    def verdict(kind: VerdictKind, *why: str) -> Verdict:
        return Verdict(kind, confounded, tuple(why) + tags)

    if n_baseline < min_runs or n_condition < min_runs:
        return verdict(
            "insufficient",
            f"{n_baseline} baseline and {n_condition} condition runs: a verdict needs at least "
            f"{min_runs} per arm",
            "run more (the pilot is 10 runs per arm)",
        )
    if cost_ratio_ci is None or p_adjusted is None:
        return verdict("insufficient", "no confidence interval or p-value for this comparison")
    lo, hi = cost_ratio_ci.low, cost_ratio_ci.high
    level = f"{cost_ratio_ci.confidence:.0%}"
    ci = f"the {level} decision interval [{lo:.4f}, {hi:.4f}] of the cost ratio"
    upper, lower = 1.0 + delta, 1.0 - delta
    significant = p_adjusted < alpha
    p_text = f"adjusted p {p_is(p_adjusted)}"
    if lo > upper and significant:
        return verdict("slowdown", f"{ci} lies above 1 + delta = {upper:.4f} and {p_text}, below {alpha}")
    if hi < lower and significant:
        return verdict("speedup", f"{ci} lies below 1 - delta = {lower:.4f} and {p_text}, below {alpha}")
    if lower <= lo and hi <= upper:
        return verdict("no_change", f"{ci} lies inside [1 - delta, 1 + delta] = [{lower:.4f}, {upper:.4f}]")
    if lo > upper or hi < lower:
        return verdict(
            "inconclusive",
            f"{ci} lies beyond the threshold delta = {delta:.1%} but {p_text} is not below {alpha}",
            _why_not_significant(p_value, p_adjusted, family_size, alpha),
        )
    if hi - lo > 2 * delta:
        advice = (
            f"the decision interval is wider ({(hi - lo) / 2:.1%} half-width) than the threshold delta = "
            f"{delta:.1%} allows for "
            "a 'no change': add runs (see predict_runs) or reduce the noise"
        )
    else:
        advice = "the effect is close to the threshold delta: add runs to narrow the decision interval"
    return verdict("inconclusive", f"{ci} crosses 1 + delta or 1 - delta (delta = {delta:.1%})", advice)
