"""Runs per arm that *detect* an effect (docs/method.md "How many runs to detect an effect").

Reachability (`stats.reach`) says whether a verdict is possible at all; this says how many runs per arm give
80% power to call a true slowdown of 2.5 x the workload's threshold delta (5% at the default 2%) a
slowdown, at a given CV, under the report's correction. The power is *simulated through the shipped test*:
lognormal runs at the CV go through the test `compare.compare` uses (`trimmed.yuen_welch` on log values) and
`verdict.decide`'s slowdown rule (adjusted p < alpha and the 90% decision interval above 1 + delta) with the
p-value adjusted as the family's correction adjusts the strongest
comparison of a family with one real effect (p x m: Holm's first step, and Benjamini-Hochberg's when only one
effect is real). That is the conservative case: with more real effects in the family Benjamini-Hochberg
rejects more easily. Seeded, so the advice is the same on every call.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from boardlab.stats.summary import mad
from boardlab.stats.trimmed import yuen_welch
from boardlab.stats.verdict import ALPHA, MIN_RUNS_PER_ARM

TARGET_POWER = 0.80
EFFECT_OVER_DELTA = 2.5  # the effect to detect, in thresholds: 5% at the default delta of 2%
ASSUMED_CV = 0.02  # before any run: the CV at which docs/method.md states its error-rate goals
POWER_REPLICATES = 400  # simulated comparisons per candidate n: power to +-2% (binomial SE at 80%)
MAX_RUNS = 50  # the precision rule's cap: beyond it, the advice says "more than 50"


@dataclass(frozen=True)
class PowerAdvice:
    """The runs per arm (`runs_per_arm`, condition arm; the reference gets `baseline_runs`) that give at least
    `target_power` to detect a cost ratio of `effect` at coefficient of variation `cv` (a fraction) in a
    family of `family_size`; `power` is the simulated power there. `cv_source` says where the CV came from
    ("assumed", or the runs it was measured on). `exceeds_cap`: even MAX_RUNS runs do not reach the target
    (`runs_per_arm` is then MAX_RUNS and `power` its power)."""

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

    def sentence(self) -> str:
        """The advice in one sentence for the user."""
        head = f"more than {MAX_RUNS}" if self.exceeds_cap else f"{self.runs_per_arm}"
        base = f" (the reference {self.baseline_runs})" if self.baseline_runs != self.runs_per_arm else ""
        return (
            f"{head} runs per arm{base} for {self.target_power:.0%} power to detect a {self.effect - 1:.1%} "
            f"effect (2.5 x delta {self.delta:.1%}) at CV {self.cv:.1%} ({self.cv_source}) among "
            f"{self.family_size} comparisons (simulated power {self.power:.0%})"
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
) -> float:
    """Share of `replicates` simulated comparisons (lognormal runs, condition median `effect` x the
    baseline's, lower is better) that the shipped test calls a slowdown, with p adjusted by x family_size."""
    if n_condition < MIN_RUNS_PER_ARM or n_baseline < MIN_RUNS_PER_ARM:
        return 0.0
    rng = random.Random(f"power:{seed}")
    sigma = math.sqrt(math.log1p(cv * cv))
    m = max(1, family_size)
    log_effect, log_upper = math.log(effect), math.log1p(delta)
    gauss = rng.gauss
    hits = 0
    for _ in range(replicates):
        base = [gauss(0.0, sigma) for _ in range(n_baseline)]
        cond = [log_effect + gauss(0.0, sigma) for _ in range(n_condition)]
        t = yuen_welch(base, cond)
        # verdict.decide's slowdown rule on compare's trimmed test: adjusted p < alpha and the 90% decision
        # interval above 1 + delta (the interval's side as a one-sided p, the same t distribution)
        hits += t.p_value * m < alpha and t.p_above(log_upper) < alpha
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
) -> PowerAdvice:
    """The fewest runs per arm (at least MIN_RUNS_PER_ARM, at most MAX_RUNS) whose simulated power
    (`simulated_power`) reaches `target_power` for an effect of 1 + effect_over_delta x delta.
    `baseline_runs(n)` is the reference cell's runs when its conditions have n (the plan's allocation).
    Power grows with n, so a bisection over [5, MAX_RUNS] finds it in about 6 simulations."""
    if cv < 0 or delta <= 0:
        raise ValueError(f"need cv >= 0 and delta > 0, got cv={cv}, delta={delta}")
    effect = 1.0 + effect_over_delta * delta
    cache: dict[int, float] = {}

    def power(n: int) -> float:
        if n not in cache:
            cache[n] = simulated_power(
                n,
                baseline_runs(n),
                cv=cv,
                effect=effect,
                delta=delta,
                family_size=family_size,
                replicates=replicates,
                seed=seed,
            )
        return cache[n]

    def advice(n: int, exceeds: bool) -> PowerAdvice:
        return PowerAdvice(
            n, baseline_runs(n), power(n), target_power, effect, delta, cv, cv_source, family_size, exceeds
        )

    if power(MAX_RUNS) < target_power:
        return advice(MAX_RUNS, True)
    lo, hi = MIN_RUNS_PER_ARM, MAX_RUNS  # power(hi) >= target
    if power(lo) >= target_power:
        return advice(lo, False)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(mid) >= target_power:
            hi = mid
        else:
            lo = mid
    return advice(hi, False)


def observed_cv(values: list[float]) -> float | None:
    """A robust CV of one cell's run values: 1.4826 x MAD / median (`summary.mad`; a stray run does not
    decide the advice); None with fewer than 3 runs or a non-positive median."""
    if len(values) < 3:
        return None
    med = statistics.median(values)
    return 1.4826 * mad(values) / med if med > 0 else None
