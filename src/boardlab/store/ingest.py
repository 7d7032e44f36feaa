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
campaign as the store does, so an older copy of a file never rolls a campaign back.

Speed (docs/results.md "Ingest at lab scale"): rows are copied in bulk, never run by run: into a SQLite store
by INSERT ... SELECT from the file attached to the store's connection, into PostgreSQL by COPY in its binary
format. Neither store checks each copied row's references row by row (the file's were verified, and the copy
joins only what it maps): SQLite's foreign keys are off during an ingest; PostgreSQL checks the references of
runs and of the rows under them once per COPY (store/pg_references.py, whatever the role), and not at all
where the role may turn its triggers off (`_skip_pg_reference_checks`). A campaign of which the store holds
no run takes every run of the file without comparing identities. After each campaign the store keeps a
watermark of it (`Mark`, in the meta table): the file's last run id, how many runs the file held up to it and
that run's identity, the store's run count and a hash of the campaign-level rows. When the file still holds
exactly those runs below the watermark, only the runs after it are read; when nothing is past it and the rest
hashes the same, the file is unchanged and skipped without reading its runs (nor verifying them: nothing of it
is copied)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import sys
import urllib.parse
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from boardlab.errors import BoardlabError, InputError, database_error
from boardlab.model.worker_result import SERIES_MARK
from boardlab.store import pg, pg_references
from boardlab.store.checkpoints import Checkpoints
from boardlab.store.db import _PG_INGEST_LOCK, STORE_SCHEMA, Store
from boardlab.store.migrations import fill_run_columns
from boardlab.store.packed import summarize_series

INGEST_SCHEMA = 1
RUN_TABLES = ("run_metrics", "run_values", "run_series", "run_histograms", "run_energy", "run_results")
CAMPAIGN_TABLES = ("energy_sources", "energy_idle")
MARK_PREFIX = "ingest.mark."  # meta key of a campaign's watermark: this + the campaign's uid


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


@dataclass(frozen=True)
class Mark:
    """What the store knew of a campaign's file after its last ingest (see the module's docstring)."""

    last_run_id: int  # the file's largest run id of the campaign (0: no runs)
    file_runs: int  # the file's runs of the campaign, all with ids <= last_run_id
    last_run: tuple  # (cell key, repetition, attempt) of run last_run_id, or () without runs
    store_runs: int  # the store's runs of the campaign after that ingest
    cells: int  # the file's cells of the campaign
    rows_sha256: str  # the campaign's own rows in the file (`campaign_rows_hash`)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "last_run": list(self.last_run)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Mark | None:
        try:
            d = json.loads(text)
            return cls(**{**d, "last_run": tuple(d["last_run"])})
        except (ValueError, TypeError, KeyError):  # a mark this boardlab did not write: read the file whole
            return None


def campaign_uid(row, fingerprint: str) -> str:
    """A campaign's identity across stores: its uid, or for a campaign stored before uids existed, a hash
    of what never changes about it (repr of a float round-trips exactly)."""
    uid = row["uid"] if "uid" in row.keys() else None
    if uid:
        return uid
    key = f"{fingerprint}\0{row['plan_hash']}\0{float(row['started_unix_s'])!r}"
    return "derived-" + hashlib.sha256(key.encode()).hexdigest()[:32]


class _Unverified(Store):
    """A board's file opened without the content scan, to see cheaply whether anything in it is new; the
    scan (`verify_source`) runs before anything of it is copied."""

    def verify(self, *, beside: bool = True) -> None:
        return None


def _open_file(src: Path, cls: type[Store] = _Unverified) -> Store:
    if pg.is_url(str(src)):
        raise InputError(f"{pg.display_url(str(src))}: ingest reads a board's SQLite file, not a server")
    source = cls.open(src, create=False)  # refuses a foreign, newer, missing or non-SQLite file
    try:
        if source.schema_version() == 0:
            raise InputError(f"{src}: no boardlab results in this file (an empty SQLite database)")
    except BaseException:
        source.close()
        raise
    return source


