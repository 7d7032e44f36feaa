"""Runs per arm that *detect* an effect (docs/method.md "How many runs to detect an effect").

Reachability (`stats.reach`) says whether a verdict is possible at all; this says how many runs per arm give
80% power to call a true slowdown of 2.5 x the workload's threshold delta (5% at the default 2%) a
slowdown, at a given CV, under the report's correction. The power is *simulated through the shipped test*:
lognormal runs at the CV go through the test `compare.compare` uses (`trimmed.yuen_welch` on log values) and
`verdict.decide`'s slowdown rule (adjusted p < alpha and the 90% decision interval above 1 + delta) with the
p-value adjusted as the family's correction adjusts the strongest comparison of a family with one real
effect (p x m: Holm's first step, and Benjamini-Hochberg's when only one effect is real). That is the
conservative case: with more real effects in the family Benjamini-Hochberg rejects more easily.

Where the report replaces the t approximation's p by a permutation p (`stats.permutation.band`), the
simulation keeps the t approximation's p where the arms have many splits, whose degrees of freedom err on the
large side of the permutation p for normal runs at unequal arms (`trimmed.yuen_welch`), and applies the
permutation's floor (a split count too small for the family can never pass its correction). Where they have
few (CHECKED_SPLITS), the permutation p decides, drawn as the report draws it, for a sample of the replicates
in the band: there the t approximation erred towards fewer runs.
Cells whose earlier runs fell into two groups are simulated as two groups (`RunShape`), through `compare`
itself, which decides such arms by the exact rank test (its t approximation's p where the bimodal flag does
not fire, without the permutation draws: a shortcut that can err towards fewer runs). Seeded, so the advice
is the same on every call.

Power is not monotone in n (20% trimming drops one more run per side at 10, 15, 20, ... runs: 80% at 9,
75% at 10, 87.5% at 11 in one case), so every n from 5 to the cap is tried, and the first that reaches the
target is confirmed with four times the simulations before it is advised.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from boardlab.stats._special import normal_ppf
from boardlab.stats.permutation import band, smallest_p
from boardlab.stats.summary import mad
from boardlab.stats.trimmed import yuen_welch
from boardlab.stats.verdict import ALPHA, MIN_RUNS_PER_ARM

TARGET_POWER = 0.80
EFFECT_OVER_DELTA = 2.5  # the effect to detect, in thresholds: 5% at the default delta of 2%
ASSUMED_CV = 0.02  # before any run: the CV at which docs/method.md states its error-rate goals
POWER_REPLICATES = 400  # simulated comparisons per candidate n: power to +-2% (binomial SE at 80%)
CONFIRM = 4  # the first n reaching the target is simulated again with CONFIRM x the replicates
MAX_RUNS = 50  # the precision rule's cap: beyond it, the advice says "more than 50"
AA_RUNS = 10  # the A/A control compares 5 A1 with 5 A2 runs of the reference: it needs 10 of them
CV_CONFIDENCE = 0.95  # an observed CV enters the advice as the upper bound of this one-sided interval
MAD_EFFICIENCY = 0.37  # the MAD's efficiency against the standard deviation for normal runs (Huber 1981)
# Arms with at most this many splits are decided by the permutation p itself, not the t approximation: with
# few runs per arm, trimming makes many splits as extreme as the observed one (5 runs against 14: 65 splits
# that swap the trimmed run), so the permutation p stays above the t approximation's, and the t approximation
# gave 90% power where the report's verdicts reached 66%. Up to PERMUTATION_CHECKS replicates are drawn
# through it (each up to `permutation.draws_for` splits: 5,200 in a family of 26), the rest of the band
# counted at their pass rate: PERMUTATION_CHECKS while the search screens each n, CONFIRM_CHECKS for the power
# it states.
CHECKED_SPLITS = 1_000_000
PERMUTATION_CHECKS = 20
CONFIRM_CHECKS = 40
BIMODAL_REPLICATES = 200  # two-group cells go through compare() itself: fewer, costlier simulations
BIMODAL_RESAMPLES = 200  # ... each with a smaller bootstrap for the rank test's interval


@dataclass(frozen=True)
class RunShape:
    """Runs in two groups, as an earlier campaign's runs of the cell showed them (`flags.bimodality`): a run
    falls in the high group with probability `high_share`, whose centre is `gap_ratio` times the low
    group's; `within_cv` is the spread inside each group."""

    high_share: float
    gap_ratio: float
    within_cv: float


