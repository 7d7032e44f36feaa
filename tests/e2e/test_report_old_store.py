"""A store whose campaigns were stored before boardlab stored their workloads' facts: the CLI that opens it
for analysis writes them once, from this host's catalog, and says so; a store it cannot write is analysed
without writing, its workloads as plain ones, and the CLI says why."""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3

import pytest

from boardlab.model.facts import WORKLOAD_FACTS

from helpers import make_campaign_db, run_cli, to_schema_8

NOTICE = "workload facts derived from this host's catalog and stored"


@pytest.fixture
def old_db(tmp_path):
    db = tmp_path / "old.db"
    make_campaign_db(db, name="old", seed=1, n=4, with_latency=False)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("DELETE FROM artifacts WHERE name=?", (WORKLOAD_FACTS,))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone holds the store: copied as a whole
    finally:
        conn.close()
    return db


def _stored(db) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT count(*) FROM artifacts WHERE name=?", (WORKLOAD_FACTS,)).fetchone()[0]


def test_an_old_store_gets_its_facts_written_once_and_the_cli_says_so(old_db, tmp_path):
    p = run_cli("report", "--db", str(old_db), "--format", "md", "-o", str(tmp_path / "first.md"))
    assert p.returncode == 0, p.stderr
    assert f"campaign 1: {NOTICE}" in p.stderr and "Traceback" not in p.stderr
    assert _stored(old_db) == 1
    q = run_cli("report", "--db", str(old_db), "--format", "md", "-o", str(tmp_path / "again.md"))
    assert q.returncode == 0, q.stderr
    assert NOTICE not in q.stderr  # once: the store has them now
    assert (tmp_path / "first.md").read_bytes() == (tmp_path / "again.md").read_bytes()
    assert "scimark.fft" in (tmp_path / "first.md").read_text()


def test_a_store_of_an_older_schema_is_said_to_be_migrated_when_its_facts_are_stored(old_db, tmp_path):
    """Storing the facts opens the store as a campaign does, which migrates it: an older boardlab cannot open
    it after, so the CLI says so."""
    from boardlab.store import STORE_SCHEMA

    db = to_schema_8(old_db, tmp_path / "schema8.db")
    p = run_cli("report", "--db", str(db), "--format", "md", "-o", str(tmp_path / "r.md"))
    assert p.returncode == 0, p.stderr
    assert f"store migrated from schema 8 to {STORE_SCHEMA} to store them" in p.stderr
    assert f"campaign 1: {NOTICE}" in p.stderr and _stored(db) == 1


def test_compare_stores_them_once_for_two_sides_of_one_store(old_db, tmp_path):
    p = run_cli("compare", str(old_db), str(old_db), "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count(NOTICE) == 1 and _stored(old_db) == 1  # the second side found them stored


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_held_by_a_campaign_is_analysed_without_writing_and_says_why(old_db, tmp_path):
    before = _sha(old_db)
    fd = os.open(old_db, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running campaign holds its store
        p = run_cli("report", "--db", str(old_db), "--format", "md", "-o", str(tmp_path / "held.md"))
    finally:
        os.close(fd)
    assert p.returncode == 0, p.stderr
    assert "campaign 1: stored without workload facts" in p.stderr and "cannot be written" in p.stderr
    assert "in use by" in p.stderr and "plain workloads" in p.stderr and "Traceback" not in p.stderr
    assert NOTICE not in p.stderr and _stored(old_db) == 0 and _sha(old_db) == before
    assert "scimark.fft" in (tmp_path / "held.md").read_text()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only file")
def test_a_read_only_copy_is_analysed_without_writing_and_says_why(old_db, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    copy = ro / "old.db"
    copy.write_bytes(old_db.read_bytes())
    copy.chmod(0o444)
    ro.chmod(0o555)
    try:
        p = run_cli("report", "--db", str(copy), "--format", "md", "-o", str(tmp_path / "ro.md"))
    finally:
        ro.chmod(0o755)
    assert p.returncode == 0, p.stderr
    assert "stored without workload facts" in p.stderr and "cannot be written" in p.stderr
    assert NOTICE not in p.stderr and _stored(copy) == 0 and "Traceback" not in p.stderr


def test_many_campaigns_without_facts_are_said_in_one_line(tmp_path):
    db = tmp_path / "lab.db"
    for k in range(7):
        make_campaign_db(db, name=f"p{k}", seed=k, n=1, with_latency=False, conditions=("baseline",))
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM artifacts WHERE name=?", (WORKLOAD_FACTS,))
    conn.close()
    p = run_cli("history", "--db", str(db), "--plan", "p0")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count(NOTICE) == 1 and f"campaigns 1 to 7 (7 campaigns): {NOTICE}" in p.stderr, p.stderr
    assert _stored(db) == 7
