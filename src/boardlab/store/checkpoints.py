"""SQLite's WAL checkpoints beside a writer that commits one large transaction after another (an ingest of
several board files).

In WAL mode a commit appends its pages to the -wal file; a checkpoint copies them into the database and
fsyncs both. SQLite runs one inside the commit that takes the WAL past `wal_autocheckpoint` pages, so a
commit of a 10^4-run file (25 MB) waited for a checkpoint of its own pages: 0.26 s of its 0.52 s, the disk's
time, not the CPU's. Here the writer's own checkpoints are off and a thread of this object runs them on a
connection of its own after each commit (`committed`), while the writer copies the next file: SQLite lets go
of Python's lock while it checkpoints (bench/README.md has the figures).

The WAL stays bounded: SQLite starts it over at a write transaction's start when a checkpoint has copied all
of it (and no reader still reads it), which a checkpoint running beside the writer may not have finished. So
once the -wal file is larger than WAL_LIMIT_BYTES, the writer waits for the checkpoint of what it committed
before it starts its next transaction (`before_write`), and the file grows no further. A checkpoint's error
(a full disk, an I/O error) loses nothing, the pages stay in the WAL, and is raised to the writer there or at
`close`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from boardlab.errors import database_error

if TYPE_CHECKING:
    from boardlab.store.db import Store

WAL_LIMIT_BYTES = 256 << 20  # a tenth of a nightly ingest of 10^6 runs; 10 files of 10^4 runs: 250 MB
AUTOCHECKPOINT_PAGES = 1000  # SQLite's default, the writer's own again at `close`


class Checkpoints:
    """The checkpoints of a writer's store beside it; inert for a store that is not SQLite."""

    def __init__(self, store: Store):
        self._store = store
        self._cv = threading.Condition()
        self._asked = self._done = 0  # commits asked to be checkpointed, and checkpointed, so far
        self._stopping = self._abandoned = False
        self._error: Exception | None = None
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None
        if store.dialect != "sqlite":
            return
        store.conn.execute("PRAGMA wal_autocheckpoint=0")
        self._thread = threading.Thread(target=self._run, name="boardlab-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """The writer committed: a checkpoint of its pages, beside it."""
        with self._cv:
            self._asked += 1
            self._cv.notify_all()

    def before_write(self) -> None:
        """Before the writer's next transaction: waits for the checkpoint of what it committed when the WAL
        has grown past WAL_LIMIT_BYTES (so SQLite starts it over), raises a checkpoint's error."""
        if self._thread is None:
            return
        with contextlib.suppress(OSError):  # no -wal file: nothing to wait for
            if os.path.getsize(f"{self._store.path}-wal") > WAL_LIMIT_BYTES:
                with self._cv:
                    self._cv.wait_for(lambda: self._done == self._asked or self._error is not None)
        with self._cv:
            self._raise_error()

    def close(self, *, finish: bool = True) -> None:
        """Ends the thread: after the checkpoints asked for (`finish`), or interrupting the one it runs
        (Ctrl-C, a failure); the writer checkpoints itself again. Raises a checkpoint's error when
        finishing."""
        if self._thread is None:
            return
        with self._cv:
            self._stopping, self._abandoned = True, not finish
            self._cv.notify_all()
            if self._abandoned and self._conn is not None:
                self._conn.interrupt()
        self._thread.join()
        with contextlib.suppress(sqlite3.Error):  # a closed or broken writer: nothing to give back
            self._store.conn.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        self._thread = None
        if finish:
            with self._cv:
                self._raise_error()

    def _raise_error(self) -> None:
        if isinstance(self._error, sqlite3.Error):
            raise database_error(self._error, self._store.path) from None
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:  # opened here, so that the writer's side cannot fail: an error is raised at its next file
            conn = self._store._connect(Path(self._store.path), "rw", any_thread=True)
        except Exception as exc:  # noqa: BLE001 - database_error's BoardlabError, raised to the writer
            with self._cv:
                self._error = exc
                self._cv.notify_all()
            return
        with self._cv:
            self._conn = conn
        try:
            self._checkpoints(conn)
        finally:
            with self._cv:
                self._conn = None
            conn.close()

    def _checkpoints(self, conn: sqlite3.Connection) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._asked > self._done or self._stopping)
                if self._asked == self._done or self._abandoned or self._error is not None:
                    return
                asked = self._asked
            error = None
            try:  # PASSIVE: never waits for the writer or a reader, copies what no reader still needs
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:  # interrupted by `close`, or the disk's error: the WAL keeps it
                error = exc
            with self._cv:
                self._done = asked
                self._error = self._error or (None if self._abandoned else error)
                self._cv.notify_all()
