"""boardlab.stats agrees with scipy/numpy wherever they compute the same statistic.

boardlab.stats is pure Python (the board has no scipy); these tests pin it to the reference implementations
on a workstation, so a number in a report can be reproduced there.
"""

from __future__ import annotations

import random

import pytest

scipy_stats = pytest.importorskip("scipy.stats")
np = pytest.importorskip("numpy")
special = pytest.importorskip("scipy.special")

from boardlab.stats import (  # noqa: E402
    benjamini_hochberg,
    mann_whitney_u,
    mean_t_interval,
    median_ci_order_statistic,
    percentile,
    spearman,
    wilcoxon_signed_rank,
)
from boardlab.stats._special import betainc, rank_average, student_t_ppf, student_t_sf  # noqa: E402


def _samples(seed: int, count: int, *, max_n: int, decimals: int | None, shift: float = 0.3):
    rng = random.Random(seed)
    for _ in range(count):
        n1, n2 = rng.randint(1, max_n), rng.randint(1, max_n)
        x = [rng.gauss(0, 1) for _ in range(n1)]
        y = [rng.gauss(shift, 1) for _ in range(n2)]
        if decimals is not None:
            x, y = [round(v, decimals) for v in x], [round(v, decimals) for v in y]
        yield x, y


# --- special functions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 9, 14, 19, 29, 49, 99, 1000])
@pytest.mark.parametrize("q", [0.5, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025, 1e-6])
def test_student_t_quantile_matches_scipy_t_ppf(df, q):
    assert student_t_ppf(q, df) == pytest.approx(scipy_stats.t.ppf(q, df), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("df", [1, 3, 9, 49])
@pytest.mark.parametrize("t", [-5.0, -1.0, 0.0, 0.3, 2.0, 12.7, 300.0])
def test_student_t_tail_matches_scipy_t_sf(df, t):
    assert student_t_sf(t, df) == pytest.approx(scipy_stats.t.sf(t, df), rel=1e-11, abs=1e-300)


@pytest.mark.parametrize(
    "a,b,x",
    [(0.5, 0.5, 0.3), (10, 3, 0.9), (200, 300, 0.4), (2.5, 0.5, 0.999), (1e-3, 2, 0.1), (30, 21, 0.6)],
)
def test_incomplete_beta_matches_scipy_betainc(a, b, x):
    assert betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-11, abs=1e-15)


def test_average_ranks_match_scipy_rankdata():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0]
    ranks, ties = rank_average(values)
    assert list(ranks) == list(scipy_stats.rankdata(values))
    assert sorted(ties) == [2, 2, 3]


@pytest.mark.parametrize("q", [0, 5, 25, 50, 73.3, 95, 99, 100])
@pytest.mark.parametrize("n", [1, 2, 7, 10, 101])
def test_percentile_is_numpys_default_linear_interpolation(q, n):
    rng = random.Random(n)
    values = [rng.lognormvariate(0, 0.5) for _ in range(n)]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12)


# --- per-cell intervals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", list(range(6, 60)) + [99, 100, 250, 1000, 1001, 4000])
def test_order_statistic_ci_is_the_narrowest_binomial_interval_with_95_percent_coverage(n):
    values = list(range(n))  # value = 0-based rank, so the interval's ends are the ranks
    ci = median_ci_order_statistic(values, 0.95)
    assert ci is not None and ci.ranks is not None
    lo_rank, hi_rank = ci.ranks
    assert hi_rank == n + 1 - lo_rank and (ci.low, ci.high) == (lo_rank - 1, hi_rank - 1)
    binom = scipy_stats.binom(n, 0.5)
    assert ci.coverage == pytest.approx(1 - 2 * binom.cdf(lo_rank - 1), rel=1e-9)
    assert ci.coverage >= 0.95
    assert 1 - 2 * binom.cdf(lo_rank) < 0.95  # one rank narrower would undercover


def test_mean_interval_matches_scipy_t_interval():
    values = [10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.0]
    ci = mean_t_interval(values, 0.95)
    expected = scipy_stats.t.interval(
        0.95, len(values) - 1, loc=np.mean(values), scale=scipy_stats.sem(values)
    )
    assert (ci.low, ci.high) == pytest.approx(expected, rel=1e-12)
    assert "assumes normality" in ci.method


# --- rank tests ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("x,y", list(_samples(1, 80, max_n=12, decimals=None)))
def test_mann_whitney_exact_matches_scipy_without_ties(x, y):
    ours = mann_whitney_u(x, y, method="exact")
    ref = scipy_stats.mannwhitneyu(x, y, method="exact")
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("x,y", list(_samples(2, 80, max_n=40, decimals=1)))
def test_mann_whitney_asymptotic_matches_scipy_with_ties(x, y):
    ours = mann_whitney_u(x, y, method="asymptotic")
    ref = scipy_stats.mannwhitneyu(x, y, method="asymptotic")
    assert ours.statistic == ref.statistic
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("x,y", list(_samples(3, 80, max_n=15, decimals=2)))
def test_mann_whitney_auto_chooses_like_scipy(x, y):
    ours = mann_whitney_u(x, y)
    ref = scipy_stats.mannwhitneyu(x, y)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-15)


