"""The statistics' fast paths against slow reference implementations kept here (the code they replaced, or
the definition itself): the same numbers, bit for bit where the arithmetic is the same, to 1e-12 where a
better algorithm computes the same quantity differently.

- the exact bootstrap percentile interval of the median (`bootstrap.MedianLaw`) against the exhaustive
  n^n enumeration, the exact distribution tabulated in full (`MedianSampler(..., flatten=True)`), and many
  drawn resample medians;
- ranks, Pearson's r, the bimodality split, the MAD, Tukey's counts and the order-statistic CI against the
  loops they replaced (equal floats), the trimmed parts to 1e-12;
- the mean and standard deviation against `statistics` (to an ulp or two);
- the memo of drift checks and bimodality: an answer comes back only for equal inputs.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from array import array
from fractions import Fraction

import pytest

from boardlab.stats import _memo, drift_check, median_ci_bootstrap, median_ci_order_statistic, summarize
from boardlab.stats._special import binom_sf_ge, first_true, half_binom_cdf, percentile_sorted, rank_average
from boardlab.stats.bootstrap import MedianLaw, MedianSampler, median_percentile_interval, percentile_interval
from boardlab.stats.drift import _drift_check
from boardlab.stats.flags import _best_split, _bimodality, bimodality
from boardlab.stats.hypothesis import _pearson
from boardlab.stats.summary import _mad_sorted, _mean_std, _tukey_sorted, order_statistic_min_n
from boardlab.stats.trimmed import _trimmed_parts

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # the test extra is missing: the seeded tests below still run
    given = None


# --- the references: the loops the fast paths replaced ------------------------------------------------------


def rank_average_ref(values):
    n = len(values)
    order = sorted(range(n), key=values.__getitem__)
    ranks = [0.0] * n
    ties = []
    i = 0
    while i < n:
        j = i
        while j + 1 < n and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2.0 + 1.0
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def ranked(values):
    """`rank_average` as the reference gives it: its ranks (a column of doubles) as a list."""
    ranks, ties = rank_average(values)
    assert isinstance(ranks, array) and ranks.typecode == "d"
    return list(ranks), ties


def pearson_ref(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    saa = sum((x - ma) ** 2 for x in a)
    sbb = sum((y - mb) ** 2 for y in b)
    if saa == 0 or sbb == 0:
        return math.nan
    return max(-1.0, min(1.0, sab / math.sqrt(saa * sbb)))


def best_split_ref(logs):
    n = len(logs)
    total_mean = sum(logs) / n
    sst = sum((v - total_mean) ** 2 for v in logs)
    if sst <= 0.0:
        return 0.0, 0
    smallest = max(2, math.ceil(0.2 * n))
    prefix, sums = 0.0, []
    for v in logs:
        prefix += v
        sums.append(prefix)
    best, at = 0.0, 0
    for i in range(smallest, n - smallest + 1):
        low_mean, high_mean = sums[i - 1] / i, (prefix - sums[i - 1]) / (n - i)
        between = i * (low_mean - total_mean) ** 2 + (n - i) * (high_mean - total_mean) ** 2
        if between / sst > best:
            best, at = between / sst, i
    return best, at


def trimmed_parts_ref(values, trim):
    xs = sorted(values)
    n = len(xs)
    g = math.floor(trim * n)
    kept = xs[g : n - g]
    wins = [xs[g]] * g + kept + [xs[n - g - 1]] * g
    mean_w = sum(wins) / n
    var_w = sum((v - mean_w) ** 2 for v in wins) / (n - 1) if n > 1 else 0.0
    return sum(kept) / (n - 2 * g), var_w, n - 2 * g


def order_statistic_ranks_ref(n, confidence):
    """The largest l with P(Binomial(n, 1/2) <= l - 1) <= (1 - c)/2, in exact integers (any n)."""
    half_alpha = (1 - Fraction(str(confidence))) / 2
    limit = half_alpha.numerator << n  # cum / 2^n <= num / den  <=>  cum * den <= num * 2^n
    cum, term, l_rank = 0, 1, 0
    for j in range(n // 2 + 1):
        cum += term
        if cum * half_alpha.denominator > limit:
            break
        l_rank = j + 1
        term = term * (n - j) // (j + 1)
    return l_rank


def binomial_tail_ref(k, n, a):
    """P(Binomial(n, a/n) >= k) as an exact rational, rounded once: sum_{j>=k} C(n, j) a^j
    (n - a)^(n-j) / n^n, each term from the one before in exact integers."""
    b = n - a
    term = math.comb(n, k) * a**k * b ** (n - k)
    total = 0
    for j in range(k, n + 1):
        total += term
        if j < n:
            term = term * (n - j) * a // ((j + 1) * b)
    return total / n**n


def tukey_ref(xs):
    q1, q3 = percentile_sorted(xs, 0.25), percentile_sorted(xs, 0.75)
    iqr = q3 - q1
    return (
        sum(1 for x in xs if q1 - 3.0 * iqr <= x < q1 - 1.5 * iqr),
        sum(1 for x in xs if q3 + 1.5 * iqr < x <= q3 + 3.0 * iqr),
        sum(1 for x in xs if x < q1 - 3.0 * iqr),
        sum(1 for x in xs if x > q3 + 3.0 * iqr),
    )


def exact_quantile_ref(distribution, q):
    """The smallest value whose cumulative probability reaches q, of {value: probability}."""
    acc = 0.0
    for v in sorted(distribution):
        acc += distribution[v]
        if acc >= q - 1e-12:
            return v
    return max(distribution)


def outcome(f, *args):
    try:
        return f(*args)
    except ZeroDivisionError:
        return "ZeroDivisionError"


def samples(seed, n, kind):
    """Run values of three shapes: smooth (lognormal), heavily tied (a coarse grid), two groups."""
    rng = random.Random(seed)
    if kind == "smooth":
        return [rng.lognormvariate(0.0, 0.3) for _ in range(n)]
    if kind == "tied":
        return [float(rng.randint(1, 6)) for _ in range(n)]
    return [rng.gauss(1.0, 0.01) * (1.1 if rng.random() < 0.4 else 1.0) for _ in range(n)]


KINDS = ("smooth", "tied", "bimodal")


# --- the exact bootstrap distribution of the median -------------------------------------------------------


@pytest.mark.parametrize("xs", [[1.0, 2.0, 4.0], [1.0, 2.0, 4.0, 8.0], [1.0, 1.5, 2.0, 4.0, 8.0],
                                [1.0, 1.5, 2.0, 4.0, 8.0, 9.0], [1.0, 1.0, 2.0, 3.0, 3.0, 3.0]])  # fmt: skip
def test_the_median_law_is_the_distribution_of_all_n_to_the_n_resamples(xs):
    n = len(xs)
    dist: dict[float, float] = {}
    for idx in itertools.product(range(n), repeat=n):
        m = statistics.median([xs[i] for i in idx])
        dist[m] = dist.get(m, 0.0) + n**-n
    law = MedianLaw(xs)
    acc = 0.0
    for v in sorted(dist):
        acc += dist[v]
        assert law.cdf(v) == pytest.approx(acc, abs=1e-12)
    for q in (0.025, 0.1, 0.5, 0.9, 0.975):
        assert law.quantile(q) == exact_quantile_ref(dist, q)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [6, 7, 10, 11, 31, 64, 99, pytest.param(120, marks=pytest.mark.slow)])
def test_median_quantiles_match_the_fully_tabulated_distribution(n, kind):
    xs = sorted(samples(n, n, kind))
    dist = MedianSampler(xs, flatten=True).distribution()
    law = MedianLaw(xs)
    for q in (0.025, 0.05, 0.5, 0.95, 0.975):
        assert law.quantile(q) == exact_quantile_ref(dist, q), q
    acc = 0.0
    for v in sorted(dist):
        acc += dist[v]
        assert law.cdf(v) == pytest.approx(acc, abs=1e-11)


@pytest.mark.parametrize("n", [101, 1000, 2940, 2941])
def test_the_median_index_cdf_is_the_exact_binomial_tail_to_1e_11(n):
    """G(i) = P(Binomial(n, (i + 1)/n) >= k) comes from one incomplete beta function and then 6-point
    Gauss-Legendre steps of the Beta density; both carry lgamma's rounding at large n (a few 1e-12), far
    below what moves a 2.5% quantile. Checked here against the exact rational tail."""
    law = MedianLaw(list(range(n)))
    k = (n + 1) // 2 if n % 2 else n // 2
    middle = n // 2
    law.index_cdf(middle)  # the anchor; the rest are steps from it
    for i in range(
        middle - int(1.2 * math.sqrt(n)), middle + int(1.2 * math.sqrt(n)), max(1, int(math.sqrt(n)) // 3)
    ):
        assert abs(law.index_cdf(i) - binomial_tail_ref(k, n, i + 1)) < 1e-11, i


def test_the_steps_and_the_incomplete_beta_agree_at_thirty_thousand_runs():
    n = 30_000
    law = MedianLaw(list(range(n)))
    law.index_cdf(n // 2)
    for i in range(n // 2 - 200, n // 2 + 201, 40):
        assert law.index_cdf(i) == pytest.approx(binom_sf_ge(n // 2, n, (i + 1) / n), abs=2e-11)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [pytest.param(400, marks=pytest.mark.slow), 2941, 2942])
def test_the_exact_interval_is_what_many_drawn_resample_medians_tend_to(n, kind):
    """The percentile interval of 200,000 drawn medians lies within a few Monte Carlo standard errors (in
    ranks of the sorted values) of the exact one."""
    xs = sorted(samples(n + 1, n, kind))
    low, high = median_percentile_interval(xs, 0.95)
    draws = MedianSampler(xs).draw(200_000, random.Random(3))
    mc_low, mc_high = percentile_interval(draws, 0.95)
    slack = 0.01 * (xs[-1] - xs[0]) if kind == "tied" else 0.0
    for exact, drawn in ((low, mc_low), (high, mc_high)):
        lo, hi = sorted((exact, drawn))
        between = sum(1 for x in xs if lo - slack < x < hi + slack) if lo < hi else 0
        assert between <= max(3, 0.003 * n), (exact, drawn)


def test_the_cell_summary_uses_the_exact_bootstrap_and_keeps_the_seeded_one_on_request():
    xs = samples(5, 200, "smooth")
    s = summarize(xs)
    assert s.median_bootstrap_ci == median_ci_bootstrap(xs)
    assert (s.median_bootstrap_ci.low, s.median_bootstrap_ci.high) == median_percentile_interval(
        sorted(xs), 0.95
    )
    assert "exact distribution" in s.median_bootstrap_ci.method and "seed" not in s.median_bootstrap_ci.method
    drawn = summarize(xs, bootstrap_resamples=2000, seed=4).median_bootstrap_ci
    assert drawn == median_ci_bootstrap(xs, resamples=2000, seed=4)
    assert "2000 resamples" in drawn.method and "seed 4" in drawn.method


# --- the loops replaced, equal floats -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 3, 9, 100, 3001])
def test_ranks_pearson_and_split_are_the_loops_floats(n, kind):
    xs = samples(n + 7, n, kind)
    assert ranked(xs) == rank_average_ref(xs)
    increasing = sorted(set(xs))
    assert ranked(increasing) == rank_average_ref(increasing)
    if n >= 3:
        ys = samples(n + 8, n, kind)
        rx, ry = rank_average(xs)[0], rank_average(ys)[0]
        assert _pearson(rx, ry) == pearson_ref(rx, ry) or math.isnan(pearson_ref(rx, ry))
        assert _pearson(xs, ys) == pearson_ref(xs, ys)
    if n >= 8:
        logs = sorted(math.log(v) for v in xs)
        assert _best_split(logs) == best_split_ref(logs)
        fast, ref = _trimmed_parts(logs, 0.2), trimmed_parts_ref(logs, 0.2)
        # the winsorized values summed as kept values and two clamped terms: 1e-12, not bit for bit
        assert fast[2] == ref[2] and fast[0] == pytest.approx(ref[0], rel=1e-12, abs=0)
        assert fast[1] == pytest.approx(ref[1], rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [3, 8, 9, 40, 1000])
def test_the_summary_ranks_its_sorted_values_for_the_drift_check_as_spearman_would(n, kind):
    xs = samples(n + 3, n, kind)
    rising = [v * (1.0 + 0.002 * i) for i, v in enumerate(xs)]
    for values in (xs, rising, sorted(xs)):
        for order in (None, list(range(n)), random.Random(n).sample(range(3 * n), n)):
            assert summarize(values, order=order).drift == _drift_check(values, order, 0.01)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [2, 5, 12, 101, pytest.param(2000, marks=pytest.mark.slow)])
def test_spread_and_outlier_counts_of_a_sorted_sample(n, kind):
    xs = samples(n + 9, n, kind) + ([50.0, 0.01] if n > 10 else [])
    s = sorted(xs)
    assert _mad_sorted(s) == statistics.median(abs(x - statistics.median(xs)) for x in xs)
    t = _tukey_sorted(s)
    assert (t.low_mild, t.high_mild, t.low_extreme, t.high_extreme) == tukey_ref(s)
    mean, std = _mean_std(xs)
    assert mean == statistics.fmean(xs)
    assert std == pytest.approx(statistics.stdev(xs), rel=1e-14, abs=1e-300)


def test_a_constant_or_huge_sample_keeps_its_standard_deviation_exact():
    assert _mean_std([3.0] * 50) == (3.0, 0.0)
    assert _mean_std([1e300, 1e300, 1e300])[1] == 0.0
    assert _mean_std([7.5]) == (7.5, None)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_order_statistic_ranks_are_the_exact_binomial_ones_at_every_size(confidence):
    rng = random.Random(11)
    sizes = (
        list(range(order_statistic_min_n(confidence), 40))
        + [999, 1000, 1001, 1002, 2941, 2942]
        + [rng.randint(1003, 6000) for _ in range(3)]
    )
    for n in sizes:
        ci = median_ci_order_statistic(range(n), confidence)
        l_rank = order_statistic_ranks_ref(n, confidence)
        assert ci.ranks == (l_rank, n + 1 - l_rank), n
        assert ci.coverage == 1.0 - 2.0 * half_binom_cdf(n, l_rank - 1)


def test_the_galloping_search_finds_the_first_true_from_any_guess():
    for n in (1, 2, 5, 100):
        for answer in range(n + 1):
            for guess in (-3, 0, answer - 1, answer, answer + 1, n - 1, n + 5):
                seen: list[int] = []

                def pred(i: int, seen=seen, answer=answer) -> bool:
                    seen.append(i)
                    return i >= answer

                assert first_true(pred, guess, n) == answer
                assert all(0 <= i < n for i in seen)


# --- the memo -----------------------------------------------------------------------------------------------


def test_the_memo_answers_equal_inputs_alike_and_never_mixes_different_ones():
    xs = samples(21, 300, "smooth")
    order = list(range(300))
    first = drift_check(xs, order)
    assert first == _drift_check(xs, order, 0.01)
    assert drift_check(list(xs), tuple(order)) is first  # equal doubles: the remembered answer
    assert drift_check(xs, order, alpha=0.05) == _drift_check(xs, order, 0.05) != first
    shuffled = xs[:]
    random.Random(1).shuffle(shuffled)
    assert drift_check(shuffled, order) == _drift_check(shuffled, order, 0.01) != first
    two_groups = samples(22, 300, "bimodal")
    assert bimodality(two_groups) == _bimodality(two_groups) != bimodality(xs)
    assert _memo.digest("a", [1, 2.0]) == _memo.digest("a", (1.0, 2))  # ints and floats alike
    assert _memo.digest("a", [1.0, 2.0]) != _memo.digest("b", [1.0, 2.0])
    assert _memo.digest("a", [1.0], [2.0]) != _memo.digest("a", [1.0, 2.0])
    assert _memo.digest("a", [1.0], None) != _memo.digest("a", [1.0])
    assert _memo.digest("a", iter([1.0])) is None  # an iterator is read once: never keyed
    assert _memo.digest("a", [True, 2.0]) is None and _memo.digest("a", [2**60]) is None
    assert _memo.digest("a", [Fraction(1, 3)]) is None
    for _ in range(2):  # an error is raised each time, never remembered
        with pytest.raises(ValueError, match="finite"):
            drift_check([1.0, math.nan, 2.0])


def test_the_memo_keeps_a_bounded_number_of_answers():
    for i in range(_memo.MAX_ANSWERS + 10):
        _memo.remembered(_memo.digest("bound", [float(i)]), lambda: None)
    assert len(_memo._answers) <= _memo.MAX_ANSWERS


if given is not None:

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(
        st.lists(st.floats(min_value=0.5, max_value=2.0, allow_nan=False), min_size=6, max_size=60),
        st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    )
    def test_property_exact_bootstrap_quantiles_equal_the_tabulated_distribution(values, confidence):
        xs = sorted(values)
        dist = MedianSampler(xs, flatten=True).distribution()
        low, high = median_percentile_interval(xs, confidence)
        alpha = 1.0 - confidence
        assert low == exact_quantile_ref(dist, alpha / 2)
        assert high == exact_quantile_ref(dist, 1 - alpha / 2)

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(
        st.lists(
            st.integers(min_value=-5, max_value=5).map(float) | st.floats(-1e6, 1e6), min_size=1, max_size=80
        )
    )
    def test_property_ranks_and_correlation_equal_the_loops(values):
        assert ranked(values) == rank_average_ref(values)
        ys = values[::-1]
        if len(values) >= 2:  # (raw values may underflow a product to 0: both must then fail alike)
            ref, got = outcome(pearson_ref, values, ys), outcome(_pearson, values, ys)
            assert got == ref or (got != got and ref != ref)

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=8, max_size=80))
    def test_property_bimodality_split_equals_the_loop(values):
        logs = sorted(math.log(v) for v in values)
        assert _best_split(logs) == best_split_ref(logs)
