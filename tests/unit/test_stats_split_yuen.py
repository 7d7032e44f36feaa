"""Yuen's t of a split summed from prefix sums (`SplitYuen`), as the permutation test draws it where an arm
is large: the same statistic as `yuen_statistic` of the two arms, to better than its own rounding, and the
same permutation p."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from boardlab.stats.compare import yuen_split_p
from boardlab.stats.permutation import draws_for, split_p, two_arms
from boardlab.stats.trimmed import TRIM, SplitYuen, _rank_position, yuen_statistic


def _exact_t(base: list[float], cond: list[float]) -> float:
    """Yuen's t in exact rational arithmetic (the floats as they are), rounded once at the end."""

    def parts(values):
        xs = sorted(map(Fraction, values))
        n = len(xs)
        g = math.floor(TRIM * n)
        kept = xs[g : n - g]
        wins = [xs[g]] * g + kept + [xs[n - g - 1]] * g
        mean_w = sum(wins) / n
        return sum(kept) / len(kept), sum((x - mean_w) ** 2 for x in wins) / (n - 1), len(kept)

    (mb, vb, hb), (mc, vc, hc) = parts(base), parts(cond)
    nb, nc = len(base), len(cond)
    se2 = (nb - 1) * vb / (hb * (hb - 1)) + (nc - 1) * vc / (hc * (hc - 1))
    return float(mc - mb) / math.sqrt(float(se2))


def test_rank_position_skips_the_other_arm():
    assert _rank_position([], 3) == 3
    assert _rank_position([0], 0) == 1
    assert _rank_position([1, 2], 1) == 3  # the arm is 0, 3, 4, ...
    assert _rank_position([5, 9], 4) == 4  # before any skipped index


@pytest.mark.parametrize("seed", range(12))
def test_a_split_s_t_is_yuen_s_t_in_exact_arithmetic(seed):
    rng = random.Random(seed)
    n = rng.choice([1000, 1100])
    mu, sd = rng.choice([(0.0, 0.3), (13.8, 0.02), (-5.0, 1e-4)])  # log ns, down to a 0.01% spread
    # one value in ten 1.5 times out: a far tail whose rounding must not reach the trimmed sums
    pooled = sorted(rng.gauss(mu, sd) * (1.5 if rng.random() < 0.1 else 1.0) for _ in range(n))
    fast = SplitYuen(pooled)
    for n_condition in (3, 40, n // 2, n - 40):  # the condition arm small, half, large
        condition = sorted(rng.sample(range(n), n_condition))
        arms = two_arms(pooled, condition)
        exact = _exact_t(*arms)
        scale = max(abs(exact), 1e-3)
        assert abs(fast.statistic(condition) - exact) <= 1e-12 * scale
        # the value-by-value sum is the less exact of the two (1e-8 with the 0.01% spread)
        assert abs(yuen_statistic(*arms) - exact) <= 1e-7 * scale


def test_the_permutation_p_with_a_large_arm_is_the_one_of_the_value_by_value_statistic():
    rng = random.Random(3)
    base = [rng.gauss(13.8, 0.02) for _ in range(1200)]
    cond = [rng.gauss(13.8 + 0.009, 0.02) for _ in range(30)]
    got = yuen_split_p(base, cond, 34, 0.05, seed=7)
    pooled = sorted(base + cond)
    rng_draws = random.Random(7)
    expected = split_p(
        lambda split: yuen_statistic(*two_arms(pooled, split)),
        len(pooled),
        len(cond),
        yuen_statistic(sorted(base), sorted(cond)),
        rng=rng_draws,
        limit=draws_for(34, 0.05),
    )
    assert got == expected
    assert 0 < got.p_value < 0.5 and got.draws >= 40  # a p the draws had to find, not the first few
