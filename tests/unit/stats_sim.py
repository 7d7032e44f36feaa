"""Seeded simulations of the comparison method (research/anchors-methodology.md section 8), pure Python.

A simulated *cell* is one baseline arm and one condition arm of per-run values drawn from lognormal
distributions with a given CV; the condition's median is `effect` times the baseline's. A simulated
comparison uses the product's default threshold delta (2%, docs/method.md), never one estimated from the runs.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

from boardlab.stats import DEFAULT_DELTA, compare


def lognormal_runs(rng: random.Random, n: int, cv: float, median: float = 1.0) -> list[float]:
    """n run values, lognormal with coefficient of variation `cv` and the given median."""
    sigma = math.sqrt(math.log1p(cv * cv))
    return [median * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


@dataclass(frozen=True)
class SimResult:
    cells: int
    delta: float
    verdicts: Counter

    def rate(self, *kinds: str) -> float:
        return sum(self.verdicts[k] for k in kinds) / self.cells


def simulate(
    *,
    seed: int,
    cells: int,
    runs: int,
    cv: float,
    effect: float,
    resamples: int = 2000,
) -> SimResult:
    """Verdict counts over `cells` simulated comparisons on one simulated board (lower is better: times)."""
    rng = random.Random(seed)
    delta = DEFAULT_DELTA
    verdicts: Counter = Counter()
    for i in range(cells):
        base = lognormal_runs(rng, runs, cv)
        cond = lognormal_runs(rng, runs, cv, median=effect)
        c = compare(
            base, cond, higher_is_better=False, delta=delta, seed=seed * 100_003 + i, resamples=resamples
        )
        verdicts[c.verdict.kind] += 1
    return SimResult(cells, delta, verdicts)
