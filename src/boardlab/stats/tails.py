"""Tail metrics (p99 and above) of a condition against its baseline (docs/method.md "Tails").

A run's own p99 means something only with at least 100 samples in that run (with 90 frames, a run's "p99"
is its slowest frame). So:
- every run of both arms has >= TAIL_MIN_SAMPLES samples: the per-run p99 is a per-run summary like the
  median, and `compare.compare` treats it like any other per-run value;
- otherwise: the p99 of all runs' samples pooled per arm, with a *cluster* bootstrap (resample whole runs
  with replacement, pool their samples, take the quantile), because samples within a run are not
  independent (Kalibera & Jones 2013: resample the top-level unit). The p-value is the bootstrap's own
  two-sided p (twice the smaller share of draws on either side of 1, with the +1 correction of Davison &
  Hinkley 1997, eq. 4.11), so the test and the interval come from the same draws.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from itertools import chain

from boardlab.stats._special import normal_cdf, normal_ppf, percentile_sorted, student_t_ppf, student_t_sf
from boardlab.stats.bootstrap import percentile_interval
from boardlab.stats.compare import Comparison, compare
from boardlab.stats.hypothesis import RankTest
from boardlab.stats.summary import Interval
from boardlab.stats.verdict import ALPHA, RunEnvironment, check_confounders, decide

TAIL_MIN_SAMPLES = 100  # docs/method.md: a per-run p99 needs at least 100 samples in that run
TAIL_RESAMPLES = 2000


def pooled_quantile(runs: Sequence[Sequence[float]], q: float) -> float:
    """The q-quantile (0 < q < 1) of every run's samples pooled (linear interpolation, Hyndman & Fan def. 7)."""
    pooled = sorted(v for run in runs for v in run)
    return percentile_sorted(pooled, q)


def _resampled_quantile(runs: list[list[float]], rng: random.Random, q: float) -> float:
    """The q-quantile of one cluster-bootstrap resample: len(runs) whole runs drawn with replacement, pooled."""
    n = len(runs)
    pooled = list(chain.from_iterable(runs[rng.randrange(n)] for _ in range(n)))
    pooled.sort()
    return percentile_sorted(pooled, q)


def per_run_enough(runs: Sequence[Sequence[float]], min_samples: int = TAIL_MIN_SAMPLES) -> bool:
    return bool(runs) and all(len(r) >= min_samples for r in runs)