def verify_source(source: Store, src: Path, *, beside: bool = True) -> None:
    """SQLite's full integrity check, then every value's type and JSON shape (store/verify.py); `beside` as
    `Store.verify`'s."""
    try:
        problems = [r[0] for r in source.conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise database_error(exc, str(src)) from None
    if problems != ["ok"]:
        raise InputError(
            f"{src}: the results database is corrupted ({'; '.join(problems[:3])}); nothing was "
            "ingested: fetch the file from the board again"
        )
    Store.verify(source, beside=beside)


def open_source(src: Path) -> Store:
    """Opens a board's file read-only and verifies it before anything is written anywhere: SQLite, a
    schema this boardlab knows (1..STORE_SCHEMA), a full integrity check and every value's type."""
    source = _open_file(Path(src))
    try:
        verify_source(source, Path(src))
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
    is corrupt, foreign or from a newer boardlab. `fail_after_runs` is for tests: fail once that many
    runs were inserted, to check that nothing stays. `wait` is called with who holds a SQLite store
    before this waits for it (another ingest, a campaign writing there). `then(store, result)` runs after a
    file's commit, the store still open and locked (the CLI stores the campaigns' summaries there)."""
    return ingest_files([src], db, fail_after_runs=fail_after_runs, wait=wait, then=then)[0]


def ingest_files(
    files: Iterable[Path],
    db: str,
    *,
    fail_after_runs: int | None = None,
    wait: Callable[[str], None] | None = None,
    progress: Callable[[int, Path], None] | None = None,
    then: Callable[[Store, IngestResult], None] | None = None,
    last: Callable[[Store], None] | None = None,
    note: Callable[[str], None] | None = None,
    full_check: bool = False,
) -> list[IngestResult]:
    """`ingest_file` of several files into one store opened once. Every file is verified (or found
    unchanged since its last ingest) before any is ingested: a bad one among them writes nothing at all.
    `progress(i, path)` is called before the i-th file (from 1) is ingested. `last(store)` runs once after
    the last file's `then`, or when a file fails after others were committed (not on Ctrl-C), the store
    still open and locked. `note(text)` is called once with what the user can change about the ingest: the
    bounded check of a large SQLite store's open (`Store.open`); `full_check` checks all of that store
    instead."""
    files = [Path(f) for f in files]
    noted: set[str] = set()

    def note_once(text: str) -> None:
        if note is not None and text not in noted:
            noted.add(text)
            note(text)

    _check_sources(files, db)
    stamps: dict[Path, tuple] = {}
    cores = len(os.sched_getaffinity(0))  # the CPUs it may run on (taskset, a cpuset), not the board's

    def verify(source: Store, src: Path, beside: bool = True) -> None:
        stamps[src] = _stamp(src)
        verify_source(source, src, beside=beside)

    def ingest(source: Store, src: Path) -> IngestResult:
        if _stamp(src) != stamps.get(src):  # replaced or written to since it was verified: again
            verify(source, src)
        checkpoints.before_write()
        result = _ingest(source, target, src, fail_after_runs)
        checkpoints.committed()
        if then is not None:  # after the file's commit: what it does cannot undo the ingest
            then(target, result)
        return result

    done = _already_in(files, db)  # the unchanged files' results, None for the others
    if all(r is not None for r in done):  # nothing to write: the store is not even opened for writing
        return cast(list[IngestResult], done)
    # verified before the store is written (or created); sqlite3 lets go of the GIL while SQLite scans, so
    # the files are verified side by side, one per core
    todo = [src for src, res in zip(files, done, strict=True) if res is None]
    # with a file per core already, a second scan per file only competes (a file verified alone has one)
    each = functools.partial(verify, beside=len(todo) < cores)
    with ThreadPoolExecutor(max_workers=max(1, min(len(todo), cores))) as pool:
        list(pool.map(lambda src: _with_file(src, each), todo))  # the first bad file (in order) raises
    target = Store.open(db, wait=wait, page_bytes=LAB_PAGE_BYTES, full_check=full_check, note=note_once)
    checkpoints = Checkpoints(target)  # each file's pages into the file beside the next file's copy
    results: list[IngestResult] = []
    try:
        for i, (src, res) in enumerate(zip(files, done, strict=True), 1):
            if progress is not None:
                progress(i, src)
            results.append(res if res is not None else _with_file(src, ingest))
        if last is not None:
            last(target)
        checkpoints.close()
        return results
    except pg.LostServer as exc:  # a runtime failure, and what of the files is in the store is said
        raise pg.LostServer(f"{exc}; {_kept(files, results)}") from None
    except BaseException as exc:
        checkpoints.close(finish=False)
        _after_failure(target, db, exc, last)
        raise
    finally:
        target.close()


def _check_sources(files: list[Path], db: str) -> None:
    """Each file is a boardlab file of a known schema, and not the store itself."""
    for src in files:
        _open_file(src).close()
        if not pg.is_url(db):
            with contextlib.suppress(OSError):
                if os.path.samefile(src, db):
                    raise InputError(f"{src}: is the target store itself; give --db another store")


def _after_failure(target: Store, db: str, exc: BaseException, last: Callable[[Store], None] | None) -> None:
    """A store this ingest created stays absent; otherwise the files committed before the failing one keep
    what follows them (`last`), except after Ctrl-C or inside an open transaction."""
    if target.dialect == "sqlite" and target.created:
        target.close()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{db}{suffix}")
    elif last is not None and isinstance(exc, Exception) and not target.conn.in_transaction:
        with contextlib.suppress(Exception):
            last(target)


def _kept(files: list[Path], results: list[IngestResult]) -> str:
    """What an ingest stopped by a lost server left in the store: each file is one transaction, so the files
    before the one it was copying are there whole, and nothing of that one or of those after it."""
    stopped = files[len(results)]
    before = f"the {len(results)} file(s) before it are in the store ({', '.join(r.source for r in results)})"
    return (
        f"nothing of {stopped} was stored" + (f"; {before}" if results else "")
        + "; run the same command again when the server is back: it adds only what is missing"
    )  # fmt: skip


# A lab's SQLite store, which ingest creates, is written a whole campaign at a time: with 16 KB pages instead
# of SQLite's 4 KB, the copy of ten files of 10^4 runs took a fifth less time and half the system time (a
# quarter as many pages to write to the log and then into the file). A board's own store keeps SQLite's
# default: it is written a run at a time, and a larger page is more to write per run.
LAB_PAGE_BYTES = 16384


def _already_in(files: list[Path], db: str) -> list[IngestResult | None]:
    """Per file, its result when the store already holds all of it as its last ingest left it (`_unchanged`),
    else None. The store is opened read-only and without its content scan: only its marks and counts are
    read, which a campaign writing there does not hold up."""
    if not pg.is_url(db) and not os.path.exists(db):
        return [None] * len(files)
    try:
        store = _Unverified.open(db, create=False)
    except InputError:  # no store there yet (an empty PostgreSQL database), or none to read: the writer says
        return [None] * len(files)
    try:
        if store.schema_version() == 0:  # an empty SQLite database: the writer makes the store in it
            return [None] * len(files)
        known = _known_campaigns(store, [uid for src in files for uid in _with_file(src, _uids)])
        return [
            _with_file(src, lambda s, p: _skipped(s, known, store.path, p) if _unchanged(s, known) else None)
            for src in files
        ]
    finally:
        store.close()


def _file_campaigns(source: Store) -> list[tuple[Any, str, str]]:
    """(campaign row, its board's fingerprint, its uid) of each of the file's campaigns: what every step of
    an ingest knows a campaign by. KeyError: a campaign of a board the file lacks (a damaged file)."""
    fingerprints = {b["id"]: b["fingerprint"] for b in source.boards()}
    out = []
    for camp in source.campaigns():
        fingerprint = fingerprints[camp["board_id"]]
        out.append((camp, fingerprint, campaign_uid(camp, fingerprint)))
    return out


def _uids(source: Store, src: Path) -> list[str]:
    """The uids of the file's campaigns ([] when it cannot be read: the full verification says why)."""
    try:
        return [uid for _, _, uid in _file_campaigns(source)]
    except (sqlite3.DatabaseError, KeyError):
        return []


def _known_campaigns(target: Store, uids: list[str]) -> dict[str, tuple[int, str, Mark | None]]:
    """uid -> (the store's campaign id, its board's fingerprint, its watermark) of those the store holds: one
    query for all the files (one round trip to a PostgreSQL server, not three per campaign)."""
    out: dict[str, tuple[int, str, Mark | None]] = {}
    for i in range(0, len(uids), 500):
        part = uids[i : i + 500]
        for row in target.conn.execute(
            "SELECT c.uid, c.id, b.fingerprint, m.value FROM campaigns c JOIN boards b ON b.id = c.board_id"
            f" LEFT JOIN meta m ON m.key = ? || c.uid WHERE c.uid IN ({', '.join('?' * len(part))})",
            (MARK_PREFIX, *part),
        ):
            out[row[0]] = (int(row[1]), row[2], None if row[3] is None else Mark.from_json(row[3]))
    return out


def _stamp(src: Path) -> tuple:
    """What changes when a file is replaced or written to (its -wal too, where a campaign appends)."""
    out = []
    for path in (str(src), f"{src}-wal"):
        try:
            st = os.stat(path)
        except OSError:
            st = None
        # an empty -wal is what a reader's open makes (and its close removes): nothing written
        out.append(
            None if st is None or st.st_size == 0 else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        )
    return tuple(out)


def _with_file(src: Path, work: Callable[[Store, Path], Any]) -> Any:
    """`work(source, src)` on the file opened read-only, its content not verified (the callers verify
    before copying); an SQLite error reading it names the file."""
    source = _open_file(src, _Unverified)
    try:
        return work(source, src)
    except sqlite3.DatabaseError as exc:  # the file turned out damaged while it was read
        if isinstance(exc, BoardlabError):
            raise
        raise database_error(exc, str(src)) from None
    finally:
        source.close()


# ---- what is new in a file: the watermark ----


def campaign_rows_hash(source: Store, camp) -> str:
    """sha256 of a campaign's own rows in the file (its row, energy sources, idle windows, campaign
    artifacts): what ingest replaces when they change, so a change there is something new."""
    h = hashlib.sha256()
    h.update(repr(tuple(camp)).encode())
    for sql in (
        "SELECT * FROM energy_sources WHERE campaign_id=? ORDER BY name",
        "SELECT * FROM energy_idle WHERE campaign_id=? ORDER BY source, block",
        "SELECT name, media_type, data FROM artifacts WHERE campaign_id=? AND run_id IS NULL ORDER BY id",
    ):
        with contextlib.suppress(sqlite3.OperationalError):  # an older file: the table came later
            for row in source.conn.execute(sql, (camp["id"],)):
                h.update(repr(tuple(row)).encode())
    return h.hexdigest()


def _file_runs(source: Store, campaign_id: int, up_to: int | None = None) -> tuple[int, int]:
    """(runs, largest run id) of a campaign in the file, of the runs with ids <= up_to when given."""
    sql = "SELECT count(*), coalesce(max(id), 0) FROM runs WHERE campaign_id=?"
    row = source.conn.execute(
        sql + (" AND id <= ?" if up_to is not None else ""),
        (campaign_id,) if up_to is None else (campaign_id, up_to),
    ).fetchone()
    return int(row[0]), int(row[1])


def _run_identity(source: Store, run_id: int) -> tuple:
    row = source.conn.execute(
        "SELECT c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.id=?",
        (run_id,),
    ).fetchone()
    return () if row is None else (row[0], int(row[1]), int(row[2]))


def _mark(target: Store, uid: str) -> Mark | None:
    row = target.conn.execute("SELECT value FROM meta WHERE key=?", (MARK_PREFIX + uid,)).fetchone()
    return None if row is None else Mark.from_json(row[0])


def _holds_mark(source: Store, target: Store, camp, tid: int, mark: Mark | None) -> bool:
    """The store held exactly the file's runs at the mark and gained none since, and the file holds the
    runs it held up to the mark (as many, the last one the same): the runs after the mark are the file's
    only candidates for new ones."""
    if mark is None or mark.store_runs != mark.file_runs or target.count_runs(tid) != mark.store_runs:
        return False
    if _file_runs(source, camp["id"], mark.last_run_id)[0] != mark.file_runs:
        return False
    return mark.last_run_id == 0 or _run_identity(source, mark.last_run_id) == mark.last_run


def _unchanged(source: Store, known: dict[str, tuple[int, str, Mark | None]]) -> bool:
    """Every campaign of the file is in the store (`known`: `_known_campaigns`) as its mark left it, and
    nothing was added to the file since: a few indexed queries per campaign, whatever the number of runs."""
    try:
        campaigns = _file_campaigns(source)
        for camp, fingerprint, uid in campaigns:
            if uid not in known or known[uid][1] != fingerprint:
                return False
            mark = known[uid][2]
            if mark is None or _file_runs(source, camp["id"])[1] != mark.last_run_id:
                return False
            cells = source.conn.execute("SELECT count(*) FROM cells WHERE campaign_id=?", (camp["id"],))
            if cells.fetchone()[0] != mark.cells or campaign_rows_hash(source, camp) != mark.rows_sha256:
                return False
            # runs of the file, as many as at the mark, the last the same: all in the store since then (a
            # store never loses runs), so the store's own count is not needed here
            if _file_runs(source, camp["id"], mark.last_run_id)[0] != mark.file_runs:
                return False
            if mark.last_run_id and _run_identity(source, mark.last_run_id) != mark.last_run:
                return False
        return bool(campaigns) or bool(source.boards())  # a file without boards: nothing of it is known
    except (sqlite3.DatabaseError, KeyError):  # damaged: the full verification says where
        return False


def _skipped(
    source: Store, known: dict[str, tuple[int, str, Mark | None]], db: str, src: Path
) -> IngestResult:
    """The result of a file found unchanged: all its runs already in the store."""
    ids, runs = [], 0
    for camp, _, uid in _file_campaigns(source):
        ids.append(known[uid][0])
        runs += _file_runs(source, camp["id"])[0]
    return IngestResult(
        source=str(src), db=db, campaigns=len(ids), campaigns_added=0, runs_added=0,
        runs_skipped=runs, boards=tuple(b["label"] for b in source.boards()), campaign_ids=tuple(ids),
    )  # fmt: skip


# ---- copying ----


class _Copier:
    """Column lists and value conversion between the file's schema (any known version) and the store's,
    and the bulk copy of a campaign's new runs: a SELECT over the file joined with two temporary maps (the
    file's cell and run ids to the store's) feeds INSERT ... SELECT (the file attached to a SQLite store's
    connection as `src`) or COPY (PostgreSQL, the SELECT run on the file's own connection)."""

    def __init__(self, source: Store, target: Store, src: Path):
        self.source = source
        self.target = target
        self.src_schema = source.describe_schema()
        self.tgt_schema = target.describe_schema()
        self.attached = target.dialect == "sqlite"
        self.reader = target.conn if self.attached else source.conn  # the connection the SELECTs run on
        self.schema = "src" if self.attached else "main"  # the file's schema name on `reader`
        if self.attached:  # ATTACH is refused inside a transaction: before the ingest's BEGIN
            path = os.path.abspath(src)
            uri = f"file:{urllib.parse.quote(path)}?mode=ro"
            if not os.access(os.path.dirname(path), os.W_OK) and not os.path.exists(f"{path}-wal"):
                uri += "&immutable=1"  # as Store opens such a file: SQLite could not make its -shm there
            target.conn.execute("ATTACH DATABASE ? AS src", (uri,))
            # the copied rows refer only to the campaign, cells and runs this ingest maps (the joins), from a
            # file whose references were checked (verify_references): checking each again costs a quarter
            # of the copy. Set outside the transaction (SQLite ignores it inside); `close` turns it back on.
            target.conn.execute("PRAGMA foreign_keys=OFF")
        else:  # the file stays read-only (mode=ro); only the temporary maps are written
            source.conn.execute("PRAGMA query_only=OFF")

    def start(self) -> None:
        """Inside the ingest's transaction: the temporary maps, empty; PostgreSQL's reference checks off for
        this transaction where the role may turn them off."""
        for name in ("ingest_cells", "ingest_runs"):
            self.reader.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {name} (old INTEGER PRIMARY KEY, new INTEGER)"
            )
            self.reader.execute(f"DELETE FROM temp.{name}")
        if not self.attached:
            self._skip_pg_reference_checks()

    def _skip_pg_reference_checks(self) -> None:
        """As on SQLite (`foreign_keys=OFF` above), and for the same reason: the copied rows' references hold
        by construction. A PostgreSQL store checks them by triggers once per statement (store schema 13,
        store/pg_references.py): about a fifth of the server's work of the copy (10^5 runs: 3.1 to 3.6 s of
        server CPU with them, 2.6 to 2.9 s without; the foreign keys they replaced checked each row, 8.2 s). A
        role allowed to set session_replication_role (a superuser, or one granted SET ON PARAMETER,
        PostgreSQL 15) turns those triggers off with SET LOCAL, for this transaction alone; any other role,
        such as the database's owner a lab gives boardlab, keeps them, which costs it nothing else (a
        savepoint undoes the refused SET). A store with triggers or rules of its owner's (an audit log, say)
        keeps them all: the setting would silence those as well (boardlab's own are told by their prefix)."""
        conn = self.target.conn
        own = conn.execute(
            "SELECT (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT"
            " t.tgisinternal AND c.relnamespace = to_regnamespace(current_schema())"
            f" AND t.tgname NOT LIKE '{pg_references.TRIGGER_PREFIX}%')"
            " + (SELECT count(*) FROM pg_rules WHERE schemaname = current_schema())"
        ).fetchone()[0]
        if own:
            return
        conn.execute("SAVEPOINT ingest_checks")
        try:
            conn.execute("SET LOCAL session_replication_role = replica")
        except BoardlabError:  # not allowed to: the statements' checks run
            conn.execute("ROLLBACK TO SAVEPOINT ingest_checks")
        conn.execute("RELEASE SAVEPOINT ingest_checks")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self.attached:
                self.target.conn.execute("DETACH DATABASE src")
                self.target.conn.execute("PRAGMA foreign_keys=ON")
            else:
                self.source.conn.execute("PRAGMA query_only=ON")

    def columns(self, table: str, skip: tuple[str, ...] = ("id",)) -> list[str]:
        """The file's columns the store also has (an older file lacks newer columns: they stay NULL)."""
        have = self.tgt_cols(table)
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

    def map_ids(self, name: str, pairs: Iterable[tuple[int, int]]) -> None:
        self.reader.execute(f"DELETE FROM temp.{name}")
        self.reader.executemany(f"INSERT INTO temp.{name}(old, new) VALUES (?, ?)", pairs)

    def map_new_runs(self, campaign_id: int) -> Mapping[int, int]:
        """Every run of the campaign in the file, mapped to new ids past the store's largest (this ingest
        holds a SQLite store's write lock) in their order, by one statement over the attached file."""
        self.reader.execute("DELETE FROM temp.ingest_runs")
        self.reader.execute(
            "INSERT INTO temp.ingest_runs(old, new) SELECT id, (SELECT coalesce(max(id), 0) FROM main.runs)"
            " + row_number() OVER (ORDER BY id) FROM src.runs WHERE campaign_id=?",
            (campaign_id,),
        )
        return _MappedRuns(self.reader)

    def new_run_ids(self, n: int) -> list[int]:
        """n ids for new runs: past the largest (SQLite: this ingest holds the store's write lock) or
        from the runs' identity sequence (PostgreSQL: safe beside any other writer)."""
        if n == 0:
            return []
        if self.target.dialect == "sqlite":
            base = int(self.target.conn.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()[0])
            return list(range(base + 1, base + 1 + n))
        # the sequence named once: pg_get_serial_sequence in the SELECT is evaluated for every id (a tenth
        # of a second of the server's per 10^4 ids, against 15 ms for nextval of a constant)
        seq = self.target.conn.execute("SELECT pg_get_serial_sequence('runs', 'id')").fetchone()[0]
        rows = self.target.conn.execute("SELECT nextval(?::regclass) FROM generate_series(1, ?)", (seq, n))
        return [int(r[0]) for r in rows]

    def copy_select(self, table: str, cols: list[str], select: str, params: tuple = ()) -> None:
        """Copies the rows of `select` (over the file, `{src}` naming its schema) into `table`'s `cols`."""
        select = select.replace("{src}", self.schema)
        if self.attached:
            self.target.conn.execute(f"INSERT INTO main.{table}({', '.join(cols)}) {select}", params)
            return
        cur = self.source.conn.cursor()
        cur.row_factory = None  # plain tuples, straight to COPY
        cast(pg.Connection, self.target.conn).copy_rows(
            table, tuple(cols), cur.execute(select, params), self.pg_types(table, cols)
        )

    def pg_types(self, table: str, cols: list[str]) -> tuple[str, ...]:
        """The store's column types for COPY's binary format: a verified file holds each column's own
        type (an integer is a fine double, as on SQLite), or NULL."""
        kinds = {c: k for c, k, *_ in self.tgt_schema[table]}
        return tuple(PG_TYPES[kinds[c]] for c in cols)

    def valid_of_new_runs(self) -> int:
        """How many of the runs in the run map (temp.ingest_runs) are valid, in the file."""
        row = self.reader.execute(
            f"SELECT coalesce(sum(r.valid), 0) FROM {self.schema}.runs r"
            " JOIN temp.ingest_runs m ON m.old = r.id"
        ).fetchone()
        return int(row[0])

    def series_of_new_runs(self, camp) -> int:
        """How many of the runs in the run map have a result that names "series", in the file: none, without
        reading them, when the file counted none of its campaign's (a file from before store schema 15 has
        no count, nor has one of its campaigns stored before it: those results are read)."""
        if "runs_series" in camp.keys() and camp["runs_series"] == 0:
            return 0
        apart = "run_results" in self.src_schema  # a file before store schema 16 kept them in the runs' rows
        results = "run_results w ON w.run_id = m.old" if apart else "runs w ON w.id = m.old"
        row = self.reader.execute(
            f"SELECT count(*) FROM temp.ingest_runs m JOIN {self.schema}.{results}"
            " WHERE w.worker_json LIKE ?",
            (f"%{SERIES_MARK}%",),
        ).fetchone()
        return int(row[0])

    def copy_runs(self, tid: int, run_map: Mapping[int, int]) -> None:
        """The runs in the run map and every child row of theirs."""
        rcols = self.columns("runs", skip=("id", "campaign_id", "cell_id"))
        # in the store's id order, which the run map gives in the file's (`map_new_runs`, `_new_runs`):
        # ordered by the file's id, as the scan of its runs reads them, SQLite needs no sort of the wide rows
        # (ORDER BY the new id sorted them: a fifth of this copy's CPU)
        self.copy_select(
            "runs",
            ["id", "campaign_id", "cell_id", *rcols],
            f"SELECT m.new, ?, c.new, {', '.join(f'r.{x}' for x in rcols)} FROM {{src}}.runs r"
            " JOIN temp.ingest_runs m ON m.old = r.id JOIN temp.ingest_cells c ON c.old = r.cell_id"
            " ORDER BY r.id",
            (tid,),
        )
        for table in RUN_TABLES:
            if table == "run_series" and table not in self.src_schema:  # a file before schema 7
                self.insert_many(table, list(PACKED_COLUMNS), _packed_series(self.source, run_map))
                continue
            if table not in self.tgt_schema:  # a test's older store: the results came with the runs' rows
                continue
            if table == "run_results" and table not in self.src_schema:  # a file before schema 16: the
                self.copy_select(  # results were in the runs' rows
                    table,
                    ["run_id", "worker_json"],
                    "SELECT m.new, r.worker_json FROM temp.ingest_runs m JOIN {src}.runs r ON r.id = m.old"
                    " WHERE r.worker_json IS NOT NULL",
                )
                continue
            if table not in self.src_schema:  # an older file: that table came later
                continue
            cols = self.columns(table, skip=())
            sel = ", ".join("m.new" if c == "run_id" else f"x.{c}" for c in cols)
            self.copy_select(
                table,
                cols,
                f"SELECT {sel} FROM temp.ingest_runs m JOIN {{src}}.{table} x ON x.run_id = m.old",
            )
        if run_map:
            self.derive_columns(tid, run_map)

    def derive_columns(self, tid: int, run_map: Mapping[int, int]) -> None:
        """The store's columns derived from others that a file from before them lacks, computed for the runs
        copied now as the migration that added them computed them for a store's runs: the runs' summary
        columns (migration 9), the monitor rows' summaries (migration 10). A file that has them costs nothing
        here (its run map is not even read into Python)."""
        runs, series = self.lacks("runs", "mean_freq_khz"), self.lacks("run_series", "t_first_ns")
        if runs or series:
            # the copied runs' ids are past it (on PostgreSQL another writer's may be among them: their rows
            # get the values they already hold)
            after_id = min(run_map.values()) - 1
            if runs:
                fill_run_columns(self.target.conn, campaign_id=tid, after_id=after_id)
            if series:
                summarize_series(self.target.conn, after_id=after_id)

    def lacks(self, table: str, column: str) -> bool:
        """The store has this column and the file does not (a file from before it)."""
        return column in self.tgt_cols(table) and column not in self.columns(table, skip=())

    def tgt_cols(self, table: str) -> set[str]:
        return {c for c, *_ in self.tgt_schema.get(table, [])}


