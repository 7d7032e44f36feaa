"""`boardlab ingest` of a board file from before the store's derived columns: the monitor rows' summaries
(store schema 10: first and last time, sums of times and values) are computed for the runs it copies, as
migration 10 computes them for a store's own rows, so that its runs read as a schema-10 record of the same
samples would hold them, whether the file's monitor rows are packed (schema 7 to 9) or per sample (before
schema 7); into a SQLite store and a PostgreSQL one (a server the test starts, tests/pg.py)."""

from __future__ import annotations

import sqlite3

import pytest

from boardlab.store import Store, packed
from boardlab.store.ingest import ingest_file

from helpers import make_campaign_db, to_schema_8

SUMMARY = "s.t_first_ns, s.t_last_ns, s.t_sum_ns, s.value_sum"
BY_IDENTITY = (
    "SELECT c.key, r.repetition, r.attempt, s.source, {cols} FROM run_series s JOIN runs r ON r.id = s.run_id"
    " JOIN cells c ON c.id = r.cell_id"
)


def _summaries(db: str) -> list[tuple]:
    """Each monitor row's summary by its run's identity and its source (store ids differ from the file's)."""
    with Store.open(db, create=False) as store:
        rows = store.conn.execute(BY_IDENTITY.format(cols=SUMMARY)).fetchall()
    return sorted(tuple(r) for r in rows)


def _as_recorded(path) -> list[tuple]:
    """The summaries a schema-10 record of the file's samples holds (`packed.summarize`, as record_run
    does)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(BY_IDENTITY.format(cols="s.packing, s.samples, s.t_ns, s.value")).fetchall()
    finally:
        conn.close()
    return sorted((*r[:4], *packed.summarize(*packed.unpack(*r[4:]))) for r in rows)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    return make_campaign_db(tmp_path_factory.mktemp("old files") / "board.db", board="old-1", n=3)


def _schema_6(src, dest):
    """`src` as boardlab wrote it before schema 7 (`to_schema_8`, then without migrations 7 and 8): every
    sample a row of `series`, no packed rows, no summary tables."""
    old = to_schema_8(src, dest)
    conn = sqlite3.connect(old)
    try:
        conn.execute(
            "CREATE TABLE series (run_id INTEGER NOT NULL REFERENCES runs(id), source TEXT NOT NULL,"
            " t_ns INTEGER NOT NULL, value REAL NOT NULL)"
        )
        conn.execute("CREATE INDEX series_by_run ON series(run_id, source)")
        rows = conn.execute("SELECT run_id, source, packing, samples, t_ns, value FROM run_series").fetchall()
        for run_id, source, *row in rows:
            times, values = packed.unpack(*row)
            conn.executemany(
                "INSERT INTO series VALUES (?, ?, ?, ?)",
                [(run_id, source, t, v) for t, v in zip(times, values, strict=True)],
            )
        conn.executescript("DROP TABLE run_series; DROP TABLE campaign_summaries; DROP TABLE step_summaries;")
        conn.execute("UPDATE meta SET value='6' WHERE key='schema_version'")
        conn.commit()
    finally:
        conn.close()
    return old


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
@pytest.mark.parametrize("schema", [8, 6])
def test_an_older_files_monitor_rows_get_the_summaries_a_schema_10_record_holds(
    board, tmp_path, request, dialect, schema
):
    db = request.getfixturevalue("pg_url") if dialect == "postgresql" else str(tmp_path / "lab.db")
    make = to_schema_8 if schema == 8 else _schema_6
    old = make(board, tmp_path / f"board-schema-{schema}.db")
    want = _as_recorded(board)
    assert len(want) == 6 * 34 * 3 and all(None not in r for r in want)  # every row summarizable
    ingest_file(old, db)
    assert _summaries(db) == want
    # another file's runs into the same store: its runs get theirs, those already there keep theirs
    other = make_campaign_db(tmp_path / "other.db", board="old-2", n=1)
    ingest_file(make(other, tmp_path / f"other-schema-{schema}.db"), db)
    assert _summaries(db) == sorted(want + _as_recorded(other))


def test_ingest_says_it_upgrades_an_older_store_once(board, tmp_path):
    """The migrations that move data read every run of the store: the command says why it waits."""
    from boardlab.store import STORE_SCHEMA

    from helpers import run_cli

    lab = tmp_path / "lab.db"
    ingest_file(make_campaign_db(tmp_path / "other.db", board="old-2", n=2), str(lab))
    old = to_schema_8(lab, tmp_path / "old lab.db")
    first = run_cli("ingest", str(board), "--db", str(old))
    assert first.returncode == 0, first.stderr
    assert (
        f"note: {old}: a store of schema 8, from an older boardlab: upgrading it to schema {STORE_SCHEMA} "
        "once, before anything is written (this reads every run of the store)"
    ) in first.stderr
    again = run_cli("ingest", str(board), "--db", str(old))
    assert again.returncode == 0 and "upgrading" not in again.stderr, again.stderr
