"""A running campaign analysed again as its runs arrive (`analysis.cellruns.GrowingTables`, serve's worker):
each analysis reads only the runs stored since the last, and is the analysis a whole read gives; a cell whose
runs changed otherwise (an attempt of an earlier place, runs deleted) is read whole."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardlab.analysis.cellruns import GrowingTables
from boardlab.analysis.core import analyze
from boardlab.store import Store

from helpers import make_ai_db, make_campaign_db, make_rt_db

N_FIRST, N_ALL = 6, 11


def _same_analysis(store: Store, cid: int, growing: GrowingTables) -> None:
    got, whole = analyze(store, cid, growing=growing), analyze(store, cid)
    assert got.cells == whole.cells  # every cell's table (column by column), summary and facts
    assert got.comparisons == whole.comparisons and got.aa_controls == whole.aa_controls


@pytest.fixture
def running(tmp_path) -> tuple[Path, int]:
    db = make_campaign_db(tmp_path / "running.db", n=N_FIRST, status="running")
    with Store.open(db, create=False) as store:
        return db, int(store.campaigns()[0]["id"])


@contextlib.contextmanager
def _writer(db: Path) -> Iterator[sqlite3.Connection]:
    """A change to the store behind the reader's back, as another process would make it."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _runs(db: Path, cid: int) -> int:
    with Store.open(db, create=False) as store:
        return store.count_runs(cid)


def test_each_analysis_reads_only_the_runs_stored_since(running):
    db, cid = running
    growing = GrowingTables()
    with Store.open(db, create=False) as store:
        _same_analysis(store, cid, growing)
        first = growing.runs_read
        assert first == store.count_runs(cid)  # the first analysis reads every run
        _same_analysis(store, cid, growing)
        assert growing.runs_read == first  # nothing arrived: nothing read
    make_campaign_db(db, n=N_ALL, first_rep=N_FIRST + 1, status="running")  # the campaign goes on
    with Store.open(db, create=False) as store:
        _same_analysis(store, cid, growing)
    assert growing.runs_read - first == _runs(db, cid) - first  # only the new runs
    assert growing.runs == _runs(db, cid)


def _read_after(db: Path, cid: int, cell_index: int, change) -> int:
    """The runs an analysis reads after `change(conn, cell_id)` changed the store behind a first one's back
    (that analysis and the one after it are each what a whole read gives)."""
    growing = GrowingTables()
    with Store.open(db, create=False) as store:
        _same_analysis(store, cid, growing)
        cell = int(store.cells(cid)[cell_index]["id"])
        with _writer(db) as conn:
            change(conn, cell)
        before = growing.runs_read
        _same_analysis(store, cid, growing)
        return growing.runs_read - before


def _rerun_first(conn: sqlite3.Connection, cell: int) -> None:
    """A second attempt of the cell's first run, stored after its later runs (a re-run)."""
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)") if r[1] not in ("id", "attempt")]
    conn.execute(
        f"INSERT INTO runs({', '.join(cols)}, attempt) SELECT {', '.join(cols)}, attempt + 1"
        " FROM runs WHERE cell_id=? ORDER BY seq LIMIT 1",
        (cell,),
    )


def _delete_last(conn: sqlite3.Connection, cell: int) -> None:
    last = conn.execute("SELECT max(id) FROM runs WHERE cell_id=?", (cell,)).fetchone()[0]
    for table in ("run_series", "run_values", "run_metrics"):
        conn.execute(f"DELETE FROM {table} WHERE run_id=?", (last,))
    conn.execute("DELETE FROM runs WHERE id=?", (last,))


def test_an_attempt_of_an_earlier_place_reads_its_cell_whole(running):
    # the new run, found out of place, then that cell whole (its runs and the new one)
    assert _read_after(*running, 0, _rerun_first) == 1 + N_FIRST + 1


def test_a_cell_whose_runs_were_deleted_is_read_whole(running):
    assert _read_after(*running, 1, _delete_last) == N_FIRST - 1


