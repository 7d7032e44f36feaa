"""The verdict pipeline's error rates, by a smaller seeded run of bench/bench_verdicts.py: synthetic runs
written with the store API into a real SQLite database, verdicts read from `analysis.analyze` (the
code `boardlab report` runs). docs/method.md's two goals: at most 5% false slowdown/speedup verdicts on A/A data,
at least 80% slowdown verdicts for a true 5% slowdown at CV 2% and 10 runs per arm."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_verdicts  # noqa: E402

REPLICATES = 100


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("verdicts")


def test_aa_data_gets_at_most_five_percent_false_verdicts(work):
    for scenario in bench_verdicts.AA_SCENARIOS[:2]:  # CV 1% and 2%
        counts = bench_verdicts.simulate(scenario, REPLICATES, seed=11, workdir=work)
        assert sum(v for k, v in counts.items() if not k.startswith("aa_control:")) == REPLICATES
        assert (counts["slowdown"] + counts["speedup"]) / REPLICATES <= 0.05, counts


def test_a_true_five_percent_slowdown_at_cv2_and_ten_runs_is_found_in_80_percent(work):
    scenario = next(s for s in bench_verdicts.POWER_SCENARIOS if s.effect == 1.05)
    counts = bench_verdicts.simulate(scenario, REPLICATES, seed=11, workdir=work)
    assert counts["slowdown"] / REPLICATES >= 0.80, counts
    assert counts["speedup"] == 0


def test_a_ten_percent_slowdown_is_never_called_no_change(work):
    scenario = next(s for s in bench_verdicts.POWER_SCENARIOS if s.effect == 1.10)
    counts = bench_verdicts.simulate(scenario, 30, seed=12, workdir=work)
    assert counts["no_change"] == 0 and counts["slowdown"] >= 28
