"""Cases 2, 4 and 10: one campaign at a time on a database, `--db` is a path, and read-only commands
change nothing in a file they do not recognize."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

from reliability.util import assert_one_line_error, stored_runs, write_plan

from helpers import run_cli


def _start_run(plan, db, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "boardlab", "run", str(plan), "--db", str(db), "--quiet", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_second_run_on_a_busy_database_exits_2_naming_the_first(lab):
    slow = write_plan(
        lab / "slow.toml",
        name='"slow"',
        reps=3,
        iterations=2000,  # about a second per run: the second `run` arrives while the first measures
        runs_extra="warmup_max_ms = 0",
        workload_extra="params = { steps = 1000000 }",
    )
    other = write_plan(lab / "other.toml", name='"other"')
    db = lab / "busy.db"
    first = _start_run(slow, db)
    try:
        deadline = time.monotonic() + 60
        while not db.exists() and time.monotonic() < deadline:  # the first holds the lock from its creation
            time.sleep(0.02)
        time.sleep(0.3)
        assert first.poll() is None, first.communicate()
        second = run_cli("run", str(other), "--db", str(db), "--quiet")
        line = assert_one_line_error(second, 2, str(db), f"pid {first.pid}", "boardlab")
        assert "run" in line
    finally:
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert "Traceback" not in err
    assert stored_runs(db) == 3  # the first campaign's runs only, none disturbed by a second runner


def test_two_runs_started_at_once_on_a_new_file_one_runs_one_is_refused(lab):
    # runs of about a second: the campaign outlasts any start-up skew between the two processes
    plan = write_plan(
        lab / "p.toml",
        reps=2,
        iterations=1000,
        runs_extra="warmup_max_ms = 0",
        workload_extra="params = { steps = 1000000 }",
    )
    db = lab / "new.db"
    procs = [_start_run(plan, db) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    errors = "".join(err for _, err in results)
    assert codes == [0, 2], (codes, errors)
    assert "already exists" not in errors and "Traceback" not in errors
    assert "in use by" in errors
    assert stored_runs(db) == 2


def test_db_is_a_path_never_an_sqlite_uri(lab):
    plan = write_plan(lab / "p.toml")
    name = "file:m.db?mode=memory"
    proc = run_cli("run", str(plan), "--db", name, "--quiet", cwd=lab)
    assert proc.returncode == 0, proc.stderr
    assert (lab / name).is_file()  # kept, on disk, under exactly that name
    assert stored_runs(lab / name) == 2
    report = run_cli("report", "--db", name, "--format", "text", cwd=lab)
    assert report.returncode == 0 and "2/2 runs valid" in report.stdout, report.stderr


def _foreign(path):
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE notes(text)")
        c.execute("INSERT INTO notes VALUES ('mine')")
    c.close()
    return path.read_bytes()


def test_report_refuses_a_foreign_sqlite_file_without_switching_it_to_wal(lab):
    foreign = lab / "notes.sqlite"
    before = _foreign(foreign)
    assert before[18:20] == b"\x01\x01"  # rollback-journal mode (WAL would be 2, 2)
    for args in (["report", "--db", str(foreign), "--format", "text"], ["export", "--db", str(foreign)]):
        proc = run_cli(*args)
        assert_one_line_error(proc, 2, str(foreign), "not one boardlab wrote")
        assert foreign.read_bytes() == before
    assert sorted(p.name for p in lab.iterdir()) == ["notes.sqlite"]  # no -wal, no -shm left


def test_run_refuses_a_foreign_sqlite_file_without_changing_it(lab):
    foreign = lab / "notes.sqlite"
    before = _foreign(foreign)
    proc = run_cli("run", str(write_plan(lab / "p.toml")), "--db", str(foreign), "--quiet")
    assert_one_line_error(proc, 2, str(foreign), "not one boardlab wrote")
    assert foreign.read_bytes() == before
    assert os.path.exists(foreign)


def test_readers_leave_no_sidecar_files_and_never_remove_another_readers(results_db):
    from boardlab.store import Store

    def sidecars():
        return sorted(p.name for p in results_db.parent.iterdir() if p.name.startswith(results_db.name + "-"))

    assert sidecars() == []
    Store.open(results_db, create=False).close()
    assert sidecars() == []  # a reader removes the -wal/-shm files SQLite made for it
    first = Store.open(results_db, create=False)
    second = Store.open(results_db, create=False)
    assert "lab.db-shm" in sidecars()
    first.close()
    assert "lab.db-shm" in sidecars()  # never removed while another reader uses it
    assert second.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
    second.close()


def test_a_reader_that_refuses_a_damaged_or_newer_store_leaves_no_sidecar_files(results_db):
    # a refused open closed before it took its share of the -shm file, so its close left both files behind
    with sqlite3.connect(results_db) as c:
        c.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    c.close()
    truncated = results_db.parent / "truncated.db"
    truncated.write_bytes(_first_pages(results_db))
    for db, needle in ((results_db, "newer boardlab"), (truncated, "corrupted")):
        for args in (["report", "--format", "md"], ["export"], ["history", "--plan", "rel"]):
            proc = run_cli(*args, "--db", str(db))
            assert_one_line_error(proc, 2, str(db), needle)
            assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name + "-")) == []


def _first_pages(db) -> bytes:
    """The first two pages of a WAL database: its header says WAL and its tables point past the end."""
    data = db.read_bytes()
    return data[: 2 * int.from_bytes(data[16:18], "big")]


def test_a_campaign_id_no_64_bit_column_holds_is_not_found(results_db):
    huge = str(2**64)  # before: the driver's OverflowError, an internal error
    for args in (["report", "--db", str(results_db), "--format", "md", "--campaign", huge],
                 ["compare", str(results_db), str(results_db), "--campaign-b", huge]):  # fmt: skip
        assert_one_line_error(run_cli(*args), 2, str(results_db), f"no campaign with id {huge}")
