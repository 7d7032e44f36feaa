"""Tail metrics (p99 and above) of a condition against its baseline (docs/method.md "Tails").

A run's own p99 means something only with at least 100 samples in that run (with 90 frames, a run's "p99"
is its slowest frame). So:
- every run of both arms has >= TAIL_MIN_SAMPLES samples: the per-run p99 is a per-run summary like the
  median, and `compare.compare` treats it like any other per-run value;
- otherwise: the p99 of all runs' samples pooled per arm. Samples within a run are not independent
  (Kalibera & Jones 2013: resample the top-level unit), so whole runs are the unit of both the test and the
  interval. The test is a permutation test over the splits of the two arms' runs (`stats.permutation`): exact
  when the runs are exchangeable, whatever the samples' distribution or autocorrelation, with a smallest
  p-value fixed by the run counts (2 / C(2n, n) for n runs per arm) that `stats.reach` checks before a plan
  runs. The interval is a cluster bootstrap's (resample whole runs with replacement, pool their samples,
  take the quantile), expanded for the few runs it rests on (`_expansion`). A bootstrap p-value rejected
  8.8% of true nulls at 5% and could not go below 2 / (B + 1); the permutation p rejects at most the level.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from itertools import chain, compress, islice

from boardlab.stats._special import normal_cdf, percentile_sorted, student_t_ppf
from boardlab.stats.bootstrap import percentile_interval
from boardlab.stats.compare import Comparison, compare, unadjusted
from boardlab.stats.hypothesis import RankTest
from boardlab.stats.permutation import draws_for, split_p
from boardlab.stats.summary import Interval
from boardlab.stats.verdict import ALPHA, RunEnvironment

TAIL_MIN_SAMPLES = 100  # docs/method.md: a per-run p99 needs at least 100 samples in that run
TAIL_RESAMPLES = 2000


def pooled_quantile(runs: Sequence[Sequence[float]], q: float) -> float:
    """The q-quantile (0 < q < 1) of every run's samples pooled (linear interpolation, Hyndman & Fan
    def. 7)."""
    pooled = sorted(v for run in runs for v in run)
    return percentile_sorted(pooled, q)


class _Resampler:
    """The q-quantile of cluster-bootstrap resamples of one arm: len(runs) whole runs drawn with replacement
    and pooled. Only the pool's top values decide a high quantile, so each run keeps its largest samples, as
    many as any resample's quantile can reach down to, sorted once; a resample merges those instead of
    sorting every sample it holds (the same value as `percentile_sorted` of the whole pool)."""

    def __init__(self, runs: list[list[float]], q: float) -> None:
        n = len(runs)
        self.sizes = [len(r) for r in runs]
        most = n * max(self.sizes)  # the largest pool a resample can draw
        reach = most - math.floor((most - 1) * q) + 1
        self.tops = [sorted(r, reverse=True)[:reach] for r in runs]
        self.q = q

    def draw(self, rng: random.Random) -> float:
        picks = _randrange_each(rng, len(self.tops))
        size = sum(map(self.sizes.__getitem__, picks))
        h = (size - 1) * self.q
        lo = math.floor(h)
        # the picked runs' tops, each sorted already: one C sort of their runs, not a Python heap per value
        top = list(chain.from_iterable(map(self.tops.__getitem__, picks)))
        top.sort(reverse=True)
        low = top[size - 1 - lo]  # the lo-th smallest is the (size - 1 - lo)-th largest
        return low + (h - lo) * (top[size - 2 - lo] - low) if h > lo else low


def _randrange_each(rng: random.Random, n: int) -> list[int]:
    """`[rng.randrange(n) for _ in range(n)]`, the same numbers from the same state (CPython's randrange of
    one positive bound draws `n.bit_length()` bits until they fall below n), without randrange's argument
    handling around each: it was a third of a tail's bootstrap."""
    bits, k = rng.getrandbits, n.bit_length()
    picks = []
    for _ in range(n):
        r = bits(k)
        while r >= n:
            r = bits(k)
        picks.append(r)
    return picks


