"""Comparison of a condition with its baseline (docs/method.md "Comparing a condition with its baseline").

Inputs are per-run values, one number per run (`summary.run_values` turns each run's iterations into its
median); nested sequences are rejected, so iterations cannot be pooled through this API.

Direction. `ratio` = median(condition) / median(baseline), whatever the metric. `cost_ratio` is the factor
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
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from boardlab.stats._validate import as_values, check_level
from boardlab.stats.bootstrap import bootstrap_ratio_draws, percentile_interval
from boardlab.stats.hypothesis import RankTest, TestMethod, mann_whitney_u, wilcoxon_signed_rank
from boardlab.stats.multiple import benjamini_hochberg, holm
from boardlab.stats.summary import DEFAULT_RESAMPLES, Interval
from boardlab.stats.threshold import family_method
from boardlab.stats.verdict import ALPHA, Confounding, RunEnvironment, Verdict, check_confounders, decide

ITERATIONS_SUSPECT_N = 500  # more values per arm than any plan has runs: probably pooled iterations

Adjustment = Literal["none", "holm", "bh", "auto"]


@dataclass(frozen=True)
class Comparison:
    """A condition against its baseline: effect with a bootstrap CI, a rank test, and the verdict.

    Medians are in the unit of the values. `ratio`/`ratio_ci` are median(condition) / median(baseline) and
    its percentile bootstrap CI; `cost_ratio`/`cost_ratio_ci` the same oriented so that > 1 means worse (see
    the module docstring). CIs are None when an arm has fewer than 2 runs. `test` is Mann-Whitney U on the
    runs (`test.statistic` is U of the condition arm), or Wilcoxon signed-rank on the per-block log ratios
    when the runs were paired (`n_blocks` blocks).
    `decision_ci` is the (1 - 2 alpha) = 90% interval of `cost_ratio` from the same draws: "the CI lies above
    1 + delta" is a one-sided test at level alpha that the cost exceeds 1 + delta, and "inside [1 - delta,
    1 + delta]" is the two one-sided tests (TOST) of equivalence (Schuirmann 1987), both of which use the
    90% interval; the 95% `cost_ratio_ci` is what a report shows as the effect's CI.
    `p_adjusted` equals `p_value` until `adjust` applies a correction over a report (`adjustment`,
    `family_size`); `verdict` is always decided with `p_adjusted`. `delta` is the practical threshold as a
    fraction (0.02 = 2%). The bootstrap used `resamples` draws from `random.Random(seed)`.
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
) -> Comparison:
    """Compare per-run values of a condition with its baseline; deterministic for a given `seed`.

    Method (docs/method.md; research/anchors-methodology.md section 9.4):
    - effect R = median(condition) / median(baseline) with a 95% percentile bootstrap CI, each arm's runs
      resampled independently (Kalibera & Jones 2013: resample the top-level unit; Efron & Tibshirani 1993
      ch. 13), `resamples` draws seeded with `seed` (`bootstrap.bootstrap_ratio_draws`);
    - two-sided Mann-Whitney U on the per-run values (`hypothesis.mann_whitney_u`: exact without ties when an
      arm has <= 8 runs, else normal approximation with tie and continuity corrections), or, when
      `paired_blocks` gives each run's block label (baseline labels, condition labels), the Wilcoxon
      signed-rank test on the per-block log(median condition / median baseline) (`wilcoxon_signed_rank`);
      the CI still resamples the arms independently, which is conservative for paired designs;
    - verdict by `verdict.decide`: the (1 - 2 alpha) interval `decision_ci` against 1 +- `delta` (a one-sided
      test at level alpha per side, TOST for "no change"), with the unadjusted p until `adjust` is applied;
    - the `confounded` tag from `verdict.check_confounders` when both per-run environments are given.
    """
    check_level(confidence, "confidence")
    check_level(alpha, "alpha")
    if resamples < 100:
        raise ValueError(f"resamples must be at least 100, got {resamples}")
    base = as_values(baseline, what="baseline", positive=True)
    cond = as_values(condition, what="condition", positive=True)
    if not base or not cond:
        raise ValueError(f"each arm needs at least one run (baseline {len(base)}, condition {len(cond)})")
    warnings: list[str] = []
    for arm, vals in (("baseline", base), ("condition", cond)):
        if len(vals) > ITERATIONS_SUSPECT_N:
            warnings.append(
                f"{len(vals)} {arm} values: more than any plan has runs. Pass one value per run (the median of "
                "its iterations, see run_values), never pooled iterations"
            )

    base_median, cond_median = statistics.median(base), statistics.median(cond)
    ratio = cond_median / base_median
    cost_ratio = 1.0 / ratio if higher_is_better else ratio
    ratio_ci = cost_ci = decision_ci = None
    decision_level = 1.0 - 2.0 * alpha
    if len(base) >= 2 and len(cond) >= 2:
        draws = bootstrap_ratio_draws(base, cond, resamples, random.Random(seed))
        draws.sort()
        method = f"bootstrap percentile ({resamples} resamples of runs per arm, seed {seed})"
        ratio_ci = Interval(*percentile_interval(draws, confidence, presorted=True), confidence, method)
        cost_draws = [1.0 / r for r in reversed(draws)] if higher_is_better else draws  # ascending either way
        cost_ci = Interval(*percentile_interval(cost_draws, confidence, presorted=True), confidence, method)
        decision_ci = Interval(
            *percentile_interval(cost_draws, decision_level, presorted=True), decision_level, method
        )

    n_blocks = None
    if paired_blocks is None:
        test = mann_whitney_u(cond, base, method=test_method)
    else:
        log_ratios, unpaired = _paired_log_ratios(base, cond, paired_blocks)
        n_blocks = len(log_ratios)
        if unpaired:
            warnings.append(
                f"{unpaired} blocks had runs of only one arm and were left out of the paired test"
            )
        if not log_ratios:
            raise ValueError("paired_blocks: no block has runs of both arms")
        test = wilcoxon_signed_rank(log_ratios, method=test_method)
        if n_blocks < 6:
            warnings.append(
                f"{n_blocks} paired blocks: the signed-rank test cannot reach p < 0.05 with fewer than 6; "
                "run more blocks"
            )

    confounding = None
    if baseline_env is not None and condition_env is not None:
        confounding = check_confounders(baseline_env, condition_env)
    verdict = decide(
        decision_ci,
        p_adjusted=test.p_value,
        delta=delta,
        n_baseline=len(base),
        n_condition=len(cond),
        alpha=alpha,
        confounding=confounding,
    )
    return Comparison(
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
        warnings=tuple(warnings),
    )


def adjust(comparisons: Sequence[Comparison], method: Adjustment = "holm") -> tuple[Comparison, ...]:
    """The comparisons of one report with adjusted p-values and verdicts re-decided on them.

    Method: Holm (1979) over the report's family (docs/method.md), or Benjamini & Hochberg (1995) (`method="bh"`)
    for large exploratory sweeps (`multiple.holm`, `multiple.benjamini_hochberg`). `"none"` restores the
    unadjusted p-values; `"auto"` is the report's rule: Holm up to 50 comparisons, Benjamini-Hochberg above
    (`threshold.family_method`). The family is exactly the comparisons passed in.
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
        )
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
