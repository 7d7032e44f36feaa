"""Per-cell summary of run values (docs/method.md "Per cell").

Every number is in the unit of the input values (one summary value per run: the median of the run's
iterations). Percentiles and quartiles use linear interpolation between closest ranks (Hyndman & Fan 1996
definition 7, numpy's default), everywhere in this package.
"""

from __future__ import annotations

import math
import random
import statistics
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from operator import mul, sub

from boardlab.stats._special import (
    first_true,
    half_binom_cdf,
    normal_ppf,
    percentile_sorted,
    ranks_of_sorted,
    student_t_ppf,
)
from boardlab.stats._validate import as_values, check_level
from boardlab.stats.bootstrap import MedianSampler, median_percentile_interval, percentile_interval
from boardlab.stats.drift import DRIFT_ALPHA, DriftCheck, drift_of_ranked, drift_reason

PERCENTILE_METHOD = "linear interpolation between closest ranks (Hyndman-Fan 7, numpy default)"
MAD_NORMAL_SCALE = 1.4826  # 1 / Phi^-1(3/4): makes the MAD estimate sigma for normal data
TAIL_MIN_N = 100  # p99 needs at least 100 values (docs/method.md "Per cell")
OUTLIER_WARN_FRACTION = 0.05  # hyperfine #528/#837; research/anchors-methodology.md section 9.6
DEFAULT_RESAMPLES = 10_000


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] at nominal level `confidence` (0.95 = 95%).

    `method` names how it was built. `coverage` is the exact coverage when the method guarantees one
    (order-statistic CIs: at least `confidence`, distribution-free); `ranks` are the 1-based order
    statistics used by an order-statistic CI.
    """

    low: float
    high: float
    confidence: float
    method: str
    coverage: float | None = None
    ranks: tuple[int, int] | None = None

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def relative_half_width(self, center: float) -> float:
        """Half-width as a fraction of `center` (e.g. the median): 0.01 means +-1%."""
        return self.half_width / abs(center) if center else math.inf

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class TukeyOutliers:
    """Tukey fences on the quartiles (Tukey, *Exploratory Data Analysis*, 1977); counted, never dropped.

    Mild: beyond 1.5 IQR from the quartiles but within 3 IQR; extreme: beyond 3 IQR (the split criterion.rs
    reports as "mild" and "severe"). Quartiles by linear interpolation.
    """

    q1: float
    q3: float
    iqr: float
    low_mild: int
    high_mild: int
    low_extreme: int
    high_extreme: int

    @property
    def total(self) -> int:
        return self.low_mild + self.high_mild + self.low_extreme + self.high_extreme


@dataclass(frozen=True)
class CellSummary:
    """Summary of one cell's run values (n runs, one value per run), in the unit of the values.

    Optional fields are None when the statistic needs more runs; the matching `*_reason` says why.
    `mean_t_ci` assumes normally distributed run values (its `method` says so); prefer the median CIs.
    `cv` is std / mean (a fraction: 0.02 = 2%). `mad` is the raw median absolute deviation, `mad_scaled`
    = 1.4826 x MAD (estimates sigma for normal data).
    """

    n: int
    median: float
    median_ci: Interval | None
    median_ci_reason: str | None
    median_bootstrap_ci: Interval | None
    median_bootstrap_ci_reason: str | None
    mean: float
    mean_t_ci: Interval | None
    std: float | None
    cv: float | None
    mad: float
    mad_scaled: float
    min: float
    max: float
    p5: float
    p95: float
    p99: float | None
    p99_reason: str | None
    percentile_method: str
    outliers: TukeyOutliers
    drift: DriftCheck | None
    drift_reason: str | None
    warnings: tuple[str, ...]


# --- building blocks -------------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) by linear interpolation (Hyndman & Fan 1996 def. 7, numpy's
    default)."""
    xs = sorted(as_values(values))
    return percentile_sorted(xs, q / 100.0)


def order_statistic_min_n(confidence: float = 0.95) -> int:
    """Smallest n for which [min, max] covers the median with probability >= confidence: 1 - 2 (1/2)^n."""
    check_level(confidence, "confidence")
    n = 1
    while 1.0 - 2.0 * 0.5**n < confidence:
        n += 1
    return n


