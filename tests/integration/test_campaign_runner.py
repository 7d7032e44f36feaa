"""The runner, end to end with the real boardlab-kern: resume after SIGKILL, Ctrl-C, store contents."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab.export import EXPORT_SCHEMA
from boardlab.model.worker_result import WORKER_SCHEMA
from boardlab.store import STORE_SCHEMA

from helpers import RESULT, rows, run_cli, tagged_env, tagged_processes

pytestmark = pytest.mark.integration

PLAN = """\
name = "{name}"
[runs]
repetitions = {reps}
iterations = 3
order = "interleave"
[gates]
idle = false
[[workloads]]
name = "noop"
"""


def write_plan(tmp_path: Path, name="noop-campaign", reps=3, iterations=3) -> Path:
    p = tmp_path / "plan.toml"
    p.write_text(PLAN.format(name=name, reps=reps).replace("iterations = 3", f"iterations = {iterations}"))
    return p


def test_a_campaign_stores_every_run_with_its_iterations_monitor_and_rusage(tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("run", str(write_plan(tmp_path)), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "complete" and out["runs_done"] == 3 == out["runs_total"]
    assert out["monitor_cost_pct_of_core"] is not None
    runs = rows(
        db,
        "SELECT r.id, r.valid, r.value, r.rusage_json, r.monitor_json, w.worker_json FROM runs r"
        f"{RESULT} ORDER BY r.seq",
    )
    assert len(runs) == 3
    for run_id, valid, value, rusage, monitor, worker in runs:
        assert valid == 1 and value > 0
        assert json.loads(rusage)["utime_us"] >= 0
        mon = json.loads(monitor)
        assert mon["samples"] >= 1 and "monitor_cpu_s" in mon
        assert json.loads(worker)["schema"] == WORKER_SCHEMA
        iters = rows(db, f"SELECT count(*) FROM run_values WHERE run_id={run_id} AND metric='iteration_ns'")
        assert iters[0][0] == 3  # every measured iteration is kept
    schema = rows(db, "SELECT value FROM meta WHERE key='schema_version'")
    assert schema == [(str(STORE_SCHEMA),)]


def test_running_a_complete_campaign_again_does_nothing_twice(tmp_path):
    db = tmp_path / "r.db"
    plan = write_plan(tmp_path)
    assert run_cli("run", str(plan), "--db", str(db)).returncode == 0
    again = run_cli("run", str(plan), "--db", str(db))
    assert again.returncode == 0 and "already complete" in again.stderr
    assert rows(db, "SELECT count(*) FROM runs") == [(3,)]


@pytest.mark.slow
def test_sigkill_mid_campaign_then_rerun_completes_without_duplicates(tmp_path):
    db = tmp_path / "r.db"
    # runs of 200 iterations of at least 1 ms, 2.4 s or more in all: the kill lands mid-campaign (runs of a
    # few ms are stored half a second at a time, WRITE_EVERY_S, and all 12 could be stored before it)
    plan = write_plan(tmp_path, reps=12, iterations=200)
    tag = f"sigkill-{os.getpid()}-{time.time()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--db", str(db), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=tagged_env(tag),
    )
    deadline = time.monotonic() + 60
    stored = 0
    while time.monotonic() < deadline and stored < 4:
        time.sleep(0.05)
        if db.exists():
            try:
                stored = rows(db, "SELECT count(*) FROM runs")[0][0]
            except sqlite3.OperationalError:
                pass
    assert stored >= 4, "the campaign did not get going"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = rows(db, "SELECT id, repetition FROM runs ORDER BY id")
    assert 4 <= len(kept) < 12
    time.sleep(0.5)
    assert tagged_processes(tag) == {}, "a worker outlived the killed runner"
    assert rows(db, "SELECT status FROM campaigns") == [("running",)]

    resumed = run_cli("run", str(plan), "--db", str(db))
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    after = rows(db, "SELECT id, repetition FROM runs ORDER BY id")
    assert after[: len(kept)] == kept  # every finished run is kept as it was
    reps = sorted(r for _, r in after)
    assert reps == list(range(1, 13))  # none twice, none missing
    assert rows(db, "SELECT status FROM campaigns") == [("complete",)]


@pytest.mark.slow
def test_ctrl_c_stops_the_worker_and_keeps_what_was_stored(tmp_path):
    db = tmp_path / "r.db"
    plan = write_plan(tmp_path, reps=40)
    tag = f"ctrl-c-{os.getpid()}-{time.time()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--db", str(db), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=tagged_env(tag),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if db.exists():
            try:
                if rows(db, "SELECT count(*) FROM runs")[0][0] >= 2:
                    break
            except sqlite3.OperationalError:
                pass
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "every finished run is kept" in err
    assert rows(db, "SELECT status FROM campaigns") == [("interrupted",)]
    time.sleep(0.3)
    assert tagged_processes(tag) == {}


def test_bad_plan_is_refused_before_anything_is_written(tmp_path):
    plan = tmp_path / "bad.toml"
    plan.write_text(PLAN.format(name="x", reps=3).replace('name = "noop"', 'name = "nope"'))
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--db", str(db))
    assert proc.returncode == 2
    assert f"{plan}:9: workloads[0].name: unknown workload 'nope'" in proc.stderr
    assert not db.exists()


def test_a_missing_plan_file_and_a_missing_preset_are_usage_errors(tmp_path):
    assert run_cli("run", str(tmp_path / "none.toml"), "--db", str(tmp_path / "r.db")).returncode == 2
    proc = run_cli("run", "--preset", "nope", "--db", str(tmp_path / "r.db"))
    assert proc.returncode == 2 and "quick" in proc.stderr


def test_export_json_has_one_object_per_run_with_the_interface_fields(tmp_path):
    db = tmp_path / "r.db"
    assert run_cli("run", str(write_plan(tmp_path)), "--db", str(db)).returncode == 0
    proc = run_cli("export", "--db", str(db), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == EXPORT_SCHEMA and len(doc["runs"]) == 3
    for r in doc["runs"]:
        for key in (
            "campaign",
            "cell_id",
            "workload",
            "params",
            "condition",
            "repetition",
            "value",
            "unit",
            "valid",
        ):
            assert key in r
        assert r["workload"] == "noop" and r["unit"] == "ns" and r["valid"] is True
    csv_out = tmp_path / "runs.csv"
    assert run_cli("export", "--db", str(db), "--format", "csv", "-o", str(csv_out)).returncode == 0
    lines = csv_out.read_text().splitlines()
    assert lines[0].startswith(f"# boardlab export schema {EXPORT_SCHEMA}") and len(lines) == 1 + 1 + 3
    pq = tmp_path / "runs.parquet"
    assert run_cli("export", "--db", str(db), "--format", "parquet", "-o", str(pq)).returncode == 0
    pyarrow = pytest.importorskip("pyarrow.parquet")
    assert pyarrow.read_table(pq).num_rows == 3


def test_export_of_a_missing_database_is_a_usage_error(tmp_path):
    proc = run_cli("export", "--db", str(tmp_path / "none.db"))
    assert proc.returncode == 2 and "no such results database" in proc.stderr


def test_a_condition_the_board_cannot_do_is_skipped_loudly_when_the_plan_allows_it(tmp_path):
    from boardlab.platform.inventory import inventory

    if inventory("/").capabilities["cpufreq"].supported:
        pytest.skip("this machine has cpufreq: the governor condition would run")
    text = PLAN.format(name="skip", reps=2) + '[[conditions]]\nname = "perf"\nkind = "governor"\n'
    text += 'params = { governor = "performance" }\n'
    plan = tmp_path / "plan.toml"
    db = tmp_path / "r.db"
    plan.write_text(text)
    refused = run_cli("run", str(plan), "--db", str(db))
    assert refused.returncode == 2 and "conditions[0] (perf): unsupported:" in refused.stderr
    plan.write_text(text.replace("[runs]\n", '[runs]\nunsupported = "skip"\n'))
    proc = run_cli("run", str(plan), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "skipping condition 'perf': unsupported:" in proc.stderr
    assert rows(db, "SELECT DISTINCT condition FROM cells") == [("baseline",)]
    env = json.loads(rows(db, "SELECT environment_json FROM campaigns WHERE status='complete'")[0][0])
    assert env["skipped_conditions"]["perf"].startswith("unsupported:")


def test_a_catalog_workload_runs_as_a_continuous_load_on_the_other_cpus(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs: the load runs on the other one")
    text = PLAN.format(name="load", reps=2) + (
        '[[conditions]]\nname = "lu"\nkind = "workload"\n'
        'params = { workload = "scimark.lu", placement = "other", warmup_s = 0.2 }\n'
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    db = tmp_path / "r.db"
    proc = run_cli("run", str(plan), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    got = rows(
        db,
        "SELECT r.condition_state_json, r.valid, r.invalid_reason FROM runs r"
        " JOIN cells c ON c.id = r.cell_id WHERE c.condition = 'lu'",
    )
    # a run made invalid by the machine (a gate, a loaded host) is run again, saying why: the two valid ones
    # are the load's
    assert all(reason for _, valid, reason in got if not valid), got
    states = [json.loads(s) for s, valid, _ in got if valid]
    assert len(states) == 2
    # Alone on its CPU the loop takes most of it; when other programs crowd these CPUs it gets its share of
    # them, so the floor is the share a busy loop can expect at the load measured now.
    floor_pct = min(20.0, 100 * len(os.sched_getaffinity(0)) / max(os.getloadavg()[0], 1.0) / 2)
    for s in states:
        assert s["argv"][1] == "scimark.lu" and "--warmup-max-iterations" in s["argv"]
        assert s["load_cpu_pct"] > floor_pct and not s["load_exited_early"], (s["load_cpu_pct"], floor_pct)
