"""How many runs (docs/method.md): predict from the pilot's CV, stop on precision, never on a p-value."""

from __future__ import annotations

import math
import random

import pytest

from boardlab.stats import predict_runs, should_stop


@pytest.mark.parametrize(
    "cv,h,per_arm,one_cell",
    # research/anchors-methodology.md section 7, "Exact small-sample facts"
    [(0.01, 0.01, 13, 7), (0.02, 0.01, 49, 25), (0.02, 0.02, 13, 7), (0.05, 0.02, 76, 38)],
)
def test_predicted_runs_follow_the_median_standard_error(cv, h, per_arm, one_cell):
    assert predict_runs(cv, h).runs_per_arm == per_arm
    assert predict_runs(cv, h, comparison=False).runs_per_arm == one_cell


def test_a_prediction_over_the_cap_warns_with_the_choices():
    p = predict_runs(0.05, 0.02)
    assert p.exceeds_cap and p.cap == 50
    assert "76 runs per arm" in p.warning and "+-2.5% at 50 runs" in p.warning
    assert predict_runs(0.02, 0.01).warning is None


def lognormal(seed, n, median=100.0, cv=0.02):
    rng = random.Random(seed)
    return [median * math.exp(rng.gauss(0, cv)) for _ in range(n)]


def test_a_cell_is_not_stopped_before_the_pilot():
    d = should_stop(lognormal(1, 8, cv=0.001), 0.01)
    assert not d.stop and "pilot" in d.reason


def test_a_cell_stops_once_its_median_ci_is_narrow_enough():
    d = should_stop(lognormal(1, 12, cv=0.005), 0.01)
    assert d.stop and d.relative_half_width <= 0.01 and "within the target" in d.reason
    wide = should_stop(lognormal(1, 12, cv=0.05), 0.01)
    assert not wide.stop and "add runs" in wide.reason


def test_every_cell_stops_at_the_cap():
    d = should_stop(lognormal(2, 50, cv=0.2), 0.01)
    assert d.stop and "cap" in d.reason


def test_a_comparison_stops_when_its_ci_decides_against_delta():
    base, cond = lognormal(3, 10), lognormal(4, 10, median=115.0)
    d = should_stop(cond, 0.001, baseline=base, delta=0.02)
    assert d.stop and "beyond" in d.reason and d.ci.low > 1.02


def test_a_significant_p_value_alone_never_stops_a_comparison():
    base, cond = lognormal(5, 10), lognormal(6, 10, median=103.0)
    from boardlab.stats import compare

    c = compare(base, cond, higher_is_better=False, delta=0.02, seed=0)
    assert c.p_value < 0.05 and c.cost_ratio_ci.low < 1.02  # significant, but the CI straddles 1 + delta
    d = should_stop(cond, 0.01, baseline=base, delta=0.02)
    assert not d.stop


def test_the_cost_ratio_orientation_is_used_for_rates():
    base, cond = lognormal(7, 10), lognormal(8, 10, median=85.0)
    d = should_stop(cond, 0.001, baseline=base, delta=0.02, higher_is_better=True)
    assert d.stop and d.ci.low > 1.02


def test_delta_needs_a_baseline():
    with pytest.raises(ValueError, match="baseline"):
        should_stop(lognormal(1, 10), 0.01, delta=0.02)


def test_the_verdicts_90_percent_decision_interval_decides_not_the_95_percent_ci():
    base, cond = lognormal(18, 10), lognormal(19, 10, median=105.0)
    d = should_stop(cond, 0.001, baseline=base, delta=0.02)
    assert d.ci.confidence == 0.95 and d.ci.low < 1.02  # the 95% CI alone would not have decided
    assert d.stop and "90% decision interval lies wholly beyond" in d.reason
