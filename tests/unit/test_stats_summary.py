"""Per-cell summary (docs/method.md "Per cell"): what a cell's numbers are, and when they are withheld."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from boardlab.stats import (
    drift_check,
    mad,
    median_ci_bootstrap,
    median_ci_order_statistic,
    run_values,
    summarize,
    tukey_outliers,
)
from boardlab.stats.bootstrap import MedianSampler

RUNS = [10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.0, 10.3, 10.4, 9.7]


def test_a_cell_reports_median_spread_and_percentiles_of_its_runs():
    s = summarize(RUNS)
    assert s.n == 10
    assert s.median == pytest.approx(10.15)
    assert s.mean == pytest.approx(statistics.fmean(RUNS))
    assert s.std == pytest.approx(statistics.stdev(RUNS))
    assert s.cv == pytest.approx(statistics.stdev(RUNS) / statistics.fmean(RUNS))
    assert (s.min, s.max) == (9.7, 10.7)
    # linear interpolation: p5 sits at 0-based position 0.45 between 9.7 and 9.8
    assert s.p5 == pytest.approx(9.7 + 0.45 * 0.1)
    assert "linear interpolation" in s.percentile_method


def test_the_median_ci_is_distribution_free_from_six_runs_on():
    five = summarize(RUNS[:5])
    assert five.median_ci is None and five.median_bootstrap_ci is None
    assert "at least 6 runs" in five.median_ci_reason
    assert five.median_bootstrap_ci_reason is not None
    six = summarize(RUNS[:6])
    assert (six.median_ci.low, six.median_ci.high) == (min(RUNS[:6]), max(RUNS[:6]))
    assert six.median_ci.coverage == pytest.approx(1 - 2 / 64)
    ten = summarize(RUNS)
    assert ten.median_ci.ranks == (2, 9)  # P(Binomial(10, 1/2) <= 1) = 11/1024 <= 0.025
    assert ten.median_ci.coverage == pytest.approx(1 - 2 * 11 / 1024)


def test_order_statistic_ci_scales_to_many_values():
    values = list(range(100_001))
    ci = median_ci_order_statistic(values)
    assert ci.low < 50_000 < ci.high
    assert ci.coverage == pytest.approx(0.95, abs=0.001)
    assert ci.half_width == pytest.approx(1.96 * math.sqrt(100_001) / 2, rel=0.01)


def test_bootstrap_ci_is_exact_or_seeded_and_stays_within_the_runs():
    exact = median_ci_bootstrap(RUNS)
    assert exact == median_ci_bootstrap(RUNS, seed=7)  # no draws: nothing for a seed to change
    assert min(RUNS) <= exact.low <= statistics.median(RUNS) <= exact.high <= max(RUNS)
    assert "percentile" in exact.method and "exact distribution" in exact.method
    # the resample median's exact distribution over these 10 runs: P(median* < 9.9) = 0.0196 < 0.025 <=
    # P(median* <= 9.9) = 0.0547, and P(median* < 10.4) = 0.9453 < 0.975 <= P(median* <= 10.4) = 0.9804
    assert (exact.low, exact.high) == (9.9, 10.4)
    a = median_ci_bootstrap(RUNS, resamples=10_000, seed=7)
    assert a == median_ci_bootstrap(RUNS, resamples=10_000, seed=7)
    assert min(RUNS) <= a.low <= statistics.median(RUNS) <= a.high <= max(RUNS)
    assert "percentile" in a.method and "seed 7" in a.method


def test_the_mean_interval_is_labelled_as_assuming_normality():
    s = summarize(RUNS)
    assert s.mean_t_ci.low < s.mean < s.mean_t_ci.high
    assert s.mean_t_ci.method == "student-t (assumes normality)"
    assert summarize([1.0]).mean_t_ci is None


def test_mad_is_reported_raw_and_scaled_to_sigma():
    assert mad([1, 2, 3, 4, 100]) == 1
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (s.mad, s.mad_scaled) == (1.0, pytest.approx(1.4826))


def test_tukey_outliers_are_counted_by_side_and_severity_and_never_dropped():
    values = [10.0, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 10.7, 10.8, 11.8, 14.0, 5.0]
    out = tukey_outliers(values)
    # quartiles by linear interpolation over 12 values: positions 2.75 and 8.25
    assert out.q1 == pytest.approx(10.175) and out.q3 == pytest.approx(10.725)
    assert (out.low_mild, out.high_mild, out.low_extreme, out.high_extreme) == (0, 1, 1, 1)
    s = summarize(values)
    assert s.n == 12 and s.min == 5.0 and s.max == 14.0
    assert any("Tukey" in w for w in s.warnings)


def test_p99_needs_a_hundred_values():
    rng = random.Random(1)
    values = [rng.random() for _ in range(100)]
    assert summarize(values[:99]).p99 is None
    assert summarize(values[:99]).p99_reason == "p99 needs at least 100 values (have 99)"
    assert summarize(values).p99 is not None and summarize(values).p99_reason is None


def test_drift_against_run_order_is_flagged_with_what_to_do():
    rising = [100 + 0.5 * i + (0.1 if i % 2 else -0.1) for i in range(12)]
    s = summarize(rising)
    assert s.drift.flagged and s.drift.rho > 0.9
    assert s.drift.method == "t-approximation"
    assert any("Interleave" in w for w in s.warnings)
    shuffled = rising[:]
    random.Random(3).shuffle(shuffled)
    assert not summarize(shuffled).drift.flagged


def test_drift_uses_the_given_run_order_and_exact_p_for_few_runs():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert drift_check(values, order=[4, 0, 3, 1, 2]).rho == pytest.approx(1.0)
    small = drift_check([1.0, 2.0, 3.0, 4.0])
    assert small.method == "exact-permutation"
    assert small.p_value == pytest.approx(2 / 24)  # a perfect trend of 4 runs is 1 of 24 orders, two-sided
    assert not small.flagged


def test_drift_is_undefined_for_fewer_than_three_runs_or_constant_values():
    assert summarize([1.0, 2.0]).drift is None
    assert summarize([1.0, 2.0]).drift_reason == "a drift check needs at least 3 runs (have 2)"
    assert summarize([3.0] * 8).drift is None
    assert "constant" in summarize([3.0] * 8).drift_reason


def test_iterations_reach_the_statistics_only_as_one_median_per_run():
    assert run_values([[1.0, 2.0, 9.0], [4.0, 5.0], [7.0]]) == (2.0, 4.5, 7.0)
    with pytest.raises(TypeError, match="one number per run"):
        summarize([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="finite"):
        summarize([1.0, math.nan])
    with pytest.raises(ValueError):
        summarize([])


# --- the resample-median sampler behind every bootstrap here ------------------------------------------------


def _enumerated_median_distribution(xs):
    n = len(xs)
    probs = {}
    for idx in itertools.product(range(n), repeat=n):
        m = statistics.median([xs[i] for i in idx])
        probs[m] = probs.get(m, 0.0) + n**-n
    return probs


@pytest.mark.parametrize(
    "xs",
    [[1.0], [1.0, 2.0], [1.0, 2.0, 4.0], [1.0, 2.0, 4.0, 8.0], [1.0, 1.5, 2.0, 4.0, 8.0],
     [1.0, 1.5, 2.0, 4.0, 8.0, 9.0], [1.0, 1.0, 2.0, 3.0, 3.0, 3.0], [2.0, 2.0, 2.0, 2.0]],
)  # fmt: skip
@pytest.mark.parametrize("flatten", [True, False])
def test_resample_medians_follow_the_exact_distribution_of_all_n_to_the_n_resamples(xs, flatten):
    exact = _enumerated_median_distribution(xs)
    ours = MedianSampler(xs, flatten=flatten).distribution()
    for value in set(exact) | set(ours):
        assert ours.get(value, 0.0) == pytest.approx(exact.get(value, 0.0), abs=1e-12)


@pytest.mark.parametrize("n", [9, 10])
@pytest.mark.parametrize("flatten", [True, False])
def test_resample_medians_match_a_naive_resample_and_sort_bootstrap(n, flatten):
    rng = random.Random(n)
    xs = sorted(rng.lognormvariate(0, 0.1) for _ in range(n))
    draws = sorted(MedianSampler(xs, flatten=flatten).draw(40_000, random.Random(1)))
    naive_rng = random.Random(2)
    naive = sorted(statistics.median(naive_rng.choices(xs, k=n)) for _ in range(40_000))
    for q in (0.025, 0.25, 0.5, 0.75, 0.975):
        i = int(q * 40_000)
        assert draws[i] == pytest.approx(naive[i], abs=0.02)


def test_far_from_the_median_the_sampler_sets_what_the_beta_function_would_give_to_2_to_the_minus_60():
    """The median sampler computes P(X*_(k) <= x_(i)) only where Hoeffding's bound leaves it further than
    2^-60 from 0 and 1; every value it sets instead is that close to the exact one (odd n: the table is g)."""
    from boardlab.stats._special import binom_sf_ge

    for n in (1001, 3001):
        k = (n + 1) // 2
        exact, prev = [], 0.0
        for i in range(1, n):
            prev = max(prev, binom_sf_ge(k, n, i / n))
            exact.append(prev)
        cum = MedianSampler(list(range(n)))._cum[:-1]
        assert max(abs(a - b) for a, b in zip(exact, cum, strict=True)) < 2.0**-60
        assert sum(1 for a, b in zip(exact, cum, strict=True) if a != b) > 0  # some were set, not computed


def test_values_are_checked_the_same_on_the_quick_path():
    from boardlab.stats._validate import as_values

    xs = [1.5, 2.0, 3.25]
    got = as_values(xs)
    assert got == xs and got is not xs
    with pytest.raises(ValueError, match=r"values\[1\] = nan"):
        as_values([1.0, math.nan, 2.0])
    with pytest.raises(ValueError, match=r"values\[2\] = inf"):
        as_values([1.0, 2.0, math.inf])
    with pytest.raises(ValueError, match=r"values\[0\] = -1.0: ratios need positive"):
        as_values([-1.0, 2.0], positive=True)
    assert as_values([1, 2.5]) == [1.0, 2.5] and type(as_values([1, 2.5])[0]) is float
    assert as_values([True, 2]) == [1.0, 2.0] and all(type(v) is float for v in as_values((3, 4)))
    with pytest.raises(OverflowError):
        as_values([1, 10**400])