class _MappedRuns(Mapping[int, int]):
    """temp.ingest_runs as a mapping, read into Python only when something asks for a run's id (a run's
    artifacts, a file's per-sample monitor rows): most files have neither."""

    def __init__(self, conn):
        self._conn = conn
        self._n = int(conn.execute("SELECT count(*) FROM temp.ingest_runs").fetchone()[0])

    @functools.cached_property
    def _ids(self) -> dict[int, int]:
        return {int(r[0]): int(r[1]) for r in self._conn.execute("SELECT old, new FROM temp.ingest_runs")}

    def __getitem__(self, old: int) -> int:
        return self._ids[old]

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return self._n


PG_TYPES = {"integer": "int8", "real": "float8", "text": "text", "blob": "bytea"}  # describe_schema's kinds
PACKED_COLUMNS = ("run_id", "source", "packing", "samples", "t_ns", "value")


def _packed_series(source: Store, run_map: Mapping[int, int]) -> Iterator[tuple]:
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
    """The store's row of this campaign, identified by (uid, board fingerprint, plan hash); None when it is
    new. A uid the store holds under another board, or for another plan, is refused: merging would mix that
    campaign's runs with runs of another board or of other cells."""
    row = conn.execute(
        "SELECT c.id, b.fingerprint, b.label, c.name, c.plan_hash FROM campaigns c JOIN boards b ON"
        " b.id = c.board_id WHERE c.uid=?",
        (uid,),
    ).fetchone()
    if row is None or (row[1] == fingerprint and row[4] == camp["plan_hash"]):
        return row
    if row[1] != fingerprint:
        raise InputError(
            f"{src}: campaign {camp['name']!r} (uid {uid}) of board {fingerprint!r} has the uid of campaign "
            f"{row[3]!r} of board {row[2]!r} ({row[1]}) in the store; a campaign belongs to one board, so "
            "nothing was ingested; check that the file is that board's own results database (not an edited "
            "copy of another board's)"
        )
    raise InputError(
        f"{src}: campaign {camp['name']!r} (uid {uid}, plan hash {camp['plan_hash']}) has the uid of "
        f"campaign {row[3]!r} of plan hash {row[4]} in the store; a campaign runs one plan, so nothing was "
        "ingested; check that the file is the board's own results database (not an edited copy)"
    )


