"""Comparison of a condition with its baseline (docs/method.md "Comparing a condition with its baseline").

Inputs are per-run values, one number per run (`summary.run_values` turns each run's iterations into its
median); nested sequences are rejected, so iterations cannot be pooled through this API.

Direction. `ratio` = condition / baseline of the arms' estimates (20%-trimmed geometric means of the runs with
the default test, medians with the rank test), whatever the metric. `cost_ratio` is the factor
by which the condition is *worse*: `ratio` for lower-is-better metrics (times, latencies), 1 / `ratio` for
higher-is-better ones (MB/s, ops/s). So cost_ratio > 1 always means slower: 1.10 is a 10% slowdown for a
time (100 -> 110 ns) and for a rate (110 -> 100 MB/s). The verdict thresholds 1 +- delta apply to
`cost_ratio`.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from boardlab.stats._special import exp_or_inf, inverse
from boardlab.stats._validate import as_values, check_level
from boardlab.stats.bootstrap import bootstrap_ratio_draws, percentile_interval
from boardlab.stats.flags import bimodality
from boardlab.stats.hypothesis import RankTest, TestMethod, mann_whitney_u, wilcoxon_signed_rank
from boardlab.stats.multiple import benjamini_hochberg, holm
from boardlab.stats.permutation import (
    PermutationP,
    band,
    draws_for,
    mask_arms,
    near_even,
    sign_flip_p,
    split_p,
    two_arms,
)
from boardlab.stats.summary import DEFAULT_RESAMPLES, Interval
from boardlab.stats.threshold import family_method
from boardlab.stats.trimmed import (
    LARGE_ARM,
    TRIM,
    SplitYuen,
    TrimmedT,
    drawn_arm_statistics,
    one_sample_statistic,
    trimmed_one_sample,
    yuen_statistic,
    yuen_welch,
)
from boardlab.stats.verdict import ALPHA, Confounding, RunEnvironment, Verdict, check_confounders, decide

ITERATIONS_SUSPECT_N = 500  # more values per arm than any plan has runs: probably pooled iterations

Adjustment = Literal["none", "holm", "bh", "auto"]
TestKind = Literal["trimmed", "rank"]


@dataclass(frozen=True)
class Comparison:
    """A condition against its baseline: the effect with its intervals, the test, and the verdict.

    Medians are in the unit of the values. With the default test (`test.name` "yuen-welch-log", or
    "trimmed-t-log-paired" for paired blocks; `stats.trimmed`), `ratio` is the ratio of the 20%-trimmed
    geometric means of the runs (condition / baseline) and every interval is the trimmed t interval of that
    same statistic, so the interval and the p-value cannot disagree about the data. With the rank test
    (`test_kind="rank"`: Mann-Whitney U, or Wilcoxon signed-rank on per-block log ratios) `ratio` is
    median(condition) / median(baseline) with percentile bootstrap intervals. `cost_ratio`/`cost_ratio_ci`
    are oriented so that > 1 means worse (see the module docstring). CIs are None when an arm has fewer than
    2 runs (rank test) or fewer than 2 runs left after trimming (trimmed test; n_blocks paired blocks).
    `decision_ci` is the (1 - 2 alpha) = 90% interval of `cost_ratio`: "the CI lies above
    1 + delta" is a one-sided test at level alpha that the cost exceeds 1 + delta, and "inside [1 - delta,
    1 + delta]" is the two one-sided tests (TOST) of equivalence (Schuirmann 1987), both of which use the
    90% interval; the 95% `cost_ratio_ci` is shown beside it for reading.
    `p_adjusted` equals `p_value` until `adjust` applies a correction over a report (`adjustment`,
    `family_size`); `verdict` is always decided with `p_adjusted`. `delta` is the practical threshold as a
    fraction (0.02 = 2%). A bootstrap (rank test) used `resamples` draws from `random.Random(seed)`;
    `resamples` is 0 when none was drawn.
    """

    n_baseline: int
    n_condition: int
    baseline_median: float
    condition_median: float
    higher_is_better: bool
    ratio: float
    ratio_ci: Interval | None
    cost_ratio: float
    cost_ratio_ci: Interval | None
    decision_ci: (
        Interval | None
    )  # the (1 - 2 alpha) CI of cost_ratio that the verdict compares with 1 +- delta
    test: RankTest
    n_blocks: int | None
    p_value: float
    p_adjusted: float
    adjustment: Adjustment
    family_size: int
    delta: float
    alpha: float
    confounding: Confounding | None
    verdict: Verdict
    seed: int
    resamples: int
    warnings: tuple[str, ...]
    statistic: str = "median of the runs' medians"  # what was compared (tails: per-run or pooled p99)
    permutations: int = 0  # splits (or sign flips) the permutation p-value was counted over; 0: none drawn


def _paired_or_raise(
    baseline: list[float],
    condition: list[float],
    blocks: tuple[Sequence[Hashable], Sequence[Hashable]],
    warnings: list[str],
) -> list[float]:
    """The blocks' log ratios for a paired test; the blocks with runs of one arm only said in `warnings`;
    ValueError when no block has runs of both."""
    log_ratios, unpaired = _paired_log_ratios(baseline, condition, blocks)
    if unpaired:
        warnings.append(f"{unpaired} blocks had runs of only one arm and were left out of the paired test")
    if not log_ratios:
        raise ValueError("paired_blocks: no block has runs of both arms")
    return log_ratios


def _paired_log_ratios(
    baseline: list[float],
    condition: list[float],
    blocks: tuple[Sequence[Hashable], Sequence[Hashable]],
) -> tuple[list[float], int]:
    base_ids, cond_ids = blocks
    if len(base_ids) != len(baseline) or len(cond_ids) != len(condition):
        raise ValueError(
            "paired_blocks must give one block label per run of each arm "
            f"({len(baseline)} and {len(condition)} runs, {len(base_ids)} and {len(cond_ids)} labels)"
        )
    by_block: dict[Hashable, tuple[list[float], list[float]]] = {}
    for label, v in zip(base_ids, baseline, strict=True):
        by_block.setdefault(label, ([], []))[0].append(v)
    for label, v in zip(cond_ids, condition, strict=True):
        by_block.setdefault(label, ([], []))[1].append(v)
    ratios = []
    unpaired = 0
    for b, c in by_block.values():
        if b and c:
            ratios.append(math.log(statistics.median(c) / statistics.median(b)))
        else:
            unpaired += 1
    return ratios, unpaired


def compare(
    baseline: Sequence[float],
    condition: Sequence[float],
    *,
    higher_is_better: bool,
    delta: float,
    seed: int,
    paired_blocks: tuple[Sequence[Hashable], Sequence[Hashable]] | None = None,
    baseline_env: Sequence[RunEnvironment] | None = None,
    condition_env: Sequence[RunEnvironment] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    alpha: float = ALPHA,
    test_method: TestMethod = "auto",
    test_kind: TestKind = "trimmed",
    family_size: int = 1,
    calibrate: bool = True,
) -> Comparison:
    """Compare per-run values of a condition with its baseline; deterministic for a given `seed`.

    Method (docs/method.md "Test"; research/anchors-methodology.md section 9.4):
    - `test_kind="trimmed"` (the default, what reports use): Yuen's trimmed-means Welch test on the runs'
      log values (`trimmed.yuen_welch`; Yuen 1974, Wilcox 2012 5.3), or for `paired_blocks` (each run's
      block label, baseline labels then condition labels) the one-sample trimmed t of the per-block
      log(median condition / median baseline) (`trimmed.trimmed_one_sample`). The effect R is the ratio of
      the 20%-trimmed geometric means and its 95% and 90% intervals are the t intervals of the same
      statistic, so interval and p-value agree. Its p-value is not floored by n. Unpaired, when either
      arm's runs are bimodal (`flags.bimodality`) the rank test below decides instead (`_bimodal_arm`);
    - `test_kind="rank"`: R = median(condition) / median(baseline) with percentile bootstrap intervals,
      each arm's runs resampled independently (Kalibera & Jones 2013; Efron & Tibshirani 1993 ch. 13),
      `resamples` draws seeded with `seed`, and two-sided Mann-Whitney U (exact without ties when an arm
      has <= 8 runs) or the Wilcoxon signed-rank test on per-block log ratios. Distribution-free and exact
      at small n, which is why the A/A control (a family of one) uses it;
    - verdict by `verdict.decide`: the (1 - 2 alpha) interval `decision_ci` against 1 +- `delta` (a one-sided
      test at level alpha per side, TOST for "no change"), with the unadjusted p until `adjust` is applied;
    - the `confounded` tag from `verdict.check_confounders` when both per-run environments are given.

    `family_size` is the size of the correction family the report will apply (`adjust`): where the trimmed
    test's t approximation gives a p in `permutation.band`, the p is the permutation p of the same statistic
    (`_calibrated`), drawn until it can pass that family's correction. `calibrate=False` keeps the t
    approximation's p everywhere (the power simulation's shortcut, `power.simulated_power`).
    """
    check_level(confidence, "confidence")
    check_level(alpha, "alpha")
    if resamples < 100:
        raise ValueError(f"resamples must be at least 100, got {resamples}")
    base, cond, warnings = _arms(baseline, condition)
    permutations = 0
    base_median, cond_median = statistics.median(base), statistics.median(cond)
    if test_kind == "trimmed" and paired_blocks is None:
        test_kind, test_method = _bimodal_switch(base, cond, test_method, warnings)
    if test_kind == "trimmed":
        e = _trimmed_effect(base, cond, paired_blocks, higher_is_better, confidence, alpha, warnings)
        if calibrate:
            test, permutations = _calibrated(e[5], base, cond, paired_blocks, family_size, alpha, seed)
            e = (*e[:5], test, *e[6:])
    elif test_kind == "rank":
        e = _rank_effect(
            base,
            cond,
            paired_blocks,
            higher_is_better,
            confidence,
            alpha,
            warnings,
            seed,
            resamples,
            test_method,
        )
    else:
        raise ValueError(f"test_kind must be 'trimmed' or 'rank', got {test_kind!r}")
    ratio, ratio_ci, cost_ratio, cost_ci, decision_ci, test, n_blocks, drawn = e
    return unadjusted(
        n_baseline=len(base),
        n_condition=len(cond),
        baseline_median=base_median,
        condition_median=cond_median,
        higher_is_better=higher_is_better,
        ratio=ratio,
        ratio_ci=ratio_ci,
        cost_ratio=cost_ratio,
        cost_ratio_ci=cost_ci,
        decision_ci=decision_ci,
        test=test,
        n_blocks=n_blocks,
        delta=delta,
        alpha=alpha,
        envs=(baseline_env, condition_env),
        seed=seed,
        resamples=drawn,
        warnings=tuple(warnings),
        permutations=permutations,
    )


def unadjusted(
    *,
    n_baseline: int,
    n_condition: int,
    baseline_median: float,
    condition_median: float,
    higher_is_better: bool,
    ratio: float,
    ratio_ci: Interval | None,
    cost_ratio: float,
    cost_ratio_ci: Interval | None,
    decision_ci: Interval | None,
    test: RankTest,
    n_blocks: int | None,
    delta: float,
    alpha: float,
    envs: tuple[Sequence[RunEnvironment] | None, Sequence[RunEnvironment] | None],
    seed: int,
    resamples: int,
    warnings: tuple[str, ...],
    statistic: str = Comparison.statistic,
    permutations: int = 0,
) -> Comparison:
    """A test's outcome as a Comparison before `adjust`: its p stands unadjusted (a family of one), the
    verdict is decided on it, and the confounding tag is checked when both arms' per-run environments (`envs`)
    are given. `compare` and the tail comparison (`tails`) end here, so both judge an effect the same way."""
    baseline_env, condition_env = envs
    confounding = None
    if baseline_env is not None and condition_env is not None:
        confounding = check_confounders(baseline_env, condition_env)
    verdict = decide(
        decision_ci,
        p_adjusted=test.p_value,
        delta=delta,
        n_baseline=n_baseline,
        n_condition=n_condition,
        alpha=alpha,
        confounding=confounding,
    )
    return Comparison(
        n_baseline=n_baseline,
        n_condition=n_condition,
        baseline_median=baseline_median,
        condition_median=condition_median,
        higher_is_better=higher_is_better,
        ratio=ratio,
        ratio_ci=ratio_ci,
        cost_ratio=cost_ratio,
        cost_ratio_ci=cost_ratio_ci,
        decision_ci=decision_ci,
        test=test,
        n_blocks=n_blocks,
        p_value=test.p_value,
        p_adjusted=test.p_value,
        adjustment="none",
        family_size=1,
        delta=delta,
        alpha=alpha,
        confounding=confounding,
        verdict=verdict,
        seed=seed,
        resamples=resamples,
        warnings=warnings,
        statistic=statistic,
        permutations=permutations,
    )


def _arms(
    baseline: Sequence[float], condition: Sequence[float]
) -> tuple[list[float], list[float], list[str]]:
    """The two arms' values (positive, finite, at least one each) and the warnings they already earn: more
    values than any plan has runs are pooled iterations, not one value per run."""
    base = as_values(baseline, what="baseline", positive=True)
    cond = as_values(condition, what="condition", positive=True)
    if not base or not cond:
        raise ValueError(f"each arm needs at least one run (baseline {len(base)}, condition {len(cond)})")
    warnings: list[str] = []
    for arm, vals in (("baseline", base), ("condition", cond)):
        if len(vals) > ITERATIONS_SUSPECT_N:
            warnings.append(
                f"{len(vals)} {arm} values: more than any plan has runs. Pass one value per run (the median "
                "of its iterations, see run_values), never pooled iterations"
            )
    return base, cond, warnings


def _bimodal_switch(
    base: list[float], cond: list[float], test_method: TestMethod, warnings: list[str]
) -> tuple[TestKind, TestMethod]:
    """("rank", its method) when an arm's runs fall into two groups (and says so in `warnings`), else the
    trimmed test as asked."""
    bimodal = _bimodal_arm(base, cond)
    if bimodal is None:
        return "trimmed", test_method
    if test_method == "auto" and len(set(base) | set(cond)) == len(base) + len(cond):
        test_method = "exact"  # the exact distribution of U: no normal approximation in the tail
    warnings.append(
        f"the {bimodal} runs fall into two groups: the exact rank test decides this comparison, not "
        "the trimmed t, whose variance estimate understates a trimmed mean's spread over two groups"
    )
    return "rank", test_method


def _bimodal_arm(base: list[float], cond: list[float]) -> str | None:
    """The arm ("baseline", "condition") whose runs the bimodality flag marks (`flags.bimodality`), if any.

    Why the rank test there: with runs in two groups, 20% trimming and winsorizing can drop the smaller
    group from a small arm altogether, so the winsorized variance shrinks exactly when the trimmed mean sits
    at an extreme: Yuen's test then rejects true nulls far above its level (A/A campaigns with 40% of runs
    10% slower: a family of 14 at 10 runs per arm had a false verdict in about 1 campaign in 5; the exact
    rank test, valid whatever the runs' shape, brought that to the 5% Holm promises; docs/method.md "Test").
    The flag needs at least 8 runs in the arm, so smaller arms keep the trimmed t."""
    for arm, values in (("baseline", base), ("condition", cond)):
        b = bimodality(values)
        if b is not None and b.flagged:
            return arm
    return None


def _calibrated(
    test: RankTest,
    base: list[float],
    cond: list[float],
    paired_blocks: tuple[Sequence[Hashable], Sequence[Hashable]] | None,
    family_size: int,
    alpha: float,
    seed: int,
) -> tuple[RankTest, int]:
    """The trimmed test with its p-value taken from the permutation distribution of the same statistic
    where the t approximation's p lies in `permutation.band` (where a correction over `family_size`
    comparisons reads it), with the draws made; elsewhere the test as it is and 0 draws."""
    low, high = band(family_size, alpha)
    if not low <= test.p_value < high:
        return test, 0
    if paired_blocks is None:
        perm = yuen_split_p(list(map(math.log, base)), list(map(math.log, cond)), family_size, alpha, seed)
    else:
        log_ratios, _unpaired = _paired_log_ratios(base, cond, paired_blocks)
        observed = one_sample_statistic(log_ratios)
        rng, limit = random.Random(seed), draws_for(family_size, alpha)
        perm = sign_flip_p(one_sample_statistic, log_ratios, observed, rng=rng, limit=limit)
    return dataclasses.replace(test, p_value=perm.p_value, method="permutation"), perm.draws


def yuen_split_p(
    logs_base: list[float],
    logs_cond: list[float],
    family_size: int,
    alpha: float,
    seed: int,
    give_up_at: float | None = None,
) -> PermutationP:
    """The permutation p of Yuen's statistic on two arms of log values, as `compare` draws it for a family of
    `family_size` (`power.simulated_power` decides its small arms by it too). `give_up_at`: only whether p
    is below it is wanted (`permutation.split_p`)."""
    pooled = sorted(logs_base + logs_cond)
    statistic, masks, drawn = _split_statistic(pooled, len(logs_base), len(logs_cond))
    observed = yuen_statistic(sorted(logs_base), sorted(logs_cond))
    rng, limit = random.Random(seed), draws_for(family_size, alpha)
    return split_p(
        statistic, len(pooled), len(logs_cond), observed, rng=rng, limit=limit, give_up_at=give_up_at,
        masks=masks, drawn_statistics=drawn,
    )  # fmt: skip


def _split_statistic(pooled: list[float], n_base: int, n_cond: int) -> tuple[Callable, bool, Callable | None]:
    """Yuen's t of a split of `pooled`, whether it takes the condition arm as a mask (else as indices), and
    its own loop over drawn splits if it has one: the arms read by `compress` where they are near even
    (`permutation._drawn_masks` draws those), summed by `SplitYuen` where one is large and the other small (a
    split then costs the small arm's size), arm by arm otherwise. The three give the same t of the same
    split: `SplitYuen` to 1e-12, the others exactly. Drawn splits are counted by the C kernel where it is
    built (`SplitYuen.drawn_statistics`, `trimmed.drawn_arm_statistics`: the same t to the last bit)."""
    by_kernel = min(n_base, n_cond) >= 2  # the kernel's arms; a smaller one is counted whole, not drawn
    if near_even(len(pooled), n_cond):
        drawn = drawn_arm_statistics(pooled, by_coins=True) if by_kernel else None
        return (lambda mask: yuen_statistic(*mask_arms(pooled, mask))), True, drawn
    if max(n_base, n_cond) >= LARGE_ARM:
        split = SplitYuen(pooled)
        return split.statistic, False, split.drawn_statistics
    drawn = drawn_arm_statistics(pooled, by_coins=False) if by_kernel else None
    return (lambda split: yuen_statistic(*two_arms(pooled, split))), False, drawn


_Effect = tuple[float, Interval | None, float, Interval | None, Interval | None, RankTest, int | None, int]


def _oriented(low: float, high: float, level: float, how: str, hib: bool) -> Interval:
    """An interval of the ratio turned into one of the cost ratio (> 1 = worse)."""
    return Interval(inverse(high), inverse(low), level, how) if hib else Interval(low, high, level, how)


def _trimmed_effect(base, cond, paired_blocks, hib, confidence, alpha, warnings) -> _Effect:
    """Yuen's trimmed t on log values (paired: the one-sample trimmed t of per-block log ratios): the
    ratio of trimmed geometric means, its intervals and the test from the same statistic."""
    n_blocks = None
    # columns of doubles (8 bytes a run, not a list's 33): each is sorted once, by the test
    logs_b, logs_c = array("d", map(math.log, base)), array("d", map(math.log, cond))
    if paired_blocks is not None:
        log_ratios = _paired_or_raise(base, cond, paired_blocks, warnings)
        n_blocks = len(log_ratios)
    try:
        t: TrimmedT | None = (
            trimmed_one_sample(log_ratios) if paired_blocks is not None else yuen_welch(logs_b, logs_c)
        )
    except ValueError:
        t = None  # too few runs: no interval, no test (the verdict says insufficient)
    if t is None:
        ratio = statistics.median(cond) / statistics.median(base)
        name = "trimmed-t-log-paired" if paired_blocks is not None else "yuen-welch-log"
        test = RankTest(name, 0.0, 1.0, "student-t", len(base) + len(cond))
        return ratio, None, inverse(ratio) if hib else ratio, None, None, test, n_blocks, 0
    how = f"Yuen trimmed t on log values ({TRIM:.0%} trimmed, df {t.df:.1f})"
    ratio = exp_or_inf(t.estimate)
    lo95, hi95 = (exp_or_inf(v) for v in t.log_interval(confidence))
    lo90, hi90 = (exp_or_inf(v) for v in t.log_interval(1.0 - 2.0 * alpha))
    name = "trimmed-t-log-paired" if paired_blocks is not None else "yuen-welch-log"
    stat = t.estimate / t.se if t.se else math.copysign(math.inf, t.estimate) if t.estimate else 0.0
    used = n_blocks if n_blocks is not None else len(base) + len(cond)
    test = RankTest(name, stat, t.p_value, "student-t", used)
    return (
        ratio,
        Interval(lo95, hi95, confidence, how),
        inverse(ratio) if hib else ratio,
        _oriented(lo95, hi95, confidence, how, hib),
        _oriented(lo90, hi90, 1.0 - 2.0 * alpha, how, hib),
        test,
        n_blocks,
        0,
    )


def _rank_effect(
    base, cond, paired_blocks, hib, confidence, alpha, warnings, seed, resamples, test_method
) -> _Effect:
    """The median ratio with percentile bootstrap intervals and a rank test (Mann-Whitney U, or Wilcoxon
    signed-rank on per-block log ratios): exact at small n, but with a smallest p fixed by n."""
    ratio = statistics.median(cond) / statistics.median(base)
    cost_ratio = inverse(ratio) if hib else ratio
    ratio_ci = cost_ci = decision_ci = None
    drawn = 0
    if len(base) >= 2 and len(cond) >= 2:
        draws = bootstrap_ratio_draws(base, cond, resamples, random.Random(seed))
        draws.sort()
        drawn = resamples
        method = f"bootstrap percentile ({resamples} resamples of runs per arm, seed {seed})"
        ratio_ci = Interval(*percentile_interval(draws, confidence, presorted=True), confidence, method)
        cost_draws = [inverse(r) for r in reversed(draws)] if hib else draws  # ascending either way
        cost_ci = Interval(*percentile_interval(cost_draws, confidence, presorted=True), confidence, method)
        level = 1.0 - 2.0 * alpha
        decision_ci = Interval(*percentile_interval(cost_draws, level, presorted=True), level, method)
    n_blocks = None
    if paired_blocks is None:
        test = mann_whitney_u(cond, base, method=test_method)
    else:
        log_ratios = _paired_or_raise(base, cond, paired_blocks, warnings)
        n_blocks = len(log_ratios)
        test = wilcoxon_signed_rank(log_ratios, method=test_method)
        if n_blocks < 6:
            warnings.append(
                f"{n_blocks} paired blocks: the signed-rank test cannot reach p < 0.05 with fewer than 6; "
                "run more blocks"
            )
    return ratio, ratio_ci, cost_ratio, cost_ci, decision_ci, test, n_blocks, drawn


def adjust(comparisons: Sequence[Comparison], method: Adjustment = "holm") -> tuple[Comparison, ...]:
    """The comparisons of one report with adjusted p-values and verdicts re-decided on them.

    Method: Holm (1979) over the report's family (docs/method.md), or Benjamini & Hochberg (1995)
    (`method="bh"`) for large exploratory sweeps (`multiple.holm`, `multiple.benjamini_hochberg`). `"none"`
    restores the unadjusted p-values; `"auto"` is the report's rule: Holm up to 50 comparisons,
    Benjamini-Hochberg above (`threshold.family_method`). The family is exactly the comparisons passed in.
    """
    if method == "auto":
        method = family_method(len(comparisons))
    p = [c.p_value for c in comparisons]
    if method == "holm":
        adjusted: Sequence[float | None] = holm(p)
    elif method == "bh":
        adjusted = benjamini_hochberg(p)
    elif method == "none":
        adjusted = p
    else:
        raise ValueError(f"method must be 'holm', 'bh' or 'none', got {method!r}")
    out = []
    for c, pa in zip(comparisons, adjusted, strict=True):
        assert pa is not None
        verdict: Verdict = decide(
            c.decision_ci,
            p_adjusted=pa,
            delta=c.delta,
            n_baseline=c.n_baseline,
            n_condition=c.n_condition,
            alpha=c.alpha,
            confounding=c.confounding,
            p_value=c.p_value,
            family_size=1 if method == "none" else len(comparisons),
        )
        verdict = dataclasses.replace(verdict, flags=c.verdict.flags)  # the cells' flags stay
        out.append(
            dataclasses.replace(
                c,
                p_adjusted=pa,
                adjustment=method,
                family_size=1 if method == "none" else len(comparisons),
                verdict=verdict,
            )
        )
    return tuple(out)