def median_ci_order_statistic(values: Iterable[float], confidence: float = 0.95) -> Interval | None:
    """Distribution-free CI of the median from order statistics [x_(l), x_(n+1-l)]; None when n is too small.

    Method: the number of values below the population median is Binomial(n, 1/2), so
    P(x_(l) <= median <= x_(n+1-l)) = 1 - 2 P(B <= l - 1) (Conover, *Practical Nonparametric Statistics*,
    3rd ed., 3.2; Hoefler & Belli 2015 section 4.2.1; Le Boudec, *Performance Evaluation*, 2010, 2.2). l is
    the largest rank with coverage >= `confidence`, so the coverage reported is exact and at least the
    nominal level. Exact integer arithmetic up to n = 1000, the incomplete beta function above (a search
    from the normal approximation of l, a few evaluations). A 95% CI needs n >= 6 (n = 5 reaches only 93.75%).
    """
    check_level(confidence, "confidence")
    return _order_statistic_ci(sorted(as_values(values)), confidence)


def _order_statistic_ci(xs: Sequence[float], confidence: float) -> Interval | None:
    """`median_ci_order_statistic` of checked, sorted values."""
    n = len(xs)
    if n < order_statistic_min_n(confidence):
        return None
    half_alpha = (1 - Fraction(str(confidence))) / 2
    if n <= 1000:
        limit = half_alpha * (1 << n)
        # cum > limit as integers (cum * q > p for limit = p/q): exact, as the Fraction comparison, without
        # a Fraction made per rank
        p, q = limit.numerator, limit.denominator
        # cum = sum_{i<=j} C(n, i); ranks l = j + 1 while cum stays <= limit (kept: cum at l - 1)
        cum, term, l_rank, kept = 0, 1, 0, 0
        for j in range(n // 2 + 1):
            cum += term
            if cum * q > p:
                break
            l_rank, kept = j + 1, cum
            term = term * (n - j) // (j + 1)
        tail = kept / (1 << n)  # P(B <= l - 1), as half_binom_cdf computes it
    else:
        # the largest l <= n/2 with P(B <= l - 1) <= half_alpha; P(B <= 0) is tiny for n > 1000
        guess = round(n / 2 + normal_ppf(float(half_alpha)) * math.sqrt(n) / 2)
        tails: dict[int, float] = {}

        def too_wide(i: int) -> bool:  # l = i + 1 fails; false then true as i grows
            tails[i] = half_binom_cdf(n, i)
            return tails[i] > half_alpha

        l_rank = min(first_true(too_wide, guess, n // 2), n // 2)
        known = tails.get(l_rank - 1)
        tail = half_binom_cdf(n, l_rank - 1) if known is None else known
    if l_rank == 0:
        return None
    u_rank = n + 1 - l_rank
    return Interval(
        xs[l_rank - 1],
        xs[u_rank - 1],
        confidence,
        "order statistics (binomial, distribution-free)",
        coverage=1.0 - 2.0 * tail,
        ranks=(l_rank, u_rank),
    )


def median_ci_bootstrap(
    values: Iterable[float],
    confidence: float = 0.95,
    *,
    resamples: int | None = None,
    seed: int = 0,
) -> Interval | None:
    """Percentile bootstrap CI of the median, resampling whole runs; None below the order-statistic minimum.

    Method: Efron & Tibshirani (1993) ch. 13, percentile interval: the (1 - c)/2 and (1 + c)/2 quantiles of
    the bootstrap distribution of the median. By default (`resamples` None) that distribution is the exact
    one over all n^n resamples (Maritz & Jarrett 1978; `bootstrap.MedianLaw`), whose quantiles are what a
    percentile interval of drawn resample medians tends to as the draws grow: no Monte Carlo error, no
    seed. With `resamples`, that many resample medians are drawn with `random.Random(seed)` from the same
    exact distribution (`bootstrap.MedianSampler`) and their quantiles taken by linear interpolation.
    Because every resample median lies in [min, max], the interval cannot reach `confidence` with fewer
    runs than the order-statistic CI (6 for 95%), so it is withheld there too.
    """
    check_level(confidence, "confidence")
    xs = sorted(as_values(values))
    if len(xs) < order_statistic_min_n(confidence):
        return None
    if resamples is None:
        return _exact_bootstrap_ci(xs, confidence)
    draws = MedianSampler(xs).draw(resamples, random.Random(seed))
    low, high = percentile_interval(draws, confidence)
    return Interval(
        low, high, confidence, f"bootstrap percentile ({resamples} resamples of runs, seed {seed})"
    )


EXACT_BOOTSTRAP_METHOD = (
    "bootstrap percentile (exact distribution of the resample median over all resamples of runs)"
)


def _exact_bootstrap_ci(xs: Sequence[float], confidence: float) -> Interval:
    """The exact percentile bootstrap CI of the median of checked, sorted values (n >= the minimum)."""
    low, high = median_percentile_interval(xs, confidence)
    return Interval(low, high, confidence, EXACT_BOOTSTRAP_METHOD)


def _mean_std(xs: Sequence[float]) -> tuple[float, float | None]:
    """(mean, sample standard deviation or None for n < 2) of checked values, both to within an ulp or two
    of `statistics.fmean` / `statistics.stdev` (which sums exact fractions: 30 times slower). The mean is
    fsum / n (fmean's); the sum of squared deviations is an fsum, corrected by the deviations' own fsum for
    the rounding of the mean (the corrected two-pass algorithm, Chan, Golub & LeVeque 1983)."""
    n = len(xs)
    mean = math.fsum(xs) / n
    if n < 2:
        return mean, None
    dev = array("d", map(sub, xs, repeat(mean)))  # 8 bytes a value: a cell of 300,000 runs is 2.4 MB
    drift = math.fsum(dev)
    ss = math.fsum(map(mul, dev, dev)) - drift * drift / n
    return mean, math.sqrt(max(ss, 0.0) / (n - 1))


def mean_t_interval(values: Iterable[float], confidence: float = 0.95) -> Interval | None:
    """Student-t CI of the mean, mean +- t_{(1+c)/2, n-1} s / sqrt(n); None for n < 2. Assumes normality.

    Method: Student (1908); Georges, Buytaert & Eeckhout (2007) section 3. Run times are rarely normal
    (Hoefler & Belli 2015, rule 6), hence the label in `method`.
    """
    check_level(confidence, "confidence")
    xs = as_values(values)
    mean, std = _mean_std(xs) if xs else (0.0, None)
    return _mean_t(mean, std, len(xs), confidence)


def _mean_t(mean: float, std: float | None, n: int, confidence: float) -> Interval | None:
    if std is None:
        return None
    half = student_t_ppf((1.0 + confidence) / 2.0, n - 1) * std / math.sqrt(n)
    return Interval(mean - half, mean + half, confidence, "student-t (assumes normality)")


def _median_sorted(xs: Sequence[float]) -> float:
    """statistics.median of sorted values, without sorting them again."""
    n = len(xs)
    i = n // 2
    return xs[i] if n % 2 else (xs[i - 1] + xs[i]) / 2


def mad(values: Iterable[float]) -> float:
    """Median absolute deviation from the median (raw; multiply by 1.4826 to estimate sigma for normal
    data)."""
    return _mad_sorted(sorted(as_values(values)))


def _mad_sorted(xs: Sequence[float]) -> float:
    """The MAD of sorted values: the deviations fall then rise along them, two runs a sort merges in O(n)."""
    center = _median_sorted(xs)
    return _median_sorted(sorted(map(abs, map(sub, xs, repeat(center)))))


def tukey_outliers(values: Iterable[float]) -> TukeyOutliers:
    """Counts of values beyond Tukey's fences (1.5 and 3 IQR from the quartiles); nothing is removed."""
    return _tukey_sorted(sorted(as_values(values)))


def _tukey_sorted(xs: Sequence[float]) -> TukeyOutliers:
    """`tukey_outliers` of sorted values: each count is a difference of two binary searches."""
    q1, q3 = percentile_sorted(xs, 0.25), percentile_sorted(xs, 0.75)
    iqr = q3 - q1
    mild_lo, mild_hi = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    ext_lo, ext_hi = q1 - 3.0 * iqr, q3 + 3.0 * iqr
    below_ext, above_ext = bisect_left(xs, ext_lo), bisect_right(xs, ext_hi)  # x < ext_lo; x <= ext_hi
    return TukeyOutliers(
        q1=q1,
        q3=q3,
        iqr=iqr,
        low_mild=bisect_left(xs, mild_lo) - below_ext,  # ext_lo <= x < mild_lo
        high_mild=above_ext - bisect_right(xs, mild_hi),  # mild_hi < x <= ext_hi
        low_extreme=below_ext,
        high_extreme=len(xs) - above_ext,
    )


# --- the cell summary -----------------------------------------------------------------------------------


def summarize(
    values: Sequence[float],
    *,
    order: Sequence[float] | None = None,
    confidence: float = 0.95,
    bootstrap_resamples: int | None = None,
    seed: int = 0,
    drift_alpha: float = DRIFT_ALPHA,
) -> CellSummary:
    """Summary of one cell: one value per run, in run order unless `order` (run index or start time) says.

    Method (docs/method.md "Per cell"): median with a distribution-free order-statistic CI
    (`median_ci_order_statistic`) and a percentile bootstrap CI over runs (`median_ci_bootstrap`: the exact
    bootstrap distribution, or `bootstrap_resamples` draws seeded with `seed`); mean with a Student-t CI
    labelled as assuming normality; sample standard deviation (n - 1), CV, MAD; p5/p95 (and p99 from 100
    values) by linear interpolation; Tukey outlier counts, never dropped; a drift check (`drift.drift_check`,
    Spearman against run order, flagged at p < 0.01). Deterministic. The values are sorted once, and every
    order statistic, percentile, the MAD and the outlier counts are read from that one sorted copy.
    """
    xs = as_values(values)
    n = len(xs)
    if n == 0:
        raise ValueError("summarize needs at least one run value")
    check_level(confidence, "confidence")
    # one sort: the sorted values and their ranks (the permutation kept as a column: a list of its ints
    # is 36 bytes a run)
    by_value = array("q", sorted(range(n), key=xs.__getitem__))
    s = array("d", map(xs.__getitem__, by_value))
    min_n = order_statistic_min_n(confidence)
    median = _median_sorted(s)
    mean, std = _mean_std(xs)
    cv = std / abs(mean) if std is not None and mean != 0 else None
    raw_mad = _mad_sorted(s)
    ci_reason = None
    if n < min_n:
        ci_reason = (
            f"a distribution-free {confidence:.0%} CI of the median needs at least {min_n} runs (have {n}); "
            "run more (10 is the pilot)"
        )
    boot_reason = None
    if n < min_n:
        boot_reason = (
            f"a bootstrap CI of the median cannot reach {confidence:.0%} with fewer than {min_n} runs (every "
            f"resample median lies within [min, max]); have {n}"
        )
    outliers = _tukey_sorted(s)
    drift = drift_of_ranked(xs, ranks_of_sorted(by_value, s), order, drift_alpha)
    why_no_drift = drift_reason(n) or (None if drift is not None else "values are constant: no trend to test")

    warnings: list[str] = []
    if ci_reason:
        warnings.append(ci_reason)
    if outliers.total > OUTLIER_WARN_FRACTION * n:
        warnings.append(
            f"{outliers.total} of {n} runs lie beyond Tukey's fences (> {OUTLIER_WARN_FRACTION:.0%}); they "
            "are kept. Check those runs' load, frequency and temperature records for interference."
        )
    if drift is not None and drift.message:
        warnings.append(drift.message)
    return CellSummary(
        n=n,
        median=median,
        median_ci=_order_statistic_ci(s, confidence),
        median_ci_reason=ci_reason,
        median_bootstrap_ci=_bootstrap_ci(s, confidence, bootstrap_resamples, seed),
        median_bootstrap_ci_reason=boot_reason,
        mean=mean,
        mean_t_ci=_mean_t(mean, std, n, confidence),
        std=std,
        cv=cv,
        mad=raw_mad,
        mad_scaled=MAD_NORMAL_SCALE * raw_mad,
        min=s[0],
        max=s[-1],
        p5=percentile_sorted(s, 0.05),
        p95=percentile_sorted(s, 0.95),
        p99=percentile_sorted(s, 0.99) if n >= TAIL_MIN_N else None,
        p99_reason=None if n >= TAIL_MIN_N else f"p99 needs at least {TAIL_MIN_N} values (have {n})",
        percentile_method=PERCENTILE_METHOD,
        outliers=outliers,
        drift=drift,
        drift_reason=why_no_drift,
        warnings=tuple(warnings),
    )


def _bootstrap_ci(
    xs: Sequence[float], confidence: float, resamples: int | None, seed: int
) -> Interval | None:
    if len(xs) < order_statistic_min_n(confidence):
        return None
    if resamples is None:
        return _exact_bootstrap_ci(xs, confidence)
    return median_ci_bootstrap(xs, confidence, resamples=resamples, seed=seed)


def run_values(iterations_per_run: Iterable[Iterable[float]]) -> tuple[float, ...]:
    """One value per run: the median of each run's iterations (docs/method.md "The unit of repetition").

    This is the only way from iterations to the statistics here; iterations are never pooled across runs.
    """
    out = []
    for i, run in enumerate(iterations_per_run):
        its = as_values(run, what=f"run {i}")
        if not its:
            raise ValueError(f"run {i} has no iterations")
        out.append(statistics.median(its))
    return tuple(out)