def _ingest(
    source: Store,
    target: Store,
    src: Path,
    fail_after_runs: int | None,
) -> IngestResult:
    cp = _Copier(source, target, src)
    conn = target.conn
    totals = {"campaigns_added": 0, "runs_added": 0, "runs_skipped": 0}
    campaign_ids: list[int] = []
    try:
        # One read snapshot of the file (a campaign may still be writing it) and one write transaction.
        source.conn.execute("BEGIN")
        conn.execute("BEGIN IMMEDIATE")
        try:
            if target.dialect == "postgresql":  # two ingests of one board's file never race on its rows
                conn.execute(f"SELECT pg_advisory_xact_lock({_PG_INGEST_LOCK})")
            cp.start()
            board_ids, labels = _boards(cp)
            for camp, fingerprint, uid in _file_campaigns(source):
                tid = _campaign(cp, camp, fingerprint, uid, board_ids[camp["board_id"]], src, totals)
                campaign_ids.append(tid)
                run_map = _runs(cp, camp, tid, uid, totals, fail_after_runs)
                _campaign_rows(cp, camp, tid, run_map)
                _set_mark(cp, camp, tid, uid)
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
    finally:
        cp.close()
    return IngestResult(
        source=str(src),
        db=target.path,
        campaigns=len(campaign_ids),
        boards=tuple(labels),
        campaign_ids=tuple(campaign_ids),
        **totals,
    )


