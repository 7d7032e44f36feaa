"""Cells that misbehave, named in the verdict row (docs/method.md "Flags").

A verdict assumes each arm's runs come from one steady state. Three ways they may not, each a flag with its
reason on `Verdict.flags` (the verdict's kind is left alone: the flag says how far to trust it):
- **bimodal**: the runs fall into two groups (two frequency states, two cache placements). Statistic: the
  best split of the sorted log values into a low and a high group (each at least 20% of the runs and at
  least 2), scored by the share of the variance it explains, R^2 = 1 - within / total (Hartigan's 2-means
  criterion; Hartigan & Hartigan 1985 discuss the unimodality question). It is flagged above the 0.5% point
  of the same statistic on normally distributed runs of the same count (of 200 runs above that count: a
  stricter threshold), found by a seeded simulation (`bimodal_threshold`), so a steady cell is flagged at
  most 1 time in 200 per arm;
- **drift**: the values trend with run order within the campaign (`drift.drift_check`: Spearman, p < 0.01);
- **environment**: the arms ran at a different CPU frequency or temperature, or only one throttled
  (`verdict.check_confounders`, whose reasons are quoted).
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, repeat
from operator import add, mul, sub, truediv

from boardlab.stats._bimodal_thresholds import BIMODAL_THRESHOLDS
from boardlab.stats._memo import digest, remembered
from boardlab.stats._special import exp_or_inf
from boardlab.stats.drift import drift_check
from boardlab.stats.verdict import Confounding

BIMODAL_FALSE_FLAG = 0.005
BIMODAL_MIN_RUNS = 8  # below this, two groups of >= 2 runs are too easy to find by chance
_SIMULATIONS = 4000
# The threshold falls with the run count toward 2/pi (the best split of a normal sample at its median),
# slowly: 0.70 at 200 runs, 0.67 at 1000. Simulating n runs costs 4000 n draws (seconds at thousands of runs,
# for each distinct count in a report), so above this count the threshold simulated at it is used: stricter
# than the exact one, so a steady cell is still flagged at most 1 time in 200. Up to it, the simulation's
# output is stored (_bimodal_thresholds.py: 93 s of simulating, half a second a run count).
BIMODAL_SIMULATED_RUNS_MAX = 200
# simulated_threshold(BIMODAL_SIMULATED_RUNS_MAX), the threshold of every cell of 200 runs or more
BIMODAL_THRESHOLD_AT_MAX = BIMODAL_THRESHOLDS[-1]


@dataclass(frozen=True)
class Bimodality:
    """The best two-group split of a cell's runs: `r2` the share of the log variance it explains,
    `threshold` the flagging point for this run count, `low_share` the share of runs in the low group and
    `gap_ratio` the high group's centre over the low group's (geometric means)."""

    r2: float
    threshold: float
    low_share: float
    gap_ratio: float

    @property
    def flagged(self) -> bool:
        return self.r2 > self.threshold


def _best_split(logs: Sequence[float]) -> tuple[float, int]:
    """(R^2, size of the low group) of the best split of sorted `logs` (prefix sums: linear time).

    A split after i values explains between / total of the variance, with between =
    i (low mean - mean)^2 + (n - i) (high mean - mean)^2; every term is computed by C-level iteration
    (`map`) in the order and with the arithmetic of a plain loop, so the floats are a loop's."""
    n = len(logs)
    total_mean = sum(logs) / n
    sst = sum(map(pow, map(sub, logs, repeat(total_mean)), repeat(2)))
    if sst <= 0.0:
        return 0.0, 0
    smallest = max(2, math.ceil(0.2 * n))
    sums = array("d", accumulate(logs))  # columns of doubles: 8 bytes a run, not a list's 33
    prefix = sums[-1]
    sizes = range(smallest, n - smallest + 1)  # i, the low group's size
    rest = range(n - smallest, smallest - 1, -1)  # n - i
    low_sums = sums[smallest - 1 : n - smallest]  # sums[i - 1]
    low_means = map(truediv, low_sums, sizes)
    high_means = map(truediv, map(sub, repeat(prefix), low_sums), rest)
    low_terms = map(mul, sizes, map(pow, map(sub, low_means, repeat(total_mean)), repeat(2)))
    high_terms = map(mul, rest, map(pow, map(sub, high_means, repeat(total_mean)), repeat(2)))
    shares = array("d", map(truediv, map(add, low_terms, high_terms), repeat(sst)))
    best = max(shares, default=0.0)
    if not best > 0.0:
        return 0.0, 0
    return best, smallest + shares.index(best)  # the first split reaching the best share, as a loop's ">"