def per_run_enough(runs: Sequence[Sequence[float]], min_samples: int = TAIL_MIN_SAMPLES) -> bool:
    return bool(runs) and all(len(r) >= min_samples for r in runs)


def compare_tail(
    baseline_runs: Sequence[Sequence[float]],
    condition_runs: Sequence[Sequence[float]],
    *,
    q: float = 0.99,
    higher_is_better: bool = False,
    delta: float,
    seed: int,
    resamples: int = TAIL_RESAMPLES,
    alpha: float = ALPHA,
    baseline_env: Sequence[RunEnvironment] | None = None,
    condition_env: Sequence[RunEnvironment] | None = None,
    min_samples: int = TAIL_MIN_SAMPLES,
    family_size: int = 1,
) -> Comparison:
    """The q-quantile of a condition against its baseline, by the rule of this module's docstring.

    Each element of `baseline_runs` / `condition_runs` is one run's samples. The result is a `Comparison`
    like `compare`'s (same verdict rule: `decision_ci` is the 90% interval), `statistic` saying which rule
    applied. Deterministic for a given `seed`.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    base = [list(map(float, r)) for r in baseline_runs if len(r)]
    cond = [list(map(float, r)) for r in condition_runs if len(r)]
    if not base or not cond:
        raise ValueError(f"each arm needs a run with samples (baseline {len(base)}, condition {len(cond)})")
    level = f"p{q * 100:g}"
    if per_run_enough(base, min_samples) and per_run_enough(cond, min_samples):
        per_base = [percentile_sorted(sorted(r), q) for r in base]
        per_cond = [percentile_sorted(sorted(r), q) for r in cond]
        c = compare(
            per_base,
            per_cond,
            higher_is_better=higher_is_better,
            delta=delta,
            seed=seed,
            alpha=alpha,
            baseline_env=baseline_env,
            condition_env=condition_env,
            family_size=family_size,
        )
        return _with_statistic(c, f"per-run {level} (every run has >= {min_samples} samples)")

    b_med, c_med = pooled_quantile(base, q), pooled_quantile(cond, q)
    if b_med <= 0 or c_med <= 0:
        raise ValueError(f"the pooled {level} must be positive (baseline {b_med}, condition {c_med})")
    ratio = c_med / b_med
    nb, nc = len(base), len(cond)
    draws = _bootstrap_ratios(base, cond, q, resamples, random.Random(seed))
    cost = [1.0 / r for r in reversed(draws)] if higher_is_better else draws
    expand = _expansion(nb, nc)
    method = (
        f"cluster bootstrap, expanded percentile ({resamples} resamples of whole runs per arm, seed {seed}; "
        f"t with {min(nb, nc) - 1} df, x sqrt(n / (n - 1)))"
    )

    def interval(values: list[float], level: float) -> Interval:
        return Interval(*percentile_interval(values, expand(level), presorted=True), level, method)

    perm = _permutation(base, cond, q, family_size, alpha, seed)
    test = RankTest("pooled-quantile-permutation", math.log(ratio), perm.p_value, "permutation", nb + nc)
    small = min(min(len(r) for r in base), min(len(r) for r in cond))
    return unadjusted(
        n_baseline=nb,
        n_condition=nc,
        baseline_median=b_med,
        condition_median=c_med,
        higher_is_better=higher_is_better,
        ratio=ratio,
        ratio_ci=interval(draws, 0.95),
        cost_ratio=1.0 / ratio if higher_is_better else ratio,
        cost_ratio_ci=interval(cost, 0.95),
        decision_ci=interval(cost, 1 - 2 * alpha),
        test=test,
        n_blocks=None,
        delta=delta,
        alpha=alpha,
        envs=(baseline_env, condition_env),
        seed=seed,
        resamples=resamples,
        warnings=(),
        statistic=f"pooled {level} of all runs' samples (a run has only {small} samples, < {min_samples})",
        permutations=perm.draws,
    )


def _bootstrap_ratios(
    base: list[list[float]], cond: list[list[float]], q: float, resamples: int, rng: random.Random
) -> list[float]:
    """Sorted cluster-bootstrap draws of the pooled-quantile ratio (condition / baseline)."""
    draws: list[float] = []
    b, c = _Resampler(base, q), _Resampler(cond, q)
    for _ in range(resamples):
        bq = b.draw(rng)
        cq = c.draw(rng)
        draws.append(cq / bq if bq > 0 else math.inf)
    draws.sort()
    return draws


class _PooledQuantiles:
    """The q-quantile of the pooled samples of any set of runs, without pooling and sorting them again: every
    sample is sorted once, descending, with its run; an arm's quantile needs only its top values, read off
    that list through a mask of the arm's runs."""

    def __init__(self, runs: list[list[float]], q: float) -> None:
        pairs = sorted(((v, i) for i, r in enumerate(runs) for v in r), reverse=True)
        self.values = [v for v, _ in pairs]
        self.labels = [i for _, i in pairs]
        self.sizes = [len(r) for r in runs]
        self.q = q

    def of(self, mask: bytearray) -> float:
        """The quantile (Hyndman & Fan def. 7, as `percentile_sorted`) of the runs whose mask byte is 1."""
        size = sum(compress(self.sizes, mask))
        h = (size - 1) * self.q
        lo = math.floor(h)
        top = list(islice(compress(self.values, map(mask.__getitem__, self.labels)), size - lo))
        low = top[size - 1 - lo]  # the lo-th smallest is the (size - 1 - lo)-th largest
        return low + (h - lo) * (top[size - 2 - lo] - low) if h > lo else low


