"""SQLite store. WAL lets a report read while a campaign writes; each run is one transaction, so a
killed campaign keeps every run it finished and none half-written."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import sqlite3
import stat
import time
import urllib.parse
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from boardlab.errors import InputError, database_error, os_error
from boardlab.model.campaign import Cell, ConditionSpec
from boardlab.model.run import RunResult, run_columns
from boardlab.store import packed
from boardlab.store.migrations import (
    DATA_STEPS,
    MIGRATIONS,
    RUN_COLUMNS,
    DamagedValue,
    column_values,
    columns_of_json,
)
from boardlab.store.verify import Beside, DamagedStore, damaged, verify_store

STORE_SCHEMA = MIGRATIONS[-1][0]
_PG_MIGRATE_LOCK = 0x626C6162  # "blab": the advisory lock that serializes migrations on a PostgreSQL store
_PG_INGEST_LOCK = 0x626C6169  # "blai": one ingest at a time per PostgreSQL store


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


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


class SeriesSample(tuple):
    """One monitor sample (source, t_ns, value), read by position or by name as a database row."""

    __slots__ = ()
    _index = {"source": 0, "t_ns": 1, "value": 2}

    def __getitem__(self, key):  # type: ignore[override]
        return tuple.__getitem__(self, self._index[key] if isinstance(key, str) else key)

    def keys(self) -> list[str]:
        return list(self._index)


class Store:
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
        (a new or empty file; an existing store keeps its own), SQLite's default (4096) when None."""
        from boardlab.store import pg

        if pg.is_url(path):
            return cls._open_pg(str(path), create=create)
        path = Path(path)
        return cls._open_writer(path, wait, page_bytes) if create else cls._open_reader(path, verify=verify)

    @classmethod
    def _open_pg(cls, url: str, *, create: bool) -> Store:
        from boardlab.store import pg

        conn = pg.connect(url)
        store = cls(conn, conn.where, dialect="postgresql")  # type: ignore[arg-type]
        try:
            current = store.schema_version()
            store._check_schema(current)
            if create:
                store._migrate()
            else:  # a reader changes nothing, as a SQLite reader's query_only
                conn.execute("SET default_transaction_read_only = on")
            if not create and current == 0:
                raise InputError(
                    f"{store.path}: no boardlab store in this database yet; `boardlab ingest BOARD.db --db URL` "
                    "creates it"
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
            store._check_schema(store.schema_version())
            if verify == "beside":
                store._verify_beside()
            elif verify:
                store.verify()
        except BaseException:
            store.close()
            raise
        try:  # says "a reader uses these files" to another reader's close (see _remove_reader_sidecars)
            store._shm_fd = os.open(f"{path}-shm", os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            fcntl.flock(store._shm_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass
        return store

    @classmethod
    def _open_writer(
        cls, path: Path, wait: Callable[[str], None] | None = None, page_bytes: int | None = None
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
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
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
            conn = cls._connect(path, "rw")
            if page_bytes is not None and os.fstat(fd).st_size == 0:  # no page yet: SQLite takes the size
                conn.execute(f"PRAGMA page_size={int(page_bytes)}")
        except BaseException:
            os.close(fd)
            raise
        store = cls(conn, str(path), fd)
        store.created = created
        try:
            store._check_schema(store.schema_version())  # recognized before anything changes in the file
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed ({check})")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            store._migrate()
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

    def schema_version(self) -> int:
        if self.dialect == "postgresql":
            return self._pg_schema_version()
        try:
            has_meta = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            if not has_meta:
                tables = self.conn.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type='table'"
                ).fetchone()[0]
                if tables:
                    raise InputError(f"{self.path}: a SQLite database, but not one boardlab wrote")
                return 0
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise database_error(exc, self.path) from None
        if not row:
            return 0
        try:
            return int(row[0])
        except (TypeError, ValueError):
            raise InputError(
                f"{self.path}: store schema version {row[0]!r} is not a number: not a database this "
                "boardlab wrote, or a damaged one; restore it from a copy"
            ) from None

    def _pg_schema_version(self) -> int:
        has_meta = self.conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]
        if not has_meta:
            tables = self.conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
            ).fetchone()[0]
            if tables:
                raise InputError(
                    f"{self.path}: this database holds tables boardlab did not write; give boardlab a "
                    "database of its own (createdb boardlab)"
                )
            return 0
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        try:
            return int(row[0]) if row else 0
        except (TypeError, ValueError):
            raise InputError(f"{self.path}: store schema version {row[0]!r} is not a number") from None

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

    def _rollback(self) -> None:
        """Rolls back what is open. SQLite has already rolled back after some errors (a full disk): a second
        ROLLBACK would fail and hide the error that matters."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def _check_schema(self, current: int) -> None:
        if current > STORE_SCHEMA:
            raise InputError(
                f"{self.path}: written by a newer boardlab (store schema {current}, "
                f"this one reads up to {STORE_SCHEMA}); upgrade boardlab"
            )

    def _migrate(self) -> None:
        from boardlab.store import pg

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
                if number in DATA_STEPS:
                    self._data_step(number)
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(number),)
                )
                self.conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _data_step(self, number: int) -> None:
        try:
            DATA_STEPS[number](self.conn)
        except DamagedValue as exc:  # a damaged older store opened to write (migrations run before verify)
            column, what, run_id = exc.args
            raise damaged(self.path, "runs", column, run_id, what) from None

    # ---- boards and campaigns ----

    def upsert_board(self, fingerprint: str, label: str, inventory: dict) -> int:
        row = self.conn.execute("SELECT id FROM boards WHERE fingerprint=?", (fingerprint,)).fetchone()
        if row:
            self.conn.execute("UPDATE boards SET inventory_json=? WHERE id=?", (_json(inventory), row[0]))
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO boards(fingerprint, label, inventory_json, first_seen_unix_s) VALUES (?,?,?,?)",
            (fingerprint, label, _json(inventory), time.time()),
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        return int(cur.lastrowid)

    def find_campaign(self, plan_hash: str, board_id: int) -> sqlite3.Row | None:
        return self.conn.execute(
            "SELECT * FROM campaigns WHERE plan_hash=? AND board_id=? ORDER BY id DESC LIMIT 1",
            (plan_hash, board_id),
        ).fetchone()

    def create_campaign(
        self,
        *,
        name: str,
        plan_hash: str,
        plan_source: str,
        plan_text: str,
        board_id: int,
        boardlab_version: str,
        kern_version: str | None,
        root: str,
        environment: dict,
        uid: str | None = None,
    ) -> int:
        """A new campaign, running; `uid` its identity across stores (a random one unless given: a campaign
        made from an imported file takes one from the file, so importing it twice adds it once)."""
        cur = self.conn.execute(
            "INSERT INTO campaigns(uid, name, plan_hash, plan_source, plan_text, board_id, boardlab_version,"
            " kern_version, root, status, started_unix_s, environment_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                uid or uuid.uuid4().hex,
                name,
                plan_hash,
                plan_source,
                plan_text,
                board_id,
                boardlab_version,
                kern_version,
                root,
                "running",
                time.time(),
                _json(environment),
            ),
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        return int(cur.lastrowid)

    def set_campaign_status(
        self, campaign_id: int, status: str, *, monitor: dict | None = None, notes: dict | None = None
    ) -> None:
        finished = time.time() if status in ("complete", "interrupted", "failed") else None
        self.conn.execute(
            "UPDATE campaigns SET status=?, finished_unix_s=?, monitor_json=coalesce(?, monitor_json),"
            " notes_json=coalesce(?, notes_json) WHERE id=?",
            (
                status,
                finished,
                _json(monitor) if monitor is not None else None,
                _json(notes) if notes is not None else None,
                campaign_id,
            ),
        )

    def campaigns(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM campaigns ORDER BY id").fetchall()

    def campaign(self, campaign_id: int) -> sqlite3.Row:
        row = self.conn.execute("SELECT * FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
        if row is None:
            raise InputError(f"{self.path}: no campaign with id {campaign_id}")
        return row

    def board(self, board_id: int) -> sqlite3.Row:
        return self.conn.execute("SELECT * FROM boards WHERE id=?", (board_id,)).fetchone()

    def boards(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM boards ORDER BY id").fetchall()

    def latest_campaign_of_board(self, label: str) -> int | None:
        """The latest campaign of the board with this label (or fingerprint) in a store of many boards."""
        row = self.conn.execute(
            "SELECT c.id FROM campaigns c JOIN boards b ON b.id = c.board_id"
            " WHERE b.label=? OR b.fingerprint=? ORDER BY c.id DESC LIMIT 1",
            (label, label),
        ).fetchone()
        return None if row is None else int(row[0])

    def describe_schema(self) -> dict[str, list[tuple[str, str, bool, bool]]]:
        """table -> [(column, kind, not null, in the primary key)] with kind one of integer, real, text,
        blob: what both backends must agree on (SQLite's INTEGER is PostgreSQL's BIGINT, and so on)."""
        kinds = {"integer": "integer", "bigint": "integer", "real": "real", "double precision": "real",
                 "text": "text", "blob": "blob", "bytea": "blob"}  # fmt: skip
        out: dict[str, list[tuple[str, str, bool, bool]]] = {}
        if self.dialect == "postgresql":
            pk = {
                (r[0], r[1])
                for r in self.conn.execute(
                    "SELECT k.table_name, k.column_name FROM information_schema.table_constraints t"
                    " JOIN information_schema.key_column_usage k ON k.constraint_name = t.constraint_name"
                    " AND k.table_schema = t.table_schema WHERE t.constraint_type = 'PRIMARY KEY'"
                    " AND t.table_schema = current_schema()"
                )
            }
            for r in self.conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
                " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
            ):
                out.setdefault(r[0], []).append(
                    (r[1], kinds.get(r[2], r[2]), r[3] == "NO" or (r[0], r[1]) in pk, (r[0], r[1]) in pk)
                )
            return out
        tables = [
            r[0]
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        for t in tables:
            for r in self.conn.execute(f"PRAGMA table_info({t})"):
                # a SQLite primary key column is implicitly NOT NULL (a rowid alias or WITHOUT ROWID)
                out.setdefault(t, []).append(
                    (r[1], kinds.get(r[2].lower(), r[2].lower()), bool(r[3] or r[5]), bool(r[5]))
                )
        return out

    # ---- cells and runs ----

    def ensure_cells(
        self,
        campaign_id: int,
        cells: Iterable[Cell],
        conditions: dict[str, ConditionSpec],
        units: dict[str, tuple[str, bool]],
    ) -> dict[str, int]:
        """Inserts missing cells; returns cell key -> id. `units` maps a cell key to (unit, higher_is_better)."""
        ids: dict[str, int] = {}
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for cell in cells:
                cond = conditions[cell.condition]
                unit, hib = units[cell.key]
                self.conn.execute(
                    "INSERT OR IGNORE INTO cells(campaign_id, key, workload, params_json, condition,"
                    " condition_json, baseline, metric, unit, higher_is_better) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        campaign_id,
                        cell.key,
                        cell.workload,
                        cell.params_json,
                        cell.condition,
                        _json(cond.to_dict()),
                        cond.baseline,
                        cell.metric,
                        unit,
                        int(hib),
                    ),
                )
                ids[cell.key] = int(
                    self.conn.execute(
                        "SELECT id FROM cells WHERE campaign_id=? AND key=?", (campaign_id, cell.key)
                    ).fetchone()[0]
                )
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return ids

    def attempts(self, campaign_id: int) -> dict[tuple[str, int], list[bool]]:
        """(cell key, repetition) -> validity of each attempt already stored, in attempt order."""
        out: dict[tuple[str, int], list[bool]] = {}
        for row in self.conn.execute(
            "SELECT c.key, r.repetition, r.valid FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE r.campaign_id=? ORDER BY r.attempt",
            (campaign_id,),
        ):
            out.setdefault((row[0], row[1]), []).append(bool(row[2]))
        return out

    def run_identities(self, campaign_id: int) -> list[tuple[str, int, int]]:
        """(cell key, repetition, attempt) of every stored run of a campaign: a run's identity in ingest."""
        return [
            (r[0], int(r[1]), int(r[2]))
            for r in self.conn.execute(
                "SELECT c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON c.id = r.cell_id"
                " WHERE r.campaign_id=?",
                (campaign_id,),
            )
        ]

    def _insert_series(self, run_id: int, series) -> None:
        """A run's monitor rows, packed, with each row's summary (store schema 10) unless a test stands in
        for an older boardlab's store (as record_run's summary columns)."""
        if self._schema() >= 10:
            self.conn.executemany(
                "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value, t_first_ns, t_last_ns,"
                " t_sum_ns, value_sum) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(run_id, *row) for row in packed.pack_summarized(series)],
            )
            return
        self.conn.executemany(
            "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value) VALUES (?,?,?,?,?,?)",
            [(run_id, *row) for row in packed.pack(series)],
        )

    def record_run(self, campaign_id: int, cell_id: int, run: RunResult) -> int:
        """One transaction per run: the run, its metrics, every iteration, its histograms, the monitor's series."""
        # its summary columns (migration 9), unless a test stands in for an older boardlab's store
        summary = column_values(run_columns(run.monitor, run.rusage)) if self._schema() >= 9 else ()
        summary_cols = "".join(f", {c}" for c in RUN_COLUMNS) if summary else ""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            cur = self.conn.execute(
                "INSERT INTO runs(campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns, cpu,"
                " exit_code, ok, valid, invalid_reason, value, warmup_iterations, warmup_capped, rusage_json,"
                " gate_waited_s, gate_timed_out, gate_detail, condition_state_json, monitor_json, error,"
                f" worker_json, aa_arm{summary_cols}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"
                f"{',?' * len(summary)})",
                (
                    campaign_id,
                    cell_id,
                    run.repetition,
                    run.attempt,
                    run.seq,
                    run.started_unix_s,
                    run.wall_ns,
                    run.cpu,
                    run.exit_code,
                    int(run.ok),
                    int(run.valid),
                    run.invalid_reason,
                    run.value,
                    run.warmup_iterations,
                    None if run.warmup_capped is None else int(run.warmup_capped),
                    _json(run.rusage),
                    run.gate.waited_s,
                    int(run.gate.timed_out),
                    run.gate.detail,
                    _json(run.condition_state),
                    _json(run.monitor),
                    run.error,
                    run.worker_json,
                    run.aa_arm,
                    *summary,
                ),
            )
            assert cur.lastrowid is not None  # an INSERT sets it
            run_id = int(cur.lastrowid)
            self.conn.executemany(
                "INSERT INTO run_metrics(run_id, metric, unit, higher_is_better, median, min, p90, p99)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [
                    (run_id, m.name, m.unit, int(m.higher_is_better), m.median, m.min, m.p90, m.p99)
                    for m in run.metrics
                ],
            )
            values = [(run_id, "iteration_ns", i, float(v)) for i, v in enumerate(run.iterations_ns)]
            for m in run.metrics:
                values.extend((run_id, m.name, i, float(v)) for i, v in enumerate(m.values) if v is not None)
            self.conn.executemany(
                "INSERT INTO run_values(run_id, metric, iteration, value) VALUES (?,?,?,?)", values
            )
            self._insert_series(run_id, run.series)
            self.conn.executemany(
                "INSERT INTO run_histograms(run_id, name, bucket_width, unit, counts_json, overflow, total)"
                " VALUES (?,?,?,?,?,?,?)",
                [
                    (run_id, h.name, h.bucket_width, h.unit, json.dumps(list(h.counts)), h.overflow, h.total)
                    for h in run.histograms
                ],
            )
            self.conn.executemany(
                "INSERT INTO run_energy(run_id, source, method, start_ns, end_ns, energy_j, power_avg_w,"
                " power_peak_w, quantization_j, samples, update_interval_s, warnings_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (run_id, e.source, e.method, e.start_ns, e.end_ns, e.energy_j, e.power_avg_w,
                     e.power_peak_w, e.quantization_j, e.samples, e.update_interval_s, _json(list(e.warnings)))
                    for e in run.energy
                ],
            )  # fmt: skip
            self.conn.execute(
                "UPDATE campaigns SET heartbeat_unix_s=? WHERE id=?", (time.time(), campaign_id)
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return run_id

    # ---- energy (boardlab.energy) ----

    def record_energy_sources(
        self, campaign_id: int, rows: list[tuple[str, dict, bool, str | None, bool]]
    ) -> None:
        """(name, spec, supported, reason, is_primary) of every source considered; replaces a resumed run's."""
        with self.conn:
            self.conn.execute("DELETE FROM energy_sources WHERE campaign_id=?", (campaign_id,))
            self.conn.executemany(
                "INSERT INTO energy_sources(campaign_id, name, spec_json, supported, reason, is_primary)"
                " VALUES (?,?,?,?,?,?)",
                [
                    (campaign_id, n, _json(spec), int(ok), why, int(primary))
                    for n, spec, ok, why, primary in rows
                ],
            )

    def record_idle(self, campaign_id: int, source: str, block: int, row: dict) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO energy_idle(campaign_id, source, block, started_unix_s, duration_s,"
                " energy_j, power_w, quantization_j, samples, gate_detail) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    campaign_id,
                    source,
                    block,
                    row["started_unix_s"],
                    row["duration_s"],
                    row["energy_j"],
                    row["power_w"],
                    row["quantization_j"],
                    row["samples"],
                    row.get("gate_detail"),
                ),
            )

    def energy_sources(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM energy_sources WHERE campaign_id=? ORDER BY is_primary DESC, name", (campaign_id,)
        ).fetchall()

    def idle_windows(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM energy_idle WHERE campaign_id=? ORDER BY source, block", (campaign_id,)
        ).fetchall()

    def run_energy(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT e.* FROM run_energy e JOIN runs r ON r.id = e.run_id WHERE r.campaign_id=?"
            " ORDER BY e.run_id, e.source",
            (campaign_id,),
        ).fetchall()

    # ---- reading for stats, reports and exports ----

    def cells(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM cells WHERE campaign_id=? ORDER BY id", (campaign_id,)
        ).fetchall()

    def runs(self, campaign_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT r.*, c.key AS cell_key, c.workload, c.params_json, c.condition, c.metric, c.unit,"
            " c.higher_is_better FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.campaign_id=?"
            " ORDER BY r.seq, r.attempt",
            (campaign_id,),
        ).fetchall()

    def run_values(self, run_id: int, metric: str) -> list[float]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT value FROM run_values WHERE run_id=? AND metric=? ORDER BY iteration",
                (run_id, metric),
            )
        ]

    def run_metrics(self, run_id: int) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM run_metrics WHERE run_id=?", (run_id,)).fetchall()

    def histograms(self, run_id: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            "SELECT * FROM run_histograms WHERE run_id=? ORDER BY name", (run_id,)
        ).fetchall()

    def series(self, run_id: int) -> list[SeriesSample]:
        """Every monitor sample of a run, by source and time: rows of (source, t_ns, value)."""
        return [
            SeriesSample((source, t, v))
            for _, source, times, values in self.run_series((run_id,))
            for t, v in zip(times, values, strict=True)
        ]

    # ---- reading for analysis (portable SQL: also spoken by the PostgreSQL store) ----

    @contextlib.contextmanager
    def snapshot(self):
        """One read transaction: a consistent view while a running campaign commits runs (WAL)."""
        self.conn.execute("BEGIN")
        try:
            yield self
        finally:
            self.conn.execute("COMMIT")

    def has_runs(self) -> bool:
        return self.conn.execute("SELECT count(*) FROM runs").fetchone()[0] > 0

    def campaign_artifact(self, campaign_id: int, name: str) -> bytes | None:
        """The newest artifact `name` stored for the campaign (e.g. the governor lab's labels), or None."""
        row = self.conn.execute(
            "SELECT data FROM artifacts WHERE campaign_id=? AND name=? ORDER BY id DESC LIMIT 1",
            (campaign_id, name),
        ).fetchone()
        return None if row is None else bytes(row["data"])

    # ---- a campaign's commit and branch (`run --commit`, store schema 11) ----

    def set_campaign_identity(
        self, campaign_id: int, sha: str | None, describe: str | None, branch: str | None
    ) -> None:
        """The commit, its `git describe` name and the branch the campaign measured."""
        with self.conn:
            self.conn.execute(
                "UPDATE campaigns SET commit_sha=?, commit_describe=?, branch=? WHERE id=?",
                (sha, describe, branch, campaign_id),
            )

    def campaign_identities(
        self, campaign_ids: list[int]
    ) -> dict[int, tuple[str | None, str | None, str | None]]:
        """(commit hash, describe name, branch) of each of these campaigns that has one (none in a store from
        before schema 11)."""
        if not campaign_ids or self._schema() < 11:
            return {}
        marks = ",".join("?" * len(campaign_ids))
        rows = self.conn.execute(
            f"SELECT id, commit_sha, commit_describe, branch FROM campaigns WHERE id IN ({marks})"
            " AND (commit_sha IS NOT NULL OR commit_describe IS NOT NULL OR branch IS NOT NULL)",
            tuple(campaign_ids),
        ).fetchall()
        return {int(r[0]): (r[1], r[2], r[3]) for r in rows}

    def iter_export_metrics(self, campaign_id: int) -> Iterator[tuple]:
        """Every metric stored of each run of a campaign, in run order (seq, attempt) and metric name: (run id,
        cell id, repetition, attempt, seq, valid, metric, value, unit, higher is better), `value` the run's
        value of the metric (the median of its iterations), one tuple at a time: `export --table metrics`."""
        sql = (
            "SELECT r.id, r.cell_id, r.repetition, r.attempt, r.seq, r.valid, m.metric, m.median, m.unit,"
            " m.higher_is_better FROM runs r JOIN run_metrics m ON m.run_id = r.id WHERE r.campaign_id=?"
            " ORDER BY r.seq, r.attempt, r.id, m.metric"
        )
        return self.iter_rows(sql, (campaign_id,))

    # ---- history and the lab's web view (boardlab history, boardlab serve): bounded reads ----

    def set_campaign_context(
        self, campaign_id: int, *, label: str | None, inventory: dict, runs_planned: int
    ) -> None:
        """What history and serve read of a campaign: the user's label of its change (kept on a resume without
        one), the board's inventory at this start, the runs its schedule plans."""
        with self.conn:
            self.conn.execute(
                "UPDATE campaigns SET label=coalesce(?, label), inventory_json=?, runs_planned=?,"
                " heartbeat_unix_s=? WHERE id=?",
                (label, _json(inventory), runs_planned, time.time(), campaign_id),
            )

    _CAMPAIGN_COLUMNS = (
        "c.id, c.name, c.plan_hash, c.board_id, c.boardlab_version, c.kern_version, c.status, c.started_unix_s,"
        " c.finished_unix_s, c.label, c.runs_planned, c.heartbeat_unix_s, b.label AS board_label"
    )

    def campaigns_of_plan(
        self, plan: str, board: str | None = None, *, limit: int = 1000
    ) -> list[sqlite3.Row]:
        """The campaigns of a plan (its name or plan hash), on one board (label or fingerprint) or all, in the
        order they arrived; the latest `limit` of each board. Arrival, not the board's wall clock: a board
        without a battery-backed clock starts campaigns "in 2000" until NTP answers. A board's own store
        numbers its campaigns as they start, and an ingest copies a file's campaigns in that order, so the
        ids of a board's campaigns follow the order it ran them (analysis.history flags a clock that went
        back against it)."""
        on_board = "" if board is None else " AND (b.label=? OR b.fingerprint=?)"
        rows = self.conn.execute(
            f"SELECT {self._CAMPAIGN_COLUMNS}, c.environment_json, c.inventory_json, b.inventory_json AS"
            " board_inventory_json FROM campaigns c JOIN boards b ON b.id = c.board_id"
            f" WHERE (c.name=? OR c.plan_hash=?){on_board} ORDER BY b.label, c.id DESC",
            (plan, plan) + (() if board is None else (board, board)),
        ).fetchall()
        kept: dict[str, list] = {}
        for r in rows:
            if len(kept.setdefault(r["board_label"], [])) < limit:
                kept[r["board_label"]].append(r)
        return [r for label in sorted(kept) for r in reversed(kept[label])]

    def campaign_page(self, *, limit: int, offset: int = 0, board_id: int | None = None) -> list[sqlite3.Row]:
        """Campaigns, the latest to arrive first, one page."""
        on_board = "" if board_id is None else " WHERE c.board_id=?"
        return self.conn.execute(
            f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns c JOIN boards b ON b.id = c.board_id{on_board}"
            " ORDER BY c.id DESC LIMIT ? OFFSET ?",
            (() if board_id is None else (board_id,)) + (limit, offset),
        ).fetchall()

    def board_page(self, *, limit: int, offset: int = 0) -> list[sqlite3.Row]:
        """Boards by label, one page, each with its campaign count and latest campaign's id."""
        return self.conn.execute(
            "SELECT b.id, b.label, b.fingerprint, b.inventory_json, b.first_seen_unix_s,"
            " (SELECT count(*) FROM campaigns c WHERE c.board_id = b.id) AS n_campaigns,"
            " (SELECT c.id FROM campaigns c WHERE c.board_id = b.id ORDER BY c.id DESC"
            " LIMIT 1) AS last_campaign_id FROM boards b ORDER BY b.label, b.id LIMIT ? OFFSET ?",
            (limit, offset),
        ).fetchall()

    def campaigns_with_status(self, status: str, *, limit: int) -> list[sqlite3.Row]:
        return self.conn.execute(
            f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns c JOIN boards b ON b.id = c.board_id"
            " WHERE c.status=? ORDER BY c.id DESC LIMIT ?",
            (status, limit),
        ).fetchall()

    def run_progress(self, campaign_id: int) -> tuple[int, int, float]:
        """(runs stored, of them valid, total wall seconds of the stored runs) of a campaign."""
        row = self.conn.execute(
            "SELECT count(*), coalesce(sum(valid), 0), coalesce(sum(wall_ns), 0) FROM runs WHERE campaign_id=?",
            (campaign_id,),
        ).fetchone()
        return int(row[0]), int(row[1]), float(row[2]) / 1e9

    def plan_names(self, *, limit: int) -> list[sqlite3.Row]:
        """The plans of the store's campaigns (name, campaigns, latest start), most recently run first."""
        return self.conn.execute(
            "SELECT name, count(*) AS n_campaigns, max(started_unix_s) AS latest_unix_s FROM campaigns"
            " GROUP BY name ORDER BY max(started_unix_s) DESC LIMIT ?",
            (limit,),
        ).fetchall()

    # ---- the store owns every query: planning reads, campaign artifacts (issue 24, layering) ----
    # Reads a plan's dry-run makes of earlier runs (campaign/reach.py, campaign/advice.py) and the campaign
    # artifacts the governor lab and the runner write, so that no SQL lives outside store/. Portable SQL.

    def earlier_run_times(self) -> list[tuple[str, int, float | None]]:
        """(cell key, wall ns, gate wait s) of every run that finished, in any campaign of the store: what a
        dry-run's estimate of a plan's duration reads."""
        return [
            (r[0], int(r[1]), None if r[2] is None else float(r[2]))
            for r in self.conn.execute(
                "SELECT c.key, r.wall_ns, r.gate_waited_s FROM runs r JOIN cells c ON c.id = r.cell_id"
                " WHERE r.ok = 1 AND r.wall_ns IS NOT NULL ORDER BY r.id"
            )
        ]

    def earlier_valid_values(self) -> dict[str, list[float]]:
        """cell key -> the value of every valid run, in any campaign of the store, in the order stored: what
        the dry-run's power advice reads of the cells' spread."""
        out: dict[str, list[float]] = {}
        for r in self.conn.execute(
            "SELECT c.key, r.value FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE r.ok = 1 AND r.valid = 1 AND r.value IS NOT NULL ORDER BY r.id"
        ):
            out.setdefault(r[0], []).append(float(r[1]))
        return out

    def save_campaign_artifact(
        self, campaign_id: int, name: str, data: bytes, media_type: str = "application/json"
    ) -> None:
        """Replaces the campaign's artifact `name` in one transaction (`campaign_artifact` reads it)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute("DELETE FROM artifacts WHERE campaign_id=? AND name=?", (campaign_id, name))
            self.conn.execute(
                "INSERT INTO artifacts (campaign_id, run_id, name, media_type, data) VALUES (?, NULL, ?, ?, ?)",
                (campaign_id, name, media_type, data),
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    # ---- campaign summaries for serve and history on a large store (issue 26, migration 8) ----

    def count_runs(self, campaign_id: int) -> int:
        """Runs stored of a campaign: a count over the runs' (campaign_id, ...) unique index, not the table."""
        return int(
            self.conn.execute("SELECT count(*) FROM runs WHERE campaign_id=?", (campaign_id,)).fetchone()[0]
        )

    def campaign_summary(self, campaign_id: int, *, with_document: bool = False) -> sqlite3.Row | None:
        """The campaign's stored summary (schema, runs_stored, status, cells_json; the document's JSON only
        when asked: it is the large part), or None (none stored, or a store before migration 8)."""
        cols = "campaign_id, schema, runs_stored, status, computed_unix_s, cells_json" + (
            ", document_json" if with_document else ""
        )
        return self.conn.execute(
            f"SELECT {cols} FROM campaign_summaries WHERE campaign_id=?", (campaign_id,)
        ).fetchone()

    def put_campaign_summary(
        self, campaign_id: int, *, schema: int, runs_stored: int, status: str, cells_json: str,
        document_json: str, document_html: str = "",
    ) -> None:  # fmt: skip
        """Stores (replaces) a campaign's summary, in one transaction. `schema` is the fingerprint of the code
        that computed it (boardlab.summary.code_fingerprint); `document_html` is no longer written (pages
        render the document), the column stays for older readers."""
        with self.conn:
            self.conn.execute("DELETE FROM campaign_summaries WHERE campaign_id=?", (campaign_id,))
            self.conn.execute(
                "INSERT INTO campaign_summaries(campaign_id, schema, runs_stored, status, computed_unix_s,"
                " cells_json, document_json, document_html) VALUES (?,?,?,?,?,?,?,?)",
                (campaign_id, schema, runs_stored, status, time.time(), cells_json, document_json,
                 document_html),
            )  # fmt: skip

    def campaigns_without_fresh_summary(self, schema: int, *, limit: int) -> list[int]:
        """Ids of campaigns that are not running and have no summary of this schema, or one computed at
        another status or run count (a campaign resumed since), oldest first."""
        return [
            int(r[0])
            for r in self.conn.execute(
                "SELECT c.id FROM campaigns c LEFT JOIN campaign_summaries s ON s.campaign_id = c.id"
                " WHERE c.status <> 'running' AND (s.campaign_id IS NULL OR s.schema <> ? OR s.status <> c.status"
                " OR s.runs_stored <> (SELECT count(*) FROM runs r WHERE r.campaign_id = c.id))"
                " ORDER BY c.id LIMIT ?",
                (schema, limit),
            )
        ]

    def record_value_runs(
        self, campaign_id: int, metric: tuple[str, str, bool], runs: Iterable[tuple]
    ) -> int:
        """Bulk insert of one-value runs (a benchmark's synthetic store, a converted archive): each
        (cell_id, repetition, seq, started_unix_s, wall_ns, value, aa_arm) becomes a valid first attempt
        with its metric row, its value as the run's one iteration and its wall time as that iteration's
        time, in one transaction. `metric` is
        (name, unit, higher_is_better). Returns the runs inserted. Far faster than `record_run` per run."""
        name, unit, hib = metric
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            first = self.conn.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()[0]
            self.conn.executemany(
                "INSERT INTO runs(campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns, cpu,"
                " exit_code, ok, valid, value, warmup_iterations, warmup_capped, rusage_json, gate_waited_s,"
                " gate_timed_out, gate_detail, condition_state_json, monitor_json, aa_arm)"
                " VALUES (?,?,?,1,?,?,?,NULL,0,1,1,?,0,0,'{}',0,0,'',  '{}','{}',?)",
                ((campaign_id, *r) for r in runs),
            )
            self.conn.execute(
                "INSERT INTO run_metrics(run_id, metric, unit, higher_is_better, median, min, p90, p99)"
                " SELECT id, ?, ?, ?, value, value, value, value FROM runs WHERE id > ? AND campaign_id=?",
                (name, unit, int(hib), first, campaign_id),
            )
            for metric_name in ("iteration_ns", name):
                self.conn.execute(
                    "INSERT INTO run_values(run_id, metric, iteration, value)"
                    " SELECT id, ?, 0, CASE WHEN ? THEN wall_ns ELSE value END FROM runs"
                    " WHERE id > ? AND campaign_id=?",
                    (metric_name, metric_name == "iteration_ns", first, campaign_id),
                )
            count = self.conn.execute(
                "SELECT count(*) FROM runs WHERE id > ? AND campaign_id=?", (first, campaign_id)
            ).fetchone()[0]
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        return int(count)

    def step_summary(self, from_id: int, to_id: int) -> sqlite3.Row | None:
        """The stored step from campaign `from_id` to `to_id` (schema, runs_from, runs_to, rows_json,
        comparisons_json), or None."""
        return self.conn.execute(
            "SELECT schema, runs_from, runs_to, rows_json, comparisons_json FROM step_summaries"
            " WHERE from_campaign_id=? AND to_campaign_id=?",
            (from_id, to_id),
        ).fetchone()

    def put_step_summary(
        self, from_id: int, to_id: int, *, schema: int, runs_from: int, runs_to: int, rows_json: str,
        comparisons_json: str,
    ) -> None:  # fmt: skip
        with self.conn:
            self.conn.execute(
                "DELETE FROM step_summaries WHERE from_campaign_id=? AND to_campaign_id=?", (from_id, to_id)
            )
            self.conn.execute(
                "INSERT INTO step_summaries(from_campaign_id, to_campaign_id, schema, runs_from, runs_to,"
                " rows_json, comparisons_json) VALUES (?,?,?,?,?,?,?)",
                (from_id, to_id, schema, runs_from, runs_to, rows_json, comparisons_json),
            )

    def previous_campaign(self, campaign_id: int) -> int | None:
        """The campaign of the same plan (name) on the same board that arrived just before this one, or None
        (arrival, not the board's wall clock: `campaigns_of_plan`)."""
        row = self.conn.execute(
            "SELECT p.id FROM campaigns c JOIN campaigns p ON p.name = c.name AND p.board_id = c.board_id"
            " AND p.id < c.id WHERE c.id=? ORDER BY p.id DESC LIMIT 1",
            (campaign_id,),
        ).fetchone()
        return None if row is None else int(row[0])

    # ---- streaming reads (issue 27: the analysis reads a cell in one query, the monitor series and the
    # exported runs in bounded batches; memory follows the largest cell, never the campaign) ----

    _BATCH = 1000  # runs per batch of monitor series

    def _schema(self) -> int:
        if not hasattr(self, "_schema_cached"):
            self._schema_cached = self.schema_version()
        return self._schema_cached

    def iter_rows(self, sql: str, params: tuple = ()) -> Iterator:
        """The rows of a query one at a time: SQLite steps its cursor, PostgreSQL reads a server-side one."""
        if self.dialect == "postgresql":
            from boardlab.store import pg

            return cast(pg.Connection, self.conn).stream(sql, params)
        return iter(self.conn.execute(sql, params))

    _CELL_RUN_COLUMNS = (
        "id, seq, repetition, attempt, started_unix_s, value, valid, ok, invalid_reason, error, wall_ns,"
        " gate_waited_s, warmup_capped"
    )

    def cell_runs(self, cell_id: int) -> list:
        """Every run of one cell in run order, with what the analysis reads (not the worker's whole result):
        the run's summary columns (RUN_COLUMNS) among them, derived from its JSON on a store before
        migration 9 (a reader does not migrate) by the function that filled them."""
        cols = self._CELL_RUN_COLUMNS + (", aa_arm" if self._schema() >= 3 else "")
        if self._schema() >= 9:
            return self.conn.execute(
                f"SELECT {cols}, {', '.join(RUN_COLUMNS)} FROM runs WHERE cell_id=? ORDER BY seq, attempt",
                (cell_id,),
            ).fetchall()
        rows = self.conn.execute(
            f"SELECT {cols}, monitor_json, rusage_json FROM runs WHERE cell_id=? ORDER BY seq, attempt",
            (cell_id,),
        ).fetchall()
        return [self._with_run_columns(r) for r in rows]

    def _with_run_columns(self, row) -> dict:
        out = {k: row[k] for k in row.keys() if k not in ("monitor_json", "rusage_json")}
        try:
            values = columns_of_json(row["monitor_json"], row["rusage_json"])
        except DamagedValue as exc:  # a store opened without verify (serve verified it at its start)
            raise damaged(self.path, "runs", exc.args[0], row["id"], exc.args[1]) from None
        return out | dict(zip(RUN_COLUMNS, values, strict=True))

    def cell_metrics(self, cell_id: int) -> dict[int, dict[str, dict]]:
        """run id -> metric -> its stored row (median, min, p90, p99, unit ...), for the valid runs of a cell."""
        out: dict[int, dict[str, dict]] = {}
        for row in self.conn.execute(
            "SELECT m.* FROM run_metrics m JOIN runs r ON r.id = m.run_id WHERE r.cell_id=? AND r.valid=1",
            (cell_id,),
        ):
            out.setdefault(int(row["run_id"]), {})[row["metric"]] = dict(row)
        return out

    def cell_values(self, cell_id: int, metric: str) -> dict[int, list[float]]:
        """run id -> every stored sample of `metric` in iteration order, for the valid runs of a cell."""
        out: dict[int, list[float]] = {}
        for run_id, value in self.conn.execute(
            "SELECT v.run_id, v.value FROM run_values v JOIN runs r ON r.id = v.run_id"
            " WHERE r.cell_id=? AND r.valid=1 AND v.metric=? ORDER BY v.run_id, v.iteration",
            (cell_id, metric),
        ):
            out.setdefault(int(run_id), []).append(value)
        return out

    def cell_histograms(self, cell_id: int) -> dict[int, list[sqlite3.Row]]:
        """run id -> its stored histograms by name, for the valid runs of a cell."""
        out: dict[int, list[sqlite3.Row]] = {}
        for row in self.conn.execute(
            "SELECT h.* FROM run_histograms h JOIN runs r ON r.id = h.run_id WHERE r.cell_id=? AND r.valid=1"
            " ORDER BY h.run_id, h.name",
            (cell_id,),
        ):
            out.setdefault(int(row["run_id"]), []).append(row)
        return out

    def run_series(self, run_ids: Sequence[int]) -> Iterator[tuple[int, str, array, array]]:
        """(run id, source, times in ns since the run started, values) of the given runs (a bounded batch),
        in the order of `run_ids`, each run's sources by name; from an older store's per-sample rows too."""
        if not run_ids:
            return
        marks = ",".join("?" * len(run_ids))
        by_run: dict[int, list[tuple[str, array, array]]] = {}
        if self._schema() >= 7:
            for run_id, source, packing, samples, t_ns, value in self.conn.execute(
                "SELECT run_id, source, packing, samples, t_ns, value FROM run_series"
                f" WHERE run_id IN ({marks}) ORDER BY run_id, source",
                tuple(run_ids),
            ):
                arrays = packed.unpack(packing, samples, t_ns, value)
                if arrays is None:
                    raise DamagedStore(
                        f"{self.path}: damaged results database (run_series of run {run_id}, source {source!r}): "
                        "its packed samples are not what boardlab wrote; restore the file from a copy"
                    )
                by_run.setdefault(int(run_id), []).append((source, *arrays))
        else:
            rows: dict[int, list] = {}
            for run_id, source, t_ns, value in self.conn.execute(
                f"SELECT run_id, source, t_ns, value FROM series WHERE run_id IN ({marks})"
                " ORDER BY run_id, source, t_ns",
                tuple(run_ids),
            ):
                rows.setdefault(int(run_id), []).append((source, t_ns, value))
            for run_id, samples in rows.items():
                by_run[run_id] = packed.arrays(samples)
        for run_id in run_ids:
            for source, times, values in by_run.get(run_id, ()):
                yield run_id, source, times, values

    def _run_order(self, campaign_id: int) -> tuple[array, array]:
        """The ids and start times (unix s) of a campaign's started runs in run order (seq, attempt): 16 bytes
        a run, the order to read its series in batches, not the runs."""
        ids, starts = array("q"), array("d")
        for r in self.iter_rows(
            "SELECT id, started_unix_s FROM runs WHERE campaign_id=? AND started_unix_s IS NOT NULL"
            " ORDER BY seq, attempt, id",
            (campaign_id,),
        ):
            ids.append(int(r[0]))
            starts.append(float(r[1]))
        return ids, starts

    def campaign_series(self, campaign_id: int) -> Iterator[tuple[int, float, str, array, array]]:
        """(run id, run start unix s, source, times, values) of every run of a campaign, in run order
        (seq, attempt), read a batch of runs at a time."""
        ids, starts = self._run_order(campaign_id)
        for i in range(0, len(ids), self._BATCH):
            start_of = dict(zip(ids[i : i + self._BATCH], starts[i : i + self._BATCH], strict=True))
            for run_id, source, times, values in self.run_series(ids[i : i + self._BATCH]):
                yield run_id, start_of[run_id], source, times, values

    def run_start_range(self, campaign_id: int) -> tuple[float, float] | None:
        """(first, last) start time of the campaign's runs, or None when it has none."""
        row = self.conn.execute(
            "SELECT min(started_unix_s), max(started_unix_s) FROM runs WHERE campaign_id=?", (campaign_id,)
        ).fetchone()
        return None if row is None or row[0] is None else (float(row[0]), float(row[1]))

    # ---- report speed (issue 27: each report section reads only the rows and columns it shows) ----

    def iter_worker_series(self, campaign_id: int) -> Iterator:
        """(cell id, worker result JSON) of the campaign's valid runs whose result may hold time series (it
        names "series"), in run order, one row at a time: the series study reads no other run's result."""
        return self.iter_rows(
            "SELECT cell_id, worker_json FROM runs WHERE campaign_id=? AND valid=1 AND worker_json LIKE ?"
            " ORDER BY seq, attempt",
            (campaign_id, '%"series"%'),
        )

    def campaign_series_extents(self, campaign_id: int) -> Iterator[tuple[int, float, str, int, int, int]]:
        """(run id, run start unix s, source, samples, first t_ns, last t_ns) of every run and source of a
        campaign with samples, in the order of `campaign_series`: where each source's samples lie in time,
        without reading (or unpacking) the samples themselves (the database cuts the first and the last;
        PostgreSQL's substr of bytea takes an integer offset, and `samples` is a bigint there)."""
        if self._schema() < 7:  # an older store's per-sample rows: from the samples
            for run_id, start, source, times, _values in self.campaign_series(campaign_id):
                if times:
                    yield run_id, start, source, len(times), times[0], times[-1]
            return
        ids, starts = self._run_order(campaign_id)
        for i in range(0, len(ids), self._BATCH):
            batch = ids[i : i + self._BATCH]
            by_run: dict[int, list[tuple[str, int, int, int]]] = {}
            for run_id, source, samples, first, last in self.conn.execute(
                "SELECT run_id, source, samples, substr(t_ns, 1, 8),"
                " substr(t_ns, CAST(8 * samples - 7 AS INTEGER), 8)"
                f" FROM run_series WHERE run_id IN ({','.join('?' * len(batch))}) AND samples > 0"
                " ORDER BY run_id, source",
                tuple(batch),
            ):
                if len(first) != 8 or len(last) != 8:  # the full read (run_series) names the damage
                    continue
                by_run.setdefault(int(run_id), []).append(
                    (source, int(samples), _int64_le(first), _int64_le(last))
                )
            for run_id, start in zip(batch, starts[i : i + self._BATCH], strict=True):
                for source, samples, t0, t1 in by_run.get(run_id, ()):
                    yield run_id, start, source, samples, t0, t1

    # ---- export (issue 27: the columns an export writes, a run at a time, in run order) ----

    EXPORT_RUN_COLUMNS = ("id", "cell_id", "repetition", "attempt", "seq", "value", "valid", "ok", "invalid_reason",
                          "error", "started_unix_s", "wall_ns", "utime_us", "stime_us", "cpu", "warmup_iterations",
                          "warmup_capped", "aa_arm")  # fmt: skip

    EXPORT_ENERGY_COLUMNS = ("method", "start_ns", "end_ns", "energy_j", "power_avg_w", "power_peak_w",
                             "quantization_j", "samples", "update_interval_s", "warnings_json")  # fmt: skip

    def iter_export_runs(self, campaign_id: int, energy_source: str | None = None) -> Iterator[tuple]:
        """The runs of a campaign as tuples of EXPORT_RUN_COLUMNS, in run order (seq, attempt), one at a time:
        the worker's CPU time taken out of its rusage by the database, and without the worker's result,
        monitor summary and condition state, most of a stored run's bytes, which an export does not write
        (an older store without aa_arm gives None there). With `energy_source`, each tuple goes on with the
        run's EXPORT_ENERGY_COLUMNS of that source (None when it has none)."""
        if self.dialect == "postgresql":
            cpu = [
                f"CAST(CAST(r.rusage_json AS jsonb) ->> '{k}' AS bigint)" for k in ("utime_us", "stime_us")
            ]
        else:
            cpu = [f"json_extract(r.rusage_json, '$.{k}')" for k in ("utime_us", "stime_us")]
        expr = {
            "utime_us": cpu[0],
            "stime_us": cpu[1],
            "aa_arm": "r.aa_arm" if self._schema() >= 3 else "NULL",
        }
        cols = [expr.get(c, f"r.{c}") for c in self.EXPORT_RUN_COLUMNS]
        join, params = "", cast(tuple, (campaign_id,))
        if energy_source is not None:
            cols += [f"e.{c}" for c in self.EXPORT_ENERGY_COLUMNS]
            join = " LEFT JOIN run_energy e ON e.run_id = r.id AND e.source = ?"
            params = (energy_source, campaign_id)
        sql = f"SELECT {', '.join(cols)} FROM runs r{join} WHERE r.campaign_id=? ORDER BY r.seq, r.attempt, r.id"
        if self.dialect == "postgresql":
            return self.iter_rows(sql, params)
        cur = self.conn.cursor()
        cur.row_factory = None  # plain tuples, indexed by position: cheaper than a sqlite3.Row per run
        return cur.execute(sql, params)

    # ---- the HTML report's monitor plots (issue 27, HTML report): the database sums whole rows per time bucket
    # from their summaries (store schema 10, boardlab.store.packed.summarize); Python reads only the rest ----

    _SERIES_JOIN = (
        "FROM runs r CROSS JOIN run_series s WHERE s.run_id = r.id AND r.campaign_id=? AND s.samples > 0"
        " AND r.started_unix_s IS NOT NULL"
    )
    _SUM_RUNS = 50_000  # runs per grouped query: the database's sort stays in memory, its cost linear in runs

    def series_grid(self, campaign_id: int) -> tuple[float, float, float] | None:
        """(t0, lo, hi): the campaign's first run start (unix s), and a time range in s since t0 that holds
        every monitor sample: from 0 (or the earliest sample, if one precedes its run's start) to the last run's
        start plus the latest sample time of any run. None when the campaign has no samples."""
        starts = self.run_start_range(campaign_id)
        if starts is None:
            return None
        lo_ns, hi_ns = math.inf, -math.inf  # the earliest and latest sample time in ns after its run's start
        unsummarized = self._schema() < 10
        if not unsummarized:
            # min and max ignore NULLs; the count says whether any row lacks its times
            row = self.conn.execute(
                f"SELECT min(s.t_first_ns), max(s.t_last_ns), count(*) - count(s.t_first_ns + s.t_last_ns)"
                f" {self._SERIES_JOIN}",
                (campaign_id,),
            ).fetchone()
            if row[0] is not None:
                lo_ns, hi_ns = int(row[0]), int(row[1])
            unsummarized = bool(row[2])
        if unsummarized:
            for _, _, _, _, t_first, t_last in self._unsummarized_extents(campaign_id):
                lo_ns, hi_ns = min(lo_ns, t_first), max(hi_ns, t_last)
        if lo_ns == math.inf:
            return None
        t0, last_start = starts
        return t0, min(0.0, lo_ns / 1e9), (last_start - t0) + hi_ns / 1e9

    def _unsummarized_extents(self, campaign_id: int) -> Iterator[tuple[int, float, str, int, int, int]]:
        """`campaign_series_extents` of the rows with samples but no summary (all rows before schema 10)."""
        if self._schema() < 10:
            yield from self.campaign_series_extents(campaign_id)
            return
        for run_id, start, source, n, first, last in self.iter_rows(
            "SELECT r.id, r.started_unix_s, s.source, s.samples, substr(s.t_ns, 1, 8),"
            f" substr(s.t_ns, CAST(8 * s.samples - 7 AS INTEGER), 8) {self._SERIES_JOIN}"
            " AND (s.t_first_ns IS NULL OR s.t_last_ns IS NULL)",
            (campaign_id,),
        ):
            if len(first) == 8 and len(last) == 8:  # else damaged: reading the samples names it
                yield int(run_id), float(start), source, int(n), _int64_le(first), _int64_le(last)

    def series_bucket_sums(
        self, campaign_id: int, t0: float, div: float, lo: float, span: float, n: int
    ) -> Iterator[tuple[str, int | None, int, float, float, int | None]]:
        """(source, bucket, samples, sum of their times in s since `t0`, sum of their values, run id) of the
        campaign's rows with samples, one scan. The bucket of a time x (s since t0) is, as in
        analysis.monitor, min(trunc((x / div - lo) / span * n), n - 1) with x = (start - t0) + t_ns / 1e9 (the
        same float operations in the same order). A row whose first and last sample share a bucket and that
        has a summary is summed with the others of its source and bucket (run id None); any other row comes
        alone with its run id and the bucket of its first sample (series_rows gives its samples). Nothing
        before schema 10."""
        if self._schema() < 10:
            return
        pg = self.dialect == "postgresql"
        at = "(((r.started_unix_s - ?) + s.{} / ?) / ? - ?) / ? * ?"
        bucket = ("LEAST(CAST(trunc({}) AS BIGINT), ?)" if pg else "min(CAST({} AS INTEGER), ?)").format(at)
        inner = (
            "SELECT s.run_id AS run_id, s.source AS source, s.samples AS samples, r.started_unix_s - ? AS st,"
            " s.t_sum_ns AS t_sum, s.value_sum AS v_sum,"
            f" {bucket.format('t_first_ns')} AS k, {bucket.format('t_last_ns')} AS kl {self._SERIES_JOIN}"
            " AND r.started_unix_s >= ? AND r.started_unix_s < ?"
        )
        # k = kl is NULL, so not true, when either is; so is the sum of the two sums when either is NULL
        sql = (
            "SELECT source, k, sum(samples), sum(samples * st + t_sum / ?), sum(v_sum),"
            " CASE WHEN k = kl AND t_sum + v_sum IS NOT NULL THEN NULL ELSE run_id END AS rid"
            f" FROM ({inner}) x GROUP BY k, source, rid"
        )
        # a bounded slice of runs by start time per query (the index by campaign and start reads each slice)
        count, first, last = self.conn.execute(
            "SELECT count(*), min(started_unix_s), max(started_unix_s) FROM runs WHERE campaign_id=?",
            (campaign_id,),
        ).fetchone()
        slices = max(1, -(-int(count) // self._SUM_RUNS))
        cuts = [-math.inf, *(first + (last - first) * i / slices for i in range(1, slices)), math.inf]
        grid = (t0, 1e9, div, lo, span, n, n - 1)
        for a, b in zip(cuts, cuts[1:], strict=False):
            for source, k, m, sx, sy, rid in self.iter_rows(sql, (1e9, t0, *grid, *grid, campaign_id, a, b)):
                yield (
                    str(source),
                    None if k is None else int(k),
                    int(m),
                    float(sx or 0.0),
                    float(sy or 0.0),
                    None if rid is None else int(rid),
                )

    def series_rows(
        self, campaign_id: int, run_ids: Sequence[int] | None, sources: Sequence[str] | None = None
    ) -> Iterator[tuple[float, str, array, array, bool]]:
        """(run start unix s, source, times, values, has a summary) of the campaign's rows with samples: of
        the runs in `run_ids` (read a batch at a time), or of every run when None; only `sources` if given."""
        if self._schema() < 10:
            wanted = None if run_ids is None else set(run_ids)
            for run_id, start, source, times, values in self.campaign_series(campaign_id):
                if times and (wanted is None or run_id in wanted) and (sources is None or source in sources):
                    yield start, source, times, values, False
            return
        only = f" AND s.source IN ({','.join('?' * len(sources))})" if sources else ""
        sql = (
            "SELECT s.run_id, r.started_unix_s, s.source, s.packing, s.samples, s.t_ns, s.value,"
            " s.t_first_ns IS NOT NULL AND s.t_last_ns IS NOT NULL AND s.t_sum_ns IS NOT NULL"
            f" AND s.value_sum IS NOT NULL {self._SERIES_JOIN}{only}"
        )
        batches: Iterable = (
            [self.iter_rows(sql, (campaign_id, *(sources or ())))]
            if run_ids is None
            else (
                self.conn.execute(
                    f"{sql} AND r.id IN ({','.join('?' * len(run_ids[i : i + self._BATCH]))})",
                    (campaign_id, *(sources or ()), *run_ids[i : i + self._BATCH]),
                )
                for i in range(0, len(run_ids), self._BATCH)
            )
        )
        for rows in batches:
            for run_id, started, source, packing, samples, t_ns, value, summarized in rows:
                arrays = packed.unpack(packing, samples, t_ns, value)
                if arrays is None:
                    raise DamagedStore(
                        f"{self.path}: damaged results database (run_series of run {run_id}, source {source!r}): "
                        "its packed samples are not what boardlab wrote; restore the file from a copy"
                    )
                yield float(started), source, *arrays, bool(summarized)


def _int64_le(b: bytes) -> int:
    """A packed time (boardlab.store.packed: int64 little-endian); PostgreSQL may give a memoryview."""
    return int.from_bytes(b, "little", signed=True)
