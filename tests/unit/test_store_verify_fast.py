"""The store check's fast scan (store/verify.py `_fast_scan`: comparisons with '' and x'' instead of
typeof(), one typeof() of a sum for every integer, the foreign keys in the same scan) refuses exactly the
rows the full checks and SQLite's foreign key check refuse: every column of every table of a stored
campaign, set to values of every type and edge, one at a time."""

from __future__ import annotations

import re
import shutil
import sqlite3
import threading

import pytest

from boardlab.store import Store
from boardlab.store.verify import DamagedStore, _column_checks, _fast_references, _fast_scan, verify_store

from helpers import make_campaign_db

VALUES = [None, 0, 1, 2, -1, 2**63 - 1, -(2**63), 1.0, 0.5, -0.0, 1e300, float("inf"), float("-inf"),
          253402300800.0, -1.0, "", "1", "x", "{}", " {}", "\n[]", "[]", "[1, -2]", "[3]", '{"a": 1}', "{",
          "[1, 2.5]", "null", '"{"', "{}x", b"", b"\x00" * 8, b"\x00" * 16, b"{}"]  # fmt: skip


def _full_refuses(conn, table: str, columns) -> bool:
    checks = [c for col, kind, nn, _pk in columns for c in _column_checks(table, col, kind, nn)]
    conds = [f"({sql}) IS 1" for _, sql, _ in checks]
    try:
        if conn.execute(f'SELECT 1 FROM "{table}" WHERE NOT ({" AND ".join(conds)}) LIMIT 1').fetchone():
            return True
    except sqlite3.OperationalError:  # the full check names this as damage too
        return True
    return conn.execute(f'PRAGMA foreign_key_check("{table}")').fetchone() is not None


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    path = make_campaign_db(tmp_path_factory.mktemp("fast") / "board.db", board="fast-1", n=2)
    with sqlite3.connect(path) as conn:  # a row in the tables make_campaign_db leaves empty
        conn.execute(
            "INSERT INTO run_histograms(run_id, name, bucket_width, unit, counts_json, overflow, total)"
            " VALUES (1, 'latency', 1.0, 'us', '[3, 4]', 0, 7)"
        )
    conn.close()
    with Store.open(path, create=False) as store:
        schema = store.describe_schema()
    return path, schema


@pytest.mark.slow
def test_the_fast_scan_refuses_what_the_full_checks_refuse(pristine, tmp_path):
    path, schema = pristine
    db = tmp_path / "copy.db"
    shutil.copy(path, db)
    conn = sqlite3.connect(db)
    # a NULL where the schema says NOT NULL (a file damaged below SQL): the copy's tables lose the
    # constraint, the checks keep the pristine schema's
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute("UPDATE sqlite_master SET sql=replace(sql, 'NOT NULL', '') WHERE type='table'")
    conn.commit()
    conn.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    tested = refused = nulls = 0
    for table in ("runs", "run_series", "run_values", "run_metrics", "run_histograms", "campaigns", "cells"):
        columns, refs = schema[table], _fast_references(conn, table, schema)
        assert refs is not None  # boardlab's own keys are all of the form the fast scan covers
        assert not _full_refuses(conn, table, columns) and _fast_scan(conn, table, columns, refs)
        key = "rowid" if table not in ("run_values", "run_series") else "run_id"
        for col, *_ in columns:
            for value in VALUES:
                conn.execute("SAVEPOINT v")
                try:
                    conn.execute(
                        f'UPDATE "{table}" SET "{col}"=? WHERE {key}=(SELECT max({key}) FROM "{table}")',
                        (value,),
                    )
                except sqlite3.IntegrityError:  # a NOT NULL or a key the table refuses itself
                    conn.execute("ROLLBACK TO v")
                    conn.execute("RELEASE v")
                    continue
                full = _full_refuses(conn, table, columns)
                assert (not _fast_scan(conn, table, columns, refs)) == full, (table, col, value)
                tested, refused = tested + 1, refused + full
                nulls += value is None and any(c == col and nn for c, _k, nn, _pk in columns)
                conn.execute("ROLLBACK TO v")
                conn.execute("RELEASE v")
    conn.close()
    assert tested > 1000 and 0 < refused < tested  # both answers were seen
    assert nulls > 10  # NULL reached NOT NULL columns


