"""`boardlab ingest` at lab scale: the campaign watermark (store/ingest.py `Mark`) lets an unchanged file be
skipped without verifying or copying anything, and a grown file be read only past its watermark; whenever
the watermark cannot vouch for the file, every run's identity is compared as before. SQLite stores here; the
PostgreSQL side (COPY) runs the same paths in tests/integration/test_store_pg.py."""

from __future__ import annotations

import shutil

import pytest

from boardlab.store import Store
from boardlab.store import ingest as ingest_mod
from boardlab.store.ingest import ingest_file, ingest_files

from helpers import make_campaign_db


def _content(path) -> dict:
    """Every run of every campaign by identity, with its value, metrics, iterations and monitor series."""
    with Store.open(path, create=False) as s:
        out = {}
        for camp in s.campaigns():
            for r in s.runs(camp["id"]):
                out[(camp["uid"], r["cell_key"], r["repetition"], r["attempt"])] = (
                    r["value"],
                    r["aa_arm"],
                    [tuple(m)[1:] for m in s.run_metrics(r["id"])],
                    s.run_values(r["id"], "iteration_ns"),
                    [tuple(x) for x in s.series(r["id"])],
                )
        return out


def _campaigns(path) -> list[tuple]:
    with Store.open(path, create=False) as s:
        return [(c["uid"], c["status"], c["notes_json"]) for c in s.campaigns()]


def test_an_unchanged_file_is_skipped_without_verifying_it_or_opening_the_store_to_write(
    tmp_path, monkeypatch
):
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=3)
    b = make_campaign_db(tmp_path / "b.db", board="odroid", n=2, seed=4)
    store = str(tmp_path / "lab.db")
    first = ingest_files([a, b], store)
    assert [r.runs_added for r in first] == [len(_content(a)), len(_content(b))]

    def refuse(*args, **kwargs):
        raise AssertionError("an unchanged file was read whole or the store opened to write")

    monkeypatch.setattr(ingest_mod, "verify_source", refuse)
    monkeypatch.setattr(ingest_mod, "_ingest", refuse)
    monkeypatch.setattr(Store, "_open_writer", classmethod(refuse))
    again = ingest_files([a, b], store)
    assert [(r.runs_added, r.runs_skipped, r.campaigns_added) for r in again] == [
        (0, len(_content(a)), 0),
        (0, len(_content(b)), 0),
    ]
    assert [r.campaign_ids for r in again] == [r.campaign_ids for r in first]


@pytest.mark.parametrize("allowed, scans", [({0}, [False, False]), ({0, 1, 2}, [True, True])])
def test_the_files_are_verified_side_by_side_only_on_the_cpus_the_ingest_may_use(
    tmp_path, monkeypatch, allowed, scans
):
    """Each file's second scan (`beside`) only competes where the files already have a CPU each: what counts
    is the CPUs this process may use (taskset, a cpuset), not how many the board has."""
    files = [
        make_campaign_db(tmp_path / f"{b}.db", board=b, n=2, seed=i) for i, b in enumerate(("bbb", "xu3"))
    ]
    seen: list[bool] = []
    verify = ingest_mod.verify_source

    def spy(source, src, *, beside=True):
        seen.append(beside)
        return verify(source, src, beside=beside)

    monkeypatch.setattr(ingest_mod, "verify_source", spy)
    monkeypatch.setattr(ingest_mod.os, "sched_getaffinity", lambda pid: set(allowed))
    ingest_files(files, str(tmp_path / "lab.db"))
    assert seen == scans


def test_a_grown_file_is_read_only_past_its_watermark(tmp_path, monkeypatch):
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2, status="running", seed=3)
    store = str(tmp_path / "lab.db")
    before = ingest_file(a, store).runs_added
    make_campaign_db(a, board="bbb-1", n=4, first_rep=3, seed=3)  # resumed on the board
    # the full comparison of every run's identity is what the watermark saves: it must not run
    monkeypatch.setattr(Store, "run_identities", lambda *a: pytest.fail("compared every run"))
    grown = ingest_file(a, store)
    assert (grown.runs_added, grown.runs_skipped) == (len(_content(a)) - before, before)
    assert _content(store) == _content(a)
    assert _campaigns(store) == _campaigns(a)  # the campaign's own rows follow the file: now complete


def test_a_watermark_that_cannot_vouch_for_the_file_falls_back_to_every_identity(tmp_path):
    """An older copy of a board's file, ingested after the newer one, moves the mark to itself; the newer
    file then holds runs past that mark which the store already has: none is copied twice."""
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2, status="running", seed=3)
    old = tmp_path / "old copy.db"
    shutil.copy(a, old)
    make_campaign_db(a, board="bbb-1", n=4, first_rep=3, seed=3)
    store = str(tmp_path / "lab.db")
    n = ingest_file(a, store).runs_added
    stale = ingest_file(old, store)
    assert (stale.runs_added, stale.runs_skipped) == (0, len(_content(old)))
    assert _campaigns(store) == _campaigns(a)  # an older copy never rolls the campaign back
    again = ingest_file(a, store)
    assert (again.runs_added, again.runs_skipped) == (0, n)
    assert _content(store) == _content(a)


def test_a_change_to_the_campaigns_own_rows_is_not_skipped(tmp_path):
    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=2, status="running")
    store = str(tmp_path / "lab.db")
    ingest_file(a, store)
    with Store.open(a) as s:  # the campaign ends on the board without a new run
        s.set_campaign_status(s.campaigns()[0]["id"], "interrupted", notes={"reason": "stopped"})
    res = ingest_file(a, store)
    assert res.runs_added == 0 and _campaigns(store) == _campaigns(a)
    assert _campaigns(store)[0][1] == "interrupted"


def test_a_campaign_the_store_holds_no_run_of_takes_every_run_without_comparing_identities(
    tmp_path, monkeypatch
):
    """A campaign new to the store, or one ingested before it had runs: nothing to compare a run with, so
    no run's identity is read (the cost of a first ingest), and every run arrives once."""
    import sqlite3

    a = make_campaign_db(tmp_path / "a.db", board="bbb-1", n=3, seed=5)
    empty = tmp_path / "started.db"  # the same campaign as the board's file held it before its first run
    shutil.copy(a, empty)
    conn = sqlite3.connect(empty)
    with conn:
        for table in ("run_metrics", "run_values", "run_series", "run_histograms", "run_energy"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM artifacts WHERE run_id IS NOT NULL")
        conn.execute("DELETE FROM runs")
    conn.close()
    store = str(tmp_path / "lab.db")
    assert (ingest_file(empty, store).campaigns_added, _content(store)) == (1, {})
    monkeypatch.setattr(Store, "run_identities", lambda *a: pytest.fail("compared every run"))
    monkeypatch.setattr(ingest_mod, "_store_identities", lambda *a: pytest.fail("compared runs"))
    full = ingest_file(a, store)
    assert (full.campaigns_added, full.runs_added, full.runs_skipped) == (0, len(_content(a)), 0)
    assert _content(store) == _content(a)
    monkeypatch.undo()
    assert ingest_file(a, store).runs_added == 0  # and none a second time
