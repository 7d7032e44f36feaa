"""What `boardlab fleet run` checks in a board's fetched database before ingesting it, on a database written
by a real (tiny) campaign; and how it reads the board-side script's answers."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from boardlab.campaign.plan import parse_plan
from boardlab.fleet.board import parse_poll
from boardlab.fleet.verify import expected_cells, verify
from boardlab.workloads import all_workloads

from helpers import run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

PLAN = """
name = "verify-tiny"
[runs]
repetitions = 2
iterations = 2
warmup_max_iterations = 0
[gates]
idle = false
temperature = false
[[workloads]]
name = "mibench.crc32"
[[workloads]]
name = "mibench.sha1"
"""


@pytest.fixture(scope="module")
def board_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("board")
    (d / "plan.toml").write_text(PLAN)
    proc = run_cli("run", str(d / "plan.toml"), "--db", str(d / "results.db"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    return d / "results.db"


@pytest.fixture
def plan():
    catalog = {w.name: w for w in all_workloads()}
    return parse_plan(PLAN, "plan.toml", catalog), catalog


def test_a_complete_campaign_verifies(board_db, plan):
    p, catalog = plan
    v = verify(board_db, p, expected_cells(p, catalog))
    assert v.ok and v.problem is None and v.campaign_status == "complete"
    assert v.cells == 2 and v.runs == v.valid_runs == 4 and v.unfinished == {}


def test_missing_runs_are_named_not_faked(board_db, plan, tmp_path):
    p, catalog = plan
    db = tmp_path / "results.db"
    shutil.copy(board_db, db)
    with sqlite3.connect(db) as conn:  # as if the board died before its last run and before marking it
        conn.execute("PRAGMA foreign_keys=OFF")
        (run_id,) = conn.execute("SELECT max(id) FROM runs").fetchone()
        key, rep = conn.execute(
            "SELECT c.key, r.repetition FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.id=?", (run_id,)
        ).fetchone()
        for table in (
            "run_values",
            "run_metrics",
            "run_series",
            "run_histograms",
            "run_energy",
            "run_results",
        ):
            conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
        conn.execute("DELETE FROM runs WHERE id=?", (run_id,))
        conn.execute("UPDATE campaigns SET status='interrupted'")
    v = verify(db, p, expected_cells(p, catalog))
    assert not v.ok and v.unfinished == {key: [rep]}
    assert v.problem == "campaign interrupted (1 runs of 1 cells not done)"


def test_another_plan_or_a_damaged_file_is_refused(board_db, plan, tmp_path):
    p, catalog = plan
    other = parse_plan(PLAN.replace("repetitions = 2", "repetitions = 3"), "plan.toml", catalog)
    v = verify(board_db, other, expected_cells(other, catalog))
    assert not v.ok and v.problem == "no campaign of this plan in the board's database"
    damaged = tmp_path / "damaged.db"
    data = bytearray(board_db.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\xff" * 4096
    damaged.write_bytes(bytes(data))
    v = verify(damaged, p, None)
    assert not v.ok and v.problem


@pytest.mark.parametrize(
    "lines, expected",
    [
        (["done 0"], ("done", "0")),
        (["done 130"], ("done", "130")),
        (["running [3/6] mibench.crc32[]@baseline rep 2: 110 MB/s (ok) ETA 0:04"], ("running", "3/6")),
        (["running campaign fleet-tiny: 6 runs"], ("running", "")),
        (["gone"], ("gone", "")),
        (["sh: 1: cannot open fleet.sh"], ("unknown", "sh: 1: cannot open fleet.sh")),
    ],
)
def test_poll_answers(lines, expected):
    assert parse_poll(lines) == expected
