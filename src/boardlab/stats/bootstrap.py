"""Bootstrap of the median over runs: percentile CIs for one cell and for a ratio of two medians.

Method: Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13 (percentile interval);
Kalibera & Jones (2013) for resampling whole runs (the top-level unit), never iterations.

Speed: a naive bootstrap draws n indices and sorts them per resample. Here each resample *median* is drawn
directly from its exact sampling distribution: the same distribution as the naive bootstrap (not the same
draws for a given seed), at one uniform and one table lookup per resample instead of n draws and a sort:
- the k-th order statistic of a resample is x_(i) (sorted values, 1-based) when C_{i-1} < k <= C_i, where
  C_i ~ Binomial(n, i/n) counts the draws at indices <= i; so P(X*_(k) <= x_(i)) = P(C_i >= k) =
  I_{i/n}(k, n - k + 1) (Maritz & Jarrett 1978; Efron 1979, section 3);
- for even n the median is (X*_(k) + X*_(k+1)) / 2 with k = n/2. Either X*_(k+1) is at the same index i
  (C_i >= k + 1), or C_i = k exactly, with probability
  C(n, k) ((n - i)/n)^(n-k) [(i/n)^k - ((i - 1)/n)^k]; then the other n - k draws are uniform on the
  indices above i, and X*_(k+1) sits at the smallest of them: i + T with P(T > t) = (1 - t/(n - i))^(n-k).
The tests check these probabilities against exhaustive enumeration of all n^n resamples for small n, and
the sampled medians against a naive resample-and-sort bootstrap.

A cell's percentile interval needs no draws at all: `MedianLaw.quantile` finds the quantiles of that exact
distribution (the limit of the percentile interval as the resamples grow), evaluating it only near them.
"""

from __future__ import annotations

import math
import random
from array import array
from bisect import bisect_right
from collections.abc import Sequence

from boardlab.stats._special import binom_sf_ge, first_true, normal_ppf, percentile_sorted

_NEGLIGIBLE_LOG = 60 * math.log(2)  # a probability below 2^-60 is 0 to a bootstrap draw
_NEGLIGIBLE = 2.0**-60
# 6-point Gauss-Legendre rule on [-1, 1] (Abramowitz & Stegun 1964, table 25.4): exact for polynomials of
# degree 11; the density integrated below changes by a factor of at most e^(4/sqrt(n)) over one step, which
# the rule integrates to a relative 1e-12 at any n (a test checks it against the incomplete beta function).
_GAUSS_LEGENDRE = (
    (-0.9324695142031521, 0.1713244923791704),
    (-0.6612093864662645, 0.3607615730481386),
    (-0.2386191860831969, 0.4679139345726910),
    (0.2386191860831969, 0.4679139345726910),
    (0.6612093864662645, 0.3607615730481386),
    (0.9324695142031521, 0.1713244923791704),
)
_STEP_REACH = 64  # extend the table by quadrature up to this many indices; further, one incomplete beta
FLAT_MAX_N = 200  # even n up to this: tabulate all n(n+1)/2 median values (<= 20100) for one lookup per draw


