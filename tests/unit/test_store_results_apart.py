"""Store schema 16 keeps each run's worker result (its raw JSON, about 1.2 KB for a kernel's run) in
run_results instead of the run's row, so a scan of `runs` (a report's cells, an export, a page) reads only the
run's numbers. A store before it is migrated by its next writer's open, every result moved, its reports
unchanged; a reader of an older store and an ingest of an older file find the results in the runs' rows."""

from __future__ import annotations

import json
import sqlite3

from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file

from helpers import as_older_store, make_services_db, results_source


def _results(path, campaign_id: int = 1) -> dict[tuple, dict]:
    """(cell key, repetition, attempt) -> the worker result of each run of the campaign, wherever the store
    keeps it."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT c.key, r.repetition, r.attempt, w.worker_json FROM runs r JOIN cells c"
            f" ON c.id = r.cell_id JOIN {results_source(conn)} AS w ON w.run_id = r.id"
            " WHERE w.worker_json IS NOT NULL AND r.campaign_id = ?",
            (campaign_id,),
        )
        return {(key, rep, attempt): json.loads(doc) for key, rep, attempt, doc in rows}
    finally:
        conn.close()


def _run_columns(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    finally:
        conn.close()


def _report(db, *, write: bool = False) -> str:
    from boardlab.analysis.core import analyze
    from boardlab.analysis.sections import build_document
    from boardlab.report.render import render_document

    with Store.open(db, create=write) as store:
        a = analyze(store, store.campaigns()[-1]["id"])
        return render_document(build_document(a), "md")


def _with_fixed_times(db) -> None:
    """A report shows when its campaign was analysed against the wall clock: the same instant for both."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE campaigns SET started_unix_s = 1.7e9, finished_unix_s = 1.7e9 + 754")
    conn.close()


def test_a_campaigns_results_are_stored_apart_from_its_runs_rows(tmp_path):
    db = make_services_db(tmp_path / "s.db", n=3)  # every run with a result (the services' samples)
    assert "worker_json" not in _run_columns(db)
    results = _results(db)
    with Store.open(db, create=False) as store:
        runs = store.runs(1)
        assert len(results) == len(runs) > 0
        # the readers of a worker's own output get it with the run, as before
        assert all(json.loads(r["worker_json"]) == results[r["cell_key"], r["repetition"], r["attempt"]]
                   for r in runs)  # fmt: skip


def test_a_store_before_16_is_read_as_it_is_and_migrated_with_every_result_moved(tmp_path):
    db = make_services_db(tmp_path / "s.db", n=3)
    _with_fixed_times(db)
    results, report = _results(db), _report(db)
    as_older_store(db, 15, ())  # the results back in the runs' rows, as boardlab kept them before
    assert "worker_json" in _run_columns(db) and _results(db) == results
    assert _report(db) == report  # a reader does not migrate: it reads them there
    with Store.open(db) as store:  # a writer's open migrates it
        assert store.schema_version() == STORE_SCHEMA >= 16
    assert "worker_json" not in _run_columns(db)
    assert _results(db) == results
    assert _report(db) == report


def test_an_ingest_of_a_file_before_16_stores_its_results_apart(tmp_path):
    new = make_services_db(tmp_path / "new.db", n=3, seed=5)
    old = make_services_db(tmp_path / "old.db", n=3, seed=7)
    as_older_store(old, 15, ())
    lab = tmp_path / "lab.db"
    for src in (new, old):
        assert ingest_file(src, str(lab)).runs_added > 0
    assert "worker_json" not in _run_columns(lab)
    for campaign_id, src in ((1, new), (2, old)):  # each file's results, under the store's run ids
        assert _results(lab, campaign_id) == _results(src) != {}


class _LargeStore(Store):
    FULL_CHECK_MAX_BYTES = 0  # every file is a large one


def test_a_migrated_boards_store_is_compacted_and_a_larger_one_is_said_to_need_it(tmp_path):
    """Moving the results leaves their space in the runs' pages: a board's store is compacted (VACUUM) by
    the open that migrated it; a store over the full check's size is not (it would take its size again in a
    temporary file), and the open says how to."""
    board = make_services_db(tmp_path / "board.db", n=3)
    results = _results(board)
    as_older_store(board, 15, ())
    lab = tmp_path / "lab.db"
    lab.write_bytes(board.read_bytes())
    said: dict[str, list[str]] = {"board": [], "lab": []}
    with Store.open(board, note=said["board"].append), _LargeStore.open(lab, note=said["lab"].append):
        pass
    assert _results(board) == _results(lab) == results
    assert board.stat().st_size < lab.stat().st_size
    assert [n for n in said["board"] if "VACUUM" in n] == []
    assert f"`sqlite3 '{lab}' VACUUM`" in said["lab"][-1] and "the file is 0 MB" in said["lab"][-1]