def _boards(cp: _Copier) -> tuple[dict[int, int], list[str]]:
    """The file's boards in the store, by fingerprint: (file id -> store id, labels)."""
    board_ids: dict[int, int] = {}
    labels: list[str] = []
    bcols = cp.columns("boards")
    for b in cp.source.boards():
        labels.append(b["label"])
        row = cp.target.conn.execute(
            "SELECT id FROM boards WHERE fingerprint=?", (b["fingerprint"],)
        ).fetchone()
        board_ids[b["id"]] = int(row[0]) if row else cp.insert_one("boards", bcols, [b[c] for c in bcols])
    return board_ids, labels


# a campaign's columns the store keeps itself: its id, board and uid as the store numbers them, and its counts
# of runs (migrations 14 and 15), which grow with the runs this ingest copies, whatever the file's say
_CAMPAIGN_OWN = ("id", "board_id", "uid", "runs_stored", "runs_valid", "runs_series")


def _campaign(cp: _Copier, camp, fingerprint: str, uid: str, board_id: int, src: Path, totals: dict) -> int:
    """The campaign's id in the store (inserted when new) with its cells mapped in temp.ingest_cells."""
    row = _same_campaign(cp.target.conn, uid, fingerprint, src, camp)
    if row is None:
        ccols = cp.columns("campaigns", skip=_CAMPAIGN_OWN)
        # its runs with series counted from 0 as they are copied (`_runs`), where the store counts them
        own = {"runs_series": 0} if "runs_series" in cp.tgt_cols("campaigns") else {}
        tid = cp.insert_one(
            "campaigns",
            ["uid", "board_id", *own, *ccols],
            [uid, board_id, *own.values(), *(camp[c] for c in ccols)],
        )
        totals["campaigns_added"] += 1
    else:
        tid = int(row[0])
    cell_ids = {r["key"]: int(r["id"]) for r in cp.target.cells(tid)}
    kcols = cp.columns("cells", skip=("id", "campaign_id"))
    pairs = []
    for cell in cp.source.cells(camp["id"]):
        if cell["key"] not in cell_ids:
            cell_ids[cell["key"]] = cp.insert_one(
                "cells", ["campaign_id", *kcols], [tid, *(cell[c] for c in kcols)]
            )
        pairs.append((int(cell["id"]), cell_ids[cell["key"]]))
    cp.map_ids("ingest_cells", pairs)
    return tid