@dataclass(frozen=True)
class PowerAdvice:
    """The runs per arm (`runs_per_arm`, condition arm; the reference gets `baseline_runs`) that give at least
    `target_power` to detect a cost ratio of `effect` at coefficient of variation `cv` (a fraction) in a
    family of `family_size`; `power` is the simulated power there. `cv_source` says where the CV came from
    ("assumed", or the runs it was measured on, as an upper confidence bound). `exceeds_cap`: even MAX_RUNS
    runs do not reach the target (`runs_per_arm` is then MAX_RUNS and `power` its power). `aa_runs`: the
    fewest runs per arm that give the reference its A/A control's 10 runs, when that, not power, decided.
    `shape`: the cell was simulated as runs in two groups."""

    runs_per_arm: int
    baseline_runs: int
    power: float
    target_power: float
    effect: float
    delta: float
    cv: float
    cv_source: str
    family_size: int
    exceeds_cap: bool
    aa_runs: int | None = None
    shape: RunShape | None = None

    def sentence(self) -> str:
        """The advice in one sentence for the user."""
        head = f"more than {MAX_RUNS}" if self.exceeds_cap else f"{self.runs_per_arm}"
        base = f" (the reference {self.baseline_runs})" if self.baseline_runs != self.runs_per_arm else ""
        shape = ""
        if self.shape is not None:
            shape = (
                f", runs in two groups {self.shape.gap_ratio - 1:.1%} apart "
                f"({self.shape.high_share:.0%} in the slower one)"
            )
        aa = ""
        if self.aa_runs is not None:
            aa = f"; {self.aa_runs} so that the reference has the 10 runs its A/A control needs"
        cv = f"{self.cv:.1%}" if self.cv < 10 else "over 1000%"  # a bound from three scattered runs
        return (
            f"{head} runs per arm{base} for {self.target_power:.0%} power to detect a {self.effect - 1:.1%} "
            f"effect (2.5 x delta {self.delta:.1%}) at CV {cv} ({self.cv_source}){shape} among "
            f"{self.family_size} comparisons (simulated power {self.power:.0%}){aa}"
        )


def simulated_power(
    n_condition: int,
    n_baseline: int,
    *,
    cv: float,
    effect: float,
    delta: float,
    family_size: int,
    replicates: int = POWER_REPLICATES,
    seed: int = 0,
    alpha: float = ALPHA,
    shape: RunShape | None = None,
    at_least: float | None = None,
    checks: int = PERMUTATION_CHECKS,
) -> float:
    """Share of `replicates` simulated comparisons (lognormal runs, condition median `effect` x the
    baseline's, lower is better; two groups per `shape`) that the shipped test calls a slowdown, with p
    adjusted by x family_size (module docstring). `at_least`: a search that wants to know only whether the
    power reaches it; the power is then returned as a bound on its side of it, with fewer permutation draws.
    `checks`: how many replicates in the permutation band are drawn (module docstring)."""
    if n_condition < MIN_RUNS_PER_ARM or n_baseline < MIN_RUNS_PER_ARM:
        return 0.0
    if shape is not None:
        return _bimodal_power(
            n_condition, n_baseline, effect, delta, family_size, replicates, seed, alpha, shape
        )
    rng = random.Random(f"power:{seed}")
    sigma = math.sqrt(math.log1p(cv * cv))
    m = max(1, family_size)
    log_effect, log_upper = math.log(effect), math.log1p(delta)
    low, high = band(m, alpha)
    floor_passes = smallest_p(n_baseline + n_condition, n_condition, m, alpha) * m < alpha
    few_splits = math.comb(n_baseline + n_condition, n_condition) <= CHECKED_SPLITS
    gauss = rng.gauss
    hits = 0
    in_band: list[tuple[int, list[float], list[float]]] = []  # decided by the permutation p (few splits)
    for i in range(replicates):
        base = [gauss(0.0, sigma) for _ in range(n_baseline)]
        cond = [log_effect + gauss(0.0, sigma) for _ in range(n_condition)]
        t = yuen_welch(base, cond)
        # verdict.decide's slowdown rule on compare's trimmed test: adjusted p < alpha and the 90% decision
        # interval above 1 + delta (the interval's side as a one-sided p, the same t distribution); in the
        # permutation band, a floor too high for the family stops it, and with few splits the permutation
        # p itself decides
        interval_ok = t.p_above(log_upper) < alpha
        if few_splits and interval_ok and low <= t.p_value < high:
            in_band.append((i, base, cond))
            continue
        passes = t.p_value * m < alpha and interval_ok
        hits += passes and (floor_passes or not low <= t.p_value < high)
    return (
        hits + _band_passes(in_band[:checks], len(in_band), m, alpha, hits, replicates, at_least)
    ) / replicates


