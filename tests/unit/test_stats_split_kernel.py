"""The C kernel of drawn permutation splits (`stats/_splits.c`): the same splits as `permutation.drawn_splits`
and `_drawn_masks` draw from the same generator, and the same Yuen's t of each as `SplitYuen.statistic`
(`SplitYuen.drawn_statistics`) or `yuen_statistic` of the two arms (`trimmed.drawn_arm_statistics`), to the
last bit, so every permutation p-value is the Python path's."""

from __future__ import annotations

import importlib.util
import math
import random
import sys

import pytest

from boardlab.stats.compare import yuen_split_p
from boardlab.stats.permutation import _drawn_masks, drawn_splits, mask_arms, two_arms
from boardlab.stats.trimmed import SplitYuen, drawn_arm_statistics, yuen_statistic

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("boardlab.stats._splits") is None,
    reason="boardlab.stats._splits is not built in this install (make install builds it)",
)


def _pooled(rng: random.Random, n: int, shape: str) -> list[float]:
    if shape == "normal":
        xs = [rng.gauss(0.0, 0.05) for _ in range(n)]
    elif shape == "outliers":  # a few runs 1e4 times the spread away: the far tail's rounding
        xs = [rng.gauss(0.0, 0.05) if rng.random() > 0.01 else rng.gauss(500.0, 1.0) for _ in range(n)]
    else:  # ties: values on a coarse grid, as a timer's resolution makes them
        xs = [round(rng.gauss(0.0, 0.05), 2) for _ in range(n)]
    return sorted(math.log1p(abs(x)) * (1 if x >= 0 else -1) for x in xs)


DESIGNS = [(2342, 294), (2342, 2048), (1040, 40), (1040, 1000), (3001, 2), (3001, 2999), (1500, 700)]


@pytest.mark.parametrize("shape", ["normal", "outliers", "ties"])
@pytest.mark.parametrize(("n_total", "n_condition"), DESIGNS)
def test_the_kernel_draws_the_python_splits_and_gives_their_t_to_the_last_bit(n_total, n_condition, shape):
    rng = random.Random(n_total * 7 + n_condition)
    split = SplitYuen(_pooled(rng, n_total, shape))
    draws = 300  # past the kernel's first batches: the generator's state carries from batch to batch
    python = [split.statistic(s).hex() for s in drawn_splits(n_total, n_condition, random.Random(5), draws)]
    kernel = [t.hex() for t in split.drawn_statistics(n_condition, random.Random(5), draws)]
    assert kernel == python


def test_the_kernel_is_what_the_drawn_statistics_use():
    """Not a silent fallback: in this install the statistics come from the kernel (the Python path is
    disabled here, and the same t still come)."""
    rng = random.Random(3)
    split = SplitYuen(_pooled(rng, 2342, "normal"))
    expected = [t.hex() for t in split.drawn_statistics(294, random.Random(9), 50)]
    split.statistic = None  # type: ignore[method-assign]  # any call to the Python path would fail
    assert [t.hex() for t in split.drawn_statistics(294, random.Random(9), 50)] == expected


# a second apiece: one in the quick tier (`make test-unit`), the rest in the main one
def _seeds(n: int) -> list:
    return [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, n))]


@pytest.mark.parametrize("seed", _seeds(6))
def test_a_step_s_permutation_p_is_the_python_path_s(seed, monkeypatch):
    """294 new runs against 2,048 of the predecessor, with a shift that lands the t approximation's p in
    the band where the permutation p replaces it: the p, its draws and its count, with and without the
    kernel."""
    rng = random.Random(seed)
    base = [rng.gauss(0.0, 0.05) for _ in range(2048)]
    cond = [rng.gauss(0.012 + 0.002 * seed, 0.05) for _ in range(294)]
    with_kernel = yuen_split_p(base, cond, 34, 0.05, seed)
    monkeypatch.setitem(sys.modules, "boardlab.stats._splits", None)  # its import now fails: the Python path
    without = yuen_split_p(base, cond, 34, 0.05, seed)
    assert with_kernel.draws > 20  # the draws ran: a p far in the bulk would stop before them
    assert (with_kernel.p_value, with_kernel.draws, with_kernel.extreme) == (
        without.p_value,
        without.draws,
        without.extreme,
    )


# near even (coins), uneven both ways (indices), sizes across the 32-bit words of getrandbits
ARM_DESIGNS = [(590, 295), (590, 300), (33, 12), (32, 16), (31, 15), (64, 33), (40, 10), (100, 80), (37, 2)]