@lru_cache(maxsize=256)
def bimodal_threshold(n: int) -> float:
    """The (1 - BIMODAL_FALSE_FLAG) quantile of the best split's R^2 over normal samples of n (seeded), n
    capped at BIMODAL_SIMULATED_RUNS_MAX; from the simulation's stored table (_bimodal_thresholds.py)."""
    if n >= BIMODAL_MIN_RUNS:
        return BIMODAL_THRESHOLDS[min(n, BIMODAL_SIMULATED_RUNS_MAX) - BIMODAL_MIN_RUNS]
    return simulated_threshold(n)


def simulated_threshold(n: int) -> float:
    """The quantile itself, simulated at n runs (seeded by n)."""
    rng = random.Random(f"bimodal:{n}")
    scores = sorted(
        _best_split(sorted(rng.gauss(0.0, 1.0) for _ in range(n)))[0] for _ in range(_SIMULATIONS)
    )
    return scores[min(len(scores) - 1, math.ceil((1.0 - BIMODAL_FALSE_FLAG) * len(scores)))]


def bimodality(values: Sequence[float]) -> Bimodality | None:
    """The best split of positive run values (module docstring); None below BIMODAL_MIN_RUNS runs.

    A pure function of the values, remembered (`_memo`): a comparison asks it of each arm to choose its
    test and again for its flags, and a baseline shared by k comparisons is asked 2k times."""
    return remembered(digest("bimodality", values), lambda: _bimodality(values))


def _bimodality(values: Sequence[float]) -> Bimodality | None:
    if len(values) < BIMODAL_MIN_RUNS or min(values) <= 0:
        return None
    logs = array("d", sorted(map(math.log, values)))  # 8 bytes a run, the sort's list let go at once
    r2, low = _best_split(logs)
    if low == 0:
        return Bimodality(0.0, bimodal_threshold(len(logs)), 0.0, 1.0)
    gap = exp_or_inf(sum(logs[low:]) / (len(logs) - low) - sum(logs[:low]) / low)
    return Bimodality(r2, bimodal_threshold(len(logs)), low / len(logs), gap)


def cell_flags(
    arm: str, values: Sequence[float], order: Sequence[float] | None = None, *, higher_is_better: bool = False
) -> tuple[str, ...]:
    """The flags of one arm's runs (`arm` names it in the text: "baseline", "condition"), values in run
    order unless `order` gives each run's position; `higher_is_better` says whether the low group is the
    slower (a rate) or the faster (a time)."""
    out = []
    b = bimodality(values)
    if b is not None and b.flagged:
        pace = "slower" if higher_is_better else "faster"
        out.append(
            f"bimodal {arm}: its runs fall into two groups ({b.low_share:.0%} of them {pace} than the rest, "
            f"which are {b.gap_ratio - 1:.1%} {'higher' if higher_is_better else 'longer'}; split R^2 "
            f"{b.r2:.2f} > {b.threshold:.2f}): two states of the board, e.g. frequency or cache placement; "
            "fix the frequency and pin the worker, then re-run"
        )
    if len(values) >= 3:
        d = drift_check(values, order)
        if d is not None and d.flagged:
            out.append(f"drift in the {arm}: {d.message}")
    return tuple(out)


def comparison_flags(
    baseline: Sequence[float],
    condition: Sequence[float],
    *,
    baseline_order: Sequence[float] | None = None,
    condition_order: Sequence[float] | None = None,
    confounding: Confounding | None = None,
    higher_is_better: bool = False,
) -> tuple[str, ...]:
    """Every flag of a comparison: each arm's (`cell_flags`) and the arms' environment (`confounding`)."""
    hib = higher_is_better
    flags = cell_flags("baseline", baseline, baseline_order, higher_is_better=hib)
    flags += cell_flags("condition", condition, condition_order, higher_is_better=hib)
    if confounding is not None and confounding.confounded:
        flags += tuple(f"different environment than the reference: {r}" for r in confounding.reasons)
    return flags
