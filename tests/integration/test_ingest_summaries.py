"""The summaries `boardlab ingest` stores (boardlab.summary.KeepBehind): computed in a thread beside the copy of
the next file, on a reader's connection, and written by the ingest. Every campaign copied gets its summary and
every step of its history, each computed once; they are what `keep` computes from the runs; and the
files committed before a failing one keep theirs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from boardlab import summary
from boardlab.store import Store
from boardlab.store import ingest as store_ingest

from helpers import make_campaign_db, run_cli
from history_store import make_history_db

pytestmark = pytest.mark.integration


def _ingest_with_summaries(files, db: str, warnings: list[str]) -> list:
    behind: list[summary.KeepBehind] = []

    def then(store, result) -> None:
        if not behind:
            behind.append(summary.KeepBehind(db, warnings.append))
        behind[0].submit(store, result.campaign_ids)

    return store_ingest.ingest_files(
        files, db, then=then, last=lambda store: behind[0].finish(store) if behind else None
    )


def test_every_campaign_and_step_gets_its_summary_computed_once(tmp_path, monkeypatch):
    board = make_history_db(tmp_path / "board.db")  # five campaigns of one plan on one board
    computed: list[int] = []
    compute = summary.compute

    def counting(store, campaign_id):
        computed.append(campaign_id)
        return compute(store, campaign_id)

    monkeypatch.setattr(summary, "compute", counting)
    warnings: list[str] = []
    lab = tmp_path / "lab.db"
    (result,) = _ingest_with_summaries([board], str(lab), warnings)
    assert warnings == []
    ids = list(result.campaign_ids)
    assert len(ids) == 5 and sorted(computed) == ids  # the summary held for the step after it is reused
    with Store.open(lab, create=False) as store:
        for cid in ids:
            got = summary.stored(store, cid, with_document=True)
            assert got is not None and got.runs_stored == store.count_runs(cid) > 0
            again = summary.compute(store, cid)  # what keep() computes from the runs, now
            assert got.cells_json == again.cells_json and got.document_html == again.document_html
        for a, b in zip(ids, ids[1:], strict=False):
            row = store.step_summary(a, b)
            assert row is not None and (row["runs_from"], row["runs_to"]) == (
                store.count_runs(a),
                store.count_runs(b),
            )
            rows, _comps, _slots = summary.step(
                store, summary.analysis_view(store, a), summary.analysis_view(store, b)
            )
            assert json.loads(row["rows_json"]) == rows


def test_the_files_committed_before_a_failing_one_keep_their_summaries(tmp_path, monkeypatch):
    first = make_campaign_db(tmp_path / "first.db", board="board-a", n=4, with_latency=False)
    second = make_campaign_db(tmp_path / "second.db", board="board-b", n=4, with_latency=False)
    lab = tmp_path / "lab.db"
    shutil.copyfile(make_campaign_db(tmp_path / "seed.db", board="board-c", n=2, with_latency=False), lab)
    ingest_one = store_ingest._ingest

    def second_fails(source, target, src, fail_after_runs):
        if src == second:
            raise sqlite3.OperationalError("disk I/O error (injected by the test)")
        return ingest_one(source, target, src, fail_after_runs)

    monkeypatch.setattr(store_ingest, "_ingest", second_fails)
    warnings: list[str] = []
    with pytest.raises(Exception, match="injected by the test"):
        _ingest_with_summaries([first, second], str(lab), warnings)
    with Store.open(lab, create=False) as store:
        boards = {store.board(c["board_id"])["label"]: int(c["id"]) for c in store.campaigns()}
        assert set(boards) == {"board-a", "board-c"}  # the second file wrote nothing
        got = summary.stored(store, boards["board-a"])
        assert got is not None and got.runs_stored == store.count_runs(boards["board-a"])
    assert warnings == []


def test_the_cli_stores_the_summaries_of_several_files(tmp_path):
    files = [
        make_campaign_db(tmp_path / f"{b}.db", board=b, n=4, with_latency=False) for b in ("b1", "b2", "b3")
    ]
    lab = tmp_path / "lab.db"
    proc = run_cli("ingest", *map(str, files), "--db", str(lab))
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    # the summaries' reader closed before the writer: the last connection folded the WAL into the file
    assert not Path(f"{lab}-wal").exists()
    with Store.open(lab, create=False) as store:
        ids = [int(c["id"]) for c in store.campaigns()]
        assert len(ids) == 3
        assert all(summary.stored(store, cid) is not None for cid in ids)
