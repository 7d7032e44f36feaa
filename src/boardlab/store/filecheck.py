"""A writer's check of a SQLite store before it changes anything (issue 44).

SQLite's `PRAGMA quick_check` reads every page of the file: about 3 s warm and 10 s cold for a store of 10^6
runs (1.25 GB), ten times that at 10^7, and it ran at every `boardlab ingest` and `run`. A store up to the
writer's limit (`Store.FULL_CHECK_MAX_BYTES`, 1 GiB: every board's own store) still gets it. A larger one gets
the bounded check here: the file's header against its size (a truncated copy is the damage a whole-file check
finds that per-table checks may not: the runs' pages past the cut), then `quick_check(TABLE)` of every
table but those that grow with the runs (`UNBOUNDED`), each with its indexes. Those left grow with campaigns,
boards and cells. The runs' rows are left to the full check (`--full-check`) and to the readers' own
verification of what they read (`boardlab serve` verifies every value in the background); so are the
campaigns' summaries, whose cells keep their valid values (about 70 bytes a run): in a lab's nightly store of
10^7 runs they are 0.9 GB, and reading them was 1.85 s of every ingest's open when cold. They are a cache of
what the runs give: a summary whose text does not read is computed again from the runs, and a damaged page
of them is SQLite's error where it is read, as a damaged page of runs is. So are the history's steps
(`step_summaries`), a cache of the same kind that grows with the campaigns: 87 MB and 1.35 s of the open when
cold in the nightly store of 10^7 runs (1,000 steps), of the 1.8 s the whole check took."""

from __future__ import annotations

import os
import sqlite3

from boardlab.store.migrations import RUN_TABLES

# tables that grow with the runs, and the history steps' cache: left to the full check
UNBOUNDED = RUN_TABLES | {"campaign_summaries", "step_summaries"}

# quick_check(TABLE) exists from SQLite 3.33.0 (2020-08-14); an older library checks the whole file
TABLE_CHECK_SQLITE = (3, 33, 0)
_MAGIC = b"SQLite format 3\x00"


def quick_check(conn: sqlite3.Connection, table: str | None = None) -> None:
    """SQLite's quick_check of the whole file, or of one table and its indexes; raises sqlite3.DatabaseError
    with SQLite's own "malformed" wording (errors.database_error names the file and the fix)."""
    quoted = None if table is None else table.replace("'", "''")
    sql = "PRAGMA quick_check" if quoted is None else f"PRAGMA quick_check('{quoted}')"
    found = conn.execute(sql).fetchone()[0]
    if found != "ok":
        raise sqlite3.DatabaseError(f"database disk image is malformed ({found})")


def can_bound() -> bool:
    """Whether this SQLite checks one table at a time."""
    return sqlite3.sqlite_version_info >= TABLE_CHECK_SQLITE


def bounded_check(conn: sqlite3.Connection, fd: int, path: str) -> None:
    """The header check, then quick_check of every table not in UNBOUNDED (sqlite_master first). Raises
    sqlite3.DatabaseError as `quick_check` does."""
    header_check(fd, path)
    names = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        if r[0] not in UNBOUNDED
    ]
    for name in ["sqlite_master", *names]:
        quick_check(conn, name)


def header_check(fd: int, path: str) -> None:
    """The page size and page count the file's header gives against the file's size: a file shorter than
    the pages it counts, or not a whole number of pages, is a truncated copy. SQLite refuses the first as
    malformed when it first reads the file, but not a copy cut inside a page (it counts the part as a page,
    which then reads as zeros past the cut). The count is not compared while the -wal file holds frames: a
    checkpoint writes page 1 (the header) before the pages it counts, and a crash between leaves the main
    file short until SQLite replays the log, which it does."""
    size = os.fstat(fd).st_size
    head = os.pread(fd, 100, 0)
    if len(head) < 100 or not head.startswith(_MAGIC):
        raise sqlite3.DatabaseError("file is not a database")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page  # the header's 1 means 65536 (two bytes cannot hold it)
    if page < 512 or page & (page - 1):
        raise sqlite3.DatabaseError(f"database disk image is malformed (page size {page} in the header)")
    pages = int.from_bytes(head[28:32], "big")
    # the count is valid when the change counter equals its "version valid for" (else SQLite counts the file)
    counted = pages != 0 and head[24:28] == head[92:96] and not _log_has_frames(path)
    if size % page:
        short = f"not a whole number of its {page}-byte pages"
    elif counted and pages * page > size:
        short = f"its header counts {pages} pages of {page} bytes ({pages * page} bytes)"
    else:
        return
    raise sqlite3.DatabaseError(
        f"database disk image is malformed (the file holds {size} bytes, {short}: a truncated copy)"
    )


def _log_has_frames(path: str) -> bool:
    try:
        return os.path.getsize(f"{path}-wal") > 32  # 32 bytes: a log's header, no frame
    except OSError:
        return False
