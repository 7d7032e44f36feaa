"""SQLite store. WAL lets a report read while a campaign writes; each run is one transaction, so a
killed campaign keeps every run it finished and none half-written."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NoReturn

from boardlab.errors import InputError, MeasurementError, database_error, os_error
from boardlab.store.base import RESULTS_APART
from boardlab.store.campaigns import CampaignRecords
from boardlab.store.filecheck import bounded_check, can_bound, quick_check
from boardlab.store.migrations import (
    DATA_STEPS,
    MIGRATIONS,
    PG_STEPS,
    DamagedValue,
)
from boardlab.store.pages import LabPages
from boardlab.store.reads import AnalysisReads
from boardlab.store.runs import RunRecords
from boardlab.store.series import MonitorPlots
from boardlab.store.summaries import SummaryRows
from boardlab.store.verify import Beside, damaged, verify_store

STORE_SCHEMA = MIGRATIONS[-1][0]
_PG_MIGRATE_LOCK = 0x626C6162  # "blab": the advisory lock that serializes migrations on a PostgreSQL store
_PG_INGEST_LOCK = 0x626C6169  # "blai": one ingest at a time per PostgreSQL store
# a writer that holds a SQLite store for an instant (serve's backfill storing one summary: about 0.1 s) is
# waited for this long before a second writer is refused or told to wait: a campaign starting then is not
BRIEF_HOLD_S = 1.0


def _statements(sql: str) -> list[str]:
    """Splits a migration into statements the way SQLite parses them (a ';' inside a comment is text)."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf)
            buf = ""
    if buf.strip():
        out.append(buf)
    return [s for s in out if s.strip()]


