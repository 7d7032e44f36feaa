"""Comparing a condition with its baseline (docs/method.md): effect, test, verdict, confounders,
corrections."""

from __future__ import annotations

import math
import random
import time

import pytest

from boardlab.stats import (
    Interval,
    RunEnvironment,
    adjust,
    check_confounders,
    compare,
    decide,
)


def lognormal(seed: int, n: int, median: float, cv: float = 0.02) -> list[float]:
    rng = random.Random(seed)
    return [median * math.exp(rng.gauss(0, cv)) for _ in range(n)]


BASE_NS = lognormal(1, 12, 100.0)
SLOWER_NS = lognormal(2, 12, 110.0)


def trimmed_log_mean(values: list[float]) -> float:
    """The 20%-trimmed mean of the log values, written out (Wilcox 2012, 3.5)."""
    logs = sorted(math.log(v) for v in values)
    g = int(0.2 * len(logs))
    kept = logs[g : len(logs) - g]
    return sum(kept) / len(kept)


def test_a_time_that_grows_by_ten_percent_is_a_slowdown():
    c = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=1)
    # the effect is the ratio of the 20%-trimmed geometric means, the statistic the test and intervals use
    assert c.ratio == pytest.approx(math.exp(trimmed_log_mean(SLOWER_NS) - trimmed_log_mean(BASE_NS)))
    assert c.cost_ratio == c.ratio and c.cost_ratio_ci == c.ratio_ci
    assert c.cost_ratio_ci.low > 1.02 and c.ratio_ci.contains(c.ratio) and c.decision_ci.contains(c.ratio)
    assert c.decision_ci.confidence == pytest.approx(0.90) and "Yuen" in c.decision_ci.method
    assert c.test.name == "yuen-welch-log" and c.test.method == "student-t" and c.p_value < 0.001
    assert c.verdict.kind == "slowdown" and not c.verdict.confounded
    assert "lies above 1 + delta" in c.verdict.reasons[0]
    assert c.resamples == 0  # no bootstrap behind this verdict


def test_the_rank_test_is_kept_with_the_median_ratio_and_its_bootstrap():
    c = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=1, test_kind="rank")
    assert c.ratio == pytest.approx(c.condition_median / c.baseline_median)
    assert c.test.name == "mann-whitney-u" and c.p_value < 0.001 and c.resamples >= 2000
    assert c.verdict.kind == "slowdown" and "bootstrap" in c.decision_ci.method


def test_the_trimmed_p_value_is_not_floored_by_the_number_of_runs():
    """6 against 6 runs, 70 comparisons: the rank test's smallest p (2.2e-3 two-sided) times 70 never gets
    below 0.05, so a 70% slowdown stayed inconclusive; the trimmed t's p falls with the effect."""
    base, cond = lognormal(21, 6, 100.0), lognormal(22, 6, 170.0)
    trimmed = compare(base, cond, higher_is_better=False, delta=0.02, seed=1)
    rank = compare(base, cond, higher_is_better=False, delta=0.02, seed=1, test_kind="rank")
    assert rank.p_value == pytest.approx(2 / math.comb(12, 6)) and rank.p_value * 70 > 0.05
    assert trimmed.p_value * 70 < 0.01
    nulls = [compare(base, base, higher_is_better=False, delta=0.02, seed=i) for i in range(69)]
    assert adjust([trimmed, *nulls], "auto")[0].verdict.kind == "slowdown"
    assert adjust([rank, *nulls], "auto")[0].verdict.kind == "inconclusive"


