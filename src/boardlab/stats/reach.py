"""Can a plan reach a verdict at all? (docs/method.md "Reachability", checked when a plan is loaded.)

A test whose p-value has a floor fixed by the run counts cannot pass a correction over a family that
multiplies the floor past alpha, however large the effect. Each test's floor, as the report computes it:

- the trimmed test (`test_kind="trimmed"`, Yuen's trimmed t on log values, the medians' test): its t
  approximation's p falls towards 0 as the effect grows against the noise, at any n, and is the p reported
  below the permutation band (`stats.permutation.band`), so it has no floor: a verdict is reachable with
  the verdict rule's MIN_RUNS_PER_ARM runs per arm whatever the family;
- the rank test (`test_kind="rank"`, the A/A control): every condition run beyond every baseline run, the p
  the report's own `hypothesis.mann_whitney_u` / `wilcoxon_signed_rank` give for completely separated arms;
- the pooled-tail test (`test_kind="pooled-tail"`, a p99 of runs with fewer than 100 samples each,
  `stats.tails`): a permutation test over splits of whole runs, whose smallest two-sided p is 2 / C(N, n_c)
  when every split is counted, and 2 / (B + 1) when B splits are drawn (`stats.permutation`).

How many runs *detect* an effect is another question, answered by `stats.power`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from boardlab.stats.hypothesis import mann_whitney_u, wilcoxon_signed_rank
from boardlab.stats.permutation import smallest_p as permutation_floor
from boardlab.stats.text import p_text
from boardlab.stats.threshold import family_method
from boardlab.stats.verdict import ALPHA, MIN_RUNS_PER_ARM

MAX_SEARCH = 1000

TestKind = Literal["trimmed", "rank", "pooled-tail"]
TEST_NAMES = {
    "trimmed": "trimmed-means (Yuen)",
    "rank": "rank (Mann-Whitney U)",
    "pooled-tail": "pooled-p99 permutation",
}


def smallest_p(
    n_baseline: int,
    n_condition: int,
    *,
    paired: bool = False,
    test_kind: TestKind = "rank",
    family_size: int = 1,
    alpha: float = ALPHA,
) -> float:
    """The smallest p-value the test can give with these run counts (module docstring); `family_size` sets
    the pooled-tail test's draws where it draws instead of counting every split."""
    if test_kind == "trimmed":
        return 0.0 if min(n_baseline, n_condition) >= 2 else 1.0
    if test_kind == "pooled-tail":
        return permutation_floor(n_baseline + n_condition, n_condition, family_size, alpha)
    if paired:
        n = min(n_baseline, n_condition)
        return wilcoxon_signed_rank([float(i + 1) for i in range(n)]).p_value if n else 1.0
    base = [float(i) for i in range(n_baseline)]
    cond = [float(n_baseline + i) for i in range(n_condition)]
    return mann_whitney_u(cond, base).p_value


def smallest_adjusted_p(
    n: int,
    family_size: int,
    *,
    paired: bool = False,
    test_kind: TestKind = "rank",
    baseline_runs: Callable[[int], int] = lambda n: n,
    alpha: float = ALPHA,
) -> float:
    """The smallest adjusted p of one comparison in a family of `family_size` (docs/method.md: the smallest p
    times the family size, which is Holm's first step and Benjamini-Hochberg's worst case), with n condition
    runs and `baseline_runs(n)` reference runs."""
    floor = smallest_p(
        baseline_runs(n), n, paired=paired, test_kind=test_kind, family_size=family_size, alpha=alpha
    )
    return min(1.0, floor * max(1, family_size))


@dataclass(frozen=True)
class Reachability:
    """Whether `runs_per_arm` runs can give a verdict in a family of `family_size` comparisons.

    `repetitions_needed` is the smallest runs per arm that can (at least MIN_RUNS_PER_ARM), whatever the
    plan has; `message` says it in a sentence for the user (None when reachable and nothing to say).
    `test` names the test whose floor decided.
    """

    runs_per_arm: int
    family_size: int
    method: str
    smallest_adjusted_p: float
    reachable: bool
    repetitions_needed: int
    message: str | None
    test: str = TEST_NAMES["trimmed"]


def reachability(
    runs_per_arm: int,
    family_size: int,
    *,
    paired: bool = False,
    alpha: float = ALPHA,
    test_kind: TestKind = "trimmed",
    baseline_runs: Callable[[int], int] = lambda n: n,
    what: str = "comparison",
    fix: Callable[[int], str] = lambda n: f"--repetitions {n}",
) -> Reachability:
    """Whether `runs_per_arm` runs per arm (the reference `baseline_runs(n)`) can reach p < alpha after the
    correction of a `family_size` family with the test `test_kind`, and the smallest runs per arm that can
    (module docstring). `what` names the comparisons in the message ("pooled-p99 comparison"); `fix(n)` says
    how the user gets n runs per arm (the caller knows whether a flag or a plan entry decides)."""
    method = family_method(family_size)
    name = TEST_NAMES[test_kind]
    if family_size == 0:
        return Reachability(runs_per_arm, 0, method, 0.0, True, MIN_RUNS_PER_ARM, None, name)

    def floor(n: int) -> float:
        return smallest_adjusted_p(
            n, family_size, paired=paired, test_kind=test_kind, baseline_runs=baseline_runs, alpha=alpha
        )

    needed = MIN_RUNS_PER_ARM
    while needed < MAX_SEARCH and floor(needed) >= alpha:
        needed += 1
    p = floor(runs_per_arm)
    reachable = runs_per_arm >= MIN_RUNS_PER_ARM and p < alpha
    message = None
    if not reachable:
        why = (
            f"{runs_per_arm} runs per arm: a verdict needs at least {MIN_RUNS_PER_ARM}"
            if runs_per_arm < MIN_RUNS_PER_ARM
            else f"with {runs_per_arm} runs per arm the smallest p-value the {name} test can give, times the "
            f"{family_size} comparisons of the report, is {p_text(p)}, not below {alpha}"
        )
        where = "" if what == "comparison" else f" for a {what}"
        message = (
            f"no verdict is reachable{where}: {why}; none can be called slowdown or speedup. "
            f"{needed} repetitions per cell would suffice ({fix(needed)}), or compare fewer cells"
        )
    return Reachability(runs_per_arm, family_size, method, p, reachable, needed, message, name)
