"""Yuen's trimmed-means Welch test on log values: the comparison's test and decision interval
(docs/method.md "Test").

Why this test. A rank test on n runs per arm has a smallest possible p-value fixed by n (7 vs 7: 5.8e-4
two-sided), so in a family of 70 comparisons a 7-run campaign can never reach a verdict, whatever the
effect. Yuen's statistic shrinks its p with the effect over the noise, not with n alone. Far in the tail,
where a correction over many comparisons reads it, Student's t is only an approximation of its
distribution (`yuen_welch` says how far off Welch's df was); there the comparison takes the permutation p
of the same statistic (`compare._calibrated`, `stats.permutation`). Trimming 20% of each tail keeps the rank
test's robustness to a stray run (an outlier moves a trimmed mean no more than a median-like estimator;
Wilcox 2012 ch. 5), and the log scale makes the effect a ratio. The interval comes from the same statistic, so
the interval a report shows is the one the test uses.

Method: Yuen (1974), "The two-sample trimmed t for unequal population variances", Biometrika 61(1); Wilcox,
*Introduction to Robust Estimation and Hypothesis Testing* 3rd ed. (2012), sections 5.3 (two samples) and
4.6 (one sample, Tukey & McLaughlin 1963), which the paired design uses on per-block log ratios.
"""

from __future__ import annotations

import importlib
import math
import random
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import mul, sub

from boardlab.stats._special import student_t_ppf, student_t_sf
from boardlab.stats.permutation import drawn_splits, near_even, others_mask

TRIM = 0.2  # Wilcox 2012 section 4.4: 20% keeps efficiency near the mean's for normal data


