"""A user's program as a campaign's workload, end to end: a shell one-liner declared with kind = "program",
measured alone and beside a same-CPU stress-ng cpu stressor; stored, reported and exported like any
workload, and a failing program failing its runs with its stderr."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from pathlib import Path

import pytest

from helpers import rows, run_cli, tagged_env

# quiet: the stressor must slow the program's wall time by over 1.3x; beside another test file it measured
# 1.24x (the module's tests share one campaign, so all of them run in the quiet part)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.quiet,
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed"),
]

PLAN = """\
name = "my-program"
[runs]
repetitions = 3
order = "interleave"
[gates]
idle = false
[[workloads]]
kind = "program"
name = "sh.count"
argv = ["sh", "-c", "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done; echo counted=$i"]
params = { n = 100000 }  # a quarter second a run: many scheduler slices beside the stressor
metric = { rusage = "user_s" }
timeout_s = 120
[[workloads]]
kind = "program"
name = "sh.echo"
argv = ["sh", "-c", "echo counted=$(( {n} * 2 ))"]
params = { n = 21 }
metric = { regex = "counted=(?P<c>[0-9]+)", name = "count", unit = "items", better = "higher" }
[[conditions]]
name = "cpu-same"
kind = "stressor"
params = { stressor = "cpu", placement = "same", warmup_s = 0.3 }
workloads = ["sh.count"]
"""


def _env(tmp_path: Path) -> dict:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return tagged_env(
        f"program-{os.getpid()}-{time.time()}",
        BOARDLAB_STATE_DIR=str(tmp_path / "state"),
        TMPDIR=str(tmp_path / "tmp"),
    )


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("program campaign")  # a path with a space, as a user's may have
    (tmp / "plan.toml").write_text(PLAN)
    db = tmp / "r.db"
    proc = run_cli("run", str(tmp / "plan.toml"), "--db", str(db), "--json", timeout=600, env=_env(tmp))
    assert proc.returncode == 0, proc.stderr
    return tmp, db, json.loads(proc.stdout)


def test_the_program_runs_as_a_cell_of_the_campaign_alone_and_under_the_stressor(campaign):
    _, db, out = campaign
    assert out["status"] == "complete" and out["runs_done"] == 9 == out["runs_total"]
    runs = rows(
        db,
        "SELECT c.workload, c.condition, r.valid, r.value, r.condition_state_json FROM runs r "
        "JOIN cells c ON c.id = r.cell_id ORDER BY r.seq",
    )
    assert {(w, c) for w, c, *_ in runs} == {("sh.count", "baseline"), ("sh.count", "cpu-same"),
                                               ("sh.echo", "baseline")}  # fmt: skip
    assert all(valid == 1 for _, _, valid, _, _ in runs)
    assert {v for w, _, _, v, _ in runs if w == "sh.echo"} == {42.0}  # the figure read from its output
    stressed = [json.loads(s) for w, c, _, _, s in runs if c == "cpu-same"]
    assert all(s["stressor"] == "cpu" for s in stressed)


def test_the_same_cpu_stressor_slows_the_programs_wall_time(campaign):
    _, db, _ = campaign
    walls = rows(
        db,
        "SELECT c.condition, v.value FROM run_values v JOIN runs r ON r.id = v.run_id "
        "JOIN cells c ON c.id = r.cell_id WHERE c.workload = 'sh.count' AND v.metric = 'wall_s'",
    )
    base = statistics.median(v for c, v in walls if c == "baseline")
    loaded = statistics.median(v for c, v in walls if c == "cpu-same")
    assert loaded > 1.3 * base  # the CPU shared with a busy stressor: about twice the wall time


def test_report_and_export_show_the_program_like_any_workload(campaign):
    tmp, db, _ = campaign
    md = run_cli("report", "--db", str(db), "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "sh.count" in md.stdout and "cpu-same" in md.stdout and "sh.echo" in md.stdout
    exported = run_cli("export", "--db", str(db), "--format", "json")
    assert exported.returncode == 0, exported.stderr
    doc = json.loads(exported.stdout)
    units = {(r["workload"], r["unit"]) for r in doc["runs"]}
    assert units == {("sh.count", "s"), ("sh.echo", "items")}
    csv_out = tmp / "runs.csv"
    assert run_cli("export", "--db", str(db), "--format", "csv", "-o", str(csv_out)).returncode == 0
    assert sum("sh.count" in line for line in csv_out.read_text().splitlines()) == 6


def test_a_failing_program_fails_its_runs_with_its_stderr_tail(tmp_path):
    (tmp_path / "plan.toml").write_text(
        'name = "fails"\n[runs]\nrepetitions = 2\nmax_reruns = 0\n[gates]\nidle = false\n'
        '[[workloads]]\nkind = "program"\nname = "sh.fail"\n'
        'argv = ["sh", "-c", "echo the disk is full >&2; exit 4"]\n'
    )
    db = tmp_path / "r.db"
    proc = run_cli("run", str(tmp_path / "plan.toml"), "--db", str(db), env=_env(tmp_path))
    errors = rows(db, "SELECT ok, error FROM runs")
    assert len(errors) == 2, proc.stderr
    assert all(ok == 0 and error == "sh exited 4; stderr: the disk is full" for ok, error in errors)