def _runs(
    cp: _Copier, camp, tid: int, uid: str, totals: dict, fail_after_runs: int | None
) -> Mapping[int, int]:
    """Copies the campaign's runs the store lacks; returns their ids, file's -> store's."""
    n_file = _file_runs(cp.source, camp["id"])[0]
    run_map = _new_runs(cp, camp, tid, uid)
    if run_map:
        cp.copy_runs(tid, run_map)
        cp.target._count_added_runs(
            tid, len(run_map), cp.valid_of_new_runs(), series=cp.series_of_new_runs(camp)
        )
    totals["runs_added"] += len(run_map)
    totals["runs_skipped"] += n_file - len(run_map)
    if fail_after_runs is not None and totals["runs_added"] >= fail_after_runs:
        raise RuntimeError(f"injected failure after {fail_after_runs} runs (a test)")
    return run_map


def _new_runs(cp: _Copier, camp, tid: int, uid: str) -> Mapping[int, int]:
    """The campaign's runs the store lacks, mapped (file's id -> store's) in temp.ingest_runs."""
    mark = _mark(cp.target, uid)
    ident = (
        "SELECT r.id, c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON c.id = r.cell_id"
        " WHERE r.campaign_id=?"
    )
    if cp.target.count_runs(tid) == 0:  # a new campaign (or one without runs yet): every run is new
        if cp.attached:  # mapped by SQLite itself, no id through Python
            return cp.map_new_runs(camp["id"])
        cur = cp.source.conn.cursor()
        cur.row_factory = None
        rows = cur.execute("SELECT id FROM runs WHERE campaign_id=? ORDER BY id", (camp["id"],)).fetchall()
        have: set = set()
    elif _holds_mark(cp.source, cp.target, camp, tid, mark):  # only the runs after the mark can be new
        assert mark is not None
        rows = cp.source.conn.execute(
            ident + " AND r.id > ? ORDER BY r.id", (camp["id"], mark.last_run_id)
        ).fetchall()
        # checked against the store's runs of those repetitions and later (a resume adds the last ones):
        # a run already there is never copied twice, whatever the file
        have = _store_identities(cp.target, tid, min((int(r[2]) for r in rows), default=0))
    else:  # compare every identity (a store without a mark, another copy of the campaign's file...)
        rows = cp.source.conn.execute(ident + " ORDER BY r.id", (camp["id"],)).fetchall()
        have = set(cp.target.run_identities(tid)) if rows else set()
    new = [int(r[0]) for r in rows if not have or (r[1], int(r[2]), int(r[3])) not in have]
    run_map = dict(zip(new, cp.new_run_ids(len(new)), strict=True))
    cp.map_ids("ingest_runs", run_map.items())
    return run_map


