"""A run's summary columns (store migration 9) on PostgreSQL (a server the test starts, tests/pg.py):
carried by ingest from a board file that has them, derived for a file from before them, and filled by the
migration of a PostgreSQL store from before them, all as model.run.run_columns derives them."""

from __future__ import annotations

import json
import sqlite3

import pytest

from boardlab.model.run import run_columns
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file
from boardlab.store.migrations import RUN_COLUMNS, column_values

from helpers import RUN_COLUMN_CASES as HOSTILE
from helpers import make_campaign_db, to_schema_8

pytestmark = pytest.mark.integration


def _derived(db) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT monitor_json, rusage_json FROM runs").fetchall()
    conn.close()
    return sorted(
        (column_values(run_columns(json.loads(m), json.loads(r or "{}"))) for m, r in rows), key=repr
    )


def _stored(url: str) -> list[tuple]:
    with Store.open(url, create=False) as store:
        rows = store.conn.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs").fetchall()
    return sorted((tuple(r) for r in rows), key=repr)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    return make_campaign_db(tmp_path_factory.mktemp("pg columns") / "board.db", board="pgcols-1", n=3)


def test_ingest_into_postgresql_carries_the_columns(pg_url, board):
    ingest_file(board, pg_url)
    assert _stored(pg_url) == _derived(board)


def test_ingest_of_a_file_before_the_columns_derives_them(pg_url, board, tmp_path):
    old = to_schema_8(board, tmp_path / "old.db", {3: HOSTILE[2][:2], 4: HOSTILE[1][:2]})
    ingest_file(old, pg_url)
    stored = _stored(pg_url)
    assert stored == _derived(old)
    assert column_values(HOSTILE[2][2]) in stored and column_values(HOSTILE[1][2]) in stored


def test_a_postgresql_store_before_the_columns_is_migrated_with_them_filled(
    pg_url, board, tmp_path, monkeypatch
):
    import boardlab.store.db as db

    old = to_schema_8(board, tmp_path / "old.db", {5: HOSTILE[0][:2]})
    with monkeypatch.context() as m:
        m.setattr(db, "MIGRATIONS", db.MIGRATIONS[:8])
        m.setattr(db, "STORE_SCHEMA", 8)
        ingest_file(old, pg_url)  # a store at schema 8 gets the file's runs without the columns
        with Store.open(pg_url, create=False) as store:
            assert store.schema_version() == 8
            assert "mean_freq_khz" not in {c for c, *_ in store.describe_schema()["runs"]}
    with Store.open(pg_url) as store:  # migration 9 and its data step, on PostgreSQL
        assert store.schema_version() == STORE_SCHEMA
    assert _stored(pg_url) == _derived(old)