def compare_tail(
    baseline_runs: Sequence[Sequence[float]],
    condition_runs: Sequence[Sequence[float]],
    *,
    q: float = 0.99,
    higher_is_better: bool = False,
    delta: float,
    seed: int,
    resamples: int = TAIL_RESAMPLES,
    alpha: float = ALPHA,
    baseline_env: Sequence[RunEnvironment] | None = None,
    condition_env: Sequence[RunEnvironment] | None = None,
    min_samples: int = TAIL_MIN_SAMPLES,
) -> Comparison:
    """The q-quantile of a condition against its baseline, by the rule of this module's docstring.

    Each element of `baseline_runs` / `condition_runs` is one run's samples. The result is a `Comparison`
    like `compare`'s (same verdict rule: `decision_ci` is the 90% interval), `statistic` saying which rule
    applied. Deterministic for a given `seed`.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    base = [list(map(float, r)) for r in baseline_runs if len(r)]
    cond = [list(map(float, r)) for r in condition_runs if len(r)]
    if not base or not cond:
        raise ValueError(f"each arm needs a run with samples (baseline {len(base)}, condition {len(cond)})")
    level = f"p{q * 100:g}"
    if per_run_enough(base, min_samples) and per_run_enough(cond, min_samples):
        per_base = [percentile_sorted(sorted(r), q) for r in base]
        per_cond = [percentile_sorted(sorted(r), q) for r in cond]
        c = compare(
            per_base,
            per_cond,
            higher_is_better=higher_is_better,
            delta=delta,
            seed=seed,
            alpha=alpha,
            baseline_env=baseline_env,
            condition_env=condition_env,
        )
        return _with_statistic(c, f"per-run {level} (every run has >= {min_samples} samples)")

    b_med, c_med = pooled_quantile(base, q), pooled_quantile(cond, q)
    if b_med <= 0 or c_med <= 0:
        raise ValueError(f"the pooled {level} must be positive (baseline {b_med}, condition {c_med})")
    ratio = c_med / b_med
    cost_ratio = 1.0 / ratio if higher_is_better else ratio
    rng = random.Random(seed)
    draws: list[float] = []
    nb, nc = len(base), len(cond)
    for _ in range(resamples):
        bq = _resampled_quantile(base, rng, q)
        cq = _resampled_quantile(cond, rng, q)
        draws.append(cq / bq if bq > 0 else math.inf)
    draws.sort()
    cost = [1.0 / r for r in reversed(draws)] if higher_is_better else draws
    expand = _expansion(nb, nc)
    method = (
        f"cluster bootstrap, expanded percentile ({resamples} resamples of whole runs per arm, seed {seed}; "
        f"t with {nb + nc - 2} df)"
    )

    def interval(values: list[float], level: float) -> Interval:
        return Interval(*percentile_interval(values, expand(level), presorted=True), level, method)

    ratio_ci, cost_ci = interval(draws, 0.95), interval(cost, 0.95)
    decision_ci = interval(cost, 1 - 2 * alpha)
    below = sum(1 for r in draws if r <= 1.0)
    above = sum(1 for r in draws if r >= 1.0)
    p = _expanded_p((min(below, above) + 1) / (resamples + 1), nb + nc - 2)
    test = RankTest("cluster bootstrap", ratio, p, "bootstrap", nb + nc)  # type: ignore[arg-type]
    confounding = None
    if baseline_env is not None and condition_env is not None:
        confounding = check_confounders(baseline_env, condition_env)
    verdict = decide(
        decision_ci,
        p_adjusted=p,
        delta=delta,
        n_baseline=nb,
        n_condition=nc,
        alpha=alpha,
        confounding=confounding,
    )
    small = min(min(len(r) for r in base), min(len(r) for r in cond))
    return Comparison(
        n_baseline=nb,
        n_condition=nc,
        baseline_median=b_med,
        condition_median=c_med,
        higher_is_better=higher_is_better,
        ratio=ratio,
        ratio_ci=ratio_ci,
        cost_ratio=cost_ratio,
        cost_ratio_ci=cost_ci,
        decision_ci=decision_ci,
        test=test,
        n_blocks=None,
        p_value=p,
        p_adjusted=p,
        adjustment="none",
        family_size=1,
        delta=delta,
        alpha=alpha,
        confounding=confounding,
        verdict=verdict,
        seed=seed,
        resamples=resamples,
        warnings=(),
        statistic=f"pooled {level} of all runs' samples (a run has only {small} samples, < {min_samples})",
    )


def _expansion(nb: int, nc: int):
    """The nominal level -> the percentile level of the expanded percentile interval (after Hesterberg 2015,
    "What teachers should know about the bootstrap", 4.4): the normal quantile at the new level equals
    Student's t quantile with nb + nc - 2 degrees of freedom at the nominal one. A percentile interval over
    few clusters is too narrow (it behaves as if the spread of the runs were known, z for t); Hesterberg's
    further sqrt(n / (n - 1)) factor over-corrected here (1.5% of true nulls rejected at 5%, bench), so it
    is left out."""
    df = max(1, nb + nc - 2)

    def level(confidence: float) -> float:
        z = student_t_ppf(0.5 + confidence / 2.0, df)
        return min(1.0 - 1e-12, 2.0 * normal_cdf(z) - 1.0)

    return level


def _expanded_p(share: float, df: int) -> float:
    """Two-sided p consistent with the expanded interval: the level at which it just reaches a ratio of 1.
    `share` is the bootstrap's one-sided share beyond 1 (with the +1 correction)."""
    z = -normal_ppf(min(0.5, share))
    return min(1.0, 2.0 * student_t_sf(z, max(1, df)))


def _with_statistic(c: Comparison, statistic: str) -> Comparison:
    import dataclasses

    return dataclasses.replace(c, statistic=statistic)


def median_samples(runs: Sequence[Sequence[float]]) -> float:
    return statistics.median(len(r) for r in runs) if runs else 0.0
