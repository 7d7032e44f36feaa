"""Nearest-rank percentiles of a binned histogram: checked against the samples the histogram was made from."""

from __future__ import annotations

import math
import random
from decimal import ROUND_CEILING, Decimal

import pytest

from boardlab.stats import HistogramPercentile, histogram_percentiles, merge_histograms
from boardlab.stats.histogram import histogram_limit, level_name

LEVELS = (50, 90, 99, 99.9, 99.99)


def nearest_rank(n: int, q) -> int:
    """ceil(q/100 * n) in decimal arithmetic, at least 1: the rank definition, computed independently."""
    r = (Decimal(str(q)) * n / 100).to_integral_value(rounding=ROUND_CEILING)
    return max(1, int(r))


def binned(samples: list[float], width: float, buckets: int) -> tuple[list[int], int]:
    counts = [0] * buckets
    overflow = 0
    for x in samples:
        i = math.floor(x / width)
        if i < buckets:
            counts[i] += 1
        else:
            overflow += 1
    return counts, overflow


def expected(samples: list[float], width: float, buckets: int, q) -> tuple[float | None, float | None]:
    """(value, at_least) from the sorted raw samples: the lower edge of the rank-th sample's bucket."""
    x = sorted(samples)[nearest_rank(len(samples), q) - 1]
    limit = buckets * width
    return (None, limit) if x >= limit else (math.floor(x / width) * width, None)


@pytest.mark.parametrize("seed", range(40))
def test_integer_latencies_in_1us_buckets_give_the_exact_nearest_rank_sample(seed):
    rng = random.Random(seed)
    n = rng.choice([1, 2, 7, 100, 999, 1000, 1001, 5000, 20000])
    # a latency-like shape: a body near 10 us, a tail, and now and then something past the limit
    samples = [int(rng.lognormvariate(2.3, 0.6 if rng.random() < 0.97 else 2.0)) for _ in range(n)]
    buckets = rng.choice([50, 200, 1000])
    counts, overflow = binned(samples, 1, buckets)
    result = histogram_percentiles(counts, 1, overflow, LEVELS)
    for p in result:
        value, at_least = expected(samples, 1, buckets, p.q)
        assert (p.value, p.at_least) == (value, at_least), (p, n)
        assert p.rank == nearest_rank(n, p.q) and p.n == n
        if value is not None:  # 1-us buckets of integer latencies: the bucket edge *is* the sample
            assert value == sorted(samples)[p.rank - 1]


@pytest.mark.parametrize("seed", range(20))
def test_real_valued_samples_report_the_lower_edge_of_the_rank_th_samples_bucket(seed):
    rng = random.Random(1000 + seed)
    width = rng.choice([0.5, 2.5, 10.0])
    samples = [rng.expovariate(1 / 30) for _ in range(rng.randint(1, 3000))]
    counts, overflow = binned(samples, width, 20)
    for p in histogram_percentiles(counts, width, overflow, (1, 25, 50, 75, 90, 99, 99.9, 100)):
        assert (p.value, p.at_least) == expected(samples, width, 20, p.q)


def test_a_rank_equal_to_a_buckets_cumulative_count_belongs_to_that_bucket_not_the_next():
    # 10 samples: five at 0 us, five at 1 us. The median's rank is 5 = the cumulative count of bucket 0.
    (p50, p51) = histogram_percentiles([5, 5], 1, 0, (50, 51))
    assert (p50.rank, p50.value) == (5, 0)
    assert (p51.rank, p51.value) == (6, 1)
    # empty buckets in between are skipped: ranks 1-3 in bucket 1, ranks 4-5 in bucket 3
    p60, p61, p100 = histogram_percentiles([0, 3, 0, 2], 1, 0, (60, 61, 100))
    assert (p60.rank, p60.value) == (3, 1)
    assert (p61.rank, p61.value) == (4, 3)
    assert (p100.rank, p100.value) == (5, 3)


def test_levels_are_the_decimals_they_print_as():
    # 99.9 as a double is 99.900000000000006: ceil(0.999000...06 * 1000) would be 1000. The rank is 999.
    counts = [0] * 10
    counts[2] = 999
    counts[7] = 1
    (p,) = histogram_percentiles(counts, 1, 0, (99.9,))
    assert p.rank == 999 and p.value == 2
    (p,) = histogram_percentiles([0, 9_999, 1], 1, 0, (99.99,))
    assert p.rank == 9_999 and p.value == 1


def test_a_percentile_in_the_overflow_is_only_known_to_be_at_least_the_limit():
    # 10 samples: 8 at 0 us, 1 at 1 us, 1 beyond the 2-us histogram
    p90, p99, p100 = histogram_percentiles([8, 1], 1, 1, (90, 99, 100))
    assert (p90.value, p90.censored) == (1, False)
    for p in (p99, p100):
        assert p.value is None and p.censored and p.at_least == 2 == histogram_limit([8, 1], 1)
        assert p.display() == ">= 2"
    # everything in the overflow (cyclictest -h 1): every level is censored at the limit
    for p in histogram_percentiles([0], 1, 500, LEVELS):
        assert p.censored and p.at_least == 1 and p.value is None and p.rank is not None
    # width 2.5 and 4 buckets: the limit is 10
    (p,) = histogram_percentiles([1, 0, 0, 0], 2.5, 3, (50,))
    assert p.at_least == 10.0 and p.display() == ">= 10"


def test_an_empty_histogram_has_no_percentiles_and_says_so():
    for counts in ([], [0, 0, 0]):
        for p in histogram_percentiles(counts, 1, 0, LEVELS):
            assert p == HistogramPercentile(q=p.q, n=0, rank=None, value=None, at_least=None)
            assert not p.censored and p.display() == "n/a (no samples)"


def test_levels_come_back_in_the_order_asked_and_small_levels_take_the_minimum():
    counts = [0, 2, 3, 5]
    out = histogram_percentiles(counts, 1, 0, (99, 0.001, 50))
    assert [p.q for p in out] == [99, 0.001, 50]
    assert out[1].rank == 1 and out[1].value == 1  # the smallest sample's bucket


def test_bad_input_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="negative"):
        histogram_percentiles([1, -1], 1, 0, (50,))
    with pytest.raises(ValueError, match="overflow"):
        histogram_percentiles([1], 1, -2, (50,))
    with pytest.raises(ValueError, match="bucket_width"):
        histogram_percentiles([1], 0, 0, (50,))
    for q in (0, -5, 100.5):
        with pytest.raises(ValueError, match="percentile level"):
            histogram_percentiles([1], 1, 0, (q,))
    with pytest.raises(TypeError):
        histogram_percentiles([1.5], 1, 0, (50,))


def test_merging_per_cpu_histograms_sums_buckets_and_overflow():
    counts, overflow = merge_histograms([([1, 2, 0], 4), ([0, 1, 5], 1)])
    assert (counts, overflow) == ([1, 3, 5], 5)
    assert merge_histograms([]) == ([], 0)
    with pytest.raises(ValueError, match="different lengths"):
        merge_histograms([([1, 2], 0), ([1], 0)])


def test_level_names_are_identifier_safe():
    assert [level_name(q) for q in LEVELS] == ["p50", "p90", "p99", "p99_9", "p99_99"]
