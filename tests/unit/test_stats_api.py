"""The shape of boardlab.stats: standard library only, pure, frozen results that serialize to plain data."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys

import pytest

import boardlab.stats as stats

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit


def test_importing_stats_loads_neither_numpy_nor_scipy():
    code = "import sys, boardlab.stats; print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_is_exported_and_documented():
    for name in stats.__all__:
        obj = getattr(stats, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__, f"{name} has no docstring"


def test_results_are_frozen_and_become_json():
    runs = [10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.0, 10.3, 10.4, 9.7]
    slower = [v * 1.1 for v in runs]
    results = [
        stats.summarize(runs),
        stats.compare(runs, slower, higher_is_better=False, delta=0.02, seed=0),
        stats.reachability(10, 70),
        stats.compare_tail([runs, slower], [slower, runs], delta=0.1, seed=0, resamples=200),
        stats.predict_runs(0.02, 0.01),
        stats.should_stop(runs, 0.01),
    ]
    for result in results:
        assert dataclasses.is_dataclass(result)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, dataclasses.fields(result)[0].name, None)
        json.dumps(dataclasses.asdict(result))


def test_the_same_inputs_give_the_same_results():
    runs = [10.2, 9.8, 10.5, 10.1, 9.9, 10.7, 10.0, 10.3, 10.4, 9.7]
    assert stats.summarize(runs) == stats.summarize(list(runs))
    snapshot = list(runs)
    stats.compare(runs, runs, higher_is_better=True, delta=0.02, seed=3)
    assert runs == snapshot  # inputs are never modified
