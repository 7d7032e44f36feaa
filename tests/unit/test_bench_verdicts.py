"""The verdict pipeline's error rates, by a smaller seeded run of bench/bench_verdicts.py: synthetic runs
written with the store API into a real SQLite database from a real plan (the product's cells, allocation and
schedule), verdicts read from `analysis.analyze` (the code `boardlab report` runs). docs/method.md's goals: at
most 5% false slowdown/speedup verdicts where there is no effect, at least 80% slowdown verdicts for a true
effect of 2.5 x delta (5%) at CV 2% and 10 runs per arm, and at the interference preset's defaults."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_verdicts  # noqa: E402

from boardlab.campaign.plan import preset_text  # noqa: E402


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("verdicts")


def scenario(name: str) -> bench_verdicts.Scenario:
    return next(s for s in bench_verdicts.SCENARIOS if s.name == name)


def test_the_design_is_the_products_plan_with_the_reference_allocated_more_runs():
    d = bench_verdicts.design(bench_verdicts.plan_text(2, 7, 10), "test")
    assert len(d.compared) == 14 and len(d.cells) == 16
    runs = {c.key: sum(1 for r in d.schedule if r.cell.key == c.key) for c in d.cells}
    refs = set(d.compared.values())
    assert {runs[k] for k in refs} == {27}  # ceil(sqrt(7) x 10), Dunnett's rule
    assert {runs[k] for k in d.compared} == {10}


def test_a_family_of_one_at_cv2_and_ten_runs_no_false_verdicts_and_finds_the_effect(work):
    d = bench_verdicts.design(bench_verdicts.plan_text(1, 1, 10), "test")
    r = bench_verdicts.rates(bench_verdicts.simulate(d, scenario("cv2"), 60, seed=11, workdir=work))
    assert r["null_comparisons"] == 30 and r["effect_comparisons"] == 30
    assert r["false_verdict_rate"] <= 0.05, r
    assert r["power"] >= 0.80, r


def test_the_interference_preset_at_its_defaults_finds_a_five_percent_effect_in_ten_percent_of_its_comparisons(
    work,
):
    d = bench_verdicts.design(preset_text("interference"), "preset:interference")
    assert len(d.compared) == 70
    r = bench_verdicts.rates(bench_verdicts.simulate(d, scenario("cv2"), 2, seed=11, workdir=work))
    assert r["effect_comparisons"] == 14 and r["null_comparisons"] == 126
    assert r["power"] >= 0.80 and r["false_verdict_rate"] <= 0.05, r


def test_bimodal_runs_are_flagged_and_steady_runs_rarely(work):
    d = bench_verdicts.design(bench_verdicts.plan_text(2, 7, 10), "test")
    bimodal = bench_verdicts.rates(bench_verdicts.simulate(d, scenario("cv2_bimodal40"), 2, 12, work))
    drift = bench_verdicts.rates(bench_verdicts.simulate(d, scenario("cv2_drift3"), 2, 12, work))
    steady = bench_verdicts.rates(bench_verdicts.simulate(d, scenario("cv2"), 2, 12, work))
    assert steady["flagged_rate"] <= 0.10
    assert bimodal["flagged_rate"] > steady["flagged_rate"] + 0.1
    assert drift["flagged_rate"] > steady["flagged_rate"] + 0.1


def test_the_pooled_tail_test_is_calibrated_on_true_nulls():
    t = bench_verdicts.tail_calibration(30, seed=3)
    for design in ("7x20", "5x90"):
        assert t[design]["reject_rate"] <= 0.15 and t[design]["coverage_90"] >= 0.75, t