class MedianSampler:
    """Draws bootstrap-resample medians of fixed sorted values from their exact distribution.

    The distribution is held as a table of outcomes with cumulative probabilities, drawn by inverse CDF
    (`random.Random.choices`). For odd n the outcomes are the n sorted values. For even n each index i has
    two outcomes, "both middle order statistics at i" and "split at i"; a split needs a second uniform to
    place X*_(k+1). With `flatten` (the default up to n = 200), the splits are expanded into all their pairs
    (at most n(n+1)/2 outcomes) so that every draw is one table lookup.
    """

    __slots__ = ("_xs", "_n", "_m", "_cum", "_outcomes", "_split_cum")

    def __init__(self, sorted_values: Sequence[float], *, flatten: bool | None = None) -> None:
        xs = list(sorted_values)
        n = len(xs)
        if n == 0:
            raise ValueError("bootstrap of no values")
        self._xs = xs
        self._n = n
        self._split_cum: list[float] | None = None
        k = (n + 1) // 2 if n % 2 else n // 2
        self._m = n - k
        # g[i] = P(X*_(k) <= x_(i)) for i = 0..n, forced monotone against rounding. Far from the median,
        # Hoeffding's bound P(|C_i - i| >= n d) <= exp(-2 n d^2) puts g within 2^-60 of 0 or 1, where a
        # draw (a multiple of 2^-53) cannot tell it apart: those g are set, not computed (at 3000 runs, 80%
        # of the incomplete beta functions).
        reach = math.sqrt(_NEGLIGIBLE_LOG / (2 * n))
        g = [0.0] * (n + 1)
        for i in range(1, n):
            p = i / n
            if p > (k - 1) / n + reach:
                g[i] = 1.0
            elif p >= k / n - reach:
                g[i] = max(g[i - 1], binom_sf_ge(k, n, p))
        g[n] = 1.0
        if n % 2:
            self._outcomes: list[float] = xs
            self._cum = g[1:]
            return
        # Even n: per index i (1-based), P(same) = P(X*_(k) = x_(i)) - P(split at i), where
        # P(split at i) = C(n,k) ((n-i)/n)^m (i/n)^k [1 - ((i-1)/i)^k], in logs so that large n cannot
        # overflow.
        m = self._m
        log_comb = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(m + 1)
        same = [0.0] * n
        split = [0.0] * n
        for i in range(1, n + 1):
            p_index = g[i] - g[i - 1]
            s = 0.0
            if i < n and p_index > 0.0:  # (no split where the index has no mass: s is clipped to p_index)
                below = 1.0 if i == 1 else -math.expm1(k * math.log((i - 1) / i))
                s = math.exp(log_comb + m * math.log((n - i) / n) + k * math.log(i / n)) * below
                s = min(max(s, 0.0), p_index)
            same[i - 1] = p_index - s
            split[i - 1] = s
        if flatten is None:
            flatten = n <= FLAT_MAX_N
        outcomes: list[float] = []
        cum: list[float] = []
        total = 0.0
        if flatten:
            for i in range(n):
                total += same[i]
                outcomes.append(xs[i])
                cum.append(total)
                span = n - 1 - i
                above = 1.0  # P(T > t - 1), T = offset of X*_(k+1) above i
                for t in range(1, span + 1):
                    tail = ((span - t) / span) ** m  # P(T > t)
                    total += split[i] * (above - tail)
                    above = tail
                    outcomes.append(0.5 * (xs[i] + xs[i + t]))
                    cum.append(total)
        else:
            # outcome 2i: "same" at i; outcome 2i + 1: "split" at i (resolved per draw in `draw`)
            for i in range(n):
                total += same[i]
                cum.append(total)
                total += split[i]
                cum.append(total)
            outcomes = [float(o) for o in range(2 * n)]
            self._split_cum = cum
        cum[-1] = max(cum[-1], 1.0)
        self._outcomes = outcomes
        self._cum = cum

    def draw(self, count: int, rng: random.Random) -> list[float]:
        """`count` resample medians drawn with `rng`."""
        if self._n == 1:
            return [self._xs[0]] * count
        draws = rng.choices(self._outcomes, cum_weights=self._cum, k=count)
        if self._split_cum is None:
            return draws
        xs, n, inv_m, rand = self._xs, self._n, 1.0 / self._m, rng.random
        for j, o in enumerate(draws):
            i, is_split = divmod(int(o), 2)  # i is the 0-based index of X*_(k)
            if not is_split:
                draws[j] = xs[i]
                continue
            span = n - 1 - i  # indices above i; P(T > t) = (1 - t/span)^m, inverted
            t = math.ceil(span * (1.0 - (1.0 - rand()) ** inv_m))
            t = 1 if t < 1 else (span if t > span else t)
            draws[j] = 0.5 * (xs[i] + xs[i + t])
        return draws

    def distribution(self) -> dict[float, float]:
        """The exact distribution {median value: probability} of a resample median (for tests)."""
        if self._n == 1:
            return {self._xs[0]: 1.0}
        if self._split_cum is not None:
            flat = MedianSampler(self._xs, flatten=True)
            return flat.distribution()
        probs: dict[float, float] = {}
        prev = 0.0
        for v, c in zip(self._outcomes, self._cum, strict=True):
            probs[v] = probs.get(v, 0.0) + (c - prev)
            prev = c
        return probs


