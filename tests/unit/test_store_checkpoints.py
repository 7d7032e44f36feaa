"""SQLite's checkpoints beside a writer (store/checkpoints.py): a commit leaves its pages in the WAL, the
thread copies them into the database after it, the WAL stops growing past its limit, a checkpoint's error
reaches the writer naming the store, and the writer's own checkpoints come back at the end."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest

from boardlab.errors import BoardlabError
from boardlab.store import Store
from boardlab.store import checkpoints as ckpt

ROW_BYTES = 4096


def _commit(store: Store, rows: int) -> None:
    """One write transaction of `rows` rows of ROW_BYTES (random bytes: a page each)."""
    store.conn.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    store.conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
        " INSERT INTO filler SELECT randomblob(?) FROM n",
        (rows, ROW_BYTES),
    )


def _db_bytes(store: Store) -> int:
    return os.path.getsize(store.path)


def _autocheckpoint(store: Store) -> int:
    return int(store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])


@pytest.fixture
def writer(tmp_path):
    with Store.open(tmp_path / "lab.db") as store:
        _commit(store, 1)  # the table, and a WAL checkpointed by the writer's own rule before the test's
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        yield store


def _until(condition, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_commit_leaves_its_pages_and_the_thread_copies_them_after(writer):
    before = _db_bytes(writer)
    beside = ckpt.Checkpoints(writer)
    try:
        assert _autocheckpoint(writer) == 0
        _commit(writer, 1200)  # past SQLite's own 1000 pages, which would checkpoint in the commit
        assert _db_bytes(writer) == before, "the commit checkpointed its own pages"
        beside.committed()
        assert _until(lambda: _db_bytes(writer) >= before + 1200 * ROW_BYTES), "no checkpoint after it"
    finally:
        beside.close()
    assert _autocheckpoint(writer) == ckpt.AUTOCHECKPOINT_PAGES


def test_close_finishes_the_checkpoints_asked_for(writer):
    before = _db_bytes(writer)
    beside = ckpt.Checkpoints(writer)
    _commit(writer, 200)
    beside.committed()
    beside.close()
    assert _db_bytes(writer) >= before + 200 * ROW_BYTES


def test_the_wal_grows_no_further_than_its_limit(writer, monkeypatch):
    rows = 64
    limit = 3 * rows * ROW_BYTES  # three commits
    monkeypatch.setattr(ckpt, "WAL_LIMIT_BYTES", limit)
    beside = ckpt.Checkpoints(writer)
    sizes = []
    try:
        for _ in range(12):
            beside.before_write()
            _commit(writer, rows)
            beside.committed()
            sizes.append(os.path.getsize(f"{writer.path}-wal"))
    finally:
        beside.close()
    # once past the limit the next transaction starts the WAL over: at most one commit beyond it (and the
    # WAL's headers)
    assert max(sizes) < limit + 2 * rows * ROW_BYTES, sizes
    assert sizes[-1] == max(sizes), "the file was truncated: SQLite keeps a restarted WAL's size"


def test_a_checkpoint_error_reaches_the_writer_naming_the_store(writer, monkeypatch):
    def broken(*_args, **_kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Store, "_connect", staticmethod(broken))
    beside = ckpt.Checkpoints(writer)
    assert _until(lambda: beside._error is not None)
    with pytest.raises(BoardlabError, match=str(writer.path)):
        beside.before_write()
    with pytest.raises(BoardlabError, match="disk I/O error"):
        beside.close()
    assert _autocheckpoint(writer) == ckpt.AUTOCHECKPOINT_PAGES


def test_an_interrupted_ingest_abandons_the_checkpoint_and_loses_nothing(writer):
    beside = ckpt.Checkpoints(writer)
    _commit(writer, 500)
    beside.committed()
    beside.close(finish=False)  # interrupts a running checkpoint, raises nothing
    assert _autocheckpoint(writer) == ckpt.AUTOCHECKPOINT_PAGES
    assert writer.conn.execute("SELECT count(*) FROM filler").fetchone()[0] == 501
    assert writer.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_inert_for_a_store_that_is_not_sqlite():
    class Server:
        dialect, path = "postgresql", "postgresql://lab@host/db"

    beside = ckpt.Checkpoints(Server())  # type: ignore[arg-type]
    beside.before_write()
    beside.committed()
    beside.close()
