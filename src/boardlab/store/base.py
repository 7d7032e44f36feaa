"""What every part of the store shares: the connection, its dialect, the schema version and JSON as stored."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any, cast

from boardlab.errors import BoardlabError, InputError, database_error
from boardlab.store import packed

RUNS_COUNTED = 14  # the store migration that gave each campaign its counts of stored and valid runs
SERIES_COUNTED = 15  # ... and its count of runs whose result names "series" (NULL: a campaign from before it)
RESULTS_APART = 16  # the runs' worker results in run_results, no longer in the runs' rows (runs.worker_json)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _int64_le(b: bytes) -> int:
    """A packed time (boardlab.store.packed: int64 little-endian); PostgreSQL may give a memoryview."""
    return int.from_bytes(b, "little", signed=True)


def driver_error(exc: Exception, where: str) -> BoardlabError | None:
    """A database driver's error (sqlite3, psycopg) as the BoardlabError naming the store `where` (a path or
    a URL, shown without its password); None for any other exception, which is a bug. Callers above the
    store (serve) classify an error through this, never by importing a driver."""
    if type(exc).__module__.startswith("psycopg"):
        from boardlab.store.pg import database_error as pg_error
        from boardlab.store.pg import display_url

        return pg_error(exc, display_url(where))
    if type(exc).__module__ == "sqlite3":
        return database_error(exc, where)
    return None


class SeriesSample(tuple):
    """One monitor sample (source, t_ns, value), read by position or by name as a database row."""

    __slots__ = ()
    _index = {"source": 0, "t_ns": 1, "value": 2}

    def __getitem__(self, key):  # type: ignore[override]
        return tuple.__getitem__(self, self._index[key] if isinstance(key, str) else key)

    def keys(self) -> list[str]:
        return list(self._index)


class Connected:
    """A store's connection and what every part of it reads through (`Store` is the whole)."""

    conn: Any  # sqlite3.Connection, or boardlab.store.pg.Connection (the same calls)
    path: str
    dialect: str

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

    def _rollback(self) -> None:
        """Rolls back what is open. SQLite has already rolled back after some errors (a full disk): a second
        ROLLBACK would fail and hide the error that matters."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def _insert_results_of(self, runs: Iterable[tuple[int, str]]) -> None:
        """Each (run id, its worker result as JSON text) into run_results, in one statement: a writer's store
        is at the current schema, where the results stand apart from the runs' rows (RESULTS_APART)."""
        self.conn.executemany("INSERT INTO run_results(run_id, worker_json) VALUES (?,?)", runs)

    def _insert_series_of(self, runs: Iterable[tuple[int, Any]]) -> None:
        """`_insert_series` of each (run id, its samples), in one statement."""
        if self._schema() >= 10:
            self.conn.executemany(
                "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value, t_first_ns, t_last_ns,"
                " t_sum_ns, value_sum) VALUES (?,?,?,?,?,?,?,?,?,?)",
                ((run_id, *row) for run_id, series in runs for row in packed.pack_summarized(series)),
            )
            return
        self.conn.executemany(
            "INSERT INTO run_series(run_id, source, packing, samples, t_ns, value) VALUES (?,?,?,?,?,?)",
            ((run_id, *row) for run_id, series in runs for row in packed.pack(series)),
        )

    def _schema(self) -> int:
        if not hasattr(self, "_schema_cached"):
            self._schema_cached = self.schema_version()
        return self._schema_cached

    def _count_added_runs(
        self, campaign_id: int, n: int, valid: int, *, series: int = 0, heartbeat_unix_s: float | None = None
    ) -> None:
        """Adds n runs, `valid` of them valid and `series` of them with a result that names "series", to the
        campaign's counts, in the transaction that stored them (every writer of runs calls this; a store
        before migration 14 counts its runs when read), and sets its heartbeat when given, in the same
        statement (the runner's commits, a few runs at a time). A campaign's NULL count of series (one from
        before migration 15) stays NULL: adding to what it does not know does not make it known."""
        sets, args = [], []
        if heartbeat_unix_s is not None:
            sets.append("heartbeat_unix_s=?")
            args.append(heartbeat_unix_s)
        if n and self._schema() >= RUNS_COUNTED:
            sets += ["runs_stored = runs_stored + ?", "runs_valid = runs_valid + ?"]
            args += [n, valid]
        if series and self._schema() >= SERIES_COUNTED:
            sets.append("runs_series = runs_series + ?")
            args.append(series)
        if sets:
            self.conn.execute(f"UPDATE campaigns SET {', '.join(sets)} WHERE id=?", (*args, campaign_id))

    def iter_rows(self, sql: str, params: tuple = ()) -> Iterator:
        """The rows of a query one at a time: SQLite steps its cursor, PostgreSQL reads a server-side one."""
        if self.dialect == "postgresql":
            from boardlab.store import pg

            return cast(pg.Connection, self.conn).stream(sql, params)
        return iter(self.conn.execute(sql, params))