@dataclass(frozen=True)
class TrimmedT:
    """A trimmed-means t statistic on log values: `estimate` is the difference (condition - baseline) of
    the 20%-trimmed means of log values, i.e. log of the ratio of trimmed geometric means; `se` its standard
    error and `df` its Welch degrees of freedom. `p_value` is two-sided against a ratio of 1."""

    estimate: float
    se: float
    df: float
    p_value: float

    def log_interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided `confidence` interval of the log ratio: estimate +- t(df) se."""
        if self.se == 0.0:
            return self.estimate, self.estimate
        half = student_t_ppf(0.5 + confidence / 2.0, self.df) * self.se
        return self.estimate - half, self.estimate + half

    def p_above(self, value: float) -> float:
        """One-sided p of "the log ratio is at most `value`": below alpha exactly when the (1 - 2 alpha)
        interval lies above `value` (the decision interval's side, without computing a t quantile)."""
        if self.se == 0.0:
            return 0.0 if self.estimate > value else 1.0
        return student_t_sf((self.estimate - value) / self.se, self.df)

    def level_excluding(self, value: float) -> float:
        """The largest two-sided confidence level whose interval still excludes `value` (a log ratio):
        1 - the two-sided p-value of the test against `value`."""
        if self.se == 0.0:
            return 1.0 if value != self.estimate else 0.0
        return 1.0 - min(1.0, 2.0 * student_t_sf(abs(self.estimate - value) / self.se, self.df))


def _trimmed_parts(values: Sequence[float], trim: float) -> tuple[float, float, int]:
    """(trimmed mean, winsorized variance, h = values left after trimming) of `values`."""
    xs = sorted(values)
    return sorted_parts(xs, math.floor(trim * len(xs)))


def sorted_parts(xs: list[float], g: int) -> tuple[float, float, int]:
    """`_trimmed_parts` of values already sorted ascending with `g` trimmed at each end (the permutation
    test computes its statistic this way for every split of the pooled, sorted values)."""
    n = len(xs)
    h = n - 2 * g
    kept = xs[g : n - g]
    kept_sum = sum(kept)
    low, high = xs[g], xs[n - g - 1]
    mean_w = (kept_sum + g * (low + high)) / n
    # the kept values' squared deviations by C-level iteration (a product, not pow: half the time), the 2g
    # winsorized ones as two terms; the same sums as a loop over the winsorized values to 1e-13, relative
    deviations = list(map(sub, kept, repeat(mean_w)))
    squares = sum(map(mul, deviations, deviations)) + g * ((low - mean_w) ** 2 + (high - mean_w) ** 2)
    return kept_sum / h, squares / (n - 1) if n > 1 else 0.0, h


def yuen_statistic(baseline_sorted: list[float], condition_sorted: list[float], trim: float = TRIM) -> float:
    """Yuen's t = (condition - baseline trimmed mean) / se of two arms sorted ascending: the statistic the
    permutation test (`stats.permutation`) recomputes for each split; 0 or +-inf when se is 0."""
    nb, nc = len(baseline_sorted), len(condition_sorted)
    return _yuen_t(
        nb, sorted_parts(baseline_sorted, math.floor(trim * nb)),
        nc, sorted_parts(condition_sorted, math.floor(trim * nc)),
    )  # fmt: skip


def _yuen_t(nb: int, base: tuple[float, float, int], nc: int, cond: tuple[float, float, int]) -> float:
    """Yuen's t of two arms' `sorted_parts` (trimmed mean, winsorized variance, kept count)."""
    (mb, vb, hb), (mc, vc, hc) = base, cond
    se2 = (nb - 1) * vb / (hb * (hb - 1)) + (nc - 1) * vc / (hc * (hc - 1))
    if se2 > 0.0:
        return (mc - mb) / math.sqrt(se2)
    return math.copysign(math.inf, mc - mb) if mc != mb else 0.0


LARGE_ARM = 1000  # runs: an arm at least this large is summed by `SplitYuen`, a smaller one value by value
# splits the C kernel draws at a time, doubling: a p-value stops after a few dozen splits or thousands, and
# a batch's draws past the stop are wasted (half of them at most, growing by two)
_FIRST_BATCH, _LAST_BATCH = 32, 4096


class SplitYuen:
    """Yuen's t of the splits of pooled values, where one arm is large (a history step of a 10^4-run
    campaign against a 10^6-run one: 294 runs against 29,400 in a cell).

    Why. Summing the large arm value by value made each split cost the pooled size: 1,220 splits of 29,700
    runs took 24 s of a step's 25. Here the large arm's trimmed and winsorized sums are the pooled values'
    prefix sums between its trimming bounds, less the small arm's values there, so a split costs the small
    arm's size. The sums are of values less the pooled median, summed outward from it (`_sums_from`), so a
    drawn arm's winsorized mean lies near 0 and the one-pass formula of its variance loses little to
    cancellation: the t of a split agrees with `yuen_statistic`'s to 1e-9 or better, relative, where it is not
    near 0 (`tests/unit/test_stats_split_yuen.py`)."""

    def __init__(self, pooled_sorted: Sequence[float], trim: float = TRIM):
        middle = len(pooled_sorted) // 2
        self.values = [x - pooled_sorted[middle] for x in pooled_sorted]
        self.squares = [x * x for x in self.values]
        self.sums = _sums_from(self.values, middle)
        self.square_sums = _sums_from(self.squares, middle)
        self.trim = trim

    def statistic(self, condition: Sequence[int]) -> float:
        """Yuen's t of the split whose condition arm is `condition` (indices into the pooled values,
        ascending), as `yuen_statistic` of the two arms gives it."""
        n, nc = len(self.values), len(condition)
        if 2 * nc <= n:
            small = self._explicit(condition)
            return _yuen_t(n - nc, self._complement(condition), nc, small)
        baseline = list(compress(range(n), others_mask(n, condition)))
        return _yuen_t(n - nc, self._explicit(baseline), nc, self._complement(baseline))

    def drawn_statistics(self, n_condition: int, rng: random.Random, limit: int) -> Iterator[float]:
        """`statistic` of `limit` splits drawn by `permutation.drawn_splits` from `rng`, in their order: the
        same splits and, to the last bit, the same t, from the C kernel (`_splits.c`) where it is built,
        else split by split. The kernel draws in doubling batches (a p-value may stop after a few dozen
        splits), so `rng` is left where it was: the caller's generator serves this one draw."""
        n = len(self.values)
        # an arm of one run takes the Python loop, and its error, as before
        yuen_statistics = _split_kernel() if min(n_condition, n - n_condition) >= 2 else None
        if yuen_statistics is None:
            yield from map(self.statistic, drawn_splits(n, n_condition, rng, limit))
            return
        values, squares = array("d", self.values), array("d", self.squares)
        sums, square_sums = array("d", self.sums), array("d", self.square_sums)
        yield from _batched(
            lambda state, count: yuen_statistics(
                values, squares, sums, square_sums, n, self.trim, n_condition, state, count
            ),
            rng,
            limit,
        )

    def _explicit(self, arm: Sequence[int]) -> tuple[float, float, int]:
        xs = [self.values[i] for i in arm]
        return sorted_parts(xs, math.floor(self.trim * len(xs)))

    def _complement(self, small: Sequence[int]) -> tuple[float, float, int]:
        """`sorted_parts` of the arm that is every pooled value but those at `small` (ascending)."""
        n_arm = len(self.values) - len(small)
        g = math.floor(self.trim * n_arm)
        lo, hi = _rank_position(small, g), _rank_position(small, n_arm - g - 1)
        inner = small[bisect_right(small, lo) : bisect_left(small, hi)]
        kept = self.sums[hi + 1] - self.sums[lo] - sum(map(self.values.__getitem__, inner))
        kept_sq = self.square_sums[hi + 1] - self.square_sums[lo] - sum(map(self.squares.__getitem__, inner))
        x_lo, x_hi = self.values[lo], self.values[hi]
        wins = kept + g * (x_lo + x_hi)
        wins_sq = kept_sq + g * (self.squares[lo] + self.squares[hi])
        var_w = max(0.0, (wins_sq - wins * wins / n_arm) / (n_arm - 1)) if n_arm > 1 else 0.0
        return kept / (n_arm - 2 * g), var_w, n_arm - 2 * g


def drawn_arm_statistics(
    pooled_sorted: Sequence[float], by_coins: bool, trim: float = TRIM
) -> Callable | None:
    """A `drawn_statistics(n_condition, rng, limit)` for `permutation.split_p`: `yuen_statistic` of the two
    arms of the splits of `pooled_sorted` that `permutation._drawn_masks` (`by_coins`) or `drawn_splits`
    draws from `rng`, in their order, by the C kernel (`_splits.c`): the same splits and the same t to the
    last bit, a sixteenth of the CPU (a history step's 295 runs against 295). None in a pure-Python install:
    the caller's loop serves. `rng` is left where it was, as in `SplitYuen.drawn_statistics`."""
    kernel = _split_kernel("yuen_arm_statistics")
    if kernel is None:
        return None
    values, n = array("d", pooled_sorted), len(pooled_sorted)

    def drawn(n_condition: int, rng: random.Random, limit: int) -> Iterator[float]:
        coins = by_coins and near_even(n, n_condition)  # uneven arms: `_drawn_masks` draws as drawn_splits
        return _batched(
            lambda state, count: kernel(values, n, trim, n_condition, coins, state, count), rng, limit
        )

    return drawn


def _batched(draw: Callable, rng: random.Random, limit: int) -> Iterator[float]:
    """`limit` statistics from a C kernel's `draw(state, count) -> (bytes of doubles, state)`, drawn in
    doubling batches from a copy of `rng`'s state (`rng` itself is not advanced)."""
    state, left, batch = rng.getstate()[1], limit, _FIRST_BATCH
    while left > 0:
        count = min(batch, left)
        drawn, state = draw(state, count)
        yield from array("d", drawn)
        left, batch = left - count, min(2 * batch, _LAST_BATCH)


def _split_kernel(name: str = "yuen_statistics") -> Callable | None:
    """The C kernel's function `name`, or None in a pure-Python install (a board bundle's wheel): the same
    t, slower."""
    try:  # by its full name: a test that puts None in sys.modules for it takes this install's Python path
        kernel = importlib.import_module("boardlab.stats._splits")
    except ImportError:
        return None
    return getattr(kernel, name)


def _sums_from(xs: list[float], middle: int) -> list[float]:
    """s with s[j] - s[i] = the sum of xs[i:j], each s[k] summed outward from `middle` (s[middle] = 0): a
    trimmed range's sum then adds no value beyond the range's ends, where a prefix sum from xs[0] would carry
    the far tail's rounding (an outlier 1e4 times the spread) into every range."""
    below = list(accumulate(reversed(xs[:middle]), initial=0.0))
    return [-below[middle - k] for k in range(middle)] + list(accumulate(xs[middle:], initial=0.0))


def _rank_position(skipped: Sequence[int], rank: int) -> int:
    """The pooled index of the value of rank `rank` (0: the smallest) among the pooled values not at the
    indices `skipped` (ascending)."""
    at = rank
    for i in skipped:
        if i > at:
            break
        at += 1
    return at


def one_sample_statistic(logs: Sequence[float], trim: float = TRIM) -> float:
    """The one-sample trimmed t of `trimmed_one_sample` (the permutation test recomputes it for each sign
    flip of the per-block log ratios); 0 or +-inf when its standard error is 0."""
    xs = sorted(logs)
    n = len(xs)
    m, v, _h = sorted_parts(xs, math.floor(trim * n))
    se = math.sqrt(v) / ((1.0 - 2.0 * trim) * math.sqrt(n))
    if se > 0.0:
        return m / se
    return math.copysign(math.inf, m) if m else 0.0


def equal_variance_df(n_baseline: int, n_condition: int, trim: float = TRIM) -> float:
    """Welch's degrees of freedom for these run counts when both arms' winsorized variances are equal:
    a property of the design alone, not of the data (`yuen_welch` takes the smaller of this and Welch's
    estimate)."""
    hb = n_baseline - 2 * math.floor(trim * n_baseline)
    hc = n_condition - 2 * math.floor(trim * n_condition)
    kb = (n_baseline - 1) / (hb * (hb - 1))
    kc = (n_condition - 1) / (hc * (hc - 1))
    return (kb + kc) ** 2 / (kb * kb / (hb - 1) + kc * kc / (hc - 1))


def _p_two_sided(t: float, df: float) -> float:
    return min(1.0, 2.0 * student_t_sf(abs(t), df))


def _result(estimate: float, se: float, df: float) -> TrimmedT:
    if se == 0.0:  # every kept value equal in both arms: no noise at all
        return TrimmedT(estimate, 0.0, df, 1.0 if estimate == 0.0 else 0.0)
    return TrimmedT(estimate, se, df, _p_two_sided(estimate / se, df))


def yuen_welch(
    baseline_logs: Sequence[float], condition_logs: Sequence[float], *, trim: float = TRIM
) -> TrimmedT:
    """Yuen's two-sample trimmed t on log values (module docstring). Each arm needs at least 2 values.

    d_j = (n_j - 1) s_wj^2 / (h_j (h_j - 1)), se = sqrt(d_1 + d_2) (Wilcox 2012, eq. 5.11-5.13): the
    statistic and its standard error agree with `scipy.stats.ttest_ind(..., equal_var=False, trim=0.2)`
    (tested where scipy is installed). The degrees of freedom are the smaller of Welch's estimate
    df = (d_1 + d_2)^2 / (d_1^2 / (h_1 - 1) + d_2^2 / (h_2 - 1)) and its value at equal variances
    (`equal_variance_df`). Why: with unequal arms Welch's estimate grows exactly when the small arm's
    winsorized variance happens to be small, i.e. when t is large, so t(Welch df) is liberal far in the
    tail, where a correction over many comparisons looks: with 33 against 11 normal runs, p < 0.0007 came
    2.4-2.6 times as often as it should (400,000 simulated nulls), and 0.5-0.7 times with the smaller df;
    with equal arms the two coincide (docs/method.md "Test"). The decision is then taken on a permutation
    p-value where it matters (`stats.permutation`); this df keeps the t approximation honest elsewhere.
    """
    if len(baseline_logs) < 2 or len(condition_logs) < 2:
        raise ValueError("Yuen's test needs at least 2 values per arm")
    mb, vb, hb = _trimmed_parts(baseline_logs, trim)
    mc, vc, hc = _trimmed_parts(condition_logs, trim)
    if hb < 2 or hc < 2:
        raise ValueError("Yuen's test needs at least 2 values per arm after trimming")
    db = (len(baseline_logs) - 1) * vb / (hb * (hb - 1))
    dc = (len(condition_logs) - 1) * vc / (hc * (hc - 1))
    se2 = db + dc
    denom = db * db / (hb - 1) + dc * dc / (hc - 1)
    df = se2 * se2 / denom if denom > 0 else float(hb + hc - 2)
    df = min(df, equal_variance_df(len(baseline_logs), len(condition_logs), trim))
    return _result(mc - mb, math.sqrt(se2), df)


def trimmed_one_sample(logs: Sequence[float], *, trim: float = TRIM) -> TrimmedT:
    """Tukey-McLaughlin one-sample trimmed t of per-block log ratios against 0 (the paired design):
    se = s_w / ((1 - 2 trim) sqrt(n)), df = h - 1 (Wilcox 2012 section 4.6). Needs at least 2 values."""
    if len(logs) < 2:
        raise ValueError("the one-sample trimmed t needs at least 2 values")
    m, v, h = _trimmed_parts(logs, trim)
    if h < 2:
        raise ValueError("the one-sample trimmed t needs at least 2 values after trimming")
    se = math.sqrt(v) / ((1.0 - 2.0 * trim) * math.sqrt(len(logs)))
    return _result(m, se, float(h - 1))
