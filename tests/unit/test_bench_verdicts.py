"""The verdict pipeline's error rates, by smaller seeded runs of bench/bench_verdicts.py: synthetic runs
written with the store API into a real SQLite database from a real plan (the product's cells, allocation and
schedule), verdicts read from `analysis.analyze` (the code `boardlab report` runs), advice from the dry-run's
`power_advice`. The full figures and their goals are the bench's (docs/method.md "Error rates of this
pipeline"); these check that each part of it measures what it says, at a size a test can afford."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_verdicts  # noqa: E402


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("verdicts")


def scenario(name: str) -> bench_verdicts.Scenario:
    return next(s for s in bench_verdicts.SCENARIOS if s.name == name)


def test_the_designs_are_the_products_plans_with_the_reference_allocated_more_runs():
    d = bench_verdicts.family_design(10)
    assert len(d.compared) == 10 and len(d.cells) == 12
    runs = {c.key: sum(1 for r in d.schedule if r.cell.key == c.key) for c in d.cells}
    refs = {ref for refs in d.compared.values() for ref in refs}
    assert {runs[k] for k in refs} == {25}  # ceil(sqrt(5) x 11), Dunnett's rule
    assert {runs[k] for k in d.compared} == {11}
    seventy = bench_verdicts.family_design(70)
    assert len(seventy.compared) == 70  # the interference preset itself


@pytest.mark.slow
def test_a_family_of_one_at_cv2_and_ten_runs_no_false_verdicts_and_finds_the_effect(work):
    d = bench_verdicts.design(bench_verdicts.PLAN, "test")
    s = scenario("lognormal_cv2")
    null = bench_verdicts.simulate(d, s, 60, seed=11, workdir=work, effects=False)
    real = bench_verdicts.simulate(d, s, 60, seed=11, workdir=work, effects=True)
    assert null["null:n"] == 60 and real["effect:n"] == 60
    assert null["null:slowdown"] + null["null:speedup"] <= 2, null  # 5% of 60 would be 3
    # power 86% (300 direct comparisons); 43 of 60 lies three standard errors below it
    assert real["effect:slowdown"] >= 43, real


def test_a_planted_effect_is_counted_as_an_effect_and_never_as_a_false_verdict(work):
    """An effect cell is no comparison's reference, so every comparison is either wholly null or carries the
    effect: rt-isolation's `compare` pairs make condition cells references."""
    from boardlab.campaign.plan import preset_text

    d = bench_verdicts.design(preset_text("rt-isolation"), "preset:rt-isolation")
    refs = {ref for refs in d.compared.values() for ref in refs}
    assert refs & set(d.compared), "the preset has condition cells that are references"
    c = bench_verdicts.simulate(d, scenario("lognormal_cv2"), 2, seed=5, workdir=work, effects=True)
    assert c["effect:n"] >= 2 and c["null:slowdown"] + c["null:speedup"] == 0, c


@pytest.mark.slow
def test_the_interference_preset_at_its_defaults_finds_a_five_percent_effect_in_ten_percent_of_its_comparisons(  # noqa: E501
    work,
):
    d = bench_verdicts.family_design(70)
    c = bench_verdicts.simulate(d, scenario("lognormal_cv2"), 2, seed=11, workdir=work, effects=True)
    assert c["effect:n"] == 14 and c["null:n"] == 126
    assert c["effect:slowdown"] >= 11 and c["null:slowdown"] + c["null:speedup"] == 0, c


@pytest.mark.slow
def test_bimodal_runs_are_flagged_and_steady_runs_rarely(work):
    d = bench_verdicts.family_design(10)
    flagged = {}
    for name in ("cv2_bimodal40", "cv2_drift3", "lognormal_cv2"):
        c = bench_verdicts.simulate(d, scenario(name), 3, 12, work, effects=False)
        flagged[name] = c["flagged:null"] / c["null:n"]
    assert flagged["lognormal_cv2"] <= 0.10
    assert flagged["cv2_bimodal40"] > flagged["lognormal_cv2"] + 0.1
    assert flagged["cv2_drift3"] > flagged["lognormal_cv2"] + 0.1


def test_the_judge_fails_only_an_interval_wholly_outside_its_goal():
    doc = {s: [] for s in bench_verdicts.SECTIONS}
    doc["family"] = [
        {"family": 10, "scenario": "a", "x": bench_verdicts.rate(1, 6, (0.0, 0.05))},  # 1 of 6: not a miss
        {"family": 70, "scenario": "b", "x": bench_verdicts.rate(60, 400, (0.0, 0.05))},  # 15% of 400: a miss
    ]
    bench_verdicts.judge(doc)
    assert list(bench_verdicts.missed(doc)) == ["family: family 70 b: x"]
    assert doc["interval"]["gated_rates"] == 2


@pytest.mark.slow
def test_the_pooled_tail_test_rejects_few_true_nulls_and_its_interval_covers_most():
    t = bench_verdicts.tail_job(5, 20, 0.7, 60, seed=3)  # autocorrelated samples within a run
    assert t["reject_at_5pct"]["k"] <= 8 and t["coverage_90"]["k"] >= 48, t
