"""The practical threshold delta from A/A comparisons (METHOD.md): max(2%, p95 of |R_AA - 1|)."""

from __future__ import annotations

import math
import random

import pytest

from boardlab.stats import aa_delta, aa_ratios_from_runs


def test_a_quiet_board_gets_the_two_percent_floor():
    d = aa_delta([1.0 + 0.001 * i for i in range(-10, 11)])  # p95 of 0, .001, .001, ..., .01, .01
    assert d.delta == 0.02 and d.p95_abs_deviation == pytest.approx(0.010)
    assert d.warnings == ()


def test_a_noisy_board_gets_the_95th_percentile_of_its_aa_deviations():
    ratios = [1.0 + 0.01 * i for i in range(-10, 11)]  # |R - 1| = 0, .01, .01, ..., .10, .10
    d = aa_delta(ratios)
    assert d.delta == pytest.approx(0.10) and d.n_ratios == 21


def test_few_aa_comparisons_warn():
    d = aa_delta([1.01, 0.99, 1.03])
    assert "at least 10 times" in d.warnings[0]


def test_half_splits_of_baseline_runs_give_seeded_aa_ratios():
    rng = random.Random(1)
    runs = [100 * math.exp(rng.gauss(0, 0.02)) for _ in range(21)]
    a = aa_ratios_from_runs(runs, splits=50, seed=3)
    assert a == aa_ratios_from_runs(runs, splits=50, seed=3)
    assert len(a) == 50 and all(0.9 < r < 1.1 for r in a)
    assert 0.02 <= aa_delta(a).delta < 0.08


def test_half_splits_need_two_runs_per_half():
    assert len(aa_ratios_from_runs([1.0, 1.1, 0.9, 1.05], splits=10)) == 10
    with pytest.raises(ValueError, match="at least 4 runs"):
        aa_ratios_from_runs([1.0] * 3)


def test_fewer_runs_per_half_give_a_larger_delta():
    rng = random.Random(2)
    runs = [100 * math.exp(rng.gauss(0, 0.02)) for _ in range(40)]
    small = aa_delta(aa_ratios_from_runs(runs[:6], seed=1)).p95_abs_deviation
    large = aa_delta(aa_ratios_from_runs(runs, seed=1)).p95_abs_deviation
    assert small > large
