"""Rank tests: Mann-Whitney U, Wilcoxon signed-rank, Spearman rank correlation. Two-sided throughout.

Each matches the scipy.stats function of the same name with its default options (the tests check it), so
a number in a boardlab report can be reproduced with scipy on a workstation.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from operator import mul, sub
from typing import Literal

from boardlab.stats._special import normal_cdf, rank_average, student_t_sf
from boardlab.stats._validate import as_values

TestMethod = Literal["auto", "exact", "asymptotic"]


@dataclass(frozen=True)
class RankTest:
    """The result of a two-sided rank test.

    `statistic` is the test's own statistic (U of the first sample for Mann-Whitney, min(R+, R-) for
    Wilcoxon, as scipy reports them); `method` says how the p-value was computed: "exact" (the exact null
    distribution), "asymptotic" (normal approximation), "bootstrap" (a bootstrap's own p), "student-t"
    (Yuen's trimmed t referred to Student's t, `stats.trimmed`; `statistic` is then t) or "permutation"
    (the same statistic referred to its permutation distribution, `stats.permutation`). `n_used` counts the
    observations that entered the test (for Wilcoxon, the non-zero differences).
    """

    name: str
    statistic: float
    p_value: float
    method: Literal["exact", "asymptotic", "bootstrap", "student-t", "permutation"]
    n_used: int


# --- Mann-Whitney U --------------------------------------------------------------------------------------


def _mwu_counts(m: int, n: int) -> list[int]:
    """Number of arrangements giving U = 0..m*n: the coefficients of the Gaussian binomial [m+n choose m]_q.

    Built as prod_{j=1..m} (1 - q^(n+j)) / (1 - q^j) with exact integer polynomial arithmetic
    (Andrews, *The Theory of Partitions* (1976), Theorem 3.1; Mann & Whitney (1947) recursion).
    """
    if m > n:
        m, n = n, m
    poly = [0] * (m * n + m + n + 2)
    poly[0] = 1
    degree = 0
    for j in range(1, m + 1):
        a = n + j
        for u in range(degree + a, a - 1, -1):  # multiply by (1 - q^a)
            poly[u] -= poly[u - a]
        new_degree = degree + n  # [n+j choose j]_q has degree j*n; the division below is exact
        for u in range(j, new_degree + 1):  # divide by (1 - q^j)
            poly[u] += poly[u - j]
        for u in range(new_degree + 1, degree + a + 1):
            poly[u] = 0
        degree = new_degree
    return poly[: m * n + 1]


def mann_whitney_u(x: Sequence[float], y: Sequence[float], *, method: TestMethod = "auto") -> RankTest:
    """Two-sided Mann-Whitney U test (Wilcoxon rank-sum) of two independent samples.

    Method: Mann & Whitney (1947). The statistic is U1 = R1 - n1(n1 + 1)/2 for `x` (R1 = sum of x's ranks,
    ties averaged). "exact": p = 2 P(U >= max(U1, U2)) under the exact null distribution (no ties).
    "asymptotic": normal approximation with the tie-corrected variance
    n1 n2 / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1))) and a continuity correction of 0.5, p = 2 P(Z >= z)
    (Lehmann, *Nonparametrics* (1975), ch. 1). "auto" picks "exact" when one sample has at most 8 values and
    there are no ties, "asymptotic" otherwise. Identical to `scipy.stats.mannwhitneyu` (defaults).
    """
    xs = as_values(x, what="x")
    ys = as_values(y, what="y")
    n1, n2 = len(xs), len(ys)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs at least one value in each sample")
    ranks, ties = rank_average(xs + ys)
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2.0
    u_big = max(u1, n1 * n2 - u1)
    if method == "auto":
        method = "asymptotic" if (n1 > 8 and n2 > 8) or ties else "exact"
    if method == "exact":
        if ties:
            raise ValueError("the exact Mann-Whitney distribution assumes no ties; use method='asymptotic'")
        counts = _mwu_counts(n1, n2)
        tail = sum(counts[round(u_big) :])
        p = min(1.0, 2.0 * tail / math.comb(n1 + n2, n1))
    elif method == "asymptotic":
        n = n1 + n2
        tie_term = sum(t**3 - t for t in ties)
        var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
        if var <= 0:
            p = 1.0  # every value equal: no evidence either way
        else:
            z = (u_big - n1 * n2 / 2.0 - 0.5) / math.sqrt(var)
            p = min(1.0, 2.0 * normal_cdf(-z))
    else:
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    return RankTest("mann-whitney-u", u1, p, method, n1 + n2)


# --- Wilcoxon signed-rank ----------------------------------------------------------------------------------


def _signed_rank_distribution(doubled_ranks: Sequence[int]) -> list[int]:
    """Counts of the 2^n equally likely sign patterns for each value of 2 R+ (subset-sum DP)."""
    total = sum(doubled_ranks)
    counts = [0] * (total + 1)
    counts[0] = 1
    reach = 0
    for r in doubled_ranks:
        for s in range(reach, -1, -1):
            if counts[s]:
                counts[s + r] += counts[s]
        reach += r
    return counts


def wilcoxon_signed_rank(differences: Sequence[float], *, method: TestMethod = "auto") -> RankTest:
    """Two-sided Wilcoxon signed-rank test that the differences are symmetric about zero.

    Method: Wilcoxon (1945). Zero differences are dropped (Wilcoxon's rule); |d| is ranked with ties
    averaged; R+ and R- are the rank sums of the positive and negative differences; the statistic is
    min(R+, R-). "exact": the null distribution of R+ over all 2^n sign patterns of the (tie-averaged) ranks,
    p = 2 min(P(R+ <= r), P(R+ >= r)) capped at 1. "asymptotic": z = (R+ - n(n+1)/4) / sigma with
    sigma^2 = (n(n+1)(2n+1) - sum(t^3 - t)/2) / 24 and no continuity correction. "auto" follows
    `scipy.stats.wilcoxon`: exact for at most 50 differences without ties or zeros; with ties or zeros the
    exact sign-flip distribution up to 13 differences (scipy's permutation test, which is exhaustive there);
    asymptotic otherwise.
    """
    d_all = as_values(differences, what="differences")
    if not d_all:
        raise ValueError("the Wilcoxon signed-rank test needs at least one difference")
    d = [v for v in d_all if v != 0.0]
    n_zero = len(d_all) - len(d)
    n = len(d)
    if n == 0:
        return RankTest("wilcoxon-signed-rank", 0.0, 1.0, "exact", 0)
    ranks, ties = rank_average([abs(v) for v in d])
    r_plus = sum(r for r, v in zip(ranks, d, strict=True) if v > 0)
    r_minus = n * (n + 1) / 2.0 - r_plus
    if method == "auto":
        if len(d_all) > 50:
            method = "asymptotic"
        elif not ties and not n_zero:
            method = "exact"
        else:
            method = "exact" if len(d_all) <= 13 else "asymptotic"
    if method == "exact":
        doubled = [round(2 * r) for r in ranks]
        counts = _signed_rank_distribution(doubled)
        obs = round(2 * r_plus)
        total = 1 << n
        lower = sum(counts[: obs + 1])
        upper = sum(counts[obs:])
        p = min(1.0, 2.0 * min(lower, upper) / total)
    elif method == "asymptotic":
        mean = n * (n + 1) / 4.0
        var = (n * (n + 1) * (2 * n + 1) - sum(t**3 - t for t in ties) / 2.0) / 24.0
        z = (r_plus - mean) / math.sqrt(var)
        p = min(1.0, 2.0 * normal_cdf(-abs(z)))
    else:
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    return RankTest("wilcoxon-signed-rank", min(r_plus, r_minus), p, method, n)


# --- Spearman rank correlation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rho with its two-sided p-value; `method` is "exact-permutation" or "t-approximation"."""

    rho: float
    p_value: float
    method: Literal["exact-permutation", "t-approximation"]
    n: int


def _pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's r of equally long a and b: the sums of products of deviations, term by term in order
    (C-level iteration over the same arithmetic as a loop, so the same floats)."""
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    da, db = array("d", map(sub, a, repeat(ma))), array("d", map(sub, b, repeat(mb)))  # 8 bytes a value
    sab = sum(map(mul, da, db))
    saa = sum(map(pow, da, repeat(2)))
    sbb = sum(map(pow, db, repeat(2)))
    if saa == 0 or sbb == 0:
        return math.nan
    return max(-1.0, min(1.0, sab / math.sqrt(saa * sbb)))


@lru_cache(maxsize=16)
def _spearman_null_untied(n: int) -> tuple[tuple[int, int], ...]:
    """Exact null distribution of sum(i * pi(i)) over all n! permutations of 1..n, as (value, count)."""
    counts: dict[int, int] = {}
    idx = range(1, n + 1)
    for perm in itertools.permutations(idx):
        s = sum(i * p for i, p in zip(idx, perm, strict=True))
        counts[s] = counts.get(s, 0) + 1
    return tuple(sorted(counts.items()))


EXACT_SPEARMAN_MAX_N = 8


def spearman(
    x: Sequence[float], y: Sequence[float], *, method: TestMethod = "auto"
) -> RankCorrelation | None:
    """Spearman's rank correlation of x and y with a two-sided p-value; None when undefined.

    Method: Spearman (1904); rho is Pearson's correlation of the average ranks. "asymptotic": the
    t-approximation t = rho sqrt((n - 2) / (1 - rho^2)) with n - 2 degrees of freedom (Kendall & Stuart,
    *The Advanced Theory of Statistics* vol. 2, 31.19), as `scipy.stats.spearmanr`. "exact": the
    permutation distribution of rho over all n! orderings of y, p = 2 min(P(rho* <= rho), P(rho* >= rho))
    capped at 1, as `scipy.stats.permutation_test(..., permutation_type="pairings")`. "auto" is exact up to
    n = 8 (the t-approximation is anti-conservative there: it gives p = 0 for a perfect monotone trend of 4
    runs, whose exact p is 1/12) and the t-approximation above. Undefined (None) for n < 3 or when x or y
    is constant.
    """
    xs = as_values(x, what="x")
    ys = as_values(y, what="y")
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs samples of equal length, got {len(xs)} and {len(ys)}")
    if len(xs) < 3:
        return None
    return spearman_of_ranks(rank_average(xs), rank_average(ys), method=method)


Ranking = tuple[Sequence[float], list[int]]  # rank_average's (average ranks, tie group sizes)


def spearman_of_ranks(x: Ranking, y: Ranking, *, method: TestMethod = "auto") -> RankCorrelation | None:
    """`spearman` of samples already ranked by `rank_average` (at least 3 each, equally many): a caller
    that ranked a sample for another reason does not rank it again."""
    (rx, tx), (ry, ty) = x, y
    n = len(rx)
    rho = _pearson(rx, ry)
    if math.isnan(rho):
        return None
    if method == "auto":
        method = "exact" if n <= EXACT_SPEARMAN_MAX_N else "asymptotic"
    if method == "exact":
        if n > 10:
            raise ValueError("the exact Spearman test enumerates n! orderings; use it for n <= 10")
        return RankCorrelation(rho, _spearman_exact_p(rx, ry, bool(tx or ty)), "exact-permutation", n)
    if method != "asymptotic":
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    if abs(rho) >= 1.0:
        p = 0.0
    else:
        t = rho * math.sqrt((n - 2) / ((1.0 - rho) * (1.0 + rho)))
        p = min(1.0, 2.0 * student_t_sf(abs(t), n - 2))
    return RankCorrelation(rho, p, "t-approximation", n)


def _spearman_exact_p(rx: Sequence[float], ry: Sequence[float], tied: bool) -> float:
    n = len(rx)
    if not tied:
        # rho is an increasing function of S = sum(rank_x * rank_y); ranks are the integers 1..n.
        order = sorted(range(n), key=rx.__getitem__)
        observed: float = round(sum(i * ry[j] for i, j in zip(range(1, n + 1), order, strict=True)))
        table = _spearman_null_untied(n)
        total = math.factorial(n)
        lower = sum(c for s, c in table if s <= observed)
        upper = sum(c for s, c in table if s >= observed)
        return min(1.0, 2.0 * min(lower, upper) / total)
    observed = sum(a * b for a, b in zip(rx, ry, strict=True))
    tol = 1e-9 * max(1.0, abs(observed))
    lower = upper = total = 0
    for perm in itertools.permutations(ry):
        s = sum(a * b for a, b in zip(rx, perm, strict=True))
        total += 1
        lower += s <= observed + tol
        upper += s >= observed - tol
    return min(1.0, 2.0 * min(lower, upper) / total)