def fold_wal(path: Path) -> None:
    """Folds a copied -wal file into its database, so the file alone holds every committed run (a board's
    database fetched while, or after, its campaign wrote in WAL mode)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()


def _lock_soon(fd: int) -> None:
    """The writer's flock once the file is free, within BRIEF_HOLD_S; else BlockingIOError."""
    deadline = time.monotonic() + BRIEF_HOLD_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class Store(CampaignRecords, RunRecords, MonitorPlots, AnalysisReads, LabPages, SummaryRows):
    """One store: the connection, opening, migrating and verifying here; each aggregate's reads and writes in
    a part of its own (store/campaigns.py, runs.py, reads.py, pages.py, summaries.py, series.py)."""

    # A writer's open checks the whole file (PRAGMA quick_check) up to this size: every board's own store, a
    # second or two at most. A lab's store beyond it gets the bounded check (store/filecheck.py), which leaves
    # out the runs' tables. A class attribute: a test's subclass lowers it.
    FULL_CHECK_MAX_BYTES = 1 << 30

    def __init__(
        self, conn: sqlite3.Connection, path: str, lock_fd: int | None = None, *, dialect: str = "sqlite"
    ):
        self.conn = conn
        self.path = path
        self.dialect = dialect  # "sqlite" (a file) or "postgresql" (a server, boardlab.store.pg)
        self._lock_fd = lock_fd
        self.created = False  # this open created the file (a writer's open only)
        self._sidecars_before: set[str] | None = None  # a reader's: the -wal/-shm files there before it
        self._shm_fd: int | None = None  # a reader's: its shared flock on the -shm file
        self._reopen: tuple[Path, bool] | None = None  # a reader's: how to open another connection like it
        self._verifying: Beside | None = None  # a reader's content scan beside its reading (verify="beside")

    # ---- opening and migrating ----

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        wait: Callable[[str], None] | None = None,
        verify: bool | Literal["beside"] = True,
        page_bytes: int | None = None,
        full_check: bool = False,
        note: Callable[[str], None] | None = None,
        quick_check: bool = True,
    ) -> Store:
        """`create=True` opens for a campaign: the file is created if missing and locked exclusively (flock)
        until close, so a second writer is refused. `create=False` opens read-only and changes nothing.

        A `postgresql://` URL opens a PostgreSQL store instead (same schema, same migrations): `create=True`
        migrates it, `create=False` only reads. Anything else is a filesystem path: it is handed to SQLite as
        a URI we build, so a name such as "file:x.db?mode=memory" is a file of that name, never SQLite's URI
        syntax.

        `wait` (a writer's open of a SQLite file): when another process holds the file, call it with who
        that is and wait for the file instead of refusing (an ingest into a shared store).

        `verify=False` (a reader): skip the full scan of `verify` (seconds on a store of millions of runs),
        for a reader that verified this store once already (`boardlab serve` at its start).
        `verify="beside"` (a reader that shows nothing it read before `verified()` or `close()`): the scan
        runs in a thread of its own, on a connection of its own, while the caller reads; `verified()`, and
        `close()` and the end of a `with` block, wait for it and raise the damage it found. Leaving a `with`
        block on an error raises the damage instead when there is one: a damaged value can make the reading
        fail in any way, and the damage is what to say.

        `page_bytes` (a writer's open of a SQLite file): the page size of the store when this open makes it
        (a new or empty file; an existing store keeps its own), SQLite's default (4096) when None.

        A writer's open of a SQLite file checks the file before it changes anything: all of it (SQLite's
        quick_check) up to FULL_CHECK_MAX_BYTES or with `full_check`, else the bounded check, which
        `note(text)` says once (the size, what was left unchecked and how to check it all).

        `quick_check=False` (a writer's open of a SQLite file): no check of the file at all, for a writer that
        writes little into a store whose full check passed (`boardlab serve`'s backfill of summaries: the
        check reads every page of a store up to 1 GiB, with the writer's lock held)."""
        from boardlab.store import pg

        if pg.is_url(path):
            return cls._open_pg(str(path), create=create, note=note)
        path = Path(path)
        if not create:
            return cls._open_reader(path, verify=verify)
        return cls._open_writer(
            path, wait, page_bytes, full_check=full_check, note=note, quick_check=quick_check
        )

    @classmethod
    def _open_pg(cls, url: str, *, create: bool, note: Callable[[str], None] | None = None) -> Store:
        from boardlab.store import pg

        conn = pg.connect(url)
        store = cls(conn, conn.where, dialect="postgresql")  # type: ignore[arg-type]
        try:
            current = store.schema_version()
            store._check_schema(current)
            if create:
                store._migrate(note)
            else:  # a reader changes nothing, as a SQLite reader's query_only
                conn.execute("SET default_transaction_read_only = on")
            if not create and current == 0:
                raise InputError(
                    f"{store.path}: no boardlab store in this database yet; `boardlab ingest BOARD.db --db "
                    "URL` creates it"
                )
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _open_reader(cls, path: Path, *, verify: bool | Literal["beside"] = True) -> Store:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise InputError(f"{path}: no such results database") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot open the results database: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: not a regular file, so not a results database")
        # A WAL database in a directory we cannot write (and with no -wal file, so no writer is active)
        # opens only as immutable: SQLite could not create its -shm file otherwise.
        immutable = not os.access(path.parent, os.W_OK) and not os.path.exists(f"{path}-wal")
        conn = cls._connect(path, "ro", immutable=immutable)
        store = cls(conn, str(path))
        store._reopen = (path, immutable)
        store._sidecars_before = {s for s in ("-wal", "-shm") if os.path.lexists(f"{path}{s}")}
        try:
            conn.execute("PRAGMA query_only=ON")
            version = store.schema_version()
            store._check_schema(version)
            if version == 0:  # an empty file, or a SQLite database with no boardlab table: nothing to read
                raise InputError(f"{path}: no boardlab results in this file (an empty SQLite database)")
            if verify == "beside":
                store._verify_beside()
            elif verify:
                store.verify()
        except BaseException:
            store._share_sidecars()  # the close removes the files SQLite made for a refused store too
            store.close()
            raise
        store._share_sidecars()
        return store

    def _share_sidecars(self) -> None:
        """Says "a reader uses these files" to another reader's close (see _remove_reader_sidecars), which
        removes only the -wal and -shm files of a reader holding this shared flock."""
        try:
            self._shm_fd = os.open(f"{self.path}-shm", os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            fcntl.flock(self._shm_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass

    @classmethod
    def _open_writer(
        cls,
        path: Path,
        wait: Callable[[str], None] | None = None,
        page_bytes: int | None = None,
        *,
        full_check: bool = False,
        note: Callable[[str], None] | None = None,
        quick_check: bool = True,
    ) -> Store:
        if not path.parent.is_dir():
            raise InputError(f"{path}: the directory {path.parent} does not exist")
        # O_NONBLOCK: a FIFO given as --db must not hang the open; it is refused below. O_EXCL first, to
        # know whether this call created the file (a refused campaign then leaves none behind).
        flags = os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
        created = True
        try:
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                created = False
                fd = os.open(path, flags)
        except OSError as exc:
            raise os_error(exc, path, "results database") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError(f"{path}: not a regular file; give --db a file path")
            try:
                _lock_soon(fd)
            except BlockingIOError:
                from boardlab.platform.locks import flock_holders

                who = (
                    "; ".join(f"pid {pid}: {cmd}" for pid, cmd in flock_holders("/", path))
                    or "another process"
                )
                if wait is None:
                    raise InputError(
                        f"{path}: in use by {who}; wait for that campaign to finish (or stop it), "
                        "or give another --db"
                    ) from None
                wait(who)
                fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C interrupts the wait
            except OSError as exc:  # a filesystem that cannot lock (NFS without lockd): said, nothing left
                cls._unlock_failed(exc, path, created)
            conn = cls._connect(path, "rw")
            if page_bytes is not None and os.fstat(fd).st_size == 0:  # no page yet: SQLite takes the size
                conn.execute(f"PRAGMA page_size={int(page_bytes)}")
        except BaseException:
            os.close(fd)
            raise
        store = cls(conn, str(path), fd)
        store.created = created
        try:
            before = store.schema_version()
            store._check_schema(before)  # recognized before anything changes in the file
            if quick_check:
                store._open_check(full_check, note)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            store._migrate(note)
            store._compact_after_results_moved(before, note)
        except BaseException as exc:
            if created:  # still locked by us: nobody else can have started using the new file
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(OSError):
                        os.unlink(f"{path}{suffix}")
            store.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise database_error(exc, str(path)) from None
            raise
        return store

    def _compact_after_results_moved(self, before: int, note: Callable[[str], None] | None) -> None:
        """Migration 16 moved every run's result out of its row, and the rows keep the pages the results
        took: a migrated store is as large again and reads slower (a report of 10^5 runs: 1.97 s, 1.60 s
        compacted) until a VACUUM, which takes the file's size again in a temporary file. A board's store
        (up to FULL_CHECK_MAX_BYTES) is compacted here, once; a larger one is left as it is, said."""
        if not 0 < before < RESULTS_APART <= STORE_SCHEMA:
            return
        size = os.path.getsize(self.path)
        why = f"the file is {size / 2**20:.0f} MB"
        if size <= self.FULL_CHECK_MAX_BYTES:
            try:
                self.conn.execute("VACUUM")
                return
            except sqlite3.OperationalError as exc:  # a full disk: the store stays as migrated, whole
                why = f"compacting it failed: {exc}"
        if note is not None:
            note(
                f"{self.path}: the runs' results moved to a table of their own, and the runs' rows keep the "
                f"space they took until the store is compacted ({why}): `sqlite3 '{self.path}' VACUUM`, "
                "with nothing writing the store and its size free on disk, gives it back and reads it faster"
            )

    def _open_check(self, full: bool, note: Callable[[str], None] | None) -> None:
        """A writer's check of its file (`open`); raises sqlite3.DatabaseError, which the open names."""
        assert self._lock_fd is not None  # a writer's open: the file is locked and its fd kept
        size = os.fstat(self._lock_fd).st_size
        if full or size <= self.FULL_CHECK_MAX_BYTES or not can_bound():
            quick_check(self.conn)
            return
        bounded_check(self.conn, self._lock_fd, self.path)
        if note is not None:
            note(
                f"{self.path}: a store of {size / 2**30:.1f} GiB: this open checked the file's header and "
                "every table but the runs' (the full check reads the whole file: a minute or more at this "
                "size); add --full-check to check it all"
            )

    @staticmethod
    def _unlock_failed(exc: OSError, path: Path, created: bool) -> NoReturn:
        """A flock that failed other than by another holder: a file this open made is removed (it is nobody's:
        nobody can lock it either), and the error names the path and the filesystem."""
        from boardlab.platform.locks import lock_unsupported

        if created:
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise lock_unsupported(exc, path, "results database") or os_error(
            exc, path, "results database"
        ) from None

    @staticmethod
    def cannot_write(path: str | Path) -> str | None:
        """Why a writer could not write the store at `path` (a file or directory this user may not write,
        a read-only mount), or None. A PostgreSQL store is None: its role's rights show at the first write."""
        from boardlab.store import pg

        if pg.is_url(path):
            return None
        path = Path(path)
        if not os.access(path, os.W_OK):
            return (
                f"{path}: the store's file is not writable here (its mode, its owner, or a read-only mount)"
            )
        if not os.access(path.parent, os.W_OK):
            return (
                f"{path.parent}: the store's directory is not writable here (a writer makes SQLite's -wal "
                "and -shm files there)"
            )
        return None

    def check_file(self) -> None:
        """A campaign's store is still the file at its path (before each run and before its status is
        stored): a database removed or replaced while a campaign writes keeps taking its runs, where nobody
        will read them, while a second campaign may lock and fill the new file at the path."""
        from boardlab.platform.locks import same_file

        if self._lock_fd is not None and not same_file(self._lock_fd, self.path):
            raise MeasurementError(
                f"{self.path}: the results database was removed or replaced while this campaign wrote to it; "
                "the runs stored since are not in the file at that path: stopped. Leave the file in place "
                "while a campaign runs; run again to measure into a file that keeps them"
            )

    def _remove_reader_sidecars(self) -> None:
        """A read-only connection that closes last cannot remove the -wal and -shm files SQLite made for
        it; a reader removes those it made itself, when no other boardlab reader uses them (each holds a
        shared flock on the -shm file), no boardlab run holds the database, and the log is empty."""
        assert self._sidecars_before is not None  # close() calls this only for a reader, which has it
        made = [
            f"{self.path}{s}"
            for s in ("-wal", "-shm")
            if s not in self._sidecars_before and os.path.lexists(f"{self.path}{s}")
        ]
        shm_fd, self._shm_fd = self._shm_fd, None
        self._sidecars_before = None
        db_fd = None
        try:
            if not made or shm_fd is None:
                return
            fcntl.flock(shm_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no other reader is using the files
            db_fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            fcntl.flock(db_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no boardlab run has it now, nor can start
            wal = f"{self.path}-wal"
            if not os.path.exists(wal) or os.path.getsize(wal) == 0:  # nothing in the log to keep
                for side in made:
                    with contextlib.suppress(OSError):
                        os.unlink(side)
        except OSError:
            pass
        finally:
            for fd in (shm_fd, db_fd):
                if fd is not None:
                    os.close(fd)

    @staticmethod
    def _connect(
        path: Path, mode: str, *, immutable: bool = False, any_thread: bool = False
    ) -> sqlite3.Connection:
        uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode={mode}" + (
            "&immutable=1" if immutable else ""
        )
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=30, isolation_level=None, check_same_thread=not any_thread
            )
        except sqlite3.Error as exc:
            raise database_error(exc, str(path)) from None
        conn.row_factory = sqlite3.Row
        return conn

    def close(self) -> None:
        try:
            self.verified()
        finally:
            self._close()

    def _close(self) -> None:
        if self._verifying is not None:  # given up (Ctrl-C, an error while waiting): stopped, not awaited
            self._verifying.stop()
            self._verifying = None
        self.conn.close()
        if self._sidecars_before is not None:
            self._remove_reader_sidecars()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and not issubclass(exc_type, Exception):  # Ctrl-C: no waiting for the scan
            self._close()
        else:
            self.close()

    def verify(self, *, beside: bool = True) -> None:
        """Raises DamagedStore naming (table.column, row id) when a value is not what boardlab wrote
        (store/verify.py): a reader's open calls it, so no reader meets a wrongly typed or non-JSON value.
        `beside=False`: no second connection scanning beside (the caller keeps the cores busy already)."""
        if self.dialect != "sqlite":
            return
        side = None
        if beside and self._reopen is not None and len(os.sched_getaffinity(0)) > 1:  # a second core scans
            path, immutable = self._reopen
            side = functools.partial(self._connect, path, "ro", immutable=immutable, any_thread=True)
        try:
            verify_store(self.conn, self.path, self.describe_schema(), side)
        except sqlite3.DatabaseError as exc:
            raise database_error(exc, self.path) from None

    def _verify_beside(self) -> None:
        """`verify()`'s scan (one connection, no side scan: the caller's reading is the work beside it), in
        a thread of its own; `verified()` says what it found."""
        assert self._reopen is not None  # a reader's open sets it before this
        path, immutable = self._reopen
        conn = self._connect(path, "ro", immutable=immutable, any_thread=True)
        schema = self.describe_schema()
        self._verifying = Beside(conn, lambda c: verify_store(c, self.path, schema))

    def verified(self) -> None:
        """Waits for the scan of a `verify="beside"` open, once, and raises what it found: DamagedStore, or
        the database error of a file SQLite cannot read."""
        pending, self._verifying = self._verifying, None
        if pending is None:
            return
        exc = pending.result()
        if isinstance(exc, sqlite3.DatabaseError):
            raise database_error(exc, self.path) from None
        if exc is not None:
            raise exc

    def _check_schema(self, current: int) -> None:
        if current > STORE_SCHEMA:
            raise InputError(
                f"{self.path}: written by a newer boardlab (store schema {current}, "
                f"this one reads up to {STORE_SCHEMA}); upgrade boardlab"
            )

    def _migrate(self, note: Callable[[str], None] | None = None) -> None:
        from boardlab.store import pg

        self._say_upgrade(self.schema_version(), note)
        for number, sql in MIGRATIONS:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if self.dialect == "postgresql":  # serializes two first opens of an empty database
                    self.conn.execute(f"SELECT pg_advisory_xact_lock({_PG_MIGRATE_LOCK})")
                current = self.schema_version()  # read inside the write transaction: no race with another
                self._check_schema(current)
                if number <= current:
                    self.conn.execute("COMMIT")
                    continue
                for statement in _statements(sql):
                    self.conn.execute(pg.ddl(statement) if self.dialect == "postgresql" else statement)
                if self.dialect == "postgresql" and number in PG_STEPS:
                    for statement in PG_STEPS[number]():  # PostgreSQL's own spelling: not through pg.ddl
                        self.conn.execute(statement)
                if number in DATA_STEPS:
                    self._data_step(number)
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(number),)
                )
                self.conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        self.__dict__.pop("_schema_cached", None)  # read before the migrations: the parts read it again

    def _say_upgrade(self, current: int, note: Callable[[str], None] | None) -> None:
        """Says, before it starts, that a writer's open upgrades an older store: the migrations that move data
        read every run (0.3 s a million runs for schema 14's count, 23 s a million for schema 9's columns)
        and nothing else would say why the open waits.
        A new store (schema 0) or a current one says nothing."""
        if note is None or not 0 < current < STORE_SCHEMA:
            return
        moves_data = any(current < number <= STORE_SCHEMA for number in DATA_STEPS)
        note(
            f"{self.path}: a store of schema {current}, from an older boardlab: upgrading it to schema "
            f"{STORE_SCHEMA} once, before anything is written"
            + (" (this reads every run of the store)" if moves_data else "")
        )

    def _data_step(self, number: int) -> None:
        try:
            DATA_STEPS[number](self.conn)
        except DamagedValue as exc:  # a damaged older store opened to write (migrations run before verify)
            column, what, run_id = exc.args
            raise damaged(self.path, "runs", column, run_id, what) from None