def _band_passes(
    checked: list[tuple[int, list[float], list[float]]],
    band_size: int,
    m: int,
    alpha: float,
    hits: int,
    replicates: int,
    at_least: float | None,
) -> float:
    """How many of the band's `band_size` replicates pass by their permutation p: those `checked` drawn, the
    rest counted at their pass rate. With `at_least`, the checks stop once the power's side of it is
    certain, and the count returned is then a bound on that side."""
    if not checked:
        return 0.0
    scale = band_size / len(checked)
    passed = failed = 0
    for i, base, cond in checked:
        if at_least is not None:
            if hits + passed * scale >= at_least * replicates:  # reached even if the rest all fail
                return passed * scale
            if hits + (len(checked) - failed) * scale < at_least * replicates:  # missed even if they pass
                return (len(checked) - failed) * scale
        ok = _permutation_passes(base, cond, m, alpha, seed=i)
        passed, failed = passed + ok, failed + (not ok)
    return passed * scale


def _permutation_passes(base: list[float], cond: list[float], m: int, alpha: float, seed: int) -> bool:
    """Whether `compare`'s permutation p of these log runs passes the family's correction (p x m < alpha),
    drawn only as far as that question needs."""
    from boardlab.stats.compare import yuen_split_p

    threshold = alpha / m
    return yuen_split_p(base, cond, m, alpha, seed, give_up_at=threshold).p_value < threshold


def _bimodal_power(
    n_condition: int,
    n_baseline: int,
    effect: float,
    delta: float,
    family_size: int,
    replicates: int,
    seed: int,
    alpha: float,
    shape: RunShape,
) -> float:
    """`simulated_power` for runs in two groups: each simulated comparison goes through `compare` itself
    (its bimodality check picks the test), with a smaller bootstrap for speed."""
    from boardlab.stats.compare import compare
    from boardlab.stats.verdict import decide

    rng = random.Random(f"power:{seed}:bimodal")
    sigma = math.sqrt(math.log1p(shape.within_cv**2))
    gap = math.log(shape.gap_ratio)
    m = max(1, family_size)

    def runs(n: int, shift: float) -> list[float]:
        return [math.exp(shift + rng.gauss(0.0, sigma) + (gap if rng.random() < shape.high_share else 0.0))
                for _ in range(n)]  # fmt: skip

    hits = 0
    for i in range(replicates):
        c = compare(
            runs(n_baseline, 0.0),
            runs(n_condition, math.log(effect)),
            higher_is_better=False,
            delta=delta,
            seed=i,
            resamples=BIMODAL_RESAMPLES,
            family_size=m,
            alpha=alpha,
            calibrate=False,
        )
        v = decide(c.decision_ci, p_adjusted=min(1.0, c.p_value * m), delta=delta, n_baseline=n_baseline,
                   n_condition=n_condition, alpha=alpha)  # fmt: skip
        hits += v.kind == "slowdown"
    return hits / replicates


def repetitions_for_power(
    *,
    cv: float,
    delta: float,
    family_size: int,
    cv_source: str,
    baseline_runs: Callable[[int], int] = lambda n: n,
    target_power: float = TARGET_POWER,
    effect_over_delta: float = EFFECT_OVER_DELTA,
    replicates: int = POWER_REPLICATES,
    seed: int = 0,
    shape: RunShape | None = None,
) -> PowerAdvice:
    """The fewest runs per arm (at least MIN_RUNS_PER_ARM, at most MAX_RUNS) whose simulated power
    (`simulated_power`) reaches `target_power` for an effect of 1 + effect_over_delta x delta, confirmed
    with CONFIRM x the replicates, and at least enough that the reference (`baseline_runs(n)`, the plan's
    allocation) has the A/A control's AA_RUNS. Every n is tried in turn: power is not monotone in n."""
    if cv < 0 or delta <= 0:
        raise ValueError(f"need cv >= 0 and delta > 0, got cv={cv}, delta={delta}")
    effect = 1.0 + effect_over_delta * delta
    reps = BIMODAL_REPLICATES if shape is not None else replicates

    def power(n: int, scale: int = 1) -> float:
        """Screening (scale 1): only whether the target is reached; confirming: the power itself."""
        screen = scale == 1
        return simulated_power(n, baseline_runs(n), cv=cv, effect=effect, delta=delta,
                               family_size=family_size, replicates=reps * scale, seed=seed, shape=shape,
                               at_least=target_power if screen else None,
                               checks=PERMUTATION_CHECKS if screen else CONFIRM_CHECKS)  # fmt: skip

    aa_n = next((n for n in range(MIN_RUNS_PER_ARM, MAX_RUNS + 1) if baseline_runs(n) >= AA_RUNS), MAX_RUNS)
    found = _first_reaching(power, target_power, coarse=shape is not None)
    if found is None:
        n, p = MAX_RUNS, power(MAX_RUNS, CONFIRM)
        return PowerAdvice(n, baseline_runs(n), p, target_power, effect, delta, cv, cv_source, family_size,
                           True, shape=shape)  # fmt: skip
    n, p = found
    aa = None
    if aa_n > n:  # the control's runs, not power, decide: the power there is at least the target's
        n, aa, p = aa_n, aa_n, power(aa_n, CONFIRM)
    return PowerAdvice(n, baseline_runs(n), p, target_power, effect, delta, cv, cv_source, family_size, False,
                       aa_runs=aa, shape=shape)  # fmt: skip


