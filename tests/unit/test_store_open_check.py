"""A writer's open checks its SQLite store before changing it (issue 44, docs/results.md "Checking the store
before writing"): the whole file up to Store.FULL_CHECK_MAX_BYTES; beyond it the file's header against its
size and every table but the runs', so that an ingest into a store of 10^7 runs does not read 12 GB first.
The limit is lowered here by a subclass, the way a test injects it."""

from __future__ import annotations

import os
import sqlite3

import pytest

from boardlab.errors import InputError
from boardlab.store import Store

from helpers import header_pages, make_campaign_db, smash_pages

# the runs' tables, the campaigns' summaries (0.9 GB of a nightly store of 10^7 runs) and the history steps'
# cache (87 MB there): not read bounded
RUN_PAGES = ("runs", "run_values", "run_metrics", "run_series", "campaign_summaries", "step_summaries")


def limited(limit: int) -> type[Store]:
    """Store with the full check's limit at `limit` bytes."""
    return type("LimitedStore", (Store,), {"FULL_CHECK_MAX_BYTES": limit})


@pytest.fixture
def store(tmp_path):
    db = make_campaign_db(tmp_path / "lab.db", n=2)
    assert not os.path.exists(f"{db}-wal") or os.path.getsize(f"{db}-wal") == 0  # folded at its close
    return db


def _open(cls: type[Store], db, **kw) -> list[str]:
    """Opens `db` for writing and closes it; returns the notes the open gave."""
    notes: list[str] = []
    cls.open(db, note=notes.append, **kw).close()
    return notes


def test_a_store_up_to_the_limit_is_checked_whole(store):
    smash_pages(store, *RUN_PAGES)
    with pytest.raises(InputError, match="corrupted") as err:
        _open(limited(store.stat().st_size), store)
    assert str(store) in str(err.value) and "give another --db" in str(err.value)


def test_beyond_the_limit_the_runs_are_left_to_the_full_check_and_the_note_says_so(store):
    size = store.stat().st_size
    smash_pages(store, *RUN_PAGES)  # not read by the bounded check: it does not grow with them
    notes = _open(limited(size - 1), store)
    assert len(notes) == 1 and str(store) in notes[0] and "--full-check" in notes[0], notes
    assert f"{size / 2**30:.1f} GiB" in notes[0]


def test_an_intact_store_beyond_the_limit_opens_with_one_note_and_none_below(store):
    assert len(_open(limited(store.stat().st_size - 1), store)) == 1
    assert _open(limited(store.stat().st_size), store) == []


def test_full_check_checks_a_large_store_whole(store):
    smash_pages(store, *RUN_PAGES)
    with pytest.raises(InputError, match="corrupted"):
        _open(limited(store.stat().st_size - 1), store, full_check=True)


@pytest.mark.parametrize("cut", ["inside a page", "at a page's end"])
def test_a_truncated_large_store_is_refused_as_corrupted(store, cut):
    page_size, pages = header_pages(store)
    # inside a page: SQLite counts the part as a page and reads zeros past the cut; the header check says it
    size = (pages - 1) * page_size + (page_size // 2 if cut == "inside a page" else 0)
    os.truncate(store, size)
    with pytest.raises(InputError, match="corrupted") as err:
        _open(limited(1), store)
    assert str(store) in str(err.value) and "give another --db" in str(err.value)
    if cut == "inside a page":
        assert f"holds {size} bytes, not a whole number of its {page_size}-byte pages" in str(err.value)


@pytest.mark.parametrize("damaged", ["campaigns", "cells", "boards", "campaigns_by_status", "meta"])
def test_a_damaged_table_or_index_that_does_not_grow_with_the_runs_is_refused(store, damaged):
    smash_pages(store, damaged)
    with pytest.raises(InputError) as err:
        _open(limited(store.stat().st_size - 1), store)
    assert str(store) in str(err.value), err.value


def test_a_sqlite_without_per_table_checks_checks_the_whole_file(store, monkeypatch):
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 32, 3))  # before quick_check(TABLE)
    smash_pages(store, *RUN_PAGES)
    with pytest.raises(InputError, match="corrupted"):
        _open(limited(store.stat().st_size - 1), store)


def test_a_log_with_frames_leaves_the_header_to_sqlite(store, tmp_path):
    """A copy taken while a writer's log held pages, as a checkpoint stopped after page 1: the main file's
    header counts pages only the log holds yet. SQLite replays the log, so the header is not judged alone."""
    writer = sqlite3.connect(store, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO meta(key, value) VALUES ('x', ?)", ("y" * 20000,))  # pages past the file
    pages = writer.execute("PRAGMA page_count").fetchone()[0]
    copy = tmp_path / "copy.db"
    for suffix in ("", "-wal"):
        with open(f"{store}{suffix}", "rb") as src, open(f"{copy}{suffix}", "wb") as dst:
            dst.write(src.read())
    writer.close()
    assert header_pages(copy)[1] < pages and os.path.getsize(f"{copy}-wal") > 32
    with open(copy, "r+b") as f:  # page 1 checkpointed, the pages it counts not yet
        f.seek(28)
        f.write(pages.to_bytes(4, "big"))
    bare = tmp_path / "bare.db"  # the same file without its log: a truncated copy
    bare.write_bytes(copy.read_bytes())
    assert len(_open(limited(1), copy)) == 1
    with pytest.raises(InputError, match="corrupted"):
        _open(limited(1), bare)
