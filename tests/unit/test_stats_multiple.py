"""Multiple-testing corrections over one report's p-values (Holm; Benjamini-Hochberg for sweeps)."""

from __future__ import annotations

import pytest

from boardlab.stats import benjamini_hochberg, holm

P = [0.01, 0.04, 0.03, 0.005]


def test_holm_by_hand():
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> running max keeps 0.06
    assert holm(P) == pytest.approx((0.03, 0.06, 0.06, 0.02))


def test_holm_is_monotone_in_the_p_values_and_capped_at_one():
    p = [0.2, 0.001, 0.5, 0.03, 0.9, 0.011]
    adjusted = holm(p)
    ordered = [a for _, a in sorted(zip(p, adjusted, strict=True))]
    assert ordered == sorted(ordered)
    assert max(adjusted) == 1.0
    assert all(a >= q for a, q in zip(adjusted, p, strict=True))


def test_holm_of_one_test_is_the_test():
    assert holm([0.037]) == (0.037,)


def test_benjamini_hochberg_by_hand():
    # sorted: 0.005 x4/1 = 0.02, 0.01 x4/2 = 0.02, 0.03 x4/3 = 0.04, 0.04 x4/4 = 0.04 -> running min from the
    # top
    assert benjamini_hochberg(P) == pytest.approx((0.02, 0.04, 0.04, 0.02))


def test_comparisons_without_a_test_stay_out_of_the_family():
    assert holm([0.01, None, 0.04]) == pytest.approx((0.02, None, 0.04))
    assert benjamini_hochberg([None, 0.01, 0.04]) == (None, pytest.approx(0.02), pytest.approx(0.04))
    assert holm([]) == ()


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_a_p_value_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match="must lie in"):
        holm([0.1, bad])