def test_a_rate_that_drops_is_a_slowdown_and_its_cost_ratio_is_the_factor_slower():
    base_mbs = lognormal(3, 12, 110.0)
    cond_mbs = lognormal(4, 12, 100.0)
    c = compare(base_mbs, cond_mbs, higher_is_better=True, delta=0.02, seed=1)
    assert c.ratio < 1.0  # raw: the condition moves fewer MB/s
    assert c.cost_ratio == pytest.approx(1.0 / c.ratio)
    # the cost CI is the raw CI turned over: same resamples, reciprocal values
    assert c.cost_ratio_ci.low == pytest.approx(1.0 / c.ratio_ci.high, rel=1e-3)
    assert c.cost_ratio_ci.high == pytest.approx(1.0 / c.ratio_ci.low, rel=1e-3)
    assert c.verdict.kind == "slowdown"


def test_a_faster_condition_is_a_speedup():
    c = compare(SLOWER_NS, BASE_NS, higher_is_better=False, delta=0.02, seed=1)
    assert c.cost_ratio_ci.high < 0.98 and c.verdict.kind == "speedup"


def test_equal_arms_measured_precisely_are_no_change():
    base = lognormal(5, 50, 100.0, cv=0.005)
    cond = lognormal(6, 50, 100.0, cv=0.005)
    c = compare(base, cond, higher_is_better=False, delta=0.02, seed=1)
    assert c.verdict.kind == "no_change"
    assert 0.98 <= c.cost_ratio_ci.low and c.cost_ratio_ci.high <= 1.02


def test_noisy_equal_arms_are_inconclusive_and_say_to_add_runs():
    base = [95.0, 105.0, 100.0, 98.0, 103.0, 101.0]
    cond = [97.0, 104.0, 99.0, 102.0, 106.0, 100.5]
    c = compare(base, cond, higher_is_better=False, delta=0.02, seed=1)
    assert c.verdict.kind == "inconclusive"
    assert any("add runs" in r for r in c.verdict.reasons)


def test_no_verdict_below_five_runs_per_arm():
    c = compare(BASE_NS[:4], SLOWER_NS, higher_is_better=False, delta=0.02, seed=1)
    assert c.verdict.kind == "insufficient"
    assert "at least 5 per arm" in c.verdict.reasons[0]
    assert c.cost_ratio_ci is not None  # the effect is still shown
    single = compare([100.0], [110.0], higher_is_better=False, delta=0.02, seed=1)
    assert single.cost_ratio_ci is None and single.verdict.kind == "insufficient"


def test_the_same_seed_gives_the_same_comparison():
    a = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=42, test_kind="rank")
    b = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=42, test_kind="rank")
    c = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=43, test_kind="rank")
    assert a == b
    assert a.ratio_ci != c.ratio_ci and a.ratio_ci.low == pytest.approx(c.ratio_ci.low, rel=0.01)
    # the trimmed test draws nothing: its intervals do not depend on the seed
    t1 = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=42)
    t2 = compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=43)
    assert t1.decision_ci == t2.decision_ci and t1.p_value == t2.p_value


def test_iterations_cannot_be_pooled_through_compare():
    """Pooling iterations as samples inflated false positives to 16-65% (docs/method.md): the API refuses
    them."""
    iterations = [[100.1, 99.9, 100.3], [100.2, 100.0, 99.8]]
    with pytest.raises(TypeError, match="one number per run"):
        compare(iterations, iterations, higher_is_better=False, delta=0.02, seed=1)
    pooled = lognormal(9, 600, 100.0)
    c = compare(pooled, pooled, higher_is_better=False, delta=0.02, seed=1, resamples=200)
    assert any("never pooled iterations" in w for w in c.warnings)


def test_ratios_need_positive_finite_values():
    with pytest.raises(ValueError, match="positive"):
        compare([1.0, 0.0], [1.0, 1.0], higher_is_better=False, delta=0.02, seed=1)
    with pytest.raises(ValueError, match="finite"):
        compare([1.0, math.inf], [1.0, 1.0], higher_is_better=False, delta=0.02, seed=1)