def _first_reaching(power: Callable[..., float], target: float, *, coarse: bool) -> tuple[int, float] | None:
    """(n, its confirmed power) for the fewest n whose power reaches `target`, or None up to MAX_RUNS. Every
    n is tried; with `coarse` (two-group cells, each simulation a hundred times dearer) every n up to 12 and
    every 4th above, then back down from the first that reaches it."""
    grid = list(range(MIN_RUNS_PER_ARM, MAX_RUNS + 1))
    if coarse:
        grid = [n for n in grid if n <= 12 or n % 4 == 0 or n == MAX_RUNS]
    previous = MIN_RUNS_PER_ARM - 1
    for n in grid:
        if power(n) >= target and (confirmed := power(n, CONFIRM)) >= target:
            best = (n, confirmed)
            for below in range(n - 1, previous, -1):  # between two grid points, when coarse
                if power(below) < target or (p := power(below, CONFIRM)) < target:
                    break
                best = (below, p)
            return best
        previous = n
    return None


def observed_cv(values: list[float]) -> float | None:
    """A robust CV of one cell's run values: 1.4826 x MAD / median (`summary.mad`; a stray run does not
    decide the advice); None with fewer than 3 runs or a non-positive median."""
    if len(values) < 3:
        return None
    med = statistics.median(values)
    return 1.4826 * mad(values) / med if med > 0 else None


MAX_LOG_VARIANCE = 700.0  # exp(709) is the largest finite double


def cv_upper_bound(
    cells: Sequence[Sequence[float]], confidence: float = CV_CONFIDENCE
) -> tuple[float, int] | None:
    """(the upper `confidence` bound of the runs' CV, the runs it rests on) from earlier runs of a workload's
    cells, or None with fewer than 3 runs in every cell.

    The spread is the robust standard deviation of the runs' log values about their cell's median, pooled
    over the cells (1.4826 x the median absolute deviation: a stray run does not decide), turned into a CV
    of lognormal runs, sqrt(exp(s^2) - 1). An estimate from a few runs is as often too low as too high, and
    advice from a too-low one misses its power: the bound is s sqrt(nu / chi2_(1 - confidence)(nu)) with
    nu = 0.37 (n - k) degrees of freedom for n runs in k cells (the MAD's efficiency for normal runs), the
    chi-square quantile by Wilson & Hilferty (1931)."""
    residuals: list[float] = []
    used = 0
    for values in cells:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) < 3:
            continue
        centre = statistics.median(logs)
        residuals += [abs(x - centre) for x in logs]
        used += 1
    if not used:
        return None
    s = 1.4826 * statistics.median(residuals)
    nu = max(1.0, MAD_EFFICIENCY * (len(residuals) - used))
    z = normal_ppf(1.0 - confidence)
    chi2 = nu * max(1e-6, 1.0 - 2.0 / (9.0 * nu) + z * math.sqrt(2.0 / (9.0 * nu))) ** 3
    upper = s * math.sqrt(nu / chi2)
    # a wide spread from few runs (3 runs of a 6 ns kernel) bounds the log variance beyond what exp() holds;
    # any CV past e^350 asks for more runs than MAX_RUNS all the same
    return math.sqrt(math.expm1(min(upper * upper, MAX_LOG_VARIANCE))), len(residuals)
