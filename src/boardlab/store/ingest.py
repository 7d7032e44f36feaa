"""`boardlab ingest`: copy the campaigns of a board's SQLite file into a shared store (PostgreSQL, or
another SQLite file), idempotently, in one transaction per file.

Identities (docs/results.md "Identities"), so a file ingested twice, or ingested again after its campaign
was resumed on the board, adds only what is new:
- a board: its fingerprint (boards.fingerprint, from the board's inventory);
- a campaign: its uid (a uuid given at creation, store schema 5) and its board's fingerprint; a campaign
  stored before uids existed gets a uid derived from its board's fingerprint, its plan hash and its start
  time (`campaign_uid`). A file whose campaign has the uid of another board's campaign is refused, naming
  both, and nothing is ingested;
- a cell: (campaign, cell key), the key naming workload, parameters, condition and metric;
- a run: (campaign, cell key, repetition, attempt); the A/A label (aa_arm) and every child row (metrics,
  iterations, histograms, monitor series, energy, run artifacts) come with the run.
Campaign-level rows that change while a campaign runs (status, end time, notes, energy sources, idle
windows, campaign artifacts) are replaced from the file when the file holds at least as many runs of that
campaign as the store does, so an older copy of a file never rolls a campaign back."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from boardlab.errors import BoardlabError, InputError, database_error
from boardlab.store import pg
from boardlab.store.db import _PG_INGEST_LOCK, STORE_SCHEMA, Store

INGEST_SCHEMA = 1
RUN_TABLES = ("run_metrics", "run_values", "run_series", "run_histograms", "run_energy")
CAMPAIGN_TABLES = ("energy_sources", "energy_idle")


@dataclass(frozen=True)
class IngestResult:
    source: str
    db: str
    campaigns: int  # campaigns in the file
    campaigns_added: int  # of those, new to the store
    runs_added: int
    runs_skipped: int  # already in the store (same campaign, cell, repetition, attempt)
    boards: tuple[str, ...]  # labels of the file's boards
    campaign_ids: tuple[int, ...]  # the file's campaigns, as ids in the store

    def to_dict(self) -> dict:
        return {"schema": INGEST_SCHEMA, **asdict(self), "boards": list(self.boards),
                "campaign_ids": list(self.campaign_ids)}  # fmt: skip


def campaign_uid(row, fingerprint: str) -> str:
    """A campaign's identity across stores: its uid, or for a campaign stored before uids existed, a hash
    of what never changes about it (repr of a float round-trips exactly)."""
    uid = row["uid"] if "uid" in row.keys() else None
    if uid:
        return uid
    key = f"{fingerprint}\0{row['plan_hash']}\0{float(row['started_unix_s'])!r}"
    return "derived-" + hashlib.sha256(key.encode()).hexdigest()[:32]


def open_source(src: Path) -> Store:
    """Opens a board's file read-only and verifies it before anything is written anywhere: SQLite, a
    schema this boardlab knows (1..STORE_SCHEMA), and a full integrity check."""
    if pg.is_url(str(src)):
        raise InputError(f"{pg.display_url(str(src))}: ingest reads a board's SQLite file, not a server")
    source = Store.open(src, create=False)  # refuses a foreign, newer, missing or non-SQLite file
    try:
        if source.schema_version() == 0:
            raise InputError(f"{src}: no boardlab results in this file (an empty SQLite database)")
        try:
            problems = [r[0] for r in source.conn.execute("PRAGMA integrity_check").fetchall()]
        except sqlite3.DatabaseError as exc:
            raise database_error(exc, str(src)) from None
        if problems != ["ok"]:
            raise InputError(
                f"{src}: the results database is corrupted ({'; '.join(problems[:3])}); nothing was "
                "ingested: fetch the file from the board again"
            )
    except BaseException:
        source.close()
        raise
    return source


def ingest_file(
    src: Path,
    db: str,
    *,
    fail_after_runs: int | None = None,
    wait: Callable[[str], None] | None = None,
    then: Callable[[Store, IngestResult], None] | None = None,
) -> IngestResult:
    """Ingests every campaign of `src` into the store `db` (a postgresql:// URL or a SQLite path) in one
    transaction: all of the file's new runs, or none of them. Raises InputError naming the file when it
    is corrupt, foreign or from a newer boardlab. `fail_after_runs` is for tests: fail after that many
    runs were inserted, to check that nothing stays. `wait` is called with who holds a SQLite store
    before this waits for it (another ingest, a campaign writing there). `then(store, result)` runs after the
    commit, the store still open and locked (the CLI stores the campaigns' summaries there)."""
    src = Path(src)
    source = open_source(src)
    try:
        if not pg.is_url(db):
            with contextlib.suppress(OSError):
                if os.path.samefile(src, db):
                    raise InputError(f"{src}: is the target store itself; give --db another store")
        target = Store.open(db, wait=wait)
        try:
            try:
                result = _ingest(source, target, src, fail_after_runs)
            except BaseException:
                if target.dialect == "sqlite" and target.created:  # a store this ingest created stays absent
                    target.close()
                    for suffix in ("", "-wal", "-shm"):
                        with contextlib.suppress(OSError):
                            os.unlink(f"{db}{suffix}")
                raise
            if then is not None:  # after the commit: what it does cannot undo the ingest
                then(target, result)
            return result
        finally:
            target.close()
    except sqlite3.DatabaseError as exc:  # the file turned out damaged while it was read
        raise database_error(exc, str(src)) from None
    finally:
        source.close()


class _Copier:
    """Column lists and value conversion between the file's schema (any known version) and the store's."""

    def __init__(self, source: Store, target: Store):
        self.source = source
        self.target = target
        self.src_schema = source.describe_schema()
        self.tgt_schema = target.describe_schema()

    def columns(self, table: str, skip: tuple[str, ...] = ("id",)) -> list[str]:
        """The file's columns the store also has (an older file lacks newer columns: they stay NULL)."""
        have = {c for c, *_ in self.tgt_schema.get(table, [])}
        return [c for c, *_ in self.src_schema.get(table, []) if c in have and c not in skip]

    def converters(self, table: str, cols: list[str]) -> list[Callable]:
        kinds = {c: k for c, k, *_ in self.tgt_schema[table]}

        def integer(v):  # SQLite may hold 5e8 in an INTEGER column; PostgreSQL's BIGINT wants 500000000
            return int(v) if isinstance(v, float) and v.is_integer() else v

        return [integer if kinds[c] == "integer" else pg.value for c in cols]

    def rows(self, sql: str, params: tuple) -> Iterator:
        return iter(self.source.conn.execute(sql, params))

    def insert_one(self, table: str, cols: list[str], values: list) -> int:
        conv = self.converters(table, cols)
        cur = self.target.conn.execute(
            f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            tuple(f(v) for f, v in zip(conv, values, strict=True)),
        )
        return int(cur.lastrowid) if cur.lastrowid is not None else 0

    def insert_many(self, table: str, cols: list[str], rows: Iterable[tuple]) -> None:
        conv = self.converters(table, cols)
        converted = (tuple(f(v) for f, v in zip(conv, row, strict=True)) for row in rows)
        if self.target.dialect == "postgresql":
            # a PostgreSQL store's connection is the pg module's wrapper, which has COPY
            cast(pg.Connection, self.target.conn).copy_rows(table, tuple(cols), converted)
        else:
            self.target.conn.executemany(
                f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", converted
            )


PACKED_COLUMNS = ("run_id", "source", "packing", "samples", "t_ns", "value")


def _packed_series(source: Store, run_map: dict[int, int]) -> Iterator[tuple]:
    """A file's monitor samples (per-sample rows before store schema 7) packed as the store keeps them,
    under the store's run ids, a batch of runs at a time."""
    from boardlab.store.packed import PACKING

    ids = list(run_map)
    for i in range(0, len(ids), 1000):
        for run_id, src, times, values in source.run_series(ids[i : i + 1000]):
            t, v = times, values
            if sys.byteorder == "big":
                t, v = array("q", t), array("d", v)
                t.byteswap()
                v.byteswap()
            yield run_map[run_id], src, PACKING, len(times), t.tobytes(), v.tobytes()


def _same_campaign(conn, uid: str, fingerprint: str, src: Path, camp) -> tuple | None:
    """The store's row of this campaign, identified by (uid, board fingerprint); None when it is new.
    A uid the store holds under another board is refused: merging would change that board's campaign."""
    row = conn.execute(
        "SELECT c.id, b.fingerprint, b.label, c.name FROM campaigns c JOIN boards b ON b.id = c.board_id"
        " WHERE c.uid=?",
        (uid,),
    ).fetchone()
    if row is None or row[1] == fingerprint:
        return row
    raise InputError(
        f"{src}: campaign {camp['name']!r} (uid {uid}) of board {fingerprint!r} has the uid of campaign "
        f"{row[3]!r} of board {row[2]!r} ({row[1]}) in the store; a campaign belongs to one board, so "
        "nothing was ingested; check that the file is that board's own results database (not an edited "
        "copy of another board's)"
    )


def _ingest(source: Store, target: Store, src: Path, fail_after_runs: int | None) -> IngestResult:
    cp = _Copier(source, target)
    conn = target.conn
    added_campaigns = runs_added = runs_skipped = 0
    campaign_ids: list[int] = []
    # One read snapshot of the file (a campaign may still be writing it) and one write transaction.
    source.conn.execute("BEGIN")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if target.dialect == "postgresql":  # two ingests of one board's file never race on its rows
            conn.execute(f"SELECT pg_advisory_xact_lock({_PG_INGEST_LOCK})")
        # boards, by fingerprint
        board_ids: dict[int, int] = {}
        fingerprints: dict[int, str] = {}
        labels: list[str] = []
        bcols = cp.columns("boards")
        for b in source.boards():
            fingerprints[b["id"]] = b["fingerprint"]
            labels.append(b["label"])
            row = conn.execute("SELECT id FROM boards WHERE fingerprint=?", (b["fingerprint"],)).fetchone()
            board_ids[b["id"]] = int(row[0]) if row else cp.insert_one("boards", bcols, [b[c] for c in bcols])
        ccols = cp.columns("campaigns", skip=("id", "board_id", "uid"))
        for camp in source.campaigns():
            uid = campaign_uid(camp, fingerprints[camp["board_id"]])
            row = _same_campaign(conn, uid, fingerprints[camp["board_id"]], src, camp)
            if row is None:
                tid = cp.insert_one(
                    "campaigns",
                    ["uid", "board_id", *ccols],
                    [uid, board_ids[camp["board_id"]], *(camp[c] for c in ccols)],
                )
                added_campaigns += 1
            else:
                tid = int(row[0])
            campaign_ids.append(tid)
            # cells, by key
            cell_ids = {r["key"]: int(r["id"]) for r in target.cells(tid)}
            src_cell_keys: dict[int, str] = {}
            kcols = cp.columns("cells", skip=("id", "campaign_id"))
            for cell in source.cells(camp["id"]):
                src_cell_keys[cell["id"]] = cell["key"]
                if cell["key"] not in cell_ids:
                    cell_ids[cell["key"]] = cp.insert_one(
                        "cells", ["campaign_id", *kcols], [tid, *(cell[c] for c in kcols)]
                    )
            # runs, by (cell key, repetition, attempt)
            have = {(k, rep, att) for k, rep, att in target.run_identities(tid)}
            rcols = cp.columns("runs", skip=("id", "campaign_id", "cell_id"))
            run_map: dict[int, int] = {}
            for run in cp.rows("SELECT * FROM runs WHERE campaign_id=? ORDER BY id", (camp["id"],)):
                ident = (src_cell_keys[run["cell_id"]], run["repetition"], run["attempt"])
                if ident in have:
                    runs_skipped += 1
                    continue
                have.add(ident)
                run_map[run["id"]] = cp.insert_one(
                    "runs",
                    ["campaign_id", "cell_id", *rcols],
                    [tid, cell_ids[ident[0]], *(run[c] for c in rcols)],
                )
                runs_added += 1
                if fail_after_runs is not None and runs_added >= fail_after_runs:
                    raise RuntimeError(f"injected failure after {runs_added} runs (a test)")
            if run_map:
                for table in RUN_TABLES:
                    if table == "run_series" and table not in cp.src_schema:  # a file before schema 7
                        cp.insert_many(table, list(PACKED_COLUMNS), _packed_series(source, run_map))
                        continue
                    if table not in cp.src_schema:  # an older file: that table came later
                        continue
                    cols = cp.columns(table, skip=())
                    at = cols.index("run_id")
                    sel = ", ".join(f"x.{c}" for c in cols)
                    rows = cp.rows(
                        f"SELECT {sel} FROM {table} x JOIN runs r ON r.id = x.run_id WHERE r.campaign_id=?",
                        (camp["id"],),
                    )
                    cp.insert_many(
                        table,
                        cols,
                        ((*row[:at], run_map[row[at]], *row[at + 1 :]) for row in rows if row[at] in run_map),
                    )
            # campaign-level rows: replaced when the file is at least as complete as the store
            n_src = source.conn.execute(
                "SELECT count(*) FROM runs WHERE campaign_id=?", (camp["id"],)
            ).fetchone()[0]
            n_tgt = conn.execute("SELECT count(*) FROM runs WHERE campaign_id=?", (tid,)).fetchone()[0]
            if n_src >= n_tgt:
                sets = ", ".join(f"{c}=?" for c in ccols)
                conv = cp.converters("campaigns", ccols)
                conn.execute(
                    f"UPDATE campaigns SET {sets} WHERE id=?",
                    (*(f(camp[c]) for f, c in zip(conv, ccols, strict=True)), tid),
                )
                for table in CAMPAIGN_TABLES:
                    if table not in cp.src_schema:
                        continue
                    cols = cp.columns(table, skip=("campaign_id",))
                    conn.execute(f"DELETE FROM {table} WHERE campaign_id=?", (tid,))
                    rows = cp.rows(
                        f"SELECT {', '.join(cols)} FROM {table} WHERE campaign_id=?", (camp["id"],)
                    )
                    cp.insert_many(table, ["campaign_id", *cols], ((tid, *row) for row in rows))
                conn.execute("DELETE FROM artifacts WHERE campaign_id=? AND run_id IS NULL", (tid,))
            acols = cp.columns("artifacts", skip=("id", "campaign_id", "run_id"))
            for art in cp.rows("SELECT * FROM artifacts WHERE campaign_id=? ORDER BY id", (camp["id"],)):
                if art["run_id"] is None and n_src < n_tgt:
                    continue
                if art["run_id"] is not None and art["run_id"] not in run_map:
                    continue  # the run's artifacts came with it on an earlier ingest
                run_id = None if art["run_id"] is None else run_map[art["run_id"]]
                cp.insert_one(
                    "artifacts", ["campaign_id", "run_id", *acols], [tid, run_id, *(art[c] for c in acols)]
                )
        conn.execute("COMMIT")
    except BaseException as exc:
        target._rollback()
        source._rollback()
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, BoardlabError):
            # with a PostgreSQL store every sqlite3 error is the file's; with a SQLite store, name both
            where = str(src) if target.dialect == "postgresql" else f"{src} (into {target.path})"
            raise database_error(exc, where) from None
        raise
    source.conn.execute("COMMIT")
    return IngestResult(
        source=str(src),
        db=target.path,
        campaigns=len(campaign_ids),
        campaigns_added=added_campaigns,
        runs_added=runs_added,
        runs_skipped=runs_skipped,
        boards=tuple(labels),
        campaign_ids=tuple(campaign_ids),
    )


__all__ = ["IngestResult", "STORE_SCHEMA", "campaign_uid", "ingest_file", "open_source"]