def _permutation(
    base: list[list[float]], cond: list[list[float]], q: float, family_size: int, alpha: float, seed: int
):
    """The permutation p of the pooled quantiles' log ratio over the splits of whole runs
    (`stats.permutation`): exact when the two arms' runs are exchangeable, whatever their samples'
    distribution or dependence."""
    runs = base + cond
    quantiles = _PooledQuantiles(runs, q)

    def statistic(split: Sequence[int]) -> float:
        mask = bytearray(len(runs))
        for i in split:
            mask[i] = 1
        qc = quantiles.of(mask)
        qb = quantiles.of(mask.translate(_FLIP))
        return math.log(qc / qb) if qc > 0 and qb > 0 else math.inf

    observed = statistic(range(len(base), len(runs)))
    limit = draws_for(family_size, alpha)
    return split_p(statistic, len(runs), len(cond), observed, rng=random.Random(seed), limit=limit)


_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")


def _expansion(nb: int, nc: int):
    """The nominal level -> the percentile level of the expanded percentile interval (Hesterberg 2015,
    "What teachers should know about the bootstrap", 4.4): the normal quantile at the new level equals
    Student's t quantile at the nominal one, times sqrt(n / (n - 1)), with n the smaller arm's runs and
    n - 1 degrees of freedom. A percentile interval over few clusters is too narrow (it behaves as if the
    runs' spread were known); with t on nb + nc - 2 df and no factor the 90% interval covered 84.6% of true
    nulls (5 runs of 90 samples), with these 90-97%, autocorrelated samples within a run included
    (docs/method.md "Tails"). The test is the permutation test, so this width does not move the p-value."""
    n = max(2, min(nb, nc))
    factor = math.sqrt(n / (n - 1))

    def level(confidence: float) -> float:
        z = student_t_ppf(0.5 + confidence / 2.0, n - 1) * factor
        return min(1.0 - 1e-12, 2.0 * normal_cdf(z) - 1.0)

    return level


def _with_statistic(c: Comparison, statistic: str) -> Comparison:
    import dataclasses

    return dataclasses.replace(c, statistic=statistic)


def median_samples(runs: Sequence[Sequence[float]]) -> float:
    return statistics.median(len(r) for r in runs) if runs else 0.0