def _store_identities(target: Store, campaign_id: int, from_repetition: int) -> set[tuple[str, int, int]]:
    return {
        (r[0], int(r[1]), int(r[2]))
        for r in target.conn.execute(
            "SELECT c.key, r.repetition, r.attempt FROM runs r JOIN cells c ON c.id = r.cell_id"
            " WHERE r.campaign_id=? AND r.repetition >= ?",
            (campaign_id, from_repetition),
        )
    }


def _campaign_rows(cp: _Copier, camp, tid: int, run_map: Mapping[int, int]) -> None:
    """Campaign-level rows, replaced when the file is at least as complete as the store; run artifacts of
    the runs copied now."""
    conn = cp.target.conn
    n_src = _file_runs(cp.source, camp["id"])[0]
    n_tgt = cp.target.count_runs(tid)
    if n_src >= n_tgt:
        ccols = cp.columns("campaigns", skip=_CAMPAIGN_OWN)
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
            rows = cp.rows(f"SELECT {', '.join(cols)} FROM {table} WHERE campaign_id=?", (camp["id"],))
            cp.insert_many(table, ["campaign_id", *cols], ((tid, *row) for row in rows))
        conn.execute("DELETE FROM artifacts WHERE campaign_id=? AND run_id IS NULL", (tid,))
    acols = cp.columns("artifacts", skip=("id", "campaign_id", "run_id"))
    for art in cp.rows("SELECT * FROM artifacts WHERE campaign_id=? ORDER BY id", (camp["id"],)):
        if art["run_id"] is None and n_src < n_tgt:
            continue
        if art["run_id"] is not None and art["run_id"] not in run_map:
            continue  # the run's artifacts came with it on an earlier ingest
        run_id = None if art["run_id"] is None else run_map[art["run_id"]]
        cp.insert_one("artifacts", ["campaign_id", "run_id", *acols], [tid, run_id, *(art[c] for c in acols)])


def _set_mark(cp: _Copier, camp, tid: int, uid: str) -> None:
    n, last = _file_runs(cp.source, camp["id"])
    cells = cp.source.conn.execute(
        "SELECT count(*) FROM cells WHERE campaign_id=?", (camp["id"],)
    ).fetchone()[0]
    mark = Mark(
        last_run_id=last,
        file_runs=n,
        last_run=_run_identity(cp.source, last) if last else (),
        store_runs=cp.target.count_runs(tid),
        cells=int(cells),
        rows_sha256=campaign_rows_hash(cp.source, camp),
    )
    cp.target.conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (MARK_PREFIX + uid, mark.to_json())
    )


__all__ = [
    "IngestResult",
    "Mark",
    "STORE_SCHEMA",
    "campaign_uid",
    "ingest_file",
    "ingest_files",
    "open_source",
    "verify_source",
]
