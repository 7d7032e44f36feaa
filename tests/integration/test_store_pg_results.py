"""Store schema 16 on PostgreSQL (a server the test starts, tests/pg.py): the runs' worker results in
run_results, copied there by an ingest from a file of either layout, moved there by the migration of a
store from before it, and checked as the other tables under runs are (once per statement,
store/pg_references.py)."""

from __future__ import annotations

import json

import pytest

from boardlab.errors import BoardlabError
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file

from helpers import as_older_store, make_services_db, results_source

pytestmark = pytest.mark.integration


def _results(store: Store) -> list[tuple]:
    """(cell key, repetition, attempt, result) of every run with a result, wherever the store keeps it."""
    rows = store.conn.execute(
        "SELECT c.key, r.repetition, r.attempt, w.worker_json FROM runs r JOIN cells c ON c.id = r.cell_id"
        f" JOIN {results_source(store)} AS w ON w.run_id = r.id WHERE w.worker_json IS NOT NULL"
    )
    return sorted(((k, rep, att, json.loads(doc)) for k, rep, att, doc in rows), key=repr)


def _runs_bytes(store: Store) -> int:
    """The runs table's size on the server: its heap and its TOAST table, without its indexes."""
    return int(store.conn.execute("SELECT pg_table_size('runs')").fetchone()[0])


def _file_results(path) -> list[tuple]:
    with Store.open(path, create=False) as store:
        return _results(store)


def test_ingest_of_either_layout_stores_the_results_apart(pg_url, tmp_path):
    new = make_services_db(tmp_path / "new.db", n=3, seed=5)
    old = make_services_db(tmp_path / "old.db", n=3, seed=7)
    as_older_store(old, 15, ())  # the results in the runs' rows
    expected = _file_results(new) + _file_results(old)
    for src in (new, old):
        assert ingest_file(src, pg_url).runs_added > 0
    with Store.open(pg_url, create=False) as store:
        assert "worker_json" not in {c for c, *_ in store.describe_schema()["runs"]}
        assert _results(store) == sorted(expected, key=repr)


def test_a_postgresql_store_before_16_is_migrated_with_every_result_moved(pg_url, tmp_path, monkeypatch):
    import boardlab.store.db as db

    src = make_services_db(tmp_path / "s.db", n=3)
    expected = _file_results(src)
    as_older_store(src, 15, ())
    with monkeypatch.context() as m:  # a boardlab of store schema 15 ingests it
        m.setattr(db, "MIGRATIONS", db.MIGRATIONS[:15])
        m.setattr(db, "STORE_SCHEMA", 15)
        ingest_file(src, pg_url)
        with Store.open(pg_url, create=False) as store:
            assert store.schema_version() == 15 and _results(store) == expected
            before = _runs_bytes(store)
    with Store.open(pg_url) as store:  # this one's writer's open migrates it
        assert store.schema_version() == STORE_SCHEMA >= 16
        after = _runs_bytes(store)  # the dropped results' bytes given back (without the rewrite: as before)
        assert after < before / 2, (before, after)
        assert "worker_json" not in {c for c, *_ in store.describe_schema()["runs"]}
        assert _results(store) == expected
        missing = store.conn.execute("SELECT max(id) + 1 FROM runs").fetchone()[0]
        with pytest.raises(BoardlabError, match='"run_results" refers to no row of "runs"'):
            with store.conn:
                store.conn.execute(
                    "INSERT INTO run_results(run_id, worker_json) VALUES (?, '{}')", (missing,)
                )
        run = store.conn.execute("SELECT min(run_id) FROM run_results").fetchone()[0]
        with pytest.raises(BoardlabError, match='leaves rows of "run_results" referring to it'):
            with store.conn:
                for table in ("run_metrics", "run_values", "run_series", "run_histograms", "run_energy"):
                    store.conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run,))
                store.conn.execute("DELETE FROM runs WHERE id = ?", (run,))
