"""`boardlab ingest` into a SQLite store and `export --partition board`, without a PostgreSQL server (the
PostgreSQL side: tests/integration/test_store_pg.py)."""

from __future__ import annotations

import json

import pytest

from boardlab.export import EXPORT_SCHEMA
from boardlab.store import Store

from helpers import grow_sparse, header_pages, make_campaign_db, run_cli, smash_pages


def _runs(path) -> int:
    with Store.open(path, create=False) as s:
        return sum(len(s.runs(c["id"])) for c in s.campaigns())


def test_ingest_into_sqlite_twice_and_after_a_resume(tmp_path):
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2, status="running", seed=3)
    shared = tmp_path / "shared store.db"
    first = run_cli("ingest", str(a), "--db", str(shared), "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)["files"][0]
    n = _runs(a)
    assert (doc["runs_added"], doc["runs_skipped"], doc["campaigns_added"], doc["boards"]) == (
        n,
        0,
        1,
        ["bbb-1"],
    )
    make_campaign_db(a, board="bbb-1", n=3, first_rep=3, seed=3)  # resumed on the board
    again = run_cli("ingest", str(a), "--db", str(shared))
    assert again.returncode == 0 and f"{_runs(a) - n} runs added, {n} already in" in again.stdout, (
        again.stdout
    )
    assert _runs(shared) == _runs(a)
    same = run_cli("ingest", str(a), "--db", str(shared))
    assert f"0 runs added, {_runs(a)} already in" in same.stdout and _runs(shared) == _runs(a)


def test_one_campaign_in_two_files_of_one_ingest_ends_with_every_run(tmp_path):
    # before: its summary was queued twice and the ingest waited for ever for the second (two cores or more)
    import shutil

    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2, status="running", seed=3)
    old = tmp_path / "a then.db"
    shutil.copy2(a, old)
    make_campaign_db(a, board="bbb-1", n=3, first_rep=3, seed=3)  # resumed on the board since the copy
    for files, db in (([a, a], tmp_path / "same.db"), ([old, a], tmp_path / "grown.db")):
        proc = run_cli("ingest", *map(str, files), "--db", str(db), timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert _runs(db) == _runs(a)


def test_ingest_refuses_its_own_target_and_a_bad_file_before_creating_the_store(tmp_path):
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2)
    proc = run_cli("ingest", str(a), "--db", str(a))
    assert proc.returncode == 2 and "is the target store itself" in proc.stderr
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"x" * 4096)
    target = tmp_path / "new.db"
    proc = run_cli("ingest", str(a), str(bad), "--db", str(target))
    assert proc.returncode == 2 and str(bad) in proc.stderr and "Traceback" not in proc.stderr
    assert not target.exists()  # verified first: nothing written, not even the good file
    proc = run_cli("ingest", str(tmp_path / "missing.db"), "--db", str(target))
    assert proc.returncode == 2 and "missing.db" in proc.stderr and not target.exists()


