"""Can a plan reach a verdict at all? (docs/method.md "Comparing ...": reachability, checked at plan load.)

The report's test (`test_kind="trimmed"`, Yuen's trimmed t on log values) has a continuous reference
distribution: its p-value falls towards 0 as the effect grows against the noise, at any n, so a verdict is
reachable with the verdict rule's MIN_RUNS_PER_ARM runs per arm whatever the family. How many runs *detect*
an effect is another question, answered by `stats.power`.

A rank test (`test_kind="rank"`, kept for the A/A control) on n runs per arm has a smallest possible p-value: every condition run beyond every baseline
run. If even that p, after the report's multiple-testing correction, is not below alpha, no comparison can be
called slowdown or speedup however large the effect. The bound is computed with the product's own test
functions (`hypothesis.mann_whitney_u` / `wilcoxon_signed_rank`, exact or asymptotic as they choose), so it
is the p the report would compute for completely separated arms, not a textbook approximation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from boardlab.stats.hypothesis import mann_whitney_u, wilcoxon_signed_rank
from boardlab.stats.threshold import family_method
from boardlab.stats.verdict import ALPHA, MIN_RUNS_PER_ARM

MAX_SEARCH = 1000


TestKind = Literal["trimmed", "rank"]


def smallest_p(
    n_baseline: int, n_condition: int, *, paired: bool = False, test_kind: TestKind = "rank"
) -> float:
    """The smallest p-value the test can give with these run counts. Rank test: completely separated arms
    (for paired blocks, every block's log ratio of the same sign). Trimmed t: 0 (its infimum, approached as
    the effect grows) once each arm keeps 2 runs after trimming, else 1 (no test)."""
    if test_kind == "trimmed":
        return 0.0 if min(n_baseline, n_condition) >= 2 else 1.0
    if paired:
        n = min(n_baseline, n_condition)
        return wilcoxon_signed_rank([float(i + 1) for i in range(n)]).p_value if n else 1.0
    base = [float(i) for i in range(n_baseline)]
    cond = [float(n_baseline + i) for i in range(n_condition)]
    return mann_whitney_u(cond, base).p_value


def smallest_adjusted_p(
    n: int, family_size: int, *, paired: bool = False, test_kind: TestKind = "rank"
) -> float:
    """The smallest adjusted p of one comparison in a family of `family_size` (docs/method.md: the smallest p
    times the family size, which is Holm's first step and Benjamini-Hochberg's worst case)."""
    return min(1.0, smallest_p(n, n, paired=paired, test_kind=test_kind) * max(1, family_size))


@dataclass(frozen=True)
class Reachability:
    """Whether `runs_per_arm` runs can give a verdict in a family of `family_size` comparisons.

    `repetitions_needed` is the smallest runs per arm that can (at least MIN_RUNS_PER_ARM), whatever the
    plan has; `message` says it in a sentence for the user (None when reachable and nothing to say).
    """

    runs_per_arm: int
    family_size: int
    method: str
    smallest_adjusted_p: float
    reachable: bool
    repetitions_needed: int
    message: str | None


def reachability(
    runs_per_arm: int,
    family_size: int,
    *,
    paired: bool = False,
    alpha: float = ALPHA,
    test_kind: TestKind = "trimmed",
) -> Reachability:
    """Whether `runs_per_arm` runs per arm can reach p < alpha after the correction of a `family_size`
    family with the report's test (`test_kind`), and the smallest runs per arm that can (docs/method.md
    reachability; module docstring)."""
    method = family_method(family_size)
    if family_size == 0:
        return Reachability(runs_per_arm, 0, method, 0.0, True, MIN_RUNS_PER_ARM, None)
    needed = MIN_RUNS_PER_ARM

    def floor(n: int) -> float:
        return smallest_adjusted_p(n, family_size, paired=paired, test_kind=test_kind)

    while needed < MAX_SEARCH and floor(needed) >= alpha:
        needed += 1
    p = floor(runs_per_arm)
    reachable = runs_per_arm >= MIN_RUNS_PER_ARM and p < alpha
    message = None
    if not reachable:
        why = (
            f"{runs_per_arm} runs per arm: a verdict needs at least {MIN_RUNS_PER_ARM}"
            if runs_per_arm < MIN_RUNS_PER_ARM
            else f"with {runs_per_arm} runs per arm the smallest p-value the {test_kind} test can give, times the "
            f"{family_size} comparisons of the report, is {p:.3g}, not below {alpha}"
        )
        message = (
            f"no verdict is reachable: {why}; no comparison can be called slowdown or speedup. "
            f"{needed} repetitions per cell would suffice (--repetitions {needed}), or compare fewer cells"
        )
    return Reachability(runs_per_arm, family_size, method, p, reachable, needed, message)