def test_paired_blocks_use_the_signed_rank_test_on_per_block_log_ratios():
    rng = random.Random(10)
    block_effect = [math.exp(rng.gauss(0, 0.08)) for _ in range(10)]  # drift shared by both arms of a block
    base = [100.0 * b * math.exp(rng.gauss(0, 0.005)) for b in block_effect]
    cond = [103.0 * b * math.exp(rng.gauss(0, 0.005)) for b in block_effect]
    blocks = (list(range(10)), list(range(10)))
    kw = {"higher_is_better": False, "delta": 0.02, "seed": 1}
    paired = compare(base, cond, paired_blocks=blocks, test_kind="rank", **kw)
    unpaired = compare(base, cond, test_kind="rank", **kw)
    assert paired.test.name == "wilcoxon-signed-rank" and paired.n_blocks == 10
    assert paired.p_value == pytest.approx(2 / 1024)  # every block slower: the exact two-sided minimum
    assert unpaired.p_value > 0.05  # the shared block drift hides the effect from the unpaired test
    # the default: the one-sample trimmed t of the per-block log ratios, not floored at 2 / 2^10
    trimmed = compare(base, cond, paired_blocks=blocks, **kw)
    assert trimmed.test.name == "trimmed-t-log-paired" and trimmed.n_blocks == 10
    assert trimmed.p_value < 1e-4 and trimmed.decision_ci.contains(trimmed.ratio)
    assert trimmed.ratio == pytest.approx(1.03, rel=0.01)
    assert compare(base, cond, **kw).p_value > 0.05  # unpaired, the block drift hides it here too


def test_blocks_missing_an_arm_are_left_out_with_a_warning():
    base, cond = [100.0, 101.0, 99.0, 100.5, 100.2, 99.5], [103.0, 104.0, 102.0, 103.1, 104.2]
    blocks = (["a", "b", "c", "d", "e", "f"], ["a", "b", "c", "d", "e"])
    c = compare(
        base, cond, higher_is_better=False, delta=0.02, seed=1, paired_blocks=blocks, test_kind="rank"
    )
    assert c.n_blocks == 5
    assert any("only one arm" in w for w in c.warnings)
    assert any("cannot reach p < 0.05" in w for w in c.warnings)
    t = compare(base, cond, higher_is_better=False, delta=0.02, seed=1, paired_blocks=blocks)
    assert t.n_blocks == 5 and any("only one arm" in w for w in t.warnings)
    assert not any("cannot reach" in w for w in t.warnings)
    with pytest.raises(ValueError, match="one block label per run"):
        compare(base, cond, higher_is_better=False, delta=0.02, seed=1, paired_blocks=(["a"], ["a"]))


# --- the verdict rule ---------------------------------------------------------------------------------------


def ci(low: float, high: float) -> Interval:
    return Interval(low, high, 0.95, "test")


@pytest.mark.parametrize(
    "low,high,p,kind",
    [
        (1.03, 1.08, 0.01, "slowdown"),
        (1.03, 1.08, 0.20, "inconclusive"),  # beyond delta but not significant after correction
        (0.90, 0.97, 0.01, "speedup"),
        (0.985, 1.015, 0.80, "no_change"),
        (0.985, 1.015, 0.01, "no_change"),  # significant but practically irrelevant
        (1.01, 1.05, 0.001, "inconclusive"),  # crosses 1 + delta
        (0.97, 1.03, 0.50, "inconclusive"),  # wider than the threshold band
    ],
)
def test_verdict_needs_both_the_ci_beyond_delta_and_a_significant_adjusted_p(low, high, p, kind):
    v = decide(ci(low, high), p_adjusted=p, delta=0.02, n_baseline=10, n_condition=10)
    assert v.kind == kind