def test_export_partitioned_by_board_from_a_merged_sqlite_store(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    a = make_campaign_db(tmp_path / "a.db", board="bbb/1 x", n=2)  # a label that needs escaping in a path
    b = make_campaign_db(tmp_path / "b.db", board="odroid", n=3, speed=2.0)
    merged = tmp_path / "merged.db"
    assert run_cli("ingest", str(a), str(b), "--db", str(merged)).returncode == 0
    out = tmp_path / "out"
    proc = run_cli(
        "export", "--db", str(merged), "--format", "parquet", "--partition", "board", "-o", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    parts = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert parts == ["board=bbb%2F1 x/part-0.parquet", "board=odroid/part-0.parquet"]
    table = pq.read_table(out / "board=odroid" / "part-0.parquet")
    assert (
        table.schema.metadata[b"boardlab_export_schema"] == str(EXPORT_SCHEMA).encode()
        and "board" not in table.column_names
    )
    assert table.num_rows == _runs(b)
    assert (
        run_cli(
            "export", "--db", str(merged), "--format", "csv", "--partition", "board", "-o", str(out)
        ).returncode
        == 2
    )


def test_a_partitioned_export_replaces_only_an_earlier_export_never_what_else_is_there(tmp_path):
    """Replacing an export deletes the old directory: one that holds the results database being exported (or
    anything no export wrote, even inside a board's directory) is refused, and all of it stays."""
    pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    db = make_campaign_db(tmp_path / "a.db", board="vm", n=2)
    out = tmp_path / "part"

    def export(source):
        args = ("export", "--db", str(source), "--format", "parquet", "--partition", "board", "-o", str(out))
        return run_cli(*args)

    assert export(db).returncode == 0
    assert export(db).returncode == 0  # an earlier export alone: replaced
    inside = out / "lab.db"
    inside.write_bytes(db.read_bytes())
    proc = export(inside)
    assert proc.returncode == 2 and "lab.db" in proc.stderr and "Traceback" not in proc.stderr
    assert inside.read_bytes() == db.read_bytes() and (out / "board=vm" / "part-0.parquet").is_file()
    inside.unlink()
    notes = out / "board=vm" / "notes.txt"
    notes.write_text("mine\n")
    proc = export(db)
    assert proc.returncode == 2 and "board=vm/notes.txt" in proc.stderr
    assert notes.read_text() == "mine\n"
    notes.unlink()
    assert export(db).returncode == 0


def _campaign_rows(path) -> list[tuple]:
    with Store.open(path, create=False) as s:
        return [
            (c["uid"], c["name"], c["plan_text"], c["status"], c["board_id"], len(s.runs(c["id"])))
            for c in s.campaigns()
        ]


def test_ingest_refuses_a_campaign_uid_of_another_board_and_changes_nothing(tmp_path):
    """A campaign is (uid, board fingerprint): a file whose campaign carries another board's campaign uid
    (as many runs, another name and plan) is refused naming both, and the victim stays as it was."""
    a = make_campaign_db(tmp_path / "a.db", name="victim", board="bbb-1", n=2)
    b = make_campaign_db(tmp_path / "b.db", name="intruder", board="odroid", n=2, status="failed", seed=5)
    with Store.open(a, create=False) as s:
        uid = s.campaigns()[0]["uid"]
    import sqlite3

    with sqlite3.connect(b) as conn:
        conn.execute("UPDATE campaigns SET uid=?", (uid,))
    conn.close()
    shared = tmp_path / "shared.db"
    assert run_cli("ingest", str(a), "--db", str(shared)).returncode == 0
    before = _campaign_rows(shared)
    proc = run_cli("ingest", str(b), "--db", str(shared))
    assert proc.returncode == 2, proc.stderr
    assert "'victim'" in proc.stderr and "'bbb-1'" in proc.stderr and "'intruder'" in proc.stderr
    assert "fp-odroid" in proc.stderr and "Traceback" not in proc.stderr
    assert _campaign_rows(shared) == before
    with Store.open(shared, create=False) as s:
        assert [b["label"] for b in s.boards()] == ["bbb-1"]  # nothing of the refused file stays


def test_an_ingest_waits_for_a_sqlite_store_in_use_and_says_for_whom(tmp_path):
    """A second writer of a shared SQLite store (here this test, as another ingest would) makes an ingest
    wait, naming the holder's pid, then finish, instead of failing at once."""
    import os
    import subprocess
    import sys
    import time

    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2)
    shared = tmp_path / "shared.db"
    holder = Store.open(shared)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "boardlab", "ingest", str(a), "--db", str(shared)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = proc.stderr.readline()  # blocks until the ingest says it waits
        assert f"pid {os.getpid()}" in line and "waiting" in line, line
        time.sleep(0.3)
        assert proc.poll() is None  # still waiting, not failed
    finally:
        holder.close()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert _runs(shared) == _runs(a)


def _page_bytes(path) -> int:
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("empty", ["no file", "a 0-byte file", "an empty SQLite database"])
def test_ingest_makes_its_store_with_lab_pages_where_there_is_none(tmp_path, empty):
    """The store ingest makes, in a new file or in an empty one (a 0-byte file, or a SQLite database without
    tables: once a traceback), has the lab's 16 KB pages; a store that exists keeps its own page size."""
    import sqlite3

    from boardlab.store.ingest import LAB_PAGE_BYTES

    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2)
    lab = tmp_path / "lab store.db"
    if empty == "a 0-byte file":
        lab.write_bytes(b"")
    elif empty == "an empty SQLite database":
        conn = sqlite3.connect(lab)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    proc = run_cli("ingest", str(a), "--db", str(lab))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert _runs(lab) == _runs(a)
    # a header-only database already has SQLite's default size: SQLite cannot change it in WAL mode
    expected = 4096 if empty == "an empty SQLite database" else LAB_PAGE_BYTES
    assert LAB_PAGE_BYTES != 4096 and _page_bytes(lab) == expected
    assert _page_bytes(a) == 4096  # a board's store, made by a campaign, keeps SQLite's default
    b = make_campaign_db(tmp_path / "b.db", board="odroid", n=2)
    before = _runs(a)
    assert run_cli("ingest", str(b), "--db", str(a)).returncode == 0  # into a store that exists: as it is
    assert _page_bytes(a) == 4096 and _runs(a) == before + _runs(b)