@pytest.mark.parametrize("shape", ["normal", "outliers", "ties"])
@pytest.mark.parametrize(("n_total", "n_condition"), ARM_DESIGNS)
def test_the_arm_kernel_draws_the_python_splits_and_gives_their_t_to_the_last_bit(
    n_total, n_condition, shape
):
    pooled = _pooled(random.Random(n_total * 11 + n_condition), n_total, shape)
    draws = 300
    by_masks = [
        yuen_statistic(*mask_arms(pooled, m))
        for m in _drawn_masks(n_total, n_condition, random.Random(5), draws)
    ]
    by_splits = [
        yuen_statistic(*two_arms(pooled, s))
        for s in drawn_splits(n_total, n_condition, random.Random(5), draws)
    ]
    for coins, python in ((True, by_masks), (False, by_splits)):
        kernel = drawn_arm_statistics(pooled, by_coins=coins)(n_condition, random.Random(5), draws)
        assert [t.hex() for t in kernel] == [t.hex() for t in python], coins


@pytest.mark.parametrize(("n_base", "n_cond"), [(295, 295), (30, 12)])
@pytest.mark.parametrize("seed", _seeds(4))
def test_a_step_of_equal_campaigns_takes_the_python_path_s_p(n_base, n_cond, seed, monkeypatch):
    """Two campaigns of one size (a history step between nights: 295 runs against 295), and a small uneven
    pair: the p, its draws and its count with the kernel, then with the Python loop."""
    rng = random.Random(seed)
    base = [rng.gauss(0.0, 0.05) for _ in range(n_base)]
    cond = [rng.gauss((0.011 + 0.002 * seed) * (1 if n_base > 100 else 4), 0.05) for _ in range(n_cond)]
    with_kernel = yuen_split_p(base, cond, 34, 0.05, seed)
    monkeypatch.setitem(sys.modules, "boardlab.stats._splits", None)
    without = yuen_split_p(base, cond, 34, 0.05, seed)
    assert with_kernel.draws > 20 and not with_kernel.exhaustive
    assert (with_kernel.p_value, with_kernel.draws, with_kernel.extreme) == (
        without.p_value,
        without.draws,
        without.extreme,
    )


def test_the_arm_kernel_is_what_a_near_even_step_uses(monkeypatch):
    """Not a silent fallback: with the Python loop's arms disabled, the p still comes, and the same."""
    rng = random.Random(2)
    base, cond = [rng.gauss(0.0, 0.05) for _ in range(295)], [rng.gauss(0.012, 0.05) for _ in range(295)]
    expected = yuen_split_p(base, cond, 34, 0.05, 7)
    compare = importlib.import_module(
        "boardlab.stats.compare"
    )  # the module: the package's name is its function
    monkeypatch.setattr(compare, "mask_arms", None)  # any split read by the Python loop would fail
    assert yuen_split_p(base, cond, 34, 0.05, 7) == expected
    assert expected.draws > 20


def test_the_arm_kernel_refuses_what_it_cannot_draw():
    from array import array

    from boardlab.stats._splits import yuen_arm_statistics

    column, state = array("d", [0.0] * 10), random.Random(1).getstate()[1]
    with pytest.raises(ValueError, match="at least 2 runs"):
        yuen_arm_statistics(column, 10, 0.2, 1, True, state, 5)
    with pytest.raises(ValueError, match="array"):
        yuen_arm_statistics(array("d", [0.0] * 9), 10, 0.2, 4, True, state, 5)
    with pytest.raises(ValueError, match="625 ints"):
        yuen_arm_statistics(column, 10, 0.2, 4, False, (1, 2, 3), 5)


def test_the_kernel_refuses_arms_it_cannot_sum():
    from array import array

    from boardlab.stats._splits import yuen_statistics

    column = array("d", [0.0] * 11)
    state = random.Random(1).getstate()[1]
    with pytest.raises(ValueError, match="at least 2 runs"):
        yuen_statistics(column, column, column, column, 10, 0.2, 1, state, 5)
    with pytest.raises(ValueError, match="array"):
        yuen_statistics(array("f", [0.0] * 11), column, column, column, 10, 0.2, 4, state, 5)
    with pytest.raises(TypeError):
        yuen_statistics([0.0] * 10, column, column, column, 10, 0.2, 4, state, 5)
    with pytest.raises(ValueError, match="625 ints"):
        yuen_statistics(column, column, column, column, 10, 0.2, 4, (1, 2, 3), 5)
