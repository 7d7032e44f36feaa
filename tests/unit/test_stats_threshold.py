"""The practical threshold delta (docs/method.md): a plan statement, never estimated from the compared runs;
the report's one correction family; and reachability of a verdict at plan load."""

from __future__ import annotations

import math

import pytest

from boardlab.analysis.core import is_tail_metric, threshold_for
from boardlab.stats import DEFAULT_DELTA, DEFAULT_TAIL_DELTA, family_method, reachability, smallest_p


def test_defaults_are_two_percent_and_ten_percent_for_tails():
    assert DEFAULT_DELTA == 0.02 and DEFAULT_TAIL_DELTA == 0.10
    assert threshold_for({}, "scimark.fft", "mflops")[0] == 0.02
    assert threshold_for({}, "rt.cyclictest", "max_latency_us")[0] == 0.10
    assert threshold_for({}, "ai.inference", "latency_ms", tail=True)[0] == 0.10
    assert is_tail_metric("p99_latency_us") and not is_tail_metric("latency_ms")


def test_the_plan_threshold_wins_per_workload():
    plan = {"workloads": [{"name": "mem.bandwidth", "threshold": 0.05, "tail_threshold": 0.2}]}
    assert threshold_for(plan, "mem.bandwidth", "bandwidth_mb_s") == (0.05, "plan: threshold = 0.05")
    assert threshold_for(plan, "mem.bandwidth", "x", tail=True)[0] == 0.2
    assert threshold_for(plan, "scimark.fft", "mflops")[0] == 0.02  # another workload keeps the default


def test_holm_up_to_fifty_comparisons_then_benjamini_hochberg():
    assert family_method(1) == "holm" and family_method(50) == "holm" and family_method(51) == "bh"


def test_the_smallest_mann_whitney_p_is_two_over_2n_choose_n_where_exact():
    for n in (5, 6, 7, 8):
        assert smallest_p(n, n) == pytest.approx(2 / math.comb(2 * n, n))
    assert smallest_p(6, 6, paired=True) == pytest.approx(2 / 2**6)


def test_with_the_rank_test_five_runs_per_arm_cannot_decide_seventy_comparisons_and_the_message_names_the_fix():
    r = reachability(5, 70, test_kind="rank")
    assert not r.reachable and r.method == "bh"
    assert r.smallest_adjusted_p == pytest.approx(70 * 2 / math.comb(10, 5))
    assert reachability(r.repetitions_needed, 70, test_kind="rank").reachable
    assert not reachability(r.repetitions_needed - 1, 70, test_kind="rank").reachable
    assert f"--repetitions {r.repetitions_needed}" in r.message


def test_the_reports_trimmed_test_reaches_a_verdict_at_the_rules_five_runs_in_any_family():
    r = reachability(5, 70)
    assert r.reachable and r.smallest_adjusted_p == 0.0 and r.repetitions_needed == 5
    bad = reachability(4, 70)
    assert not bad.reachable and "--repetitions 5" in bad.message


def test_ten_runs_per_arm_decide_the_interference_preset_and_fewer_than_five_never():
    assert reachability(10, 70).reachable and reachability(10, 70).message is None
    assert not reachability(4, 1).reachable
    assert reachability(5, 0).reachable  # nothing to compare: nothing to reach
