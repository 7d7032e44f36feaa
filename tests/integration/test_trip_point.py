"""Trip-point invalidation end to end: a campaign on a copy of the BeagleBone Black tree (`--root`), whose
only thermal zone (thermal_zone0, type cpu_thermal) has a critical trip at 125 C. The real monitor samples
the zone's temp file during each run; a run that reached the trip point minus 5 C is invalid, with the
zone, the temperature and the limit in its reason (docs/method.md "Invalid runs")."""

from __future__ import annotations

import os

import pytest

from helpers import copy_board, rows, run_cli

pytestmark = pytest.mark.integration

PLAN = """\
name = "trip"
[runs]
repetitions = 2
iterations = 3
warmup_max_iterations = 0
max_reruns = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "noop"
"""


def campaign(tmp_path, temp_mc: int) -> list[tuple[int, str | None]]:
    root = copy_board("bbb", tmp_path)
    (root / "sys/class/thermal/thermal_zone0/temp").write_text(f"{temp_mc}\n")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    db = tmp_path / "r.db"
    env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
    proc = run_cli("run", str(plan), "--root", str(root), "--db", str(db), "--quiet", env=env)
    assert proc.returncode == 0, proc.stderr
    return rows(db, "SELECT valid, invalid_reason FROM runs ORDER BY seq")


def test_a_run_over_the_trip_point_minus_the_margin_is_invalid_with_the_reason(tmp_path):
    runs = campaign(tmp_path, 121_000)
    assert len(runs) == 2
    for valid, reason in runs:
        assert valid == 0
        assert reason == (
            "thermal_zone0:cpu_thermal reached 121.0 C, over the limit 120.0 C (lowest trip point - 5 C)"
        )


def test_a_run_below_the_limit_stays_valid(tmp_path):
    assert campaign(tmp_path, 119_000) == [(1, None), (1, None)]