def test_serves_worker_keeps_tables_of_running_campaigns_only(running, monkeypatch):
    """The worker's `_summary` reads on from its last analysis of a running campaign, and lets the tables go
    when the campaign has ended (its summary is then stored, or computed once)."""
    from boardlab.web import background

    monkeypatch.setattr(background, "_growing", type(background._growing)())
    db, cid = running
    first = background._summary(str(db), cid)
    (kept,) = background._growing.values()
    assert kept.runs == first.runs_stored == kept.runs_read
    make_campaign_db(db, n=N_ALL, first_rep=N_FIRST + 1, status="running")
    second = background._summary(str(db), cid)
    assert kept.runs_read == second.runs_stored  # the first runs once, the new ones once
    with Store.open(db) as store:
        store.set_campaign_status(cid, "complete", monitor={}, notes={})
    background._summary(str(db), cid)
    assert not background._growing


def test_a_summary_read_a_cell_at_a_time_is_the_one_of_held_tables(running, monkeypatch):
    """`summary.compute` reads a campaign a few cells at a time (REPORT_RUNS_BUDGET, here 10 runs: every cell
    read again where a later section needs it), serve's worker from tables it holds: the same summary."""
    from boardlab import summary
    from boardlab.analysis import cellruns

    db, cid = running
    with Store.open(db, create=False) as store:
        held = summary.compute(store, cid, growing=GrowingTables())
        monkeypatch.setattr(cellruns, "REPORT_RUNS_BUDGET", 10)
        streamed = summary.compute(store, cid)
    assert streamed == held


def test_a_running_campaign_larger_than_the_bound_keeps_no_tables(running, monkeypatch):
    """Past GROWING_RUNS the worker keeps nothing between analyses (a board's serve must not hold a huge
    campaign's tables): its analysis reads a few cells at a time, the same summary."""
    from boardlab import summary
    from boardlab.web import background

    db, cid = running
    monkeypatch.setattr(background, "_growing", type(background._growing)())
    monkeypatch.setattr(background, "GROWING_RUNS", _runs(db, cid) - 1)
    got = background._summary(str(db), cid)
    assert not background._growing
    with Store.open(db, create=False) as store:
        assert got == summary.compute(store, cid)


@pytest.mark.parametrize(
    "make", [make_campaign_db, make_rt_db, make_ai_db], ids=["medians", "p99s", "frames"]
)
def test_an_analysis_computes_again_only_what_involves_a_changed_cell(tmp_path, monkeypatch, make):
    """Per cell, not per campaign: after one cell's runs change, the next analysis summarizes that cell
    alone and compares only the pairs it is in (the rest remembered, `GrowingTables.remembered`), and is
    still the analysis a whole read gives, tail comparisons (per-run p99s, pooled frames) included."""
    from collections import Counter

    from boardlab.analysis import core

    db = make(tmp_path / "c.db", n=N_FIRST)
    computed: Counter[str] = Counter()
    for name in ("_summary_of", "median_comparison", "aa_control", "_tail_pair"):
        real = getattr(core, name)
        monkeypatch.setattr(
            core, name, lambda *a, _f=real, _n=name, **k: computed.update([_n]) or _f(*a, **k)
        )
    growing = GrowingTables()
    with Store.open(db, create=False) as store:
        cid = int(store.campaigns()[0]["id"])
        first = analyze(store, cid, growing=growing)
        assert computed["_summary_of"] == len(first.cells) and growing.answers_reused == 0
        cell = first.cells[-1]  # a condition's cell: in one pair of each kind
        with _writer(db) as conn:
            _rerun_first(conn, cell.cell_id)
        computed.clear()
        got = analyze(store, cid, growing=growing)
        pairs = list(core._pairs(first.cells))
        involved = [p for p in pairs if cell.cell_id in core._pair_cells(p)]
        tails = [p for p in involved if first.workloads.tail_samples(p[0].workload)]
        assert computed["_summary_of"] == 1 and computed["median_comparison"] == len(involved) >= 1
        assert computed["aa_control"] == (1 if any(p[1] is cell for p in pairs) else 0)
        assert computed["_tail_pair"] == len(tails) and growing.answers_reused > 0
        whole = analyze(store, cid)
    assert len(got.tail_comparisons) == (0 if make is make_campaign_db else len(pairs))
    assert got.cells == whole.cells and got.comparisons == whole.comparisons
    assert got.aa_controls == whole.aa_controls and got.tail_comparisons == whole.tail_comparisons
