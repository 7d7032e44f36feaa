"""Each campaign keeps the count of its stored runs (store schema 14, `campaigns.runs_stored`): every writer
of runs adds to it in the transaction that stores them, an older store is counted once by its writer's open,
and a summary's freshness reads that one row instead of counting the campaign's runs (linear in them: 0.04 s
at 10^6 runs, bench/bench_freshness.py). PostgreSQL's ingest keeps it too: tests/integration/test_store_pg.py
and test_store_pg_references.py."""

from __future__ import annotations

import sqlite3

from boardlab import summary
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file

from helpers import CAMPAIGN_COUNTS, as_older_store, make_campaign_db, make_campaign_db_bulk


def _counts(path) -> dict[int, tuple[tuple[int, int], tuple[int, int]]]:
    """campaign id -> (its kept counts, its runs counted): each (runs, valid runs)."""
    conn = sqlite3.connect(path)
    try:
        return {
            int(cid): ((int(kept), int(kept_valid)), (int(counted), int(valid)))
            for cid, kept, kept_valid, counted, valid in conn.execute(
                "SELECT c.id, c.runs_stored, c.runs_valid, count(r.id), coalesce(sum(r.valid), 0)"
                " FROM campaigns c LEFT JOIN runs r ON r.campaign_id = c.id GROUP BY c.id"
            )
        }
    finally:
        conn.close()


def _assert_kept(path, campaigns: int) -> None:
    counts = _counts(path)
    # every campaign here has runs, and some invalid or failed ones (make_campaign_db's)
    assert len(counts) == campaigns and all(0 < valid < n for _, (n, valid) in counts.values()), counts
    assert all(kept == counted for kept, counted in counts.values()), counts


def test_every_writer_of_runs_keeps_its_campaigns_count(tmp_path):
    board = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2, status="running", seed=3)  # record_runs
    _assert_kept(board, 1)
    lab = tmp_path / "lab.db"
    assert ingest_file(board, str(lab)).runs_added > 0  # a new campaign: its runs mapped by SQLite
    _assert_kept(lab, 1)
    make_campaign_db(board, board="bbb-1", n=4, first_rep=3, seed=3)  # resumed on the board
    _assert_kept(board, 1)
    grown = ingest_file(board, str(lab))  # only the runs past the watermark
    assert grown.runs_added > 0 and grown.runs_skipped > 0
    _assert_kept(lab, 1)
    assert ingest_file(board, str(lab)).runs_added == 0  # unchanged: nothing added, nothing counted twice
    _assert_kept(lab, 1)
    other = make_campaign_db(tmp_path / "b.db", board="bbb-2", n=2)
    ingest_file(other, str(lab))
    _assert_kept(lab, 2)
    with Store.open(lab) as store:  # the bulk writer of one-value runs (a synthetic store, an archive)
        cell_id = int(store.cells(1)[0]["id"])
        runs = [(cell_id, 50 + k, 500 + k, 1.7e9 + k, 1000, 5.0, None) for k in range(7)]
        added = store.record_value_runs(1, ("x_ns", "ns", False), runs)
    assert added == 7
    _assert_kept(lab, 2)
    bulk = make_campaign_db_bulk(tmp_path / "bulk.db", 400)  # the tests' own batched writer keeps it too
    _assert_kept(bulk, 1)


def _as_schema_13(path) -> None:
    as_older_store(path, 13, CAMPAIGN_COUNTS)


def test_a_store_of_schema_13_is_read_by_counting_and_counted_once_by_its_writers_open(tmp_path):
    lab = tmp_path / "lab.db"
    for board, seed in (("bbb-1", 1), ("bbb-2", 2)):
        ingest_file(make_campaign_db(tmp_path / f"{board}.db", board=board, n=3, seed=seed), str(lab))
    want = {cid: counted for cid, (_, counted) in _counts(lab).items()}
    _as_schema_13(lab)
    with Store.open(lab, create=False) as old:  # a reader leaves the file as it is, and counts
        assert old.schema_version() == 13
        assert {cid: (old.count_runs(cid), old.run_progress(cid)[1]) for cid in want} == want
    with Store.open(lab) as store:  # a writer migrates it: the data step counts every campaign's runs
        assert store.schema_version() == STORE_SCHEMA
        assert {cid: store.run_progress(cid) for cid in want} == want
    _assert_kept(lab, 2)


def test_a_summarys_freshness_reads_the_campaigns_count_not_its_runs(tmp_path):
    db = make_campaign_db(tmp_path / "c.db", n=3)
    with Store.open(db) as store:
        cid = int(store.campaigns()[0]["id"])
        summary.keep(store, cid)
    with Store.open(db, create=False) as store:
        statements: list[str] = []
        store.conn.set_trace_callback(statements.append)
        got = summary.stored(store, cid)
        store.conn.set_trace_callback(None)
    assert got is not None and got.runs_stored == _counts(db)[cid][1][0]
    assert statements and not [s for s in statements if "FROM runs" in s], statements


def test_a_running_campaigns_progress_reads_its_counts_not_its_runs(tmp_path):
    db = make_campaign_db(tmp_path / "c.db", n=3, status="running")
    with Store.open(db, create=False) as store:
        statements: list[str] = []
        store.conn.set_trace_callback(statements.append)
        row = store.campaign(1)
        progress = store.campaign_progress(row, row["heartbeat_unix_s"] + 5)
        store.conn.set_trace_callback(None)
    (runs, valid), _ = _counts(db)[1]
    assert (progress.runs_done, progress.runs_valid, progress.heartbeat_age_s) == (runs, valid, 5)
    assert statements and not [s for s in statements if "FROM runs" in s], statements


def test_a_summary_of_another_run_count_is_found_stale_by_the_backfill(tmp_path):
    lab = tmp_path / "lab.db"
    for board, seed in (("bbb-1", 1), ("bbb-2", 2)):
        ingest_file(make_campaign_db(tmp_path / f"{board}.db", board=board, n=3, seed=seed), str(lab))
    schema = summary.code_fingerprint()
    with Store.open(lab) as store:
        summary.keep_missing(store)
        assert store.campaigns_to_backfill(schema, limit=10) == ([], 2)
        assert store.campaigns_without_fresh_summary(schema, limit=10) == []
        store.conn.execute("UPDATE campaign_summaries SET runs_stored = runs_stored - 1 WHERE campaign_id=1")
        store.conn.commit()
        assert store.campaigns_to_backfill(schema, limit=10) == ([1], 2)
        assert store.campaigns_without_fresh_summary(schema, limit=10) == [1]


def test_a_writers_open_says_it_upgrades_an_older_store_and_a_new_or_current_one_says_nothing(tmp_path):
    lab = tmp_path / "lab.db"
    ingest_file(make_campaign_db(tmp_path / "a.db", n=2), str(lab))
    _as_schema_13(lab)
    said: list[str] = []
    with Store.open(lab, note=said.append) as store:
        assert store.schema_version() == STORE_SCHEMA
    assert said == [
        f"{lab}: a store of schema 13, from an older boardlab: upgrading it to schema {STORE_SCHEMA} once, "
        "before anything is written (this reads every run of the store)"
    ]
    with Store.open(lab, note=said.append), Store.open(tmp_path / "new.db", note=said.append):
        pass
    assert len(said) == 1  # the upgraded store, and a new one, open without a word
