"""Each campaign keeps the count of its runs whose worker result names "series" (store schema 15,
`campaigns.runs_series`): every writer of runs adds to it in the transaction that stores them, and the series
study reads no result of a campaign that counted none. Finding none read every valid run's result, on every
report and every analysis of a running campaign: 6 s at 10^6 runs of 1.3 KB results. A campaign stored before
schema 15 has no count (NULL) and is read as before."""

from __future__ import annotations

import sqlite3

from boardlab.analysis.core import analyze
from boardlab.analysis.studies import series as series_study
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file

from helpers import CAMPAIGN_COLUMNS_15, as_older_store, make_services_db, make_stream_db, results_source

LIKE = "worker_json LIKE '%\"series\"%'"


def _kept_and_counted(path) -> dict[int, tuple[int | None, int]]:
    """campaign id -> (its kept count of runs with series, those runs counted from their results)."""
    conn = sqlite3.connect(path)
    try:
        counted = (
            f"(SELECT count(*) FROM runs r JOIN {results_source(conn)} AS w ON w.run_id = r.id"
            f" WHERE r.campaign_id = c.id AND w.{LIKE})"
        )
        sql = f"SELECT c.id, c.runs_series, {counted} FROM campaigns c"
        return {int(cid): (kept, int(n)) for cid, kept, n in conn.execute(sql)}
    finally:
        conn.close()


def _series_reads(store: Store, campaign_id: int) -> tuple[list, list[str]]:
    """The rows the series study is given, and the statements that read runs' results to give them."""
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        rows = list(store.iter_worker_series(campaign_id))
    finally:
        store.conn.set_trace_callback(None)
    return rows, [s for s in statements if "worker_json" in s]


def test_a_campaign_without_series_is_counted_so_and_no_result_of_it_is_read(tmp_path):
    plain = make_stream_db(tmp_path / "plain.db", n=3)  # results without series (the runner's record_runs)
    services = make_services_db(tmp_path / "services.db", n=3)  # every run with series
    assert list(_kept_and_counted(plain).values()) == [(0, 0)]
    ((kept, counted),) = _kept_and_counted(services).values()
    assert kept == counted > 0
    with Store.open(plain, create=False) as store:
        rows, reads = _series_reads(store, 1)
        assert rows == [] and reads == []
        assert analyze(store, 1).study(series_study.__name__) is None
    with Store.open(services, create=False) as store:
        rows, reads = _series_reads(store, 1)
        assert 0 < len(rows) <= counted and len(reads) == 1  # the valid ones among them
        assert analyze(store, 1).study(series_study.__name__) is not None


def test_an_ingest_counts_the_runs_with_series_it_copies(tmp_path):
    lab = tmp_path / "lab.db"
    for made in (make_stream_db(tmp_path / "a.db", n=3), make_services_db(tmp_path / "b.db", n=3)):
        assert ingest_file(made, str(lab)).runs_added > 0
    counts = _kept_and_counted(lab)
    assert sorted(k for k, _ in counts.values()) == [0, max(n for _, n in counts.values())]
    assert all(kept == counted for kept, counted in counts.values()), counts


def test_a_campaign_stored_before_the_count_is_read_as_before_and_counted_by_an_ingest(tmp_path):
    old = make_services_db(tmp_path / "old.db", n=3)
    (n_series,) = (n for _, n in _kept_and_counted(old).values())
    as_older_store(old, 14, CAMPAIGN_COLUMNS_15)
    with Store.open(old, create=False) as store:  # a reader of the older store: it has no count
        rows, reads = _series_reads(store, 1)
        assert rows and len(reads) == 1
    with Store.open(old) as store:  # a writer's open migrates it: the campaign's count stays unknown
        assert store.schema_version() == STORE_SCHEMA
    assert list(_kept_and_counted(old).values()) == [(None, n_series)]
    with Store.open(old, create=False) as store:
        rows, reads = _series_reads(store, 1)
        assert rows and len(reads) == 1
        assert analyze(store, 1).study(series_study.__name__) is not None
    lab = tmp_path / "lab.db"
    ingest_file(old, str(lab))  # the file's campaign counted none: its results are read as they are copied
    assert list(_kept_and_counted(lab).values()) == [(n_series, n_series)]