def test_holm_across_a_report_can_turn_a_slowdown_inconclusive():
    base = lognormal(11, 5, 100.0, cv=0.01)
    cond = lognormal(12, 5, 106.0, cv=0.01)
    kw = {"higher_is_better": False, "delta": 0.02, "test_kind": "rank"}
    strong = compare(BASE_NS, SLOWER_NS, seed=1, **kw)
    weak = compare(base, cond, seed=2, **kw)
    assert weak.verdict.kind == "slowdown" and 0.005 < weak.p_value < 0.05  # 5 vs 5 runs: p = 0.0079
    family = [strong, weak] + [compare(BASE_NS, BASE_NS, seed=i, **kw) for i in range(6)]
    adjusted = adjust(family, "holm")
    assert [c.adjustment for c in adjusted] == ["holm"] * 8 and adjusted[1].family_size == 8
    assert adjusted[1].p_adjusted == pytest.approx(min(1.0, 7 * weak.p_value))
    assert adjusted[1].verdict.kind == "inconclusive"
    # the row says why an interval clear of 1 + delta is not a verdict: the correction over the family
    assert "corrected for the report's 8 comparisons" in adjusted[1].verdict.reasons[1]
    assert adjusted[0].verdict.kind == "slowdown"
    assert adjust(adjusted, "none")[1] == weak  # undoing the correction restores the comparison


def test_benjamini_hochberg_is_available_for_sweeps():
    family = [compare(BASE_NS, SLOWER_NS, higher_is_better=False, delta=0.02, seed=i) for i in range(3)]
    assert all(
        c.adjustment == "bh" and c.p_adjusted == pytest.approx(c.p_value) for c in adjust(family, "bh")
    )


# --- confounders ------------------------------------------------------------------------------------------


def env(freq_khz=1_800_000, temp_mc=55_000, throttled=False, n=10):
    return [
        RunEnvironment(mean_freq_khz=freq_khz, max_temp_mc=temp_mc, throttled=throttled) for _ in range(n)
    ]


def test_arms_in_the_same_state_are_not_confounded():
    c = check_confounders(env(), env(freq_khz=1_790_000, temp_mc=56_500))
    assert not c.confounded and c.reasons == () and c.notes == ()


def test_a_frequency_difference_over_two_percent_confounds_and_says_what_to_do():
    c = check_confounders(env(), env(freq_khz=1_700_000))
    assert c.confounded
    assert "1800 MHz" in c.reasons[0] and "1700 MHz" in c.reasons[0]
    assert "fixed frequency" in c.reasons[0]


def test_a_temperature_difference_over_two_degrees_confounds():
    c = check_confounders(env(), env(temp_mc=58_500))
    assert c.confounded and "55.0 C" in c.reasons[0] and "58.5 C" in c.reasons[0]


def test_throttling_in_only_one_arm_confounds():
    cond = env(n=8) + env(throttled=True, n=2)
    c = check_confounders(env(), cond)
    assert c.confounded and c.condition_throttled_runs == 2
    assert "2 of 10 condition runs throttled" in c.reasons[0]


def test_unrecorded_confounders_are_noted_not_guessed():
    c = check_confounders([RunEnvironment()] * 5, env(n=5))
    assert not c.confounded and len(c.notes) == 3


def test_a_confounded_comparison_keeps_its_verdict_and_carries_the_reasons():
    c = compare(
        BASE_NS,
        SLOWER_NS,
        higher_is_better=False,
        delta=0.02,
        seed=1,
        baseline_env=env(n=12),
        condition_env=env(freq_khz=1_500_000, n=12),
    )
    assert c.verdict.kind == "slowdown" and c.verdict.confounded
    assert any("DVFS" in r for r in c.verdict.reasons)


# --- speed --------------------------------------------------------------------------------------------------


def test_a_comparison_of_fifty_runs_per_arm_with_ten_thousand_resamples_takes_well_under_a_tenth_of_a_second():  # noqa: E501
    base, cond = lognormal(13, 50, 100.0), lognormal(14, 50, 103.0)
    compare(base, cond, higher_is_better=False, delta=0.02, seed=0)  # warm caches and imports
    start = time.process_time()
    for seed in range(5):
        compare(base, cond, higher_is_better=True, delta=0.02, seed=seed, resamples=10_000)
    assert (time.process_time() - start) / 5 < 0.05
