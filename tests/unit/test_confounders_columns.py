"""The confounder guard reads a column store of runs' environments (`analysis.runs.Environments`) from its
columns, and decides exactly as from a record per run."""

from __future__ import annotations

import math
import random
from array import array

import pytest

from boardlab.analysis.runs import Environments
from boardlab.stats.verdict import RunEnvironment, arm_environment, check_confounders


def _arm(rng: random.Random) -> Environments:
    n = rng.choice([0, 1, 5, 300])
    missing = rng.choice([0.0, 0.3, 1.0])  # none, some, every value not recorded
    freq = [math.nan if rng.random() < missing else rng.choice([1e6, 1.01e6, 1.2e6]) for _ in range(n)]
    temp = [math.nan if rng.random() < missing else rng.gauss(50_000, 3_000) for _ in range(n)]
    throttled = [rng.choice([-1, 0, 1] if rng.random() < 0.5 else [-1, 0]) for _ in range(n)]
    return Environments(array("d", freq), array("d", temp), array("b", throttled))


@pytest.mark.parametrize("seed", range(40))
def test_the_columns_decide_as_the_records_do(seed):
    rng = random.Random(seed)
    for _ in range(10):
        base, cond = _arm(rng), _arm(rng)
        assert check_confounders(base, cond) == check_confounders(list(base), list(cond))


def test_an_arm_read_from_columns_builds_no_record_per_run(monkeypatch):
    envs = Environments(array("d", [1e6, math.nan, 1.2e6]), array("d", [4e4] * 3), array("b", [1, -1, 0]))

    def no_records(self, i):
        raise AssertionError("a record per run was built")

    monkeypatch.setattr(Environments, "__getitem__", no_records)
    monkeypatch.setattr(Environments, "__iter__", lambda self: no_records(self, 0))
    got = arm_environment(envs)
    assert (got.median_freq_khz, got.throttled_runs, got.throttle_recorded, got.runs) == (1.1e6, 1, True, 3)
    assert arm_environment([RunEnvironment(None, None, None)]).throttle_recorded is False
