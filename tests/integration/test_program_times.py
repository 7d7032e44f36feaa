"""A program run's time columns are the program's own (its spawn to its exit, its wait4 rusage), never the
launcher's interpreter start-up besides, nor the runner's when it starts the program itself, and `export
--table metrics` holds every metric each run stored."""

from __future__ import annotations

import csv
import io
import json

import pytest

from helpers import RESULT, rows, run_cli

pytestmark = pytest.mark.integration

PLAN = """\
name = "nap"
[runs]
repetitions = 2
[gates]
idle = false
temperature = false
[[workloads]]
kind = "program"
name = "nap"
argv = ["sleep", "0.2"]
iterations = 2
"""


@pytest.fixture(scope="module")
def nap_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nap")
    (tmp / "plan.toml").write_text(PLAN)
    db = tmp / "nap.db"
    p = run_cli("run", str(tmp / "plan.toml"), "--db", str(db), "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    return db


def test_the_time_columns_are_the_programs_own_and_the_launchers_share_is_kept_apart(nap_db):
    runs = rows(
        nap_db, f"SELECT r.id, r.wall_ns, r.rusage_json, w.worker_json FROM runs r{RESULT} ORDER BY r.id"
    )
    assert len(runs) == 2
    for _, wall_ns, rusage_json, worker_json in runs:
        executions = json.loads(worker_json)["iterations_ns"]
        assert wall_ns == sum(executions)  # the two executions of sleep 0.2, nothing else
        assert (
            0.4 <= wall_ns / 1e9 < 0.4 + 0.2
        )  # however slow the machine, not an interpreter's start-up more
        rusage = json.loads(rusage_json)
        # the launcher (python -m boardlab.pyrun) imported Python and boardlab: its own CPU time is kept
        # beside
        assert (
            rusage["launcher_wall_ns"] > 0 and rusage["launcher_utime_us"] + rusage["launcher_stime_us"] > 0
        )
        assert (
            rusage["utime_us"] + rusage["stime_us"]
            < rusage["launcher_utime_us"] + rusage["launcher_stime_us"]
        )
    export = json.loads(run_cli("export", "--db", str(nap_db)).stdout)["runs"]
    assert [r["wall_ns"] for r in export] == [r[1] for r in runs]


def test_export_table_metrics_is_the_long_table_of_every_stored_metric(nap_db):
    p = run_cli("export", "--db", str(nap_db), "--table", "metrics")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    long = doc["metrics"]
    assert {r["metric"] for r in long} == {"wall_s", "user_s", "sys_s", "maxrss_kib"}
    assert len(long) == 2 * 4 and len({r["run_id"] for r in long}) == 2
    rss = [r for r in long if r["metric"] == "maxrss_kib"]
    assert all(r["unit"] == "KiB" and r["value"] > 0 and r["workload"] == "nap" for r in rss)
    wall = [r["value"] for r in long if r["metric"] == "wall_s"]
    assert all(0.2 <= w < 0.4 for w in wall)  # the median of one run's two executions
    text = run_cli("export", "--db", str(nap_db), "--table", "metrics", "--format", "csv").stdout
    table = list(csv.reader(io.StringIO(text.split("\n", 1)[1])))
    assert table[0][:4] == ["campaign", "campaign_id", "run_id", "cell_id"] and len(table) == 1 + 8
    bad = run_cli("export", "--db", str(nap_db), "--table", "metrics", "--partition", "board")
    assert bad.returncode == 2 and "--partition writes the runs table" in bad.stderr


def test_a_program_the_runner_starts_itself_is_timed_from_its_spawn_to_its_exit(tmp_path):
    (tmp_path / "plan.toml").write_text(PLAN.replace("iterations = 2\n", "").replace('"nap"', '"nap1"'))
    db = tmp_path / "nap1.db"
    p = run_cli("run", str(tmp_path / "plan.toml"), "--db", str(db), timeout=300)
    assert p.returncode == 0, p.stderr
    for wall_ns, rusage_json, worker_json in rows(
        db, f"SELECT r.wall_ns, r.rusage_json, w.worker_json FROM runs r{RESULT}"
    ):
        assert json.loads(worker_json)["tool"] == "boardlab.runner"
        assert 0.2 <= wall_ns / 1e9 < 0.2 + 0.1  # a sleep 0.2 and its spawn, nothing of boardlab's
        rusage = json.loads(rusage_json)
        assert rusage["launcher_utime_us"] == rusage["launcher_stime_us"] == 0  # no launcher process
        assert 0 <= rusage["launcher_wall_ns"] < 0.05e9  # the program's end to its reap