# ---- the writer's open check of a large store (issue 44; unit: tests/unit/test_store_open_check.py) ----


@pytest.fixture
def large_lab(tmp_path):
    """A lab store holding board a's campaign, grown past Store.FULL_CHECK_MAX_BYTES by a sparse tail (its
    header counts the pages in use: SQLite never reads the tail), and board b's file to ingest into it."""
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2)
    b = make_campaign_db(tmp_path / "b.db", board="odroid", n=2)
    lab = tmp_path / "lab.db"
    assert run_cli("ingest", str(a), "--db", str(lab)).returncode == 0
    page_size, _ = header_pages(lab)
    grow_sparse(lab, Store.FULL_CHECK_MAX_BYTES + page_size)
    return lab, b


def _refused(proc, lab) -> None:
    """Exit 2, no traceback, one line naming the store as corrupted and the fix."""
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    line = next(ln for ln in proc.stderr.splitlines() if str(lab) in ln)
    assert "corrupted" in line and "restore it from a copy" in line, proc.stderr


def test_ingest_into_a_large_store_checks_it_bounded_and_says_so_once(large_lab):
    lab, b = large_lab
    proc = run_cli("ingest", str(b), "--db", str(lab))
    assert proc.returncode == 0, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if ln.startswith("note:")]
    assert len(notes) == 1 and str(lab) in notes[0] and "1.0 GiB" in notes[0], proc.stderr
    assert "--full-check" in notes[0]
    assert _runs(lab) == _runs(b) + _runs(b.with_name("a.db"))
    again = run_cli("ingest", str(b), "--db", str(lab), "--full-check")  # the whole file: no note
    assert again.returncode == 0 and "note:" not in again.stderr, again.stderr


def test_a_truncated_large_store_is_refused_before_anything_is_written(large_lab):
    lab, b = large_lab
    grow_sparse(lab, lab.stat().st_size - 100)  # a copy cut inside its last page
    proc = run_cli("ingest", str(b), "--db", str(lab))
    _refused(proc, lab)
    assert "a truncated copy" in proc.stderr


def test_a_damaged_campaign_index_in_a_large_store_is_refused(large_lab):
    lab, b = large_lab
    smash_pages(lab, "campaigns_by_status")
    _refused(run_cli("ingest", str(b), "--db", str(lab)), lab)


def test_full_check_reads_the_runs_of_a_large_store_too(large_lab):
    lab, b = large_lab
    smash_pages(lab, "run_values")  # what the bounded check leaves to the full one
    _refused(run_cli("ingest", str(b), "--db", str(lab), "--full-check"), lab)