def test_mann_whitney_exact_handles_the_largest_arms_boardlab_uses():
    rng = random.Random(4)
    x = [rng.gauss(0, 1) for _ in range(50)]
    y = [rng.gauss(0.5, 1) for _ in range(50)]
    ref = scipy_stats.mannwhitneyu(x, y, method="exact")
    assert mann_whitney_u(x, y, method="exact").p_value == pytest.approx(ref.pvalue, rel=1e-9)


def _differences(seed: int, count: int, *, decimals: int | None, zeros: bool = False):
    rng = random.Random(seed)
    for i in range(count):
        # with ties, scipy enumerates 2^n sign flips up to n = 13 (slowly): keep those cases small
        n = rng.randint(2, 9) if i % 4 == 0 else rng.randint(14, 60)
        d = [rng.gauss(0.2, 1) for _ in range(n)]
        if decimals is not None:
            d = [round(v, decimals) for v in d]
        if zeros:
            d[0] = 0.0
        yield d


@pytest.mark.parametrize("d", list(_differences(5, 60, decimals=None)))
def test_wilcoxon_matches_scipy_exact_and_asymptotic(d):
    for method in ("auto", "exact", "asymptotic"):
        ours = wilcoxon_signed_rank(d, method=method)
        ref = scipy_stats.wilcoxon(d, method=method)
        assert ours.statistic == pytest.approx(ref.statistic, abs=1e-12)
        assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("d", list(_differences(6, 40, decimals=1, zeros=True)))
def test_wilcoxon_matches_scipy_with_ties_and_zeros(d):
    for method in ("auto", "asymptotic"):
        ours = wilcoxon_signed_rank(d, method=method)
        ref = scipy_stats.wilcoxon(d, method=method)
        assert ours.statistic == pytest.approx(ref.statistic, abs=1e-12)
        assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-15)


def test_wilcoxon_on_log_ratios_of_paired_runs():
    base = [100.0, 102.0, 99.0, 101.0, 100.5, 98.7, 101.9, 100.2]
    cond = [104.0, 105.1, 103.0, 103.9, 104.4, 102.2, 106.0, 104.1]
    d = [np.log(c / b) for b, c in zip(base, cond, strict=True)]
    assert wilcoxon_signed_rank(d).p_value == pytest.approx(scipy_stats.wilcoxon(d).pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_spearman_t_approximation_matches_scipy_spearmanr(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 60)
    y = [round(rng.gauss(0.02 * i, 1), 1 if seed % 2 else 6) for i in range(n)]
    ours = spearman(list(range(n)), y, method="asymptotic")
    ref = scipy_stats.spearmanr(list(range(n)), y)
    assert ours.rho == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("seed", range(12))
def test_spearman_exact_matches_scipy_permutation_test(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 6)
    x = list(range(n))
    y = [round(rng.gauss(0.1 * i, 1), 0 if seed % 2 else 6) for i in range(n)]
    ours = spearman(x, y, method="exact")
    if ours is None:  # constant y after rounding
        pytest.skip("constant sample")
    ref = scipy_stats.permutation_test(
        (y,),
        lambda yy: scipy_stats.spearmanr(x, yy).statistic,
        permutation_type="pairings",
        n_resamples=np.inf,
    )
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


# --- multiple testing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_benjamini_hochberg_matches_scipy_false_discovery_control(seed):
    rng = random.Random(seed)
    p = [rng.random() ** 3 for _ in range(rng.randint(1, 40))]
    ours = benjamini_hochberg(p)
    assert list(ours) == pytest.approx(list(scipy_stats.false_discovery_control(p, method="bh")), rel=1e-12)


# --- Yuen's trimmed t (the report's test) -------------------------------------------------------------------


def test_yuen_welch_matches_scipy_trimmed_ttest_ind_at_the_smaller_of_its_df_and_the_designs():
    """The statistic, its standard error and Welch's df are scipy's; the df used is the smaller of Welch's
    and its value at equal variances (trimmed.yuen_welch says why), and p and interval are Student's t
    there."""
    from boardlab.stats.trimmed import equal_variance_df, yuen_welch

    rng = random.Random(41)
    for _ in range(60):
        n1, n2 = rng.randint(3, 40), rng.randint(3, 40)
        a = [rng.gauss(0, rng.uniform(0.5, 2)) for _ in range(n1)]
        b = [rng.gauss(rng.uniform(-1, 1), rng.uniform(0.5, 2)) for _ in range(n2)]
        ours = yuen_welch(a, b)
        ref = scipy_stats.ttest_ind(b, a, equal_var=False, trim=0.2)
        assert ours.estimate / ours.se == pytest.approx(ref.statistic, rel=1e-10)
        df = min(ref.df, equal_variance_df(n1, n2))
        assert ours.df == pytest.approx(df, rel=1e-10)
        p = 2 * scipy_stats.t.sf(abs(ref.statistic), df)
        assert ours.p_value == pytest.approx(p, rel=1e-8, abs=1e-14)
        low, high = ours.log_interval(0.90)
        half = scipy_stats.t.ppf(0.95, df) * ours.se
        assert (low, high) == (
            pytest.approx(ours.estimate - half, rel=1e-8),
            pytest.approx(ours.estimate + half, rel=1e-8),
        )
