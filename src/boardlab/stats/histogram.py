"""Percentiles of a binned latency histogram by nearest rank, with the overflow kept honest.

Method: the nearest-rank percentile (Hyndman & Fan 1996, definition 1: the inverse of the empirical
distribution function). For n samples and a level q (percent), the rank is r = ceil(q/100 * n), at least 1,
and the q-th percentile is the r-th smallest sample. A histogram does not keep the samples, only how many fell
into each bucket: bucket i of width w counts values in [i*w, (i+1)*w), and `overflow` counts the samples at or
beyond the limit L = len(counts) * w. Walking the cumulative counts, the r-th smallest sample lies in the
first bucket whose cumulative count reaches r (a rank equal to a bucket's cumulative count belongs to that
bucket, not the next); the percentile is reported as that bucket's lower edge i*w. For cyclictest's 1-us
buckets of integer microsecond latencies that edge *is* the sample's value; otherwise the true value lies in
[value, value + w).

When r exceeds the in-range total, the r-th sample is in the overflow and only a lower bound is known: the
result then carries `at_least = L` and no `value` ("p99.99 >= 1000 us"), never a number that pretends to be
measured. rteval skips its statistics in that case; cyclictest's JSON has no overflow field (it is
`cycles - sum(histogram)`). An empty histogram (n = 0) has neither.

Unlike `summary.percentile` (linear interpolation between per-run values), nearest rank never invents a value
between two buckets and stays defined when the tail is censored; it is what rt-tests users read off a
histogram. Levels are taken as the decimals they print as (99.9, not the binary double just above it), so
ranks such as ceil(0.999 * 1000) = 999 are exact.

Reference: R. J. Hyndman and Y. Fan, "Sample quantiles in statistical packages", The American Statistician
50(4), 1996, definition 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from boardlab.model.units import plain_number

NEAREST_RANK_METHOD = (
    "nearest rank (Hyndman-Fan 1, inverse empirical CDF) on histogram buckets: the lower edge of the bucket "
    "holding the ceil(q/100*n)-th smallest sample; in the overflow only 'at least the histogram limit'"
)
# The percentile levels boardlab reports of a latency distribution: cyclictest's runs and the rt study's
# merged histograms, in every report format (docs/method.md). The one place they are listed.
PERCENTILE_LEVELS = (50, 90, 99, 99.9, 99.99)


@dataclass(frozen=True)
class HistogramPercentile:
    """The q-th percentile (q in percent) of n samples; exactly one of `value` / `at_least` is set when n > 0.

    `value`: the lower edge of the bucket holding the rank-th smallest sample (bucket units).
    `at_least`: set instead when that sample is in the overflow: it is at least the histogram limit.
    """

    q: float
    n: int
    rank: int | None  # 1-based nearest rank; None when n == 0
    value: float | None
    at_least: float | None = None

    @property
    def censored(self) -> bool:
        return self.at_least is not None

    def display(self) -> str:
        """'12', '>= 1000' or 'n/a (no samples)': the form a report prints."""
        if self.n == 0:
            return "n/a (no samples)"
        if self.at_least is not None:
            return f">= {_num(self.at_least)}"
        return _num(self.value)


def level_name(q: float) -> str:
    """99.9 -> 'p99_9', 50 -> 'p50': identifier-safe names for metrics and dict keys."""
    return "p" + _num(q).replace(".", "_")


def histogram_limit(counts: Sequence[int], bucket_width: float) -> float:
    """The smallest value the overflow can hold: len(counts) * bucket_width."""
    return len(counts) * bucket_width


def histogram_percentiles(
    counts: Sequence[int],
    bucket_width: float,
    overflow: int = 0,
    qs: Iterable[float] = PERCENTILE_LEVELS,
) -> tuple[HistogramPercentile, ...]:
    """Nearest-rank percentiles of the histogram, one per level in `qs` (percent, 0 < q <= 100), in order.

    n = sum(counts) + overflow. See the module docstring for the definition and the censored case.
    """
    if not bucket_width > 0 or not math.isfinite(bucket_width):
        raise ValueError(f"bucket_width must be a positive number, got {bucket_width}")
    cs = [_count(c, f"counts[{i}]") for i, c in enumerate(counts)]
    over = _count(overflow, "overflow")
    levels = [_level(q) for q in qs]
    n = sum(cs) + over
    limit = histogram_limit(cs, bucket_width)
    # cumulative counts once; each rank then finds its bucket by a forward walk (levels in any order)
    cumulative = []
    acc = 0
    for c in cs:
        acc += c
        cumulative.append(acc)
    out = []
    for q, exact in levels:
        if n == 0:
            out.append(HistogramPercentile(q=q, n=0, rank=None, value=None))
            continue
        rank = max(1, math.ceil(exact * n / 100))
        bucket = _first_reaching(cumulative, rank)
        if bucket is None:
            out.append(HistogramPercentile(q=q, n=n, rank=rank, value=None, at_least=limit))
        else:
            out.append(HistogramPercentile(q=q, n=n, rank=rank, value=bucket * bucket_width))
    return tuple(out)


def merge_histograms(histograms: Iterable[tuple[Sequence[int], int]]) -> tuple[list[int], int]:
    """Bucket-wise sum of (counts, overflow) pairs of equal width and length, e.g. one per CPU -> the
    system."""
    merged: list[int] | None = None
    overflow = 0
    for counts, over in histograms:
        if merged is None:
            merged = [0] * len(counts)
        if len(counts) != len(merged):
            raise ValueError(
                f"histograms of different lengths ({len(merged)} and {len(counts)} buckets) cannot be merged"
            )
        for i, c in enumerate(counts):
            merged[i] += c
        overflow += over
    return (merged or []), overflow


def _first_reaching(cumulative: list[int], rank: int) -> int | None:
    lo, hi = 0, len(cumulative)
    while lo < hi:  # the first index whose cumulative count is >= rank
        mid = (lo + hi) // 2
        if cumulative[mid] >= rank:
            hi = mid
        else:
            lo = mid + 1
    return lo if lo < len(cumulative) else None


def _count(c, what: str) -> int:
    if isinstance(c, bool) or not isinstance(c, int):
        if isinstance(c, float) and c.is_integer():
            c = int(c)
        else:
            raise TypeError(f"{what}: expected a whole count, got {c!r}")
    if c < 0:
        raise ValueError(f"{what} = {c}: counts cannot be negative")
    return c


def _level(q) -> tuple[float, Fraction]:
    if isinstance(q, bool) or not isinstance(q, int | float | Fraction | Decimal):
        raise TypeError(f"percentile level: expected a number in percent, got {q!r}")
    exact = Fraction(repr(q)) if isinstance(q, float) else Fraction(q)
    if not 0 < exact <= 100:
        raise ValueError(f"percentile level must be in (0, 100] percent, got {q}")
    return float(q), exact


def _num(x: float | None) -> str:
    return "n/a" if x is None else plain_number(x)
