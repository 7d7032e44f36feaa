"""The store: migrations from every older schema, and refusal of what it cannot read."""

from __future__ import annotations

import sqlite3

import pytest

from boardlab.errors import InputError
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.migrations import MIGRATIONS


def test_migrations_are_numbered_one_to_n_without_gaps():
    assert [n for n, _ in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert STORE_SCHEMA == len(MIGRATIONS)


def test_a_database_at_schema_1_is_migrated_and_keeps_its_rows(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATIONS[0][1])
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute(
        "INSERT INTO boards(fingerprint, label, inventory_json, first_seen_unix_s) VALUES ('f', 'b', '{}', 0)"
    )
    conn.commit()
    conn.close()
    with Store.open(db) as store:
        assert store.schema_version() == STORE_SCHEMA
        assert store.conn.execute("SELECT label FROM boards").fetchall()[0][0] == "b"
        assert store.conn.execute("SELECT count(*) FROM run_histograms").fetchone()[0] == 0


def test_a_newer_store_is_refused_with_the_fix(tmp_path):
    db = tmp_path / "new.db"
    with Store.open(db) as store:
        store.conn.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    with pytest.raises(InputError, match="newer boardlab"):
        Store.open(db)


def test_a_foreign_sqlite_file_and_a_non_database_are_refused(tmp_path):
    foreign = tmp_path / "foreign.db"
    c = sqlite3.connect(foreign)
    c.execute("CREATE TABLE t (x)")
    c.commit()
    c.close()
    with pytest.raises(InputError, match="not one boardlab wrote"):
        Store.open(foreign)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="not a boardlab results database"):
        Store.open(junk)
