"""The practical threshold delta of a board, from A/A comparisons (METHOD.md "Comparing ...").

An A/A comparison runs the baseline against itself with the same design; the spread of its ratios is the
noise floor of the method on that board (faster-cpython/ideas #480; criterion.rs's noise threshold, measured
instead of assumed).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from boardlab.stats._special import percentile_sorted
from boardlab.stats._validate import as_values

DELTA_FLOOR = 0.02
MIN_SPLIT_RUNS = 4
MIN_AA_COMPARISONS = 10  # research/anchors-methodology.md section 9.4: at least 10 A/A repeats


@dataclass(frozen=True)
class AADelta:
    """The practical threshold `delta` (a fraction: 0.02 = 2%) and what it came from.

    `p95_abs_deviation` is the 95th percentile of |R_AA - 1| over `n_ratios` A/A ratios (linear
    interpolation); `delta` = max(`floor`, that). `warnings` say when the estimate is rough.
    """

    delta: float
    p95_abs_deviation: float
    floor: float
    n_ratios: int
    warnings: tuple[str, ...]


def aa_delta(aa_ratios: Iterable[float], *, floor: float = DELTA_FLOOR) -> AADelta:
    """delta = max(2%, 95th percentile of |R_AA - 1|) over A/A ratios R_AA = median(A2) / median(A1).

    Method: METHOD.md; research/anchors-methodology.md section 9.4 (criterion.rs noise threshold, set per board
    from an A/A experiment). Percentile by linear interpolation (Hyndman & Fan 1996 def. 7).
    """
    ratios = as_values(aa_ratios, what="aa_ratios", positive=True)
    if not ratios:
        raise ValueError("aa_delta needs at least one A/A ratio")
    p95 = percentile_sorted(sorted(abs(r - 1.0) for r in ratios), 0.95)
    warnings = []
    if len(ratios) < MIN_AA_COMPARISONS:
        warnings.append(
            f"delta comes from {len(ratios)} A/A comparisons; its 95th percentile is rough below "
            f"{MIN_AA_COMPARISONS}: repeat the A/A comparison at least {MIN_AA_COMPARISONS} times"
        )
    return AADelta(max(floor, p95), p95, floor, len(ratios), tuple(warnings))


def aa_ratios_from_runs(values: Sequence[float], *, splits: int = 200, seed: int = 0) -> tuple[float, ...]:
    """A/A ratios from one arm's runs when no separate A/A arm exists: random half-splits of the runs.

    Each split shuffles the runs with `random.Random(seed)` and returns median(second half) /
    median(first half), halves of n // 2 runs (one run left out when n is odd). Caveats, all making delta
    *larger* (conservative) or blind to some noise:
    - each half has n/2 runs, so the spread is that of a comparison at n/2 runs per arm (about sqrt(2) times
      wider than at n per arm);
    - the splits reuse the same runs, so they are not independent comparisons;
    - a separate A/A arm, interleaved like the real arms, also captures drift between arms; splits of one arm
      cannot. Prefer a real A/A experiment for a board profile.
    Needs at least 4 runs (2 per half). Below 10 runs (5 per half, the minimum for a verdict) the halves are so
    small that delta comes out large: conservative, few slowdowns will clear it.
    """
    xs = as_values(values, what="values", positive=True)
    n = len(xs)
    if n < MIN_SPLIT_RUNS:
        raise ValueError(f"half-splits need at least {MIN_SPLIT_RUNS} runs (2 per half), have {n}")
    if splits < 1:
        raise ValueError(f"splits must be at least 1, got {splits}")
    rng = random.Random(seed)
    half = n // 2
    out = []
    for _ in range(splits):
        shuffled = xs[:]
        rng.shuffle(shuffled)
        out.append(statistics.median(shuffled[half : 2 * half]) / statistics.median(shuffled[:half]))
    return tuple(out)
