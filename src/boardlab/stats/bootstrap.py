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
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from boardlab.stats._special import binom_sf_ge, percentile_sorted

_NEGLIGIBLE_LOG = 60 * math.log(2)  # a probability below 2^-60 is 0 to a bootstrap draw
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
        # P(split at i) = C(n,k) ((n-i)/n)^m (i/n)^k [1 - ((i-1)/i)^k], in logs so that large n cannot overflow.
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
