"""`run` and `bench` exit 1 when every run they made failed: a script's `boardlab run plan && boardlab report`
must not go on as if a campaign of failed runs had measured something. The failed runs are stored all the
same (each with its error), and a campaign with one measured cell among failing ones exits 0."""

from __future__ import annotations

import sqlite3

from helpers import run_cli

PLAN = """\
name = "exit-{name}"
[runs]
repetitions = 2
max_reruns = 0
[gates]
idle = false
temperature = false
[[workloads]]
kind = "program"
name = "fails"
argv = ["sh", "-c", "echo the disk is full >&2; exit 4"]
"""

MEASURED = """\
[[workloads]]
kind = "program"
name = "works"
argv = ["true"]
"""


def _run(tmp_path, name: str, plan: str):
    (tmp_path / f"{name}.toml").write_text(plan.format(name=name))
    db = tmp_path / f"{name}.db"
    p = run_cli("run", str(tmp_path / f"{name}.toml"), "--db", str(db), "--quiet")
    conn = sqlite3.connect(db)
    try:
        stored = conn.execute("SELECT count(*), sum(ok), min(error) FROM runs").fetchone()
    finally:
        conn.close()
    return p, stored


def test_a_campaign_whose_every_run_failed_exits_1_and_keeps_its_runs(tmp_path):
    p, (runs, ok, error) = _run(tmp_path, "all", PLAN)
    assert p.returncode == 1, p.stderr
    assert "boardlab run: all 2 runs failed: nothing was measured" in p.stderr
    assert (runs, ok) == (2, 0) and "the disk is full" in error


def test_a_campaign_with_a_measured_cell_among_failing_ones_exits_0(tmp_path):
    p, (runs, ok, _) = _run(tmp_path, "some", PLAN + MEASURED)
    assert p.returncode == 0, p.stderr
    assert (runs, ok) == (4, 2) and "nothing was measured" not in p.stderr


def test_bench_of_a_command_that_always_fails_exits_1(tmp_path):
    p = run_cli("bench", "sh -c 'exit 3'", "--runs", "2", "--db", str(tmp_path / "b.db"), cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert "boardlab bench: all" in p.stderr and "nothing was measured" in p.stderr
