"""Permutation p-values where a correction over many comparisons looks (docs/method.md "Test", "Tails").

Why. Holm and Benjamini-Hochberg read a family's p-values at alpha / m: 0.0007 for 70 comparisons. There
the t approximation of Yuen's test is off by a factor that depends on the design (with 33 reference runs
against 11, Welch's degrees of freedom made p < 0.0007 2.4-2.9 times as likely as it should be), and a
pooled tail's bootstrap p cannot go below 2 / (B + 1). Under the null of an A/A comparison, the runs of the
two arms are exchangeable: every way of splitting the pooled runs into arms of the observed sizes is as
likely as the observed one, so the share of splits whose statistic is at least as extreme is an exact
p-value, whatever the runs' distribution (normal, log-normal, skewed, with outliers) and the arms' sizes.
With a studentized statistic (Yuen's t) it also holds asymptotically when the arms' spreads differ (Janssen
1997, "Studentized permutation tests for non-i.i.d. hypotheses"; Chung & Romano 2013).

How. Where the splits are few (at most EXHAUSTIVE_UP_TO, or the draws' limit if larger) all of them are
evaluated: exact. Otherwise splits are drawn from an explicit `random.Random`, and each one-sided p-value is
(1 + x) / (1 + B) for x of B draws at least as far out, valid at any B (Phipson & Smyth 2010, "Permutation
p-values should never be zero"); the two-sided p is twice the smaller one. Draws stop early once both sides
counted EXCEEDANCES draws, with p = 2 x / b after b draws (Besag & Clifford 1991, "Sequential Monte Carlo
p-values", also valid), so a p-value far from the tail costs a few dozen draws and only one near it costs up
to the limit. `draws_for` sets the limit so that the smallest Monte Carlo p is alpha / (5 m): small enough to
pass the correction of a family of m (up to 100 comparisons; a larger sweep's smallest p is 1e-4).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, compress, product

EXCEEDANCES = 20  # Besag & Clifford's h: stop once both sides counted this many draws
FLOOR_MARGIN = 5  # the draws can reach a p of alpha / (FLOOR_MARGIN x family size) ...
MAX_DRAWS = 20_000  # ... up to this many (a quarter of a second for Yuen's t on 44 runs here)
EXHAUSTIVE_UP_TO = 5000  # splits: at most this many (or the draws' limit, if larger) are all evaluated
GATE = 0.1  # a t approximation's p at or above this is kept: no verdict can come from it
T_TRUSTED = 1000  # ... and one below alpha / (T_TRUSTED x family size): no draw could do better
TIE_TOLERANCE = 1e-9  # relative: a split whose statistic equals the observed one counts on both sides


@dataclass(frozen=True)
class PermutationP:
    """A two-sided permutation p-value, twice the smaller of its two one-sided p-values (capped at 1), as
    `scipy.stats.permutation_test` defines it. `draws` splits were evaluated (every one there is when
    `exhaustive`), `extreme` of them at least as far out on the observed split's side (an exhaustive count
    includes the observed split). Two one-sided tails, not |statistic|: with unequal arms a statistic's null
    distribution need not be symmetric (an arm of 7 runs holding none of the slow ones is common, one
    holding all of them rare)."""

    p_value: float
    draws: int
    extreme: int
    exhaustive: bool


def draws_for(family_size: int, alpha: float) -> int:
    """The most Monte Carlo draws for one comparison of a family of `family_size`: its smallest two-sided p,
    2 / (draws + 1), is alpha / (FLOOR_MARGIN x family size), up to MAX_DRAWS (100 comparisons at alpha
    0.05). A sweep of thousands of comparisons (Benjamini-Hochberg's) would otherwise draw a million splits
    for each comparison whose t approximation lands between alpha / (1000 m) and alpha / m: its smallest
    permutation p is then 1e-4, which passes Benjamini-Hochberg's k-th step once k x alpha / m exceeds it
    (with 6,669 comparisons: from the 14th verdict on)."""
    return min(MAX_DRAWS, math.ceil(2 * FLOOR_MARGIN * max(1, family_size) / alpha))


def smallest_p(n_total: int, n_condition: int, family_size: int, alpha: float) -> float:
    """The smallest two-sided p `split_p` can give for these counts in a family of `family_size`: the
    observed split alone on its side, 2 / C(n_total, n_condition) where every split is counted, else
    2 / (draws + 1)."""
    splits = math.comb(n_total, n_condition)
    limit = draws_for(family_size, alpha)
    return min(1.0, 2.0 / splits if splits <= max(limit, EXHAUSTIVE_UP_TO) else 2.0 / (limit + 1))


def band(family_size: int, alpha: float) -> tuple[float, float]:
    """[low, high): where a t approximation's p is replaced by a permutation p. At or above `high` (GATE)
    no correction can bring it under alpha; below `low` it is T_TRUSTED times beyond the family's strictest
    threshold alpha / m, where no draw would reach the observed split and the permutation p would be its
    floor (the t approximation's error there was at most 1.5-fold in 4 million simulated nulls, far from a
    thousand-fold: docs/method.md "Test")."""
    return alpha / (T_TRUSTED * max(1, family_size)), GATE


def _certain_floor(x: int, exhaustive: bool, total: int, limit: int) -> float:
    """The least p the count can still end at once the smaller side has `x` splits: counts only grow, and
    a Monte Carlo count that reaches EXCEEDANCES ends at 2 x / b >= 2 EXCEEDANCES / limit."""
    if exhaustive:
        return 2.0 * x / total
    return min(2.0 * (x + 1) / (limit + 1), 2.0 * EXCEEDANCES / limit)


def _count(
    splits: Iterable,
    statistic: Callable,
    observed: float,
    *,
    exhaustive: bool,
    total: int,
    limit: int = 0,
    give_up_at: float | None = None,
) -> PermutationP:
    """Evaluates `splits` in order, all of them (exhaustive) or until both one-sided counts reach
    EXCEEDANCES, counting the statistics at or above and at or below `observed`. With `give_up_at`, stops
    as soon as the p-value is certain to be at least that (its p is then that bound, not the p-value)."""
    slack = abs(observed) * TIE_TOLERANCE
    high, low = observed - slack, observed + slack
    up = down = b = 0
    for split in splits:
        b += 1
        s = statistic(split)
        up += s >= high
        down += s <= low
        if not exhaustive and min(up, down) >= EXCEEDANCES:
            break
        if give_up_at is not None:
            floor = _certain_floor(min(up, down), exhaustive, total, limit)
            if floor >= give_up_at:
                return PermutationP(floor, b, min(up, down), exhaustive)
    x = min(up, down)
    if exhaustive:
        p = 2.0 * x / total
    elif x >= EXCEEDANCES:
        p = 2.0 * x / b  # Besag & Clifford's sequential p of the side that reached h last
    else:
        p = 2.0 * (x + 1) / (b + 1)
    return PermutationP(min(1.0, p), b, x, exhaustive)


def split_p(
    statistic: Callable[[Sequence[int]], float],
    n_total: int,
    n_condition: int,
    observed: float,
    *,
    rng: random.Random,
    limit: int,
    give_up_at: float | None = None,
    masks: bool = False,
    drawn_statistics: Callable[[int, random.Random, int], Iterable[float]] | None = None,
) -> PermutationP:
    """Two-sided p of `observed` among `statistic(indices)` over the splits of `n_total` pooled units into a
    condition arm of `n_condition` (its indices, ascending) and a baseline arm of the rest. `give_up_at`:
    the caller asks only whether p is below it (`_count`). `masks`: the statistic takes the condition arm
    as a mask instead (`arm_mask`), which `compress` reads at C speed. `drawn_statistics(n_condition, rng,
    limit)`: the statistics of the splits `drawn_splits` would draw, in their order, by a faster loop of
    the statistic's own (`trimmed.SplitYuen.drawn_statistics`)."""
    total = math.comb(n_total, n_condition)
    if total <= max(limit, EXHAUSTIVE_UP_TO):
        splits: Iterable = combinations(range(n_total), n_condition)
        if masks:
            splits = (arm_mask(n_total, split) for split in splits)
        return _count(splits, statistic, observed, exhaustive=True, total=total, give_up_at=give_up_at)
    if drawn_statistics is not None:  # each drawn t counted as it is
        statistics = drawn_statistics(n_condition, rng, limit)
        return _count(
            statistics, float, observed, exhaustive=False, total=total, limit=limit, give_up_at=give_up_at
        )
    drawn = _drawn_masks if masks else drawn_splits
    return _count(
        drawn(n_total, n_condition, rng, limit),
        statistic,
        observed,
        exhaustive=False,
        total=total,
        limit=limit,
        give_up_at=give_up_at,
    )


def drawn_splits(n_total: int, n_condition: int, rng: random.Random, limit: int) -> Iterator[list[int]]:
    """`limit` uniformly drawn condition arms (indices ascending): the smaller side's indices picked one
    uniform draw at a time, repeats rejected (every subset of that size equally likely), the condition arm
    its complement when it is the larger side. A fifth of `random.sample`'s cost, which was half of a
    permutation p's."""
    rand = rng.random
    small = min(n_condition, n_total - n_condition)
    for _ in range(limit):
        picked: set[int] = set()
        while len(picked) < small:
            picked.add(int(rand() * n_total))
        if small == n_condition:
            yield sorted(picked)
        else:
            yield [i for i in range(n_total) if i not in picked]


def near_even(n_total: int, n_condition: int) -> bool:
    """Whether the smaller arm holds at least a third of the runs: where `_drawn_masks` draws by coins, and a
    split's statistic is best read from its mask (`compare._split_statistic`)."""
    return 3 * min(n_condition, n_total - n_condition) >= n_total


_COIN_BYTES = tuple(bytes(b >> i & 1 for i in range(8)) for b in range(256))  # a byte's bits, low bit first


def _drawn_masks(n_total: int, n_condition: int, rng: random.Random, limit: int) -> Iterator[bytearray]:
    """`limit` uniformly drawn condition arms as masks (`arm_mask`). Where the arms are near even, every
    index is put in the arm by a fair coin (one `getrandbits` for all of them), then members are taken out,
    or others put in, one uniformly chosen index at a time until the arm holds `n_condition`. Each step
    treats every index alike, so the arm's law is the same under any relabelling of the indices: every arm
    of that size is equally likely. A tenth of `drawn_splits`' cost at 294 runs against 294 (its set and
    sort were half of a split's), and the statistic then reads the arms with `compress`. Uneven
    arms (the smaller under a third) are drawn by `drawn_splits`, whose cost is the smaller arm's."""
    if not near_even(n_total, n_condition):
        for split in drawn_splits(n_total, n_condition, rng, limit):
            yield arm_mask(n_total, split)
        return
    rand, coins, table = rng.random, rng.getrandbits, _COIN_BYTES
    n_bytes = (n_total + 7) // 8
    for _ in range(limit):
        bits = coins(n_total)
        mask = bytearray(b"".join(map(table.__getitem__, bits.to_bytes(n_bytes, "little"))))
        members = bits.bit_count()
        while members != n_condition:
            i = int(rand() * n_total)
            if mask[i] == (members > n_condition):  # a member to take out, or an index to put in
                mask[i] ^= 1
                members += 1 if mask[i] else -1
        yield mask


def sign_flip_p(
    statistic: Callable[[Sequence[float]], float],
    values: Sequence[float],
    observed: float,
    *,
    rng: random.Random,
    limit: int,
) -> PermutationP:
    """Two-sided p of `observed` among `statistic` of `values` with their signs flipped at random: the
    paired design's null (per-block log ratios symmetric about 0, the blocks' two runs exchangeable)."""
    n = len(values)
    if 2**n <= max(limit, EXHAUSTIVE_UP_TO):
        signs = product((1.0, -1.0), repeat=n)
        flips = ([v * s for v, s in zip(values, flip, strict=True)] for flip in signs)
        return _count(flips, statistic, observed, exhaustive=True, total=2**n)

    def drawn():
        for _ in range(limit):
            bits = rng.getrandbits(n)
            yield [-v if bits >> i & 1 else v for i, v in enumerate(values)]

    return _count(drawn(), statistic, observed, exhaustive=False, total=2**n)


def two_arms(pooled: Sequence[float], condition: Sequence[int]) -> tuple[list[float], list[float]]:
    """(baseline, condition) values of one split of `pooled`, each in `pooled`'s order."""
    return list(compress(pooled, others_mask(len(pooled), condition))), [pooled[i] for i in condition]


def others_mask(n: int, indices: Iterable[int]) -> bytearray:
    """1 at every index below n that is not in `indices`, 0 at those: the other arm, for `compress`."""
    keep = bytearray(b"\x01") * n
    for i in indices:
        keep[i] = 0
    return keep


_OTHER_ARM = bytes.maketrans(b"\x00\x01", b"\x01\x00")


def arm_mask(n: int, indices: Iterable[int]) -> bytearray:
    """1 at `indices`, 0 at every other index below n: a split's condition arm, for `compress`. A mask may
    run past n (a drawn one is whole bytes long): `compress` stops at the pooled values' end."""
    mask = bytearray(n)
    for i in indices:
        mask[i] = 1
    return mask


def mask_arms(pooled: Sequence[float], mask: bytes | bytearray) -> tuple[list[float], list[float]]:
    """(baseline, condition) values of the split whose condition arm is `mask`, each in `pooled`'s order:
    `two_arms` of the same split."""
    return list(compress(pooled, mask.translate(_OTHER_ARM))), list(compress(pooled, mask))