class MedianLaw:
    """The exact distribution of a bootstrap-resample median of fixed sorted values, evaluated lazily.

    Notation of the module docstring, indices 0-based: G(i) = P(X*_(k) <= x_(i)) = I_{(i+1)/n}(k, n - k + 1)
    is one incomplete beta function; its neighbours follow by integrating the Beta(k, n - k + 1) density
    over one step of 1/n (Gauss-Legendre), so a quantile costs one incomplete beta function and a few dozen
    steps, whatever n. For odd n the median is x_(I) with P(I <= i) = G(i). For even n it is
    (x_(I) + x_(I+T')) / 2, where T' = 0 unless the two middle order statistics split at I; a split at i
    moves to i + T with P(T > t) = (1 - t/(n - 1 - i))^m, and only splits within a few dozen indices of a
    value can cross it (beyond, P(T > t) < 2^-60: a probability no draw could see).
    """

    __slots__ = ("_xs", "_n", "_k", "_m", "_log_beta", "_log_comb", "_g", "_split")

    def __init__(self, sorted_values: Sequence[float]) -> None:
        # a column of doubles (a cell's sorted values, `summarize`) is read as it is: 8 bytes a value
        xs = sorted_values if isinstance(sorted_values, array) else list(sorted_values)
        n = len(xs)
        if n == 0:
            raise ValueError("bootstrap of no values")
        self._xs, self._n = xs, n
        self._k = k = (n + 1) // 2 if n % 2 else n // 2
        self._m = n - k
        self._log_beta = math.lgamma(k) + math.lgamma(n - k + 1) - math.lgamma(n + 1)
        self._log_comb = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        self._g: list[list] = []  # [start, [G(start), G(start + 1), ...]]: the computed runs
        self._split: dict[int, float] = {}

    def index_cdf(self, i: int) -> float:
        """G(i) = P(X*_(k) <= x_(i)) (0-based i)."""
        if i < 0:
            return 0.0
        if i >= self._n - 1:
            return 1.0
        for seg in self._g:  # contiguous runs [start, start + len(values)) already computed
            start, values = seg
            if start <= i < start + len(values):
                return values[i - start]
            if start - _STEP_REACH <= i < start:  # extend down: G(j - 1) = G(j) - step(j)
                more = []
                g = values[0]
                for j in range(start, i, -1):
                    g -= self._step(j)
                    more.append(min(max(g, 0.0), 1.0))
                more.reverse()
                seg[:] = [i, more + values]
                return more[0]
            if start + len(values) <= i <= start + len(values) - 1 + _STEP_REACH:  # extend up
                g = values[-1]
                for j in range(start + len(values), i + 1):
                    g += self._step(j)
                    values.append(min(max(g, 0.0), 1.0))
                return values[-1]
        g = binom_sf_ge(self._k, self._n, (i + 1) / self._n)
        self._g.append([i, [g]])
        return g

    def _step(self, i: int) -> float:
        """G(i) - G(i - 1): the Beta(k, n - k + 1) density integrated over [i/n, (i + 1)/n]."""
        n, a1, b1, log_beta = self._n, self._k - 1, self._n - self._k, self._log_beta
        c, h = (i + 0.5) / n, 0.5 / n
        total = 0.0
        for t, w in _GAUSS_LEGENDRE:
            x = c + h * t
            total += w * math.exp(a1 * math.log(x) + b1 * math.log1p(-x) - log_beta)
        return h * total

    def split(self, i: int) -> float:
        """P(the two middle order statistics split at i): X*_(k) = x_(i) < X*_(k+1) (even n; 0-based i):
        k of the n draws at or below i, at least one of them at i, the other m above i."""
        s = self._split.get(i)
        if s is None:
            n, k, m = self._n, self._k, self._m
            s = 0.0
            if i < n - 1:
                below = 1.0 if i == 0 else -math.expm1(k * math.log(i / (i + 1)))
                s = (
                    math.exp(self._log_comb + m * math.log((n - 1 - i) / n) + k * math.log((i + 1) / n))
                    * below
                )
            self._split[i] = s
        return s

    def _above(self, i: int, v: float, t: int) -> int:
        """The largest t' >= t with (x_(i) + x_(i+t')) / 2 <= v, given that t qualifies (the midpoint as a
        median computes it, so that rounding cannot misplace a value next to v)."""
        xs, last = self._xs, self._n - 1 - i
        t = max(t, min(bisect_right(xs, 2.0 * v - xs[i], i + t) - 1 - i, last))
        while t < last and 0.5 * (xs[i] + xs[i + t + 1]) <= v:
            t += 1
        while t > 0 and 0.5 * (xs[i] + xs[i + t]) > v:
            t -= 1
        return t

    def cdf(self, v: float) -> float:
        """P(resample median <= v)."""
        j = bisect_right(self._xs, v)  # indices below j hold values <= v
        total = self.index_cdf(j - 1)
        if self._n % 2 == 0:
            for i, span in self._splits_below(j):
                t = self._above(i, v, j - 1 - i)
                if t < span:
                    total -= self.split(i) * (1.0 - t / span) ** self._m
        return max(total, 0.0)

    def _splits_below(self, j: int):
        """(i, n - 1 - i) for the indices i < j whose split can cross x_(j-1) (P(T > j - 1 - i) >= 2^-60),
        nearest first."""
        for i in range(j - 1, -1, -1):
            span = self._n - 1 - i
            if span == 0:
                continue
            if (1.0 - (j - 1 - i) / span) ** self._m < _NEGLIGIBLE:
                return
            yield i, span

    def quantile(self, q: float) -> float:
        """The smallest median value v with P(resample median <= v) >= q (0 < q < 1)."""
        xs, n = self._xs, self._n
        guess = round(n * (0.5 + normal_ppf(q) * 0.5 / math.sqrt(n + 2)))  # the normal approximation
        if n % 2:
            return xs[first_true(lambda i: self.index_cdf(i) >= q, guess, n)]
        at: dict[int, float] = {}  # P(median <= x_(j)) by j, as the search evaluates it

        def reaches(j: int) -> bool:
            at[j] = self.cdf(xs[j])
            return at[j] >= q

        j = first_true(reaches, guess, n)  # x_(j) is the first sorted value the quantile does not exceed
        if j == 0 or xs[j - 1] == xs[j]:
            return xs[j]
        reached = at[j - 1] if j - 1 in at else self.cdf(xs[j - 1])
        for value, mass in sorted(self._atoms_between(j)):
            reached += mass
            if reached >= q:
                return value
        return xs[j]

    def _atoms_between(self, j: int):
        """(median value, probability) of the splits whose median lies strictly between x_(j-1) and x_(j),
        those with a probability of at least 2^-60."""
        xs, m = self._xs, self._m
        low, high = xs[j - 1], xs[j]
        for i, span in self._splits_below(j):
            first = self._above(i, low, j - 1 - i) + 1  # the first t with a midpoint above x_(j-1)
            reach = min(span, 1 + math.ceil(span * -math.expm1(-_NEGLIGIBLE_LOG / m)))  # P(T >= t) >= 2^-60
            split = self.split(i)
            for t in range(first, reach + 1):
                mid = 0.5 * (xs[i] + xs[i + t])
                if mid >= high:
                    break
                yield mid, split * ((1.0 - (t - 1) / span) ** m - (1.0 - t / span) ** m)