DAMAGE = {
    "run_series": "UPDATE run_series SET t_ns = x'0001' WHERE run_id = (SELECT max(run_id) FROM run_series)",
    "runs": "UPDATE runs SET value = 'fast' WHERE id = (SELECT max(id) FROM runs)",
}


def _damaged_copy(path, tmp_path, damaged: tuple[str, ...]):
    """A copy of the stored campaign with the `DAMAGE` of each table in `damaged`."""
    db = tmp_path / "copy.db"
    shutil.copy(path, db)
    with sqlite3.connect(db) as conn:
        for table in damaged:
            conn.execute(DAMAGE[table])
    conn.close()
    return db


@pytest.mark.parametrize("damaged", [(), ("run_series",), ("runs",), ("run_series", "runs")])
def test_the_side_scan_finds_what_the_scan_in_one_thread_finds(pristine, tmp_path, damaged):
    """With a second connection, run_series is scanned in a thread beside the other tables: the same value
    is named (the first damaged table in the schema's order), the thread is gone afterwards and its
    connection closed."""
    path, schema = pristine
    db = _damaged_copy(path, tmp_path, damaged)
    opened: list[sqlite3.Connection] = []

    def side() -> sqlite3.Connection:
        opened.append(sqlite3.connect(db, check_same_thread=False))
        return opened[-1]

    def verdict(**kw) -> str | None:
        conn = sqlite3.connect(db)
        try:
            verify_store(conn, str(db), schema, **kw)
        except DamagedStore as exc:
            return str(exc)
        finally:
            conn.close()
        return None

    alone, beside = verdict(), verdict(side=side)
    assert len(opened) == 1 and beside == alone
    assert (alone is None) == (not damaged)
    if damaged:
        first = next(t for t in schema if t in damaged)
        assert f"({first}." in alone
    assert not any(t.name == "boardlab-verify" for t in threading.enumerate())
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        opened[0].execute("SELECT 1")


def _no_verify_thread() -> bool:
    return not any(t.name == "boardlab-verify" for t in threading.enumerate())


@pytest.mark.parametrize("damaged", [(), ("runs",), ("run_series",)])
def test_a_store_verified_beside_its_reading_says_the_damage_at_its_close(pristine, tmp_path, damaged):
    """`Store.open(verify="beside")` returns at once and scans in a thread while the caller reads: the damage
    is raised by `verified()`, by the close, and by the end of a `with` block, where it replaces the error
    the reading met (the damage is what to say); an undamaged store lets the reading's own error through."""
    path, _schema = pristine
    db = _damaged_copy(path, tmp_path, damaged)
    expected = f"({damaged[0]}." if damaged else None

    store = Store.open(db, create=False, verify="beside")
    assert store.campaigns()  # readable while the scan runs
    if expected:
        with pytest.raises(DamagedStore, match=re.escape(expected)):
            store.verified()
    else:
        store.verified()
    store.verified()  # once: nothing pending any more
    store.close()
    assert _no_verify_thread()

    if expected:
        with pytest.raises(DamagedStore, match=re.escape(expected)):
            Store.open(db, create=False, verify="beside").close()
        with pytest.raises(DamagedStore, match=re.escape(expected)):
            with Store.open(db, create=False, verify="beside"):
                raise ValueError("what a damaged value made the reading do")
    else:
        with pytest.raises(ValueError, match="the reading's own"):
            with Store.open(db, create=False, verify="beside"):
                raise ValueError("the reading's own error")
    assert _no_verify_thread()


def test_ctrl_c_in_a_reading_verified_beside_stops_the_scan_without_waiting(pristine, tmp_path):
    """KeyboardInterrupt leaves the `with` block at once: the scan is interrupted, its thread gone, and the
    interrupt (not a damage, not a wait) is what propagates."""
    path, _schema = pristine
    db = _damaged_copy(path, tmp_path, ("runs",))
    with pytest.raises(KeyboardInterrupt):
        with Store.open(db, create=False, verify="beside") as store:
            assert store._verifying is not None
            raise KeyboardInterrupt
    assert store._verifying is None and _no_verify_thread()