def median_percentile_interval(sorted_values: Sequence[float], confidence: float) -> tuple[float, float]:
    """The percentile interval of the exact bootstrap distribution of the median: its (1 - c)/2 and
    (1 + c)/2 quantiles (`MedianLaw.quantile`), what a percentile interval of resample medians tends to as
    the resamples grow."""
    law = MedianLaw(sorted_values)
    alpha = 1.0 - confidence
    return law.quantile(alpha / 2.0), law.quantile(1.0 - alpha / 2.0)


def percentile_interval(
    draws: list[float], confidence: float, *, presorted: bool = False
) -> tuple[float, float]:
    """Percentile bootstrap interval: the (1 - c)/2 and (1 + c)/2 quantiles of the draws, by linear
    interpolation (Hyndman & Fan definition 7). Sorts `draws` in place unless `presorted`."""
    if not presorted:
        draws.sort()
    alpha = 1.0 - confidence
    return percentile_sorted(draws, alpha / 2.0), percentile_sorted(draws, 1.0 - alpha / 2.0)


def bootstrap_median_draws(values: Sequence[float], resamples: int, rng: random.Random) -> list[float]:
    """`resamples` medians of bootstrap resamples (with replacement, size n) of `values`."""
    return MedianSampler(sorted(values)).draw(resamples, rng)


def bootstrap_ratio_draws(
    baseline: Sequence[float], condition: Sequence[float], resamples: int, rng: random.Random
) -> list[float]:
    """`resamples` draws of median(condition*) / median(baseline*), each arm resampled independently.

    The baseline medians are drawn first, then the condition medians, from the same `rng`.
    """
    base = MedianSampler(sorted(baseline)).draw(resamples, rng)
    cond = MedianSampler(sorted(condition)).draw(resamples, rng)
    return [c / b for b, c in zip(base, cond, strict=True)]
